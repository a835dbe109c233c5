//! The `quic:careful_resume_phase_updated` qlog event
//! (draft-ietf-tsvwg-careful-resume-qlog).
//!
//! The types here mirror the event's fields one to one and serialize to the
//! exact strings of the draft, so a sender can map its own Careful Resume
//! state onto them without this crate knowing anything about that state
//! machine.

use std::fmt;

use serde::de::Error as _;
use serde::Deserialize;
use serde::Deserializer;
use serde::Serialize;
use serde::Serializer;

/// Name under which the event is written.
pub const EVENT_NAME: &str = "quic:careful_resume_phase_updated";

/// Name used by earlier research forks, still accepted when reading.
pub const LEGACY_EVENT_NAME: &str = "recovery:careful_resume_phase_updated";

/// Returns whether `name` names the Careful Resume phase event.
pub fn is_phase_event_name(name: &str) -> bool {
    name == EVENT_NAME || name == LEGACY_EVENT_NAME
}

/// A Careful Resume phase (RFC 9959, section 4).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Normal congestion control runs while the saved state is checked.
    Reconnaissance,
    /// The window has jumped; capacity is not yet confirmed.
    Unvalidated,
    /// Waiting for the unvalidated packets to be acknowledged.
    Validating,
    /// Careful Resume is over (or was never worth using).
    Normal,
    /// Congestion was seen while unvalidated data was in flight.
    SafeRetreat,
}

impl Phase {
    /// Every phase, in the order the algorithm usually visits them.
    pub const ALL: [Phase; 5] = [
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Phase::Validating,
        Phase::SafeRetreat,
        Phase::Normal,
    ];

    /// The qlog string of this phase.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Reconnaissance => "reconnaissance",
            Phase::Unvalidated => "unvalidated",
            Phase::Validating => "validating",
            Phase::Normal => "normal",
            Phase::SafeRetreat => "safe_retreat",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Why the phase changed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The sender became window-limited in Reconnaissance, so it jumps.
    CongestionWindowLimited,
    /// The measured RTT does not match the saved one.
    RttNotValidated,
    /// The whole jump window has been sent.
    LastUnvalidatedPacketSent,
    /// The first packet sent in Unvalidated has been acknowledged.
    FirstUnvalidatedPacketAcknowledged,
    /// More than one RTT was spent in Unvalidated.
    RttExceeded,
    /// The sender did not use the capacity it jumped to.
    RateLimited,
    /// The last packet sent in Unvalidated has been acknowledged.
    LastUnvalidatedPacketAcknowledged,
    /// The network path changed.
    PathChanged,
    /// A packet was declared lost.
    PacketLoss,
    /// An ECN congestion experienced mark was reported.
    #[serde(rename = "ECN_CE")]
    EcnCe,
    /// Safe Retreat ended: recovery of the unvalidated packets is over.
    ExitRecovery,
    /// The one-user-per-set guard did not grant the saved set before the
    /// jump. A quiche-cr extension: the draft lists no trigger for it.
    SavedSetNotGranted,
    /// Loss detection found persistent congestion (RFC 9002, 7.6). A
    /// quiche-cr extension: the draft counts it as `packet_loss`.
    PersistentCongestion,
}

impl Trigger {
    /// The qlog string of this trigger.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::CongestionWindowLimited => "congestion_window_limited",
            Trigger::RttNotValidated => "rtt_not_validated",
            Trigger::LastUnvalidatedPacketSent => "last_unvalidated_packet_sent",
            Trigger::FirstUnvalidatedPacketAcknowledged => "first_unvalidated_packet_acknowledged",
            Trigger::RttExceeded => "rtt_exceeded",
            Trigger::RateLimited => "rate_limited",
            Trigger::LastUnvalidatedPacketAcknowledged => "last_unvalidated_packet_acknowledged",
            Trigger::PathChanged => "path_changed",
            Trigger::PacketLoss => "packet_loss",
            Trigger::EcnCe => "ECN_CE",
            Trigger::ExitRecovery => "exit_recovery",
            Trigger::SavedSetNotGranted => "saved_set_not_granted",
            Trigger::PersistentCongestion => "persistent_congestion",
        }
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// The Careful Resume variables after the phase change.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StateData {
    /// Validated capacity in bytes.
    pub pipesize: u64,
    /// Packet number of the first packet sent in Unvalidated.
    pub first_unvalidated_packet: u64,
    /// Packet number of the last packet sent in Unvalidated.
    pub last_unvalidated_packet: u64,
    /// Congestion window in bytes, when the sender reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_window: Option<u64>,
    /// Slow start threshold in bytes, when the sender reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssthresh: Option<u64>,
}

/// The saved path capacity the connection resumes from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct RestoredData {
    /// Congestion window observed on the earlier connection, in bytes.
    pub saved_congestion_window: u64,
    /// Minimum RTT observed on the earlier connection, in milliseconds.
    pub saved_rtt: f64,
}

/// The data of one phase change, describing the state after the change.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct CarefulResumePhaseUpdated {
    /// The phase left, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<Phase>,
    /// The phase entered.
    pub new: Phase,
    /// Careful Resume variables after the change.
    pub state_data: StateData,
    /// The saved capacity in use, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_data: Option<RestoredData>,
    /// Why the phase changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
}

impl CarefulResumePhaseUpdated {
    /// A phase change with no restored data attached.
    pub fn new(
        old: Option<Phase>,
        new: Phase,
        trigger: Option<Trigger>,
        state_data: StateData,
    ) -> Self {
        CarefulResumePhaseUpdated {
            old,
            new,
            state_data,
            restored_data: None,
            trigger,
        }
    }

    /// Attaches the saved capacity the connection resumes from.
    pub fn with_restored_data(mut self, restored: RestoredData) -> Self {
        self.restored_data = Some(restored);
        self
    }
}

/// A complete qlog event (time, name and data), ready for
/// `qlog::streamer::QlogStreamer::add_event_with_instant`.
///
/// The streamer sets the time, so [`PhaseUpdatedEvent::new`] leaves it at 0.
/// Deserializing accepts both [`EVENT_NAME`] and [`LEGACY_EVENT_NAME`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseUpdatedEvent {
    /// Milliseconds since the trace's reference time.
    pub time: f64,
    /// The event's data.
    pub data: CarefulResumePhaseUpdated,
}

impl PhaseUpdatedEvent {
    /// An event at time 0, for a streamer to stamp.
    pub fn new(data: CarefulResumePhaseUpdated) -> Self {
        PhaseUpdatedEvent { time: 0.0, data }
    }
}

impl qlog::events::Eventable for PhaseUpdatedEvent {
    fn importance(&self) -> qlog::events::EventImportance {
        qlog::events::EventImportance::Extra
    }

    fn set_time(&mut self, time: f64) {
        self.time = time;
    }
}

/// The event's wire shape, borrowed for writing.
#[derive(Serialize)]
struct WireOut<'a> {
    time: f64,
    name: &'static str,
    data: &'a CarefulResumePhaseUpdated,
}

/// The event's wire shape, owned for reading.
#[derive(Deserialize)]
struct WireIn {
    time: f64,
    name: String,
    data: CarefulResumePhaseUpdated,
}

impl Serialize for PhaseUpdatedEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        WireOut {
            time: self.time,
            name: EVENT_NAME,
            data: &self.data,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for PhaseUpdatedEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = WireIn::deserialize(d)?;
        if !is_phase_event_name(&wire.name) {
            return Err(D::Error::custom(format!(
                "expected event {EVENT_NAME}, found {}",
                wire.name
            )));
        }
        Ok(PhaseUpdatedEvent {
            time: wire.time,
            data: wire.data,
        })
    }
}
