//! Quantities of the command line and of scenarios: rates, sizes, durations,
//! probabilities, queue limits and loss windows, each parsed from the short
//! human forms the `cr-sim run` flags take (`10mbit`, `1MiB`, `800ms`,
//! `2xBDP`, `0..2s:30%`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

/// Splits `text` into its leading number and the unit that follows.
fn number_and_unit(text: &str) -> Result<(f64, String), String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}`: expected a number followed by a unit"))?;
    if !value.is_finite() {
        return Err(format!("`{text}`: not a finite number"));
    }
    Ok((value, unit.trim().to_ascii_lowercase()))
}

/// Converts a non-negative finite `value` to an integer, rejecting overflow.
fn to_u64(value: f64, text: &str) -> Result<u64, String> {
    if !(0.0..1.8e19).contains(&value) {
        return Err(format!("`{text}`: out of range"));
    }
    Ok(value.round() as u64)
}

/// A link rate in bits per second (always more than 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Rate(u64);

impl Rate {
    /// A rate of `bits_per_second`, or `None` for 0.
    pub fn from_bps(bits_per_second: u64) -> Option<Rate> {
        (bits_per_second > 0).then_some(Rate(bits_per_second))
    }

    /// A rate of `mbit` megabits (10^6 bits) per second (0 becomes 1 bit/s).
    pub fn mbit(mbit: u64) -> Rate {
        Rate(mbit.saturating_mul(1_000_000).max(1))
    }

    /// Bits per second.
    pub fn bps(self) -> u64 {
        self.0
    }

    /// Time to serialise `bytes` at this rate, rounded up to the nanosecond.
    pub fn serialisation(self, bytes: u64) -> Duration {
        let nanos = (u128::from(bytes) * 8 * 1_000_000_000).div_ceil(u128::from(self.0));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Bytes this rate carries in `time` (the bandwidth-delay product when
    /// `time` is a round trip).
    pub fn bytes_in(self, time: Duration) -> u64 {
        let bytes = u128::from(self.0) * time.as_nanos() / 8 / 1_000_000_000;
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }
}

impl FromStr for Rate {
    type Err = String;

    /// `10mbit`, `10Mbps`, `2.5mbit`, `500kbit`, `1gbit`, or plain bits/s.
    fn from_str(text: &str) -> Result<Rate, String> {
        let (value, unit) = number_and_unit(text)?;
        let scale = match unit.as_str() {
            "" | "bit" | "bps" | "b/s" => 1.0,
            "kbit" | "kbps" | "kb/s" => 1e3,
            "mbit" | "mbps" | "mb/s" => 1e6,
            "gbit" | "gbps" | "gb/s" => 1e9,
            _ => {
                return Err(format!(
                    "`{text}`: unknown rate unit (use kbit, mbit, gbit)"
                ))
            }
        };
        let bps = to_u64(value * scale, text)?;
        Rate::from_bps(bps).ok_or_else(|| format!("`{text}`: a rate must be more than 0"))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Mbit/s", self.0 as f64 / 1e6)
    }
}

/// A number of bytes, parsed from `1MiB`, `10MB`, `64KiB`, `1500B` or `1500`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<ByteSize, String> {
        let (value, unit) = number_and_unit(text)?;
        let scale = match unit.as_str() {
            "" | "b" => 1.0,
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            "kib" => 1024.0,
            "mib" => 1024.0 * 1024.0,
            "gib" => 1024.0 * 1024.0 * 1024.0,
            _ => {
                return Err(format!(
                    "`{text}`: unknown size unit (use B, kB, MB, KiB, MiB, GiB)"
                ))
            }
        };
        to_u64(value * scale, text).map(ByteSize)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MIB: u64 = 1024 * 1024;
        const KIB: u64 = 1024;
        if self.0 >= MIB && self.0.is_multiple_of(MIB / 4) {
            write!(f, "{}MiB", self.0 as f64 / MIB as f64)
        } else if self.0 >= KIB && self.0.is_multiple_of(KIB) {
            write!(f, "{}KiB", self.0 / KIB)
        } else if self.0 >= 1_000_000 && self.0.is_multiple_of(100_000) {
            write!(f, "{}MB", self.0 as f64 / 1e6)
        } else {
            write!(f, "{}B", self.0)
        }
    }
}

/// Parses a duration: `800ms`, `2s`, `1.5s`, `250us`, `10min`, `2h`, `7d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (value, unit) = number_and_unit(text)?;
    let nanos_per_unit = match unit.as_str() {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        "d" => 86_400e9,
        _ => {
            return Err(format!(
                "`{text}`: unknown time unit (use us, ms, s, min, h, d)"
            ))
        }
    };
    to_u64(value * nanos_per_unit, text).map(Duration::from_nanos)
}

/// A probability in [0, 1], parsed from `0.05` or `5%`.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default, Serialize)]
#[serde(transparent)]
pub struct Probability(f64);

impl Probability {
    /// `p` if it lies in [0, 1].
    pub fn new(p: f64) -> Option<Probability> {
        (0.0..=1.0).contains(&p).then_some(Probability(p))
    }

    /// The probability as a number in [0, 1].
    pub fn value(self) -> f64 {
        self.0
    }
}

impl FromStr for Probability {
    type Err = String;

    fn from_str(text: &str) -> Result<Probability, String> {
        let trimmed = text.trim();
        let value = match trimmed.strip_suffix('%') {
            Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
            None => trimmed.parse::<f64>(),
        }
        .map_err(|_| format!("`{text}`: expected a probability like 0.05 or 5%"))?;
        Probability::new(value).ok_or_else(|| format!("`{text}`: a probability lies in [0, 1]"))
    }
}

/// A drop-tail queue limit: fixed bytes or a multiple of the path's
/// bandwidth-delay product (`2xBDP`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueLimit {
    /// This many bytes.
    Bytes(u64),
    /// This multiple of rate x RTT.
    Bdp(f64),
}

impl QueueLimit {
    /// The limit in bytes on a path of `rate` and round trip `rtt`.
    pub fn bytes(self, rate: Rate, rtt: Duration) -> u64 {
        match self {
            QueueLimit::Bytes(b) => b,
            QueueLimit::Bdp(multiple) => (rate.bytes_in(rtt) as f64 * multiple) as u64,
        }
    }
}

impl FromStr for QueueLimit {
    type Err = String;

    fn from_str(text: &str) -> Result<QueueLimit, String> {
        let lower = text.trim().to_ascii_lowercase();
        if let Some(multiple) = lower.strip_suffix("xbdp") {
            let m: f64 = multiple
                .parse()
                .map_err(|_| format!("`{text}`: expected a multiple like 2xBDP"))?;
            if !(m.is_finite() && m > 0.0) {
                return Err(format!("`{text}`: the multiple must be more than 0"));
            }
            return Ok(QueueLimit::Bdp(m));
        }
        text.parse::<ByteSize>().map(|b| QueueLimit::Bytes(b.0))
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
                let (_, unit) = number_and_unit(to)?;
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

/// Serialises a duration as seconds, rounded to the microsecond like every
/// time in the reports.
fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1e6).round() / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!("10mbit".parse::<Rate>().unwrap().bps(), 10_000_000);
        assert_eq!("10Mbps".parse::<Rate>().unwrap().bps(), 10_000_000);
        assert_eq!("2.5mbit".parse::<Rate>().unwrap().bps(), 2_500_000);
        assert_eq!("500kbit".parse::<Rate>().unwrap().bps(), 500_000);
        assert_eq!("1200".parse::<Rate>().unwrap().bps(), 1200);
        assert!("0mbit".parse::<Rate>().is_err());
        assert!("fast".parse::<Rate>().is_err());
        assert!("10parsecs".parse::<Rate>().is_err());
    }

    #[test]
    fn serialisation_and_bdp() {
        let r = Rate::mbit(10);
        assert_eq!(r.serialisation(1250), Duration::from_millis(1));
        assert_eq!(r.serialisation(1), Duration::from_nanos(800));
        assert_eq!(r.bytes_in(Duration::from_millis(800)), 1_000_000);
        let odd = Rate::from_bps(3).unwrap();
        assert_eq!(odd.serialisation(1), Duration::from_nanos(2_666_666_667));
    }

    #[test]
    fn sizes() {
        assert_eq!("1MiB".parse::<ByteSize>().unwrap().0, 1 << 20);
        assert_eq!("10MB".parse::<ByteSize>().unwrap().0, 10_000_000);
        assert_eq!("64KiB".parse::<ByteSize>().unwrap().0, 65_536);
        assert_eq!("1500".parse::<ByteSize>().unwrap().0, 1500);
        assert_eq!(ByteSize(1 << 20).to_string(), "1MiB");
        assert_eq!(ByteSize(10_000_000).to_string(), "10MB");
        assert!("-1MiB".parse::<ByteSize>().is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("800ms").unwrap(), Duration::from_millis(800));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
        assert!(parse_duration("800").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!("5%".parse::<Probability>().unwrap().value(), 0.05);
        assert_eq!("0.3".parse::<Probability>().unwrap().value(), 0.3);
        assert!("1.5".parse::<Probability>().is_err());
        assert!("x".parse::<Probability>().is_err());
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
}
