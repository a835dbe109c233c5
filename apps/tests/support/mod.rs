//! What the programs' integration tests share: the test certificate, a
//! server with a fresh key, the relay's link, a client's options, a
//! `cr-server` process, upstream's example server, and a `cr-load` run.
//! Each test binary uses part of it.
#![allow(dead_code)]

pub mod example;
pub mod server_process;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cr_apps::keys::KeyMaterial;
use cr_apps::relay::{LinkConfig, Relay, RelayHandle, RelayOptions};
use cr_apps::{ClientOptions, CongestionControl, Protocol, ServerOptions};
use cr_endpoint::ex_token::{KeyRing, TokenKey};

/// The self-signed certificate's directory.
pub fn certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../certs")
}

/// A server on a free loopback port with a fresh token key and the
/// in-memory guard.
pub fn server_options() -> ServerOptions {
    let key = KeyMaterial::generate(3).expect("key");
    ServerOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        cert: certs().join("cert.pem"),
        key: certs().join("key.pem"),
        token_keys: KeyRing::new(TokenKey::from_bytes(key.id, &key.bytes).expect("key")),
        token_key_file: None,
        guard: None,
        qlog_dir: None,
        cc: CongestionControl::Cubic,
        slow_start: Default::default(),
        max_jump: None,
        idle_timeout: Duration::from_secs(5),
        small_packets: false,
        rtt_once_per_rtt: false,
        pace: false,
        slow_start_past_saved: false,
        early_data: true,
        jump_budget: Some(Default::default()),
    }
}

/// Writes a key ring file of one fresh key at `path`, as cr-server wants it
/// (one `<id>:<hex>` line, readable by its owner only).
pub fn write_key_file(path: &Path) {
    let key = KeyMaterial::generate(1).expect("key");
    let ring = cr_apps::keys::KeyRingFile::parse(key.to_text().as_bytes()).expect("a ring");
    cr_apps::keys::write_key_file(path, &ring).expect("key file");
}

/// An empty scratch directory for test `name` of test binary `binary`,
/// apart from other processes' (the process id is in its name).
pub fn scratch(binary: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cr-{binary}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// A relay on `listen` (port 0: any) to `server`: 20 Mbit/s and
/// `one_way` of delay each way, a 256 KiB queue, no loss.
pub fn relay(listen: SocketAddr, server: SocketAddr, one_way: Duration) -> RelayHandle {
    let link = LinkConfig {
        rate_bps: 20_000_000,
        delay: one_way,
        queue_bytes: 256 * 1024,
        loss: 0.0,
    };
    let relay = Relay::bind(RelayOptions::symmetric(listen, server, link)).expect("relay");
    RelayHandle::spawn(relay).expect("relay threads")
}

/// An HTTP/3 download of `size` bytes from `server`, keeping tokens in
/// `token_file`, lingering 300 ms for late tokens.
pub fn client_options(server: SocketAddr, size: u64, token_file: &Path) -> ClientOptions {
    ClientOptions {
        server,
        server_name: "localhost".into(),
        size,
        protocol: Protocol::H3,
        token_file: Some(token_file.to_owned()),
        requested_capacity: None,
        linger: Duration::from_millis(300),
        timeout: Duration::from_secs(20),
        ca: Some(certs().join("cert.pem")),
        insecure: false,
        qlog_dir: None,
        bind: None,
        verify: true,
        early_data: true,
    }
}

/// Runs `cr-load` with `args` (split at whitespace; the test certificate
/// is added) and returns what
/// it printed, once it has exited successfully. cr-load starts and kills
/// its own server; this kills only the cr-load it started, and only if it
/// has not finished within `patience`.
pub fn run_cr_load(args: &str, patience: Duration) -> String {
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::sync::mpsc;

    let mut child = Command::new(env!("CARGO_BIN_EXE_cr-load"))
        .args(args.split_whitespace())
        .arg("--certs")
        .arg(certs())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("cr-load starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let (sender, output) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        let _ = sender.send(text);
    });
    let Ok(text) = output.recv_timeout(patience) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("cr-load {args} did not finish within {patience:?}");
    };
    let status = child.wait().expect("cr-load's status");
    assert!(status.success(), "cr-load {args} failed: {status}\n{text}");
    text
}
