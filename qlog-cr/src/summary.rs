//! The key numbers of a trace, for people (text) and scripts (JSON).

use std::fmt;

use serde::Serialize;

use crate::event::RestoredData;
use crate::phases;
use crate::phases::PhaseSpan;
use crate::trace::Trace;

/// The key numbers of one trace. Its JSON form is documented in the crate
/// documentation.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Summary {
    /// Display name of the trace.
    pub name: String,
    /// `server` or `client`, when known.
    pub vantage_point: Option<String>,
    /// Time of the last event (ms).
    pub duration_ms: f64,
    /// When the last application data arrived or was acknowledged (ms).
    pub completion_ms: Option<f64>,
    /// Careful Resume phases in time order; empty without CR events.
    pub phases: Vec<PhaseSpan>,
    /// The saved capacity resumed from, from the first event carrying it.
    pub restored: Option<RestoredData>,
    /// Largest congestion window (bytes).
    pub max_congestion_window: Option<u64>,
    /// Largest bytes in flight.
    pub max_bytes_in_flight: Option<u64>,
    /// Smallest minimum RTT reported (ms).
    pub min_rtt_ms: Option<f64>,
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Separate times at which packets were declared lost.
    pub loss_events: usize,
    /// Total size of the packets sent (bytes).
    pub bytes_sent: u64,
    /// Total size of the sent packets that were acknowledged (bytes).
    pub bytes_acked: u64,
    /// New stream data received (bytes).
    pub stream_bytes_received: u64,
}

impl Trace {
    /// The phases of Careful Resume as time spans.
    pub fn phase_spans(&self) -> Vec<PhaseSpan> {
        phases::spans(&self.phase_changes)
    }

    /// The key numbers of this trace.
    pub fn summary(&self) -> Summary {
        let t = &self.timelines;
        Summary {
            name: self.name.clone(),
            vantage_point: self.vantage_point.clone(),
            duration_ms: self.duration_ms,
            completion_ms: self.completion_ms,
            phases: self.phase_spans(),
            restored: self
                .phase_changes
                .iter()
                .find_map(|c| c.update.restored_data),
            max_congestion_window: t.congestion_window.max(),
            max_bytes_in_flight: t.bytes_in_flight.max(),
            min_rtt_ms: t.min_rtt_ms.min(),
            lost_packets: self.lost_packets(),
            loss_events: self.losses.len(),
            bytes_sent: t.bytes_sent.last().unwrap_or(0),
            bytes_acked: t.bytes_acked.last().unwrap_or(0),
            stream_bytes_received: t.stream_bytes_received.last().unwrap_or(0),
        }
    }
}

/// Writes `value` followed by `unit`, or "-" when absent.
fn or_dash<T: fmt::Display>(value: Option<T>, unit: &str) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v}{unit}"))
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = self
            .vantage_point
            .as_deref()
            .map_or(String::new(), |v| format!(" ({v})"));
        writeln!(f, "trace:                 {}{side}", self.name)?;
        writeln!(f, "duration:              {:.3} ms", self.duration_ms)?;
        let completion = self.completion_ms.map(|c| format!("{c:.3}"));
        writeln!(f, "completion:            {}", or_dash(completion, " ms"))?;
        if let Some(r) = self.restored {
            writeln!(
                f,
                "restored:              window {} B, RTT {:.3} ms",
                r.saved_congestion_window, r.saved_rtt
            )?;
        }
        if self.phases.is_empty() {
            writeln!(f, "careful resume:        no phase events")?;
        } else {
            writeln!(f, "careful resume phases:")?;
            for span in &self.phases {
                let end = span
                    .end_ms
                    .map_or_else(|| "end".to_string(), |e| format!("{e:.3}"));
                let trigger = span.trigger.map_or(String::new(), |t| format!("  ({t})"));
                let pipesize = span
                    .state
                    .map_or(String::new(), |s| format!("pipesize {} B", s.pipesize));
                writeln!(
                    f,
                    "  {:>12.3} .. {:>12} ms  {:<16}{pipesize}{trigger}",
                    span.start_ms, end, span.phase
                )?;
            }
        }
        writeln!(
            f,
            "max congestion window: {}",
            or_dash(self.max_congestion_window, " B")
        )?;
        writeln!(
            f,
            "max bytes in flight:   {}",
            or_dash(self.max_bytes_in_flight, " B")
        )?;
        let rtt = self.min_rtt_ms.map(|r| format!("{r:.3}"));
        writeln!(f, "min RTT:               {}", or_dash(rtt, " ms"))?;
        writeln!(
            f,
            "lost packets:          {} (at {} times)",
            self.lost_packets, self.loss_events
        )?;
        writeln!(
            f,
            "bytes sent / acked:    {} B / {} B",
            self.bytes_sent, self.bytes_acked
        )?;
        write!(f, "stream bytes received: {} B", self.stream_bytes_received)
    }
}
