//! The simulator's own quantities: an amount of data that may scale with
//! the path (a queue limit or an object size: `64KiB`, `2xBDP`), a loss
//! window (`0..2s:30%`), an outage (`3s,5s`) and a range of seeds (`1..10`),
//! parsed from the short
//! forms the `cr-sim` flags take. The units every program shares (rates, sizes, durations,
//! probabilities) are `cr_serve::units`', re-exported here.

use std::ops::RangeInclusive;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

pub use cr_serve::units::{parse_duration, ByteSize, Probability, Rate};

/// An amount of data: fixed bytes or a multiple of the path's
/// bandwidth-delay product (`2xBDP`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Volume {
    /// This many bytes.
    Bytes(u64),
    /// This multiple of rate x RTT.
    Bdp(f64),
}

/// A queue's byte limit.
pub type QueueLimit = Volume;

impl Volume {
    /// The amount in bytes on a path of `rate` and round trip `rtt`.
    pub fn bytes(self, rate: Rate, rtt: Duration) -> u64 {
        match self {
            Volume::Bytes(b) => b,
            Volume::Bdp(multiple) => (rate.bytes_in(rtt) as f64 * multiple) as u64,
        }
    }
}

impl FromStr for Volume {
    type Err = String;

    /// `64KiB`, `1MB`, `1500` (bytes) or `2xBDP`.
    fn from_str(text: &str) -> Result<Volume, String> {
        let lower = text.trim().to_ascii_lowercase();
        if let Some(multiple) = lower.strip_suffix("xbdp") {
            let m: f64 = multiple
                .parse()
                .map_err(|_| format!("`{text}`: expected a multiple like 2xBDP"))?;
            if !(m.is_finite() && m > 0.0) {
                return Err(format!("`{text}`: the multiple must be more than 0"));
            }
            return Ok(Volume::Bdp(m));
        }
        text.parse::<ByteSize>().map(|b| Volume::Bytes(b.0))
    }
}

/// A stretch of time, counted from the start of each connection of a
/// session, during which packets are lost with their own probability.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LossWindow {
    /// Start of the window (seconds after the connection started).
    #[serde(rename = "from_s", serialize_with = "seconds")]
    pub from: Duration,
    /// End of the window, exclusive (seconds after the connection started).
    #[serde(rename = "to_s", serialize_with = "seconds")]
    pub to: Duration,
    /// Loss probability inside the window.
    pub loss: Probability,
}

impl LossWindow {
    /// Whether `since_start` falls inside the window.
    pub fn contains(&self, since_start: Duration) -> bool {
        self.from <= since_start && since_start < self.to
    }
}

impl FromStr for LossWindow {
    type Err = String;

    /// `FROM..TO:P`, e.g. `0..2s:30%` or `1s..1500ms:0.5`; a bare number in
    /// FROM takes the unit of TO.
    fn from_str(text: &str) -> Result<LossWindow, String> {
        let usage = || format!("`{text}`: expected FROM..TO:P, e.g. 0..2s:30%");
        let (range, loss) = text.rsplit_once(':').ok_or_else(usage)?;
        let (from, to) = range.split_once("..").ok_or_else(usage)?;
        let to_d = parse_duration(to)?;
        let from_d = match from.trim().parse::<f64>() {
            Ok(bare) => {
                let unit = to
                    .trim()
                    .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
                parse_duration(&format!("{bare}{unit}"))?
            }
            Err(_) => parse_duration(from)?,
        };
        if from_d >= to_d {
            return Err(format!("`{text}`: the window must end after it starts"));
        }
        Ok(LossWindow {
            from: from_d,
            to: to_d,
            loss: loss.parse()?,
        })
    }
}

/// A stretch of time, counted from the start of each connection of a
/// session, during which the link drops every datagram in both directions:
/// a loss window of 100 %.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outage {
    /// When the link goes dark (after the connection started).
    pub start: Duration,
    /// How long it stays dark.
    pub duration: Duration,
}

impl Outage {
    /// The outage as the loss window the link applies.
    pub fn window(self) -> LossWindow {
        LossWindow {
            from: self.start,
            to: self.start + self.duration,
            loss: Probability::new(1.0).unwrap_or_default(),
        }
    }
}

impl FromStr for Outage {
    type Err = String;

    /// `START,DURATION`, e.g. `3s,5s`.
    fn from_str(text: &str) -> Result<Outage, String> {
        let (start, duration) = text
            .split_once(',')
            .ok_or_else(|| format!("`{text}`: expected START,DURATION, e.g. 3s,5s"))?;
        let duration = parse_duration(duration)?;
        if duration.is_zero() {
            return Err(format!("`{text}`: an outage lasts more than 0"));
        }
        Ok(Outage {
            start: parse_duration(start)?,
            duration,
        })
    }
}

/// Serialises a duration as seconds, rounded to the microsecond like every
/// time in the reports.
fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e6)
}

/// A seed (`7`) or an inclusive range of them (`1..10`: seeds 1 to 10).
pub fn parse_seeds(text: &str) -> Result<RangeInclusive<u64>, String> {
    let seed = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|e| format!("seed {s:?}: {e}"))
    };
    let (first, last) = match text.split_once("..") {
        Some((first, last)) => (seed(first)?, seed(last)?),
        None => (seed(text)?, seed(text)?),
    };
    if first > last {
        return Err(format!("seeds {text}: the first is above the last"));
    }
    Ok(first..=last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_one_or_an_inclusive_range() {
        assert_eq!(parse_seeds("7"), Ok(7..=7));
        assert_eq!(parse_seeds("1..10"), Ok(1..=10));
        assert!(parse_seeds("10..1").is_err());
        assert!(parse_seeds("1..").is_err());
        assert!(parse_seeds("x").is_err());
    }

    #[test]
    fn queue_limits() {
        let rate = Rate::mbit(10);
        let rtt = Duration::from_millis(800);
        assert_eq!(
            "2xBDP".parse::<QueueLimit>().unwrap().bytes(rate, rtt),
            2_000_000
        );
        assert_eq!(
            "64KiB".parse::<QueueLimit>().unwrap().bytes(rate, rtt),
            65_536
        );
        assert_eq!(QueueLimit::Bytes(10).bytes(rate, rtt), 10);
        assert!("0xBDP".parse::<QueueLimit>().is_err());
    }

    #[test]
    fn loss_windows() {
        let w: LossWindow = "0..2s:30%".parse().unwrap();
        assert_eq!((w.from, w.to), (Duration::ZERO, Duration::from_secs(2)));
        assert_eq!(w.loss.value(), 0.3);
        assert!(w.contains(Duration::from_millis(1999)));
        assert!(!w.contains(Duration::from_secs(2)));
        let w: LossWindow = "1s..1500ms:0.5".parse().unwrap();
        assert_eq!(w.from, Duration::from_secs(1));
        assert!("2s..1s:0.1".parse::<LossWindow>().is_err());
        assert!("0..2s".parse::<LossWindow>().is_err());
    }

    #[test]
    fn outages_are_windows_of_total_loss() {
        let outage: Outage = "3s,500ms".parse().unwrap();
        let window = outage.window();
        assert_eq!(
            (window.from, window.to, window.loss.value()),
            (Duration::from_secs(3), Duration::from_millis(3500), 1.0)
        );
        assert!("3s".parse::<Outage>().is_err());
        assert!("3s,0".parse::<Outage>().is_err());
    }
}
