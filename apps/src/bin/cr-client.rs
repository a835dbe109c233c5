//! `cr-client`: downloads `/<bytes>` over HTTP/3 or hq-interop, presenting
//! and keeping address validation tokens, and prints the timings.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use cr_apps::{download, AppError, ClientOptions, Protocol};
use cr_serve::units::{parse_duration, ByteSize};

/// Download `/<bytes>` from a cr-server (or any server answering
/// `GET /<n>` with n bytes), keeping its tokens for the next run so the
/// server can resume the path's capacity (Careful Resume).
#[derive(Parser, Debug)]
#[command(name = "cr-client", version)]
struct Args {
    /// Server (or relay) address, `host:port`.
    server: String,
    /// Bytes to fetch (e.g. 2MiB).
    #[arg(long, default_value = "1MiB")]
    size: ByteSize,
    /// Application protocol.
    #[arg(long, value_enum, default_value_t = Protocol::H3)]
    protocol: Protocol,
    /// Server name for TLS and for the token file; defaults to the host of
    /// SERVER, or `localhost` when that is an IP address.
    #[arg(long)]
    name: Option<String>,
    /// Token file (JSON), keyed by server name and address.
    #[arg(long, default_value = "cr-client-tokens.json")]
    token_file: PathBuf,
    /// Neither present nor keep tokens (nor TLS sessions).
    #[arg(long, conflicts_with = "requested_capacity")]
    no_token: bool,
    /// Keep no TLS session and send the request only after the handshake
    /// (1-RTT), to compare with the default: resuming the TLS session kept
    /// in the token file and sending the request as early data (0-RTT).
    #[arg(long)]
    no_early_data: bool,
    /// Ask the server to resume with at most this many bytes (0 opts out
    /// of Careful Resume, while the token still validates the address).
    #[arg(long)]
    requested_capacity: Option<ByteSize>,
    /// Stay this long after the last byte, so tokens the server sends at
    /// the end (the ones with saved capacity) arrive.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    linger: Duration,
    /// Give up when the download takes longer.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    timeout: Duration,
    /// Trust this PEM certificate (e.g. certs/cert.pem).
    #[arg(long)]
    ca: Option<PathBuf>,
    /// Do not verify the server's certificate.
    #[arg(long)]
    insecure: bool,
    /// Write the client's qlog into this directory.
    #[arg(long)]
    qlog_dir: Option<PathBuf>,
    /// Download this many times in a row, each presenting a token from the
    /// previous one.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Send from this local address: an IP address (any port) or
    /// `ip:port`. Through cr-relay on loopback, e.g. 127.1.0.1 makes the
    /// server see this client on a network (/24) of its own.
    #[arg(long, value_parser = parse_bind)]
    bind: Option<SocketAddr>,
    /// Fail unless every body byte is the one cr-server sends at its offset
    /// (the pattern of cr_serve::body).
    #[arg(long)]
    verify: bool,
}

/// `--bind`: an address with or without a port.
fn parse_bind(spec: &str) -> Result<SocketAddr, String> {
    spec.parse::<SocketAddr>()
        .or_else(|_| spec.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| format!("{spec}: expected an IP address, or ip:port"))
}

fn main() -> ExitCode {
    cr_apps::init_logging();
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cr-client: {e}");
            ExitCode::FAILURE
        }
    }
}

fn resolve(server: &str) -> Result<SocketAddr, AppError> {
    server
        .to_socket_addrs()
        .map_err(|e| AppError::io(format!("resolving `{server}` (expected host:port)"), e))?
        .next()
        .ok_or_else(|| AppError::Invalid(format!("`{server}` resolves to no address")))
}

fn default_name(server: &str) -> String {
    let host = server
        .rsplit_once(':')
        .map_or(server, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.parse::<IpAddr>().is_ok() || host.is_empty() {
        "localhost".into()
    } else {
        host.into()
    }
}

fn run(args: Args) -> Result<(), AppError> {
    let options = ClientOptions {
        server: resolve(&args.server)?,
        server_name: args.name.unwrap_or_else(|| default_name(&args.server)),
        size: args.size.0,
        protocol: args.protocol,
        token_file: (!args.no_token).then_some(args.token_file),
        requested_capacity: args.requested_capacity.map(|b| b.0),
        linger: args.linger,
        timeout: args.timeout,
        ca: args.ca,
        insecure: args.insecure,
        qlog_dir: args.qlog_dir,
        bind: args.bind,
        verify: args.verify,
        early_data: !args.no_early_data,
    };
    for _ in 0..args.repeat {
        let report = download(&options)?;
        println!("{report}");
    }
    Ok(())
}
