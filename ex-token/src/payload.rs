//! Plaintext layouts of the two sealed parts (quiche-cr's own format).
//!
//! Address validation: `address || expiry (u64)`.
//! BDP private data: `address || measured at (u64) || saved-set id (u64) ||
//! site (u32) || extras length (u8) || extras`. Addresses are
//! `family (1) || octets`; integers are big-endian; expiry is in unix
//! seconds, the measurement time in unix milliseconds.

use std::fmt;
use std::net::IpAddr;

use crate::address;

/// Additional-data label of the address validation part.
pub(crate) const ADDRESS_LABEL: &[u8] = b"quiche-cr ex-token address v1";

/// Additional-data label of the BDP private data.
/// Version 2: the set's measurement time and site instead of an expiry
/// (a saved set's lifetime runs from its measurement, RFC 9959).
pub(crate) const BDP_LABEL: &[u8] = b"quiche-cr ex-token bdp v2";

/// Largest server extras, in bytes.
pub const MAX_EXTRAS: usize = 32;

/// Opaque server data sealed into a BDP token (e.g. which congestion
/// controller measured the capacity, or a site id), at most [`MAX_EXTRAS`]
/// bytes, returned unchanged on validation.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Extras {
    len: u8,
    bytes: [u8; MAX_EXTRAS],
}

impl Extras {
    /// Copies `bytes`, or `None` if longer than [`MAX_EXTRAS`].
    pub fn new(bytes: &[u8]) -> Option<Self> {
        let mut extras = Self::default();
        extras.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        extras.len = u8::try_from(bytes.len()).ok()?;
        Some(extras)
    }

    /// The extras as a slice.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }
}

impl fmt::Debug for Extras {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Extras").field(&self.as_bytes()).finish()
    }
}

/// Plaintext of the address validation part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AddressPayload {
    pub ip: IpAddr,
    pub expiry: u64,
}

impl AddressPayload {
    pub fn encode(&self, out: &mut Vec<u8>) {
        address::encode(self.ip, out);
        out.extend_from_slice(&self.expiry.to_be_bytes());
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let (ip, rest) = address::decode(bytes)?;
        let expiry = u64::from_be_bytes(*<&[u8; 8]>::try_from(rest).ok()?);
        Some(Self { ip, expiry })
    }
}

/// Plaintext of the BDP_TOKEN private data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BdpPayload {
    pub ip: IpAddr,
    /// When the saved set was measured, unix milliseconds.
    pub measured_at: u64,
    pub set_id: u64,
    pub site: u32,
    pub extras: Extras,
}

impl BdpPayload {
    pub fn encode(&self, out: &mut Vec<u8>) {
        address::encode(self.ip, out);
        out.extend_from_slice(&self.measured_at.to_be_bytes());
        out.extend_from_slice(&self.set_id.to_be_bytes());
        out.extend_from_slice(&self.site.to_be_bytes());
        out.push(self.extras.len);
        out.extend_from_slice(self.extras.as_bytes());
    }

    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let (ip, rest) = address::decode(bytes)?;
        let (measured_at, rest) = rest.split_first_chunk::<8>()?;
        let (set_id, rest) = rest.split_first_chunk::<8>()?;
        let (site, rest) = rest.split_first_chunk::<4>()?;
        let (&len, extras) = rest.split_first()?;
        if usize::from(len) != extras.len() {
            return None;
        }
        Some(Self {
            ip,
            measured_at: u64::from_be_bytes(*measured_at),
            set_id: u64::from_be_bytes(*set_id),
            site: u32::from_be_bytes(*site),
            extras: Extras::new(extras)?,
        })
    }
}

/// The bound (clear but authenticated) values of the BDP private data:
/// Capacity and RTT as fixed-width big-endian integers.
pub(crate) fn bdp_bound(capacity: u64, rtt_us: u64) -> [u8; 16] {
    let mut bound = [0u8; 16];
    let (c, r) = bound.split_at_mut(8);
    c.copy_from_slice(&capacity.to_be_bytes());
    r.copy_from_slice(&rtt_us.to_be_bytes());
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_payload_layout() {
        let p = AddressPayload {
            ip: "192.0.2.1".parse().unwrap(),
            expiry: 0x0102_0304_0506_0708,
        };
        let mut out = Vec::new();
        p.encode(&mut out);
        assert_eq!(out, [4, 192, 0, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(AddressPayload::decode(&out), Some(p));
        assert_eq!(AddressPayload::decode(&out[..12]), None);
        out.push(0);
        assert_eq!(AddressPayload::decode(&out), None);
    }

    #[test]
    fn bdp_payload_layout() {
        let p = BdpPayload {
            ip: "2001:db8::1".parse().unwrap(),
            measured_at: 1_700_000_000_123,
            set_id: 0xdead_beef,
            site: 0x0a0b_0c0d,
            extras: Extras::new(b"bbr2").unwrap(),
        };
        let mut out = Vec::new();
        p.encode(&mut out);
        assert_eq!(out.len(), 17 + 8 + 8 + 4 + 1 + 4);
        assert_eq!(&out[17..25], &1_700_000_000_123u64.to_be_bytes());
        assert_eq!(&out[25..33], &0xdead_beefu64.to_be_bytes());
        assert_eq!(&out[33..37], &[0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(&out[37..], &[4, b'b', b'b', b'r', b'2']);
        assert_eq!(BdpPayload::decode(&out), Some(p));
        out.pop();
        assert_eq!(BdpPayload::decode(&out), None);
    }

    #[test]
    fn extras_are_bounded() {
        assert_eq!(Extras::new(&[1; MAX_EXTRAS]).unwrap().as_bytes(), [1; 32]);
        assert_eq!(Extras::new(&[1; MAX_EXTRAS + 1]), None);
        assert_eq!(Extras::default().as_bytes(), b"");
    }

    #[test]
    fn bound_values_are_big_endian_capacity_then_rtt() {
        assert_eq!(
            bdp_bound(0x0102, 0x0304),
            [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4]
        );
    }
}
