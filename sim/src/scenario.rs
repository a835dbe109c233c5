//! A scenario: the path, the transfer and the knobs of one session.

use std::time::Duration;

use crate::error::SimError;
use crate::link::MAX_DATAGRAM;
use crate::units::LossWindow;
use crate::units::Probability;
use crate::units::QueueLimit;
use crate::units::Rate;
use cr_serve::bottleneck::{Discipline, Policer, Schedule};
use cr_serve::CongestionControl;
use cr_serve::Protocol;
use cr_serve::SlowStart;

/// A competing long download sharing the bottleneck.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Competing {
    /// Bytes it asks for: more than it can fetch before the session ends.
    pub size: u64,
}

impl Default for Competing {
    fn default() -> Self {
        Competing { size: 1 << 30 }
    }
}

/// Everything that defines a session of two connections.
///
/// The link is symmetric: both directions have `rate`, `rtt / 2` of delay,
/// the queue, the loss and the jitter.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Bottleneck rate.
    pub rate: Rate,
    /// Round-trip propagation delay (twice the one-way delay).
    pub rtt: Duration,
    /// Bytes the client fetches on each connection.
    pub size: u64,
    /// The server's congestion controller.
    pub cc: CongestionControl,
    /// Random loss probability.
    pub loss: Probability,
    /// Loss windows, counted from the start of each connection.
    pub loss_windows: Vec<LossWindow>,
    /// Rate for the second connection, when the path's capacity changed.
    pub rate2: Option<Rate>,
    /// RTT for the second connection, when the path changed.
    pub rtt2: Option<Duration>,
    /// Drop-tail queue limit (per direction).
    pub queue: QueueLimit,
    /// Time between the end of the first download and the second connection.
    pub gap: Duration,
    /// Seed of all randomness on the link.
    pub seed: u64,
    /// The application.
    pub app: Protocol,
    /// Whether the second connection may resume (false: the baseline).
    pub resume: bool,
    /// Largest extra one-way delay added at random to each datagram.
    pub jitter: Duration,
    /// Capacity changes `(time after the first connection started, rate)`.
    pub rate_steps: Vec<(Duration, Rate)>,
    /// A long download that starts when the first connection completes, so
    /// the second connection joins a link already in use.
    pub competing: Option<Competing>,
    /// Sizes of the connections after the first, each presenting the newest
    /// token the client holds; empty: one more connection of `size`.
    pub later_sizes: Vec<u64>,
    /// Whether the client closes each connection as soon as its download is
    /// complete (a command-line tool) rather than keeping it open until the
    /// next one (an HTTP client's connection pool, the default).
    pub close_when_done: bool,
    /// Whether the endpoints send short packets whenever the congestion
    /// window has a little room, as quiche does by default, rather than
    /// waiting for room for a full one (silly window avoidance, quiche-cr's
    /// setting).
    pub small_packets: bool,
    /// How Reno and CUBIC end their first slow start.
    pub slow_start: SlowStart,
    /// Whether the client keeps its TLS session and sends each later
    /// connection's request as early data (0-RTT), as browsers do, and the
    /// server accepts it.
    pub early_data: bool,
    /// The bottleneck's queue: drop-tail, CoDel or fq_codel (RFC 8289 and
    /// 8290 defaults: target 5 ms, interval 100 ms), within `queue`.
    pub discipline: Discipline,
    /// A token-bucket policer before the queue, in both directions, on
    /// every connection.
    pub policer: Option<Policer>,
    /// A policer on the second and later connections' path instead (a
    /// path that changed: a mobile plan throttled after the first).
    pub policer2: Option<Policer>,
    /// The rate and round-trip delay over time, counted from each
    /// connection's start; replaces `rate`, `rtt`, `rate2`, `rtt2` and
    /// `rate_steps` on the link (`rate` and `rtt` still size the queue in
    /// BDPs and give the limit).
    pub schedule: Option<Schedule>,
    /// A schedule on the second and later connections' path instead,
    /// counted from each of their starts: a path that changes while a
    /// resumed connection jumps (a rate drop, a LEO reconfiguration), after
    /// a first connection on the steady path saved its capacity.
    pub schedule2: Option<Schedule>,
    /// The server updates its smoothed RTT and rttvar once per round trip
    /// ([`quiche::Config::enable_rtt_once_per_rtt`]) rather than per ACK.
    pub rtt_once_per_rtt: bool,
    /// Reno and CUBIC pace their packets
    /// ([`quiche::Config::enable_reno_cubic_pacing`]; off, as by default).
    pub pace: bool,
    /// The server lets slow start go on past the saved capacity after a
    /// validated jump once the round after it showed room
    /// ([`cr_endpoint::ResumeConfig::slow_start_past_saved`]; off, as by
    /// default).
    pub slow_start_past_saved: bool,
}

impl Default for Scenario {
    /// The seed dissertation's case: 1 MiB over 10 Mbit/s and 800 ms.
    fn default() -> Self {
        Scenario {
            rate: Rate::mbit(10),
            rtt: Duration::from_millis(800),
            size: 1 << 20,
            cc: CongestionControl::Cubic,
            loss: Probability::default(),
            loss_windows: Vec::new(),
            rate2: None,
            rtt2: None,
            queue: QueueLimit::Bdp(1.0),
            gap: Duration::from_secs(1),
            seed: 1,
            app: Protocol::H3,
            resume: true,
            jitter: Duration::ZERO,
            rate_steps: Vec::new(),
            competing: None,
            later_sizes: Vec::new(),
            close_when_done: false,
            small_packets: false,
            slow_start: SlowStart::Search,
            early_data: false,
            rtt_once_per_rtt: false,
            pace: false,
            slow_start_past_saved: false,
            discipline: Discipline::DropTail,
            policer: None,
            policer2: None,
            schedule: None,
            schedule2: None,
        }
    }
}

impl Scenario {
    /// The same scenario with the request of each later connection sent as
    /// early data (0-RTT).
    pub fn in_early_data(&self) -> Scenario {
        Scenario {
            early_data: true,
            ..self.clone()
        }
    }

    /// The same scenario as its no-resume baseline.
    pub fn baseline(&self) -> Scenario {
        Scenario {
            resume: false,
            ..self.clone()
        }
    }

    /// The same path measuring the first connection alone: the second
    /// connection, which every session has, fetches a single kilobyte and
    /// presents no token.
    pub fn first_only(&self) -> Scenario {
        Scenario {
            later_sizes: vec![1024],
            resume: false,
            ..self.clone()
        }
    }

    /// The same scenario sent as quiche does by default, with short packets
    /// wherever the congestion window has a little room.
    pub fn with_small_packets(&self) -> Scenario {
        Scenario {
            small_packets: true,
            ..self.clone()
        }
    }

    /// The size of every connection, in order (at least two).
    pub fn sizes(&self) -> Vec<u64> {
        let later = match self.later_sizes.as_slice() {
            [] => &[self.size][..],
            later => later,
        };
        std::iter::once(self.size)
            .chain(later.iter().copied())
            .collect()
    }

    /// Rate of the path of the second and later connections.
    pub fn second_rate(&self) -> Rate {
        self.rate2.unwrap_or(self.rate)
    }

    /// RTT of the path of the second and later connections.
    pub fn second_rtt(&self) -> Duration {
        self.rtt2.unwrap_or(self.rtt)
    }

    /// The physical limit of a connection fetching `size` bytes: 2 x RTT +
    /// size / rate.
    pub fn limit(size: u64, rate: Rate, rtt: Duration) -> Duration {
        2 * rtt + rate.serialisation(size)
    }

    /// The drop-tail limit of a path of `rate` and `rtt`, in bytes: the
    /// scenario's queue, never less than one full-size datagram so that the
    /// link can carry anything.
    pub fn queue_bytes(&self, rate: Rate, rtt: Duration) -> u64 {
        self.queue.bytes(rate, rtt).max(MAX_DATAGRAM as u64)
    }

    /// Rejects parameters the simulator cannot run.
    pub fn check(&self) -> Result<(), SimError> {
        if self.sizes().contains(&0) {
            return Err(SimError::Scenario(
                "the size must be at least 1 byte".into(),
            ));
        }
        if self.rtt.is_zero() || self.second_rtt().is_zero() {
            return Err(SimError::Scenario("the RTT must be more than 0".into()));
        }
        if self.loss.value() >= 1.0 {
            return Err(SimError::Scenario("a loss of 100% never delivers".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_holds_at_least_one_datagram() {
        let tiny = Scenario {
            queue: QueueLimit::Bytes(10),
            ..Scenario::default()
        };
        let (rate, rtt) = (tiny.rate, tiny.rtt);
        assert_eq!(tiny.queue_bytes(rate, rtt), MAX_DATAGRAM as u64);
        assert_eq!(Scenario::default().queue_bytes(rate, rtt), 1_000_000);
    }
}
