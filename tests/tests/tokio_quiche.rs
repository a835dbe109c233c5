//! tokio-quiche servers gain Careful Resume by wrapping their application
//! (tokio-cr): tokio-quiche 0.20.1 from crates.io, built against the
//! patched quiche, serving HTTP/3 with its own driver, and an unmodified
//! quinn client (HTTP/3 through the h3 crate, quinn's own token cache).
//!
//! Through a relay at 20 Mbit/s and 300 ms the second download resumes
//! (the server's report says so) and finishes at least 1.3x sooner; tokens
//! tampered with, expired, sealed with a foreign key or replayed leave the
//! connection to carry on without Careful Resume. Side by side with
//! cr-server on the same path and client (cr-client), a tokio-quiche
//! server's resumed download is within 5% of cr-server's. The tests run
//! one at a time: two of them are timing measurements.

#[path = "interop/quinn_tls.rs"]
mod quinn_tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use bytes::{Buf, Bytes};
use cr_apps::keys::KeyMaterial;
use cr_apps::relay::{LinkConfig, Relay, RelayHandle, RelayOptions};
use cr_apps::CongestionControl;
use cr_endpoint::careful_resume::Phase;
use cr_endpoint::ex_token::{
    InvalidToken, KeyRing, NoResume, OpenError, SavedPath, SystemRng, TokenKey, TokenServer,
};
use cr_endpoint::ResumeStats;
use quiche_cr_tests::tamper_saved_set;
use quinn::{TokenMemoryCache, TokenStore};
use tokio_cr::serve::{Server, ServerOptions};

const SIZE: u64 = 2 * 1024 * 1024;
const RTT: Duration = Duration::from_millis(300);
/// Time after the last byte for the server's late NEW_TOKEN frames.
const LINGER: Duration = Duration::from_secs(1);
const REPORT_TIMEOUT: Duration = Duration::from_secs(15);

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../certs")
}

/// A tokio-cr server on its own runtime, and the reports of its closed
/// connections.
struct Fixture {
    runtime: tokio::runtime::Runtime,
    server: SocketAddr,
    key: KeyMaterial,
    reports: Receiver<ResumeStats>,
}

impl Fixture {
    fn start() -> Fixture {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let key = KeyMaterial::generate(5).expect("key");
        let token_keys = KeyRing::new(TokenKey::from_bytes(key.id, &key.bytes).expect("key"));
        let server = runtime
            .block_on(Server::bind(ServerOptions {
                listen: "127.0.0.1:0".parse().expect("address"),
                cert: certs().join("cert.pem"),
                key: certs().join("key.pem"),
                token_keys,
                cc: CongestionControl::Cubic,
            }))
            .expect("server");
        let address = server.local_addr();
        let (sender, reports) = mpsc::channel();
        runtime.spawn(server.run(move |_, stats| {
            let _ = sender.send(stats);
        }));
        Fixture {
            runtime,
            server: address,
            key,
            reports,
        }
    }

    fn next_report(&self) -> ResumeStats {
        self.reports
            .recv_timeout(REPORT_TIMEOUT)
            .expect("the server reports the connection")
    }

    /// A quinn endpoint whose connections keep tokens in `tokens`.
    fn client(&self, tokens: Arc<dyn TokenStore>) -> quinn::Endpoint {
        let _guard = self.runtime.enter();
        let mut endpoint =
            quinn::Endpoint::client("127.0.0.1:0".parse().expect("address")).expect("endpoint");
        endpoint.set_default_client_config(quinn_tls::client_config(
            &certs().join("cert.pem"),
            b"h3",
            tokens,
        ));
        endpoint
    }

    /// `GET /<size>` over HTTP/3 on a new connection to `server`; returns
    /// the time from connecting to the last byte.
    fn download(&self, endpoint: &quinn::Endpoint, server: SocketAddr, size: u64) -> Duration {
        self.runtime
            .block_on(h3_download(endpoint, server, size))
            .expect("the download completes")
    }

    /// Mints a BDP token for this client with the server's key (or
    /// another), its saved set started at `saved_at`.
    fn mint(&self, key: &KeyMaterial, saved_at: SystemTime) -> Vec<u8> {
        let ring = KeyRing::new(TokenKey::from_bytes(key.id, &key.bytes).expect("key"));
        let mut tokens = TokenServer::new(ring, SystemRng::new(), Default::default());
        let client = "127.0.0.1:1".parse().expect("address");
        let set = tokens.new_saved_set(client, saved_at).expect("set");
        let path = SavedPath {
            capacity: 500_000,
            rtt: Duration::from_millis(1),
            extras: &[],
        };
        tokens.mint_bdp_token(client, &path, &set).expect("token")
    }
}

async fn h3_download(
    endpoint: &quinn::Endpoint,
    server: SocketAddr,
    size: u64,
) -> Result<Duration, String> {
    let start = Instant::now();
    let connection = endpoint
        .connect(server, "localhost")
        .map_err(|e| format!("connect: {e}"))?
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let (mut driver, mut requests) = h3::client::new(h3_quinn::Connection::new(connection.clone()))
        .await
        .map_err(|e| format!("HTTP/3: {e}"))?;
    let driving = tokio::spawn(async move {
        futures::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let request = http::Request::get(format!("https://localhost/{size}"))
        .body(())
        .map_err(|e| format!("request: {e}"))?;
    let mut stream = requests
        .send_request(request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    stream.finish().await.map_err(|e| format!("finish: {e}"))?;
    let response = stream
        .recv_response()
        .await
        .map_err(|e| format!("response: {e}"))?;
    if response.status() != 200 {
        return Err(format!("status {}", response.status()));
    }
    let mut received = 0u64;
    while let Some(mut chunk) = stream.recv_data().await.map_err(|e| format!("body: {e}"))? {
        received += chunk.remaining() as u64;
        chunk.advance(chunk.remaining());
    }
    let completion = start.elapsed();
    if received != size {
        return Err(format!("{received} bytes of {size}"));
    }
    tokio::time::sleep(LINGER).await;
    connection.close(0u32.into(), b"done");
    driving.abort();
    Ok(completion)
}

/// quinn's cache, recording what the server sent; or, once `present` is
/// set, handing out that token instead.
#[derive(Debug, Default)]
struct Tokens {
    cache: TokenMemoryCache,
    received: Mutex<Vec<Vec<u8>>>,
    present: Mutex<Option<Vec<u8>>>,
}

impl TokenStore for Tokens {
    fn insert(&self, server_name: &str, token: Bytes) {
        self.received.lock().unwrap().push(token.to_vec());
        self.cache.insert(server_name, token);
    }

    fn take(&self, server_name: &str) -> Option<Bytes> {
        match self.present.lock().unwrap().clone() {
            Some(token) => Some(Bytes::from(token)),
            None => self.cache.take(server_name),
        }
    }
}

#[test]
fn a_quinn_client_resumes_on_a_tokio_quiche_server_and_finishes_sooner() {
    let _serial = serial();
    let fixture = Fixture::start();
    let link = LinkConfig {
        rate_bps: 20_000_000,
        delay: RTT / 2,
        queue_bytes: 750_000,
        loss: 0.0,
    };
    let relay = RelayHandle::spawn(
        Relay::bind(RelayOptions {
            seed: 7,
            ..RelayOptions::symmetric(
                "127.0.0.1:0".parse().expect("address"),
                fixture.server,
                link,
            )
        })
        .expect("relay"),
    )
    .expect("relay threads");
    let endpoint = fixture.client(Arc::new(TokenMemoryCache::default()));

    let first = fixture.download(&endpoint, relay.local_addr(), SIZE);
    let first_report = fixture.next_report();
    let second = fixture.download(&endpoint, relay.local_addr(), SIZE);
    let second_report = fixture.next_report();

    assert!(!first_report.token_presented);
    assert!(first_report.saved_for_next.is_some(), "{first_report:?}");
    assert!(second_report.token_presented);
    assert_eq!(second_report.not_resumed, None, "{second_report:?}");
    assert_eq!(
        second_report.phases.first().map(|&(phase, _)| phase),
        Some(Phase::Unvalidated),
        "{second_report:?}"
    );
    let speedup = first.as_secs_f64() / second.as_secs_f64();
    assert!(
        speedup >= 1.3,
        "first {first:?}, resumed {second:?}: {speedup:.2}x"
    );
    eprintln!("tokio-quiche + quinn: first {first:?}, resumed {second:?}, {speedup:.2}x");
}

/// A connection presenting `token` directly (no relay): what the server
/// made of it.
fn present(fixture: &Fixture, token: Vec<u8>) -> ResumeStats {
    let tokens = Arc::new(Tokens::default());
    *tokens.present.lock().unwrap() = Some(token);
    let endpoint = fixture.client(tokens);
    fixture.download(&endpoint, fixture.server, 100_000);
    fixture.next_report()
}

#[test]
fn a_tampered_token_is_refused_and_the_connection_carries_on() {
    let _serial = serial();
    let fixture = Fixture::start();
    let bdp_token = fixture.mint(&fixture.key, SystemTime::now());
    let stats = present(&fixture, tamper_saved_set(&bdp_token));

    assert!(stats.token_presented);
    assert_eq!(
        stats.not_resumed,
        Some(NoResume::Invalid(InvalidToken::Sealing(OpenError::Forged)))
    );
    assert!(stats.phases.is_empty());
}

#[test]
fn an_expired_token_is_refused_and_the_connection_carries_on() {
    let _serial = serial();
    let fixture = Fixture::start();
    let two_hours_ago = SystemTime::now() - Duration::from_secs(2 * 3600);
    let stats = present(&fixture, fixture.mint(&fixture.key, two_hours_ago));
    assert_eq!(stats.not_resumed, Some(NoResume::Expired));
    assert!(stats.phases.is_empty());
}

#[test]
fn a_token_sealed_with_a_foreign_key_is_refused_and_the_connection_carries_on() {
    let _serial = serial();
    let fixture = Fixture::start();
    let foreign = KeyMaterial::generate(9).expect("key");
    let stats = present(&fixture, fixture.mint(&foreign, SystemTime::now()));
    assert_eq!(
        stats.not_resumed,
        Some(NoResume::Invalid(InvalidToken::Sealing(
            OpenError::UnknownKey(9)
        )))
    );
    assert!(stats.phases.is_empty());
}

#[test]
fn a_replayed_token_jumps_at_most_once() {
    let _serial = serial();
    let fixture = Fixture::start();
    let token = fixture.mint(&fixture.key, SystemTime::now());
    let first = present(&fixture, token.clone());
    let replay = present(&fixture, token);
    assert_eq!(first.not_resumed, None, "{first:?}");
    let jumped = |stats: &ResumeStats| stats.phases.iter().any(|(p, _)| *p == Phase::Unvalidated);
    if jumped(&first) {
        // The set was used: claimed by the first, or superseded by what it
        // measured.
        assert!(
            matches!(
                replay.not_resumed,
                Some(NoResume::AlreadyInUse | NoResume::Superseded)
            ),
            "{replay:?}"
        );
        assert!(!jumped(&replay));
    } else {
        // The first ended without jumping (on loopback its RTT is usually
        // below half the saved 1 ms): it released the set for the next.
        assert_eq!(replay.not_resumed, None, "{replay:?}");
    }
}

/// cr-relay in front of `server`: 20 Mbit/s, 300 ms, one BDP of queue.
fn relay_to(server: SocketAddr) -> RelayHandle {
    let link = LinkConfig {
        rate_bps: 20_000_000,
        delay: RTT / 2,
        queue_bytes: 750_000,
        loss: 0.0,
    };
    let listen = "127.0.0.1:0".parse().expect("address");
    RelayHandle::spawn(Relay::bind(RelayOptions::symmetric(listen, server, link)).expect("relay"))
        .expect("relay threads")
}

/// Two cr-client downloads of [`SIZE`] through `relay` sharing a token
/// file: the first and the resumed completion times.
fn first_and_resumed(relay: &RelayHandle, name: &str) -> (Duration, Duration) {
    let token_file =
        std::env::temp_dir().join(format!("cr-tokio-par-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&token_file);
    let options = cr_apps::ClientOptions {
        server: relay.local_addr(),
        server_name: "localhost".into(),
        size: SIZE,
        protocol: cr_apps::Protocol::H3,
        token_file: Some(token_file.clone()),
        requested_capacity: None,
        linger: LINGER,
        timeout: Duration::from_secs(20),
        ca: Some(certs().join("cert.pem")),
        insecure: false,
        qlog_dir: None,
        bind: None,
        // tokio-cr-server's body is not cr-server's pattern.
        verify: false,
        early_data: true,
    };
    let [first, resumed] = [1, 2].map(|n| {
        let report = cr_apps::download(&options).expect("a download");
        eprintln!("{name} #{n}: {report}");
        report
    });
    let _ = std::fs::remove_file(&token_file);
    assert!(
        matches!(resumed.presented, cr_apps::PresentedToken::Bdp { .. }),
        "{name}: the second connection presents a BDP token"
    );
    (first.completion, resumed.completion)
}

#[test]
fn a_tokio_quiche_server_resumes_within_five_percent_of_cr_server() {
    let _serial = serial();
    let fixture = Fixture::start();
    let to_tokio = relay_to(fixture.server);
    let (tokio_first, tokio_resumed) = first_and_resumed(&to_tokio, "tokio-cr");
    drop(to_tokio);

    let key = TokenKey::generate(1, &mut SystemRng::new()).expect("token key");
    let server = cr_apps::Server::bind(cr_apps::ServerOptions {
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
    .expect("cr-server");
    let server = cr_apps::ServerHandle::spawn(server).expect("cr-server thread");
    let to_server = relay_to(server.local_addr());
    let (_, server_resumed) = first_and_resumed(&to_server, "cr-server");

    let speedup = tokio_first.as_secs_f64() / tokio_resumed.as_secs_f64();
    let against_server = tokio_resumed.as_secs_f64() / server_resumed.as_secs_f64();
    eprintln!("tokio-cr: {speedup:.2}x faster resumed, {against_server:.3}x cr-server's time");
    assert!(speedup >= 1.5, "resumed only {speedup:.2}x faster");
    assert!(
        against_server <= 1.05,
        "tokio-cr resumed in {tokio_resumed:?}, cr-server in {server_resumed:?}"
    );
}
