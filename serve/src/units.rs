//! The quantities command lines and scenarios take, as short human strings:
//! bit rates (`20mbit`), byte sizes (`2MiB`), durations (`150ms`) and
//! probabilities (`1%`). Each parses with `FromStr` (or [`parse_duration`]),
//! so clap takes it as an argument type and prints the message on bad input.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Splits `text` into its leading non-negative number and the unit that
/// follows (lowercased, surrounding spaces removed).
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
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

/// A number of bytes: `1MiB`, `10MB`, `64KiB`, `1500B` or `1500`; `k`, `m`
/// and `g` alone are powers of 1000, like `kB`, `MB` and `GB`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<ByteSize, String> {
        let (value, unit) = number_and_unit(text)?;
        let scale = match unit.as_str() {
            "" | "b" => 1.0,
            "k" | "kb" => 1e3,
            "m" | "mb" => 1e6,
            "g" | "gb" => 1e9,
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

/// Parses a duration: `800ms`, `2s`, `1.5s`, `250us`, `10min`, `2h`, `7d`,
/// or a bare `0`. Any other number needs its unit: `800` could mean
/// milliseconds as well as seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (value, unit) = number_and_unit(text)?;
    let nanos_per_unit = match unit.as_str() {
        "" if value == 0.0 => 0.0,
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
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
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
        assert!("20MiB".parse::<Rate>().is_err());
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
        let size = |text: &str| text.parse::<ByteSize>().map(|b| b.0);
        assert_eq!(size("1MiB"), Ok(1 << 20));
        assert_eq!(size("10MB"), Ok(10_000_000));
        assert_eq!(size("10m"), Ok(10_000_000));
        assert_eq!(size("64 KiB"), Ok(65_536));
        assert_eq!(size("1.5MB"), Ok(1_500_000));
        assert_eq!(size("1500"), Ok(1500));
        assert_eq!(ByteSize(1 << 20).to_string(), "1MiB");
        assert_eq!(ByteSize(10_000_000).to_string(), "10MB");
        assert!(size("-1MiB").is_err());
        assert!(size("MiB").is_err());
        assert!(size("3 parsecs").is_err());
        assert!(size("99999999999GiB").is_err());
        // A number too long for f64 is refused, not taken as infinity.
        let huge = format!("{}B", "9".repeat(400));
        assert_eq!(size(&huge), Err(format!("`{huge}`: not a finite number")));
    }

    /// Reports and command lines print sizes and rates the way they are
    /// typed: the shortest exact unit.
    #[test]
    fn sizes_and_rates_print_in_their_own_units() {
        assert_eq!(ByteSize(3 << 19).to_string(), "1.5MiB");
        assert_eq!(ByteSize(65_536).to_string(), "64KiB");
        assert_eq!(ByteSize(1_500_000).to_string(), "1.5MB");
        assert_eq!(ByteSize(1500).to_string(), "1500B");
        assert_eq!(ByteSize(1_000_001).to_string(), "1000001B");
        assert_eq!(Rate::mbit(50).to_string(), "50 Mbit/s");
        assert_eq!(Rate::from_bps(2_500_000).unwrap().to_string(), "2.5 Mbit/s");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("800ms"), Ok(Duration::from_millis(800)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("800").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("1 fortnight").is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!("5%".parse::<Probability>().unwrap().value(), 0.05);
        assert_eq!("0.3".parse::<Probability>().unwrap().value(), 0.3);
        assert_eq!("0".parse::<Probability>().unwrap().value(), 0.0);
        assert!("1.5".parse::<Probability>().is_err());
        assert!("120%".parse::<Probability>().is_err());
        assert!("x".parse::<Probability>().is_err());
    }
}
