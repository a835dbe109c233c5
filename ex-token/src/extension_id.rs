//! Extension identifiers and their registry ranges.

use std::fmt;

/// Identifier of an extension inside an extensible token.
///
/// Identifiers are QUIC variable-length integers, so every value is at most
/// 2^62 - 1; the constructors refuse anything larger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExtensionId(u64);

impl ExtensionId {
    /// The BDP_TOKEN extension, carrying saved congestion state.
    pub const BDP_TOKEN: Self = Self(0x01);

    /// Wraps a raw identifier, or `None` if it cannot be encoded as a varint.
    pub const fn new(id: u64) -> Option<Self> {
        if id <= octets::MAX_VAR_INT {
            Some(Self(id))
        } else {
            None
        }
    }

    /// The `n`-th identifier of the private-use range `31 * n + 26`.
    ///
    /// Private-use extensions are opaque and defined by the server alone.
    /// Returns `None` when the identifier would not fit in a varint.
    pub const fn private_use(n: u64) -> Option<Self> {
        Self::in_range(n, 26)
    }

    /// The `n`-th identifier of the reserved range `31 * n + 27`.
    ///
    /// Reserved identifiers are never assigned, which makes them suitable
    /// for greasing: a client that chokes on them has a bug worth finding.
    /// Returns `None` when the identifier would not fit in a varint.
    pub const fn reserved(n: u64) -> Option<Self> {
        Self::in_range(n, 27)
    }

    const fn in_range(n: u64, offset: u64) -> Option<Self> {
        match n.checked_mul(31) {
            Some(base) => match base.checked_add(offset) {
                Some(id) => Self::new(id),
                None => None,
            },
            None => None,
        }
    }

    /// Whether this identifier lies in the private-use range.
    pub const fn is_private_use(self) -> bool {
        self.0 >= 26 && (self.0 - 26).is_multiple_of(31)
    }

    /// Whether this identifier lies in the reserved (GREASE) range.
    pub const fn is_reserved(self) -> bool {
        self.0 >= 27 && (self.0 - 27).is_multiple_of(31)
    }

    /// The raw identifier.
    pub const fn value(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ExtensionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_use_range_is_31n_plus_26() {
        let ids: Vec<u64> = (0..4)
            .map(|n| ExtensionId::private_use(n).unwrap().value())
            .collect();
        assert_eq!(ids, [26, 57, 88, 119]);
        assert!(ExtensionId::new(57).unwrap().is_private_use());
        assert!(!ExtensionId::new(58).unwrap().is_private_use());
        assert!(!ExtensionId::new(0).unwrap().is_private_use());
    }

    #[test]
    fn reserved_range_is_31n_plus_27() {
        let ids: Vec<u64> = (0..4)
            .map(|n| ExtensionId::reserved(n).unwrap().value())
            .collect();
        assert_eq!(ids, [27, 58, 89, 120]);
        assert!(ExtensionId::new(89).unwrap().is_reserved());
        assert!(!ExtensionId::new(88).unwrap().is_reserved());
        assert!(!ExtensionId::BDP_TOKEN.is_reserved());
        assert!(!ExtensionId::BDP_TOKEN.is_private_use());
    }

    #[test]
    fn identifiers_beyond_a_varint_are_refused() {
        assert_eq!(
            ExtensionId::new(octets::MAX_VAR_INT).map(ExtensionId::value),
            Some(octets::MAX_VAR_INT)
        );
        assert_eq!(ExtensionId::new(octets::MAX_VAR_INT + 1), None);
        assert_eq!(ExtensionId::reserved(u64::MAX / 31), None);
        let last = (octets::MAX_VAR_INT - 27) / 31;
        assert!(ExtensionId::reserved(last).is_some());
        assert_eq!(ExtensionId::reserved(last + 1), None);
    }
}
