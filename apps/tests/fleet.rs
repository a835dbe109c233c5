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

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

mod support;

use support::server_process::ServerProcess;

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

/// A `cr-server` of the fleet, sharing `key_file` and the guard at `guard`.
/// Server `id` of the fleet (each its own, as a fleet sharing a key ring
/// must have), with the key ring in `key_file` and the guard `guard`.
fn start_server(id: u8, key_file: &Path, guard: &str) -> ServerProcess {
    let claim_timeout = format!("{}ms", CLAIM_TIMEOUT.as_millis());
    let id = id.to_string();
    ServerProcess::start(
        key_file,
        [
            "--server-id",
            &id,
            "--guard",
            guard,
            "--claim-timeout",
            &claim_timeout,
            "--idle-timeout",
            "5s",
        ],
    )
}

/// The report line of the next connection `server` ends.
fn next_line(server: &ServerProcess) -> String {
    server.next_report(Duration::from_secs(20))
}

fn is_running(server: &mut ServerProcess) -> bool {
    matches!(server.child.try_wait(), Ok(None))
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
/// saved set its token carried (`cr=off: ...` otherwise). The token need
/// not have validated the address: a token validates it once, and a set
/// is claimed after the handshake either way.
fn resumed(line: &str) -> bool {
    !line.contains("token=none") && line.contains(" cr=") && !line.contains(" cr=off")
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
    let dir = support::scratch("fleet", "two-servers");
    let keys = dir.join("fleet.key");
    let a = start_server(1, &keys, &redis.url());
    let b = start_server(2, &keys, &redis.url());
    let tokens = dir.join("tokens.json");

    // Server A serves the first connection and leaves a token.
    let front = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let address = front.local_addr();
    fetch(address, &tokens);
    assert!(next_line(&a).contains("cr=off: no token"));

    // The same address now leads to server B, which opens A's token.
    drop(front);
    let front = relay(address, b.addr);
    fetch(address, &tokens);
    let line = next_line(&b);
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
    let lines = [next_line(&a), next_line(&b)];
    assert_eq!(lines.iter().filter(|l| resumed(l)).count(), 1, "{lines:?}");
    // The other is refused the set: in use by the first, or, when its
    // claim comes after the first has measured a set of its own,
    // superseded by that one. Its token validated no address either: a
    // token validates once (RFC 9000, section 8.1.4), so its handshake
    // kept to the anti-amplification limit and took longer.
    let refused = |l: &&String| {
        l.contains("already used by another connection") || l.contains("newer saved capacity")
    };
    assert_eq!(lines.iter().filter(refused).count(), 1, "{lines:?}");
    assert_eq!(
        lines.iter().filter(|l| l.contains("token=valid ")).count(),
        1,
        "{lines:?}"
    );
    drop((front, other));
    std::fs::remove_dir_all(dir).ok();
}

/// RFC 9959's one saved set per Remote Endpoint across a fleet: a client
/// that kept the tokens of two earlier connections (each made without a
/// token, so each measured a set of its own) presents both at once, to two
/// servers sharing one Redis: one connection resumes, the other's set is
/// superseded by the newer.
#[test]
fn two_sets_of_one_network_presented_to_two_servers_at_once_resume_one_connection() {
    let redis = RedisServer::start();
    let dir = support::scratch("fleet", "two-sets");
    let keys = dir.join("fleet.key");
    let a = start_server(1, &keys, &redis.url());
    let b = start_server(2, &keys, &redis.url());
    let to_a = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let to_b = relay("127.0.0.1:0".parse().unwrap(), b.addr);

    let (older, newer) = (dir.join("older.json"), dir.join("newer.json"));
    fetch(to_a.local_addr(), &older);
    assert!(next_line(&a).contains("cr=off: no token"));
    fetch(to_a.local_addr(), &newer);
    assert!(next_line(&a).contains("cr=off: no token"));

    // The older token goes to server B, the newer to server A, at once.
    let older_at_b = dir.join("older-at-b.json");
    copy_tokens(&older, &older_at_b, to_a.local_addr(), to_b.local_addr());
    std::thread::scope(|s| {
        s.spawn(|| fetch(to_b.local_addr(), &older_at_b));
        s.spawn(|| fetch(to_a.local_addr(), &newer));
    });
    let (line_a, line_b) = (next_line(&a), next_line(&b));
    assert!(
        resumed(&line_a) && line_a.contains("cr=engaged"),
        "{line_a}"
    );
    assert!(
        line_b.contains("cr=off: a newer saved capacity supersedes it"),
        "{line_b}"
    );
    drop((to_a, to_b));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_restarted_redis_with_its_append_only_file_still_refuses_a_replay() {
    let mut redis = RedisServer::start_with(RedisServerOptions { appendonly: true });
    let dir = support::scratch("fleet", "aof");
    let a = start_server(1, &dir.join("fleet.key"), &redis.url());
    let front = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let tokens = dir.join("tokens.json");
    fetch(front.local_addr(), &tokens);
    next_line(&a);
    let replay = dir.join("replay.json");
    std::fs::copy(&tokens, &replay).expect("copy");

    fetch(front.local_addr(), &tokens);
    let line = next_line(&a);
    assert!(resumed(&line), "{line}");

    redis.restart();
    fetch(front.local_addr(), &replay);
    let line = next_line(&a);
    // The resumed connection measured the path anew: its own set, kept
    // by the restarted Redis, supersedes the replayed one.
    assert!(
        line.contains("cr=off: a newer saved capacity supersedes it"),
        "{line}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn with_redis_stopped_slow_or_absent_downloads_complete_without_resuming() {
    let mut redis = RedisServer::start();
    let dir = support::scratch("fleet", "faults");
    let mut a = start_server(1, &dir.join("fleet.key"), &redis.url());
    let front = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let tokens = dir.join("tokens.json");
    fetch(front.local_addr(), &tokens);
    next_line(&a);
    let unused = dir.join("unused.json");
    std::fs::copy(&tokens, &unused).expect("copy");

    // Redis stopped: no resume, no delay.
    redis.stop();
    let report = fetch(front.local_addr(), &tokens);
    assert_handshake_not_delayed(&report);
    let line = next_line(&a);
    assert!(guard_unavailable(&line), "{line}");

    // Redis back: the server claims again by itself (the set was never
    // recorded while Redis was down, so it is still unused).
    redis.restart();
    fetch(front.local_addr(), &unused);
    let line = next_line(&a);
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
    let line = next_line(&a);
    assert!(guard_unavailable(&line), "{line}");
    sleeper.join().expect("sleeper");
    assert!(is_running(&mut a));

    // Nothing listening where Redis should be: the server starts and serves.
    let nowhere = {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        socket.local_addr().expect("address")
    };
    let mut b = start_server(2, &dir.join("fleet.key"), &format!("redis://{nowhere}"));
    let to_b = relay("127.0.0.1:0".parse().unwrap(), b.addr);
    let moved = dir.join("moved.json");
    copy_tokens(&tokens, &moved, front.local_addr(), to_b.local_addr());
    let report = fetch(to_b.local_addr(), &moved);
    assert_handshake_not_delayed(&report);
    let line = next_line(&b);
    assert!(guard_unavailable(&line), "{line}");
    assert!(is_running(&mut a) && is_running(&mut b));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_changed_key_ring_file_takes_effect_without_a_restart() {
    let redis = RedisServer::start();
    let dir = support::scratch("fleet", "rotation");
    let keys = dir.join("fleet.key");
    let a = start_server(1, &keys, &redis.url());
    let front = relay("127.0.0.1:0".parse().unwrap(), a.addr);
    let tokens = dir.join("tokens.json");
    fetch(front.local_addr(), &tokens);
    next_line(&a);
    let sealed_with_first_key = dir.join("first-key.json");
    std::fs::copy(&tokens, &sealed_with_first_key).expect("copy");
    let first = std::fs::read_to_string(&keys).expect("the generated ring");
    // cr-server rereads the file every second.
    let reread = || std::thread::sleep(Duration::from_millis(1500));

    // Step 1 of a fleet rotation: a new key goes first and seals; the
    // first key, now second, still opens what it sealed.
    let next = KeyMaterial::generate(7).expect("key").to_text();
    std::fs::write(&keys, format!("{}{first}", next.as_str())).expect("ring");
    reread();
    fetch(front.local_addr(), &tokens);
    let line = next_line(&a);
    assert!(resumed(&line), "{line}");

    // Step 2: the first key is dropped; its tokens no longer open, the new
    // key's do.
    std::fs::write(&keys, &next).expect("ring");
    reread();
    fetch(front.local_addr(), &sealed_with_first_key);
    let line = next_line(&a);
    assert!(line.contains("unknown key id 0"), "{line}");
    fetch(front.local_addr(), &tokens);
    let line = next_line(&a);
    assert!(line.contains("token=valid"), "{line}");
    std::fs::remove_dir_all(dir).ok();
}
