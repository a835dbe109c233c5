//! Reading traces into timelines, and refusing malformed ones with a line.

use qlog::events::quic::PacketType;
use qlog::VantagePointType;
use qlog_cr::Loss;
use qlog_cr::Phase;
use qlog_cr::Series;
use qlog_cr::Trace;
use qlog_cr::Trigger;

use crate::support::writer::*;

const RS: char = '\u{1e}';

fn points<T: Copy + PartialOrd>(series: &Series<T>) -> Vec<(f64, T)> {
    series
        .samples()
        .iter()
        .map(|s| (s.time_ms, s.value))
        .collect()
}

/// Joins records into JSON-SEQ, one per line.
fn seq(records: &[&str]) -> String {
    records.iter().map(|r| format!("{RS}{r}\n")).collect()
}

fn read(text: &str) -> Result<Trace, String> {
    Trace::from_reader(text.as_bytes(), "mem.sqlog").map_err(|e| e.to_string())
}

const HEADER: &str = r#"{"file_schema":"urn:ietf:params:qlog:file:sequential","serialization_format":"JSON-SEQ","trace":{"vantage_point":{"type":"server"}}}"#;

/// A trace as quiche writes it, through qlog's own streamer.
fn quiche_like() -> Vec<u8> {
    let mut w = TraceWriter::new("plain quiche", VantagePointType::Server);
    w.event(0.0, packet_sent(PacketType::Initial, 0, 1200, vec![]));
    w.event(
        0.5,
        packet_sent(
            PacketType::OneRtt,
            0,
            1000,
            vec![stream_frame(0, 0, 970, false)],
        ),
    );
    w.event(
        0.5,
        packet_sent(
            PacketType::OneRtt,
            1,
            500,
            vec![stream_frame(0, 970, 470, true)],
        ),
    );
    w.event(
        0.5,
        metrics(Metrics {
            congestion_window: Some(12_000),
            bytes_in_flight: Some(2700),
            ..Default::default()
        }),
    );
    w.event(
        30.0,
        packet_received(PacketType::Initial, 0, 90, vec![ack_frame(&[(0, 0)])]),
    );
    w.event(
        30.5,
        packet_received(
            PacketType::OneRtt,
            0,
            60,
            vec![ack_frame(&[(1, 1)]), stream_frame(0, 0, 40, true)],
        ),
    );
    w.event(
        30.5,
        metrics(Metrics {
            bytes_in_flight: Some(1000),
            smoothed_rtt: Some(30.0),
            min_rtt: Some(29.5),
            latest_rtt: Some(30.0),
            ..Default::default()
        }),
    );
    w.event(
        40.0,
        metrics(Metrics {
            congestion_window: Some(6000),
            ssthresh: Some(6000),
            bytes_in_flight: Some(0),
            lost_packets: Some((1, 1)),
            ..Default::default()
        }),
    );
    w.finish()
}

#[test]
fn plain_quiche_trace_gives_timelines() {
    let trace = Trace::from_reader(quiche_like().as_slice(), "x").unwrap();
    assert_eq!(trace.name, "plain quiche");
    assert_eq!(trace.vantage_point.as_deref(), Some("server"));
    let t = &trace.timelines;
    assert_eq!(
        points(&t.congestion_window),
        vec![(0.5, 12_000), (40.0, 6000)]
    );
    assert_eq!(
        points(&t.bytes_in_flight),
        vec![(0.5, 2700), (30.5, 1000), (40.0, 0)]
    );
    assert_eq!(points(&t.ssthresh), vec![(40.0, 6000)]);
    assert_eq!(points(&t.smoothed_rtt_ms), vec![(30.5, 30.0)]);
    assert_eq!(points(&t.min_rtt_ms), vec![(30.5, 29.5)]);
    assert_eq!(points(&t.latest_rtt_ms), vec![(30.5, 30.0)]);
    assert_eq!(
        points(&t.bytes_sent),
        vec![(0.0, 1200), (0.5, 2200), (0.5, 2700)]
    );
    assert_eq!(points(&t.bytes_acked), vec![(30.0, 1200), (30.5, 1700)]);
    assert_eq!(points(&t.stream_bytes_received), vec![(30.5, 40)]);
    assert!(t.pacing_rate.is_empty() && t.pipesize.is_empty());
    assert_eq!(
        trace.losses,
        vec![Loss {
            time_ms: 40.0,
            packets: 1,
            packet_number: None
        }]
    );
    assert!(trace.phase_changes.is_empty());
    assert_eq!(trace.duration_ms, 40.0);
    // The packet with the last stream data (pn 1) was acked at 30.5.
    assert_eq!(trace.completion_ms, Some(30.5));
}

#[test]
fn older_event_names_and_packet_lost_events() {
    let text = seq(&[
        HEADER,
        r#"{"time":1,"name":"transport:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":4},"raw":{"length":1200},"frames":[{"frame_type":"stream","stream_id":0,"offset":0,"length":1000}]}}"#,
        r#"{"time":2,"name":"recovery:metrics_updated","data":{"congestion_window":14000,"pacing_rate":125000,"cf_lost_packets":{"total":5,"delta":5}}}"#,
        r#"{"time":3,"name":"recovery:packet_lost","data":{"header":{"packet_type":"1RTT","packet_number":4}}}"#,
        r#"{"time":4,"name":"transport:packet_received","data":{"header":{"packet_type":"1RTT","packet_number":9},"frames":[{"frame_type":"max_data","maximum":65536},{"frame_type":"padding"}]}}"#,
        r#"{"time":5,"name":"recovery:careful_resume_phase_updated","data":{"new":"reconnaissance","state_data":{"pipesize":0,"first_unvalidated_packet":0,"last_unvalidated_packet":0}}}"#,
        r#"{"time":6,"name":"quic:some_future_event","data":{"anything":[1,2]}}"#,
    ]);
    let trace = read(&text).unwrap();
    assert_eq!(trace.name, "mem.sqlog");
    assert_eq!(points(&trace.timelines.pacing_rate), vec![(2.0, 125_000)]);
    assert_eq!(points(&trace.timelines.peer_max_data), vec![(4.0, 65_536)]);
    // packet_lost events are preferred to quiche's loss counters.
    assert_eq!(
        trace.losses,
        vec![Loss {
            time_ms: 3.0,
            packets: 1,
            packet_number: Some(4)
        }]
    );
    assert_eq!(trace.phase_changes.len(), 1);
    assert_eq!(trace.phase_changes[0].update.new, Phase::Reconnaissance);
    assert_eq!(trace.duration_ms, 6.0);
    assert_eq!(trace.completion_ms, None);
}

#[test]
fn flow_control_limits_from_parameters_and_frames() {
    let text = seq(&[
        HEADER,
        r#"{"time":0,"name":"quic:parameters_set","data":{"owner":"local","initial_max_data":1000}}"#,
        r#"{"time":0,"name":"quic:parameters_set","data":{"owner":"remote","initial_max_data":2000}}"#,
        r#"{"time":7,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":1},"frames":[{"frame_type":"max_data","maximum":3000}]}}"#,
    ]);
    let trace = read(&text).unwrap();
    assert_eq!(
        points(&trace.timelines.local_max_data),
        vec![(0.0, 1000), (7.0, 3000)]
    );
    assert_eq!(points(&trace.timelines.peer_max_data), vec![(0.0, 2000)]);
}

#[test]
fn relative_to_previous_event_times_accumulate() {
    let header = r#"{"file_schema":"x","trace":{"common_fields":{"time_format":"relative_to_previous_event"}}}"#;
    let text = seq(&[
        header,
        r#"{"time":10,"name":"quic:recovery_metrics_updated","data":{"congestion_window":1}}"#,
        r#"{"time":2.5,"name":"quic:recovery_metrics_updated","data":{"congestion_window":2}}"#,
    ]);
    let trace = read(&text).unwrap();
    assert_eq!(
        points(&trace.timelines.congestion_window),
        vec![(10.0, 1), (12.5, 2)]
    );
}

#[test]
fn phase_changes_from_the_fixture_model() {
    let trace = Trace::from_reader(
        crate::support::model::run(crate::support::every_phase()).as_slice(),
        "x",
    )
    .unwrap();
    let changes: Vec<(f64, Option<Phase>, Phase, Option<Trigger>)> = trace
        .phase_changes
        .iter()
        .map(|c| (c.time_ms, c.update.old, c.update.new, c.update.trigger))
        .collect();
    assert_eq!(
        changes,
        vec![
            (0.0, None, Phase::Reconnaissance, None),
            (
                600.0,
                Some(Phase::Reconnaissance),
                Phase::Unvalidated,
                Some(Trigger::CongestionWindowLimited)
            ),
            (
                1185.0,
                Some(Phase::Unvalidated),
                Phase::Validating,
                Some(Trigger::LastUnvalidatedPacketSent)
            ),
            (
                1800.0,
                Some(Phase::Validating),
                Phase::Normal,
                Some(Trigger::LastUnvalidatedPacketAcknowledged)
            ),
        ]
    );
    assert_eq!(
        points(&trace.timelines.pipesize),
        vec![(0.0, 0), (600.0, 0), (1185.0, 0), (1800.0, 120_000)]
    );
}

#[test]
fn malformed_input_reports_the_line() {
    let event = r#"{"time":1,"name":"quic:recovery_metrics_updated","data":{}}"#;
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "line 1 (record 1): no qlog records: the input is empty"),
        (
            "not json-seq\n".to_string(),
            "line 1 (record 1): expected a record separator (0x1E): not a JSON-SEQ qlog",
        ),
        (
            seq(&[HEADER, event, r#"{"time":2,"name":"quic:packet_sent","data":{"header":{}"#]),
            "line 3 (record 3): invalid JSON: EOF while parsing an object (column 56)",
        ),
        (
            format!("{RS}{HEADER}\n{RS}{{\n\"time\": 1,\n\"name\": \"x\",,\n}}\n"),
            "line 4 (record 2): invalid JSON: key must be a string (column 13)",
        ),
        (
            seq(&[HEADER, event, r#"{"name":"quic:packet_sent","data":{}}"#]),
            "line 3 (record 3): invalid event: missing field `time`",
        ),
        (
            seq(&[
                HEADER,
                r#"{"time":1,"name":"quic:recovery_metrics_updated","data":{"congestion_window":"big"}}"#,
            ]),
            "line 2 (record 2): invalid quic:recovery_metrics_updated: invalid type: string \"big\", expected u64",
        ),
        (
            seq(&[HEADER, event, event, r#"{"time":1,"name":"quic:packet_received","data":{"header":{"packet_type":"1RTT"},"frames":[{"frame_type":"ack","acked_ranges":[[9,3]]}]}}"#]),
            "line 4 (record 4): ACK range [9, 3] is reversed",
        ),
        (
            seq(&[HEADER, r#"{"time":1,"name":"quic:careful_resume_phase_updated","data":{"new":"jumping","state_data":{"pipesize":0,"first_unvalidated_packet":0,"last_unvalidated_packet":0}}}"#]),
            "line 2 (record 2): invalid quic:careful_resume_phase_updated: unknown variant `jumping`, expected one of `reconnaissance`, `unvalidated`, `validating`, `normal`, `safe_retreat`",
        ),
        (
            seq(&[
                r#"{"trace":{"common_fields":{"time_format":"relative_to_previous_event"}}}"#,
                r#"{"time":1e308,"name":"quic:unknown"}"#,
                r#"{"time":1e308,"name":"quic:unknown"}"#,
            ]),
            "line 3 (record 3): event time out of range",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(read(&input).unwrap_err(), expected, "input: {input:?}");
    }
}

#[test]
fn reading_never_panics_on_truncated_or_corrupted_traces() {
    let good = quiche_like();
    for cut in 0..good.len() {
        let _ = Trace::from_reader(&good[..cut], "cut");
    }
    for i in (0..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[i] ^= 0x55;
        let _ = Trace::from_reader(bad.as_slice(), "flipped");
    }
}
