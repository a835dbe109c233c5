//! Careful Resume behind the bottlenecks users meet besides a drop-tail
//! queue: fq_codel, a token-bucket policer, links whose rate and delay
//! follow a schedule, and paths that change while a resumed connection
//! jumps (`cr_sim::bottlenecks`, whose table docs/results.md quotes). Each
//! test states the target, what was measured, and guards what holds; a
//! target that misses is guarded at its measured figure, with the reason.
//!
//! Simulations are slow unoptimised, so these run in release builds only
//! (`make sim-guards`); about 40 s of wall time on two cores.
#![cfg(not(debug_assertions))]

use std::sync::OnceLock;
use std::time::Duration;

use cr_serve::bottleneck::Discipline;
use cr_serve::CongestionControl;
use cr_sim::bottlenecks::{self, BottleneckResult};
use cr_sim::crowd::{self, Crowd};
use cr_sim::crowd_seeds;
use cr_sim::report::ConnectionReport;
use cr_sim::units::Rate;
use cr_sim::Scenario;

/// Every bottleneck case with every controller, run once for all tests.
fn results() -> &'static [BottleneckResult] {
    static RESULTS: OnceLock<Vec<BottleneckResult>> = OnceLock::new();
    RESULTS.get_or_init(|| bottlenecks::run(&bottlenecks::cases()))
}

/// The results of the case called `name`, one per controller.
fn case(name: &str) -> impl Iterator<Item = &'static BottleneckResult> + '_ {
    let found: Vec<_> = results().iter().filter(|r| r.name == name).collect();
    assert_eq!(found.len(), 3, "case {name}");
    found.into_iter()
}

/// The second connection resumed, which completed.
fn second(result: &BottleneckResult) -> &ConnectionReport {
    let second = result.second().expect("the session ran");
    assert!(second.completion_s.is_some(), "{result:?}");
    second
}

/// Checks that each controller's resumed second connection in case `name`
/// takes at most `at_most` times as long as without a token.
fn each_resumed_within(name: &str, at_most: f64) {
    for r in case(name) {
        let ratio = r.versus_baseline().expect("both completed");
        assert!(
            ratio <= at_most,
            "{name}, {}: {ratio:.3} x as long as without a token",
            r.cc
        );
    }
}

/// Target: behind fq_codel, one flow resumed is no slower than without a
/// token. Measured (10 MiB, 50 Mbit/s): 0.40 x (CUBIC), 0.34 x (Reno) and
/// 0.48 x (BBR2) as long at 600 ms; 0.51, 0.42 and 0.55 x at 300 ms. (With
/// slow start past the saved capacity, off by default, CUBIC and Reno at
/// 300 ms lose 167 packets where they lose none, 0.57 and 0.47 x:
/// CoDel's short queue never shows in the RTT that would end it.) A link
/// without randomness gives every seed the same figure.
#[test]
fn behind_fq_codel_one_resumed_flow_is_faster_than_without_a_token() {
    each_resumed_within("fq_codel-300ms", 0.6);
    each_resumed_within("fq_codel-600ms", 0.6);
}

/// A crowd arm's median completion, seconds.
fn median(arm: &crowd::ArmReport) -> f64 {
    arm.median_completion_s.expect("completed")
}

/// A crowd arm's p95 completion, seconds.
fn p95(arm: &crowd::ArmReport) -> f64 {
    arm.p95_completion_s.expect("completed")
}

/// Target: behind fq_codel, a crowd of ten resuming at once is no slower
/// than without tokens in the median and the p95, and the flows share
/// fairly (Jain >= 0.9, an incumbent keeps >= 45 % of the link while a
/// jump is validated). Measured over seeds 1-10 at 50 Mbit/s, 1 MiB each,
/// alone and beside an incumbent long download: CUBIC at 300 ms median
/// 0.69-0.82 x the baseline's, p95 0.69-0.82 x; at 600 ms 0.74-0.81 x and
/// 0.71-0.87 x; BBR2 0.81-0.86 x; Reno 0.62-0.82 x and 0.59-0.76 x, but
/// one p95 at 1.04 x (300 ms beside the download, seed 8: the next test).
/// Jain at least 0.975. Losses
/// after a validation cap the window only when they are wholesale (an
/// eighth of PipeSize): counting a sixty-fourth, CoDel's few drops capped
/// a lowered jump's flow below its fair share and the 300 ms CUBIC crowds
/// were up to 1 % slower in 5 of 20. Guarded here for the crowd's defaults
/// (CUBIC, 600 ms, seed 1) and for CUBIC at 300 ms, seed 10.
/// (The incumbent's share: the test below.)
#[test]
fn behind_fq_codel_a_resumed_crowd_of_ten_is_faster_and_fair() {
    for (rtt_ms, seed) in [(600, 1), (300, 10)] {
        let report = crowd::run(&Crowd {
            discipline: Discipline::FqCodel,
            rtt: Duration::from_millis(rtt_ms),
            seed,
            ..Crowd::default()
        })
        .expect("the crowd runs");
        let (resume, baseline) = (&report.resume, &report.baseline);
        assert_eq!(resume.engaged, 10);
        assert!(median(resume) <= median(baseline), "{report:?}");
        assert!(p95(resume) <= p95(baseline), "{report:?}");
        assert!(resume.jain_fairness.is_some_and(|j| j >= 0.9), "{report:?}");
    }
}

/// The same target for Reno beside a long download at 300 ms, the one
/// crowd of the forty above whose p95 missed (seed 8, 1.044 x). A crowd of
/// ten's p95 is its slowest client, and Reno's slowest behind CoDel is the
/// client a drop halves below its fair share: at seed 8, a client whose
/// jump the budget lowered met its own queue while it was validated, ended
/// slow start there (the rule that keeps drop-tail crowds from overfilling
/// the path), and one CoDel drop halved it from 127 to 64 kB against a
/// share of about 170 kB. Over seeds 1..40 the resumed p95 is above the
/// baseline's in 4 crowds (1.001-1.048 x); over seeds 1..10 every median is
/// below (0.63-0.68 x), and every seed's clients pooled resume faster
/// (median 0.662 x, p95 0.870 x). Guarded: each seed's median, the pooled
/// median and p95, and each seed's p95 within 5 % of the baseline's.
#[test]
fn behind_fq_codel_a_reno_crowd_beside_a_download_resumes_faster_over_ten_seeds() {
    let crowd = Crowd {
        discipline: Discipline::FqCodel,
        rtt: Duration::from_millis(300),
        cc: CongestionControl::Reno,
        competing: true,
        ..Crowd::default()
    };
    let report = crowd_seeds::run(&crowd, 1..=10).expect("the crowds run");
    let summary = &report.summary;
    let below = |ratio: Option<f64>, limit: f64| ratio.is_some_and(|r| r <= limit);
    assert!(below(summary.median_ratio_max, 1.0), "{summary:?}");
    assert!(below(summary.pooled_median_ratio, 1.0), "{summary:?}");
    assert!(below(summary.pooled_p95_ratio, 1.0), "{summary:?}");
    assert!(below(summary.p95_ratio_max, 1.05), "{summary:?}");
}

/// Between the points: the same crowd on a 20 Mbit/s link at 450 ms, where
/// a client's fair share is 2 Mbit/s. Every jump, lowered by the crowd's
/// budget to about that share and paced right behind the initial window's
/// burst, meets CoDel's drops and retreats. Known miss, guarded at its
/// measured figures: over seeds 1-5 the p95 is 1.009-1.034 x the
/// baseline's, the median 0.72-1.15 x, and it loses 1.0-1.9 x the
/// baseline's packets. Before a Safe Retreat was a recovery period
/// (quiche patch 0043), a drop of a packet sent before the retreat cut
/// CUBIC again to 15-20 packets: the p95 was 1.11-1.15 x, the losses
/// 1.5-2.1 x.
#[test]
fn behind_a_slow_fq_codel_a_crowd_whose_jumps_retreat_keeps_near_its_baseline() {
    for seed in 1..=5 {
        let report = crowd::run(&Crowd {
            discipline: Discipline::FqCodel,
            rate: Rate::mbit(20),
            rtt: Duration::from_millis(450),
            seed,
            ..Crowd::default()
        })
        .expect("the crowd runs");
        let (resume, baseline) = (&report.resume, &report.baseline);
        assert_eq!(resume.retreated, 10, "seed {seed}");
        assert!(
            p95(resume) <= 1.05 * p95(baseline),
            "seed {seed}: {report:?}"
        );
        let lost = resume.lost_packets as f64 / baseline.lost_packets.max(1) as f64;
        assert!(
            lost <= 2.0,
            "seed {seed}: {lost:.2} x the baseline's losses"
        );
    }
}

/// Target: behind fq_codel, an incumbent keeps at least 45 % of the link
/// while a jump is validated (`incumbent_link_share_in_jumps`: its
/// throughput from the jump to the end of its validation over the link's
/// rate). Measured with one newcomer beside a download that ran 40 s
/// (`cr-sim crowd --clients 1 --competing --warm-up 40s --size 10MiB
/// --queue fq_codel --rate R --rtt T --cc CC`), over 20 and 100 Mbit/s x
/// 150, 300 and 600 ms: CUBIC 56-63 %, BBR2 62-73 %; at 50 Mbit/s CUBIC
/// 62 % and 54 % (300, 600 ms), BBR2 63 %. Guarded at 50 Mbit/s for both.
/// In a crowd of ten (eleven flows sharing the fq_codel) CUBIC's incumbent
/// keeps 49 %, BBR2's 71-86 %.
///
/// Reno misses where it cannot fill the link itself: behind CoDel, a Reno
/// download alone carries 6-44 Mbit/s of these links (each CoDel drop
/// halves its window, and it regains a packet per round trip), and through
/// the jump keeps 22-63 % (at 50 Mbit/s: 39 % at 300 ms, 23 % at 600 ms,
/// what it carried alone there). Over the same stretch beside a newcomer
/// without a token (the baseline arm's figure), after warm-ups of 20-50 s:
/// 46-53 % against 39-45 % through the jump at 300 ms (CoDel drops more of
/// its unpaced bursts while the jump keeps the other queue busy), 22-24 %
/// against 18-24 % at 600 ms. Paced (`--pace`), it carries more alone
/// and keeps 54 % and 40 %.
#[test]
fn behind_fq_codel_an_incumbent_keeps_its_share_while_a_jump_is_validated() {
    for cc in [CongestionControl::Cubic, CongestionControl::Bbr2] {
        for rtt_ms in [300, 600] {
            let report = crowd::run(&Crowd {
                clients: 1,
                competing: true,
                warm_up: Duration::from_secs(40),
                size: 10 << 20,
                rtt: Duration::from_millis(rtt_ms),
                cc,
                discipline: Discipline::FqCodel,
                ..Crowd::default()
            })
            .expect("the crowd runs");
            let share = report.resume.incumbent_link_share_in_jumps;
            assert!(
                share.is_some_and(|s| s >= 0.45),
                "{cc:?} {rtt_ms} ms: {share:?}"
            );
        }
    }
}

/// Target: over a path whose rate grew fivefold since the saved set was
/// measured (10, then 50 Mbit/s, at 600 ms; 10 MiB), CUBIC and Reno
/// resumed with slow start past the saved capacity (off by default) finish
/// within 0.8 x the time without a token, losing nothing.
/// The saved capacity is a fifth of the path: the round trip after the
/// validated jump comes back whole with no queue in the RTT, and slow start
/// goes on past it. Measured: 0.75 x (CUBIC and Reno), no loss (0.81 x
/// while SEARCH, reading the held round's sends without their ACKs, could
/// end that slow start as it opened: quiche patch 0044); by
/// default, slow start ending at the saved capacity, 1.33 x and 1.39 x
/// (case `grown-fivefold`: resuming is slower than not there). BBR2, which Careful Resume sends out of Startup at the saved
/// rate, takes 1.03 x (not guarded).
#[test]
fn over_a_path_grown_fivefold_resuming_with_slow_start_past_saved_finishes_sooner() {
    for r in case("grown-fivefold-past-saved").filter(|r| r.cc != "bbr2") {
        let ratio = r.versus_baseline().expect("both completed");
        assert!(ratio <= 0.8, "{}: {ratio:.3} x the baseline's time", r.cc);
        let lost = second(r).packets_lost;
        assert_eq!(lost, 0, "{}: {lost} packets lost", r.cc);
    }
}

/// Targets, behind a token-bucket policer at half the saved rate (the
/// first connection saves 50 Mbit/s x 600 ms; the second meets 25 Mbit/s
/// with a 1 MiB burst): the resumed connection retreats, loses at most
/// 1.5 x what the baseline loses, and finishes no later than 1.1 x the
/// baseline. Measured: it finishes at 0.59 x (CUBIC), 0.42 x (Reno) and
/// 0.56 x (BBR2) the baseline's time, losing 1.37 x, 1.20 x and 1.36 x its
/// packets. Validating's slow start doubles the window towards the saved
/// one, and the policer's bucket passes that doubling, so the round trip
/// after the validation goes out at twice what the policer passes before
/// its drops can come back (a policer adds no delay); the losses
/// after the validation bring the window to the capacity the jump
/// validated (CUBIC reducing from the refuted window instead lost 2.34 x,
/// through three congestion events; over policers of 20, 25 and 30 Mbit/s
/// with a 1 MiB burst at 300 and 600 ms, 0.20-1.42 x the baseline's
/// losses).
///
/// Miss: it never retreats. The jump sends at about half the saved rate
/// (CUBIC and Reno: half the saved window paced over one RTT; BBR2
/// measured 24.6 Mbit/s), what the policer passes: the jump is validated
/// without a loss and Careful Resume rightly ends in Normal. At a third of
/// the saved rate with a 64 KiB burst all three retreat (packet loss in
/// Validating). With a 64 KiB burst at half the saved rate the baseline's
/// slow start ends on the policer's first drops and it loses only 148-435
/// packets, taking 17-40 s; the resumed connection loses 2-10 x as many and
/// finishes in 0.26-0.86 x the time (results.md).
#[test]
fn behind_a_policer_at_half_the_saved_rate_resuming_finishes_sooner() {
    for r in case("policer-half") {
        let ratio = r.versus_baseline().expect("both completed");
        assert!(ratio <= 1.1, "{}: {ratio:.3} x the baseline's time", r.cc);
        let lost = |c: &ConnectionReport| c.packets_lost as f64;
        let without = r.second_without_token().expect("the baseline ran");
        let losses = lost(second(r)) / lost(without).max(1.0);
        assert!(
            losses <= 1.5,
            "{}: {losses:.2} x the baseline's losses",
            r.cc
        );
    }
}

/// Target: on the GEO rain fade and the LEO schedule, resumed no slower
/// than without a token. Measured, 10 MiB: rain fade (50 Mbit/s, 600 ms,
/// down to 13 Mbit/s from 4.5 s) 0.58 x (CUBIC and Reno), 0.70 x (BBR2);
/// LEO (100 Mbit/s, 40 ms, a handover 2 s in) 0.86, 0.86 and 0.85 x; the
/// LTE trace 0.95-0.98 x. With 2 ms of jitter over ten seeds
/// (the `leo` and `rain-fade` guards, `sim/tests/sweeps.rs`) both hold at
/// every seed.
#[test]
fn on_the_rain_fade_and_leo_schedules_resuming_is_no_slower() {
    for name in ["rain-fade", "leo", "lte"] {
        each_resumed_within(name, 1.0);
    }
}

/// Target: a rate change or a LEO reconfiguration while a jump is
/// unvalidated ends it as RFC 9959 says (loss, or its one round trip), no
/// jump outlives the change by more than one RTT, and the saved set
/// measured before the change is not what the next connection resumes
/// from. The second of three connections meets a drop from 50 to 12 Mbit/s
/// 1.2 s in (its jump is unvalidated from 0.9 s), behind a 1 x BDP queue
/// that absorbs the jump and behind a quarter BDP; or, at 100 Mbit/s and
/// 40 ms, a LEO reconfiguration to 40 Mbit/s and 60 ms 80 ms in.
///
/// Measured: every jump stops sending unvalidated data 0.29-0.46 s after
/// the drop (its last packet sent, or its round trip over) and 14-26 ms
/// after the LEO change, and the resumed connection finishes in
/// 0.37-0.83 x the time without a token (0.37-0.38 x where the LEO change
/// also ends the slow start of the connection without a token early).
/// Every controller hands on what it measured (1661-1967 kB, 200-343 kB),
/// not the 3692-3750 kB and 500 kB saved before: a queue deep enough to
/// absorb the jump hides the drop from loss, and the observer's floor test
/// (the jump in flight delivered at under three quarters of its rate)
/// withdraws the old set. (BBR2 is judged by its latest round's bandwidth:
/// its max bandwidth, a windowed maximum, still holds the rate before the
/// drop.)
///
/// Also a miss, guarded as measured: behind the quarter-BDP queue the jump
/// is validated (the drop came after half of it had passed), and slow start
/// then goes on towards the saved capacity, four times the new path's: the
/// resumed connection loses 1157 (CUBIC), 940 (Reno) and 2266 (BBR2)
/// packets where the connection without a token loses none, though it
/// still finishes first. (The losses after the validation bring a
/// window-based controller's window to the capacity the jump validated;
/// CUBIC, reducing from the grown window instead, lost 2190.)
#[test]
fn a_path_change_in_the_jump_ends_it_within_a_round_trip_and_retires_the_set() {
    let changes = [
        ("drop-in-jump", 1.2, 0.6),
        ("drop-in-jump-shallow", 1.2, 0.6),
        ("leo-in-jump", 0.08, 0.04),
    ];
    for (name, change_s, rtt_s) in changes {
        for r in case(name) {
            let second = second(r);
            let jump_sent = second
                .cr
                .phases
                .iter()
                .find(|p| p.from == Some("unvalidated"))
                .expect("the second connection jumped")
                .t_s;
            assert!(
                jump_sent - change_s <= rtt_s,
                "{name}, {}: unvalidated until {jump_sent} s",
                r.cc
            );
            let ratio = r.versus_baseline().expect("both completed");
            assert!(ratio <= 1.0, "{name}, {}: {ratio:.3} x", r.cc);
            let first = &r.resumed.as_ref().expect("ran").connections[0];
            let saved_before = first.token_left.as_ref().expect("saved").capacity_bytes;
            let next = r.handed_on_capacity().expect("the third resumed");
            assert!(
                next * 4 < saved_before * 3,
                "{name}, {}: the next connection resumed from {next} B of the {saved_before} B saved before",
                r.cc
            );
            if name == "drop-in-jump-shallow" {
                let lost = second.packets_lost;
                let limit = if r.cc == "bbr2" { 2300 } else { 1300 };
                assert!(lost <= limit, "{name}, {}: {lost} lost", r.cc);
            }
        }
    }
}

/// The table docs/results.md quotes and the README's summary of it are
/// what these cases give: `make results` writes them, and a figure edited
/// by hand or left behind fails.
#[test]
fn the_docs_quote_the_bottleneck_cases_as_they_run() {
    let blocks = cr_sim::results::bottlenecks_blocks(results());
    let docs = [
        ("docs/results.md", include_str!("../../docs/results.md")),
        ("README.md", include_str!("../../README.md")),
    ];
    for (file, doc) in docs {
        let stale = cr_sim::results::stale(doc, &blocks);
        assert!(
            stale.is_empty(),
            "{file}: {stale:?} stale; run make results"
        );
        let (_, found) = cr_sim::results::update(doc, &blocks);
        assert_eq!(found, 1, "{file} quotes one bottleneck block");
    }
}

/// 10 MiB at 50 Mbit/s and 600 ms over a one-BDP drop-tail queue, the
/// second connection's path policed as `policer2` says: the second
/// connection, with or without a token, paced or not.
fn policed_second(
    cc: CongestionControl,
    policer2: Option<&str>,
    pace: bool,
    resume: bool,
) -> ConnectionReport {
    let scenario = Scenario {
        rate: Rate::mbit(50),
        rtt: Duration::from_millis(600),
        size: 10 << 20,
        cc,
        policer2: policer2.map(|p| p.parse().expect("a valid policer")),
        pace,
        resume,
        ..Scenario::default()
    };
    let outcome = cr_sim::run_session(&scenario, false).expect("the session runs");
    let report = cr_sim::Report::of(&outcome);
    let second = report.connections[1].clone();
    assert!(second.completion_s.is_some(), "{second:?}");
    second
}

/// Pacing Reno and CUBIC (`--pace`, off by default) is for policers with
/// small buckets, whose drops unpaced slow start's bursts meet. Measured
/// behind a policer at half the saved rate with a 64 KiB bucket, 10 MiB:
/// resumed CUBIC 8.41 s unpaced, 5.61 s paced; without a token 33.6 s and
/// 10.7 s; Reno 24.0 / 6.85 s and 72.1 / 14.0 s. Guarded with a margin: a
/// paced resumed connection takes at most 3/4 of the unpaced one's time,
/// a paced one without a token at most half, and resuming still pays.
/// On the clean path the first connection is the same paced or not
/// (7.235 s, nothing lost): the pacer never makes slow start late.
#[test]
fn pacing_reno_and_cubic_passes_a_small_bucket_and_costs_a_clean_path_nothing() {
    let secs = |c: &ConnectionReport| c.completion_s.expect("completed");
    for cc in [CongestionControl::Cubic, CongestionControl::Reno] {
        let small_bucket = Some("25mbit,64KiB");
        let [resumed, paced] =
            [false, true].map(|pace| policed_second(cc, small_bucket, pace, true));
        let [without, paced_without] =
            [false, true].map(|pace| policed_second(cc, small_bucket, pace, false));
        assert!(secs(&paced) <= 0.75 * secs(&resumed), "{cc:?}: {paced:?}");
        assert!(
            secs(&paced_without) <= 0.5 * secs(&without),
            "{cc:?}: {paced_without:?}"
        );
        assert!(secs(&paced) <= 0.75 * secs(&paced_without), "{cc:?}");

        let first = |pace| {
            let scenario = Scenario {
                rate: Rate::mbit(50),
                rtt: Duration::from_millis(600),
                size: 10 << 20,
                cc,
                pace,
                ..Scenario::default()
            };
            let outcome = cr_sim::run_session(&scenario, false).expect("the session runs");
            cr_sim::Report::of(&outcome).connections[0].clone()
        };
        let [unpaced_first, paced_first] = [false, true].map(first);
        assert_eq!(paced_first.packets_lost, 0, "{cc:?}");
        assert_eq!(unpaced_first.packets_lost, 0, "{cc:?}");
        let ratio = secs(&paced_first) / secs(&unpaced_first);
        assert!((0.99..=1.01).contains(&ratio), "{cc:?}: {ratio:.3}");
    }
}
