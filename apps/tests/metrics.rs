//! The metrics endpoint scraped by a real HTTP client after two downloads
//! through the relay: the first connection had no token, the second
//! resumed and jumped.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use cr_apps::metrics::MetricsEndpoint;
use cr_apps::{download, Server, ServerHandle};

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
    let server = Server::bind(support::server_options()).expect("server");
    let endpoint =
        MetricsEndpoint::serve("127.0.0.1:0".parse().expect("address"), server.metrics())
            .expect("metrics endpoint");
    let server = ServerHandle::spawn(server).expect("server thread");
    let any = "127.0.0.1:0".parse().expect("address");
    let relay = support::relay(any, server.local_addr(), Duration::from_millis(50));

    let dir = std::env::temp_dir().join(format!("cr-apps-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let token_file = dir.join("tokens.json");
    let _ = std::fs::remove_file(&token_file);
    let options = support::client_options(relay.local_addr(), 1_000_000, &token_file);
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
