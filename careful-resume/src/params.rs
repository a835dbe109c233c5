//! What a resumed connection starts from: the saved path parameters and the
//! sender's configuration.

use std::fmt;
use std::num::NonZeroU32;
use std::time::Duration;

/// Capacity of a path observed by an earlier connection (the "saved set").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SavedState {
    /// Bytes the earlier connection could keep in flight in one RTT.
    pub cwnd: usize,
    /// Minimum RTT the earlier connection measured.
    pub rtt: Duration,
}

/// Factor applied to PipeSize to derive ssthresh when leaving Safe Retreat.
///
/// RFC 9959 allows values from 0.5 to 1; the value is kept in thousandths so
/// every computation stays in integer arithmetic and is reproducible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beta(u16);

impl Beta {
    /// The RFC's default, 0.5.
    pub const DEFAULT: Beta = Beta(500);

    /// Builds a Beta from thousandths (500 = 0.5); `None` outside 500..=1000.
    pub fn from_permille(permille: u16) -> Option<Beta> {
        (500..=1000).contains(&permille).then_some(Beta(permille))
    }

    /// The value in thousandths.
    pub fn permille(self) -> u16 {
        self.0
    }

    /// `bytes * Beta`, rounded down; cannot overflow since Beta <= 1.
    pub(crate) fn apply(self, bytes: usize) -> usize {
        let scaled = bytes as u128 * u128::from(self.0) / 1000;
        // Beta <= 1 so the result never exceeds `bytes`.
        usize::try_from(scaled).unwrap_or(bytes)
    }
}

impl Default for Beta {
    fn default() -> Self {
        Beta::DEFAULT
    }
}

/// When the data sent under the initial window counts as acknowledged, one of
/// the conditions for jumping out of Reconnaissance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InitialData {
    /// Project default: everything sent so far (the handshake flight and any
    /// application data, at most IW) has been acknowledged by an ACK that
    /// also produced a valid RTT sample. A server typically jumps as soon as
    /// the client's request arrives.
    #[default]
    HandshakeFlight,
    /// Stricter reading: after that, wait until a further IW of application
    /// data has been acknowledged. Costs about one RTT.
    ExtraWindow,
}

/// Why a [`Config`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The maximum datagram size was zero.
    ZeroDatagramSize,
    /// The initial window was below two datagrams, the smallest window QUIC
    /// allows (RFC 9002, section 7.2).
    InitialWindowTooSmall,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigError::ZeroDatagramSize => "maximum datagram size is zero",
            ConfigError::InitialWindowTooSmall => "initial window is below two datagrams",
        })
    }
}

impl std::error::Error for ConfigError {}

/// Sender configuration for Careful Resume. Sizes are in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    initial_window: usize,
    max_datagram_size: usize,
    max_jump: usize,
    beta: Beta,
    rtt_upper_factor: NonZeroU32,
    initial_data: InitialData,
    slow_start_past_saved: bool,
}

impl Config {
    /// The project's default RTT upper factor: an RTT above 10 x saved_rtt
    /// is treated as a path change.
    pub const DEFAULT_RTT_UPPER_FACTOR: NonZeroU32 = match NonZeroU32::new(10) {
        Some(factor) => factor,
        None => unreachable!(),
    };

    /// A configuration with the given initial window and datagram size, no
    /// extra jump limit, Beta 0.5, RTT upper factor 10 and the default
    /// reading of "initial data".
    pub fn new(initial_window: usize, max_datagram_size: usize) -> Result<Config, ConfigError> {
        if max_datagram_size == 0 {
            return Err(ConfigError::ZeroDatagramSize);
        }
        if initial_window < max_datagram_size.saturating_mul(2) {
            return Err(ConfigError::InitialWindowTooSmall);
        }
        Ok(Config {
            initial_window,
            max_datagram_size,
            max_jump: usize::MAX,
            beta: Beta::DEFAULT,
            rtt_upper_factor: Self::DEFAULT_RTT_UPPER_FACTOR,
            initial_data: InitialData::default(),
            slow_start_past_saved: false,
        })
    }

    /// Caps the jump window (the RFC's `max_jump`). Deployments should set
    /// this to what they are prepared to send unvalidated into a path.
    pub fn with_max_jump(mut self, max_jump: usize) -> Config {
        self.max_jump = max_jump;
        self
    }

    /// Sets Beta, the ssthresh factor used when leaving Safe Retreat.
    pub fn with_beta(mut self, beta: Beta) -> Config {
        self.beta = beta;
        self
    }

    /// Sets the factor above which an RTT (relative to saved_rtt) counts as
    /// a path change: the minimum RTT in Reconnaissance (Careful Resume
    /// ends, `rtt_not_validated`), the smoothed RTT while unvalidated (Safe
    /// Retreat, `path_changed`).
    pub fn with_rtt_upper_factor(mut self, factor: NonZeroU32) -> Config {
        self.rtt_upper_factor = factor;
        self
    }

    /// Chooses the reading of "initial data has been acknowledged".
    pub fn with_initial_data(mut self, initial_data: InitialData) -> Config {
        self.initial_data = initial_data;
        self
    }

    /// Whether slow start may go on past the saved capacity after a
    /// validated jump once the round trip after the validation came back
    /// whole and without a queue
    /// ([`crate::CarefulResume::on_ack_after_validation`]); off by default,
    /// when slow start ends at the saved capacity.
    ///
    /// On pays where the saved capacity is well below the path: over a path
    /// grown fivefold since the set was saved, resuming took 1.33 x (CUBIC)
    /// and 1.39 x (Reno) the time without a token with it off, 0.75 x with
    /// it on (both; cr-sim, 10 then 50 Mbit/s at 600 ms, 10 MiB). It
    /// costs where the saved capacity is near the path and the queue is
    /// short or managed: the smoothed RTT lags a queue that fills within a
    /// round trip, and CoDel keeps one below the check's threshold, so slow
    /// start goes on until packets are dropped (behind fq_codel at 50
    /// Mbit/s and 300 ms, 167 packets lost where none were; behind a 64 KiB
    /// drop-tail queue at 20 Mbit/s and 300 ms, 92 on real sockets). So it
    /// is off unless the paths are known to grow. `cr-sim run
    /// --slow-start-past-saved` measures a path both ways.
    pub fn with_slow_start_past_saved(mut self, on: bool) -> Config {
        self.slow_start_past_saved = on;
        self
    }

    /// The initial window (IW).
    pub fn initial_window(&self) -> usize {
        self.initial_window
    }

    /// The maximum datagram size the sender uses.
    pub fn max_datagram_size(&self) -> usize {
        self.max_datagram_size
    }

    /// The configured upper limit of the jump window.
    pub fn max_jump(&self) -> usize {
        self.max_jump
    }

    /// Beta.
    pub fn beta(&self) -> Beta {
        self.beta
    }

    /// The RTT upper factor.
    pub fn rtt_upper_factor(&self) -> NonZeroU32 {
        self.rtt_upper_factor
    }

    /// The reading of "initial data".
    pub fn initial_data(&self) -> InitialData {
        self.initial_data
    }

    /// Whether slow start may go on past the saved capacity after a
    /// validated jump ([`Config::with_slow_start_past_saved`]).
    pub fn slow_start_past_saved(&self) -> bool {
        self.slow_start_past_saved
    }

    /// The smallest window QUIC allows: two datagrams.
    pub(crate) fn minimum_window(&self) -> usize {
        self.max_datagram_size.saturating_mul(2)
    }

    /// The jump window for a saved set: min(max_jump, saved_cwnd / 2).
    pub(crate) fn jump_window(&self, saved: &SavedState) -> usize {
        (saved.cwnd / 2).min(self.max_jump)
    }
}
