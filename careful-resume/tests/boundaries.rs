//! The exact boundaries of the state machine's comparisons: each test sits
//! on the value where a rule changes its answer (RFC 9959's, or the
//! project's where the RFC leaves it open), so that a rule written with `<`
//! for `<=` cannot pass. Found by mutation testing (`make mutants`).

mod common;

use std::time::Duration;

use careful_resume::{
    Beta, CarefulResume, Config, ConfigError, Congestion, Phase, RateControl, Transition, Trigger,
    WindowControl,
};
use common::*;

fn assert_change(t: Option<Transition>, from: Phase, to: Phase, trigger: Trigger) -> Transition {
    let t = t.expect("a transition");
    assert_eq!((t.from, t.to, t.trigger), (from, to, trigger));
    t
}

/// RFC 9959, section 4.3.2 (COMPLIANCE.md R30): leaving Unvalidated with
/// flight_size <= PipeSize, the sender was rate limited: CWND = PipeSize and
/// Careful Resume ends. Equality is rate limited.
#[test]
fn a_flight_equal_to_pipesize_leaving_unvalidated_is_rate_limited() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    // Jumped at a flight (PipeSize) of 10 datagrams; 6 more sent.
    send_quietly(&mut cr, 10..=15, pkts(10), clock.at(110));
    // The first unvalidated packet's ACK covers 3 datagrams: PipeSize 13,
    // flight 16 - 3 = 13.
    let t = assert_change(
        cr.on_ack(&ack(Some(10), pkts(3), pkts(13), RTT, clock.at(201))),
        Phase::Unvalidated,
        Phase::Normal,
        Trigger::RateLimited,
    );
    assert_eq!(
        (t.pipesize, t.cwnd, t.ssthresh),
        (pkts(13), Some(pkts(13)), None)
    );
    assert!(!cr.is_active());
}

/// The other side of R30's boundary: one datagram more in flight than
/// PipeSize (and at least IW) is a jump in use, validated from the flight.
#[test]
fn a_flight_one_datagram_above_pipesize_leaving_unvalidated_is_validated() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=16, pkts(10), clock.at(110));
    let t = assert_change(
        cr.on_ack(&ack(Some(10), pkts(3), pkts(14), RTT, clock.at(201))),
        Phase::Unvalidated,
        Phase::Validating,
        Trigger::FirstUnvalidatedPacketAcknowledged,
    );
    assert_eq!((t.pipesize, t.cwnd), (pkts(13), Some(pkts(14))));
    assert_eq!(t.last_unvalidated_pn, Some(16));
}

/// The rate-based jump (RFC 9959's appendix) was used when its round sent
/// more than was in flight when it began; a round that sent exactly that
/// much is rate limited, and BBR is then left alone: no probing, no saved
/// rate to end Startup at (the jump was never validated).
#[test]
fn a_rate_based_round_that_sent_exactly_the_flight_it_jumped_from_is_rate_limited() {
    let clock = Clock::new();
    let mut cr = jump(CarefulResume::new_rate_based(config(), saved(200)), &clock);
    // Jumped at a flight of 10 datagrams; the round sends 10.
    send_quietly(&mut cr, 10..=19, pkts(10), clock.at(150));
    assert_eq!(cr.unvalidated_sent(), pkts(10));
    let t = assert_change(
        cr.on_ack(&ack(Some(10), pkts(11), pkts(9), RTT, clock.at(201))),
        Phase::Unvalidated,
        Phase::Normal,
        Trigger::RateLimited,
    );
    assert_eq!((t.cwnd, t.ssthresh), (None, None));
    assert_eq!(cr.rate_control(), None);
    assert!(!cr.saved_set_consumed());
}

/// A rate-based round must also have sent at least IW to count as used: a
/// jump taken from a flight of one datagram whose round sent five (more
/// than that flight, less than IW) is rate limited.
#[test]
fn a_rate_based_round_under_the_initial_window_is_rate_limited() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new_rate_based(config(), saved(200));
    assert_eq!(
        cr.on_packet_sent(&sent(0, pkts(10), true, clock.at(0))),
        None
    );
    // The ACK brings the RTT sample and acknowledges the initial data: the
    // jump is taken with one datagram in flight.
    let jump = cr
        .on_ack(&ack(Some(8), pkts(9), MSS, RTT, clock.at(100)))
        .unwrap();
    assert_eq!((jump.to, jump.pipesize), (Phase::Unvalidated, MSS));
    send_quietly(&mut cr, 1..=5, MSS, clock.at(110));
    assert_eq!(cr.unvalidated_sent(), pkts(5));
    assert_change(
        cr.on_ack(&ack(Some(1), MSS, pkts(5), RTT, clock.at(201))),
        Phase::Unvalidated,
        Phase::Normal,
        Trigger::RateLimited,
    );
    assert_eq!(cr.rate_control(), None);
}

/// A rate-based connection that ends Careful Resume before the jump (BBR
/// left Startup first, or the RTT did not fit) gets no rate from the saved
/// set: it describes a path that was never validated.
#[test]
fn a_rate_based_connection_that_never_jumped_gets_no_rate() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new_rate_based(config(), saved(200));
    handshake_acked(&mut cr, &clock);
    cr.on_startup_over(clock.at(150)).unwrap();
    assert_eq!(cr.rate_control(), None);

    let mut cr = CarefulResume::new_rate_based(config(), saved(200));
    let t = cr
        .on_ack(&ack(None, pkts(3), 0, RTT / 2, clock.at(50)))
        .unwrap();
    assert_eq!(t.trigger, Trigger::RttNotValidated);
    assert_eq!(cr.rate_control(), None);
}

/// Fills a window-based jump (pn 10 to 99, flight 100 datagrams) and has
/// the path acknowledge its first packet, with pn 0 to 10, at 210 ms.
fn validating_since_210_ms(clock: &Clock) -> CarefulResume {
    let mut cr = jumped(200, clock);
    send_quietly(&mut cr, 10..=98, pkts(10), clock.at(110));
    let t = cr.on_packet_sent(&sent(99, pkts(100), true, clock.at(110)));
    assert_eq!(t.map(|t| t.to), Some(Phase::Validating));
    assert_eq!(
        cr.on_ack(&ack(Some(10), pkts(11), pkts(89), RTT, clock.at(210))),
        None
    );
    cr
}

/// The jump was paced at 100 datagrams per 100 ms (1.2 MB/s); ACKs at
/// exactly 4/5 of that (960 kB/s) are not "markedly slower": slow start is
/// not cut short, and the jump validates to the saved capacity.
#[test]
fn acks_at_exactly_four_fifths_of_the_pacing_rate_keep_pace() {
    let clock = Clock::new();
    let mut cr = validating_since_210_ms(&clock);
    // 40 datagrams (48,000 B) in 50 ms since the first ACK: 960,000 B/s.
    assert_eq!(
        cr.on_ack(&ack(Some(50), pkts(40), pkts(49), RTT, clock.at(260))),
        None
    );
    assert_eq!(cr.take_slow_start_limit(), None);
    let t = assert_change(
        cr.on_ack(&ack(Some(99), pkts(49), 0, RTT, clock.at(261))),
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
    );
    assert_eq!(t.ssthresh, Some(pkts(200)));
    assert!(!cr.saved_set_consumed());
}

/// The jump's ACK rate is measured once the ACKs span a quarter of the
/// current RTT: at exactly 25 ms of a 100 ms RTT it counts, and a rate of
/// 480 kB/s shows a path of 40 datagrams per min RTT.
#[test]
fn the_ack_rate_counts_from_exactly_a_quarter_of_an_rtt() {
    let clock = Clock::new();
    let mut cr = validating_since_210_ms(&clock);
    // 10 datagrams (12,000 B) in 25 ms.
    assert_eq!(
        cr.on_ack(&ack(Some(20), pkts(10), pkts(79), RTT, clock.at(235))),
        None
    );
    assert_eq!(cr.take_slow_start_limit(), Some(pkts(40)));
}

/// The limit is for the window-based controller while it validates; once
/// the jump is validated it is no longer offered (the validation's ssthresh
/// carries it).
#[test]
fn the_slow_start_limit_is_offered_only_while_validating() {
    let clock = Clock::new();
    let mut cr = validating_since_210_ms(&clock);
    // 10 datagrams in 25 ms: a path of 40 datagrams, not taken.
    cr.on_ack(&ack(Some(20), pkts(10), pkts(79), RTT, clock.at(235)));
    let t = assert_change(
        cr.on_ack(&ack(Some(99), pkts(79), 0, RTT, clock.at(400))),
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
    );
    // 89 datagrams in 190 ms: 562 kB/s, a path of 56,210 B per min RTT.
    assert_eq!(t.ssthresh, Some(89 * 1200 * 100 / 190));
    assert_eq!(cr.take_slow_start_limit(), None);
}

/// A rate-based controller gets what the jump's ACKs show through
/// [`CarefulResume::rate_control`], never as a slow start limit.
#[test]
fn a_rate_based_controller_is_never_offered_a_slow_start_limit() {
    let clock = Clock::new();
    let mut cr = jump(CarefulResume::new_rate_based(config(), saved(200)), &clock);
    send_quietly(&mut cr, 10..=109, pkts(10), clock.at(150));
    cr.on_ack(&ack(Some(10), pkts(11), pkts(109), RTT, clock.at(201)))
        .unwrap();
    // 10 datagrams in 50 ms: 240 kB/s, a fifth of the probing rate.
    cr.on_ack(&ack(Some(20), pkts(10), pkts(99), RTT, clock.at(251)));
    assert_eq!(
        cr.rate_control(),
        Some(RateControl::EndStartupAt { rate: 240_000 })
    );
    assert_eq!(cr.take_slow_start_limit(), None);
}

/// The saved set is discredited only by what discredits it: a validated
/// jump keeps it, a retreat consumes it.
#[test]
fn only_a_retreat_consumes_the_saved_set() {
    let clock = Clock::new();
    let mut cr = validating_since_210_ms(&clock);
    assert!(!cr.saved_set_consumed());
    cr.on_ack(&ack(Some(99), pkts(89), 0, RTT, clock.at(300)))
        .unwrap();
    assert!(!cr.saved_set_consumed());

    let mut cr = validating_since_210_ms(&clock);
    cr.on_congestion(Congestion::Loss, clock.at(220)).unwrap();
    assert!(cr.saved_set_consumed());
}

#[test]
fn window_control_fixes_or_caps_the_controllers_window() {
    // Unvalidated: exactly the jump window, whatever the controller has.
    assert_eq!(WindowControl::Fixed(pkts(100)).apply(pkts(10)), pkts(100));
    assert_eq!(WindowControl::Fixed(pkts(100)).apply(pkts(300)), pkts(100));
    // Safe Retreat: at most the cap.
    assert_eq!(WindowControl::Cap(pkts(31)).apply(pkts(10)), pkts(10));
    assert_eq!(WindowControl::Cap(pkts(31)).apply(pkts(60)), pkts(31));
    assert_eq!(WindowControl::Fixed(pkts(100)).bytes(), pkts(100));
    assert_eq!(WindowControl::Cap(pkts(31)).bytes(), pkts(31));
}

#[test]
fn the_configuration_reads_back_what_was_set() {
    let config = Config::new(IW, MSS)
        .unwrap()
        .with_max_jump(pkts(64))
        .with_beta(Beta::from_permille(700).unwrap());
    assert_eq!(config.max_jump(), pkts(64));
    assert_eq!(config.beta().permille(), 700);
    assert_eq!(config.initial_window(), IW);
    assert_eq!(config.max_datagram_size(), MSS);
    assert_eq!(Config::new(IW, MSS).unwrap().max_jump(), usize::MAX);
    // The jump window is min(max_jump, saved_cwnd / 2).
    let clock = Clock::new();
    let cr = jump(CarefulResume::new(config, saved(200)), &clock);
    assert_eq!(cr.jump_window(), pkts(64));
    assert_eq!(cr.window(), Some(WindowControl::Fixed(pkts(64))));
}

#[test]
fn configuration_errors_say_what_is_wrong() {
    assert_eq!(
        ConfigError::ZeroDatagramSize.to_string(),
        "maximum datagram size is zero"
    );
    assert_eq!(
        ConfigError::InitialWindowTooSmall.to_string(),
        "initial window is below two datagrams"
    );
    // The smallest window QUIC allows, two datagrams, is accepted.
    assert!(Config::new(2 * MSS, MSS).is_ok());
    assert_eq!(
        Config::new(2 * MSS - 1, MSS),
        Err(ConfigError::InitialWindowTooSmall)
    );
}

#[test]
fn pacing_spreads_the_jump_window_over_the_current_rtt() {
    let clock = Clock::new();
    let cr = jumped(200, &clock);
    // 100 datagrams per 100 ms: one every millisecond, 1.2 MB/s.
    assert_eq!(cr.pacing_interval(MSS), Some(Duration::from_millis(1)));
    assert_eq!(cr.pacing_rate(), Some(1_200_000));
}
