//! The Careful Resume targets of the issue, each guarded with a margin.
//!
//! Runs are bit-identical for a seed, so each margin only needs to absorb
//! deliberate changes elsewhere (quiche patches, the CR policy), not noise;
//! every margin is stated next to the figure measured when it was set.

use std::time::Duration;

use cr_sim::choices::CongestionControl;
use cr_sim::suite;
use cr_sim::units::Rate;
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

/// quiche's initial window: 10 datagrams of the simulator's 1350 bytes.
const INITIAL_WINDOW: u64 = 13_500;

/// The completion time of an ideal first connection over `scenario`'s path:
/// a 1-RTT handshake, the request reaching the server half an RTT later, a
/// slow start from the initial window that doubles every round trip, with
/// no overhead and no overshoot, until a flight would fill the path's BDP,
/// then the link's rate; the last byte arrives half an RTT after it leaves.
/// No sender that starts from 10 packets and at most doubles per round trip
/// (slow start, BBR's STARTUP) finishes earlier.
fn ideal_slow_start_s(scenario: &Scenario) -> f64 {
    let rtt = scenario.rtt.as_secs_f64();
    let mut leaves = 1.5 * rtt;
    let mut sent = 0;
    let mut flight = INITIAL_WINDOW;
    while sent + flight < scenario.size && scenario.rate.serialisation(flight) < scenario.rtt {
        sent += flight;
        flight *= 2;
        leaves += rtt;
    }
    leaves
        + scenario
            .rate
            .serialisation(scenario.size - sent)
            .as_secs_f64()
        + rtt / 2.0
}

/// BBR2 first connections on long paths (issue 14): 3 MB at 20 Mbit/s from
/// 50 ms to 1 s ([`suite::bbr2_sweep`]), and 10 MiB at 600 ms.
///
/// Before quiche patch 0012, BBR2's min RTT kept quiche's 333 ms initial RTT
/// for 10 s and the first connection collapsed: 3 MB took 5.23 s at 400 ms
/// (1.27 x the ideal slow start of [`ideal_slow_start_s`]), 22.79 s at
/// 600 ms (3.85 x), and 10 MiB at 600 ms 28.56 s (3.21 x). Measured since:
/// 1.07 x (50 ms) rising to 1.18 x (1 s), 10 MiB 10.16 s (1.14 x). Guarded:
/// at most 1.25 x.
///
/// The targets in terms of the physical limit (2 x the limit at
/// every RTT, 1.5 x for 10 MiB at 600 ms) are out of reach for any first
/// connection starting from 10 packets: the ideal slow start itself takes
/// 2.06 x the limit at 400 ms, 2.97 x at 1 s and 1.65 x for 10 MiB at 600 ms.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "simulates 7 long-path sessions: release builds only (cargo test --release)"
)]
fn bbr2_first_connection_keeps_up_with_an_ideal_slow_start_on_long_paths() {
    let ten_mib = Scenario {
        rate: Rate::mbit(20),
        rtt: Duration::from_millis(600),
        size: 10 << 20,
        cc: CongestionControl::Bbr2,
        ..Scenario::default()
    };
    let scenarios = suite::bbr2_sweep()
        .into_iter()
        .map(|case| case.scenario)
        .chain([ten_mib]);
    for scenario in scenarios {
        let first = completion(&report(&scenario.baseline()), 0);
        let ideal = ideal_slow_start_s(&scenario);
        assert!(
            first <= 1.25 * ideal,
            "{} B at {:?}: first {first} s, ideal slow start {ideal} s",
            scenario.size,
            scenario.rtt
        );
    }
}
