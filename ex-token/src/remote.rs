//! RFC 9959's Remote Endpoint as a server keys saved sets: which site
//! measured the path, and which client network it leads to.
//!
//! RFC 9959 allows at most one saved set per Remote Endpoint, so that one
//! path never carries two jumps. A token is bound to the client's address
//! prefix (clients rotate addresses within a network, and the saved set
//! describes the path to that network, not the host) and to the serving
//! site (servers of a fleet share a key ring, but a set measured from one
//! site says nothing of the path from another).

use std::fmt;
use std::net::IpAddr;

use crate::address::{mask_u128, mask_u32};
use crate::AddressPrefixes;

/// The identity of the site (a point of presence, a data centre) whose
/// servers share a path to their clients. Servers that share a token key
/// ring but not their paths must use distinct site ids; a set minted by one
/// site is refused by every other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SiteId(pub u32);

/// The Remote Endpoint a saved set belongs to: the site and the client's
/// network (its address with the host bits cleared).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RemoteEndpoint {
    /// The serving site.
    pub site: SiteId,
    /// The client's network address: host bits cleared, IPv4-mapped IPv6
    /// addresses as IPv4.
    pub network: IpAddr,
    /// How many leading bits of `network` count.
    pub prefix_len: u8,
}

impl RemoteEndpoint {
    /// The Remote Endpoint of a client at `ip`, served by `site`, with
    /// networks of `prefixes`.
    pub fn new(site: SiteId, ip: IpAddr, prefixes: AddressPrefixes) -> RemoteEndpoint {
        let (network, prefix_len) = match ip.to_canonical() {
            IpAddr::V4(v4) => {
                let len = prefixes.v4.min(32);
                (
                    IpAddr::from((u32::from(v4) & mask_u32(len)).to_be_bytes()),
                    len,
                )
            }
            IpAddr::V6(v6) => {
                let len = prefixes.v6.min(128);
                (
                    IpAddr::from((u128::from(v6) & mask_u128(len)).to_be_bytes()),
                    len,
                )
            }
        };
        RemoteEndpoint {
            site,
            network,
            prefix_len,
        }
    }
}

impl fmt::Display for RemoteEndpoint {
    /// `site/network/length`, e.g. `7/192.0.2.0/24`: the form a shared
    /// guard keys its records by.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.site.0, self.network, self.prefix_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(ip: &str) -> RemoteEndpoint {
        RemoteEndpoint::new(
            SiteId(7),
            ip.parse().unwrap(),
            AddressPrefixes::SAME_NETWORK,
        )
    }

    #[test]
    fn clients_of_one_network_share_a_remote_endpoint() {
        assert_eq!(endpoint("192.0.2.1"), endpoint("192.0.2.254"));
        assert_ne!(endpoint("192.0.2.1"), endpoint("192.0.3.1"));
        assert_eq!(endpoint("::ffff:192.0.2.9"), endpoint("192.0.2.1"));
        assert_eq!(endpoint("2001:db8:0:ff::1"), endpoint("2001:db8:0:1::2"));
        assert_ne!(endpoint("2001:db8:0:100::1"), endpoint("2001:db8::1"));
        assert_eq!(endpoint("192.0.2.77").to_string(), "7/192.0.2.0/24");
        assert_eq!(endpoint("2001:db8::1").to_string(), "7/2001:db8::/56");
    }

    #[test]
    fn sites_do_not_share_remote_endpoints() {
        let ip = "192.0.2.1".parse().unwrap();
        let other = RemoteEndpoint::new(SiteId(8), ip, AddressPrefixes::SAME_NETWORK);
        assert_ne!(endpoint("192.0.2.1"), other);
    }

    #[test]
    fn prefix_lengths_are_clamped_to_the_address_width() {
        let wide = AddressPrefixes { v4: 40, v6: 200 };
        let v4 = RemoteEndpoint::new(SiteId(0), "192.0.2.1".parse().unwrap(), wide);
        assert_eq!(
            (v4.network.to_string(), v4.prefix_len),
            ("192.0.2.1".into(), 32)
        );
        let v6 = RemoteEndpoint::new(SiteId(0), "2001:db8::1".parse().unwrap(), wide);
        assert_eq!(v6.prefix_len, 128);
        let all = AddressPrefixes { v4: 0, v6: 0 };
        let any = RemoteEndpoint::new(SiteId(0), "192.0.2.1".parse().unwrap(), all);
        assert_eq!(any.network.to_string(), "0.0.0.0");
    }
}
