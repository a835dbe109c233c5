//! The `qlog-cr` command line.

use std::path::PathBuf;
use std::process::Command;
use std::process::Output;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn qlog_cr(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qlog-cr"))
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn summary_json_prints_one_object_per_trace() {
    let (a, b) = (data("plain.sqlog"), data("cr-every-phase.sqlog"));
    let out = qlog_cr(&[
        "summary".as_ref(),
        "--json".as_ref(),
        a.as_ref(),
        b.as_ref(),
    ]);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["phases"], serde_json::json!([]));
    assert_eq!(lines[1]["phases"][1]["phase"], "unvalidated");
    assert_eq!(
        lines[1]["phases"][1]["trigger"],
        "congestion_window_limited"
    );
    assert_eq!(lines[1]["completion_ms"], 3000.0);
}

#[test]
fn summary_text_lists_the_phases() {
    let trace = data("cr-safe-retreat.sqlog");
    let out = qlog_cr(&["summary".as_ref(), trace.as_ref()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(
        "      1325.000 ..     2100.000 ms  safe_retreat    pipesize 3600 B  (packet_loss)"
    ));
    assert!(text.contains("lost packets:          66 (at 19 times)"));
}

#[test]
fn plot_writes_an_svg_file() {
    let dir = std::env::temp_dir().join(format!("qlog-cr-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("out.svg");
    let trace = data("cr-every-phase.sqlog");
    let out = qlog_cr(&["plot".as_ref(), trace.as_ref(), "-o".as_ref(), svg.as_ref()]);
    assert!(out.status.success());
    let written = std::fs::read_to_string(&svg).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        written.starts_with("<svg") && written.contains("last_unvalidated_packet_acknowledged")
    );
}

#[test]
fn malformed_trace_fails_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("qlog-cr-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.sqlog");
    std::fs::write(&bad, "\u{1e}{\"trace\":{}}\n\u{1e}{\"time\":\n").unwrap();
    let out = qlog_cr(&["summary".as_ref(), bad.as_ref()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "qlog-cr: {}: line 2 (record 2): invalid JSON: EOF while parsing a value (column 9)\n",
            bad.display()
        )
    );
}
