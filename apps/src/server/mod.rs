//! `cr-server`: serves `GET /<bytes>` over HTTP/3 and hq-interop on one UDP
//! socket, with Careful Resume driven by the tokens clients bring back.
//!
//! Single-threaded: one loop receives datagrams, routes them by destination
//! connection ID, fires quiche's timers, runs the applications and releases
//! packets at their pacing time. Each turn serves only the connections
//! that have something to do (a datagram, a timer, their pacer, a claim's
//! answer): thousands of half-open connections from forged Initials, each
//! waiting out its idle timeout, must not slow every turn down. A client's
//! token is validated when its first Initial arrives; a valid one marks the
//! address validated (no Retry round trip) and, when it carries saved
//! capacity, starts Careful Resume. A packet for a connection the server
//! does not have is answered with a stateless reset keyed by the token key
//! ring ([`cr_endpoint::reset`]) when its connection ID is one this server
//! issued in an earlier process (it restarted), so its client gives up at
//! once; never when another server of the fleet issued it, as that server
//! may still hold the connection (a fleet routes by connection ID, and
//! gives each server its own id: [`Server::set_server_id`]).

mod handle;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cr_endpoint::ex_token::{KeyRing, MemoryGuard, SystemRng, TokenServer};
use cr_endpoint::reset::{self, Issuer, CONNECTION_ID_LEN};
use cr_endpoint::{ResumeServer, SharedGuard};

use cr_serve::{CongestionControl, ConnectionReport, Protocol, ServerSession, SlowStart};

use crate::error::AppError;
use crate::keys::KeyRingWatcher;
use crate::net::{
    drain_connection, recv_until, size_buffers, try_recv, Outbox, MAX_DATAGRAM, RECV_BUFFER,
    SOCKET_BUFFER_FLOOR,
};

pub use handle::ServerHandle;

/// How long the loop sleeps at most, so a stop request is seen promptly.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// How soon the loop comes back while a guard across the network has a
/// claim to answer: a jump held for the answer goes ahead at the next turn.
const CLAIM_POLL: Duration = Duration::from_millis(1);

/// Datagrams taken from the socket in one turn before serving the
/// connections again.
const RECV_BATCH: usize = 64;

/// How often the token key file is reread.
const KEY_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Most stateless resets sent in a second: enough for every client of a
/// restarted server to hear one, few enough that a flood of short-header
/// garbage cannot make the server send much (each reset is also shorter
/// than what it answers).
const MAX_RESETS_PER_SECOND: u32 = 1000;

/// Smallest datagram that may carry a client's first Initial (RFC 9000,
/// Section 14.1); smaller ones never create state.
const MIN_INITIAL: usize = 1200;

/// Everything a server needs to start.
pub struct ServerOptions {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
    /// The keys sealing and opening tokens.
    pub token_keys: KeyRing,
    /// The key ring file `token_keys` came from, reread every second so
    /// that a changed file takes effect without a restart; `None` keeps
    /// `token_keys`.
    pub token_key_file: Option<PathBuf>,
    /// Where saved sets are claimed; `None` for a guard in memory.
    pub guard: Option<SharedGuard>,
    /// Write one qlog per connection here.
    pub qlog_dir: Option<PathBuf>,
    /// The congestion controller.
    pub cc: CongestionControl,
    /// How Reno and CUBIC end their first slow start.
    pub slow_start: SlowStart,
    /// Cap on the window Careful Resume may jump to, in bytes.
    pub max_jump: Option<usize>,
    /// How jumps of clients resuming together are shared out; `None`:
    /// every jump in full.
    pub jump_budget: Option<cr_endpoint::JumpBudget>,
    /// Idle timeout of connections.
    pub idle_timeout: Duration,
    /// Send short packets wherever the congestion window has a little room,
    /// as quiche does by default, instead of waiting for room for a full
    /// one ([`quiche::Config::enable_silly_window_avoidance`]); for
    /// comparisons.
    pub small_packets: bool,
    /// Update the smoothed RTT and its variation once per round trip
    /// instead of per ACK ([`quiche::Config::enable_rtt_once_per_rtt`]);
    /// off, quiche's behaviour, unless an operator measures a gain.
    pub rtt_once_per_rtt: bool,
    /// Pace Reno's and CUBIC's packets
    /// ([`quiche::Config::enable_reno_cubic_pacing`]; off by default, as in
    /// quiche).
    pub pace: bool,
    /// Let slow start go on past the saved capacity after a validated jump
    /// once the round after it showed room
    /// ([`cr_endpoint::ResumeConfig::slow_start_past_saved`]; off by
    /// default).
    pub slow_start_past_saved: bool,
    /// Whether clients resuming a TLS session may send their request as
    /// early data (0-RTT), answered once the guard has recorded the first
    /// flight as new ([`cr_endpoint::ResumeConfig::early_data`]).
    pub early_data: bool,
}

/// A bound server, ready to run.
pub struct Server {
    socket: UdpSocket,
    local: SocketAddr,
    config: quiche::Config,
    resume: ResumeServer<SystemRng, SharedGuard>,
    key_file: Option<(KeyRingWatcher, Instant)>,
    qlog_dir: Option<PathBuf>,
    /// Connection IDs (original and ours) to session number.
    ids: HashMap<Vec<u8>, u64>,
    sessions: HashMap<u64, Serving>,
    next_session: u64,
    outbox: Outbox,
    rng: SystemRng,
    /// This server's id and this process's epoch, in every connection ID
    /// it issues.
    issuer: Issuer,
    /// The second the stateless resets are counted in, and the count.
    resets: (Instant, u32),
}

/// A connection being served, and when its pacer lets it send again if it
/// held a packet back.
struct Serving {
    session: ServerSession,
    next_send: Option<Instant>,
    /// The connection IDs routing to it (the client's original one and
    /// ours), forgotten with it.
    ids: [Vec<u8>; 2],
}

impl Serving {
    /// Whether the connection has something to do at `now` without a new
    /// datagram: a timer due, its pacer's release, or a claim's answer to
    /// pick up.
    fn due(&self, now: Instant) -> bool {
        self.session.claim_pending()
            || self.next_send.is_some_and(|at| at <= now)
            || self
                .session
                .conn_ref()
                .timeout_instant()
                .is_some_and(|at| at <= now)
    }

    /// Fires the connection's timer if it is due, then serves it
    /// ([`ServerSession::serve`]), queueing what it sends in `outbox`.
    fn step(
        &mut self,
        resume: &mut ResumeServer<SystemRng, SharedGuard>,
        outbox: &mut Outbox,
        now: Instant,
    ) {
        let conn = self.session.conn();
        if conn.timeout_instant().is_some_and(|t| t <= now) {
            conn.on_timeout();
        }
        let next_send = &mut self.next_send;
        let Ok(()) = self.session.serve(resume, now, SystemTime::now(), |conn| {
            let drained = drain_connection(conn, outbox);
            *next_send = drained.next_send;
            Ok::<_, Infallible>(drained.sent)
        });
    }
}

fn quiche_config(options: &ServerOptions) -> Result<quiche::Config, AppError> {
    let path = |p: &Path| {
        p.to_str()
            .map(str::to_owned)
            .ok_or_else(|| AppError::Invalid(format!("path {} is not UTF-8", p.display())))
    };
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION)?;
    config
        .load_cert_chain_from_pem_file(&path(&options.cert)?)
        .map_err(|e| AppError::Invalid(format!("certificate {}: {e}", options.cert.display())))?;
    config
        .load_priv_key_from_pem_file(&path(&options.key)?)
        .map_err(|e| AppError::Invalid(format!("private key {}: {e}", options.key.display())))?;
    config.set_application_protos(&[Protocol::H3.alpn(), Protocol::Hq.alpn()])?;
    config.set_max_idle_timeout(options.idle_timeout.as_millis() as u64);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    // Requests are small; the credit only has to cover them.
    config.set_initial_max_data(1024 * 1024);
    config.set_initial_max_stream_data_bidi_remote(64 * 1024);
    config.set_initial_max_stream_data_uni(64 * 1024);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(16);
    config.set_cc_algorithm(options.cc.algorithm());
    options.slow_start.apply(&mut config);
    config.enable_silly_window_avoidance(!options.small_packets);
    config.enable_rtt_once_per_rtt(options.rtt_once_per_rtt);
    config.enable_reno_cubic_pacing(options.pace);
    // The outbox holds each datagram until its `SendInfo.at` (net.rs).
    config.set_application_paces(true);
    config.set_early_data_context(cr_serve::EARLY_DATA_CONTEXT);
    // BBR2 paces its initial window at Startup's gain (patch 0018).
    config.enable_bbr_initial_pacing_gain(true);
    config.set_disable_active_migration(true);
    Ok(config)
}

impl Server {
    /// Binds the socket and prepares TLS and tokens; fails with a readable
    /// error on a bad certificate, key or address.
    pub fn bind(options: ServerOptions) -> Result<Server, AppError> {
        let mut config = quiche_config(&options)?;
        let tokens = TokenServer::new(options.token_keys, SystemRng::new(), Default::default());
        let resume_config = cr_endpoint::ResumeConfig {
            max_jump: options.max_jump,
            jump_budget: options.jump_budget,
            early_data: options.early_data,
            slow_start_past_saved: options.slow_start_past_saved,
            ..Default::default()
        };
        let guard = options
            .guard
            .unwrap_or_else(|| Arc::new(MemoryGuard::default()));
        let resume = ResumeServer::new(tokens, guard, resume_config);
        resume.configure(&mut config)?;
        let socket = UdpSocket::bind(options.listen)
            .map_err(|e| AppError::io(format!("binding {}", options.listen), e))?;
        // One socket for every client: the kernel must hold their bursts.
        size_buffers(&socket, SOCKET_BUFFER_FLOOR);
        let local = socket
            .local_addr()
            .map_err(|e| AppError::io("reading the bound address", e))?;
        Ok(Server {
            socket,
            local,
            config,
            resume,
            key_file: options.token_key_file.map(|path| {
                (
                    KeyRingWatcher::new(&path),
                    Instant::now() + KEY_CHECK_INTERVAL,
                )
            }),
            qlog_dir: options.qlog_dir,
            ids: HashMap::new(),
            sessions: HashMap::new(),
            next_session: 0,
            outbox: Outbox::default(),
            rng: SystemRng::new(),
            issuer: Issuer::new(0, SystemTime::now()),
            resets: (Instant::now(), 0),
        })
    }

    /// Sets this server's id in its fleet (0 unless set), written into
    /// every connection ID it issues from now on, so set it before
    /// serving. Every server sharing a key ring needs its own: a server
    /// resets only connections its own id issued in an earlier process, so
    /// that no server answers for, and gives away the reset token of, a
    /// connection another server holds. A load balancer routes by
    /// connection ID: the server id is the ID's second byte.
    pub fn set_server_id(&mut self, id: u8) {
        self.issuer = self.issuer.with_server(id);
    }

    /// This server's id and this process's epoch, as its connection IDs
    /// carry them.
    pub fn issuer(&self) -> Issuer {
        self.issuer
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The server's Careful Resume counters, readable from any thread.
    pub fn metrics(&self) -> Arc<cr_endpoint::ServerMetrics> {
        self.resume.metrics()
    }

    /// Serves until `stop` is set, handing each ended connection's report
    /// to `on_report`.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        mut on_report: impl FnMut(ConnectionReport),
    ) -> Result<(), AppError> {
        let mut buf = vec![0u8; RECV_BUFFER];
        // The connections that received a datagram this turn.
        let mut received_by = Vec::with_capacity(RECV_BATCH);
        while !stop.load(Ordering::Relaxed) {
            let deadline = self.next_deadline(Instant::now() + MAX_WAIT);
            let mut received = recv_until(&self.socket, &mut buf, deadline)
                .map_err(|e| AppError::io("receiving", e))?;
            let mut batch = 0;
            while let Some((len, from)) = received {
                received_by.extend(self.on_datagram(&mut buf[..len], from, Instant::now()));
                batch += 1;
                received = if batch < RECV_BATCH {
                    try_recv(&self.socket, &mut buf).map_err(|e| AppError::io("receiving", e))?
                } else {
                    None
                };
            }
            let now = Instant::now();
            received_by.sort_unstable();
            received_by.dedup();
            for (number, serving) in &mut self.sessions {
                if received_by.binary_search(number).is_ok() || serving.due(now) {
                    serving.step(&mut self.resume, &mut self.outbox, now);
                }
            }
            received_by.clear();
            self.outbox.flush(&self.socket, Instant::now());
            self.reap(&mut on_report);
            self.reload_keys(now);
        }
        Ok(())
    }

    /// Takes up the key ring file's keys when it has changed.
    fn reload_keys(&mut self, now: Instant) {
        let Some((watcher, next_check)) = self.key_file.as_mut() else {
            return;
        };
        if now < *next_check {
            return;
        }
        *next_check = now + KEY_CHECK_INTERVAL;
        match watcher.changed() {
            None => {}
            Some(Ok((ring, loaded))) => {
                *self.resume.tokens_mut().keys_mut() = ring;
                log::info!(
                    "token keys reloaded: current id {}, earlier ids {:?}",
                    loaded.current,
                    loaded.previous
                );
            }
            Some(Err(e)) => log::warn!("token keys kept: {e}"),
        }
    }

    /// The earliest of `limit`, a connection timer, a connection's pacer,
    /// a pacing release and, while a claim is awaited, the next poll.
    fn next_deadline(&self, limit: Instant) -> Instant {
        let claim_poll = self
            .sessions
            .values()
            .any(|s| s.session.claim_pending())
            .then(|| Instant::now() + CLAIM_POLL);
        self.sessions
            .values()
            .flat_map(|s| [s.session.conn_ref().timeout_instant(), s.next_send])
            .flatten()
            .chain(self.outbox.next_release())
            .chain(claim_poll)
            .fold(limit, Instant::min)
    }

    /// Hands a datagram to its connection (a new one for a client's first
    /// Initial); returns the connection's number, if it has one.
    fn on_datagram(&mut self, datagram: &mut [u8], from: SocketAddr, now: Instant) -> Option<u64> {
        // Short headers do not say how long their connection ID is: ours
        // are CONNECTION_ID_LEN.
        let header = quiche::Header::from_slice(datagram, CONNECTION_ID_LEN).ok()?;
        let number = match self.ids.get(header.dcid.as_ref()) {
            Some(&number) => number,
            None if header.ty == quiche::Type::Short => {
                self.reset(&header.dcid, datagram.len(), from, now);
                return None;
            }
            None => self.accept(&header, datagram.len(), from, now)?,
        };
        let serving = self.sessions.get_mut(&number)?;
        let info = quiche::RecvInfo {
            from,
            to: self.local,
        };
        serving.session.recv(&self.resume, datagram, info);
        Some(number)
    }

    /// Starts a connection for a client's first Initial; answers unknown
    /// versions with Version Negotiation.
    fn accept(
        &mut self,
        header: &quiche::Header<'_>,
        len: usize,
        from: SocketAddr,
        now: Instant,
    ) -> Option<u64> {
        if header.ty != quiche::Type::Initial || len < MIN_INITIAL {
            return None;
        }
        if !quiche::version_is_supported(header.version) {
            let mut out = [0u8; MAX_DATAGRAM];
            if let Ok(written) = quiche::negotiate_version(&header.scid, &header.dcid, &mut out) {
                self.outbox.push(now, from, &out[..written]);
            }
            return None;
        }
        let keys = self.resume.tokens().keys();
        let cid = reset::connection_id(keys, &self.issuer, &mut self.rng)?;
        self.config
            .set_stateless_reset_token(reset::reset_token(keys, &cid));
        let scid = quiche::ConnectionId::from_ref(&cid);
        let token = header.token.as_deref().unwrap_or_default();
        let mut accepted = self
            .resume
            .accept(
                &scid,
                None,
                self.local,
                from,
                token,
                &mut self.config,
                SystemTime::now(),
            )
            .ok()?;
        if let Some(dir) = &self.qlog_dir {
            crate::qlog::attach(&mut accepted.conn, dir, "server")
                .map_err(|e| log::warn!("connection from {from} not served: {e}"))
                .ok()?;
        }
        let session = ServerSession::new(accepted, &header.dcid, now);
        let number = self.next_session;
        self.next_session += 1;
        self.ids.insert(header.dcid.to_vec(), number);
        self.ids.insert(cid.to_vec(), number);
        self.sessions.insert(
            number,
            Serving {
                session,
                next_send: None,
                ids: [header.dcid.to_vec(), cid.to_vec()],
            },
        );
        Some(number)
    }

    /// Answers a short-header packet for connection ID `dcid`, which the
    /// server does not have, with a stateless reset when this server issued
    /// the ID in an earlier process ([`Issuer::may_reset`]), within
    /// [`MAX_RESETS_PER_SECOND`].
    fn reset(&mut self, dcid: &[u8], received: usize, from: SocketAddr, now: Instant) {
        let (second, sent) = &mut self.resets;
        if now.duration_since(*second) >= Duration::from_secs(1) {
            (*second, *sent) = (now, 0);
        }
        if *sent >= MAX_RESETS_PER_SECOND {
            return;
        }
        let mut out = [0u8; MAX_DATAGRAM];
        let keys = self.resume.tokens().keys();
        if let Some(len) =
            reset::stateless_reset(keys, &self.issuer, dcid, received, &mut self.rng, &mut out)
        {
            *sent += 1;
            self.outbox.push(now, from, &out[..len]);
            log::debug!("{from}: stateless reset for a connection this server does not have");
        }
    }

    /// Drops closed connections and reports them.
    fn reap(&mut self, on_report: &mut impl FnMut(ConnectionReport)) {
        let closed: Vec<u64> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.session.conn_ref().is_closed())
            .map(|(&n, _)| n)
            .collect();
        let now = Instant::now();
        for number in closed {
            if let Some(mut serving) = self.sessions.remove(&number) {
                serving.session.on_closed(&self.resume, SystemTime::now());
                on_report(serving.session.report(now));
                for id in &serving.ids {
                    if self.ids.get(id) == Some(&number) {
                        self.ids.remove(id);
                    }
                }
            }
        }
    }
}
