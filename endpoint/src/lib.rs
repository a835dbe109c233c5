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
//! # Adding Careful Resume to a quiche server, in order
//!
//! 1. **Keys.** Tokens are sealed with a [`TokenKey`] held in a [`KeyRing`]
//!    (the current key first, older ones still opening what they sealed).
//!    Servers that share clients share the ring; one server may draw a key
//!    at start-up.
//! 2. **Guard.** RFC 9959 lets one connection at a time use a saved set,
//!    one set per Remote Endpoint, never again after a Safe Retreat: a
//!    [`TokenGuard`] keeps that record. [`MemoryGuard`] keeps it in the
//!    process; `cr_guard_redis::RedisGuard` in a Redis a fleet shares.
//! 3. **Token server.** [`TokenServer`] mints and validates tokens with the
//!    keys ([`ex_token::ServerConfig`]: lifetimes, client networks, site).
//!    The common case, a key and the in-process guard, is one call:
//!    [`ResumeServer::with_keys`] or [`ResumeServer::with_generated_key`];
//!    otherwise [`ResumeServer::new`] takes the three parts.
//! 4. **Accept.** [`ResumeServer::configure`] announces extensible tokens
//!    in your `quiche::Config`. For each new connection, call
//!    [`ResumeServer::accept`] instead of `quiche::accept()`, with the token
//!    of the client's Initial as it came. A server doing stateless Retry
//!    first asks [`ResumeServer::on_initial`], which validates both kinds
//!    of token an Initial carries (ours from NEW_TOKEN, and the Retry
//!    tokens it mints itself) and answers with an [`InitialAction`]:
//!    accept (without Retry for a current token of ours; with the original
//!    destination connection ID after a Retry), send a Retry (no usable
//!    token, [`ResumeConfig::retry`]), or drop (an invalid Retry token, by
//!    [`DropReason`]). So a resuming client never meets a Retry check that
//!    drops its Initial, and a Retry token is never counted as a presented
//!    one. Keep the [`ResumeSession`] beside the connection.
//! 5. **The loop.** One call, in one place: [`ResumeServer::on_progress`]
//!    after each `recv()` (before you write to streams; after `send()` and
//!    `on_timeout()` it does no harm). It claims the saved set once the
//!    handshake is complete and sends the client its tokens. While the
//!    jump is to come, quiche lets you queue what it will carry, so the
//!    usual order (`recv`, write to the writable streams, `send` until
//!    `Done`) fills it. With a guard across the network, the claim's answer
//!    comes later: while [`ResumeSession::claim_pending`], call
//!    [`ResumeServer::poll_claim`] when the loop wakes (within a millisecond
//!    or so), then `send`. When you drop a connection, call
//!    [`ResumeServer::on_closed`]. Early data (0-RTT): act on a request
//!    before the handshake completes only once
//!    [`ResumeSession::early_data_accepted`] (the guard recorded the first
//!    flight as new; see [`EarlyData`]), and only on idempotent ones.
//!    RFC 9959 paces the jump: quiche holds
//!    its packets until they are due and wakes the loop through
//!    `timeout()`, unless the loop declares that it sends each packet at
//!    `SendInfo::at` (`quiche::Config::set_application_paces`).
//!    Clients that resume at the same time may share a bottleneck the
//!    server cannot see: [`ResumeConfig::jump_budget`] ([`JumpBudget`], on
//!    by default) shares their jumps out, so that a crowd of resumes does
//!    not flood it.
//! 6. **What it did.** Per connection, [`Accepted::stats`] (or
//!    [`ResumeSession::stats`]) gives a [`ResumeStats`]; server-wide,
//!    [`ResumeServer::metrics`] counts tokens, refusals by [`Refusal`],
//!    Retries and dropped Initials by [`DropReason`], jumps, validations,
//!    retreats and jumps that went unused
//!    ([`MetricsSnapshot::jumps_unused`]: the response was smaller than the
//!    jump, or stream data was written too late): what happened, without a
//!    logger.
//! 7. **Restarts (optional).** The key ring a server keeps across restarts
//!    also derives stateless reset tokens: make one [`reset::Issuer`] per
//!    process (the server's id in its fleet, distinct per server, and the
//!    process's start), pick connection IDs with [`reset::connection_id`],
//!    announce [`reset::reset_token`] of each
//!    (`quiche::Config::set_stateless_reset_token` before accepting), and
//!    answer a short-header packet for an ID you do not have with
//!    [`reset::stateless_reset`]. A client whose connection a restarted
//!    server no longer has then closes at its next packet instead of
//!    waiting out its idle timeout. A server resets only its own IDs of an
//!    earlier process, never another server's: a fleet routes by
//!    connection ID (see [`reset`] for why).
//!
//! ```no_run
//! # fn demo(
//! #     config: &mut quiche::Config,
//! #     initial: &mut [u8],
//! #     local: std::net::SocketAddr,
//! #     peer: std::net::SocketAddr,
//! # ) -> Result<(), cr_endpoint::Error> {
//! use std::time::SystemTime;
//!
//! let mut server = cr_endpoint::ResumeServer::with_generated_key()?;
//! server.configure(config)?;
//!
//! let hdr = quiche::Header::from_slice(initial, quiche::MAX_CONN_ID_LEN)?;
//! let odcid = match server.on_initial(&hdr, peer, SystemTime::now()) {
//!     cr_endpoint::InitialAction::Accept { odcid } => odcid,
//!     // Send quiche::retry(.., &token, ..), or drop the packet.
//!     cr_endpoint::InitialAction::Retry { .. } | cr_endpoint::InitialAction::Drop(_) => {
//!         return Ok(());
//!     }
//! };
//! // After a Retry, the connection keeps the ID the Retry gave the client.
//! let scid = match &odcid {
//!     Some(_) => hdr.dcid.clone(),
//!     None => quiche::ConnectionId::from_ref(&[0xab; 16]),
//! };
//! let token = hdr.token.as_deref().unwrap_or_default();
//! let mut accepted =
//!     server.accept(&scid, odcid.as_ref(), local, peer, token, config, SystemTime::now())?;
//!
//! // The loop: after each recv, before writing to streams.
//! server.on_progress(&mut accepted.conn, &mut accepted.session, SystemTime::now());
//! // ... and when the connection is dropped:
//! server.on_closed(&mut accepted.conn, &mut accepted.session, SystemTime::now());
//! println!("{:?}", accepted.stats());
//! # Ok(()) }
//! ```
//!
//! `endpoint/examples/http3-server-cr.diff` applies this to upstream
//! quiche's `examples/http3-server.rs` in 19 added and 11 removed lines,
//! its own Retry tokens replaced by [`ResumeServer::on_initial`]'s
//! (`make quiche` writes the result to `endpoint/examples/`).

mod budget;
mod client;
mod early_data;
mod error;
mod initial;
mod metrics;
pub mod reset;
mod server;
mod stats;

pub use budget::JumpBudget;
pub use client::{announced_ex_token, ClientConfig, RequestedCapacity, ResumeClient};
pub use early_data::{EarlyData, ADDRESS_TOKEN_RECORD, FIRST_FLIGHT_RECORD};
pub use error::Error;
pub use initial::{DropReason, InitialAction};
pub use metrics::{MetricsSnapshot, Refusal, ServerMetrics};
pub use server::{Accepted, ResumeConfig, ResumeServer, ResumeSession};
pub use stats::ResumeStats;

/// A one-user-per-set guard every connection of a server can share, across
/// threads: in memory for one process, or a registry a fleet shares.
pub type SharedGuard = std::sync::Arc<dyn ex_token::TokenGuard + Send + Sync>;

pub use careful_resume;
pub use ex_token;

// What a server needs from `ex_token` to build a `ResumeServer` and read
// what it reports, inlined so that these docs are all a server needs.
#[doc(inline)]
pub use ex_token::{
    AddressPrefixes, KeyRing, MemoryGuard, NoResume, SavedParameters, SystemRng, TokenGuard,
    TokenKey, TokenServer,
};
