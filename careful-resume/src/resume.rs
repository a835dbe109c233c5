//! The Careful Resume state machine (RFC 9959, section 4), for window-based
//! controllers and, as the RFC's appendix describes, for rate-based ones.

use std::time::{Duration, Instant};

use crate::events::{Ack, Congestion, PacketSent};
use crate::params::{Config, SavedState};
use crate::phase::{Phase, RateControl, Transition, Trigger, WindowControl};
use crate::rate::{bytes_in, bytes_per_second};
use crate::recon::{Reconnaissance, Verdict};

/// The path delivered the jump slower than it was paced when its ACKs came
/// at less than this fraction (numerator, denominator) of the pacing rate.
const PATH_LIMITED_RATIO: (u128, u128) = (4, 5);

/// After a validated jump, losses found within this many smoothed RTTs
/// (numerator, denominator) are of packets sent while it was being
/// validated: a packet sent just before the validation is declared lost at
/// the latest 9/8 of an RTT later (RFC 9002's time threshold).
const LOSS_AFTER_VALIDATION_RTTS: (u32, u32) = (5, 4);

/// Losses after a validated jump refute the window that grew past it once
/// they reach this share of PipeSize in datagrams (numerator,
/// denominator), and at least [`LOSSES_REFUTING_MIN`]: a policer or a full
/// queue drops the growth wholesale (behind a policer at the jump's rate,
/// half of the round that doubled past it), while CoDel drops a packet or
/// a few per interval and random loss a few packets. Counting a
/// sixty-fourth, CoDel's drops in a crowd behind fq_codel were enough: a
/// lowered jump's flow came down to its small PipeSize, below its fair
/// share, and finished last when the others had left the link idle.
const LOSSES_REFUTING: (usize, usize) = (1, 8);

/// The fewest losses that refute the window after a validated jump.
const LOSSES_REFUTING_MIN: usize = 3;

/// The share of the round after a validated jump (numerator, denominator)
/// that must be acknowledged for slow start to go on past the saved
/// capacity: what random loss leaves, not what a path carrying less does.
const ROUND_DELIVERED: (usize, usize) = (15, 16);

/// What the jump's ACKs showed about the path while it is being validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlowStartLimit {
    /// Nothing yet (or the path keeps pace with the jump).
    Unknown,
    /// The path carries this much (bytes per min RTT), less than the jump
    /// was paced at.
    Shown(usize),
    /// Handed to the controller.
    Taken,
}

/// A validated window-based jump, as the losses after it are judged (see
/// [`CarefulResume::on_loss_after_validation`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Validated {
    at: Instant,
    /// PipeSize at the validation: the capacity the jump validated.
    pipesize: usize,
    /// Packets found lost since.
    lost: usize,
}

/// After a validated jump, whether slow start may go on past the saved
/// capacity (see [`CarefulResume::on_ack_after_validation`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PastSaved {
    /// Not offered, or no longer: no validated jump (yet), a rate-based
    /// controller, a ceiling the jump's ACKs or a queue set, or the round
    /// after the validation showed no room.
    Closed,
    /// The round after the validation: the packets sent after `from_pn`
    /// until the first of them is acknowledged (`sent` bytes); then, in
    /// `until`, the last of them and the bytes acknowledged since.
    Watching {
        from_pn: u64,
        sent: usize,
        until: Option<(u64, usize)>,
    },
    /// Slow start goes on until the RTT shows a queue or a loss comes.
    Open,
}

/// Careful Resume for one path of a connection that starts with a saved set.
///
/// Create it when the connection may use the saved set (not already in use by
/// another connection, not expired, same remote endpoint); it starts in
/// Reconnaissance. Feed it every event; each returns the [`Transition`] to
/// apply, if the phase changed. Once [`CarefulResume::is_active`] is false it
/// never acts again.
///
/// # Rate-based controllers (BBR)
///
/// Made with [`CarefulResume::new_rate_based`], it follows RFC 9959's
/// appendix: BBR keeps its own state machine and window, and Careful Resume
/// raises its rates for two rounds of Startup instead of fixing a window
/// ([`CarefulResume::rate_control`]). The jump starts when Reconnaissance is
/// satisfied (BBR must still be in Startup:
/// [`CarefulResume::on_startup_over`]); its first round, ended by the ACK
/// of the first packet it sent, is Unvalidated, its second, ended by the ACK
/// of the last packet the first round sent, is Validating: the phases and
/// qlog events of the window-based controllers. Congestion during them is a
/// Safe Retreat: BBR enters Drain and discards delivery-rate samples until
/// the packets of the jump are acknowledged.
#[derive(Clone, Debug)]
pub struct CarefulResume {
    config: Config,
    /// Steers a rate-based controller (RFC 9959's appendix) instead of
    /// holding a window.
    rate_based: bool,
    saved: SavedState,
    jump_window: usize,
    /// Before the jump, the most it may be beside the queue the path's
    /// minimum RTT shows (see `leave_room_for_the_queue`).
    room_beside_the_queue: usize,
    phase: Phase,
    recon: Reconnaissance,
    pipesize: usize,
    /// The window imposed in Safe Retreat.
    retreat_window: usize,
    largest_sent_pn: Option<u64>,
    first_unvalidated_pn: Option<u64>,
    last_unvalidated_pn: Option<u64>,
    unvalidated_since: Option<Instant>,
    /// Bytes sent while unvalidated: the round a rate-based jump filled.
    unvalidated_sent: usize,
    /// When the latest unvalidated packet was sent.
    last_unvalidated_sent_at: Option<Instant>,
    /// While the jump was being validated, the budget would have lowered it
    /// (others jumped onto the path since): it shares the path as a
    /// lowered jump does.
    shared_while_validated: bool,
    /// PipeSize when the jump was taken.
    pipesize_at_jump: usize,
    /// The largest smoothed RTT an ACK reported since the jump: whether
    /// the jump met a queue (see `lowered_into_a_queue`).
    jump_rtt_peak: Duration,
    /// The jump's pacing rate, bytes per second, fixed when it started.
    jump_rate: u64,
    /// How the path delivered the jump: PipeSize and the time at the first
    /// ACK of an unvalidated packet.
    jump_delivery_start: Option<(usize, Instant)>,
    /// The rate the jump's ACKs arrive at, once measured (bytes per second).
    jump_ack_rate: Option<u64>,
    /// The rate the jump's ACKs first showed the path carries when it came
    /// markedly below the jump's pacing rate (bytes per second).
    path_rate: Option<u64>,
    /// The capacity the jump's ACKs showed while it is being validated, for
    /// the controller to end slow start at
    /// ([`CarefulResume::take_slow_start_limit`]); taken once.
    slow_start_limit: SlowStartLimit,
    current_rtt: Duration,
    saved_set_consumed: bool,
    /// The guard has not yet answered whether this connection may use the
    /// saved set: the jump waits for it.
    claim_pending: bool,
    /// Every phase entered, with its trigger (at most four changes).
    history: Vec<(Phase, Trigger)>,
    /// After a validated jump, whether slow start may go past the saved
    /// capacity.
    past_saved: PastSaved,
    /// After a window-based jump was validated, until the losses after it
    /// refuted the window or came too late to.
    validated: Option<Validated>,
}

impl CarefulResume {
    /// Starts Reconnaissance for a connection resuming from `saved`.
    pub fn new(config: Config, saved: SavedState) -> Self {
        CarefulResume {
            config,
            rate_based: false,
            saved,
            jump_window: config.jump_window(&saved),
            room_beside_the_queue: usize::MAX,
            phase: Phase::Reconnaissance,
            recon: Reconnaissance::new(),
            pipesize: 0,
            retreat_window: 0,
            largest_sent_pn: None,
            first_unvalidated_pn: None,
            last_unvalidated_pn: None,
            unvalidated_since: None,
            last_unvalidated_sent_at: None,
            shared_while_validated: false,
            unvalidated_sent: 0,
            pipesize_at_jump: 0,
            jump_rtt_peak: Duration::ZERO,
            jump_rate: 0,
            jump_delivery_start: None,
            jump_ack_rate: None,
            path_rate: None,
            slow_start_limit: SlowStartLimit::Unknown,
            current_rtt: saved.rtt,
            saved_set_consumed: false,
            claim_pending: false,
            history: Vec::with_capacity(4),
            past_saved: PastSaved::Closed,
            validated: None,
        }
    }

    /// Starts Reconnaissance for a connection of a rate-based controller
    /// (BBR) resuming from `saved`: see the type's documentation.
    pub fn new_rate_based(config: Config, saved: SavedState) -> Self {
        CarefulResume {
            rate_based: true,
            ..CarefulResume::new(config, saved)
        }
    }

    /// Whether this steers a rate-based controller
    /// ([`CarefulResume::new_rate_based`]).
    #[inline]
    pub fn is_rate_based(&self) -> bool {
        self.rate_based
    }

    /// Call, for a rate-based controller, when it has left Startup (found
    /// the path's bandwidth, or saw loss) before the jump: unvalidated data
    /// is only sent in Startup, and there is nothing left to gain.
    pub fn on_startup_over(&mut self, now: Instant) -> Option<Transition> {
        (self.rate_based && self.phase == Phase::Reconnaissance)
            .then(|| self.end(Trigger::CongestionWindowLimited, None, None, now))
    }

    /// Holds the jump until the saved-set guard has answered
    /// ([`CarefulResume::on_claim`]). A server claims the set once the
    /// client has proved its address (the handshake is complete), so a
    /// guard across the network may answer after the sender is ready to
    /// jump: the sender then stays in Reconnaissance (the initial window)
    /// until the answer comes, and jumps on a grant. Guards answer within a
    /// bounded time, so the hold is bounded too.
    pub fn await_claim(&mut self) {
        if self.phase == Phase::Reconnaissance {
            self.claim_pending = true;
        }
    }

    /// The guard answered the claim [`CarefulResume::await_claim`] waits
    /// for. A refusal ends Careful Resume. A grant lets the jump go ahead:
    /// at once when the sender was already ready (it filled the initial
    /// window; `cwnd` and `bytes_in_flight` are the controller's now),
    /// otherwise when it becomes ready. Answers nobody waits for (none
    /// awaited, or Careful Resume over) are ignored.
    pub fn on_claim(
        &mut self,
        granted: bool,
        cwnd: usize,
        bytes_in_flight: usize,
        now: Instant,
    ) -> Option<Transition> {
        if !self.claim_pending || !self.is_active() {
            return None;
        }
        self.claim_pending = false;
        if !granted {
            return Some(self.end(Trigger::SavedSetNotGranted, None, None, now));
        }
        self.try_jump(cwnd, bytes_in_flight, now)
    }

    /// Whether the jump still waits for the guard's answer.
    pub fn is_claim_pending(&self) -> bool {
        self.claim_pending && self.is_active()
    }

    /// Call after sending an application-space packet that counts in flight,
    /// also once Careful Resume is over (the round after a validated jump is
    /// counted in packets: see [`CarefulResume::on_ack_after_validation`]).
    pub fn on_packet_sent(&mut self, sent: &PacketSent) -> Option<Transition> {
        self.largest_sent_pn = Some(sent.pn);
        if !self.is_active() {
            if let PastSaved::Watching {
                from_pn,
                sent: ref mut bytes,
                until: None,
            } = self.past_saved
            {
                if sent.pn > from_pn {
                    *bytes = bytes.saturating_add(sent.bytes);
                }
            }
            return None;
        }
        match self.phase {
            Phase::Reconnaissance => {
                self.recon.on_packet_sent(sent);
                self.try_jump(sent.cwnd, sent.bytes_in_flight, sent.now)
            }
            Phase::Unvalidated => {
                self.first_unvalidated_pn.get_or_insert(sent.pn);
                self.unvalidated_sent = self.unvalidated_sent.saturating_add(sent.bytes);
                self.last_unvalidated_sent_at = Some(sent.now);
                let room = self.jump_window.saturating_sub(sent.bytes_in_flight);
                // A rate-based jump lasts a round, whatever the flight.
                if !self.rate_based && room < self.config.max_datagram_size() {
                    self.leave_unvalidated(
                        Trigger::LastUnvalidatedPacketSent,
                        sent.bytes_in_flight,
                        sent.now,
                    )
                } else if self.unvalidated_rtt_exceeded(sent.now) {
                    self.leave_unvalidated(Trigger::RttExceeded, sent.bytes_in_flight, sent.now)
                } else {
                    None
                }
            }
            Phase::Validating | Phase::SafeRetreat | Phase::Normal => None,
        }
    }

    /// Call after processing an ACK frame that newly acknowledged packets,
    /// in any packet number space (the handshake ACK gives the first RTT sample).
    pub fn on_ack(&mut self, ack: &Ack) -> Option<Transition> {
        if !self.is_active() {
            return None;
        }
        self.current_rtt = ack.smoothed_rtt;
        match self.phase {
            Phase::Reconnaissance => match self.recon.on_ack(ack, &self.config, &self.saved) {
                Err(trigger) => Some(self.end(trigger, None, None, ack.now)),
                Ok(()) => {
                    self.leave_room_for_the_queue(ack.min_rtt);
                    self.try_jump(ack.cwnd, ack.bytes_in_flight, ack.now)
                }
            },
            Phase::Unvalidated => {
                self.pipesize = self.pipesize.saturating_add(ack.acked_bytes);
                self.jump_rtt_peak = self.jump_rtt_peak.max(ack.smoothed_rtt);
                if self.rtt_beyond_saved(ack.smoothed_rtt) {
                    // The path is not the one the saved set describes: a
                    // path change, which outranks what the ACK validates.
                    self.on_path_trouble(Trigger::PathChanged, ack.now)
                } else if self.acknowledges_unvalidated(ack.largest_acked) {
                    self.jump_delivery_start = Some((self.pipesize, ack.now));
                    self.leave_unvalidated(
                        Trigger::FirstUnvalidatedPacketAcknowledged,
                        ack.bytes_in_flight,
                        ack.now,
                    )
                } else if self.unvalidated_rtt_exceeded(ack.now) {
                    self.leave_unvalidated(Trigger::RttExceeded, ack.bytes_in_flight, ack.now)
                } else {
                    None
                }
            }
            Phase::Validating => {
                self.pipesize = self.pipesize.saturating_add(ack.acked_bytes);
                self.jump_rtt_peak = self.jump_rtt_peak.max(ack.smoothed_rtt);
                if self.jump_delivery_start.is_none()
                    && self.acknowledges_unvalidated(ack.largest_acked)
                {
                    self.jump_delivery_start = Some((self.pipesize, ack.now));
                }
                self.jump_ack_rate = self.jump_ack_rate(ack).or(self.jump_ack_rate);
                if self.slow_start_limit == SlowStartLimit::Unknown {
                    if let Some(rate) = self.path_limited_rate(ack) {
                        self.path_rate = Some(rate);
                        let capacity = self.capacity(rate, ack);
                        self.slow_start_limit = SlowStartLimit::Shown(capacity);
                    } else if self.lowered_into_a_queue(ack) {
                        // Others' jumps fill the path: slow start ends now,
                        // not at the validation a round later, when the
                        // crowd's windows would have doubled into the queue.
                        self.slow_start_limit = SlowStartLimit::Shown(self.pipesize);
                    }
                }
                if self.covers_last_unvalidated(ack) {
                    // The jump is validated: slow start may go on up to the
                    // saved capacity, which the earlier connection showed the
                    // path carries (or only PipeSize, for a lowered jump into
                    // a queue), unless the path delivered the jump slower
                    // than it was sent, which shows what it carries now;
                    // beyond that the controller probes in congestion
                    // avoidance. (Slow-starting on from a window this large
                    // doubles it past the path into a burst of loss the first
                    // connection never had.) Past the saved capacity only
                    // once a round trip at it showed room to spare
                    // (`on_ack_after_validation`).
                    let ssthresh = match self.capacity_shown_by_the_jump(ack) {
                        Some(shown) => shown,
                        None => {
                            let ceiling = self.pipesize.max(self.slow_start_ceiling(ack));
                            // Past the saved capacity only alone on the
                            // path: a crowd's lowered jumps already share it.
                            if self.config.slow_start_past_saved()
                                && !self.rate_based
                                && !self.lowered_into_a_queue(ack)
                            {
                                self.past_saved = match self.largest_sent_pn {
                                    Some(from_pn) => PastSaved::Watching {
                                        from_pn,
                                        sent: 0,
                                        until: None,
                                    },
                                    None => PastSaved::Closed,
                                };
                            }
                            ceiling
                        }
                    };
                    if !self.rate_based {
                        self.validated = Some(Validated {
                            at: ack.now,
                            pipesize: self.pipesize,
                            lost: 0,
                        });
                    }
                    let trigger = Trigger::LastUnvalidatedPacketAcknowledged;
                    Some(self.end(trigger, None, Some(ssthresh), ack.now))
                } else {
                    None
                }
            }
            Phase::SafeRetreat => {
                self.pipesize = self.pipesize.saturating_add(ack.acked_bytes);
                if self.covers_last_unvalidated(ack) {
                    let ssthresh = self.config.beta().apply(self.pipesize);
                    Some(self.end(Trigger::ExitRecovery, None, Some(ssthresh), ack.now))
                } else {
                    None
                }
            }
            Phase::Normal => None,
        }
    }

    /// Call when loss or ECN-CE signals congestion (after the base controller
    /// reacted, so the returned window overrides its reduction), also once
    /// Careful Resume is over (see [`CarefulResume::on_ack_after_validation`]).
    pub fn on_congestion(&mut self, signal: Congestion, now: Instant) -> Option<Transition> {
        let trigger = match signal {
            Congestion::Loss => Trigger::PacketLoss,
            Congestion::EcnCe => Trigger::EcnCe,
        };
        self.on_path_trouble(trigger, now)
    }

    /// Call when the stack detects a change of path (new remote address,
    /// migration): the saved set describes another path.
    pub fn on_path_change(&mut self, now: Instant) -> Option<Transition> {
        self.on_path_trouble(Trigger::PathChanged, now)
    }

    /// Call on persistent congestion: Careful Resume ends at once, leaving the
    /// base controller's collapsed window in place.
    pub fn on_persistent_congestion(&mut self, now: Instant) -> Option<Transition> {
        if !self.is_active() {
            return None;
        }
        // A jump that ends in persistent congestion discredits the saved set.
        if self.phase != Phase::Reconnaissance {
            self.saved_set_consumed = true;
        }
        Some(self.end(Trigger::PersistentCongestion, None, None, now))
    }

    /// Whether Careful Resume may still act on the window through its
    /// phases. Once false, it stays false.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.phase != Phase::Normal
    }

    /// Whether Careful Resume still needs the connection's events: while it
    /// is active, and after it while it follows the round after a validated
    /// jump ([`CarefulResume::on_ack_after_validation`], only with slow start
    /// past the saved capacity on). Once false, it stays false and every
    /// event but [`CarefulResume::on_loss_after_validation`] returns `None`:
    /// the per-packet and per-ACK paths skip it with this check.
    #[inline]
    pub fn wants_events(&self) -> bool {
        self.is_active() || self.past_saved != PastSaved::Closed
    }

    /// The current phase.
    #[inline]
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The window Careful Resume imposes, if it holds the window now (never
    /// for a rate-based controller: see [`CarefulResume::rate_control`]).
    #[inline]
    pub fn window(&self) -> Option<WindowControl> {
        if self.rate_based {
            return None;
        }
        match self.phase {
            Phase::Unvalidated => Some(WindowControl::Fixed(self.jump_window)),
            Phase::SafeRetreat => Some(WindowControl::Cap(self.retreat_window)),
            Phase::Reconnaissance | Phase::Validating | Phase::Normal => None,
        }
    }

    /// How Careful Resume steers a rate-based controller now, if it does
    /// (never for a window-based one: see [`CarefulResume::window`]).
    #[inline]
    pub fn rate_control(&self) -> Option<RateControl> {
        if !self.rate_based {
            return None;
        }
        let probing = matches!(self.phase, Phase::Unvalidated | Phase::Validating);
        match (self.phase, self.path_rate) {
            (Phase::Validating, Some(rate)) => Some(RateControl::EndStartupAt { rate }),
            _ if probing => Some(RateControl::Probe {
                probing_rate: self.probing_rate(),
                delivery_rate: self.jump_ack_rate,
            }),
            (Phase::SafeRetreat, _) => Some(RateControl::Retreat),
            (Phase::Normal, _) if self.retreated() => Some(RateControl::Retreated {
                validated_rate: bytes_per_second(
                    self.config.beta().apply(self.pipesize),
                    self.current_rtt,
                ),
            }),
            (Phase::Normal, path_rate) if self.validated() => Some(RateControl::EndStartupAt {
                rate: path_rate.unwrap_or_else(|| self.saved_rate()),
            }),
            _ => None,
        }
    }

    /// Whether the jump was validated: Validating ended with the last
    /// unvalidated packet acknowledged.
    fn validated(&self) -> bool {
        self.history.last() == Some(&(Phase::Normal, Trigger::LastUnvalidatedPacketAcknowledged))
    }

    /// Whether Safe Retreat ended with the jump acknowledged.
    fn retreated(&self) -> bool {
        self.history.last() == Some(&(Phase::Normal, Trigger::ExitRecovery))
    }

    /// Whether the base controller must not grow its window on ACKs.
    #[inline]
    pub fn suppresses_growth(&self) -> bool {
        !self.rate_based && matches!(self.phase, Phase::Unvalidated | Phase::SafeRetreat)
    }

    /// While a window-based jump is unvalidated, the pacing rate in bytes
    /// per second: the jump window spread over the current RTT (never the
    /// saved RTT). A rate-based controller paces itself
    /// ([`CarefulResume::rate_control`]).
    pub fn pacing_rate(&self) -> Option<u64> {
        if self.rate_based || self.phase != Phase::Unvalidated {
            return None;
        }
        Some(self.probing_rate())
    }

    /// While a window-based jump is unvalidated, the gap to leave after a
    /// packet of `bytes`: current_rtt x bytes / jump_window.
    pub fn pacing_interval(&self, bytes: usize) -> Option<Duration> {
        if self.rate_based || self.phase != Phase::Unvalidated {
            return None;
        }
        let nanos = self.current_rtt.as_nanos() * bytes as u128 / self.jump_window.max(1) as u128;
        Some(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ))
    }

    /// The jump window: min(max_jump, saved_cwnd / 2), or less where
    /// [`CarefulResume::limit_jump`] lowered it or where the path's RTT
    /// showed a standing queue before the jump (the jump leaves room for
    /// it).
    pub fn jump_window(&self) -> usize {
        self.jump_window.min(self.room_beside_the_queue)
    }

    /// Lowers the jump window to at most `max_jump` bytes, before the jump
    /// or while it is unvalidated: a server that shares out how much
    /// unvalidated data its connections may have in flight together (many
    /// clients resuming at once may share one bottleneck) lowers each jump
    /// to its share as more connections jump. RFC 9959 lets a sender jump
    /// to less than half the saved window. Before the jump, a window the
    /// jump no longer exceeds twice over ends Careful Resume at the jump
    /// (slow start sends as much in the round), and the connection
    /// slow-starts as one without a saved set; during it, the
    /// window never goes below twice the flight the jump started from (what
    /// slow start would have sent in the round), and the sender sends no
    /// more unvalidated data once its flight reaches it.
    /// Once a lowered jump is validated while the RTT shows a queue, slow
    /// start ends at PipeSize (see `slow_start_ceiling`); without a queue,
    /// it goes on to the saved capacity. While the jump is being validated
    /// the window no longer changes, but a limit below the jump marks it
    /// as sharing the path, as if it had been lowered: others jumped onto
    /// the path since it began.
    ///
    /// Returns whether the window changed.
    pub fn limit_jump(&mut self, max_jump: usize) -> bool {
        let floor = match self.phase {
            Phase::Reconnaissance => 0,
            // Slow start would have sent twice the flight in this round:
            // a lowered jump never sends less.
            Phase::Unvalidated => self.pipesize_at_jump.saturating_mul(2),
            Phase::Validating => {
                self.shared_while_validated |= max_jump < self.jump_window();
                return false;
            }
            Phase::SafeRetreat | Phase::Normal => return false,
        };
        let before = self.jump_window();
        self.jump_window = self.jump_window.min(max_jump.max(floor));
        let changed = self.jump_window() != before;
        if self.phase == Phase::Unvalidated {
            // The rest of the jump is paced at the lowered rate, and the
            // path's delivery of it is judged against that rate.
            self.jump_rate = self.probing_rate();
        }
        changed
    }

    /// Lowers the jump by the queue the path already holds, before the jump:
    /// a minimum RTT above the saved one by more than the threshold of
    /// `queue_threshold` shows a standing queue of others' data, about the
    /// excess delay times the saved rate in bytes; the jump window becomes
    /// at most half the saved capacity less that queue. The jump plus the
    /// queue it meets is then never more than the jump alone would queue
    /// on the idle path the saved set was measured on, and a path whose
    /// queue already holds half the saved capacity gets no jump (the window
    /// is no longer above the initial one: Careful Resume ends without it).
    /// Jumping into such a queue overflows it: in the suite's
    /// `bbr2-competing-flow`, where a long BBR2 download keeps the queue
    /// full (min RTT 1.08 s on a 600 ms path), half the jump's packets were
    /// dropped, and the Safe Retreat left BBR2 in ProbeBW with a small
    /// bandwidth estimate, 20 % slower than slow start. RFC 9959 lets a
    /// sender jump to less than half the saved window; an RTT above the
    /// saved one within the RTT check is otherwise not a path change.
    /// Judged at each ACK from the minimum RTT so far (the first samples,
    /// the handshake's, can carry its own packets' queueing), and applied
    /// at the jump.
    fn leave_room_for_the_queue(&mut self, min_rtt: Duration) {
        let excess = min_rtt.saturating_sub(self.saved.rtt + queue_threshold(self.saved.rtt));
        let queued = bytes_in(self.saved_rate(), excess);
        self.room_beside_the_queue = self.config.jump_window(&self.saved).saturating_sub(queued);
    }

    /// The rate the saved set describes: its capacity over its RTT, bytes
    /// per second.
    fn saved_rate(&self) -> u64 {
        bytes_per_second(self.saved.cwnd, self.saved.rtt)
    }

    /// How far slow start may go once the jump is validated (by `ack`):
    /// the saved capacity, or, when the jump was lowered to a share
    /// ([`CarefulResume::limit_jump`]: others jumped onto the same path at
    /// once) and the RTT showed a queue while the jump was unvalidated or
    /// being validated (the largest smoothed RTT since the jump: at the
    /// validating ACK alone, one of ten clients resuming together can meet
    /// the queue drained between the others' rounds and overfill it), no
    /// further: PipeSize, what this jump validated. Each member of a crowd
    /// slow-starting on to the whole saved capacity would together overfill
    /// the path (in cr-sim's `crowd-10-2MiB-300ms`, ten clients that each
    /// saved the path lose 1,782 packets after their validated jumps that
    /// way). The budget lowers each of n jumps to 2/n of half the saved
    /// capacity, saved/n, so the n jumps together already hold one saved
    /// capacity, the path: each one's share of it is what it validated.
    /// (Slow-starting on to 2/n of the saved capacity each fills the path
    /// and its queue: 57 lost, against 8 with this ceiling.) Without a
    /// queue the path has room (the crowd's saved capacities were small
    /// beside it), and slow start goes on as alone.
    fn slow_start_ceiling(&self, ack: &Ack) -> usize {
        if self.lowered_into_a_queue(ack) {
            self.pipesize
        } else {
            self.saved.cwnd
        }
    }

    /// Whether the jump was lowered to a share ([`CarefulResume::limit_jump`])
    /// and the RTT has shown a queue since it began (HyStart++'s test, RFC
    /// 9406: the largest smoothed RTT since the jump above the minimum by an
    /// eighth of it, clamped to 4-16 ms): other connections' jumps fill the
    /// path. The room left beside a standing queue before the jump is not
    /// a share: a jump lowered only for it slow-starts on as one in full
    /// (ending slow start at PipeSize made `retreat-1mbit`, whose handshake
    /// RTT showed 3 ms of its own queueing, lose 478 packets instead of 341).
    fn lowered_into_a_queue(&self, ack: &Ack) -> bool {
        let full = self
            .config
            .jump_window(&self.saved)
            .min(self.room_beside_the_queue);
        (self.jump_window < full || self.shared_while_validated)
            && self.jump_rtt_peak >= ack.min_rtt + queue_threshold(ack.min_rtt)
    }

    /// PipeSize: the capacity validated so far, in bytes.
    pub fn pipesize(&self) -> usize {
        self.pipesize
    }

    /// The saved set this connection resumes from.
    pub fn saved(&self) -> SavedState {
        self.saved
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The phases entered so far, in order, each with what triggered it:
    /// the path an operator reads to tell a validated jump from a retreat.
    pub fn history(&self) -> &[(Phase, Trigger)] {
        &self.history
    }

    /// Whether the jump was made (the connection entered Unvalidated).
    pub fn jumped(&self) -> bool {
        self.history
            .iter()
            .any(|&(phase, _)| phase == Phase::Unvalidated)
    }

    /// While in Reconnaissance, how much data the application may queue
    /// ahead of the jump: the jump window. The sender still sends no more
    /// than its window allows; what waits in the connection's buffers fills
    /// the jump the moment it is made (when a packet fills the initial
    /// window, or when the guard grants the claim), whatever order the
    /// application's loop writes and sends in. `None` in every other phase.
    pub fn queue_window(&self) -> Option<usize> {
        (self.is_active() && self.phase == Phase::Reconnaissance).then_some(self.jump_window())
    }

    /// Bytes sent while Unvalidated: how much of the jump the sender used.
    pub fn unvalidated_sent(&self) -> usize {
        self.unvalidated_sent
    }

    /// Whether the jump went largely unused: Unvalidated is over and the
    /// sender sent less than half of what the jump opened (the jump window
    /// less the flight it jumped from). The application had no more data
    /// for it, or did not write it in time; either way the connection went
    /// on from a small window and gained little from its saved set.
    pub fn jump_unused(&self) -> bool {
        let over = self.jumped() && self.phase != Phase::Unvalidated;
        let opened = self.jump_window.saturating_sub(self.pipesize_at_jump);
        over && self.unvalidated_sent < opened / 2
    }

    /// Whether the saved set must be deleted and never used again.
    pub fn saved_set_consumed(&self) -> bool {
        self.saved_set_consumed
    }

    fn try_jump(
        &mut self,
        cwnd: usize,
        bytes_in_flight: usize,
        now: Instant,
    ) -> Option<Transition> {
        match self.recon.verdict(&self.config, self.jump_window(), cwnd) {
            Verdict::Wait => None,
            Verdict::Abandon(trigger) => Some(self.end(trigger, None, None, now)),
            // The guard has not answered yet: hold the jump.
            Verdict::Ready if self.claim_pending => None,
            Verdict::Ready => {
                self.jump_window = self.jump_window();
                self.pipesize = bytes_in_flight;
                self.pipesize_at_jump = bytes_in_flight;
                self.unvalidated_since = Some(now);
                self.jump_rate = self.probing_rate();
                Some(self.change(
                    Phase::Unvalidated,
                    Trigger::CongestionWindowLimited,
                    Some(self.jump_window),
                    None,
                    now,
                ))
            }
        }
    }

    /// The jump window spread over the current RTT, bytes per second: the
    /// window-based jump's pacing rate, the appendix's probing rate.
    fn probing_rate(&self) -> u64 {
        bytes_per_second(self.jump_window, self.current_rtt).max(1)
    }

    /// Whether the current RTT is above the saved RTT times the RTT upper
    /// factor (10 by default): while unvalidated, a path change (the
    /// project's reading of RFC 9959's path change, as in Reconnaissance).
    /// The smoothed RTT, not the minimum: the minimum passed
    /// Reconnaissance's check and never rises.
    fn rtt_beyond_saved(&self, smoothed_rtt: Duration) -> bool {
        let upper = self
            .saved
            .rtt
            .saturating_mul(self.config.rtt_upper_factor().get());
        smoothed_rtt > upper
    }

    fn unvalidated_rtt_exceeded(&self, now: Instant) -> bool {
        self.unvalidated_since
            .is_some_and(|since| now.saturating_duration_since(since) > self.current_rtt)
    }

    /// Call, once Careful Resume is over, after processing an ACK frame that
    /// newly acknowledged application-space packets (losses it revealed
    /// first go to [`CarefulResume::on_congestion`]); returns the ssthresh
    /// to set, if it changes.
    ///
    /// A validated jump ends slow start at the saved capacity: slow-starting
    /// on from a window that large doubles it past the path, into a burst
    /// of loss, before anything can see the path is full. But the saved
    /// capacity is only what the earlier connection showed. It can be well
    /// below the path (a first connection that met a random loss early in
    /// slow start saves what it had reached): Reno, growing one datagram per
    /// round trip, then stays near it (10 MB at 20 Mbit/s and 600 ms with
    /// 0.1 % loss took 3.7 x as long as without a token). And it can be above
    /// the path (a policer at half the saved rate), where only losses show
    /// it: a policer adds no delay, and its bucket passes the doubling of
    /// the window while the jump is being validated.
    ///
    /// So the round trip sent after the validation, at about the saved
    /// capacity, decides. Acknowledged all but a sixteenth of it (random
    /// loss, not a path that carries less) with no ACK's RTT above the
    /// minimum by HyStart++'s threshold (RFC 9406: an eighth, clamped to
    /// 4-16 ms), it shows the saved capacity leaves room on the path, and
    /// slow start goes on past it until an ACK's RTT shows the queue it
    /// starts to build (ssthresh is then the window of that moment), SEARCH
    /// sees deliveries fall short, or a loss ends it. Otherwise ssthresh
    /// stays at the saved capacity.
    ///
    /// Only with [`Config::with_slow_start_past_saved`] on (off by default):
    /// where the saved capacity is near the path and the queue short or
    /// managed by CoDel, the smoothed RTT shows the queue too late, and the
    /// doubling meets drops. Off, this always returns `None`.
    pub fn on_ack_after_validation(&mut self, ack: &Ack) -> Option<usize> {
        if self.is_active() || self.past_saved == PastSaved::Closed {
            return None;
        }
        if ack.smoothed_rtt >= ack.min_rtt + queue_threshold(ack.min_rtt) {
            let open = self.past_saved == PastSaved::Open;
            self.past_saved = PastSaved::Closed;
            return open.then_some(ack.cwnd);
        }
        let PastSaved::Watching {
            from_pn,
            sent,
            until,
        } = self.past_saved
        else {
            return None;
        };
        let largest_acked = ack.largest_acked?;
        let (until_pn, acked) = match until {
            None if largest_acked > from_pn => (self.largest_sent_pn?, ack.acked_bytes),
            None => return None,
            Some((until_pn, acked)) => (until_pn, acked.saturating_add(ack.acked_bytes)),
        };
        if largest_acked < until_pn {
            self.past_saved = PastSaved::Watching {
                from_pn,
                sent,
                until: Some((until_pn, acked)),
            };
            return None;
        }
        let (num, den) = ROUND_DELIVERED;
        if acked.saturating_mul(den) >= sent.saturating_mul(num) {
            self.past_saved = PastSaved::Open;
            Some(usize::MAX)
        } else {
            self.past_saved = PastSaved::Closed;
            None
        }
    }

    /// Call, once Careful Resume is over, when `lost_packets` were found
    /// lost (by an ACK or the loss timer, after the base controller
    /// reacted); returns, once the losses found within about a round trip
    /// of a validated jump reach an eighth of PipeSize in datagrams
    /// (and three), the capacity the jump validated: the window and
    /// ssthresh are to come down to it, never up (CUBIC's curve restarting
    /// from there). The only call that still counts once
    /// [`CarefulResume::wants_events`] is false.
    ///
    /// While the jump is validated the window grows in slow start on its
    /// ACKs, towards the saved capacity (RFC 9959: the base controller
    /// runs). Those packets are not validated, and losses among them say
    /// the path carries less than that window: the validated PipeSize is
    /// what it showed it carries. The base controller's own reduction
    /// starts from the window the losses refuted: behind a policer at
    /// exactly the jump's rate, CUBIC went from the saved 3.75 MB to 2.63,
    /// 1.92 and 1.35 MB in three congestion events, losing 2.34 x what a
    /// connection without a token loses (1.37 x from PipeSize; Reno, which
    /// halves, landed on PipeSize on its own). A policer or a full queue
    /// drops that growth wholesale; a random loss or two, or an AQM's drop
    /// an interval, says nothing about it (with the first loss enough,
    /// CUBIC resumed under 0.1 % random loss at 600 ms took 0.68 x as long
    /// as without a token at the median instead of 0.58 x). Later losses
    /// are the base controller's alone.
    pub fn on_loss_after_validation(
        &mut self,
        lost_packets: usize,
        now: Instant,
        smoothed_rtt: Duration,
    ) -> Option<usize> {
        if self.is_active() {
            return None;
        }
        let mut validated = self.validated.take()?;
        let (num, den) = LOSS_AFTER_VALIDATION_RTTS;
        if now.saturating_duration_since(validated.at) > smoothed_rtt.saturating_mul(num) / den {
            return None;
        }
        validated.lost = validated.lost.saturating_add(lost_packets);
        let (num, den) = LOSSES_REFUTING;
        let datagrams = validated.pipesize / self.config.max_datagram_size();
        let refuting = (datagrams * num / den).max(LOSSES_REFUTING_MIN);
        if validated.lost >= refuting {
            return Some(validated.pipesize);
        }
        self.validated = Some(validated);
        None
    }

    /// While the jump is validated, the base controller slow-starts on; once
    /// the jump's ACKs show the path carries less than the jump was paced
    /// at, this returns (once) the ssthresh that ends slow start there, the
    /// capacity they showed, so that the window does not double past the
    /// path before the validation ends.
    pub fn take_slow_start_limit(&mut self) -> Option<usize> {
        match self.slow_start_limit {
            SlowStartLimit::Shown(limit) if self.phase == Phase::Validating && !self.rate_based => {
                self.slow_start_limit = SlowStartLimit::Taken;
                Some(limit)
            }
            _ => None,
        }
    }

    fn acknowledges_unvalidated(&self, largest_acked: Option<u64>) -> bool {
        match (largest_acked, self.first_unvalidated_pn) {
            (Some(acked), Some(first)) => acked >= first,
            _ => false,
        }
    }

    /// The capacity the path showed while delivering the jump, when it
    /// delivered it markedly slower than the pacer sent it: the rate at which
    /// the jump's packets were acknowledged, times the min RTT, never below
    /// IW. `None` when the path kept up with the pacer, which is then all
    /// the ACKs show.
    fn capacity_shown_by_the_jump(&self, ack: &Ack) -> Option<usize> {
        self.path_limited_rate(ack)
            .map(|rate| self.capacity(rate, ack))
    }

    /// The rate the jump's packets are acknowledged at, when it is markedly
    /// below the rate they were sent at: the pacing rate, or less where the
    /// sender sent them slower (a jump lowered while unvalidated leaves the
    /// sender waiting once its flight reaches the lowered window, and an
    /// application may run short of data). ACKs come back no faster than
    /// their packets left; judged against the pacing rate alone, a jump
    /// that went out slower read as a slower path (in a crowd spread over
    /// a round trip, a client whose 97 kB jump was lowered to 54 kB on a
    /// 50 Mbit/s path ended slow start at 36 kB and took 7.3 s where the
    /// others took 3.9 s).
    fn path_limited_rate(&self, ack: &Ack) -> Option<u64> {
        let rate = self.jump_ack_rate(ack)?;
        let sent_at = self
            .jump_send_rate()
            .map_or(self.jump_rate, |r| r.min(self.jump_rate));
        let (num, den) = PATH_LIMITED_RATIO;
        (u128::from(rate) * den < u128::from(sent_at) * num).then_some(rate)
    }

    /// The rate the unvalidated packets left at, bytes per second: from the
    /// jump to the latest of them.
    fn jump_send_rate(&self) -> Option<u64> {
        let span = self
            .last_unvalidated_sent_at?
            .checked_duration_since(self.unvalidated_since?)?;
        (!span.is_zero()).then(|| bytes_per_second(self.unvalidated_sent, span))
    }

    /// What `rate` carries per min RTT, never below IW.
    fn capacity(&self, rate: u64, ack: &Ack) -> usize {
        bytes_in(rate, ack.min_rtt).max(self.config.initial_window())
    }

    /// The rate the jump's packets have been acknowledged at since the
    /// first of them was, once the ACKs span a quarter of an RTT.
    fn jump_ack_rate(&self, ack: &Ack) -> Option<u64> {
        let (pipesize_then, since) = self.jump_delivery_start?;
        let elapsed = ack.now.checked_duration_since(since)?;
        if elapsed < self.current_rtt / 4 {
            return None; // too short a train to measure a rate
        }
        Some(bytes_per_second(
            self.pipesize.saturating_sub(pipesize_then),
            elapsed,
        ))
    }

    fn covers_last_unvalidated(&self, ack: &Ack) -> bool {
        match (ack.largest_acked, self.last_unvalidated_pn) {
            (Some(acked), Some(last)) => acked >= last,
            _ => false,
        }
    }

    /// Ends the Unvalidated phase: keep the validated PipeSize when the jump
    /// was not used, otherwise validate what is in flight. A rate-based jump
    /// was used when its round sent more than was in flight when it began
    /// (the ACK that ends the round may already have emptied the flight).
    fn leave_unvalidated(
        &mut self,
        trigger: Trigger,
        flight: usize,
        now: Instant,
    ) -> Option<Transition> {
        let iw = self.config.initial_window();
        let used = match self.rate_based {
            true => self.unvalidated_sent >= iw && self.unvalidated_sent > self.pipesize_at_jump,
            false => flight >= iw && flight > self.pipesize,
        };
        match self.largest_sent_pn {
            Some(last) if used => {
                self.last_unvalidated_pn = Some(last);
                Some(self.change(Phase::Validating, trigger, Some(flight), None, now))
            }
            _ => {
                // Never below IW without congestion (the seed dissertation's defect).
                let cwnd = self.pipesize.max(iw);
                Some(self.end(Trigger::RateLimited, Some(cwnd), None, now))
            }
        }
    }

    /// Congestion or a path change: abandon before the jump, retreat after it.
    fn on_path_trouble(&mut self, trigger: Trigger, now: Instant) -> Option<Transition> {
        match self.phase {
            Phase::Reconnaissance => Some(self.end(trigger, None, None, now)),
            Phase::Unvalidated | Phase::Validating => {
                if self.last_unvalidated_pn.is_none() {
                    self.last_unvalidated_pn = self.largest_sent_pn;
                }
                self.retreat_window = self.safe_retreat_window();
                self.saved_set_consumed = true;
                let window = Some(self.retreat_window);
                Some(self.change(Phase::SafeRetreat, trigger, window, None, now))
            }
            Phase::SafeRetreat => None,
            Phase::Normal => {
                // A loss or ECN-CE ends slow start past the saved capacity:
                // the controller's reduction stands. (While the round after
                // the validation is watched, what it delivers decides.)
                if self.past_saved == PastSaved::Open {
                    self.past_saved = PastSaved::Closed;
                }
                None
            }
        }
    }

    /// PipeSize / 2 in whole datagrams, at most the jump window, at least the
    /// minimum window of two datagrams.
    fn safe_retreat_window(&self) -> usize {
        let mss = self.config.max_datagram_size();
        let half = self.pipesize / 2 / mss * mss;
        half.min(self.jump_window).max(self.config.minimum_window())
    }

    fn end(
        &mut self,
        trigger: Trigger,
        cwnd: Option<usize>,
        ssthresh: Option<usize>,
        now: Instant,
    ) -> Transition {
        self.change(Phase::Normal, trigger, cwnd, ssthresh, now)
    }

    fn change(
        &mut self,
        to: Phase,
        trigger: Trigger,
        cwnd: Option<usize>,
        ssthresh: Option<usize>,
        now: Instant,
    ) -> Transition {
        let from = self.phase;
        self.phase = to;
        self.history.push((to, trigger));
        // A rate-based controller keeps its own window and slow start.
        let (cwnd, ssthresh) = match self.rate_based {
            true => (None, None),
            false => (cwnd, ssthresh),
        };
        Transition {
            from,
            to,
            trigger,
            cwnd,
            ssthresh,
            pipesize: self.pipesize,
            first_unvalidated_pn: self.first_unvalidated_pn,
            last_unvalidated_pn: self.last_unvalidated_pn,
            saved: self.saved,
            saved_set_consumed: self.saved_set_consumed,
            at: now,
        }
    }
}

/// How far an RTT must rise above `min_rtt` to show a queue rather than
/// jitter: an eighth of it, clamped to 4-16 ms (HyStart++'s test, RFC 9406).
fn queue_threshold(min_rtt: Duration) -> Duration {
    (min_rtt / 8).clamp(Duration::from_millis(4), Duration::from_millis(16))
}
