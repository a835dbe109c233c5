//! The congestion controller a server runs, as command lines, reports and
//! quiche name it.

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
    /// Its name on command lines and in reports: `cubic`, `reno`, `bbr2`.
    pub fn name(self) -> &'static str {
        match self {
            CongestionControl::Cubic => "cubic",
            CongestionControl::Reno => "reno",
            CongestionControl::Bbr2 => "bbr2",
        }
    }

    /// quiche's name for it, as `Config::set_cc_algorithm_name` (and
    /// tokio-quiche's settings) take it.
    pub fn quiche_name(self) -> &'static str {
        match self {
            CongestionControl::Bbr2 => "bbr2_gcongestion",
            other => other.name(),
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

#[cfg(test)]
mod tests {
    use super::CongestionControl;
    use clap::ValueEnum;

    #[test]
    fn the_names_agree() {
        for cc in CongestionControl::value_variants() {
            assert_eq!(cc.quiche_name().parse(), Ok(cc.algorithm()), "{cc:?}");
            let flag = cc.to_possible_value().expect("every variant is a value");
            assert_eq!(flag.get_name(), cc.name());
        }
    }
}
