//! The simulated world: flows of client/server connections joined by the
//! two directions of one bottleneck, and the virtual-time event loop.
//!
//! Time jumps from one happening to the next: a datagram released by a
//! pacer (`SendInfo.at`), a datagram arriving, or a connection timer
//! (`timeout_instant()`). Events at the same instant run in the order they
//! were scheduled, so a run is a pure function of the scenario and seed.

use std::cmp::Ordering;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::HashMap;
use std::net::IpAddr;
use std::net::Ipv4Addr;
use std::net::SocketAddr;
use std::time::Duration;

use cr_serve::app::{ClientApp, Progress};
use cr_serve::ConnectionReport as ServerReport;
use cr_serve::Protocol;

use crate::clock::Now;
use crate::clock::VirtualClock;
use crate::endpoint::ClientConnection;
use crate::endpoint::EndpointSettings;
use crate::endpoint::ServerConnection;
use crate::endpoint::SimClient;
use crate::endpoint::SimServer;
use crate::endpoint::TokenCapacity;
use crate::endpoint::TokenConfig;
use crate::endpoint::SERVER_NAME;
use crate::error::SimError;
use crate::link::Fate;
use crate::link::Link;
use crate::link::SimTime;
use crate::link::Ticket;
use crate::link::MAX_DATAGRAM;
use crate::packing::DatagramSizes;
use crate::qlog_capture::Keep;
use crate::qlog_capture::QlogBuffer;

/// Application error code the client closes with once it has everything
/// (H3_NO_ERROR; also used for the raw-stream application).
const CLOSE_NO_ERROR: u64 = 0x100;

/// BoringSSL's `ssl_early_data_accepted`, what
/// `quiche::Connection::early_data_reason` says of a first flight whose
/// early data TLS accepted.
const EARLY_DATA_ACCEPTED: u32 = 2;

/// Steps allowed at one instant before the loop is declared stuck: a
/// timer that fires without moving forward would otherwise spin forever.
const MAX_STEPS_AT_ONE_INSTANT: u32 = 100_000;

/// Servers added with [`World::add_server`] are numbered from here (for
/// their connection IDs and keys), above any flow's number.
const SHARED_SERVER_NUMBERS: u64 = 1 << 20;

/// Which way a datagram goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Direction {
    ToServer,
    ToClient,
}

/// Something scheduled to happen to a datagram.
#[derive(Debug)]
enum Happening {
    /// The sender's pacer lets it onto the bottleneck now.
    Release,
    /// It reaches the receiving endpoint now.
    Arrival,
    /// The sending endpoint's pacer allows its next datagram (no bytes).
    Wake,
    /// The direction's serialiser falls idle with fq_codel holding
    /// datagrams: it picks the next (no bytes, no flow).
    Dequeue,
}

/// A datagram of one connection of one flow, scheduled at `at`.
#[derive(Debug)]
struct Event {
    at: SimTime,
    seq: u64,
    happening: Happening,
    flow: usize,
    generation: u64,
    direction: Direction,
    bytes: Vec<u8>,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Event {}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// A datagram the server sent, as it left for the bottleneck: what a test
/// of the server's pacing reads (kept for flows with full traces only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// When it entered the bottleneck: its release time (`SendInfo.at`),
    /// or when it was sent if that lies in the past.
    pub at: SimTime,
    /// Its size (UDP payload).
    pub bytes: usize,
    /// Careful Resume's phase when the server sent it (before any change
    /// the packet caused), when the connection resumes.
    pub phase: Option<quiche::careful_resume::Phase>,
    /// The server's smoothed RTT when it sent it.
    pub rtt: Duration,
}

/// The bottleneck's two directions, the event queue and the clock: what
/// every connection shares.
struct Network {
    clock: VirtualClock,
    now: Now,
    to_server: Link,
    to_client: Link,
    events: BinaryHeap<Reverse<Event>>,
    seq: u64,
    /// The earliest pacer wake-up queued for each sender (flow, connection,
    /// direction): one is enough, as it sends what is due and queues the
    /// next. Without this, every ACK that finds the pacer waiting queued
    /// another wake-up for the same moment, each of those queued one more,
    /// and a paced sender (BBR2) drowned the queue in copies.
    wakes: HashMap<(usize, u64, Direction), SimTime>,
    /// Datagrams waiting in a direction's fq_codel, by ticket.
    parked: HashMap<(Direction, Ticket), Event>,
    /// The dequeue queued for each direction.
    dequeues: HashMap<Direction, SimTime>,
}

impl Network {
    fn link(&mut self, direction: Direction) -> &mut Link {
        match direction {
            Direction::ToServer => &mut self.to_server,
            Direction::ToClient => &mut self.to_client,
        }
    }

    fn schedule(&mut self, mut event: Event) {
        self.seq += 1;
        event.seq = self.seq;
        self.events.push(Reverse(event));
    }

    /// Puts a datagram on the bottleneck now and schedules its arrival,
    /// or parks it while fq_codel holds it.
    fn enter_link(&mut self, event: Event) {
        // fq_codel's flows: one per connection.
        let flow = (event.flow as u64) << 32 | (event.generation & 0xffff_ffff);
        let (direction, now) = (event.direction, self.now.sim);
        let fate = self.link(direction).offer(now, flow, event.bytes.len());
        match fate {
            Fate::Queued(ticket) => {
                self.parked.insert((direction, ticket), event);
                self.queue_dequeue(direction);
            }
            fate => self.follow(event, fate),
        }
    }

    /// Schedules the arrival of a datagram whose fate the link decided.
    fn follow(&mut self, mut event: Event, fate: Fate) {
        if let Fate::Arrives(at) = fate {
            event.at = at;
            event.happening = Happening::Arrival;
            self.schedule(event);
        }
    }

    /// Lets `direction`'s fq_codel pick what it serialises now, and queues
    /// its next pick.
    fn dequeue(&mut self, direction: Direction) {
        if self.dequeues.get(&direction) == Some(&self.now.sim) {
            self.dequeues.remove(&direction);
        }
        let now = self.now.sim;
        for (ticket, fate) in self.link(direction).dequeue(now) {
            if let Some(event) = self.parked.remove(&(direction, ticket)) {
                self.follow(event, fate);
            }
        }
        self.queue_dequeue(direction);
    }

    /// Queues `direction`'s next dequeue, unless one is queued by then.
    fn queue_dequeue(&mut self, direction: Direction) {
        let Some(at) = self.link(direction).next_dequeue() else {
            return;
        };
        let at = at.max(self.now.sim);
        if self
            .dequeues
            .get(&direction)
            .is_some_and(|&queued| queued <= at)
        {
            return;
        }
        self.dequeues.insert(direction, at);
        self.schedule(Event {
            at,
            seq: 0,
            happening: Happening::Dequeue,
            flow: 0,
            generation: 0,
            direction,
            bytes: Vec::new(),
        });
    }

    /// Sends what `conn` has to send: datagrams due now enter the link at
    /// once, paced ones when their release time (`SendInfo.at`) comes.
    /// `sizes`, when given, counts them; `departures`, when given, records
    /// each.
    ///
    /// As quiche's own event loops do, the endpoint only asks quiche for a
    /// datagram while the pacer's next release time lies within
    /// `max_release_into_future()`; otherwise it is woken up at that time.
    /// Without this a paced sender would hand over its whole window at
    /// once, and quiche would take the datagrams as sent at that moment.
    fn flush(
        &mut self,
        conn: &mut quiche::Connection,
        flow: usize,
        generation: u64,
        direction: Direction,
        mut sizes: Option<&mut DatagramSizes>,
        mut departures: Option<&mut Vec<Departure>>,
    ) -> Result<usize, SimError> {
        let mut buf = [0u8; MAX_DATAGRAM];
        let mut sent = 0;
        loop {
            if let Some(release) = conn
                .get_next_release_time()
                .and_then(|decision| decision.time(self.now.instant))
            {
                let horizon = self.now.instant + conn.max_release_into_future();
                if release > horizon {
                    let wake = self
                        .clock
                        .sim_time(release - conn.max_release_into_future())
                        .max(self.now.sim);
                    let sender = (flow, generation, direction);
                    if self
                        .wakes
                        .get(&sender)
                        .is_some_and(|&queued| queued <= wake)
                    {
                        return Ok(sent);
                    }
                    self.wakes.insert(sender, wake);
                    self.schedule(Event {
                        at: wake,
                        seq: 0,
                        happening: Happening::Wake,
                        flow,
                        generation,
                        direction,
                        bytes: Vec::new(),
                    });
                    return Ok(sent);
                }
            }
            let before = departures.is_some().then(|| {
                let phase = conn.careful_resume().map(|r| r.phase());
                let rtt = conn.path_stats().next().map_or(Duration::ZERO, |p| p.rtt);
                (phase, rtt)
            });
            let (len, info) = match conn.send(&mut buf) {
                Ok(sent) => sent,
                Err(quiche::Error::Done) => return Ok(sent),
                Err(e) => return Err(e.into()),
            };
            sent += 1;
            if let Some(sizes) = sizes.as_deref_mut() {
                sizes.add(len);
            }
            let release = self.clock.sim_time(info.at).max(self.now.sim);
            if let (Some(departures), Some((phase, rtt))) = (departures.as_deref_mut(), before) {
                departures.push(Departure {
                    at: release,
                    bytes: len,
                    phase,
                    rtt,
                });
            }
            let event = Event {
                at: release,
                seq: 0,
                happening: Happening::Release,
                flow,
                generation,
                direction,
                bytes: buf[..len].to_vec(),
            };
            if release == self.now.sim {
                self.enter_link(event);
            } else {
                self.schedule(event);
            }
        }
    }
}

/// One connection between a flow's client and server, and its applications.
pub struct ConnectionPair {
    generation: u64,
    client_addr: SocketAddr,
    client: ClientConnection,
    client_app: ClientApp<SimTime>,
    server: Option<ServerConnection>,
    started_at: SimTime,
    first_packet_at: Option<SimTime>,
    server_created_at: Option<SimTime>,
    closing: bool,
    /// The saved set of the token the client presented.
    token_presented: Option<TokenCapacity>,
    /// The sizes of the datagrams the server sent.
    server_datagrams: DatagramSizes,
    /// The server's datagrams as they left, when the flow keeps full traces.
    server_departures: Option<Vec<Departure>>,
    /// Bytes (UDP payload) that reached the client over the bottleneck by
    /// each arrival, when the connection is sampled.
    delivered: Option<Vec<(SimTime, u64)>>,
}

impl ConnectionPair {
    /// The client's application.
    pub fn client_app(&self) -> &ClientApp<SimTime> {
        &self.client_app
    }

    /// When sampled ([`World::start_connection`]): the bytes of the
    /// server's datagrams that reached the client by each arrival, what the
    /// bottleneck carried for this connection (retransmissions included,
    /// and without the head-of-line waits the application sees).
    pub fn delivered(&self) -> Option<&[(SimTime, u64)]> {
        self.delivered.as_deref()
    }
}

/// What is left of a connection once it is retired from its flow.
#[derive(Debug)]
pub struct ConnectionRecord {
    /// When the connection was opened.
    pub started_at: SimTime,
    /// When the client's first datagram entered the link.
    pub first_packet_at: Option<SimTime>,
    /// When the server created its side (the client's first Initial arrived).
    pub server_created_at: Option<SimTime>,
    /// The download's progress.
    pub progress: Progress<SimTime>,
    /// The server's counters, when it has a side.
    pub server_stats: Option<quiche::Stats>,
    /// The server's report of the connection, as `cr-server` logs it.
    pub server_report: Option<ServerReport>,
    /// The sizes of the datagrams the server sent.
    pub server_datagrams: DatagramSizes,
    /// The server's datagrams as they left (empty unless the flow keeps
    /// full traces).
    pub server_departures: Vec<Departure>,
    /// The server's qlog (its Careful Resume events only, unless the flow
    /// keeps full traces).
    pub server_qlog: Option<QlogBuffer>,
    /// The client's qlog, when kept.
    pub client_qlog: Option<QlogBuffer>,
    /// The saved set of the token the client presented.
    pub token_presented: Option<TokenCapacity>,
    /// The saved set of the token the client would present next, once the
    /// connection is over.
    pub token_left: Option<TokenCapacity>,
    /// Whether the server's TLS accepted the client's early data (0-RTT):
    /// what tells a 0-RTT connection from one that fell back to 1-RTT (a
    /// ticket too old, or none).
    pub early_data_accepted: bool,
    /// How many times the server's loss detection found persistent
    /// congestion (RFC 9002, 7.6).
    pub server_persistent_congestion: usize,
    /// How many times the server's probe timeout fired.
    pub server_probe_timeouts: usize,
    /// How and at what window the server's controller left its first slow
    /// start (or BBR2's Startup), if it did.
    pub server_startup_exit: Option<quiche::StartupExit>,
}

/// A client and a server that run connections one after another.
pub struct Flow {
    client: SimClient,
    /// The number of its server in [`World`]'s servers.
    server: usize,
    app: Protocol,
    client_ip: IpAddr,
    server_addr: SocketAddr,
    /// Whether both endpoints keep complete qlog traces; otherwise only the
    /// server keeps its Careful Resume events.
    full_traces: bool,
    generations: u64,
    pair: Option<ConnectionPair>,
}

impl Flow {
    /// The connection running now, if any.
    pub fn pair(&self) -> Option<&ConnectionPair> {
        self.pair.as_ref()
    }

    /// Whether the current connection's download is complete.
    pub fn is_done(&self) -> bool {
        self.pair.as_ref().is_some_and(|p| p.client_app.is_done())
    }
}

/// Flows over a shared bottleneck, in virtual time.
///
/// Each flow is one client; its server is its own ([`World::add_flow`]) or
/// one that several flows share ([`World::add_server`],
/// [`World::add_client`]), as a crowd of clients shares one `cr-server`
/// process, its token keys and its saved-set guard.
pub struct World {
    network: Network,
    servers: Vec<SimServer>,
    flows: Vec<Flow>,
}

impl World {
    /// A world with the two directions of the bottleneck.
    pub fn new(clock: VirtualClock, to_server: Link, to_client: Link) -> World {
        let now = clock.set(Duration::ZERO);
        World {
            network: Network {
                clock,
                now,
                to_server,
                to_client,
                events: BinaryHeap::new(),
                seq: 0,
                wakes: HashMap::new(),
                parked: HashMap::new(),
                dequeues: HashMap::new(),
            },
            servers: Vec::new(),
            flows: Vec::new(),
        }
    }

    /// The current virtual time.
    pub fn now(&self) -> SimTime {
        self.network.now.sim
    }

    /// The client-to-server direction of the bottleneck.
    pub fn to_server(&mut self) -> &mut Link {
        &mut self.network.to_server
    }

    /// The server-to-client direction of the bottleneck.
    pub fn to_client(&mut self) -> &mut Link {
        &mut self.network.to_client
    }

    /// Both directions of the bottleneck.
    pub fn links(&mut self) -> [&mut Link; 2] {
        [&mut self.network.to_server, &mut self.network.to_client]
    }

    /// Adds a flow with a server of its own; returns its number. With
    /// `full_traces` both endpoints of its connections keep complete qlog
    /// traces (for files and plots); without, the server keeps only its
    /// Careful Resume events, all a report reads.
    pub fn add_flow(
        &mut self,
        settings: EndpointSettings,
        full_traces: bool,
    ) -> Result<usize, SimError> {
        let index = self.flows.len();
        let flow = index as u64;
        let host = u8::try_from(index + 1).unwrap_or(u8::MAX);
        let server = self.servers.len();
        self.servers.push(SimServer::new(settings, flow)?);
        self.flows.push(Flow {
            client: SimClient::new(settings, flow)?,
            server,
            app: settings.app,
            client_ip: IpAddr::V4(Ipv4Addr::new(192, 0, 2, host)),
            server_addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(198, 51, 100, host)), 443),
            full_traces,
            generations: 0,
            pair: None,
        });
        Ok(index)
    }

    /// Adds a server that clients added with [`World::add_client`] share
    /// (one token key, one saved-set guard), minting tokens as `tokens`
    /// says; returns its number. Its address is 203.0.113.N:443.
    pub fn add_server(
        &mut self,
        settings: EndpointSettings,
        tokens: TokenConfig,
    ) -> Result<usize, SimError> {
        let index = self.servers.len();
        // Numbers above any flow's keep connection IDs and keys apart
        // from those of the flows' own servers.
        let number = SHARED_SERVER_NUMBERS + index as u64;
        self.servers
            .push(SimServer::with_tokens(settings, number, tokens)?);
        Ok(index)
    }

    /// Adds a flow whose client, at `client_ip`, connects to the shared
    /// server `server` ([`World::add_server`]); returns its number.
    pub fn add_client(
        &mut self,
        settings: EndpointSettings,
        server: usize,
        client_ip: IpAddr,
        full_traces: bool,
    ) -> Result<usize, SimError> {
        if server >= self.servers.len() {
            return Err(SimError::Scenario(format!("no server {server}")));
        }
        let index = self.flows.len();
        let host = u8::try_from(server + 1).unwrap_or(u8::MAX);
        self.flows.push(Flow {
            client: SimClient::new(settings, index as u64)?,
            server,
            app: settings.app,
            client_ip,
            server_addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(203, 0, 113, host)), 443),
            full_traces,
            generations: 0,
            pair: None,
        });
        Ok(index)
    }

    /// Every server's metrics, in the order they were added.
    pub fn server_metrics(&self) -> Vec<cr_endpoint::MetricsSnapshot> {
        self.servers.iter().map(SimServer::metrics).collect()
    }

    /// The flow numbered `flow`.
    pub fn flow(&self, flow: usize) -> Option<&Flow> {
        self.flows.get(flow)
    }

    /// Opens a new connection on `flow` now, fetching `size` bytes;
    /// `sample` keeps its progress over time. A running one is retired.
    pub fn start_connection(
        &mut self,
        flow: usize,
        size: u64,
        sample: bool,
    ) -> Result<Option<ConnectionRecord>, SimError> {
        let previous = self.retire_connection(flow);
        let now = self.network.now;
        let f = self
            .flows
            .get_mut(flow)
            .ok_or_else(|| SimError::Scenario(format!("no flow {flow}")))?;
        let generation = f.generations;
        f.generations += 1;
        let port = 40_000u16.wrapping_add(u16::try_from(generation).unwrap_or(0));
        let client_addr = SocketAddr::new(f.client_ip, port);
        let token_presented = f.client.saved_set_to_present(f.server_addr);
        let client = f
            .client
            .connect(client_addr, f.server_addr, f.full_traces, &now)?;
        let client_app = ClientApp::new(f.app, size, SERVER_NAME);
        let client_app = if sample {
            client_app.sampled()
        } else {
            client_app
        };
        f.pair = Some(ConnectionPair {
            generation,
            client_addr,
            client,
            client_app,
            server: None,
            started_at: now.sim,
            first_packet_at: None,
            server_created_at: None,
            closing: false,
            token_presented,
            server_datagrams: DatagramSizes::default(),
            server_departures: f.full_traces.then(Vec::new),
            delivered: sample.then(Vec::new),
        });
        self.service_client(flow)?;
        Ok(previous)
    }

    /// Ends `flow`'s current connection where it stands and returns its
    /// record; datagrams still in flight for it are dropped on arrival.
    pub fn retire_connection(&mut self, flow: usize) -> Option<ConnectionRecord> {
        let f = self.flows.get_mut(flow)?;
        let mut pair = f.pair.take()?;
        if let Some(server) = pair.server.as_mut() {
            self.servers[f.server].retire(server, &self.network.now);
        }
        self.network
            .wakes
            .retain(|&(f, generation, _), _| (f, generation) != (flow, pair.generation));
        let token_left = f.client.next_saved_set(f.server_addr);
        let server_stats = pair.server.as_ref().map(|s| s.conn_ref().stats());
        let server_path_count = |count: fn(&quiche::PathStats) -> usize| {
            pair.server
                .as_ref()
                .map_or(0, |s| s.conn_ref().path_stats().map(|p| count(&p)).sum())
        };
        let server_persistent_congestion = server_path_count(|p| p.persistent_congestion_count);
        let server_probe_timeouts = server_path_count(|p| p.total_pto_count);
        let server_startup_exit = pair
            .server
            .as_ref()
            .and_then(|s| s.conn_ref().path_stats().next())
            .and_then(|p| p.startup_exit);
        let now = self.network.now.instant;
        let server_report = pair.server.as_ref().map(|s| s.session().report(now));
        let early_data_accepted = pair
            .server
            .as_ref()
            .is_some_and(|s| s.conn_ref().early_data_reason() == EARLY_DATA_ACCEPTED);
        let server_qlog = pair.server.as_ref().map(|s| s.qlog().clone());
        let client_qlog = pair.client.qlog().cloned();
        // Dropping the connections flushes their qlog writers.
        let progress = pair.client_app.progress().clone();
        drop(pair.server);
        drop(pair.client);
        Some(ConnectionRecord {
            started_at: pair.started_at,
            first_packet_at: pair.first_packet_at,
            server_created_at: pair.server_created_at,
            progress,
            server_stats,
            server_report,
            server_datagrams: pair.server_datagrams,
            server_departures: pair.server_departures.unwrap_or_default(),
            server_qlog,
            client_qlog,
            token_presented: pair.token_presented,
            token_left,
            early_data_accepted,
            server_persistent_congestion,
            server_probe_timeouts,
            server_startup_exit,
        })
    }

    /// Runs until `done` holds, failing if nothing is left to happen or
    /// virtual time passes `deadline`.
    pub fn run_until(
        &mut self,
        deadline: SimTime,
        mut done: impl FnMut(&World) -> bool,
    ) -> Result<(), SimError> {
        let mut steps_here = 0;
        loop {
            if done(self) {
                return Ok(());
            }
            let Some(next) = self.next_time() else {
                return Err(SimError::Stalled(format!(
                    "no datagram or timer left at {:.3} s",
                    self.now().as_secs_f64()
                )));
            };
            if next > deadline {
                return Err(SimError::TimedOut(format!(
                    "not finished after {:.1} s of virtual time",
                    deadline.as_secs_f64()
                )));
            }
            steps_here = if next == self.now() {
                steps_here + 1
            } else {
                0
            };
            if steps_here > MAX_STEPS_AT_ONE_INSTANT {
                return Err(SimError::Stalled(format!(
                    "time does not advance at {:.6} s",
                    next.as_secs_f64()
                )));
            }
            self.step(next)?;
        }
    }

    /// Runs until `done` holds (true) or until nothing is left to happen
    /// before `until` (false; the clock then stands at `until`).
    pub fn run_until_or(
        &mut self,
        until: SimTime,
        mut done: impl FnMut(&World) -> bool,
    ) -> Result<bool, SimError> {
        let mut steps_here = 0;
        loop {
            if done(self) {
                return Ok(true);
            }
            let Some(next) = self.next_time().filter(|&t| t <= until) else {
                if until > self.now() {
                    self.network.now = self.network.clock.set(until);
                }
                return Ok(false);
            };
            steps_here = if next == self.now() {
                steps_here + 1
            } else {
                0
            };
            if steps_here > MAX_STEPS_AT_ONE_INSTANT {
                return Err(SimError::Stalled(format!(
                    "time does not advance at {:.6} s",
                    next.as_secs_f64()
                )));
            }
            self.step(next)?;
        }
    }

    /// Runs everything due up to `until`, then moves the clock there.
    pub fn advance_to(&mut self, until: SimTime) -> Result<(), SimError> {
        while let Some(next) = self.next_time().filter(|&t| t <= until) {
            self.step(next)?;
        }
        if until > self.now() {
            self.network.now = self.network.clock.set(until);
        }
        Ok(())
    }

    /// The time of the next thing to happen, never before now.
    fn next_time(&self) -> Option<SimTime> {
        let clock = &self.network.clock;
        let event = self.network.events.peek().map(|Reverse(e)| e.at);
        let timers = self
            .flows
            .iter()
            .filter_map(|f| f.pair.as_ref())
            .flat_map(|p| {
                let server = p
                    .server
                    .as_ref()
                    .and_then(|s| s.conn_ref().timeout_instant());
                [p.client.conn_ref().timeout_instant(), server]
            })
            .flatten()
            .map(|instant| clock.sim_time(instant));
        event
            .into_iter()
            .chain(timers)
            .min()
            .map(|t| t.max(self.now()))
    }

    /// Does one thing due at `at`: the earliest scheduled datagram, else
    /// every timer that has expired.
    fn step(&mut self, at: SimTime) -> Result<(), SimError> {
        self.network.now = self.network.clock.set(at);
        let due = self
            .network
            .events
            .peek()
            .is_some_and(|Reverse(e)| e.at <= at);
        if due {
            if let Some(Reverse(event)) = self.network.events.pop() {
                return self.handle(event);
            }
        }
        self.fire_timers()
    }

    fn fire_timers(&mut self) -> Result<(), SimError> {
        let now = self.network.now.instant;
        for flow in 0..self.flows.len() {
            let Some(pair) = self.flows[flow].pair.as_mut() else {
                continue;
            };
            if pair
                .client
                .conn_ref()
                .timeout_instant()
                .is_some_and(|t| t <= now)
            {
                pair.client.conn().on_timeout();
                self.service_client(flow)?;
            }
            let Some(pair) = self.flows[flow].pair.as_mut() else {
                continue;
            };
            let server_due = pair
                .server
                .as_ref()
                .is_some_and(|s| s.conn_ref().timeout_instant().is_some_and(|t| t <= now));
            if let Some(server) = pair.server.as_mut().filter(|_| server_due) {
                server.conn().on_timeout();
                self.service_server(flow)?;
            }
        }
        Ok(())
    }

    fn handle(&mut self, event: Event) -> Result<(), SimError> {
        // A dequeue serves whichever connections' datagrams wait.
        let current = matches!(event.happening, Happening::Dequeue)
            || self
                .flows
                .get(event.flow)
                .and_then(|f| f.pair.as_ref())
                .is_some_and(|p| p.generation == event.generation);
        if !current {
            return Ok(());
        }
        match event.happening {
            Happening::Release => {
                self.network.enter_link(event);
                Ok(())
            }
            Happening::Arrival => match event.direction {
                Direction::ToServer => self.deliver_to_server(event.flow, event.bytes),
                Direction::ToClient => self.deliver_to_client(event.flow, event.bytes),
            },
            Happening::Dequeue => {
                self.network.dequeue(event.direction);
                Ok(())
            }
            Happening::Wake => {
                let sender = (event.flow, event.generation, event.direction);
                if self.network.wakes.get(&sender) == Some(&event.at) {
                    self.network.wakes.remove(&sender);
                }
                match event.direction {
                    Direction::ToServer => self.service_client(event.flow),
                    Direction::ToClient => self.service_server(event.flow),
                }
            }
        }
    }

    fn deliver_to_client(&mut self, flow: usize, mut bytes: Vec<u8>) -> Result<(), SimError> {
        let now = self.network.now.sim;
        let f = &mut self.flows[flow];
        if let Some(pair) = f.pair.as_mut() {
            if let Some(delivered) = pair.delivered.as_mut() {
                let total = delivered.last().map_or(0, |&(_, b)| b) + bytes.len() as u64;
                delivered.push((now, total));
            }
            let info = quiche::RecvInfo {
                from: f.server_addr,
                to: pair.client_addr,
            };
            // A datagram the endpoint cannot use is dropped, as on a real
            // socket; a fatal error closes the connection inside quiche.
            let _ = pair.client.conn().recv(&mut bytes, info);
        }
        self.service_client(flow)
    }

    fn deliver_to_server(&mut self, flow: usize, mut bytes: Vec<u8>) -> Result<(), SimError> {
        let now = self.network.now;
        let f = &mut self.flows[flow];
        let Some(pair) = f.pair.as_mut() else {
            return Ok(());
        };
        let server_of_flow = &mut self.servers[f.server];
        if pair.server.is_none() {
            let keep = if f.full_traces {
                Keep::Everything
            } else {
                Keep::CarefulResume
            };
            pair.server =
                server_of_flow.accept(&mut bytes, f.server_addr, pair.client_addr, keep, &now)?;
            if pair.server.is_some() {
                pair.server_created_at = Some(now.sim);
            }
        }
        if let Some(server) = pair.server.as_mut() {
            let info = quiche::RecvInfo {
                from: pair.client_addr,
                to: f.server_addr,
            };
            server_of_flow.recv(server, &mut bytes, info);
        }
        self.service_server(flow)
    }

    /// Housekeeping, application and sending after the client's side moved.
    fn service_client(&mut self, flow: usize) -> Result<(), SimError> {
        let now = self.network.now;
        let f = &mut self.flows[flow];
        let Some(pair) = f.pair.as_mut() else {
            return Ok(());
        };
        f.client.after_io(&mut pair.client, &now);
        // Twice: the first flight puts a client resuming a TLS session in
        // early data, and its request then follows at once (0-RTT).
        for _ in 0..2 {
            pair.client_app.step(pair.client.conn(), now.sim)?;
            if pair.client_app.is_done() && !pair.closing && f.client.closes_when_done() {
                pair.closing = true;
                let _ = pair.client.conn().close(true, CLOSE_NO_ERROR, b"");
            }
            let sent = self.network.flush(
                pair.client.conn(),
                flow,
                pair.generation,
                Direction::ToServer,
                None,
                None,
            )?;
            if sent == 0 {
                break;
            }
            pair.first_packet_at.get_or_insert(now.sim);
        }
        Ok(())
    }

    /// Housekeeping, application and sending after the server's side moved.
    fn service_server(&mut self, flow: usize) -> Result<(), SimError> {
        let now = self.network.now;
        let f = &mut self.flows[flow];
        let Some(pair) = f.pair.as_mut() else {
            return Ok(());
        };
        let Some(server) = pair.server.as_mut() else {
            return Ok(());
        };
        let network = &mut self.network;
        let generation = pair.generation;
        let datagrams = &mut pair.server_datagrams;
        let departures = &mut pair.server_departures;
        self.servers[f.server].serve(server, &now, |conn| {
            network.flush(
                conn,
                flow,
                generation,
                Direction::ToClient,
                Some(&mut *datagrams),
                departures.as_mut(),
            )
        })?;
        Ok(())
    }
}
