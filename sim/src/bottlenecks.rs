//! Careful Resume behind the bottlenecks users meet besides a drop-tail
//! queue, as the docs report it: fq_codel, a token-bucket policer at half
//! the saved rate, links whose rate and delay follow a schedule, and paths
//! that change while a resumed connection jumps. Each case runs resumed and
//! without a token, CUBIC, Reno and BBR2; `make results` writes the table
//! ([`render`]) into docs/results.md and its summary ([`render_summary`])
//! into the README, and `make sim-guards` checks both.

use std::time::Duration;

use serde::Serialize;

use crate::parallel::run_parallel;
use crate::report::{ConnectionReport, Report};
use crate::scenario::Scenario;
use crate::suite::{report, Case};
use crate::table;
use crate::units::{QueueLimit, Rate};
use cr_serve::bottleneck::{Discipline, Policer, Schedule};
use cr_serve::CongestionControl;

/// The controllers every case runs with.
pub const CONTROLLERS: [CongestionControl; 3] = [
    CongestionControl::Cubic,
    CongestionControl::Reno,
    CongestionControl::Bbr2,
];

/// A GEO terminal through a rain fade (`sim/schedules/geo-rain-fade.txt`).
pub const RAIN_FADE: &str = include_str!("../schedules/geo-rain-fade.txt");
/// A LEO path reconfiguring every 15 s (`sim/schedules/leo-15s.txt`).
pub const LEO: &str = include_str!("../schedules/leo-15s.txt");
/// An LTE downlink (`sim/schedules/cellular-lte.txt`).
pub const LTE: &str = include_str!("../schedules/cellular-lte.txt");
/// A GEO path whose rate drops to a quarter 1.2 s into the connection,
/// while a resumed connection's jump is unvalidated (it begins 1.5 RTT
/// in, at 0.9 s, and lasts at most one RTT).
pub const DROP_IN_THE_JUMP: &str = "0s 50mbit 600ms\n1.2s 12mbit 600ms\n";
/// A LEO reconfiguration while a resumed connection's jump is unvalidated
/// (it begins at 60 ms and lasts at most one RTT): the rate falls from 100
/// to 40 Mbit/s and the RTT grows from 40 to 60 ms, 80 ms in.
pub const LEO_IN_THE_JUMP: &str = "0s 100mbit 40ms\n0.08s 40mbit 60ms\n";

/// A built-in schedule, parsed.
pub(crate) fn schedule(text: &str) -> Schedule {
    text.parse().expect("the built-in schedules parse")
}

/// 10 MiB at 50 Mbit/s and `rtt_ms`, the path the bottleneck cases share.
fn geo(rtt_ms: u64) -> Scenario {
    Scenario {
        rate: Rate::mbit(50),
        rtt: Duration::from_millis(rtt_ms),
        size: 10 << 20,
        ..Scenario::default()
    }
}

/// The cases, in the order of the docs' table; each runs with every one of
/// [`CONTROLLERS`] (the scenario's own controller is replaced).
pub fn cases() -> Vec<Case> {
    let policer: Policer = "25mbit,1MiB".parse().expect("a valid policer");
    let grown = Scenario {
        rate: Rate::mbit(10),
        rate2: Some(Rate::mbit(50)),
        ..geo(600)
    };
    let three = |scenario: Scenario| Scenario {
        later_sizes: vec![10 << 20; 2],
        ..scenario
    };
    vec![
        Case {
            name: "fq_codel-300ms".into(),
            about: "fq_codel (RFC 8290 defaults), 10 MiB at 50 Mbit/s and 300 ms",
            scenario: Scenario {
                discipline: Discipline::FqCodel,
                ..geo(300)
            },
        },
        Case {
            name: "fq_codel-600ms".into(),
            about: "the same at 600 ms",
            scenario: Scenario {
                discipline: Discipline::FqCodel,
                ..geo(600)
            },
        },
        Case {
            name: "policer-half".into(),
            about: "the second connection's path policed at half the saved rate, 1 MiB burst",
            scenario: Scenario {
                policer2: Some(policer),
                ..geo(600)
            },
        },
        Case {
            name: "rain-fade".into(),
            about: "GEO rain fade: 50 Mbit/s down to 13 from 4.5 s, back by 28 s",
            scenario: Scenario {
                schedule: Some(schedule(RAIN_FADE)),
                ..geo(600)
            },
        },
        Case {
            name: "leo".into(),
            about: "LEO at 100 Mbit/s and 40 ms, a handover 2 s in, then every 15 s",
            scenario: Scenario {
                rate: Rate::mbit(100),
                schedule: Some(schedule(LEO)),
                ..geo(40)
            },
        },
        Case {
            name: "lte".into(),
            about: "LTE downlink, 1-20 Mbit/s and 50-90 ms changing every second, 10 MiB",
            scenario: Scenario {
                rate: Rate::mbit(12),
                schedule: Some(schedule(LTE)),
                ..geo(60)
            },
        },
        Case {
            name: "drop-in-jump".into(),
            about:
                "50 to 12 Mbit/s in the second connection's jump, 1 x BDP queue; three downloads",
            scenario: three(Scenario {
                schedule2: Some(schedule(DROP_IN_THE_JUMP)),
                ..geo(600)
            }),
        },
        Case {
            name: "drop-in-jump-shallow".into(),
            about: "the same behind a queue of a quarter BDP",
            scenario: three(Scenario {
                schedule2: Some(schedule(DROP_IN_THE_JUMP)),
                queue: QueueLimit::Bdp(0.25),
                ..geo(600)
            }),
        },
        Case {
            name: "grown-fivefold".into(),
            about: "10 Mbit/s saved, 50 Mbit/s on the second connection's path, 600 ms",
            scenario: grown.clone(),
        },
        Case {
            name: "grown-fivefold-past-saved".into(),
            about: "the same with slow start past the saved capacity (--slow-start-past-saved)",
            scenario: Scenario {
                slow_start_past_saved: true,
                ..grown
            },
        },
        Case {
            name: "leo-in-jump".into(),
            about: "LEO reconfiguration in the second connection's jump; three downloads",
            scenario: three(Scenario {
                rate: Rate::mbit(100),
                schedule2: Some(schedule(LEO_IN_THE_JUMP)),
                ..geo(40)
            }),
        },
    ]
}

/// One case with one controller, resumed and without a token.
#[derive(Clone, Debug, Serialize)]
pub struct BottleneckResult {
    /// The case's name.
    pub name: String,
    /// What it shows.
    pub about: &'static str,
    /// The controller.
    pub cc: &'static str,
    /// The session with resume on.
    pub resumed: Result<Report, String>,
    /// The same session without tokens.
    pub baseline: Result<Report, String>,
}

impl BottleneckResult {
    /// The second connection resumed (the one that meets the bottleneck
    /// with a saved set), when the session ran.
    pub fn second(&self) -> Option<&ConnectionReport> {
        self.resumed.as_ref().ok()?.connections.get(1)
    }

    /// The same connection without a token.
    pub fn second_without_token(&self) -> Option<&ConnectionReport> {
        self.baseline.as_ref().ok()?.connections.get(1)
    }

    /// The second connection's completion resumed over without a token.
    pub fn versus_baseline(&self) -> Option<f64> {
        let resumed = self.second()?.completion_s?;
        let baseline = self.second_without_token()?.completion_s?;
        (baseline > 0.0).then(|| resumed / baseline)
    }

    /// The capacity of the saved set the third connection presented, when
    /// the case has one: what the connection that met the change handed on.
    pub fn handed_on_capacity(&self) -> Option<u64> {
        let third = self.resumed.as_ref().ok()?.connections.get(2)?;
        Some(third.token_presented.as_ref()?.capacity_bytes)
    }
}

/// Runs each case with each controller, resumed and without a token, on
/// the available cores.
pub fn run(cases: &[Case]) -> Vec<BottleneckResult> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runs: Vec<(&Case, CongestionControl)> = cases
        .iter()
        .flat_map(|case| CONTROLLERS.map(|cc| (case, cc)))
        .collect();
    let jobs: Vec<Scenario> = runs
        .iter()
        .flat_map(|(case, cc)| {
            let resumed = Scenario {
                cc: *cc,
                ..case.scenario.clone()
            };
            [resumed.clone(), resumed.baseline()]
        })
        .collect();
    let mut reports = run_parallel(jobs, threads, |s| report(&s)).into_iter();
    runs.into_iter()
        .map(|(case, cc)| {
            let mut next = || reports.next().unwrap_or(Err("not run".to_string()));
            BottleneckResult {
                name: case.name.clone(),
                about: case.about,
                cc: cc.name(),
                resumed: next(),
                baseline: next(),
            }
        })
        .collect()
}

/// The table: per case and controller, the second connection's completion
/// without a token and resumed, their ratio, packets lost, how its Careful
/// Resume ended, and the capacity the next connection resumed from.
pub fn render(results: &[BottleneckResult]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let second = r.second();
            let without = r.second_without_token();
            let lost =
                |c: Option<&ConnectionReport>| c.map_or("-".into(), |c| c.packets_lost.to_string());
            vec![
                r.name.clone(),
                r.cc.to_string(),
                table::secs(without.and_then(|c| c.completion_s)),
                table::secs(second.and_then(|c| c.completion_s)),
                r.versus_baseline()
                    .map_or("-".into(), |x| format!("{x:.2}x")),
                format!("{} / {}", lost(second), lost(without)),
                match (&r.resumed, &r.baseline) {
                    (Err(e), _) | (_, Err(e)) => format!("error: {e}"),
                    (Ok(_), Ok(_)) => second.map_or("-".into(), |c| {
                        let summary = table::cr_summary(c);
                        match c.cr.exit_trigger() {
                            Some(trigger) => format!("{summary} ({trigger})"),
                            None => summary,
                        }
                    }),
                },
                r.handed_on_capacity()
                    .map_or("-".into(), |b| format!("{} kB", b / 1000)),
            ]
        })
        .collect();
    table::render(
        &[
            "case",
            "cc",
            "no token",
            "resumed",
            "x",
            "lost (resumed / no token)",
            "careful resume",
            "next resumes from",
        ],
        &rows,
    )
}

/// The short table the README quotes: per case, the resumed connection's
/// time over the time without a token with each controller, and its
/// packets lost against those without a token.
pub fn render_summary(results: &[BottleneckResult]) -> String {
    let mut out = String::from(
        "| case | CUBIC | Reno | BBR2 | lost, resumed / no token |\n|---|---:|---:|---:|---|\n",
    );
    let mut names: Vec<&str> = Vec::new();
    for r in results {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    for name in names {
        let mine: Vec<&BottleneckResult> = results.iter().filter(|r| r.name == name).collect();
        let ratio = |cc: &str| {
            mine.iter()
                .find(|r| r.cc == cc)
                .and_then(|r| r.versus_baseline())
                .map_or("-".into(), |x| format!("{x:.2}x"))
        };
        let lost: Vec<String> = mine
            .iter()
            .map(|r| {
                let of = |c: Option<&ConnectionReport>| {
                    c.map_or("-".into(), |c| c.packets_lost.to_string())
                };
                format!("{} / {}", of(r.second()), of(r.second_without_token()))
            })
            .collect();
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} |\n",
            ratio("cubic"),
            ratio("reno"),
            ratio("bbr2"),
            lost.join(", ")
        ));
    }
    out.trim_end().to_string()
}
