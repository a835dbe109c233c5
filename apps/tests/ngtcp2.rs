//! ngtcp2's client (Debian's `gtlsclient`, installed by the project's
//! set-up), the strictest client the interop set has: it checks what
//! lenient clients ignore, such as RFC 9000 17.2.2's rule that a server's
//! Initial packets carry no token (it drops them, and never connects).
//!
//! - Upstream's example server with Careful Resume sends a Retry to a
//!   client without a token: the client's next Initial carries the Retry
//!   token, and the server's Initials must not echo it.
//! - cr-server: two connections, the client keeping what NEW_TOKEN gave it
//!   in its token file. The packaged client (ngtcp2 0.12) writes the token
//!   file but cannot read it back ("Could not read token in ..."), so its
//!   second connection presents no token; the test checks it completes.
//!
//! Each download is 100 kB over loopback, bounded by the client's own
//! handshake and idle timeouts and by `timeout`.

mod support;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::example::{self, Example};
use support::server_process::ServerProcess;

const SIZE: u64 = 100 * 1024;

/// ngtcp2's client downloads `/<SIZE>` from `server` into `dir`, keeping
/// its token in `token_file`; returns the downloaded file's length.
fn gtlsclient(server: &str, dir: &Path, token_file: &Path) -> u64 {
    let (host, port) = server.rsplit_once(':').expect("host:port");
    let downloads = dir.join("downloads");
    let _ = fs::remove_dir_all(&downloads);
    fs::create_dir_all(&downloads).expect("download directory");
    let output = Command::new("timeout")
        .arg("30")
        .arg("gtlsclient")
        .args(["--quiet", "--exit-on-all-streams-close", "--timeout=10s"])
        .arg(format!("--download={}", downloads.display()))
        .arg(format!("--token-file={}", token_file.display()))
        .args([host, port, &format!("https://{server}/{SIZE}")])
        .output()
        .expect("gtlsclient runs (Debian's ngtcp2-client; make setup installs it)");
    assert!(
        output.status.success(),
        "gtlsclient failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    fs::metadata(downloads.join(SIZE.to_string())).map_or(0, |file| file.len())
}

#[test]
fn ngtcp2s_client_downloads_through_retry_from_upstreams_example() {
    let dir = support::scratch("ngtcp2", "example");
    let example = Example::start(&dir, SIZE);
    let downloaded = gtlsclient(example::ADDR, &dir, &dir.join("token"));
    drop(example);
    assert_eq!(downloaded, SIZE);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn ngtcp2s_client_downloads_from_cr_server_twice_keeping_its_token() {
    let dir = support::scratch("ngtcp2", "cr-server");
    let key_file = dir.join("key");
    support::write_key_file(&key_file);
    let server = ServerProcess::start(&key_file, ["--idle-timeout", "5s"]);
    let addr = server.addr.to_string();
    let token_file = dir.join("token");

    assert_eq!(gtlsclient(&addr, &dir, &token_file), SIZE);
    let token = fs::read_to_string(&token_file).expect("the client kept a NEW_TOKEN token");
    assert!(token.starts_with("-----BEGIN QUIC TOKEN-----"), "{token}");
    assert_eq!(gtlsclient(&addr, &dir, &token_file), SIZE);

    for _ in 0..2 {
        let report = server.next_report(Duration::from_secs(20));
        assert!(report.contains(&format!("bytes={SIZE}")), "{report}");
    }
    drop(server);
    let _ = fs::remove_dir_all(&dir);
}
