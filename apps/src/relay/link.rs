//! One direction of the emulated path: a bottleneck of a given rate with a
//! queue, a propagation delay, random loss, and optionally a policer and a
//! schedule of rate and delay changes.
//!
//! A datagram entering the link is lost at random, meets the policer, then
//! the queue; it waits for the bottleneck to finish the ones before it,
//! takes `size / rate` to serialise, then `delay` to propagate, and never
//! overtakes the one sent before it. The queue models (drop-tail, CoDel,
//! fq_codel, the token bucket, the schedule) are
//! `cr_serve::bottleneck`'s, the same the simulator runs, with time counted
//! from the link's creation. A FIFO queue decides each datagram's
//! departure as it enters, and its limit counts the bytes not yet
//! serialised, as a router's buffer; fq_codel holds datagrams until the
//! delivery thread, whenever the bottleneck falls idle, lets it pick the
//! next. One FIFO of datagrams in flight and one delivery thread per
//! direction suffice.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cr_serve::bottleneck::{Codel, Discipline, FqCodel, Policer, Schedule, TokenBucket};
use cr_serve::units::Rate;

/// fq_codel's quantum: one Ethernet MTU (RFC 8290's default), more than
/// any datagram QUIC sends over the relay.
const FQ_QUANTUM: u64 = 1500;

/// How one direction of the link behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Bottleneck rate in bits per second (more than 0).
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Bytes the bottleneck queue holds; a datagram that does not fit is
    /// dropped.
    pub queue_bytes: u64,
    /// Probability that a datagram is lost at random, 0 to 1.
    pub loss: f64,
}

impl LinkConfig {
    /// Time to serialise `bytes` at the link's rate.
    pub fn serialisation(&self, bytes: usize) -> Duration {
        self.rate().serialisation(bytes as u64)
    }

    /// Bytes the bottleneck serialises in `duration`: the bytes still queued
    /// when it is busy for that long, or a bandwidth-delay product.
    pub fn bytes_in(&self, duration: Duration) -> u64 {
        self.rate().bytes_in(duration)
    }

    /// The rate as a [`Rate`]; 0, which the field forbids, is 1 bit/s.
    fn rate(&self) -> Rate {
        Rate::from_bps(self.rate_bps).unwrap_or_else(|| Rate::mbit(0))
    }
}

/// The bottleneck models beyond a drop-tail queue, the same for both
/// directions (`cr_serve::bottleneck`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bottleneck {
    /// The queue: drop-tail, CoDel or fq_codel (a flow per client).
    pub discipline: Discipline,
    /// A token-bucket policer before the queue.
    pub policer: Option<Policer>,
    /// The rate and round-trip delay over time, from the relay's start
    /// (or from the newest flow's, see [`Link::restart_schedule`]);
    /// replaces the link's rate and delay.
    pub schedule: Option<Schedule>,
    /// Whether each new client flow starts the schedule over, in both
    /// directions: with one client at a time, each connection then meets
    /// the schedule from its start, as in cr-sim.
    pub schedule_per_flow: bool,
}

/// What a link did, counted in datagrams. Queue, policer and random drops
/// are the emulated path's; send errors are not, and neither are the
/// datagrams the kernel dropped before the relay read them
/// ([`RelayStats`]).
///
/// [`RelayStats`]: super::RelayStats
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Handed to the kernel at their delivery time.
    pub forwarded: u64,
    /// Dropped because the queue was full, or by CoDel.
    pub queue_drops: u64,
    /// Dropped by the policer.
    pub policed: u64,
    /// Dropped at random.
    pub random_drops: u64,
    /// Due for delivery but refused by the kernel's send (a loss the link
    /// did not decide).
    pub send_errors: u64,
}

/// A seeded generator for the loss decisions (SplitMix64): same seed, same
/// losses in the same datagram positions.
#[derive(Clone, Debug)]
pub struct LossRng(u64);

impl LossRng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> LossRng {
        LossRng(seed)
    }

    /// A uniform number in [0, 1).
    pub fn next_unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A datagram and where it goes.
struct Datagram {
    data: Vec<u8>,
    socket: Arc<UdpSocket>,
    to: SocketAddr,
}

/// A datagram on its way.
struct InFlight {
    deliver_at: Instant,
    datagram: Datagram,
}

/// A datagram waiting in fq_codel.
struct Waiting {
    offered_at: Instant,
    datagram: Datagram,
}

struct State {
    /// When the bottleneck has serialised everything accepted so far.
    busy_until: Instant,
    /// When the last datagram accepted is delivered (none overtakes it).
    last_delivery: Instant,
    /// Probability of a random loss now: the configured one, or what
    /// [`Link::set_loss`] set (a loss burst).
    loss: f64,
    in_flight: VecDeque<InFlight>,
    rng: LossRng,
    stats: LinkStats,
    codel: Codel,
    fq: FqCodel<Waiting>,
    bucket: Option<TokenBucket>,
    /// Time zero of the schedule: the link's origin, unless restarted.
    schedule_origin: Instant,
}

/// One direction of the path, shared by the threads feeding it and the
/// thread delivering from it.
pub struct Link {
    config: LinkConfig,
    discipline: Discipline,
    schedule: Option<Schedule>,
    /// Time zero of the models (the policer, the schedule, CoDel).
    origin: Instant,
    state: Mutex<State>,
    arrived: Condvar,
}

impl Link {
    /// A link behaving as `config` with the models of `bottleneck`, with
    /// losses drawn from `seed`.
    pub fn new(config: LinkConfig, bottleneck: &Bottleneck, seed: u64) -> Link {
        let origin = Instant::now();
        Link {
            config,
            discipline: bottleneck.discipline,
            schedule: bottleneck.schedule.clone(),
            origin,
            state: Mutex::new(State {
                busy_until: origin,
                last_delivery: origin,
                loss: config.loss,
                in_flight: VecDeque::new(),
                rng: LossRng::new(seed),
                stats: LinkStats::default(),
                codel: Codel::default(),
                fq: FqCodel::new(config.queue_bytes, FQ_QUANTUM),
                bucket: bottleneck.policer.map(TokenBucket::new),
                schedule_origin: origin,
            }),
            arrived: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking holder leaves consistent state (plain fields).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The models' time at `at`.
    fn since_origin(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.origin)
    }

    /// Starts the schedule over at `now`, as cr-sim counts it from each
    /// connection's start: the relay calls it when a client's flow opens,
    /// if told to (`cr-relay --schedule-per-flow`).
    pub fn restart_schedule(&self, now: Instant) {
        self.lock().schedule_origin = now;
    }

    /// The rate in force at `at`.
    fn rate_at(&self, state: &State, at: Instant) -> Rate {
        match &self.schedule {
            Some(schedule) => {
                let since = at.saturating_duration_since(state.schedule_origin);
                schedule.at(since).rate
            }
            None => self.config.rate(),
        }
    }

    /// The one-way delay in force at `at`.
    fn delay_at(&self, state: &State, at: Instant) -> Duration {
        match &self.schedule {
            Some(schedule) => {
                let since = at.saturating_duration_since(state.schedule_origin);
                schedule.at(since).rtt / 2
            }
            None => self.config.delay,
        }
    }

    /// Puts `data` of `client`'s flow on the link at `now`, to be sent from
    /// `socket` to `to` when it comes out, unless it is lost, policed or
    /// the queue drops it.
    pub fn send(
        &self,
        now: Instant,
        client: SocketAddr,
        data: &[u8],
        socket: &Arc<UdpSocket>,
        to: SocketAddr,
    ) {
        let mut state = self.lock();
        if state.loss > 0.0 && state.rng.next_unit() < state.loss {
            state.stats.random_drops += 1;
            return;
        }
        let bytes = data.len() as u64;
        let since_origin = self.since_origin(now);
        if let Some(bucket) = state.bucket.as_mut() {
            if !bucket.admit(since_origin, bytes) {
                state.stats.policed += 1;
                return;
            }
        }
        let datagram = Datagram {
            data: data.to_vec(),
            socket: Arc::clone(socket),
            to,
        };
        if self.discipline == Discipline::FqCodel {
            let waiting = Waiting {
                offered_at: now,
                datagram,
            };
            let dropped = state
                .fq
                .enqueue(since_origin, flow_of(client), bytes, waiting);
            state.stats.queue_drops += dropped.len() as u64;
        } else {
            let backlog = state.busy_until.saturating_duration_since(now);
            if self.rate_at(&state, now).bytes_in(backlog) + bytes > self.config.queue_bytes {
                state.stats.queue_drops += 1;
                return;
            }
            let start = state.busy_until.max(now);
            if self.discipline == Discipline::Codel
                && state
                    .codel
                    .on_dequeue(start - now, self.since_origin(start))
            {
                state.stats.queue_drops += 1;
                return;
            }
            self.serialise(&mut state, start, datagram);
        }
        drop(state);
        self.arrived.notify_one();
    }

    /// Serialises `datagram` from `start` on and puts it in flight.
    fn serialise(&self, state: &mut State, start: Instant, datagram: Datagram) {
        state.busy_until = start
            + self
                .rate_at(state, start)
                .serialisation(datagram.data.len() as u64);
        let deliver_at =
            (state.busy_until + self.delay_at(state, state.busy_until)).max(state.last_delivery);
        state.last_delivery = deliver_at;
        state.in_flight.push_back(InFlight {
            deliver_at,
            datagram,
        });
    }

    /// Lets fq_codel pick the next datagram once the bottleneck is idle at
    /// `now`; whether it did.
    fn dequeue(&self, state: &mut State, now: Instant) -> bool {
        if state.fq.is_empty() || state.busy_until > now {
            return false;
        }
        let picked = state.fq.dequeue(self.since_origin(now));
        state.stats.queue_drops += picked.dropped.len() as u64;
        if let Some((waiting, _)) = picked.sent {
            // From when the bottleneck fell idle (or the datagram came),
            // not from when this thread woke.
            let start = state.busy_until.max(waiting.offered_at);
            self.serialise(state, start, waiting.datagram);
        }
        true
    }

    /// Changes the probability of a random loss from now on (0 to 1,
    /// clamped), e.g. for a burst of loss in a soak; the configured loss
    /// comes back with [`Link::reset_loss`].
    pub fn set_loss(&self, loss: f64) {
        self.lock().loss = if loss.is_nan() {
            0.0
        } else {
            loss.clamp(0.0, 1.0)
        };
    }

    /// Goes back to the configured loss.
    pub fn reset_loss(&self) {
        self.set_loss(self.config.loss);
    }

    /// What the link did so far.
    pub fn stats(&self) -> LinkStats {
        self.lock().stats
    }

    /// Delivers datagrams at their time until `stop` is set (the delivery
    /// thread's body), and serves fq_codel whenever the bottleneck is idle.
    pub fn deliver(&self, stop: &AtomicBool) {
        const IDLE_CHECK: Duration = Duration::from_millis(50);
        let mut state = self.lock();
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if self.dequeue(&mut state, now) {
                continue;
            }
            let next_dequeue = (!state.fq.is_empty()).then_some(state.busy_until);
            let wait = match state.in_flight.front() {
                Some(next) if next.deliver_at <= now => {
                    if let Some(due) = state.in_flight.pop_front() {
                        drop(state);
                        let Datagram { data, socket, to } = due.datagram;
                        let sent = socket.send_to(&data, to);
                        state = self.lock();
                        match sent {
                            Ok(_) => state.stats.forwarded += 1,
                            Err(e) => {
                                log::debug!("relay: sending to {to} failed: {e}");
                                state.stats.send_errors += 1;
                            }
                        }
                    }
                    continue;
                }
                Some(next) => (next.deliver_at - now).min(IDLE_CHECK),
                None => IDLE_CHECK,
            };
            let wait = next_dequeue.map_or(wait, |at| wait.min(at.saturating_duration_since(now)));
            state = self
                .arrived
                .wait_timeout(state, wait)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

/// fq_codel's flow number of a client's datagrams, either way: the server
/// and the protocol are the same for all, so the client's address stands
/// for the 5-tuple.
fn flow_of(client: SocketAddr) -> u64 {
    let mut hasher = DefaultHasher::new();
    client.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(queue_bytes: u64, loss: f64) -> LinkConfig {
        LinkConfig {
            rate_bps: 8_000_000,
            delay: Duration::from_millis(10),
            queue_bytes,
            loss,
        }
    }

    #[test]
    fn a_restarted_schedule_counts_from_the_restart() {
        let bottleneck = Bottleneck {
            schedule: Some("0s 8mbit 10ms\n1s 1mbit 100ms".parse().expect("schedule")),
            ..Bottleneck::default()
        };
        let link = Link::new(config(1_000_000, 0.0), &bottleneck, 1);
        let later = link.origin + Duration::from_secs(2);
        let delay = |at: Instant| link.delay_at(&link.lock(), at);
        let rate = |at: Instant| link.rate_at(&link.lock(), at).bps();
        assert_eq!(
            (delay(later), rate(later)),
            (Duration::from_millis(50), 1_000_000)
        );
        link.restart_schedule(later);
        assert_eq!(
            (delay(later), rate(later)),
            (Duration::from_millis(5), 8_000_000)
        );
        let a_second_on = later + Duration::from_secs(1);
        assert_eq!(delay(a_second_on), Duration::from_millis(50));
    }

    #[test]
    fn serialisation_follows_the_rate() {
        assert_eq!(config(0, 0.0).serialisation(1000), Duration::from_millis(1));
        assert_eq!(config(0, 0.0).bytes_in(Duration::from_millis(3)), 3000);
    }

    /// Offers four 1,000-byte datagrams at one instant, addressed to a
    /// loopback socket of their own.
    fn send_four_at_once(link: &Link) {
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind"));
        let to = socket.local_addr().expect("addr");
        let now = Instant::now();
        for _ in 0..4 {
            link.send(now, to, &[0; 1000], &socket, to);
        }
    }

    #[test]
    fn a_full_queue_drops_the_tail() {
        let link = Link::new(config(2500, 0.0), &Bottleneck::default(), 1);
        send_four_at_once(&link);
        let stats = link.stats();
        assert_eq!((stats.queue_drops, stats.random_drops), (2, 0));
    }

    #[test]
    fn losses_are_seeded() {
        let draws = |seed| {
            let mut rng = LossRng::new(seed);
            (0..1000).filter(|_| rng.next_unit() < 0.1).count()
        };
        assert_eq!(draws(7), draws(7));
        assert!((50..150).contains(&draws(7)));
    }

    #[test]
    fn loss_changes_at_run_time_and_comes_back() {
        let link = Link::new(config(1_000_000, 0.0), &Bottleneck::default(), 1);
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind"));
        let to = socket.local_addr().expect("addr");
        let now = Instant::now();
        link.set_loss(1.0);
        link.send(now, to, &[0; 100], &socket, to);
        link.reset_loss();
        link.send(now, to, &[0; 100], &socket, to);
        link.set_loss(f64::NAN);
        link.send(now, to, &[0; 100], &socket, to);
        assert_eq!(link.stats().random_drops, 1);
    }

    #[test]
    fn the_policer_drops_what_its_burst_does_not_cover() {
        let bottleneck = Bottleneck {
            policer: Some("1mbit,2500".parse().expect("policer")),
            ..Bottleneck::default()
        };
        let link = Link::new(config(1_000_000, 0.0), &bottleneck, 1);
        send_four_at_once(&link);
        let stats = link.stats();
        assert_eq!((stats.policed, stats.queue_drops), (2, 0));
    }
}
