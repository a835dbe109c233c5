//! `cr-load` end to end, small: three clients, two rounds each, against a
//! real `cr-server` through the relay on loopback. Every body arrives
//! intact, and the second round, presenting the first's tokens, resumes.
//! cr-load starts and kills its own server; the test kills only the
//! cr-load it started, and only if it overruns.

use std::time::Duration;

mod support;

/// cr-load's own per-download timeout bounds the run well below this.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn three_clients_two_rounds_all_verified_and_the_second_round_resumes() {
    let text = support::run_cr_load(
        "--clients 3 --rounds 2 --size 1MiB --rate 50mbit --rtt 40ms --spread 100ms --linger 500ms --timeout 15s",
        PATIENCE,
    );

    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON line: {text}");
    let summary: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON");
    let number = |name: &str| {
        summary[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name} in {summary}"))
    };
    assert_eq!(number("connections"), 6, "{summary}");
    assert_eq!(number("completed"), 6, "{summary}");
    assert_eq!(number("failed"), 0, "{summary}");
    assert_eq!(number("bytes_expected"), 6 << 20, "{summary}");
    assert_eq!(
        number("bytes_verified"),
        number("bytes_expected"),
        "{summary}"
    );
    // Only the second round had tokens to present.
    let engaged = number("engaged");
    assert!((1..=3).contains(&engaged), "{summary}");
    assert_eq!(number("relay_kernel_drops"), 0, "{summary}");
    for name in ["p50_s", "p99_s", "server_cpu_s_per_mb"] {
        assert!(
            summary[name].as_f64().is_some_and(|v| v > 0.0),
            "{name} in {summary}"
        );
    }
    assert!(number("server_peak_rss_kib") > 0, "{summary}");
    assert!(number("server_peak_connections") >= 3, "{summary}");
}
