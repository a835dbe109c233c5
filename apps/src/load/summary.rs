//! What a load run prints: the downloads' outcomes, the server's report
//! lines and its `/proc` figures, folded into one JSON object per run (or
//! per arm of the probe), and the statistics they need (nearest-rank
//! percentiles, the most connections open at once).

use std::time::Duration;

use serde::Serialize;

use super::server::{ServerLine, Usage};
use crate::error::AppError;
use crate::relay::RelayStats;

/// One download as a client saw it.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Completion time (first packet to last body byte), if it completed
    /// with every byte verified.
    pub completion: Option<Duration>,
    /// Body bytes that matched the pattern ([`cr_serve::body`]).
    pub verified: u64,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// The summary of a load run: one JSON line.
#[derive(Clone, Debug, Serialize)]
pub struct LoadSummary {
    /// Clients running at once.
    pub clients: usize,
    /// Downloads attempted.
    pub connections: usize,
    /// Downloads whose whole body arrived and matched the pattern.
    pub completed: usize,
    /// Downloads that failed (timed out, refused, a wrong byte).
    pub failed: usize,
    /// Connections on which Careful Resume jumped (the server's lines).
    pub engaged: usize,
    /// Body bytes received and verified against the pattern.
    pub bytes_verified: u64,
    /// Body bytes asked for.
    pub bytes_expected: u64,
    /// Median completion time of the completed downloads, seconds.
    pub p50_s: Option<f64>,
    /// 99th percentile (nearest rank), seconds.
    pub p99_s: Option<f64>,
    /// Wall time from the first download's start to the last one's end.
    pub wall_s: f64,
    /// The server's resident memory before the first connection, KiB.
    pub server_start_rss_kib: Option<u64>,
    /// The server's peak resident memory (`VmHWM`), KiB.
    pub server_peak_rss_kib: Option<u64>,
    /// The most connections the server had open at once (from its lines).
    pub server_peak_connections: usize,
    /// Peak RSS above the start, per connection open at the peak, KiB.
    pub server_rss_per_connection_kib: Option<f64>,
    /// The server's CPU time (user and system) during the run, seconds.
    pub server_cpu_s: Option<f64>,
    /// Response body the server sent, MB (10^6 bytes).
    pub server_mb_sent: f64,
    /// `server_cpu_s` per MB sent.
    pub server_cpu_s_per_mb: Option<f64>,
    /// Packets the server sent (its lines).
    pub server_sent_packets: u64,
    /// Packets the server declared lost.
    pub server_lost_packets: u64,
    /// Datagrams the relay's links dropped (queue and random), both ways.
    pub relay_lost_packets: u64,
    /// Datagrams the relay forwarded from the server.
    pub relay_sent_packets: u64,
    /// Datagrams the kernel dropped on the relay's sockets (should be 0).
    pub relay_kernel_drops: Option<u64>,
    /// The first failure, to say what went wrong.
    pub first_error: Option<String>,
}

/// One arm of the probe: one JSON line.
#[derive(Clone, Debug, Serialize)]
pub struct ArmSummary {
    /// `alone` (each client by itself, measuring the path), `resume`
    /// (all at once, presenting tokens) or `baseline` (all at once, none).
    pub arm: &'static str,
    /// Clients.
    pub clients: usize,
    /// Downloads whose whole body arrived and matched the pattern.
    pub completed: usize,
    /// Downloads that failed.
    pub failed: usize,
    /// Connections on which Careful Resume jumped.
    pub engaged: usize,
    /// The windows they jumped to, summed, in bytes (after the server's
    /// jump budget lowered them).
    pub jumped_bytes: u64,
    /// Body bytes verified against the pattern.
    pub bytes_verified: u64,
    /// Body bytes asked for.
    pub bytes_expected: u64,
    /// Median completion time, seconds.
    pub median_s: Option<f64>,
    /// Slowest completion time, seconds.
    pub max_s: Option<f64>,
    /// Datagrams the relay's links dropped (the path's losses), both ways.
    pub lost_packets: u64,
    /// Packets the server sent.
    pub sent_packets: u64,
    /// Packets the server declared lost.
    pub server_lost_packets: u64,
    /// The first failure.
    pub first_error: Option<String>,
}

/// What a run measured besides the downloads.
pub(super) struct Measured<'a> {
    pub(super) clients: usize,
    pub(super) size: u64,
    pub(super) wall: Duration,
    pub(super) lines: &'a [ServerLine],
    pub(super) usage: Option<(Usage, Usage)>,
    pub(super) relay: RelayStats,
}

impl LoadSummary {
    /// Folds a run's outcomes and measurements into the summary.
    pub(super) fn new(outcomes: &[Outcome], measured: &Measured<'_>) -> LoadSummary {
        let times = completion_times(outcomes);
        let lines = measured.lines;
        let peak_connections = peak_concurrency(lines);
        let mb_sent = lines.iter().map(|l| l.bytes).sum::<u64>() as f64 / 1e6;
        let (start, end) = measured.usage.unzip();
        let cpu_s = measured
            .usage
            .map(|(start, end)| end.cpu.saturating_sub(start.cpu).as_secs_f64());
        let relay = &measured.relay;
        LoadSummary {
            clients: measured.clients,
            connections: outcomes.len(),
            completed: times.len(),
            failed: outcomes.len() - times.len(),
            engaged: lines.iter().filter(|l| l.engaged).count(),
            bytes_verified: outcomes.iter().map(|o| o.verified).sum(),
            bytes_expected: outcomes.len() as u64 * measured.size,
            p50_s: percentile(&times, 50.0),
            p99_s: percentile(&times, 99.0),
            wall_s: measured.wall.as_secs_f64(),
            server_start_rss_kib: start.map(|u| u.rss_kib),
            server_peak_rss_kib: end.map(|u| u.peak_rss_kib),
            server_peak_connections: peak_connections,
            server_rss_per_connection_kib: measured.usage.filter(|_| peak_connections > 0).map(
                |(start, end)| {
                    end.peak_rss_kib.saturating_sub(start.rss_kib) as f64 / peak_connections as f64
                },
            ),
            server_cpu_s: cpu_s,
            server_mb_sent: mb_sent,
            server_cpu_s_per_mb: cpu_s.filter(|_| mb_sent > 0.0).map(|cpu| cpu / mb_sent),
            server_sent_packets: lines.iter().map(|l| l.sent).sum(),
            server_lost_packets: lines.iter().map(|l| l.lost).sum(),
            relay_lost_packets: relay_drops(relay),
            relay_sent_packets: relay.down.forwarded,
            relay_kernel_drops: relay
                .kernel_drops_up
                .zip(relay.kernel_drops_down)
                .map(|(u, d)| u + d),
            first_error: first_error(outcomes),
        }
    }
}

impl ArmSummary {
    /// Folds one arm's outcomes, server lines and the relay's drops during
    /// the arm into its line.
    pub fn new(
        arm: &'static str,
        outcomes: &[Outcome],
        size: u64,
        lines: &[ServerLine],
        lost_packets: u64,
    ) -> ArmSummary {
        let times = completion_times(outcomes);
        ArmSummary {
            arm,
            clients: outcomes.len(),
            completed: times.len(),
            failed: outcomes.len() - times.len(),
            engaged: lines.iter().filter(|l| l.engaged).count(),
            jumped_bytes: lines.iter().filter_map(|l| l.jump).sum(),
            bytes_verified: outcomes.iter().map(|o| o.verified).sum(),
            bytes_expected: outcomes.len() as u64 * size,
            median_s: percentile(&times, 50.0),
            max_s: times.last().map(Duration::as_secs_f64),
            lost_packets,
            sent_packets: lines.iter().map(|l| l.sent).sum(),
            server_lost_packets: lines.iter().map(|l| l.lost).sum(),
            first_error: first_error(outcomes),
        }
    }
}

/// `value` as one line of JSON.
pub fn json_line<T: Serialize>(value: &T) -> Result<String, AppError> {
    serde_json::to_string(value).map_err(|e| AppError::Invalid(format!("writing JSON: {e}")))
}

/// The datagrams the relay's links dropped, both directions.
pub(super) fn relay_drops(stats: &RelayStats) -> u64 {
    [stats.up, stats.down]
        .iter()
        .map(|l| l.queue_drops + l.random_drops)
        .sum()
}

/// The completed downloads' times, sorted.
fn completion_times(outcomes: &[Outcome]) -> Vec<Duration> {
    let mut times: Vec<Duration> = outcomes.iter().filter_map(|o| o.completion).collect();
    times.sort();
    times
}

fn first_error(outcomes: &[Outcome]) -> Option<String> {
    outcomes.iter().find_map(|o| o.error.clone())
}

/// The nearest-rank percentile `p` (0-100] of sorted `times`, seconds.
pub fn percentile(times: &[Duration], p: f64) -> Option<f64> {
    let n = times.len();
    if n == 0 {
        return None;
    }
    let rank = ((p / 100.0 * n as f64).ceil() as usize).clamp(1, n);
    Some(times[rank - 1].as_secs_f64())
}

/// The most connections open at once, each open from its end (when its
/// line was read) less its lifetime.
pub fn peak_concurrency(lines: &[ServerLine]) -> usize {
    // +1 at an opening, -1 at a close; a close sorts before an opening at
    // the same instant.
    let mut events: Vec<_> = lines
        .iter()
        .flat_map(|l| {
            [
                (l.at.checked_sub(l.lifetime).unwrap_or(l.at), 1i64),
                (l.at, -1),
            ]
        })
        .collect();
    events.sort();
    let mut open = 0i64;
    let mut peak = 0i64;
    for (_, change) in events {
        open += change;
        peak = peak.max(open);
    }
    usize::try_from(peak).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn percentiles_are_nearest_rank() {
        let times: Vec<Duration> = (1..=100).map(Duration::from_secs).collect();
        assert_eq!(percentile(&times, 50.0), Some(50.0));
        assert_eq!(percentile(&times, 99.0), Some(99.0));
        assert_eq!(percentile(&times[..3], 50.0), Some(2.0));
        assert_eq!(percentile(&times[..1], 99.0), Some(1.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn peak_concurrency_counts_overlapping_lifetimes() {
        let origin = Instant::now();
        let line = |end_s: u64, lifetime_s: u64| ServerLine {
            at: origin + Duration::from_secs(end_s + 100),
            engaged: false,
            jump: None,
            bytes: 0,
            sent: 0,
            lost: 0,
            lifetime: Duration::from_secs(lifetime_s),
            set: None,
        };
        // [0,10], [5,15], [9,11], then [15,20] after the second closes.
        let lines = [line(10, 10), line(15, 10), line(11, 2), line(20, 5)];
        assert_eq!(peak_concurrency(&lines), 3);
        assert_eq!(peak_concurrency(&lines[3..]), 1);
        assert_eq!(peak_concurrency(&[]), 0);
    }

    #[test]
    fn a_failed_download_counts_its_verified_bytes_only() {
        let outcomes = [
            Outcome {
                completion: Some(Duration::from_secs(2)),
                verified: 100,
                error: None,
            },
            Outcome {
                completion: None,
                verified: 40,
                error: Some("timed out".into()),
            },
        ];
        let arm = ArmSummary::new("resume", &outcomes, 100, &[], 7);
        assert_eq!((arm.completed, arm.failed), (1, 1));
        assert_eq!((arm.bytes_verified, arm.bytes_expected), (140, 200));
        assert_eq!(arm.median_s, Some(2.0));
        assert_eq!(arm.first_error.as_deref(), Some("timed out"));
        assert_eq!(arm.lost_packets, 7);
    }
}
