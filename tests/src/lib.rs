//! Cross-crate integration tests of quiche-cr live in `tests/`; this library
//! holds what several of them share: a client and a quiche-cr server over an
//! in-memory path on quiche's virtual clock.
//!
//! The path has a fixed one-way delay and no bandwidth limit: every step
//! carries all the client has to send to the server, then all the server has
//! to send back, each arriving one delay later. That makes round trips exact
//! and lets a test drop chosen packets, which is what phase-by-phase Careful
//! Resume tests need. Bandwidth, queues and pacing are the simulator's job
//! (`cr-sim`).

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cr_endpoint::ex_token::{KeyRing, MemoryGuard, SimRng, TokenGuard, TokenKey, TokenServer};
use cr_endpoint::{Accepted, ResumeClient, ResumeConfig, ResumeServer};

/// The client's address.
pub const CLIENT: &str = "192.0.2.10:4433";
/// The server's address.
pub const SERVER: &str = "198.51.100.1:443";
/// The name the client asks for.
pub const SERVER_NAME: &str = "quiche-cr.test";

const CERT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/cert.pem");
const KEY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../certs/key.pem");
const ALPN: &[u8] = b"cr-test";
const CREDIT: u64 = 64 * 1024 * 1024;
/// Round trips spent after the download so tokens sent on its last ACKs
/// still reach the client, as they would with a client that keeps an idle
/// connection open.
const LINGER_ROUND_TRIPS: u32 = 3;
/// A download that has not finished after this long has stalled.
const TIME_LIMIT: Duration = Duration::from_secs(600);

/// A quiche configuration for either side.
pub fn config(is_server: bool, cc: quiche::CongestionControlAlgorithm) -> quiche::Config {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).expect("version");
    if is_server {
        config.load_cert_chain_from_pem_file(CERT).expect("cert");
        config.load_priv_key_from_pem_file(KEY).expect("key");
    }
    config.verify_peer(false);
    config.set_application_protos(&[ALPN]).expect("alpn");
    config.set_max_idle_timeout(600_000);
    config.set_initial_max_data(CREDIT);
    config.set_initial_max_stream_data_bidi_local(CREDIT);
    config.set_initial_max_stream_data_bidi_remote(CREDIT);
    config.set_initial_max_streams_bidi(10);
    config.set_max_connection_window(CREDIT);
    config.set_max_stream_window(CREDIT);
    config.set_cc_algorithm(cc);
    // GREASE draws random lengths; tests want the same packets every run.
    config.grease(false);
    // The harness moves whole flights at the times it sets (as quiche's own
    // test pipes do); a jump quiche held to its pace would cross one slot
    // per flight.
    config.set_application_paces(true);
    config
}

/// A plain quiche client connection: it knows nothing about extensible
/// tokens and only echoes what NEW_TOKEN gave it, as RFC 9000 asks.
pub fn opaque_client(token: Option<&[u8]>, id: u8) -> quiche::Connection {
    opaque_client_at(CLIENT.parse().expect("address"), token, id)
}

/// [`opaque_client`] at another address (for a [`Harness`] whose client
/// moved there: [`Harness::client`]).
pub fn opaque_client_at(local: SocketAddr, token: Option<&[u8]>, id: u8) -> quiche::Connection {
    let mut config = config(false, quiche::CongestionControlAlgorithm::CUBIC);
    let scid = quiche::ConnectionId::from_vec(vec![id; 16]);
    let mut conn = quiche::connect(
        Some(SERVER_NAME),
        &scid,
        local,
        SERVER.parse().expect("address"),
        &mut config,
    )
    .expect("connect");
    if let Some(token) = token {
        conn.set_token(token)
            .expect("token before the first packet");
    }
    conn
}

/// The wall-clock time a [`Harness`] starts at (2026-01-01), unless made
/// with [`Harness::with_guard_from`].
pub fn wall_start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

/// A client connection made by `client` (a [`ResumeClient`]: it presents
/// one of its tokens, lowered as its configuration says) from [`CLIENT`]
/// to [`SERVER`], at [`wall_start`].
pub fn resuming_client(client: &mut ResumeClient, id: u8) -> quiche::Connection {
    let mut config = config(false, quiche::CongestionControlAlgorithm::CUBIC);
    client.configure(&mut config).expect("ex_token");
    let scid = quiche::ConnectionId::from_vec(vec![id; 16]);
    client
        .connect(
            SERVER_NAME,
            &scid,
            CLIENT.parse().expect("address"),
            SERVER.parse().expect("address"),
            &mut config,
            wall_start(),
        )
        .expect("connect")
}

/// What one download left behind.
pub struct Download {
    /// The client's connection, with the tokens it received still queued.
    pub client: quiche::Connection,
    /// The server's connection and what the token said.
    pub server: Accepted,
    /// From the client's first packet to the last byte of the body.
    pub completion: Duration,
    /// The server's qlog, read back.
    pub trace: qlog_cr::Trace,
}

impl Download {
    /// Whether the server's connection jumped (entered Unvalidated).
    pub fn jumped(&self) -> bool {
        self.server
            .conn
            .careful_resume()
            .is_some_and(|resume| resume.jumped())
    }

    /// The phases the server's connection entered, in order (none without
    /// Careful Resume).
    pub fn phases(&self) -> Vec<quiche::careful_resume::Phase> {
        self.server
            .conn
            .careful_resume()
            .map(|resume| resume.history().iter().map(|&(phase, _)| phase).collect())
            .unwrap_or_default()
    }
}

/// The order in which the server's loop calls quiche and cr-endpoint:
/// servers differ, and Careful Resume must not depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerLoop {
    /// `on_progress` after each recv and after sending; stream data
    /// written before each packet sent (the jump finds data at once).
    Interleaved,
    /// Upstream quiche's examples: `on_progress` after each recv, one
    /// write of what the stream takes, then send until done.
    WriteThenSend,
    /// A misplaced call: `on_progress` only after sending, one write after
    /// each recv.
    ProgressAfterSendOnly,
}

/// A quiche-cr server that outlives its connections, and the virtual clock.
pub struct Harness<G: TokenGuard = MemoryGuard> {
    server: ResumeServer<SimRng, G>,
    server_config: quiche::Config,
    now: Instant,
    wall: SystemTime,
    /// One-way delay of the path.
    pub one_way: Duration,
    /// The address the client's datagrams come from ([`CLIENT`] unless
    /// changed).
    pub client: SocketAddr,
    /// The server loop's order of calls ([`ServerLoop::Interleaved`]
    /// unless changed).
    pub server_loop: ServerLoop,
}

impl Harness {
    /// A server running `cc` over a path with `rtt`.
    pub fn new(cc: quiche::CongestionControlAlgorithm, rtt: Duration) -> Harness {
        Harness::with_guard(cc, rtt, MemoryGuard::new(64))
    }
}

impl<G: TokenGuard> Harness<G> {
    /// A server running `cc` over a path with `rtt`, claiming saved sets
    /// in `guard`.
    pub fn with_guard(cc: quiche::CongestionControlAlgorithm, rtt: Duration, guard: G) -> Self {
        Harness::with_guard_from(cc, rtt, guard, wall_start())
    }

    /// [`Harness::with_guard`] with the wall clock starting at `wall`
    /// rather than [`wall_start`]: for a guard that keeps time by a clock
    /// of its own, such as Redis, which forgets a record at the set's
    /// expiry by its own clock (`PEXPIREAT`) and so needs wall times near
    /// the real now.
    pub fn with_guard_from(
        cc: quiche::CongestionControlAlgorithm,
        rtt: Duration,
        guard: G,
        wall: SystemTime,
    ) -> Self {
        let mut rng = SimRng::new(7);
        let key = TokenKey::generate(1, &mut rng).expect("key");
        let tokens = TokenServer::new(KeyRing::new(key), rng, Default::default());
        let server = ResumeServer::new(tokens, guard, ResumeConfig::default());
        let mut server_config = config(true, cc);
        server.configure(&mut server_config).expect("ex_token");
        quiche::seeded_random::seed(11);
        Harness {
            server,
            server_config,
            now: Instant::now() + Duration::from_secs(86_400),
            wall,
            one_way: rtt / 2,
            client: CLIENT.parse().expect("address"),
            server_loop: ServerLoop::Interleaved,
        }
    }

    /// The server's Careful Resume counters.
    pub fn metrics(&self) -> cr_endpoint::MetricsSnapshot {
        self.server.metrics().snapshot()
    }

    /// Lets `idle` pass between connections (tokens age).
    pub fn wait(&mut self, idle: Duration) {
        self.now += idle;
        self.wall += idle;
    }

    /// Hands the guard's answer to a connection that has finished
    /// downloading ([`ResumeServer::poll_claim`]).
    pub fn poll_claim(&self, accepted: &mut Accepted) {
        self.server
            .poll_claim(&mut accepted.conn, &mut accepted.session);
    }

    /// The end of a server connection, as a loop that drops it reports it
    /// ([`ResumeServer::on_closed`]).
    pub fn close(&self, accepted: &mut Accepted) {
        self.server
            .on_closed(&mut accepted.conn, &mut accepted.session, self.wall);
    }

    /// A forged Initial: someone who saw `token` on the wire sends it from
    /// another port in an Initial that does not even decrypt. The server
    /// accepts it as it would any Initial, and the forger never answers.
    pub fn forge_initial(&mut self, token: &[u8]) -> Accepted {
        let forger: SocketAddr = "192.0.2.1:6666".parse().expect("address");
        let mut accepted = self.accept(0x0f, forger, token);
        let mut garbage = vec![0xc0; 1200];
        let info = quiche::RecvInfo {
            from: forger,
            to: SERVER.parse().expect("address"),
        };
        accepted.conn.recv(&mut garbage, info).ok();
        self.server
            .on_progress(&mut accepted.conn, &mut accepted.session, self.wall);
        accepted
    }

    /// The server accepts a connection (its ID all `id` bytes) from `peer`,
    /// whose first Initial carried `token`.
    fn accept(&mut self, id: u8, peer: SocketAddr, token: &[u8]) -> Accepted {
        let scid = quiche::ConnectionId::from_vec(vec![id; 16]);
        self.server
            .accept(
                &scid,
                None,
                SERVER.parse().expect("address"),
                peer,
                token,
                &mut self.server_config,
                self.wall,
            )
            .expect("accept")
    }

    fn tick(&mut self) {
        self.now += self.one_way;
        self.wall += self.one_way;
        quiche::clock::set(self.now);
    }

    /// `client` fetches `size` bytes; `drop` sees the server connection as
    /// each of its datagrams leaves and says whether the path loses it.
    pub fn download(
        &mut self,
        mut client: quiche::Connection,
        size: usize,
        mut drop: impl FnMut(&quiche::Connection) -> bool,
    ) -> Download {
        let client_addr = self.client;
        let server_addr: SocketAddr = SERVER.parse().expect("address");
        let start = self.now;
        quiche::clock::set(self.now);
        let qlog = QlogSink::default();
        let mut server: Option<Accepted> = None;
        let body = vec![0x42; size];
        let (mut requested, mut written, mut received) = (false, 0, 0);
        let mut done_at = None;
        let mut buf = [0; 65_536];

        loop {
            let linger = self.one_way * 2 * LINGER_ROUND_TRIPS;
            if done_at.is_some_and(|at| self.now >= at + linger) {
                break;
            }
            assert!(self.now - start < TIME_LIMIT, "the download stalled");

            // Client to server.
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
                    let mut accepted = self.accept(0x5e, client_addr, &token);
                    qlog.attach(&mut accepted.conn, "server");
                    accepted
                });
                let info = quiche::RecvInfo {
                    from: client_addr,
                    to: server_addr,
                };
                self.server
                    .poll_claim(&mut accepted.conn, &mut accepted.session);
                accepted.conn.recv(&mut datagram, info).ok();
            }
            // Housekeeping after receiving, as a server's loop does: the
            // claim of a saved set starts once the handshake is complete.
            let progress_after_recv = self.server_loop != ServerLoop::ProgressAfterSendOnly;
            if let Some(accepted) = server.as_mut().filter(|_| progress_after_recv) {
                self.server
                    .on_progress(&mut accepted.conn, &mut accepted.session, self.wall);
            }

            // Server to client.
            let mut to_client = Vec::new();
            if let Some(accepted) = server.as_mut() {
                fire_timer(&mut accepted.conn, self.now);
                let conn = &mut accepted.conn;
                if conn.stream_readable(0) {
                    while conn.stream_recv(0, &mut buf).is_ok() {}
                }
                // Write the body as the window allows, one packet at a time
                // (the window can open on a packet sent: a jump), or once
                // before sending, as upstream's loop does.
                let interleaved = self.server_loop == ServerLoop::Interleaved;
                if !interleaved && requested && written < size {
                    written += conn.stream_send(0, &body[written..], true).unwrap_or(0);
                }
                loop {
                    if interleaved && requested && written < size {
                        written += conn.stream_send(0, &body[written..], true).unwrap_or(0);
                    }
                    let Ok((len, _)) = conn.send(&mut buf) else {
                        break;
                    };
                    if !drop(conn) {
                        to_client.push(buf[..len].to_vec());
                    }
                }
                self.server
                    .on_progress(&mut accepted.conn, &mut accepted.session, self.wall);
            }
            self.tick();
            for mut datagram in to_client {
                let info = quiche::RecvInfo {
                    from: server_addr,
                    to: client_addr,
                };
                client.recv(&mut datagram, info).ok();
            }
            while let Ok((len, fin)) = client.stream_recv(0, &mut buf) {
                received += len;
                if fin && received == size {
                    done_at = Some(self.now);
                }
            }
        }

        let server = server.expect("the server accepted");
        let trace = qlog.trace("server");
        Download {
            client,
            server,
            completion: done_at.expect("done") - start,
            trace,
        }
    }
}

impl<G: TokenGuard> Drop for Harness<G> {
    fn drop(&mut self) {
        quiche::clock::unset();
        quiche::seeded_random::unseed();
    }
}

/// Fires `conn`'s timer if it is due at `now`.
pub fn fire_timer(conn: &mut quiche::Connection, now: Instant) {
    if conn.timeout_instant().is_some_and(|at| at <= now) {
        conn.on_timeout();
    }
}

/// Every datagram `conn` has to send now.
pub fn drain(conn: &mut quiche::Connection) -> Vec<Vec<u8>> {
    let mut buf = [0; 65_536];
    let mut out = Vec::new();
    while let Ok((len, _)) = conn.send(&mut buf) {
        out.push(buf[..len].to_vec());
    }
    out
}

/// A qlog sink a test can read back while or after quiche writes to it.
#[derive(Clone, Default)]
pub struct QlogSink(Arc<Mutex<Vec<u8>>>);

impl QlogSink {
    /// Makes `conn` write its qlog here, at level Extra so Careful Resume's
    /// events are included.
    pub fn attach(&self, conn: &mut quiche::Connection, title: &str) {
        conn.set_qlog_with_level(
            Box::new(self.clone()),
            title.into(),
            "quiche-cr tests".into(),
            quiche::QlogLevel::Extra,
        );
    }

    /// What was written so far, read back with qlog-cr.
    pub fn trace(&self, name: &str) -> qlog_cr::Trace {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        qlog_cr::Trace::from_reader(bytes.as_slice(), name).expect("a readable qlog")
    }
}

impl io::Write for QlogSink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The newest token the client received, as an opaque client would keep it.
pub fn newest_token(client: &mut quiche::Connection) -> Vec<u8> {
    let mut newest = None;
    while let Some(token) = client.new_token_next() {
        newest = Some(token);
    }
    newest.expect("the server sent a token")
}

/// A path for [`Harness::download`] that loses the fifth packet the server
/// sends while Unvalidated: the loss that sends a resumed connection into
/// Safe Retreat.
pub fn lose_fifth_unvalidated() -> impl FnMut(&quiche::Connection) -> bool {
    let mut unvalidated_sent = 0;
    move |server| {
        let unvalidated = server
            .careful_resume()
            .is_some_and(|r| r.phase() == quiche::careful_resume::Phase::Unvalidated);
        unvalidated_sent += u32::from(unvalidated);
        unvalidated && unvalidated_sent == 5
    }
}

/// `token` with one bit of its sealed saved set flipped: a tampered BDP
/// token (panics if `token` is not one).
pub fn tamper_saved_set(token: &[u8]) -> Vec<u8> {
    let decoded = cr_endpoint::ex_token::ExToken::decode(token).expect("a token");
    let bdp = decoded.bdp().expect("a BDP token").expect("well formed");
    let offset = bdp.private_data.as_ptr() as usize - token.as_ptr() as usize;
    let mut altered = token.to_vec();
    altered[offset + bdp.private_data.len() / 2] ^= 0x01;
    altered
}
