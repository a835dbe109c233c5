//! The Lua script against `ex_token::decide`, case by case: the Redis guard
//! and the in-process one must apply the same saved-set rules, and the
//! script is a second writing of them. Every record a Remote Endpoint can
//! hold (none; the same set free, claimed or revoked; another set measured
//! earlier, at the same time or later) meets every event, once through
//! `decide` and once through the script on a real redis-server; the record
//! left behind and the answer must agree. One rule is the script's own,
//! by Redis's clock: sets measured ahead of it beyond the clock skew.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cr_guard_redis::testing::redis::{self, Commands};
use cr_guard_redis::testing::RedisServer;
use cr_guard_redis::SCRIPT;
use ex_token::{
    decide, AddressPrefixes, ClaimOutcome, RemoteEndpoint, SavedSet, SetEvent, SetId, SetRecord,
    SetState, SiteId, MAX_CLOCK_SKEW,
};

/// When the set under test was measured (unix ms): the last whole second,
/// by the clock Redis reads too.
fn measured_at_ms() -> u64 {
    static AT: OnceLock<u64> = OnceLock::new();
    *AT.get_or_init(|| {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970");
        now.as_secs() * 1000
    })
}

/// The clock skew the guard allows, in milliseconds (its fifth argument).
fn skew_ms() -> u64 {
    MAX_CLOCK_SKEW.as_millis() as u64
}
/// The set under test.
const ID: SetId = SetId(0x5e7);
/// Another set of the same Remote Endpoint.
const OTHER: SetId = SetId(0x0de7);

fn the_set() -> SavedSet {
    set_measured_at(measured_at_ms())
}

/// The set under test, measured at `at_ms`.
fn set_measured_at(at_ms: u64) -> SavedSet {
    let measured_at = UNIX_EPOCH + Duration::from_millis(at_ms);
    SavedSet {
        id: ID,
        endpoint: RemoteEndpoint::new(
            SiteId(7),
            [192, 0, 2, 1].into(),
            AddressPrefixes::SAME_NETWORK,
        ),
        measured_at,
        expiry: SystemTime::now() + Duration::from_secs(3600),
    }
}

/// Every record the endpoint can hold when the event arrives.
fn records() -> Vec<Option<SetRecord>> {
    let mut records = vec![None];
    for state in [SetState::Free, SetState::Claimed, SetState::Revoked] {
        records.push(Some(SetRecord {
            id: ID,
            measured_at: measured_at_ms(),
            state,
        }));
        let at = measured_at_ms();
        for measured_at in [at - 1, at, at + 1] {
            records.push(Some(SetRecord {
                id: OTHER,
                measured_at,
                state,
            }));
        }
    }
    records
}

fn state_name(state: SetState) -> &'static str {
    match state {
        SetState::Free => "free",
        SetState::Claimed => "claimed",
        SetState::Revoked => "revoked",
    }
}

fn state_of(name: &str) -> SetState {
    match name {
        "free" => SetState::Free,
        "claimed" => SetState::Claimed,
        "revoked" => SetState::Revoked,
        other => panic!("the script wrote state {other:?}"),
    }
}

fn op_name(event: SetEvent) -> &'static str {
    match event {
        SetEvent::Minted => "mint",
        SetEvent::Claimed => "claim",
        SetEvent::Released => "release",
        SetEvent::Revoked => "revoke",
    }
}

/// The script's answer as a claim outcome; other events answer `ok`,
/// which `decide` calls `Pending`.
fn outcome_of(answer: &str) -> ClaimOutcome {
    match answer {
        "granted" => ClaimOutcome::Granted,
        "taken" => ClaimOutcome::Taken,
        "superseded" => ClaimOutcome::Superseded,
        "revoked" => ClaimOutcome::Revoked,
        "ahead" => ClaimOutcome::ClockSkew,
        "ok" => ClaimOutcome::Pending,
        other => panic!("the script answered {other:?}"),
    }
}

/// How long a stored record has left: less than the set under test's
/// lifetime, so that the test sees which expiry a record carries.
const STORED_TTL_MS: u64 = 600_000;

/// Writes `record` under `key` as the script keeps it, expiring with its
/// set.
fn store(con: &mut redis::Connection, key: &str, record: Option<SetRecord>) {
    let _: () = con.del(key).expect("DEL");
    if let Some(r) = record {
        let _: () = con
            .hset_multiple(
                key,
                &[
                    ("id", format!("{:016x}", r.id.0)),
                    ("at", r.measured_at.to_string()),
                    ("state", state_name(r.state).to_owned()),
                ],
            )
            .expect("HSET");
        let _: () = con.pexpire(key, STORED_TTL_MS as i64).expect("PEXPIRE");
    }
}

/// The record the script left under `key`.
fn load(con: &mut redis::Connection, key: &str) -> Option<SetRecord> {
    let (id, at, state): (Option<String>, Option<u64>, Option<String>) = redis::cmd("HMGET")
        .arg(key)
        .arg("id")
        .arg("at")
        .arg("state")
        .query(con)
        .expect("HMGET");
    let id = u64::from_str_radix(&id?, 16).expect("a hex set id");
    Some(SetRecord {
        id: SetId(id),
        measured_at: at.expect("at"),
        state: state_of(&state.expect("state")),
    })
}

/// Runs the script as the guard does for `event` on `set`, and returns its
/// answer.
fn run(con: &mut redis::Connection, key: &str, event: SetEvent, set: &SavedSet) -> String {
    run_with_skew(con, key, event, set, skew_ms())
}

/// [`run`] with `skew_ms` for the skew allowed.
fn run_with_skew(
    con: &mut redis::Connection,
    key: &str,
    event: SetEvent,
    set: &SavedSet,
    skew_ms: u64,
) -> String {
    let expiry_ms = set
        .expiry
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    redis::cmd("EVAL")
        .arg(SCRIPT)
        .arg(1)
        .arg(key)
        .arg(op_name(event))
        .arg(format!("{:016x}", set.id.0))
        .arg(set.measured_at_ms())
        .arg(expiry_ms)
        .arg(skew_ms)
        .query(con)
        .expect("EVAL")
}

#[test]
fn the_script_applies_decide_to_every_record_and_event() {
    let redis = RedisServer::start();
    let mut con = redis.connection();
    let set = the_set();
    let key = "cr:test:rules";
    let mut cases = 0;
    for record in records() {
        for event in [
            SetEvent::Minted,
            SetEvent::Claimed,
            SetEvent::Released,
            SetEvent::Revoked,
        ] {
            let (expected_record, expected_outcome) = decide(record, &set, event);

            store(&mut con, key, record);
            let answer = run(&mut con, key, event, &set);

            let case = format!("{event:?} on {record:?}");
            assert_eq!(outcome_of(&answer), expected_outcome, "{case}");
            assert_eq!(load(&mut con, key), expected_record, "{case}");
            // Every record expires, and one the script wrote for the set
            // under test expires with that set.
            if let Some(left) = load(&mut con, key) {
                let ttl: i64 = con.pttl(key).expect("PTTL");
                let rewritten = left.id == ID && record.is_none_or(|r| r.id != ID);
                let floor = if rewritten { STORED_TTL_MS } else { 0 };
                assert!(ttl > floor as i64, "{case}: expires in {ttl} ms");
            }
            cases += 1;
        }
    }
    assert_eq!(cases, 13 * 4);
}

/// A server whose clock runs an hour ahead of Redis's mints a set "measured"
/// an hour from now: by `decide`'s rules alone it would be its Remote
/// Endpoint's newest for two hours, and every set measured by the servers
/// whose clocks are right would be refused as superseded. The script reads
/// Redis's clock, refuses such a set beyond the skew and records no mint of
/// it; a free record dated so far ahead gives way, a claimed or revoked one
/// never does.
#[test]
fn a_set_measured_ahead_of_redis_clock_supersedes_nothing() {
    let redis = RedisServer::start();
    let mut con = redis.connection();
    let key = "cr:test:clock";
    let now = measured_at_ms();
    let hour_ahead = now + 3_600_000;
    let honest = the_set();
    let ahead = SavedSet {
        id: OTHER,
        ..set_measured_at(hour_ahead)
    };
    let record = |id: SetId, measured_at: u64, state: SetState| {
        Some(SetRecord {
            id,
            measured_at,
            state,
        })
    };

    // Its mint is not recorded, over nothing or over the honest set, and
    // its claim is refused as ahead of the clock, the record unchanged.
    for before in [None, record(ID, now, SetState::Free)] {
        store(&mut con, key, before);
        assert_eq!(run(&mut con, key, SetEvent::Minted, &ahead), "ok");
        assert_eq!(load(&mut con, key), before, "mint over {before:?}");
        assert_eq!(run(&mut con, key, SetEvent::Claimed, &ahead), "ahead");
        assert_eq!(load(&mut con, key), before, "claim over {before:?}");
    }

    // Within the skew a set is anyone's: claimed as `decide` says.
    let within = SavedSet {
        id: OTHER,
        ..set_measured_at(now + skew_ms() / 3)
    };
    store(&mut con, key, record(ID, now, SetState::Free));
    assert_eq!(run(&mut con, key, SetEvent::Claimed, &within), "granted");
    assert_eq!(
        load(&mut con, key),
        record(OTHER, now + skew_ms() / 3, SetState::Claimed)
    );

    // A free record dated an hour ahead (a mint recorded by a guard without
    // the rule: no connection used it) gives way to the honest set,
    // whatever the event.
    for (event, answer, state) in [
        (SetEvent::Claimed, "granted", SetState::Claimed),
        (SetEvent::Minted, "ok", SetState::Free),
        (SetEvent::Revoked, "ok", SetState::Revoked),
    ] {
        store(&mut con, key, record(OTHER, hour_ahead, SetState::Free));
        assert_eq!(run(&mut con, key, event, &honest), answer, "{event:?}");
        assert_eq!(load(&mut con, key), record(ID, now, state), "{event:?}");
    }
    // A claimed or revoked one stays, as `decide` says: were it replaced,
    // the set would be granted again once the clock has caught up with it.
    for state in [SetState::Claimed, SetState::Revoked] {
        let before = record(OTHER, hour_ahead, state);
        for event in [SetEvent::Claimed, SetEvent::Minted, SetEvent::Revoked] {
            store(&mut con, key, before);
            let (expected_record, expected_outcome) = decide(before, &honest, event);
            let answer = run(&mut con, key, event, &honest);
            let case = format!("{event:?} on {before:?}");
            assert_eq!(outcome_of(&answer), expected_outcome, "{case}");
            assert_eq!(load(&mut con, key), expected_record, "{case}");
        }
    }

    // A revocation of it (only a guard without the rule could have granted
    // it) is recorded as `decide` says, and keeps the set dead: refused as
    // ahead now, as revoked once Redis's clock has caught up with it (a
    // skew an hour and a minute long stands in for the hour passing).
    store(&mut con, key, record(ID, now, SetState::Free));
    assert_eq!(run(&mut con, key, SetEvent::Revoked, &ahead), "ok");
    assert_eq!(
        load(&mut con, key),
        record(OTHER, hour_ahead, SetState::Revoked)
    );
    assert_eq!(run(&mut con, key, SetEvent::Claimed, &ahead), "ahead");
    let caught_up = 3_660_000;
    let claim = run_with_skew(&mut con, key, SetEvent::Claimed, &ahead, caught_up);
    assert_eq!(claim, "revoked");
}
