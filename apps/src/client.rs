//! `cr-client`: one download of `/<bytes>`, presenting a token from the
//! token file if it holds one for this server, keeping the tokens the
//! server sends for the next run.
//!
//! Tokens are keyed by server name and address (a fleet behind one name
//! holds different keys). The server sends its best token (one with saved
//! capacity) late, once it has measured the path, so the client lingers a
//! little after the download before closing: a client that closes at the
//! last byte often leaves without it.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use cr_endpoint::ex_token::{ExToken, Rng, StoreConfig, SystemRng, TokenStore};
use cr_endpoint::{ClientConfig, RequestedCapacity, ResumeClient};
use cr_serve::app::ClientApp;
use cr_serve::report::seconds;
use cr_serve::Protocol;

use crate::error::AppError;
use crate::net::{
    drain_connection, recv_until, size_buffers, try_recv, Outbox, MAX_DATAGRAM, RECV_BUFFER,
    SOCKET_BUFFER_FLOOR,
};

/// While the response is still to come and nothing has arrived for this
/// long, the client sends a PING: a client that only acknowledges what
/// arrives sends nothing when nothing arrives, so it would never hear a
/// server that lost the connection (restarted) answer with a stateless
/// reset, and would wait out its idle timeout. RFC 9000 (Section 10.1.2)
/// lets an endpoint with outstanding requests keep a connection alive so.
const KEEP_ALIVE: Duration = Duration::from_secs(1);

/// What a download needs.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// The server's (or the relay's) address.
    pub server: SocketAddr,
    /// The name the certificate must carry (SNI), also the token key.
    pub server_name: String,
    /// Bytes to fetch.
    pub size: u64,
    /// HTTP/3 or hq-interop.
    pub protocol: Protocol,
    /// Where tokens are kept between runs; none means no token is used or
    /// kept.
    pub token_file: Option<PathBuf>,
    /// Requested Capacity: `None` asks for what the server saved, `Some(0)`
    /// opts out of Careful Resume, `Some(n)` asks for at most `n` bytes.
    pub requested_capacity: Option<u64>,
    /// How long to stay after the last byte, for late NEW_TOKEN frames.
    pub linger: Duration,
    /// Give up when the download has not finished after this long.
    pub timeout: Duration,
    /// Trust this PEM certificate (a CA, or a self-signed server).
    pub ca: Option<PathBuf>,
    /// Skip certificate verification.
    pub insecure: bool,
    /// Write the client's qlog here.
    pub qlog_dir: Option<PathBuf>,
    /// The local address to send from; port 0 picks any port. `None`: any
    /// address of the server's family. Through cr-relay on loopback, a
    /// client on its own loopback address (e.g. 127.1.0.1) reaches the
    /// server from that address, so the server sees its own network
    /// (address prefix) per client.
    pub bind: Option<SocketAddr>,
    /// Fail the download at the first body byte that is not cr-server's
    /// ([`cr_serve::body`]); without it the bytes are only counted
    /// ([`DownloadReport::verified`]).
    pub verify: bool,
    /// Keep TLS sessions in the token file and send the request as early
    /// data (0-RTT) when one is kept for the server.
    pub early_data: bool,
}

/// The token a connection presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresentedToken {
    /// None: the token file had nothing for this server.
    None,
    /// A token without saved capacity (address validation only).
    Address,
    /// A token with saved capacity (a BDP token).
    Bdp {
        /// Capacity the server saved, in bytes.
        capacity: u64,
        /// Requested Capacity as presented, in bytes.
        requested: u64,
        /// The saved round-trip time.
        rtt: Duration,
    },
    /// Something not in the extensible token format.
    Opaque,
}

impl PresentedToken {
    /// Classifies a token as kept in the store.
    fn of(token: Option<&[u8]>) -> PresentedToken {
        let Some(token) = token else {
            return PresentedToken::None;
        };
        match ExToken::decode(token) {
            Ok(decoded) => match decoded.bdp() {
                Some(Ok(bdp)) => PresentedToken::Bdp {
                    capacity: bdp.capacity,
                    requested: bdp.requested_capacity,
                    rtt: Duration::from_micros(bdp.rtt_us),
                },
                _ => PresentedToken::Address,
            },
            Err(_) => PresentedToken::Opaque,
        }
    }

    /// Whether any token was presented.
    pub fn is_some(&self) -> bool {
        *self != PresentedToken::None
    }
}

impl std::fmt::Display for PresentedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PresentedToken::None => f.write_str("none"),
            PresentedToken::Address => f.write_str("address-only"),
            PresentedToken::Bdp {
                capacity,
                requested,
                rtt,
            } => write!(
                f,
                "bdp (capacity {capacity} B, requested {requested} B, rtt {} ms)",
                rtt.as_millis()
            ),
            PresentedToken::Opaque => f.write_str("opaque"),
        }
    }
}

/// What a download measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DownloadReport {
    /// The token presented (before any Requested Capacity change).
    pub presented: PresentedToken,
    /// The best token kept for the next connection.
    pub next_token: PresentedToken,
    /// From the first packet sent to the handshake's completion.
    pub handshake: Duration,
    /// From the first packet sent to the first body byte.
    pub first_byte: Duration,
    /// From the first packet sent to the last body byte.
    pub completion: Duration,
    /// Body bytes received.
    pub bytes: u64,
    /// Body bytes, from the first, that are cr-server's pattern at their
    /// offset ([`cr_serve::body`]): equal to `bytes` for a body from
    /// cr-server that arrived intact.
    pub verified: u64,
    /// The HTTP status (HTTP/3 only).
    pub status: Option<u16>,
    /// The address the client sent from (to send from it again, e.g.).
    pub local: SocketAddr,
    /// Whether the request went as early data, and the server took it:
    /// `None` when it did not go as early data (no session kept, or early
    /// data off), `Some(false)` when the server refused it (the request
    /// was then sent again after the handshake).
    pub early_data: Option<bool>,
}

impl std::fmt::Display for DownloadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bytes={} handshake={} ttfb={} completion={} token={} next-token={}",
            self.bytes,
            seconds(self.handshake),
            seconds(self.first_byte),
            seconds(self.completion),
            self.presented,
            self.next_token,
        )?;
        if let Some(status) = self.status {
            write!(f, " status={status}")?;
        }
        let early_data = match self.early_data {
            None => "none",
            Some(true) => "accepted",
            Some(false) => "refused",
        };
        write!(f, " early-data={early_data}")
    }
}

fn quiche_config(options: &ClientOptions) -> Result<quiche::Config, AppError> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION)?;
    config.set_application_protos(&[options.protocol.alpn()])?;
    config.set_max_idle_timeout(30_000);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    config.set_initial_max_streams_bidi(16);
    config.set_initial_max_streams_uni(16);
    config.set_initial_max_stream_data_uni(1024 * 1024);
    config.set_initial_max_stream_data_bidi_remote(1024 * 1024);
    config.verify_peer(!options.insecure);
    if let Some(ca) = &options.ca {
        let path = ca
            .to_str()
            .ok_or_else(|| AppError::Invalid(format!("path {} is not UTF-8", ca.display())))?;
        config
            .load_verify_locations_from_file(path)
            .map_err(|e| AppError::Invalid(format!("certificate {}: {e}", ca.display())))?;
    }
    Ok(config)
}

fn load_store(path: Option<&Path>, now: SystemTime) -> Result<TokenStore, AppError> {
    match path {
        Some(path) => TokenStore::load(path, StoreConfig::default(), now)
            .map_err(|e| AppError::io(format!("reading token file {}", path.display()), e)),
        None => Ok(TokenStore::new(StoreConfig::default())),
    }
}

/// How long a download went without a new body byte, across the
/// attempts of one download when the caller retries: a client's view of a
/// stall (a dead server, a loss burst), which a soak bounds. Optionally
/// gives up on an attempt that receives nothing for a while, as a user
/// would, rather than waiting for the idle timeout (30 s): a restarted
/// server knows nothing of the connection and says nothing either.
#[derive(Clone, Debug)]
pub struct Stalls {
    /// Give up an attempt after this long without a body byte (counted
    /// from the attempt's start before the first one).
    pub give_up_after: Option<Duration>,
    last: Instant,
    longest: Duration,
}

impl Stalls {
    /// Starts counting now (the download's start).
    pub fn new(give_up_after: Option<Duration>) -> Stalls {
        Stalls {
            give_up_after,
            last: Instant::now(),
            longest: Duration::ZERO,
        }
    }

    /// Body bytes arrived at `now`.
    pub fn progress(&mut self, now: Instant) {
        self.longest = self.longest.max(now.saturating_duration_since(self.last));
        self.last = now;
    }

    /// The longest time without a body byte so far (from the start to the
    /// first byte included).
    pub fn longest(&self) -> Duration {
        self.longest
    }
}

/// Downloads `/<size>` once and keeps the tokens received.
pub fn download(options: &ClientOptions) -> Result<DownloadReport, AppError> {
    download_watched(options, &mut Stalls::new(None))
}

/// [`download`], counting in `stalls` the times without a body byte and
/// giving up as [`Stalls::give_up_after`] says.
pub fn download_watched(
    options: &ClientOptions,
    stalls: &mut Stalls,
) -> Result<DownloadReport, AppError> {
    let mut config = quiche_config(options)?;
    let wall = SystemTime::now();
    let store = load_store(options.token_file.as_deref(), wall)?;
    let requested_capacity = match options.requested_capacity {
        None => RequestedCapacity::AsSaved,
        Some(0) => RequestedCapacity::OptOut,
        Some(n) => RequestedCapacity::AtMost(n),
    };
    let mut resume = ResumeClient::with_store(
        store,
        ClientConfig {
            requested_capacity,
            early_data: options.early_data,
            ..ClientConfig::default()
        },
    );
    resume.configure(&mut config)?;
    let peer = options.server;
    let name = options.server_name.as_str();
    // The store hands out its newest token for the server: look first.
    let presented = PresentedToken::of(resume.store().clone().take(name, peer, wall).as_deref());

    let bind: SocketAddr = match options.bind {
        Some(bind) if bind.is_ipv4() != peer.is_ipv4() => {
            return Err(AppError::Invalid(format!(
                "cannot reach {peer} from {bind}: not the same address family"
            )))
        }
        Some(bind) => bind,
        None if peer.is_ipv4() => (Ipv4Addr::UNSPECIFIED, 0).into(),
        None => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket =
        UdpSocket::bind(bind).map_err(|e| AppError::io(format!("binding {bind} (UDP)"), e))?;
    // The download arrives in bursts of the server's window.
    size_buffers(&socket, SOCKET_BUFFER_FLOOR);
    let local = socket
        .local_addr()
        .map_err(|e| AppError::io("reading the bound address", e))?;

    let mut cid = [0u8; quiche::MAX_CONN_ID_LEN];
    SystemRng::new()
        .fill(&mut cid)
        .map_err(|_| AppError::Invalid("the system random generator failed".into()))?;
    let scid = quiche::ConnectionId::from_ref(&cid);
    let mut conn = resume.connect(name, &scid, local, peer, &mut config, wall)?;
    if let Some(dir) = &options.qlog_dir {
        crate::qlog::attach(&mut conn, dir, "client")?;
    }

    let start = Instant::now();
    let mut app = ClientApp::new(options.protocol, options.size, name);
    let mut handshake = None;
    let mut outbox = Outbox::default();
    let mut buf = vec![0u8; RECV_BUFFER];
    let give_up = start + options.timeout;
    // When this attempt last saw a body byte (or started).
    let mut attempt_progress = start;
    let mut received_so_far = 0;
    // When the last datagram arrived, or the last PING left (KEEP_ALIVE).
    let mut heard_or_pinged = start;

    let mut next_send = drain_connection(&mut conn, &mut outbox).next_send;
    // The first flight puts a client resuming a TLS session in early data:
    // its request follows at once (0-RTT).
    let sent_early = conn.is_in_early_data();
    if sent_early {
        app.step(&mut conn, start)?;
        next_send = drain_connection(&mut conn, &mut outbox).next_send;
    }
    loop {
        let now = Instant::now();
        outbox.flush(&socket, now);
        if conn.is_closed() || conn.is_draining() {
            break;
        }
        let done = app.progress().done;
        if done.is_some_and(|at| now >= at + options.linger) {
            let code = match options.protocol {
                Protocol::H3 => 0x100,
                Protocol::Hq => 0,
            };
            let _ = conn.close(true, code, b"done");
            drain_connection(&mut conn, &mut outbox);
            outbox.flush(&socket, Instant::now());
            break;
        }
        if done.is_none() && now >= give_up {
            return Err(AppError::Timeout(format!(
                "{} of {} bytes after {:?}",
                app.progress().received,
                options.size,
                options.timeout
            )));
        }
        let stalled_at = stalls.give_up_after.map(|after| attempt_progress + after);
        if done.is_none() && stalled_at.is_some_and(|at| now >= at) {
            return Err(AppError::Timeout(format!(
                "no body byte for {:?} ({} of {} bytes)",
                stalls.give_up_after.unwrap_or_default(),
                app.progress().received,
                options.size,
            )));
        }

        let awaiting = done.is_none() && conn.is_established();
        let deadline = [
            conn.timeout_instant(),
            next_send,
            outbox.next_release(),
            done.map(|at| at + options.linger),
            stalled_at.filter(|_| done.is_none()),
            awaiting.then_some(heard_or_pinged + KEEP_ALIVE),
        ]
        .into_iter()
        .flatten()
        .fold(give_up, Instant::min);
        let mut received =
            recv_until(&socket, &mut buf, deadline).map_err(|e| AppError::io("receiving", e))?;
        while let Some((len, from)) = received {
            heard_or_pinged = Instant::now();
            let info = quiche::RecvInfo { from, to: local };
            // Datagrams quiche rejects (stray, corrupt) are dropped.
            let _ = conn.recv(&mut buf[..len], info);
            received = try_recv(&socket, &mut buf).map_err(|e| AppError::io("receiving", e))?;
        }
        let now = Instant::now();
        if conn.timeout_instant().is_some_and(|t| t <= now) {
            conn.on_timeout();
        }
        if handshake.is_none() && conn.is_established() {
            handshake = Some(now - start);
        }
        app.step(&mut conn, now)?;
        let progress = app.progress();
        if progress.received > received_so_far {
            received_so_far = progress.received;
            attempt_progress = now;
            stalls.progress(now);
        }
        if options.verify && progress.verified < progress.received {
            return Err(AppError::Invalid(format!(
                "body byte {} is not cr-server's (cr_serve::body)",
                progress.verified
            )));
        }
        resume.on_progress(&mut conn, name, peer, SystemTime::now());
        if progress.done.is_none() && conn.is_established() && now >= heard_or_pinged + KEEP_ALIVE {
            // Only fails on a closed connection, which the loop then ends.
            let _ = conn.send_ack_eliciting();
            heard_or_pinged = now;
        }
        next_send = drain_connection(&mut conn, &mut outbox).next_send;
    }

    if let Some(path) = &options.token_file {
        resume
            .store()
            .save(path)
            .map_err(|e| AppError::io(format!("writing token file {}", path.display()), e))?;
    }
    let progress = app.progress().clone();
    let Some(done) = progress.done else {
        let why = conn
            .peer_error()
            .or(conn.local_error())
            .map(|e| format!("{e:?}"))
            .unwrap_or_else(|| {
                // Closed with no error either way: by its idle timer, or
                // by a stateless reset from a server that lost it.
                if conn.is_timed_out() {
                    "idle timeout".into()
                } else {
                    "stateless reset".into()
                }
            });
        // Where it stopped tells a handshake that never completed (its
        // probes lost again and again) from a download that stalled.
        let stage = if conn.is_established() {
            format!("after {} body bytes", progress.received)
        } else {
            "in the handshake".to_string()
        };
        return Err(AppError::Invalid(format!(
            "connection closed before the download finished, {stage}: {why}"
        )));
    };
    let next_token = PresentedToken::of(
        resume
            .store()
            .clone()
            .take(name, peer, SystemTime::now())
            .as_deref(),
    );
    Ok(DownloadReport {
        presented,
        next_token,
        handshake: handshake.unwrap_or_default(),
        first_byte: progress.first_byte.map_or(Duration::ZERO, |t| t - start),
        completion: done - start,
        bytes: progress.received,
        verified: progress.verified,
        status: progress.status,
        local,
        // BoringSSL's ssl_early_data_accepted.
        early_data: sent_early.then(|| conn.early_data_reason() == 2),
    })
}
