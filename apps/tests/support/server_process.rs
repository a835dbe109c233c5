//! A `cr-server` process for tests and benchmarks that need the real
//! program: started on a free loopback port, its address read from the
//! start-up line, its per-connection report lines collected, and killed by
//! its PID when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// A running `cr-server`.
pub struct ServerProcess {
    /// The process.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its per-connection report lines (stdout), as connections end.
    pub reports: Receiver<String>,
}

impl ServerProcess {
    /// Starts `cr-server` on 127.0.0.1 with a free port, the repository's
    /// test certificate, the key ring in `key_file` and the further `args`.
    pub fn start<I, S>(key_file: &Path, args: I) -> ServerProcess
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let certs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../certs");
        let mut child = Command::new(env!("CARGO_BIN_EXE_cr-server"))
            .args(["--listen", "127.0.0.1:0"])
            .arg("--token-key")
            .arg(key_file)
            .arg("--cert")
            .arg(certs.join("cert.pem"))
            .arg("--key")
            .arg(certs.join("key.pem"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cr-server starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        // The start-up line names the address (log lines may come first).
        let mut line = String::new();
        let addr = loop {
            line.clear();
            let read = stderr.read_line(&mut line).expect("cr-server's log");
            assert!(read > 0, "cr-server exited before listening");
            let addr = line
                .split("listening on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|addr| addr.parse().ok());
            if let Some(addr) = addr {
                break addr;
            }
        };
        // Keep draining the log so the server never blocks on it.
        std::thread::spawn(move || for _ in stderr.lines() {});
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (sender, reports) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        ServerProcess {
            child,
            addr,
            reports,
        }
    }

    /// The report line of the next connection that ends.
    pub fn next_report(&self, timeout: Duration) -> String {
        self.reports
            .recv_timeout(timeout)
            .expect("a connection report")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
