//! A client that keeps a NEW_TOKEN token only for a server whose TLS
//! session ticket it already holds (Chromium: its session cache drops a
//! token that has no entry yet) still has one after a first connection,
//! however short: the server sends an address token again once the flight
//! that carried the ticket has arrived.
//!
//! quiche's client is such a client here: datagram by datagram, a token
//! counts as kept only when `session()` was already `Some` before the
//! datagram that carried it arrived (quiche puts NEW_TOKEN frames before
//! CRYPTO frames in a packet, so a token beside the ticket comes first).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cr_endpoint::ex_token::{ExToken, KeyRing, MemoryGuard, SimRng, TokenKey, TokenServer};
use cr_endpoint::{ResumeConfig, ResumeServer};
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{config, drain, fire_timer, opaque_client, wall_start, CLIENT, SERVER};

const RTT: Duration = Duration::from_millis(300);

/// A token the client received, and whether it held the session ticket
/// before the datagram that carried it.
struct Received {
    token: Vec<u8>,
    after_ticket: bool,
}

/// What one connection left: the tokens in arrival order, and the server's
/// view of it.
struct Visit {
    tokens: Vec<Received>,
    session: Option<Vec<u8>>,
    address_validated: bool,
}

/// A server (its token keys fixed, so tokens outlive a visit) and the
/// virtual clock.
struct Server {
    resume: ResumeServer<SimRng, MemoryGuard>,
    config: quiche::Config,
    now: Instant,
    wall: std::time::SystemTime,
}

impl Server {
    fn new() -> Server {
        let mut rng = SimRng::new(3);
        let key = TokenKey::generate(1, &mut rng).expect("key");
        let tokens = TokenServer::new(KeyRing::new(key), rng, Default::default());
        let resume = ResumeServer::new(tokens, MemoryGuard::new(16), ResumeConfig::default());
        let mut config = config(true, Cc::CUBIC);
        resume.configure(&mut config).expect("ex_token");
        Server {
            resume,
            config,
            now: Instant::now() + Duration::from_secs(86_400),
            wall: wall_start(),
        }
    }

    fn tick(&mut self) {
        self.now += RTT / 2;
        self.wall += RTT / 2;
        quiche::clock::set(self.now);
    }

    /// `client` asks for `size` bytes and keeps its connection open for
    /// `linger` after the last one, as a browser keeps an idle connection;
    /// the server's loop is upstream's (on_progress after each recv, then
    /// the application, then send until done).
    fn visit(&mut self, mut client: quiche::Connection, size: usize, linger: Duration) -> Visit {
        let client_addr: SocketAddr = CLIENT.parse().expect("address");
        let server_addr: SocketAddr = SERVER.parse().expect("address");
        let start = self.now;
        quiche::clock::set(self.now);
        let mut server = None;
        let body = vec![0x42; size];
        let (mut requested, mut written, mut received) = (false, 0, 0);
        let (mut done_at, mut tokens) = (None, Vec::new());
        let mut buf = [0; 65_536];
        while done_at.is_none_or(|at| self.now < at + linger) {
            assert!(self.now - start < Duration::from_secs(60), "stalled");
            fire_timer(&mut client, self.now);
            if client.is_established() && !requested {
                client.stream_send(0, b"GET", true).expect("request");
                requested = true;
            }
            let to_server = drain(&mut client);
            self.tick();

            for mut datagram in to_server {
                let accepted = server.get_or_insert_with(|| {
                    let hdr = quiche::Header::from_slice(&mut datagram, quiche::MAX_CONN_ID_LEN)
                        .expect("an Initial");
                    let token = hdr.token.clone().unwrap_or_default();
                    let scid = quiche::ConnectionId::from_vec(vec![0x5e; 16]);
                    self.resume
                        .accept(
                            &scid,
                            None,
                            server_addr,
                            client_addr,
                            &token,
                            &mut self.config,
                            self.wall,
                        )
                        .expect("accept")
                });
                let info = quiche::RecvInfo {
                    from: client_addr,
                    to: server_addr,
                };
                accepted.conn.recv(&mut datagram, info).ok();
                self.resume
                    .on_progress(&mut accepted.conn, &mut accepted.session, self.wall);
            }
            let mut to_client = Vec::new();
            if let Some(accepted) = server.as_mut() {
                let conn = &mut accepted.conn;
                if conn.timeout_instant().is_some_and(|at| at <= self.now) {
                    conn.on_timeout();
                    self.resume
                        .on_progress(conn, &mut accepted.session, self.wall);
                }
                while conn.stream_recv(0, &mut buf).is_ok() {}
                if requested && written < size {
                    written += conn.stream_send(0, &body[written..], true).unwrap_or(0);
                }
                to_client = drain(conn);
            }
            self.tick();

            for mut datagram in to_client {
                let after_ticket = client.session().is_some();
                let info = quiche::RecvInfo {
                    from: server_addr,
                    to: client_addr,
                };
                client.recv(&mut datagram, info).ok();
                while let Some(token) = client.new_token_next() {
                    tokens.push(Received {
                        token,
                        after_ticket,
                    });
                }
            }
            while let Ok((len, fin)) = client.stream_recv(0, &mut buf) {
                received += len;
                if fin && received == size {
                    done_at = Some(self.now);
                }
            }
        }
        let accepted = server.expect("accepted");
        Visit {
            tokens,
            session: client.session().map(<[u8]>::to_vec),
            address_validated: accepted.session.address_validated,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        quiche::clock::unset();
    }
}

fn is_address_token(token: &[u8]) -> bool {
    let decoded = ExToken::decode(token).expect("an extensible token");
    decoded.bdp().is_none()
}

#[test]
fn a_short_first_connection_leaves_a_token_after_the_session_ticket() {
    let mut server = Server::new();
    // 4 KiB: the whole response fits in the initial window, so the
    // connection measures nothing and no BDP token follows.
    let first = server.visit(opaque_client(None, 1), 4096, RTT * 2);
    assert!(first.session.is_some(), "the server sent a session ticket");

    let arrivals: Vec<bool> = first.tokens.iter().map(|t| t.after_ticket).collect();
    assert_eq!(
        arrivals,
        [false, true],
        "one address token beside the ticket (HANDSHAKE_DONE's flight), \
         one after it"
    );
    assert!(first.tokens.iter().all(|t| is_address_token(&t.token)));
    assert_eq!(server.resume.metrics().snapshot().address_tokens_minted, 2);

    // What a client that keeps tokens only beside a ticket presents next:
    // it validates the client's address.
    let kept = first.tokens.iter().rfind(|t| t.after_ticket).expect("kept");
    let second = server.visit(opaque_client(Some(&kept.token), 2), 4096, RTT * 2);
    assert!(second.address_validated);
}

#[test]
fn the_second_address_token_comes_before_every_bdp_token() {
    // A long download: clients that present the newest token must find a
    // BDP token last, so the second address token never follows one.
    let mut server = Server::new();
    let visit = server.visit(opaque_client(None, 1), 2 * 1024 * 1024, RTT * 2);
    let kinds: Vec<bool> = visit
        .tokens
        .iter()
        .map(|t| is_address_token(&t.token))
        .collect();
    let bdp_from = kinds
        .iter()
        .position(|&address| !address)
        .expect("BDP tokens");
    assert_eq!(kinds[..bdp_from], [true, true], "{kinds:?}");
    assert!(
        kinds[bdp_from..].iter().all(|&address| !address),
        "{kinds:?}"
    );
    assert_eq!(server.resume.metrics().snapshot().address_tokens_minted, 2);
}
