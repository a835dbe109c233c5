//! The Careful Resume event on the wire and through qlog's streamer.

use std::time::Duration;
use std::time::Instant;

use qlog::events::EventImportance;
use qlog::streamer::EventTimePrecision;
use qlog::streamer::QlogStreamer;
use qlog::TraceSeq;
use qlog_cr::CarefulResumePhaseUpdated;
use qlog_cr::Phase;
use qlog_cr::PhaseUpdatedEvent;
use qlog_cr::RestoredData;
use qlog_cr::StateData;
use qlog_cr::Trace;
use qlog_cr::Trigger;
use serde_json::json;

use crate::support::writer::SharedBuf;

fn jump() -> CarefulResumePhaseUpdated {
    CarefulResumePhaseUpdated::new(
        Some(Phase::Reconnaissance),
        Phase::Unvalidated,
        Some(Trigger::CongestionWindowLimited),
        StateData {
            pipesize: 3600,
            first_unvalidated_packet: 7,
            last_unvalidated_packet: 0,
            congestion_window: Some(600_000),
            ssthresh: None,
        },
    )
    .with_restored_data(RestoredData {
        saved_congestion_window: 1_200_000,
        saved_rtt: 600.5,
    })
}

#[test]
fn serializes_with_the_draft_names() {
    let mut event = PhaseUpdatedEvent::new(jump());
    event.time = 612.25;
    assert_eq!(
        serde_json::to_value(event).unwrap(),
        json!({
            "time": 612.25,
            "name": "quic:careful_resume_phase_updated",
            "data": {
                "old": "reconnaissance",
                "new": "unvalidated",
                "state_data": {
                    "pipesize": 3600,
                    "first_unvalidated_packet": 7,
                    "last_unvalidated_packet": 0,
                    "congestion_window": 600000
                },
                "restored_data": {
                    "saved_congestion_window": 1200000,
                    "saved_rtt": 600.5
                },
                "trigger": "congestion_window_limited"
            }
        })
    );
}

#[test]
fn every_trigger_and_phase_has_its_qlog_string() {
    let triggers = [
        (
            Trigger::CongestionWindowLimited,
            "congestion_window_limited",
        ),
        (Trigger::RttNotValidated, "rtt_not_validated"),
        (
            Trigger::LastUnvalidatedPacketSent,
            "last_unvalidated_packet_sent",
        ),
        (
            Trigger::FirstUnvalidatedPacketAcknowledged,
            "first_unvalidated_packet_acknowledged",
        ),
        (Trigger::RttExceeded, "rtt_exceeded"),
        (Trigger::RateLimited, "rate_limited"),
        (
            Trigger::LastUnvalidatedPacketAcknowledged,
            "last_unvalidated_packet_acknowledged",
        ),
        (Trigger::PathChanged, "path_changed"),
        (Trigger::PacketLoss, "packet_loss"),
        (Trigger::EcnCe, "ECN_CE"),
        (Trigger::ExitRecovery, "exit_recovery"),
        (Trigger::SavedSetNotGranted, "saved_set_not_granted"),
        (Trigger::PersistentCongestion, "persistent_congestion"),
    ];
    for (trigger, name) in triggers {
        assert_eq!(serde_json::to_value(trigger).unwrap(), json!(name));
        assert_eq!(trigger.as_str(), name);
        assert_eq!(
            serde_json::from_value::<Trigger>(json!(name)).unwrap(),
            trigger
        );
    }
    let phases: Vec<&str> = Phase::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(
        phases,
        [
            "reconnaissance",
            "unvalidated",
            "validating",
            "safe_retreat",
            "normal"
        ]
    );
    for phase in Phase::ALL {
        assert_eq!(serde_json::to_value(phase).unwrap(), json!(phase.as_str()));
    }
}

#[test]
fn reads_the_current_and_the_legacy_name_only() {
    let data = json!({ "new": "normal", "state_data": {
        "pipesize": 1, "first_unvalidated_packet": 2, "last_unvalidated_packet": 3 } });
    for name in [
        "quic:careful_resume_phase_updated",
        "recovery:careful_resume_phase_updated",
    ] {
        let event: PhaseUpdatedEvent =
            serde_json::from_value(json!({ "time": 1.5, "name": name, "data": data })).unwrap();
        assert_eq!(event.time, 1.5);
        assert_eq!(
            event.data,
            CarefulResumePhaseUpdated::new(
                None,
                Phase::Normal,
                None,
                StateData {
                    pipesize: 1,
                    first_unvalidated_packet: 2,
                    last_unvalidated_packet: 3,
                    congestion_window: None,
                    ssthresh: None,
                }
            )
        );
    }
    let other = json!({ "time": 1.5, "name": "quic:packet_sent", "data": data });
    let err = serde_json::from_value::<PhaseUpdatedEvent>(other).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected event quic:careful_resume_phase_updated, found quic:packet_sent"
    );
}

fn streamer(level: EventImportance, out: &SharedBuf, start: Instant) -> QlogStreamer {
    let trace = TraceSeq::new(Some("t".into()), None, None, None, vec![]);
    let mut streamer = QlogStreamer::new(
        None,
        None,
        start,
        trace,
        level,
        EventTimePrecision::MicroSeconds,
        Box::new(out.clone()),
    );
    streamer.start_log().unwrap();
    streamer
}

#[test]
fn streamer_stamps_and_writes_it_at_level_extra() {
    let out = SharedBuf::default();
    let start = Instant::now();
    let mut streamer = streamer(EventImportance::Extra, &out, start);
    let at = start + Duration::from_micros(612_250);
    streamer
        .add_event_with_instant(PhaseUpdatedEvent::new(jump()), at)
        .unwrap();
    streamer.finish_log().unwrap();

    let trace = Trace::from_reader(out.bytes().as_slice(), "mem").unwrap();
    assert_eq!(trace.phase_changes.len(), 1);
    assert_eq!(trace.phase_changes[0].time_ms, 612.25);
    assert_eq!(trace.phase_changes[0].update, jump());
}

#[test]
fn streamer_drops_it_below_level_extra() {
    let out = SharedBuf::default();
    let start = Instant::now();
    let mut streamer = streamer(EventImportance::Base, &out, start);
    let written = streamer.add_event_with_instant(PhaseUpdatedEvent::new(jump()), start);
    assert!(matches!(written, Err(qlog::Error::Done)));
}
