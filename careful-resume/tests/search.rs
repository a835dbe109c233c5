//! SEARCH's slow-start exit on modelled paths: a sender doubling its rate
//! every round trip over a path that delivers what was sent one RTT later,
//! up to the bottleneck's rate.

use std::time::{Duration, Instant};

use careful_resume::search::{Search, SearchVerdict, THRESHOLD_PERCENT};

const RTT: Duration = Duration::from_millis(100);
const STEP: Duration = Duration::from_millis(1);
/// 10 packets of 1,200 bytes per RTT to begin with.
const INITIAL_RATE: f64 = 12_000.0 / 0.1;

/// One millisecond of a modelled path: what the sender sends, and what the
/// receiver acknowledges, which is what was sent one RTT earlier, at most
/// `capacity` bytes per second (the rest waits in an unbounded queue).
struct Path {
    capacity: f64,
    queue: f64,
    in_transit: std::collections::VecDeque<f64>,
}

impl Path {
    fn new(capacity: f64) -> Path {
        let steps = (RTT.as_millis() / STEP.as_millis()) as usize;
        Path {
            capacity,
            queue: 0.0,
            in_transit: std::iter::repeat_n(0.0, steps).collect(),
        }
    }

    /// Sends `bytes` now; returns the bytes acknowledged now.
    fn step(&mut self, bytes: f64) -> f64 {
        self.in_transit.push_back(bytes);
        self.queue += self.in_transit.pop_front().unwrap_or(0.0);
        let delivered = self.queue.min(self.capacity * STEP.as_secs_f64());
        self.queue -= delivered;
        delivered
    }
}

/// Runs a sender that doubles its rate each RTT (slow start) for at most
/// `limit`, ACKs arriving every `ack_every`; returns when SEARCH said to
/// exit, and the shortfall it saw.
fn run(capacity: f64, ack_every: Duration, limit: Duration) -> Option<(Duration, u64)> {
    run_paced(capacity, ack_every, limit, Duration::ZERO)
}

/// The same, each packet built `ahead` of the moment it leaves (a pacer's
/// release time; SEARCH is told both).
fn run_paced(
    capacity: f64,
    ack_every: Duration,
    limit: Duration,
    ahead: Duration,
) -> Option<(Duration, u64)> {
    let start = Instant::now();
    let mut search = Search::new();
    let mut path = Path::new(capacity);
    let mut unacked = 0.0;
    let mut t = Duration::ZERO;
    let bytes_at = |t: Duration| {
        let rate = INITIAL_RATE * 2f64.powf(t.as_secs_f64() / RTT.as_secs_f64());
        rate * STEP.as_secs_f64()
    };
    let mut built = Duration::ZERO;
    while t < limit {
        // Build what leaves up to `ahead` from now.
        while built <= t + ahead {
            search.on_packet_paced(bytes_at(built) as usize, start + built, start + t);
            built += STEP;
        }
        let bytes = bytes_at(t);
        unacked += path.step(bytes);
        t += STEP;
        if t.as_micros().is_multiple_of(ack_every.as_micros()) && unacked >= 1.0 {
            let verdict = search.on_ack(unacked as usize, RTT, start + t);
            unacked -= (unacked as usize) as f64;
            if let SearchVerdict::Exit { shortfall_percent } = verdict {
                return Some((t, shortfall_percent));
            }
        }
    }
    None
}

/// When the doubling sender's rate first exceeds `capacity`.
fn saturation(capacity: f64) -> Duration {
    RTT.mul_f64((capacity / INITIAL_RATE).log2())
}

#[test]
fn a_path_that_keeps_up_never_ends_slow_start() {
    assert_eq!(run(f64::INFINITY, STEP, Duration::from_secs(2)), None);
}

#[test]
fn a_full_bottleneck_ends_slow_start_within_two_round_trips() {
    for mbit in [10.0, 50.0, 200.0] {
        let capacity = mbit * 1e6 / 8.0;
        let (exit, shortfall) = run(capacity, STEP, Duration::from_secs(5)).expect("an exit");
        let full = saturation(capacity);
        // The ACKs show the path full one RTT after the sender overran it.
        assert!(
            exit > full + RTT,
            "{mbit} Mbit/s: exit at {exit:?}, full at {full:?}"
        );
        assert!(
            exit <= full + 3 * RTT,
            "{mbit} Mbit/s: exit at {exit:?}, full at {full:?}"
        );
        assert!(shortfall >= THRESHOLD_PERCENT);
    }
}

#[test]
fn acks_in_bursts_do_not_end_slow_start_early() {
    // An ACK every 20 ms (a fifth of the RTT) on a path that keeps up.
    assert_eq!(
        run(
            f64::INFINITY,
            Duration::from_millis(20),
            Duration::from_secs(2)
        ),
        None
    );
    // The same bursts on a bottleneck still end slow start.
    let capacity = 50e6 / 8.0;
    let (exit, _) = run(capacity, Duration::from_millis(20), Duration::from_secs(5)).expect("exit");
    assert!(exit <= saturation(capacity) + 3 * RTT);
}

#[test]
fn a_paced_packet_counts_when_it_leaves_not_when_it_is_built() {
    for mbit in [10.0, 50.0, 200.0] {
        let capacity = mbit * 1e6 / 8.0;
        let limit = Duration::from_secs(5);
        let sent_at_once = run(capacity, STEP, limit).expect("an exit");
        // Built 3 ms ahead by a pacer: the record, and so the exit, is the
        // same as for packets sent when they leave.
        let paced = run_paced(capacity, STEP, limit, Duration::from_millis(3));
        assert_eq!(paced, Some(sent_at_once), "{mbit} Mbit/s");
    }
}

#[test]
fn a_window_without_acks_starts_the_record_afresh() {
    let start = Instant::now();
    let mut search = Search::new();
    search.on_packet_sent(12_000, start);
    assert_eq!(search.on_ack(12_000, RTT, start), SearchVerdict::Waiting);
    // Bins of 5 ms; a window of 200 ms: a second without ACKs is stale.
    search.on_packet_sent(12_000, start + Duration::from_millis(1));
    assert_eq!(
        search.on_ack(12_000, RTT, start + Duration::from_secs(1)),
        SearchVerdict::Waiting
    );
    // Fresh bins from here: nothing to compare for a window and an RTT.
    for ms in (1_005..1_300).step_by(5) {
        let now = start + Duration::from_millis(ms);
        search.on_packet_sent(1_200, now);
        assert_eq!(
            search.on_ack(1_200, RTT, now),
            SearchVerdict::Waiting,
            "{ms} ms"
        );
    }
}

/// A shortfall that lasts ten readings ends slow start within 2.15 RTTs of
/// saturation at every capacity (measured 1.88-2.14), where 35 % read once
/// or 15 % read twice in a row, bins of a tenth of the window, took
/// 2.24-2.33, as the phase of the bins against the doubling decided.
#[test]
fn a_lasting_shortfall_ends_slow_start_at_any_capacity_alike() {
    for mbit in [5.0, 10.0, 15.0, 20.0, 30.0, 50.0, 80.0, 120.0, 200.0, 300.0] {
        let capacity = mbit * 1e6 / 8.0;
        let (exit, _) = run(capacity, STEP, Duration::from_secs(5)).expect("an exit");
        let after = (exit - saturation(capacity)).as_secs_f64() / RTT.as_secs_f64();
        assert!(
            after <= 2.15,
            "{mbit} Mbit/s: exit {after:.2} RTTs after saturation"
        );
    }
}

/// An ACK-clocked slow start: the initial window leaves at once, then each
/// acknowledged byte releases two. Returns when SEARCH said to exit; with
/// `noted`, the first data is noted as it leaves (a response to early data,
/// sent before the first RTT sample).
fn ack_clocked(capacity: f64, noted: bool) -> Option<Duration> {
    let start = Instant::now();
    let mut search = Search::new();
    let mut path = Path::new(capacity);
    let mut to_send = 12_000.0;
    if noted {
        search.on_data_sent(start);
    }
    let mut t = Duration::ZERO;
    while t < Duration::from_secs(5) {
        search.on_packet_sent(to_send as usize, start + t);
        let acked = path.step(to_send);
        to_send = 2.0 * acked;
        t += STEP;
        if acked >= 1.0 {
            if let SearchVerdict::Exit { .. } = search.on_ack(acked as usize, RTT, start + t) {
                return Some(t);
            }
        }
    }
    None
}

/// Data that left before the first RTT sample (early data's response): the
/// record starts when it left. Where slow start is shorter than the record
/// needs before its first comparison (paths of 2 to 6 initial windows),
/// slow start then ends a round trip sooner than when the record waits for
/// the first ACK, which comes when the initial window has already made its
/// round trip (measured 0.76-1.16 RTTs); on longer slow starts, no later.
#[test]
fn data_sent_before_the_first_ack_starts_the_record() {
    for mbit in [2.0, 3.0, 4.0, 6.0, 8.0, 50.0] {
        let capacity = mbit * 1e6 / 8.0;
        let late = ack_clocked(capacity, false).expect("an exit");
        let noted = ack_clocked(capacity, true).expect("an exit");
        let sooner = if mbit <= 6.0 {
            RTT.mul_f64(0.75)
        } else {
            Duration::ZERO
        };
        assert!(
            noted + sooner <= late,
            "{mbit} Mbit/s: {noted:?} noted, {late:?} from the first ACK"
        );
    }
}
