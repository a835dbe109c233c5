//! A small, deterministic model of a server sending one response over a
//! bottleneck, with Reno and Careful Resume, written out as a server-side
//! quiche-style trace. It exists to produce realistic traces for the tests
//! and the checked-in fixtures; it is not the project's simulator.

use std::collections::BTreeMap;
use std::collections::VecDeque;

use qlog::events::quic::PacketType;
use qlog::VantagePointType;
use qlog_cr::CarefulResumePhaseUpdated;
use qlog_cr::Phase;
use qlog_cr::RestoredData;
use qlog_cr::StateData;
use qlog_cr::Trigger;

use super::writer::*;

const MSS: u64 = 1200;
const IW: u64 = 10 * MSS;
/// Client acknowledgements are batched over this many milliseconds.
const ACK_EVERY_MS: u64 = 25;
/// A dropped packet is declared lost once this many later packets are acked.
const PACKET_THRESHOLD: u64 = 3;

/// The bottleneck between server and client.
pub struct Path {
    pub rtt_ms: u64,
    pub bytes_per_ms: u64,
    pub queue_bytes: u64,
    /// Extra delay of the client's first flight (certificate checks), which
    /// inflates the handshake RTT sample.
    pub handshake_extra_ms: u64,
}

/// One response transfer.
pub struct Transfer {
    pub title: &'static str,
    pub path: Path,
    pub response_bytes: u64,
    /// The saved capacity to resume from: (saved_cwnd, saved_rtt_ms).
    pub resume: Option<(u64, f64)>,
    /// Application packet numbers lost at random, besides queue overflow.
    pub drops: &'static [u64],
}

struct InFlight {
    size: u64,
    sent_ms: u64,
    /// When the client receives it; `None` when the bottleneck dropped it.
    arrives_ms: Option<u64>,
    /// Stream data carried: (offset, len).
    data: Option<(u64, u64)>,
}

/// Careful Resume as the model runs it.
struct Resume {
    phase: Phase,
    saved_cwnd: u64,
    saved_rtt_ms: f64,
    pipesize: u64,
    first_unvalidated: u64,
    last_unvalidated: u64,
    entered_ms: u64,
}

struct Model {
    path: Path,
    /// The RTT the sender measured in the handshake.
    measured_rtt_ms: u64,
    now: u64,
    trace: TraceWriter,
    cwnd: u64,
    ssthresh: Option<u64>,
    recovery_start_ms: Option<u64>,
    next_pn: u64,
    in_flight: BTreeMap<u64, InFlight>,
    bytes_in_flight: u64,
    link_free_at: f64,
    largest_acked: Option<u64>,
    next_offset: u64,
    response_bytes: u64,
    retransmit: VecDeque<(u64, u64)>,
    acked_data: u64,
    lost_total: u64,
    pacing_credit: u64,
    resume: Option<Resume>,
    logged: (u64, u64, Option<u64>),
    drops: &'static [u64],
}

/// Runs the transfer and returns its server-side trace.
pub fn run(transfer: Transfer) -> Vec<u8> {
    let mut model = Model {
        measured_rtt_ms: transfer.path.rtt_ms + transfer.path.handshake_extra_ms,
        now: 0,
        trace: TraceWriter::new(transfer.title, VantagePointType::Server),
        cwnd: IW,
        ssthresh: None,
        recovery_start_ms: None,
        next_pn: 0,
        in_flight: BTreeMap::new(),
        bytes_in_flight: 0,
        link_free_at: 0.0,
        largest_acked: None,
        next_offset: 0,
        response_bytes: transfer.response_bytes,
        retransmit: VecDeque::new(),
        acked_data: 0,
        lost_total: 0,
        pacing_credit: 0,
        resume: transfer.resume.map(|(saved_cwnd, saved_rtt_ms)| Resume {
            phase: Phase::Reconnaissance,
            saved_cwnd,
            saved_rtt_ms,
            pipesize: 0,
            first_unvalidated: 0,
            last_unvalidated: 0,
            entered_ms: 0,
        }),
        logged: (0, 0, None),
        drops: transfer.drops,
        path: transfer.path,
    };
    model.handshake();
    while model.acked_data < model.response_bytes && model.now < 60_000 {
        model.now += 1;
        if model.now.is_multiple_of(ACK_EVERY_MS) {
            model.process_acks();
        }
        model.detect_tail_losses();
        model.send();
        model.log_metrics(None);
    }
    model.trace.finish()
}

impl Model {
    /// The handshake flight at 0 and the request one RTT later.
    fn handshake(&mut self) {
        if let Some(r) = &self.resume {
            let update = self
                .update(None, Phase::Reconnaissance, None)
                .with_restored_data(RestoredData {
                    saved_congestion_window: r.saved_cwnd,
                    saved_rtt: r.saved_rtt_ms,
                });
            self.trace.phase(0.0, update);
        }
        self.trace
            .event(0.0, packet_received(PacketType::Initial, 0, 1252, vec![]));
        for pn in 0..3 {
            self.trace
                .event(0.0, packet_sent(PacketType::Handshake, pn, MSS, vec![]));
        }
        self.bytes_in_flight = 3 * MSS;
        self.log_metrics(None);
        let rtt = self.measured_rtt_ms;
        self.now = rtt;
        self.trace.event(
            rtt as f64,
            packet_received(PacketType::Handshake, 0, 60, vec![ack_frame(&[(0, 2)])]),
        );
        self.trace.event(
            rtt as f64,
            packet_received(
                PacketType::OneRtt,
                0,
                100,
                vec![stream_frame(0, 0, 60, true)],
            ),
        );
        self.cwnd += 3 * MSS;
        self.bytes_in_flight = 0;
        let rtt_ms = rtt as f32;
        self.trace.event(
            rtt as f64,
            metrics(Metrics {
                min_rtt: Some(rtt_ms),
                smoothed_rtt: Some(rtt_ms),
                latest_rtt: Some(rtt_ms),
                ..Default::default()
            }),
        );
        let jump = self.resume.as_ref().map(|r| r.saved_cwnd / 2);
        if let Some(jump) = jump.filter(|j| *j > self.cwnd) {
            self.enter_unvalidated(jump);
        }
        self.log_metrics(None);
    }

    fn update(
        &self,
        old: Option<Phase>,
        new: Phase,
        trigger: Option<Trigger>,
    ) -> CarefulResumePhaseUpdated {
        let r = self.resume.as_ref();
        CarefulResumePhaseUpdated::new(
            old,
            new,
            trigger,
            StateData {
                pipesize: r.map_or(0, |r| r.pipesize),
                first_unvalidated_packet: r.map_or(0, |r| r.first_unvalidated),
                last_unvalidated_packet: r.map_or(0, |r| r.last_unvalidated),
                congestion_window: Some(self.cwnd),
                ssthresh: self.ssthresh,
            },
        )
    }

    fn change_phase(&mut self, new: Phase, trigger: Trigger) {
        let Some(r) = self.resume.as_mut() else {
            return;
        };
        let old = r.phase;
        r.phase = new;
        r.entered_ms = self.now;
        let update = self.update(Some(old), new, Some(trigger));
        self.trace.phase(self.now as f64, update);
    }

    fn phase(&self) -> Phase {
        self.resume.as_ref().map_or(Phase::Normal, |r| r.phase)
    }

    fn enter_unvalidated(&mut self, jump: u64) {
        let (flight, next_pn) = (self.bytes_in_flight, self.next_pn);
        if let Some(r) = self.resume.as_mut() {
            r.pipesize = flight;
            r.first_unvalidated = next_pn;
        }
        self.cwnd = jump;
        self.change_phase(Phase::Unvalidated, Trigger::CongestionWindowLimited);
    }

    /// Leaves Unvalidated for Validating or normal (RFC 9959, 4.3).
    fn leave_unvalidated(&mut self, trigger: Trigger) {
        let pipesize = self.resume.as_ref().map_or(0, |r| r.pipesize);
        if self.bytes_in_flight < IW || self.bytes_in_flight <= pipesize {
            self.cwnd = pipesize.max(IW);
            self.change_phase(Phase::Normal, Trigger::RateLimited);
            return;
        }
        self.cwnd = self.bytes_in_flight;
        let last = self.next_pn.saturating_sub(1);
        if let Some(r) = self.resume.as_mut() {
            r.last_unvalidated = last;
        }
        self.change_phase(Phase::Validating, trigger);
    }

    fn send(&mut self) {
        let unvalidated = self.phase() == Phase::Unvalidated;
        if unvalidated {
            let per_ms = self.cwnd / self.measured_rtt_ms;
            self.pacing_credit = (self.pacing_credit + per_ms).min(IW);
        }
        while let Some((offset, len)) = self.next_chunk() {
            if self.bytes_in_flight + len > self.cwnd || (unvalidated && self.pacing_credit < len) {
                if unvalidated && self.bytes_in_flight + MSS > self.cwnd {
                    self.leave_unvalidated(Trigger::LastUnvalidatedPacketSent);
                }
                break;
            }
            self.take_chunk();
            if unvalidated {
                self.pacing_credit -= len;
            }
            self.transmit(offset, len);
        }
    }

    /// The next stream data to send: retransmissions first.
    fn next_chunk(&self) -> Option<(u64, u64)> {
        if let Some(&chunk) = self.retransmit.front() {
            return Some(chunk);
        }
        (self.next_offset < self.response_bytes).then(|| {
            (
                self.next_offset,
                (self.response_bytes - self.next_offset).min(MSS - 30),
            )
        })
    }

    fn take_chunk(&mut self) {
        if self.retransmit.pop_front().is_none() {
            self.next_offset = (self.next_offset + MSS - 30).min(self.response_bytes);
        }
    }

    fn transmit(&mut self, offset: u64, len: u64) {
        let size = len + 30;
        let now = self.now as f64;
        let backlog = ((self.link_free_at - now).max(0.0) * self.path.bytes_per_ms as f64) as u64;
        let pn = self.next_pn;
        let fits = backlog + size <= self.path.queue_bytes;
        let arrives_ms = (fits && !self.drops.contains(&pn)).then(|| {
            let departs = self.link_free_at.max(now) + size as f64 / self.path.bytes_per_ms as f64;
            self.link_free_at = departs;
            (departs + self.path.rtt_ms as f64 / 2.0).ceil() as u64
        });
        self.next_pn += 1;
        let fin = offset + len == self.response_bytes;
        self.trace.event(
            now,
            packet_sent(
                PacketType::OneRtt,
                pn,
                size,
                vec![stream_frame(0, offset, len, fin)],
            ),
        );
        self.in_flight.insert(
            pn,
            InFlight {
                size,
                sent_ms: self.now,
                arrives_ms,
                data: Some((offset, len)),
            },
        );
        self.bytes_in_flight += size;
    }

    /// Acknowledgements that reach the server by now: the client acks what
    /// arrived up to half an RTT ago.
    fn process_acks(&mut self) {
        let cutoff = self.now.saturating_sub(self.path.rtt_ms / 2);
        let acked: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, p)| p.arrives_ms.is_some_and(|a| a <= cutoff))
            .map(|(pn, _)| *pn)
            .collect();
        if acked.is_empty() {
            return;
        }
        let ranges = to_ranges(&acked);
        self.trace.event(
            self.now as f64,
            packet_received(PacketType::OneRtt, self.now, 60, vec![ack_frame(&ranges)]),
        );
        let mut newly_acked = 0;
        for pn in &acked {
            if let Some(p) = self.in_flight.remove(pn) {
                self.bytes_in_flight -= p.size;
                newly_acked += p.size;
                self.acked_data += p.data.map_or(0, |(_, len)| len);
                self.on_packet_acked(p.size, p.sent_ms);
            }
        }
        let largest = acked.iter().copied().max();
        self.largest_acked = self.largest_acked.max(largest);
        self.grow_pipesize(newly_acked);
        self.detect_losses();
        self.on_ack_received(largest.unwrap_or(0));
    }

    /// Window growth for one acknowledged packet.
    fn on_packet_acked(&mut self, size: u64, sent_ms: u64) {
        match self.phase() {
            Phase::Unvalidated | Phase::SafeRetreat => {}
            Phase::Reconnaissance | Phase::Validating | Phase::Normal => {
                if self.recovery_start_ms.is_some_and(|r| sent_ms <= r) {
                    return;
                }
                if self.ssthresh.is_none_or(|s| self.cwnd < s) {
                    self.cwnd += size;
                } else {
                    self.cwnd += MSS * size / self.cwnd;
                }
            }
        }
    }

    /// PipeSize counts every acknowledged byte while CR is active.
    fn grow_pipesize(&mut self, newly_acked: u64) {
        if let Some(r) = self.resume.as_mut() {
            if matches!(
                r.phase,
                Phase::Unvalidated | Phase::Validating | Phase::SafeRetreat
            ) {
                r.pipesize += newly_acked;
            }
        }
    }

    /// Careful Resume's phase checks on one ACK (RFC 9959, 4.3 to 4.5).
    fn on_ack_received(&mut self, largest: u64) {
        let Some(r) = self.resume.as_ref() else {
            return;
        };
        let (phase, first, last, entered, pipesize) = (
            r.phase,
            r.first_unvalidated,
            r.last_unvalidated,
            r.entered_ms,
            r.pipesize,
        );
        match phase {
            Phase::Unvalidated if largest >= first => {
                self.leave_unvalidated(Trigger::FirstUnvalidatedPacketAcknowledged)
            }
            Phase::Unvalidated if self.now - entered > self.measured_rtt_ms => {
                self.leave_unvalidated(Trigger::RttExceeded)
            }
            Phase::Validating if largest >= last => {
                self.change_phase(Phase::Normal, Trigger::LastUnvalidatedPacketAcknowledged)
            }
            Phase::SafeRetreat if largest >= last => {
                self.ssthresh = Some(pipesize / 2);
                self.change_phase(Phase::Normal, Trigger::ExitRecovery);
            }
            _ => {}
        }
    }

    /// Dropped packets overtaken by enough acknowledged ones.
    fn detect_losses(&mut self) {
        let Some(largest) = self.largest_acked else {
            return;
        };
        let lost: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(pn, p)| p.arrives_ms.is_none() && **pn + PACKET_THRESHOLD <= largest)
            .map(|(pn, _)| *pn)
            .collect();
        self.declare_lost(&lost);
    }

    /// Dropped packets at the tail, found by a timer of 1.5 RTT.
    fn detect_tail_losses(&mut self) {
        let limit = self.path.rtt_ms * 3 / 2;
        let lost: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, p)| p.arrives_ms.is_none() && self.now - p.sent_ms >= limit)
            .map(|(pn, _)| *pn)
            .collect();
        self.declare_lost(&lost);
    }

    fn declare_lost(&mut self, lost: &[u64]) {
        let mut newest_sent = None;
        for pn in lost {
            if let Some(p) = self.in_flight.remove(pn) {
                self.bytes_in_flight -= p.size;
                self.retransmit.extend(p.data);
                newest_sent = newest_sent.max(Some(p.sent_ms));
            }
        }
        let Some(sent_ms) = newest_sent else {
            return;
        };
        self.lost_total += lost.len() as u64;
        let delta = lost.len() as u64;
        match self.phase() {
            Phase::Unvalidated | Phase::Validating => {
                let pipesize = self.resume.as_ref().map_or(0, |r| r.pipesize);
                if self.phase() == Phase::Unvalidated {
                    let last = self.next_pn.saturating_sub(1);
                    if let Some(r) = self.resume.as_mut() {
                        r.last_unvalidated = last;
                    }
                }
                self.cwnd = (pipesize / 2).max(2 * MSS);
                self.recovery_start_ms = Some(self.now);
                self.change_phase(Phase::SafeRetreat, Trigger::PacketLoss);
            }
            Phase::Reconnaissance => self.change_phase(Phase::Normal, Trigger::PacketLoss),
            Phase::SafeRetreat => {}
            Phase::Normal => {
                if self.recovery_start_ms.is_none_or(|r| sent_ms > r) {
                    self.cwnd = (self.cwnd / 2).max(2 * MSS);
                    self.ssthresh = Some(self.cwnd);
                    self.recovery_start_ms = Some(self.now);
                }
            }
        }
        self.log_metrics(Some((self.lost_total, delta)));
    }

    /// A metrics event with the fields that changed, as quiche writes them.
    fn log_metrics(&mut self, lost_packets: Option<(u64, u64)>) {
        let current = (self.cwnd, self.bytes_in_flight, self.ssthresh);
        if current == self.logged && lost_packets.is_none() {
            return;
        }
        let changed = |now: u64, before: u64| (now != before).then_some(now);
        let m = Metrics {
            congestion_window: changed(current.0, self.logged.0),
            bytes_in_flight: changed(current.1, self.logged.1),
            ssthresh: current.2.filter(|_| current.2 != self.logged.2),
            lost_packets,
            ..Default::default()
        };
        self.logged = current;
        self.trace.event(self.now as f64, metrics(m));
    }
}

/// Sorted packet numbers as inclusive ranges.
fn to_ranges(numbers: &[u64]) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for &n in numbers {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == n => *end = n,
            _ => ranges.push((n, n)),
        }
    }
    ranges
}
