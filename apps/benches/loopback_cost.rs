//! What a byte costs the server on real sockets: `cr-server`
//! and `cr-client` on loopback, no relay, for Reno, CUBIC and BBR2, each
//! with full packets (silly window avoidance, cr-server's default) and with
//! quiche's default packing (`--small-packets`), side by side in one run.
//!
//! For each pair it reports the server's CPU time per MB (the sum of its
//! threads' run time from `/proc/<pid>/task/*/schedstat`, in nanoseconds)
//! and the packets it sent per MB (from its per-connection report lines).
//! Loopback has no bottleneck, so the window hardly ever limits the sender
//! there; a second table puts an in-process cr-relay (20 Mbit/s, 20 ms RTT,
//! a BDP of queue) between them, where it does.
//!
//! `cargo bench -p cr-apps --bench loopback_cost` (Linux only). Options:
//! `LOOPBACK_MIB` (default 32) bytes per download, `LOOPBACK_DOWNLOADS`
//! (default 3) downloads per run, `LOOPBACK_ROUNDS` (default 3) runs per
//! case, whose median is reported.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cr_apps::relay::{LinkConfig, Relay, RelayOptions};

/// The emulated path of the second table: 20 Mbit/s, 20 ms, one BDP of
/// queue per direction.
const RELAYED: LinkConfig = LinkConfig {
    rate_bps: 20_000_000,
    delay: Duration::from_millis(10),
    queue_bytes: 50_000,
    loss: 0.0,
};

/// The controllers measured, by their `--cc` names.
const CONTROLLERS: [&str; 3] = ["reno", "cubic", "bbr2"];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[path = "../tests/support/server_process.rs"]
mod server_process;

use server_process::ServerProcess;

/// A `cr-server` with controller `cc`, with quiche's packing or not.
fn start_server(cc: &str, small_packets: bool, scratch: &Path) -> ServerProcess {
    let key_file = scratch.join(format!("{cc}-{small_packets}.key"));
    let mut args = vec!["--cc", cc];
    if small_packets {
        args.push("--small-packets");
    }
    ServerProcess::start(&key_file, args)
}

/// CPU time all of `server`'s threads have run so far.
fn cpu_time(server: &ServerProcess) -> Duration {
    let tasks = PathBuf::from(format!("/proc/{}/task", server.child.id()));
    let nanos: u64 = std::fs::read_dir(&tasks)
        .expect("the server's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// The `sent=` of the next connection `server` reports.
fn packets_of_next_connection(server: &ServerProcess) -> u64 {
    let line = server.next_report(Duration::from_secs(60));
    line.split_whitespace()
        .find_map(|field| field.strip_prefix("sent="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sent= in {line:?}"))
}

/// What one case cost the server.
struct Cost {
    cpu: Duration,
    packets: u64,
    mib: u64,
}

impl Cost {
    fn cpu_ms_per_mib(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e3 / self.mib as f64
    }

    fn packets_per_mib(&self) -> f64 {
        self.packets as f64 / self.mib as f64
    }
}

/// An in-process cr-relay in front of `server`, stopped when dropped.
struct RelayThread {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RelayThread {
    fn start(server: SocketAddr) -> RelayThread {
        let listen = "127.0.0.1:0".parse().expect("an address");
        let relay =
            Relay::bind(RelayOptions::symmetric(listen, server, RELAYED)).expect("the relay binds");
        let stop = Arc::new(AtomicBool::new(false));
        let running = Arc::clone(&stop);
        let addr = relay.local_addr();
        let thread = std::thread::spawn(move || relay.run(&running).expect("the relay runs"));
        RelayThread {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for RelayThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Downloads through `relayed` (or straight to the server) with one
/// packing and returns what they cost the server.
fn measure(cc: &str, small_packets: bool, relayed: bool, scratch: &Path) -> Cost {
    let (mib, downloads) = if relayed {
        (setting("RELAYED_MIB", 8), 1)
    } else {
        (
            setting("LOOPBACK_MIB", 32),
            setting("LOOPBACK_DOWNLOADS", 3),
        )
    };
    let server = start_server(cc, small_packets, scratch);
    let relay = relayed.then(|| RelayThread::start(server.addr));
    let target = relay.as_ref().map_or(server.addr, |r| r.addr);
    let before = cpu_time(&server);
    let mut packets = 0;
    for _ in 0..downloads {
        let status = Command::new(env!("CARGO_BIN_EXE_cr-client"))
            .arg(target.to_string())
            .arg("--size")
            .arg(format!("{mib}MiB"))
            .args(["--no-token", "--linger", "0s", "--timeout", "60s"])
            .arg("--ca")
            .arg(repository().join("certs").join("cert.pem"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .status()
            .expect("cr-client runs");
        assert!(status.success(), "cr-client failed: {status}");
        packets += packets_of_next_connection(&server);
    }
    Cost {
        cpu: cpu_time(&server) - before,
        packets,
        mib: mib * downloads,
    }
}

/// The case with the median CPU time per MiB of `rounds` runs.
fn median(mut runs: Vec<Cost>) -> Cost {
    runs.sort_by(|a, b| a.cpu_ms_per_mib().total_cmp(&b.cpu_ms_per_mib()));
    runs.swap_remove(runs.len() / 2)
}

fn main() {
    let scratch = std::env::temp_dir().join(format!("cr-loopback-cost-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    let rounds = setting("LOOPBACK_ROUNDS", 3);
    // A first run warms caches and clocks; the machine's other load moves
    // the figures by 10-30 %, so each case runs `rounds` times, the two
    // packings alternating, and the medians are compared.
    measure("cubic", false, false, &scratch);
    for relayed in [false, true] {
        table(relayed, rounds, &scratch);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// One table: every controller, full packets against quiche's packing.
fn table(relayed: bool, rounds: u64, scratch: &Path) {
    println!(
        "\n{}",
        if relayed {
            "through cr-relay, 20 Mbit/s, 20 ms RTT:"
        } else {
            "loopback:"
        }
    );
    println!(
        "{:<6} {:>16} {:>18} {:>8} {:>14} {:>16} {:>8}",
        "cc",
        "CPU ms/MiB full",
        "CPU ms/MiB quiche",
        "ratio",
        "pkts/MiB full",
        "pkts/MiB quiche",
        "ratio"
    );
    for cc in CONTROLLERS {
        let (mut full, mut small) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            full.push(measure(cc, false, relayed, scratch));
            small.push(measure(cc, true, relayed, scratch));
        }
        let (full, small) = (median(full), median(small));
        println!(
            "{:<6} {:>16.2} {:>18.2} {:>7.2}x {:>14.0} {:>16.0} {:>7.2}x",
            cc,
            full.cpu_ms_per_mib(),
            small.cpu_ms_per_mib(),
            full.cpu_ms_per_mib() / small.cpu_ms_per_mib(),
            full.packets_per_mib(),
            small.packets_per_mib(),
            full.packets_per_mib() / small.packets_per_mib(),
        );
    }
}
