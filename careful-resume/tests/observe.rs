//! The observing policy: what is saved, and when a new saved set is emitted.

use std::time::{Duration, Instant};

use careful_resume::{
    CapacitySample, Observation, Observer, ObserverConfig, Phase, SavedState, Transition, Trigger,
};

const MSS: usize = 1200;
const IW: usize = 10 * MSS;
const MS: Duration = Duration::from_millis(1);

struct Feed {
    observer: Observer,
    base: Instant,
}

impl Feed {
    fn new() -> Self {
        Self::from(Observer::new(ObserverConfig::new(IW)))
    }

    fn from(observer: Observer) -> Self {
        Feed {
            observer,
            base: Instant::now(),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.base + MS * ms as u32
    }

    /// A delivery rate of `bytes_per_rtt` per 100 ms, with an RTT sample.
    fn sample(&mut self, ms: u64, bytes_per_100ms: u64, rtt_ms: u32) -> Option<Observation> {
        self.observer.on_sample(&CapacitySample {
            delivery_rate: bytes_per_100ms * 10,
            round_delivery_rate: bytes_per_100ms * 10,
            rtt: MS * rtt_ms,
            acked_bytes: 0,
            now: self.at(ms),
        })
    }

    /// ACKs of 2,400 B every 2 ms (1.2 MB/s) for `count` ACKs from `ms`,
    /// with the delivery rate at `bytes_per_100ms`; returns the last emission.
    fn ack_train(&mut self, ms: u64, count: u64, bytes_per_100ms: u64) -> Option<Observation> {
        (0..count)
            .filter_map(|i| {
                self.observer.on_sample(&CapacitySample {
                    delivery_rate: bytes_per_100ms * 10,
                    round_delivery_rate: bytes_per_100ms * 10,
                    rtt: MS * 100,
                    acked_bytes: 2400,
                    now: self.at(ms + 2 * i),
                })
            })
            .last()
    }

    fn burst_end(&mut self, ms: u64) -> Option<Observation> {
        self.observer.on_sender_state(true, 0, self.at(ms))
    }

    /// Every 10 ms from `from_ms` to `to_ms`: a delivery rate of
    /// `bytes_per_100ms` at a min RTT of 100 ms, then `in_flight` bytes in
    /// flight with more to send. Returns what was emitted.
    fn sending(
        &mut self,
        from_ms: u64,
        to_ms: u64,
        bytes_per_100ms: u64,
        in_flight: usize,
    ) -> Vec<Observation> {
        (from_ms..=to_ms)
            .step_by(10)
            .flat_map(|ms| {
                let sampled = self.sample(ms, bytes_per_100ms, 100);
                let state = self.observer.on_sender_state(false, in_flight, self.at(ms));
                [sampled, state]
            })
            .flatten()
            .collect()
    }
}

fn saved(cwnd: usize, rtt_ms: u32, at: Instant) -> Option<Observation> {
    Some(Observation {
        saved_cwnd: cwnd,
        saved_rtt: MS * rtt_ms,
        at,
        settled: false,
        handed_on: false,
    })
}

/// The same, emitted at the end of a burst.
fn saved_at_end(cwnd: usize, rtt_ms: u32, at: Instant) -> Option<Observation> {
    saved(cwnd, rtt_ms, at).map(|o| Observation { settled: true, ..o })
}

/// The saved set the connection started from, handed on (settled).
fn handed_on(cwnd: usize, rtt_ms: u32, at: Instant) -> Option<Observation> {
    saved_at_end(cwnd, rtt_ms, at).map(|o| Observation {
        handed_on: true,
        ..o
    })
}

/// A phase change of the connection's Careful Resume, from a saved set of
/// 1 MB over 100 ms (the observer reads its phase, trigger and whether it
/// consumed the set).
fn change(from: Phase, to: Phase, trigger: Trigger, consumed: bool, at: Instant) -> Transition {
    Transition {
        from,
        to,
        trigger,
        cwnd: None,
        ssthresh: None,
        pipesize: 0,
        first_unvalidated_pn: None,
        last_unvalidated_pn: None,
        saved: SavedState {
            cwnd: 1_000_000,
            rtt: MS * 100,
        },
        saved_set_consumed: consumed,
        at,
    }
}

#[test]
fn saves_the_delivery_rate_times_the_min_rtt() {
    let mut feed = Feed::new();
    // No rate measured yet, then one below 4 x IW per min RTT: not worth saving.
    assert_eq!(feed.sample(0, 0, 100), None);
    assert_eq!(feed.sample(100, 4 * IW as u64 - 10, 100), None);
    // 60,000 B per 100 ms on a path of 100 ms: 60,000 B, whatever the window.
    assert_eq!(
        feed.sample(200, 60_000, 120),
        saved(60_000, 100, feed.at(200))
    );
    assert_eq!(feed.observer.last(), saved(60_000, 100, feed.at(200)));
}

#[test]
fn a_burst_reveals_the_bottleneck_rate_up_to_twice_the_delivery() {
    let mut feed = Feed::new();
    // Slow start: 40,000 B delivered per round trip so far (not worth
    // saving), but a burst's ACKs return at 1.2 MB/s: once the train has
    // lasted an eighth of the min RTT and acknowledged 24,000 B (20 ms),
    // the path's BDP shows, 120,000 B, and counts up to twice what was
    // delivered: 80,000 B.
    assert_eq!(
        feed.ack_train(0, 14, 40_000),
        saved(80_000, 100, feed.at(20))
    );
    // Once 60,000 B per round trip were delivered, the whole BDP counts.
    assert_eq!(
        feed.sample(200, 60_000, 100),
        saved(120_000, 100, feed.at(200))
    );
}

#[test]
fn a_later_lower_rate_does_not_lower_the_estimate() {
    let mut feed = Feed::new();
    feed.sample(0, 100_000, 100).unwrap();
    assert_eq!(feed.sample(500, 50_000, 100), None);
    // The burst ends: the estimate is still the best rate seen, now settled
    // (sent twice, so a client presenting the older of its two newest
    // tokens gets it too)...
    assert_eq!(
        feed.burst_end(600),
        saved_at_end(100_000, 100, feed.at(600))
    );
    // ...and that is all.
    assert_eq!(feed.burst_end(900), None);
}

#[test]
fn emits_on_a_quarter_of_growth_at_most_once_per_min_rtt() {
    let mut feed = Feed::new();
    feed.sample(0, 80_000, 100).unwrap();
    // Just under 25% more: not yet.
    assert_eq!(feed.sample(50, 99_999, 100), None);
    // 25% more, but within one min RTT of the last emission: not yet.
    assert_eq!(feed.sample(99, 100_000, 100), None);
    // One min RTT later the same estimate goes out.
    assert_eq!(feed.sample(100, 0, 100), saved(100_000, 100, feed.at(100)));
}

#[test]
fn slow_start_emits_about_once_per_doubling() {
    let mut feed = Feed::new();
    let mut emitted = Vec::new();
    // Delivery doubles every 100 ms round, sampled every 10 ms, from 48 kB
    // to 1.5 MB per round: six doublings.
    for round in 0..6u64 {
        for step in 0..10u64 {
            let ms = round * 100 + step * 10;
            let rate = (48_000u64 << round) + (48_000u64 << round) * step / 10;
            if let Some(o) = feed.sample(ms, rate, 100) {
                emitted.push(o.saved_cwnd);
            }
        }
    }
    assert_eq!(emitted.len(), 6, "{emitted:?}");
    assert!(emitted.windows(2).all(|w| w[1] >= w[0] * 5 / 4));
}

#[test]
fn the_end_of_a_burst_emits_the_final_estimate() {
    let mut feed = Feed::new();
    feed.sample(0, 100_000, 100).unwrap();
    // Grew by 20% within the last round: too little for an emission...
    assert_eq!(feed.sample(300, 120_000, 100), None);
    // ...but it is the final estimate when the sender runs out of data.
    assert_eq!(
        feed.burst_end(400),
        saved_at_end(120_000, 100, feed.at(400))
    );
    // Nothing new at the next idle moment.
    assert_eq!(feed.burst_end(900), None);
}

#[test]
fn refreshes_after_sixty_seconds() {
    let mut feed = Feed::new();
    feed.sample(0, 100_000, 100).unwrap();
    assert_eq!(feed.sample(59_999, 100_000, 100), None);
    assert_eq!(
        feed.sample(60_000, 100_000, 100),
        saved(100_000, 100, feed.at(60_000))
    );
}

#[test]
fn a_short_connection_hands_its_saved_set_on_at_once() {
    // Started from 1 MB and fetches 10 KiB: it measures nothing worth
    // saving, and hands the set on at its first sample, so a client that
    // closes right after the last byte still has it.
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    assert_eq!(
        feed.sample(0, 1_000, 800),
        handed_on(1_000_000, 800, feed.at(0))
    );
    assert_eq!(feed.burst_end(900), None);
}

#[test]
fn a_resumed_connection_never_saves_less_than_it_started_from() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    assert_eq!(
        feed.sample(0, 60_000, 100),
        handed_on(1_000_000, 100, feed.at(0))
    );
    // Measuring less changes nothing...
    assert_eq!(feed.sample(500, 600_000, 100), None);
    assert_eq!(feed.burst_end(600), None);
    // ...measuring a quarter more replaces it.
    assert_eq!(
        feed.sample(1_000, 1_250_000, 100),
        saved(1_250_000, 100, feed.at(1_000))
    );
}

#[test]
fn after_the_jump_the_set_handed_on_is_replaced_even_by_an_equal_measure() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    assert_eq!(
        feed.sample(0, 60_000, 100),
        handed_on(1_000_000, 100, feed.at(0))
    );
    // The jump spends the set that token carries.
    feed.observer.on_transition(&change(
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Trigger::CongestionWindowLimited,
        false,
        feed.at(100),
    ));
    // What it measures next, exactly the floor, goes out again: the client
    // must not be left with the spent token as its newest.
    assert_eq!(
        feed.sample(200, 1_000_000, 100),
        saved_at_end(1_000_000, 100, feed.at(200))
    );
}

#[test]
fn congestion_withdraws_a_handed_on_set() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    feed.sample(0, 300_000, 100).unwrap();
    // The jump then retreats: the next sample replaces the set with what
    // was measured, and the end of the burst has nothing better.
    feed.observer.on_congestion();
    assert_eq!(
        feed.sample(300, 300_000, 100),
        saved(300_000, 100, feed.at(300))
    );
    // The end of the burst settles what was measured, never the set.
    assert_eq!(
        feed.burst_end(400),
        saved_at_end(300_000, 100, feed.at(400))
    );
}

#[test]
fn only_phase_changes_that_discredit_the_set_drop_the_floor() {
    let change =
        |to, trigger, consumed| change(Phase::Unvalidated, to, trigger, consumed, Instant::now());
    for (transition, kept) in [
        (
            change(Phase::Validating, Trigger::LastUnvalidatedPacketSent, false),
            true,
        ),
        (change(Phase::Normal, Trigger::RateLimited, false), true),
        (change(Phase::SafeRetreat, Trigger::PacketLoss, true), false),
        (
            change(Phase::Normal, Trigger::RttNotValidated, false),
            false,
        ),
        (change(Phase::Normal, Trigger::PathChanged, false), false),
        (
            change(Phase::Normal, Trigger::SavedSetNotGranted, false),
            false,
        ),
    ] {
        let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
        feed.observer.on_transition(&transition);
        let first = feed.sample(0, 300_000, 100).map(|o| o.saved_cwnd);
        let expected = if kept { 1_000_000 } else { 300_000 };
        assert_eq!(first, Some(expected), "{transition:?}");
    }
}

#[test]
fn congestion_before_anything_went_out_drops_the_floor() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    feed.observer.on_congestion();
    assert_eq!(
        feed.sample(0, 300_000, 100),
        saved(300_000, 100, feed.at(0))
    );
    assert_eq!(
        feed.burst_end(500),
        saved_at_end(300_000, 100, feed.at(500))
    );
}

#[test]
fn a_set_whose_claim_is_pending_is_not_handed_on_until_granted() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    feed.observer.await_claim();
    assert_eq!(
        feed.sample(0, 300_000, 100).map(|o| o.saved_cwnd),
        Some(300_000)
    );
    feed.observer.on_claim(true);
    let handed_on = feed.sample(10, 300_000, 100).expect("the set goes out");
    assert_eq!((handed_on.saved_cwnd, handed_on.settled), (1_000_000, true));
    assert_eq!(feed.burst_end(500), None);
}

#[test]
fn a_set_whose_claim_is_refused_is_never_handed_on() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    feed.observer.await_claim();
    feed.observer.on_claim(false);
    assert_eq!(
        feed.sample(0, 300_000, 100).map(|o| o.saved_cwnd),
        Some(300_000)
    );
    // What it measured is settled, never the set.
    assert_eq!(feed.burst_end(500).map(|o| o.saved_cwnd), Some(300_000));
    // A late answer changes nothing.
    feed.observer.on_claim(true);
    assert_eq!(feed.sample(600, 300_000, 100), None);
}

#[test]
fn saves_the_min_rtt_of_the_window() {
    let mut feed = Feed::new();
    feed.sample(0, 10_000, 150);
    feed.sample(10, 10_000, 100);
    assert_eq!(
        feed.sample(20, 100_000, 130),
        saved(100_000, 100, feed.at(20))
    );
}

/// A resumed connection that holds its jump (half the floor) in flight for
/// two min RTTs and is delivered less than three quarters of it per min
/// RTT met a path that lost capacity since the set was saved (a rate drop
/// behind a queue deep enough to absorb the jump, without a loss): the set
/// it started from is withdrawn and what it measured goes out.
#[test]
fn a_path_that_no_longer_carries_the_jump_drops_the_floor() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    assert_eq!(
        feed.sample(0, 360_000, 100),
        handed_on(1_000_000, 100, feed.at(0))
    );
    // 360 kB per 100 ms is just under 3/4 of the 500 kB jump: nothing until
    // the span of two min RTTs that began at 10 ms ends...
    assert_eq!(feed.sending(10, 200, 360_000, 600_000), vec![]);
    // ...at 210 ms, which withdraws the set; the next sample replaces it.
    assert_eq!(feed.sending(210, 210, 360_000, 600_000), vec![]);
    assert_eq!(
        feed.sample(220, 360_000, 100),
        saved(360_000, 100, feed.at(220))
    );
}

/// The same path delivering three quarters of the jump per min RTT (what
/// Reno's halved window after a loss still does) still carries the set.
#[test]
fn a_path_that_carries_the_jump_keeps_the_floor() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    feed.sample(0, 375_000, 100).unwrap();
    assert_eq!(feed.sending(10, 1_000, 375_000, 600_000), vec![]);
    assert_eq!(feed.burst_end(1_100), None);
}

/// With less than the jump in flight the path had no chance to show the
/// set, however little it delivered: the floor stands.
#[test]
fn the_floor_is_judged_only_with_a_jump_in_flight() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    feed.sample(0, 100_000, 100).unwrap();
    assert_eq!(feed.sending(10, 1_000, 100_000, 499_999), vec![]);
    // A span is judged only once the flight held a jump all along.
    assert_eq!(feed.sending(1_010, 1_100, 100_000, 500_000), vec![]);
    assert_eq!(feed.sending(1_110, 1_110, 100_000, 400_000), vec![]);
    assert_eq!(feed.sending(1_120, 1_300, 100_000, 500_000), vec![]);
    assert_eq!(feed.burst_end(1_400), None);
}

/// A span in which no delivery rate was sampled (none measured yet) says
/// nothing of the path: the floor stands.
#[test]
fn a_span_without_a_delivery_rate_keeps_the_floor() {
    let mut feed = Feed::from(Observer::with_floor(ObserverConfig::new(IW), 1_000_000));
    assert_eq!(
        feed.sample(0, 0, 100),
        handed_on(1_000_000, 100, feed.at(0))
    );
    assert_eq!(feed.sending(10, 1_000, 0, 600_000), vec![]);
    // Had the floor fallen, this lower measure would go out.
    assert_eq!(feed.sample(1_010, 360_000, 100), None);
}

/// The jump validated: the transition out of Validating.
fn validated_at(at: Instant) -> Transition {
    change(
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
        false,
        at,
    )
}

/// A rate-based sender (BBR) keeps about twice the BDP it measures in
/// flight, less than a jump on a path that lost most of its capacity: once
/// its jump was validated, its spans are judged whenever it has more to
/// send. Before, and for a window-based sender, less than a jump in flight
/// says nothing.
#[test]
fn a_rate_based_sender_is_judged_with_less_than_a_jump_in_flight_once_its_jump_was_validated() {
    let rate_based = ObserverConfig {
        rate_based: true,
        ..ObserverConfig::new(IW)
    };
    for (config, withdrawn) in [(rate_based, true), (ObserverConfig::new(IW), false)] {
        let mut feed = Feed::from(Observer::with_floor(config, 1_000_000));
        feed.sample(0, 100_000, 100).unwrap();
        // Before the validation the floor stands, whatever is delivered.
        assert_eq!(feed.sending(10, 500, 100_000, 200_000), vec![]);
        feed.observer.on_transition(&validated_at(feed.at(500)));
        // The span from 510 ms is judged at 710 ms; the next sample then
        // replaces the set with what was measured.
        let emitted = feed.sending(510, 1_000, 100_000, 200_000);
        let expected: Vec<Observation> = withdrawn
            .then(|| saved(100_000, 100, feed.at(720)))
            .flatten()
            .into_iter()
            .collect();
        assert_eq!(emitted, expected, "rate-based: {}", config.rate_based);
    }
}
