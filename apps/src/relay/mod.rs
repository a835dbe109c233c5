//! `cr-relay`: a userspace UDP link emulator for loopback experiments,
//! where kernel netem is not available (containers, CI).
//!
//! Clients send to the relay's address; the relay forwards to the server
//! through the "up" link and returns the server's datagrams through the
//! "down" link. Each client address gets its own upstream socket, so the
//! server sees one distinct peer per client, as through a NAT.

mod link;

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub use link::{Link, LinkConfig, LinkStats, LossRng};

use crate::error::AppError;
use crate::net::RECV_BUFFER;

/// How often blocked threads look at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Most clients relayed at once; datagrams from further clients are dropped.
const MAX_FLOWS: usize = 256;

/// What a relay needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelayOptions {
    /// Where clients send.
    pub listen: SocketAddr,
    /// Where the server listens.
    pub server: SocketAddr,
    /// Client to server.
    pub up: LinkConfig,
    /// Server to client.
    pub down: LinkConfig,
    /// Seed of the random losses.
    pub seed: u64,
}

/// A bound relay, ready to run.
pub struct Relay {
    options: RelayOptions,
    socket: Arc<UdpSocket>,
    local: SocketAddr,
    up: Arc<Link>,
    down: Arc<Link>,
}

impl Relay {
    /// Binds the client-facing socket.
    pub fn bind(options: RelayOptions) -> Result<Relay, AppError> {
        let socket = UdpSocket::bind(options.listen)
            .map_err(|e| AppError::io(format!("binding {}", options.listen), e))?;
        socket
            .set_read_timeout(Some(STOP_CHECK))
            .map_err(|e| AppError::io("setting a socket timeout", e))?;
        let local = socket
            .local_addr()
            .map_err(|e| AppError::io("reading the bound address", e))?;
        Ok(Relay {
            up: Arc::new(Link::new(options.up, options.seed)),
            // A different stream of losses for the other direction.
            down: Arc::new(Link::new(options.down, options.seed ^ 0x5eed_d0e5)),
            options,
            socket: Arc::new(socket),
            local,
        })
    }

    /// The address clients send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Relays until `stop` is set.
    pub fn run(&self, stop: &Arc<AtomicBool>) -> Result<(), AppError> {
        let mut threads = Vec::new();
        for link in [&self.up, &self.down] {
            let (link, stop) = (Arc::clone(link), Arc::clone(stop));
            threads.push(spawn("cr-relay-link", move || link.deliver(&stop))?);
        }
        let result = self.accept_loop(stop, &mut threads);
        stop.store(true, Ordering::Relaxed);
        for thread in threads {
            let _ = thread.join();
        }
        result
    }

    /// Receives from clients, opening an upstream socket (and its return
    /// thread) for each new client.
    fn accept_loop(
        &self,
        stop: &Arc<AtomicBool>,
        threads: &mut Vec<JoinHandle<()>>,
    ) -> Result<(), AppError> {
        let mut flows: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
        let mut buf = vec![0u8; RECV_BUFFER];
        while !stop.load(Ordering::Relaxed) {
            let (len, client) = match self.socket.recv_from(&mut buf) {
                Ok(received) => received,
                Err(_) => continue, // timeout, or an ICMP error to ignore
            };
            let upstream = match flows.get(&client) {
                Some(upstream) => Arc::clone(upstream),
                None if flows.len() >= MAX_FLOWS => continue,
                None => {
                    let upstream = self.open_flow(client, stop, threads)?;
                    flows.insert(client, Arc::clone(&upstream));
                    upstream
                }
            };
            self.up
                .send(Instant::now(), &buf[..len], &upstream, self.options.server);
        }
        Ok(())
    }

    fn open_flow(
        &self,
        client: SocketAddr,
        stop: &Arc<AtomicBool>,
        threads: &mut Vec<JoinHandle<()>>,
    ) -> Result<Arc<UdpSocket>, AppError> {
        let any: SocketAddr = if self.options.server.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let upstream = UdpSocket::bind(any)
            .and_then(|s| s.set_read_timeout(Some(STOP_CHECK)).map(|()| s))
            .map_err(|e| AppError::io("opening an upstream socket", e))?;
        let upstream = Arc::new(upstream);
        let (reader, down, back, stop) = (
            Arc::clone(&upstream),
            Arc::clone(&self.down),
            Arc::clone(&self.socket),
            Arc::clone(stop),
        );
        let server = self.options.server;
        threads.push(spawn("cr-relay-flow", move || {
            let mut buf = vec![0u8; RECV_BUFFER];
            while !stop.load(Ordering::Relaxed) {
                if let Ok((len, from)) = reader.recv_from(&mut buf) {
                    if from == server {
                        down.send(Instant::now(), &buf[..len], &back, client);
                    }
                }
            }
        })?);
        Ok(upstream)
    }

    /// Datagrams forwarded and dropped so far: (up, down).
    pub fn stats(&self) -> (LinkStats, LinkStats) {
        (self.up.stats(), self.down.stats())
    }
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, AppError> {
    thread::Builder::new()
        .name(name.into())
        .spawn(body)
        .map_err(|e| AppError::io("starting a relay thread", e))
}

/// A relay running on its own threads; dropping the handle stops it.
pub struct RelayHandle {
    relay: Arc<Relay>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), AppError>>>,
}

impl RelayHandle {
    /// Runs `relay` in the background.
    pub fn spawn(relay: Relay) -> Result<RelayHandle, AppError> {
        let relay = Arc::new(relay);
        let stop = Arc::new(AtomicBool::new(false));
        let (runner, thread_stop) = (Arc::clone(&relay), Arc::clone(&stop));
        let thread = thread::Builder::new()
            .name("cr-relay".into())
            .spawn(move || runner.run(&thread_stop))
            .map_err(|e| AppError::io("starting the relay thread", e))?;
        Ok(RelayHandle {
            relay,
            stop,
            thread: Some(thread),
        })
    }

    /// The address clients send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.relay.local_addr()
    }

    /// Datagrams forwarded and dropped so far: (up, down).
    pub fn stats(&self) -> (LinkStats, LinkStats) {
        self.relay.stats()
    }
}

impl Drop for RelayHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
