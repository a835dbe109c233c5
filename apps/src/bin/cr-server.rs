//! `cr-server`: serves `GET /<bytes>` over HTTP/3 and hq-interop with
//! Careful Resume; one log line per connection on standard output.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use cr_apps::keys::load_key_ring;
use cr_apps::metrics::MetricsEndpoint;
use cr_apps::{AppError, CongestionControl, Server, ServerOptions, SlowStart};
use cr_endpoint::{AddressPrefixes, JumpBudget, SharedGuard};
use cr_guard_redis::{RedisGuard, RedisGuardConfig};
use cr_serve::units::{parse_duration, ByteSize};

/// Serve `GET /<bytes>` over HTTP/3 (h3) and hq-interop, resuming
/// congestion state from the tokens clients bring back (Careful Resume).
#[derive(Parser, Debug)]
#[command(name = "cr-server", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:4433")]
    listen: SocketAddr,
    /// Certificate chain (PEM).
    #[arg(long, default_value = "certs/cert.pem")]
    cert: PathBuf,
    /// Private key (PEM).
    #[arg(long, default_value = "certs/key.pem")]
    key: PathBuf,
    /// Token key ring file: one `<id>:<64 hex digits>` per line, the key
    /// sealing new tokens first, earlier keys still accepted after it;
    /// generated when absent, reread every second while serving (share it
    /// across a fleet). Refused when it is a symbolic link or group or
    /// others may access it (chmod 600).
    #[arg(long, default_value = "cr-server.key")]
    token_key: PathBuf,
    /// Rotate the token key before starting: a new key goes first and seals
    /// from now on; the earlier ones still open the tokens they sealed.
    #[arg(long)]
    rotate: bool,
    /// Write one qlog per connection into this directory.
    #[arg(long)]
    qlog_dir: Option<PathBuf>,
    /// Congestion controller.
    #[arg(long, value_enum, default_value_t = CongestionControl::Cubic)]
    cc: CongestionControl,
    /// How Reno and CUBIC end their first slow start: SEARCH (when
    /// deliveries stop keeping up) beside HyStart++ (when the RTT rises), or
    /// HyStart++ alone.
    #[arg(long, value_enum, default_value_t)]
    slow_start: SlowStart,
    /// Send short packets wherever the congestion window has a little room,
    /// as quiche does by default (for comparison; cr-server waits for room
    /// for a full packet while an ACK is due).
    #[arg(long)]
    small_packets: bool,
    /// Update the smoothed RTT and its variation once per round trip, from
    /// the mean and spread of its samples, instead of per ACK (off: per
    /// ACK, as RFC 9002's pseudo-code and quiche do).
    #[arg(long)]
    rtt_once_per_rtt: bool,
    /// Pace Reno's and CUBIC's packets (RFC 9002 7.7): 4 x cwnd / RTT in
    /// slow start, 1.25 x after. Much faster behind token-bucket policers
    /// with small buckets and shallow queues; off by default, as in quiche
    /// (docs/operating.md gives the measured trade-offs).
    #[arg(long)]
    pace: bool,
    /// After a validated jump, let slow start go on past the saved capacity
    /// once the round trip after it came back whole and without a queue:
    /// faster where paths grew since their sets were saved, losses behind
    /// short drop-tail queues and fq_codel or CoDel (by default slow start
    /// ends at the saved capacity).
    #[arg(long)]
    slow_start_past_saved: bool,
    /// Refuse early data (0-RTT): clients resuming a TLS session send their
    /// request after the handshake. By default a request in early data is
    /// answered at once when the guard records its first flight as new
    /// (a replayed flight waits for a handshake it never completes).
    #[arg(long)]
    no_early_data: bool,
    /// Largest window Careful Resume may jump to (e.g. 4MiB).
    #[arg(long)]
    max_jump: Option<ByteSize>,
    /// How many full jumps' worth the Careful Resume jumps of clients
    /// resuming at the same time may send together; with more jumps than
    /// this at once, each is lowered to its equal share. 0 lets every jump
    /// go in full, however many clients resume together.
    #[arg(long, default_value_t = 2)]
    jump_budget: u32,
    /// Which clients share one jump budget, as IPv4,IPv6 prefix lengths:
    /// 0,0 (the default) makes the whole server one group; 16,32 gives
    /// each /16 and /32 a budget of its own.
    #[arg(long, value_parser = parse_prefixes, default_value = "0,0")]
    jump_budget_prefixes: AddressPrefixes,
    /// Where saved sets are claimed (one connection per saved set):
    /// `memory` for this process alone, or `redis://HOST:PORT[/DB]`, one
    /// Redis a fleet of servers shares.
    #[arg(long, default_value = "memory")]
    guard: String,
    /// How long a claim in Redis may take; a connection whose claim is not
    /// granted in time goes on without Careful Resume.
    #[arg(long, value_parser = parse_duration, default_value = "50ms")]
    claim_timeout: Duration,
    /// Serve the Careful Resume counters in the Prometheus text format over
    /// HTTP on this address (e.g. 127.0.0.1:9464).
    #[arg(long)]
    metrics: Option<SocketAddr>,
    /// This server's id in its fleet (0-255), in the second byte of every
    /// connection ID it issues: give every server sharing a key ring its
    /// own, and route by connection ID. A server resets (stateless reset)
    /// only connections its own id issued before it restarted.
    #[arg(long, default_value_t = 0)]
    server_id: u8,
    /// Connection idle timeout.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    idle_timeout: Duration,
}

fn main() -> ExitCode {
    cr_apps::init_logging();
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cr-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `V4,V6` prefix lengths, e.g. `16,32`.
fn parse_prefixes(spec: &str) -> Result<AddressPrefixes, String> {
    let invalid = || format!("{spec}: expected IPv4,IPv6 prefix lengths, e.g. 16,32");
    let (v4, v6) = spec.split_once(',').ok_or_else(invalid)?;
    let v4: u8 = v4.trim().parse().map_err(|_| invalid())?;
    let v6: u8 = v6.trim().parse().map_err(|_| invalid())?;
    if v4 > 32 || v6 > 128 {
        return Err(invalid());
    }
    Ok(AddressPrefixes { v4, v6 })
}

/// The Redis guard `--guard` names; `None` for the in-memory one.
fn guard(spec: &str, claim_timeout: Duration) -> Result<Option<Arc<RedisGuard>>, AppError> {
    if spec == "memory" {
        return Ok(None);
    }
    if !spec.starts_with("redis://") {
        return Err(AppError::Invalid(format!(
            "--guard {spec}: expected `memory` or `redis://HOST:PORT`"
        )));
    }
    let config = RedisGuardConfig {
        claim_timeout,
        ..Default::default()
    };
    let guard = RedisGuard::connect(spec, config)
        .map_err(|e| AppError::Invalid(format!("--guard {spec}: {e}")))?;
    Ok(Some(Arc::new(guard)))
}

fn run(args: Args) -> Result<(), AppError> {
    let (token_keys, loaded) = load_key_ring(&args.token_key, args.rotate)?;
    let redis = guard(&args.guard, args.claim_timeout)?;
    let max_jump = args
        .max_jump
        .map(|b| usize::try_from(b.0).unwrap_or(usize::MAX));
    let mut server = Server::bind(ServerOptions {
        listen: args.listen,
        cert: args.cert,
        key: args.key,
        token_keys,
        token_key_file: Some(args.token_key.clone()),
        guard: redis.clone().map(|guard| -> SharedGuard { guard }),
        qlog_dir: args.qlog_dir,
        cc: args.cc,
        slow_start: args.slow_start,
        max_jump,
        jump_budget: (args.jump_budget > 0).then_some(JumpBudget {
            jumps: args.jump_budget,
            clients: args.jump_budget_prefixes,
        }),
        idle_timeout: args.idle_timeout,
        small_packets: args.small_packets,
        rtt_once_per_rtt: args.rtt_once_per_rtt,
        pace: args.pace,
        slow_start_past_saved: args.slow_start_past_saved,
        early_data: !args.no_early_data,
    })?;
    server.set_server_id(args.server_id);
    eprintln!(
        "cr-server: listening on {} (h3, hq-interop) as server {}; token keys {}: current id {}{}, earlier ids {:?}",
        server.local_addr(),
        args.server_id,
        args.token_key.display(),
        loaded.current,
        if loaded.generated { " (new)" } else { "" },
        loaded.previous,
    );
    let _metrics = match args.metrics {
        Some(listen) => {
            let endpoint = MetricsEndpoint::serve_with_guard(listen, server.metrics(), redis)?;
            eprintln!(
                "cr-server: metrics on http://{}/metrics",
                endpoint.local_addr()
            );
            Some(endpoint)
        }
        None => None,
    };
    let stop = AtomicBool::new(false);
    // One line per connection that completed its handshake; the others
    // (forged or garbled Initials arrive at line rate) are counted in the
    // metrics and logged at debug level only.
    server.run(&stop, |report| {
        if report.established {
            println!("{report}");
        } else {
            log::debug!("handshake incomplete: {report}");
        }
    })
}
