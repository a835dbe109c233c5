//! Careful Resume for rate-based controllers (RFC 9959, BBR appendix).
//!
//! BBR keeps its own state machine; Careful Resume only raises its rates for
//! two rounds of Startup. Reconnaissance is the same as for window-based
//! controllers. When every condition holds and BBR is in Startup at a round
//! boundary, the *carefully resuming* flag is set: BBR paces at
//! max(bw x startup_pacing_gain, probing_rate), with
//! probing_rate = jump_window / current_rtt, and sizes its window from
//! max(bw, probing_rate). The flag clears after two rounds (the first round
//! sends the unvalidated data, the second validates it). Congestion while the
//! flag is set sends BBR to Drain, which plays the part of Safe Retreat; the
//! delivery-rate samples taken there describe the jump, not the path, and
//! must be discarded.
//!
//! Phase mapping for qlog: first round = Unvalidated, second round =
//! Validating, Drain after congestion = Safe Retreat.

use std::time::{Duration, Instant};

use crate::events::{Ack, Congestion, PacketSent};
use crate::params::{Config, SavedState};
use crate::phase::{Phase, Transition, Trigger};
use crate::rate::bytes_per_second;
use crate::recon::{Reconnaissance, Verdict};

/// What BBR must do after a [`BbrResume`] event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrAction {
    /// Nothing beyond logging the transition.
    Continue,
    /// Enter Drain now: congestion was seen while carefully resuming.
    EnterDrain,
}

/// Careful Resume driven by a BBR controller.
#[derive(Clone, Debug)]
pub struct BbrResume {
    config: Config,
    saved: SavedState,
    jump_window: usize,
    phase: Phase,
    recon: Reconnaissance,
    pipesize: usize,
    largest_sent_pn: Option<u64>,
    first_unvalidated_pn: Option<u64>,
    last_unvalidated_pn: Option<u64>,
    current_rtt: Duration,
    saved_set_consumed: bool,
    /// Whether Reconnaissance is satisfied and waits for a Startup round.
    ready: bool,
}

impl BbrResume {
    /// Starts Reconnaissance for a BBR connection resuming from `saved`.
    pub fn new(config: Config, saved: SavedState) -> Self {
        BbrResume {
            config,
            saved,
            jump_window: config.jump_window(&saved),
            phase: Phase::Reconnaissance,
            recon: Reconnaissance::new(),
            pipesize: 0,
            largest_sent_pn: None,
            first_unvalidated_pn: None,
            last_unvalidated_pn: None,
            current_rtt: saved.rtt,
            saved_set_consumed: false,
            ready: false,
        }
    }

    /// Call after sending an application-space packet that counts in flight.
    pub fn on_packet_sent(&mut self, sent: &PacketSent) -> Option<Transition> {
        if !self.is_active() {
            return None;
        }
        self.largest_sent_pn = Some(sent.pn);
        match self.phase {
            Phase::Reconnaissance => {
                self.recon.on_packet_sent(sent);
                self.check_recon(sent.cwnd, sent.now)
            }
            Phase::Unvalidated => {
                self.first_unvalidated_pn.get_or_insert(sent.pn);
                None
            }
            Phase::Validating | Phase::SafeRetreat | Phase::Normal => None,
        }
    }

    /// Call after processing an ACK frame that newly acknowledged packets,
    /// in any packet number space.
    pub fn on_ack(&mut self, ack: &Ack) -> Option<Transition> {
        if !self.is_active() {
            return None;
        }
        self.current_rtt = ack.smoothed_rtt;
        if self.phase == Phase::Reconnaissance {
            return match self.recon.on_ack(ack, &self.config, &self.saved) {
                Err(trigger) => Some(self.change(Phase::Normal, trigger, ack.now)),
                Ok(()) => self.check_recon(ack.cwnd, ack.now),
            };
        }
        self.pipesize = self.pipesize.saturating_add(ack.acked_bytes);
        None
    }

    /// Call at the start of each BBR round trip. `in_startup` tells whether
    /// BBR is in Startup; unvalidated data is only sent there.
    pub fn on_round_start(
        &mut self,
        in_startup: bool,
        bytes_in_flight: usize,
        now: Instant,
    ) -> Option<Transition> {
        match self.phase {
            Phase::Reconnaissance if self.ready => {
                if in_startup {
                    self.pipesize = bytes_in_flight;
                    Some(self.change(Phase::Unvalidated, Trigger::CongestionWindowLimited, now))
                } else {
                    // Startup is over: BBR already found the pipe.
                    Some(self.change(Phase::Normal, Trigger::CongestionWindowLimited, now))
                }
            }
            Phase::Unvalidated => {
                self.last_unvalidated_pn = self.largest_sent_pn;
                Some(self.change(Phase::Validating, Trigger::RttExceeded, now))
            }
            Phase::Validating => Some(self.change(
                Phase::Normal,
                Trigger::LastUnvalidatedPacketAcknowledged,
                now,
            )),
            Phase::Reconnaissance | Phase::SafeRetreat | Phase::Normal => None,
        }
    }

    /// Call on loss or ECN-CE. While carefully resuming, BBR must enter Drain.
    pub fn on_congestion(
        &mut self,
        signal: Congestion,
        now: Instant,
    ) -> Option<(Transition, BbrAction)> {
        let trigger = match signal {
            Congestion::Loss => Trigger::PacketLoss,
            Congestion::EcnCe => Trigger::EcnCe,
        };
        self.on_path_trouble(trigger, now)
    }

    /// Call when the stack detects a change of path.
    pub fn on_path_change(&mut self, now: Instant) -> Option<(Transition, BbrAction)> {
        self.on_path_trouble(Trigger::PathChanged, now)
    }

    /// Call when BBR leaves Drain: a Safe Retreat ends there.
    pub fn on_drain_exit(&mut self, now: Instant) -> Option<Transition> {
        (self.phase == Phase::SafeRetreat)
            .then(|| self.change(Phase::Normal, Trigger::ExitRecovery, now))
    }

    /// Call on persistent congestion: Careful Resume ends at once.
    pub fn on_persistent_congestion(&mut self, now: Instant) -> Option<Transition> {
        if !self.is_active() {
            return None;
        }
        if self.phase != Phase::Reconnaissance {
            self.saved_set_consumed = true;
        }
        Some(self.change(Phase::Normal, Trigger::PacketLoss, now))
    }

    /// Whether Careful Resume may still act; once false it stays false.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.phase != Phase::Normal
    }

    /// The current phase.
    #[inline]
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The *carefully resuming* flag: set for the two rounds after the jump
    /// and through a Drain entered from them.
    #[inline]
    pub fn carefully_resuming(&self) -> bool {
        matches!(
            self.phase,
            Phase::Unvalidated | Phase::Validating | Phase::SafeRetreat
        )
    }

    /// While carefully resuming (outside Drain), the probing rate in bytes
    /// per second: jump_window / current_rtt.
    pub fn probing_rate(&self) -> Option<u64> {
        if !matches!(self.phase, Phase::Unvalidated | Phase::Validating) {
            return None;
        }
        Some(bytes_per_second(self.jump_window, self.current_rtt))
    }

    /// The pacing rate BBR must use given its own Startup rate
    /// (bw x startup_pacing_gain), in bytes per second.
    pub fn pacing_rate(&self, bbr_pacing_rate: u64) -> u64 {
        self.probing_rate()
            .map_or(bbr_pacing_rate, |probe| probe.max(bbr_pacing_rate))
    }

    /// The congestion window BBR must use given its bandwidth estimate (bytes
    /// per second), min RTT and Startup cwnd gain:
    /// max(bw, probing_rate) x min_rtt x cwnd_gain. `None` when not resuming.
    pub fn cwnd(&self, bw: u64, min_rtt: Duration, cwnd_gain: f64) -> Option<usize> {
        let rate = self.probing_rate()?.max(bw);
        // Float conversions saturate, so huge products cannot wrap.
        let bdp = rate as f64 * min_rtt.as_secs_f64() * cwnd_gain;
        Some((bdp as usize).max(self.config.minimum_window()))
    }

    /// Whether a delivery-rate sample taken now must be discarded: samples
    /// from Drain while carefully resuming measure the jump, not the path.
    #[inline]
    pub fn discards_delivery_rate_samples(&self) -> bool {
        self.phase == Phase::SafeRetreat
    }

    /// The jump window: min(max_jump, saved_cwnd / 2).
    pub fn jump_window(&self) -> usize {
        self.jump_window
    }

    /// PipeSize: the capacity validated so far, in bytes.
    pub fn pipesize(&self) -> usize {
        self.pipesize
    }

    /// Whether the saved set must be deleted and never used again.
    pub fn saved_set_consumed(&self) -> bool {
        self.saved_set_consumed
    }

    fn check_recon(&mut self, cwnd: usize, now: Instant) -> Option<Transition> {
        match self.recon.verdict(&self.config, self.jump_window, cwnd) {
            Verdict::Wait => None,
            Verdict::Ready => {
                self.ready = true;
                None
            }
            Verdict::Abandon(trigger) => Some(self.change(Phase::Normal, trigger, now)),
        }
    }

    fn on_path_trouble(
        &mut self,
        trigger: Trigger,
        now: Instant,
    ) -> Option<(Transition, BbrAction)> {
        match self.phase {
            Phase::Reconnaissance => Some((
                self.change(Phase::Normal, trigger, now),
                BbrAction::Continue,
            )),
            Phase::Unvalidated | Phase::Validating => {
                if self.last_unvalidated_pn.is_none() {
                    self.last_unvalidated_pn = self.largest_sent_pn;
                }
                self.saved_set_consumed = true;
                let transition = self.change(Phase::SafeRetreat, trigger, now);
                Some((transition, BbrAction::EnterDrain))
            }
            Phase::SafeRetreat | Phase::Normal => None,
        }
    }

    fn change(&mut self, to: Phase, trigger: Trigger, now: Instant) -> Transition {
        let from = self.phase;
        self.phase = to;
        Transition {
            from,
            to,
            trigger,
            cwnd: None,
            ssthresh: None,
            pipesize: self.pipesize,
            first_unvalidated_pn: self.first_unvalidated_pn,
            last_unvalidated_pn: self.last_unvalidated_pn,
            saved: self.saved,
            saved_set_consumed: self.saved_set_consumed,
            at: now,
        }
    }
}
