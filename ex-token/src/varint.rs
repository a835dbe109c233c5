//! Writing QUIC variable-length integers into growable buffers.

use octets::{OctetsMut, MAX_VAR_INT};

use crate::EncodeError;

/// Appends `v` to `out` in its shortest varint encoding.
pub(crate) fn put(out: &mut Vec<u8>, v: u64) -> Result<(), EncodeError> {
    if v > MAX_VAR_INT {
        return Err(EncodeError::ValueTooLarge(v));
    }
    let mut scratch = [0u8; 8];
    let mut w = OctetsMut::with_slice(&mut scratch);
    let written = w
        .put_varint(v)
        .map_err(|_| EncodeError::ValueTooLarge(v))?
        .len();
    out.extend_from_slice(&scratch[..written]);
    Ok(())
}

/// Appends a varint length prefix followed by `bytes`.
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), EncodeError> {
    put(out, bytes.len() as u64)?;
    out.extend_from_slice(bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_encodings_match_rfc_9000_examples() {
        // RFC 9000, Appendix A.1 sample values.
        let mut out = Vec::new();
        put(&mut out, 37).unwrap();
        put(&mut out, 15293).unwrap();
        put(&mut out, 494_878_333).unwrap();
        put(&mut out, 151_288_809_941_952_652).unwrap();
        assert_eq!(
            out,
            [
                0x25, 0x7b, 0xbd, 0x9d, 0x7f, 0x3e, 0x7d, 0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8,
                0x8c
            ]
        );
    }

    #[test]
    fn values_above_two_to_the_62_are_refused() {
        let mut out = Vec::new();
        assert_eq!(
            put(&mut out, MAX_VAR_INT + 1),
            Err(EncodeError::ValueTooLarge(MAX_VAR_INT + 1))
        );
        assert!(out.is_empty());
    }
}
