//! Extensible QUIC address validation tokens carrying saved congestion
//! state for Careful Resume (RFC 9959), after draft-misell-quic-ex-token.
//!
//! A server that has measured a path's capacity hands the client a token
//! (in a NEW_TOKEN frame) holding that capacity; when the client connects
//! again it echoes the token and the server may resume from the saved
//! congestion window instead of slow-starting. The server keeps no
//! per-client state, and clients that know nothing of the format simply
//! echo the bytes.
//!
//! Where to start: the "Server example" below ([`TokenServer`], a
//! [`KeyRing`] and a [`TokenGuard`]), and [`TokenStore`] for a client.
//!
//! # Wire format
//!
//! All integers marked `(i)` are QUIC variable-length integers.
//!
//! ```text
//! Extensible Token {                      // at most MAX_TOKEN_LEN bytes
//!   Address Validation Length (i),
//!   Address Validation (..),              // sealed box, or empty
//!   Extension {                           // repeated, each ID at most once
//!     Extension ID (i),                   // 0x01 = BDP_TOKEN
//!     Extension Data Length (i),
//!     Extension Data (..),
//!   } ...
//! }
//!
//! BDP_TOKEN Extension Data {
//!   Private Data Length (i),
//!   Private Data (..),                    // sealed box, or empty
//!   Capacity (i),                         // bytes, bound to Private Data
//!   RTT (i),                              // microseconds, bound likewise
//!   Requested Capacity (i),               // free: the client may lower it
//! }
//! ```
//!
//! Extension IDs `31N+26` are for private use ([`ExtensionId::private_use`])
//! and `31N+27` are reserved; servers add a reserved one as GREASE
//! ([`ExTokenBuilder::grease`]). Unknown extensions survive decoding and
//! re-encoding byte for byte.
//!
//! # quiche-cr's sealed boxes
//!
//! Both server-private parts are ChaCha20-Poly1305 boxes:
//!
//! ```text
//! +--------+------------+----------------------+----------+
//! | key id | nonce (12) | ciphertext (..)      | tag (16) |
//! +--------+------------+----------------------+----------+
//!
//! Address Validation plaintext:
//!   family (1: 4 | 6) | address (4 | 16) | expiry (8, unix s)
//! BDP Private Data plaintext:
//!   family (1) | address (4 | 16) | measured at (8, unix ms)
//!   | saved-set id (8) | site (4) | extras length (1) | extras (0..=32)
//!
//! additional data = label | key id | bound
//!   Address Validation: label "quiche-cr ex-token address v1", no bound
//!   BDP Private Data:   label "quiche-cr ex-token bdp v2",
//!                       bound = Capacity (8, BE) | RTT (8, BE)
//! ```
//!
//! The key id selects among the current key and up to
//! [`MAX_PREVIOUS_KEYS`] retired ones ([`KeyRing::rotate`]). Because
//! Capacity and RTT are authenticated, a client can neither raise nor
//! invent them; Requested Capacity is outside the box so the client can
//! lower it ([`lower_requested_capacity`]), and the server resumes with
//! `min(Capacity, Requested Capacity)`. The address validation part is an
//! ordinary RFC 9000 token: exact address match, it lifts the
//! anti-amplification limit. The BDP part matches a prefix (/24 or /56 by
//! default) as clients rotate addresses within a network.
//!
//! # Retry tokens
//!
//! The same key ring seals the tokens of Retry packets
//! ([`TokenServer::mint_retry_token`]), in a box of their own label behind
//! [`RETRY_TOKEN_PREFIX`] (which no extensible token starts with): bound to
//! the client's address and port, short-lived, and carrying the original
//! destination connection ID. A Retry token never validates as a NEW_TOKEN
//! token, nor the reverse.
//!
//! # Saved sets
//!
//! Every BDP token belongs to a saved set ([`SavedSet`]): an id, the
//! [`RemoteEndpoint`] it was measured for (the serving [`SiteId`] and the
//! client's network) and when it was measured. Its lifetime
//! ([`ServerConfig::saved_set_lifetime`], one hour by default) runs from
//! the measurement, however often the set is handed on. A [`TokenGuard`]
//! enforces RFC 9959's rules across connections: the newest set of a Remote
//! Endpoint supersedes the older ones, one connection at a time uses a set,
//! and a set whose jump met congestion is revoked for good.
//!
//! # Server example
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use ex_token::{
//!     KeyRing, MemoryGuard, SavedPath, ServerConfig, SystemRng, TokenGuard, TokenKey,
//!     TokenServer,
//! };
//!
//! let mut rng = SystemRng::new();
//! let keys = KeyRing::new(TokenKey::generate(1, &mut rng)?);
//! let mut server = TokenServer::new(keys, rng, ServerConfig::default());
//! let guard = MemoryGuard::new(100_000);
//! let client = "192.0.2.10:50000".parse()?;
//! let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//!
//! // End of connection 1: save what was learnt about the path.
//! let saved = SavedPath { capacity: 1_250_000, rtt: Duration::from_millis(600), extras: b"" };
//! // Every token minted from this connection's observations belongs to one
//! // saved set, the newest of the client's network.
//! let set = server.new_saved_set(client, now)?;
//! guard.record(&set, now);
//! let token = server.mint_bdp_token(client, &saved, &set)?;
//! let sibling = server.mint_bdp_token(client, &saved, &set)?;
//!
//! // Connection 2, an hour minus a minute later, from another port.
//! let client = "192.0.2.10:50001".parse()?;
//! let later = now + Duration::from_secs(3540);
//! let validation = server.validate(&token, client, later, &guard)?;
//! assert!(validation.address.is_validated());
//! let resume = validation.resume.expect("saved parameters");
//! assert_eq!(resume.saved_cwnd, 1_250_000);
//! assert_eq!(resume.saved_rtt, Duration::from_millis(600));
//!
//! // The same token, or a sibling, on a parallel connection does not resume again.
//! let again = server.validate(&token, client, later, &guard)?;
//! assert_eq!(again.resume, Err(ex_token::NoResume::AlreadyInUse));
//! let again = server.validate(&sibling, client, later, &guard)?;
//! assert_eq!(again.resume, Err(ex_token::NoResume::AlreadyInUse));
//!
//! // An hour after the measurement the set has expired.
//! let expired = server.validate(&token, client, now + Duration::from_secs(3600), &guard)?;
//! assert_eq!(expired.resume, Err(ex_token::NoResume::Expired));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Client side
//!
//! A client keeps NEW_TOKEN tokens in a [`TokenStore`] and takes one per
//! connection attempt. If the server announced the `ex_token` transport
//! parameter ([`TP_EX_TOKEN`] = [`EX_TOKEN_ENABLED`]) on the connection
//! that delivered the token, the client may read Capacity and RTT, and
//! lower Requested Capacity before echoing the token; the store remembers
//! this with the token ([`HeldToken`]), since the next connection's Initial
//! leaves before the server's transport parameters arrive. Any other token,
//! and one the client cannot decode, is opaque and goes back unmodified:
//!
//! ```
//! # use std::time::{Duration, SystemTime};
//! # use ex_token::*;
//! # let mut server = TokenServer::new(
//! #     KeyRing::new(TokenKey::from_bytes(1, &[1; 32])?), SimRng::new(1), ServerConfig::default());
//! # let saved = SavedPath { capacity: 1_250_000, rtt: Duration::from_millis(600), extras: b"" };
//! # let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! # let set = server.new_saved_set("192.0.2.10:1".parse()?, now)?;
//! # let new_token = server.mint_bdp_token("192.0.2.10:1".parse()?, &saved, &set)?;
//! let server_addr = "203.0.113.5:443".parse()?;
//! let mut store = TokenStore::new(StoreConfig::default());
//! // The connection that received it saw the server announce ex_token.
//! store.insert_held("example.org", server_addr, HeldToken::extensible(new_token), now);
//!
//! let mut held = store.take_held("example.org", server_addr, now).expect("a token");
//! if held.ex_token {
//!     if let Ok(Some(Ok(bdp))) = ExToken::decode(&held.token).map(|t| t.bdp()) {
//!         assert_eq!((bdp.capacity, bdp.rtt_us), (1_250_000, 600_000));
//!         // On a link known to be slower today, ask for at most 500 kB.
//!         lower_requested_capacity(&mut held.token, 500_000)?;
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod address;
mod bdp;
mod client;
mod codepoints;
mod extension_id;
mod guard;
mod keys;
mod once;
mod outcome;
mod payload;
mod remote;
mod retry;
mod rng;
mod server;
mod store;
mod time;
mod token;
mod varint;

pub use address::AddressPrefixes;
pub use bdp::{BdpDecodeError, BdpToken};
pub use client::{lower_requested_capacity, LowerError};
pub use codepoints::{ErrorCodes, BDP_TOKEN_ERROR, EX_TOKEN_ENABLED, EX_TOKEN_ERROR, TP_EX_TOKEN};
pub use extension_id::ExtensionId;
pub use guard::{
    decide, Claim, ClaimAnswer, ClaimOutcome, MemoryGuard, SetEvent, SetId, SetRecord, SetState,
    TokenGuard,
};
pub use keys::{
    KeyError, KeyRing, OpenError, TokenKey, KEY_LEN, MAX_PREVIOUS_KEYS, RESET_TOKEN_LEN,
    SESSION_TICKET_KEY_LEN,
};
pub use once::{FirstUse, OnceId, OnceKind, OnceRecords};
pub use outcome::{
    AddressStatus, InvalidToken, NoResume, SavedParameters, TokenRejected, Validation,
};
pub use payload::{Extras, MAX_EXTRAS};
pub use remote::{RemoteEndpoint, SiteId};
pub use retry::{is_retry_token, InvalidRetryToken, MAX_ODCID_LEN, RETRY_TOKEN_PREFIX};
pub use rng::{RandomError, Rng, SimRng, SystemRng};
pub use server::{
    MintError, Policy, SavedPath, SavedSet, ServerConfig, TokenServer, MAX_CLOCK_SKEW,
};
pub use store::{HeldToken, StoreConfig, TokenStore};
pub use token::{
    DecodeError, EncodeError, ExToken, ExTokenBuilder, Extension, Extensions, MAX_EXTENSIONS,
    MAX_TOKEN_LEN,
};
