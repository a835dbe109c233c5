//! `cr-relay`: a userspace UDP link emulator between clients and one server.
//! Prints its path at start, then every `--stats-every` what each direction
//! forwarded and dropped (the link's queue and random drops, the kernel's
//! drops on the relay's own sockets apart) and its flows.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use cr_apps::relay::{
    Bottleneck, LinkConfig, Relay, RelayHandle, RelayOptions, DEFAULT_FLOW_IDLE_TIMEOUT,
};
use cr_apps::AppError;
use cr_serve::bottleneck::{Policer, QueueSpec, Schedule};
use cr_serve::units::{parse_duration, ByteSize, Probability, Rate};

/// Forward UDP between clients and a server through an emulated path: a
/// bottleneck rate, a queue (drop-tail, CoDel or fq_codel), a propagation
/// delay and random loss, per direction, optionally a policer and a
/// schedule of rate and delay changes.
#[derive(Parser, Debug)]
#[command(name = "cr-relay", version)]
struct Args {
    /// Address clients send to.
    #[arg(long, default_value = "127.0.0.1:4434")]
    listen: SocketAddr,
    /// The server's address.
    #[arg(long, default_value = "127.0.0.1:4433")]
    server: SocketAddr,
    /// Bottleneck rate of both directions (e.g. 20mbit).
    #[arg(long, default_value = "20mbit")]
    rate: Rate,
    /// Rate client to server, instead of --rate.
    #[arg(long)]
    rate_up: Option<Rate>,
    /// Rate server to client, instead of --rate.
    #[arg(long)]
    rate_down: Option<Rate>,
    /// Round-trip propagation delay, split evenly between the directions.
    #[arg(long, value_parser = parse_duration, default_value = "300ms")]
    rtt: Duration,
    /// Queue of each direction: droptail, codel or fq_codel (RFC 8289 and
    /// 8290: target 5 ms, interval 100 ms; a flow per client), a limit in
    /// bytes, or both (codel:256KiB) [default: drop-tail, one
    /// bandwidth-delay product of that direction, at least 64 KiB].
    #[arg(long, default_value = "droptail")]
    queue: QueueSpec<ByteSize>,
    /// A token-bucket policer before the queue of each direction,
    /// RATE,BURST (e.g. 25mbit,64KiB): a datagram finding too few tokens
    /// is dropped.
    #[arg(long)]
    policer: Option<Policer>,
    /// A file of `time rate delay` rows (docs/simulator.md): both
    /// directions' rate and round-trip delay from each row's time after the
    /// relay starts, instead of --rate and --rtt.
    #[arg(long)]
    schedule: Option<PathBuf>,
    /// Start the schedule over whenever a new client flow opens (each
    /// cr-client connection binds a new port): with one client at a time,
    /// each connection meets the schedule from its start, as in cr-sim.
    #[arg(long, requires = "schedule")]
    schedule_per_flow: bool,
    /// Random loss of both directions (e.g. 1%).
    #[arg(long, default_value = "0")]
    loss: Probability,
    /// Random loss client to server, instead of --loss.
    #[arg(long)]
    loss_up: Option<Probability>,
    /// Random loss server to client, instead of --loss.
    #[arg(long)]
    loss_down: Option<Probability>,
    /// Seed of the random losses.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print forwarding counters this often (0 never).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    stats_every: Duration,
    /// Close a client's flow (its upstream socket and thread) after it
    /// carried no datagram either way for this long [default: 60s, longer
    /// than cr-server's and cr-client's QUIC idle timeouts].
    #[arg(long, value_parser = parse_duration)]
    flow_idle_timeout: Option<Duration>,
}

fn main() -> ExitCode {
    cr_apps::init_logging();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cr-relay: {e}");
            ExitCode::FAILURE
        }
    }
}

fn link(rate: Rate, rtt: Duration, queue: Option<ByteSize>, loss: Probability) -> LinkConfig {
    LinkConfig {
        rate_bps: rate.bps(),
        delay: rtt / 2,
        queue_bytes: queue.map_or(rate.bytes_in(rtt).max(64 * 1024), |q| q.0),
        loss: loss.value(),
    }
}

fn run(args: Args) -> Result<(), AppError> {
    let schedule = args
        .schedule
        .as_deref()
        .map(Schedule::read)
        .transpose()
        .map_err(AppError::Invalid)?;
    let up = link(
        args.rate_up.unwrap_or(args.rate),
        args.rtt,
        args.queue.limit,
        args.loss_up.unwrap_or(args.loss),
    );
    let down = link(
        args.rate_down.unwrap_or(args.rate),
        args.rtt,
        args.queue.limit,
        args.loss_down.unwrap_or(args.loss),
    );
    let relay = Relay::bind(RelayOptions {
        listen: args.listen,
        server: args.server,
        up,
        down,
        bottleneck: Bottleneck {
            discipline: args.queue.discipline,
            policer: args.policer,
            schedule,
            schedule_per_flow: args.schedule_per_flow,
        },
        seed: args.seed,
        flow_idle_timeout: args.flow_idle_timeout.unwrap_or(DEFAULT_FLOW_IDLE_TIMEOUT),
    })?;
    let buffers = relay.buffers();
    eprintln!(
        "cr-relay: {} -> {}; up {} bit/s, down {} bit/s, rtt {:?}, {} queues {}/{} B, \
         policer {}, schedule {}, loss {}/{}; socket buffers {}/{} B (receive/send)",
        relay.local_addr(),
        args.server,
        up.rate_bps,
        down.rate_bps,
        args.rtt,
        args.queue.discipline,
        up.queue_bytes,
        down.queue_bytes,
        args.policer.map_or("none".to_string(), |p| p.to_string()),
        args.schedule
            .as_deref()
            .map_or("none".to_string(), |p| p.display().to_string()),
        up.loss,
        down.loss,
        buffers.receive,
        buffers.send,
    );
    let handle = RelayHandle::spawn(relay)?;
    loop {
        if args.stats_every.is_zero() {
            std::thread::sleep(Duration::from_secs(3600));
            continue;
        }
        std::thread::sleep(args.stats_every);
        eprintln!("cr-relay: {}", handle.stats());
    }
}
