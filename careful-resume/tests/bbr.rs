//! The BBR mode: the carefully-resuming flag, probing rate, two rounds,
//! Drain as Safe Retreat.

mod common;

use std::time::Duration;

use careful_resume::{BbrAction, BbrResume, Congestion, Phase, Trigger};
use common::*;

/// Reconnaissance satisfied: handshake acked, a cwnd-limited send.
fn ready(clock: &Clock) -> BbrResume {
    let mut bbr = BbrResume::new(config(), saved(200));
    assert_eq!(bbr.on_ack(&ack(None, pkts(3), 0, RTT, clock.at(100))), None);
    assert_eq!(
        bbr.on_packet_sent(&sent(9, pkts(10), true, clock.at(101))),
        None
    );
    assert_eq!(bbr.phase(), Phase::Reconnaissance);
    bbr
}

fn resuming(clock: &Clock) -> BbrResume {
    let mut bbr = ready(clock);
    let t = bbr.on_round_start(true, pkts(10), clock.at(102)).unwrap();
    assert_eq!(
        (t.from, t.to, t.trigger),
        (
            Phase::Reconnaissance,
            Phase::Unvalidated,
            Trigger::CongestionWindowLimited
        )
    );
    assert_eq!(t.pipesize, pkts(10));
    bbr
}

#[test]
fn the_flag_is_raised_at_a_startup_round_and_lasts_two_rounds() {
    let clock = Clock::new();
    let mut bbr = resuming(&clock);
    assert!(bbr.carefully_resuming());
    assert_eq!(
        bbr.on_packet_sent(&sent(10, pkts(11), true, clock.at(103))),
        None
    );
    assert_eq!(
        bbr.on_packet_sent(&sent(11, pkts(12), true, clock.at(104))),
        None
    );

    let t = bbr.on_round_start(true, pkts(12), clock.at(202)).unwrap();
    assert_eq!((t.from, t.to), (Phase::Unvalidated, Phase::Validating));
    assert_eq!(
        (t.first_unvalidated_pn, t.last_unvalidated_pn),
        (Some(10), Some(11))
    );
    assert!(bbr.carefully_resuming());

    let t = bbr.on_round_start(true, pkts(12), clock.at(302)).unwrap();
    assert_eq!(
        (t.to, t.trigger),
        (Phase::Normal, Trigger::LastUnvalidatedPacketAcknowledged)
    );
    assert!(!bbr.carefully_resuming());
    assert_eq!(bbr.probing_rate(), None);
    assert_eq!(bbr.on_round_start(true, 0, clock.at(402)), None);
}

#[test]
fn probing_rate_spreads_half_the_saved_window_over_the_current_rtt() {
    let clock = Clock::new();
    let bbr = resuming(&clock);
    // 100 datagrams per 100 ms.
    assert_eq!(bbr.probing_rate(), Some(1_200_000));
    assert_eq!(bbr.pacing_rate(500_000), 1_200_000);
    assert_eq!(bbr.pacing_rate(2_000_000), 2_000_000);
    // max(bw, probing) x min_rtt x gain = 1.2 MB/s x 0.1 s x 2.
    assert_eq!(bbr.cwnd(500_000, RTT, 2.0), Some(240_000));
    assert_eq!(bbr.cwnd(3_000_000, RTT, 2.0), Some(600_000));
}

#[test]
fn without_startup_there_is_no_resume() {
    let clock = Clock::new();
    let mut bbr = ready(&clock);
    let t = bbr.on_round_start(false, pkts(10), clock.at(102)).unwrap();
    assert_eq!(
        (t.to, t.trigger),
        (Phase::Normal, Trigger::CongestionWindowLimited)
    );
    assert_eq!(bbr.cwnd(500_000, RTT, 2.0), None);
    assert_eq!(bbr.pacing_rate(500_000), 500_000);
}

#[test]
fn reconnaissance_rejects_a_mismatched_rtt() {
    let clock = Clock::new();
    let mut bbr = BbrResume::new(config(), saved(200));
    let t = bbr
        .on_ack(&ack(None, MSS, 0, Duration::from_millis(40), clock.at(40)))
        .unwrap();
    assert_eq!((t.to, t.trigger), (Phase::Normal, Trigger::RttNotValidated));
}

#[test]
fn congestion_while_resuming_enters_drain_as_safe_retreat() {
    let clock = Clock::new();
    let mut bbr = resuming(&clock);
    assert_eq!(
        bbr.on_ack(&ack(Some(9), pkts(10), 0, RTT, clock.at(150))),
        None
    );
    let (t, action) = bbr.on_congestion(Congestion::EcnCe, clock.at(160)).unwrap();
    assert_eq!(action, BbrAction::EnterDrain);
    assert_eq!(
        (t.from, t.to, t.trigger),
        (Phase::Unvalidated, Phase::SafeRetreat, Trigger::EcnCe)
    );
    assert_eq!(t.pipesize, pkts(20));
    assert!(t.saved_set_consumed);
    assert!(bbr.discards_delivery_rate_samples());
    assert!(bbr.carefully_resuming());
    assert_eq!(bbr.probing_rate(), None);

    let t = bbr.on_drain_exit(clock.at(300)).unwrap();
    assert_eq!((t.to, t.trigger), (Phase::Normal, Trigger::ExitRecovery));
    assert!(!bbr.discards_delivery_rate_samples());
    assert_eq!(bbr.on_drain_exit(clock.at(301)), None);
}

#[test]
fn congestion_in_reconnaissance_just_ends_careful_resume() {
    let clock = Clock::new();
    let mut bbr = ready(&clock);
    let (t, action) = bbr.on_congestion(Congestion::Loss, clock.at(150)).unwrap();
    assert_eq!(action, BbrAction::Continue);
    assert_eq!(
        (t.to, t.trigger, t.saved_set_consumed),
        (Phase::Normal, Trigger::PacketLoss, false)
    );
    assert_eq!(bbr.on_round_start(true, 0, clock.at(200)), None);
}

#[test]
fn path_change_and_persistent_congestion() {
    let clock = Clock::new();
    let mut bbr = resuming(&clock);
    let (t, action) = bbr.on_path_change(clock.at(150)).unwrap();
    assert_eq!(
        (t.to, t.trigger, action),
        (
            Phase::SafeRetreat,
            Trigger::PathChanged,
            BbrAction::EnterDrain
        )
    );
    let t = bbr.on_persistent_congestion(clock.at(160)).unwrap();
    assert_eq!(
        (t.from, t.to, t.trigger),
        (Phase::SafeRetreat, Phase::Normal, Trigger::PacketLoss)
    );
    assert!(!bbr.is_active());
}
