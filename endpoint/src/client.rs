//! The client side: keep tokens and TLS sessions, present them, make room
//! for the resumed window.
//!
//! A kept TLS session (with its ticket) lets the next connection resume TLS
//! and send its request as early data (0-RTT), a round trip sooner; the
//! application sends it once `conn.is_in_early_data()` holds, as upstream's
//! HTTP/3 client does. A server that refuses the early data answers the
//! request after the handshake: nothing is lost but the round trip.
//!
//! A token is an extensible token the client may read and adjust only when
//! the server that sent it announced the `ex_token` transport parameter on
//! that connection; the store keeps that fact with the token, because the
//! next connection's Initial carries the token before the server's
//! transport parameters arrive. Every other token is opaque (RFC 9000,
//! Section 8.1.3), and so is one the client cannot decode: it is kept and
//! presented byte for byte as the server sent it.

use std::net::SocketAddr;
use std::time::SystemTime;

use ex_token::{ExToken, HeldToken, StoreConfig, TokenStore};

use crate::Error;

/// What the client asks the server to resume with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RequestedCapacity {
    /// Whatever the server saved.
    #[default]
    AsSaved,
    /// At most this many bytes, for a client that knows its path got worse.
    AtMost(u64),
    /// No Careful Resume: treat the connection as a fresh congestion context.
    OptOut,
}

/// How a [`ResumeClient`] presents tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// Lowering (never raising) the Requested Capacity of BDP tokens from
    /// servers that announced `ex_token`; other tokens go back unmodified.
    pub requested_capacity: RequestedCapacity,
    /// The initial flow-control credit (connection and stream) the client
    /// grants on every connection. The client owns this setting of the
    /// `quiche::Config` it connects with.
    pub base_credit: u64,
    /// Flow-control credit granted per byte of saved Capacity, when that
    /// exceeds `base_credit`. The server jumps to half the Capacity and then
    /// grows; a receive window smaller than that throttles the resumed
    /// connection (the seed dissertation saw exactly this). Only the
    /// Capacity of a token from a server that announced `ex_token` counts.
    pub credit_per_capacity: u64,
    /// The most credit a token can raise the client's to, however large
    /// the Capacity the server wrote in it: that number is the server's,
    /// and credit is memory the client commits to buffering. It never
    /// lowers `base_credit`. Default 64 MiB: the credit for a Capacity of
    /// 32 MiB, e.g. 400 Mbit/s over a 600 ms GEO path.
    pub max_credit: u64,
    /// Bounds of the token store.
    pub store: StoreConfig,
    /// Whether to keep TLS sessions and resume them with early data
    /// (0-RTT). On by default.
    pub early_data: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            requested_capacity: RequestedCapacity::AsSaved,
            base_credit: 16 * 1024 * 1024,
            credit_per_capacity: 2,
            max_credit: 64 * 1024 * 1024,
            store: StoreConfig::default(),
            early_data: true,
        }
    }
}

impl ClientConfig {
    /// The initial flow-control credit of a connection presenting a token
    /// whose readable saved Capacity is `capacity` (`None`: no token, or
    /// one the client may not read): `credit_per_capacity` times the
    /// Capacity, at most `max_credit`, and never below `base_credit`.
    pub fn credit(&self, capacity: Option<u64>) -> u64 {
        let resumed = capacity.map_or(0, |c| c.saturating_mul(self.credit_per_capacity));
        resumed.min(self.max_credit).max(self.base_credit)
    }
}

/// Careful Resume for a quiche client: stores the tokens servers send and
/// presents one, once, on the next connection to the same server.
#[derive(Debug)]
pub struct ResumeClient {
    store: TokenStore,
    config: ClientConfig,
}

impl ResumeClient {
    /// A client with an empty token store.
    pub fn new(config: ClientConfig) -> Self {
        ResumeClient {
            store: TokenStore::new(config.store),
            config,
        }
    }

    /// A client using `store`, for example one loaded from a file.
    pub fn with_store(store: TokenStore, config: ClientConfig) -> Self {
        ResumeClient { store, config }
    }

    /// The token store, for saving it to a file.
    pub fn store(&self) -> &TokenStore {
        &self.store
    }

    /// Recognises the server's `ex_token` transport parameter, and enables
    /// early data unless [`ClientConfig::early_data`] is off.
    pub fn configure(&self, config: &mut quiche::Config) -> Result<(), Error> {
        config.set_ex_token(ex_token::TP_EX_TOKEN, 0)?;
        if self.config.early_data {
            config.enable_early_data();
        }
        Ok(())
    }

    /// Connects like [`quiche::connect()`], presenting a stored token for
    /// (`server_name`, `peer`) if there is one, and resuming the TLS
    /// session kept for it (with early data, unless it is off).
    ///
    /// The connection's initial flow-control credit (connection and stream,
    /// and the autotuning ceilings) is set in `config` to `base_credit`, or
    /// to `credit_per_capacity` times the saved Capacity of the token when
    /// that is more, up to `max_credit` ([`ClientConfig::credit`]), so the
    /// resumed window is not limited by the receiver.
    ///
    /// Only a token whose server announced `ex_token` is read, and only its
    /// Requested Capacity is ever changed (lowered, by
    /// [`ClientConfig::requested_capacity`]); any other token, or one that
    /// does not decode, is presented exactly as received.
    pub fn connect(
        &mut self,
        server_name: &str,
        scid: &quiche::ConnectionId,
        local: SocketAddr,
        peer: SocketAddr,
        config: &mut quiche::Config,
        now: SystemTime,
    ) -> Result<quiche::Connection, Error> {
        let mut held = self.store.take_held(server_name, peer, now);

        let capacity = held.as_mut().and_then(|held| self.prepare(held));
        set_credit(config, self.config.credit(capacity));

        let mut conn = quiche::connect(Some(server_name), scid, local, peer, config)?;
        if let Some(held) = held {
            conn.set_token(&held.token)?;
        }
        if self.config.early_data {
            if let Some(session) = self.store.take_session(server_name, peer, now) {
                // A session quiche cannot read only costs the resumption.
                if let Err(e) = conn.set_session(&session) {
                    log::debug!("{server_name} {peer}: kept TLS session not usable: {e}");
                }
            }
        }
        Ok(conn)
    }

    /// Applies the Requested Capacity policy in place to a BDP token from a
    /// server that announced `ex_token`, and returns the capacity the
    /// server may resume with, if any. Other tokens are left untouched.
    fn prepare(&self, held: &mut HeldToken) -> Option<u64> {
        if !held.ex_token {
            return None;
        }
        let token = held.token.as_mut_slice();
        let Some(Ok(bdp)) = ExToken::decode(token).ok()?.bdp() else {
            log::debug!("an extensible token without a readable BDP_TOKEN: presented as received");
            return None;
        };
        let capacity = bdp.capacity;
        let requested = match self.config.requested_capacity {
            RequestedCapacity::AsSaved => return Some(capacity),
            RequestedCapacity::AtMost(limit) => limit,
            RequestedCapacity::OptOut => 0,
        };
        ex_token::lower_requested_capacity(token, requested)
            .ok()
            .filter(|&capacity| capacity > 0)
    }

    /// Housekeeping after each `recv()`: keeps the tokens the server sent
    /// for the next connection to (`server_name`, `peer`), each with
    /// whether the server announced `ex_token` on this connection
    /// ([`announced_ex_token`]), and the newest TLS session.
    pub fn on_progress(
        &mut self,
        conn: &mut quiche::Connection,
        server_name: &str,
        peer: SocketAddr,
        now: SystemTime,
    ) {
        let ex_token = announced_ex_token(conn);
        while let Some(token) = conn.new_token_next() {
            let held = HeldToken { token, ex_token };
            self.store.insert_held(server_name, peer, held, now);
        }
        if self.config.early_data {
            if let Some(session) = conn.session() {
                if self.store.session(server_name, peer) != Some(session) {
                    self.store
                        .insert_session(server_name, peer, session.to_vec(), now);
                }
            }
        }
    }
}

/// Whether the server at the other end of `conn` announced extensible
/// tokens: its transport parameters carry `ex_token` under
/// [`ex_token::TP_EX_TOKEN`] with the value [`ex_token::EX_TOKEN_ENABLED`].
/// The client must recognise the parameter ([`ResumeClient::configure`]) to
/// see it; until the server's parameters have arrived this is false.
pub fn announced_ex_token(conn: &quiche::Connection) -> bool {
    conn.peer_transport_params()
        .and_then(|params| params.ex_token)
        .is_some_and(|param| {
            param.id == ex_token::TP_EX_TOKEN && param.value == ex_token::EX_TOKEN_ENABLED
        })
}

fn set_credit(config: &mut quiche::Config, credit: u64) {
    config.set_initial_max_data(credit);
    config.set_initial_max_stream_data_bidi_local(credit);
    config.set_max_connection_window(credit);
    config.set_max_stream_window(credit);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_credit_follows_the_capacity_between_the_base_and_the_bound() {
        let config = ClientConfig::default();
        assert_eq!(config.credit(None), 16 * MIB);
        assert_eq!(config.credit(Some(1_000_000)), 16 * MIB);
        assert_eq!(config.credit(Some(10_000_000)), 20_000_000);
        assert_eq!(config.credit(Some(32 * MIB)), 64 * MIB);
        // Whatever a server writes in its token, the bound holds.
        assert_eq!(config.credit(Some(32 * MIB + 1)), 64 * MIB);
        assert_eq!(config.credit(Some((1 << 62) - 1)), 64 * MIB);
        assert_eq!(config.credit(Some(u64::MAX)), 64 * MIB);
    }

    #[test]
    fn the_bound_never_lowers_the_base_credit() {
        let config = ClientConfig {
            base_credit: 100 * MIB,
            max_credit: 64 * MIB,
            ..ClientConfig::default()
        };
        assert_eq!(config.credit(None), 100 * MIB);
        assert_eq!(config.credit(Some(u64::MAX)), 100 * MIB);
    }
}
