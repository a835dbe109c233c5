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

/// How a Reno or CUBIC sender ends its first slow start (BBR2 has its own
/// Startup and ignores it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SlowStart {
    /// SEARCH (draft-chung-ccwg-search, quiche patch 0022) beside
    /// HyStart++: slow start ends when deliveries stop keeping up with what
    /// was sent one round trip earlier, at any RTT, and slows down when the
    /// RTT rises. Alone on a path SEARCH ends it before a queue of one BDP
    /// overflows, where HyStart++ loses a tenth; in a crowd of first
    /// connections starting together, where each flow's deliveries keep up
    /// while the shared queue builds, HyStart++ sees the queue in the RTT
    /// (SEARCH without it lost eight times as much there). The default.
    #[default]
    Search,
    /// HyStart++ (RFC 9406) alone, quiche's default: slow start slows down
    /// when the RTT rises, and ends at a loss otherwise.
    Hystart,
}

impl SlowStart {
    /// Its name on command lines and in reports: `search`, `hystart`.
    pub fn name(self) -> &'static str {
        match self {
            SlowStart::Search => "search",
            SlowStart::Hystart => "hystart",
        }
    }

    /// Sets `config` to end slow start this way: HyStart++ always, SEARCH
    /// beside it or not.
    pub fn apply(self, config: &mut quiche::Config) {
        config.enable_search(self == SlowStart::Search);
        config.enable_hystart(true);
    }
}

#[cfg(test)]
mod tests {
    use super::{CongestionControl, SlowStart};
    use clap::ValueEnum;

    #[test]
    fn the_names_agree() {
        for cc in CongestionControl::value_variants() {
            assert_eq!(cc.quiche_name().parse(), Ok(cc.algorithm()), "{cc:?}");
            let flag = cc.to_possible_value().expect("every variant is a value");
            assert_eq!(flag.get_name(), cc.name());
        }
    }

    #[test]
    fn a_slow_start_is_named_as_its_flag() {
        for slow_start in SlowStart::value_variants() {
            let flag = slow_start
                .to_possible_value()
                .expect("every variant is a value");
            assert_eq!(flag.get_name(), slow_start.name());
        }
    }
}
