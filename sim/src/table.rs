//! Plain-text tables for people: one session, the suite, the demo.

use std::fmt::Write as _;

use crate::cgnat::CgnatReport;
use crate::crowd::ArmReport;
use crate::crowd::CrowdReport;
use crate::crowd_seeds::SeedsReport;
use crate::report::ConnectionReport;
use crate::report::Report;
use crate::report::TokenReport;
use crate::units::ByteSize;
use cr_serve::bottleneck::{Discipline, Policer};

/// Left-aligned first column, right-aligned others, two spaces apart.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, cell) in cells.enumerate().take(columns) {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i == 0 {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            } else {
                text.push_str("  ");
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// Seconds with three decimals, or "-".
pub fn secs(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.3} s"))
}

/// A ratio with two decimals and an x, or "-".
pub fn times(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.2}x"))
}

/// What Careful Resume did, in a few words.
pub fn cr_summary(c: &ConnectionReport) -> String {
    if c.cr.phases.is_empty() {
        return "no CR events".to_string();
    }
    let jump =
        c.cr.jump_cwnd
            .map_or(String::new(), |w| format!(" to {} kB", w / 1000));
    let end = c.cr.final_phase.unwrap_or("-");
    let retreat = if c.cr.phases.iter().any(|p| p.to == "safe_retreat") {
        ", retreated"
    } else {
        ""
    };
    if c.cr.engaged {
        format!("jumped{jump}{retreat}, ended {end}")
    } else {
        format!("no jump, ended {end}")
    }
}

/// The columns of [`crowd_rows`].
pub const CROWD_HEADER: [&str; 15] = [
    "scenario",
    "arm",
    "clients",
    "engaged",
    "retreated",
    "jumped",
    "median",
    "p95",
    "max",
    "lost",
    "sent",
    "jain",
    "incumbent",
    "early",
    "in jumps",
];

/// A crowd's two rows (`resume`, then `baseline`) under [`CROWD_HEADER`],
/// the first cell `name`.
pub fn crowd_rows(name: &str, report: &CrowdReport) -> Vec<Vec<String>> {
    let row = |arm: &str, a: &ArmReport| {
        let share = |s: Option<f64>| s.map_or("-".into(), |s| format!("{:.0}%", s * 100.0));
        vec![
            name.to_string(),
            arm.to_string(),
            a.clients.to_string(),
            a.engaged.to_string(),
            a.retreated.to_string(),
            match a.jump_bytes {
                0 => "-".into(),
                b => format!("{} kB", b / 1000),
            },
            secs(a.median_completion_s),
            secs(a.p95_completion_s),
            secs(a.max_completion_s),
            a.lost_packets.to_string(),
            a.sent_packets.to_string(),
            a.jain_fairness.map_or("-".into(), |j| format!("{j:.3}")),
            share(a.incumbent_share),
            share(a.incumbent_share_early),
            share(a.incumbent_link_share_in_jumps),
        ]
    };
    vec![
        row("resume", &report.resume),
        row("baseline", &report.baseline),
    ]
}

/// A crowd's targets against its baseline, in one line.
pub fn crowd_verdict(report: &CrowdReport) -> String {
    let ratio = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}x"));
    let missed = report.missed_targets();
    format!(
        "resume/baseline: median {} (target <= 1), p95 {} (<= 1.1), lost {} (<= 1.5x); {}",
        ratio(report.ratio(|a| a.median_completion_s)),
        ratio(report.ratio(|a| a.p95_completion_s)),
        report.lost_ratio(),
        if missed.is_empty() {
            "every target met".to_string()
        } else {
            format!("missed: {}", missed.join(", "))
        }
    )
}

/// What a header says of a bottleneck other than a plain drop-tail queue:
/// the queue's discipline and the policers, if any.
fn bottleneck(discipline: &str, policer: Option<Policer>, policer2: Option<Policer>) -> String {
    let mut out = String::new();
    if discipline != Discipline::DropTail.name() {
        let _ = write!(out, ", {discipline}");
    }
    if let Some(policer) = policer {
        let _ = write!(out, ", policed at {policer}");
    }
    if let Some(policer) = policer2 {
        let _ = write!(out, ", later connections policed at {policer}");
    }
    out
}

/// The human form of `cr-sim crowd`.
pub fn crowd(report: &CrowdReport) -> String {
    let mut out = crowd_title(report, &format!("seed {}", report.crowd.seed));
    let _ = writeln!(
        out,
        "alone: median {} (limit {:.3} s), saved {}; the whole crowd's limit {:.3} s\n",
        secs(report.alone.median_completion_s),
        report.limit_s,
        report
            .alone
            .median_saved_bytes
            .map_or("-".into(), |b| format!("{} kB", b / 1000)),
        report.crowd_limit_s,
    );
    let mut header = CROWD_HEADER.to_vec();
    header.remove(0);
    let rows: Vec<Vec<String>> = crowd_rows("", report)
        .into_iter()
        .map(|mut r| {
            r.remove(0);
            r
        })
        .collect();
    out.push_str(&render(&header, &rows));
    let _ = writeln!(out, "\n{}", crowd_verdict(report));
    out
}

/// The first line of a crowd's human form: the crowd and its `seeds`.
fn crowd_title(report: &CrowdReport, seeds: &str) -> String {
    let c = &report.crowd;
    format!(
        "{} clients x {} over {} Mbit/s, RTT {} ms, queue {} B{}, {}, starting within {} ms, {seeds}{}\n",
        c.clients,
        ByteSize(c.size_bytes),
        c.rate_bps as f64 / 1e6,
        c.rtt_s * 1e3,
        c.queue_bytes,
        bottleneck(c.queue_discipline, c.policer, None),
        c.cc,
        c.spread_s * 1e3,
        if c.competing {
            ", with an incumbent long download"
        } else {
            ""
        }
    )
}

/// The human form of `cr-sim crowd --seed FIRST..LAST`: a line per seed,
/// resumed over baseline, and what the seeds say together.
pub fn crowd_seeds(report: &SeedsReport) -> String {
    let (Some(first), Some(last)) = (report.seeds.first(), report.seeds.last()) else {
        return String::new();
    };
    let seeds = format!("seeds {}..{}", first.crowd.seed, last.crowd.seed);
    let mut out = crowd_title(first, &seeds);
    let _ = writeln!(out, "resumed over baseline, per seed:\n");
    let ratio = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3}x"));
    let share = |s: Option<f64>| s.map_or("-".into(), |s| format!("{:.0}%", s * 100.0));
    let rows: Vec<Vec<String>> = report
        .seeds
        .iter()
        .map(|r| {
            vec![
                r.crowd.seed.to_string(),
                ratio(r.ratio(|a| a.median_completion_s)),
                ratio(r.ratio(|a| a.p95_completion_s)),
                format!("{} / {}", r.resume.lost_packets, r.baseline.lost_packets),
                format!("{} / {}", r.resume.retreated, r.resume.engaged),
                r.resume
                    .jain_fairness
                    .map_or("-".into(), |j| format!("{j:.3}")),
                format!(
                    "{} / {}",
                    share(r.resume.incumbent_link_share_in_jumps),
                    share(r.baseline.incumbent_link_share_in_jumps)
                ),
            ]
        })
        .collect();
    let header = [
        "seed",
        "median",
        "p95",
        "lost (resumed / baseline)",
        "retreated / jumped",
        "jain",
        "incumbent in jumps (resumed / baseline)",
    ];
    out.push_str(&render(&header, &rows));
    let s = &report.summary;
    let _ = writeln!(
        out,
        "\nover {} seeds: median {} on average (worst {}), p95 {} (worst {}); slower in {} of {}",
        s.runs,
        ratio(s.median_ratio_mean),
        ratio(s.median_ratio_max),
        ratio(s.p95_ratio_mean),
        ratio(s.p95_ratio_max),
        s.slower_runs,
        s.runs,
    );
    let _ = writeln!(
        out,
        "every seed's clients pooled: median {}, p95 {}; lost {} resumed, {} baseline; {} of {} jumps retreated",
        ratio(s.pooled_median_ratio),
        ratio(s.pooled_p95_ratio),
        s.lost_resumed,
        s.lost_baseline,
        s.retreated,
        s.engaged,
    );
    out
}

/// The human form of `cr-sim cgnat`.
pub fn cgnat(report: &CgnatReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} users behind one /24, {} downloads of {} each within {} s, over {} Mbit/s, RTT {} ms, {}, seed {} (limit alone {:.3} s)\n",
        report.users,
        report.downloads_per_user,
        ByteSize(report.size_bytes),
        report.window_s,
        report.rate_bps as f64 / 1e6,
        report.rtt_s * 1e3,
        report.cc,
        report.seed,
        report.limit_s,
    );
    let rows: Vec<Vec<String>> = report
        .arms
        .iter()
        .map(|a| {
            let refused: Vec<String> = a
                .refused
                .iter()
                .map(|(why, n)| format!("{why} {n}"))
                .collect();
            vec![
                a.arm.to_string(),
                a.prefix_len.map_or("-".into(), |p| format!("/{p}")),
                a.downloads.to_string(),
                a.presented.to_string(),
                a.engaged.to_string(),
                a.retreated.to_string(),
                if refused.is_empty() {
                    "-".into()
                } else {
                    refused.join(", ")
                },
                secs(a.median_completion_s),
                secs(a.mean_completion_s),
                secs(a.median_repeat_completion_s),
                secs(a.mean_repeat_completion_s),
                a.lost_packets.to_string(),
                a.max_concurrent.to_string(),
                format!("{:.1} s", a.saved_vs_baseline_s),
            ]
        })
        .collect();
    out.push_str(&render(
        &[
            "arm",
            "set per",
            "downloads",
            "presented",
            "engaged",
            "retreated",
            "refused",
            "median",
            "mean",
            "repeat median",
            "repeat mean",
            "lost",
            "at once",
            "saved",
        ],
        &rows,
    ));
    out
}

/// "first", "second", ... for the connections of a session.
fn connection_name(index: usize) -> String {
    const NAMES: [&str; 6] = ["first", "second", "third", "fourth", "fifth", "sixth"];
    NAMES
        .get(index)
        .map_or_else(|| format!("#{}", index + 1), |name| name.to_string())
}

/// The name of a session's connection `index` in the table: "first",
/// "second", ..., with ", 0-RTT" for a later connection whose request the
/// server accepted as early data, and ", no 0-RTT" for one of a session with
/// early data whose request went in 1-RTT after all (no ticket to offer).
fn row_name(report: &Report, index: usize) -> String {
    let name = connection_name(index);
    match report.connections.get(index) {
        Some(c) if c.early_data => format!("{name}, 0-RTT"),
        Some(_) if index > 0 && report.scenario.early_data => format!("{name}, no 0-RTT"),
        _ => name,
    }
}

/// A session's table row for its connection `c`, named `name`.
fn session_row(name: String, c: &ConnectionReport) -> Vec<String> {
    let saved = |t: &Option<TokenReport>| {
        t.map_or("-".into(), |t| format!("{} kB", t.capacity_bytes / 1000))
    };
    vec![
        name,
        ByteSize(c.size_bytes).to_string(),
        secs(c.completion_s),
        secs(c.ttfb_s),
        c.goodput_mbps
            .map_or("-".into(), |g| format!("{g:.2} Mbit/s")),
        c.packets_sent.to_string(),
        c.packets_lost.to_string(),
        times(c.ratio_to_limit),
        saved(&c.token_presented),
        saved(&c.token_left),
        cr_summary(c),
    ]
}

/// The human form of `cr-sim run`: the session's connections, then, when
/// `in_early_data` holds the same session run with early data, its later
/// connections in 0-RTT, so that the two ways of resuming read side by
/// side against the same first connection.
pub fn session(report: &Report, in_early_data: Option<&Report>) -> String {
    let s = &report.scenario;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} over {} Mbit/s, RTT {} ms{}, {} {}, seed {}{}{}",
        ByteSize(s.size_bytes),
        s.rate_bps as f64 / 1e6,
        s.rtt_s * 1e3,
        bottleneck(s.queue_discipline, s.policer, s.policer2)
            + match (&s.schedule, &s.schedule2) {
                (_, Some(_)) => ", later connections' rate and delay on a schedule",
                (Some(_), None) => ", rate and delay on a schedule",
                (None, None) => "",
            },
        s.cc,
        s.app,
        s.seed,
        if s.resume {
            ""
        } else {
            ", no resume (baseline)"
        },
        if s.early_data {
            ", later requests as early data (0-RTT)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "physical limit 2*RTT + L/B: {:.3} s\n", report.limit_s);
    let mut rows: Vec<Vec<String>> = (0..report.connections.len())
        .map(|index| session_row(row_name(report, index), &report.connections[index]))
        .collect();
    if let Some(other) = in_early_data {
        rows.extend(
            (1..other.connections.len())
                .map(|index| session_row(row_name(other, index), &other.connections[index])),
        );
    }
    out.push_str(&render(
        &[
            "connection",
            "size",
            "completion",
            "TTFB",
            "goodput",
            "sent",
            "lost",
            "vs limit",
            "saved in",
            "saved out",
            "careful resume",
        ],
        &rows,
    ));
    let last = report.connections.len() - 1;
    let _ = writeln!(
        out,
        "\nspeed-up (first / {}): {}",
        row_name(report, last),
        times(report.speedup)
    );
    if let Some(other) = in_early_data {
        // Against the first connection shown above, the same download.
        let speedup = report
            .first()
            .completion_s
            .zip(other.last().completion_s)
            .filter(|&(_, b)| b > 0.0)
            .map(|(a, b)| (a / b * 1e3).round() / 1e3);
        let _ = writeln!(
            out,
            "speed-up (first / {}): {}",
            row_name(other, other.connections.len() - 1),
            times(speedup)
        );
    }
    for (label, r) in std::iter::once(("", report)).chain(in_early_data.map(|r| (", 0-RTT", r))) {
        if let Some(c) = &r.competing {
            let _ = writeln!(
                out,
                "competing flow: {:.2} Mbit/s before, {:.2} Mbit/s during the second connection{label} ({})",
                c.before_mbps,
                c.during_mbps,
                times(c.kept)
            );
        }
    }
    if in_early_data.is_some() {
        let _ = writeln!(
            out,
            "0-RTT: the request goes with the first flight, a round trip sooner; \
             the jump still waits for the first RTT sample"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let table = render(
            &["name", "value"],
            &[
                vec!["a".into(), "1".into()],
                vec!["longer".into(), "22".into()],
            ],
        );
        assert_eq!(table, "name    value\na           1\nlonger     22\n");
    }

    #[test]
    fn cr_summary_names_the_jump_and_a_retreat() {
        use crate::report::{CrReport, PhaseChangeReport};
        let change = |to| PhaseChangeReport {
            t_s: 1.0,
            from: None,
            to,
            trigger: None,
        };
        let connection = |phases: Vec<PhaseChangeReport>| ConnectionReport {
            completion_s: None,
            ttfb_s: None,
            goodput_mbps: None,
            packets_sent: 0,
            packets_lost: 0,
            size_bytes: 1 << 20,
            token_presented: None,
            token_left: None,
            limit_s: 1.0,
            ratio_to_limit: None,
            cr: CrReport {
                engaged: true,
                jump_cwnd: Some(1_329_697),
                final_phase: phases.last().map(|p| p.to),
                phases,
            },
            early_data: false,
            packing: None,
            persistent_congestion: 0,
            probe_timeouts: 0,
            spurious_losses: 0,
            slow_start_exit: None,
        };
        let retreated = connection(vec![
            change("unvalidated"),
            change("safe_retreat"),
            change("normal"),
        ]);
        assert_eq!(
            cr_summary(&retreated),
            "jumped to 1329 kB, retreated, ended normal"
        );
        let validated = connection(vec![change("unvalidated"), change("normal")]);
        assert_eq!(cr_summary(&validated), "jumped to 1329 kB, ended normal");
    }
}
