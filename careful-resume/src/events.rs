//! The connection events Careful Resume is fed with. All sizes in bytes.

use std::time::{Duration, Instant};

/// An ack-eliciting or in-flight packet of the application space was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketSent {
    /// Its packet number.
    pub pn: u64,
    /// Its size.
    pub bytes: usize,
    /// Bytes in flight after sending it.
    pub bytes_in_flight: usize,
    /// The base controller's congestion window.
    pub cwnd: usize,
    /// The sender had more to send than the window allowed (as opposed to
    /// being application-limited).
    pub cwnd_limited: bool,
    /// When it was sent.
    pub now: Instant,
}

/// An ACK frame newly acknowledged packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// Largest application-space packet number this ACK newly acknowledged;
    /// `None` when the ACK belongs to the Initial or Handshake space.
    pub largest_acked: Option<u64>,
    /// Bytes newly acknowledged by this ACK.
    pub acked_bytes: usize,
    /// Bytes in flight after processing it.
    pub bytes_in_flight: usize,
    /// The base controller's congestion window after processing it.
    pub cwnd: usize,
    /// The connection's minimum RTT.
    pub min_rtt: Duration,
    /// The connection's smoothed RTT: the "current RTT" used for pacing and
    /// for bounding the Unvalidated phase.
    pub smoothed_rtt: Duration,
    /// When it was processed.
    pub now: Instant,
}

/// A congestion signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Congestion {
    /// Packets were declared lost.
    Loss,
    /// An ACK reported an increase of the ECN-CE count.
    EcnCe,
}
