//! Upstream quiche's HTTP/3 server example with Careful Resume
//! (endpoint/examples/http3-server-cr.rs), run as its users run it: from a
//! directory holding examples/cert.crt, examples/cert.key and the files of
//! examples/root, listening on 127.0.0.1:4433, with upstream's Retry for
//! clients that present no token it recognises.

use std::fs;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where upstream's example listens.
pub const ADDR: &str = "127.0.0.1:4433";

/// The example's binary, as `cargo test` of the workspace builds it
/// beside the tests (examples are built with the tests). A nested `cargo
/// build` would resolve quiche's features without the dev-dependencies and
/// overwrite the `libquiche.rlib` the other tests link against.
fn binary() -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/
    let exe = std::env::current_exe().expect("the test's path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let example = profile.join("examples/http3-server-cr");
    assert!(
        example.exists(),
        "{} is missing: run the workspace's tests (make test, or cargo test --workspace), \
         which build cr-endpoint's examples",
        example.display()
    );
    example
}

/// Upstream's example, killed (by its PID) when dropped.
pub struct Example(Child);

impl Example {
    /// Starts the example in `dir`, after giving it upstream's certificate
    /// and key and a file of `size` bytes at `/<size>`.
    pub fn start(dir: &Path, size: u64) -> Example {
        let examples = dir.join("examples");
        fs::create_dir_all(examples.join("root")).expect("examples/root");
        let upstream = Path::new(env!("CARGO_MANIFEST_DIR")).join("../quiche/patched/examples");
        for file in ["cert.crt", "cert.key"] {
            fs::copy(upstream.join(file), examples.join(file)).expect("upstream's certificate");
        }
        let object = vec![b'x'; usize::try_from(size).expect("a size in memory")];
        fs::write(examples.join("root").join(size.to_string()), object).expect("the object");

        let addr: SocketAddr = ADDR.parse().expect("address");
        UdpSocket::bind(addr)
            .unwrap_or_else(|e| panic!("{ADDR}, where upstream's example listens, is taken: {e}"));
        let child = Command::new(binary())
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the example starts");
        let example = Example(child);
        // Listening once the address is taken.
        let deadline = Instant::now() + Duration::from_secs(10);
        while UdpSocket::bind(addr).is_ok() {
            assert!(Instant::now() < deadline, "the example never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        example
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
