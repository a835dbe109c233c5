//! `cr-load --soak`, short: one round of every fault in 24 s (a loss
//! burst, Redis killed and restarted, the key ring rotated, cr-server
//! killed and restarted, a flood) with four clients. Nothing is lost, no
//! saved set is used twice, no client stalls over 10 s, the server never
//! panics and its log stays small under the flood. cr-load starts its own
//! redis-server (`make setup` installs it) and cr-server and kills them by
//! PID; the test kills only the cr-load it started, and only if it
//! overruns.

use std::time::Duration;

mod support;

/// The run takes 24 s and a few seconds of settling.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn every_fault_is_survived_with_nothing_lost() {
    let text = support::run_cr_load(
        "--soak --duration 24s --clients 4 --size 128KiB --rate 50mbit --rtt 40ms --spread 200ms --linger 300ms --timeout 20s --flood-rate 400",
        PATIENCE,
    );

    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON"))
        .collect();
    let faults: Vec<&str> = lines.iter().filter_map(|l| l["fault"].as_str()).collect();
    assert_eq!(
        faults,
        [
            "calm",
            "loss_burst",
            "redis_restart",
            "key_rotation",
            "server_restart",
            "flood",
            "summary"
        ],
        "{text}"
    );
    let summary = &lines[6];
    let number = |name: &str| {
        summary[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name} in {summary}"))
    };
    assert_eq!(summary["target_met"], true, "{text}");
    assert!(number("downloads") >= 8, "{summary}");
    assert_eq!(number("failed"), 0, "{summary}");
    assert_eq!(number("bytes_verified"), number("bytes_expected"), "{text}");
    assert_eq!(number("sets_used_twice"), 0, "{summary}");
    assert!(number("engaged") > 0, "{summary}");
    // The flood's forged Initials are counted, not logged one by one.
    assert!(number("forged_initials") > 100, "{summary}");
    assert!(number("flood_log_lines") < 50, "{text}");
    // A rotation refuses none of the clients' tokens.
    assert_eq!(number("real_tokens_refused"), 0, "{text}");
}
