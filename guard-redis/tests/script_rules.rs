//! The Lua script against `ex_token::decide`, case by case: the Redis guard
//! and the in-process one must apply the same saved-set rules, and the
//! script is a second writing of them. Every record a Remote Endpoint can
//! hold (none; the same set free, claimed or revoked; another set measured
//! earlier, at the same time or later) meets every event, once through
//! `decide` and once through the script on a real redis-server; the record
//! left behind and the answer must agree.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cr_guard_redis::testing::redis::{self, Commands};
use cr_guard_redis::testing::RedisServer;
use cr_guard_redis::SCRIPT;
use ex_token::{
    decide, AddressPrefixes, ClaimOutcome, RemoteEndpoint, SavedSet, SetEvent, SetId, SetRecord,
    SetState, SiteId,
};

/// When the set under test was measured (unix ms, a whole second).
const MEASURED_AT_MS: u64 = 1_800_000_000_000;
/// The set under test.
const ID: SetId = SetId(0x5e7);
/// Another set of the same Remote Endpoint.
const OTHER: SetId = SetId(0x0de7);

fn the_set() -> SavedSet {
    let measured_at = UNIX_EPOCH + Duration::from_millis(MEASURED_AT_MS);
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
            measured_at: MEASURED_AT_MS,
            state,
        }));
        for measured_at in [MEASURED_AT_MS - 1, MEASURED_AT_MS, MEASURED_AT_MS + 1] {
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

#[test]
fn the_script_applies_decide_to_every_record_and_event() {
    let redis = RedisServer::start();
    let mut con = redis.connection();
    let set = the_set();
    let expiry_ms = set
        .expiry
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
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
            let answer: String = redis::cmd("EVAL")
                .arg(SCRIPT)
                .arg(1)
                .arg(key)
                .arg(op_name(event))
                .arg(format!("{:016x}", set.id.0))
                .arg(set.measured_at_ms())
                .arg(expiry_ms)
                .query(&mut con)
                .expect("EVAL");

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
