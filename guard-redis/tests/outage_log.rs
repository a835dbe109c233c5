//! An outage of Redis is logged once when it starts and once when it ends,
//! never once per claim (a server refusing thousands of claims a second
//! must not flood its log). Its own test binary: it installs the logger.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use cr_guard_redis::testing;
use cr_guard_redis::testing::LogCapture;
use cr_guard_redis::{RedisGuard, RedisGuardConfig};
use ex_token::{ClaimOutcome, SavedSet, TokenGuard};

/// What the guard's crate logs.
static CAPTURE: LogCapture = LogCapture::new("cr_guard_redis");

fn logged(level: log::Level, containing: &str) -> usize {
    CAPTURE.count(level, &[containing])
}

fn set(id: u64) -> SavedSet {
    testing::saved_set(id, 8)
}

/// A one-connection fake Redis on `listener`: loads the script, grants
/// every claim.
fn serve_grants(listener: TcpListener) {
    thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut buf = [0u8; 65536];
        while let Ok(n @ 1..) = stream.read(&mut buf) {
            let seen = &buf[..n];
            if seen.windows(10).any(|w| w == b"\r\nSCRIPT\r\n") {
                // CONFIG GET maxmemory-policy, then SCRIPT LOAD.
                let sha = b"*2\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n\
                    $40\r\n0123456789abcdef0123456789abcdef01234567\r\n";
                let _ = stream.write_all(sha);
            }
            for _ in 0..seen.windows(11).filter(|w| w == b"\r\nEVALSHA\r\n").count() {
                let _ = stream.write_all(b"$7\r\ngranted\r\n");
            }
        }
    });
}

#[test]
fn an_outage_is_logged_once_when_it_starts_and_once_when_it_ends() {
    CAPTURE.install(log::LevelFilter::Info);

    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let guard = RedisGuard::connect(
        &format!("redis://127.0.0.1:{port}/"),
        RedisGuardConfig {
            claim_timeout: Duration::from_millis(200),
            reconnect_backoff: Duration::from_millis(10),
            ..Default::default()
        },
    )
    .unwrap();
    // Five claims, each past the backoff: five failed connection attempts.
    for id in 1..=5 {
        thread::sleep(Duration::from_millis(30));
        assert_eq!(
            guard.claim(&set(id), SystemTime::now()),
            ClaimOutcome::Unavailable
        );
    }
    assert_eq!(logged(log::Level::Warn, "unreachable or misbehaving"), 1);
    assert_eq!(logged(log::Level::Info, "answers again"), 0);

    // Redis comes back.
    serve_grants(TcpListener::bind((Ipv4Addr::LOCALHOST, port)).unwrap());
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut id = 10;
    loop {
        thread::sleep(Duration::from_millis(30));
        id += 1;
        if guard.claim(&set(id), SystemTime::now()) == ClaimOutcome::Granted {
            break;
        }
        assert!(Instant::now() < deadline, "never granted again");
    }
    assert_eq!(
        guard.claim(&set(id + 1), SystemTime::now()),
        ClaimOutcome::Granted
    );
    assert_eq!(logged(log::Level::Warn, "unreachable or misbehaving"), 1);
    assert_eq!(logged(log::Level::Info, "answers again"), 1);
}
