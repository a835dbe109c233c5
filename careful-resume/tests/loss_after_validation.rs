//! After a validated jump, losses found within about a round trip are of
//! packets sent while it was being validated, when the window grew in slow
//! start on its ACKs: once there are enough of them to refute that growth,
//! the window comes down to the capacity the jump validated
//! ([`CarefulResume::on_loss_after_validation`]).

mod common;

use careful_resume::{CarefulResume, Config, Congestion, PacketSent, Phase};
use common::*;

/// The jump (pn 10 to 99) is validated at 300 ms with PipeSize 110
/// datagrams (the 10 in flight when it began and the 100 acknowledged
/// since), the smoothed RTT 100 ms: losses found until 425 ms (5/4 of it
/// later) count, and the thirteenth (an eighth of 110 datagrams) brings
/// the window to PipeSize, once.
#[test]
fn an_eighth_of_pipesize_lost_within_a_round_trip_of_the_validation_caps_the_window() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    validated(&mut cr, &clock);
    assert_eq!(cr.pipesize(), pkts(110));
    assert_eq!(cr.on_loss_after_validation(6, clock.at(400), RTT), None);
    assert_eq!(cr.on_loss_after_validation(6, clock.at(410), RTT), None);
    assert_eq!(
        cr.on_loss_after_validation(1, clock.at(425), RTT),
        Some(pkts(110))
    );
    assert_eq!(cr.on_loss_after_validation(20, clock.at(425), RTT), None);
}

/// A few losses, what random loss or CoDel's drops an interval give,
/// refute nothing.
#[test]
fn a_few_losses_leave_the_window_to_the_controller() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    validated(&mut cr, &clock);
    assert_eq!(cr.on_loss_after_validation(5, clock.at(400), RTT), None);
    assert_eq!(cr.on_loss_after_validation(7, clock.at(425), RTT), None);
    assert_eq!(cr.on_loss_after_validation(1, clock.at(426), RTT), None);
}

/// A jump of half `saved_packets`, sent whole at 110 ms without Validating
/// growing the window and validated at 300 ms: PipeSize is the jump plus
/// the ten packets in flight when it began.
fn validated_jump(saved_packets: usize, clock: &Clock) -> CarefulResume {
    let jump = saved_packets / 2;
    let last = jump as u64 - 1;
    let mut cr = jumped(saved_packets, clock);
    send_quietly(&mut cr, 10..=last - 1, pkts(10), clock.at(110));
    cr.on_packet_sent(&sent(last, pkts(jump), true, clock.at(110)))
        .expect("validating");
    let _ = cr.on_ack(&ack(
        Some(10),
        pkts(11),
        pkts(jump - 11),
        RTT,
        clock.at(210),
    ));
    cr.on_ack(&ack(
        Some(last),
        pkts(jump - 11),
        pkts(jump),
        RTT,
        clock.at(300),
    ))
    .expect("validated");
    assert_eq!(cr.pipesize(), pkts(jump + 10));
    cr
}

/// A small jump needs three: an eighth of its PipeSize is fewer. With an
/// initial window of ten packets no jump is this small (a jump must exceed
/// twice the window); with one of two packets, a jump of eight is made.
#[test]
fn a_small_jump_needs_three_losses() {
    let clock = Clock::new();
    let config = Config::new(pkts(2), MSS).unwrap();
    let mut cr = CarefulResume::new(config, saved(16));
    handshake_acked(&mut cr, &clock);
    let packet = |pn: u64, cwnd: usize, cwnd_limited: bool| PacketSent {
        cwnd,
        ..sent(pn, pkts(pn as usize + 1), cwnd_limited, clock.at(101))
    };
    assert_eq!(cr.on_packet_sent(&packet(0, pkts(2), false)), None);
    let jump = cr.on_packet_sent(&packet(1, pkts(2), true));
    assert_eq!(jump.map(|t| t.cwnd), Some(Some(pkts(8))));
    send_quietly(&mut cr, 2..=6, pkts(2), clock.at(110));
    let full = cr.on_packet_sent(&packet(7, pkts(8), true));
    assert_eq!(full.map(|t| t.to), Some(Phase::Validating));
    let _ = cr.on_ack(&ack(Some(2), pkts(3), pkts(5), RTT, clock.at(210)));
    cr.on_ack(&ack(Some(7), pkts(5), 0, RTT, clock.at(300)))
        .expect("validated");
    // PipeSize 10 datagrams, of which an eighth is 1.
    assert_eq!(cr.pipesize(), pkts(10));
    assert_eq!(cr.on_loss_after_validation(2, clock.at(400), RTT), None);
    assert_eq!(
        cr.on_loss_after_validation(1, clock.at(400), RTT),
        Some(pkts(10))
    );
}

/// A larger jump needs more: an eighth of PipeSize in datagrams.
#[test]
fn an_eighth_of_a_large_pipesize_refutes_the_window() {
    let clock = Clock::new();
    // PipeSize 1010 datagrams: 126 losses refute the window, 125 do not.
    let mut cr = validated_jump(2000, &clock);
    assert_eq!(cr.on_loss_after_validation(125, clock.at(400), RTT), None);
    assert_eq!(
        cr.on_loss_after_validation(1, clock.at(400), RTT),
        Some(pkts(1010))
    );
}

/// Losses found later are of packets sent after the validation: the base
/// controller's alone, now and after.
#[test]
fn losses_more_than_a_round_trip_after_the_validation_are_the_controllers() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    validated(&mut cr, &clock);
    assert_eq!(cr.on_loss_after_validation(2, clock.at(400), RTT), None);
    assert_eq!(cr.on_loss_after_validation(10, clock.at(426), RTT), None);
    assert_eq!(cr.on_loss_after_validation(10, clock.at(427), RTT), None);
}

/// Before the validation Careful Resume answers losses itself (Safe
/// Retreat); after a Safe Retreat nothing was validated; a rate-based
/// controller (BBR) ends its own Startup at the rate the jump showed.
#[test]
fn only_a_validated_window_based_jump_caps_the_window() {
    let clock = Clock::new();

    let mut cr = jumped(200, &clock);
    assert_eq!(cr.on_loss_after_validation(10, clock.at(150), RTT), None);
    cr.on_congestion(Congestion::Loss, clock.at(150))
        .expect("a Safe Retreat");
    cr.on_ack(&ack(Some(99), pkts(10), 0, RTT, clock.at(300)))
        .expect("recovery over");
    assert!(!cr.is_active());
    assert_eq!(cr.on_loss_after_validation(10, clock.at(310), RTT), None);

    let mut cr = jump(CarefulResume::new_rate_based(config(), saved(200)), &clock);
    validated_rate_based(&mut cr, &clock);
    assert_eq!(cr.on_loss_after_validation(10, clock.at(310), RTT), None);
}

/// A rate-based jump whose last unvalidated packet is acknowledged.
fn validated_rate_based(cr: &mut CarefulResume, clock: &Clock) {
    send_quietly(cr, 10..=99, pkts(10), clock.at(110));
    let _ = cr.on_ack(&ack(Some(10), pkts(11), pkts(89), RTT, clock.at(210)));
    let _ = cr.on_ack(&ack(Some(99), pkts(89), pkts(1), RTT, clock.at(300)));
    assert!(!cr.is_active(), "{:?}", cr.history());
}
