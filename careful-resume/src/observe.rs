//! The observing policy: what an ongoing connection saves for a later one.
//!
//! The connection reports its state regularly (on each ACK or each round);
//! the [`Observer`] turns it into a candidate saved set and decides when a
//! new one is worth emitting (each emission typically becomes a fresh
//! NEW_TOKEN):
//!
//! - saved_rtt is the minimum RTT over the last 5 minutes;
//! - saved_cwnd is the window in congestion avoidance, half of it in slow
//!   start (the window may be an overshoot), max_bw x min_rtt for BBR;
//! - nothing below 4 x IW is saved: it would not be worth a jump;
//! - an observation taken while application-limited does not replace a
//!   higher one: the window was not measured at capacity;
//! - the first eligible observation is emitted; afterwards a new one is
//!   emitted when the refresh interval (60 s) has passed, or when, with t the
//!   seconds since the last emission, the RTT or the window moved by more
//!   than old / t (the seed dissertation's update rule: large changes are
//!   reported at once, small ones only after a while).

use std::time::{Duration, Instant};

use crate::min_filter::WindowedMin;

/// Observer configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObserverConfig {
    /// The initial window (IW), in bytes.
    pub initial_window: usize,
    /// Emit at least this often while eligible observations keep coming.
    pub refresh_interval: Duration,
    /// The window over which the minimum RTT is taken.
    pub rtt_window: Duration,
}

impl ObserverConfig {
    /// The project defaults: refresh every 60 s, min RTT over 5 minutes.
    pub fn new(initial_window: usize) -> Self {
        ObserverConfig {
            initial_window,
            refresh_interval: Duration::from_secs(60),
            rtt_window: Duration::from_secs(300),
        }
    }

    fn minimum_saved_cwnd(&self) -> usize {
        self.initial_window.saturating_mul(4)
    }
}

/// A saved set to hand to the token layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    /// Capacity to save, in bytes.
    pub saved_cwnd: usize,
    /// Minimum RTT to save.
    pub saved_rtt: Duration,
    /// When it was observed.
    pub at: Instant,
}

/// The state of a window-based controller at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSample {
    /// The congestion window, in bytes.
    pub cwnd: usize,
    /// Whether the controller is in slow start.
    pub in_slow_start: bool,
    /// Whether the sender is application-limited.
    pub app_limited: bool,
    /// An RTT sample (the latest or the connection's min RTT).
    pub rtt: Duration,
    /// When.
    pub now: Instant,
}

/// The state of BBR at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BbrSample {
    /// BBR's max bandwidth estimate, in bytes per second.
    pub max_bw: u64,
    /// Whether the sender is application-limited.
    pub app_limited: bool,
    /// An RTT sample.
    pub rtt: Duration,
    /// When.
    pub now: Instant,
}

/// Decides what the current connection saves, and when.
#[derive(Clone, Copy, Debug)]
pub struct Observer {
    config: ObserverConfig,
    min_rtt: WindowedMin,
    last: Option<Observation>,
}

impl Observer {
    /// An observer with nothing emitted yet.
    pub fn new(config: ObserverConfig) -> Self {
        Observer {
            config,
            min_rtt: WindowedMin::new(config.rtt_window),
            last: None,
        }
    }

    /// Feeds the state of a window-based controller.
    pub fn on_window_sample(&mut self, sample: &WindowSample) -> Option<Observation> {
        let saved_rtt = self.min_rtt.update(sample.rtt, sample.now);
        let cwnd = if sample.in_slow_start {
            sample.cwnd / 2
        } else {
            sample.cwnd
        };
        self.consider(cwnd, saved_rtt, sample.app_limited, sample.now)
    }

    /// Feeds the state of BBR: the candidate is max_bw x min_rtt.
    pub fn on_bbr_sample(&mut self, sample: &BbrSample) -> Option<Observation> {
        let saved_rtt = self.min_rtt.update(sample.rtt, sample.now);
        let bdp = u128::from(sample.max_bw) * saved_rtt.as_nanos() / 1_000_000_000;
        let cwnd = usize::try_from(bdp).unwrap_or(usize::MAX);
        self.consider(cwnd, saved_rtt, sample.app_limited, sample.now)
    }

    /// The last observation emitted.
    pub fn last(&self) -> Option<Observation> {
        self.last
    }

    fn consider(
        &mut self,
        saved_cwnd: usize,
        saved_rtt: Duration,
        app_limited: bool,
        now: Instant,
    ) -> Option<Observation> {
        if saved_cwnd < self.config.minimum_saved_cwnd() {
            return None;
        }
        let candidate = Observation {
            saved_cwnd,
            saved_rtt,
            at: now,
        };
        let emit = match self.last {
            None => true,
            Some(last) if app_limited && last.saved_cwnd > saved_cwnd => false,
            Some(last) => self.worth_updating(&last, &candidate),
        };
        if emit {
            self.last = Some(candidate);
        }
        emit.then_some(candidate)
    }

    /// The update rule: after the refresh interval, or when a value moved by
    /// more than old / t, t in seconds since the last emission.
    fn worth_updating(&self, last: &Observation, candidate: &Observation) -> bool {
        let elapsed = candidate.at.saturating_duration_since(last.at);
        if elapsed >= self.config.refresh_interval {
            return true;
        }
        let moved = |old: u128, new: u128| {
            // |new - old| > old / t  <=>  |new - old| x t_ns > old x 1e9
            old.abs_diff(new).saturating_mul(elapsed.as_nanos()) > old.saturating_mul(1_000_000_000)
        };
        moved(last.saved_rtt.as_nanos(), candidate.saved_rtt.as_nanos())
            || moved(last.saved_cwnd as u128, candidate.saved_cwnd as u128)
    }
}
