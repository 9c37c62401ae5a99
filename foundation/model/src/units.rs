//! Human units: byte sizes (`1.5KiB`), bit rates (`2400bit`, `19.2kbit`), durations
//! (`500ms`) and counts (`10k`).
//!
//! Everything a user types or reads goes through here, so parse errors are uniform and
//! always show an example of what would have been accepted.

use std::fmt;
use std::time::Duration;

/// Why a unit string was rejected. The message is shown to the user as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a valid {kind}: {reason} (examples: {examples})")]
pub struct UnitError {
    pub input: String,
    pub kind: &'static str,
    pub reason: String,
    pub examples: &'static str,
}

fn err(
    input: &str,
    kind: &'static str,
    reason: impl Into<String>,
    examples: &'static str,
) -> UnitError {
    UnitError {
        input: input.to_string(),
        kind,
        reason: reason.into(),
        examples,
    }
}

/// Splits `"1.5KiB"` into `(1.5, "KiB")`. The number may be an integer or a decimal.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let digits: String = s[..end].chars().filter(|c| *c != '_').collect();
    let value: f64 = digits.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    Some((value, s[end..].trim()))
}

/// A size in bytes. Binary prefixes (`KiB`, `MiB`, `GiB`) are powers of 1024, decimal
/// prefixes (`kB`, `MB`, `GB`) powers of 1000, as in IEC 80000-13.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

const BYTES_EXAMPLES: &str = "100, 1500B, 1.5KiB, 10KiB, 1MiB, 64kB";

impl Bytes {
    pub fn parse(s: &str) -> Result<Bytes, UnitError> {
        let (n, unit) = split_number(s)
            .ok_or_else(|| err(s, "byte size", "expected a number", BYTES_EXAMPLES))?;
        let mult: f64 = match unit {
            "" | "B" => 1.0,
            "KiB" | "K" | "k" => 1024.0,
            "MiB" | "M" => 1024.0 * 1024.0,
            "GiB" | "G" => 1024.0 * 1024.0 * 1024.0,
            "kB" | "KB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            _ => {
                return Err(err(
                    s,
                    "byte size",
                    format!("unknown unit {unit:?}"),
                    BYTES_EXAMPLES,
                ));
            }
        };
        let v = n * mult;
        if v.fract() != 0.0 {
            return Err(err(
                s,
                "byte size",
                "not a whole number of bytes",
                BYTES_EXAMPLES,
            ));
        }
        if v > u64::MAX as f64 / 2.0 {
            return Err(err(s, "byte size", "too large", BYTES_EXAMPLES));
        }
        Ok(Bytes(v as u64))
    }
}

impl fmt::Display for Bytes {
    /// Shortest exact form: `1MiB`, `1536B` stays `1.5KiB`, `100` stays `100B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (div, unit) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
            if b >= div && (b * 10) % div == 0 {
                let v = b as f64 / div as f64;
                return write!(f, "{}{}", trim_float(v), unit);
            }
        }
        write!(f, "{b}B")
    }
}

/// A bit rate in bits per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(pub f64);

const RATE_EXAMPLES: &str = "2400bit, 19.2kbit, 10Mbit, 1Gbit, 1Gbit/s";

impl Rate {
    pub fn parse(s: &str) -> Result<Rate, UnitError> {
        let (n, unit) = split_number(s)
            .ok_or_else(|| err(s, "bit rate", "expected a number", RATE_EXAMPLES))?;
        let unit = unit.strip_suffix("/s").unwrap_or(unit);
        // "Mbps" is common shorthand for "Mbit/s".
        let unit = unit
            .strip_suffix("bps")
            .map(|u| format!("{u}bit"))
            .unwrap_or_else(|| unit.to_string());
        let mult = match unit.as_str() {
            "bit" | "b" => 1.0,
            "kbit" | "Kbit" | "kb" => 1e3,
            "Mbit" | "mbit" | "Mb" => 1e6,
            "Gbit" | "gbit" | "Gb" => 1e9,
            "" => return Err(err(s, "bit rate", "a rate needs a unit", RATE_EXAMPLES)),
            other => {
                return Err(err(
                    s,
                    "bit rate",
                    format!("unknown unit {other:?}"),
                    RATE_EXAMPLES,
                ));
            }
        };
        // Round away the binary noise of e.g. 19.2 * 1e3.
        let v = (n * mult * 1e6).round() / 1e6;
        if v <= 0.0 {
            return Err(err(s, "bit rate", "must be positive", RATE_EXAMPLES));
        }
        Ok(Rate(v))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.0;
        let (v, unit) = if r >= 1e9 {
            (r / 1e9, "Gbit/s")
        } else if r >= 1e6 {
            (r / 1e6, "Mbit/s")
        } else if r >= 1e3 {
            (r / 1e3, "kbit/s")
        } else {
            (r, "bit/s")
        };
        write!(f, "{}{}", trim_float(round_sig(v, 4)), unit)
    }
}

const DURATION_EXAMPLES: &str = "0, 250us, 500ms, 1s, 1.5s, 2m";

/// Parses a duration such as `500ms`. A bare `0` is accepted; any other bare number is
/// refused because `5` could mean seconds or milliseconds.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let (n, unit) = split_number(s)
        .ok_or_else(|| err(s, "duration", "expected a number", DURATION_EXAMPLES))?;
    let secs = match unit {
        "" if n == 0.0 => 0.0,
        "" => {
            return Err(err(
                s,
                "duration",
                "a duration needs a unit",
                DURATION_EXAMPLES,
            ));
        }
        "ns" => n * 1e-9,
        "us" | "µs" => n * 1e-6,
        "ms" => n * 1e-3,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => {
            return Err(err(
                s,
                "duration",
                format!("unknown unit {other:?}"),
                DURATION_EXAMPLES,
            ));
        }
    };
    if secs > 1e9 {
        return Err(err(s, "duration", "too long", DURATION_EXAMPLES));
    }
    Ok(Duration::from_nanos((secs * 1e9).round() as u64))
}

/// Formats seconds for a human, choosing the unit so that 1-3 integer digits show.
pub fn format_seconds(secs: f64) -> String {
    let a = secs.abs();
    if a == 0.0 {
        "0s".into()
    } else if a < 1e-6 {
        format!("{}ns", trim_float(round_sig(secs * 1e9, 3)))
    } else if a < 1e-3 {
        format!("{}µs", trim_float(round_sig(secs * 1e6, 3)))
    } else if a < 1.0 {
        format!("{}ms", trim_float(round_sig(secs * 1e3, 3)))
    } else {
        format!("{}s", trim_float(round_sig(secs, 4)))
    }
}

/// Formats a duration the way [`parse_duration`] reads it back.
pub fn format_duration(d: Duration) -> String {
    format_seconds(d.as_secs_f64()).replace('µ', "u")
}

const COUNT_EXAMPLES: &str = "1000, 10k, 2.5M";

/// Parses a count with an optional decimal multiplier: `10k` = 10 000, `1M` = 1 000 000.
pub fn parse_count(s: &str) -> Result<u64, UnitError> {
    let (n, unit) =
        split_number(s).ok_or_else(|| err(s, "count", "expected a number", COUNT_EXAMPLES))?;
    let mult = match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        other => {
            return Err(err(
                s,
                "count",
                format!("unknown multiplier {other:?}"),
                COUNT_EXAMPLES,
            ));
        }
    };
    let v = n * mult;
    if v.fract() != 0.0 || v > 1e15 {
        return Err(err(
            s,
            "count",
            "not a whole number in range",
            COUNT_EXAMPLES,
        ));
    }
    Ok(v as u64)
}

fn round_sig(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let mag = v.abs().log10().floor() as i32;
    let p = 10f64.powi(digits - 1 - mag);
    (v * p).round() / p
}

/// `1.50` -> `1.5`, `2.0` -> `2`.
fn trim_float(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_parse_binary_and_decimal_prefixes() {
        assert_eq!(Bytes::parse("100").unwrap(), Bytes(100));
        assert_eq!(Bytes::parse("1500B").unwrap(), Bytes(1500));
        assert_eq!(Bytes::parse("1.5KiB").unwrap(), Bytes(1536));
        assert_eq!(Bytes::parse("10KiB").unwrap(), Bytes(10240));
        assert_eq!(Bytes::parse("1MiB").unwrap(), Bytes(1 << 20));
        assert_eq!(Bytes::parse("64kB").unwrap(), Bytes(64_000));
        assert_eq!(Bytes::parse(" 2 ").unwrap(), Bytes(2));
    }

    #[test]
    fn bytes_reject_with_examples() {
        let e = Bytes::parse("10XB").unwrap_err();
        assert!(e.to_string().contains("unknown unit"), "{e}");
        assert!(e.to_string().contains("10KiB"), "{e}");
        assert!(Bytes::parse("0.3").is_err());
        assert!(Bytes::parse("").is_err());
        assert!(Bytes::parse("KiB").is_err());
        assert!(Bytes::parse("1e3").is_err());
    }

    #[test]
    fn bytes_display_round_trips() {
        for s in ["100B", "1.5KiB", "10KiB", "1MiB", "3GiB", "1537B"] {
            let b = Bytes::parse(s).unwrap();
            assert_eq!(b.to_string(), s);
            assert_eq!(Bytes::parse(&b.to_string()).unwrap(), b);
        }
    }

    #[test]
    fn rates() {
        assert_eq!(Rate::parse("2400bit").unwrap().0, 2400.0);
        assert_eq!(Rate::parse("19.2kbit").unwrap().0, 19200.0);
        assert_eq!(Rate::parse("1Gbit/s").unwrap().0, 1e9);
        assert_eq!(Rate::parse("10Mbps").unwrap().0, 1e7);
        assert!(Rate::parse("2400").is_err());
        assert!(Rate::parse("0bit").is_err());
        assert_eq!(Rate(19200.0).to_string(), "19.2kbit/s");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(
            parse_duration("5")
                .unwrap_err()
                .to_string()
                .contains("needs a unit")
        );
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_seconds(52.3e-6), "52.3µs");
        assert_eq!(format_seconds(36.3), "36.3s");
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("1000").unwrap(), 1000);
        assert_eq!(parse_count("10k").unwrap(), 10_000);
        assert_eq!(parse_count("2.5M").unwrap(), 2_500_000);
        assert_eq!(parse_count("1_000").unwrap(), 1000);
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("ten").is_err());
    }
}
