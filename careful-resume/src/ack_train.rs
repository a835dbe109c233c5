//! The bottleneck rate a burst reveals: how fast the ACKs of packets sent
//! back to back come back.
//!
//! A sender in slow start releases two packets for every one acknowledged,
//! faster than the bottleneck can forward them; the bottleneck spaces them
//! at its own rate, and so are their ACKs. A train of ACKs that arrive
//! close together therefore measures the bottleneck's rate (or the share of
//! it the connection got), rounds before the window reaches the path's
//! bandwidth-delay product. A gap in the train (the sender ran short of
//! data or window) ends it; a train counts once it has lasted an eighth of
//! the min RTT and acknowledged at least [`MIN_TRAIN_BYTES`], long enough
//! for delayed and slightly bunched ACKs to average out. (A quarter of the
//! min RTT missed the 192 kB round of a 1 MiB download at 800 ms, whose
//! train lasts 154 ms, so a client closing after the last byte left with
//! an estimate of a fifth of the BDP.)

use std::time::{Duration, Instant};

use crate::rate::bytes_per_second;

/// A train must acknowledge at least this much (about 20 packets) to count.
const MIN_TRAIN_BYTES: usize = 24_000;

/// The rate of the ACK trains seen so far.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct AckTrain {
    /// When the train's first ACK arrived (its bytes are not counted: they
    /// crossed the bottleneck before it).
    start: Option<Instant>,
    /// When the train's latest ACK arrived.
    last: Option<Instant>,
    /// Bytes acknowledged after the first ACK.
    bytes: usize,
    /// The highest rate of a train long enough to count, bytes per second.
    max_rate: u64,
}

impl AckTrain {
    /// An ACK newly acknowledged `acked_bytes` at `now`.
    pub(crate) fn on_ack(&mut self, acked_bytes: usize, min_rtt: Duration, now: Instant) {
        if acked_bytes == 0 {
            return;
        }
        let gap_ends_train = min_rtt / 8;
        let (Some(start), Some(last)) = (self.start, self.last) else {
            self.restart(now);
            return;
        };
        if now.saturating_duration_since(last) > gap_ends_train {
            self.restart(now);
            return;
        }
        self.last = Some(now);
        self.bytes = self.bytes.saturating_add(acked_bytes);
        let span = now.saturating_duration_since(start);
        if span >= min_rtt / 8 && self.bytes >= MIN_TRAIN_BYTES && !span.is_zero() {
            self.max_rate = self.max_rate.max(bytes_per_second(self.bytes, span));
        }
    }

    /// The highest rate a long enough train showed, bytes per second (0: none yet).
    pub(crate) fn max_rate(&self) -> u64 {
        self.max_rate
    }

    fn restart(&mut self, now: Instant) {
        self.start = Some(now);
        self.last = Some(now);
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// ACKs of `bytes` every `every`, `count` of them, from `from`.
    fn train(t: &mut AckTrain, from: Instant, count: u32, every: Duration, bytes: usize) {
        for i in 0..count {
            t.on_ack(bytes, MS * 100, from + every * i);
        }
    }

    #[test]
    fn a_train_of_an_eighth_rtt_and_enough_bytes_shows_its_rate() {
        let mut t = AckTrain::default();
        let start = Instant::now();
        // 2,400 B every 2 ms: 1.2 MB/s. After 10 ACKs, 18 ms (over an
        // eighth of 100 ms) but only 21,600 B counted: not yet.
        train(&mut t, start, 10, MS * 2, 2400);
        assert_eq!(t.max_rate(), 0);
        // The 11th ACK: 24,000 B over 20 ms.
        train(&mut t, start + MS * 20, 1, MS * 2, 2400);
        assert_eq!(t.max_rate(), 1_200_000);
    }

    #[test]
    fn a_gap_starts_a_new_train() {
        let mut t = AckTrain::default();
        let start = Instant::now();
        train(&mut t, start, 10, MS * 2, 2400);
        // 13 ms later (over 100 ms / 8): the next ACK starts a new train, so
        // the 20 ms so far never count as one.
        train(&mut t, start + MS * 31, 10, MS * 2, 2400);
        assert_eq!(t.max_rate(), 0);
    }

    #[test]
    fn a_short_train_of_few_bytes_does_not_count() {
        let mut t = AckTrain::default();
        // 1,000 B every 3 ms for 30 ms: 10,000 B, under MIN_TRAIN_BYTES.
        train(&mut t, Instant::now(), 11, MS * 3, 1000);
        assert_eq!(t.max_rate(), 0);
    }
}

#[cfg(test)]
mod ack_train_tests {
    use super::*;

    /// A gap of exactly an eighth of the min RTT does not end a train; the
    /// documented rule is a gap of more than that.
    #[test]
    fn a_gap_of_exactly_an_eighth_rtt_continues_the_train() {
        let mut t = AckTrain::default();
        let start = Instant::now();
        let min_rtt = Duration::from_millis(100);
        let gap = min_rtt / 8;
        // 12 ACKs of 2,400 B, 12.5 ms apart: 26,400 B counted over 137.5 ms.
        for i in 0..12 {
            t.on_ack(2400, min_rtt, start + gap * i);
        }
        assert_eq!(t.max_rate(), 192_000);
    }
}
