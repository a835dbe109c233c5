//! What the guard logs about what can lose a revocation: an evicting Redis
//! (a warning on connecting) and revocations Redis has not taken yet (at
//! error level while they wait, at info level once delivered). Its own test
//! binary: it installs the logger. Each test finds its own lines by its
//! Redis's port.

use std::thread;
use std::time::{Duration, Instant, SystemTime};

use cr_guard_redis::testing;
use cr_guard_redis::testing::redis;
use cr_guard_redis::testing::{LogCapture, RedisServer};
use cr_guard_redis::{RedisGuard, RedisGuardConfig};
use ex_token::{ClaimOutcome, SavedSet, TokenGuard};

/// What the guard's crate logs.
static CAPTURE: LogCapture = LogCapture::new("cr_guard_redis");

fn install_logger() {
    CAPTURE.install(log::LevelFilter::Info);
}

/// How many lines at `level` contain every one of `parts`.
fn logged(level: log::Level, parts: &[&str]) -> usize {
    CAPTURE.count(level, parts)
}

/// Waits until a line at `level` contains every one of `parts`; panics
/// after five seconds.
fn await_logged(level: log::Level, parts: &[&str]) {
    let started = Instant::now();
    while logged(level, parts) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "nothing logged at {level} with {parts:?}"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

fn set(id: u64) -> SavedSet {
    testing::saved_set(id, 9)
}

fn guard(url: &str) -> RedisGuard {
    let config = RedisGuardConfig {
        claim_timeout: Duration::from_secs(2),
        reconnect_backoff: Duration::from_millis(20),
        ..Default::default()
    };
    RedisGuard::connect(url, config).unwrap()
}

#[test]
fn an_evicting_redis_is_warned_about_once_and_noeviction_not_at_all() {
    install_logger();
    let keeping = RedisServer::start();
    let guard_of_keeping = guard(&keeping.url());
    assert_eq!(
        guard_of_keeping.claim(&set(1), SystemTime::now()),
        ClaimOutcome::Granted
    );
    let port = format!("127.0.0.1:{}", keeping.port());
    assert_eq!(logged(log::Level::Warn, &[&port, "maxmemory-policy"]), 0);

    let evicting = RedisServer::start();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("volatile-lru")
        .query::<()>(&mut evicting.connection())
        .unwrap();
    let guard = guard(&evicting.url());
    for id in 1..=3 {
        assert_eq!(
            guard.claim(&set(id), SystemTime::now()),
            ClaimOutcome::Granted
        );
    }
    let port = format!("127.0.0.1:{}", evicting.port());
    assert_eq!(
        logged(
            log::Level::Warn,
            &[
                &port,
                "maxmemory-policy is volatile-lru",
                "set maxmemory-policy noeviction"
            ]
        ),
        1
    );
}

#[test]
fn revocations_waiting_for_redis_are_logged_as_errors_until_delivered() {
    install_logger();
    let mut redis = RedisServer::start();
    let guard = guard(&redis.url());
    assert_eq!(
        guard.claim(&set(7), SystemTime::now()),
        ClaimOutcome::Granted
    );
    let port = format!("127.0.0.1:{}", redis.port());

    redis.stop();
    guard.revoke(&set(7), SystemTime::now());
    await_logged(
        log::Level::Error,
        &[
            &port,
            "1 revocation(s) of retreated saved sets not delivered yet",
        ],
    );
    assert_eq!(guard.pending_revocations(), 1);

    redis.restart();
    await_logged(
        log::Level::Info,
        &[&port, "every waiting revocation delivered"],
    );
    assert_eq!(guard.pending_revocations(), 0);
    assert_eq!(
        guard.claim(&set(7), SystemTime::now()),
        ClaimOutcome::Revoked
    );
    // One error line for an outage shorter than the repeat interval.
    assert_eq!(logged(log::Level::Error, &[&port, "revocation(s)"]), 1);
}
