//! The standard scenarios, each run resumed, as its no-resume baseline,
//! resumed with quiche's default packet sizes and resumed with its later
//! requests in early data (0-RTT), in parallel on the available cores.
//!
//! Each simulation runs on one thread with its own virtual clock (quiche's
//! virtual clock is thread-local), so running them side by side changes
//! nothing in their results.

use std::time::Duration;

use serde::Serialize;

use crate::crowd;
use crate::crowd::Crowd;
use crate::crowd::CrowdReport;
use crate::error::SimError;
use crate::packing::PackingReport;
use crate::parallel::run_parallel;
use crate::report::ConnectionReport;
use crate::report::Report;
use crate::scenario::Competing;
use crate::scenario::Scenario;
use crate::session::run_session;
use crate::table;
use crate::units::LossWindow;
use crate::units::Probability;
use crate::units::Rate;
use cr_serve::CongestionControl;

/// A named scenario of the suite.
#[derive(Clone, Debug)]
pub struct Case {
    /// Short name, stable across releases (used by tests and the README).
    pub name: String,
    /// What the case shows.
    pub about: &'static str,
    /// The scenario, with resume on.
    pub scenario: Scenario,
}

const MIB: u64 = 1 << 20;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The standard scenarios: the seed dissertation's chapter 6 (1 MiB at
/// 10 Mbit/s and 800 ms, the RTT sweep for 1 MiB and 10 MiB, 5 % loss, the
/// capacity drop), a path change, an expired token, a loss burst on CUBIC,
/// a connection joining a link carried by a long flow, sequences of
/// connections (the saved capacity converging, kept across a short
/// connection, and a retreat when the path lost most of its capacity),
/// small request-response exchanges, a bulk download per controller, a
/// BBR2 RTT sweep, and the capacity drop and competing flow with BBR2.
pub fn cases() -> Vec<Case> {
    let base = Scenario::default();
    let mut cases = vec![Case {
        name: "geo-1MiB-800ms".into(),
        about: "the seed dissertation's case: 1 MiB at 10 Mbit/s, 800 ms",
        scenario: base.clone(),
    }];
    for size in [MIB, 10 * MIB] {
        for rtt in [25, 50, 100, 200, 400, 600, 800] {
            if size == MIB && rtt == 800 {
                continue;
            }
            cases.push(Case {
                name: format!("rtt-{}MiB-{rtt}ms", size / MIB),
                about: "RTT sweep at 10 Mbit/s",
                scenario: Scenario {
                    size,
                    rtt: ms(rtt),
                    ..base.clone()
                },
            });
        }
    }
    cases.extend([
        Case {
            name: "loss-5pct".into(),
            about: "5 % random loss on both connections",
            scenario: Scenario {
                loss: Probability::new(0.05).unwrap_or_default(),
                ..base.clone()
            },
        },
        capacity_drop(),
        Case {
            name: "path-change".into(),
            about: "50 ms RTT on the first connection, 600 ms on the second",
            scenario: Scenario {
                rtt: ms(50),
                rtt2: Some(ms(600)),
                ..base.clone()
            },
        },
        Case {
            name: "expired-token".into(),
            about: "the second connection comes 8 days later, after the token expired",
            scenario: Scenario {
                gap: Duration::from_secs(8 * 86_400),
                ..base.clone()
            },
        },
        Case {
            name: "cubic-loss-burst".into(),
            about: "10 MB at 10 ms RTT, 30 % loss in the first 2 s, CUBIC",
            scenario: Scenario {
                size: 10_000_000,
                rtt: ms(10),
                cc: CongestionControl::Cubic,
                loss_windows: vec![LossWindow {
                    from: Duration::ZERO,
                    to: Duration::from_secs(2),
                    loss: Probability::new(0.3).unwrap_or_default(),
                }],
                ..base.clone()
            },
        },
        competing_flow(),
        Case {
            name: "seq-4x1MiB-800ms".into(),
            about: "four 1 MiB downloads, each presenting the newest token",
            scenario: Scenario {
                later_sizes: vec![MIB; 3],
                ..base.clone()
            },
        },
        Case {
            name: "seq-10MiB-1MiB".into(),
            about: "10 MiB, then 1 MiB resuming from what the long download saved",
            scenario: Scenario {
                size: 10 * MIB,
                later_sizes: vec![MIB],
                ..base.clone()
            },
        },
        Case {
            name: "seq-short-between".into(),
            about: "1 MiB, 10 KiB, 1 MiB: the short connection hands the saved set on",
            scenario: Scenario {
                later_sizes: vec![10 << 10, MIB],
                ..base.clone()
            },
        },
        Case {
            name: "retreat-1mbit".into(),
            about: "10 MiB at 10 Mbit/s, then 1 MiB at 1 Mbit/s: the jump overshoots, CR retreats",
            scenario: Scenario {
                size: 10 * MIB,
                later_sizes: vec![MIB],
                rate2: Some(Rate::mbit(1)),
                ..base.clone()
            },
        },
        small_requests(),
    ]);
    cases.extend(bulk_per_controller());
    cases.extend(bbr2_sweep());
    cases.extend(bbr2_satellite());
    cases.extend([capacity_drop(), competing_flow()].map(with_bbr2));
    cases
}

/// BBR2 resuming on GEO paths: 10 MB at 20 Mbit/s, whose resumed
/// connection should come within 1.15 x the physical limit, and 1 MiB at
/// 10 Mbit/s, whose resumed connection should be 1.8 x faster than the
/// first.
pub fn bbr2_satellite() -> Vec<Case> {
    let bbr2 = |size, rate| Scenario {
        rate,
        rtt: ms(600),
        size,
        cc: CongestionControl::Bbr2,
        ..Scenario::default()
    };
    vec![
        Case {
            name: "bbr2-10MB-600ms".into(),
            about: "BBR2, 10 MB at 20 Mbit/s and 600 ms",
            scenario: bbr2(10_000_000, Rate::mbit(20)),
        },
        Case {
            name: "bbr2-1MiB-600ms".into(),
            about: "BBR2, 1 MiB at 10 Mbit/s and 600 ms",
            scenario: bbr2(MIB, Rate::mbit(10)),
        },
    ]
}

/// `case` with BBR2 for every connection (targets: a capacity drop within
/// 1.1 x its baseline, a competing flow keeping half its throughput).
pub fn with_bbr2(case: Case) -> Case {
    Case {
        name: format!("bbr2-{}", case.name),
        scenario: Scenario {
            cc: CongestionControl::Bbr2,
            ..case.scenario
        },
        ..case
    }
}

/// A 10 MB download at 20 Mbit/s and 20 ms with each controller: where
/// quiche's default packing sends the most short packets.
pub fn bulk_per_controller() -> Vec<Case> {
    [
        CongestionControl::Reno,
        CongestionControl::Cubic,
        CongestionControl::Bbr2,
    ]
    .into_iter()
    .map(|cc| Case {
        name: format!("bulk-10MB-20ms-{}", cc.name()),
        about: "10 MB at 20 Mbit/s, 20 ms, per controller",
        scenario: Scenario {
            rate: Rate::mbit(20),
            rtt: ms(20),
            size: 10_000_000,
            cc,
            ..Scenario::default()
        },
    })
    .collect()
}

/// Eight 20 KiB requests at 100 ms, each on its own connection: the
/// request-response exchanges that silly window avoidance must not
/// delay. A response is larger than the initial window, so its last
/// part waits for the first ACK either way.
pub fn small_requests() -> Case {
    Case {
        name: "small-requests".into(),
        about: "eight 20 KiB request-response exchanges at 100 ms",
        scenario: Scenario {
            size: 20 << 10,
            later_sizes: vec![20 << 10; 7],
            rtt: ms(100),
            ..Scenario::default()
        },
    }
}

/// RTTs of [`bbr2_sweep`].
pub const BBR2_SWEEP_RTTS_MS: [u64; 6] = [50, 200, 400, 600, 800, 1000];

/// BBR2 on long paths: 3 MB at 20 Mbit/s over RTTs from 50 ms to 1 s.
/// Without quiche patch 0011 BBR2's first connection collapses above
/// 400 ms (22.8 s at 600 ms); with it, it stays within 1.2 x an ideal slow
/// start.
pub fn bbr2_sweep() -> Vec<Case> {
    BBR2_SWEEP_RTTS_MS
        .iter()
        .map(|&rtt| Case {
            name: format!("bbr2-3MB-{rtt}ms"),
            about: "BBR2 RTT sweep, 3 MB at 20 Mbit/s",
            scenario: Scenario {
                rate: Rate::mbit(20),
                rtt: ms(rtt),
                size: 3_000_000,
                cc: CongestionControl::Bbr2,
                ..Scenario::default()
            },
        })
        .collect()
}

/// The capacity drop: 10 Mbit/s on the first connection, 3 Mbit/s on the
/// second, at 800 ms.
///
/// The first connection saves the 10 Mbit/s path's BDP (1 MB); the jump
/// (500 kB) fits the slower path's BDP plus queue (300 + 300 kB), so
/// Careful Resume validates it, and the controller's ordinary loss
/// response finds the lower capacity. `retreat-1mbit` is the case where the
/// jump does not fit and Careful Resume must retreat.
pub fn capacity_drop() -> Case {
    Case {
        name: "capacity-drop".into(),
        about: "10 MiB, 800 ms, 10 Mbit/s then 3 Mbit/s",
        scenario: Scenario {
            size: 10 * MIB,
            rate2: Some(Rate::mbit(3)),
            ..Scenario::default()
        },
    }
}

/// A resumed connection joining a GEO link that a long CUBIC download has
/// carried for 40 s.
///
/// The gap matters: the newcomer's first flight meets whatever the drop-tail
/// queue holds at that moment of the competitor's CUBIC cycle. After 20, 25
/// or 30 s it meets a full queue, loses packets in Reconnaissance and, as
/// RFC 9959 requires, never jumps; after 35, 40 or 45 s it jumps, which is
/// what this case is for (a test checks that it still does).
pub fn competing_flow() -> Case {
    Case {
        name: "competing-flow".into(),
        about: "the second connection jumps into a link carried by a long download",
        scenario: Scenario {
            rtt: ms(600),
            gap: Duration::from_secs(40),
            competing: Some(Competing::default()),
            ..Scenario::default()
        },
    }
}

/// A case's results: resumed, baseline, and resumed with short packets.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// What it shows.
    pub about: &'static str,
    /// The session with resume on.
    pub resumed: Result<Report, String>,
    /// The same session with `--no-resume`.
    pub baseline: Result<Report, String>,
    /// The resumed session with `--small-packets`: how quiche packs data by
    /// default, for comparison.
    pub small_packets: Result<Report, String>,
    /// The resumed session with each later request sent as early data
    /// (0-RTT), as a browser resuming its TLS session does: the request
    /// arrives a round trip sooner, while the jump still waits for the
    /// connection's first RTT sample.
    pub early_data: Result<Report, String>,
    /// Wall time of the slowest of the four sessions, in seconds (at most
    /// 10 on a two-core machine, so that the suite stays quick).
    pub wall_s: f64,
}

impl CaseResult {
    /// Resumed second completion over baseline second completion (above 1:
    /// resuming was slower).
    pub fn versus_baseline(&self) -> Option<f64> {
        let resumed = self.resumed.as_ref().ok()?.last().completion_s?;
        let baseline = self.baseline.as_ref().ok()?.last().completion_s?;
        (baseline > 0.0).then(|| resumed / baseline)
    }

    /// The last connection of the session resumed in 0-RTT, when its server
    /// accepted the early data (`None` otherwise: a ticket too old to offer,
    /// so there was no 0-RTT figure to give).
    pub fn in_early_data(&self) -> Option<&ConnectionReport> {
        let last = self.early_data.as_ref().ok()?.last();
        last.early_data.then_some(last)
    }
}

/// One session's report, or why it failed.
pub(crate) fn report(scenario: &Scenario) -> Result<Report, String> {
    run_session(scenario, false)
        .map(|outcome| Report::of(&outcome))
        .map_err(|e: SimError| e.to_string())
}

/// Runs `cases`, each resumed, as baseline, with short packets and in
/// 0-RTT, on the available cores.
pub fn run(cases: Vec<Case>) -> Vec<CaseResult> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs: Vec<Scenario> = cases
        .iter()
        .flat_map(|c| {
            [
                c.scenario.clone(),
                c.scenario.baseline(),
                c.scenario.with_small_packets(),
                c.scenario.in_early_data(),
            ]
        })
        .collect();
    let timed = |s: Scenario| {
        let started = std::time::Instant::now();
        (report(&s), started.elapsed().as_secs_f64())
    };
    let mut reports = run_parallel(jobs, threads, timed).into_iter();
    cases
        .into_iter()
        .map(|case| {
            let mut next = || reports.next().unwrap_or((Err("not run".to_string()), 0.0));
            let [(resumed, a), (baseline, b), (small_packets, c), (early_data, d)] =
                [next(), next(), next(), next()];
            CaseResult {
                name: case.name,
                about: case.about,
                resumed,
                baseline,
                small_packets,
                early_data,
                wall_s: (a.max(b).max(c).max(d) * 1000.0).round() / 1000.0,
            }
        })
        .collect()
}

/// The suite's table: one row per case. `resumed` is the last connection
/// in 1-RTT, `0-RTT` the same connection with its request sent as early
/// data (`-` when the server did not accept it), so that what Careful
/// Resume saves and what 0-RTT adds read side by side.
pub fn render(results: &[CaseResult]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let resumed = r.resumed.as_ref().ok();
            let baseline = r.baseline.as_ref().ok();
            let second = resumed.map(Report::last);
            vec![
                r.name.clone(),
                table::secs(resumed.map(|x| x.limit_s)),
                table::secs(resumed.and_then(|x| x.first().completion_s)),
                table::secs(second.and_then(|c| c.completion_s)),
                table::secs(r.in_early_data().and_then(|c| c.completion_s)),
                table::secs(baseline.and_then(|x| x.last().completion_s)),
                table::times(resumed.and_then(|x| x.speedup)),
                table::times(second.and_then(|c| c.ratio_to_limit)),
                r.versus_baseline()
                    .map_or("-".into(), |v| format!("{:+.1}%", (v - 1.0) * 100.0)),
                match (&r.resumed, &r.baseline, &r.early_data) {
                    (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => format!("error: {e}"),
                    (Ok(x), Ok(_), Ok(_)) => table::cr_summary(x.last()),
                },
            ]
        })
        .collect();
    table::render(
        &[
            "scenario",
            "limit",
            "first",
            "resumed",
            "0-RTT",
            "baseline",
            "speed-up",
            "vs limit",
            "vs baseline",
            "careful resume",
        ],
        &rows,
    )
}

/// The suite's sender-efficiency table: for the resumed run and the same
/// run with quiche's default packet sizes, the last connection's packets,
/// how many of them a full-packet sender needs, the share of short
/// datagrams, wire bytes per body byte and completion.
pub fn render_packing(results: &[CaseResult]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let now = r.resumed.as_ref().ok().map(Report::last);
            let before = r.small_packets.as_ref().ok().map(Report::last);
            let p_now = now.and_then(|c| c.packing.as_ref());
            let p_before = before.and_then(|c| c.packing.as_ref());
            let cell = |p: Option<&PackingReport>, show: fn(&PackingReport) -> String| {
                p.map_or_else(|| "-".to_string(), show)
            };
            let slower = match (
                now.and_then(|c| c.completion_s),
                before.and_then(|c| c.completion_s),
            ) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:+.1}%", (a / b - 1.0) * 100.0),
                _ => "-".into(),
            };
            let short = |p: &PackingReport| format!("{:.0}%", p.below_90pct_share * 100.0);
            let wire = |p: &PackingReport| format!("{:.3}", p.wire_bytes_per_body_byte);
            vec![
                r.name.clone(),
                cell(p_now, |p| p.stream_packets_needed.to_string()),
                cell(p_now, |p| p.stream_packets.to_string()),
                cell(p_before, |p| p.stream_packets.to_string()),
                table::times(p_now.map(|p| p.stream_packet_ratio)),
                table::times(p_before.map(|p| p.stream_packet_ratio)),
                cell(p_now, |p| p.control_packets.to_string()),
                cell(p_now, short),
                cell(p_before, short),
                cell(p_now, wire),
                cell(p_before, wire),
                slower,
            ]
        })
        .collect();
    table::render(
        &[
            "scenario",
            "needed",
            "stream pkts",
            "quiche",
            "ratio",
            "quiche",
            "control",
            "<90%",
            "quiche",
            "wire/body",
            "quiche",
            "completion",
        ],
        &rows,
    )
}

/// A named flash crowd of the suite.
#[derive(Clone, Debug)]
pub struct CrowdCase {
    /// Short name, stable across releases.
    pub name: String,
    /// What the case shows.
    pub about: &'static str,
    /// The crowd.
    pub crowd: Crowd,
}

/// The suite's flash crowds, on a GEO path (50 Mbit/s, 600 ms, 1 x BDP of
/// queue, 1 MiB each, starting within 100 ms): 10 and 50 clients with
/// CUBIC, 50 with an incumbent long download, and 100 with BBR2, alone and
/// with an incumbent; and the crowd `make load-probe` runs on real sockets
/// (10 clients, 2 MiB at 50 Mbit/s and 300 ms), with CUBIC and BBR2. A lone 1 MiB download
/// at 600 ms never leaves slow start and saves an eighth of the path
/// (483 kB of 3.75 MB); 2 MiB at 300 ms saves all of it.
pub fn crowd_cases() -> Vec<CrowdCase> {
    let crowd = |clients, cc, competing| Crowd {
        clients,
        cc,
        competing,
        ..Crowd::default()
    };
    let bbr2 = CongestionControl::Bbr2;
    let cubic = CongestionControl::Cubic;
    let probe = |cc| Crowd {
        rtt: ms(300),
        size: 2 * MIB,
        ..crowd(10, cc, false)
    };
    vec![
        CrowdCase {
            name: "crowd-10".into(),
            about: "10 clients resume at once",
            crowd: crowd(10, cubic, false),
        },
        CrowdCase {
            name: "crowd-10-2MiB-300ms".into(),
            about: "10 clients, 2 MiB at 300 ms, as make load-probe on real sockets",
            crowd: probe(cubic),
        },
        CrowdCase {
            name: "crowd-10-2MiB-300ms-bbr2".into(),
            about: "10 clients, 2 MiB at 300 ms, BBR2",
            crowd: probe(bbr2),
        },
        CrowdCase {
            name: "crowd-50".into(),
            about: "50 clients resume at once",
            crowd: crowd(50, cubic, false),
        },
        CrowdCase {
            name: "crowd-50-competing".into(),
            about: "50 clients resume into a link a long download carries",
            crowd: crowd(50, cubic, true),
        },
        CrowdCase {
            name: "crowd-100-bbr2".into(),
            about: "100 clients resume at once, BBR2",
            crowd: crowd(100, bbr2, false),
        },
        CrowdCase {
            name: "crowd-100-bbr2-competing".into(),
            about: "100 clients resume into a link a long download carries, BBR2",
            crowd: crowd(100, bbr2, true),
        },
    ]
}

/// A crowd case's result.
#[derive(Clone, Debug, Serialize)]
pub struct CrowdResult {
    /// The case's name.
    pub name: String,
    /// What it shows.
    pub about: &'static str,
    /// Both arms, or why the run failed.
    pub crowd: Result<CrowdReport, String>,
    /// Wall time of the slower arm, in seconds.
    pub wall_s: f64,
}

/// Runs `cases`, each arm of each on its own thread, on the available
/// cores.
pub fn run_crowds(cases: Vec<CrowdCase>) -> Vec<CrowdResult> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs: Vec<(Crowd, bool)> = cases
        .iter()
        .flat_map(|c| [(c.crowd.clone(), true), (c.crowd.clone(), false)])
        .collect();
    let timed = |(crowd, resume): (Crowd, bool)| {
        let started = std::time::Instant::now();
        let arm = crowd::run_arm(&crowd, resume).map_err(|e| e.to_string());
        (arm, started.elapsed().as_secs_f64())
    };
    let mut arms = run_parallel(jobs, threads, timed).into_iter();
    cases
        .into_iter()
        .map(|case| {
            let mut next = || arms.next().unwrap_or((Err("not run".to_string()), 0.0));
            let [(resume, a), (baseline, b)] = [next(), next()];
            let crowd = match (resume, baseline) {
                (Ok(r), Ok(b)) => Ok(CrowdReport::of(&case.crowd, &r, &b)),
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            CrowdResult {
                name: case.name,
                about: case.about,
                crowd,
                wall_s: (a.max(b) * 1000.0).round() / 1000.0,
            }
        })
        .collect()
}

/// The suite's crowd table: two rows per case, `resume` (with its ratios
/// to the baseline and the targets it misses) and `baseline`.
pub fn render_crowds(results: &[CrowdResult]) -> String {
    let mut header = table::CROWD_HEADER.to_vec();
    header.push("vs baseline");
    let mut rows = Vec::new();
    for r in results {
        match &r.crowd {
            Ok(report) => {
                let mut two = table::crowd_rows(&r.name, report);
                let ratio = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}x"));
                let missed = report.missed_targets();
                two[0].push(format!(
                    "median {}, p95 {}, lost {}{}",
                    ratio(report.ratio(|a| a.median_completion_s)),
                    ratio(report.ratio(|a| a.p95_completion_s)),
                    report.lost_ratio(),
                    if missed.is_empty() {
                        String::new()
                    } else {
                        format!("; missed: {}", missed.join(", "))
                    }
                ));
                rows.extend(two);
            }
            Err(e) => rows.push(vec![r.name.clone(), format!("error: {e}")]),
        }
    }
    table::render(&header, &rows)
}
