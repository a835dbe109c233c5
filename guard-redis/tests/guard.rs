//! The Redis guard against a real redis-server (started per test by
//! `cr_guard_redis::testing`), and against fake servers where the point is
//! a reply no Redis would give.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cr_guard_redis::testing::redis::{self, Commands};
use cr_guard_redis::testing::{RedisServer, RedisServerOptions};
use cr_guard_redis::{record_key, RedisGuard, RedisGuardConfig};
use ex_token::{
    AddressPrefixes, ClaimOutcome, RemoteEndpoint, SavedSet, SetId, SiteId, TokenGuard,
};

use ClaimOutcome::{ClockSkew, Granted, Revoked, Superseded, Taken, Unavailable};

/// The claim timeout of the tests of faults, where claims are meant to
/// time out.
const TIMEOUT: Duration = Duration::from_millis(50);
/// Slack on top of the claim timeout for an answer to arrive (scheduling
/// on a loaded two-core machine).
const SLACK: Duration = Duration::from_millis(200);
/// The claim timeout of the tests of outcomes, where a claim timing out on
/// a busy machine would be a false failure.
const PATIENT: Duration = Duration::from_secs(2);

/// A guard whose claims time out after [`TIMEOUT`].
fn guard(url: &str) -> RedisGuard {
    RedisGuard::connect(url, config()).expect("guard")
}

fn config() -> RedisGuardConfig {
    RedisGuardConfig {
        claim_timeout: TIMEOUT,
        reconnect_backoff: Duration::from_millis(20),
        ..Default::default()
    }
}

/// A guard whose claims time out after [`PATIENT`].
fn patient(url: &str) -> RedisGuard {
    guard_with_prefix(url, "cr:ep:")
}

fn guard_with_prefix(url: &str, prefix: &str) -> RedisGuard {
    RedisGuard::connect(
        url,
        RedisGuardConfig {
            claim_timeout: PATIENT,
            key_prefix: prefix.to_owned(),
            ..config()
        },
    )
    .unwrap()
}

/// A set expiring in an hour, on a whole second (PXAT is in milliseconds).
fn expiry() -> SystemTime {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    UNIX_EPOCH + Duration::from_secs(now.as_secs() + 3600)
}

/// Set `id` of a client network of its own (10.x.y.0/24, x and y folded
/// from the id), measured an hour before `expiry`.
fn set(id: u64, expiry: SystemTime) -> SavedSet {
    let net = (id ^ id >> 16 ^ id >> 32 ^ id >> 48) & 0xffff;
    set_at(id, net, expiry - Duration::from_secs(3600), expiry)
}

/// Set `id` of network `net`, measured at `measured_at`.
fn set_at(id: u64, net: u64, measured_at: SystemTime, expiry: SystemTime) -> SavedSet {
    let ip = std::net::IpAddr::from([10, (net >> 8) as u8, net as u8, 1]);
    SavedSet {
        id: SetId(id),
        endpoint: RemoteEndpoint::new(SiteId(0), ip, AddressPrefixes::SAME_NETWORK),
        measured_at,
        expiry,
    }
}

fn claim(guard: &RedisGuard, id: u64) -> ClaimOutcome {
    guard.claim(&set(id, expiry()), SystemTime::now())
}

/// Claims `id` and asserts the answer came within the claim timeout and
/// the slack.
fn timed_claim(guard: &RedisGuard, id: u64) -> ClaimOutcome {
    let started = Instant::now();
    let outcome = claim(guard, id);
    let took = started.elapsed();
    let timeout = guard.claim_timeout();
    assert!(
        took <= timeout + SLACK,
        "claim of {id} answered {outcome:?} after {took:?}, beyond {timeout:?} + {SLACK:?}"
    );
    outcome
}

/// Claims fresh ids (from `next`) until one is granted; panics after
/// `within`.
fn claim_until_granted(guard: &RedisGuard, next: &mut u64, within: Duration) {
    let started = Instant::now();
    loop {
        *next += 1;
        if timed_claim(guard, *next) == Granted {
            return;
        }
        assert!(
            started.elapsed() < within,
            "the guard did not grant again within {within:?}"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_first_claim_is_granted_and_every_later_one_taken_across_guards() {
    let redis = RedisServer::start();
    let one = patient(&redis.url());
    let two = patient(&redis.url());
    assert_eq!(claim(&one, 1), Granted);
    assert_eq!(claim(&one, 1), Taken);
    // A second server process's view: the same Redis, its own connection.
    assert_eq!(claim(&two, 1), Taken);
    assert_eq!(claim(&two, 2), Granted);
    assert_eq!(claim(&one, 2), Taken);
}

#[test]
fn sets_of_different_networks_are_independent() {
    let redis = RedisServer::start();
    let guard = patient(&redis.url());
    // Six networks: 10.0.0.0, 10.0.1.0, 10.0.2.0, 10.255.255.0, 10.128.0.0, 10.96.66.0.
    let ids = [
        0,
        1,
        2,
        u64::MAX - 0xffff,
        0x8000_0000_0000_0000,
        0xdead_beef,
    ];
    for id in ids {
        assert_eq!(claim(&guard, id), Granted, "id {id:#x}");
    }
    for id in ids {
        assert_eq!(claim(&guard, id), Taken, "id {id:#x}");
    }
}

#[test]
fn parallel_claims_of_one_set_from_two_guards_grant_exactly_one() {
    let redis = RedisServer::start();
    let guards = [patient(&redis.url()), patient(&redis.url())];
    const SETS: u64 = 50;
    const CLAIMERS_PER_GUARD: usize = 8;
    let granted: Vec<Vec<u64>> = thread::scope(|s| {
        let handles: Vec<_> = guards
            .iter()
            .flat_map(|g| (0..CLAIMERS_PER_GUARD).map(move |_| g))
            .map(|g| {
                s.spawn(move || {
                    // All claims started before any answer is awaited, so
                    // they travel in the same pipelines as the others'.
                    let claims: Vec<_> = (0..SETS)
                        .map(|id| g.start_claim(&set(id, expiry()), SystemTime::now()))
                        .collect();
                    let mut granted = Vec::new();
                    for (id, c) in (0..SETS).zip(claims) {
                        match c.wait() {
                            Granted => granted.push(id),
                            Taken => {}
                            Unavailable => panic!("claim of {id} unavailable"),
                            other => panic!("claim of {id} answered {other:?}"),
                        }
                    }
                    granted
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for id in 0..SETS {
        let grants = granted.iter().flatten().filter(|&&g| g == id).count();
        assert_eq!(grants, 1, "set {id} granted {grants} times");
    }
}

#[test]
fn the_record_key_is_the_prefix_and_remote_endpoint_and_lives_until_the_set_expires() {
    let redis = RedisServer::start();
    let guard = guard_with_prefix(&redis.url(), "fleet-a:");
    let expiry = UNIX_EPOCH + Duration::from_millis(32_503_680_000_123); // 3000-01-01
    let id = 0x0123_4567_89ab_cdef;
    // Measured now (a set measured ahead of Redis's clock is refused).
    let set = |id, expiry| set_at(id, 0, SystemTime::now(), expiry);
    assert_eq!(guard.claim(&set(id, expiry), SystemTime::now()), Granted);

    let mut raw = redis.connection();
    let keys: Vec<String> = raw.keys("*").unwrap();
    assert_eq!(keys, ["fleet-a:0/10.0.0.0/24"]);
    assert_eq!(record_key("fleet-a:", &set(id, expiry).endpoint), keys[0]);
    let record: Vec<String> = redis::cmd("HMGET")
        .arg(&keys[0])
        .arg("id")
        .arg("state")
        .query(&mut raw)
        .unwrap();
    assert_eq!(record, ["0123456789abcdef", "claimed"]);
    let expire_ms: i64 = redis::cmd("PEXPIRETIME")
        .arg(&keys[0])
        .query(&mut raw)
        .unwrap();
    assert_eq!(expire_ms, 32_503_680_000_123);

    // A guard with another prefix is another registry.
    let other = guard_with_prefix(&redis.url(), "fleet-b:");
    assert_eq!(other.claim(&set(id, expiry), SystemTime::now()), Granted);
}

/// The state Redis holds for `set`'s Remote Endpoint, once it is
/// `expected` (writes are queued and land a little later); panics after
/// five seconds.
fn await_record(redis: &RedisServer, set: &SavedSet, expected: [&str; 2]) {
    let mut raw = redis.connection();
    let started = Instant::now();
    loop {
        let record: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(record_key("cr:ep:", &set.endpoint))
            .arg("id")
            .arg("state")
            .query(&mut raw)
            .unwrap();
        let want = expected.map(|s| Some(s.to_owned()));
        if record == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "record {record:?}, expected {expected:?}"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_newest_set_of_a_network_supersedes_the_older_across_servers() {
    let redis = RedisServer::start();
    let (a, b) = (patient(&redis.url()), patient(&redis.url()));
    let t0 = expiry() - Duration::from_secs(3600);
    let older = set_at(1, 42, t0, expiry());
    let newer = set_at(2, 42, t0 + Duration::from_secs(1), expiry());
    // Two connections of one client network, each without a token, mint
    // a set each on two servers of the fleet.
    a.record(&older, SystemTime::now());
    await_record(&redis, &older, ["0000000000000001", "free"]);
    b.record(&newer, SystemTime::now());
    await_record(&redis, &newer, ["0000000000000002", "free"]);
    // The client presents both at once: one connection resumes.
    assert_eq!(b.claim(&older, SystemTime::now()), Superseded);
    assert_eq!(a.claim(&newer, SystemTime::now()), Granted);
    assert_eq!(b.claim(&newer, SystemTime::now()), Taken);
    // A late record of the older set changes nothing.
    a.record(&older, SystemTime::now());
    assert_eq!(a.claim(&older, SystemTime::now()), Superseded);
}

#[test]
fn a_revoked_set_is_refused_by_every_server_and_a_released_one_granted_again() {
    let redis = RedisServer::start();
    let (a, b) = (patient(&redis.url()), patient(&redis.url()));
    let kept = set(5, expiry());
    assert_eq!(a.claim(&kept, SystemTime::now()), Granted);
    a.release(&kept, SystemTime::now());
    await_record(&redis, &kept, ["0000000000000005", "free"]);
    assert_eq!(b.claim(&kept, SystemTime::now()), Granted);

    let retreated = set(6, expiry());
    assert_eq!(a.claim(&retreated, SystemTime::now()), Granted);
    a.revoke(&retreated, SystemTime::now());
    await_record(&redis, &retreated, ["0000000000000006", "revoked"]);
    // A release arriving after the revocation does not revive it.
    a.release(&retreated, SystemTime::now());
    assert_eq!(b.claim(&retreated, SystemTime::now()), Revoked);
    assert_eq!(a.claim(&retreated, SystemTime::now()), Revoked);
}

#[test]
fn a_revocation_made_while_redis_is_down_lands_when_it_is_back() {
    let mut redis = RedisServer::start();
    let guard = guard(&redis.url());
    let retreated = set(8, expiry());
    redis.stop();
    guard.revoke(&retreated, SystemTime::now());
    // The guard keeps trying every backoff (20 ms here).
    thread::sleep(Duration::from_millis(100));
    redis.restart();
    await_record(&redis, &retreated, ["0000000000000008", "revoked"]);
    assert_eq!(claim(&patient(&redis.url()), 8), Revoked);
}

/// Revocations are never dropped: more than the queue holds, made while
/// Redis is down, are counted and all land once it is back. A server
/// claiming one meanwhile is refused (fail closed), and afterwards every
/// server hears it was revoked.
#[test]
fn every_revocation_made_while_redis_is_down_lands_beyond_the_queue_bound() {
    let mut redis = RedisServer::start();
    let small_queue = RedisGuardConfig {
        queue_bound: 2,
        claim_timeout: PATIENT,
        ..config()
    };
    let guard = RedisGuard::connect(&redis.url(), small_queue).unwrap();
    let retreated: Vec<SavedSet> = (30..40).map(|id| set(id, expiry())).collect();
    for set in &retreated {
        assert_eq!(guard.claim(set, SystemTime::now()), Granted);
    }
    assert_eq!(guard.pending_revocations(), 0);

    redis.stop();
    for set in &retreated {
        guard.revoke(set, SystemTime::now());
    }
    assert_eq!(guard.pending_revocations(), retreated.len());
    let meanwhile = self::guard(&redis.url());
    assert_eq!(
        meanwhile.claim(&retreated[0], SystemTime::now()),
        Unavailable
    );

    redis.restart();
    for set in &retreated {
        await_record(&redis, set, [&format!("{:016x}", set.id.0), "revoked"]);
    }
    let started = Instant::now();
    while guard.pending_revocations() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{} revocations still counted as waiting",
            guard.pending_revocations()
        );
        thread::sleep(Duration::from_millis(5));
    }
    let after = patient(&redis.url());
    for set in &retreated {
        assert_eq!(after.claim(set, SystemTime::now()), Revoked);
    }
}

/// A server whose clock runs an hour ahead mints and claims a set
/// "measured" an hour from now: Redis's clock refuses it, records none of
/// it, and the set of a server whose clock is right is granted after it,
/// on the same connection (the refusal is an answer, not a fault: a fault
/// would make the guard back off for a minute here).
#[test]
fn a_set_measured_ahead_of_redis_clock_is_refused_and_supersedes_nothing() {
    let redis = RedisServer::start();
    let config = RedisGuardConfig {
        claim_timeout: PATIENT,
        reconnect_backoff: Duration::from_secs(60),
        ..config()
    };
    let guard = RedisGuard::connect(&redis.url(), config).unwrap();
    let expiry = expiry();
    let right = set_at(40, 40, expiry - Duration::from_secs(3600), expiry);
    let fast_clock = expiry;
    let ahead = set_at(41, 40, fast_clock, fast_clock + Duration::from_secs(3600));

    guard.record(&ahead, fast_clock);
    assert_eq!(guard.claim(&ahead, fast_clock), ClockSkew);
    assert_eq!(guard.claim(&right, SystemTime::now()), Granted);
    await_record(&redis, &right, [&format!("{:016x}", 40), "claimed"]);
    assert_eq!(guard.claim(&ahead, fast_clock), ClockSkew);
}

/// The guard reads Redis's maxmemory-policy on connecting: noeviction, the
/// default, keeps every record; another policy may drop revocations.
#[test]
fn the_eviction_policy_is_read_on_connecting() {
    let redis = RedisServer::start();
    let guard = patient(&redis.url());
    assert_eq!(claim(&guard, 1), Granted);
    assert_eq!(guard.eviction_policy().as_deref(), Some("noeviction"));

    redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("allkeys-lru")
        .query::<()>(&mut redis.connection())
        .unwrap();
    let evicting = patient(&redis.url());
    assert_eq!(claim(&evicting, 2), Granted);
    assert_eq!(evicting.eviction_policy().as_deref(), Some("allkeys-lru"));
}

#[test]
fn the_url_selects_the_database_and_authenticates() {
    let redis = RedisServer::start();
    let url = format!("redis://127.0.0.1:{}", redis.port());
    assert_eq!(claim(&patient(&format!("{url}/3")), 5), Granted);
    assert_eq!(claim(&patient(&format!("{url}/3")), 5), Taken);
    // Database 0 is another registry.
    assert_eq!(claim(&patient(&format!("{url}/0")), 5), Granted);

    let mut raw = redis.connection();
    let () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("s3cret")
        .query(&mut raw)
        .unwrap();
    assert_eq!(
        claim(
            &patient(&format!("redis://:s3cret@127.0.0.1:{}/", redis.port())),
            6
        ),
        Granted
    );
    assert_eq!(
        claim(
            &patient(&format!(
                "redis://default:s3cret@127.0.0.1:{}/3",
                redis.port()
            )),
            6
        ),
        Granted
    );
    assert_eq!(
        claim(
            &patient(&format!(
                "redis://default:s3cret@127.0.0.1:{}/3",
                redis.port()
            )),
            6
        ),
        Taken
    );
    // A refused password, or none: the guard cannot record claims.
    assert_eq!(
        timed_claim(
            &guard(&format!("redis://:wrong@127.0.0.1:{}/", redis.port())),
            7
        ),
        Unavailable
    );
    assert_eq!(timed_claim(&guard(&redis.url()), 7), Unavailable);
}

#[test]
fn a_claim_is_forgotten_when_its_set_expires() {
    let redis = RedisServer::start();
    let guard = patient(&redis.url());
    let soon = SystemTime::now() + Duration::from_millis(300);
    assert_eq!(guard.claim(&set(9, soon), SystemTime::now()), Granted);
    assert_eq!(guard.claim(&set(9, soon), SystemTime::now()), Taken);
    // Once expired, the server refuses the token before it claims; the
    // guard refuses an expired set too, without asking Redis.
    let later = soon + Duration::from_millis(1);
    assert_eq!(guard.claim(&set(9, soon), later), Unavailable);
    // Redis drops the key at the expiry (bounded polling).
    let mut raw = redis.connection();
    let started = Instant::now();
    while raw
        .exists::<_, bool>(record_key("cr:ep:", &set(9, soon).endpoint))
        .unwrap()
    {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "key outlived its set"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_redis_restarted_with_appendonly_still_refuses_a_replay() {
    let mut redis = RedisServer::start_with(RedisServerOptions { appendonly: true });
    // Patient: an fsync per write can take a while on a busy disk.
    let guard = patient(&redis.url());
    assert_eq!(claim(&guard, 77), Granted);
    let pid = redis.pid();
    redis.restart();
    assert_ne!(pid, redis.pid(), "a new process");
    // The guard's connection died with the old process; it finds out on
    // the replay, connects again at once and asks the new one.
    assert_eq!(timed_claim(&guard, 77), Taken);
    // And a second server, connecting afresh, agrees.
    assert_eq!(claim(&patient(&redis.url()), 77), Taken);
}

#[test]
fn a_stopped_redis_is_unavailable_within_the_timeout_and_a_restarted_one_grants_again() {
    let mut redis = RedisServer::start();
    let guard = guard(&redis.url());
    let mut next = 1000;
    claim_until_granted(&guard, &mut next, Duration::from_secs(5));

    redis.stop();
    for _ in 0..20 {
        next += 1;
        assert_eq!(timed_claim(&guard, next), Unavailable);
    }

    redis.restart();
    claim_until_granted(&guard, &mut next, Duration::from_secs(5));
    assert_eq!(claim(&guard, next), Taken);
}

#[test]
fn a_connection_closed_while_idle_is_replaced_without_refusing_a_claim() {
    let redis = RedisServer::start();
    let guard = patient(&redis.url());
    assert_eq!(claim(&guard, 1), Granted);
    // Redis closes every client connection (as its idle timeout or a proxy
    // would); the guard's next claim goes through a new one.
    let mut raw = redis.connection();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query(&mut raw)
        .unwrap();
    assert_eq!(killed, 1, "the guard's connection");
    assert_eq!(claim(&guard, 2), Granted);
    assert_eq!(claim(&guard, 1), Taken);
}

#[test]
fn a_slow_redis_is_unavailable_within_the_timeout_then_recovers() {
    let redis = RedisServer::start();
    let guard = guard(&redis.url());
    let mut next = 2000;
    claim_until_granted(&guard, &mut next, Duration::from_secs(5));

    // Redis sleeps half a second on another connection; every claim meanwhile
    // must still be answered in time, and at least one (those sent while it
    // sleeps) Unavailable.
    let asleep = Arc::new(AtomicBool::new(true));
    let sleeper = {
        let mut raw = redis.connection();
        let asleep = asleep.clone();
        thread::spawn(move || {
            let reply: redis::RedisResult<()> =
                redis::cmd("DEBUG").arg("SLEEP").arg(0.5).query(&mut raw);
            asleep.store(false, Ordering::SeqCst);
            reply
        })
    };
    let mut unavailable = 0;
    while asleep.load(Ordering::SeqCst) {
        next += 1;
        match timed_claim(&guard, next) {
            Unavailable => unavailable += 1,
            Granted => {}
            other => panic!("claim during the sleep answered {other:?}"),
        }
    }
    sleeper.join().unwrap().expect("DEBUG SLEEP");
    assert!(unavailable > 0, "no claim was refused while Redis slept");

    claim_until_granted(&guard, &mut next, Duration::from_secs(5));
}

#[test]
fn nothing_listening_gives_unavailable_and_no_panic() {
    // A port that was free a moment ago.
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let guard = guard(&format!("redis://127.0.0.1:{port}/"));
    for id in 0..20 {
        assert_eq!(timed_claim(&guard, id), Unavailable);
    }
}

#[test]
fn a_full_queue_answers_unavailable_at_once() {
    // A server that accepts and never answers keeps the worker busy with
    // its first batch until the (patient) timeout.
    let fake = FakeRedis::start(Reply::Silence);
    let guard = RedisGuard::connect(
        &fake.url(),
        RedisGuardConfig {
            queue_bound: 2,
            claim_timeout: Duration::from_secs(1),
            ..config()
        },
    )
    .unwrap();
    let claims: Vec<_> = (0..50)
        .map(|id| guard.start_claim(&set(id, expiry()), SystemTime::now()))
        .collect();
    // The worker holds at most one batch (the queue bound) and the queue
    // another: the rest were refused before start_claim returned.
    let refused_at_once = claims.iter().filter(|c| c.outcome() == Unavailable).count();
    assert!(
        refused_at_once >= 46,
        "only {refused_at_once} refused at once"
    );
    for c in &claims {
        assert_eq!(c.wait_timeout(guard.claim_timeout() + SLACK), Unavailable);
    }
}

#[test]
fn a_whole_pipeline_out_of_time_is_refused_within_one_timeout() {
    // Many claims in one batch to a server that never answers: the batch
    // fails once, at its deadline, not once per claim.
    let fake = FakeRedis::start(Reply::Silence);
    let guard = guard(&fake.url());
    let started = Instant::now();
    let claims: Vec<_> = (0..500)
        .map(|id| guard.start_claim(&set(id, expiry()), SystemTime::now()))
        .collect();
    for c in &claims {
        assert_eq!(c.wait_timeout(TIMEOUT + SLACK), Unavailable);
    }
    let took = started.elapsed();
    assert!(
        took <= TIMEOUT + SLACK,
        "500 claims answered after {took:?}"
    );
}

#[test]
fn dropping_the_guard_answers_its_waiting_claims_and_joins_promptly() {
    let fake = FakeRedis::start(Reply::Silence);
    let guard = guard(&fake.url());
    let claims: Vec<_> = (0..10)
        .map(|id| guard.start_claim(&set(id, expiry()), SystemTime::now()))
        .collect();
    let started = Instant::now();
    drop(guard);
    assert!(
        started.elapsed() <= TIMEOUT + SLACK,
        "drop took {:?}",
        started.elapsed()
    );
    for c in claims {
        assert_eq!(c.outcome(), Unavailable);
    }
}

/// Replies a fake server gives to each script call (EVALSHA) it reads,
/// after answering the script's load with a SHA-1.
#[derive(Clone, Copy, Debug)]
enum Reply {
    /// Bytes sent once per EVALSHA.
    Each(&'static [u8]),
    /// Never answers.
    Silence,
}

/// A TCP server on loopback answering every script call it reads with a
/// fixed reply: for what no real Redis would say.
struct FakeRedis {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl FakeRedis {
    fn start(reply: Reply) -> FakeRedis {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut connections = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    if let Ok((stream, _)) = listener.accept() {
                        stream.set_nonblocking(false).unwrap();
                        stream
                            .set_read_timeout(Some(Duration::from_millis(20)))
                            .unwrap();
                        connections.push((stream, Vec::new()));
                    }
                    for (stream, seen) in &mut connections {
                        let mut buf = [0u8; 4096];
                        if let Ok(n @ 1..) = stream.read(&mut buf) {
                            seen.extend_from_slice(&buf[..n]);
                            let loads = count(seen, b"\r\nSCRIPT\r\n");
                            let calls = count(seen, b"\r\nEVALSHA\r\n");
                            seen.clear();
                            for _ in 0..loads {
                                let _ = stream.write_all(SHA_REPLY);
                            }
                            if let Reply::Each(bytes) = reply {
                                for _ in 0..calls {
                                    let _ = stream.write_all(bytes);
                                }
                            }
                        }
                    }
                    thread::sleep(Duration::from_millis(1));
                }
            })
        };
        FakeRedis {
            port,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for FakeRedis {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What Redis answers to the setup ahead of SCRIPT LOAD in one write:
/// `CONFIG GET maxmemory-policy`, then the script's SHA-1.
const SHA_REPLY: &[u8] = b"*2\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n\
    $40\r\n0123456789abcdef0123456789abcdef01234567\r\n";

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| w == &needle)
        .count()
}

#[test]
fn a_fake_server_answering_as_redis_would_is_understood() {
    // The fakes' control: the script's replies mean what they mean.
    let granted = FakeRedis::start(Reply::Each(b"$7\r\ngranted\r\n"));
    assert_eq!(timed_claim(&patient(&granted.url()), 1), Granted);
    let taken = FakeRedis::start(Reply::Each(b"$5\r\ntaken\r\n"));
    assert_eq!(timed_claim(&patient(&taken.url()), 1), Taken);
    let superseded = FakeRedis::start(Reply::Each(b"$10\r\nsuperseded\r\n"));
    assert_eq!(timed_claim(&patient(&superseded.url()), 1), Superseded);
}

#[test]
fn wrong_types_errors_garbage_and_silence_are_unavailable() {
    let replies: [&'static [u8]; 10] = [
        b"+OK\r\n",
        b"$2\r\nok\r\n",
        b":1\r\n",
        b"-ERR nope\r\n",
        b"-READONLY You can't write against a read only replica.\r\n",
        b"$1\r\n1\r\n",
        b"*1\r\n+OK\r\n",
        b"+QUEUED\r\n",
        b"\x9f\x00garbage\xff\r\n",
        b"$99999999\r\nshort",
    ];
    for reply in replies {
        let fake = FakeRedis::start(Reply::Each(reply));
        let guard = guard(&fake.url());
        for id in 0..3 {
            assert_eq!(
                timed_claim(&guard, id),
                Unavailable,
                "reply {:?}",
                String::from_utf8_lossy(reply)
            );
        }
    }
    let silent = FakeRedis::start(Reply::Silence);
    let guard = guard(&silent.url());
    for id in 0..3 {
        assert_eq!(timed_claim(&guard, id), Unavailable, "no reply");
    }
}

#[test]
fn a_once_record_is_first_for_one_server_of_the_fleet_and_lives_until_its_expiry() {
    let redis = RedisServer::start();
    let one = patient(&redis.url());
    let two = patient(&redis.url());
    let now = SystemTime::now();
    let flight = ex_token::OnceId::first_flight([9; 32]);
    let token = ex_token::OnceId::address_token(&[9; 32]);
    let until = expiry();
    let once = |guard: &RedisGuard, id| guard.start_once(&id, until, now).wait();
    assert_eq!(once(&one, flight), Granted);
    // Another server of the fleet sees the same record.
    assert_eq!(once(&two, flight), Taken);
    assert_eq!(once(&one, flight), Taken);
    // Kinds are kept apart, even for the same 32 bytes.
    assert_eq!(once(&two, token), Granted);
    // Redis forgets the record at its expiry (PXAT), not before.
    let key = format!("cr:ep:once/first-flight/{}", "09".repeat(32));
    let expire_ms: u128 = redis::cmd("PEXPIRETIME")
        .arg(&key)
        .query(&mut redis.connection())
        .unwrap();
    let expected = until.duration_since(UNIX_EPOCH).unwrap().as_millis();
    assert_eq!(expire_ms, expected);
}

#[test]
fn a_once_record_without_redis_is_unavailable_within_the_timeout() {
    let mut redis = RedisServer::start();
    let guard = guard(&redis.url());
    redis.stop();
    let started = Instant::now();
    let id = ex_token::OnceId::first_flight([3; 32]);
    let outcome = guard.start_once(&id, expiry(), SystemTime::now()).wait();
    assert_eq!(outcome, Unavailable);
    assert!(started.elapsed() < 2 * TIMEOUT + SLACK);
}
