//! Reconnaissance: deciding whether, and when, the saved set may be used.
//!
//! Shared by the window-based state machine and its BBR mode.

use std::time::Duration;

use crate::events::{Ack, PacketSent};
use crate::params::{Config, InitialData, SavedState};
use crate::phase::Trigger;

/// What Reconnaissance concluded from an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Keep waiting with the initial window.
    Wait,
    /// Every condition holds: the sender may jump.
    Ready,
    /// Careful Resume must end without a jump.
    Abandon(Trigger),
}

/// The evidence gathered before a jump.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reconnaissance {
    largest_sent_pn: Option<u64>,
    /// The last application packet of the initial flight: the largest sent
    /// when the first ACK arrived (inner `None`: none had been sent). Fixing
    /// it keeps a sender that goes on sending from moving the goal.
    initial_flight_end: Option<Option<u64>>,
    rtt_validated: bool,
    handshake_acked: bool,
    /// Application bytes acknowledged since the handshake flight was (strict reading).
    extra_acked: usize,
    cwnd_limited: bool,
}

impl Reconnaissance {
    pub(crate) fn new() -> Self {
        Reconnaissance {
            largest_sent_pn: None,
            initial_flight_end: None,
            rtt_validated: false,
            handshake_acked: false,
            extra_acked: 0,
            cwnd_limited: false,
        }
    }

    /// Records a send; the latest send tells whether the sender is cwnd-limited.
    pub(crate) fn on_packet_sent(&mut self, sent: &PacketSent) {
        self.largest_sent_pn = Some(sent.pn);
        self.cwnd_limited = sent.cwnd_limited;
    }

    /// Checks the RTT sample and the acknowledgement of the initial data;
    /// an RTT that does not fit the saved one ends Careful Resume.
    pub(crate) fn on_ack(
        &mut self,
        ack: &Ack,
        config: &Config,
        saved: &SavedState,
    ) -> Result<(), Trigger> {
        if !rtt_fits(ack.min_rtt, config, saved) {
            return Err(Trigger::RttNotValidated);
        }
        self.rtt_validated = true;
        if self.handshake_acked {
            if ack.largest_acked.is_some() {
                self.extra_acked = self.extra_acked.saturating_add(ack.acked_bytes);
            }
        } else {
            let end = *self.initial_flight_end.get_or_insert(self.largest_sent_pn);
            self.handshake_acked = match (end, ack.largest_acked) {
                (None, _) => true,
                (Some(sent), Some(acked)) => acked >= sent,
                (Some(_), None) => false,
            };
        }
        Ok(())
    }

    /// Whether every condition for a jump holds now.
    pub(crate) fn verdict(&self, config: &Config, jump_window: usize, cwnd: usize) -> Verdict {
        if !(self.rtt_validated && self.initial_data_acked(config) && self.cwnd_limited) {
            return Verdict::Wait;
        }
        if jump_window <= cwnd.max(config.initial_window()).saturating_mul(2) {
            // The jump offers nothing over slow start, which sends twice the
            // window in the coming round without a validation, while
            // Unvalidated holds the window at the jump (RFC 9959 leaves
            // Careful Resume when the saved set offers nothing over the
            // current window). A crowd's jump budget lowers jumps this far.
            return Verdict::Abandon(Trigger::CongestionWindowLimited);
        }
        Verdict::Ready
    }

    fn initial_data_acked(&self, config: &Config) -> bool {
        self.handshake_acked
            && match config.initial_data() {
                InitialData::HandshakeFlight => true,
                InitialData::ExtraWindow => self.extra_acked >= config.initial_window(),
            }
    }
}

/// The RTT check of Reconnaissance: saved_rtt / 2 < min_rtt <= factor x saved_rtt.
///
/// The minimum RTT is used for both bounds: it is what the RFC names for the
/// lower one, and for the upper one it keeps a single delayed ACK from
/// passing for a path change.
fn rtt_fits(min_rtt: Duration, config: &Config, saved: &SavedState) -> bool {
    let upper = saved.rtt.saturating_mul(config.rtt_upper_factor().get());
    min_rtt > saved.rtt / 2 && min_rtt <= upper
}
