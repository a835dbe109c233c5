//! `cr-load`: many clients at once against a real `cr-server` through a
//! relay on loopback, every body byte checked, one JSON line of results.
//!
//! This module owns a run: the bench (a scratch directory, the server as a
//! child process, the relay on threads of this process), the clients (one
//! thread each, each on a loopback network of its own, 127.x.y.1, and with
//! a token file of its own, downloading with [`crate::client::download`]
//! and failing at the first byte that is not the pattern of
//! [`cr_serve::body`]), and the two experiments: [`run_load`], clients
//! repeating downloads for a duration or a number of rounds, and
//! [`run_probe`], a flash crowd on real sockets (each client alone, one after
//! another, then all at once presenting their tokens, then all at once
//! without). [`server`] owns the server process and what `/proc` says of
//! it, [`summary`] what is printed, [`soak`] the load under faults
//! (`--soak`) and [`flood`] its unauthenticated traffic.
//!
//! The relay runs in this process because only the server is measured;
//! its statistics are read directly. Each client keeps its address (and so
//! its relay flow) from one download to the next, as a client behind a NAT
//! keeps its mapping.

pub mod flood;
pub mod server;
pub mod soak;
pub mod summary;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cr_serve::Protocol;

use crate::client::{download, ClientOptions};
use crate::error::AppError;
use crate::relay::{LinkConfig, Relay, RelayHandle, RelayOptions, MAX_FLOWS};
use server::{ServerCommand, ServerLine, ServerProcess};
use summary::{relay_drops, ArmSummary, LoadSummary, Measured, Outcome};

/// Most clients a run may have: one relay flow each.
pub const MAX_CLIENTS: usize = MAX_FLOWS;

/// How long to wait for the server's lines once the downloads are over, on
/// top of ten round trips: a connection's line comes when it is closed,
/// after its draining period (three probe timeouts).
const SETTLE: Duration = Duration::from_secs(3);

/// What a run needs.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Clients running at once.
    pub clients: usize,
    /// How long the clients keep downloading.
    pub until: Until,
    /// Bytes per download.
    pub size: u64,
    /// HTTP/3 or hq-interop.
    pub protocol: Protocol,
    /// The relay's link, both directions.
    pub link: LinkConfig,
    /// Client `i` starts its first download `i / clients` of this after
    /// the first client ([`run_load`] only).
    pub spread: Duration,
    /// How long a client stays after its last byte, for late tokens.
    pub linger: Duration,
    /// A download not finished after this long fails.
    pub timeout: Duration,
    /// How to start the server.
    pub server: ServerCommand,
}

/// How long the clients of [`run_load`] keep downloading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Each client downloads this many times.
    Rounds(u32),
    /// Each client starts downloads until this long after the run began.
    Elapsed(Duration),
}

/// The address client `index` sends from: 127.(1 + index / 256).(index %
/// 256).1, a /24 of its own.
pub fn client_ip(index: usize) -> Option<Ipv4Addr> {
    let second = u8::try_from(1 + index / 256).ok()?;
    Some(Ipv4Addr::new(127, second, (index % 256) as u8, 1))
}

/// Runs `options.clients` clients until `options.until` and sums up.
pub fn run_load(options: &LoadOptions) -> Result<LoadSummary, AppError> {
    let bench = Bench::start(options)?;
    let clients = bench.clients()?;
    let usage_start = bench.server.usage().ok();
    let start = Instant::now();
    let until = options.until;
    let spread = options.spread;
    let count = clients.len();
    let threads = clients
        .into_iter()
        .enumerate()
        .map(|(index, mut client)| {
            let offset = spread.mul_f64(index as f64 / count as f64);
            spawn(index, move || {
                thread::sleep(offset);
                let mut outcomes = Vec::new();
                loop {
                    let more = match until {
                        Until::Rounds(rounds) => outcomes.len() < rounds as usize,
                        Until::Elapsed(duration) => start.elapsed() < duration,
                    };
                    if !more {
                        return outcomes;
                    }
                    outcomes.push(download_once(&mut client));
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let outcomes = join(threads)?;
    let wall = start.elapsed();
    let lines = bench.settle(outcomes.len());
    let usage_end = bench.server.usage().ok();
    Ok(LoadSummary::new(
        &outcomes,
        &Measured {
            clients: count,
            size: options.size,
            wall,
            lines: &lines,
            usage: usage_start.zip(usage_end),
            relay: bench.relay.stats(),
        },
    ))
}

/// A flash crowd on real sockets with `options.clients` clients: each
/// downloads alone, one after another, measuring the path and keeping its
/// tokens (arm `alone`); then all at once presenting them (`resume`); then
/// all at once without tokens (`baseline`). One summary per arm.
pub fn run_probe(options: &LoadOptions) -> Result<Vec<ArmSummary>, AppError> {
    let bench = Bench::start(options)?;
    let mut clients = bench.clients()?;
    let mut arms = Vec::new();

    let drops = bench.relay_drops();
    let alone: Vec<Outcome> = clients.iter_mut().map(download_once).collect();
    arms.push(bench.arm("alone", &alone, drops));

    let drops = bench.relay_drops();
    let resume = all_at_once(&clients)?;
    arms.push(bench.arm("resume", &resume, drops));

    for client in &mut clients {
        client.token_file = None;
    }
    let drops = bench.relay_drops();
    let baseline = all_at_once(&clients)?;
    arms.push(bench.arm("baseline", &baseline, drops));
    Ok(arms)
}

/// One download of each client, all started together.
fn all_at_once(clients: &[ClientOptions]) -> Result<Vec<Outcome>, AppError> {
    let barrier = Arc::new(Barrier::new(clients.len()));
    let threads = clients
        .iter()
        .enumerate()
        .map(|(index, client)| {
            let (mut client, barrier) = (client.clone(), Arc::clone(&barrier));
            spawn(index, move || {
                barrier.wait();
                vec![download_once(&mut client)]
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    join(threads)
}

/// One download; on success the client keeps the address it sent from.
fn download_once(client: &mut ClientOptions) -> Outcome {
    match download(client) {
        Ok(report) if report.bytes == client.size && report.verified == client.size => {
            client.bind = Some(report.local);
            Outcome {
                completion: Some(report.completion),
                verified: report.verified,
                error: None,
            }
        }
        Ok(report) => Outcome {
            completion: None,
            verified: report.verified,
            error: Some(format!(
                "{} bytes of {} received, {} verified",
                report.bytes, client.size, report.verified
            )),
        },
        Err(e) => Outcome {
            completion: None,
            verified: 0,
            error: Some(e.to_string()),
        },
    }
}

fn spawn(
    index: usize,
    body: impl FnOnce() -> Vec<Outcome> + Send + 'static,
) -> Result<thread::JoinHandle<Vec<Outcome>>, AppError> {
    thread::Builder::new()
        .name(format!("cr-load-{index}"))
        .spawn(body)
        .map_err(|e| AppError::io("starting a client thread", e))
}

fn join(threads: Vec<thread::JoinHandle<Vec<Outcome>>>) -> Result<Vec<Outcome>, AppError> {
    let mut outcomes = Vec::new();
    for thread in threads {
        let done = thread
            .join()
            .map_err(|_| AppError::Invalid("a client thread panicked".into()))?;
        outcomes.extend(done);
    }
    Ok(outcomes)
}

/// What a run runs on: dropped, it stops the relay, kills the server and
/// removes the scratch directory, in that order.
struct Bench {
    relay: RelayHandle,
    server: ServerProcess,
    scratch: Scratch,
    options: LoadOptions,
}

impl Bench {
    fn start(options: &LoadOptions) -> Result<Bench, AppError> {
        if options.clients == 0 || options.clients > MAX_CLIENTS {
            return Err(AppError::Invalid(format!(
                "{} clients: from 1 to {MAX_CLIENTS} (one relay flow each)",
                options.clients
            )));
        }
        let cert = options.server.certs.join("cert.pem");
        if !cert.is_file() {
            return Err(AppError::Invalid(format!(
                "no certificate at {} (--certs names the directory of cert.pem and key.pem)",
                cert.display()
            )));
        }
        let scratch = Scratch::new()?;
        let server = ServerProcess::start(&options.server, &scratch.0.join("server.key"))?;
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let relay = Relay::bind(RelayOptions::symmetric(listen, server.addr(), options.link))?;
        Ok(Bench {
            relay: RelayHandle::spawn(relay)?,
            server,
            scratch,
            options: options.clone(),
        })
    }

    /// Each client's options: its own address and token file.
    fn clients(&self) -> Result<Vec<ClientOptions>, AppError> {
        let options = &self.options;
        (0..options.clients)
            .map(|index| {
                let ip = client_ip(index)
                    .ok_or_else(|| AppError::Invalid(format!("no address for client {index}")))?;
                Ok(ClientOptions {
                    server: self.relay.local_addr(),
                    server_name: "localhost".into(),
                    size: options.size,
                    protocol: options.protocol,
                    token_file: Some(self.scratch.0.join(format!("client-{index}.json"))),
                    requested_capacity: None,
                    linger: options.linger,
                    timeout: options.timeout,
                    ca: Some(options.server.certs.join("cert.pem")),
                    insecure: false,
                    qlog_dir: None,
                    bind: Some(SocketAddr::new(IpAddr::V4(ip), 0)),
                    verify: true,
                    early_data: true,
                })
            })
            .collect()
    }

    /// The server's lines of the `connections` just made, once they are
    /// all in or the wait is over.
    fn settle(&self, connections: usize) -> Vec<ServerLine> {
        let rtt = self.options.link.delay * 2;
        self.server.take_lines(connections, SETTLE + rtt * 10)
    }

    fn relay_drops(&self) -> u64 {
        relay_drops(&self.relay.stats())
    }

    /// An arm's summary, once the server's lines are in.
    fn arm(&self, name: &'static str, outcomes: &[Outcome], drops_before: u64) -> ArmSummary {
        let lines = self.settle(outcomes.len());
        let lost = self.relay_drops().saturating_sub(drops_before);
        ArmSummary::new(name, outcomes, self.options.size, &lines, lost)
    }
}

/// A directory of this run's own (the server's key, the clients' token
/// files), removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, AppError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("cr-load-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| AppError::io(format!("creating {}", dir.display()), e))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_has_a_network_of_its_own() {
        assert_eq!(client_ip(0), Some(Ipv4Addr::new(127, 1, 0, 1)));
        assert_eq!(client_ip(255), Some(Ipv4Addr::new(127, 1, 255, 1)));
        assert_eq!(client_ip(256), Some(Ipv4Addr::new(127, 2, 0, 1)));
        let networks: std::collections::HashSet<_> = (0..MAX_CLIENTS)
            .map(|i| client_ip(i).expect("an address").octets()[..3].to_vec())
            .collect();
        assert_eq!(networks.len(), MAX_CLIENTS);
        assert_eq!(client_ip(255 * 256), None);
    }
}
