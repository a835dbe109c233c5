//! quiche-cr on real UDP sockets: the library behind the `cr-server`,
//! `cr-client`, `cr-relay` and `cr-load` programs.
//!
//! - [`server`]: serves `GET /<bytes>` over HTTP/3 and hq-interop with
//!   Careful Resume, minting and validating tokens through
//!   [`cr_endpoint::ResumeServer`], and reports every connection.
//! - [`client`]: downloads `/<bytes>` once, presenting a token from a token
//!   file and keeping the ones the server sends for next time.
//! - [`relay`]: a userspace link emulator (rate, delay, queue, loss per
//!   direction) to put a long thin path between them on loopback.
//! - [`load`]: many clients at once against a `cr-server` process through
//!   the relay, every body byte checked (`cr-load`).
//!
//! What a server or client does over a connection (the applications, the
//! controller choice, units, the per-connection report) is `cr-serve`'s,
//! shared with the simulator, so that `cr-sim` runs this server's code.
//!
//! Everything runs in real time on plain `std::net::UdpSocket`s; the
//! programs are thin command-line wrappers, so tests can run servers,
//! relays and clients in-process on threads.

pub mod client;
pub mod error;
pub mod keys;
pub mod load;
pub mod metrics;
pub mod net;
pub mod qlog;
pub mod relay;
pub mod server;

pub use client::{
    download, download_watched, ClientOptions, DownloadReport, PresentedToken, Stalls,
};
pub use cr_serve::{CongestionControl, ConnectionReport, Protocol, SlowStart};
pub use error::AppError;
pub use relay::{LinkConfig, Relay, RelayHandle, RelayOptions, RelayStats};
pub use server::{Server, ServerHandle, ServerOptions};

/// Installs the programs' logger: what the libraries decide (a refused
/// token, a retreat, reloaded keys) on standard error, filtered by
/// `RUST_LOG` (default `info`; e.g. `RUST_LOG=cr_endpoint=debug`).
pub fn init_logging() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
}
