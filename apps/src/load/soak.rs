//! `cr-load --soak`: the load under faults. Clients
//! download continuously through the relay from a `cr-server` that claims
//! saved sets in a `redis-server` of the soak's own, while a schedule
//! injects, one at a time and at known times: a loss burst in the relay,
//! Redis killed (SIGKILL) and restarted on its port and directory, the
//! token key ring rotated (the file rewritten, the old key kept as the
//! previous one), `cr-server` killed and restarted on its port, and a
//! flood of garbage datagrams and forged Initials ([`super::flood`]).
//!
//! This module owns the schedule ([`schedule`]), the run ([`run_soak`]:
//! the faults on the calling thread, a thread per client, a client whose
//! download fails retrying it a bounded number of times), and the
//! per-fault accounting ([`FaultReport`], [`SoakSummary`]): downloads
//! started, completed and failed after every retry, bytes verified, the
//! longest time a client saw no body byte, the server's counters
//! (`--metrics`, scraped at each window's end and before a kill), its
//! standard error (lines written, panics) and its per-connection lines
//! (engaged connections and their saved set ids, `set=`). A download is
//! counted in the window it ended in (after its retries: a download a
//! fault cut short ends in that fault's window), a server line in the
//! window its connection started in.
//!
//! Redis runs with an append-only file synced before each reply
//! (`cr_guard_redis::testing`), so a killed Redis forgets no claim: what
//! the soak checks is that the guard fails closed while Redis is away and
//! recovers by itself, and that no saved set is ever used twice.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use cr_guard_redis::testing::{RedisServer, RedisServerOptions};
use serde::Serialize;

use super::flood::{Flood, FloodOptions, FloodStats};
use super::server::ServerLine;
use super::{Bench, LoadOptions};
use crate::client::{download_watched, ClientOptions, Stalls};
use crate::error::AppError;
use crate::keys::load_key_ring;

/// The longest a client may see no body byte before the soak fails.
pub const MAX_STALL: Duration = Duration::from_secs(10);

/// The schedule's unit: one cycle of every fault takes this long at scale
/// 1 (the times below are for it), and is scaled to shorter cycles.
const REFERENCE_CYCLE: Duration = Duration::from_secs(120);

/// Pause between a failed attempt and its retry.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// What a soak needs.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    /// The clients, path and server (`until` is ignored).
    pub load: LoadOptions,
    /// How long the clients keep starting downloads.
    pub duration: Duration,
    /// One round of every fault takes this long; a longer run repeats it.
    pub cycle: Duration,
    /// Datagrams per second of the flood (garbage and forged Initials).
    pub flood_rate: u32,
    /// Attempts after the first for a download that fails.
    pub retries: u32,
    /// A client gives up an attempt that received no body byte for this
    /// long (and retries).
    pub give_up_after: Duration,
}

/// A fault the schedule injects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// Nothing: the reference.
    Calm,
    /// Random loss of both relay directions at this rate for a while.
    LossBurst {
        /// Probability of a loss, 0 to 1.
        loss: f64,
        /// How long.
        lasting: Duration,
    },
    /// Redis killed (SIGKILL by its PID), restarted after `down`.
    RedisRestart {
        /// How long Redis is away.
        down: Duration,
    },
    /// The key file rewritten: a new current key, the old one kept after it.
    KeyRotation,
    /// cr-server killed (SIGKILL by its PID), restarted after `down` on the
    /// same port, key file and Redis.
    ServerRestart {
        /// How long the server is away.
        down: Duration,
    },
    /// Garbage datagrams and forged Initials at the flood rate.
    Flood {
        /// How long.
        lasting: Duration,
    },
}

impl Fault {
    /// The fault's name in the report.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Calm => "calm",
            Fault::LossBurst { .. } => "loss_burst",
            Fault::RedisRestart { .. } => "redis_restart",
            Fault::KeyRotation => "key_rotation",
            Fault::ServerRestart { .. } => "server_restart",
            Fault::Flood { .. } => "flood",
        }
    }
}

/// One window of the schedule: a fault injected at its start, its effects
/// counted until its end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Which round of the faults (from 0).
    pub cycle: u32,
    /// What is injected.
    pub fault: Fault,
    /// Start, from the run's start.
    pub from: Duration,
    /// End.
    pub to: Duration,
}

/// The windows of a run of `duration`: rounds of `cycle` (the whole run
/// when shorter), each calm, then a loss burst (30 % for 2 s), Redis away
/// (5 s), a key rotation, cr-server away (2 s), a flood (20 s), at the
/// times of a 120 s round scaled to `cycle` (the faults lasting at least
/// 1 s, Redis 2 s). A remainder shorter than a round is calm.
pub fn schedule(duration: Duration, cycle: Duration) -> Result<Vec<Window>, AppError> {
    let cycle = cycle.min(duration);
    if cycle < Duration::from_secs(10) {
        return Err(AppError::Invalid(format!(
            "a soak round of {cycle:?} is too short for its faults (at least 10 s)"
        )));
    }
    let scale = cycle.as_secs_f64() / REFERENCE_CYCLE.as_secs_f64();
    let at = |seconds: f64| Duration::from_secs_f64(seconds * scale);
    let lasting = |seconds: f64, floor: f64| Duration::from_secs_f64((seconds * scale).max(floor));
    // (fault, start in the 120 s round); each window ends where the next
    // starts.
    let round = [
        (Fault::Calm, 0.0),
        (
            Fault::LossBurst {
                loss: 0.3,
                lasting: lasting(2.0, 1.0),
            },
            10.0,
        ),
        (
            Fault::RedisRestart {
                down: lasting(5.0, 2.0),
            },
            25.0,
        ),
        (Fault::KeyRotation, 45.0),
        (
            Fault::ServerRestart {
                down: lasting(2.0, 1.0),
            },
            65.0,
        ),
        (
            Fault::Flood {
                lasting: lasting(20.0, 1.0),
            },
            85.0,
        ),
    ];
    let rounds = (duration.as_secs_f64() / cycle.as_secs_f64()).floor() as u32;
    let mut windows = Vec::new();
    for n in 0..rounds {
        let base = cycle * n;
        for (i, &(fault, start)) in round.iter().enumerate() {
            let end = round.get(i + 1).map_or(cycle, |&(_, next)| at(next));
            windows.push(Window {
                cycle: n,
                fault,
                from: base + at(start),
                to: base + end,
            });
        }
    }
    let covered = cycle * rounds;
    if covered < duration {
        windows.push(Window {
            cycle: rounds,
            fault: Fault::Calm,
            from: covered,
            to: duration,
        });
    }
    Ok(windows)
}

/// What a set of downloads came to, in a window's line or the summary's.
#[derive(Clone, Debug, Serialize)]
pub struct DownloadTally {
    /// Downloads (after their retries).
    pub downloads: usize,
    /// Of those, completed with every byte verified.
    pub completed: usize,
    /// Failed after every retry.
    pub failed: usize,
    /// Attempts beyond the first, summed.
    pub retries: u32,
    /// Body bytes verified.
    pub bytes_verified: u64,
    /// Body bytes asked for.
    pub bytes_expected: u64,
    /// The longest a client saw no body byte, seconds (retries included).
    pub max_stall_s: f64,
}

impl DownloadTally {
    /// The tally of `downloads` of `size` bytes each.
    fn of<'a>(downloads: impl IntoIterator<Item = &'a Download>, size: u64) -> DownloadTally {
        let downloads: Vec<&Download> = downloads.into_iter().collect();
        let completed = downloads.iter().filter(|d| d.completed).count();
        DownloadTally {
            downloads: downloads.len(),
            completed,
            failed: downloads.len() - completed,
            retries: downloads.iter().map(|d| d.attempts - 1).sum(),
            bytes_verified: downloads.iter().map(|d| d.verified).sum(),
            bytes_expected: downloads.len() as u64 * size,
            max_stall_s: downloads
                .iter()
                .map(|d| d.longest_stall)
                .max()
                .unwrap_or_default()
                .as_secs_f64(),
        }
    }
}

/// One fault window's line.
#[derive(Clone, Debug, Serialize)]
pub struct FaultReport {
    /// The fault ([`Fault::name`]).
    pub fault: &'static str,
    /// Which round.
    pub cycle: u32,
    /// The window, seconds from the run's start.
    pub from_s: f64,
    /// Its end.
    pub to_s: f64,
    /// The downloads that ended in the window (after their retries).
    #[serde(flatten)]
    pub downloads: DownloadTally,
    /// Connections started in the window that jumped (server lines).
    pub engaged: usize,
    /// Of those, jumps from a saved set another connection had jumped
    /// from (must be 0).
    pub sets_used_twice: usize,
    /// For a restart: seconds from the restart to the start of the first
    /// connection that jumped again.
    pub first_engaged_after_s: Option<f64>,
    /// Connections the server accepted (its counter).
    pub connections: u64,
    /// Connections that ended before completing their handshake.
    pub handshakes_incomplete: u64,
    /// Tokens with saved capacity that did not resume, by reason (the
    /// non-zero ones).
    pub refused: BTreeMap<String, u64>,
    /// Lines the server wrote on standard error.
    pub server_log_lines: u64,
    /// Lines it wrote on standard output: one per connection that
    /// completed its handshake.
    pub server_report_lines: u64,
    /// The last lines of its standard error at the window's end, when it
    /// wrote any during the window.
    pub server_log_tail: Vec<String>,
    /// What the flood sent, in a flood window.
    pub flood: Option<FloodStats>,
    /// What was done, and anything that went wrong doing it.
    pub notes: Vec<String>,
    /// The first download failure, if any.
    pub first_error: Option<String>,
}

/// The whole soak's line, and whether its target is met.
#[derive(Clone, Debug, Serialize)]
pub struct SoakSummary {
    /// `summary`, to tell this line from the windows'.
    pub fault: &'static str,
    /// Clients.
    pub clients: usize,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Every download started (target: none failed, no stall over 10 s).
    #[serde(flatten)]
    pub downloads: DownloadTally,
    /// Connections that jumped.
    pub engaged: usize,
    /// Jumps from a saved set already jumped from (target: 0).
    pub sets_used_twice: usize,
    /// Server lines saying a thread panicked (target: 0).
    pub server_panics: usize,
    /// Refusals of the clients' own tokens as `unknown_key`, `tampered` or
    /// `malformed` outside the flood windows: tokens minted before a
    /// rotation refused during the overlap (target: 0).
    pub real_tokens_refused: u64,
    /// Forged Initials sent by the floods.
    pub forged_initials: u64,
    /// Server log lines (standard error) written during the floods; its
    /// standard output has one line per connection that completed its
    /// handshake, which forged Initials never do.
    pub flood_log_lines: u64,
    /// Connections that ended before completing their handshake (all).
    pub handshakes_incomplete: u64,
    /// Whether every target above is met.
    pub target_met: bool,
}

/// A soak's lines: one per window, then the summary.
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// Per window.
    pub windows: Vec<FaultReport>,
    /// The whole run.
    pub summary: SoakSummary,
}

/// One download as the soak saw it, retries included.
#[derive(Clone, Debug)]
struct Download {
    ended: Duration,
    attempts: u32,
    completed: bool,
    verified: u64,
    longest_stall: Duration,
    error: Option<String>,
}

/// What happened in a window besides the downloads.
#[derive(Debug, Default)]
struct Sample {
    counters: BTreeMap<String, u64>,
    log_lines: u64,
    report_lines: u64,
    log_tail: Vec<String>,
    restarted_at: Option<Duration>,
    flood: Option<FloodStats>,
    notes: Vec<String>,
}

/// Runs the soak: starts Redis, the server and the relay, the clients, and
/// injects the schedule's faults; kills what it started when done.
pub fn run_soak(options: &SoakOptions) -> Result<SoakReport, AppError> {
    let windows = schedule(options.duration, options.cycle)?;
    let mut redis = RedisServer::try_start(RedisServerOptions { appendonly: true })
        .map_err(|e| AppError::Invalid(e.to_string()))?;
    let mut load = options.load.clone();
    load.server.args.extend([
        "--guard".into(),
        redis.url(),
        "--metrics".into(),
        "127.0.0.1:0".into(),
    ]);
    let mut bench = Bench::start(&load)?;
    let clients = bench.clients()?;
    let key_file = bench.scratch.0.join("server.key");
    let flood_options = FloodOptions {
        server: bench.server.addr(),
        rate: options.flood_rate,
        token_file: clients[0].token_file.clone(),
        token_for: (clients[0].server_name.clone(), bench.relay.local_addr()),
    };
    let start = Instant::now();
    let threads = clients
        .into_iter()
        .enumerate()
        .map(|(index, mut client)| {
            let options = options.clone();
            let offset = options
                .load
                .spread
                .mul_f64(index as f64 / options.load.clients as f64);
            thread::Builder::new()
                .name(format!("cr-soak-{index}"))
                .spawn(move || {
                    thread::sleep(offset);
                    let mut downloads = Vec::new();
                    while start.elapsed() < options.duration {
                        downloads.push(soak_download(&mut client, &options, start));
                    }
                    downloads
                })
                .map_err(|e| AppError::io("starting a client thread", e))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut scraper = Scraper::default();
    let mut samples = Vec::new();
    let output = |bench: &Bench| {
        let out = bench.server.output();
        (out.lines(), out.report_lines())
    };
    let mut printed = output(&bench);
    for window in &windows {
        sleep_until(start + window.from);
        let mut sample = Sample::default();
        inject(
            window.fault,
            &mut bench,
            &mut redis,
            &key_file,
            &flood_options,
            &mut scraper,
            &mut sample,
        );
        // A restart is over when `inject` returns.
        if sample.restarted_at.is_some() {
            sample.restarted_at = Some(start.elapsed());
        }
        sleep_until(start + window.to);
        scraper.collect(bench.server.output().metrics_addr(), &mut sample.notes);
        sample.counters = scraper.take_window();
        let now = output(&bench);
        (sample.log_lines, sample.report_lines) = (now.0 - printed.0, now.1 - printed.1);
        if sample.log_lines > 0 {
            sample.log_tail = bench.server.output().last_lines();
        }
        printed = now;
        samples.push(sample);
    }

    let mut downloads = Vec::new();
    for thread in threads {
        downloads.extend(
            thread
                .join()
                .map_err(|_| AppError::Invalid("a client thread panicked".into()))?,
        );
    }
    let wall = start.elapsed();
    let lines = bench.settle(downloads.iter().map(|d| d.attempts as usize).sum());
    // What the stragglers did after the last window counts in it.
    if let Some(last) = samples.last_mut() {
        scraper.collect(bench.server.output().metrics_addr(), &mut last.notes);
        for (name, value) in scraper.take_window() {
            *last.counters.entry(name).or_default() += value;
        }
        let now = output(&bench);
        last.log_lines += now.0 - printed.0;
        last.report_lines += now.1 - printed.1;
    }
    let panics = bench.server.output().panics();
    Ok(report(
        &windows, samples, &downloads, &lines, start, wall, &panics, options,
    ))
}

/// Injects `fault` and, for the faults that last, waits for their end.
fn inject(
    fault: Fault,
    bench: &mut Bench,
    redis: &mut RedisServer,
    key_file: &std::path::Path,
    flood: &FloodOptions,
    scraper: &mut Scraper,
    sample: &mut Sample,
) {
    let notes = &mut sample.notes;
    match fault {
        Fault::Calm => {}
        Fault::LossBurst { loss, lasting } => {
            bench.relay.set_loss(Some(loss));
            thread::sleep(lasting);
            bench.relay.set_loss(None);
            notes.push(format!(
                "relay loss {:.0} % both ways for {:.1} s",
                loss * 100.0,
                lasting.as_secs_f64()
            ));
        }
        Fault::RedisRestart { down } => {
            let pid = redis.pid();
            redis.stop();
            thread::sleep(down);
            match redis.try_restart() {
                Ok(()) => {
                    sample.restarted_at = Some(Duration::ZERO);
                    notes.push(format!(
                        "redis-server (pid {pid:?}) killed, restarted after {:.1} s as pid {:?}",
                        down.as_secs_f64(),
                        redis.pid()
                    ));
                }
                Err(e) => notes.push(format!("redis-server not restarted: {e}")),
            }
        }
        Fault::KeyRotation => match load_key_ring(key_file, true) {
            Ok((_, keys)) => notes.push(format!(
                "key file rewritten: current id {}, earlier ids {:?}",
                keys.current, keys.previous
            )),
            Err(e) => notes.push(format!("key file not rotated: {e}")),
        },
        Fault::ServerRestart { down } => {
            // Its counters die with it: read them first.
            scraper.collect(bench.server.output().metrics_addr(), notes);
            bench.server.kill();
            scraper.restarted();
            thread::sleep(down);
            match bench.server.restart() {
                Ok(()) => {
                    sample.restarted_at = Some(Duration::ZERO);
                    notes.push(format!(
                        "cr-server killed, restarted on {} after {:.1} s",
                        bench.server.addr(),
                        down.as_secs_f64()
                    ));
                }
                Err(e) => notes.push(format!("cr-server not restarted: {e}")),
            }
        }
        Fault::Flood { lasting } => match Flood::start(flood.clone()) {
            Ok(running) => {
                thread::sleep(lasting);
                match running.stop() {
                    Ok(stats) => sample.flood = Some(stats),
                    Err(e) => notes.push(format!("flood: {e}")),
                }
                notes.push(format!(
                    "{} datagrams/s at {} for {:.1} s",
                    flood.rate,
                    flood.server,
                    lasting.as_secs_f64()
                ));
            }
            Err(e) => notes.push(format!("flood not started: {e}")),
        },
    }
}

/// One download, retried up to `options.retries` times; each attempt gives
/// up after `options.give_up_after` without a body byte.
fn soak_download(client: &mut ClientOptions, options: &SoakOptions, start: Instant) -> Download {
    let mut stalls = Stalls::new(Some(options.give_up_after));
    let mut error = None;
    for attempt in 1..=options.retries + 1 {
        if attempt > 1 {
            thread::sleep(RETRY_PAUSE);
        }
        match download_watched(client, &mut stalls) {
            Ok(report) if report.bytes == client.size && report.verified == client.size => {
                client.bind = Some(report.local);
                return Download {
                    ended: start.elapsed(),
                    attempts: attempt,
                    completed: true,
                    verified: report.verified,
                    longest_stall: stalls.longest(),
                    error: None,
                };
            }
            Ok(report) => {
                error = Some(format!(
                    "{} bytes of {} received, {} verified",
                    report.bytes, client.size, report.verified
                ))
            }
            Err(e) => error = Some(e.to_string()),
        }
    }
    // The time since the last byte was a stall too.
    stalls.progress(Instant::now());
    Download {
        ended: start.elapsed(),
        attempts: options.retries + 1,
        completed: false,
        verified: 0,
        longest_stall: stalls.longest(),
        error,
    }
}

fn sleep_until(at: Instant) {
    if let Some(wait) = at.checked_duration_since(Instant::now()) {
        thread::sleep(wait);
    }
}

/// Folds the run into one line per window and the summary.
#[allow(clippy::too_many_arguments)]
fn report(
    windows: &[Window],
    samples: Vec<Sample>,
    downloads: &[Download],
    lines: &[ServerLine],
    start: Instant,
    wall: Duration,
    panics: &[String],
    options: &SoakOptions,
) -> SoakReport {
    let size = options.load.size;
    // Each server line at its connection's start, in order, with whether
    // its set had jumped before.
    let mut connections: Vec<(Duration, &ServerLine)> = lines
        .iter()
        .map(|line| {
            let opened = line.at.checked_sub(line.lifetime).unwrap_or(line.at);
            (opened.saturating_duration_since(start), line)
        })
        .collect();
    connections.sort_by_key(|(at, _)| *at);
    let mut jumped_from: HashMap<u64, usize> = HashMap::new();
    let connections: Vec<(Duration, bool, bool)> = connections
        .into_iter()
        .map(|(at, line)| {
            let again = line.engaged
                && line.set.is_some_and(|set| {
                    let uses = jumped_from.entry(set).or_default();
                    *uses += 1;
                    *uses > 1
                });
            (at, line.engaged, again)
        })
        .collect();

    let in_window = |w: &Window, at: Duration| at >= w.from && at < w.to;
    let last = windows.len().saturating_sub(1);
    let reports: Vec<FaultReport> = windows
        .iter()
        .zip(samples)
        .enumerate()
        .map(|(i, (window, sample))| {
            // The last window also takes what ended or started after it.
            let within = |at: Duration| in_window(window, at) || (i == last && at >= window.to);
            let mine: Vec<&Download> = downloads.iter().filter(|d| within(d.ended)).collect();
            let engaged: Vec<&(Duration, bool, bool)> = connections
                .iter()
                .filter(|(at, engaged, _)| *engaged && within(*at))
                .collect();
            let restarted = sample.restarted_at;
            let counter = |name: &str| sample.counters.get(name).copied().unwrap_or(0);
            FaultReport {
                fault: window.fault.name(),
                cycle: window.cycle,
                from_s: window.from.as_secs_f64(),
                to_s: window.to.as_secs_f64(),
                downloads: DownloadTally::of(mine.iter().copied(), size),
                engaged: engaged.len(),
                sets_used_twice: engaged.iter().filter(|(_, _, again)| *again).count(),
                first_engaged_after_s: restarted.and_then(|restart| {
                    connections
                        .iter()
                        .find(|(at, engaged, _)| *engaged && *at >= restart)
                        .map(|(at, _, _)| (*at - restart).as_secs_f64())
                }),
                connections: counter("cr_connections_total"),
                handshakes_incomplete: counter("cr_handshakes_incomplete_total"),
                refused: sample
                    .counters
                    .iter()
                    .filter_map(|(name, &value)| {
                        let reason = name
                            .strip_prefix("cr_resumes_refused_total{reason=\"")?
                            .strip_suffix("\"}")?;
                        (value > 0).then(|| (reason.to_owned(), value))
                    })
                    .collect(),
                server_log_lines: sample.log_lines,
                server_report_lines: sample.report_lines,
                server_log_tail: sample.log_tail,
                flood: sample.flood,
                notes: sample.notes,
                first_error: mine.iter().find_map(|d| d.error.clone()),
            }
        })
        .collect();
    let summary = summarise(&reports, downloads, panics, wall, options);
    SoakReport {
        windows: reports,
        summary,
    }
}

fn summarise(
    reports: &[FaultReport],
    downloads: &[Download],
    panics: &[String],
    wall: Duration,
    options: &SoakOptions,
) -> SoakSummary {
    let sum = |f: fn(&FaultReport) -> u64| reports.iter().map(f).sum::<u64>();
    let floods = || reports.iter().filter(|r| r.flood.is_some());
    let real_tokens_refused = reports
        .iter()
        .filter(|r| r.flood.is_none())
        .flat_map(|r| {
            ["unknown_key", "tampered", "malformed"]
                .iter()
                .filter_map(|reason| r.refused.get(*reason).copied())
        })
        .sum();
    let tally = DownloadTally::of(downloads, options.load.size);
    let sets_used_twice = reports.iter().map(|r| r.sets_used_twice).sum();
    SoakSummary {
        fault: "summary",
        clients: options.load.clients,
        wall_s: wall.as_secs_f64(),
        engaged: reports.iter().map(|r| r.engaged).sum(),
        sets_used_twice,
        server_panics: panics.len(),
        real_tokens_refused,
        forged_initials: floods().filter_map(|r| r.flood.map(|f| f.initials)).sum(),
        flood_log_lines: floods().map(|r| r.server_log_lines).sum(),
        handshakes_incomplete: sum(|r| r.handshakes_incomplete),
        target_met: tally.failed == 0
            && sets_used_twice == 0
            && panics.is_empty()
            && tally.max_stall_s <= MAX_STALL.as_secs_f64()
            && real_tokens_refused == 0
            && tally.downloads > 0,
        downloads: tally,
    }
}

/// The server's counters, scraped from `--metrics`, as increments per
/// window across restarts (a restarted server counts from 0 again).
#[derive(Debug, Default)]
struct Scraper {
    last: BTreeMap<String, u64>,
    window: BTreeMap<String, u64>,
}

impl Scraper {
    /// Adds what the counters grew by since the last look to the window;
    /// a failed scrape is noted.
    fn collect(&mut self, addr: Option<SocketAddr>, notes: &mut Vec<String>) {
        let Some(addr) = addr else {
            notes.push("no metrics address from cr-server".into());
            return;
        };
        match scrape(addr) {
            Ok(now) => {
                for (name, value) in now {
                    let before = self.last.insert(name.clone(), value).unwrap_or(0);
                    *self.window.entry(name).or_default() += value.saturating_sub(before);
                }
            }
            Err(e) => notes.push(format!("metrics not read: {e}")),
        }
    }

    /// The server was restarted: its counters start again from 0.
    fn restarted(&mut self) {
        self.last.clear();
    }

    /// The window's increments, starting the next window's.
    fn take_window(&mut self) -> BTreeMap<String, u64> {
        std::mem::take(&mut self.window)
    }
}

/// The counters of a Prometheus text page at `addr`, by name and labels.
fn scrape(addr: SocketAddr) -> Result<BTreeMap<String, u64>, AppError> {
    let context = || format!("scraping http://{addr}/metrics");
    let timeout = Duration::from_secs(2);
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| AppError::io(context(), e))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .and_then(|()| stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: cr-soak\r\n\r\n"))
        .map_err(|e| AppError::io(context(), e))?;
    let mut page = String::new();
    stream
        .read_to_string(&mut page)
        .map_err(|e| AppError::io(context(), e))?;
    Ok(parse_counters(&page))
}

/// `name{labels} value` lines; comments and other lines are skipped.
fn parse_counters(page: &str) -> BTreeMap<String, u64> {
    page.lines()
        .filter(|line| line.starts_with("cr_"))
        .filter_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_injects_every_fault_once_in_order() {
        let windows = schedule(Duration::from_secs(120), Duration::from_secs(120)).expect("ok");
        let names: Vec<_> = windows.iter().map(|w| w.fault.name()).collect();
        assert_eq!(
            names,
            [
                "calm",
                "loss_burst",
                "redis_restart",
                "key_rotation",
                "server_restart",
                "flood"
            ]
        );
        assert_eq!(windows[0].from, Duration::ZERO);
        assert_eq!(windows[5].to, Duration::from_secs(120));
        assert!(windows.windows(2).all(|w| w[0].to == w[1].from));
        assert_eq!(
            windows[1].fault,
            Fault::LossBurst {
                loss: 0.3,
                lasting: Duration::from_secs(2)
            }
        );
    }

    #[test]
    fn longer_runs_repeat_the_round_and_short_ones_scale_it() {
        let ten = schedule(Duration::from_secs(600), Duration::from_secs(120)).expect("ok");
        assert_eq!(ten.len(), 30);
        assert_eq!(ten[29].to, Duration::from_secs(600));
        let short = schedule(Duration::from_secs(30), Duration::from_secs(120)).expect("ok");
        assert_eq!(short.len(), 6);
        assert_eq!(short[5].to, Duration::from_secs(30));
        assert_eq!(
            short[2].fault,
            Fault::RedisRestart {
                down: Duration::from_secs(2)
            }
        );
        let odd = schedule(Duration::from_secs(130), Duration::from_secs(120)).expect("ok");
        assert_eq!((odd.len(), odd[6].fault), (7, Fault::Calm));
        assert!(schedule(Duration::from_secs(5), Duration::from_secs(120)).is_err());
    }

    #[test]
    fn counters_are_read_from_the_text_format() {
        let page = "# HELP cr_connections Connections accepted\n\
                    # TYPE cr_connections counter\n\
                    cr_connections_total 12\n\
                    cr_resumes_refused_total{reason=\"unknown_key\"} 3\n\
                    # EOF\n";
        let counters = parse_counters(page);
        assert_eq!(counters.get("cr_connections_total"), Some(&12));
        assert_eq!(
            counters.get("cr_resumes_refused_total{reason=\"unknown_key\"}"),
            Some(&3)
        );
        assert_eq!(counters.len(), 2);
    }

    #[test]
    fn a_restarted_server_counts_from_zero() {
        let mut scraper = Scraper::default();
        scraper.last.insert("c".into(), 10);
        scraper.restarted();
        assert!(scraper.last.is_empty());
    }
}
