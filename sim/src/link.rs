//! One direction of the bottleneck link.
//!
//! A datagram offered to the link at time `t` first meets the policer, if
//! any (a token bucket: too few tokens, and it is dropped), then the queue,
//! is serialised at the link rate in force when its serialisation starts,
//! then propagates for the one-way delay (plus jitter) and arrives. Random
//! loss (the base probability, or a loss window's own while one is open)
//! strikes after serialisation, like corruption on a radio hop: the
//! datagram used the capacity but never arrives. Jitter adds a uniform
//! random extra delay but never reorders: a datagram never arrives before
//! the one sent ahead of it. A schedule, when given, sets the rate and the
//! delay over time, counted from the current epoch (each connection's start
//! in a session).
//!
//! The queue models are `cr_serve::bottleneck`'s, shared with cr-relay. A
//! FIFO queue (drop-tail, or CoDel dropping at its head) counts, in bytes,
//! every datagram not yet completely serialised (the one on the wire
//! included): a datagram that would push it past the limit is dropped on
//! entry. Nothing offered later leaves before it, so the link decides a
//! FIFO datagram's fate as it is offered, running CoDel at its dequeue
//! time in order. fq_codel serves flows in turn, so a datagram's turn is
//! known only when the serialiser falls idle: the link hands out a
//! [`Ticket`] ([`Fate::Queued`]) and the caller calls [`Link::dequeue`] at
//! [`Link::next_dequeue`], which gives the fates of the tickets decided
//! then.
//!
//! The link only computes fates; the caller carries the bytes.

use std::collections::VecDeque;
use std::time::Duration;

use cr_serve::bottleneck::{Codel, Discipline, FqCodel, Policer, Schedule, TokenBucket};

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
    /// One-way propagation delay (unless a schedule sets it).
    pub delay: Duration,
    /// Largest extra delay added at random (uniform in [0, jitter]).
    pub jitter: Duration,
    /// The queue's limit in bytes (fq_codel's shared by its flows).
    pub queue_bytes: u64,
    /// Base random loss probability.
    pub loss: f64,
    /// Windows, relative to the current epoch, with their own loss.
    pub loss_windows: Vec<LossWindow>,
    /// The queue.
    pub discipline: Discipline,
    /// A token-bucket policer before the queue.
    pub policer: Option<Policer>,
    /// Rate and round-trip delay over time, relative to the current epoch;
    /// replaces the rate steps and `delay`.
    pub schedule: Option<Schedule>,
}

/// A datagram held in an fq_codel queue, for the caller to look up when
/// [`Link::dequeue`] decides its fate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket(u64);

/// What happens to an offered datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It arrives at the far end at this time.
    Arrives(SimTime),
    /// It waits in fq_codel; [`Link::dequeue`] decides later.
    Queued(Ticket),
    /// The queue was full: dropped on entry (or, in fq_codel, at the head
    /// of the fattest flow).
    QueueFull,
    /// CoDel dropped it at the queue's head.
    AqmDrop,
    /// The policer found too few tokens.
    Policed,
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
    /// Datagrams the policer dropped.
    pub policed: u64,
    /// Datagrams lost at random or in a loss window.
    pub random_losses: u64,
    /// Bytes that arrived.
    pub delivered_bytes: u64,
}

/// A datagram in fq_codel: its ticket and when it was offered.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    ticket: Ticket,
    offered_at: SimTime,
}

/// One direction of the bottleneck.
#[derive(Debug)]
pub struct Link {
    settings: LinkSettings,
    /// Rate steps `(from, rate)`, sorted by time; the first starts at 0.
    rates: Vec<(SimTime, Rate)>,
    /// End of serialisation and size of every datagram not yet fully sent
    /// (with fq_codel, of the one on the wire).
    queue: VecDeque<(SimTime, u64)>,
    queued_bytes: u64,
    busy_until: SimTime,
    last_arrival: SimTime,
    /// Loss windows and the schedule count from here (the current
    /// connection's start).
    epoch: SimTime,
    rng: Rng,
    counters: LinkCounters,
    /// CoDel's state of the FIFO queue.
    codel: Codel,
    fq: FqCodel<Waiting>,
    next_ticket: u64,
    /// Tickets fq_codel's limit dropped, told at the next dequeue.
    evicted: Vec<Ticket>,
    bucket: Option<TokenBucket>,
}

impl Link {
    /// A link of `rate` with `settings`, drawing randomness from `rng`.
    pub fn new(rate: Rate, settings: LinkSettings, rng: Rng) -> Link {
        Link {
            fq: FqCodel::new(settings.queue_bytes, MAX_DATAGRAM as u64),
            bucket: settings.policer.map(TokenBucket::new),
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
            next_ticket: 0,
            evicted: Vec::new(),
        }
    }

    /// Changes the rate from `at` on (a capacity change); later steps are
    /// replaced.
    pub fn set_rate_from(&mut self, at: SimTime, rate: Rate) {
        self.rates.retain(|&(from, _)| from < at);
        self.rates.push((at, rate));
    }

    /// Replaces the settings (delay, queue, loss, policer, schedule) from
    /// now on; a changed policer starts with a full bucket. The queue keeps
    /// what it holds.
    pub fn reconfigure(&mut self, settings: LinkSettings) {
        if settings.policer != self.settings.policer {
            self.bucket = settings.policer.map(TokenBucket::new);
        }
        self.fq.set_limit(settings.queue_bytes);
        self.settings = settings;
    }

    /// Starts a new epoch at `at`: loss windows and the schedule count from
    /// here.
    pub fn start_epoch(&mut self, at: SimTime) {
        self.epoch = at;
    }

    /// The rate in force at `t`.
    pub fn rate_at(&self, t: SimTime) -> Rate {
        if let Some(schedule) = &self.settings.schedule {
            return schedule.at(t.saturating_sub(self.epoch)).rate;
        }
        let after = self.rates.partition_point(|&(from, _)| from <= t);
        self.rates[after.saturating_sub(1)].1
    }

    /// The one-way delay in force at `t`.
    pub fn delay_at(&self, t: SimTime) -> Duration {
        match &self.settings.schedule {
            Some(schedule) => schedule.at(t.saturating_sub(self.epoch)).rtt / 2,
            None => self.settings.delay,
        }
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
        self.queued_bytes + self.fq.backlog()
    }

    /// Offers a datagram of `bytes` of `flow` (fq_codel's flows: one number
    /// per connection) at `now`; calls come in time order.
    pub fn offer(&mut self, now: SimTime, flow: u64, bytes: usize) -> Fate {
        let bytes = bytes as u64;
        self.counters.offered += 1;
        if let Some(bucket) = self.bucket.as_mut() {
            if !bucket.admit(now, bytes) {
                self.counters.policed += 1;
                return Fate::Policed;
            }
        }
        self.drain_until(now);
        if self.settings.discipline == Discipline::FqCodel {
            return self.enqueue(now, flow, bytes);
        }
        if self.queued_bytes + bytes > self.settings.queue_bytes {
            self.counters.queue_drops += 1;
            return Fate::QueueFull;
        }
        let start = now.max(self.busy_until);
        if self.settings.discipline == Discipline::Codel
            && self.codel.on_dequeue(start - now, start)
        {
            self.counters.queue_drops += 1;
            return Fate::AqmDrop;
        }
        self.serialise(start, now, bytes)
    }

    /// When [`Link::dequeue`] has a datagram to decide on: when the
    /// serialiser falls idle with fq_codel holding any (never, with a FIFO
    /// queue).
    pub fn next_dequeue(&self) -> Option<SimTime> {
        (!self.fq.is_empty() || !self.evicted.is_empty()).then_some(self.busy_until)
    }

    /// Decides, at `now` (no earlier than [`Link::next_dequeue`]), the
    /// fates of the tickets fq_codel dropped and of the datagram it picks
    /// to serialise.
    pub fn dequeue(&mut self, now: SimTime) -> Vec<(Ticket, Fate)> {
        let mut fates: Vec<(Ticket, Fate)> = self
            .evicted
            .drain(..)
            .map(|ticket| (ticket, Fate::QueueFull))
            .collect();
        if now < self.busy_until {
            return fates;
        }
        self.drain_until(now);
        let picked = self.fq.dequeue(now);
        self.counters.queue_drops += picked.dropped.len() as u64;
        fates.extend(picked.dropped.iter().map(|w| (w.ticket, Fate::AqmDrop)));
        if let Some((waiting, bytes)) = picked.sent {
            let fate = self.serialise(now, waiting.offered_at, bytes);
            fates.push((waiting.ticket, fate));
        }
        fates
    }

    /// Queues a datagram in fq_codel.
    fn enqueue(&mut self, now: SimTime, flow: u64, bytes: u64) -> Fate {
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        let waiting = Waiting {
            ticket,
            offered_at: now,
        };
        let mut fate = Fate::Queued(ticket);
        for dropped in self.fq.enqueue(now, flow, bytes, waiting) {
            self.counters.queue_drops += 1;
            if dropped.ticket == ticket {
                fate = Fate::QueueFull;
            } else {
                self.evicted.push(dropped.ticket);
            }
        }
        fate
    }

    /// Serialises a datagram of `bytes` offered at `offered_at` from
    /// `start` on, and decides whether and when it arrives.
    fn serialise(&mut self, start: SimTime, offered_at: SimTime, bytes: u64) -> Fate {
        let end = start + self.rate_at(start).serialisation(bytes);
        self.busy_until = end;
        self.queue.push_back((end, bytes));
        self.queued_bytes += bytes;

        if self.rng.chance(self.loss_at(offered_at)) {
            self.counters.random_losses += 1;
            return Fate::Lost;
        }
        let jitter = self.jitter();
        let arrival = (end + self.delay_at(end) + jitter).max(self.last_arrival);
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
            discipline: Discipline::DropTail,
            policer: None,
            schedule: None,
        }
    }

    /// 10 Mbit/s: 1250 bytes take exactly 1 ms.
    fn link(queue_bytes: u64) -> Link {
        Link::new(Rate::mbit(10), settings(queue_bytes), Rng::new(1, 0))
    }

    #[test]
    fn idle_link_adds_serialisation_and_delay() {
        let mut l = link(100_000);
        assert_eq!(
            l.offer(ms(5), 0, 1250),
            Fate::Arrives(ms(5) + ms(1) + ms(300))
        );
    }

    #[test]
    fn back_to_back_datagrams_queue_behind_each_other() {
        let mut l = link(100_000);
        let arrivals: Vec<Fate> = (0..3).map(|_| l.offer(ms(0), 0, 1250)).collect();
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
        assert_eq!(l.offer(ms(10), 0, 125), Fate::Arrives(ms(310) + us(100)));
    }

    #[test]
    fn full_queue_drops_on_entry_then_accepts_once_drained() {
        let mut l = link(2500);
        assert_eq!(l.offer(ms(0), 0, 1250), Fate::Arrives(ms(301)));
        assert_eq!(l.offer(ms(0), 0, 1250), Fate::Arrives(ms(302)));
        assert_eq!(l.offer(ms(0), 0, 1250), Fate::QueueFull);
        // The first datagram leaves the queue at 1 ms: room for one more.
        assert_eq!(l.offer(ms(1), 0, 1250), Fate::Arrives(ms(303)));
        assert_eq!(l.offer(ms(1), 0, 1), Fate::QueueFull);
        let c = l.counters();
        assert_eq!((c.offered, c.queue_drops, c.delivered_bytes), (5, 2, 3750));
    }

    #[test]
    fn rate_change_applies_from_its_time() {
        let mut l = link(100_000);
        l.set_rate_from(ms(100), Rate::from_bps(5_000_000).unwrap());
        assert_eq!(l.offer(ms(99), 0, 1250), Fate::Arrives(ms(99 + 1 + 300)));
        assert_eq!(l.offer(ms(100), 0, 1250), Fate::Arrives(ms(100 + 2 + 300)));
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
        assert!(matches!(l.offer(ms(1099), 0, 100), Fate::Arrives(_)));
        assert_eq!(l.offer(ms(1100), 0, 100), Fate::Lost);
        assert_eq!(l.offer(ms(1199), 0, 100), Fate::Lost);
        assert!(matches!(l.offer(ms(1200), 0, 100), Fate::Arrives(_)));
        assert_eq!(l.counters().random_losses, 2);
    }

    #[test]
    fn random_loss_is_seeded() {
        let run = |seed| {
            let mut s = settings(u64::MAX);
            s.loss = 0.5;
            let mut l = Link::new(Rate::mbit(10), s, Rng::new(seed, 0));
            (0..64)
                .map(|i| l.offer(ms(i), 0, 100) == Fate::Lost)
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
            let Fate::Arrives(at) = l.offer(ms(i), 0, 125) else {
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
            discipline: Discipline::Codel,
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
            if l.offer(t, 0, 1250) == Fate::AqmDrop {
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
        assert!((0..400u64).all(|i| tail.offer(us(500 * i), 0, 1250) != Fate::AqmDrop));
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
                    l.offer(t, 0, 1250),
                    Fate::AqmDrop,
                    "burst {burst}, datagram {i}"
                );
            }
        }
    }

    #[test]
    fn the_policer_passes_its_burst_then_drops_what_its_rate_does_not_cover() {
        let settings = LinkSettings {
            policer: Some("5mbit,5000".parse().expect("policer")),
            ..settings(u64::MAX)
        };
        let mut l = Link::new(Rate::mbit(10), settings, Rng::new(1, 0));
        let fates: Vec<Fate> = (0..6).map(|_| l.offer(ms(0), 0, 1250)).collect();
        assert_eq!(
            fates
                .iter()
                .filter(|f| matches!(f, Fate::Arrives(_)))
                .count(),
            4
        );
        assert_eq!(&fates[4..], &[Fate::Policed, Fate::Policed]);
        // 5 Mbit/s refills 1250 bytes in 2 ms.
        assert_eq!(l.offer(us(1999), 0, 1250), Fate::Policed);
        assert!(matches!(l.offer(ms(2), 0, 1250), Fate::Arrives(_)));
        assert_eq!(l.counters().policed, 3);
    }

    #[test]
    fn the_schedule_sets_rate_and_delay_from_each_rows_time_after_the_epoch() {
        let schedule: Schedule = "0s 10mbit 600ms\n1s 5mbit 200ms".parse().expect("schedule");
        let settings = LinkSettings {
            schedule: Some(schedule),
            ..settings(u64::MAX)
        };
        let mut l = Link::new(Rate::mbit(10), settings, Rng::new(1, 0));
        l.start_epoch(ms(500));
        // Propagation takes the delay in force when serialisation ends.
        assert_eq!(l.offer(ms(1498), 0, 1250), Fate::Arrives(ms(1499 + 300)));
        // From 1 s after the epoch: 2 ms to serialise, 100 ms one way, but
        // never ahead of the datagram before.
        assert_eq!(l.offer(ms(1500), 0, 1250), Fate::Arrives(ms(1799)));
        assert_eq!(l.offer(ms(2500), 0, 1250), Fate::Arrives(ms(2502 + 100)));
        assert_eq!(l.rate_at(ms(1499)).bps(), 10_000_000);
    }

    /// Drains an fq_codel link: the flow of each datagram that arrived, in
    /// order, dequeuing whenever the serialiser falls idle.
    fn drain(l: &mut Link, flows: &std::collections::HashMap<Ticket, u64>) -> Vec<u64> {
        let mut order = Vec::new();
        while let Some(at) = l.next_dequeue() {
            for (ticket, fate) in l.dequeue(at) {
                if matches!(fate, Fate::Arrives(_)) {
                    order.push(flows[&ticket]);
                }
            }
        }
        order
    }

    #[test]
    fn fq_codel_gives_two_flows_equal_turns_whatever_their_order_of_arrival() {
        let settings = LinkSettings {
            discipline: Discipline::FqCodel,
            ..settings(10_000_000)
        };
        let mut l = Link::new(Rate::mbit(10), settings, Rng::new(1, 0));
        let mut flows = std::collections::HashMap::new();
        // Flow 1 queues 20 datagrams, then flow 2 queues 20.
        for flow in [1, 2] {
            for _ in 0..20 {
                let Fate::Queued(ticket) = l.offer(ms(0), flow, MAX_DATAGRAM) else {
                    panic!("fq_codel queues")
                };
                flows.insert(ticket, flow);
            }
        }
        let order = drain(&mut l, &flows);
        assert_eq!(order.len(), 40);
        // A quantum of one datagram: the flows alternate. The queue drains
        // in 43 ms, less than CoDel's interval, so nothing is dropped.
        assert_eq!(order[..10], [1, 2, 1, 2, 1, 2, 1, 2, 1, 2]);
        assert!(order.windows(2).all(|w| w[0] != w[1]), "{order:?}");
    }

    #[test]
    fn the_shipped_schedules_parse() {
        for text in [
            include_str!("../schedules/geo-rain-fade.txt"),
            include_str!("../schedules/leo-15s.txt"),
            include_str!("../schedules/cellular-lte.txt"),
        ] {
            let schedule: Schedule = text.parse().expect("a shipped schedule parses");
            assert!(schedule.steps().len() > 5);
        }
    }
}
