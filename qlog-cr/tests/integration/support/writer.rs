//! Writing traces the way quiche does: qlog 0.18's streamer and event types,
//! plus this crate's Careful Resume event, with explicit times.

use std::io::Write;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

use qlog::events::quic::AckRange;
use qlog::events::quic::PacketHeader;
use qlog::events::quic::PacketReceived;
use qlog::events::quic::PacketSent;
use qlog::events::quic::PacketType;
use qlog::events::quic::QuicFrame;
use qlog::events::quic::RecoveryMetricsUpdated;
use qlog::events::Event;
use qlog::events::EventData;
use qlog::events::EventImportance;
use qlog::events::RawInfo;
use qlog::streamer::EventTimePrecision;
use qlog::streamer::QlogStreamer;
use qlog::TraceSeq;
use qlog::VantagePoint;
use qlog::VantagePointType;
use qlog_cr::CarefulResumePhaseUpdated;
use qlog_cr::PhaseUpdatedEvent;

/// A `Write` whose bytes stay readable after the streamer took it.
#[derive(Clone, Default)]
pub struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().expect("buffer lock").clone()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer lock").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A JSON-SEQ trace being written at explicit times (ms).
pub struct TraceWriter {
    streamer: QlogStreamer,
    out: SharedBuf,
}

impl TraceWriter {
    /// A trace with quiche's header shape, at qlog level Extra so that the
    /// Careful Resume event is kept.
    pub fn new(title: &str, vantage: VantagePointType) -> Self {
        let out = SharedBuf::default();
        let trace = TraceSeq::new(
            Some(title.to_string()),
            Some("written by the qlog-cr tests".to_string()),
            None,
            Some(VantagePoint {
                name: None,
                ty: vantage,
                flow: None,
            }),
            vec![qlog::events::QUIC_URI.to_string()],
        );
        let mut streamer = QlogStreamer::new(
            Some(title.to_string()),
            None,
            Instant::now(),
            trace,
            EventImportance::Extra,
            EventTimePrecision::MicroSeconds,
            Box::new(out.clone()),
        );
        streamer.start_log().expect("start log");
        TraceWriter { streamer, out }
    }

    pub fn event(&mut self, time_ms: f64, data: EventData) {
        self.streamer
            .add_event(Event::with_time(time_ms, data))
            .expect("write event");
    }

    pub fn phase(&mut self, time_ms: f64, update: CarefulResumePhaseUpdated) {
        let mut event = PhaseUpdatedEvent::new(update);
        event.time = time_ms;
        self.streamer.add_event(event).expect("write CR event");
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.streamer.finish_log().expect("finish log");
        self.out.bytes()
    }
}

fn header(packet_type: PacketType, pn: u64) -> PacketHeader {
    PacketHeader::new(packet_type, Some(pn), None, None, None, None, None)
}

fn raw(length: u64) -> Option<RawInfo> {
    Some(RawInfo {
        length: Some(length),
        payload_length: None,
        data: None,
    })
}

/// A STREAM frame as quiche logs it.
pub fn stream_frame(stream_id: u64, offset: u64, len: u64, fin: bool) -> QuicFrame {
    QuicFrame::Stream {
        stream_id,
        offset: Some(offset),
        fin: fin.then_some(true),
        raw: Some(Box::new(RawInfo {
            length: None,
            payload_length: Some(len),
            data: None,
        })),
    }
}

/// An ACK frame covering `ranges` (inclusive).
pub fn ack_frame(ranges: &[(u64, u64)]) -> QuicFrame {
    QuicFrame::Ack {
        ack_delay: Some(0.0),
        acked_ranges: Some(ranges.iter().map(|&(a, b)| AckRange::new(a, b)).collect()),
        ect1: None,
        ect0: None,
        ce: None,
        raw: None,
    }
}

pub fn packet_sent(
    packet_type: PacketType,
    pn: u64,
    size: u64,
    frames: Vec<QuicFrame>,
) -> EventData {
    EventData::QuicPacketSent(PacketSent {
        header: header(packet_type, pn),
        raw: raw(size),
        frames: Some(frames),
        ..Default::default()
    })
}

pub fn packet_received(
    packet_type: PacketType,
    pn: u64,
    size: u64,
    frames: Vec<QuicFrame>,
) -> EventData {
    EventData::QuicPacketReceived(PacketReceived {
        header: header(packet_type, pn),
        raw: raw(size),
        frames: Some(frames),
        ..Default::default()
    })
}

/// The fields of a metrics event; only the ones set are written.
#[derive(Default)]
pub struct Metrics {
    pub congestion_window: Option<u64>,
    pub bytes_in_flight: Option<u64>,
    pub ssthresh: Option<u64>,
    pub min_rtt: Option<f32>,
    pub smoothed_rtt: Option<f32>,
    pub latest_rtt: Option<f32>,
    /// quiche's `cf_lost_packets`: (total, delta).
    pub lost_packets: Option<(u64, u64)>,
}

pub fn metrics(m: Metrics) -> EventData {
    let mut ex_data = qlog::events::ExData::new();
    if let Some((total, delta)) = m.lost_packets {
        ex_data.insert(
            "cf_lost_packets".to_string(),
            serde_json::json!({ "total": total, "delta": delta }),
        );
    }
    EventData::QuicMetricsUpdated(RecoveryMetricsUpdated {
        ex_data,
        min_rtt: m.min_rtt,
        smoothed_rtt: m.smoothed_rtt,
        latest_rtt: m.latest_rtt,
        congestion_window: m.congestion_window,
        bytes_in_flight: m.bytes_in_flight,
        ssthresh: m.ssthresh,
        ..Default::default()
    })
}
