//! The simulator's figures as the docs quote them: each is a block of a
//! Markdown file between two marker lines, written by `cr-sim results`
//! (`make results`) from the suite's own output, so that no figure is
//! copied by hand. Since the simulator is deterministic, a test can run the
//! suite and fail when a committed block differs from what the code gives.
//!
//! A block is the text between
//!
//! ```text
//! <!-- cr-sim results: NAME -->
//! <!-- /cr-sim results -->
//! ```
//!
//! (each marker a line of its own); the lines between are replaced whole.
//! The blocks are `headline`, `suite`, `packing`, `crowds`,
//! `crowds-competing` ([`blocks`]), `crowds-budget` ([`budget_block`]),
//! `first-connections` ([`first_connections_block`]), `bottlenecks` and
//! `bottlenecks-summary` ([`bottlenecks_blocks`]).

use crate::bottlenecks::{self, BottleneckResult};
use crate::first_connections::{self, SweepRow};
use crate::suite::{self, CaseResult, CrowdResult};
use crate::table;

/// The marker that opens block `name`.
fn opening(name: &str) -> String {
    format!("<!-- cr-sim results: {name} -->")
}

/// The marker that closes every block.
const CLOSING: &str = "<!-- /cr-sim results -->";

/// The blocks the suite's results fill, by name: the headline table
/// (`headline`), the scenario table (`suite`), the sender-efficiency table
/// (`packing`), the crowds without a long download beside them (`crowds`)
/// and, when `crowds` has them, those with one (`crowds-competing`).
pub fn blocks(results: &[CaseResult], crowds: &[CrowdResult]) -> Vec<(&'static str, String)> {
    let (competing, alone): (Vec<CrowdResult>, Vec<CrowdResult>) =
        crowds.iter().cloned().partition(is_competing);
    let mut blocks = vec![
        ("headline", headline(results, crowds)),
        ("suite", fenced(&suite::render(results))),
        ("packing", fenced(&suite::render_packing(results))),
        ("crowds", fenced(&suite::render_crowds(&alone))),
    ];
    if !competing.is_empty() {
        blocks.push((
            "crowds-competing",
            fenced(&suite::render_crowds(&competing)),
        ));
    }
    blocks
}

/// The block comparing each crowd with the jump budget (`with`) and
/// without it (`without`, the same cases with `jump_budget` off), each
/// against its baseline (`crowds-budget`).
pub fn budget_block(with: &[CrowdResult], without: &[CrowdResult]) -> (&'static str, String) {
    let mut out = String::from(
        "| case (seed 1) | budget | engaged | retreated | median | p95 | lost | Jain |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for on in with {
        let off = without.iter().find(|r| r.name == on.name);
        for (label, result) in [("on", Some(on)), ("off", off)] {
            let name = if label == "on" { on.name.as_str() } else { "" };
            let Some(report) = result.and_then(|r| r.crowd.as_ref().ok()) else {
                out.push_str(&format!("| {name} | {label} | - | - | - | - | - | - |\n"));
                continue;
            };
            let ratio = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}x"));
            let lost = match (report.resume.lost_packets, report.baseline.lost_packets) {
                (resumed, 0) => format!("{} vs 0", thousands(resumed)),
                (0, baseline) => format!("0 vs {}", thousands(baseline)),
                (resumed, baseline) => format!("{:.2}x", resumed as f64 / baseline as f64),
            };
            out.push_str(&format!(
                "| {name} | {label} | {} | {} | {} | {} | {lost} | {} |\n",
                report.resume.engaged,
                report.resume.retreated,
                ratio(report.ratio(|a| a.median_completion_s)),
                ratio(report.ratio(|a| a.p95_completion_s)),
                report
                    .resume
                    .jain_fairness
                    .map_or("-".into(), |j| format!("{j:.3}")),
            ));
        }
    }
    ("crowds-budget", out.trim_end().to_string())
}

/// The blocks of the bottleneck cases: the table (`bottlenecks`) and the
/// README's summary of it (`bottlenecks-summary`).
pub fn bottlenecks_blocks(results: &[BottleneckResult]) -> [(&'static str, String); 2] {
    [
        ("bottlenecks", fenced(&bottlenecks::render(results))),
        ("bottlenecks-summary", bottlenecks::render_summary(results)),
    ]
}

/// The block of the first-connection sweep (`first-connections`).
pub fn first_connections_block(rows: &[SweepRow]) -> (&'static str, String) {
    (
        "first-connections",
        fenced(&first_connections::render(rows)),
    )
}

/// Whether a crowd runs beside a long download.
pub fn is_competing(result: &CrowdResult) -> bool {
    result
        .crowd
        .as_ref()
        .is_ok_and(|report| report.crowd.competing)
}

/// `text` as a fenced block of plain text.
fn fenced(text: &str) -> String {
    format!("```text\n{}\n```", text.trim_end())
}

/// The headline table: the demo's two downloads, BBR2 on the path of
/// picoquic's BDP test, and a crowd of fifty, with their limits.
fn headline(results: &[CaseResult], crowds: &[CrowdResult]) -> String {
    let mut out = String::from(
        "| case | path | first | resumed | limit | speed-up |\n|---|---|---:|---:|---:|---:|\n",
    );
    let rows = [
        (
            "rtt-1MiB-600ms",
            "`make demo`, 1 MiB",
            "10 Mbit/s, 600 ms (GEO)",
        ),
        (
            "rtt-10MiB-600ms",
            "`make demo`, 10 MiB",
            "10 Mbit/s, 600 ms",
        ),
        (
            "bbr2-10MB-600ms",
            "10 MB, BBR2 (the path of picoquic's BDP test)",
            "20 Mbit/s, 600 ms",
        ),
    ];
    for (name, case, path) in rows {
        let report = results
            .iter()
            .find(|r| r.name == name)
            .and_then(|r| r.resumed.as_ref().ok());
        let first = report.and_then(|r| r.first().completion_s);
        let resumed = report.and_then(|r| r.last().completion_s);
        out.push_str(&format!(
            "| {case} | {path} | {} | {} | {} | {} |\n",
            table::secs(first),
            table::secs(resumed),
            table::secs(report.map(|r| r.limit_s)),
            table::times(report.and_then(|r| r.speedup)),
        ));
    }
    let crowd = crowds
        .iter()
        .find(|r| r.name == "crowd-50")
        .and_then(|r| r.crowd.as_ref().ok());
    if let Some(crowd) = crowd {
        let (resume, baseline) = (&crowd.resume, &crowd.baseline);
        let speedup = baseline
            .median_completion_s
            .zip(resume.median_completion_s)
            .map(|(b, r)| b / r);
        out.push_str(&format!(
            "| a crowd: 50 clients at once, 1 MiB each (median) | 50 Mbit/s, 600 ms, shared | {} \
             (no tokens) | {} | {} (all 50 MiB) | {}, {} packets lost instead of {} |\n",
            table::secs(baseline.median_completion_s),
            table::secs(resume.median_completion_s),
            table::secs(Some(crowd.crowd_limit_s)),
            table::times(speedup),
            thousands(resume.lost_packets),
            thousands(baseline.lost_packets),
        ));
    }
    out.trim_end().to_string()
}

/// A count with thousands separated by commas, as the docs write them.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `doc` with block `name` holding `text`; an error when the doc has no
/// such block or an unclosed one.
pub fn replace(doc: &str, name: &str, text: &str) -> Result<String, String> {
    let opening = opening(name);
    let start = doc
        .lines()
        .position(|line| line.trim() == opening)
        .ok_or_else(|| format!("no `{opening}` line"))?;
    let lines: Vec<&str> = doc.lines().collect();
    let end = lines[start + 1..]
        .iter()
        .position(|line| line.trim() == CLOSING)
        .map(|offset| start + 1 + offset)
        .ok_or_else(|| format!("`{opening}` is never closed by `{CLOSING}`"))?;
    let mut out: Vec<&str> = lines[..=start].to_vec();
    out.extend(text.lines());
    out.extend(&lines[end..]);
    let mut joined = out.join("\n");
    if doc.ends_with('\n') {
        joined.push('\n');
    }
    Ok(joined)
}

/// The names of the blocks of `doc` that differ from `blocks` (blocks the
/// doc does not have are skipped).
pub fn stale<'a>(doc: &str, blocks: &'a [(&'static str, String)]) -> Vec<&'a str> {
    blocks
        .iter()
        .filter(|(name, text)| replace(doc, name, text).is_ok_and(|updated| updated != doc))
        .map(|(name, _)| *name)
        .collect()
}

/// `doc` with every block of `blocks` it has rewritten; how many it had.
pub fn update(doc: &str, blocks: &[(&'static str, String)]) -> (String, usize) {
    let mut doc = doc.to_string();
    let mut found = 0;
    for (name, text) in blocks {
        if let Ok(updated) = replace(&doc, name, text) {
            doc = updated;
            found += 1;
        }
    }
    (doc, found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str =
        "intro\n<!-- cr-sim results: a -->\nold\nlines\n<!-- /cr-sim results -->\nafter\n";

    #[test]
    fn a_block_is_replaced_whole_and_nothing_else() {
        let updated = replace(DOC, "a", "new").expect("the block");
        assert_eq!(
            updated,
            "intro\n<!-- cr-sim results: a -->\nnew\n<!-- /cr-sim results -->\nafter\n"
        );
        assert_eq!(replace(&updated, "a", "new").as_deref(), Ok(&*updated));
    }

    #[test]
    fn a_missing_or_unclosed_block_is_an_error() {
        assert!(replace(DOC, "b", "x").is_err());
        let unclosed = "<!-- cr-sim results: a -->\nold\n";
        assert!(replace(unclosed, "a", "x")
            .unwrap_err()
            .contains("never closed"));
    }

    #[test]
    fn stale_names_the_blocks_that_differ() {
        let blocks = vec![("a", "old\nlines".to_string()), ("b", "x".to_string())];
        assert!(stale(DOC, &blocks).is_empty());
        let blocks = vec![("a", "edited".to_string())];
        assert_eq!(stale(DOC, &blocks), ["a"]);
    }

    #[test]
    fn counts_take_commas_every_three_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_135), "1,135");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
