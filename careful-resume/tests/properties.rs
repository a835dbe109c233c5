//! Invariants over random event sequences from a plausible sender, with RTTs
//! from 1 microsecond to 1 hour and windows up to 2^40 bytes.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use careful_resume::{
    Ack, CarefulResume, Config, Congestion, PacketSent, Phase, SavedState, Transition, Trigger,
    WindowControl,
};
use proptest::prelude::*;

const MSS: usize = 1200;
const IW: usize = 10 * MSS;

#[derive(Clone, Debug)]
enum Op {
    Send {
        packets: u8,
        bytes: usize,
        cwnd_limited: bool,
    },
    Ack {
        packets: u8,
        handshake: bool,
    },
    Loss,
    EcnCe,
    PathChange,
    PersistentCongestion,
    Wait {
        micros: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (1u8..=40, prop_oneof![Just(MSS), 1usize..=(1 << 32)], any::<bool>())
            .prop_map(|(packets, bytes, cwnd_limited)| Op::Send { packets, bytes, cwnd_limited }),
        10 => (1u8..=40, prop::bool::weighted(0.1)).prop_map(|(packets, handshake)| Op::Ack { packets, handshake }),
        1 => Just(Op::Loss),
        1 => Just(Op::EcnCe),
        1 => Just(Op::PathChange),
        1 => Just(Op::PersistentCongestion),
        2 => (0u64..=3_600_000_000).prop_map(|micros| Op::Wait { micros }),
    ]
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (1u64..=1000).prop_map(Duration::from_micros),
        (1u64..=3_600_000_000).prop_map(Duration::from_micros),
    ]
}

/// A sender driving the state machine and checking it after every event.
struct Sender {
    cr: CarefulResume,
    now: Instant,
    rtt: Duration,
    next_pn: u64,
    in_flight: VecDeque<(u64, usize)>,
    flight: usize,
    cwnd: usize,
    retreat: Option<(usize, usize)>,
    /// Whether the losses after a validated jump capped the window.
    capped: bool,
}

impl Sender {
    fn run(&mut self, op: &Op) {
        match *op {
            Op::Send {
                packets,
                bytes,
                cwnd_limited,
            } => {
                for _ in 0..packets {
                    let pn = self.next_pn;
                    self.next_pn += 1;
                    self.in_flight.push_back((pn, bytes));
                    self.flight += bytes;
                    let sent = PacketSent {
                        pn,
                        bytes,
                        bytes_in_flight: self.flight,
                        cwnd: self.cwnd,
                        cwnd_limited,
                        now: self.now,
                    };
                    let t = self.cr.on_packet_sent(&sent);
                    self.check(t);
                }
            }
            Op::Ack { packets, handshake } => {
                let mut acked_bytes = 0;
                let mut largest = None;
                if !handshake {
                    for _ in 0..packets {
                        let Some((pn, bytes)) = self.in_flight.pop_front() else {
                            break;
                        };
                        acked_bytes += bytes;
                        largest = Some(pn);
                    }
                }
                self.flight -= acked_bytes;
                let ack = Ack {
                    largest_acked: largest,
                    acked_bytes,
                    bytes_in_flight: self.flight,
                    cwnd: self.cwnd,
                    min_rtt: self.rtt,
                    smoothed_rtt: self.rtt.saturating_mul(u32::from(packets % 3 + 1)),
                    now: self.now,
                };
                let t = self.cr.on_ack(&ack);
                self.check(t);
            }
            Op::Loss => {
                // Once over, as a stack calls it: the capacity a validated
                // jump showed, at most once, and never above PipeSize.
                if !self.cr.is_active() {
                    let cap = self.cr.on_loss_after_validation(3, self.now, self.rtt);
                    if let Some(cap) = cap {
                        assert!(!self.capped, "capped twice");
                        assert_eq!(cap, self.cr.pipesize());
                        assert!(self.cr.jumped());
                        self.capped = true;
                    }
                }
                let t = self.cr.on_congestion(Congestion::Loss, self.now);
                self.check(t);
            }
            Op::EcnCe => {
                let t = self.cr.on_congestion(Congestion::EcnCe, self.now);
                self.check(t);
            }
            Op::PathChange => {
                let t = self.cr.on_path_change(self.now);
                self.check(t);
            }
            Op::PersistentCongestion => {
                let t = self.cr.on_persistent_congestion(self.now);
                self.check(t);
            }
            Op::Wait { micros } => self.now += Duration::from_micros(micros),
        }
    }

    fn check(&mut self, transition: Option<Transition>) {
        let jump = self.cr.jump_window();
        if let Some(t) = transition {
            assert_ne!(t.from, t.to);
            assert_eq!(t.to, self.cr.phase());
            assert_eq!(t.at, self.now);
            if t.to == Phase::SafeRetreat {
                assert!(t.saved_set_consumed, "a retreat consumes the saved set");
                let cap = t.cwnd.expect("a retreat sets the window");
                assert!(
                    cap <= (t.pipesize / 2).max(2 * MSS),
                    "{cap} vs PipeSize {}",
                    t.pipesize
                );
                self.retreat = Some((cap, t.pipesize));
            }
            let congestion = matches!(
                t.trigger,
                Trigger::PacketLoss | Trigger::EcnCe | Trigger::PathChanged
            );
            if let (Some(cwnd), false) = (t.cwnd, congestion) {
                assert!(cwnd >= IW, "{cwnd} below IW without congestion ({t:?})");
            }
            if let Some(cwnd) = t.cwnd {
                self.cwnd = cwnd;
            }
        }
        match self.cr.window() {
            Some(WindowControl::Fixed(window)) => {
                assert_eq!(self.cr.phase(), Phase::Unvalidated);
                assert_eq!(window, jump);
            }
            Some(WindowControl::Cap(cap)) => {
                assert_eq!(self.cr.phase(), Phase::SafeRetreat);
                assert!(cap <= jump, "{cap} above the jump window {jump}");
                assert_eq!(
                    Some(cap),
                    self.retreat.map(|(cap, _)| cap),
                    "the retreat window never changes"
                );
            }
            None => assert!(!matches!(
                self.cr.phase(),
                Phase::Unvalidated | Phase::SafeRetreat
            )),
        }
        assert_eq!(self.cr.suppresses_growth(), self.cr.window().is_some());
        assert_eq!(
            self.cr.pacing_rate().is_some(),
            self.cr.phase() == Phase::Unvalidated
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn invariants_hold_over_random_event_sequences(
        saved_cwnd in prop_oneof![0usize..=(1 << 20), 0usize..=(1 << 41)],
        saved_rtt in duration(),
        rtt_ratio_permille in prop_oneof![400u32..=11_000, 0u32..=1_000_000],
        max_jump in prop_oneof![Just(usize::MAX), 0usize..=(1 << 40)],
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let config = Config::new(IW, MSS).unwrap().with_max_jump(max_jump);
        let saved = SavedState { cwnd: saved_cwnd, rtt: saved_rtt };
        // Mostly near the saved RTT, so that jumps happen; sometimes far off.
        let path_rtt = (saved_rtt * rtt_ratio_permille / 1000).max(Duration::from_micros(1));
        let mut sender = Sender {
            cr: CarefulResume::new(config, saved),
            now: Instant::now(),
            rtt: path_rtt,
            next_pn: 0,
            in_flight: VecDeque::new(),
            flight: 0,
            cwnd: IW,
            retreat: None,
            capped: false,
        };
        prop_assert_eq!(sender.cr.jump_window(), (saved_cwnd / 2).min(max_jump));
        let mut ended = false;
        for op in &ops {
            sender.run(op);
            if ended {
                prop_assert_eq!(sender.cr.phase(), Phase::Normal);
            }
            ended = !sender.cr.is_active();
        }
    }

    #[test]
    fn once_ended_every_event_is_ignored(ops in prop::collection::vec(op(), 1..60)) {
        let config = Config::new(IW, MSS).unwrap();
        let saved = SavedState { cwnd: 200 * MSS, rtt: Duration::from_millis(100) };
        let now = Instant::now();
        let mut cr = CarefulResume::new(config, saved);
        prop_assert!(cr.on_path_change(now).is_some());
        let mut sender = Sender {
            cr,
            now,
            rtt: Duration::from_millis(100),
            next_pn: 0,
            in_flight: VecDeque::new(),
            flight: 0,
            cwnd: IW,
            retreat: None,
            capped: false,
        };
        for op in &ops {
            let before = sender.cwnd;
            sender.run(op);
            prop_assert_eq!(sender.cwnd, before);
            prop_assert!(!sender.cr.is_active());
        }
    }
}
