//! The Careful Resume targets of the issue, each guarded with a margin.
//!
//! Runs are bit-identical for a seed, so each margin only needs to absorb
//! deliberate changes elsewhere (quiche patches, the CR policy), not noise;
//! every margin is stated next to the figure measured when it was set.

use cr_sim::suite;
use cr_sim::Report;
use cr_sim::Scenario;

fn report(scenario: &Scenario) -> Report {
    Report::of(&cr_sim::run_session(scenario, false).expect("the session runs"))
}

fn completion(report: &Report, connection: usize) -> f64 {
    report.connections[connection]
        .completion_s
        .expect("the download completed")
}

/// The seed dissertation's case: 1 MiB at 10 Mbit/s and 800 ms RTT.
///
/// The target, at most 1.25 x the 2.44 s limit (3.05 s) and at least
/// 2 x faster than the first connection, is out of reach as RFC 9959 and the
/// project's observing policy stand: the first connection of 1 MiB never
/// leaves slow start, so the policy saves CWND/2 (about 237 kB), and the RFC
/// jumps to at most saved/2 (118 kB), a fifth of the path's 1 MB BDP. What
/// is achieved, and guarded here: first 6.60 s, resumed 4.22 s (1.73 x the
/// limit, 1.56 x faster, baseline 6.60 s). The margins: resumed at most
/// 0.7 x the first and the baseline (measured 0.64), jump 100..140 kB.
#[test]
fn resumed_1mib_geo_beats_the_first_connection_and_the_baseline() {
    let scenario = Scenario::default();
    let r = report(&scenario);
    let cr = &r.connections[1].cr;
    assert!(cr.engaged, "{cr:?}");
    let jump = cr.jump_cwnd.expect("a jump window");
    assert!((100_000..140_000).contains(&jump), "jump {jump} B");
    let resumed = completion(&r, 1);
    let first = completion(&r, 0);
    let baseline = completion(&report(&scenario.baseline()), 1);
    assert!(resumed >= r.limit_s, "{resumed} s beats physics");
    assert!(
        resumed <= 0.7 * first,
        "resumed {resumed} s, first {first} s"
    );
    assert!(
        resumed <= 0.7 * baseline,
        "resumed {resumed} s, baseline {baseline} s"
    );
}

/// 10 MiB at 800 ms, 10 Mbit/s then 3 Mbit/s ([`suite::capacity_drop`]):
/// the jump (1.33 MB) is more than the slower path's BDP plus queue
/// (300 + 300 kB), so CR must retreat, and still finish within 1.1 x the
/// baseline. Measured: resumed 34.16 s, baseline 34.93 s (0.98).
#[test]
fn capacity_drop_retreats_and_stays_within_1_1x_baseline() {
    let scenario = suite::capacity_drop().scenario;
    let resumed = report(&scenario);
    let baseline = report(&scenario.baseline());
    let cr = &resumed.connections[1].cr;
    let jump = cr.jump_cwnd.expect("a jump");
    assert!(jump > 600_000, "the jump {jump} B fits the slower path");
    assert!(
        cr.phases.iter().any(|p| p.to == "safe_retreat"),
        "no retreat: {cr:?}"
    );
    let (r, b) = (completion(&resumed, 1), completion(&baseline, 1));
    assert!(r <= 1.1 * b, "resumed {r} s, baseline {b} s");
}

/// A resumed connection jumps into a GEO link carried by a long download
/// ([`suite::competing_flow`]); the long download keeps at least half its
/// throughput from the jump until Careful Resume ends. Measured: 8.16 Mbit/s
/// before, 7.86 Mbit/s through the jump (0.96).
#[test]
fn competing_flow_keeps_half_its_throughput_through_the_jump() {
    let r = report(&suite::competing_flow().scenario);
    assert!(r.connections[1].cr.engaged, "{:?}", r.connections[1].cr);
    let c = r.competing.expect("a competing flow");
    let kept = c.kept_through_jump.expect("measured through the jump");
    assert!(kept >= 0.5, "{c:?}");
}

/// Every suite scenario, resumed against its no-resume baseline: resuming
/// is never more than 2 % slower. Measured: the worst is +0.0 % (the cases
/// where CR does not jump); the whole suite takes about 25 s of wall time on
/// two cores in release, so debug builds skip it.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "runs the whole suite: release builds only (cargo test --release)"
)]
fn resuming_is_never_more_than_2pct_slower_than_the_baseline() {
    for result in suite::run(suite::cases()) {
        let ratio = result
            .versus_baseline()
            .unwrap_or_else(|| panic!("{} failed: {result:?}", result.name));
        assert!(
            ratio <= 1.02,
            "{}: resumed/baseline = {ratio:.3}",
            result.name
        );
    }
}
