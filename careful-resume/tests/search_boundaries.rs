//! SEARCH's arithmetic on exact numbers: bins of 20 ms (a first RTT sample
//! of 100 ms over a window of two RTTs), one ACK just after each bin
//! boundary, and the verdict at every bin, computed by hand from the
//! module's rule: the bytes acknowledged over the last ten bins against the
//! bytes sent over ten bins one RTT earlier (interpolated within a bin),
//! where bins that passed without an ACK keep the totals of the last one.
//! Found by mutation testing (`make mutants`).

use std::time::{Duration, Instant};

use careful_resume::search::{Search, SearchVerdict, THRESHOLD_PERCENT};

const MS: Duration = Duration::from_millis(1);

use SearchVerdict::{Exit, KeepingUp, Waiting};

/// A connection fed bin by bin.
struct Feed {
    search: Search,
    start: Instant,
}

impl Feed {
    /// The first ACK (nothing acknowledged yet) at the start, with an RTT
    /// of 100 ms: bins of 20 ms.
    fn new() -> Feed {
        let mut search = Search::new();
        let start = Instant::now();
        assert_eq!(search.on_ack(0, MS * 100, start), Waiting);
        Feed { search, start }
    }

    /// `sent` bytes sent during bin `bin`, then, unless `acked` is None, an
    /// ACK of that many bytes 1 ms after the bin's end, with `rtt`.
    fn bin(
        &mut self,
        bin: u32,
        sent: usize,
        acked: Option<usize>,
        rtt: Duration,
    ) -> Option<SearchVerdict> {
        self.search.on_packet_sent(sent);
        acked.map(|acked| {
            self.search
                .on_ack(acked, rtt, self.start + MS * (20 * bin + 1))
        })
    }
}

/// 1,000 bytes sent per bin, `acked` acknowledged: the first verdict comes
/// at bin 16 (a window of ten bins ending one bin before one RTT, five
/// bins, ago), then one per bin.
fn steady(acked: usize) -> Vec<SearchVerdict> {
    let mut feed = Feed::new();
    (1..=18)
        .map(|bin| feed.bin(bin, 1000, Some(acked), MS * 100).unwrap())
        .collect()
}

#[test]
fn the_first_verdict_comes_once_a_window_one_rtt_back_is_recorded() {
    let verdicts = steady(600);
    assert_eq!(verdicts[..15], [Waiting; 15]);
    // 6,000 bytes delivered against 10,000 sent: 40 % short.
    assert_eq!(
        verdicts[15..],
        [Exit {
            shortfall_percent: 40
        }; 3]
    );
}

/// The draft's rule with the project's threshold: a shortfall of 35 % ends
/// slow start, 34.9 % does not.
#[test]
fn a_shortfall_of_exactly_the_threshold_ends_slow_start() {
    assert_eq!(THRESHOLD_PERCENT, 35);
    assert_eq!(
        steady(650)[15],
        Exit {
            shortfall_percent: 35
        }
    );
    assert_eq!(
        steady(651)[15],
        KeepingUp {
            shortfall_percent: 34
        }
    );
}

/// An RTT of 110 ms is five bins and a half: the sent window one RTT back
/// is half the window ending five bins back and half the one ending six
/// bins back. Sending grows (100 x n bytes in bin n), 400 bytes acknowledged
/// per bin: at bin 16, (6,500 + 5,500) / 2 = 6,000 sent against 4,000
/// delivered.
#[test]
fn one_rtt_back_is_interpolated_within_a_bin() {
    let mut feed = Feed::new();
    let verdicts: Vec<_> = (1..=20)
        .map(|bin| {
            feed.bin(bin, 100 * bin as usize, Some(400), MS * 110)
                .unwrap()
        })
        .collect();
    assert_eq!(verdicts[..15], [Waiting; 15]);
    let shortfall = |v: &SearchVerdict| match *v {
        Exit { shortfall_percent } | KeepingUp { shortfall_percent } => shortfall_percent,
        Waiting => panic!("a verdict"),
    };
    assert_eq!(
        verdicts[15],
        KeepingUp {
            shortfall_percent: 33
        }
    );
    assert_eq!(
        verdicts[16..].iter().map(shortfall).collect::<Vec<_>>(),
        [42, 50, 55, 60]
    );
}

/// No ACK at bins 17 and 18: they keep bin 16's totals (16,000 sent, 9,600
/// acknowledged), and bin 19's ACK acknowledges three bins' worth. The
/// windows that include them show it: at bin 22 the sent window one RTT
/// back (bins 7 to 17) holds 9,000 bytes, at bin 27 the delivered one
/// (bins 17 to 27) 6,600.
#[test]
fn bins_without_an_ack_keep_the_totals_of_the_last_one() {
    let mut feed = Feed::new();
    let mut verdicts = Vec::new();
    for bin in 1..=30 {
        let acked = match bin {
            17 | 18 => None,
            19 => Some(1800),
            _ => Some(600),
        };
        verdicts.extend(feed.bin(bin, 1000, acked, MS * 100).map(|v| (bin, v)));
    }
    // Every reading is at least 20 % and follows another: each is an exit,
    // those under 35 % by the sustained rule.
    let exit = |shortfall_percent| Exit { shortfall_percent };
    assert_eq!(
        verdicts[15..],
        [
            (16, exit(40)),
            (19, exit(40)),
            (20, exit(40)),
            (21, exit(40)),
            (22, exit(33)),
            (23, exit(25)),
            (24, exit(40)),
            (25, exit(40)),
            (26, exit(40)),
            (27, exit(34)),
            (28, exit(28)),
            (29, exit(40)),
            (30, exit(40)),
        ]
    );
}

/// A gap of exactly a window (ten bins) keeps the record; only a longer one
/// (nothing acknowledged for more than a whole window) starts it afresh.
#[test]
fn only_a_gap_longer_than_a_window_starts_the_record_afresh() {
    for (next, fresh) in [(26, false), (27, true)] {
        let mut feed = Feed::new();
        for bin in 1..=16 {
            feed.bin(bin, 1000, Some(600), MS * 100).unwrap();
        }
        let verdict = feed.bin(next, 1000, Some(600), MS * 100).unwrap();
        assert_eq!(
            verdict == Waiting,
            fresh,
            "an ACK at bin {next}: {verdict:?}"
        );
    }
}

/// restart() forgets everything: the next ACK fixes the bins anew, and a
/// verdict takes 16 bins again.
#[test]
fn a_restart_forgets_the_record() {
    let mut feed = Feed::new();
    for bin in 1..=16 {
        feed.bin(bin, 1000, Some(600), MS * 100).unwrap();
    }
    feed.search.restart();
    // 60 ms after bin 16: the first ACK since the restart.
    let restarted = feed.start + MS * (20 * 16 + 61);
    assert_eq!(feed.search.on_ack(0, MS * 100, restarted), Waiting);
    for bin in 1..=15 {
        feed.search.on_packet_sent(1000);
        let at = restarted + MS * (20 * bin + 1);
        assert_eq!(feed.search.on_ack(600, MS * 100, at), Waiting, "bin {bin}");
    }
    feed.search.on_packet_sent(1000);
    let at = restarted + MS * (20 * 16 + 1);
    assert_eq!(
        feed.search.on_ack(600, MS * 100, at),
        Exit {
            shortfall_percent: 40
        }
    );
}

/// The record keeps 26 bins of sent totals: an RTT of 15 bins (300 ms
/// against the first sample's 100) needs the window ending 15 bins back
/// and the one before it, 26 bins back, which is gone: no verdict.
#[test]
fn an_rtt_beyond_the_recorded_history_gives_no_verdict() {
    let mut feed = Feed::new();
    for bin in 1..=40 {
        assert_eq!(
            feed.bin(bin, 1000, Some(600), MS * 300),
            Some(Waiting),
            "bin {bin}"
        );
    }
}
