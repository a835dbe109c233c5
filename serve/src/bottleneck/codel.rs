//! CoDel (RFC 8289): the decision, for each datagram leaving a queue's
//! head, whether to drop it, from how long it waited.
//!
//! A datagram whose sojourn stayed above the target for an interval is
//! dropped, and then more often, at the interval over the square root of
//! the drops so far, until a sojourn falls below the target. The RFC's
//! exemption of a queue holding less than one datagram is left out: a FIFO
//! link that decides a datagram's fate as it enters does not know the
//! backlog at its dequeue, and one rule serves every link.

use std::time::Duration;

use super::Time;

/// CoDel's target sojourn time (RFC 8289).
pub const TARGET: Duration = Duration::from_millis(5);

/// CoDel's interval: how long the sojourn must stay above the target.
pub const INTERVAL: Duration = Duration::from_millis(100);

/// CoDel's state for one queue (RFC 8289, section 5).
#[derive(Clone, Debug, Default)]
pub struct Codel {
    /// When the sojourn, above the target since then, may first drop.
    first_above: Option<Time>,
    /// Whether the queue is in its dropping state.
    dropping: bool,
    /// When the next drop is due in the dropping state.
    drop_next: Time,
    /// Drops in this dropping state.
    count: u32,
    /// `count` when the last dropping state began.
    last_count: u32,
}

impl Codel {
    /// Whether the datagram leaving the head at `now` after waiting
    /// `sojourn` is dropped. Calls come in time order, one per datagram.
    pub fn on_dequeue(&mut self, sojourn: Duration, now: Time) -> bool {
        let ok_to_drop = if sojourn < TARGET {
            self.first_above = None;
            false
        } else {
            match self.first_above {
                None => {
                    self.first_above = Some(now + INTERVAL);
                    false
                }
                Some(at) => now >= at,
            }
        };

        if self.dropping {
            if !ok_to_drop {
                self.dropping = false;
                return false;
            }
            if now >= self.drop_next {
                self.count += 1;
                self.drop_next = control_law(self.drop_next, self.count);
                return true;
            }
            return false;
        }

        if !ok_to_drop {
            return false;
        }
        self.dropping = true;
        // Resume near the last drop rate if the queue was dropping recently.
        let delta = self.count.saturating_sub(self.last_count);
        self.count = if delta > 1 && now.saturating_sub(self.drop_next) < INTERVAL * 16 {
            delta
        } else {
            1
        };
        self.drop_next = control_law(now, self.count);
        self.last_count = self.count;
        true
    }

    /// The queue ran empty: its dropping state ends, and the next sojourn
    /// above the target starts a new interval.
    pub fn on_empty(&mut self) {
        self.first_above = None;
        self.dropping = false;
    }
}

/// The next drop time: `interval / sqrt(count)` after `t`.
fn control_law(t: Time, count: u32) -> Time {
    t + INTERVAL.div_f64(f64::from(count.max(1)).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn drops_an_interval_after_the_sojourn_rose_above_the_target() {
        let mut codel = Codel::default();
        assert!(!codel.on_dequeue(ms(4), ms(0)));
        assert!(!codel.on_dequeue(ms(5), ms(10)));
        assert!(!codel.on_dequeue(ms(6), ms(109)));
        assert!(codel.on_dequeue(ms(6), ms(110)));
        // The next drop is due an interval later (count 1), then at an
        // interval over the root of 2.
        assert!(!codel.on_dequeue(ms(6), ms(209)));
        assert!(codel.on_dequeue(ms(6), ms(210)));
        assert!(!codel.on_dequeue(ms(6), ms(280)));
        assert!(codel.on_dequeue(ms(6), ms(281)));
        // A sojourn below the target ends the dropping state.
        assert!(!codel.on_dequeue(ms(1), ms(282)));
        assert!(!codel.on_dequeue(ms(6), ms(283)));
    }
}
