//! The Redis guard's rules for a Redis that cannot be trusted at the
//! moment, against fake servers on loopback: claims refused at once (and no
//! connection tried) during the reconnect backoff, a reply that comes after
//! its claim's deadline refused, a connection that gave a reply no claim
//! can get dropped; and what its errors and Debug output say.

use std::error::Error as _;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use cr_guard_redis::testing;
use cr_guard_redis::{Error, RedisGuard, RedisGuardConfig};
use ex_token::{ClaimOutcome, SavedSet, TokenGuard};

/// Slack for an answer on a loaded two-core machine.
const SLACK: Duration = Duration::from_millis(300);

fn set(id: u64) -> SavedSet {
    testing::saved_set(id, 9)
}

/// A loopback port nothing listens on (free a moment ago).
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fake Redis: answers the script's load with a SHA-1 and every script
/// call with `reply`, `delay` after reading it; counts the connections it
/// accepted.
struct FakeRedis {
    port: u16,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl FakeRedis {
    fn start(reply: &'static [u8], delay: Duration) -> FakeRedis {
        Self::start_on(0, reply, delay)
    }

    fn start_on(port: u16, reply: &'static [u8], delay: Duration) -> FakeRedis {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (accepted, stop) = (accepted.clone(), stop.clone());
            thread::spawn(move || {
                let mut connections = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    if let Ok((stream, _)) = listener.accept() {
                        accepted.fetch_add(1, Ordering::SeqCst);
                        stream.set_nonblocking(false).unwrap();
                        stream
                            .set_read_timeout(Some(Duration::from_millis(5)))
                            .unwrap();
                        connections.push(stream);
                    }
                    for stream in &mut connections {
                        let mut buf = [0u8; 65536];
                        if let Ok(n @ 1..) = stream.read(&mut buf) {
                            let seen = &buf[..n];
                            for _ in 0..count(seen, b"\r\nSCRIPT\r\n") {
                                let _ = stream.write_all(SHA_REPLY);
                            }
                            let calls = count(seen, b"\r\nEVALSHA\r\n");
                            if calls > 0 {
                                thread::sleep(delay);
                            }
                            for _ in 0..calls {
                                let _ = stream.write_all(reply);
                            }
                        }
                    }
                    thread::sleep(Duration::from_millis(1));
                }
            })
        };
        FakeRedis {
            port,
            accepted,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
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
const GRANTED: &[u8] = b"$7\r\ngranted\r\n";

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| w == &needle)
        .count()
}

/// RedisGuardConfig::reconnect_backoff: after a failure the worker waits
/// before it connects again, and claims meanwhile are answered Unavailable
/// at once, without a connection attempt, even once Redis is back.
#[test]
fn claims_during_the_reconnect_backoff_are_refused_at_once_without_connecting() {
    let port = free_port();
    let guard = RedisGuard::connect(
        &format!("redis://127.0.0.1:{port}/"),
        RedisGuardConfig {
            claim_timeout: Duration::from_millis(200),
            reconnect_backoff: Duration::from_secs(30),
            ..Default::default()
        },
    )
    .unwrap();
    let claim = guard.start_claim(&set(1), SystemTime::now());
    assert_eq!(
        claim.wait_timeout(guard.claim_timeout() + SLACK),
        ClaimOutcome::Unavailable
    );

    // Redis is back, within the backoff.
    let redis = FakeRedis::start_on(port, GRANTED, Duration::ZERO);
    for id in 2..5 {
        let started = Instant::now();
        let claim = guard.start_claim(&set(id), SystemTime::now());
        assert_eq!(claim.wait_timeout(SLACK), ClaimOutcome::Unavailable);
        assert!(
            started.elapsed() < SLACK,
            "answered after {:?}",
            started.elapsed()
        );
    }
    assert_eq!(redis.accepted(), 0, "no connection during the backoff");
}

/// A claim is answered by its deadline: a reply that comes later (Redis
/// slow, the claim queued behind a slow batch) is not taken for a grant.
#[test]
fn a_grant_that_comes_after_the_claims_deadline_is_refused() {
    // Every script call answered 150 ms after it arrives; claims time out
    // after 200 ms.
    let redis = FakeRedis::start(GRANTED, Duration::from_millis(150));
    let timeout = Duration::from_millis(200);
    let guard = RedisGuard::connect(
        &redis.url(),
        RedisGuardConfig {
            claim_timeout: timeout,
            ..Default::default()
        },
    )
    .unwrap();
    // Let the worker connect first.
    thread::sleep(Duration::from_millis(100));
    let first = guard.start_claim(&set(1), SystemTime::now());
    thread::sleep(Duration::from_millis(10));
    // Queued behind the first: sent about 150 ms later, its answer would
    // come about 300 ms after it started, past its 200 ms deadline.
    let started = Instant::now();
    let second = guard.start_claim(&set(2), SystemTime::now());
    let outcome = second.wait_timeout(timeout + SLACK);
    assert_eq!(outcome, ClaimOutcome::Unavailable);
    assert!(
        started.elapsed() <= timeout + SLACK,
        "answered after {:?}",
        started.elapsed()
    );
    let _ = first.wait();
}

/// After a reply that no claim can get (`ok` answers only a write), the
/// connection is out of step: the guard drops it and reconnects for the
/// next claim, after the backoff.
#[test]
fn a_reply_no_claim_can_get_drops_the_connection() {
    let redis = FakeRedis::start(b"$2\r\nok\r\n", Duration::ZERO);
    let guard = RedisGuard::connect(
        &redis.url(),
        RedisGuardConfig {
            claim_timeout: Duration::from_secs(1),
            reconnect_backoff: Duration::from_millis(20),
            ..Default::default()
        },
    )
    .unwrap();
    for id in 1..=3 {
        // Past the backoff of the failure before.
        thread::sleep(Duration::from_millis(100));
        assert_eq!(
            guard.claim(&set(id), SystemTime::now()),
            ClaimOutcome::Unavailable
        );
    }
    assert_eq!(redis.accepted(), 3, "one connection per claim");
}

#[test]
fn errors_say_what_is_wrong_and_keep_their_cause() {
    let url = RedisGuard::connect("unix:///tmp/redis.sock", RedisGuardConfig::default())
        .expect_err("a Unix socket URL");
    assert!(matches!(url, Error::Url(_)));
    assert!(url.to_string().starts_with("invalid Redis URL: "), "{url}");
    assert!(url.source().is_none());

    let config = RedisGuard::connect(
        "redis://127.0.0.1:1/",
        RedisGuardConfig {
            queue_bound: 0,
            ..Default::default()
        },
    )
    .expect_err("a zero queue bound");
    assert_eq!(
        config.to_string(),
        "invalid Redis guard configuration: queue_bound must not be zero"
    );
    assert!(config.source().is_none());

    let spawn = Error::Spawn(io::Error::other("no more threads"));
    assert_eq!(
        spawn.to_string(),
        "cannot start the Redis guard's worker thread: no more threads"
    );
    let cause = spawn.source().expect("the I/O error");
    assert_eq!(cause.to_string(), "no more threads");
    assert!(cause.downcast_ref::<io::Error>().is_some());
}

#[test]
fn debug_output_names_the_timeout_and_no_credentials() {
    let guard = RedisGuard::connect(
        "redis://fleet:hunter2@127.0.0.1:1/",
        RedisGuardConfig::default(),
    )
    .unwrap();
    let shown = format!("{guard:?}");
    assert_eq!(shown, "RedisGuard { claim_timeout: 50ms, .. }");
}
