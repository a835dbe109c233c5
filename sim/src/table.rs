//! Plain-text tables for people: one session, the suite, the demo.

use std::fmt::Write as _;

use crate::report::ConnectionReport;
use crate::report::Report;
use crate::report::TokenReport;
use crate::units::ByteSize;

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

/// "first", "second", ... for the connections of a session.
fn connection_name(index: usize) -> String {
    const NAMES: [&str; 6] = ["first", "second", "third", "fourth", "fifth", "sixth"];
    NAMES
        .get(index)
        .map_or_else(|| format!("#{}", index + 1), |name| name.to_string())
}

/// The human form of `cr-sim run`.
pub fn session(report: &Report) -> String {
    let s = &report.scenario;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} over {} Mbit/s, RTT {} ms, {} {}, seed {}{}",
        ByteSize(s.size_bytes),
        s.rate_bps as f64 / 1e6,
        s.rtt_s * 1e3,
        s.cc,
        s.app,
        s.seed,
        if s.resume {
            ""
        } else {
            ", no resume (baseline)"
        }
    );
    let _ = writeln!(out, "physical limit 2*RTT + L/B: {:.3} s\n", report.limit_s);
    let saved = |t: &Option<TokenReport>| {
        t.map_or("-".into(), |t| format!("{} kB", t.capacity_bytes / 1000))
    };
    let rows: Vec<Vec<String>> = report
        .connections
        .iter()
        .enumerate()
        .map(|(index, c)| {
            vec![
                connection_name(index),
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
        })
        .collect();
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
    let _ = writeln!(
        out,
        "\nspeed-up (first / {}): {}",
        connection_name(report.connections.len() - 1),
        times(report.speedup)
    );
    if let Some(c) = &report.competing {
        let _ = writeln!(
            out,
            "competing flow: {:.2} Mbit/s before, {:.2} Mbit/s during the second connection ({})",
            c.before_mbps,
            c.during_mbps,
            times(c.kept)
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
            packing: None,
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
