//! Client address encoding and prefix matching.

use std::net::IpAddr;

/// How much of a client address must match the address a token was minted
/// for, as prefix lengths in bits.
///
/// Clients rotate IPv6 privacy addresses and sit behind NAT pools, so BDP
/// tokens compare a prefix; address validation proper compares the whole
/// address ([`AddressPrefixes::EXACT`]). Lengths beyond the address width
/// are treated as the full width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressPrefixes {
    /// Prefix length compared for IPv4 clients (0..=32).
    pub v4: u8,
    /// Prefix length compared for IPv6 clients (0..=128).
    pub v6: u8,
}

impl AddressPrefixes {
    /// The whole address must match.
    pub const EXACT: Self = Self { v4: 32, v6: 128 };

    /// The default for BDP tokens: the same /24 (IPv4) or /56 (IPv6).
    pub const SAME_NETWORK: Self = Self { v4: 24, v6: 56 };

    /// Whether `a` and `b` share the configured prefix.
    ///
    /// IPv4-mapped IPv6 addresses (from dual-stack sockets) count as IPv4;
    /// an IPv4 address never matches a native IPv6 one.
    pub fn matches(&self, a: IpAddr, b: IpAddr) -> bool {
        match (a.to_canonical(), b.to_canonical()) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                let mask = mask_u32(self.v4);
                u32::from(a) & mask == u32::from(b) & mask
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => {
                let mask = mask_u128(self.v6);
                u128::from(a) & mask == u128::from(b) & mask
            }
            _ => false,
        }
    }
}

pub(crate) fn mask_u32(prefix: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix.min(32)))
        .unwrap_or(0)
}

pub(crate) fn mask_u128(prefix: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(prefix.min(128)))
        .unwrap_or(0)
}

const FAMILY_V4: u8 = 4;
const FAMILY_V6: u8 = 6;

/// Appends `family (1) || address (4 or 16)`, canonicalising mapped IPv4.
pub(crate) fn encode(ip: IpAddr, out: &mut Vec<u8>) {
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            out.push(FAMILY_V4);
            out.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out.push(FAMILY_V6);
            out.extend_from_slice(&v6.octets());
        }
    }
}

/// Reads an address written by [`encode`], returning it and the rest.
pub(crate) fn decode(bytes: &[u8]) -> Option<(IpAddr, &[u8])> {
    let (&family, rest) = bytes.split_first()?;
    match family {
        FAMILY_V4 => {
            let (octets, rest) = rest.split_first_chunk::<4>()?;
            Some((IpAddr::from(*octets), rest))
        }
        FAMILY_V6 => {
            let (octets, rest) = rest.split_first_chunk::<16>()?;
            Some((IpAddr::from(*octets), rest))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ipv4_prefix_boundaries() {
        let p = AddressPrefixes::SAME_NETWORK;
        assert!(p.matches(ip("192.0.2.1"), ip("192.0.2.254")));
        assert!(!p.matches(ip("192.0.2.1"), ip("192.0.3.1")));
        let p22 = AddressPrefixes { v4: 22, v6: 0 };
        assert!(p22.matches(ip("192.0.0.1"), ip("192.0.3.255")));
        assert!(!p22.matches(ip("192.0.0.1"), ip("192.0.4.0")));
        assert!(AddressPrefixes::EXACT.matches(ip("192.0.2.1"), ip("192.0.2.1")));
        assert!(!AddressPrefixes::EXACT.matches(ip("192.0.2.1"), ip("192.0.2.0")));
        let any = AddressPrefixes { v4: 0, v6: 0 };
        assert!(any.matches(ip("1.2.3.4"), ip("250.0.0.1")));
    }

    #[test]
    fn ipv6_prefix_boundaries() {
        let p = AddressPrefixes::SAME_NETWORK;
        assert!(p.matches(ip("2001:db8:0:ab00::1"), ip("2001:db8:0:abff:ffff::9")));
        assert!(!p.matches(ip("2001:db8:0:ab00::1"), ip("2001:db8:0:ac00::1")));
        let exact = AddressPrefixes::EXACT;
        assert!(!exact.matches(ip("2001:db8::1"), ip("2001:db8::2")));
        let oversized = AddressPrefixes { v4: 200, v6: 200 };
        assert!(oversized.matches(ip("2001:db8::1"), ip("2001:db8::1")));
        assert!(!oversized.matches(ip("2001:db8::1"), ip("2001:db8::3")));
    }

    #[test]
    fn families_never_match_each_other_but_mapped_v4_is_v4() {
        let any = AddressPrefixes { v4: 0, v6: 0 };
        assert!(!any.matches(ip("192.0.2.1"), ip("2001:db8::1")));
        assert!(AddressPrefixes::EXACT.matches(ip("192.0.2.1"), ip("::ffff:192.0.2.1")));
    }

    #[test]
    fn encoding_round_trips_and_rejects_unknown_families() {
        let mut out = Vec::new();
        encode(ip("::ffff:192.0.2.7"), &mut out);
        assert_eq!(out, [4, 192, 0, 2, 7]);
        assert_eq!(decode(&out), Some((ip("192.0.2.7"), &[][..])));
        out.clear();
        encode(ip("2001:db8::1"), &mut out);
        out.push(0xaa);
        assert_eq!(out.len(), 18);
        assert_eq!(decode(&out), Some((ip("2001:db8::1"), &[0xaa][..])));
        assert_eq!(decode(&[5, 1, 2, 3, 4]), None);
        assert_eq!(decode(&[4, 1, 2, 3]), None);
    }
}
