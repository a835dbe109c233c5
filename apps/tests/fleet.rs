//! A fleet: two `cr-server` processes sharing a key ring file and one real
//! `redis-server` (started here on loopback, stopped at the end). A token
//! one server minted resumes on the other, the same saved set resumes one
//! connection only however many servers see it, a restarted Redis with its
//! append-only file still refuses a replay, and when Redis is stopped, slow
//! or absent every download completes, none resumes, no handshake waits,
//! and the servers recover by themselves.
//!
//! Clients reach a server through a relay (100 ms RTT) listening on one
//! fixed address, as a fleet sits behind one address: re-pointing the relay
//! is moving the client to another server.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

mod support;

use cr_apps::keys::KeyMaterial;
use cr_apps::relay::RelayHandle;
use cr_apps::{download, DownloadReport};
use cr_guard_redis::testing::{RedisServer, RedisServerOptions};

const ONE_WAY: Duration = Duration::from_millis(50);
const SIZE: u64 = 1_000_000;
/// The servers' claim timeout: below the time to the jump (two round
/// trips here), above what a Redis syncing its append-only file to a busy
/// disk may take.
const CLAIM_TIMEOUT: Duration = Duration::from_millis(150);

/// A scratch directory of this test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cr-fleet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// One `cr-server` process; killed (by its PID) when dropped.
struct ServerProcess {
    child: Child,
    addr: SocketAddr,
    lines: Receiver<String>,
}

impl ServerProcess {
    fn start(key_file: &Path, guard: &str) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cr-server"))
            .args(["--listen", "127.0.0.1:0", "--guard", guard])
            .arg("--claim-timeout")
            .arg(format!("{}ms", CLAIM_TIMEOUT.as_millis()))
            .arg("--token-key")
            .arg(key_file)
            .arg("--cert")
            .arg(support::certs().join("cert.pem"))
            .arg("--key")
            .arg(support::certs().join("key.pem"))
            .args(["--idle-timeout", "5s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cr-server starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        // The start-up line names the address (log lines may come first).
        let mut line = String::new();
        let addr = loop {
            line.clear();
            let read = stderr.read_line(&mut line).expect("cr-server's log");
            assert!(read > 0, "cr-server exited before listening");
            let addr = line
                .split("listening on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|addr| addr.parse().ok());
            if let Some(addr) = addr {
                break addr;
            }
        };
        // Keep draining the log so the server never blocks on it.
        std::thread::spawn(move || for _ in stderr.lines() {});
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        ServerProcess { child, addr, lines }
    }

    /// The report line of the next connection that ends.
    fn next_line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("a connection report")
    }

    fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn relay(listen: SocketAddr, server: SocketAddr) -> RelayHandle {
    support::relay(listen, server, ONE_WAY)
}

fn fetch(through: SocketAddr, token_file: &Path) -> DownloadReport {
    let report = download(&support::client_options(through, SIZE, token_file))
        .expect("the download completes");
    assert_eq!(report.bytes, SIZE);
    report
}

/// A copy of a client's token file, for a client at another address.
fn copy_tokens(from: &Path, to: &Path, old: SocketAddr, new: SocketAddr) {
    let text = std::fs::read_to_string(from).expect("token file");
    std::fs::write(to, text.replace(&old.to_string(), &new.to_string())).expect("copy");
}

/// Whether a server's report line says the connection resumed from the
/// saved set (`cr=off: ...` otherwise).
fn resumed(line: &str) -> bool {
    line.contains("token=valid cr=") && !line.contains(" cr=off")
}

fn guard_unavailable(line: &str) -> bool {
    line.contains("cr=off: the guard could not confirm")
}

/// The handshake never waits for the guard: at most one round trip, plus
/// scheduling slack on a busy machine.
fn assert_handshake_not_delayed(report: &DownloadReport) {
    let bound = 2 * ONE_WAY + CLAIM_TIMEOUT + Duration::from_millis(300);
    assert!(
        report.handshake <= bound,
        "handshake took {:?}",
        report.handshake
    );
}

#[test]
fn a_token_from_one_server_resumes_on_another_and_a_set_resumes_once() {
    let redis = RedisServer::start();
    let dir = scratch("two-servers");
    let keys = dir.join("fleet.key");
    let a = ServerProcess::start(&keys, &redis.url());
    let b = ServerProcess::start(&keys, &redis.url());
    let tokens = dir.join("tokens.json");

    // Server A serves the first connection and leaves a token.
    let front = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let address = front.local_addr();
    fetch(address, &tokens);
    assert!(a.next_line().contains("cr=off: no token"));

    // The same address now leads to server B, which opens A's token.
    drop(front);
    let front = relay(address, b.addr);
    fetch(address, &tokens);
    let line = b.next_line();
    assert!(resumed(&line) && line.contains("cr=engaged"), "{line}");

    // One token, two servers at once: exactly one resumes.
    let snapshot = dir.join("snapshot.json");
    std::fs::copy(&tokens, &snapshot).expect("copy");
    let other = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let twin = dir.join("twin.json");
    copy_tokens(&snapshot, &twin, address, other.local_addr());
    std::thread::scope(|s| {
        s.spawn(|| fetch(address, &snapshot));
        s.spawn(|| fetch(other.local_addr(), &twin));
    });
    let lines = [a.next_line(), b.next_line()];
    assert_eq!(lines.iter().filter(|l| resumed(l)).count(), 1, "{lines:?}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("already used by another connection"))
            .count(),
        1,
        "{lines:?}"
    );
    drop((front, other));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_restarted_redis_with_its_append_only_file_still_refuses_a_replay() {
    let mut redis = RedisServer::start_with(RedisServerOptions { appendonly: true });
    let dir = scratch("aof");
    let a = ServerProcess::start(&dir.join("fleet.key"), &redis.url());
    let front = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let tokens = dir.join("tokens.json");
    fetch(front.local_addr(), &tokens);
    a.next_line();
    let replay = dir.join("replay.json");
    std::fs::copy(&tokens, &replay).expect("copy");

    fetch(front.local_addr(), &tokens);
    let line = a.next_line();
    assert!(resumed(&line), "{line}");

    redis.restart();
    fetch(front.local_addr(), &replay);
    let line = a.next_line();
    assert!(
        line.contains("cr=off: saved capacity already used"),
        "{line}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn with_redis_stopped_slow_or_absent_downloads_complete_without_resuming() {
    let mut redis = RedisServer::start();
    let dir = scratch("faults");
    let mut a = ServerProcess::start(&dir.join("fleet.key"), &redis.url());
    let front = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let tokens = dir.join("tokens.json");
    fetch(front.local_addr(), &tokens);
    a.next_line();
    let unused = dir.join("unused.json");
    std::fs::copy(&tokens, &unused).expect("copy");

    // Redis stopped: no resume, no delay.
    redis.stop();
    let report = fetch(front.local_addr(), &tokens);
    assert_handshake_not_delayed(&report);
    let line = a.next_line();
    assert!(guard_unavailable(&line), "{line}");

    // Redis back: the server claims again by itself (the set was never
    // recorded while Redis was down, so it is still unused).
    redis.restart();
    fetch(front.local_addr(), &unused);
    let line = a.next_line();
    assert!(resumed(&line), "{line}");

    // Redis slow: the claim times out, the download goes on.
    let sleeper = {
        let mut connection = redis.connection();
        std::thread::spawn(move || {
            let _: Result<(), _> = cr_guard_redis::testing::redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg(3)
                .query(&mut connection);
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    let report = fetch(front.local_addr(), &tokens);
    assert_handshake_not_delayed(&report);
    let line = a.next_line();
    assert!(guard_unavailable(&line), "{line}");
    sleeper.join().expect("sleeper");
    assert!(a.is_running());

    // Nothing listening where Redis should be: the server starts and serves.
    let nowhere = {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        socket.local_addr().expect("address")
    };
    let mut b = ServerProcess::start(&dir.join("fleet.key"), &format!("redis://{nowhere}"));
    let to_b = relay("127.0.0.1:0".parse().unwrap(), b.addr);
    let moved = dir.join("moved.json");
    copy_tokens(&tokens, &moved, front.local_addr(), to_b.local_addr());
    let report = fetch(to_b.local_addr(), &moved);
    assert_handshake_not_delayed(&report);
    let line = b.next_line();
    assert!(guard_unavailable(&line), "{line}");
    assert!(a.is_running() && b.is_running());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_changed_key_ring_file_takes_effect_without_a_restart() {
    let redis = RedisServer::start();
    let dir = scratch("rotation");
    let keys = dir.join("fleet.key");
    let a = ServerProcess::start(&keys, &redis.url());
    let front = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let tokens = dir.join("tokens.json");
    fetch(front.local_addr(), &tokens);
    a.next_line();
    let sealed_with_first_key = dir.join("first-key.json");
    std::fs::copy(&tokens, &sealed_with_first_key).expect("copy");
    let first = std::fs::read_to_string(&keys).expect("the generated ring");
    // cr-server rereads the file every second.
    let reread = || std::thread::sleep(Duration::from_millis(1500));

    // Step 1 of a fleet rotation: a new key goes first and seals; the
    // first key, now second, still opens what it sealed.
    let next = KeyMaterial::generate(7).expect("key").to_text();
    std::fs::write(&keys, format!("{next}{first}")).expect("ring");
    reread();
    fetch(front.local_addr(), &tokens);
    let line = a.next_line();
    assert!(resumed(&line), "{line}");

    // Step 2: the first key is dropped; its tokens no longer open, the new
    // key's do.
    std::fs::write(&keys, &next).expect("ring");
    reread();
    fetch(front.local_addr(), &sealed_with_first_key);
    let line = a.next_line();
    assert!(line.contains("unknown key id 0"), "{line}");
    fetch(front.local_addr(), &tokens);
    let line = a.next_line();
    assert!(line.contains("token=valid"), "{line}");
    std::fs::remove_dir_all(dir).ok();
}
