//! tokio-cr-server's own code, run in-process as the binary runs it: it
//! makes its token key file, serves `GET /<n>` to a real quiche client over
//! loopback, and reports each connection on one line, a returning client's
//! as presenting its token; and it fails with the reason when it cannot
//! listen.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use cr_apps::client::{download, ClientOptions, PresentedToken};
use cr_apps::{CongestionControl, Protocol};
use tokio_cr::program::{self, Args};

const SIZE: u64 = 256 * 1024;

/// A directory of this test's own, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("tokio-cr-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../certs")
}

fn args(listen: &str, token_key: PathBuf) -> Args {
    Args {
        listen: listen.parse().expect("address"),
        cert: certs().join("cert.pem"),
        key: certs().join("key.pem"),
        token_key,
        cc: CongestionControl::Cubic,
    }
}

#[test]
fn the_program_serves_and_reports_a_returning_client_with_its_token() {
    let scratch = Scratch::new("serves");
    let key_file = scratch.0.join("server.key");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (listening, local) = mpsc::channel();
    let (reporting, lines) = mpsc::channel();
    runtime.spawn(program::serve(
        args("127.0.0.1:0", key_file.clone()),
        move |local| listening.send(local).expect("the test waits"),
        move |line| {
            let _ = reporting.send(line);
        },
    ));
    let server = local
        .recv_timeout(Duration::from_secs(10))
        .expect("the program listens");
    assert!(key_file.exists(), "the token key file is made on first use");

    let fetch = || {
        download(&ClientOptions {
            server,
            server_name: "quiche-cr.test".into(),
            size: SIZE,
            protocol: Protocol::H3,
            token_file: Some(scratch.0.join("client.tokens")),
            requested_capacity: None,
            linger: Duration::from_millis(200),
            timeout: Duration::from_secs(10),
            ca: None,
            insecure: true,
            qlog_dir: None,
            bind: None,
            verify: false,
            early_data: true,
        })
        .expect("the download completes")
    };
    let next_line = || {
        lines
            .recv_timeout(Duration::from_secs(10))
            .expect("the program reports the connection")
    };

    let first = fetch();
    assert_eq!(first.bytes, SIZE);
    assert_eq!(first.presented, PresentedToken::None);
    let line = next_line();
    assert!(
        line.contains(" token=none resumed=no (no token) "),
        "{line}"
    );

    let second = fetch();
    assert_eq!(second.bytes, SIZE);
    assert_ne!(second.presented, PresentedToken::None);
    let line = next_line();
    assert!(line.contains(" token=presented "), "{line}");
    assert!(line.starts_with("peer=127.0.0.1:"), "{line}");
}

#[test]
fn a_program_that_cannot_listen_fails_with_the_reason() {
    let scratch = Scratch::new("fails");
    // TEST-NET-1: no interface of this machine has it.
    let exit = program::main(args("192.0.2.1:4433", scratch.0.join("server.key")));
    assert_eq!(exit, ExitCode::FAILURE);
}
