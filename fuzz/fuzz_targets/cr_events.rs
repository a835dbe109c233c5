//! Arbitrary event sequences into the Careful Resume state machines, checking
//! the RFC 9959 invariants after every event.

#![no_main]

use std::time::{Duration, Instant};

use careful_resume::{
    Ack, CapacitySample, CarefulResume, Config, Congestion, Observer, ObserverConfig, PacketSent,
    Phase, RateControl, SavedState, Transition, Trigger, WindowControl,
};
use libfuzzer_sys::fuzz_target;

const MSS: usize = 1200;
const IW: usize = 10 * MSS;

/// Reads little-endian integers from the input, zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        first
    }

    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, i| acc | u64::from(self.u8()) << (8 * i))
    }

    /// 1 microsecond to a little over an hour.
    fn rtt(&mut self) -> Duration {
        Duration::from_micros(self.u64() % 3_700_000_000 + 1)
    }
}

struct Checker {
    cr: CarefulResume,
    retreat_cap: Option<usize>,
    ended: bool,
}

impl Checker {
    fn check(&mut self, transition: Option<Transition>) {
        if self.ended {
            assert!(transition.is_none(), "acted after ending");
        }
        if let Some(t) = transition {
            assert_eq!(t.to, self.cr.phase());
            if t.to == Phase::SafeRetreat {
                assert!(t.saved_set_consumed);
                let cap = t.cwnd.expect("a retreat sets the window");
                assert!(cap <= (t.pipesize / 2).max(2 * MSS));
                self.retreat_cap = Some(cap);
            }
            let congestion = matches!(
                t.trigger,
                Trigger::PacketLoss | Trigger::EcnCe | Trigger::PathChanged
            );
            if let (Some(cwnd), false) = (t.cwnd, congestion) {
                assert!(cwnd >= IW, "below IW without congestion");
            }
        }
        match self.cr.window() {
            Some(WindowControl::Fixed(window)) => assert_eq!(window, self.cr.jump_window()),
            Some(WindowControl::Cap(cap)) => {
                assert!(cap <= self.cr.jump_window());
                assert_eq!(
                    Some(cap),
                    self.retreat_cap,
                    "the retreat window never changes"
                );
            }
            None => {}
        }
        self.ended |= !self.cr.is_active();
    }
}

/// A rate-based controller keeps its window: Careful Resume only steers its
/// rate, probing while unvalidated or validating, draining in Safe Retreat.
fn check_rate_based(transition: Option<Transition>, cr: &CarefulResume) {
    if let Some(t) = transition {
        assert_eq!(
            (t.cwnd, t.ssthresh),
            (None, None),
            "a rate-based window was set"
        );
    }
    assert_eq!(cr.window(), None);
    match (cr.phase(), cr.rate_control()) {
        (Phase::Unvalidated | Phase::Validating, Some(RateControl::Probe { probing_rate, .. })) => {
            assert!(probing_rate > 0)
        }
        (Phase::SafeRetreat, Some(RateControl::Retreat)) => {}
        (Phase::Validating, Some(RateControl::EndStartupAt { .. })) => {}
        (Phase::Normal, Some(RateControl::EndStartupAt { .. })) => {
            assert_eq!(
                cr.history().last(),
                Some(&(Phase::Normal, Trigger::LastUnvalidatedPacketAcknowledged))
            )
        }
        (Phase::Normal, Some(RateControl::Retreated { .. })) => {
            assert_eq!(
                cr.history().last(),
                Some(&(Phase::Normal, Trigger::ExitRecovery))
            )
        }
        (Phase::Reconnaissance | Phase::Normal, None) => {}
        (phase, control) => panic!("{control:?} in {phase:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let config = Config::new(IW, MSS)
        .expect("valid config")
        .with_max_jump((input.u64() % (1 << 41)) as usize);
    let saved = SavedState {
        cwnd: (input.u64() % (1 << 42)) as usize,
        rtt: input.rtt(),
    };
    let mut checker = Checker {
        cr: CarefulResume::new(config, saved),
        retreat_cap: None,
        ended: false,
    };
    let mut rate_based = CarefulResume::new_rate_based(config, saved);
    let mut observer = Observer::with_floor(ObserverConfig::new(IW), saved.cwnd);

    let mut now = Instant::now();
    let (mut next_pn, mut acked_pn, mut flight) = (0u64, 0u64, 0usize);
    while !input.0.is_empty() {
        let op = input.u8();
        let arg = input.u64();
        let rtt = input.rtt();
        let transition = match op % 8 {
            0 => {
                let bytes = (arg % (1 << 32)) as usize + 1;
                flight = flight.saturating_add(bytes);
                let sent = PacketSent {
                    pn: next_pn,
                    bytes,
                    bytes_in_flight: flight,
                    cwnd: (arg >> 32) as usize,
                    cwnd_limited: op & 0x80 != 0,
                    now,
                };
                next_pn += 1;
                check_rate_based(rate_based.on_packet_sent(&sent), &rate_based);
                checker.cr.on_packet_sent(&sent)
            }
            1 => {
                let largest = (op & 0x80 == 0 && next_pn > 0).then(|| acked_pn.max(arg % next_pn));
                acked_pn = largest.unwrap_or(acked_pn);
                let acked = (arg % (1 << 40)) as usize;
                flight = flight.saturating_sub(acked);
                let ack = Ack {
                    largest_acked: largest,
                    acked_bytes: acked,
                    bytes_in_flight: flight,
                    cwnd: (arg >> 24) as usize,
                    min_rtt: rtt,
                    smoothed_rtt: rtt.saturating_mul(u32::from(op >> 4) + 1),
                    now,
                };
                check_rate_based(rate_based.on_ack(&ack), &rate_based);
                let observed = observer.on_sample(&CapacitySample {
                    delivery_rate: arg >> 16,
                    round_delivery_rate: arg >> 20,
                    rtt,
                    acked_bytes: acked,
                    now,
                });
                let observed = if op & 0x10 != 0 {
                    observed.or(observer.on_sender_state(op & 0x40 != 0, flight, now))
                } else {
                    observed
                };
                if op & 0x20 != 0 {
                    observer.on_congestion();
                }
                if let Some(o) = observed {
                    assert!(o.saved_cwnd >= 4 * IW, "saved less than 4 x IW");
                }
                checker.cr.on_ack(&ack)
            }
            2 => {
                check_rate_based(rate_based.on_congestion(Congestion::Loss, now), &rate_based);
                checker.cr.on_congestion(Congestion::Loss, now)
            }
            3 => {
                check_rate_based(
                    rate_based.on_congestion(Congestion::EcnCe, now),
                    &rate_based,
                );
                checker.cr.on_congestion(Congestion::EcnCe, now)
            }
            4 => {
                check_rate_based(rate_based.on_path_change(now), &rate_based);
                checker.cr.on_path_change(now)
            }
            5 => {
                check_rate_based(rate_based.on_persistent_congestion(now), &rate_based);
                checker.cr.on_persistent_congestion(now)
            }
            6 => {
                check_rate_based(rate_based.on_startup_over(now), &rate_based);
                checker.cr.on_startup_over(now)
            }
            _ => {
                now += Duration::from_micros(arg % 3_700_000_000);
                None
            }
        };
        if let Some(t) = &transition {
            observer.on_transition(t);
        }
        checker.check(transition);
        let _ = (checker.cr.pacing_rate(), checker.cr.pacing_interval(MSS));
    }
});
