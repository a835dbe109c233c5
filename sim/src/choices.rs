//! The named choices of a scenario: congestion controller and application.

use serde::Serialize;

/// The server's congestion controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CongestionControl {
    /// CUBIC (quiche's default).
    Cubic,
    /// NewReno.
    Reno,
    /// BBRv2 (quiche's gcongestion implementation).
    Bbr2,
}

impl CongestionControl {
    /// quiche's name for the algorithm.
    pub fn algorithm(self) -> quiche::CongestionControlAlgorithm {
        match self {
            CongestionControl::Cubic => quiche::CongestionControlAlgorithm::CUBIC,
            CongestionControl::Reno => quiche::CongestionControlAlgorithm::Reno,
            CongestionControl::Bbr2 => quiche::CongestionControlAlgorithm::Bbr2Gcongestion,
        }
    }

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            CongestionControl::Cubic => "cubic",
            CongestionControl::Reno => "reno",
            CongestionControl::Bbr2 => "bbr2",
        }
    }
}

/// How the client fetches the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AppKind {
    /// An HTTP/3 GET through quiche's h3 module (as the seed dissertation
    /// measured).
    H3,
    /// One raw bidirectional stream: an 8-byte request, the object as reply.
    Stream,
}

impl AppKind {
    /// The ALPN protocol identifier both endpoints offer.
    pub fn alpn(self) -> &'static [u8] {
        match self {
            AppKind::H3 => b"h3",
            AppKind::Stream => b"cr-sim",
        }
    }

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            AppKind::H3 => "h3",
            AppKind::Stream => "stream",
        }
    }
}
