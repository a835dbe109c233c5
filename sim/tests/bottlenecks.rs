//! Careful Resume behind the bottlenecks users meet besides a drop-tail
//! queue: fq_codel, a token-bucket policer, and links whose rate and delay
//! follow a schedule (`cr_serve::bottleneck`). Each test states the target,
//! what was measured, and guards what holds; a target that misses is
//! guarded at its measured figure, with the reason.
//!
//! Simulations are slow unoptimised, so these run in release builds only
//! (`make sim-guards`); about 5 s of wall time on two cores.
#![cfg(not(debug_assertions))]

use std::time::Duration;

use cr_serve::bottleneck::{Discipline, Policer, Schedule};
use cr_serve::CongestionControl;
use cr_sim::crowd::{self, Crowd};
use cr_sim::parallel::run_parallel;
use cr_sim::units::Rate;
use cr_sim::Report;
use cr_sim::Scenario;

const CONTROLLERS: [CongestionControl; 3] = [
    CongestionControl::Cubic,
    CongestionControl::Reno,
    CongestionControl::Bbr2,
];

/// The resumed session of `scenario` and its baseline, for each scenario,
/// on the available cores.
fn resumed_and_baseline(scenarios: Vec<Scenario>) -> Vec<(Scenario, Report, Report)> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs: Vec<Scenario> = scenarios
        .iter()
        .flat_map(|s| [s.clone(), s.baseline()])
        .collect();
    let reports = run_parallel(jobs, threads, |scenario| {
        let outcome = cr_sim::run_session(&scenario, false).expect("the session runs");
        Report::of(&outcome)
    });
    let mut reports = reports.into_iter();
    scenarios
        .into_iter()
        .filter_map(|s| Some((s, reports.next()?, reports.next()?)))
        .collect()
}

/// Runs each of `scenarios` resumed and without a token, and checks that
/// the resumed second connection takes at most `at_most` times as long.
fn each_resumed_within(scenarios: Vec<Scenario>, at_most: f64) {
    for (s, resumed, baseline) in resumed_and_baseline(scenarios) {
        let ratio = second(&resumed) / second(&baseline);
        assert!(
            ratio <= at_most,
            "{} at {:?}: {ratio:.3} x as long as without a token",
            s.cc.name(),
            s.rtt
        );
    }
}

/// The second connection's completion, seconds.
fn second(report: &Report) -> f64 {
    report.connections[1]
        .completion_s
        .expect("the download completed")
}

/// 10 MiB at 50 Mbit/s and `rtt` with `cc`.
fn path(cc: CongestionControl, rtt: u64) -> Scenario {
    Scenario {
        rate: Rate::mbit(50),
        rtt: Duration::from_millis(rtt),
        size: 10 << 20,
        cc,
        ..Scenario::default()
    }
}

/// Target: behind fq_codel, one flow resumed is no slower than without a
/// token. Measured (10 MiB, 50 Mbit/s): 0.40 x (CUBIC), 0.34 x (Reno) and
/// 0.48 x (BBR2) as long at 600 ms; 0.51, 0.45 and 0.55 x at 300 ms. A
/// link without randomness gives every seed the same figure.
#[test]
fn behind_fq_codel_one_resumed_flow_is_faster_than_without_a_token() {
    let scenarios = CONTROLLERS
        .iter()
        .flat_map(|&cc| [300, 600].map(|rtt| path(cc, rtt)))
        .map(|s| Scenario {
            discipline: Discipline::FqCodel,
            ..s
        })
        .collect();
    each_resumed_within(scenarios, 0.6);
}

/// Target: behind fq_codel, a crowd of ten resuming at once is no slower
/// than without tokens in the median and the p95, and the flows share
/// fairly (Jain >= 0.9, an incumbent keeps >= 45 % of the link while a
/// jump is validated). Measured over seeds 1-10 at 50 Mbit/s, 1 MiB each,
/// CUBIC, Reno and BBR2 at 300 and 600 ms: median 0.53-0.84 x the
/// baseline's (worst seed 0.84 x), p95 0.53-0.84 x (worst 0.87 x), Jain
/// at least 0.987; beside an incumbent long download, median 0.66-0.85 x
/// (worst 0.88 x), p95 0.68-0.86 x, but 1.105 x at one seed of Reno at 300
/// ms, Jain at least 0.966. The crowd loses more (1.2-6.8 x the baseline's
/// packets in the median): CoDel drops the standing queue each jump builds
/// in its own flow's queue. Guarded here for CUBIC at 600 ms, seed 1: 0.81
/// x, 0.72 x, Jain 0.997.
///
/// The incumbent's share misses. One long download with one newcomer
/// (`cr-sim run --competing --gap 40s`, 10 MiB, 50 Mbit/s) keeps 32 % and
/// 27 % of the link through the jump (CUBIC, 300 and 600 ms), 13 % and
/// 18 % (Reno), 63 % and 36 % (BBR2). fq_codel gives the newcomer half the
/// service at once, so the incumbent's own queue grows past CoDel's 5 ms
/// and its own CoDel drops its packets; behind CoDel, CUBIC and Reno do
/// not fill a long path even alone (the incumbents carried 26-39 and 12-27
/// Mbit/s of the 50 before). The jump already sends at about half the
/// saved rate, the fair half of the link; a smaller one (RFC 9959 lets the
/// sender jump less) would leave the incumbent more while it lasts, at the
/// newcomer's cost.
#[test]
fn behind_fq_codel_a_resumed_crowd_of_ten_is_faster_and_fair() {
    let report = crowd::run(&Crowd {
        discipline: Discipline::FqCodel,
        ..Crowd::default()
    })
    .expect("the crowd runs");
    let (resume, baseline) = (&report.resume, &report.baseline);
    let median = |arm: &crowd::ArmReport| arm.median_completion_s.expect("completed");
    let p95 = |arm: &crowd::ArmReport| arm.p95_completion_s.expect("completed");
    assert_eq!(resume.engaged, 10);
    assert!(median(resume) <= median(baseline), "{report:?}");
    assert!(p95(resume) <= p95(baseline), "{report:?}");
    assert!(resume.jain_fairness.is_some_and(|j| j >= 0.9), "{report:?}");
}

/// Target: over a path whose rate grew fivefold since the saved set was
/// measured (10, then 50 Mbit/s, at 600 ms; 10 MiB), CUBIC and Reno
/// resumed finish within 0.9 x the time without a token, losing nothing.
/// The saved capacity is a fifth of the path: the round trip after the
/// validated jump comes back whole with no queue in the RTT, and slow start
/// goes on past it. Measured: 0.87 x (CUBIC) and 0.76 x (Reno), no loss;
/// with slow start ending at the saved capacity for good, 1.33 x and
/// 1.42 x. BBR2, which Careful Resume sends out of Startup at the saved
/// rate, takes 1.03 x (not guarded).
#[test]
fn over_a_path_grown_fivefold_resuming_finishes_sooner() {
    let scenarios = [CongestionControl::Cubic, CongestionControl::Reno]
        .into_iter()
        .map(|cc| Scenario {
            rate: Rate::mbit(10),
            rate2: Some(Rate::mbit(50)),
            ..path(cc, 600)
        })
        .collect();
    for (s, resumed, baseline) in resumed_and_baseline(scenarios) {
        let cc = s.cc.name();
        let ratio = second(&resumed) / second(&baseline);
        assert!(ratio <= 0.9, "{cc}: {ratio:.3} x the baseline's time");
        let lost = resumed.connections[1].packets_lost;
        assert_eq!(lost, 0, "{cc}: {lost} packets lost");
    }
}

/// Targets, behind a token-bucket policer at half the saved rate (the
/// first connection saves 50 Mbit/s x 600 ms; the second meets 25 Mbit/s
/// with a 1 MiB burst): the resumed connection retreats, loses at most
/// 1.5 x what the baseline loses, and finishes no later than 1.1 x the
/// baseline. Measured: it finishes at 0.53 x (CUBIC), 0.54 x (Reno) and
/// 0.56 x (BBR2) the baseline's time (with a 64 KiB burst 0.17, 0.41 and
/// 0.57 x).
///
/// Misses, guarded at the measured figures: it never retreats, and loses
/// 2.34 x (CUBIC), 0.94 x (Reno) and 1.36 x (BBR2) the baseline's packets.
/// The jump sends at about half the saved rate (CUBIC and Reno: half the
/// saved window paced over one RTT; BBR2 measured 24.6 Mbit/s), what the
/// policer passes: the jump is validated without a loss and Careful Resume
/// rightly ends in Normal. At a third of the saved rate with a 64 KiB burst
/// all three retreat (packet loss in Validating). The losses
/// come after it: Validating's slow start doubles the window to the saved
/// one, and the policer's bucket passes that doubling, so the round trip
/// after the validation goes out at the saved rate, twice what the policer
/// passes, before anything can tell (a policer adds no delay; its drops
/// come back a round trip later). That round comes back short, so slow
/// start never goes past the saved capacity, and the figures are those of
/// a ceiling at it. Meeting 1.5 x for CUBIC takes a window below the saved
/// one at the validation (3/4 of it: 1.28 x), which every resumed
/// connection would pay: with 0.1 % loss at 20 Mbit/s and 600 ms, Reno
/// resumed then took longer than without a token at 19 of 40 seeds.
#[test]
fn behind_a_policer_at_half_the_saved_rate_resuming_finishes_sooner() {
    let policer: Policer = "25mbit,1MiB".parse().expect("policer");
    let scenarios = CONTROLLERS
        .iter()
        .map(|&cc| Scenario {
            policer2: Some(policer),
            ..path(cc, 600)
        })
        .collect();
    for (s, resumed, baseline) in resumed_and_baseline(scenarios) {
        let cc = s.cc.name();
        let ratio = second(&resumed) / second(&baseline);
        assert!(ratio <= 1.1, "{cc}: {ratio:.3} x the baseline's time");
        let lost = |r: &Report| r.connections[1].packets_lost as f64;
        let losses = lost(&resumed) / lost(&baseline).max(1.0);
        assert!(losses <= 2.4, "{cc}: {losses:.2} x the baseline's losses");
    }
}

/// Target: on the GEO rain fade and the LEO schedule, resumed no slower
/// than without a token. Measured, 10 MiB: rain fade (50 Mbit/s, 600 ms,
/// down to 13 Mbit/s from 4.5 s) 0.58 x (CUBIC), 0.49 x (Reno), 0.70 x
/// (BBR2); LEO (100 Mbit/s, 40 ms, a handover 2 s in) 0.86, 0.88 and
/// 0.85 x. With 2 ms of jitter over ten seeds the rain fade holds at every
/// seed, LEO in the median (0.71-0.91 x) but not at every seed: CUBIC and
/// Reno were slower at 2 of 10 seeds (up to 1.6 x), as were their
/// baselines at others, around the handover.
#[test]
fn on_the_rain_fade_and_leo_schedules_resuming_is_no_slower() {
    let rain: Schedule = include_str!("../schedules/geo-rain-fade.txt")
        .parse()
        .expect("schedule");
    let leo: Schedule = include_str!("../schedules/leo-15s.txt")
        .parse()
        .expect("schedule");
    let scenarios = CONTROLLERS
        .iter()
        .flat_map(|&cc| {
            [
                Scenario {
                    schedule: Some(rain.clone()),
                    ..path(cc, 600)
                },
                Scenario {
                    rate: Rate::mbit(100),
                    rtt: Duration::from_millis(40),
                    schedule: Some(leo.clone()),
                    ..path(cc, 40)
                },
            ]
        })
        .collect();
    each_resumed_within(scenarios, 1.0);
}
