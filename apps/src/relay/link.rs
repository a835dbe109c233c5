//! One direction of the emulated path: a bottleneck of a given rate with a
//! drop-tail queue, a fixed propagation delay and random loss.
//!
//! A datagram entering the link waits for the bottleneck to finish the ones
//! before it, takes `size / rate` to serialise, then `delay` to propagate.
//! Since the delay is the same for all, datagrams leave in the order they
//! came, so one FIFO and one delivery thread per direction suffice. The
//! queue limit counts the bytes not yet serialised, as a router's buffer.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
        let nanos = (bytes as u128 * 8 * 1_000_000_000).div_ceil(u128::from(self.rate_bps.max(1)));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Bytes the bottleneck serialises in `duration`: the bytes still queued
    /// when it is busy for that long, or a bandwidth-delay product.
    pub fn bytes_in(&self, duration: Duration) -> u64 {
        let bytes = duration.as_nanos() * u128::from(self.rate_bps) / 8 / 1_000_000_000;
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }
}

/// What a link did, counted in datagrams. Queue and random drops are the
/// emulated path's; send errors are not, and neither are the datagrams the
/// kernel dropped before the relay read them ([`RelayStats`]).
///
/// [`RelayStats`]: super::RelayStats
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Handed to the kernel at their delivery time.
    pub forwarded: u64,
    /// Dropped because the queue was full.
    pub queue_drops: u64,
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

/// A datagram on its way.
struct InFlight {
    deliver_at: Instant,
    data: Vec<u8>,
    socket: Arc<UdpSocket>,
    to: SocketAddr,
}

struct State {
    /// When the bottleneck has serialised everything accepted so far.
    busy_until: Instant,
    /// Probability of a random loss now: the configured one, or what
    /// [`Link::set_loss`] set (a loss burst).
    loss: f64,
    in_flight: VecDeque<InFlight>,
    rng: LossRng,
    stats: LinkStats,
}

/// One direction of the path, shared by the threads feeding it and the
/// thread delivering from it.
pub struct Link {
    config: LinkConfig,
    state: Mutex<State>,
    arrived: Condvar,
}

impl Link {
    /// A link behaving as `config`, with losses drawn from `seed`.
    pub fn new(config: LinkConfig, seed: u64) -> Link {
        Link {
            config,
            state: Mutex::new(State {
                busy_until: Instant::now(),
                loss: config.loss,
                in_flight: VecDeque::new(),
                rng: LossRng::new(seed),
                stats: LinkStats::default(),
            }),
            arrived: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking holder leaves consistent state (plain fields).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts `data` on the link at `now`, to be sent from `socket` to `to`
    /// when it comes out, unless the queue is full or it is lost.
    pub fn send(&self, now: Instant, data: &[u8], socket: &Arc<UdpSocket>, to: SocketAddr) {
        let mut state = self.lock();
        if state.loss > 0.0 && state.rng.next_unit() < state.loss {
            state.stats.random_drops += 1;
            return;
        }
        let backlog = state.busy_until.saturating_duration_since(now);
        if self.config.bytes_in(backlog) + data.len() as u64 > self.config.queue_bytes {
            state.stats.queue_drops += 1;
            return;
        }
        let start = state.busy_until.max(now);
        state.busy_until = start + self.config.serialisation(data.len());
        let deliver_at = state.busy_until + self.config.delay;
        state.in_flight.push_back(InFlight {
            deliver_at,
            data: data.to_vec(),
            socket: Arc::clone(socket),
            to,
        });
        drop(state);
        self.arrived.notify_one();
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
    /// thread's body).
    pub fn deliver(&self, stop: &AtomicBool) {
        const IDLE_CHECK: Duration = Duration::from_millis(50);
        let mut state = self.lock();
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let wait = match state.in_flight.front() {
                Some(next) if next.deliver_at <= now => {
                    if let Some(due) = state.in_flight.pop_front() {
                        drop(state);
                        let sent = due.socket.send_to(&due.data, due.to);
                        state = self.lock();
                        match sent {
                            Ok(_) => state.stats.forwarded += 1,
                            Err(e) => {
                                log::debug!("relay: sending to {} failed: {e}", due.to);
                                state.stats.send_errors += 1;
                            }
                        }
                    }
                    continue;
                }
                Some(next) => (next.deliver_at - now).min(IDLE_CHECK),
                None => IDLE_CHECK,
            };
            state = self
                .arrived
                .wait_timeout(state, wait)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
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
    fn serialisation_follows_the_rate() {
        assert_eq!(config(0, 0.0).serialisation(1000), Duration::from_millis(1));
        assert_eq!(config(0, 0.0).bytes_in(Duration::from_millis(3)), 3000);
    }

    #[test]
    fn a_full_queue_drops_the_tail() {
        let link = Link::new(config(2500, 0.0), 1);
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind"));
        let to = socket.local_addr().expect("addr");
        let now = Instant::now();
        for _ in 0..4 {
            link.send(now, &[0; 1000], &socket, to);
        }
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
        let link = Link::new(config(1_000_000, 0.0), 1);
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind"));
        let to = socket.local_addr().expect("addr");
        let now = Instant::now();
        link.set_loss(1.0);
        link.send(now, &[0; 100], &socket, to);
        link.reset_loss();
        link.send(now, &[0; 100], &socket, to);
        link.set_loss(f64::NAN);
        link.send(now, &[0; 100], &socket, to);
        assert_eq!(link.stats().random_drops, 1);
    }
}
