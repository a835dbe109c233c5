//! The observing policy: what an ongoing connection saves for a later one,
//! and when it hands a new saved set to the token layer.
//!
//! # What is saved
//!
//! - saved_rtt is the minimum RTT over the last 5 minutes.
//! - saved_cwnd is the capacity the connection *demonstrated*: the path's
//!   rate times that minimum RTT, its bandwidth-delay product, from two
//!   kinds of evidence:
//!   - the delivery rate, what the path delivered per round trip: the
//!     stack's delivery-rate estimate for window-based controllers (bytes
//!     acknowledged over the interval they took, never shorter than the
//!     min RTT), BBR's max bandwidth for BBR;
//!   - the bottleneck rate a burst reveals ([`AckTrain`]): in slow start
//!     the sender releases two packets per ACK, faster than the bottleneck
//!     drains them, so their ACKs return at the bottleneck's rate. A train
//!     of ACKs lasting an eighth of the min RTT shows the path's rate
//!     rounds before the window reaches the BDP. It counts for at most
//!     twice the delivery per round trip, so the jump (saved / 2) never
//!     exceeds what the path carried in one round trip of this connection.
//!
//!   The congestion window is not evidence: in slow start it doubles every
//!   round and may be an overshoot. Neither rate can exceed the
//!   bottleneck's (barring ACK compression, which the train's length and
//!   the cap bound), so the saved capacity does not exceed the path's BDP.
//! - A connection that resumed from (or presented but never used) a saved
//!   set starts from that set as a floor ([`Observer::with_floor`]): what it
//!   saves never drops below what it started from unless the path showed
//!   congestion ([`Observer::on_congestion`]: loss, a retreat, a path or
//!   RTT change). So a short connection hands the set on, and the saved
//!   capacity only grows over successive connections of an uncongested
//!   path.
//! - A path can lose capacity without a loss: a rate drop or a policer
//!   behind a queue deep enough to absorb the jump. So the floor also
//!   falls when the connection had every chance to show it and did not:
//!   while at least half the floor (what the jump put in flight) is in
//!   flight, each span of two min RTTs is judged by the best delivery rate
//!   in it; if that carries less than three quarters of the jump per min
//!   RTT, the packets in flight stood in a queue (a round trip a third
//!   longer than the minimum at least), so the path, not the sender,
//!   limited the rate, and the path no longer carries the set. A
//!   rate-based sender (BBR) keeps about twice the BDP it measures in
//!   flight, less than a jump once the path lost most of its capacity; its
//!   delivery rate is the path's whenever it has more to send, so once its
//!   jump was validated its spans are judged while it is not
//!   application-limited.
//! - Nothing below 4 x IW is saved: it would not be worth a jump.
//!
//! Measured in cr-sim: see the table in the README's simulator section.
//!
//! # When a new saved set is emitted
//!
//! Each emission typically becomes a NEW_TOKEN. Clients cache tokens
//! differently (quic-go and aioquic present the newest, quinn the older of
//! the last two), so a connection sends few, each better than the last:
//!
//! - while the estimate grows, when it has grown by at least 25% over the
//!   last emission, at most once per minimum RTT (in slow start, about once
//!   per doubling);
//! - at the end of a burst ([`Observer::on_sender_state`]): when the sender
//!   runs out of data, and again when all of it has been acknowledged (the
//!   estimate is then final; a client that keeps the connection open
//!   receives it);
//! - a set the connection started from is handed on at the first sample,
//!   so that a client that closes at once after a short download keeps it;
//!   if the path then shows congestion, the next emission replaces it with
//!   what was measured;
//! - after the refresh interval (60 s) on a long-lived connection.

use std::time::{Duration, Instant};

use crate::ack_train::AckTrain;
use crate::min_filter::WindowedMin;
use crate::phase::{Phase, Transition, Trigger};
use crate::rate::bytes_in;

/// An emission needs the estimate to have grown by this fraction (1/4).
const GROWTH_DIVISOR: usize = 4;

/// The floor falls when a span of [`FloorTest`] delivers less than this
/// share of the jump (half the floor) per min RTT: 3/4, well below what a
/// path that still carries the set delivers (the whole jump, or half the
/// floor after a Reno halving), well above what a path that lost most of
/// its capacity does.
const FLOOR_SHORTFALL: (usize, usize) = (3, 4);

/// Round trips (min RTT) a span of [`FloorTest`] lasts: a delivery-rate
/// sample measures packets sent a round trip before it, so the second
/// round trip of a span measures only packets sent within it.
const FLOOR_SPAN_RTTS: u32 = 2;

/// Observer configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObserverConfig {
    /// The initial window (IW), in bytes.
    pub initial_window: usize,
    /// Emit at least this often while eligible observations keep coming.
    pub refresh_interval: Duration,
    /// The window over which the minimum RTT is taken.
    pub rtt_window: Duration,
    /// Whether the controller is rate-based (BBR): it keeps about twice the
    /// BDP it measures in flight, so a path that lost capacity before the
    /// jump never sees a jump's worth in flight, and the floor is judged,
    /// once a jump was validated, whenever the sender has more to send.
    pub rate_based: bool,
}

impl ObserverConfig {
    /// The project defaults: refresh every 60 s, min RTT over 5 minutes.
    pub fn new(initial_window: usize) -> Self {
        ObserverConfig {
            initial_window,
            refresh_interval: Duration::from_secs(60),
            rtt_window: Duration::from_secs(300),
            rate_based: false,
        }
    }

    fn minimum_saved_cwnd(&self) -> usize {
        self.initial_window.saturating_mul(4)
    }
}

/// A saved set to hand to the token layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// Capacity to save, in bytes.
    pub saved_cwnd: usize,
    /// Minimum RTT to save.
    pub saved_rtt: Duration,
    /// When it was observed.
    pub at: Instant,
    /// Whether it is settled: the estimate at the end of a burst (see
    /// [`Observer::on_sender_state`]) or a saved set handed on, the last word
    /// until the connection measures more. A client that presents the older
    /// of its two newest tokens (quinn) gets it only if it is sent twice.
    pub settled: bool,
    /// Whether it is the saved set the connection started from, handed on
    /// (the connection measured less): the token layer then re-issues that
    /// set, with its identity and measurement time, rather than a new one.
    pub handed_on: bool,
}

/// What the connection measured at one moment (typically on each ACK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapacitySample {
    /// The delivery rate measured, in bytes per second: the latest
    /// delivery-rate sample of a window-based controller, or BBR's max
    /// bandwidth. Zero when there is none yet.
    pub delivery_rate: u64,
    /// The delivery rate of the latest round trip, bytes per second: the
    /// same as `delivery_rate` for a window-based controller; for BBR, the
    /// best sample of its current round, since its max bandwidth is a
    /// windowed maximum that outlives a rate drop by several rounds. It
    /// tells whether the path still carries the saved set a connection
    /// started from. Zero when there is none yet.
    pub round_delivery_rate: u64,
    /// An RTT sample (the latest or the connection's min RTT).
    pub rtt: Duration,
    /// Bytes newly acknowledged by the ACK that prompted the sample.
    pub acked_bytes: usize,
    /// When.
    pub now: Instant,
}

/// Decides what the current connection saves, and when.
#[derive(Clone, Copy, Debug)]
pub struct Observer {
    config: ObserverConfig,
    min_rtt: WindowedMin,
    max_delivery_rate: u64,
    ack_train: AckTrain,
    floor: Option<usize>,
    /// The floor is not this connection's until the guard grants the claim
    /// of its set ([`Observer::await_claim`]).
    floor_claim_pending: bool,
    last: Option<Observation>,
    /// Whether the sender was application-limited after the last ACK: the
    /// change to it marks the end of a burst.
    app_limited: bool,
    floor_test: FloorTest,
    /// Whether this connection's jump was validated (a rate-based sender's
    /// floor is judged from then on, see [`ObserverConfig::rate_based`]).
    jump_validated: bool,
}

/// Whether the path still carries the floor, judged span by span while the
/// sender keeps at least half of it (a jump's worth) in flight: the best
/// delivery rate of the span, times the min RTT. Whether the sender has
/// more to send does not matter: a span that delivers less than its flight
/// per round trip shows a queue, the path's limit, either way.
#[derive(Clone, Copy, Debug, Default)]
struct FloorTest {
    /// When the current span began; `None` while the sender does not hold
    /// a jump's worth in flight.
    since: Option<Instant>,
    /// The best delivery rate sampled in the span, bytes per second.
    best_rate: u64,
}

impl Observer {
    /// An observer with nothing measured or emitted yet.
    pub fn new(config: ObserverConfig) -> Self {
        Observer {
            config,
            min_rtt: WindowedMin::new(config.rtt_window),
            max_delivery_rate: 0,
            ack_train: AckTrain::default(),
            floor: None,
            floor_claim_pending: false,
            last: None,
            app_limited: false,
            floor_test: FloorTest::default(),
            jump_validated: false,
        }
    }

    /// An observer for a connection that started from a saved set of
    /// `saved_cwnd` bytes: it saves at least that much until the path shows
    /// congestion.
    pub fn with_floor(config: ObserverConfig, saved_cwnd: usize) -> Self {
        Observer {
            floor: Some(saved_cwnd),
            ..Observer::new(config)
        }
    }

    /// The floor's saved set is claimed in the one-user-per-set guard and
    /// the answer is still to come: until it is granted
    /// ([`Observer::on_claim`]) the set is not handed on, so a connection
    /// that loses the claim never passes on a set it did not own.
    pub fn await_claim(&mut self) {
        self.floor_claim_pending = self.floor.is_some();
    }

    /// The guard answered the claim [`Observer::await_claim`] waits for: a
    /// grant makes the floor this connection's (handed on at the next
    /// sample if it beats what was emitted); a refusal drops it.
    pub fn on_claim(&mut self, granted: bool) {
        if !self.floor_claim_pending {
            return;
        }
        self.floor_claim_pending = false;
        match self.floor {
            Some(floor) if granted => {
                if self.last.is_some_and(|last| last.saved_cwnd < floor) {
                    self.last = None;
                }
            }
            _ => self.floor = None,
        }
    }

    /// The floor, once it is this connection's.
    fn floor(&self) -> Option<usize> {
        self.floor.filter(|_| !self.floor_claim_pending)
    }

    /// Feeds a measurement; returns a saved set worth emitting now.
    pub fn on_sample(&mut self, sample: &CapacitySample) -> Option<Observation> {
        let min_rtt = self.min_rtt.update(sample.rtt, sample.now);
        self.max_delivery_rate = self.max_delivery_rate.max(sample.delivery_rate);
        if self.floor_test.since.is_some() {
            let best = &mut self.floor_test.best_rate;
            *best = (*best).max(sample.round_delivery_rate);
        }
        self.ack_train
            .on_ack(sample.acked_bytes, min_rtt, sample.now);
        if self.last.is_none() {
            if let Some(floor) = self.floor() {
                // A saved set handed on goes out at once, so that even a
                // client that closes right after a short download keeps it.
                let handed_on = self.candidate_at_least(floor, sample.now)?;
                return self.emit_if(true, handed_on);
            }
        }
        let candidate = self.candidate(self.measured(), sample.now, false)?;
        let emit = match self.last {
            None => true,
            Some(last) => {
                let elapsed = sample.now.saturating_duration_since(last.at);
                let grown = candidate.saved_cwnd
                    >= last.saved_cwnd + last.saved_cwnd / GROWTH_DIVISOR
                    && elapsed >= candidate.saved_rtt;
                grown || elapsed >= self.config.refresh_interval
            }
        };
        self.emit_if(emit, candidate)
    }

    /// The sender's state after an ACK: whether it is application-limited
    /// (what it has left fits in the window) and what it has in flight. At
    /// the end of a burst (it just ran out of data, or all of it has been
    /// acknowledged) returns the estimate, at least the floor, settled, when
    /// it improves on the last emission, when that one was not settled, or
    /// when nothing was emitted yet. What is in flight also decides whether
    /// the path still carries the floor (see the module documentation).
    pub fn on_sender_state(
        &mut self,
        app_limited: bool,
        bytes_in_flight: usize,
        now: Instant,
    ) -> Option<Observation> {
        let ran_out = app_limited && !self.app_limited;
        let drained = app_limited && bytes_in_flight == 0;
        self.app_limited = app_limited;
        self.test_floor(app_limited, bytes_in_flight, now);
        if !(ran_out || drained) {
            return None;
        }
        let candidate = self.candidate_at_least(self.floor().unwrap_or(0), now)?;
        // A growth emission went out once; the end of the burst settles it,
        // so that it goes out as a pair for clients presenting the older of
        // their two newest tokens.
        let emit = self.last.is_none_or(|last| {
            candidate.saved_cwnd > last.saved_cwnd
                || (!last.settled && candidate.saved_cwnd == last.saved_cwnd)
        });
        self.emit_if(emit, candidate)
    }

    /// A Careful Resume phase change of this connection: one that discredits
    /// the saved set it started from (congestion, a path or RTT change, the
    /// set consumed) counts as congestion ([`Observer::on_congestion`]).
    ///
    /// The jump uses the set: a token that handed it on before the jump is
    /// spent (the guard lets a set serve one jump), so the next emission
    /// goes out whatever it measures, as this connection's own. Without it,
    /// a connection that measures exactly what it started from would leave
    /// the client presenting the spent set next time, and not resume.
    pub fn on_transition(&mut self, transition: &Transition) {
        if transition.trigger == Trigger::LastUnvalidatedPacketAcknowledged {
            self.jump_validated = true;
        }
        if transition.to == Phase::Unvalidated && self.last.is_some_and(|last| last.handed_on) {
            self.last = None;
        }
        let discredited = transition.saved_set_consumed
            || matches!(
                transition.trigger,
                Trigger::PacketLoss
                    | Trigger::PersistentCongestion
                    | Trigger::EcnCe
                    | Trigger::PathChanged
                    | Trigger::RttNotValidated
                    | Trigger::SavedSetNotGranted
            );
        if discredited {
            self.on_congestion();
        }
    }

    /// The path showed congestion (loss, ECN-CE, a Careful Resume retreat,
    /// a path or RTT change): the set the connection started from is no
    /// longer handed on; only what it measures counts. If it was already
    /// handed on, the next emission withdraws it.
    pub fn on_congestion(&mut self) {
        if self.floor.take().is_some()
            && self
                .last
                .is_some_and(|last| last.saved_cwnd > self.measured())
        {
            self.last = None;
        }
    }

    /// Judges the floor's span that ends `now`, if one does (see
    /// [`FloorTest`]); a span that fell short counts as congestion.
    fn test_floor(&mut self, app_limited: bool, bytes_in_flight: usize, now: Instant) {
        let (Some(floor), Some(min_rtt)) = (self.floor(), self.min_rtt.get()) else {
            return;
        };
        let jump = floor / 2;
        let holding = bytes_in_flight >= jump
            || (self.config.rate_based && self.jump_validated && !app_limited);
        if !holding {
            self.floor_test = FloorTest::default();
            return;
        }
        let since = *self.floor_test.since.get_or_insert(now);
        if now.saturating_duration_since(since) < min_rtt.saturating_mul(FLOOR_SPAN_RTTS) {
            return;
        }
        let best_rate = self.floor_test.best_rate;
        let carried = bytes_in(best_rate, min_rtt);
        let (num, den) = FLOOR_SHORTFALL;
        // A span without a delivery-rate sample says nothing of the path.
        if best_rate > 0 && carried.saturating_mul(den) < jump.saturating_mul(num) {
            self.on_congestion();
        }
        self.floor_test = FloorTest {
            since: Some(now),
            best_rate: 0,
        };
    }

    /// The last observation emitted.
    pub fn last(&self) -> Option<Observation> {
        self.last
    }

    /// The capacity demonstrated so far: the path's rate x min RTT, the
    /// rate from ACK trains counting for at most twice the delivery rate.
    fn measured(&self) -> usize {
        let Some(rtt) = self.min_rtt.get() else {
            return 0;
        };
        let delivery = self.max_delivery_rate;
        let rate = delivery.max(self.ack_train.max_rate().min(delivery.saturating_mul(2)));
        bytes_in(rate, rtt)
    }

    fn candidate(&self, saved_cwnd: usize, now: Instant, settled: bool) -> Option<Observation> {
        if saved_cwnd < self.config.minimum_saved_cwnd() {
            return None;
        }
        Some(Observation {
            saved_cwnd,
            saved_rtt: self.min_rtt.get()?,
            at: now,
            settled,
            handed_on: false,
        })
    }

    /// A settled candidate of what was measured, or of `floor` (the set
    /// the connection started from, handed on) when that is more.
    fn candidate_at_least(&self, floor: usize, now: Instant) -> Option<Observation> {
        let measured = self.measured();
        let candidate = self.candidate(measured.max(floor), now, true)?;
        Some(Observation {
            handed_on: floor > measured,
            ..candidate
        })
    }

    fn emit_if(&mut self, emit: bool, candidate: Observation) -> Option<Observation> {
        if emit {
            self.last = Some(candidate);
        }
        emit.then_some(candidate)
    }
}
