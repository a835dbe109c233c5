//! `cr-load --soak`, short: one round of every fault in 24 s (a loss
//! burst, Redis killed and restarted, the key ring rotated, cr-server
//! killed and restarted, a flood) with four clients. Nothing is lost, no
//! saved set is used twice, no client stalls over 10 s, the server never
//! panics and its log stays small under the flood. cr-load starts its own
//! redis-server (`make setup` installs it) and cr-server and kills them by
//! PID; the test kills only the cr-load it started, and only if it
//! overruns.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The run takes 24 s and a few seconds of settling.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn every_fault_is_survived_with_nothing_lost() {
    let certs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../certs");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cr-load"))
        .args(["--soak", "--duration", "24s", "--clients", "4"])
        .args(["--size", "128KiB", "--rate", "50mbit", "--rtt", "40ms"])
        .args(["--spread", "200ms", "--linger", "300ms", "--timeout", "20s"])
        .args(["--flood-rate", "400", "--certs"])
        .arg(&certs)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("cr-load starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let (sender, output) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        let _ = sender.send(text);
    });
    let Ok(text) = output.recv_timeout(PATIENCE) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("cr-load --soak did not finish within {PATIENCE:?}");
    };
    let status = child.wait().expect("cr-load's status");
    assert!(status.success(), "cr-load --soak failed: {status}\n{text}");

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
