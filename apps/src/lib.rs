//! quiche-cr on real UDP sockets: the library behind the `cr-server`,
//! `cr-client` and `cr-relay` programs.
//!
//! - [`server`]: serves `GET /<bytes>` over HTTP/3 and hq-interop with
//!   Careful Resume, minting and validating tokens through
//!   [`cr_endpoint::ResumeServer`], and reports every connection.
//! - [`client`]: downloads `/<bytes>` once, presenting a token from a token
//!   file and keeping the ones the server sends for next time.
//! - [`relay`]: a userspace link emulator (rate, delay, queue, loss per
//!   direction) to put a long thin path between them on loopback.
//!
//! Everything runs in real time on plain `std::net::UdpSocket`s; the
//! programs are thin command-line wrappers, so tests can run servers,
//! relays and clients in-process on threads.

pub mod app;
pub mod client;
pub mod error;
pub mod keys;
pub mod metrics;
pub mod net;
pub mod qlog;
pub mod relay;
pub mod report;
pub mod server;
pub mod units;

pub use app::Protocol;
pub use client::{download, ClientOptions, DownloadReport, PresentedToken};
pub use error::AppError;
pub use relay::{LinkConfig, Relay, RelayHandle, RelayOptions, RelayStats};
pub use report::ConnectionReport;
pub use server::{Server, ServerHandle, ServerOptions};

/// The server's congestion controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CongestionControl {
    /// CUBIC, quiche's default.
    #[default]
    Cubic,
    /// NewReno.
    Reno,
    /// BBRv2 (quiche's gcongestion implementation).
    Bbr2,
}

impl CongestionControl {
    /// quiche's name for it, as `Config::set_cc_algorithm_name` (and
    /// tokio-quiche's settings) take it.
    pub fn name(self) -> &'static str {
        match self {
            CongestionControl::Cubic => "cubic",
            CongestionControl::Reno => "reno",
            CongestionControl::Bbr2 => "bbr2_gcongestion",
        }
    }

    /// quiche's algorithm.
    pub fn algorithm(self) -> quiche::CongestionControlAlgorithm {
        match self {
            CongestionControl::Cubic => quiche::CongestionControlAlgorithm::CUBIC,
            CongestionControl::Reno => quiche::CongestionControlAlgorithm::Reno,
            CongestionControl::Bbr2 => quiche::CongestionControlAlgorithm::Bbr2Gcongestion,
        }
    }
}

/// Installs the programs' logger: what the libraries decide (a refused
/// token, a retreat, reloaded keys) on standard error, filtered by
/// `RUST_LOG` (default `info`; e.g. `RUST_LOG=cr_endpoint=debug`).
pub fn init_logging() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
}

#[cfg(test)]
mod tests {
    use super::CongestionControl;

    #[test]
    fn the_name_and_the_algorithm_agree() {
        for cc in [
            CongestionControl::Cubic,
            CongestionControl::Reno,
            CongestionControl::Bbr2,
        ] {
            assert_eq!(cc.name().parse(), Ok(cc.algorithm()), "{cc:?}");
        }
    }
}
