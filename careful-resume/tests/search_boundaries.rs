//! SEARCH's arithmetic on exact numbers: bins of 5 ms (a first RTT sample
//! of 100 ms over a window of two RTTs, forty bins), a packet sent just
//! after each bin boundary and an ACK just after it, and the verdict at
//! every step, computed by hand from the module's rule: at each boundary,
//! the bytes acknowledged over the last forty bins against the bytes sent
//! over forty bins one RTT earlier (interpolated within a bin); slow start
//! ends at the tenth reading in a row short by 5 % or more. Found by
//! mutation testing (`make mutants`).

use std::time::{Duration, Instant};

use careful_resume::search::{Search, SearchVerdict, SHORT_READINGS, THRESHOLD_PERCENT};

const MS: Duration = Duration::from_millis(1);

use SearchVerdict::{Exit, KeepingUp, Waiting};

/// A connection fed step by step.
struct Feed {
    search: Search,
    start: Instant,
}

impl Feed {
    /// The first ACK (nothing acknowledged yet) at the start, with an RTT
    /// of 100 ms: bins of 5 ms, boundary n at 5n ms.
    fn new() -> Feed {
        let mut search = Search::new();
        let start = Instant::now();
        assert_eq!(search.on_ack(0, MS * 100, start), Waiting);
        Feed { search, start }
    }

    /// Step `n`: `sent` bytes sent 1 ms after boundary n, then, unless
    /// `acked` is None, an ACK of that many bytes 2 ms after it, with
    /// `rtt`.
    fn step(
        &mut self,
        n: u32,
        sent: usize,
        acked: Option<usize>,
        rtt: Duration,
    ) -> Option<SearchVerdict> {
        self.search
            .on_packet_sent(sent, self.start + MS * (5 * n + 1));
        acked.map(|acked| {
            self.search
                .on_ack(acked, rtt, self.start + MS * (5 * n + 2))
        })
    }
}

/// 1,000 bytes sent per step, `acked` acknowledged, for `steps` steps.
fn steady(acked: usize, steps: u32) -> Vec<SearchVerdict> {
    let mut feed = Feed::new();
    (1..=steps)
        .map(|n| feed.step(n, 1000, Some(acked), MS * 100).unwrap())
        .collect()
}

/// The first reading comes at boundary 61: a window of forty bins ending
/// one RTT (twenty bins) back, whose start (boundary 1) follows the first
/// ACK's bin; slow start ends at the tenth short reading, boundary 70.
#[test]
fn the_first_reading_comes_once_a_window_one_rtt_back_is_recorded() {
    assert_eq!(SHORT_READINGS, 10);
    let verdicts = steady(600, 72);
    assert_eq!(verdicts[..60], [Waiting; 60]);
    // 24,000 bytes delivered against 40,000 sent: 40 % short.
    assert_eq!(
        verdicts[60..69],
        [KeepingUp {
            shortfall_percent: 40
        }; 9]
    );
    assert_eq!(
        verdicts[69..],
        [Exit {
            shortfall_percent: 40
        }; 3]
    );
}

/// A reading short by 5 % counts, one short by 4.9 % does not.
#[test]
fn a_shortfall_of_exactly_the_threshold_counts() {
    assert_eq!(THRESHOLD_PERCENT, 5);
    assert_eq!(
        steady(950, 70)[69],
        Exit {
            shortfall_percent: 5
        }
    );
    assert_eq!(
        steady(951, 80)[60..],
        [KeepingUp {
            shortfall_percent: 4
        }; 20]
    );
}

/// Nine short readings, then one that is not (an ACK of 16,000 bytes at
/// step 69 makes up the shortfall for the forty readings whose window holds
/// it), then ten short ones again: slow start ends at boundary 119, not 70.
#[test]
fn a_reading_that_keeps_up_starts_the_count_again() {
    let mut feed = Feed::new();
    let verdicts: Vec<_> = (1..=119)
        .map(|n| {
            let acked = if n == 69 { 16_600 } else { 600 };
            feed.step(n, 1000, Some(acked), MS * 100).unwrap()
        })
        .collect();
    let short = KeepingUp {
        shortfall_percent: 40,
    };
    assert_eq!(verdicts[60..69], [short; 9]);
    assert_eq!(
        verdicts[69..109],
        [KeepingUp {
            shortfall_percent: 0
        }; 40]
    );
    assert_eq!(verdicts[109..118], [short; 9]);
    assert_eq!(
        verdicts[118],
        Exit {
            shortfall_percent: 40
        }
    );
}

/// An RTT of 102.5 ms is twenty bins and a half: the sent window one RTT
/// back is half the window ending twenty bins back and half the one ending
/// twenty-one bins back. Sending grows (100 x n bytes at step n), 1,000
/// bytes acknowledged per step: at boundary 61, (82,000 + 78,000) / 2 =
/// 80,000 sent against 40,000 delivered, then 84,000 and 88,000.
#[test]
fn one_rtt_back_is_interpolated_within_a_bin() {
    let mut feed = Feed::new();
    let rtt = Duration::from_micros(102_500);
    let verdicts: Vec<_> = (1..=63)
        .map(|n| feed.step(n, 100 * n as usize, Some(1000), rtt).unwrap())
        .collect();
    assert_eq!(verdicts[..60], [Waiting; 60]);
    let shortfall = |v: &SearchVerdict| match *v {
        Exit { shortfall_percent } | KeepingUp { shortfall_percent } => shortfall_percent,
        Waiting => panic!("a verdict"),
    };
    assert_eq!(
        verdicts[60..].iter().map(shortfall).collect::<Vec<_>>(),
        [50, 52, 54]
    );
}

/// Packets sent record the totals at the boundaries they pass, so bins
/// without an ACK hold what was sent by then: with an ACK of 2,400 bytes
/// every fourth step only, every window of forty bins holds ten ACKs
/// against 40,000 bytes sent, and every reading is 40 % short. The ACK at
/// step 72 reports the twelfth short reading in a row.
#[test]
fn bins_without_an_ack_hold_what_was_sent() {
    let mut feed = Feed::new();
    let verdicts: Vec<_> = (1..=72)
        .filter_map(|n: u32| {
            let acked = n.is_multiple_of(4).then_some(2400);
            feed.step(n, 1000, acked, MS * 100).map(|v| (n, v))
        })
        .collect();
    assert_eq!(
        verdicts[15..],
        [
            (
                64,
                KeepingUp {
                    shortfall_percent: 40
                }
            ),
            (
                68,
                KeepingUp {
                    shortfall_percent: 40
                }
            ),
            (
                72,
                Exit {
                    shortfall_percent: 40
                }
            ),
        ]
    );
}

/// A gap of a window (forty bins) after the bin of the last ACK keeps the
/// record; only a longer one (nothing acknowledged for more than a whole
/// window) starts it afresh.
#[test]
fn only_a_gap_longer_than_a_window_starts_the_record_afresh() {
    for (next, fresh) in [(104, false), (105, true)] {
        let mut feed = Feed::new();
        for n in 1..=64 {
            feed.step(n, 1000, Some(600), MS * 100).unwrap();
        }
        let verdict = feed.step(next, 1000, Some(600), MS * 100).unwrap();
        assert_eq!(
            verdict == Waiting,
            fresh,
            "an ACK at step {next}: {verdict:?}"
        );
    }
}

/// restart() forgets everything: the next ACK fixes the bins anew, and an
/// exit takes 70 steps again.
#[test]
fn a_restart_forgets_the_record() {
    let mut feed = Feed::new();
    for n in 1..=70 {
        feed.step(n, 1000, Some(600), MS * 100).unwrap();
    }
    feed.search.restart();
    // 60 ms after step 70: the first ACK since the restart.
    let restarted = feed.start + MS * (5 * 70 + 60);
    assert_eq!(feed.search.on_ack(0, MS * 100, restarted), Waiting);
    let mut feed = Feed {
        search: feed.search,
        start: restarted,
    };
    let verdicts: Vec<_> = (1..=70)
        .map(|n| feed.step(n, 1000, Some(600), MS * 100).unwrap())
        .collect();
    assert_eq!(verdicts[..60], [Waiting; 60]);
    assert_eq!(
        verdicts[69],
        Exit {
            shortfall_percent: 40
        }
    );
}

/// The record keeps 101 bins of sent totals: an RTT of 59 bins (295 ms
/// against the first sample's 100) needs the window ending 59 bins back
/// and the one before it, 100 bins back, which is one too far: no verdict;
/// 58 bins (290 ms) still reads.
#[test]
fn an_rtt_beyond_the_recorded_history_gives_no_verdict() {
    let mut feed = Feed::new();
    for n in 1..=200 {
        assert_eq!(
            feed.step(n, 1000, Some(600), MS * 295),
            Some(Waiting),
            "step {n}"
        );
    }
    let mut feed = Feed::new();
    let verdicts: Vec<_> = (1..=200)
        .map(|n| feed.step(n, 1000, Some(600), MS * 290).unwrap())
        .collect();
    assert_eq!(
        verdicts[199],
        Exit {
            shortfall_percent: 40
        }
    );
}
