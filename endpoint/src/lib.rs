//! Careful Resume for quiche-cr servers and clients, in a few calls.
//!
//! The patched quiche knows how to resume (Careful Resume in recovery,
//! NEW_TOKEN, the `ex_token` transport parameter) and the `ex-token` crate
//! knows how to carry saved capacity in address validation tokens. This crate
//! ties them together so an application does not have to:
//!
//! - [`ResumeServer`]: validates the token of a client's Initial, lifts the
//!   anti-amplification limit when its address validation part checks out,
//!   starts Careful Resume from the saved capacity (honouring the client's
//!   Requested Capacity and RFC 9959's saved-set rules, kept by a
//!   [`ex_token::TokenGuard`]: one set per client network, one connection
//!   at a time, claimed once the handshake is complete, revoked on a
//!   retreat), and, while the connection runs, mints BDP tokens from what
//!   the observing policy saves and sends them with NEW_TOKEN.
//! - [`ResumeClient`]: keeps the tokens servers send, presents one on the next
//!   connection to the same server, can lower the Requested Capacity or opt
//!   out, and grants enough flow-control credit for the resumed window.
//!
//! A server's loop then looks like this (socket handling elided):
//!
//! ```no_run
//! # fn demo(
//! #     server: &mut cr_endpoint::ResumeServer,
//! #     config: &mut quiche::Config,
//! #     initial: &mut [u8],
//! #     local: std::net::SocketAddr,
//! #     peer: std::net::SocketAddr,
//! # ) -> Result<(), cr_endpoint::Error> {
//! let hdr = quiche::Header::from_slice(initial, quiche::MAX_CONN_ID_LEN)?;
//! let scid = quiche::ConnectionId::from_ref(&[0xab; 16]);
//! let now = std::time::SystemTime::now();
//! let token = hdr.token.as_deref().unwrap_or_default();
//! let mut accepted = server.accept(&scid, None, local, peer, token, config, now)?;
//! // ... recv / send / on_timeout on accepted.conn, and after each of them
//! // (after a recv: before writing to streams, so a jump is filled):
//! server.on_progress(&mut accepted.conn, &mut accepted.session, std::time::SystemTime::now());
//! // ... while accepted.session.claim_pending(), poll within a millisecond:
//! server.poll_claim(&mut accepted.conn, &mut accepted.session);
//! // ... when the connection is dropped:
//! server.on_closed(&mut accepted.conn, &mut accepted.session, std::time::SystemTime::now());
//! # Ok(()) }
//! ```

mod client;
mod error;
mod metrics;
mod server;
mod stats;

pub use client::{announced_ex_token, ClientConfig, RequestedCapacity, ResumeClient};
pub use error::Error;
pub use metrics::{MetricsSnapshot, Refusal, ServerMetrics};
pub use server::{Accepted, ResumeConfig, ResumeServer, ResumeSession};
pub use stats::ResumeStats;

/// A one-user-per-set guard every connection of a server can share, across
/// threads: in memory for one process, or a registry a fleet shares.
pub type SharedGuard = std::sync::Arc<dyn ex_token::TokenGuard + Send + Sync>;

pub use careful_resume;
pub use ex_token;
