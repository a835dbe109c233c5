//! A token-bucket policer, as mobile carriers run at their edge: tokens
//! accrue at the policed rate up to the burst, a datagram that finds
//! enough tokens spends them and passes, and one that finds too few is
//! dropped (nothing is queued).

use std::fmt;
use std::str::FromStr;

use super::Time;
use crate::units::{ByteSize, Rate};

/// Nanoseconds in a second: tokens are counted in bits x nanoseconds per
/// second, so that accrual over any whole number of nanoseconds is exact.
const NANOS: u128 = 1_000_000_000;

/// A policer's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Policer {
    /// The rate tokens accrue at.
    pub rate: Rate,
    /// Bytes the bucket holds: the largest burst that passes at once.
    pub burst: u64,
}

impl FromStr for Policer {
    type Err = String;

    /// `RATE,BURST`, e.g. `25mbit,64KiB`.
    fn from_str(text: &str) -> Result<Policer, String> {
        let (rate, burst) = text
            .split_once(',')
            .ok_or_else(|| format!("`{text}`: expected RATE,BURST, e.g. 25mbit,64KiB"))?;
        let burst = burst.parse::<ByteSize>()?.0;
        if burst == 0 {
            return Err(format!("`{text}`: the burst must be more than 0 bytes"));
        }
        Ok(Policer {
            rate: rate.parse()?,
            burst,
        })
    }
}

impl fmt::Display for Policer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} with a burst of {}", self.rate, ByteSize(self.burst))
    }
}

/// A policer's bucket, full at time zero.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    policer: Policer,
    /// Tokens, in bits x nanoseconds per second (8e9 per byte).
    tokens: u128,
    /// When `tokens` was last brought up to date.
    updated: Time,
}

impl TokenBucket {
    /// A full bucket for `policer`.
    pub fn new(policer: Policer) -> TokenBucket {
        TokenBucket {
            policer,
            tokens: bytes_to_tokens(policer.burst),
            updated: Time::ZERO,
        }
    }

    /// The policer's settings.
    pub fn policer(&self) -> Policer {
        self.policer
    }

    /// Whether a datagram of `bytes` arriving at `now` passes (and spends
    /// its tokens); calls come in time order.
    pub fn admit(&mut self, now: Time, bytes: u64) -> bool {
        let elapsed = now.saturating_sub(self.updated).as_nanos();
        self.updated = self.updated.max(now);
        let accrued = elapsed.saturating_mul(u128::from(self.policer.rate.bps()));
        self.tokens = self
            .tokens
            .saturating_add(accrued)
            .min(bytes_to_tokens(self.policer.burst));
        let cost = bytes_to_tokens(bytes);
        if self.tokens < cost {
            return false;
        }
        self.tokens -= cost;
        true
    }
}

fn bytes_to_tokens(bytes: u64) -> u128 {
    u128::from(bytes) * 8 * NANOS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn passes_exactly_the_burst_then_the_rate() {
        // 8 Mbit/s: a byte's tokens accrue in exactly a microsecond.
        let policer: Policer = "8mbit,10000".parse().expect("policer");
        let mut bucket = TokenBucket::new(policer);
        let passed = (0..20).filter(|_| bucket.admit(Time::ZERO, 1000)).count();
        assert_eq!(passed, 10);
        // 999 us later, 999 bytes of tokens: not enough for 1000.
        assert!(!bucket.admit(Duration::from_micros(999), 1000));
        assert!(bucket.admit(Duration::from_micros(1000), 1000));
        assert!(!bucket.admit(Duration::from_micros(1000), 1));
        // The bucket never holds more than the burst.
        let later = Duration::from_secs(10);
        let passed = (0..20).filter(|_| bucket.admit(later, 1000)).count();
        assert_eq!(passed, 10);
    }

    #[test]
    fn parses_rate_and_burst() {
        let policer: Policer = "25mbit,64KiB".parse().expect("policer");
        assert_eq!((policer.rate.bps(), policer.burst), (25_000_000, 65_536));
        assert!("25mbit".parse::<Policer>().is_err());
        assert!("25mbit,0".parse::<Policer>().is_err());
        assert!("0mbit,1000".parse::<Policer>().is_err());
    }
}
