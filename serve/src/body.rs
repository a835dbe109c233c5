//! The bytes of every response body: a fixed pattern by absolute offset,
//! so that a client can check each byte it receives knowing only where in
//! the body it lies ([`matching`]), and a lost, duplicated or misplaced
//! range shows.
//!
//! Serving it costs what serving zeros did: a response is cut from one
//! buffer computed at compile time ([`slice()`]), never generated per byte.
//! The pattern repeats every [`PERIOD`] bytes, a prime, so that no
//! power-of-two chunking (stream frames, 64 KiB writes) lines up with it.

/// The pattern repeats every `PERIOD` bytes: `byte_at(o) == byte_at(o +
/// PERIOD)`.
pub const PERIOD: usize = 65_521;

/// The longest slice [`slice()`] returns.
pub const MAX_SLICE: usize = 64 * 1024;

/// The byte at `offset` of every body.
pub const fn byte_at(offset: u64) -> u8 {
    // Within one period, the top byte of Knuth's multiplicative hash:
    // neighbouring bytes differ, and it is cheap.
    let x = (offset % PERIOD as u64) as u32;
    (x.wrapping_mul(0x9E37_79B1) >> 24) as u8
}

/// One period and the longest slice beyond it, so that a slice starting
/// anywhere in the period is contiguous.
static PATTERN: [u8; PERIOD + MAX_SLICE] = pattern();

const fn pattern() -> [u8; PERIOD + MAX_SLICE] {
    let mut bytes = [0u8; PERIOD + MAX_SLICE];
    let mut i = 0;
    while i < bytes.len() {
        bytes[i] = byte_at(i as u64);
        i += 1;
    }
    bytes
}

/// The body's bytes from `offset` on, at most `len` of them and at most
/// [`MAX_SLICE`].
pub fn slice(offset: u64, len: usize) -> &'static [u8] {
    let start = (offset % PERIOD as u64) as usize;
    &PATTERN[start..start + len.min(MAX_SLICE)]
}

/// How many of `data`'s first bytes are the body's bytes from `offset` on:
/// `data.len()` when all are.
pub fn matching(offset: u64, data: &[u8]) -> usize {
    let mut checked = 0;
    for chunk in data.chunks(MAX_SLICE) {
        let expected = slice(offset.wrapping_add(checked as u64), chunk.len());
        if chunk != expected {
            let same = chunk.iter().zip(expected).take_while(|(a, b)| a == b);
            return checked + same.count();
        }
        checked += chunk.len();
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_the_bytes_at_their_offsets() {
        for offset in [
            0,
            1,
            PERIOD as u64 - 1,
            PERIOD as u64,
            3 << 20,
            u64::MAX - 70_000,
        ] {
            let bytes = slice(offset, MAX_SLICE);
            assert_eq!(bytes.len(), MAX_SLICE);
            for (i, &b) in bytes.iter().enumerate() {
                assert_eq!(b, byte_at(offset + i as u64), "offset {offset} + {i}");
            }
        }
        assert_eq!(slice(5, MAX_SLICE + 1).len(), MAX_SLICE);
        assert_eq!(slice(5, 3).len(), 3);
    }

    #[test]
    fn the_pattern_is_not_constant_nor_short() {
        let bytes = slice(0, 4096);
        let distinct = (0..=255u8).filter(|b| bytes.contains(b)).count();
        assert!(distinct > 200, "{distinct} distinct byte values");
        // A range moved by a power of two differs.
        for shift in [1u64, 1200, 1350, 4096, 16384, 65536] {
            assert_ne!(slice(0, 1350), slice(shift, 1350), "shift {shift}");
        }
    }

    #[test]
    fn matching_counts_up_to_the_first_wrong_byte() {
        let offset = 1_000_000;
        let mut data = Vec::new();
        data.extend_from_slice(slice(offset, MAX_SLICE));
        data.extend_from_slice(slice(offset + MAX_SLICE as u64, 10_000));
        assert_eq!(matching(offset, &data), data.len());
        assert_eq!(matching(offset + 1, &data), 0);
        data[MAX_SLICE + 77] ^= 1;
        assert_eq!(matching(offset, &data), MAX_SLICE + 77);
        assert_eq!(matching(offset, &[]), 0);
        assert_eq!(matching(0, &[0; 10]), 1, "byte 0 is 0, byte 1 is not");
    }
}
