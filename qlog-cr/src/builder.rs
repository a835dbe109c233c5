//! Turning qlog records into a [`Trace`], one record at a time.

use std::collections::BTreeMap;
use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ReadError;
use crate::event::CarefulResumePhaseUpdated;
use crate::jsonseq::Record;
use crate::trace::Loss;
use crate::trace::PhaseChange;
use crate::trace::Series;
use crate::trace::Timelines;
use crate::trace::Trace;
use crate::wire;
use crate::wire::Frame;
use crate::wire::Kind;
use crate::wire::Space;

/// What is remembered of a sent packet until it is acknowledged.
struct SentPacket {
    size: u64,
    carries_stream_data: bool,
}

/// Accumulates the state needed to build a [`Trace`].
#[derive(Default)]
pub(crate) struct TraceBuilder {
    title: Option<String>,
    vantage_point: Option<String>,
    /// Event times are deltas from the previous event.
    delta_times: bool,
    previous_time_ms: f64,
    end_ms: f64,

    timelines: Timelines,
    phase_changes: Vec<PhaseChange>,
    /// Losses from `packet_lost` events.
    logged_losses: Vec<Loss>,
    /// Losses from the counters in quiche's metrics events, which quiche
    /// writes instead of `packet_lost`.
    counted_losses: Vec<Loss>,
    lost_packets_total: u64,

    unacked: [BTreeMap<u64, SentPacket>; Space::COUNT],
    bytes_sent: u64,
    bytes_acked: u64,
    stream_bytes_received: u64,
    /// Highest stream offset received, per stream.
    stream_ends: HashMap<u64, u64>,
    last_stream_data_received_ms: Option<f64>,
    last_stream_data_acked_ms: Option<f64>,
}

impl TraceBuilder {
    /// Adds one record: the header, an event used for the timelines, or an
    /// event that is skipped.
    pub(crate) fn add(&mut self, record: &Record) -> Result<(), ReadError> {
        let value: Value =
            serde_json::from_str(record.text.trim_end()).map_err(|e| json_error(record, &e))?;
        if record.number == 1 && is_header(&value) {
            let header: wire::Header = parse(record, value, "header")?;
            self.set_header(header);
            return Ok(());
        }
        let event: wire::EventEnvelope = parse(record, value, "event")?;
        let time_ms = if self.delta_times {
            self.previous_time_ms + event.time
        } else {
            event.time
        };
        if !time_ms.is_finite() {
            return Err(record.error(0, "event time out of range".to_string()));
        }
        self.previous_time_ms = time_ms;
        self.end_ms = self.end_ms.max(time_ms);
        let Some(kind) = Kind::of(&event.name) else {
            return Ok(());
        };
        let what = event.name.as_str();
        match kind {
            Kind::Metrics => self.metrics(time_ms, parse(record, event.data, what)?),
            Kind::PacketSent => self.packet_sent(time_ms, parse(record, event.data, what)?),
            Kind::PacketReceived => {
                let packet = parse(record, event.data, what)?;
                self.packet_received(time_ms, packet)
                    .map_err(|reason| record.error(0, reason))?
            }
            Kind::PacketLost => self.packet_lost(time_ms, parse(record, event.data, what)?),
            Kind::ParametersSet => self.parameters_set(time_ms, parse(record, event.data, what)?),
            Kind::CarefulResume => self.phase_updated(time_ms, parse(record, event.data, what)?),
        }
        Ok(())
    }

    fn set_header(&mut self, header: wire::Header) {
        let trace = header.trace.unwrap_or_default();
        self.title = trace.title.or(header.title).filter(|t| !t.is_empty());
        self.vantage_point = trace.vantage_point.and_then(|vp| vp.kind);
        self.delta_times = trace
            .common_fields
            .and_then(|c| c.time_format)
            .is_some_and(|f| f == "relative_to_previous_event" || f == "delta");
    }

    fn metrics(&mut self, time_ms: f64, m: wire::Metrics) {
        let t = &mut self.timelines;
        push_some(&mut t.congestion_window, time_ms, m.congestion_window);
        push_some(&mut t.bytes_in_flight, time_ms, m.bytes_in_flight);
        push_some(&mut t.ssthresh, time_ms, m.ssthresh);
        push_some(&mut t.smoothed_rtt_ms, time_ms, m.smoothed_rtt);
        push_some(&mut t.min_rtt_ms, time_ms, m.min_rtt);
        push_some(&mut t.latest_rtt_ms, time_ms, m.latest_rtt);
        push_some(&mut t.pacing_rate, time_ms, m.pacing_rate);
        if let Some(lost) = m.cf_lost_packets {
            let total = lost.total.unwrap_or(self.lost_packets_total);
            let delta = lost
                .delta
                .unwrap_or_else(|| total.saturating_sub(self.lost_packets_total));
            self.lost_packets_total = total;
            if delta > 0 {
                self.counted_losses.push(Loss {
                    time_ms,
                    packets: delta,
                    packet_number: None,
                });
            }
        }
    }

    fn packet_sent(&mut self, time_ms: f64, packet: wire::Packet) {
        let size = packet
            .raw
            .and_then(|raw| raw.length.or(raw.payload_length))
            .unwrap_or(0);
        self.bytes_sent = self.bytes_sent.saturating_add(size);
        self.timelines.bytes_sent.push(time_ms, self.bytes_sent);
        let mut carries_stream_data = false;
        for frame in &packet.frames {
            match frame {
                Frame::Stream { .. } => carries_stream_data = true,
                Frame::MaxData { maximum } => self.timelines.local_max_data.push(time_ms, *maximum),
                Frame::Ack { .. } | Frame::Other => {}
            }
        }
        if let (Some(space), Some(number)) = packet_id(&packet.header) {
            self.unacked[space.index()].insert(
                number,
                SentPacket {
                    size,
                    carries_stream_data,
                },
            );
        }
    }

    fn packet_received(&mut self, time_ms: f64, packet: wire::Packet) -> Result<(), String> {
        let (space, _) = packet_id(&packet.header);
        for frame in packet.frames {
            match frame {
                Frame::Ack { acked_ranges } => {
                    if let Some(space) = space {
                        self.acked(time_ms, space, &acked_ranges)?;
                    }
                }
                Frame::Stream {
                    stream_id,
                    offset,
                    length,
                    raw,
                } => {
                    let length = length.or(raw.and_then(|r| r.payload_length)).unwrap_or(0);
                    self.stream_data(
                        time_ms,
                        stream_id,
                        offset.unwrap_or(0).saturating_add(length),
                    );
                }
                Frame::MaxData { maximum } => self.timelines.peer_max_data.push(time_ms, maximum),
                Frame::Other => {}
            }
        }
        Ok(())
    }

    fn acked(
        &mut self,
        time_ms: f64,
        space: Space,
        ranges: &[qlog::events::quic::AckRange],
    ) -> Result<(), String> {
        let unacked = &mut self.unacked[space.index()];
        let mut newly_acked = 0u64;
        let mut stream_data_acked = false;
        for range in ranges {
            if range.start > range.end {
                return Err(format!(
                    "ACK range [{}, {}] is reversed",
                    range.start, range.end
                ));
            }
            let numbers: Vec<u64> = unacked
                .range(range.start..=range.end)
                .map(|(n, _)| *n)
                .collect();
            for packet in numbers.iter().filter_map(|n| unacked.remove(n)) {
                newly_acked = newly_acked.saturating_add(packet.size);
                stream_data_acked |= packet.carries_stream_data;
            }
        }
        if newly_acked > 0 {
            self.bytes_acked = self.bytes_acked.saturating_add(newly_acked);
            self.timelines.bytes_acked.push(time_ms, self.bytes_acked);
        }
        if stream_data_acked {
            self.last_stream_data_acked_ms = Some(time_ms);
        }
        Ok(())
    }

    fn stream_data(&mut self, time_ms: f64, stream_id: u64, end: u64) {
        let known = self.stream_ends.entry(stream_id).or_default();
        if end > *known {
            self.stream_bytes_received = self.stream_bytes_received.saturating_add(end - *known);
            *known = end;
            self.timelines
                .stream_bytes_received
                .push(time_ms, self.stream_bytes_received);
            self.last_stream_data_received_ms = Some(time_ms);
        }
    }

    fn packet_lost(&mut self, time_ms: f64, lost: wire::PacketLost) {
        self.logged_losses.push(Loss {
            time_ms,
            packets: 1,
            packet_number: lost.header.and_then(|h| h.packet_number),
        });
    }

    fn parameters_set(&mut self, time_ms: f64, params: wire::ParametersSet) {
        let Some(max_data) = params.initial_max_data else {
            return;
        };
        match params.owner.as_deref() {
            Some("remote") => self.timelines.peer_max_data.push(time_ms, max_data),
            Some("local") => self.timelines.local_max_data.push(time_ms, max_data),
            _ => {}
        }
    }

    fn phase_updated(&mut self, time_ms: f64, update: CarefulResumePhaseUpdated) {
        self.timelines
            .pipesize
            .push(time_ms, update.state_data.pipesize);
        self.phase_changes.push(PhaseChange { time_ms, update });
    }

    /// The trace, named `fallback_name` when it has no title.
    pub(crate) fn finish(self, fallback_name: &str) -> Trace {
        let mut timelines = self.timelines;
        sort_all(&mut timelines);
        let mut phase_changes = self.phase_changes;
        phase_changes.sort_by(|a, b| a.time_ms.total_cmp(&b.time_ms));
        let mut losses = if self.logged_losses.is_empty() {
            self.counted_losses
        } else {
            self.logged_losses
        };
        losses.sort_by(|a, b| a.time_ms.total_cmp(&b.time_ms));
        let completion_ms = match (
            self.last_stream_data_received_ms,
            self.last_stream_data_acked_ms,
        ) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        Trace {
            name: self.title.unwrap_or_else(|| fallback_name.to_string()),
            vantage_point: self.vantage_point,
            timelines,
            phase_changes,
            losses,
            duration_ms: self.end_ms,
            completion_ms,
        }
    }
}

/// A syntax error at its place in the file.
fn json_error(record: &Record, e: &serde_json::Error) -> ReadError {
    let text = e.to_string();
    // serde_json appends the position within the record; the file's is given
    // instead.
    let message = text.split(" at line ").next().unwrap_or(&text);
    let separator = if e.line() <= 1 {
        record.separator_len
    } else {
        0
    };
    let reason = format!(
        "invalid JSON: {message} (column {})",
        e.column() + separator
    );
    record.error(e.line().saturating_sub(1), reason)
}

/// Whether the first record is a qlog file header rather than an event.
fn is_header(value: &Value) -> bool {
    ["qlog_version", "qlog_format", "file_schema", "trace"]
        .iter()
        .any(|key| value.get(key).is_some())
}

/// Reads `value` as a `T`, blaming `record` when it does not fit.
fn parse<T: DeserializeOwned>(record: &Record, value: Value, what: &str) -> Result<T, ReadError> {
    serde_json::from_value(value).map_err(|e| record.error(0, format!("invalid {what}: {e}")))
}

/// The packet number space and number of a packet, as far as known.
fn packet_id(header: &wire::PacketHeader) -> (Option<Space>, Option<u64>) {
    let space = header.packet_type.as_deref().and_then(Space::of);
    (space, header.packet_number)
}

fn push_some<T: Copy + PartialOrd>(series: &mut Series<T>, time_ms: f64, value: Option<T>) {
    if let Some(value) = value {
        series.push(time_ms, value);
    }
}

fn sort_all(t: &mut Timelines) {
    for series in [
        &mut t.congestion_window,
        &mut t.bytes_in_flight,
        &mut t.ssthresh,
        &mut t.pacing_rate,
        &mut t.bytes_sent,
        &mut t.bytes_acked,
        &mut t.stream_bytes_received,
        &mut t.peer_max_data,
        &mut t.local_max_data,
        &mut t.pipesize,
    ] {
        series.sort();
    }
    for series in [
        &mut t.smoothed_rtt_ms,
        &mut t.min_rtt_ms,
        &mut t.latest_rtt_ms,
    ] {
        series.sort();
    }
}
