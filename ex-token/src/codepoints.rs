//! Protocol code points used by extensible tokens, gathered in one place.
//!
//! draft-misell-quic-ex-token assigns `0x4143414213370002` to the `ex_token`
//! transport parameter and to `EX_TOKEN_ERROR`, and `0x4143414213370003` to
//! `BDP_TOKEN_ERROR`. Those values exceed 2^62 - 1, the largest value a QUIC
//! variable-length integer can carry (RFC 9000, Section 16), so they cannot
//! appear on the wire at all. quiche-cr uses the same values with bit 62
//! cleared. Should the draft fix its code points, only this module changes;
//! deployments that must interoperate with a different choice override the
//! error codes through [`ErrorCodes`].

/// Transport parameter `ex_token` (draft value with bit 62 cleared).
///
/// A server sends it with value [`EX_TOKEN_ENABLED`] to tell clients that
/// its NEW_TOKEN tokens are extensible tokens they may parse.
pub const TP_EX_TOKEN: u64 = 0x0143_4142_1337_0002;

/// Value of the `ex_token` transport parameter announcing extensible tokens.
///
/// The default, 0, means the tokens are opaque.
pub const EX_TOKEN_ENABLED: u64 = 1;

/// Transport error: an extensible token is structurally invalid
/// (draft value with bit 62 cleared).
pub const EX_TOKEN_ERROR: u64 = 0x0143_4142_1337_0002;

/// Transport error: the BDP_TOKEN extension of a token is invalid
/// (draft value with bit 62 cleared).
pub const BDP_TOKEN_ERROR: u64 = 0x0143_4142_1337_0003;

/// Transport error codes a strict server closes the connection with.
///
/// Defaults to [`EX_TOKEN_ERROR`] and [`BDP_TOKEN_ERROR`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCodes {
    /// Code for a token whose extensible structure or address validation
    /// part is invalid.
    pub ex_token: u64,
    /// Code for a token whose BDP_TOKEN extension is invalid.
    pub bdp_token: u64,
}

impl Default for ErrorCodes {
    fn default() -> Self {
        Self {
            ex_token: EX_TOKEN_ERROR,
            bdp_token: BDP_TOKEN_ERROR,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_points_fit_in_a_varint() {
        for v in [TP_EX_TOKEN, EX_TOKEN_ERROR, BDP_TOKEN_ERROR] {
            assert!(v <= octets::MAX_VAR_INT);
            assert_eq!(octets::varint_len(v), 8);
        }
    }

    #[test]
    fn code_points_are_the_draft_values_without_bit_62() {
        let bit62 = 1u64 << 62;
        assert_eq!(TP_EX_TOKEN | bit62, 0x4143_4142_1337_0002);
        assert_eq!(EX_TOKEN_ERROR | bit62, 0x4143_4142_1337_0002);
        assert_eq!(BDP_TOKEN_ERROR | bit62, 0x4143_4142_1337_0003);
    }
}
