//! Interop in real time on loopback: Careful Resume for clients that know
//! nothing about it.
//!
//! A cr-server and a cr-relay (300 ms RTT, 20 Mbit/s, one BDP of queue) run
//! in-process on threads. A client downloads 2 MiB twice; the server mints
//! a token with the path's capacity during the first download, the client
//! echoes it on the second connection, and the server, reading it, resumes
//! the saved window. The server's own connection reports say whether
//! Careful Resume engaged.
//!
//! - quinn, unmodified from crates.io, keeps NEW_TOKEN tokens in its own
//!   `TokenMemoryCache` and presents one on its next connection (RFC 9000,
//!   Section 8.1.3): it speaks hq-interop. The cache keeps the two newest
//!   tokens per server name and hands out the older of them.
//! - cr-client (the library behind the program) keeps its tokens in a token
//!   file, over HTTP/3.
//!
//! Since the server sends its estimate at the end of a burst as two sibling
//! tokens, quinn, too, presents it; and a short connection in between
//! hands the saved set on.
//!
//! Each test takes about 10 s; they run one at a time so their timings do
//! not disturb each other.

#[path = "interop/quinn_client.rs"]
mod quinn_client;
#[path = "interop/quinn_tls.rs"]
mod quinn_tls;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cr_apps::relay::{LinkConfig, Relay, RelayHandle, RelayOptions};
use cr_apps::{
    download, ClientOptions, CongestionControl, ConnectionReport, PresentedToken, Protocol, Server,
    ServerHandle, ServerOptions,
};
use ex_token::{ExToken, KeyRing, SystemRng, TokenKey};

/// Object size: long enough for slow start to matter at this BDP.
const SIZE: u64 = 2 * 1024 * 1024;
/// The path: 300 ms RTT at 20 Mbit/s (BDP 750 kB).
const RTT: Duration = Duration::from_millis(300);
const RATE_BPS: u64 = 20_000_000;
/// Time after the last byte for the server's late NEW_TOKEN frames.
const LINGER: Duration = Duration::from_secs(1);
/// Bound on any one download.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(15);
/// Bound on waiting for the server to report a connection's end.
const REPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// One test at a time: both are timing measurements on a shared machine.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../certs")
}

fn start_server() -> ServerHandle {
    let key = TokenKey::generate(1, &mut SystemRng::new()).expect("token key");
    let server = Server::bind(ServerOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        cert: certs().join("cert.pem"),
        key: certs().join("key.pem"),
        token_keys: KeyRing::new(key),
        token_key_file: None,
        guard: None,
        qlog_dir: None,
        cc: CongestionControl::Cubic,
        slow_start: Default::default(),
        max_jump: None,
        idle_timeout: Duration::from_secs(10),
        small_packets: false,
        rtt_once_per_rtt: false,
        pace: false,
        slow_start_past_saved: false,
        early_data: true,
        jump_budget: Some(Default::default()),
    })
    .expect("server");
    ServerHandle::spawn(server).expect("server thread")
}

fn start_relay(server: &ServerHandle) -> RelayHandle {
    let bdp = RATE_BPS / 8 * RTT.as_millis() as u64 / 1000;
    let link = LinkConfig {
        rate_bps: RATE_BPS,
        delay: RTT / 2,
        queue_bytes: bdp,
        loss: 0.0,
    };
    let listen = "127.0.0.1:0".parse().expect("address");
    let relay =
        Relay::bind(RelayOptions::symmetric(listen, server.local_addr(), link)).expect("relay");
    RelayHandle::spawn(relay).expect("relay threads")
}

/// The server's reports of its next `count` connections, as they end.
fn server_reports(server: &ServerHandle, count: usize) -> Vec<ConnectionReport> {
    let reports: Vec<ConnectionReport> = (0..count)
        .map(|_| {
            server
                .next_report(REPORT_TIMEOUT)
                .expect("a connection report")
        })
        .collect();
    for report in &reports {
        eprintln!("server: {report}");
    }
    reports
}

/// The server's reports of the first (no token) and second (token)
/// connection.
fn first_and_second(server: &ServerHandle) -> (ConnectionReport, ConnectionReport) {
    let mut reports = server_reports(server, 2);
    reports.sort_by_key(|r| r.token_presented);
    let second = reports.pop().expect("two reports");
    let first = reports.pop().expect("two reports");
    (first, second)
}

/// What both tests require of the server's side of the two connections.
fn assert_resumed(first: &ConnectionReport, second: &ConnectionReport) {
    assert!(!first.token_presented, "first connection had a token");
    assert!(!first.engaged(), "first connection cannot resume");
    assert_eq!(first.body_bytes, SIZE);
    assert!(second.token_presented, "second connection had no token");
    assert!(second.address_validated, "the token did not validate");
    assert!(
        second.engaged(),
        "Careful Resume did not engage: {}",
        second.resume_summary()
    );
    assert_eq!(second.body_bytes, SIZE);
    let (Some(c1), Some(c2)) = (first.completion, second.completion) else {
        panic!("a response was not fully acknowledged");
    };
    assert!(
        c2 < c1,
        "server-side completion: resumed {c2:?} vs first {c1:?}"
    );
}

/// Downloads with quinn over `relay`, one connection per size in turn, each
/// lingering after its last byte for the server's late tokens.
fn quinn_downloads(
    relay: &RelayHandle,
    cache: &Arc<quinn_client::WatchedCache>,
    sizes: &[u64],
) -> Vec<quinn_client::QuinnDownload> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let mut endpoint =
            quinn::Endpoint::client("127.0.0.1:0".parse().expect("address")).expect("endpoint");
        endpoint.set_default_client_config(quinn_client::client_config(
            &certs().join("cert.pem"),
            Arc::clone(cache),
        ));
        let mut downloads = Vec::new();
        for &size in sizes {
            let download = quinn_client::download(&endpoint, relay.local_addr(), size, LINGER);
            let download = tokio::time::timeout(DOWNLOAD_TIMEOUT, download)
                .await
                .expect("download timed out")
                .expect("download");
            downloads.push(download);
        }
        // Let the last CONNECTION_CLOSE leave before the runtime stops.
        let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
        downloads
    })
}

#[test]
fn quinn_presents_tokens_and_gets_careful_resume() {
    let _serial = serial();
    let server = start_server();
    let relay = start_relay(&server);
    let cache = Arc::new(quinn_client::WatchedCache::default());

    let downloads = quinn_downloads(&relay, &cache, &[SIZE, SIZE]);

    let stored = cache.stored.lock().unwrap().clone();
    let taken = cache.taken.lock().unwrap().clone();
    let describe = |token: &[u8]| match ExToken::decode(token).map(|t| t.bdp().is_some()) {
        Ok(true) => format!("BDP token, {} bytes", token.len()),
        Ok(false) => format!("address token, {} bytes", token.len()),
        Err(_) => format!("unknown token, {} bytes", token.len()),
    };
    eprintln!(
        "quinn: stored {:?}",
        stored.iter().map(|t| describe(t)).collect::<Vec<_>>()
    );
    eprintln!(
        "quinn: presented {:?}",
        taken
            .iter()
            .map(|t| t.as_deref().map_or("nothing".into(), describe))
            .collect::<Vec<_>>()
    );
    eprintln!(
        "quinn: completion first {:?}, second {:?}",
        downloads[0].completion, downloads[1].completion
    );

    let (first, second) = first_and_second(&server);
    assert!(downloads.iter().all(|d| d.bytes == SIZE));
    assert_eq!(
        taken.first(),
        Some(&None),
        "quinn had a token before connecting"
    );
    assert!(
        taken.get(1).is_some_and(Option::is_some),
        "quinn presented no token on its second connection"
    );
    assert_resumed(&first, &second);
    assert!(
        downloads[1].completion < downloads[0].completion,
        "quinn's second download was not faster: {:?} vs {:?}",
        downloads[1].completion,
        downloads[0].completion
    );
    drop(relay);
    server.stop().expect("server stopped cleanly");
}

/// 2 MiB, 10 KiB, 2 MiB with quinn: the short connection resumes nothing
/// (it has too little to send) and hands the saved set on in its own
/// tokens, so the third connection resumes.
#[test]
fn quinn_keeps_careful_resume_across_a_short_connection() {
    let _serial = serial();
    let server = start_server();
    let relay = start_relay(&server);
    let cache = Arc::new(quinn_client::WatchedCache::default());

    let downloads = quinn_downloads(&relay, &cache, &[SIZE, 10 << 10, SIZE]);

    let reports = server_reports(&server, 3);
    let [first, short, third] = &reports[..] else {
        panic!("three connections");
    };
    assert_eq!(
        (first.body_bytes, short.body_bytes, third.body_bytes),
        (SIZE, 10 << 10, SIZE)
    );
    assert!(short.token_presented && !short.engaged(), "{short}");
    assert!(
        short.resume.is_ok(),
        "the short connection's saved set: {short}"
    );
    assert!(third.token_presented, "{third}");
    assert!(
        third.engaged(),
        "no Careful Resume after the short connection: {}",
        third.resume_summary()
    );
    assert!(
        downloads[2].completion < downloads[0].completion,
        "quinn's third download was not faster: {:?} vs {:?}",
        downloads[2].completion,
        downloads[0].completion
    );
    drop(relay);
    server.stop().expect("server stopped cleanly");
}

#[test]
fn cr_client_keeps_its_token_file_and_gets_careful_resume() {
    let _serial = serial();
    let server = start_server();
    let relay = start_relay(&server);
    let dir = std::env::temp_dir().join(format!("cr-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let token_file = dir.join("tokens.json");
    let _ = std::fs::remove_file(&token_file);

    let options = ClientOptions {
        server: relay.local_addr(),
        server_name: "localhost".into(),
        size: SIZE,
        protocol: Protocol::H3,
        token_file: Some(token_file.clone()),
        requested_capacity: None,
        linger: LINGER,
        timeout: DOWNLOAD_TIMEOUT,
        ca: Some(certs().join("cert.pem")),
        insecure: false,
        qlog_dir: None,
        bind: None,
        verify: true,
        early_data: true,
    };
    let first_download = download(&options).expect("first download");
    eprintln!("cr-client: {first_download}");
    let second_download = download(&options).expect("second download");
    eprintln!("cr-client: {second_download}");

    let (first, second) = first_and_second(&server);
    assert_eq!(first_download.presented, PresentedToken::None);
    assert!(matches!(
        first_download.next_token,
        PresentedToken::Bdp { .. }
    ));
    assert!(matches!(
        second_download.presented,
        PresentedToken::Bdp { .. }
    ));
    assert_eq!((first_download.bytes, second_download.bytes), (SIZE, SIZE));
    assert_eq!(second_download.status, Some(200));
    assert_resumed(&first, &second);
    assert!(
        second_download.completion < first_download.completion,
        "cr-client's second download was not faster: {:?} vs {:?}",
        second_download.completion,
        first_download.completion
    );
    std::fs::remove_dir_all(&dir).ok();
    drop(relay);
    server.stop().expect("server stopped cleanly");
}
