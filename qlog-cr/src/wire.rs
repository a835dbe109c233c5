//! Minimal views of the qlog records the reader uses.
//!
//! Each view holds only the fields the timelines need and ignores the rest,
//! so that traces from other qlog versions or stacks still read as long as
//! the fields used have the expected types. Names from the current qlog
//! drafts (`quic:*`, as written by qlog 0.18) and from the older drafts
//! (`transport:*`, `recovery:*`) are both accepted.

use serde::Deserialize;

use crate::event::is_phase_event_name;

/// Envelope of every event record.
#[derive(Deserialize)]
pub(crate) struct EventEnvelope {
    pub(crate) time: f64,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) data: serde_json::Value,
}

/// The events the reader understands, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Metrics,
    PacketSent,
    PacketReceived,
    PacketLost,
    ParametersSet,
    CarefulResume,
}

impl Kind {
    /// The kind of an event name; `None` for events the reader skips.
    pub(crate) fn of(name: &str) -> Option<Kind> {
        let kind = match name {
            "quic:recovery_metrics_updated" | "recovery:metrics_updated" => Kind::Metrics,
            "quic:packet_sent" | "transport:packet_sent" => Kind::PacketSent,
            "quic:packet_received" | "transport:packet_received" => Kind::PacketReceived,
            "quic:packet_lost" | "recovery:packet_lost" => Kind::PacketLost,
            "quic:parameters_set" | "transport:parameters_set" => Kind::ParametersSet,
            _ if is_phase_event_name(name) => Kind::CarefulResume,
            _ => return None,
        };
        Some(kind)
    }
}

/// The header record of a JSON-SEQ qlog file.
#[derive(Deserialize)]
pub(crate) struct Header {
    pub(crate) title: Option<String>,
    pub(crate) trace: Option<TraceHeader>,
}

/// The `trace` member of the header.
#[derive(Deserialize, Default)]
pub(crate) struct TraceHeader {
    pub(crate) title: Option<String>,
    pub(crate) vantage_point: Option<VantagePoint>,
    pub(crate) common_fields: Option<CommonFields>,
}

/// Which endpoint wrote the trace.
#[derive(Deserialize)]
pub(crate) struct VantagePoint {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
}

/// Fields shared by all events of the trace.
#[derive(Deserialize)]
pub(crate) struct CommonFields {
    pub(crate) time_format: Option<String>,
}

/// `quic:recovery_metrics_updated`: only the fields that changed are present.
#[derive(Deserialize)]
pub(crate) struct Metrics {
    pub(crate) min_rtt: Option<f64>,
    pub(crate) smoothed_rtt: Option<f64>,
    pub(crate) latest_rtt: Option<f64>,
    pub(crate) congestion_window: Option<u64>,
    pub(crate) bytes_in_flight: Option<u64>,
    pub(crate) ssthresh: Option<u64>,
    pub(crate) pacing_rate: Option<u64>,
    /// quiche's extension: lost packets so far and since the last event.
    pub(crate) cf_lost_packets: Option<TotalAndDelta>,
}

/// A running count as quiche logs it.
#[derive(Deserialize)]
pub(crate) struct TotalAndDelta {
    pub(crate) total: Option<u64>,
    pub(crate) delta: Option<u64>,
}

/// `quic:packet_sent` and `quic:packet_received`.
#[derive(Deserialize)]
pub(crate) struct Packet {
    pub(crate) header: PacketHeader,
    pub(crate) raw: Option<RawInfo>,
    #[serde(default)]
    pub(crate) frames: Vec<Frame>,
}

/// `quic:packet_lost`.
#[derive(Deserialize)]
pub(crate) struct PacketLost {
    pub(crate) header: Option<PacketHeader>,
}

/// The header fields used to identify a packet.
#[derive(Deserialize)]
pub(crate) struct PacketHeader {
    pub(crate) packet_type: Option<String>,
    pub(crate) packet_number: Option<u64>,
}

/// Sizes of a packet or frame.
#[derive(Deserialize)]
pub(crate) struct RawInfo {
    pub(crate) length: Option<u64>,
    pub(crate) payload_length: Option<u64>,
}

/// The frames the reader looks into; every other frame type is `Other`.
#[derive(Deserialize)]
#[serde(tag = "frame_type", rename_all = "snake_case")]
pub(crate) enum Frame {
    Ack {
        #[serde(default)]
        acked_ranges: Vec<qlog::events::quic::AckRange>,
    },
    Stream {
        stream_id: u64,
        offset: Option<u64>,
        /// Older qlog drafts give the length directly.
        length: Option<u64>,
        raw: Option<RawInfo>,
    },
    MaxData {
        maximum: u64,
    },
    #[serde(other)]
    Other,
}

/// `quic:parameters_set`, for the initial connection flow-control limits.
#[derive(Deserialize)]
pub(crate) struct ParametersSet {
    pub(crate) owner: Option<String>,
    pub(crate) initial_max_data: Option<u64>,
}

/// The packet number space a packet type belongs to (RFC 9000, 12.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Space {
    Initial,
    Handshake,
    Application,
}

impl Space {
    /// Number of packet number spaces.
    pub(crate) const COUNT: usize = 3;

    /// The space of a qlog `packet_type`; `None` for packets without one.
    pub(crate) fn of(packet_type: &str) -> Option<Space> {
        match packet_type {
            "initial" => Some(Space::Initial),
            "handshake" => Some(Space::Handshake),
            "0RTT" | "1RTT" => Some(Space::Application),
            _ => None,
        }
    }

    /// Index into per-space tables.
    pub(crate) fn index(self) -> usize {
        match self {
            Space::Initial => 0,
            Space::Handshake => 1,
            Space::Application => 2,
        }
    }
}
