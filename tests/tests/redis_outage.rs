//! A resumed connection retreats while the fleet's Redis is down: its
//! saved set is revoked once Redis returns, and no connection resumes from
//! it meanwhile or after. Quiche connections on the virtual clock, a
//! `ResumeServer` with the Redis guard, and a real redis-server on
//! loopback (`cr_guard_redis::testing`) that the test stops and restarts
//! with its data (append-only file). Its own test binary: it installs the
//! logger.
//!
//! The outage lasts real time, not virtual: the guard keeps time by the
//! real clock (it resends a waiting revocation every
//! `RedisGuardConfig::reconnect_backoff`, repeats its error line every
//! ten seconds while revocations wait, and forgets a revocation only when
//! its set expires, an hour after its measurement). Nothing in it grows or
//! gives up with the length of an outage (no growing backoff, no deadline
//! short of the set's expiry), so an outage of a little over ten seconds,
//! which sees the resends and the repeated error line, behaves as one of
//! thirty seconds or more; the test runs in about eleven seconds.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use cr_endpoint::ex_token::{Claim, ClaimOutcome, NoResume, SavedSet, TokenGuard};
use cr_endpoint::Refusal;
use cr_guard_redis::testing::redis;
use cr_guard_redis::testing::{LogCapture, RedisServer, RedisServerOptions};
use cr_guard_redis::{RedisGuard, RedisGuardConfig};
use log::{Level, LevelFilter};
use quiche::careful_resume::Phase;
use quiche::CongestionControlAlgorithm as Cc;
use quiche_cr_tests::{lose_fifth_unvalidated, newest_token, opaque_client, Harness};

const RTT: Duration = Duration::from_millis(600);
const SIZE: usize = 2 * 1024 * 1024;
/// The guard's claim timeout: generous, so that a grant on a loaded
/// machine is not mistaken for an outage.
const CLAIM_TIMEOUT: Duration = Duration::from_secs(2);
/// The guard repeats its error line this often while revocations wait
/// (the guard's own interval); the outage outlasts it.
const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// Bounds every wait on the real clock beyond what it waits for.
const SLACK: Duration = Duration::from_secs(10);
/// What the guard logs while a revocation waits, and once none does.
const WAITING: &str = "revocation(s) of retreated saved sets not delivered yet";
const DELIVERED: &str = "every waiting revocation delivered";

/// What the Redis guard logs.
static CAPTURE: LogCapture = LogCapture::new("cr_guard_redis");

/// How many records at `level` contain `text`.
fn logged(level: Level, text: &str) -> usize {
    CAPTURE.count(level, &[text])
}

/// The Redis guard, its answer awaited as each claim starts, and every
/// claim the server made with its answer.
///
/// The harness's path runs on the virtual clock, far faster than a real
/// Redis answers: left alone, a claim would be answered after a random
/// number of virtual round trips (or after the download). Waiting for the
/// answer (within the guard's claim timeout) makes the answer arrive
/// within the round trip that needs it, as it does on a real path whose
/// round trip is far longer than a claim on the guard. Every operation is
/// the guard's own.
struct AnsweredAtOnce {
    guard: Arc<RedisGuard>,
    claims: Mutex<Vec<(SavedSet, ClaimOutcome)>>,
}

impl AnsweredAtOnce {
    /// The answers of the claims so far, and the one set they claimed.
    fn claims(&self) -> (Vec<ClaimOutcome>, SavedSet) {
        let claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        let set = claims.first().expect("a claim").0;
        assert!(claims.iter().all(|(s, _)| *s == set), "one set claimed");
        (claims.iter().map(|&(_, outcome)| outcome).collect(), set)
    }
}

impl TokenGuard for AnsweredAtOnce {
    fn start_claim(&self, set: &SavedSet, now: SystemTime) -> Claim {
        let outcome = self.guard.claim(set, now);
        let mut claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        claims.push((*set, outcome));
        Claim::answered(outcome)
    }

    fn record(&self, set: &SavedSet, now: SystemTime) {
        self.guard.record(set, now);
    }

    fn release(&self, set: &SavedSet, now: SystemTime) {
        self.guard.release(set, now);
    }

    fn revoke(&self, set: &SavedSet, now: SystemTime) {
        self.guard.revoke(set, now);
    }
}

/// Waits until `done`, on the real clock, for at most `limit`.
fn await_real(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// The guard's records in `redis`: (key, set id, state).
fn records(redis: &RedisServer) -> Vec<(String, String, String)> {
    let mut raw = redis.connection();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("cr:ep:*")
        .query(&mut raw)
        .expect("KEYS");
    keys.into_iter()
        .map(|key| {
            let (id, state): (String, String) = redis::cmd("HMGET")
                .arg(&key)
                .arg("id")
                .arg("state")
                .query(&mut raw)
                .expect("HMGET");
            (key, id, state)
        })
        .collect()
}

#[test]
fn a_set_retreated_while_redis_is_down_is_revoked_when_it_returns_and_never_resumes() {
    CAPTURE.install(LevelFilter::Info);

    let mut redis = RedisServer::start_with(RedisServerOptions { appendonly: true });
    let config = RedisGuardConfig {
        claim_timeout: CLAIM_TIMEOUT,
        ..Default::default()
    };
    let guard = Arc::new(RedisGuard::connect(&redis.url(), config).expect("the guard"));
    let server_guard = Arc::new(AnsweredAtOnce {
        guard: guard.clone(),
        claims: Mutex::default(),
    });
    // Redis expires a record at its set's expiry by its own clock: the
    // server's wall clock starts at the real now.
    let mut harness =
        Harness::with_guard_from(Cc::CUBIC, RTT, server_guard.clone(), SystemTime::now());

    // A first download mints a saved set, recorded free in Redis.
    let mut first = harness.download(opaque_client(None, 1), SIZE, |_| false);
    let token = newest_token(&mut first.client);
    await_real(SLACK, "the first set recorded", || {
        records(&redis).len() == 1
    });
    let [(key, set_id, state)] = <[_; 1]>::try_from(records(&redis)).expect("one record");
    assert_eq!(state, "free");

    // The second connection presents the token and is granted the set;
    // Redis stops as the jump goes out, and the jump's fifth packet is
    // lost: Safe Retreat, whose revocation finds Redis down.
    let mut stopped_at = None;
    let mut lose = lose_fifth_unvalidated();
    let retreated = harness.download(opaque_client(Some(&token), 2), SIZE, |server| {
        let jumping = server
            .careful_resume()
            .is_some_and(|r| r.phase() == Phase::Unvalidated);
        if jumping && stopped_at.is_none() {
            let granted = (key.clone(), set_id.clone(), "claimed".to_owned());
            assert_eq!(records(&redis), [granted]);
            redis.stop();
            stopped_at = Some(Instant::now());
        }
        lose(server)
    });
    let stopped_at = stopped_at.expect("the connection jumped");
    assert!(retreated.server.session.resume.is_ok());
    let phases = retreated.phases();
    assert_eq!(
        phases,
        [
            Phase::Unvalidated,
            Phase::Validating,
            Phase::SafeRetreat,
            Phase::Normal
        ]
    );
    assert_eq!(guard.pending_revocations(), 1);
    await_real(SLACK, "the waiting revocation logged", || {
        logged(Level::Error, WAITING) == 1
    });

    // While Redis is down, a connection presenting the token does not
    // resume (fail closed), at once and after the guard has repeated its
    // error line a log interval later; the revocation still waits.
    let meanwhile = harness.download(opaque_client(Some(&token), 3), SIZE, |_| false);
    assert_eq!(
        meanwhile.server.session.resume,
        Err(NoResume::GuardUnavailable)
    );
    assert!(!meanwhile.jumped());
    await_real(LOG_INTERVAL + SLACK, "the error line repeated", || {
        logged(Level::Error, WAITING) == 2
    });
    assert!(stopped_at.elapsed() >= LOG_INTERVAL);
    let later = harness.download(opaque_client(Some(&token), 4), SIZE, |_| false);
    assert_eq!(later.server.session.resume, Err(NoResume::GuardUnavailable));
    assert!(!later.jumped());
    assert_eq!(guard.pending_revocations(), 1);
    assert_eq!(logged(Level::Info, DELIVERED), 0);

    // Redis returns with its data (the append-only file). From then on every claim of the set is refused while the guard waits out
    // its backoff, and the first answer from Redis comes after the waiting
    // revocation, which the guard sends ahead of it in the same pipeline:
    // revoked, never granted.
    redis.restart();
    let outage = stopped_at.elapsed();
    let (_, set) = server_guard.claims();
    let mut refused_meanwhile = 0;
    let first_answer = loop {
        match guard.claim(&set, SystemTime::now()) {
            ClaimOutcome::Unavailable => refused_meanwhile += 1,
            answer => break answer,
        }
        assert!(refused_meanwhile < 500, "Redis never answered again");
        thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(first_answer, ClaimOutcome::Revoked);
    assert_eq!(guard.pending_revocations(), 0);
    assert_eq!(records(&redis), [(key, set_id, "revoked".to_owned())]);
    await_real(SLACK, "the delivery logged", || {
        logged(Level::Info, DELIVERED) == 1
    });

    // A later connection with the token is refused as revoked.
    let after = harness.download(opaque_client(Some(&token), 5), SIZE, |_| false);
    assert_eq!(after.server.session.resume, Err(NoResume::Revoked));
    assert!(!after.jumped());

    use ClaimOutcome::{Granted, Revoked, Unavailable};
    let (answers, _) = server_guard.claims();
    assert_eq!(answers, [Granted, Unavailable, Unavailable, Revoked]);
    let metrics = harness.metrics();
    assert_eq!(metrics.resumes_granted, 1);
    assert_eq!((metrics.jumps, metrics.retreats), (1, 1));
    assert_eq!(metrics.refused(Refusal::GuardUnavailable), 2);
    assert_eq!(metrics.refused(Refusal::Revoked), 1);
    eprintln!(
        "Redis was down for {outage:?}; {refused_meanwhile} claims refused after it returned"
    );
}
