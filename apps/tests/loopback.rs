//! The programs' library end to end on loopback, in a second or two of
//! real time: both protocols, tokens kept in a file and presented, and the
//! relay's delay showing in the handshake.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use cr_apps::relay::{LinkConfig, Relay, RelayHandle, RelayOptions};
use cr_apps::{download, ClientOptions, PresentedToken, Protocol, Server, ServerHandle};

fn server() -> ServerHandle {
    ServerHandle::spawn(Server::bind(support::server_options()).expect("server")).expect("thread")
}

fn options(server: std::net::SocketAddr, protocol: Protocol, token_file: PathBuf) -> ClientOptions {
    ClientOptions {
        protocol,
        linger: Duration::from_millis(100),
        timeout: Duration::from_secs(10),
        ..support::client_options(server, 100_000, &token_file)
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cr-apps-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("tokens.json");
    let _ = std::fs::remove_file(&file);
    file
}

#[test]
fn both_protocols_download_and_the_second_connection_presents_a_token() {
    let server = server();
    for protocol in [Protocol::H3, Protocol::Hq] {
        let file = scratch(protocol.name());
        let options = options(server.local_addr(), protocol, file.clone());
        let first = download(&options).expect("first download");
        assert_eq!(first.bytes, 100_000);
        assert_eq!(first.presented, PresentedToken::None);
        assert!(first.next_token.is_some(), "no token kept");
        assert!(file.exists(), "token file not written");

        let second = download(&options).expect("second download");
        assert_eq!(second.bytes, 100_000);
        assert!(second.presented.is_some(), "no token presented");
        if protocol == Protocol::H3 {
            assert_eq!(second.status, Some(200));
        }

        let mut reports: Vec<_> = (0..2)
            .map(|_| server.next_report(Duration::from_secs(5)).expect("report"))
            .collect();
        reports.sort_by_key(|r| r.token_presented);
        assert_eq!(reports[0].protocol, Some(protocol));
        assert!(!reports[0].address_validated);
        assert!(reports[1].token_presented && reports[1].address_validated);
        assert!(reports
            .iter()
            .all(|r| r.body_bytes == 100_000 && r.completion.is_some()));
        let line = reports[1].to_string();
        assert!(line.contains("token=valid"), "{line}");
    }
    server.stop().expect("clean stop");
}

#[test]
fn the_relay_delays_both_directions() {
    let server = server();
    let link = LinkConfig {
        rate_bps: 100_000_000,
        delay: Duration::from_millis(50),
        queue_bytes: 1 << 20,
        loss: 0.0,
    };
    let relay = RelayHandle::spawn(
        Relay::bind(RelayOptions::symmetric(
            "127.0.0.1:0".parse().expect("address"),
            server.local_addr(),
            link,
        ))
        .expect("relay"),
    )
    .expect("relay threads");
    let mut options = options(relay.local_addr(), Protocol::Hq, scratch("relay"));
    options.token_file = None;
    let report = download(&options).expect("download");
    assert!(report.handshake >= Duration::from_millis(100), "{report}");
    assert!(report.first_byte >= Duration::from_millis(200), "{report}");
    let stats = relay.stats();
    assert!(
        stats.up.forwarded > 0 && stats.down.forwarded > 70,
        "{stats}"
    );
    assert_eq!(stats.up.queue_drops + stats.down.queue_drops, 0, "{stats}");
}
