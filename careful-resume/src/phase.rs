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
    /// A packet was declared lost.
    PacketLoss,
    /// An ACK reported ECN Congestion Experienced.
    EcnCe,
    /// Loss recovery after a Safe Retreat has completed.
    ExitRecovery,
    /// The one-user-per-set guard did not grant the saved set before the
    /// jump (taken by another connection, or no answer in time). A project
    /// extension: the qlog draft lists no trigger for it.
    SavedSetNotGranted,
    /// Loss detection found persistent congestion (RFC 9002, 7.6): nothing
    /// was delivered for three probe timeouts. A project extension: the
    /// qlog draft counts it as `packet_loss`, which hides an outage behind
    /// an ordinary loss.
    PersistentCongestion,
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
            Trigger::PersistentCongestion => "persistent_congestion",
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

/// How Careful Resume steers a rate-based controller (BBR, RFC 9959's
/// appendix) while it acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateControl {
    /// The two rounds after the jump (Unvalidated, then Validating), while
    /// the appendix's *carefully resuming* flag is set: pace at no less than
    /// `probing_rate` (bytes per second; the jump window over the current
    /// RTT) and size the window from max(bandwidth estimate, probing_rate)
    /// x min RTT x Startup's window gain.
    Probe {
        /// The probing rate in bytes per second.
        probing_rate: u64,
        /// While Validating, the rate at which the jump's packets are being
        /// acknowledged (bytes per second, measured over at least a quarter
        /// of an RTT of ACKs): a delivery-rate sample of the whole ACK
        /// train, which BBR's own samples only show a round later (each
        /// spans the round trip before the jump's first ACK).
        delivery_rate: Option<u64>,
    },
    /// Safe Retreat: congestion was seen while carefully resuming. Leave
    /// Startup for Drain now, and discard delivery-rate samples until the
    /// retreat ends: they measure the jump, not the path.
    Retreat,
    /// Safe Retreat has ended: take `validated_rate` (bytes per second,
    /// PipeSize x Beta over the current RTT, the capacity the jump
    /// validated) as a bandwidth sample, the counterpart of the window-based
    /// controllers' ssthresh of PipeSize x Beta; samples count again.
    /// Without it BBR would go on from the estimate it had before the jump,
    /// from one initial window. A project choice: RFC 9959's appendix says
    /// nothing of the end of Drain.
    Retreated {
        /// The validated rate in bytes per second.
        validated_rate: u64,
    },
    /// What the path carries is known: Startup may end once the bandwidth
    /// estimate comes near `rate` rather than grow the window to twice the
    /// path into a standing queue. After a validated jump, the saved rate
    /// (the saved window over the saved RTT), which the earlier connection
    /// showed the path carries; while validating a jump whose ACKs come
    /// markedly slower than it was paced, the rate they show, and the
    /// probing rate no longer applies. The counterpart of the window-based
    /// controllers' slow start ending at the saved window or at the capacity
    /// the jump showed; a project choice, not in RFC 9959's appendix.
    EndStartupAt {
        /// The rate in bytes per second.
        rate: u64,
    },
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
