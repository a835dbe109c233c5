//! `tokio-cr-server`, the program: its command line and what it runs. It
//! lives in the library, so that the tests run the program's own code
//! in-process; the binary only parses its arguments and calls [`main`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use cr_apps::keys::load_key_ring;
use cr_apps::{AppError, CongestionControl};

use crate::serve::{report_line, Server, ServerOptions};

/// Serve `GET /<bytes>` over HTTP/3 with tokio-quiche, resuming congestion
/// state from the tokens clients bring back (Careful Resume).
#[derive(Parser, Debug, Clone)]
#[command(name = "tokio-cr-server", version)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:4433")]
    pub listen: SocketAddr,
    /// Certificate chain (PEM).
    #[arg(long, default_value = "certs/cert.pem")]
    pub cert: PathBuf,
    /// Private key (PEM).
    #[arg(long, default_value = "certs/key.pem")]
    pub key: PathBuf,
    /// Token key ring file (as cr-server's; generated when absent).
    #[arg(long, default_value = "tokio-cr-server.key")]
    pub token_key: PathBuf,
    /// Congestion controller.
    #[arg(long, value_enum, default_value_t = CongestionControl::Cubic)]
    pub cc: CongestionControl,
}

/// The program: logs to standard error, serves on a tokio runtime of its
/// own until the listener ends, prints one [`report_line`] per closed
/// connection on standard output, and fails with the reason on standard
/// error.
pub fn main(args: Args) -> ExitCode {
    cr_apps::init_logging();
    let served = tokio::runtime::Runtime::new()
        .map_err(|e| AppError::io("starting the runtime", e))
        .and_then(|runtime| {
            runtime.block_on(serve(
                args,
                |local| eprintln!("tokio-cr-server: listening on {local} (h3)"),
                |line| println!("{line}"),
            ))
        });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tokio-cr-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Loads (or makes) the token key ring, binds, tells `on_listening` the
/// address, and serves until the listener ends, handing each closed
/// connection's [`report_line`] to `on_report`.
pub async fn serve(
    args: Args,
    on_listening: impl FnOnce(SocketAddr),
    on_report: impl Fn(String) + Clone + Send + 'static,
) -> Result<(), AppError> {
    let (token_keys, _) = load_key_ring(&args.token_key, false)?;
    let server = Server::bind(ServerOptions {
        listen: args.listen,
        cert: args.cert,
        key: args.key,
        token_keys,
        cc: args.cc,
    })
    .await?;
    on_listening(server.local_addr());
    server
        .run(move |peer, stats| on_report(report_line(peer, &stats)))
        .await;
    Ok(())
}
