//! Unauthenticated traffic for a soak: garbage datagrams and forged QUIC
//! Initials sent straight at the server (not through the relay), at a
//! bounded rate, from a loopback address no client uses.
//!
//! This module owns the flooding thread and what it sends. Half of the
//! datagrams are garbage (random bytes of random length, some with a long
//! header's first bits so they get past the first byte); the other half
//! are real client Initials made by `quiche::connect` and never followed
//! up, so the server starts a handshake that never completes. Forged
//! Initials carry, in turn, no token, a random one, or a copy of a real
//! client's newest token (read from its token file): the copy is genuine
//! but comes from another network, so it must neither validate the
//! address nor claim the client's saved set.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use cr_endpoint::ex_token::{Rng, StoreConfig, SystemRng, TokenStore};

use crate::error::AppError;

/// Where the flood comes from: a /24 of its own, apart from every client
/// (clients use 127.1.0.1 upwards).
pub const FLOOD_SOURCE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// How often the copied token is read again from the client's file.
const TOKEN_REFRESH: Duration = Duration::from_secs(1);

/// Datagrams sent per pacing step: the thread sleeps between steps.
const STEP: u32 = 20;

/// What a flood needs.
#[derive(Clone, Debug)]
pub struct FloodOptions {
    /// The server's own address (the flood bypasses the relay).
    pub server: SocketAddr,
    /// Datagrams per second, garbage and forged Initials together (more
    /// than 0).
    pub rate: u32,
    /// A real client's token file, whose newest token for `token_for` the
    /// forged Initials copy.
    pub token_file: Option<PathBuf>,
    /// The name and address that token file keys the token by.
    pub token_for: (String, SocketAddr),
}

/// What a flood sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FloodStats {
    /// Garbage datagrams.
    pub garbage: u64,
    /// Forged Initials.
    pub initials: u64,
    /// Of those, carrying a copy of a real client's token.
    pub copied_tokens: u64,
}

/// A running flood; [`Flood::stop`] ends it and says what it sent.
pub struct Flood {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<FloodStats, AppError>>,
}

impl Flood {
    /// Starts flooding on a thread of its own.
    pub fn start(options: FloodOptions) -> Result<Flood, AppError> {
        if options.rate == 0 {
            return Err(AppError::Invalid("a flood rate of 0 sends nothing".into()));
        }
        let socket = UdpSocket::bind((FLOOD_SOURCE, 0))
            .map_err(|e| AppError::io(format!("binding {FLOOD_SOURCE} for the flood"), e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let thread = thread::Builder::new()
            .name("cr-soak-flood".into())
            .spawn(move || flood(&socket, &options, &thread_stop))
            .map_err(|e| AppError::io("starting the flood thread", e))?;
        Ok(Flood { stop, thread })
    }

    /// Stops the flood.
    pub fn stop(self) -> Result<FloodStats, AppError> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| AppError::Invalid("the flood thread panicked".into()))?
    }
}

fn flood(
    socket: &UdpSocket,
    options: &FloodOptions,
    stop: &AtomicBool,
) -> Result<FloodStats, AppError> {
    let local = socket
        .local_addr()
        .map_err(|e| AppError::io("reading the flood's address", e))?;
    let mut config = forger_config()?;
    let mut rng = SystemRng::new();
    let mut stats = FloodStats::default();
    let mut copied: Option<Vec<u8>> = None;
    let mut next_refresh = Instant::now();
    let mut out = vec![0u8; 1500];
    let start = Instant::now();
    let mut sent: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next_refresh {
            copied = read_token(options).or(copied);
            next_refresh = now + TOKEN_REFRESH;
        }
        for _ in 0..STEP {
            let datagram = if sent.is_multiple_of(2) {
                stats.garbage += 1;
                garbage(&mut rng, &mut out)
            } else {
                // No token, a random one, a copied one, in turn.
                let kind = (sent / 2) % 3;
                let token = match kind {
                    0 => None,
                    1 => Some(random_bytes(&mut rng, 60)),
                    _ => copied.clone(),
                };
                stats.initials += 1;
                if kind == 2 && token.is_some() {
                    stats.copied_tokens += 1;
                }
                forged_initial(
                    &mut config,
                    &mut rng,
                    local,
                    options.server,
                    token,
                    &mut out,
                )
            };
            // A full socket buffer or an ICMP error: the flood goes on.
            let _ = socket.send_to(&out[..datagram], options.server);
            sent += 1;
        }
        // Keep to the rate: the next step is due when `sent` datagrams are.
        let due = start + Duration::from_secs_f64(sent as f64 / f64::from(options.rate));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
    }
    Ok(stats)
}

/// A client configuration as any QUIC client has, never checking the
/// server (it never gets that far).
fn forger_config() -> Result<quiche::Config, AppError> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION)?;
    config.set_application_protos(&[b"h3"])?;
    config.verify_peer(false);
    config.set_max_idle_timeout(30_000);
    Ok(config)
}

/// The first datagram of a client that will never answer: an Initial
/// padded to 1200 bytes, with `token` if any. Its length in `out`.
fn forged_initial(
    config: &mut quiche::Config,
    rng: &mut SystemRng,
    local: SocketAddr,
    server: SocketAddr,
    token: Option<Vec<u8>>,
    out: &mut [u8],
) -> usize {
    let cid = random_bytes(rng, quiche::MAX_CONN_ID_LEN);
    let scid = quiche::ConnectionId::from_ref(&cid);
    let Ok(mut conn) = quiche::connect(Some("localhost"), &scid, local, server, config) else {
        return garbage(rng, out);
    };
    if let Some(token) = token {
        let _ = conn.set_token(&token);
    }
    match conn.send(out) {
        Ok((len, _)) => len,
        Err(_) => garbage(rng, out),
    }
}

/// Random bytes of random length (1 to 1350); every fourth starts like a
/// long-header Initial. Their length in `out`.
fn garbage(rng: &mut SystemRng, out: &mut [u8]) -> usize {
    let mut head = [0u8; 2];
    let _ = rng.fill(&mut head);
    let len = (1 + usize::from(u16::from_le_bytes(head)) % 1350).min(out.len());
    let _ = rng.fill(&mut out[..len]);
    if head[0].is_multiple_of(4) {
        out[0] = 0xc0 | (out[0] & 0x0f);
    }
    len
}

fn random_bytes(rng: &mut SystemRng, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    let _ = rng.fill(&mut bytes);
    bytes
}

/// The newest token of the client's file, if it holds one.
fn read_token(options: &FloodOptions) -> Option<Vec<u8>> {
    let now = SystemTime::now();
    let path = options.token_file.as_ref()?;
    let (name, addr) = &options.token_for;
    TokenStore::load(path, StoreConfig::default(), now)
        .ok()?
        .take(name, *addr, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forged_initials_are_full_sized_long_headers() {
        let mut config = forger_config().expect("config");
        let mut rng = SystemRng::new();
        let mut out = vec![0u8; 1500];
        let local: SocketAddr = "127.0.0.1:1000".parse().expect("addr");
        let server: SocketAddr = "127.0.0.1:2000".parse().expect("addr");
        let len = forged_initial(
            &mut config,
            &mut rng,
            local,
            server,
            Some(vec![7; 40]),
            &mut out,
        );
        assert!(len >= 1200);
        let header = quiche::Header::from_slice(&mut out[..len], 16).expect("a header");
        assert_eq!(header.ty, quiche::Type::Initial);
        assert_eq!(header.token.as_deref(), Some(&[7u8; 40][..]));
        for _ in 0..100 {
            let len = garbage(&mut rng, &mut out);
            assert!((1..=1350).contains(&len));
        }
    }
}
