//! Phases, triggers and the record of a phase change.

use std::time::Instant;

use crate::params::SavedState;

/// A phase of Careful Resume on the resumed connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Probing the path with the initial window before trusting the saved set.
    Reconnaissance,
    /// Sending with the jump window; the capacity is not yet confirmed.
    Unvalidated,
    /// Waiting for the data sent while unvalidated to be acknowledged.
    Validating,
    /// Congestion seen after the jump: the window is halved and frozen.
    SafeRetreat,
    /// Careful Resume has ended; the base congestion controller is on its own.
    Normal,
}

impl Phase {
    /// The phase's name in qlog (`careful_resume_phase_updated`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Reconnaissance => "reconnaissance",
            Phase::Unvalidated => "unvalidated",
            Phase::Validating => "validating",
            Phase::SafeRetreat => "safe_retreat",
            Phase::Normal => "normal",
        }
    }
}

/// What caused a phase change, named as in qlog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// The sender was limited by the window: jump (or, with nothing to gain
    /// from the saved set, end Careful Resume).
    CongestionWindowLimited,
    /// The measured RTT does not fit the saved RTT.
    RttNotValidated,
    /// The flight reached the jump window.
    LastUnvalidatedPacketSent,
    /// An ACK covered the first packet sent while unvalidated.
    FirstUnvalidatedPacketAcknowledged,
    /// More than one current RTT was spent unvalidated.
    RttExceeded,
    /// The sender did not use the jump window; the validated PipeSize is kept.
    RateLimited,
    /// An ACK covered the last packet sent while unvalidated.
    LastUnvalidatedPacketAcknowledged,
    /// The stack reported a change of path.
    PathChanged,
    /// A packet was declared lost (also used for persistent congestion).
    PacketLoss,
    /// An ACK reported ECN Congestion Experienced.
    EcnCe,
    /// Loss recovery after a Safe Retreat has completed.
    ExitRecovery,
    /// The one-user-per-set guard did not grant the saved set before the
    /// jump (taken by another connection, or no answer in time). A project
    /// extension: the qlog draft lists no trigger for it.
    SavedSetNotGranted,
}

impl Trigger {
    /// The trigger's name in qlog.
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
        }
    }
}

/// A phase change: what the congestion controller must do now, and
/// everything the qlog `careful_resume_phase_updated` event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The phase left.
    pub from: Phase,
    /// The phase entered.
    pub to: Phase,
    /// Why.
    pub trigger: Trigger,
    /// The congestion window to set now; `None` leaves the controller's
    /// window as it is (log the controller's own value then).
    pub cwnd: Option<usize>,
    /// The slow start threshold to set now; `None` leaves it as it is.
    pub ssthresh: Option<usize>,
    /// PipeSize after the change, in bytes.
    pub pipesize: usize,
    /// First packet number sent while unvalidated, once known.
    pub first_unvalidated_pn: Option<u64>,
    /// Last packet number sent while unvalidated, once fixed.
    pub last_unvalidated_pn: Option<u64>,
    /// The saved set this connection resumed from (qlog `restored_data`).
    pub saved: SavedState,
    /// The saved set must be deleted: it must never be used again
    /// (set on entering Safe Retreat or on persistent congestion after a jump).
    pub saved_set_consumed: bool,
    /// When the change happened (the time of the event that caused it).
    pub at: Instant,
}

/// How Careful Resume constrains the congestion window while it holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowControl {
    /// Unvalidated: the window is exactly this (the jump window).
    Fixed(usize),
    /// Safe Retreat: the window must not exceed this, and never grows.
    Cap(usize),
}

impl WindowControl {
    /// The window to use given the base controller's own window.
    #[inline]
    pub fn apply(self, controller_cwnd: usize) -> usize {
        match self {
            WindowControl::Fixed(window) => window,
            WindowControl::Cap(cap) => controller_cwnd.min(cap),
        }
    }

    /// The constraining value.
    #[inline]
    pub fn bytes(self) -> usize {
        match self {
            WindowControl::Fixed(window) | WindowControl::Cap(window) => window,
        }
    }
}
