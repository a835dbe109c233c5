//! A windowed minimum over time in constant space.
//!
//! Keeps the best, second-best and third-best candidates of the window, each
//! younger than the one before, so an expiring minimum is replaced by the
//! next one without storing every sample (the scheme BBR uses for its max-bw
//! and min-RTT filters).

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    at: Instant,
    value: Duration,
}

/// Minimum of the samples seen within the last `window`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WindowedMin {
    window: Duration,
    entries: Option<[Entry; 3]>,
}

impl WindowedMin {
    pub(crate) fn new(window: Duration) -> Self {
        WindowedMin {
            window,
            entries: None,
        }
    }

    /// The minimum as of the last sample, if there was one.
    pub(crate) fn get(&self) -> Option<Duration> {
        self.entries.map(|entries| entries[0].value)
    }

    /// Adds a sample and returns the minimum of the window ending at `now`.
    pub(crate) fn update(&mut self, value: Duration, now: Instant) -> Duration {
        let sample = Entry { at: now, value };
        let entries = match &mut self.entries {
            Some(entries)
                if value > entries[0].value
                    && now.saturating_duration_since(entries[2].at) <= self.window =>
            {
                entries
            }
            // A new overall minimum, or everything expired: start afresh.
            _ => return self.reset(sample),
        };
        if value <= entries[1].value {
            entries[1] = sample;
            entries[2] = sample;
        } else if value <= entries[2].value {
            entries[2] = sample;
        }
        if now.saturating_duration_since(entries[0].at) > self.window {
            // The best expired: promote the younger candidates.
            entries[0] = entries[1];
            entries[1] = entries[2];
            entries[2] = sample;
            if now.saturating_duration_since(entries[0].at) > self.window {
                entries[0] = entries[1];
                entries[1] = entries[2];
            }
        } else if entries[1].at == entries[0].at
            && now.saturating_duration_since(entries[1].at) > self.window / 4
        {
            // Keep a fresher second choice once a quarter window has passed.
            entries[1] = sample;
            entries[2] = sample;
        } else if entries[2].at == entries[1].at
            && now.saturating_duration_since(entries[2].at) > self.window / 2
        {
            entries[2] = sample;
        }
        entries[0].value
    }

    fn reset(&mut self, sample: Entry) -> Duration {
        self.entries = Some([sample; 3]);
        sample.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn keeps_the_minimum_within_the_window() {
        let base = Instant::now();
        let mut filter = WindowedMin::new(100 * MS);
        assert_eq!(filter.update(50 * MS, base), 50 * MS);
        assert_eq!(filter.update(70 * MS, base + 10 * MS), 50 * MS);
        assert_eq!(filter.update(40 * MS, base + 20 * MS), 40 * MS);
        assert_eq!(filter.update(60 * MS, base + 90 * MS), 40 * MS);
    }

    #[test]
    fn forgets_a_minimum_older_than_the_window() {
        let base = Instant::now();
        let mut filter = WindowedMin::new(100 * MS);
        filter.update(40 * MS, base);
        filter.update(60 * MS, base + 30 * MS);
        filter.update(80 * MS, base + 60 * MS);
        // 40 ms expires; 60 ms, 90 ms old, is the best left.
        assert_eq!(filter.update(90 * MS, base + 120 * MS), 60 * MS);
        // Everything expired: the new sample is the minimum.
        assert_eq!(filter.update(95 * MS, base + 400 * MS), 95 * MS);
    }
}
