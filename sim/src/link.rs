//! One direction of the bottleneck link.
//!
//! A datagram offered to the link at time `t` waits behind the datagrams
//! already queued, is serialised at the link rate in force when its
//! serialisation starts, then propagates for the one-way delay (plus jitter)
//! and arrives. The queue is drop-tail and counts, in bytes, every datagram
//! not yet completely serialised (the one on the wire included): a datagram
//! that would push it past the limit is dropped on entry. Random loss (the
//! base probability, or a loss window's own while one is open) strikes after
//! serialisation, like corruption on a radio hop: the datagram used the
//! capacity but never arrives. Jitter adds a uniform random extra delay but
//! never reorders: a datagram never arrives before the one sent ahead of it.
//!
//! With CoDel (RFC 8289, target 5 ms, interval 100 ms) the queue also drops
//! at its head: a datagram whose sojourn, the time it waited before its
//! serialisation started, stayed above the target for an interval is
//! dropped when it reaches the head, and then more often, at the interval
//! over the square root of the drops so far, until a sojourn falls below
//! the target. The link decides each datagram's fate as it is offered, and
//! the queue is FIFO, so CoDel runs at each datagram's dequeue time in
//! order; the RFC's exemption of a queue holding less than one datagram is
//! left out, as the backlog at dequeue is not known at offer time.
//!
//! The link only computes fates; the caller carries the bytes.

use std::collections::VecDeque;
use std::time::Duration;

use crate::rng::Rng;
use crate::units::LossWindow;
use crate::units::Rate;

/// The largest UDP payload the endpoints send (quiche's default maximum).
pub const MAX_DATAGRAM: usize = 1350;

/// Time since the start of the simulation.
pub type SimTime = Duration;

/// The settings of one direction that change only between connections.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSettings {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Largest extra delay added at random (uniform in [0, jitter]).
    pub jitter: Duration,
    /// Drop-tail limit in bytes.
    pub queue_bytes: u64,
    /// Base random loss probability.
    pub loss: f64,
    /// Windows, relative to the current epoch, with their own loss.
    pub loss_windows: Vec<LossWindow>,
    /// CoDel drops at the queue's head (the drop-tail limit still holds).
    pub codel: bool,
}

/// What happens to an offered datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It arrives at the far end at this time.
    Arrives(SimTime),
    /// The queue was full: dropped on entry.
    QueueFull,
    /// CoDel dropped it at the queue's head.
    AqmDrop,
    /// Lost on the link after serialisation.
    Lost,
}

/// Counters of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Datagrams offered.
    pub offered: u64,
    /// Datagrams dropped because the queue was full, or by CoDel.
    pub queue_drops: u64,
    /// Datagrams lost at random or in a loss window.
    pub random_losses: u64,
    /// Bytes that arrived.
    pub delivered_bytes: u64,
}

/// One direction of the bottleneck.
#[derive(Clone, Debug)]
pub struct Link {
    settings: LinkSettings,
    /// Rate steps `(from, rate)`, sorted by time; the first starts at 0.
    rates: Vec<(SimTime, Rate)>,
    /// End of serialisation and size of every datagram not yet fully sent.
    queue: VecDeque<(SimTime, u64)>,
    queued_bytes: u64,
    busy_until: SimTime,
    last_arrival: SimTime,
    /// Loss windows are measured from here (the current connection's start).
    epoch: SimTime,
    rng: Rng,
    counters: LinkCounters,
    codel: Codel,
}

/// CoDel's target sojourn time (RFC 8289).
const CODEL_TARGET: Duration = Duration::from_millis(5);

/// CoDel's interval: how long the sojourn must stay above the target.
const CODEL_INTERVAL: Duration = Duration::from_millis(100);

/// CoDel's state (RFC 8289, section 5).
#[derive(Clone, Debug, Default)]
struct Codel {
    /// When the sojourn, above the target since then, may first drop.
    first_above: Option<SimTime>,
    /// Whether the queue is in its dropping state.
    dropping: bool,
    /// When the next drop is due in the dropping state.
    drop_next: SimTime,
    /// Drops in this dropping state.
    count: u32,
    /// `count` when the last dropping state began.
    last_count: u32,
}

impl Codel {
    /// Whether the datagram leaving the head at `now` after waiting
    /// `sojourn` is dropped.
    fn on_dequeue(&mut self, sojourn: Duration, now: SimTime) -> bool {
        let ok_to_drop = if sojourn < CODEL_TARGET {
            self.first_above = None;
            false
        } else {
            match self.first_above {
                None => {
                    self.first_above = Some(now + CODEL_INTERVAL);
                    false
                }
                Some(at) => now >= at,
            }
        };

        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
                return false;
            }
            if now >= self.drop_next {
                self.count += 1;
                self.drop_next = control_law(self.drop_next, self.count);
                return true;
            }
            return false;
        }

        if !ok_to_drop {
            return false;
        }
        self.dropping = true;
        // Resume near the last drop rate if the queue was dropping recently.
        let delta = self.count.saturating_sub(self.last_count);
        self.count = if delta > 1 && now.saturating_sub(self.drop_next) < CODEL_INTERVAL * 16 {
            delta
        } else {
            1
        };
        self.drop_next = control_law(now, self.count);
        self.last_count = self.count;
        true
    }
}

/// The next drop time: `interval / sqrt(count)` after `t`.
fn control_law(t: SimTime, count: u32) -> SimTime {
    t + CODEL_INTERVAL.div_f64(f64::from(count.max(1)).sqrt())
}

impl Link {
    /// A link of `rate` with `settings`, drawing randomness from `rng`.
    pub fn new(rate: Rate, settings: LinkSettings, rng: Rng) -> Link {
        Link {
            settings,
            rates: vec![(Duration::ZERO, rate)],
            queue: VecDeque::new(),
            queued_bytes: 0,
            busy_until: Duration::ZERO,
            last_arrival: Duration::ZERO,
            epoch: Duration::ZERO,
            rng,
            counters: LinkCounters::default(),
            codel: Codel::default(),
        }
    }

    /// Changes the rate from `at` on (a capacity change); later steps are
    /// replaced.
    pub fn set_rate_from(&mut self, at: SimTime, rate: Rate) {
        self.rates.retain(|&(from, _)| from < at);
        self.rates.push((at, rate));
    }

    /// Replaces the settings (delay, queue, loss) from now on.
    pub fn reconfigure(&mut self, settings: LinkSettings) {
        self.settings = settings;
    }

    /// Starts a new epoch at `at`: loss windows count from here.
    pub fn start_epoch(&mut self, at: SimTime) {
        self.epoch = at;
    }

    /// The rate in force at `t`.
    pub fn rate_at(&self, t: SimTime) -> Rate {
        let after = self.rates.partition_point(|&(from, _)| from <= t);
        self.rates[after.saturating_sub(1)].1
    }

    /// The settings in force.
    pub fn settings(&self) -> &LinkSettings {
        &self.settings
    }

    /// The counters so far.
    pub fn counters(&self) -> LinkCounters {
        self.counters
    }

    /// Bytes queued (not yet completely serialised) at `now`.
    pub fn backlog(&mut self, now: SimTime) -> u64 {
        self.drain_until(now);
        self.queued_bytes
    }

    /// Offers a datagram of `bytes` at `now`; calls must come in time order.
    pub fn offer(&mut self, now: SimTime, bytes: usize) -> Fate {
        let bytes = bytes as u64;
        self.counters.offered += 1;
        self.drain_until(now);
        if self.queued_bytes + bytes > self.settings.queue_bytes {
            self.counters.queue_drops += 1;
            return Fate::QueueFull;
        }
        let start = now.max(self.busy_until);
        if self.settings.codel && self.codel.on_dequeue(start - now, start) {
            self.counters.queue_drops += 1;
            return Fate::AqmDrop;
        }
        let end = start + self.rate_at(start).serialisation(bytes);
        self.busy_until = end;
        self.queue.push_back((end, bytes));
        self.queued_bytes += bytes;

        if self.rng.chance(self.loss_at(now)) {
            self.counters.random_losses += 1;
            return Fate::Lost;
        }
        let jitter = self.jitter();
        let arrival = (end + self.settings.delay + jitter).max(self.last_arrival);
        self.last_arrival = arrival;
        self.counters.delivered_bytes += bytes;
        Fate::Arrives(arrival)
    }

    /// The loss probability for a datagram entering at `now`.
    fn loss_at(&self, now: SimTime) -> f64 {
        let since_epoch = now.saturating_sub(self.epoch);
        self.settings
            .loss_windows
            .iter()
            .find(|w| w.contains(since_epoch))
            .map_or(self.settings.loss, |w| w.loss.value())
    }

    fn jitter(&mut self) -> Duration {
        let max = u64::try_from(self.settings.jitter.as_nanos()).unwrap_or(u64::MAX);
        if max == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.rng.below_inclusive(max))
    }

    /// Forgets the datagrams completely serialised by `now`.
    fn drain_until(&mut self, now: SimTime) {
        while let Some(&(end, bytes)) = self.queue.front() {
            if end > now {
                break;
            }
            self.queue.pop_front();
            self.queued_bytes -= bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Probability;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    fn settings(queue_bytes: u64) -> LinkSettings {
        LinkSettings {
            delay: ms(300),
            jitter: Duration::ZERO,
            queue_bytes,
            loss: 0.0,
            loss_windows: Vec::new(),
            codel: false,
        }
    }

    /// 10 Mbit/s: 1250 bytes take exactly 1 ms.
    fn link(queue_bytes: u64) -> Link {
        Link::new(Rate::mbit(10), settings(queue_bytes), Rng::new(1, 0))
    }

    #[test]
    fn idle_link_adds_serialisation_and_delay() {
        let mut l = link(100_000);
        assert_eq!(l.offer(ms(5), 1250), Fate::Arrives(ms(5) + ms(1) + ms(300)));
    }

    #[test]
    fn back_to_back_datagrams_queue_behind_each_other() {
        let mut l = link(100_000);
        let arrivals: Vec<Fate> = (0..3).map(|_| l.offer(ms(0), 1250)).collect();
        assert_eq!(
            arrivals,
            vec![
                Fate::Arrives(ms(301)),
                Fate::Arrives(ms(302)),
                Fate::Arrives(ms(303))
            ]
        );
        // Half-way through the third datagram's serialisation only it remains.
        assert_eq!(l.backlog(us(2500)), 1250);
        // A datagram arriving after the queue emptied starts at once.
        assert_eq!(l.offer(ms(10), 125), Fate::Arrives(ms(310) + us(100)));
    }

    #[test]
    fn full_queue_drops_on_entry_then_accepts_once_drained() {
        let mut l = link(2500);
        assert_eq!(l.offer(ms(0), 1250), Fate::Arrives(ms(301)));
        assert_eq!(l.offer(ms(0), 1250), Fate::Arrives(ms(302)));
        assert_eq!(l.offer(ms(0), 1250), Fate::QueueFull);
        // The first datagram leaves the queue at 1 ms: room for one more.
        assert_eq!(l.offer(ms(1), 1250), Fate::Arrives(ms(303)));
        assert_eq!(l.offer(ms(1), 1), Fate::QueueFull);
        let c = l.counters();
        assert_eq!((c.offered, c.queue_drops, c.delivered_bytes), (5, 2, 3750));
    }

    #[test]
    fn rate_change_applies_from_its_time() {
        let mut l = link(100_000);
        l.set_rate_from(ms(100), Rate::from_bps(5_000_000).unwrap());
        assert_eq!(l.offer(ms(99), 1250), Fate::Arrives(ms(99 + 1 + 300)));
        assert_eq!(l.offer(ms(100), 1250), Fate::Arrives(ms(100 + 2 + 300)));
        assert_eq!(l.rate_at(ms(50)).bps(), 10_000_000);
    }

    #[test]
    fn loss_window_counts_from_the_epoch() {
        let mut l = link(10_000_000);
        let mut s = settings(10_000_000);
        s.loss_windows = vec![LossWindow {
            from: ms(100),
            to: ms(200),
            loss: Probability::new(1.0).unwrap(),
        }];
        l.reconfigure(s);
        l.start_epoch(ms(1000));
        assert!(matches!(l.offer(ms(1099), 100), Fate::Arrives(_)));
        assert_eq!(l.offer(ms(1100), 100), Fate::Lost);
        assert_eq!(l.offer(ms(1199), 100), Fate::Lost);
        assert!(matches!(l.offer(ms(1200), 100), Fate::Arrives(_)));
        assert_eq!(l.counters().random_losses, 2);
    }

    #[test]
    fn random_loss_is_seeded() {
        let run = |seed| {
            let mut s = settings(u64::MAX);
            s.loss = 0.5;
            let mut l = Link::new(Rate::mbit(10), s, Rng::new(seed, 0));
            (0..64)
                .map(|i| l.offer(ms(i), 100) == Fate::Lost)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
        let lost = run(3).iter().filter(|&&l| l).count();
        assert!((16..48).contains(&lost), "{lost}");
    }

    #[test]
    fn jitter_stays_in_bounds_and_never_reorders() {
        let mut s = settings(u64::MAX);
        s.jitter = ms(20);
        let mut l = Link::new(Rate::mbit(10), s, Rng::new(9, 0));
        let mut previous = Duration::ZERO;
        for i in 0..200 {
            let Fate::Arrives(at) = l.offer(ms(i), 125) else {
                panic!("no loss configured")
            };
            let base = ms(i) + us(100) + ms(300);
            assert!(at >= previous && at <= base + ms(20), "{at:?} vs {base:?}");
            previous = at;
        }
    }

    /// A 10 Mbit/s link with CoDel and a limit it never reaches.
    fn codel_link() -> Link {
        let settings = LinkSettings {
            codel: true,
            ..settings(10_000_000)
        };
        Link::new(Rate::mbit(10), settings, Rng::new(1, 0))
    }

    #[test]
    fn codel_drops_once_the_sojourn_stays_above_its_target_for_an_interval() {
        let mut l = codel_link();
        // Two datagrams a millisecond at 10 Mbit/s: the queue grows by a
        // millisecond every millisecond, the sojourn by the same.
        let mut drops = Vec::new();
        for i in 0..400u64 {
            let t = us(500 * i);
            if l.offer(t, 1250) == Fate::AqmDrop {
                drops.push(t);
            }
        }
        // Datagram i leaves the head at i ms after waiting i/2 ms: the
        // sojourn reaches the target with datagram 10, at 10 ms, and the
        // first drop is the datagram at the head an interval later, the
        // 110th, offered at 55 ms.
        assert_eq!(drops.first(), Some(&us(55_000)));
        // Then drops come faster, an interval over the root of the count.
        assert!(drops.len() > 3);
        // A drop-tail link of the same size drops nothing.
        let mut tail = link(10_000_000);
        assert!((0..400u64).all(|i| tail.offer(us(500 * i), 1250) != Fate::AqmDrop));
    }

    #[test]
    fn codel_leaves_a_queue_that_drains_below_its_target_alone() {
        let mut l = codel_link();
        // A burst of 50 ms every 200 ms: sojourns above 5 ms for less than
        // the interval each time.
        for burst in 0..10u64 {
            for i in 0..50u64 {
                let t = ms(200 * burst) + us(500 * i);
                assert_ne!(
                    l.offer(t, 1250),
                    Fate::AqmDrop,
                    "burst {burst}, datagram {i}"
                );
            }
        }
    }
}
