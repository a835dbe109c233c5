//! What a server does with a client's first Initial: accept it, answer it
//! with a Retry, or drop it. One decision for both kinds of token the
//! Initial may carry (ours from NEW_TOKEN, and Retry tokens), so that a
//! server's Retry never drops a resuming client and a resuming client's
//! token never skips a Retry it needed.

use std::fmt;
use std::net::SocketAddr;
use std::time::SystemTime;

use ex_token::{InvalidRetryToken, Rng, TokenGuard};

use crate::ResumeServer;

/// What to do with a client's first Initial, as
/// [`ResumeServer::on_initial`] decides it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitialAction {
    /// Accept the connection ([`ResumeServer::accept`] with the Initial's
    /// token as it came). `odcid` is the original destination connection
    /// ID when the Initial answered our Retry: pass it to `accept`, and use
    /// the Initial's destination connection ID (the Retry's source
    /// connection ID) as the connection's own, since the client checks
    /// both against the Retry. `None` when there was no Retry: the server
    /// chooses the connection's ID.
    Accept {
        /// The destination connection ID of the client's first Initial,
        /// which the Retry token carried.
        odcid: Option<quiche::ConnectionId<'static>>,
    },
    /// Answer with a Retry packet carrying `token`
    /// (`quiche::retry(&hdr.scid, &hdr.dcid, &new_scid, &token, ...)`);
    /// the client's next Initial brings it back. Only without a usable
    /// token, and only when [`crate::ResumeConfig::retry`] asks for it.
    Retry {
        /// The Retry token: the client's address and the Initial's
        /// destination connection ID, sealed with the server's key ring.
        token: Vec<u8>,
    },
    /// Drop the packet, and why (counted in [`crate::ServerMetrics`]).
    Drop(DropReason),
}

/// Why [`ResumeServer::on_initial`] dropped an Initial.
///
/// An Initial carrying one of our NEW_TOKEN tokens is never dropped: an
/// invalid one counts as no token (RFC 9000, Section 8.1.3), since the
/// client may hold it from a server that has since lost its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Not an Initial: only an Initial can open a connection.
    NotInitial,
    /// A Retry token whose lifetime is over: the client was slow to answer
    /// the Retry, or the token is replayed.
    RetryTokenExpired,
    /// A Retry token minted for another address or port: copied from
    /// another client, or the client's NAT rebound in between.
    RetryTokenWrongAddress,
    /// A token in the form of a Retry token that does not open: forged,
    /// altered, or sealed with a key this server does not hold.
    RetryTokenInvalid,
}

impl DropReason {
    /// Every reason, in a fixed order (the order of
    /// [`crate::MetricsSnapshot::initials_dropped`]).
    pub const ALL: [DropReason; 4] = [
        DropReason::NotInitial,
        DropReason::RetryTokenExpired,
        DropReason::RetryTokenWrongAddress,
        DropReason::RetryTokenInvalid,
    ];

    /// The reason as a metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::NotInitial => "not_initial",
            DropReason::RetryTokenExpired => "retry_token_expired",
            DropReason::RetryTokenWrongAddress => "retry_token_wrong_address",
            DropReason::RetryTokenInvalid => "retry_token_invalid",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    fn of(invalid: InvalidRetryToken) -> DropReason {
        match invalid {
            InvalidRetryToken::Expired => DropReason::RetryTokenExpired,
            InvalidRetryToken::AddressMismatch => DropReason::RetryTokenWrongAddress,
            InvalidRetryToken::Payload | InvalidRetryToken::Sealing(_) => {
                DropReason::RetryTokenInvalid
            }
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropReason::NotInitial => "not an Initial packet",
            DropReason::RetryTokenExpired => "Retry token expired",
            DropReason::RetryTokenWrongAddress => "Retry token minted for another address",
            DropReason::RetryTokenInvalid => "Retry token invalid (forged or unknown key)",
        })
    }
}

impl<R: Rng, G: TokenGuard> ResumeServer<R, G> {
    /// Decides what to do with a client's first Initial (`hdr`, from
    /// `peer`), for a server that validates addresses with stateless
    /// Retry, from the token it carries:
    ///
    /// - our Retry token, valid: [`InitialAction::Accept`] with the original
    ///   destination connection ID it carries. Invalid (expired, another
    ///   address, forged): [`InitialAction::Drop`]. The client answers one
    ///   Retry only, so another would not help; RFC 9000 (Section 8.1.2)
    ///   prefers closing with INVALID_TOKEN, which quiche can only send
    ///   from a connection, and creating one is the cost Retry defers.
    /// - a current NEW_TOKEN token of ours ([`ResumeServer::recognizes`]):
    ///   accept without a Retry, so a resuming client loses no round trip
    ///   and its saved set reaches [`ResumeServer::accept`].
    /// - anything else, no token included: [`InitialAction::Retry`] when
    ///   [`crate::ResumeConfig::retry`] asks for it, else accept. A token
    ///   that is neither counts as none (RFC 9000, Section 8.1.3).
    ///
    /// Retries and drops are counted in [`ResumeServer::metrics`], so a
    /// server without a logger sees them. `now` is wall-clock time.
    pub fn on_initial(
        &mut self,
        hdr: &quiche::Header,
        peer: SocketAddr,
        now: SystemTime,
    ) -> InitialAction {
        let action = self.decide_initial(hdr, peer, now);
        let token = hdr.token.as_deref().unwrap_or_default();
        self.metrics.on_initial(&action, carries_saved_set(token));
        match &action {
            InitialAction::Drop(why) => log::debug!("{peer}: Initial dropped: {why}"),
            InitialAction::Retry { .. } => log::trace!("{peer}: Initial answered with Retry"),
            InitialAction::Accept { .. } => {}
        }
        action
    }

    fn decide_initial(
        &mut self,
        hdr: &quiche::Header,
        peer: SocketAddr,
        now: SystemTime,
    ) -> InitialAction {
        if hdr.ty != quiche::Type::Initial {
            return InitialAction::Drop(DropReason::NotInitial);
        }
        let token = hdr.token.as_deref().unwrap_or_default();
        if ex_token::is_retry_token(token) {
            return match self.tokens.validate_retry_token(token, peer, now) {
                Ok(odcid) => InitialAction::Accept {
                    odcid: Some(odcid.into()),
                },
                Err(invalid) => InitialAction::Drop(DropReason::of(invalid)),
            };
        }
        if !self.config.retry || self.recognizes(token, peer, now) {
            return InitialAction::Accept { odcid: None };
        }
        let lifetime = self.config.retry_token_lifetime;
        match self.tokens.mint_retry_token(peer, &hdr.dcid, now, lifetime) {
            Ok(token) => InitialAction::Retry { token },
            Err(e) => {
                // Only a failing random source gets here: serve the client
                // under the anti-amplification limit rather than not at all.
                log::warn!("{peer}: no Retry token ({e}); accepting without Retry");
                InitialAction::Accept { odcid: None }
            }
        }
    }
}

/// Whether `token` is an extensible token carrying a saved set (valid or
/// not): a client that meant to resume.
fn carries_saved_set(token: &[u8]) -> bool {
    ex_token::ExToken::decode(token).is_ok_and(|token| token.bdp().is_some())
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::{Duration, SystemTime};

    use ex_token::{KeyRing, SavedPath, SimRng, TokenKey, TokenServer};

    use super::*;
    use crate::{MetricsSnapshot, Refusal, ResumeConfig};

    const CERT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/cert.pem");
    const KEY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/key.pem");
    const ALPN: &[u8] = b"cr-test";

    fn client_addr() -> SocketAddr {
        "192.0.2.10:40000".parse().unwrap()
    }

    fn server_addr() -> SocketAddr {
        "198.51.100.1:443".parse().unwrap()
    }

    fn start() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
    }

    fn resume_server(config: ResumeConfig) -> ResumeServer<SimRng> {
        let key = TokenKey::from_bytes(1, &[9; 32]).unwrap();
        let tokens = TokenServer::new(KeyRing::new(key), SimRng::new(1), Default::default());
        ResumeServer::new(tokens, Default::default(), config)
    }

    fn quiche_config(is_server: bool) -> quiche::Config {
        let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
        if is_server {
            config.load_cert_chain_from_pem_file(CERT).unwrap();
            config.load_priv_key_from_pem_file(KEY).unwrap();
        }
        config.verify_peer(false);
        config.set_application_protos(&[ALPN]).unwrap();
        config.set_max_idle_timeout(30_000);
        config
    }

    /// A quiche client at `local` whose first Initial carries `token`.
    fn client_at(local: SocketAddr, token: &[u8]) -> quiche::Connection {
        let scid = quiche::ConnectionId::from_ref(&[0xc1; 16]);
        let mut config = quiche_config(false);
        let mut conn = quiche::connect(
            Some("quiche-cr.test"),
            &scid,
            local,
            server_addr(),
            &mut config,
        )
        .unwrap();
        if !token.is_empty() {
            conn.set_token(token).unwrap();
        }
        conn
    }

    /// The next packet `conn` sends (the whole datagram).
    fn next_datagram(conn: &mut quiche::Connection) -> Vec<u8> {
        let mut out = vec![0; 1500];
        let (len, _) = conn.send(&mut out).unwrap();
        out.truncate(len);
        out
    }

    fn header(datagram: &mut [u8]) -> quiche::Header<'_> {
        quiche::Header::from_slice(datagram, quiche::MAX_CONN_ID_LEN).unwrap()
    }

    /// Delivers what `from` has to send to `to`; whether anything moved.
    fn deliver(from: &mut quiche::Connection, to: &mut quiche::Connection) -> bool {
        let mut buf = vec![0; 1500];
        let mut moved = false;
        while let Ok((len, info)) = from.send(&mut buf) {
            let info = quiche::RecvInfo {
                from: info.from,
                to: info.to,
            };
            to.recv(&mut buf[..len], info).ok();
            moved = true;
        }
        moved
    }

    /// Delivers packets both ways until neither side sends.
    fn exchange(client: &mut quiche::Connection, server: &mut quiche::Connection) {
        for _ in 0..20 {
            let sent = deliver(client, server);
            if !(deliver(server, client) || sent) {
                return;
            }
        }
    }

    fn bdp_token(server: &mut ResumeServer<SimRng>, peer: SocketAddr, now: SystemTime) -> Vec<u8> {
        let set = server.tokens_mut().new_saved_set(peer, now).unwrap();
        let path = SavedPath {
            capacity: 1_000_000,
            rtt: Duration::from_millis(100),
            extras: &[],
        };
        server
            .tokens_mut()
            .mint_bdp_token(peer, &path, &set)
            .unwrap()
    }

    fn snapshot<R: Rng, G: TokenGuard>(server: &ResumeServer<R, G>) -> MetricsSnapshot {
        server.metrics().snapshot()
    }

    #[test]
    fn an_initial_without_a_token_gets_a_retry_when_the_server_wants_one() {
        let mut server = resume_server(ResumeConfig::default());
        let mut initial = next_datagram(&mut client_at(client_addr(), &[]));
        let hdr = header(&mut initial);
        let InitialAction::Retry { token } = server.on_initial(&hdr, client_addr(), start()) else {
            panic!("no Retry");
        };
        assert!(ex_token::is_retry_token(&token));
        assert_eq!(snapshot(&server).initials_retried, 1);
        assert_eq!(snapshot(&server).resuming_initials_retried, 0);

        let mut no_retry = resume_server(ResumeConfig {
            retry: false,
            ..Default::default()
        });
        assert_eq!(
            no_retry.on_initial(&hdr, client_addr(), start()),
            InitialAction::Accept { odcid: None }
        );
        assert_eq!(snapshot(&no_retry).initials_retried, 0);
    }

    #[test]
    fn a_resuming_initial_with_a_current_token_is_accepted_without_retry() {
        let mut server = resume_server(ResumeConfig::default());
        let token = bdp_token(&mut server, client_addr(), start());
        let later = start() + Duration::from_secs(60);
        let mut initial = next_datagram(&mut client_at(client_addr(), &token));
        let hdr = header(&mut initial);
        assert_eq!(
            server.on_initial(&hdr, client_addr(), later),
            InitialAction::Accept { odcid: None }
        );
        assert_eq!(snapshot(&server).initials_retried, 0);

        // Its set expired, the same token no longer spares the Retry, and
        // the Retry is counted as one a resuming client met.
        let expired = start() + Duration::from_secs(2 * 3600);
        assert!(matches!(
            server.on_initial(&hdr, client_addr(), expired),
            InitialAction::Retry { .. }
        ));
        assert_eq!(snapshot(&server).resuming_initials_retried, 1);
    }

    /// The client answers the Retry; the server accepts with the original
    /// destination connection ID, the handshake completes, and the Retry
    /// token, passed to `accept` as it came, counts as no presented token.
    #[test]
    fn after_a_retry_the_connection_completes_and_presents_no_token() {
        let mut server = resume_server(ResumeConfig::default());
        let mut client = client_at(client_addr(), &[]);
        let mut first = next_datagram(&mut client);
        let first_hdr = header(&mut first);
        let InitialAction::Retry { token } = server.on_initial(&first_hdr, client_addr(), start())
        else {
            panic!("no Retry");
        };
        let retry_scid = quiche::ConnectionId::from_ref(&[0x5e; 20]);
        let mut retry = vec![0; 1500];
        let len = quiche::retry(
            &first_hdr.scid,
            &first_hdr.dcid,
            &retry_scid,
            &token,
            first_hdr.version,
            &mut retry,
        )
        .unwrap();
        let info = quiche::RecvInfo {
            from: server_addr(),
            to: client_addr(),
        };
        client.recv(&mut retry[..len], info).unwrap();

        let second = next_datagram(&mut client);
        let mut parsed = second.clone();
        let hdr = header(&mut parsed);
        assert_eq!(hdr.dcid, retry_scid);
        let later = start() + Duration::from_secs(1);
        let InitialAction::Accept { odcid: Some(odcid) } =
            server.on_initial(&hdr, client_addr(), later)
        else {
            panic!("not accepted after the Retry");
        };
        assert_eq!(odcid, first_hdr.dcid);

        let mut config = quiche_config(true);
        let presented = hdr.token.as_deref().unwrap_or_default();
        let mut accepted = server
            .accept(
                &hdr.dcid,
                Some(&odcid),
                server_addr(),
                client_addr(),
                presented,
                &mut config,
                later,
            )
            .unwrap();
        let info = quiche::RecvInfo {
            from: client_addr(),
            to: server_addr(),
        };
        accepted.conn.recv(&mut second.clone(), info).unwrap();
        exchange(&mut client, &mut accepted.conn);
        assert!(client.is_established(), "{:?}", client.peer_error());

        assert!(!accepted.stats().token_presented);
        let metrics = snapshot(&server);
        assert_eq!(metrics.retry_tokens_validated, 1);
        assert_eq!((metrics.connections, metrics.tokens_presented), (1, 0));
        assert_eq!(metrics.refused.iter().sum::<u64>(), 0);

        // The Retry token alone (no odcid given) is not judged either, even
        // under the strict policy, which closes on a malformed token.
        let strict = ex_token::ServerConfig {
            policy: ex_token::Policy::Strict,
            ..Default::default()
        };
        let key = TokenKey::from_bytes(1, &[9; 32]).unwrap();
        let tokens = TokenServer::new(KeyRing::new(key), SimRng::new(2), strict);
        let mut strict =
            ResumeServer::new(tokens, crate::MemoryGuard::default(), Default::default());
        let accepted = strict
            .accept(
                &hdr.dcid,
                None,
                server_addr(),
                client_addr(),
                presented,
                &mut config,
                later,
            )
            .unwrap();
        assert!(accepted.session.rejected.is_none());
        assert_eq!(snapshot(&strict).tokens_presented, 0);
        assert_eq!(snapshot(&strict).refused(Refusal::Malformed), 0);
    }

    #[test]
    fn an_invalid_retry_token_drops_the_initial_and_is_counted() {
        let mut server = resume_server(ResumeConfig::default());
        let odcid = [0xd0; 16];
        let token = server
            .tokens_mut()
            .mint_retry_token(client_addr(), &odcid, start(), Duration::from_secs(10))
            .unwrap();
        let mut forged = token.clone();
        if let Some(last) = forged.last_mut() {
            *last ^= 0x80;
        }
        let elsewhere: SocketAddr = "192.0.2.10:40001".parse().unwrap();
        let cases = [
            (&token, client_addr(), 10, DropReason::RetryTokenExpired),
            (&token, elsewhere, 1, DropReason::RetryTokenWrongAddress),
            (&forged, client_addr(), 1, DropReason::RetryTokenInvalid),
        ];
        for (token, peer, after, reason) in cases {
            let mut initial = next_datagram(&mut client_at(peer, token));
            let hdr = header(&mut initial);
            let now = start() + Duration::from_secs(after);
            assert_eq!(
                server.on_initial(&hdr, peer, now),
                InitialAction::Drop(reason),
                "{reason:?}"
            );
            assert_eq!(snapshot(&server).dropped(reason), 1, "{reason:?}");
        }
        let metrics = snapshot(&server);
        assert_eq!(metrics.initials_dropped.iter().sum::<u64>(), 3);
        assert_eq!(metrics.initials_retried, 0);
    }

    /// A Retry token never passes for a NEW_TOKEN token, nor the reverse:
    /// each kind is judged only as itself.
    #[test]
    fn the_two_kinds_of_token_are_never_taken_for_each_other() {
        let mut server = resume_server(ResumeConfig::default());
        let retry_token = server
            .tokens_mut()
            .mint_retry_token(client_addr(), &[1; 8], start(), Duration::from_secs(10))
            .unwrap();
        assert!(!server.recognizes(&retry_token, client_addr(), start()));

        let new_token = bdp_token(&mut server, client_addr(), start());
        assert!(!ex_token::is_retry_token(&new_token));
        assert!(server
            .tokens()
            .validate_retry_token(&new_token, client_addr(), start())
            .is_err());
        let address_token = server
            .tokens_mut()
            .mint_address_token(client_addr(), start(), Duration::from_secs(3600))
            .unwrap();
        for token in [new_token, address_token] {
            let mut initial = next_datagram(&mut client_at(client_addr(), &token));
            let hdr = header(&mut initial);
            assert_eq!(
                server.on_initial(&hdr, client_addr(), start()),
                InitialAction::Accept { odcid: None },
                "a NEW_TOKEN token gives no original destination connection ID"
            );
        }
    }

    #[test]
    fn only_an_initial_opens_a_connection() {
        let mut server = resume_server(ResumeConfig::default());
        let mut short = vec![0x40];
        short.extend_from_slice(&[7; quiche::MAX_CONN_ID_LEN]);
        short.extend_from_slice(&[0; 40]);
        let hdr = header(&mut short);
        assert_eq!(
            server.on_initial(&hdr, client_addr(), start()),
            InitialAction::Drop(DropReason::NotInitial)
        );
        assert_eq!(snapshot(&server).dropped(DropReason::NotInitial), 1);
    }
}
