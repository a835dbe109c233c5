//! The BDP_TOKEN extension: saved congestion state for Careful Resume.

use std::fmt;

use octets::Octets;

use crate::{varint, EncodeError};

/// Why BDP_TOKEN extension data is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BdpDecodeError {
    /// A field runs past the end of the extension data.
    Truncated,
    /// Bytes remain after Requested Capacity.
    TrailingBytes,
}

impl fmt::Display for BdpDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("BDP_TOKEN extension truncated"),
            Self::TrailingBytes => f.write_str("bytes after Requested Capacity"),
        }
    }
}

impl std::error::Error for BdpDecodeError {}

/// The BDP_TOKEN extension data, borrowing its private data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BdpToken<'a> {
    /// Server-private data; empty when Capacity and RTT are informative only.
    pub private_data: &'a [u8],
    /// Saved congestion window, in bytes.
    pub capacity: u64,
    /// Saved minimum round-trip time, in microseconds.
    pub rtt_us: u64,
    /// The capacity the client asks to resume with; at most `capacity` is
    /// ever used, and 0 asks the server not to resume.
    pub requested_capacity: u64,
}

impl<'a> BdpToken<'a> {
    /// Decodes extension data; every byte must belong to a field.
    pub fn decode(data: &'a [u8]) -> Result<Self, BdpDecodeError> {
        let mut r = Octets::with_slice(data);
        let token = Self::read(&mut r).ok_or(BdpDecodeError::Truncated)?;
        if r.cap() > 0 {
            return Err(BdpDecodeError::TrailingBytes);
        }
        Ok(token)
    }

    fn read(r: &mut Octets<'a>) -> Option<Self> {
        Some(Self {
            private_data: r.get_bytes_with_varint_length().ok()?.buf(),
            capacity: r.get_varint().ok()?,
            rtt_us: r.get_varint().ok()?,
            requested_capacity: r.get_varint().ok()?,
        })
    }

    /// Offset of the Requested Capacity varint within `data`, and its length.
    pub(crate) fn requested_capacity_field(data: &[u8]) -> Option<(usize, usize)> {
        let mut r = Octets::with_slice(data);
        r.get_bytes_with_varint_length().ok()?;
        r.get_varint().ok()?;
        r.get_varint().ok()?;
        let offset = r.off();
        let len = octets::varint_parse_len(r.peek_u8().ok()?);
        Some((offset, len))
    }

    /// Appends the encoded extension data to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        varint::put_bytes(out, self.private_data)?;
        varint::put(out, self.capacity)?;
        varint::put(out, self.rtt_us)?;
        varint::put(out, self.requested_capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_hand_written_extension_data() {
        // Private Data Length 2, "pd", Capacity 80000 (4-byte varint),
        // RTT 600000 us (4-byte varint), Requested Capacity 40000.
        let data = [
            0x02, b'p', b'd', 0x80, 0x01, 0x38, 0x80, 0x80, 0x09, 0x27, 0xc0, 0x80, 0x00, 0x9c,
            0x40,
        ];
        let bdp = BdpToken::decode(&data).unwrap();
        assert_eq!(
            bdp,
            BdpToken {
                private_data: b"pd",
                capacity: 80_000,
                rtt_us: 600_000,
                requested_capacity: 40_000,
            }
        );
        assert_eq!(BdpToken::requested_capacity_field(&data), Some((11, 4)));
        let mut out = Vec::new();
        bdp.encode(&mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn every_truncation_is_refused() {
        let mut data = Vec::new();
        BdpToken {
            private_data: b"secret",
            capacity: 1_000_000,
            rtt_us: 25_000,
            requested_capacity: 1_000_000,
        }
        .encode(&mut data)
        .unwrap();
        for len in 0..data.len() {
            assert_eq!(
                BdpToken::decode(&data[..len]),
                Err(BdpDecodeError::Truncated),
                "{len}"
            );
        }
    }

    #[test]
    fn trailing_bytes_are_refused() {
        assert_eq!(
            BdpToken::decode(&[0, 1, 2, 3, 4]),
            Err(BdpDecodeError::TrailingBytes)
        );
    }

    #[test]
    fn oversized_fields_are_not_encoded() {
        let bdp = BdpToken {
            private_data: &[],
            capacity: u64::MAX,
            rtt_us: 1,
            requested_capacity: 1,
        };
        assert_eq!(
            bdp.encode(&mut Vec::new()),
            Err(EncodeError::ValueTooLarge(u64::MAX))
        );
    }
}
