//! Careful Resume for a rate-based controller (RFC 9959's appendix): the
//! probing rate for two rounds, phases like the window-based jump's, Drain as
//! Safe Retreat, and no window of its own.

mod common;

use careful_resume::{CarefulResume, Congestion, Phase, RateControl, Trigger};
use common::*;

/// Jumped at t = 101 ms from a 200-datagram saved window (jump: 100
/// datagrams) on a 100 ms path.
fn probing(clock: &Clock) -> CarefulResume {
    jump(CarefulResume::new_rate_based(config(), saved(200)), clock)
}

/// 100 datagrams of 1200 B per 100 ms.
const PROBING_RATE: u64 = 1_200_000;

#[test]
fn the_jump_raises_the_rate_and_leaves_the_window_to_the_controller() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new_rate_based(config(), saved(200));
    assert!(cr.is_rate_based());
    handshake_acked(&mut cr, &clock);
    for pn in 0..9 {
        cr.on_packet_sent(&sent(pn, pkts(pn as usize + 1), false, clock.at(101)));
    }
    assert_eq!(cr.rate_control(), None, "nothing before the jump");
    let t = cr
        .on_packet_sent(&sent(9, pkts(10), true, clock.at(101)))
        .unwrap();
    assert_eq!(
        (t.to, t.trigger, t.cwnd, t.ssthresh),
        (
            Phase::Unvalidated,
            Trigger::CongestionWindowLimited,
            None,
            None
        )
    );
    assert_eq!(t.pipesize, pkts(10));
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::Probe {
            probing_rate: PROBING_RATE,
            delivery_rate: None,
        })
    );
    assert_eq!(cr.window(), None);
    assert!(!cr.suppresses_growth());
    assert_eq!((cr.pacing_rate(), cr.pacing_interval(MSS)), (None, None));
}

#[test]
fn the_probe_lasts_two_rounds_whatever_the_flight() {
    let clock = Clock::new();
    let mut cr = probing(&clock);
    // Past the jump window (100 datagrams) within the round: no change.
    send_quietly(&mut cr, 10..=139, pkts(10), clock.at(150));

    // Round one ends with the ACK of its first packet.
    let t = cr
        .on_ack(&ack(Some(10), pkts(11), pkts(129), RTT, clock.at(201)))
        .unwrap();
    assert_eq!(
        (t.from, t.to, t.trigger),
        (
            Phase::Unvalidated,
            Phase::Validating,
            Trigger::FirstUnvalidatedPacketAcknowledged
        )
    );
    assert_eq!(
        (t.first_unvalidated_pn, t.last_unvalidated_pn, t.cwnd),
        (Some(10), Some(139), None)
    );
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::Probe {
            probing_rate: PROBING_RATE,
            delivery_rate: None,
        }),
        "the carefully-resuming flag holds through the second round"
    );

    // A quarter of an RTT of ACKs measures the rate the jump is delivered
    // at: 128 datagrams in the 39 ms since the first.
    assert_eq!(
        cr.on_ack(&ack(Some(138), pkts(128), pkts(1), RTT, clock.at(240))),
        None
    );
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::Probe {
            probing_rate: PROBING_RATE,
            delivery_rate: Some(128 * 1200 * 1000 / 39),
        })
    );

    // Round two ends with the ACK of the last packet round one sent.
    let t = cr
        .on_ack(&ack(Some(139), MSS, 0, RTT, clock.at(241)))
        .unwrap();
    assert_eq!(
        (t.to, t.trigger, t.cwnd, t.ssthresh),
        (
            Phase::Normal,
            Trigger::LastUnvalidatedPacketAcknowledged,
            None,
            None
        )
    );
    assert_eq!(t.pipesize, pkts(10 + 140));
    assert!(!t.saved_set_consumed);
    // Validated: Startup may end at the saved rate, 240 kB per 100 ms.
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::EndStartupAt { rate: 2_400_000 })
    );
}

#[test]
fn a_jump_the_path_delivers_slower_ends_startup_at_the_rate_it_shows() {
    let clock = Clock::new();
    let mut cr = probing(&clock);
    send_quietly(&mut cr, 10..=109, pkts(10), clock.at(150));
    let t = cr
        .on_ack(&ack(Some(10), pkts(11), pkts(109), RTT, clock.at(201)))
        .unwrap();
    assert_eq!(t.to, Phase::Validating);

    // 40 datagrams in 40 ms: 1.2 MB/s, the probing rate: keep probing.
    cr.on_ack(&ack(Some(50), pkts(40), pkts(69), RTT, clock.at(241)));
    assert!(matches!(
        cr.rate_control(),
        Some(RateControl::Probe {
            delivery_rate: Some(1_200_000),
            ..
        })
    ));

    // Then 10 in 60 ms: 50 in 100 ms since the first, 600 kB/s, under 4/5
    // of the probing rate: the path carries that, Startup may end there.
    cr.on_ack(&ack(Some(60), pkts(10), pkts(59), RTT, clock.at(301)));
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::EndStartupAt { rate: 600_000 })
    );

    // And still once the jump is validated, rather than the saved rate.
    let t = cr
        .on_ack(&ack(Some(109), pkts(49), 0, RTT, clock.at(400)))
        .unwrap();
    assert_eq!(t.trigger, Trigger::LastUnvalidatedPacketAcknowledged);
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::EndStartupAt { rate: 600_000 })
    );
}

#[test]
fn the_probing_rate_follows_the_current_rtt() {
    let clock = Clock::new();
    let mut cr = probing(&clock);
    send_quietly(&mut cr, 10..=20, pkts(10), clock.at(110));
    // A larger smoothed RTT spreads the jump window over longer.
    let slower = ack(Some(5), MSS, pkts(20), RTT * 2, clock.at(150));
    assert_eq!(cr.on_ack(&slower), None);
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::Probe {
            probing_rate: PROBING_RATE / 2,
            delivery_rate: None,
        })
    );
}

#[test]
fn congestion_while_probing_retreats_to_drain_until_the_jump_is_acked() {
    let clock = Clock::new();
    let mut cr = probing(&clock);
    send_quietly(&mut cr, 10..=59, pkts(10), clock.at(150));
    let t = cr.on_congestion(Congestion::Loss, clock.at(160)).unwrap();
    assert_eq!(
        (t.from, t.to, t.trigger, t.cwnd),
        (
            Phase::Unvalidated,
            Phase::SafeRetreat,
            Trigger::PacketLoss,
            None
        )
    );
    assert!(t.saved_set_consumed);
    assert_eq!(t.last_unvalidated_pn, Some(59));
    assert_eq!(cr.rate_control(), Some(RateControl::Retreat));
    assert_eq!(cr.window(), None, "Drain, not a window, retreats");

    assert_eq!(
        cr.on_ack(&ack(Some(58), pkts(40), pkts(1), RTT, clock.at(250))),
        None
    );
    let t = cr
        .on_ack(&ack(Some(59), MSS, 0, RTT, clock.at(251)))
        .unwrap();
    assert_eq!(
        (t.to, t.trigger, t.ssthresh),
        (Phase::Normal, Trigger::ExitRecovery, None)
    );
    // BBR goes on from the capacity validated: PipeSize (10 + 41
    // datagrams) x Beta (0.5) per RTT.
    assert_eq!(t.pipesize, pkts(51));
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::Retreated {
            validated_rate: 306_000
        })
    );
}

#[test]
fn an_rtt_beyond_ten_times_the_saved_rtt_while_probing_retreats_to_drain() {
    let clock = Clock::new();
    let mut cr = probing(&clock);
    send_quietly(&mut cr, 10..=59, pkts(10), clock.at(150));
    let beyond = RTT * 10 + std::time::Duration::from_micros(1);
    let t = cr
        .on_ack(&ack(Some(3), pkts(4), pkts(46), beyond, clock.at(160)))
        .unwrap();
    assert_eq!(
        (t.from, t.to, t.trigger, t.cwnd),
        (
            Phase::Unvalidated,
            Phase::SafeRetreat,
            Trigger::PathChanged,
            None
        )
    );
    assert!(t.saved_set_consumed);
    assert_eq!(cr.rate_control(), Some(RateControl::Retreat));
}

#[test]
fn a_controller_past_startup_does_not_jump() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new_rate_based(config(), saved(200));
    handshake_acked(&mut cr, &clock);
    let t = cr.on_startup_over(clock.at(150)).unwrap();
    assert_eq!(
        (t.to, t.trigger, t.saved_set_consumed),
        (Phase::Normal, Trigger::CongestionWindowLimited, false)
    );
    assert!(!cr.jumped());

    // Once the jump is taken, leaving Startup changes nothing.
    let mut cr = probing(&clock);
    assert_eq!(cr.on_startup_over(clock.at(150)), None);
    assert_eq!(cr.phase(), Phase::Unvalidated);
}

#[test]
fn window_based_careful_resume_never_steers_a_rate() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    assert!(!cr.is_rate_based());
    assert_eq!(cr.rate_control(), None);
    assert_eq!(cr.on_startup_over(clock.at(150)), None);
    cr.on_congestion(Congestion::EcnCe, clock.at(160)).unwrap();
    assert_eq!(cr.rate_control(), None);
}
