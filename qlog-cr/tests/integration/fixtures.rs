//! The checked-in traces under tests/data are exactly what the model writes.

use std::path::PathBuf;

use qlog_cr::Phase;
use qlog_cr::RestoredData;
use qlog_cr::Summary;
use qlog_cr::Trace;
use qlog_cr::Trigger;
use serde_json::json;

use crate::support;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Compares a generated trace with its fixture; with QLOG_CR_BLESS=1 set,
/// rewrites the fixture instead.
fn check_fixture(name: &str, generated: &[u8]) {
    let path = data(name);
    if std::env::var_os("QLOG_CR_BLESS").is_some() {
        std::fs::write(&path, generated).expect("write fixture");
    }
    let stored = std::fs::read(&path).expect("read fixture");
    assert!(
        stored == generated,
        "{name} differs from the model's output; rerun with QLOG_CR_BLESS=1"
    );
}

#[test]
fn fixtures_match_the_model() {
    check_fixture("plain.sqlog", &support::model::run(support::plain()));
    check_fixture(
        "cr-every-phase.sqlog",
        &support::model::run(support::every_phase()),
    );
    check_fixture(
        "cr-safe-retreat.sqlog",
        &support::model::run(support::safe_retreat()),
    );
}

fn summary_of(name: &str) -> Summary {
    Trace::from_path(data(name))
        .expect("fixture reads")
        .summary()
}

/// (phase, start, end, trigger) of each span.
fn spans(summary: &Summary) -> Vec<(Phase, f64, Option<f64>, Option<Trigger>)> {
    summary
        .phases
        .iter()
        .map(|s| (s.phase, s.start_ms, s.end_ms, s.trigger))
        .collect()
}

#[test]
fn plain_connection_summary() {
    let s = summary_of("plain.sqlog");
    assert_eq!(s.name, "first connection (no saved state)");
    assert_eq!(s.vantage_point.as_deref(), Some("server"));
    assert_eq!(spans(&s), vec![]);
    assert_eq!(s.restored, None);
    assert_eq!((s.duration_ms, s.completion_ms), (4425.0, Some(4425.0)));
    assert_eq!(s.max_congestion_window, Some(425_860));
    assert_eq!((s.lost_packets, s.loss_events), (0, 0));
    assert_eq!((s.bytes_sent, s.bytes_acked), (413_860, 413_860));
}

#[test]
fn every_phase_summary() {
    let s = summary_of("cr-every-phase.sqlog");
    assert_eq!(
        spans(&s),
        vec![
            (Phase::Reconnaissance, 0.0, Some(600.0), None),
            (
                Phase::Unvalidated,
                600.0,
                Some(1185.0),
                Some(Trigger::CongestionWindowLimited)
            ),
            (
                Phase::Validating,
                1185.0,
                Some(1800.0),
                Some(Trigger::LastUnvalidatedPacketSent)
            ),
            (
                Phase::Normal,
                1800.0,
                None,
                Some(Trigger::LastUnvalidatedPacketAcknowledged)
            ),
        ]
    );
    assert_eq!(
        s.restored,
        Some(RestoredData {
            saved_congestion_window: 240_000,
            saved_rtt: 600.0
        })
    );
    assert_eq!(s.completion_ms, Some(3000.0));
    assert_eq!(s.max_congestion_window, Some(530_260));
    assert_eq!(s.lost_packets, 0);
}

#[test]
fn safe_retreat_summary() {
    let s = summary_of("cr-safe-retreat.sqlog");
    assert_eq!(
        spans(&s),
        vec![
            (Phase::Reconnaissance, 0.0, Some(700.0), None),
            (
                Phase::Unvalidated,
                700.0,
                Some(1325.0),
                Some(Trigger::CongestionWindowLimited)
            ),
            (
                Phase::SafeRetreat,
                1325.0,
                Some(2100.0),
                Some(Trigger::PacketLoss)
            ),
            (Phase::Normal, 2100.0, None, Some(Trigger::ExitRecovery)),
        ]
    );
    let retreat = s.phases[2].state.expect("state data");
    assert_eq!(
        (retreat.pipesize, retreat.congestion_window),
        (3600, Some(2400))
    );
    assert_eq!(s.phases[3].state.and_then(|st| st.ssthresh), Some(97_200));
    assert_eq!((s.lost_packets, s.loss_events), (66, 19));
    assert_eq!(s.completion_ms, Some(6725.0));
}

#[test]
fn summary_json_follows_the_documented_schema() {
    let json = serde_json::to_value(summary_of("cr-safe-retreat.sqlog")).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "name",
            "vantage_point",
            "duration_ms",
            "completion_ms",
            "phases",
            "restored",
            "max_congestion_window",
            "max_bytes_in_flight",
            "min_rtt_ms",
            "lost_packets",
            "loss_events",
            "bytes_sent",
            "bytes_acked",
            "stream_bytes_received",
        ]
    );
    assert_eq!(
        json["phases"][2],
        json!({
            "phase": "safe_retreat",
            "start_ms": 1325.0,
            "end_ms": 2100.0,
            "trigger": "packet_loss",
            "state": {
                "pipesize": 3600,
                "first_unvalidated_packet": 0,
                "last_unvalidated_packet": 227,
                "congestion_window": 2400
            }
        })
    );
    assert_eq!(json["phases"][3]["end_ms"], json!(null));
    assert_eq!(
        json["restored"],
        json!({ "saved_congestion_window": 600000, "saved_rtt": 600.0 })
    );
}
