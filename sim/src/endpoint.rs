//! Every creation of a client or server quiche connection, and the
//! housekeeping after each receive, send or timeout, goes through here.
//!
//! This is the one module that knows how a Careful Resume endpoint is set
//! up, through the integration crate `cr-endpoint`: the server validates the
//! token of the client's Initial, sets up Careful Resume, mints BDP tokens
//! and sends them with NEW_TOKEN; the client keeps those tokens and presents
//! one on its next connection (unless the scenario is a baseline). Each
//! server connection is a `cr_serve::ServerSession`, served as `cr-server`
//! serves its own.
//!
//! Token keys and token randomness come from the scenario's seed: the
//! simulator wants the same bytes for the same seed, never secrecy.

use std::net::SocketAddr;
use std::time::Duration;

use cr_endpoint::ex_token::{ExToken, KeyRing, MemoryGuard, SimRng, TokenKey, TokenServer};
use cr_endpoint::{ClientConfig, MetricsSnapshot, RequestedCapacity, ResumeClient, ResumeServer};
use cr_serve::{CongestionControl, Protocol, ServerSession, SlowStart};

use crate::clock::Now;
use crate::error::SimError;
use crate::link::MAX_DATAGRAM;
use crate::qlog_capture::Keep;
use crate::qlog_capture::QlogBuffer;

/// The simulator's test certificate (name `quiche-cr.test`) and its key.
///
/// RSA rather than the ECDSA key of the top-level `certs/`: an ECDSA
/// signature's DER length varies with its random nonce, and a retransmitted
/// server handshake flight is not padded, so its size (and every time after
/// it) would differ from run to run. RSA-PSS signatures are always as long
/// as the modulus.
const CERT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/cert.pem");
const KEY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/certs/key.pem");

/// The server name the client asks for.
pub const SERVER_NAME: &str = "quiche-cr.test";

/// Flow-control credit the client grants: more than any simulated object,
/// so that only the congestion controller limits the server.
///
/// quiche caps its receive windows at 24 MiB (connection) and 16 MiB
/// (stream) by default; the caps are raised to this value too, since a
/// window smaller than a 10 MiB object plus its in-flight data would throttle
/// the sender on long paths.
pub const FLOW_CONTROL_CREDIT: u64 = 64 * 1024 * 1024;

/// Idle timeout of both endpoints: long enough for loss bursts on GEO paths.
const IDLE_TIMEOUT_MS: u64 = 60_000;

/// What both endpoints of a flow agree on.
#[derive(Clone, Copy, Debug)]
pub struct EndpointSettings {
    /// The server's congestion controller.
    pub cc: CongestionControl,
    /// How Reno and CUBIC end their first slow start (sessions: HyStart++,
    /// quiche's default, as `cr-server` by default).
    pub slow_start: SlowStart,
    /// The application protocol.
    pub app: Protocol,
    /// Whether Careful Resume may be used (false for the baseline).
    pub resume: bool,
    /// Makes connection IDs differ between flows and seeds.
    pub seed: u64,
    /// Whether the client closes a connection as soon as its download is
    /// complete, like a command-line tool; otherwise it keeps it open until
    /// its next connection starts, like an HTTP client's connection pool,
    /// and receives the tokens the server sends after the last byte.
    pub close_when_done: bool,
    /// Whether to send short packets wherever the congestion window has a
    /// little room (quiche's default) rather than wait for room for a full
    /// one ([`quiche::Config::enable_silly_window_avoidance`]).
    pub small_packets: bool,
    /// The most capacity the client asks a server to resume with (it lowers
    /// the Requested Capacity of the tokens it presents); `None`: whatever
    /// was saved.
    pub requested_capacity: Option<u64>,
    /// How the server shares out jumps among connections resuming at the
    /// same time (`cr-server`'s default); `None`: every jump in full.
    pub jump_budget: Option<cr_endpoint::JumpBudget>,
    /// Whether the client keeps its TLS session and sends a later
    /// connection's request as early data (0-RTT), and the server accepts
    /// it (as `cr-server` does by default).
    pub early_data: bool,
    /// Whether the server updates its smoothed RTT and rttvar once per
    /// round trip rather than per ACK.
    pub rtt_once_per_rtt: bool,
    /// Whether Reno and CUBIC pace their packets.
    pub pace: bool,
    /// Whether the server lets slow start go on past the saved capacity
    /// after a validated jump once the round after it showed room.
    pub slow_start_past_saved: bool,
}

/// Settings shared by client and server configurations.
fn base_config(settings: &EndpointSettings) -> Result<quiche::Config, SimError> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION)?;
    config.set_application_protos(&[settings.app.alpn()])?;
    config.set_max_idle_timeout(IDLE_TIMEOUT_MS);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    config.set_initial_max_data(FLOW_CONTROL_CREDIT);
    config.set_initial_max_stream_data_bidi_local(FLOW_CONTROL_CREDIT);
    config.set_initial_max_stream_data_bidi_remote(FLOW_CONTROL_CREDIT);
    config.set_initial_max_stream_data_uni(1024 * 1024);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(100);
    config.set_max_connection_window(FLOW_CONTROL_CREDIT);
    config.set_max_stream_window(FLOW_CONTROL_CREDIT);
    config.set_cc_algorithm(settings.cc.algorithm());
    settings.slow_start.apply(&mut config);
    config.enable_silly_window_avoidance(!settings.small_packets);
    config.enable_rtt_once_per_rtt(settings.rtt_once_per_rtt);
    config.enable_reno_cubic_pacing(settings.pace);
    // The network releases each datagram at its `SendInfo.at`.
    config.set_application_paces(true);
    config.set_early_data_context(cr_serve::EARLY_DATA_CONTEXT);
    // BBR2 paces its initial window at Startup's gain (patch 0018).
    config.enable_bbr_initial_pacing_gain(true);
    // GREASE draws random values of random encoded length, which would make
    // packet sizes, and so timings, differ between runs of the same seed.
    config.grease(false);
    config.verify_peer(false);
    Ok(config)
}

/// A connection ID derived from the seed, the flow and a counter, so that
/// runs are reproducible.
fn connection_id(seed: u64, flow: u64, counter: u64, server: bool) -> [u8; 16] {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&seed.to_be_bytes());
    let tag = (flow << 33) | (counter << 1) | u64::from(server);
    id[8..].copy_from_slice(&tag.to_be_bytes());
    id
}

/// Attaches a qlog writer at level Extra, the level at which quiche writes
/// Careful Resume phase changes; the buffer decides what it keeps.
fn attach_qlog(conn: &mut quiche::Connection, qlog: &QlogBuffer, keep: Keep, title: &str) {
    conn.set_qlog_with_level(
        Box::new(qlog.writer(keep)),
        title.to_string(),
        "cr-sim".to_string(),
        quiche::QlogLevel::Extra,
    );
}

/// The server of one flow: it outlives its connections, as a server fleet
/// outlives the connections it serves (it will hold the token keys).
pub struct SimServer {
    config: quiche::Config,
    settings: EndpointSettings,
    flow: u64,
    accepted: u64,
    resume: ResumeServer<SimRng, MemoryGuard>,
}

/// How a server mints and checks tokens: which client network a saved set
/// belongs to (`bdp_prefixes`, the Remote Endpoint's prefix: /24 by
/// default), the saved set's lifetime, and so on.
pub type TokenConfig = cr_endpoint::ex_token::ServerConfig;

/// Saved sets the server remembers as in use; a simulation has few.
const GUARD_CAPACITY: usize = 1024;

/// One server-side connection: the session `cr-server` would serve, and
/// its qlog trace.
pub struct ServerConnection {
    session: ServerSession,
    qlog: QlogBuffer,
}

impl ServerConnection {
    /// The quiche connection.
    pub fn conn(&mut self) -> &mut quiche::Connection {
        self.session.conn()
    }

    /// The quiche connection, read-only.
    pub fn conn_ref(&self) -> &quiche::Connection {
        self.session.conn_ref()
    }

    /// The session being served.
    pub fn session(&self) -> &ServerSession {
        &self.session
    }

    /// The server's qlog trace so far.
    pub fn qlog(&self) -> &QlogBuffer {
        &self.qlog
    }
}

impl SimServer {
    /// The server of flow number `flow`.
    pub fn new(settings: EndpointSettings, flow: u64) -> Result<SimServer, SimError> {
        SimServer::with_tokens(settings, flow, TokenConfig::default())
    }

    /// A server numbered `number` (its connection IDs and token key derive
    /// from it and the seed) whose tokens follow `tokens`.
    pub fn with_tokens(
        settings: EndpointSettings,
        number: u64,
        tokens: TokenConfig,
    ) -> Result<SimServer, SimError> {
        let flow = number;
        let mut config = base_config(&settings)?;
        config.load_cert_chain_from_pem_file(CERT)?;
        config.load_priv_key_from_pem_file(KEY)?;

        let mut rng = SimRng::new(settings.seed ^ flow.rotate_left(32));
        let key = TokenKey::generate(0, &mut rng).map_err(|e| SimError::Setup(e.to_string()))?;
        let tokens = TokenServer::new(KeyRing::new(key), rng, tokens);
        // Early data only where the scenario's clients send it: a server
        // that allows it issues tickets a few bytes longer, which moves
        // every later packet of a first connection a little.
        let resume_config = cr_endpoint::ResumeConfig {
            jump_budget: settings.jump_budget,
            early_data: settings.early_data,
            slow_start_past_saved: settings.slow_start_past_saved,
            ..Default::default()
        };
        let resume = ResumeServer::new(tokens, MemoryGuard::new(GUARD_CAPACITY), resume_config);
        resume.configure(&mut config)?;

        Ok(SimServer {
            config,
            settings,
            flow,
            accepted: 0,
            resume,
        })
    }

    /// Accepts a new connection from the client's first Initial datagram;
    /// its qlog trace keeps what `keep` says (a report needs only the
    /// Careful Resume events).
    ///
    /// Returns `None` when the datagram is not a long-header Initial that
    /// can start a connection (it is then ignored).
    pub fn accept(
        &mut self,
        datagram: &mut [u8],
        local: SocketAddr,
        peer: SocketAddr,
        keep: Keep,
        now: &Now,
    ) -> Result<Option<ServerConnection>, SimError> {
        let Ok(header) = quiche::Header::from_slice(datagram, quiche::MAX_CONN_ID_LEN) else {
            return Ok(None);
        };
        if header.ty != quiche::Type::Initial {
            return Ok(None);
        }
        let scid_bytes = connection_id(self.settings.seed, self.flow, self.accepted, true);
        self.accepted += 1;
        let scid = quiche::ConnectionId::from_ref(&scid_bytes);
        let token = header.token.as_deref().unwrap_or_default();
        let mut accepted =
            self.resume
                .accept(&scid, None, local, peer, token, &mut self.config, now.wall)?;
        let qlog = QlogBuffer::new();
        attach_qlog(&mut accepted.conn, &qlog, keep, "server");
        let session = ServerSession::new(accepted, &header.dcid, now.instant);
        Ok(Some(ServerConnection { session, qlog }))
    }

    /// Hands a datagram from the client to `connection`.
    pub fn recv(
        &self,
        connection: &mut ServerConnection,
        datagram: &mut [u8],
        info: quiche::RecvInfo,
    ) {
        connection.session.recv(&self.resume, datagram, info);
    }

    /// Serves `connection` after a receive or timeout
    /// ([`ServerSession::serve`]); `flush` sends what quiche has ready and
    /// says how many datagrams that was. Fails when the application gave up
    /// on the client, which in a simulation is a bug.
    pub fn serve(
        &mut self,
        connection: &mut ServerConnection,
        now: &Now,
        flush: impl FnMut(&mut quiche::Connection) -> Result<usize, SimError>,
    ) -> Result<(), SimError> {
        let session = &mut connection.session;
        session.serve(&mut self.resume, now.instant, now.wall, flush)?;
        match session.app_error() {
            Some(e) => Err(SimError::App(e.clone())),
            None => Ok(()),
        }
    }

    /// What the server counted so far (tokens presented, refusals by
    /// reason, jumps, retreats), as `cr-server` exports it.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.resume.metrics().snapshot()
    }

    /// `connection` is dropped (its client moved on to its next
    /// connection): a saved set it claimed and did not use is released
    /// ([`ServerSession::on_closed`]).
    pub fn retire(&self, connection: &mut ServerConnection, now: &Now) {
        connection.session.on_closed(&self.resume, now.wall);
    }
}

/// The saved set a BDP token carries: Capacity and RTT, which a client can
/// read (the server sealed them against change, not against reading).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenCapacity {
    /// Capacity, bytes.
    pub capacity: u64,
    /// RTT.
    pub rtt: Duration,
}

/// The client of one flow: it outlives its connections and keeps the tokens
/// the server gave it, to present on the next connection.
pub struct SimClient {
    config: quiche::Config,
    settings: EndpointSettings,
    flow: u64,
    connected: u64,
    resume: ResumeClient,
}

/// One client-side connection.
pub struct ClientConnection {
    conn: quiche::Connection,
    qlog: Option<QlogBuffer>,
}

impl ClientConnection {
    /// The quiche connection.
    pub fn conn(&mut self) -> &mut quiche::Connection {
        &mut self.conn
    }

    /// The quiche connection, read-only.
    pub fn conn_ref(&self) -> &quiche::Connection {
        &self.conn
    }

    /// The client's qlog trace, when one was asked for.
    pub fn qlog(&self) -> Option<&QlogBuffer> {
        self.qlog.as_ref()
    }
}

impl SimClient {
    /// The client of flow number `flow`.
    pub fn new(settings: EndpointSettings, flow: u64) -> Result<SimClient, SimError> {
        let mut config = base_config(&settings)?;
        let resume = ResumeClient::new(ClientConfig {
            base_credit: FLOW_CONTROL_CREDIT,
            requested_capacity: settings
                .requested_capacity
                .map_or(RequestedCapacity::AsSaved, RequestedCapacity::AtMost),
            early_data: settings.early_data,
            ..ClientConfig::default()
        });
        resume.configure(&mut config)?;
        Ok(SimClient {
            config,
            settings,
            flow,
            connected: 0,
            resume,
        })
    }

    /// Whether a finished connection is closed at once (see
    /// [`EndpointSettings::close_when_done`]).
    pub fn closes_when_done(&self) -> bool {
        self.settings.close_when_done
    }

    /// Tokens received and not yet used.
    pub fn tokens(&self) -> usize {
        self.resume.store().len()
    }

    /// The saved set the next connection will present: none for a baseline,
    /// which presents no token.
    pub fn saved_set_to_present(&self, peer: SocketAddr) -> Option<TokenCapacity> {
        self.settings
            .resume
            .then(|| self.next_saved_set(peer))
            .flatten()
    }

    /// The saved set in the token the next connection would present, as the
    /// client reads it in the clear (`None`: no token, or one without a
    /// saved set).
    pub fn next_saved_set(&self, peer: SocketAddr) -> Option<TokenCapacity> {
        let token = self.resume.store().newest(SERVER_NAME, peer)?;
        let bdp = ExToken::decode(token).ok()?.bdp()?.ok()?;
        Some(TokenCapacity {
            capacity: bdp.capacity,
            rtt: Duration::from_micros(bdp.rtt_us),
        })
    }

    /// Opens a new connection, presenting a kept token unless the scenario
    /// is a baseline; `full_trace` records its complete qlog trace.
    pub fn connect(
        &mut self,
        local: SocketAddr,
        peer: SocketAddr,
        full_trace: bool,
        now: &Now,
    ) -> Result<ClientConnection, SimError> {
        let scid_bytes = connection_id(self.settings.seed, self.flow, self.connected, false);
        self.connected += 1;
        let scid = quiche::ConnectionId::from_ref(&scid_bytes);
        let mut conn = if self.settings.resume {
            self.resume
                .connect(SERVER_NAME, &scid, local, peer, &mut self.config, now.wall)?
        } else {
            quiche::connect(Some(SERVER_NAME), &scid, local, peer, &mut self.config)?
        };
        let qlog = full_trace.then(QlogBuffer::new);
        if let Some(q) = &qlog {
            attach_qlog(&mut conn, q, Keep::Everything, "client");
        }
        Ok(ClientConnection { conn, qlog })
    }

    /// Housekeeping after a receive, send or timeout on `connection`: keeps
    /// the tokens that arrived in NEW_TOKEN frames.
    pub fn after_io(&mut self, connection: &mut ClientConnection, now: &Now) {
        let peer = connection.conn.path_stats().next().map(|p| p.peer_addr);
        if let Some(peer) = peer {
            self.resume
                .on_progress(&mut connection.conn, SERVER_NAME, peer, now.wall);
        }
    }
}
