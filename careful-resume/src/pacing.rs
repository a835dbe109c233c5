//! A pacer for the window-based controllers (Reno, CUBIC), as RFC 9002
//! section 7.7 recommends, for servers that opt in (quiche's
//! `Config::enable_reno_cubic_pacing`).
//!
//! Without it a window-based sender sends as the window opens: a round of
//! slow start leaves as a burst at twice the rate its ACKs come back, and
//! the first flight leaves at the sender's line rate. A token-bucket
//! policer with a small bucket, or a shallow queue, drops much of each
//! burst. The pacer gives each packet a release time at
//! `gain * cwnd / smoothed RTT`:
//!
//! - [`SLOW_START_GAIN`] (4) in slow start: the window still doubles each
//!   round trip, and a round leaves within a quarter of the RTT. At a gain
//!   of 2 a round is spread over the whole RTT, and SEARCH, which compares
//!   what was delivered with what was sent one round trip earlier, ends
//!   slow start too late on clean paths and far too early with delay
//!   jitter (measured in cr-sim's first-loss and jitter sweeps). At a gain
//!   of 8, slow start's bursts show the bottleneck's rate sooner (ACK
//!   trains), but a policer with a small bucket drops more of them: 4
//!   serves the paths pacing is for;
//! - [`AVOIDANCE_GAIN`] (1.25, RFC 9002's N) after slow start.
//!
//! A sender that was idle may send [`BURST_PACKETS`] datagrams at once (RFC
//! 9002 allows a burst of up to the initial window). The pacer reads no
//! clock: its caller gives it the time.

use std::time::{Duration, Instant};

/// Datagrams that may leave back to back after an idle period.
pub const BURST_PACKETS: usize = 10;

/// The pacing gain in slow start.
pub const SLOW_START_GAIN: f64 = 4.0;

/// The pacing gain in congestion avoidance (RFC 9002's N).
pub const AVOIDANCE_GAIN: f64 = 1.25;

/// Release times of the packets a window-based controller sends.
#[derive(Clone, Debug, Default)]
pub struct Pacer {
    /// When the next packet may leave once the burst credit is spent.
    next: Option<Instant>,
    /// The release time of the latest packet.
    last_release: Option<Instant>,
}

/// What the controller says when a packet is built.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// The congestion window, bytes.
    pub cwnd: usize,
    /// Whether the controller is in slow start.
    pub in_slow_start: bool,
    /// The smoothed RTT.
    pub srtt: Duration,
    /// The path's maximum datagram size, bytes.
    pub max_datagram_size: usize,
}

impl Window {
    /// How long `bytes` take at the pacing rate.
    fn interval(&self, bytes: usize) -> Duration {
        let gain = if self.in_slow_start {
            SLOW_START_GAIN
        } else {
            AVOIDANCE_GAIN
        };
        let cwnd = self.cwnd.max(1) as f64;
        self.srtt.mul_f64(bytes as f64 / (gain * cwnd))
    }
}

impl Pacer {
    /// A pacer with a full burst allowance.
    pub fn new() -> Self {
        Pacer::default()
    }

    /// A packet of `bytes` in flight is built at `now` under `window`:
    /// returns when it may leave.
    pub fn on_packet_sent(&mut self, bytes: usize, window: &Window, now: Instant) -> Instant {
        // An idle sender has earned up to a burst's worth of credit: the
        // packet due now and as many again as the burst has left.
        let credit = window.interval((BURST_PACKETS - 1) * window.max_datagram_size);
        let floor = now.checked_sub(credit).unwrap_or(now);
        let start = self.next.map_or(floor, |next| next.max(floor));
        let release = start.max(now);
        self.next = Some(start + window.interval(bytes));
        self.last_release = Some(release);
        release
    }

    /// When the next packet may leave at the earliest: in the past (or
    /// `None`) when it may leave now.
    pub fn next_release(&self) -> Option<Instant> {
        self.next
    }

    /// The release time of the latest packet.
    pub fn last_release(&self) -> Option<Instant> {
        self.last_release
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: usize = 1_000;

    fn window(cwnd: usize, in_slow_start: bool) -> Window {
        Window {
            cwnd,
            in_slow_start,
            srtt: Duration::from_millis(100),
            max_datagram_size: MSS,
        }
    }

    #[test]
    fn a_burst_leaves_at_once_then_packets_are_spaced_at_the_rate() {
        let mut pacer = Pacer::new();
        let now = Instant::now() + Duration::from_secs(10);
        let window = window(100 * MSS, true);
        let releases: Vec<_> = (0..30)
            .map(|_| pacer.on_packet_sent(MSS, &window, now))
            .collect();
        assert!(releases[..BURST_PACKETS].iter().all(|&at| at == now));
        // 4 x 100 kB per 100 ms: 1000 bytes every 250 us.
        assert_eq!(releases[29] - releases[28], Duration::from_micros(250));
        assert_eq!(releases[29] - now, Duration::from_micros(250 * 20));
    }

    #[test]
    fn congestion_avoidance_paces_at_five_quarters_of_the_window() {
        let mut pacer = Pacer::new();
        let now = Instant::now() + Duration::from_secs(10);
        let window = window(125 * MSS, false);
        let releases: Vec<_> = (0..12)
            .map(|_| pacer.on_packet_sent(MSS, &window, now))
            .collect();
        // 1.25 x 125 kB per 100 ms: 1000 bytes every 640 us.
        assert_eq!(releases[11] - releases[10], Duration::from_micros(640));
    }

    #[test]
    fn idle_time_earns_at_most_a_burst() {
        let mut pacer = Pacer::new();
        let start = Instant::now() + Duration::from_secs(10);
        let window = window(40 * MSS, true);
        for _ in 0..40 {
            pacer.on_packet_sent(MSS, &window, start);
        }
        // A second later the pacer has been idle for far more than a burst:
        // ten datagrams leave at once, the eleventh one interval later.
        let later = start + Duration::from_secs(1);
        let releases: Vec<_> = (0..12)
            .map(|_| pacer.on_packet_sent(MSS, &window, later))
            .collect();
        assert!(releases[..BURST_PACKETS].iter().all(|&at| at == later));
        assert_eq!(releases[10] - later, Duration::from_micros(625));
        assert_eq!(releases[11] - later, Duration::from_micros(1_250));
    }
}
