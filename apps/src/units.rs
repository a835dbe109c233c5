//! The quantities the command lines take: byte counts (`2MiB`), bit rates
//! (`20mbit`) and durations (`150ms`), as short human strings.
//!
//! Each parser is a plain `fn(&str) -> Result<_, String>` so clap can use it
//! as a `value_parser` and print the message on bad input.

use std::time::Duration;

/// Splits `text` into a non-negative decimal number and its unit suffix
/// (lowercased, surrounding spaces removed).
fn split(text: &str) -> Result<(f64, String), String> {
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let value = number
        .parse::<f64>()
        .map_err(|_| format!("`{text}`: expected a number, then an optional unit"))?;
    Ok((value, unit.trim().to_ascii_lowercase()))
}

/// `value * scale` as an integer, refusing results that do not fit.
fn scaled(value: f64, scale: f64, text: &str) -> Result<u64, String> {
    let product = value * scale;
    if !product.is_finite() || product >= u64::MAX as f64 {
        return Err(format!("`{text}`: too large"));
    }
    Ok(product.round() as u64)
}

/// A byte count: plain bytes, or with `B`, `KB`/`MB`/`GB` (powers of 1000)
/// or `KiB`/`MiB`/`GiB` (powers of 1024). `2MiB` is 2097152.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let (value, unit) = split(text)?;
    let scale = match unit.as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "`{text}`: unknown size unit `{unit}` (B, KB, MiB, ...)"
            ))
        }
    };
    scaled(value, scale, text)
}

/// A bit rate in bits per second, more than zero: `500kbit`, `20mbit`
/// (also `mbps`), `1gbit`, or plain bits per second.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let (value, unit) = split(text)?;
    let scale = match unit.as_str() {
        "" | "bit" | "bps" => 1.0,
        "kbit" | "kbps" => 1e3,
        "mbit" | "mbps" => 1e6,
        "gbit" | "gbps" => 1e9,
        _ => {
            return Err(format!(
                "`{text}`: unknown rate unit `{unit}` (kbit, mbit, gbit)"
            ))
        }
    };
    match scaled(value, scale, text)? {
        0 => Err(format!("`{text}`: a rate must be more than zero")),
        bps => Ok(bps),
    }
}

/// A duration: `us`, `ms`, `s` (the default unit) or `m` (minutes);
/// `1.5s`, `150ms`, `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (value, unit) = split(text)?;
    let nanos_per_unit = match unit.as_str() {
        "us" => 1e3,
        "ms" => 1e6,
        "" | "s" => 1e9,
        "m" | "min" => 60e9,
        _ => {
            return Err(format!(
                "`{text}`: unknown time unit `{unit}` (us, ms, s, m)"
            ))
        }
    };
    Ok(Duration::from_nanos(scaled(value, nanos_per_unit, text)?))
}

/// A loss probability: `1%`, `0.5%` or a fraction such as `0.01`.
pub fn parse_probability(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let (number, scale) = match trimmed.strip_suffix('%') {
        Some(number) => (number, 0.01),
        None => (trimmed, 1.0),
    };
    let value = number
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("`{text}`: expected a fraction or a percentage"))?
        * scale;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("`{text}`: a probability is between 0 and 100%"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("2MiB"), Ok(2 * 1024 * 1024));
        assert_eq!(parse_bytes("1500"), Ok(1500));
        assert_eq!(parse_bytes("64 KiB"), Ok(65536));
        assert_eq!(parse_bytes("1.5MB"), Ok(1_500_000));
        assert!(parse_bytes("MiB").is_err());
        assert!(parse_bytes("3 parsecs").is_err());
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("99999999999GiB").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("20mbit"), Ok(20_000_000));
        assert_eq!(parse_rate("2.5Mbps"), Ok(2_500_000));
        assert_eq!(parse_rate("800"), Ok(800));
        assert!(parse_rate("0mbit").is_err());
        assert!(parse_rate("20MiB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("150ms"), Ok(Duration::from_millis(150)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("1 fortnight").is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!(parse_probability("1%"), Ok(0.01));
        assert_eq!(parse_probability("0.25"), Ok(0.25));
        assert!(parse_probability("120%").is_err());
        assert!(parse_probability("lots").is_err());
    }
}
