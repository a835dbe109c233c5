//! The `cr-server` a load run measures, as a child process: started on a
//! free loopback port with a token key of its own, its per-connection
//! report lines collected as connections end, its memory and CPU time read
//! from `/proc`, its standard error tallied (lines, panics, the metrics
//! address), and killed by its PID when dropped, whatever ended the run.
//! It runs apart from the clients and the relay so that its figures are
//! its own. A soak kills it and starts it again on the same port
//! ([`ServerProcess::kill`], [`ServerProcess::restart`]).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::AppError;

/// How long the server may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Standard error lines kept to explain a server that did not start.
const STARTUP_LINES: usize = 20;

/// How to start the server.
#[derive(Clone, Debug)]
pub struct ServerCommand {
    /// The `cr-server` executable.
    pub program: PathBuf,
    /// The directory holding `cert.pem` and `key.pem`.
    pub certs: PathBuf,
    /// Further arguments (e.g. `--jump-budget 0`).
    pub args: Vec<String>,
}

/// One line the server printed for a connection that ended.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerLine {
    /// When cr-load read it: about when the connection ended.
    pub at: Instant,
    /// Whether Careful Resume jumped (`cr=engaged`).
    pub engaged: bool,
    /// The window it jumped to, in bytes, when it did.
    pub jump: Option<u64>,
    /// Response body bytes handed to quiche.
    pub bytes: u64,
    /// Packets sent.
    pub sent: u64,
    /// Packets declared lost.
    pub lost: u64,
    /// From the client's first packet to the connection's end.
    pub lifetime: Duration,
    /// The saved set it resumed (or was to resume) from (`set=`), if any.
    pub set: Option<u64>,
}

impl ServerLine {
    /// Reads a `cr-server` report line (`ConnectionReport`'s format);
    /// `None` for any other line.
    pub fn parse(line: &str, at: Instant) -> Option<ServerLine> {
        let field = |name: &str| {
            let start = line.find(&format!(" {name}="))? + name.len() + 2;
            line[start..].split_whitespace().next()
        };
        let number = |name: &str| field(name)?.parse::<u64>().ok();
        let lifetime = field("lifetime")?.strip_suffix('s')?.parse::<f64>().ok()?;
        let engaged = field("cr")? == "engaged";
        // `cr=engaged (saved cwnd <n> B, rtt <n> ms, jump <n> B)`
        let jump = line
            .split_once(", jump ")
            .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
            .filter(|_| engaged);
        Some(ServerLine {
            at,
            engaged,
            jump,
            bytes: number("bytes")?,
            sent: number("sent")?,
            lost: number("lost")?,
            lifetime: Duration::try_from_secs_f64(lifetime).ok()?,
            set: field("set").and_then(|id| u64::from_str_radix(id, 16).ok()),
        })
    }
}

/// What `/proc` says of a process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// Resident memory now, KiB (`VmRSS`).
    pub rss_kib: u64,
    /// The most resident memory so far, KiB (`VmHWM`).
    pub peak_rss_kib: u64,
    /// User and system CPU time so far.
    pub cpu: Duration,
}

/// A running `cr-server`.
pub struct ServerProcess {
    child: Killed,
    addr: SocketAddr,
    lines: Receiver<(Instant, String)>,
    /// Feeds `lines`; each start's reader thread gets a clone, so the lines
    /// of a killed server are still read.
    sender: Sender<(Instant, String)>,
    output: Arc<ServerOutput>,
    command: ServerCommand,
    key_file: PathBuf,
}

/// The server's output, tallied across restarts: in a soak the log must
/// stay small and no thread may panic.
#[derive(Debug, Default)]
pub struct ServerOutput {
    lines: AtomicU64,
    reports: AtomicU64,
    panics: Mutex<Vec<String>>,
    metrics: Mutex<Option<SocketAddr>>,
    last: Mutex<VecDeque<String>>,
}

/// Most panic lines kept.
const PANICS_KEPT: usize = 10;

/// Standard error lines kept, the last ones, to say what the log holds.
const LAST_KEPT: usize = 3;

impl ServerOutput {
    /// Lines printed on standard error so far, by every start.
    pub fn lines(&self) -> u64 {
        self.lines.load(Ordering::Relaxed)
    }

    /// Lines printed on standard output (one per connection that
    /// completed its handshake) so far, by every start.
    pub fn report_lines(&self) -> u64 {
        self.reports.load(Ordering::Relaxed)
    }

    /// Lines saying a thread panicked (the first few).
    pub fn panics(&self) -> Vec<String> {
        self.panics.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The last few lines of standard error.
    pub fn last_lines(&self) -> Vec<String> {
        self.last
            .lock()
            .map(|last| last.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Where the last start serves its metrics (`--metrics`), once it said.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.lock().ok().and_then(|m| *m)
    }

    fn read(&self, line: &str) {
        self.lines.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut last) = self.last.lock() {
            if last.len() == LAST_KEPT {
                last.pop_front();
            }
            last.push_back(line.to_owned());
        }
        if line.contains("panicked") {
            if let Ok(mut panics) = self.panics.lock() {
                if panics.len() < PANICS_KEPT {
                    panics.push(line.to_owned());
                }
            }
        }
        let metrics = line
            .split("metrics on http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next()?.parse::<SocketAddr>().ok());
        if let (Some(addr), Ok(mut slot)) = (metrics, self.metrics.lock()) {
            *slot = Some(addr);
        }
    }
}

/// A child process killed, by its PID, when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl ServerProcess {
    /// Starts the server on 127.0.0.1 (any port), its token key ring
    /// generated at `key_file`, and waits until it listens.
    pub fn start(command: &ServerCommand, key_file: &Path) -> Result<ServerProcess, AppError> {
        let (sender, lines) = mpsc::channel();
        let output = Arc::new(ServerOutput::default());
        let any_port = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let (child, addr) = spawn(command, key_file, any_port, &sender, &output)?;
        Ok(ServerProcess {
            child,
            addr,
            lines,
            sender,
            output,
            command: command.clone(),
            key_file: key_file.to_owned(),
        })
    }

    /// Kills the server (SIGKILL, by its PID, as a crash would) and waits
    /// for it to exit; its open connections end without a word.
    pub fn kill(&mut self) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
    }

    /// Starts the server again (killing it first if it runs) on the same
    /// port, with the same key file and arguments, and waits until it
    /// listens.
    pub fn restart(&mut self) -> Result<(), AppError> {
        self.kill();
        let (child, _) = spawn(
            &self.command,
            &self.key_file,
            self.addr,
            &self.sender,
            &self.output,
        )?;
        self.child = child;
        Ok(())
    }

    /// What the server printed (lines, panics, its metrics address),
    /// across restarts.
    pub fn output(&self) -> &ServerOutput {
        &self.output
    }
}

/// Runs the server at `listen`; returns it once it listens, and where.
fn spawn(
    command: &ServerCommand,
    key_file: &Path,
    listen: SocketAddr,
    sender: &Sender<(Instant, String)>,
    tally: &Arc<ServerOutput>,
) -> Result<(Killed, SocketAddr), AppError> {
    let child = Command::new(&command.program)
        .arg("--listen")
        .arg(listen.to_string())
        .arg("--token-key")
        .arg(key_file)
        .arg("--cert")
        .arg(command.certs.join("cert.pem"))
        .arg("--key")
        .arg(command.certs.join("key.pem"))
        .args(&command.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| AppError::io(format!("starting {}", command.program.display()), e))?;
    // From here on, an error kills the process.
    let mut child = Killed(child);
    let (Some(stderr), Some(stdout)) = (child.0.stderr.take(), child.0.stdout.take()) else {
        return Err(AppError::Invalid("cr-server's output is not piped".into()));
    };
    let addr = listening_addr(stderr, Arc::clone(tally))?;
    let sender = sender.clone();
    let tally = Arc::clone(tally);
    std::thread::Builder::new()
        .name("cr-load-server-out".into())
        .spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                tally.reports.fetch_add(1, Ordering::Relaxed);
                if sender.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| AppError::io("starting a thread", e))?;
    Ok((child, addr))
}

impl ServerProcess {
    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The report lines of the connections that ended since the last
    /// call, waiting until there are at least `expected` or `patience` has
    /// passed.
    pub fn take_lines(&self, expected: usize, patience: Duration) -> Vec<ServerLine> {
        let deadline = Instant::now() + patience;
        let mut lines = Vec::new();
        loop {
            let received = if lines.len() >= expected {
                self.lines.try_recv().map_err(|_| RecvTimeoutError::Timeout)
            } else {
                self.lines
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            };
            match received {
                Ok((at, line)) => lines.extend(ServerLine::parse(&line, at)),
                Err(_) => return lines,
            }
        }
    }

    /// The server's memory and CPU time, from `/proc` (Linux only).
    pub fn usage(&self) -> Result<Usage, AppError> {
        usage(self.child.0.id())
    }
}

/// Reads the server's standard error until its start-up line names the
/// address it listens on, then keeps draining it (into `tally`) so the
/// server never blocks on a full pipe.
fn listening_addr(
    stderr: std::process::ChildStderr,
    tally: Arc<ServerOutput>,
) -> Result<SocketAddr, AppError> {
    let (sender, found) = mpsc::channel();
    std::thread::Builder::new()
        .name("cr-load-server-err".into())
        .spawn(move || {
            let mut early = Vec::new();
            let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
            for line in lines.by_ref() {
                tally.read(&line);
                let addr = line
                    .split("listening on ")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|addr| addr.parse::<SocketAddr>().ok());
                if let Some(addr) = addr {
                    let _ = sender.send(Ok(addr));
                    break;
                }
                if early.len() < STARTUP_LINES {
                    early.push(line);
                }
            }
            // Ended before listening: say what it printed.
            let _ = sender.send(Err(early.join("\n")));
            for line in lines {
                tally.read(&line);
            }
        })
        .map_err(|e| AppError::io("starting a thread", e))?;
    match found.recv_timeout(START_TIMEOUT) {
        Ok(Ok(addr)) => Ok(addr),
        Ok(Err(printed)) if printed.is_empty() => Err(AppError::Invalid(
            "cr-server exited before listening, printing nothing".into(),
        )),
        Ok(Err(printed)) => Err(AppError::Invalid(format!(
            "cr-server exited before listening:\n{printed}"
        ))),
        Err(_) => Err(AppError::Timeout(format!(
            "cr-server not listening after {START_TIMEOUT:?}"
        ))),
    }
}

/// A process's memory and CPU time from `/proc/<pid>/status` and `stat`.
fn usage(pid: u32) -> Result<Usage, AppError> {
    let read = |file: &str| {
        let path = format!("/proc/{pid}/{file}");
        std::fs::read_to_string(&path).map_err(|e| AppError::io(format!("reading {path}"), e))
    };
    let status = read("status")?;
    let kib = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .ok_or_else(|| AppError::Invalid(format!("/proc/{pid}/status has no {name}")))
    };
    let stat = read("stat")?;
    let ticks = cpu_ticks(&stat)
        .ok_or_else(|| AppError::Invalid(format!("/proc/{pid}/stat: unexpected format")))?;
    Ok(Usage {
        rss_kib: kib("VmRSS")?,
        peak_rss_kib: kib("VmHWM")?,
        cpu: Duration::from_secs_f64(ticks as f64 / clock_ticks_per_second() as f64),
    })
}

/// User plus system time (`utime`, `stime`: fields 14 and 15) of a
/// `/proc/<pid>/stat` line, in clock ticks. The command name (field 2) is
/// in parentheses and may hold spaces: fields are counted after its `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let mut after_name = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    // Field 3 is the first after the name: utime is the 12th from there.
    let utime: u64 = after_name.nth(11)?.parse().ok()?;
    let stime: u64 = after_name.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The kernel's clock ticks per second for CPU times (`USER_HZ`).
fn clock_ticks_per_second() -> i64 {
    #[cfg(target_os = "linux")]
    if let Ok(Some(hz)) = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        if hz > 0 {
            return hz;
        }
    }
    // What Linux reports on every architecture.
    100
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_lines_parse() {
        let now = Instant::now();
        let line = "peer=127.1.0.1:39064 alpn=h3 token=valid cr=engaged (saved cwnd 432675 B, \
                    rtt 301 ms, jump 216337 B) requests=1 bytes=2097152 completion=1.820s \
                    lifetime=2.950s sent=1650 lost=3 id=ab odcid=cd set=00000000000000ff";
        let parsed = ServerLine::parse(line, now).expect("a report line");
        assert_eq!(
            parsed,
            ServerLine {
                at: now,
                engaged: true,
                jump: Some(216_337),
                bytes: 2_097_152,
                sent: 1650,
                lost: 3,
                lifetime: Duration::from_millis(2950),
                set: Some(255),
            }
        );
        let off = "peer=127.0.0.1:1 alpn=h3 token=none cr=off: no token requests=1 bytes=5 \
                   completion=- lifetime=0.100s sent=9 lost=0 id=ab odcid=cd";
        let off = ServerLine::parse(off, now).expect("a report line");
        assert_eq!((off.engaged, off.jump, off.set), (false, None, None));
        assert_eq!(ServerLine::parse("cr-server: listening on x", now), None);
        assert_eq!(ServerLine::parse("", now), None);
    }

    #[test]
    fn cpu_time_is_counted_after_the_command_name() {
        let stat = "4242 (cr server) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0";
        assert_eq!(cpu_ticks(stat), Some(300));
        assert_eq!(cpu_ticks("4242 (x) S 1 2"), None);
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn this_process_has_usage() {
        if cfg!(target_os = "linux") {
            let own = usage(std::process::id()).expect("/proc");
            assert!(own.rss_kib > 0 && own.peak_rss_kib >= own.rss_kib);
        }
    }
}
