//! Whole sessions of real quiche connections over the simulated link.

use std::time::Duration;
use std::time::Instant;

use cr_serve::CongestionControl;
use cr_serve::Protocol;
use cr_sim::scenario::Competing;
use cr_sim::units::Rate;
use cr_sim::Report;
use cr_sim::Scenario;

fn report(scenario: &Scenario) -> Report {
    let outcome = cr_sim::run_session(scenario, false).expect("the session runs");
    Report::of(&outcome)
}

fn completion(report: &Report, connection: usize) -> f64 {
    report.connections[connection]
        .completion_s
        .expect("the download completed")
}

#[test]
fn geo_session_completes_both_connections_above_the_physical_limit() {
    let r = report(&Scenario::default());
    assert_eq!(r.limit_s, 2.438861, "2*0.8 s + 1 MiB at 10 Mbit/s");
    for (i, c) in r.connections.iter().enumerate() {
        let done = completion(&r, i);
        assert!(done >= r.limit_s, "connection {i}: {done} s beats physics");
        assert!(done < 4.0 * r.limit_s, "connection {i}: {done} s");
        let ttfb = c.ttfb_s.expect("first byte");
        assert!(
            (1.6..done).contains(&ttfb),
            "two round trips before data: {ttfb}"
        );
        assert_eq!(c.packets_lost, 0, "1 BDP of queue, no loss: {c:?}");
        assert!(c.packets_sent > 1_048_576 / 1350, "{c:?}");
    }
}

#[test]
fn hq_interop_app_downloads_the_whole_object() {
    let r = report(&Scenario {
        app: Protocol::Hq,
        rtt: Duration::from_millis(50),
        size: 300_000,
        ..Scenario::default()
    });
    assert!(completion(&r, 0) >= r.limit_s);
    assert!(completion(&r, 1) >= r.limit_s);
}

#[test]
fn bbr2_paced_sender_fills_the_link() {
    let r = report(&Scenario {
        cc: CongestionControl::Bbr2,
        app: Protocol::Hq,
        rtt: Duration::from_millis(50),
        size: 5 << 20,
        ..Scenario::default()
    });
    let ratio = r.connections[0].ratio_to_limit.expect("completed");
    assert!(
        ratio < 1.15,
        "BBR2 at {ratio} x the limit: pacing not honoured?"
    );
}

#[test]
fn capacity_change_slows_the_second_connection() {
    let r = report(&Scenario {
        rate2: Some(Rate::mbit(3)),
        rtt: Duration::from_millis(100),
        ..Scenario::default()
    });
    let second_limit = r.connections[1].limit_s;
    assert!(second_limit > r.limit_s);
    assert!(completion(&r, 1) >= second_limit);
    assert!(completion(&r, 1) > completion(&r, 0));
}

#[test]
fn loss_window_at_the_start_delays_the_download() {
    let base = Scenario {
        rtt: Duration::from_millis(10),
        size: 2_000_000,
        ..Scenario::default()
    };
    let clean = report(&base);
    let lossy = report(&Scenario {
        loss_windows: vec!["0..1s:30%".parse().expect("window")],
        ..base
    });
    assert!(
        lossy.connections[0].packets_lost > 10,
        "{:?}",
        lossy.connections[0]
    );
    assert!(completion(&lossy, 0) > completion(&clean, 0));
}

/// Half of the first 1.5 s lost: with these seeds an HTTP/3 control or
/// QPACK stream's first bytes were lost, queued again, then acknowledged
/// in a probe's copy before they went out, and (quiche 0.30.0's bug, patch
/// 0025) that stream then held the response back until both idle timeouts:
/// the simulation ran out of events at about 66 s. Both downloads must
/// finish within seconds.
#[test]
fn a_stream_whose_lost_data_was_acknowledged_meanwhile_does_not_stall_the_response() {
    for seed in [117, 217, 1071, 1199] {
        let r = report(&Scenario {
            rate: Rate::mbit(100),
            rtt: Duration::from_millis(100),
            size: 256 << 10,
            loss_windows: vec!["0..1.5s:50%".parse().expect("window")],
            seed,
            ..Scenario::default()
        });
        for connection in 0..2 {
            let done = completion(&r, connection);
            assert!(
                done < 10.0,
                "seed {seed}, connection {connection}: {done} s"
            );
        }
    }
}

#[test]
fn competing_flow_throughput_is_measured_around_the_second_connection() {
    let r = report(&Scenario {
        rtt: Duration::from_millis(100),
        gap: Duration::from_secs(5),
        competing: Some(Competing::default()),
        ..Scenario::default()
    });
    let c = r.competing.expect("a competing flow");
    assert!(c.before_mbps > 7.0, "alone on a 10 Mbit/s link: {c:?}");
    assert!(c.during_mbps > 1.0, "still running: {c:?}");
    let kept = c.kept.expect("a ratio");
    assert!((kept - c.during_mbps / c.before_mbps).abs() < 0.01, "{c:?}");
}

#[test]
fn json_report_has_the_documented_fields() {
    let r = report(&Scenario {
        rtt: Duration::from_millis(50),
        size: 100_000,
        ..Scenario::default()
    });
    let json = serde_json::to_value(&r).expect("serialisable");
    for key in ["scenario", "limit_s", "connections", "speedup", "competing"] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    let first = &json["connections"][0];
    for key in [
        "completion_s",
        "ttfb_s",
        "goodput_mbps",
        "packets_sent",
        "packets_lost",
        "cr",
    ] {
        assert!(first.get(key).is_some(), "missing connections[0].{key}");
    }
    for key in ["engaged", "jump_cwnd", "phases", "final_phase"] {
        assert!(first["cr"].get(key).is_some(), "missing cr.{key}");
    }
    assert_eq!(json["scenario"]["rate_bps"], 10_000_000);
    assert_eq!(json["connections"].as_array().map(Vec::len), Some(2));
}

/// quiche's randomness is seeded with the scenario's, so a seed fixes every
/// byte of the report, losses included.
#[test]
fn same_seed_same_report() {
    let scenario = Scenario {
        loss: "2%".parse().expect("probability"),
        rtt: Duration::from_millis(100),
        ..Scenario::default()
    };
    let json = |r: &Report| serde_json::to_string(r).expect("serialisable");
    assert_eq!(json(&report(&scenario)), json(&report(&scenario)));
}

/// Wall time of the simulator's performance case: 10 MiB at 10 Mbit/s and
/// 600 ms, both connections of the session (target: under 1 s, release
/// build). Measured: 0.70 s for the session once quiche patch 0009 made
/// `SendBuf::emit` linear after retransmissions (3.1 s before it). The bound
/// leaves room for a loaded machine (the test shares two cores with the rest
/// of the suite) while still catching a return of the quadratic walk.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "timing is only meaningful in release builds"
)]
fn ten_mib_geo_session_simulates_in_bounded_wall_time() {
    let scenario = Scenario {
        rtt: Duration::from_millis(600),
        size: 10 << 20,
        ..Scenario::default()
    };
    let started = Instant::now();
    let r = report(&scenario);
    let session = started.elapsed();
    assert!(completion(&r, 0) > 10.0);
    assert!(
        session < Duration::from_secs(2),
        "the 10 MiB session took {session:?} of wall time"
    );
}

#[test]
fn the_server_reports_each_connection_as_cr_server_logs_it() {
    let scenario = Scenario {
        rtt: Duration::from_millis(100),
        size: 500_000,
        ..Scenario::default()
    };
    let outcome = cr_sim::run_session(&scenario, false).expect("the session runs");
    let report = Report::of(&outcome);
    let lines: Vec<_> = outcome
        .connections
        .iter()
        .map(|c| c.server_report.as_ref().expect("the server had a side"))
        .collect();
    for (line, json) in lines.iter().zip(&report.connections) {
        assert_eq!(line.protocol, Some(Protocol::H3));
        assert_eq!((line.requests, line.body_bytes), (1, 500_000));
        assert_eq!(line.packets.0 as u64, json.packets_sent);
        assert!(line.completion.is_some(), "every response acknowledged");
    }
    assert!(!lines[0].token_presented && !lines[0].engaged());
    assert!(lines[1].token_presented && lines[1].address_validated);
    assert!(lines[1].engaged(), "{}", lines[1]);
    let saved = lines[1].resume.as_ref().expect("resumed from a saved set");
    let presented = report.connections[1]
        .token_presented
        .as_ref()
        .expect("token");
    assert_eq!(saved.saved_cwnd as u64, presented.capacity_bytes);
}
