//! `tokio-cr-server`: tokio-quiche's HTTP/3 driver serving `GET /<bytes>`
//! (that many bytes), with Careful Resume around it: one line per
//! connection on standard output saying what Careful Resume did.
//!
//! ```sh
//! cargo run -p tokio-cr --bin tokio-cr-server -- --listen 127.0.0.1:4433
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use cr_apps::keys::load_key_ring;
use cr_apps::{AppError, CongestionControl};
use tokio_cr::serve::{report_line, Server, ServerOptions};

/// Serve `GET /<bytes>` over HTTP/3 with tokio-quiche, resuming congestion
/// state from the tokens clients bring back (Careful Resume).
#[derive(Parser, Debug)]
#[command(name = "tokio-cr-server", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:4433")]
    listen: SocketAddr,
    /// Certificate chain (PEM).
    #[arg(long, default_value = "certs/cert.pem")]
    cert: PathBuf,
    /// Private key (PEM).
    #[arg(long, default_value = "certs/key.pem")]
    key: PathBuf,
    /// Token key ring file (as cr-server's; generated when absent).
    #[arg(long, default_value = "tokio-cr-server.key")]
    token_key: PathBuf,
    /// Congestion controller.
    #[arg(long, value_enum, default_value_t = CongestionControl::Cubic)]
    cc: CongestionControl,
}

fn main() -> ExitCode {
    cr_apps::init_logging();
    let args = Args::parse();
    let result = tokio::runtime::Runtime::new()
        .map_err(|e| AppError::io("starting the runtime", e))
        .and_then(|runtime| runtime.block_on(run(args)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tokio-cr-server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), AppError> {
    let (token_keys, _) = load_key_ring(&args.token_key, false)?;
    let server = Server::bind(ServerOptions {
        listen: args.listen,
        cert: args.cert,
        key: args.key,
        token_keys,
        cc: args.cc,
    })
    .await?;
    eprintln!("tokio-cr-server: listening on {} (h3)", server.local_addr());
    server
        .run(|peer, stats| println!("{}", report_line(peer, &stats)))
        .await;
    Ok(())
}
