//! Retry tokens: the tokens a server puts in its Retry packets (RFC 9000,
//! Section 8.1.2), sealed with the same key ring as the NEW_TOKEN tokens.
//!
//! The two kinds travel in the same Initial field but mean different
//! things: a Retry token says the client answered a Retry a moment ago
//! (and names the connection ID its first Initial was sent to, which the
//! server must announce as `original_destination_connection_id`), a
//! NEW_TOKEN token says it connected earlier. RFC 9000 (Section 8.1.1)
//! requires that a server can tell them apart, so neither is ever taken for
//! the other:
//!
//! - a Retry token starts with [`RETRY_TOKEN_PREFIX`], whose first byte
//!   `0xff` would open an extensible token with an 8-byte length far beyond
//!   any token, so no extensible token starts with it and no Retry token
//!   decodes as one;
//! - its box is sealed under its own additional-data label, so even bytes
//!   moved from one kind to the other fail authentication.
//!
//! ```text
//! Retry token = prefix (4) | sealed box (key id, nonce, ciphertext, tag)
//! plaintext   = family (1: 4 | 6) | address (4 | 16) | port (2, BE)
//!             | expiry (8, unix ms, BE) | ODCID length (1) | ODCID (0..=20)
//! additional data = "quiche-cr retry v1" | key id
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use crate::keys::{MAX_PLAINTEXT, OPEN_BUF, SEAL_OVERHEAD};
use crate::time::unix_ms;
use crate::{address, MintError, OpenError, Rng, TokenServer};

/// The bytes every Retry token starts with (see the module docs).
pub const RETRY_TOKEN_PREFIX: [u8; 4] = [0xff, b'c', b'r', b'R'];

/// The longest connection ID QUIC version 1 allows, and so the longest
/// original destination connection ID a Retry token carries.
pub const MAX_ODCID_LEN: usize = 20;

/// Additional-data label of a Retry token's box: no other box opens as one.
const RETRY_LABEL: &[u8] = b"quiche-cr retry v1";

/// Whether `token` has the form of a Retry token (it may still be forged,
/// expired or another client's: [`TokenServer::validate_retry_token`]
/// decides). A server never judges such a token as a NEW_TOKEN token.
pub fn is_retry_token(token: &[u8]) -> bool {
    token.starts_with(&RETRY_TOKEN_PREFIX)
}

/// Why a Retry token did not validate. A client answers only one Retry
/// per connection attempt (RFC 9000, Section 17.2.5.2), so a server
/// refuses such an Initial instead of sending another Retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidRetryToken {
    /// The token did not open: forged, altered, or sealed with a key this
    /// server does not hold.
    Sealing(OpenError),
    /// It opened, but its contents have an impossible layout.
    Payload,
    /// Its lifetime is over: the client took too long to answer, or the
    /// token is being replayed.
    Expired,
    /// It was minted for another client address or port.
    AddressMismatch,
}

impl fmt::Display for InvalidRetryToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sealing(e) => write!(f, "Retry token does not open: {e}"),
            Self::Payload => f.write_str("Retry token has an impossible layout"),
            Self::Expired => f.write_str("Retry token expired"),
            Self::AddressMismatch => f.write_str("Retry token minted for another address"),
        }
    }
}

impl std::error::Error for InvalidRetryToken {}

/// Plaintext of a Retry token.
#[derive(Debug, PartialEq, Eq)]
struct RetryPayload<'a> {
    client: SocketAddr,
    expiry_ms: u64,
    odcid: &'a [u8],
}

impl RetryPayload<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        address::encode(self.client.ip(), out);
        out.extend_from_slice(&self.client.port().to_be_bytes());
        out.extend_from_slice(&self.expiry_ms.to_be_bytes());
        // The caller checked the length against MAX_ODCID_LEN.
        out.push(u8::try_from(self.odcid.len()).unwrap_or(u8::MAX));
        out.extend_from_slice(self.odcid);
    }

    fn decode(bytes: &[u8]) -> Option<RetryPayload<'_>> {
        let (ip, rest) = address::decode(bytes)?;
        let (port, rest) = rest.split_first_chunk::<2>()?;
        let (expiry, rest) = rest.split_first_chunk::<8>()?;
        let (&len, odcid) = rest.split_first()?;
        if usize::from(len) != odcid.len() || odcid.len() > MAX_ODCID_LEN {
            return None;
        }
        Some(RetryPayload {
            client: SocketAddr::new(ip, u16::from_be_bytes(*port)),
            expiry_ms: u64::from_be_bytes(*expiry),
            odcid,
        })
    }
}

impl<R: Rng> TokenServer<R> {
    /// Mints the token of a Retry packet answering an Initial that
    /// `client` sent to connection ID `odcid`, valid for `lifetime`: sealed
    /// with the current key, bound to the client's address and port, and
    /// carrying `odcid` for the connection the client's next Initial opens
    /// (see [`TokenServer::validate_retry_token`]).
    pub fn mint_retry_token(
        &mut self,
        client: SocketAddr,
        odcid: &[u8],
        now: SystemTime,
        lifetime: Duration,
    ) -> Result<Vec<u8>, MintError> {
        if odcid.len() > MAX_ODCID_LEN {
            return Err(MintError::ConnectionIdTooLong(odcid.len()));
        }
        let lifetime_ms = u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX);
        let payload = RetryPayload {
            client: canonical(client),
            expiry_ms: unix_ms(now).saturating_add(lifetime_ms),
            odcid,
        };
        let mut plaintext = Vec::with_capacity(MAX_PLAINTEXT);
        payload.encode(&mut plaintext);
        let mut token =
            Vec::with_capacity(RETRY_TOKEN_PREFIX.len() + plaintext.len() + SEAL_OVERHEAD);
        token.extend_from_slice(&RETRY_TOKEN_PREFIX);
        let rng: &mut dyn Rng = &mut self.rng;
        self.keys
            .seal(RETRY_LABEL, &[], &plaintext, rng, &mut token)?;
        Ok(token)
    }

    /// Validates a Retry token from an Initial of `client`, returning the
    /// original destination connection ID it carries: the connection ID of
    /// the client's first Initial, which the server announces so that the
    /// client knows the Retry came from the server it meant to reach.
    /// Stricter than a NEW_TOKEN token (RFC 9000, Section 8.1.3): the exact
    /// address and port, and a lifetime of seconds. A token that does not
    /// start with [`RETRY_TOKEN_PREFIX`] is no Retry token of ours and fails
    /// as [`OpenError::BadLength`] would.
    pub fn validate_retry_token(
        &self,
        token: &[u8],
        client: SocketAddr,
        now: SystemTime,
    ) -> Result<Vec<u8>, InvalidRetryToken> {
        let sealed = token
            .strip_prefix(&RETRY_TOKEN_PREFIX)
            .ok_or(InvalidRetryToken::Sealing(OpenError::BadLength(
                token.len(),
            )))?;
        let mut buf = [0u8; OPEN_BUF];
        let plaintext = self
            .keys
            .open(RETRY_LABEL, &[], sealed, &mut buf)
            .map_err(InvalidRetryToken::Sealing)?;
        let payload = RetryPayload::decode(plaintext).ok_or(InvalidRetryToken::Payload)?;
        if unix_ms(now) >= payload.expiry_ms {
            return Err(InvalidRetryToken::Expired);
        }
        if payload.client != canonical(client) {
            return Err(InvalidRetryToken::AddressMismatch);
        }
        Ok(payload.odcid.to_vec())
    }
}

/// `addr` with an IPv4-mapped IPv6 address as IPv4, as a dual-stack socket
/// may report either for one client.
fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExToken, KeyRing, ServerConfig, SimRng, TokenKey};

    fn token_server(key: u8) -> TokenServer<SimRng> {
        let key = TokenKey::from_bytes(key, &[key; 32]).unwrap();
        TokenServer::new(KeyRing::new(key), SimRng::new(1), ServerConfig::default())
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
    }

    const LIFETIME: Duration = Duration::from_secs(10);

    fn client() -> SocketAddr {
        "192.0.2.1:4000".parse().unwrap()
    }

    #[test]
    fn a_retry_token_gives_back_its_connection_id_to_its_client_only() {
        let mut server = token_server(1);
        let token = server
            .mint_retry_token(client(), &[7; 20], at(0), LIFETIME)
            .unwrap();
        assert!(is_retry_token(&token));
        assert_eq!(
            server.validate_retry_token(&token, client(), at(9)),
            Ok(vec![7; 20])
        );
        let mapped = "[::ffff:192.0.2.1]:4000".parse().unwrap();
        assert_eq!(
            server.validate_retry_token(&token, mapped, at(9)),
            Ok(vec![7; 20])
        );
        for other in ["192.0.2.1:4001", "192.0.2.2:4000"] {
            assert_eq!(
                server.validate_retry_token(&token, other.parse().unwrap(), at(1)),
                Err(InvalidRetryToken::AddressMismatch),
                "{other}"
            );
        }
        assert_eq!(
            server.validate_retry_token(&token, client(), at(10)),
            Err(InvalidRetryToken::Expired)
        );
    }

    #[test]
    fn a_retry_token_is_never_an_extensible_token_nor_forgeable() {
        let mut server = token_server(1);
        let token = server
            .mint_retry_token(client(), &[7; 8], at(0), LIFETIME)
            .unwrap();
        assert!(ExToken::decode(&token).is_err());
        let mut altered = token.clone();
        if let Some(last) = altered.last_mut() {
            *last ^= 1;
        }
        assert_eq!(
            server.validate_retry_token(&altered, client(), at(1)),
            Err(InvalidRetryToken::Sealing(OpenError::Forged))
        );
        assert_eq!(
            token_server(2).validate_retry_token(&token, client(), at(1)),
            Err(InvalidRetryToken::Sealing(OpenError::UnknownKey(1)))
        );
        assert!(server
            .mint_retry_token(client(), &[7; 21], at(0), LIFETIME)
            .is_err());
    }

    #[test]
    fn a_new_token_token_never_opens_as_a_retry_token() {
        let mut server = token_server(1);
        let address_token = server
            .mint_address_token(client(), at(0), Duration::from_secs(60))
            .unwrap();
        assert!(!is_retry_token(&address_token));
        // Even given the Retry prefix, the address box fails: its label differs.
        let sealed = ExToken::decode(&address_token)
            .unwrap()
            .address_validation()
            .to_vec();
        let mut disguised = RETRY_TOKEN_PREFIX.to_vec();
        disguised.extend_from_slice(&sealed);
        assert_eq!(
            server.validate_retry_token(&disguised, client(), at(1)),
            Err(InvalidRetryToken::Sealing(OpenError::Forged))
        );
    }
}
