//! `cr-sim demo`: Careful Resume on a GEO satellite link, in one command.
//!
//! 10 Mbit/s and 600 ms RTT; 1 MiB and 10 MiB; the first connection against
//! the resumed one (in 1-RTT, and in 0-RTT with its request as early
//! data), with their times, the speed-up, the ratio to the physical limit,
//! and SVG plots of the server's congestion window.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::error::SimError;
use crate::output;
use crate::parallel::run_parallel;
use crate::report::Report;
use crate::scenario::Scenario;
use crate::session::run_session;
use crate::table;
use crate::units::ByteSize;

/// The demo's scenarios: GEO, 1 MiB and 10 MiB.
pub fn scenarios() -> Vec<Scenario> {
    [1u64 << 20, 10 << 20]
        .into_iter()
        .map(|size| Scenario {
            size,
            rtt: Duration::from_millis(600),
            ..Scenario::default()
        })
        .collect()
}

/// Runs the demo, writes qlogs and plots into `dir`, and returns the text
/// to show.
pub fn run(dir: &Path) -> Result<String, SimError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Each scenario in 1-RTT, with the traces the plots need, then in 0-RTT
    // for its time alone.
    let jobs: Vec<(Scenario, bool)> = scenarios()
        .into_iter()
        .flat_map(|s| [(s.clone(), true), (s.in_early_data(), false)])
        .collect();
    let mut outcomes = run_parallel(jobs, threads, |(s, full)| run_session(&s, full)).into_iter();
    let mut rows = Vec::new();
    let mut files = Vec::new();
    while let (Some(outcome), Some(in_early_data)) = (outcomes.next(), outcomes.next()) {
        let outcome = outcome?;
        let in_early_data = Report::of(&in_early_data?);
        let zero_rtt = Some(in_early_data.last())
            .filter(|c| c.early_data)
            .and_then(|c| c.completion_s);
        let size = ByteSize(outcome.scenario.size).to_string();
        let qlog_dir = dir.join(&size);
        output::write_qlogs(&outcome, &qlog_dir)?;
        let svg = dir.join(format!("{size}.svg"));
        output::plot(&outcome, &format!("{size}: "), &svg)?;
        files.push(svg);
        files.push(qlog_dir);
        let report = Report::of(&outcome);
        rows.push(vec![
            size,
            table::secs(Some(report.limit_s)),
            table::secs(report.first().completion_s),
            table::secs(report.last().completion_s),
            table::secs(zero_rtt),
            table::times(report.speedup),
            table::times(report.first().ratio_to_limit),
            table::times(report.last().ratio_to_limit),
            table::cr_summary(report.last()),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Careful Resume on a GEO satellite link: 10 Mbit/s, 600 ms RTT, HTTP/3 GET, CUBIC\n"
    );
    out.push_str(&table::render(
        &[
            "object",
            "limit",
            "first",
            "resumed",
            "0-RTT",
            "speed-up",
            "first/limit",
            "resumed/limit",
            "careful resume",
        ],
        &rows,
    ));
    let _ = writeln!(
        out,
        "\nlimit = 2*RTT + size/rate, the fastest any 1-RTT handshake allows\n\
         0-RTT = resumed with the request as early data: a round trip sooner, \
         but the jump still waits for the connection's first RTT sample"
    );
    let shown = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let _ = writeln!(out, "plots and qlog traces in {}:", shown.display());
    for f in files {
        let _ = writeln!(out, "  {}", f.display());
    }
    Ok(out)
}
