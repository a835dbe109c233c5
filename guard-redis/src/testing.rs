//! A real `redis-server` on loopback for tests (feature `testing`).
//!
//! [`RedisServer::start`] runs the `redis-server` of the machine (from
//! `PATH`, else `/usr/bin/redis-server`; `make setup` installs it) on
//! 127.0.0.1 at a free port, in a fresh directory of its own, and waits
//! until it answers `PING`. It can be stopped (killed, as a crash would) and
//! restarted on the same port and directory; dropping it kills the one
//! process it started, by its PID, and removes the directory.
//!
//! By default nothing is persisted (`--save "" --appendonly no`);
//! [`RedisServerOptions::appendonly`] keeps every acknowledged write in an
//! append-only file (`appendfsync always`), so a restarted server still
//! holds it. `DEBUG` is enabled for local connections, so that tests can
//! make the server slow (`DEBUG SLEEP`).
//!
//! [`LogCapture`] keeps what a crate logs, for tests that assert on the
//! guard's log lines (and on other crates' lines: the workspace's tests
//! share it).
//!
//! Not for production use: it panics (with a message saying what to do)
//! where a test should fail.

use std::fmt;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The redis crate this crate is built with, for raw connections in tests.
pub use redis;

/// How long a started server has to answer `PING`.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// How a [`RedisServer`] is run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedisServerOptions {
    /// Keep every write in an append-only file, synced before each reply,
    /// so that a restart (even after a kill) remembers it.
    pub appendonly: bool,
}

/// Why a [`RedisServer`] could not be started.
#[derive(Debug)]
pub enum HarnessError {
    /// No `redis-server` on `PATH` nor in `/usr/bin`.
    NotInstalled,
    /// The server could not be started or did not answer `PING` in time;
    /// the message says what happened and ends with its log.
    Start(String),
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HarnessError::NotInstalled => write!(
                f,
                "redis-server is not installed (not on PATH, not /usr/bin/redis-server): \
                 the Redis guard's tests need a real one; run `make setup` \
                 (scripts/setup-deps.sh installs it with apt-get) or install the \
                 redis-server package"
            ),
            HarnessError::Start(why) => write!(f, "redis-server did not start: {why}"),
        }
    }
}

impl std::error::Error for HarnessError {}

/// A `redis-server` process started for a test, on 127.0.0.1.
#[derive(Debug)]
pub struct RedisServer {
    binary: PathBuf,
    options: RedisServerOptions,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server without persistence; panics, naming `make setup`,
    /// when redis-server is not installed.
    #[track_caller]
    pub fn start() -> RedisServer {
        RedisServer::start_with(RedisServerOptions::default())
    }

    /// Starts a server run as `options` says; panics when it cannot.
    #[track_caller]
    pub fn start_with(options: RedisServerOptions) -> RedisServer {
        match RedisServer::try_start(options) {
            Ok(server) => server,
            Err(e) => panic!("{e}"),
        }
    }

    /// Starts a server run as `options` says.
    pub fn try_start(options: RedisServerOptions) -> Result<RedisServer, HarnessError> {
        let binary = find_redis_server().ok_or(HarnessError::NotInstalled)?;
        let dir = scratch_dir().map_err(|e| HarnessError::Start(format!("scratch dir: {e}")))?;
        let mut server = RedisServer {
            binary,
            options,
            port: 0,
            dir,
            child: None,
        };
        // Another process may take the free port between our probe and the
        // server's bind: try a few.
        let mut last = None;
        for _ in 0..5 {
            server.port =
                free_port().map_err(|e| HarnessError::Start(format!("no free port: {e}")))?;
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| HarnessError::Start("no attempt".to_owned())))
    }

    /// The server's URL, `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's working directory (its log, `redis.log`, and its
    /// append-only files).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The PID of the running server process, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A plain connection to the server, for a test's own commands; panics
    /// when it cannot connect.
    #[track_caller]
    pub fn connection(&self) -> redis::Connection {
        let connection = redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)));
        match connection {
            Ok(connection) => connection,
            Err(e) => panic!("cannot connect to the test redis-server: {e}"),
        }
    }

    /// Kills the server (SIGKILL, as a crash would) and waits for it to
    /// exit. Its port stays reserved for [`RedisServer::restart`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Child::kill signals this process's PID only.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and directory (stopping it
    /// first if it runs); panics when it cannot.
    #[track_caller]
    pub fn restart(&mut self) {
        if let Err(e) = self.try_restart() {
            panic!("{e}");
        }
    }

    /// [`RedisServer::restart`], saying why when it cannot (for a soak,
    /// which reports rather than panics).
    pub fn try_restart(&mut self) -> Result<(), HarnessError> {
        self.stop();
        // The port was ours a moment ago; give the kernel a few tries.
        let mut last = None;
        for _ in 0..20 {
            match self.spawn() {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(last.unwrap_or_else(|| HarnessError::Start("no attempt".to_owned())))
    }

    /// Whether the server process is running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    fn log(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// Starts the process and waits until it answers `PING`.
    fn spawn(&mut self) -> Result<(), HarnessError> {
        let port = self.port.to_string();
        let appendonly = if self.options.appendonly { "yes" } else { "no" };
        let mut command = Command::new(&self.binary);
        command
            .args(["--bind", "127.0.0.1", "--port", &port])
            .args(["--save", "", "--appendonly", appendonly])
            .args(["--appendfsync", "always"])
            .args(["--enable-debug-command", "local"])
            .args(["--daemonize", "no", "--protected-mode", "yes"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.log())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = command.spawn().map_err(|e| {
            HarnessError::Start(format!("cannot run {}: {e}", self.binary.display()))
        })?;
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(self.failed(format!("it exited ({status})")));
            }
            if ping(self.port) {
                self.child = Some(child);
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                let _ = child.kill();
                let _ = child.wait();
                return Err(self.failed(format!("no PONG within {READY_WITHIN:?}")));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn failed(&self, what: String) -> HarnessError {
        let log = std::fs::read_to_string(self.log()).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        HarnessError::Start(format!(
            "{} on 127.0.0.1:{}: {what}; its log:\n{}",
            self.binary.display(),
            self.port,
            tail.join("\n")
        ))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `redis-server` on `PATH`, else Debian's.
fn find_redis_server() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("redis-server"))
            .find(|candidate| candidate.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/bin/redis-server");
        debian.is_file().then_some(debian)
    })
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// A new empty directory under the system's temporary directory.
fn scratch_dir() -> std::io::Result<PathBuf> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "cr-guard-redis-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Whether a server on `port` answers `PING` with `+PONG` within a moment.
fn ping(port: u16) -> bool {
    let answer = || -> std::io::Result<bool> {
        let timeout = Duration::from_millis(200);
        let mut stream = TcpStream::connect_timeout(&(Ipv4Addr::LOCALHOST, port).into(), timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.write_all(b"PING\r\n")?;
        let mut reply = [0u8; 7];
        stream.read_exact(&mut reply)?;
        Ok(&reply == b"+PONG\r\n")
    };
    answer().unwrap_or(false)
}

/// Keeps the log records of the crates whose log target starts with a
/// prefix, with their levels, for tests that assert what is logged. A
/// process has one logger: a test binary keeps one capture in a `static`
/// and [`LogCapture::install`]s it.
pub struct LogCapture {
    prefix: &'static str,
    records: Mutex<Vec<(log::Level, String)>>,
}

impl LogCapture {
    /// A capture of the records whose target starts with `prefix` (a
    /// crate's name, e.g. `"cr_guard_redis"`).
    pub const fn new(prefix: &'static str) -> LogCapture {
        LogCapture {
            prefix,
            records: Mutex::new(Vec::new()),
        }
    }

    /// Makes this capture the process's logger, for records at `level` and
    /// more severe. Installing it again changes nothing but the level.
    pub fn install(&'static self, level: log::LevelFilter) {
        // Fails only when a logger is already set: this one, installed by
        // an earlier test of the binary.
        let _ = log::set_logger(self);
        log::set_max_level(level);
    }

    /// How many records at `level` contain every one of `parts`.
    pub fn count(&self, level: log::Level, parts: &[&str]) -> usize {
        self.lock()
            .iter()
            .filter(|(l, line)| *l == level && parts.iter().all(|part| line.contains(part)))
            .count()
    }

    /// The records kept since the last call, oldest first.
    pub fn take(&self) -> Vec<(log::Level, String)> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(log::Level, String)>> {
        // A test that panicked while holding it left whole records.
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl log::Log for LogCapture {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target().starts_with(self.prefix)
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            self.lock()
                .push((record.level(), record.args().to_string()));
        }
    }

    fn flush(&self) {}
}

/// Saved set `id` of the network 10.`network`.`id`.0/24 (site 0), measured
/// at the current second and expiring an hour later: a set the guard
/// grants now, for tests whose sets must differ only by id.
pub fn saved_set(id: u64, network: u8) -> ex_token::SavedSet {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let measured_at = std::time::UNIX_EPOCH + Duration::from_secs(now.as_secs());
    ex_token::SavedSet {
        id: ex_token::SetId(id),
        endpoint: ex_token::RemoteEndpoint::new(
            ex_token::SiteId(0),
            std::net::IpAddr::from([10, network, id as u8, 1]),
            ex_token::AddressPrefixes::SAME_NETWORK,
        ),
        measured_at,
        expiry: measured_at + Duration::from_secs(3600),
    }
}
