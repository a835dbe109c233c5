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

#[cfg(test)]
mod min_filter_tests {
    //! Sequences on which the three-candidate filter is exact: at every
    //! sample it returns the minimum of the samples of the last window (one
    //! exactly a window old still counts). Each one tells apart a rule of
    //! the scheme (an equal sample refreshes the best, the candidates'
    //! promotion on expiry, the second choice after a quarter window, the
    //! third after half a window) from a slightly different one.

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Feeds `(ms, value in ms)` samples to a 100 ms window and checks each
    /// answer against the expected minimum.
    fn check(samples: &[(u64, u64, u64)]) {
        let base = Instant::now();
        let mut filter = WindowedMin::new(100 * MS);
        for &(at, value, min) in samples {
            let got = filter.update(value as u32 * MS, base + at as u32 * MS);
            assert_eq!(got, min as u32 * MS, "at {at} ms in {samples:?}");
            assert_eq!(filter.get(), Some(got));
        }
    }

    #[test]
    fn an_equal_sample_renews_the_minimum() {
        // 50 again at 175 ms keeps 50 the minimum until 275 ms.
        check(&[(135, 50, 50), (175, 50, 50), (205, 60, 50), (300, 80, 60)]);
    }

    #[test]
    fn a_sample_above_the_third_choice_is_not_a_candidate() {
        check(&[(40, 10, 10), (50, 60, 10), (150, 30, 30)]);
    }

    #[test]
    fn a_minimum_exactly_a_window_old_still_counts() {
        check(&[(65, 10, 10), (145, 20, 10), (165, 20, 10)]);
    }

    #[test]
    fn the_second_choice_expiring_too_promotes_the_third() {
        check(&[(25, 10, 10), (115, 40, 10), (205, 70, 40), (280, 90, 70)]);
        check(&[(110, 50, 50), (155, 70, 50), (255, 90, 70), (350, 90, 90)]);
        check(&[(45, 20, 20), (80, 40, 20), (145, 50, 20), (180, 70, 40)]);
    }

    #[test]
    fn a_second_choice_is_taken_after_a_quarter_window() {
        check(&[(50, 10, 10), (75, 30, 10), (95, 60, 10), (185, 90, 60)]);
    }

    #[test]
    fn a_third_choice_is_taken_after_half_a_window() {
        check(&[
            (115, 10, 10),
            (145, 20, 10),
            (165, 50, 10),
            (200, 60, 10),
            (295, 90, 60),
        ]);
        check(&[(85, 30, 30), (115, 50, 30), (180, 60, 30), (270, 90, 60)]);
        check(&[(25, 10, 10), (55, 20, 10), (120, 70, 10), (165, 80, 70)]);
        check(&[(15, 10, 10), (55, 20, 10), (115, 30, 10), (190, 40, 30)]);
        check(&[(55, 20, 20), (100, 30, 20), (155, 40, 20), (240, 60, 40)]);
    }
}
