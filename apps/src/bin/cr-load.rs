//! `cr-load`: N clients at once against a `cr-server` it starts, through a
//! relay on loopback; prints one JSON line (or, with `--probe`, one per
//! arm of a flash crowd; with `--soak`, one per fault window and
//! a summary).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use cr_apps::load::server::ServerCommand;
use cr_apps::load::soak::{run_soak, SoakOptions};
use cr_apps::load::summary::json_line;
use cr_apps::load::{run_load, run_probe, LoadOptions, Until};
use cr_apps::relay::LinkConfig;
use cr_apps::{AppError, Protocol};
use cr_serve::units::{parse_duration, ByteSize, Rate};

/// Load a real cr-server with many Careful Resume clients: each on a
/// loopback network of its own (127.x.y.1) with its own token file, all
/// through one emulated bottleneck, every body byte checked. cr-server is
/// started from next to this program (or --server-program) on a free
/// loopback port and killed at the end.
#[derive(Parser, Debug)]
#[command(name = "cr-load", version)]
struct Args {
    /// Clients at once (at most 256).
    #[arg(long, default_value_t = 10)]
    clients: usize,
    /// Each client downloads again and again for this long (e.g. 60s).
    #[arg(long, value_parser = parse_duration, conflicts_with = "rounds")]
    duration: Option<Duration>,
    /// Each client downloads this many times (without --duration).
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Bytes per download.
    #[arg(long, default_value = "1MiB")]
    size: ByteSize,
    /// Bottleneck rate, both directions, shared by every client.
    #[arg(long, default_value = "100mbit")]
    rate: Rate,
    /// Round-trip propagation delay, split evenly between the directions.
    #[arg(long, value_parser = parse_duration, default_value = "50ms")]
    rtt: Duration,
    /// Queue of each direction (default: one bandwidth-delay product, at
    /// least 64 KiB).
    #[arg(long)]
    queue: Option<ByteSize>,
    /// Spread the clients' first downloads evenly over this long.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    spread: Duration,
    /// How long a client stays after its last byte, for the server's late
    /// tokens (those with the path's capacity).
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    linger: Duration,
    /// A download not finished after this long fails.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    timeout: Duration,
    /// Application protocol.
    #[arg(long, value_enum, default_value_t = Protocol::H3)]
    protocol: Protocol,
    /// Directory of the server's cert.pem and key.pem, which the clients
    /// trust.
    #[arg(long, default_value = "certs")]
    certs: PathBuf,
    /// The cr-server to run [default: the one next to cr-load].
    #[arg(long)]
    server_program: Option<PathBuf>,
    /// An argument for cr-server (repeat for more), e.g.
    /// `--server-arg=--jump-budget=0`.
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Run a flash crowd instead: each client downloads alone, one
    /// after another; then all at once with their tokens (arm `resume`),
    /// then all at once without (`baseline`). One JSON line per arm.
    #[arg(long, conflicts_with = "soak")]
    probe: bool,
    /// Run the fault soak instead: the clients download
    /// for --duration (default 120s) while, in rounds of --cycle, the
    /// relay loses 30 % for 2 s, Redis (started by cr-load) is killed and
    /// restarted, the token key ring is rotated, cr-server is killed and
    /// restarted, and a flood of garbage and forged Initials hits the
    /// server. One JSON line per fault window, then a summary; fails unless
    /// no download was lost, no saved set was used twice, no client stalled
    /// over 10 s, the server never panicked and no real token was refused.
    #[arg(long)]
    soak: bool,
    /// One round of the soak's faults.
    #[arg(long, value_parser = parse_duration, default_value = "120s")]
    cycle: Duration,
    /// The soak's flood: datagrams per second, half garbage, half forged
    /// Initials.
    #[arg(long, default_value_t = 2000)]
    flood_rate: u32,
    /// Retries of a soak download that fails.
    #[arg(long, default_value_t = 5)]
    retries: u32,
    /// A soak client gives up an attempt after this long without a body
    /// byte, and retries.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    give_up_after: Duration,
}

fn main() -> ExitCode {
    cr_apps::init_logging();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cr-load: {e}");
            ExitCode::FAILURE
        }
    }
}

/// cr-server next to this program.
fn default_server_program() -> Result<PathBuf, AppError> {
    let own =
        std::env::current_exe().map_err(|e| AppError::io("finding cr-load's own executable", e))?;
    let program = own.with_file_name(format!("cr-server{}", std::env::consts::EXE_SUFFIX));
    if program.is_file() {
        Ok(program)
    } else {
        Err(AppError::Invalid(format!(
            "no cr-server at {} (build it: cargo build -p cr-apps; or pass --server-program)",
            program.display()
        )))
    }
}

fn run(args: Args) -> Result<(), AppError> {
    let server_program = match args.server_program {
        Some(program) => program,
        None => default_server_program()?,
    };
    let options = LoadOptions {
        clients: args.clients,
        until: match args.duration {
            Some(duration) => Until::Elapsed(duration),
            None => Until::Rounds(args.rounds),
        },
        size: args.size.0,
        protocol: args.protocol,
        link: LinkConfig {
            rate_bps: args.rate.bps(),
            delay: args.rtt / 2,
            queue_bytes: args
                .queue
                .map_or(args.rate.bytes_in(args.rtt).max(64 * 1024), |q| q.0),
            loss: 0.0,
        },
        spread: args.spread,
        linger: args.linger,
        timeout: args.timeout,
        server: ServerCommand {
            program: server_program,
            certs: args.certs,
            args: args.server_args,
        },
    };
    if args.soak {
        let soak = run_soak(&SoakOptions {
            load: options,
            duration: args.duration.unwrap_or(Duration::from_secs(120)),
            cycle: args.cycle,
            flood_rate: args.flood_rate,
            retries: args.retries,
            give_up_after: args.give_up_after,
        })?;
        for window in &soak.windows {
            println!("{}", json_line(window)?);
        }
        println!("{}", json_line(&soak.summary)?);
        if !soak.summary.target_met {
            return Err(AppError::Invalid(
                "soak target not met (see the summary line)".into(),
            ));
        }
    } else if args.probe {
        for arm in run_probe(&options)? {
            println!("{}", json_line(&arm)?);
        }
    } else {
        println!("{}", json_line(&run_load(&options)?)?);
    }
    Ok(())
}
