//! The first-connection sweep: how a connection with nothing saved ends
//! slow start, SEARCH against HyStart++, for CUBIC and Reno, over the paths
//! where overshooting costs most (20 to 200 Mbit/s at 600 ms) and over
//! 10 Mbit/s from 20 ms to 1 s. What a first connection leaves behind, its
//! saved capacity, is what every later connection resumes from.
//!
//! Each row gives the completion time, the same against ideal doubling
//! slow start ([`ideal_doubling`]), the packets lost, and the capacity the
//! connection saved against the path's BDP.

use std::time::Duration;

use serde::Serialize;

use crate::parallel::run_parallel;
use crate::report::Report;
use crate::scenario::Scenario;
use crate::table;
use crate::units::Rate;
use cr_serve::{CongestionControl, SlowStart};

/// The initial window quiche starts from: 10 datagrams of the simulator's
/// size.
const INITIAL_WINDOW: u64 = 13_500;

/// A path and object of the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepPath {
    /// Bottleneck rate.
    pub rate: Rate,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// Bytes fetched.
    pub size: u64,
}

/// The sweep's paths: 20, 50, 100 and 200 Mbit/s at 600 ms (10, 20, 50
/// and 100 MB), and 10 Mbit/s at 20, 100, 300, 600 and 1000 ms (5 MB).
pub fn paths() -> Vec<SweepPath> {
    let satellite = [
        (20, 10_000_000),
        (50, 20_000_000),
        (100, 50_000_000),
        (200, 100_000_000),
    ]
    .map(|(mbit, size)| SweepPath {
        rate: Rate::mbit(mbit),
        rtt: Duration::from_millis(600),
        size,
    });
    let rtts = [20, 100, 300, 600, 1000].map(|ms| SweepPath {
        rate: Rate::mbit(10),
        rtt: Duration::from_millis(ms),
        size: 5_000_000,
    });
    satellite.into_iter().chain(rtts).collect()
}

/// The completion time of ideal doubling slow start: the first byte leaves
/// 1.5 RTT after the client's first packet (handshake and request), the
/// window doubles every round from the initial window until it reaches
/// the BDP, the rest goes at line rate, and the last byte takes half an
/// RTT to arrive.
pub fn ideal_doubling(path: SweepPath) -> Duration {
    let bdp = path.rate.bytes_in(path.rtt);
    let mut elapsed = path.rtt * 3 / 2;
    let mut left = path.size;
    let mut window = INITIAL_WINDOW;
    while left > 0 && window < bdp {
        let round = window.min(left);
        left -= round;
        elapsed += if left == 0 {
            path.rate.serialisation(round)
        } else {
            path.rtt
        };
        window *= 2;
    }
    elapsed + path.rate.serialisation(left) + path.rtt / 2
}

/// One first connection of the sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Round-trip propagation delay, seconds.
    pub rtt_s: f64,
    /// Bytes fetched.
    pub size_bytes: u64,
    /// The server's congestion controller.
    pub cc: &'static str,
    /// How slow start ended: `search` or `hystart`.
    pub slow_start: &'static str,
    /// Completion time, seconds (`None`: the run failed).
    pub completion_s: Option<f64>,
    /// Completion time of ideal doubling slow start, seconds.
    pub ideal_s: f64,
    /// Packets the server sent.
    pub packets_sent: u64,
    /// Packets the server declared lost.
    pub packets_lost: u64,
    /// The capacity the connection saved over the path's BDP.
    pub saved_over_bdp: Option<f64>,
}

impl SweepRow {
    /// Completion over the ideal doubling slow start's.
    pub fn versus_ideal(&self) -> Option<f64> {
        self.completion_s.map(|c| c / self.ideal_s)
    }

    /// Lost packets over sent packets.
    pub fn loss_ratio(&self) -> f64 {
        self.packets_lost as f64 / self.packets_sent.max(1) as f64
    }
}

/// The first connection over `path` ([`Scenario::first_only`]).
fn scenario(path: SweepPath, cc: CongestionControl, slow_start: SlowStart) -> Scenario {
    Scenario {
        rate: path.rate,
        rtt: path.rtt,
        size: path.size,
        cc,
        slow_start,
        ..Scenario::default()
    }
    .first_only()
}

/// Runs the sweep for `ccs`, each path with both slow starts, on the
/// available cores.
pub fn run(ccs: &[CongestionControl]) -> Vec<SweepRow> {
    let jobs: Vec<(SweepPath, CongestionControl, SlowStart)> = ccs
        .iter()
        .flat_map(|&cc| {
            paths().into_iter().flat_map(move |path| {
                [SlowStart::Hystart, SlowStart::Search].map(|slow_start| (path, cc, slow_start))
            })
        })
        .collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    run_parallel(jobs, threads, |(path, cc, slow_start)| {
        let report = crate::session::run_session(&scenario(path, cc, slow_start), false)
            .ok()
            .map(|outcome| Report::of(&outcome));
        let first = report.as_ref().map(Report::first);
        let bdp = path.rate.bytes_in(path.rtt) as f64;
        SweepRow {
            rate_bps: path.rate.bps(),
            rtt_s: path.rtt.as_secs_f64(),
            size_bytes: path.size,
            cc: cc.name(),
            slow_start: slow_start.name(),
            completion_s: first.and_then(|c| c.completion_s),
            ideal_s: ideal_doubling(path).as_secs_f64(),
            packets_sent: first.map_or(0, |c| c.packets_sent),
            packets_lost: first.map_or(0, |c| c.packets_lost),
            saved_over_bdp: first
                .and_then(|c| c.token_left)
                .map(|t| t.capacity_bytes as f64 / bdp),
        }
    })
}

/// The sweep as a table: per path and controller, HyStart++ and SEARCH
/// side by side.
pub fn render(rows: &[SweepRow]) -> String {
    let cells = |row: Option<&SweepRow>| -> [String; 4] {
        let Some(row) = row else {
            return ["-".into(), "-".into(), "-".into(), "-".into()];
        };
        [
            table::secs(row.completion_s),
            table::times(row.versus_ideal()),
            format!("{:.1}%", row.loss_ratio() * 100.0),
            row.saved_over_bdp.map_or("-".into(), |s| format!("{s:.2}")),
        ]
    };
    let mut lines = Vec::new();
    for pair in rows.chunks(2) {
        let find = |name: &str| pair.iter().find(|r| r.slow_start == name);
        let (hystart, search) = (find("hystart"), find("search"));
        let Some(any) = hystart.or(search) else {
            continue;
        };
        let mut line = vec![
            any.cc.to_string(),
            format!("{} Mbit/s", any.rate_bps / 1_000_000),
            format!("{} ms", (any.rtt_s * 1000.0).round()),
            format!("{} MB", any.size_bytes / 1_000_000),
            table::secs(Some(any.ideal_s)),
        ];
        line.extend(cells(hystart));
        line.extend(cells(search));
        lines.push(line);
    }
    table::render(
        &[
            "cc",
            "rate",
            "rtt",
            "size",
            "ideal",
            "hystart++",
            "vs ideal",
            "lost",
            "saved/BDP",
            "search",
            "vs ideal",
            "lost",
            "saved/BDP",
        ],
        &lines,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_doubling_counts_rounds_then_line_rate() {
        // 20 Mbit/s, 600 ms: BDP 1.5 MB. Rounds of 13.5 kB doubling up to
        // 864 kB (seven rounds, 1,714,500 B), then 8,285,500 B at
        // 2.5 MB/s (3.3142 s), plus 0.9 s before and 0.3 s after.
        let path = SweepPath {
            rate: Rate::mbit(20),
            rtt: Duration::from_millis(600),
            size: 10_000_000,
        };
        let expected = 0.9 + 7.0 * 0.6 + 8_285_500.0 / 2_500_000.0 + 0.3;
        assert!((ideal_doubling(path).as_secs_f64() - expected).abs() < 1e-6);
    }

    #[test]
    fn a_small_object_ends_within_slow_start() {
        // 20 kB: one round of 13.5 kB, then 6.5 kB at line rate.
        let path = SweepPath {
            rate: Rate::mbit(10),
            rtt: Duration::from_millis(100),
            size: 20_000,
        };
        let expected = 0.15 + 0.1 + 6_500.0 / 1_250_000.0 + 0.05;
        assert!((ideal_doubling(path).as_secs_f64() - expected).abs() < 1e-6);
    }
}
