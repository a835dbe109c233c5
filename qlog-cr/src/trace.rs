//! A trace read from a qlog file, as timelines (the `read` module reads one).

use crate::event::CarefulResumePhaseUpdated;

/// A value at a point in time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample<T> {
    /// Milliseconds since the start of the trace.
    pub time_ms: f64,
    /// The value from that time on.
    pub value: T,
}

/// A quantity that changes in steps: each sample holds until the next one.
#[derive(Clone, Debug, PartialEq)]
pub struct Series<T> {
    samples: Vec<Sample<T>>,
}

impl<T> Default for Series<T> {
    fn default() -> Self {
        Series {
            samples: Vec::new(),
        }
    }
}

impl<T: Copy + PartialOrd> Series<T> {
    /// The samples in time order.
    pub fn samples(&self) -> &[Sample<T>] {
        &self.samples
    }

    /// Whether the trace never reported this quantity.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The last value reported.
    pub fn last(&self) -> Option<T> {
        self.samples.last().map(|s| s.value)
    }

    /// The largest value reported.
    pub fn max(&self) -> Option<T> {
        self.samples
            .iter()
            .map(|s| s.value)
            .reduce(|a, b| if b > a { b } else { a })
    }

    /// The smallest value reported.
    pub fn min(&self) -> Option<T> {
        self.samples
            .iter()
            .map(|s| s.value)
            .reduce(|a, b| if b < a { b } else { a })
    }

    /// The value in force at `time_ms`: the last one reported at or before it.
    pub fn at(&self, time_ms: f64) -> Option<T> {
        let after = self.samples.partition_point(|s| s.time_ms <= time_ms);
        after.checked_sub(1).map(|i| self.samples[i].value)
    }

    pub(crate) fn push(&mut self, time_ms: f64, value: T) {
        self.samples.push(Sample { time_ms, value });
    }

    /// Puts samples in time order, keeping the log order of equal times.
    pub(crate) fn sort(&mut self) {
        self.samples.sort_by(|a, b| a.time_ms.total_cmp(&b.time_ms));
    }
}

/// The quantities of a connection over time.
///
/// Byte counts are in bytes, times in milliseconds, rates as logged (quiche
/// logs `pacing_rate` in bytes per second).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timelines {
    /// Congestion window (bytes).
    pub congestion_window: Series<u64>,
    /// Bytes in flight.
    pub bytes_in_flight: Series<u64>,
    /// Slow start threshold (bytes).
    pub ssthresh: Series<u64>,
    /// Smoothed RTT (ms).
    pub smoothed_rtt_ms: Series<f64>,
    /// Minimum RTT (ms).
    pub min_rtt_ms: Series<f64>,
    /// Latest RTT sample (ms).
    pub latest_rtt_ms: Series<f64>,
    /// Pacing rate, as logged.
    pub pacing_rate: Series<u64>,
    /// Total size of all packets sent so far (bytes).
    pub bytes_sent: Series<u64>,
    /// Total size of the sent packets acknowledged so far (bytes).
    pub bytes_acked: Series<u64>,
    /// New stream data received so far, retransmissions not counted (bytes).
    pub stream_bytes_received: Series<u64>,
    /// Connection flow-control limit granted by the peer: how far this
    /// endpoint may send (bytes).
    pub peer_max_data: Series<u64>,
    /// Connection flow-control limit this endpoint granted the peer (bytes).
    pub local_max_data: Series<u64>,
    /// Careful Resume PipeSize, as of each phase change (bytes).
    pub pipesize: Series<u64>,
}

/// A Careful Resume phase change, from a
/// `quic:careful_resume_phase_updated` event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseChange {
    /// Milliseconds since the start of the trace.
    pub time_ms: f64,
    /// The event's data.
    pub update: CarefulResumePhaseUpdated,
}

/// Packets declared lost at one time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loss {
    /// Milliseconds since the start of the trace.
    pub time_ms: f64,
    /// How many packets.
    pub packets: u64,
    /// The packet number, when the trace names the packet.
    pub packet_number: Option<u64>,
}

/// One connection endpoint's trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// A name for display: the trace title, else the file name.
    pub name: String,
    /// `server` or `client`, when the header says.
    pub vantage_point: Option<String>,
    /// The quantities over time.
    pub timelines: Timelines,
    /// Careful Resume phase changes in time order.
    pub phase_changes: Vec<PhaseChange>,
    /// Packet losses in time order.
    pub losses: Vec<Loss>,
    /// Time of the last event (ms).
    pub duration_ms: f64,
    /// When the last application data arrived or was acknowledged (ms);
    /// `None` when no stream data moved.
    pub completion_ms: Option<f64>,
}

impl Trace {
    /// Total packets lost.
    pub fn lost_packets(&self) -> u64 {
        self.losses.iter().map(|l| l.packets).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(points: &[(f64, u64)]) -> Series<u64> {
        let mut s = Series::default();
        for &(t, v) in points {
            s.push(t, v);
        }
        s
    }

    #[test]
    fn value_at_is_the_last_sample_at_or_before() {
        let s = series(&[(10.0, 1), (20.0, 5), (30.0, 2)]);
        assert_eq!(s.at(9.9), None);
        assert_eq!(s.at(10.0), Some(1));
        assert_eq!(s.at(25.0), Some(5));
        assert_eq!(s.at(1e9), Some(2));
    }

    #[test]
    fn extremes() {
        let s = series(&[(0.0, 3), (1.0, 9), (2.0, 4)]);
        assert_eq!((s.min(), s.max(), s.last()), (Some(3), Some(9), Some(4)));
        assert_eq!(Series::<u64>::default().max(), None);
    }

    #[test]
    fn sort_is_stable_for_equal_times() {
        let mut s = series(&[(2.0, 1), (1.0, 2), (2.0, 3)]);
        s.sort();
        let values: Vec<u64> = s.samples().iter().map(|p| p.value).collect();
        assert_eq!(values, vec![2, 1, 3]);
    }
}
