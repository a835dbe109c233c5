//! qlog's `quic:congestion_state_updated` event with a trigger of any name.
//!
//! qlog 0.18 types the event's trigger as persistent congestion, ECN or
//! unknown; the qlog QUIC event definitions also allow other text. A
//! slow start ended by SEARCH is written with the trigger `search`, so a
//! trace says why the state changed, not only that it did.

use serde::Serialize;

/// Name under which the event is written.
pub const CONGESTION_STATE_EVENT_NAME: &str = "quic:congestion_state_updated";

/// The data of a congestion state change.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CongestionStateUpdated {
    /// The state left, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<&'static str>,
    /// The state entered (quiche's names: `slow_start`,
    /// `congestion_avoidance`, ...).
    pub new: &'static str,
    /// What changed it.
    pub trigger: &'static str,
}

/// A `quic:congestion_state_updated` event, for
/// `QlogStreamer::add_event_with_instant` (which stamps the time).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CongestionStateEvent {
    /// Milliseconds since the trace's reference time.
    pub time: f64,
    /// The event's data.
    pub data: CongestionStateUpdated,
}

impl CongestionStateEvent {
    /// An event at time 0, for a streamer to stamp.
    pub fn new(data: CongestionStateUpdated) -> Self {
        CongestionStateEvent { time: 0.0, data }
    }
}

impl qlog::events::Eventable for CongestionStateEvent {
    fn importance(&self) -> qlog::events::EventImportance {
        // As qlog rates quiche's own congestion state events.
        qlog::events::EventImportance::Base
    }

    fn set_time(&mut self, time: f64) {
        self.time = time;
    }
}

impl Serialize for CongestionStateEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Wire<'a> {
            time: f64,
            name: &'static str,
            data: &'a CongestionStateUpdated,
        }
        Wire {
            time: self.time,
            name: CONGESTION_STATE_EVENT_NAME,
            data: &self.data,
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trigger_is_written_as_given() {
        let event = CongestionStateEvent::new(CongestionStateUpdated {
            old: Some("slow_start"),
            new: "congestion_avoidance",
            trigger: "search",
        });
        let json = serde_json::to_value(event).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "time": 0.0,
                "name": "quic:congestion_state_updated",
                "data": {"old": "slow_start", "new": "congestion_avoidance", "trigger": "search"}
            })
        );
    }
}
