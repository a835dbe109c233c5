//! The `cr-server` a load run measures, as a child process: started on a
//! free loopback port with a token key of its own, its per-connection
//! report lines collected as connections end, its memory and CPU time read
//! from `/proc`, and killed by its PID when dropped, whatever ended the
//! run. It runs apart from the clients and the relay so that its figures
//! are its own.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
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
        let child = Command::new(&command.program)
            .args(["--listen", "127.0.0.1:0"])
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
        let addr = listening_addr(stderr)?;
        let (sender, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("cr-load-server-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if sender.send((Instant::now(), line)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| AppError::io("starting a thread", e))?;
        Ok(ServerProcess { child, addr, lines })
    }

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
/// address it listens on, then keeps draining it so the server never
/// blocks on a full pipe.
fn listening_addr(stderr: std::process::ChildStderr) -> Result<SocketAddr, AppError> {
    let (sender, found) = mpsc::channel();
    std::thread::Builder::new()
        .name("cr-load-server-err".into())
        .spawn(move || {
            let mut early = Vec::new();
            let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
            for line in lines.by_ref() {
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
            for _ in lines {}
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
                    lifetime=2.950s sent=1650 lost=3 id=ab odcid=cd";
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
            }
        );
        let off = "peer=127.0.0.1:1 alpn=h3 token=none cr=off: no token requests=1 bytes=5 \
                   completion=- lifetime=0.100s sent=9 lost=0 id=ab odcid=cd";
        let off = ServerLine::parse(off, now).expect("a report line");
        assert_eq!((off.engaged, off.jump), (false, None));
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
