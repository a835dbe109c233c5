//! The server side: minting tokens and validating the ones clients return.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

use crate::keys::{MAX_PLAINTEXT, OPEN_BUF, SEAL_OVERHEAD};
use crate::payload::{bdp_bound, AddressPayload, BdpPayload, ADDRESS_LABEL, BDP_LABEL};
use crate::time::{expiry, from_unix_ms, unix_ms, unix_secs};
use crate::{
    AddressPrefixes, AddressStatus, BdpToken, EncodeError, ErrorCodes, ExToken, ExTokenBuilder,
    Extras, InvalidToken, KeyRing, NoResume, OpenError, RemoteEndpoint, Rng, SavedParameters,
    SetId, SiteId, SystemRng, TokenGuard, TokenRejected, Validation,
};

/// How far ahead of this server's clock a saved set's measurement time may
/// lie. A fleet's clocks agree to well within this (NTP keeps them within
/// milliseconds); a set measured further ahead was minted by a server whose
/// clock is wrong, and would outlive, and supersede in the guard, sets
/// measured after it. Such a set does not resume ([`NoResume::ClockSkew`]).
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(30);

/// What to do with a token that is present but invalid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// Treat it as absent (RFC 9000, Section 8.1.3): it may come from
    /// another server of the same name or predate a key rotation.
    #[default]
    Lenient,
    /// Close the connection with `EX_TOKEN_ERROR` or `BDP_TOKEN_ERROR`, as
    /// draft-misell-quic-ex-token describes. Expired tokens are still
    /// ignored silently, and so are tokens sealed with a key this server
    /// does not hold ([`OpenError::UnknownKey`]): a key retired by rotation,
    /// or another server's of the same name, which RFC 9000 (Section 8.1.3)
    /// says to treat as absent.
    Strict,
}

/// Server token settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Handling of invalid tokens.
    pub policy: Policy,
    /// Error codes used by [`Policy::Strict`].
    pub error_codes: ErrorCodes,
    /// Address match required to validate the client's address; exact by
    /// default, as the anti-amplification limit depends on it.
    pub address_prefixes: AddressPrefixes,
    /// Address match required to resume, and the client network of a
    /// [`RemoteEndpoint`]; the client's /24 or /56 by default, since the
    /// saved parameters describe the path, not the host.
    pub bdp_prefixes: AddressPrefixes,
    /// How long a saved set may be used, counted from when it was measured
    /// (RFC 9959 leaves it to the sender; default one hour). Tokens that
    /// hand a set on keep its measurement time, so a set never outlives
    /// this however often it is handed on.
    pub saved_set_lifetime: Duration,
    /// This server's site: sealed into every BDP token, and a token of
    /// another site does not resume ([`NoResume::OtherSite`]). Servers that
    /// share a key ring but not their paths use distinct sites; default 0.
    pub site: SiteId,
    /// Add a reserved (GREASE) extension to every minted token.
    pub grease: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            policy: Policy::Lenient,
            error_codes: ErrorCodes::default(),
            address_prefixes: AddressPrefixes::EXACT,
            bdp_prefixes: AddressPrefixes::SAME_NETWORK,
            saved_set_lifetime: Duration::from_secs(3600),
            site: SiteId::default(),
            grease: true,
        }
    }
}

/// Path parameters to save in a BDP token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavedPath<'a> {
    /// The congestion window worth resuming with, in bytes (non-zero).
    pub capacity: u64,
    /// The minimum round-trip time observed (microsecond precision).
    pub rtt: Duration,
    /// Opaque server data sealed alongside, at most [`crate::MAX_EXTRAS`]
    /// bytes.
    pub extras: &'a [u8],
}

/// The saved set a BDP token belongs to. A connection draws one
/// ([`TokenServer::new_saved_set`]) and mints its BDP tokens from it, so
/// that its sibling tokens share one id, measurement time and expiry and
/// the guard admits at most one connection per set ([`crate::TokenGuard`]);
/// a connection that resumed from a set and has measured nothing better
/// hands that same set on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavedSet {
    /// The id the guard claims.
    pub id: SetId,
    /// The Remote Endpoint the set belongs to: one current set each.
    pub endpoint: RemoteEndpoint,
    /// When the set was measured (millisecond precision): its lifetime runs
    /// from here, and a set measured later supersedes it.
    pub measured_at: SystemTime,
    /// When every token of the set expires: `measured_at` plus the
    /// server's [`ServerConfig::saved_set_lifetime`].
    pub expiry: SystemTime,
}

impl SavedSet {
    /// [`SavedSet::measured_at`] in unix milliseconds.
    pub fn measured_at_ms(&self) -> u64 {
        unix_ms(self.measured_at)
    }
}

/// Why a token could not be minted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MintError {
    /// The random source failed.
    Random,
    /// The AEAD refused to seal.
    Seal,
    /// Capacity 0 saves nothing worth resuming.
    ZeroCapacity,
    /// Extras exceed [`crate::MAX_EXTRAS`] bytes.
    ExtrasTooLong(usize),
    /// The token could not be encoded (e.g. capacity or RTT beyond 2^62).
    Encode(EncodeError),
    /// A connection ID longer than QUIC's 20 bytes
    /// ([`crate::MAX_ODCID_LEN`]) cannot be carried in a Retry token.
    ConnectionIdTooLong(usize),
}

impl fmt::Display for MintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Random => f.write_str("random source failed"),
            Self::Seal => f.write_str("sealing failed"),
            Self::ZeroCapacity => f.write_str("capacity is zero"),
            Self::ExtrasTooLong(len) => write!(f, "{len} bytes of extras is too many"),
            Self::Encode(e) => write!(f, "encoding failed: {e}"),
            Self::ConnectionIdTooLong(len) => write!(f, "a {len}-byte connection ID is too long"),
        }
    }
}

impl std::error::Error for MintError {}

impl From<EncodeError> for MintError {
    fn from(e: EncodeError) -> Self {
        Self::Encode(e)
    }
}

/// Mints and validates a server's tokens.
///
/// Minting needs `&mut self` (it draws randomness); validation needs only
/// `&self` and a [`TokenGuard`], which may be shared by many servers.
#[derive(Debug)]
pub struct TokenServer<R = SystemRng> {
    pub(crate) keys: KeyRing,
    pub(crate) rng: R,
    config: ServerConfig,
}

impl<R: Rng> TokenServer<R> {
    /// Creates a token server.
    pub fn new(keys: KeyRing, rng: R, config: ServerConfig) -> Self {
        Self { keys, rng, config }
    }

    /// The settings in force.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The key ring tokens are sealed with (its keys also derive stateless
    /// reset tokens: [`KeyRing::stateless_reset_token`]).
    pub fn keys(&self) -> &KeyRing {
        &self.keys
    }

    /// The keys, for rotation.
    pub fn keys_mut(&mut self) -> &mut KeyRing {
        &mut self.keys
    }

    /// Mints a token that only validates the client's address: an
    /// extensible token whose sole content is an RFC 9000 address
    /// validation part. Suitable for NEW_TOKEN.
    pub fn mint_address_token(
        &mut self,
        client: SocketAddr,
        now: SystemTime,
        lifetime: Duration,
    ) -> Result<Vec<u8>, MintError> {
        let address = self.seal_address(client.ip(), expiry(now, lifetime))?;
        self.finish(ExTokenBuilder::new(&address)?)
    }

    /// Draws a new saved set for the client at `client`, measured `now`,
    /// with a random id.
    pub fn new_saved_set(
        &mut self,
        client: SocketAddr,
        now: SystemTime,
    ) -> Result<SavedSet, MintError> {
        let mut id = [0u8; 8];
        self.rng.fill(&mut id).map_err(|_| MintError::Random)?;
        Ok(self.saved_set(SetId(u64::from_be_bytes(id)), client.ip(), unix_ms(now)))
    }

    /// The Remote Endpoint of a client at `client`, as this server keys
    /// saved sets.
    pub fn remote_endpoint(&self, client: IpAddr) -> RemoteEndpoint {
        RemoteEndpoint::new(self.config.site, client, self.config.bdp_prefixes)
    }

    fn saved_set(&self, id: SetId, client: IpAddr, measured_at_ms: u64) -> SavedSet {
        let measured_at = from_unix_ms(measured_at_ms);
        SavedSet {
            id,
            endpoint: self.remote_endpoint(client),
            measured_at,
            expiry: measured_at
                .checked_add(self.config.saved_set_lifetime)
                .unwrap_or(measured_at),
        }
    }

    /// Mints a token of saved set `set` that validates the client's address
    /// and carries `path` in a BDP_TOKEN extension, with Requested Capacity
    /// equal to Capacity. The token expires with the set.
    pub fn mint_bdp_token(
        &mut self,
        client: SocketAddr,
        path: &SavedPath<'_>,
        set: &SavedSet,
    ) -> Result<Vec<u8>, MintError> {
        if path.capacity == 0 {
            return Err(MintError::ZeroCapacity);
        }
        let rtt_us = u64::try_from(path.rtt.as_micros())
            .map_err(|_| EncodeError::ValueTooLarge(u64::MAX))?;
        let extras = Extras::new(path.extras).ok_or(MintError::ExtrasTooLong(path.extras.len()))?;
        let expiry = unix_secs(set.expiry);

        let payload = BdpPayload {
            ip: client.ip(),
            measured_at: set.measured_at_ms(),
            set_id: set.id.0,
            site: self.config.site.0,
            extras,
        };
        let mut plaintext = Vec::with_capacity(MAX_PLAINTEXT);
        payload.encode(&mut plaintext);
        let mut private_data = Vec::with_capacity(MAX_PLAINTEXT + SEAL_OVERHEAD);
        let bound = bdp_bound(path.capacity, rtt_us);
        self.keys.seal(
            BDP_LABEL,
            &bound,
            &plaintext,
            &mut self.rng,
            &mut private_data,
        )?;

        let address = self.seal_address(client.ip(), expiry)?;
        let mut builder = ExTokenBuilder::new(&address)?;
        builder.bdp(&BdpToken {
            private_data: &private_data,
            capacity: path.capacity,
            rtt_us,
            requested_capacity: path.capacity,
        })?;
        self.finish(builder)
    }

    fn seal_address(&mut self, ip: IpAddr, expiry: u64) -> Result<Vec<u8>, MintError> {
        let mut plaintext = Vec::with_capacity(MAX_PLAINTEXT);
        AddressPayload { ip, expiry }.encode(&mut plaintext);
        let mut sealed = Vec::with_capacity(MAX_PLAINTEXT + SEAL_OVERHEAD);
        self.keys
            .seal(ADDRESS_LABEL, &[], &plaintext, &mut self.rng, &mut sealed)?;
        Ok(sealed)
    }

    fn finish(&mut self, mut builder: ExTokenBuilder) -> Result<Vec<u8>, MintError> {
        if self.config.grease {
            builder.grease(&mut self.rng)?;
        }
        Ok(builder.finish()?)
    }

    /// Validates a token from a client's Initial packet and claims its
    /// saved set, waiting for the guard's answer: the blocking convenience
    /// for simple servers (see [`TokenServer::validate_unclaimed`] for a
    /// server that must not wait).
    ///
    /// `now` is the current wall-clock time. When everything checks out,
    /// the saved set's id is claimed in `guard`, so parallel connections
    /// presenting the same token, or sibling tokens of one set, resume at
    /// most once. Under the default
    /// [`Policy::Lenient`] this never returns an error.
    pub fn validate(
        &self,
        token: &[u8],
        client: SocketAddr,
        now: SystemTime,
        guard: &dyn TokenGuard,
    ) -> Result<Validation, TokenRejected> {
        let mut validation = self.validate_unclaimed(token, client, now)?;
        if let Ok(saved) = validation.resume {
            if let Some(why) = guard.claim(&saved.set, now).refusal() {
                validation.resume = Err(why);
            }
        }
        Ok(validation)
    }

    /// Validates a token from a client's Initial packet without claiming
    /// its saved set: `resume` is `Ok` when the set may be used provided the
    /// caller's claim of [`SavedParameters::set`] is granted
    /// ([`TokenGuard::start_claim`]). A server claims the set once the
    /// client has proved its address (the handshake is complete: anyone can
    /// forge an Initial carrying a copied token), and needs the answer only
    /// when the sender would jump.
    ///
    /// Under the default [`Policy::Lenient`] this never returns an error.
    pub fn validate_unclaimed(
        &self,
        token: &[u8],
        client: SocketAddr,
        now: SystemTime,
    ) -> Result<Validation, TokenRejected> {
        let validation = self.check(token, client.ip(), now);
        if self.config.policy == Policy::Lenient {
            return Ok(validation);
        }
        let codes = self.config.error_codes;
        // A key this server does not hold says nothing about the token.
        let rejected = |reason: &InvalidToken| {
            !matches!(reason, InvalidToken::Sealing(OpenError::UnknownKey(_)))
        };
        match validation {
            Validation {
                address: AddressStatus::Invalid(reason),
                ..
            } if rejected(&reason) => Err(TokenRejected {
                error_code: codes.ex_token,
                reason,
            }),
            // A malformed token (InvalidToken::Structure) has an invalid
            // address part too, answered above: what is left is the BDP part.
            Validation {
                resume: Err(NoResume::Invalid(reason)),
                ..
            } if rejected(&reason) => Err(TokenRejected {
                error_code: codes.bdp_token,
                reason,
            }),
            valid => Ok(valid),
        }
    }

    fn check(&self, token: &[u8], ip: IpAddr, now: SystemTime) -> Validation {
        if token.is_empty() {
            return Validation {
                address: AddressStatus::Absent,
                resume: Err(NoResume::Absent),
            };
        }
        let token = match ExToken::decode(token) {
            Ok(token) => token,
            Err(e) => {
                let reason = InvalidToken::Structure(e);
                return Validation {
                    address: AddressStatus::Invalid(reason),
                    resume: Err(NoResume::Invalid(reason)),
                };
            }
        };
        let address = self.check_address(token.address_validation(), ip, unix_secs(now));
        let resume = match token.bdp() {
            None => Err(NoResume::Absent),
            Some(Err(e)) => Err(NoResume::Invalid(InvalidToken::BdpStructure(e))),
            Some(Ok(bdp)) => self.check_bdp(&bdp, ip, now),
        };
        Validation { address, resume }
    }

    fn check_address(&self, sealed: &[u8], ip: IpAddr, now: u64) -> AddressStatus {
        if sealed.is_empty() {
            return AddressStatus::Absent;
        }
        let mut buf = [0u8; OPEN_BUF];
        let payload = match self.keys.open(ADDRESS_LABEL, &[], sealed, &mut buf) {
            Ok(plaintext) => AddressPayload::decode(plaintext),
            Err(e) => return AddressStatus::Invalid(InvalidToken::Sealing(e)),
        };
        match payload {
            None => AddressStatus::Invalid(InvalidToken::Payload),
            Some(p) if now >= p.expiry => AddressStatus::Expired,
            Some(p) if !self.config.address_prefixes.matches(p.ip, ip) => AddressStatus::Mismatch,
            Some(_) => AddressStatus::Validated,
        }
    }

    fn check_bdp(
        &self,
        bdp: &BdpToken<'_>,
        ip: IpAddr,
        now: SystemTime,
    ) -> Result<SavedParameters, NoResume> {
        if bdp.private_data.is_empty() {
            return Err(NoResume::Unprotected);
        }
        let invalid = NoResume::Invalid;
        let mut buf = [0u8; OPEN_BUF];
        let bound = bdp_bound(bdp.capacity, bdp.rtt_us);
        let plaintext = self
            .keys
            .open(BDP_LABEL, &bound, bdp.private_data, &mut buf)
            .map_err(|e| invalid(InvalidToken::Sealing(e)))?;
        let payload = BdpPayload::decode(plaintext).ok_or(invalid(InvalidToken::Payload))?;
        if bdp.capacity == 0 {
            return Err(invalid(InvalidToken::ZeroCapacity));
        }
        let set = self.saved_set(SetId(payload.set_id), payload.ip, payload.measured_at);
        let latest = now.checked_add(MAX_CLOCK_SKEW).unwrap_or(now);
        if set.measured_at > latest {
            return Err(NoResume::ClockSkew);
        }
        if now >= set.expiry {
            return Err(NoResume::Expired);
        }
        if payload.site != self.config.site.0 {
            return Err(NoResume::OtherSite);
        }
        if !self.config.bdp_prefixes.matches(payload.ip, ip) {
            return Err(NoResume::AddressMismatch);
        }
        if bdp.requested_capacity == 0 {
            return Err(NoResume::RequestedZero);
        }
        Ok(SavedParameters {
            saved_cwnd: bdp.capacity.min(bdp.requested_capacity),
            saved_rtt: Duration::from_micros(bdp.rtt_us),
            capacity: bdp.capacity,
            requested_capacity: bdp.requested_capacity,
            set,
            extras: payload.extras,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryGuard, SimRng, TokenKey};

    const NOW: u64 = 1_000_000;

    fn server() -> TokenServer<SimRng> {
        let key = TokenKey::from_bytes(1, &[3; 32]).unwrap();
        TokenServer::new(KeyRing::new(key), SimRng::new(0), ServerConfig::default())
    }

    /// Builds a token whose BDP private data seals `plaintext` verbatim.
    fn sealed_bdp(server: &mut TokenServer<SimRng>, capacity: u64, plaintext: &[u8]) -> Vec<u8> {
        let mut private_data = Vec::new();
        server
            .keys
            .seal(
                BDP_LABEL,
                &bdp_bound(capacity, 1),
                plaintext,
                &mut server.rng,
                &mut private_data,
            )
            .unwrap();
        let mut builder = ExTokenBuilder::new(b"").unwrap();
        builder
            .bdp(&BdpToken {
                private_data: &private_data,
                capacity,
                rtt_us: 1,
                requested_capacity: 1,
            })
            .unwrap();
        builder.finish().unwrap()
    }

    fn resume(server: &TokenServer<SimRng>, token: &[u8]) -> Result<SavedParameters, NoResume> {
        let client = "192.0.2.1:1".parse().unwrap();
        let now = from_unix_ms(NOW * 1000);
        server
            .validate(token, client, now, &MemoryGuard::new(1))
            .unwrap()
            .resume
    }

    fn payload(measured_at_secs: u64) -> Vec<u8> {
        let mut plaintext = Vec::new();
        BdpPayload {
            ip: "192.0.2.1".parse().unwrap(),
            measured_at: measured_at_secs * 1000,
            set_id: 5,
            site: 0,
            extras: Extras::default(),
        }
        .encode(&mut plaintext);
        plaintext
    }

    #[test]
    fn authentic_plaintext_with_the_wrong_layout_is_invalid() {
        let mut server = server();
        let token = sealed_bdp(&mut server, 10, b"not a payload");
        assert_eq!(
            resume(&server, &token),
            Err(NoResume::Invalid(InvalidToken::Payload))
        );
    }

    #[test]
    fn authentic_zero_capacity_is_invalid() {
        let mut server = server();
        let token = sealed_bdp(&mut server, 0, &payload(NOW));
        assert_eq!(
            resume(&server, &token),
            Err(NoResume::Invalid(InvalidToken::ZeroCapacity))
        );
        let token = sealed_bdp(&mut server, 10, &payload(NOW));
        assert_eq!(resume(&server, &token).map(|p| p.saved_cwnd), Ok(1));
    }
}
