//! `cr-relay`: a userspace UDP link emulator for loopback experiments,
//! where kernel netem is not available (containers, CI).
//!
//! Clients send to the relay's address; the relay forwards to the server
//! through the "up" link and returns the server's datagrams through the
//! "down" link. Each client address gets a flow ([`FlowInfo`]): its own
//! upstream socket, so the server sees one distinct peer per client, as
//! through a NAT, and a thread reading it; a flow that carried nothing
//! either way for the idle timeout is closed, its socket and thread with it.
//!
//! This module owns the client-facing socket, the flows and the threads;
//! `link` emulates one direction of the path, `flow` one client's flow and
//! `stats` what the relay counts. As an instrument the relay must lose only
//! what the emulated path loses: its sockets' kernel buffers hold what the
//! path can hold, and the datagrams the kernel drops anyway are counted
//! apart from the link's own drops ([`RelayStats`]).

mod flow;
mod link;
mod stats;

use std::collections::hash_map::{Entry, HashMap};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub use flow::FlowInfo;
pub use link::{Bottleneck, Link, LinkConfig, LinkStats, LossRng};
pub use stats::RelayStats;

use crate::error::AppError;
use crate::net::{
    size_buffers, BufferSizes, DropCountingReceiver, RECV_BUFFER, SOCKET_BUFFER_FLOOR,
};
use flow::{Flow, FlowContext};
use stats::Counters;

/// How often blocked threads look at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Most clients relayed at once; datagrams from further clients are dropped.
pub const MAX_FLOWS: usize = 256;

/// How long a flow may carry nothing before it is closed, unless told
/// otherwise: longer than the QUIC idle timeouts cr-server and cr-client
/// use (30 s), so a connection's flow outlives the connection.
pub const DEFAULT_FLOW_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// What a relay needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RelayOptions {
    /// Where clients send.
    pub listen: SocketAddr,
    /// Where the server listens.
    pub server: SocketAddr,
    /// Client to server.
    pub up: LinkConfig,
    /// Server to client.
    pub down: LinkConfig,
    /// The queue discipline, policer and schedule of both directions.
    pub bottleneck: Bottleneck,
    /// Seed of the random losses.
    pub seed: u64,
    /// A flow that carried no datagram either way for this long is closed
    /// (more than zero; [`DEFAULT_FLOW_IDLE_TIMEOUT`] unless testing).
    pub flow_idle_timeout: Duration,
}

impl RelayOptions {
    /// A relay from `listen` to `server` with the same `link` both ways, a
    /// drop-tail queue, no policer or schedule, losses seeded with 1 and flows closed after
    /// [`DEFAULT_FLOW_IDLE_TIMEOUT`].
    pub fn symmetric(listen: SocketAddr, server: SocketAddr, link: LinkConfig) -> RelayOptions {
        RelayOptions {
            listen,
            server,
            up: link,
            down: link,
            bottleneck: Bottleneck::default(),
            seed: 1,
            flow_idle_timeout: DEFAULT_FLOW_IDLE_TIMEOUT,
        }
    }

    /// Kernel buffer to ask for each of the relay's sockets: what the path
    /// holds at once in either direction, its queue and a round trip at its
    /// rate (the most a sender's window puts in flight, and so the largest
    /// burst), and never less than [`SOCKET_BUFFER_FLOOR`].
    pub fn socket_buffer(&self) -> usize {
        let rtt = self.up.delay + self.down.delay;
        let path = |link: &LinkConfig| link.queue_bytes.saturating_add(link.bytes_in(rtt));
        let bytes = path(&self.up).max(path(&self.down));
        usize::try_from(bytes)
            .unwrap_or(usize::MAX)
            .max(SOCKET_BUFFER_FLOOR)
    }
}

/// A bound relay, ready to run.
pub struct Relay {
    options: RelayOptions,
    socket: Arc<UdpSocket>,
    local: SocketAddr,
    buffers: BufferSizes,
    up: Arc<Link>,
    down: Arc<Link>,
    flows: Mutex<HashMap<SocketAddr, Flow>>,
    counters: Arc<Counters>,
}

impl Relay {
    /// Binds the client-facing socket and sizes its buffers.
    pub fn bind(options: RelayOptions) -> Result<Relay, AppError> {
        if options.flow_idle_timeout.is_zero() {
            return Err(AppError::Invalid(
                "the flow idle timeout must be more than zero".into(),
            ));
        }
        let socket = UdpSocket::bind(options.listen)
            .map_err(|e| AppError::io(format!("binding {}", options.listen), e))?;
        socket
            .set_read_timeout(Some(STOP_CHECK))
            .map_err(|e| AppError::io("setting a socket timeout", e))?;
        let buffers = size_buffers(&socket, options.socket_buffer());
        let local = socket
            .local_addr()
            .map_err(|e| AppError::io("reading the bound address", e))?;
        Ok(Relay {
            up: Arc::new(Link::new(options.up, &options.bottleneck, options.seed)),
            // A different stream of losses for the other direction.
            down: Arc::new(Link::new(
                options.down,
                &options.bottleneck,
                options.seed ^ 0x5eed_d0e5,
            )),
            options,
            socket: Arc::new(socket),
            local,
            buffers,
            flows: Mutex::new(HashMap::new()),
            counters: Arc::new(Counters::default()),
        })
    }

    /// The address clients send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The kernel buffers the client-facing socket was granted (the
    /// upstream sockets ask for the same size).
    pub fn buffers(&self) -> BufferSizes {
        self.buffers
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
        threads.extend(self.lock_flows().drain().map(|(_, flow)| flow.close()));
        for thread in threads {
            let _ = thread.join();
        }
        result
    }

    /// Receives from clients, opening a flow for each new client and
    /// closing idle ones. Closed flows' threads go to `threads`, to join.
    fn accept_loop(
        &self,
        stop: &Arc<AtomicBool>,
        threads: &mut Vec<JoinHandle<()>>,
    ) -> Result<(), AppError> {
        let mut receiver = DropCountingReceiver::new(Arc::clone(&self.socket));
        self.counters.kernel_drops_up.watch(&receiver);
        let mut buf = vec![0u8; RECV_BUFFER];
        let sweep_every = (self.options.flow_idle_timeout / 4).min(Duration::from_secs(1));
        let mut next_sweep = Instant::now() + sweep_every;
        while !stop.load(Ordering::Relaxed) {
            // A timeout, or an ICMP error from an earlier send, to ignore.
            if let Ok((len, client, dropped)) = receiver.recv_from(&mut buf) {
                self.counters.kernel_drops_up.add(dropped);
                self.forward_up(client, &buf[..len], stop)?;
            }
            let now = Instant::now();
            if now >= next_sweep {
                self.close_idle_flows(now, threads);
                next_sweep = now + sweep_every;
            }
        }
        Ok(())
    }

    /// Puts a client's datagram on the up link, from its flow's socket.
    fn forward_up(
        &self,
        client: SocketAddr,
        datagram: &[u8],
        stop: &Arc<AtomicBool>,
    ) -> Result<(), AppError> {
        let mut flows = self.lock_flows();
        let full = flows.len() >= MAX_FLOWS;
        let flow = match flows.entry(client) {
            Entry::Occupied(open) => open.into_mut(),
            Entry::Vacant(_) if full => {
                self.counters.flow_limit_drop();
                return Ok(());
            }
            Entry::Vacant(new) => {
                if self.options.bottleneck.schedule_per_flow {
                    let now = Instant::now();
                    self.up.restart_schedule(now);
                    self.down.restart_schedule(now);
                }
                new.insert(Flow::open(client, self.flow_context(stop))?)
            }
        };
        flow.touch();
        let upstream = Arc::clone(flow.upstream());
        drop(flows);
        self.up.send(
            Instant::now(),
            client,
            datagram,
            &upstream,
            self.options.server,
        );
        Ok(())
    }

    fn flow_context(&self, stop: &Arc<AtomicBool>) -> FlowContext {
        FlowContext {
            server: self.options.server,
            socket_buffer: self.options.socket_buffer(),
            down: Arc::clone(&self.down),
            back: Arc::clone(&self.socket),
            stop: Arc::clone(stop),
            counters: Arc::clone(&self.counters),
        }
    }

    /// Closes the flows idle for the timeout, moving their threads to
    /// `threads`, and forgets the threads that have ended.
    fn close_idle_flows(&self, now: Instant, threads: &mut Vec<JoinHandle<()>>) {
        let timeout = self.options.flow_idle_timeout;
        let idle: Vec<Flow> = self
            .lock_flows()
            .extract_if(|_, flow| flow.idle_for(now) >= timeout)
            .map(|(_, flow)| flow)
            .collect();
        for flow in idle {
            self.counters.flow_expired();
            threads.push(flow.close());
        }
        // Ended threads need no join; the links' two never end here.
        threads.retain(|thread| !thread.is_finished());
    }

    fn lock_flows(&self) -> MutexGuard<'_, HashMap<SocketAddr, Flow>> {
        // A panicking holder leaves a consistent map.
        self.flows.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the relay did so far.
    pub fn stats(&self) -> RelayStats {
        self.counters.snapshot(self.up.stats(), self.down.stats())
    }

    /// Sets the random loss of both directions from now on (a loss burst);
    /// `None` goes back to the configured losses.
    pub fn set_loss(&self, loss: Option<f64>) {
        for link in [&self.up, &self.down] {
            match loss {
                Some(loss) => link.set_loss(loss),
                None => link.reset_loss(),
            }
        }
    }

    /// The flows open now.
    pub fn flows(&self) -> Vec<FlowInfo> {
        let now = Instant::now();
        self.lock_flows()
            .iter()
            .map(|(client, flow)| flow.info(*client, now))
            .collect()
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

    /// The kernel buffers the client-facing socket was granted.
    pub fn buffers(&self) -> BufferSizes {
        self.relay.buffers()
    }

    /// What the relay did so far.
    pub fn stats(&self) -> RelayStats {
        self.relay.stats()
    }

    /// The flows open now.
    pub fn flows(&self) -> Vec<FlowInfo> {
        self.relay.flows()
    }

    /// Sets the random loss of both directions from now on; `None` goes
    /// back to the configured losses ([`Relay::set_loss`]).
    pub fn set_loss(&self, loss: Option<f64>) {
        self.relay.set_loss(loss);
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
