//! Every transition and trigger of the window-based state machine, with the
//! exact windows RFC 9959 prescribes.

mod common;

use std::num::NonZeroU32;
use std::time::Duration;

use careful_resume::{
    Ack, Beta, CarefulResume, Config, ConfigError, Congestion, InitialData, Phase, Transition,
    Trigger, WindowControl,
};
use common::*;

fn assert_change(t: Option<Transition>, from: Phase, to: Phase, trigger: Trigger) -> Transition {
    let t = t.expect("a transition");
    assert_eq!((t.from, t.to, t.trigger), (from, to, trigger));
    t
}

#[test]
fn jumps_when_cwnd_limited_after_the_handshake_flight_is_acked() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    handshake_acked(&mut cr, &clock);
    for pn in 0..9 {
        assert_eq!(
            cr.on_packet_sent(&sent(pn, pkts(pn as usize + 1), false, clock.at(101))),
            None
        );
    }
    let t = assert_change(
        cr.on_packet_sent(&sent(9, pkts(10), true, clock.at(101))),
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Trigger::CongestionWindowLimited,
    );
    assert_eq!(t.cwnd, Some(pkts(100)));
    assert_eq!(t.ssthresh, None);
    assert_eq!(t.pipesize, pkts(10));
    assert_eq!(
        (t.first_unvalidated_pn, t.last_unvalidated_pn),
        (None, None)
    );
    assert_eq!(t.saved, saved(200));
    assert!(!t.saved_set_consumed);
    assert_eq!(t.at, clock.at(101));
    assert_eq!(cr.window(), Some(WindowControl::Fixed(pkts(100))));
    assert!(cr.suppresses_growth());
    assert_eq!(
        cr.history(),
        [(Phase::Unvalidated, Trigger::CongestionWindowLimited)]
    );
    assert!(cr.jumped());
}

/// Reconnaissance up to the packet that fills the initial window, with the
/// handshake flight acknowledged: the next event decides the jump.
fn ready_to_jump(cr: &mut CarefulResume, clock: &Clock) -> Option<Transition> {
    handshake_acked(cr, clock);
    for pn in 0..9 {
        assert_eq!(
            cr.on_packet_sent(&sent(pn, pkts(pn as usize + 1), false, clock.at(101))),
            None
        );
    }
    cr.on_packet_sent(&sent(9, pkts(10), true, clock.at(101)))
}

#[test]
fn a_granted_claim_lets_the_jump_go_ahead() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    cr.await_claim();
    assert!(cr.is_claim_pending());
    assert_eq!(cr.on_claim(true, pkts(10), 0, clock.at(50)), None);
    assert!(!cr.is_claim_pending());
    let t = assert_change(
        ready_to_jump(&mut cr, &clock),
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Trigger::CongestionWindowLimited,
    );
    assert_eq!(t.cwnd, Some(pkts(100)));
}

#[test]
fn a_refused_claim_ends_careful_resume_without_touching_the_window() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    cr.await_claim();
    let t = assert_change(
        cr.on_claim(false, pkts(10), 0, clock.at(50)),
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::SavedSetNotGranted,
    );
    assert_eq!((t.cwnd, t.ssthresh), (None, None));
    // The set was never this connection's to consume.
    assert!(!t.saved_set_consumed);
    assert!(!cr.is_active());
    assert_eq!(ready_to_jump(&mut cr, &clock), None);
}

#[test]
fn a_sender_ready_before_the_answer_holds_the_jump_until_the_grant() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    cr.await_claim();
    // Ready to jump, no answer: the sender stays at the initial window.
    assert_eq!(ready_to_jump(&mut cr, &clock), None);
    assert_eq!(cr.phase(), Phase::Reconnaissance);
    assert!(cr.is_claim_pending());
    // The grant comes while the window is still full: the jump is taken
    // at once, with the flight of that moment as PipeSize.
    let t = assert_change(
        cr.on_claim(true, pkts(10), pkts(10), clock.at(102)),
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Trigger::CongestionWindowLimited,
    );
    assert_eq!(t.cwnd, Some(pkts(100)));
    assert_eq!(t.pipesize, pkts(10));
    assert_eq!(cr.pacing_rate(), Some(1_200_000));
}

#[test]
fn a_refusal_after_the_sender_was_ready_ends_careful_resume() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    cr.await_claim();
    assert_eq!(ready_to_jump(&mut cr, &clock), None);
    let t = assert_change(
        cr.on_claim(false, pkts(10), pkts(10), clock.at(102)),
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::SavedSetNotGranted,
    );
    assert_eq!((t.cwnd, t.ssthresh), (None, None));
    assert_eq!(cr.window(), None);
    // A second answer changes nothing.
    assert_eq!(cr.on_claim(true, pkts(10), 0, clock.at(103)), None);
}

#[test]
fn a_limited_jump_goes_to_the_limit_and_paces_over_it() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    assert!(cr.limit_jump(pkts(40)));
    // A limit above the current jump window changes nothing.
    assert!(!cr.limit_jump(pkts(60)));
    assert_eq!(cr.jump_window(), pkts(40));
    let t = assert_change(
        ready_to_jump(&mut cr, &clock),
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Trigger::CongestionWindowLimited,
    );
    assert_eq!(t.cwnd, Some(pkts(40)));
    // The saved set itself is unchanged: only the jump is lowered.
    assert_eq!(t.saved, saved(200));
    // Paced over the lowered window: 40 packets in the 100 ms RTT.
    assert_eq!(cr.pacing_rate(), Some(480_000));
    // While unvalidated the window may go lower, never below twice the
    // flight the jump started from (the initial window here): what slow
    // start would have sent in the round.
    assert!(cr.limit_jump(pkts(30)));
    assert_eq!(cr.window(), Some(WindowControl::Fixed(pkts(30))));
    assert_eq!(cr.pacing_rate(), Some(360_000));
    assert!(cr.limit_jump(pkts(1)));
    assert_eq!(cr.window(), Some(WindowControl::Fixed(pkts(20))));
    assert!(!cr.limit_jump(0));
}

/// A jump of 100 packets (of a saved 200), lowered to `limit` if any before
/// it began, sent in full and being validated; the first ACK of it (26
/// packets, the path keeping up) came with `smoothed_rtt`. Returns the
/// state and the jump's window in packets.
fn validating_after_the_first_ack(
    limit: Option<usize>,
    smoothed_rtt: Duration,
    clock: &Clock,
) -> (CarefulResume, usize) {
    let mut cr = CarefulResume::new(config(), saved(200));
    if let Some(limit) = limit {
        assert!(cr.limit_jump(pkts(limit)));
    }
    let window = limit.unwrap_or(100);
    ready_to_jump(&mut cr, clock).expect("the jump");
    send_quietly(&mut cr, 10..=(window as u64 - 2), pkts(10), clock.at(110));
    let t = cr.on_packet_sent(&sent(window as u64 - 1, pkts(window), true, clock.at(110)));
    assert_eq!(t.map(|t| t.to), Some(Phase::Validating));
    // The path delivers the jump at its pace: no slower rate is shown.
    let first = Ack {
        smoothed_rtt,
        ..ack(Some(25), pkts(26), pkts(window - 26), RTT, clock.at(201))
    };
    assert_eq!(cr.on_ack(&first), None);
    (cr, window)
}

/// A jump lowered to `limit` of its 100 packets (saved: 200), sent and
/// then validated by two ACKs, the first reporting a smoothed RTT of
/// `earlier_rtt`, the last `smoothed_rtt`; returns the ssthresh slow start
/// goes on to.
fn ssthresh_after_a_lowered_jump_with(
    limit: Option<usize>,
    earlier_rtt: Duration,
    smoothed_rtt: Duration,
) -> Option<usize> {
    let clock = Clock::new();
    let (mut cr, window) = validating_after_the_first_ack(limit, earlier_rtt, &clock);
    let last = Ack {
        smoothed_rtt,
        ..ack(
            Some(window as u64 - 1),
            pkts(window - 26),
            0,
            RTT,
            clock.at(211),
        )
    };
    let t = assert_change(
        cr.on_ack(&last),
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
    );
    assert_eq!(t.pipesize, pkts(10 + window));
    t.ssthresh
}

fn ssthresh_after_a_lowered_jump(limit: Option<usize>, smoothed_rtt: Duration) -> Option<usize> {
    ssthresh_after_a_lowered_jump_with(limit, RTT, smoothed_rtt)
}

#[test]
fn a_lowered_jump_lowers_slow_start_after_it_only_while_the_rtt_shows_a_queue() {
    // Lowered to 40 of 100 packets, and the smoothed RTT 20 ms above the
    // minimum (HyStart++'s threshold at 100 ms is 12.5 ms): other jumps
    // fill the path, and this connection's share of it is what it
    // validated, so slow start ends at once: ssthresh is PipeSize, the 40
    // packets of the jump and the 10 before them.
    let queue = RTT + Duration::from_millis(20);
    assert_eq!(
        ssthresh_after_a_lowered_jump(Some(40), queue),
        Some(pkts(50))
    );
    // At the threshold a queue shows; just under it the path has room: the
    // whole saved capacity.
    let at = RTT + Duration::from_micros(12_500);
    assert_eq!(ssthresh_after_a_lowered_jump(Some(40), at), Some(pkts(50)));
    let under = RTT + Duration::from_micros(12_499);
    assert_eq!(
        ssthresh_after_a_lowered_jump(Some(40), under),
        Some(pkts(200))
    );
    // A queue the jump met earlier counts too, though the validating ACK
    // came when it had drained (others' rounds leave gaps).
    assert_eq!(
        ssthresh_after_a_lowered_jump_with(Some(40), queue, RTT),
        Some(pkts(50))
    );
    // A jump made in full is never held back, queue or not.
    assert_eq!(ssthresh_after_a_lowered_jump(None, queue), Some(pkts(200)));
}

/// A jump made in full that others join while it is being validated (the
/// budget would lower it now) shares the path as a lowered jump does: with
/// a queue, slow start ends at PipeSize. The window itself no longer
/// changes.
#[test]
fn a_full_jump_that_others_join_while_it_is_validated_counts_as_lowered() {
    let validated_after = |budget: Option<usize>| {
        let clock = Clock::new();
        let (mut cr, window) = validating_after_the_first_ack(None, RTT, &clock);
        if let Some(limit) = budget {
            assert!(!cr.limit_jump(pkts(limit)));
            assert_eq!(cr.jump_window(), pkts(100));
        }
        let last = Ack {
            smoothed_rtt: RTT + Duration::from_millis(20),
            ..ack(
                Some(window as u64 - 1),
                pkts(window - 26),
                0,
                RTT,
                clock.at(211),
            )
        };
        let t = cr.on_ack(&last).expect("validated");
        (t.to, t.ssthresh)
    };
    assert_eq!(validated_after(Some(40)), (Phase::Normal, Some(pkts(110))));
    // A limit at or above the jump says nothing: alone, the saved capacity.
    assert_eq!(validated_after(Some(100)), (Phase::Normal, Some(pkts(200))));
    assert_eq!(validated_after(None), (Phase::Normal, Some(pkts(200))));
}

/// A lowered jump that meets a queue while it is being validated ends slow
/// start there, at PipeSize: the crowd's jumps fill the path, and doubling
/// on until the validation a round later would overfill its queue (issue
/// 27's probe on real sockets lost 100-181 packets so). A jump made in
/// full, or one that meets no queue, slow-starts on.
#[test]
fn a_lowered_jump_that_meets_a_queue_ends_slow_start_while_it_is_validated() {
    let limit = |jump_limit, smoothed_rtt| {
        let clock = Clock::new();
        let (mut cr, _) = validating_after_the_first_ack(jump_limit, smoothed_rtt, &clock);
        cr.take_slow_start_limit()
    };
    let queue = RTT + Duration::from_millis(20);
    // The 10 packets before the jump and the 26 the ACK acknowledged.
    assert_eq!(limit(Some(40), queue), Some(pkts(36)));
    assert_eq!(limit(Some(40), RTT), None);
    assert_eq!(limit(None, queue), None);
}

#[test]
fn a_jump_lowered_while_unvalidated_is_judged_at_its_lowered_rate() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    ready_to_jump(&mut cr, &clock).expect("the jump");
    // Lowered from 100 to 40 packets after the jump began: paced at 40
    // packets per 100 ms RTT from now on.
    assert!(cr.limit_jump(pkts(40)));
    send_quietly(&mut cr, 10..=38, pkts(10), clock.at(110));
    let t = cr.on_packet_sent(&sent(39, pkts(40), true, clock.at(110)));
    assert_eq!(t.map(|t| t.to), Some(Phase::Validating));
    // The path acknowledges the jump at the lowered pace (29 packets in
    // 75 ms): it is not slower than the jump was sent, so slow start goes
    // on to the saved capacity. Judged against the full jump's pace (100
    // packets per RTT) it would look path-limited, and slow start would
    // end at the 39 packets that rate carries per RTT.
    assert_eq!(
        cr.on_ack(&ack(Some(10), pkts(11), pkts(29), RTT, clock.at(210))),
        None
    );
    let t = assert_change(
        cr.on_ack(&ack(Some(39), pkts(29), 0, RTT, clock.at(285))),
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
    );
    assert_eq!(t.ssthresh, Some(pkts(200)));
}

#[test]
fn a_jump_being_validated_can_no_longer_be_limited() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    ready_to_jump(&mut cr, &clock).expect("the jump");
    // Fill the jump: the last packet it allows ends Unvalidated.
    let mut pn = 10;
    while cr.phase() == Phase::Unvalidated {
        cr.on_packet_sent(&sent(pn, pkts(pn as usize + 1), true, clock.at(102)));
        pn += 1;
    }
    assert_eq!(cr.phase(), Phase::Validating);
    assert!(!cr.limit_jump(pkts(20)));
    assert_eq!(cr.jump_window(), pkts(100));
}

#[test]
fn a_jump_limited_to_the_initial_window_ends_careful_resume_without_a_jump() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    assert!(cr.limit_jump(pkts(10)));
    let t = assert_change(
        ready_to_jump(&mut cr, &clock),
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::CongestionWindowLimited,
    );
    assert_eq!((t.cwnd, t.ssthresh), (None, None));
    assert!(!cr.jumped());
    assert!(!t.saved_set_consumed);
}

/// A jump to no more than twice the window sends no more in its round than
/// slow start would without a validation: it is not made. One packet more
/// is.
#[test]
fn a_jump_to_no_more_than_twice_the_window_is_not_made() {
    let outcome = |limit: usize| {
        let clock = Clock::new();
        let mut cr = CarefulResume::new(config(), saved(200));
        assert!(cr.limit_jump(pkts(limit)));
        ready_to_jump(&mut cr, &clock).map(|t| (t.to, t.cwnd))
    };
    assert_eq!(outcome(20), Some((Phase::Normal, None)));
    assert_eq!(outcome(21), Some((Phase::Unvalidated, Some(pkts(21)))));
}

/// A minimum RTT above the saved one shows a standing queue of others'
/// data: the jump leaves room for it, the excess delay (beyond an eighth
/// of the saved RTT, jitter) times the saved rate, 2.4 MB/s here; a queue
/// of half the saved capacity leaves no jump.
#[test]
fn a_standing_queue_before_the_jump_is_left_out_of_it() {
    let jump_after_a_min_rtt_of = |micros: u64| {
        let clock = Clock::new();
        let mut cr = CarefulResume::new(config(), saved(200));
        let rtt = Duration::from_micros(micros);
        assert_eq!(cr.on_ack(&ack(None, pkts(3), 0, rtt, clock.at(100))), None);
        send_quietly_in_reconnaissance(&mut cr, &clock);
        let t = cr.on_packet_sent(&sent(9, pkts(10), true, clock.at(101)));
        t.map(|t| (t.to, t.trigger, t.cwnd))
    };
    let jump = |cwnd| Some((Phase::Unvalidated, Trigger::CongestionWindowLimited, cwnd));
    // Within 12.5 ms of the saved 100 ms: jitter, the full jump.
    assert_eq!(jump_after_a_min_rtt_of(112_500), jump(Some(pkts(100))));
    // 25 ms beyond: 60 kB, 50 packets, queued.
    assert_eq!(jump_after_a_min_rtt_of(137_500), jump(Some(pkts(50))));
    // 50 ms beyond: the queue holds half the saved capacity.
    assert_eq!(
        jump_after_a_min_rtt_of(162_500),
        Some((Phase::Normal, Trigger::CongestionWindowLimited, None))
    );
}

/// A jump lowered only for the queue its path showed before it is no share
/// of a crowd's jumps: when the RTT rises while it is validated, slow start
/// goes on to the saved capacity, as after a jump in full.
#[test]
fn a_jump_lowered_for_a_standing_queue_slow_starts_on_to_the_saved_capacity() {
    let clock = Clock::new();
    // 25 ms beyond the jitter allowance: 50 packets of others' queue.
    let queued = Duration::from_micros(137_500);
    let at = |rtt: Duration, a: Ack| Ack {
        min_rtt: queued,
        smoothed_rtt: rtt,
        ..a
    };
    let mut cr = CarefulResume::new(config(), saved(200));
    let handshake = at(queued, ack(None, pkts(3), 0, queued, clock.at(140)));
    assert_eq!(cr.on_ack(&handshake), None);
    send_quietly_in_reconnaissance(&mut cr, &clock);
    let t = cr.on_packet_sent(&sent(9, pkts(10), true, clock.at(141)));
    assert_eq!(t.and_then(|t| t.cwnd), Some(pkts(50)));
    send_quietly(&mut cr, 10..=48, pkts(10), clock.at(150));
    let t = cr.on_packet_sent(&sent(49, pkts(50), true, clock.at(150)));
    assert_eq!(t.map(|t| t.to), Some(Phase::Validating));
    // The jump's ACKs come 40 ms later than the minimum: its own queue.
    let rising = queued + Duration::from_millis(40);
    let first = at(
        rising,
        ack(Some(25), pkts(26), pkts(24), queued, clock.at(280)),
    );
    assert_eq!(cr.on_ack(&first), None);
    assert_eq!(cr.take_slow_start_limit(), None);
    let last = at(rising, ack(Some(49), pkts(24), 0, queued, clock.at(290)));
    let t = assert_change(
        cr.on_ack(&last),
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
    );
    assert_eq!(t.ssthresh, Some(pkts(200)));
}

/// The nine packets before the one that fills the initial window.
fn send_quietly_in_reconnaissance(cr: &mut CarefulResume, clock: &Clock) {
    for pn in 0..9 {
        let flight = pkts(pn as usize + 1);
        assert_eq!(
            cr.on_packet_sent(&sent(pn, flight, false, clock.at(101))),
            None
        );
    }
}

#[test]
fn an_answer_nobody_awaits_is_ignored() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    assert_eq!(cr.on_claim(false, pkts(10), 0, clock.at(50)), None);
    assert_eq!(cr.phase(), Phase::Reconnaissance);
    assert!(ready_to_jump(&mut cr, &clock).is_some_and(|t| t.to == Phase::Unvalidated));
    // Once jumped, a claim can no longer be awaited.
    cr.await_claim();
    assert!(!cr.is_claim_pending());
}

#[test]
fn paces_the_jump_window_over_the_current_rtt() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    // 120 000 bytes per 100 ms.
    assert_eq!(cr.pacing_rate(), Some(1_200_000));
    assert_eq!(cr.pacing_interval(MSS), Some(Duration::from_millis(1)));
    // The current RTT, not the saved one, sets the pace.
    let slower = ack(
        Some(0),
        MSS,
        pkts(9),
        Duration::from_millis(200),
        clock.at(102),
    );
    assert_eq!(cr.on_ack(&slower), None);
    assert_eq!(cr.pacing_rate(), Some(600_000));
    assert_eq!(cr.pacing_interval(MSS), Some(Duration::from_millis(2)));
}

#[test]
fn an_app_limited_sender_waits_in_reconnaissance() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    handshake_acked(&mut cr, &clock);
    for pn in 0..5 {
        assert_eq!(
            cr.on_packet_sent(&sent(pn, pkts(pn as usize + 1), false, clock.at(101))),
            None
        );
    }
    assert_eq!(
        cr.on_ack(&ack(Some(4), pkts(5), 0, RTT, clock.at(201))),
        None
    );
    assert_eq!(cr.phase(), Phase::Reconnaissance);
    assert_eq!(cr.window(), None);
    assert!(!cr.suppresses_growth());
    assert_eq!(cr.pacing_rate(), None);
}

#[test]
fn a_cwnd_limited_sender_waits_for_an_rtt_sample() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    assert_eq!(
        cr.on_packet_sent(&sent(0, pkts(10), true, clock.at(0))),
        None
    );
    // The ACK of that flight brings the sample and the jump.
    let t = cr.on_ack(&ack(Some(0), MSS, pkts(9), RTT, clock.at(100)));
    let t = assert_change(
        t,
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Trigger::CongestionWindowLimited,
    );
    assert_eq!(t.pipesize, pkts(9));
}

fn recon_after_rtt(min_rtt_micros: u64) -> Option<Transition> {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    assert_eq!(
        cr.on_packet_sent(&sent(0, pkts(10), true, clock.at(0))),
        None
    );
    cr.on_ack(&ack(
        Some(0),
        MSS,
        pkts(9),
        Duration::from_micros(min_rtt_micros),
        clock.at(100),
    ))
}

#[test]
fn rtt_at_or_below_half_the_saved_rtt_is_not_validated() {
    let t = assert_change(
        recon_after_rtt(50_000),
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::RttNotValidated,
    );
    assert_eq!((t.cwnd, t.ssthresh), (None, None));
    assert!(!t.saved_set_consumed);
    assert_eq!(
        recon_after_rtt(50_001).map(|t| t.to),
        Some(Phase::Unvalidated)
    );
}

#[test]
fn rtt_above_ten_times_the_saved_rtt_is_not_validated() {
    assert_change(
        recon_after_rtt(1_000_001),
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::RttNotValidated,
    );
    // At ten times the RTT is validated, but the queue it shows leaves
    // the jump no room (see `a_standing_queue_before_the_jump_is_left_out_of_it`).
    assert_change(
        recon_after_rtt(1_000_000),
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::CongestionWindowLimited,
    );
}

#[test]
fn rtt_upper_factor_is_configurable() {
    let clock = Clock::new();
    let config = config().with_rtt_upper_factor(NonZeroU32::new(2).unwrap());
    let mut cr = CarefulResume::new(config, saved(200));
    let t = cr.on_ack(&ack(
        None,
        MSS,
        0,
        Duration::from_millis(201),
        clock.at(201),
    ));
    assert_change(
        t,
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::RttNotValidated,
    );
}

#[test]
fn no_jump_when_half_the_saved_window_is_not_above_the_current_one() {
    let clock = Clock::new();
    // saved_cwnd / 2 = IW.
    let mut cr = CarefulResume::new(config(), saved(20));
    handshake_acked(&mut cr, &clock);
    let t = cr.on_packet_sent(&sent(0, pkts(10), true, clock.at(101)));
    let t = assert_change(
        t,
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::CongestionWindowLimited,
    );
    assert_eq!(t.cwnd, None);

    // Slow start already grew the window to 30 datagrams = saved_cwnd / 2.
    let mut cr = CarefulResume::new(config(), saved(60));
    handshake_acked(&mut cr, &clock);
    let mut grown = sent(0, pkts(30), true, clock.at(101));
    grown.cwnd = pkts(30);
    assert_change(
        cr.on_packet_sent(&grown),
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::CongestionWindowLimited,
    );
}

#[test]
fn max_jump_bounds_the_jump_window() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config().with_max_jump(pkts(40)), saved(200));
    handshake_acked(&mut cr, &clock);
    let t = cr
        .on_packet_sent(&sent(0, pkts(10), true, clock.at(101)))
        .unwrap();
    assert_eq!(t.cwnd, Some(pkts(40)));
    assert_eq!(cr.jump_window(), pkts(40));
}

#[test]
fn strict_initial_data_waits_for_a_further_initial_window() {
    let clock = Clock::new();
    let config = config().with_initial_data(InitialData::ExtraWindow);
    let mut cr = CarefulResume::new(config, saved(200));
    handshake_acked(&mut cr, &clock);
    assert_eq!(
        cr.on_packet_sent(&sent(9, pkts(10), true, clock.at(101))),
        None
    );
    assert_eq!(
        cr.on_ack(&ack(Some(4), pkts(5), pkts(5), RTT, clock.at(201))),
        None
    );
    assert_eq!(
        cr.on_packet_sent(&sent(10, pkts(6), true, clock.at(201))),
        None
    );
    let t = cr.on_ack(&ack(Some(9), pkts(5), pkts(1), RTT, clock.at(202)));
    assert_change(
        t,
        Phase::Reconnaissance,
        Phase::Unvalidated,
        Trigger::CongestionWindowLimited,
    );
}

#[test]
fn congestion_or_path_change_in_reconnaissance_ends_without_touching_the_window() {
    let clock = Clock::new();
    let cases = [
        (Some(Congestion::Loss), Trigger::PacketLoss),
        (Some(Congestion::EcnCe), Trigger::EcnCe),
        (None, Trigger::PathChanged),
    ];
    for (signal, trigger) in cases {
        let mut cr = CarefulResume::new(config(), saved(200));
        handshake_acked(&mut cr, &clock);
        let t = match signal {
            Some(signal) => cr.on_congestion(signal, clock.at(150)),
            None => cr.on_path_change(clock.at(150)),
        };
        let t = assert_change(t, Phase::Reconnaissance, Phase::Normal, trigger);
        assert_eq!(
            (t.cwnd, t.ssthresh, t.saved_set_consumed),
            (None, None, false)
        );
        assert!(!cr.is_active());
    }
}

#[test]
fn filling_the_jump_window_moves_to_validating() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=98, pkts(10), clock.at(110));
    // The 100th datagram in flight leaves less than one MSS of room.
    let t = assert_change(
        cr.on_packet_sent(&sent(99, pkts(100), true, clock.at(110))),
        Phase::Unvalidated,
        Phase::Validating,
        Trigger::LastUnvalidatedPacketSent,
    );
    assert_eq!(t.cwnd, Some(pkts(100)));
    assert_eq!(
        (t.first_unvalidated_pn, t.last_unvalidated_pn),
        (Some(10), Some(99))
    );
    assert_eq!(cr.window(), None);
    assert!(!cr.suppresses_growth());

    // Validating: PipeSize grows, and the ACK of pn 99 ends Careful Resume.
    assert_eq!(
        cr.on_ack(&ack(Some(50), pkts(51), pkts(49), RTT, clock.at(201))),
        None
    );
    let t = assert_change(
        cr.on_ack(&ack(Some(99), pkts(49), 0, RTT, clock.at(211))),
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
    );
    assert_eq!(t.pipesize, pkts(10 + 51 + 49));
    // Slow start goes on up to the saved capacity (200 packets), more than
    // PipeSize (110), then congestion avoidance.
    assert_eq!(
        (t.cwnd, t.ssthresh, t.saved_set_consumed),
        (None, Some(pkts(200)), false)
    );
}

/// Fills the jump window (pn 10 to 99 after pn 0 to 9) and has the path
/// acknowledge the jump's first packet at 210 ms and its last at `last_at`
/// ms; returns the transition that validates the jump.
fn validated_with_last_ack_at(last_at: u64) -> Transition {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=98, pkts(10), clock.at(110));
    let t = cr.on_packet_sent(&sent(99, pkts(100), true, clock.at(110)));
    assert_eq!(t.map(|t| t.to), Some(Phase::Validating));
    assert_eq!(
        cr.on_ack(&ack(Some(10), pkts(11), pkts(89), RTT, clock.at(210))),
        None
    );
    assert_change(
        cr.on_ack(&ack(Some(99), pkts(89), 0, RTT, clock.at(last_at))),
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
    )
}

#[test]
fn slow_start_ends_at_what_the_jumps_acks_showed_before_the_validation_ends() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=98, pkts(10), clock.at(110));
    let t = cr.on_packet_sent(&sent(99, pkts(100), true, clock.at(110)));
    assert_eq!(t.map(|t| t.to), Some(Phase::Validating));
    assert_eq!(cr.take_slow_start_limit(), None);
    // The jump's first packet acknowledged at 210 ms, then 20 more packets in
    // 40 ms (half the pacing rate of 100 packets per 100 ms): the path
    // carries 50 packets per min RTT. Slow start ends there, once.
    for (largest, at) in [(10, 210), (30, 250)] {
        let acked = if largest == 10 { pkts(11) } else { pkts(20) };
        assert_eq!(
            cr.on_ack(&ack(Some(largest), acked, pkts(69), RTT, clock.at(at))),
            None
        );
    }
    assert_eq!(cr.take_slow_start_limit(), Some(pkts(50)));
    assert_eq!(cr.take_slow_start_limit(), None);
}

#[test]
fn a_jump_the_path_delivered_slower_than_it_was_sent_sets_ssthresh_to_what_it_showed() {
    // Paced at 100 packets per 100 ms RTT, acknowledged at 89 packets in
    // 200 ms: the path carries 89 / 2 packets per min RTT, not the saved 200.
    let t = validated_with_last_ack_at(410);
    assert_eq!((t.cwnd, t.ssthresh), (None, Some(pkts(89) / 2)));
}

#[test]
fn a_jump_the_path_kept_pace_with_leaves_ssthresh_at_the_saved_capacity() {
    // 89 packets in 90 ms: the path kept up with the pacer (0.99 of its
    // rate), so the ACKs show nothing about the path beyond the jump.
    let t = validated_with_last_ack_at(300);
    assert_eq!((t.cwnd, t.ssthresh), (None, Some(pkts(200))));
}

/// Jumps to 100 datagrams (saved 200) at 101 ms and sends the jump's first
/// 50 packets (pn 10 to 59) one every 2 ms, half the pacing rate: the
/// sender ran out of window or data. The path acknowledges pn 0 to 10 at
/// 202 ms; the jump is then being validated.
fn jumped_and_sent_at_half_the_pacing_rate(clock: &Clock) -> CarefulResume {
    let mut cr = jumped(200, clock);
    for pn in 10..=59u64 {
        let at = clock.at(102 + 2 * (pn - 10));
        let flight = pkts(pn as usize + 1);
        assert_eq!(cr.on_packet_sent(&sent(pn, flight, false, at)), None);
    }
    assert_change(
        cr.on_ack(&ack(Some(10), pkts(11), pkts(49), RTT, clock.at(202))),
        Phase::Unvalidated,
        Phase::Validating,
        Trigger::FirstUnvalidatedPacketAcknowledged,
    );
    cr
}

#[test]
fn a_jump_sent_slower_than_its_pacing_rate_is_judged_by_the_rate_it_was_sent_at() {
    // Acknowledged as they were sent, one every 2 ms: the path kept up, and
    // slow start goes on to the saved capacity. (Judged against the pacing
    // rate, the ACKs read as a path carrying half of it, and slow start
    // ended at 50 packets.)
    let clock = Clock::new();
    let mut cr = jumped_and_sent_at_half_the_pacing_rate(&clock);
    assert_eq!(
        cr.on_ack(&ack(Some(30), pkts(20), pkts(29), RTT, clock.at(242))),
        None
    );
    assert_eq!(cr.take_slow_start_limit(), None);
    let t = assert_change(
        cr.on_ack(&ack(Some(59), pkts(29), 0, RTT, clock.at(300))),
        Phase::Validating,
        Phase::Normal,
        Trigger::LastUnvalidatedPacketAcknowledged,
    );
    assert_eq!(t.ssthresh, Some(pkts(200)));
}

#[test]
fn a_jump_sent_slower_than_its_pacing_rate_and_delivered_slower_still_shows_the_path() {
    // Acknowledged at half the rate they were sent at (20 packets in 80
    // ms): the path carries 25 packets per min RTT.
    let clock = Clock::new();
    let mut cr = jumped_and_sent_at_half_the_pacing_rate(&clock);
    assert_eq!(
        cr.on_ack(&ack(Some(30), pkts(20), pkts(29), RTT, clock.at(282))),
        None
    );
    assert_eq!(cr.take_slow_start_limit(), Some(pkts(25)));
}

#[test]
fn acknowledging_the_first_unvalidated_packet_moves_to_validating() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=49, pkts(10), clock.at(110));
    assert_eq!(
        cr.on_ack(&ack(Some(9), pkts(10), pkts(40), RTT, clock.at(200))),
        None
    );
    let t = assert_change(
        cr.on_ack(&ack(Some(10), MSS, pkts(39), RTT, clock.at(201))),
        Phase::Unvalidated,
        Phase::Validating,
        Trigger::FirstUnvalidatedPacketAcknowledged,
    );
    assert_eq!(t.pipesize, pkts(21));
    assert_eq!(t.cwnd, Some(pkts(39)));
    assert_eq!(t.last_unvalidated_pn, Some(49));
}

#[test]
fn more_than_one_rtt_unvalidated_moves_to_validating() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=59, pkts(10), clock.at(150));
    // Exactly one RTT after the jump is not yet "more than one RTT".
    assert_eq!(
        cr.on_ack(&ack(Some(2), pkts(3), pkts(57), RTT, clock.at(201))),
        None
    );
    let t = assert_change(
        cr.on_ack(&ack(Some(5), pkts(3), pkts(54), RTT, clock.at(202))),
        Phase::Unvalidated,
        Phase::Validating,
        Trigger::RttExceeded,
    );
    assert_eq!(t.pipesize, pkts(16));
    assert_eq!(t.cwnd, Some(pkts(54)));
    assert_eq!(t.last_unvalidated_pn, Some(59));
}

#[test]
fn rtt_exceeded_is_also_noticed_when_sending() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=29, pkts(10), clock.at(150));
    let t = cr.on_packet_sent(&sent(30, pkts(31), true, clock.at(202)));
    let t = assert_change(
        t,
        Phase::Unvalidated,
        Phase::Validating,
        Trigger::RttExceeded,
    );
    assert_eq!(t.cwnd, Some(pkts(31)));
}

#[test]
fn a_sender_that_did_not_use_the_jump_keeps_the_validated_pipesize() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=12, pkts(10), clock.at(110));
    // pn 0..=10 acked: flight 2 datagrams < IW.
    let t = assert_change(
        cr.on_ack(&ack(Some(10), pkts(11), pkts(2), RTT, clock.at(201))),
        Phase::Unvalidated,
        Phase::Normal,
        Trigger::RateLimited,
    );
    assert_eq!(t.pipesize, pkts(21));
    assert_eq!(t.cwnd, Some(pkts(21)));
}

#[test]
fn little_data_sent_while_unvalidated_never_collapses_the_window_below_iw() {
    // The seed dissertation's defect: PipeSize is tiny, the window must still
    // not drop below IW when nothing was lost.
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    assert_eq!(
        cr.on_packet_sent(&sent(0, pkts(10), true, clock.at(0))),
        None
    );
    let jump = cr
        .on_ack(&ack(Some(8), pkts(9), MSS, RTT, clock.at(100)))
        .unwrap();
    assert_eq!((jump.to, jump.pipesize), (Phase::Unvalidated, MSS));
    send_quietly(&mut cr, 1..=2, MSS, clock.at(110));
    let t = assert_change(
        cr.on_ack(&ack(Some(0), MSS, pkts(2), RTT, clock.at(201))),
        Phase::Unvalidated,
        Phase::Normal,
        Trigger::RateLimited,
    );
    assert_eq!(t.pipesize, pkts(2));
    assert_eq!(t.cwnd, Some(IW));
}

/// Jump at a flight of 10, fill the jump window (pn 10..=99), then have
/// pn 0..=52 acknowledged: PipeSize = 63 datagrams, still Validating.
fn validating_with_pipesize_63(clock: &Clock, config: Config) -> CarefulResume {
    let mut cr = jumped_with(config, 200, clock);
    send_quietly(&mut cr, 10..=98, pkts(10), clock.at(110));
    cr.on_packet_sent(&sent(99, pkts(100), true, clock.at(110)))
        .unwrap();
    assert_eq!(
        cr.on_ack(&ack(Some(52), pkts(53), pkts(47), RTT, clock.at(201))),
        None
    );
    assert_eq!((cr.phase(), cr.pipesize()), (Phase::Validating, pkts(63)));
    cr
}

#[test]
fn the_rfc_example_pipesize_63_retreats_to_31_packets() {
    let clock = Clock::new();
    let mut cr = validating_with_pipesize_63(&clock, config());
    let t = assert_change(
        cr.on_congestion(Congestion::Loss, clock.at(205)),
        Phase::Validating,
        Phase::SafeRetreat,
        Trigger::PacketLoss,
    );
    assert_eq!(t.cwnd, Some(pkts(31)));
    assert_eq!(t.pipesize, pkts(63));
    assert_eq!(
        (t.first_unvalidated_pn, t.last_unvalidated_pn),
        (Some(10), Some(99))
    );
    assert!(t.saved_set_consumed);
    assert!(cr.saved_set_consumed());
    assert_eq!(cr.window(), Some(WindowControl::Cap(pkts(31))));
    assert!(cr.suppresses_growth());

    // PipeSize tracks ACKs, the window stays frozen; further congestion is
    // part of the same retreat.
    assert_eq!(
        cr.on_ack(&ack(Some(80), pkts(20), pkts(26), RTT, clock.at(210))),
        None
    );
    assert_eq!(cr.on_congestion(Congestion::EcnCe, clock.at(211)), None);
    assert_eq!(cr.window(), Some(WindowControl::Cap(pkts(31))));
    assert_eq!(cr.pipesize(), pkts(83));

    let t = assert_change(
        cr.on_ack(&ack(Some(99), pkts(20), pkts(6), RTT, clock.at(220))),
        Phase::SafeRetreat,
        Phase::Normal,
        Trigger::ExitRecovery,
    );
    assert_eq!(t.pipesize, pkts(103));
    assert_eq!(t.ssthresh, Some(pkts(103) / 2));
    assert_eq!(t.cwnd, None);
    assert!(!cr.is_active());
    let phases: Vec<Phase> = cr.history().iter().map(|&(phase, _)| phase).collect();
    assert_eq!(
        phases,
        [
            Phase::Unvalidated,
            Phase::Validating,
            Phase::SafeRetreat,
            Phase::Normal
        ]
    );
}

#[test]
fn beta_scales_the_ssthresh_on_leaving_safe_retreat() {
    let clock = Clock::new();
    let config = config().with_beta(Beta::from_permille(700).unwrap());
    let mut cr = validating_with_pipesize_63(&clock, config);
    cr.on_congestion(Congestion::Loss, clock.at(205)).unwrap();
    let t = cr
        .on_ack(&ack(Some(99), pkts(37), 0, RTT, clock.at(220)))
        .unwrap();
    assert_eq!(t.ssthresh, Some(100 * 1200 * 7 / 10));
}

#[test]
fn ecn_ce_while_unvalidated_retreats_with_the_largest_sent_as_last_unvalidated() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=39, pkts(10), clock.at(110));
    let t = assert_change(
        cr.on_congestion(Congestion::EcnCe, clock.at(150)),
        Phase::Unvalidated,
        Phase::SafeRetreat,
        Trigger::EcnCe,
    );
    // PipeSize 10 datagrams: half is 5.
    assert_eq!(t.cwnd, Some(pkts(5)));
    assert_eq!(
        (t.first_unvalidated_pn, t.last_unvalidated_pn),
        (Some(10), Some(39))
    );
    assert_eq!(
        cr.on_ack(&ack(Some(38), pkts(39), MSS, RTT, clock.at(200))),
        None
    );
    let t = cr.on_ack(&ack(Some(39), MSS, 0, RTT, clock.at(201)));
    assert_change(t, Phase::SafeRetreat, Phase::Normal, Trigger::ExitRecovery);
}

#[test]
fn safe_retreat_never_goes_below_two_datagrams() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    assert_eq!(
        cr.on_packet_sent(&sent(0, pkts(10), true, clock.at(0))),
        None
    );
    cr.on_ack(&ack(Some(6), pkts(7), pkts(3), RTT, clock.at(100)))
        .unwrap();
    let t = cr.on_congestion(Congestion::Loss, clock.at(101)).unwrap();
    assert_eq!(
        (t.to, t.pipesize, t.cwnd),
        (Phase::SafeRetreat, pkts(3), Some(pkts(2)))
    );
}

#[test]
fn a_path_change_after_the_jump_retreats() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    let t = cr.on_path_change(clock.at(120));
    let t = assert_change(
        t,
        Phase::Unvalidated,
        Phase::SafeRetreat,
        Trigger::PathChanged,
    );
    assert!(t.saved_set_consumed);
    assert_eq!(t.last_unvalidated_pn, Some(9));
}

#[test]
fn an_rtt_above_ten_times_the_saved_rtt_while_unvalidated_is_a_path_change() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=39, pkts(10), clock.at(110));
    // Exactly ten times the saved 100 ms is still the saved path.
    let ten_times = Duration::from_millis(1000);
    assert_eq!(
        cr.on_ack(&ack(Some(2), pkts(3), pkts(37), ten_times, clock.at(150))),
        None
    );
    let beyond = ten_times + Duration::from_micros(1);
    let t = assert_change(
        cr.on_ack(&ack(Some(5), pkts(3), pkts(34), beyond, clock.at(151))),
        Phase::Unvalidated,
        Phase::SafeRetreat,
        Trigger::PathChanged,
    );
    // PipeSize: the 10 datagrams in flight at the jump, then 6 acknowledged.
    assert_eq!(t.pipesize, pkts(16));
    assert_eq!(t.cwnd, Some(pkts(8)));
    assert!(t.saved_set_consumed);
    assert_eq!(t.last_unvalidated_pn, Some(39));
    // Safe Retreat ends as after any congestion, with ssthresh PipeSize/2.
    let t = assert_change(
        cr.on_ack(&ack(Some(39), pkts(34), 0, beyond, clock.at(400))),
        Phase::SafeRetreat,
        Phase::Normal,
        Trigger::ExitRecovery,
    );
    assert_eq!(t.ssthresh, Some(pkts(50) / 2));
}

#[test]
fn an_rtt_beyond_the_saved_path_outranks_the_validation_its_ack_brings() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    send_quietly(&mut cr, 10..=39, pkts(10), clock.at(110));
    // This ACK covers the first unvalidated packet, and more than an RTT
    // has passed: either would end Unvalidated, but the path has changed.
    let t = cr.on_ack(&ack(
        Some(10),
        pkts(11),
        pkts(29),
        Duration::from_millis(1001),
        clock.at(1200),
    ));
    assert_change(
        t,
        Phase::Unvalidated,
        Phase::SafeRetreat,
        Trigger::PathChanged,
    );
}

#[test]
fn an_rtt_beyond_the_saved_path_after_unvalidated_changes_nothing() {
    let clock = Clock::new();
    let mut cr = jumped(200, &clock);
    // The jump window is 100 datagrams: pn 99 fills it.
    send_quietly(&mut cr, 10..=98, pkts(10), clock.at(110));
    let t = cr.on_packet_sent(&sent(99, pkts(100), true, clock.at(110)));
    assert_change(
        t,
        Phase::Unvalidated,
        Phase::Validating,
        Trigger::LastUnvalidatedPacketSent,
    );
    // Validating ends on congestion or on its last packet's ACK only.
    let slow = Duration::from_millis(1001);
    assert_eq!(
        cr.on_ack(&ack(Some(20), pkts(21), pkts(79), slow, clock.at(300))),
        None
    );
    assert_eq!(cr.phase(), Phase::Validating);
}

#[test]
fn persistent_congestion_ends_careful_resume_from_any_phase() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    let t = cr.on_persistent_congestion(clock.at(10));
    let t = assert_change(
        t,
        Phase::Reconnaissance,
        Phase::Normal,
        Trigger::PersistentCongestion,
    );
    assert!(!t.saved_set_consumed);

    let mut cr = jumped(200, &clock);
    let t = cr.on_persistent_congestion(clock.at(500));
    let t = assert_change(
        t,
        Phase::Unvalidated,
        Phase::Normal,
        Trigger::PersistentCongestion,
    );
    assert_eq!(t.cwnd, None);
    assert!(t.saved_set_consumed);
}

#[test]
fn once_ended_careful_resume_never_acts_again() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    cr.on_congestion(Congestion::Loss, clock.at(10)).unwrap();
    assert!(!cr.is_active());
    assert_eq!(
        cr.on_packet_sent(&sent(0, pkts(10), true, clock.at(20))),
        None
    );
    assert_eq!(cr.on_ack(&ack(Some(0), MSS, 0, RTT, clock.at(120))), None);
    assert_eq!(cr.on_congestion(Congestion::EcnCe, clock.at(130)), None);
    assert_eq!(cr.on_path_change(clock.at(140)), None);
    assert_eq!(cr.on_persistent_congestion(clock.at(150)), None);
    assert_eq!(
        (cr.phase(), cr.window(), cr.pacing_rate()),
        (Phase::Normal, None, None)
    );
}

#[test]
fn pacing_survives_extreme_rtts_and_windows() {
    let clock = Clock::new();
    let huge = careful_resume::SavedState {
        cwnd: 1 << 41,
        rtt: Duration::from_micros(1),
    };
    let mut cr = CarefulResume::new(config(), huge);
    let tiny = Duration::from_micros(1);
    assert_eq!(
        cr.on_packet_sent(&sent(0, pkts(10), true, clock.at(0))),
        None
    );
    cr.on_ack(&ack(Some(0), MSS, pkts(9), tiny, clock.at(1)))
        .unwrap();
    assert_eq!(cr.pacing_rate(), Some((1u64 << 40) * 1_000_000));
    assert_eq!(cr.pacing_interval(1 << 40), Some(tiny));
}

#[test]
fn config_rejects_impossible_values() {
    assert_eq!(Config::new(IW, 0), Err(ConfigError::ZeroDatagramSize));
    assert_eq!(
        Config::new(2 * MSS - 1, MSS),
        Err(ConfigError::InitialWindowTooSmall)
    );
    assert!(Config::new(2 * MSS, MSS).is_ok());
    assert_eq!(Beta::from_permille(499), None);
    assert_eq!(Beta::from_permille(1001), None);
    assert_eq!(Beta::from_permille(1000).map(Beta::permille), Some(1000));
    assert_eq!(Beta::default().permille(), 500);
}

#[test]
fn phase_and_trigger_names_match_qlog() {
    let phases = [
        (Phase::Reconnaissance, "reconnaissance"),
        (Phase::Unvalidated, "unvalidated"),
        (Phase::Validating, "validating"),
        (Phase::SafeRetreat, "safe_retreat"),
        (Phase::Normal, "normal"),
    ];
    for (phase, name) in phases {
        assert_eq!(phase.as_str(), name);
    }
    let triggers = [
        (
            Trigger::CongestionWindowLimited,
            "congestion_window_limited",
        ),
        (Trigger::RttNotValidated, "rtt_not_validated"),
        (
            Trigger::LastUnvalidatedPacketSent,
            "last_unvalidated_packet_sent",
        ),
        (
            Trigger::FirstUnvalidatedPacketAcknowledged,
            "first_unvalidated_packet_acknowledged",
        ),
        (Trigger::RttExceeded, "rtt_exceeded"),
        (Trigger::RateLimited, "rate_limited"),
        (
            Trigger::LastUnvalidatedPacketAcknowledged,
            "last_unvalidated_packet_acknowledged",
        ),
        (Trigger::PathChanged, "path_changed"),
        (Trigger::PacketLoss, "packet_loss"),
        (Trigger::EcnCe, "ECN_CE"),
        (Trigger::ExitRecovery, "exit_recovery"),
        (Trigger::SavedSetNotGranted, "saved_set_not_granted"),
        (Trigger::PersistentCongestion, "persistent_congestion"),
    ];
    for (trigger, name) in triggers {
        assert_eq!(trigger.as_str(), name);
    }
}

#[test]
fn the_application_may_queue_up_to_the_jump_window_until_the_jump() {
    let clock = Clock::new();
    let mut cr = CarefulResume::new(config(), saved(200));
    cr.await_claim();
    // Before the RTT sample, while the claim is pending, at the jump: the
    // application may queue what the jump will carry.
    assert_eq!(cr.queue_window(), Some(pkts(100)));
    assert_eq!(ready_to_jump(&mut cr, &clock), None);
    assert_eq!(cr.queue_window(), Some(pkts(100)));
    cr.on_claim(true, pkts(10), pkts(10), clock.at(102))
        .expect("the jump");
    // Jumped: the window itself now allows it.
    assert_eq!(cr.queue_window(), None);

    let mut refused = CarefulResume::new(config(), saved(200));
    refused.await_claim();
    refused.on_claim(false, pkts(10), 0, clock.at(50));
    assert_eq!(refused.queue_window(), None);
}

#[test]
fn a_jump_is_unused_when_less_than_half_of_what_it_opened_was_sent() {
    let clock = Clock::new();
    // Jumped at a flight of 10 datagrams to 100: 90 opened.
    let mut scant = jumped(200, &clock);
    send_quietly(&mut scant, 10..=12, pkts(10), clock.at(110));
    assert!(!scant.jump_unused(), "not before Unvalidated is over");
    scant.on_ack(&ack(Some(10), pkts(11), pkts(2), RTT, clock.at(201)));
    assert_eq!(scant.unvalidated_sent(), pkts(3));
    assert!(scant.jump_unused());

    // 44 of 90 sent when the RTT is exceeded: unused; 45: used.
    for (last_pn, unused) in [(53, true), (54, false)] {
        let mut cr = jumped(200, &clock);
        send_quietly(&mut cr, 10..=last_pn, pkts(10), clock.at(150));
        assert_change(
            cr.on_ack(&ack(
                Some(5),
                pkts(6),
                pkts(last_pn as usize - 5),
                RTT,
                clock.at(202),
            )),
            Phase::Unvalidated,
            Phase::Validating,
            Trigger::RttExceeded,
        );
        assert_eq!(cr.jump_unused(), unused, "sent up to pn {last_pn}");
    }

    let mut filled = jumped(200, &clock);
    send_quietly(&mut filled, 10..=98, pkts(10), clock.at(110));
    filled.on_packet_sent(&sent(99, pkts(100), true, clock.at(110)));
    assert_eq!(filled.phase(), Phase::Validating);
    assert!(!filled.jump_unused());
}
