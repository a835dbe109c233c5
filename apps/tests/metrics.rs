//! The metrics endpoint scraped by a real HTTP client after two downloads
//! through the relay: the first connection had no token, the second
//! resumed and jumped.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use cr_apps::keys::KeyMaterial;
use cr_apps::metrics::MetricsEndpoint;
use cr_apps::relay::{LinkConfig, Relay, RelayHandle, RelayOptions};
use cr_apps::{
    download, ClientOptions, CongestionControl, Protocol, Server, ServerHandle, ServerOptions,
};
use cr_endpoint::ex_token::{KeyRing, TokenKey};

fn certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../certs")
}

/// Every sample line of an OpenMetrics page: `name{labels}` to value.
fn samples(page: &str) -> HashMap<String, u64> {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

#[test]
fn a_scrape_shows_one_connection_resumed_and_why_the_other_did_not() {
    let key = KeyMaterial::generate(1).expect("key");
    let server = Server::bind(ServerOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        cert: certs().join("cert.pem"),
        key: certs().join("key.pem"),
        token_keys: KeyRing::new(TokenKey::from_bytes(key.id, &key.bytes).expect("key")),
        token_key_file: None,
        guard: None,
        qlog_dir: None,
        cc: CongestionControl::Cubic,
        max_jump: None,
        idle_timeout: Duration::from_secs(5),
    })
    .expect("server");
    let endpoint =
        MetricsEndpoint::serve("127.0.0.1:0".parse().expect("address"), server.metrics())
            .expect("metrics endpoint");
    let server = ServerHandle::spawn(server).expect("server thread");
    let link = LinkConfig {
        rate_bps: 20_000_000,
        delay: Duration::from_millis(50),
        queue_bytes: 256 * 1024,
        loss: 0.0,
    };
    let relay = RelayHandle::spawn(
        Relay::bind(RelayOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            server: server.local_addr(),
            up: link,
            down: link,
            seed: 1,
        })
        .expect("relay"),
    )
    .expect("relay threads");

    let dir = std::env::temp_dir().join(format!("cr-apps-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let token_file = dir.join("tokens.json");
    let _ = std::fs::remove_file(&token_file);
    let options = ClientOptions {
        server: relay.local_addr(),
        server_name: "localhost".into(),
        size: 1_000_000,
        protocol: Protocol::H3,
        token_file: Some(token_file),
        requested_capacity: None,
        linger: Duration::from_millis(300),
        timeout: Duration::from_secs(20),
        ca: Some(certs().join("cert.pem")),
        insecure: false,
        qlog_dir: None,
    };
    for _ in 0..2 {
        download(&options).expect("download");
        server.next_report(Duration::from_secs(10)).expect("report");
    }

    let url = format!("http://{}/metrics", endpoint.local_addr());
    let mut response = ureq::get(&url).call().expect("scrape");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let page = response.body_mut().read_to_string().expect("page");
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    assert!(page.ends_with("# EOF\n"), "{page}");

    let samples = samples(&page);
    let value = |name: &str| {
        *samples
            .get(name)
            .unwrap_or_else(|| panic!("{name} in {page}"))
    };
    assert_eq!(value("cr_connections_total"), 2);
    // The other connection did not resume because it brought no token.
    assert_eq!(value("cr_tokens_presented_total"), 1);
    assert_eq!(value("cr_resumes_granted_total"), 1);
    assert_eq!(value("cr_jumps_total"), 1);
    assert_eq!(
        value(r#"cr_resumes_refused_total{reason="already_used"}"#),
        0
    );
    assert!(value(r#"cr_tokens_minted_total{kind="bdp"}"#) >= 1);
    assert!(value(r#"cr_tokens_minted_total{kind="address"}"#) >= 2);
    std::fs::remove_dir_all(dir).ok();
}
