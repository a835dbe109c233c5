//! After a validated jump, slow start stops at the saved capacity until the
//! round trip sent after the validation has shown whether the path has room
//! beyond it ([`CarefulResume::on_ack_after_validation`]): acknowledged all
//! but a sixteenth, with no queue in the RTT, slow start goes on past it
//! until the RTT shows one.

mod common;

use std::time::{Duration, Instant};

use careful_resume::{Ack, CarefulResume, Congestion};
use common::*;

/// The configuration with slow start past the saved capacity on.
fn past_saved() -> careful_resume::Config {
    config().with_slow_start_past_saved(true)
}

/// An ACK with the controller's window `cwnd` and a smoothed RTT of `srtt`
/// over the minimum RTT of `RTT`.
fn ack_with(largest: u64, acked: usize, cwnd: usize, srtt: Duration, now: Instant) -> Ack {
    Ack {
        cwnd,
        smoothed_rtt: srtt,
        ..ack(Some(largest), acked, 0, RTT, now)
    }
}

/// Sends the round after the validation, `packets` datagrams from pn 200,
/// and has its first packet acknowledged at 400 ms.
fn round_sent(cr: &mut CarefulResume, packets: u64, clock: &Clock) {
    for pn in 200..200 + packets {
        assert_eq!(
            cr.on_packet_sent(&sent(pn, pkts(200), true, clock.at(310))),
            None
        );
    }
    let first = ack_with(200, MSS, pkts(200), RTT, clock.at(400));
    assert_eq!(cr.on_ack_after_validation(&first), None);
}

/// A round of 160 datagrams of which `delivered` come back: the ssthresh
/// the ACK that covers the round's last packet sets.
fn after_a_round_delivering(delivered: usize) -> (CarefulResume, Option<usize>) {
    after_a_round_delivering_with(past_saved(), delivered)
}

fn after_a_round_delivering_with(
    config: careful_resume::Config,
    delivered: usize,
) -> (CarefulResume, Option<usize>) {
    let clock = Clock::new();
    let mut cr = jumped_with(config, 200, &clock);
    validated(&mut cr, &clock);
    round_sent(&mut cr, 160, &clock);
    let last = ack_with(359, pkts(delivered - 1), pkts(200), RTT, clock.at(500));
    let ssthresh = cr.on_ack_after_validation(&last);
    (cr, ssthresh)
}

/// 150 of 160 datagrams, exactly fifteen sixteenths, is random loss: the
/// path carries the saved capacity with room to spare, and slow start goes
/// on past it. One datagram fewer is a path that carries less (a policer
/// behind a saved rate it no longer allows): ssthresh stays at the saved
/// capacity, and no later ACK changes it.
#[test]
fn a_round_that_delivers_fifteen_sixteenths_opens_slow_start_past_the_saved_capacity() {
    let (_, ssthresh) = after_a_round_delivering(150);
    assert_eq!(ssthresh, Some(usize::MAX));

    let (mut cr, ssthresh) = after_a_round_delivering(149);
    assert_eq!(ssthresh, None);
    let clock = Clock::new();
    let queue = ack_with(400, MSS, pkts(300), RTT * 2, clock.at(600));
    assert_eq!(cr.on_ack_after_validation(&queue), None);
}

/// Off by default: slow start ends at the saved capacity whatever the
/// round after the validation shows.
#[test]
fn by_default_slow_start_ends_at_the_saved_capacity() {
    let (_, ssthresh) = after_a_round_delivering_with(config(), 160);
    assert_eq!(ssthresh, None);
}

/// Once open, slow start past the saved capacity ends at the first ACK
/// whose RTT is above the minimum by HyStart++'s threshold (an eighth of
/// the 100 ms minimum, 12.5 ms): ssthresh is that ACK's window.
#[test]
fn slow_start_past_the_saved_capacity_ends_where_the_rtt_shows_a_queue() {
    let clock = Clock::new();
    let (mut cr, ssthresh) = after_a_round_delivering(160);
    assert_eq!(ssthresh, Some(usize::MAX));
    let below = ack_with(
        400,
        MSS,
        pkts(300),
        RTT + Duration::from_micros(12_499),
        clock.at(600),
    );
    assert_eq!(cr.on_ack_after_validation(&below), None);
    let at = ack_with(
        401,
        MSS,
        pkts(301),
        RTT + Duration::from_micros(12_500),
        clock.at(601),
    );
    assert_eq!(cr.on_ack_after_validation(&at), Some(pkts(301)));
    let later = ack_with(402, MSS, pkts(302), RTT * 2, clock.at(602));
    assert_eq!(cr.on_ack_after_validation(&later), None);
}

/// A queue while the round is watched keeps the saved capacity: the window
/// the earlier connection showed already fills the path.
#[test]
fn a_queue_in_the_round_after_the_validation_keeps_the_saved_capacity() {
    let clock = Clock::new();
    let mut cr = jumped_with(past_saved(), 200, &clock);
    validated(&mut cr, &clock);
    round_sent(&mut cr, 160, &clock);
    let queued = ack_with(300, pkts(100), pkts(200), RTT * 2, clock.at(450));
    assert_eq!(cr.on_ack_after_validation(&queued), None);
    let last = ack_with(359, pkts(59), pkts(200), RTT, clock.at(500));
    assert_eq!(cr.on_ack_after_validation(&last), None);
}

/// A loss once slow start went past the saved capacity ends it: the
/// controller's reduction stands, and the RTT no longer sets ssthresh.
#[test]
fn a_loss_ends_slow_start_past_the_saved_capacity() {
    let clock = Clock::new();
    let (mut cr, ssthresh) = after_a_round_delivering(160);
    assert_eq!(ssthresh, Some(usize::MAX));
    assert_eq!(cr.on_congestion(Congestion::Loss, clock.at(550)), None);
    let queue = ack_with(400, MSS, pkts(300), RTT * 2, clock.at(600));
    assert_eq!(cr.on_ack_after_validation(&queue), None);
}

/// Before the validation, after a Safe Retreat, and for a rate-based
/// controller (BBR ends its own Startup), there is nothing to decide.
#[test]
fn only_a_validated_window_based_jump_is_followed() {
    let clock = Clock::new();
    let probe = ack_with(500, pkts(100), pkts(300), RTT, clock.at(500));

    let mut cr = jumped_with(past_saved(), 200, &clock);
    assert_eq!(cr.on_ack_after_validation(&probe), None);
    cr.on_congestion(Congestion::Loss, clock.at(150))
        .expect("a Safe Retreat");
    cr.on_ack(&ack(Some(99), pkts(10), 0, RTT, clock.at(300)))
        .expect("recovery over");
    assert!(!cr.is_active());
    assert_eq!(cr.on_ack_after_validation(&probe), None);

    let mut cr = jump(
        CarefulResume::new_rate_based(past_saved(), saved(200)),
        &clock,
    );
    assert_eq!(cr.on_ack_after_validation(&probe), None);
}
