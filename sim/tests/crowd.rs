//! Flash crowds and users behind one prefix, small enough for
//! debug builds: the reports have their fields, a seed fixes them, the
//! arms do what they say. The suite's crowds themselves are guarded in
//! `targets.rs` (release builds).

use std::time::Duration;

use cr_sim::cgnat;
use cr_sim::cgnat::Cgnat;
use cr_sim::crowd;
use cr_sim::crowd::Crowd;
use cr_sim::units::Rate;

/// Three clients over 20 Mbit/s and 200 ms, 256 KiB each: every lone
/// download saves a set worth jumping to.
fn small_crowd() -> Crowd {
    Crowd {
        clients: 3,
        rate: Rate::mbit(20),
        rtt: Duration::from_millis(200),
        size: 256 << 10,
        ..Crowd::default()
    }
}

#[test]
fn the_crowd_report_has_every_field_of_the_issue() {
    let report = crowd::run(&small_crowd()).expect("the crowd runs");
    let json = serde_json::to_value(&report).expect("serialisable");
    for arm in ["resume", "baseline"] {
        for field in [
            "clients",
            "engaged",
            "retreated",
            "median_completion_s",
            "p95_completion_s",
            "max_completion_s",
            "lost_packets",
            "sent_packets",
            "jain_fairness",
            "incumbent_share",
        ] {
            assert!(json[arm].get(field).is_some(), "{arm}.{field} in {json}");
        }
        assert_eq!(json[arm]["clients"], 3);
        assert_eq!(json[arm]["completed"], 3);
        let connections = json[arm]["connections"].as_array().expect("per client");
        assert_eq!(connections.len(), 3, "{arm}");
        for connection in connections {
            assert!(connection["completion_s"].is_f64(), "{connection}");
            assert_eq!(connection["cr"]["engaged"], arm == "resume", "{connection}");
        }
        assert!(json[arm]["incumbent_share"].is_null(), "no incumbent");
    }
    let (resume, baseline) = (&report.resume, &report.baseline);
    assert_eq!((resume.presented, resume.engaged), (3, 3), "{resume:?}");
    assert_eq!(
        (baseline.presented, baseline.engaged),
        (0, 0),
        "{baseline:?}"
    );
    let median = resume.median_completion_s.expect("completed");
    assert!(median < baseline.median_completion_s.expect("completed"));
    let jain = resume.jain_fairness.expect("goodputs");
    assert!((0.0..=1.0).contains(&jain));
    assert!(report.alone.median_saved_bytes.is_some_and(|b| b > 0));
}

#[test]
fn a_seed_fixes_the_crowd() {
    let json = |c: &Crowd| serde_json::to_string(&crowd::run(c).expect("runs")).expect("json");
    let crowd = Crowd {
        clients: 2,
        spread: Duration::from_millis(300),
        ..small_crowd()
    };
    assert_eq!(json(&crowd), json(&crowd));
}

#[test]
fn resumers_caps_the_clients_that_present_tokens() {
    let crowd = Crowd {
        resumers: Some(1),
        ..small_crowd()
    };
    let report = crowd::run(&crowd).expect("the crowd runs");
    assert_eq!(report.resume.presented, 1, "{:?}", report.resume);
    assert_eq!(report.resume.engaged, 1, "{:?}", report.resume);
}

#[test]
fn users_behind_one_prefix_share_one_saved_set() {
    let cgnat = Cgnat {
        users: 4,
        downloads: 2,
        window: Duration::from_secs(20),
        rate: Rate::mbit(20),
        rtt: Duration::from_millis(200),
        size: 256 << 10,
        ..Cgnat::default()
    };
    let report = cgnat::run(&cgnat).expect("the arms run");
    let arm = |name| {
        report
            .arms
            .iter()
            .find(|a| a.arm == name)
            .expect("the arm ran")
    };
    let (baseline, shared, own) = (arm("baseline"), arm("one-set"), arm("per-address"));
    for a in &report.arms {
        assert_eq!(a.downloads, 8, "{a:?}");
    }
    assert_eq!(baseline.presented, 0);
    // Every user's second download presents the set of its first ...
    assert_eq!((shared.presented, own.presented), (4, 4));
    // ... which resumes when it is the user's own, and only when no other
    // user of the /24 measured a newer one when it is shared.
    assert_eq!(own.engaged, 4, "{own:?}");
    assert!(shared.engaged < 4, "{shared:?}");
    let refused: usize = shared.refused.values().sum();
    assert_eq!(shared.engaged + refused, 4, "{shared:?}");
    assert!(shared.refused.contains_key("superseded"), "{shared:?}");
    assert!(own.saved_vs_baseline_s > shared.saved_vs_baseline_s);
    let json = |r: &cgnat::CgnatReport| serde_json::to_string(r).expect("json");
    assert_eq!(json(&report), json(&cgnat::run(&cgnat).expect("again")));
}
