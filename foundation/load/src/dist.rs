//! Durations drawn from a distribution, as Tsung's `<thinktime>` draws them (`random="true"`:
//! exponential around the value; `min`/`max`: uniform between): `10s` is always 10 s,
//! `exp:10s` exponential with mean 10 s, `uniform:5s..15s` uniform between the two.
//!
//! A draw is a function of a seed and a key (a session's index, a message's number), so
//! every generator process draws the same value for the same session without sharing a
//! random stream, and a run repeats with its seed.

use crate::phase::{splitmix64, wirebench_duration};
use std::fmt;
use std::time::Duration;

/// Exponential draws are cut at this many means: one draw in e^10 (about 22,000) would
/// be longer; without a cut one session in a million would stay for 14 means or more, and
/// the run's length would follow its slowest session.
pub const EXP_CUT: u32 = 10;

/// A distribution of durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Dist {
    Fixed(Duration),
    /// Exponential with this mean, cut at [`EXP_CUT`] means.
    Exp(Duration),
    /// Uniform between the two, inclusive.
    Uniform(Duration, Duration),
}

impl Dist {
    /// Parses `10s`, `exp:10s` or `uniform:5s..15s`.
    pub fn parse(text: &str) -> Result<Dist, String> {
        let t = text.trim();
        let dur = |s: &str| duration(s.trim());
        if let Some(mean) = t.strip_prefix("exp:") {
            return Ok(Dist::Exp(dur(mean)?));
        }
        if let Some(range) = t.strip_prefix("uniform:") {
            let (lo, hi) = range
                .split_once("..")
                .ok_or_else(|| "expected uniform:MIN..MAX, e.g. uniform:5s..15s".to_string())?;
            let (lo, hi) = (dur(lo)?, dur(hi)?);
            if lo > hi {
                return Err(format!(
                    "the minimum {} is above the maximum {}",
                    secs(lo),
                    secs(hi)
                ));
            }
            return Ok(Dist::Uniform(lo, hi));
        }
        if let Some((kind, _)) = t.split_once(':') {
            return Err(format!(
                "unknown distribution {kind:?} (a duration such as 10s, exp:10s or uniform:5s..15s)"
            ));
        }
        Ok(Dist::Fixed(dur(t)?))
    }

    /// The draw for `key` under `seed`.
    pub fn draw(&self, seed: u64, key: u64) -> Duration {
        match *self {
            Dist::Fixed(d) => d,
            Dist::Exp(mean) => {
                let u = unit(seed, key);
                // u in (0, 1]: -ln(u) is finite.
                let x = (-u.ln()).min(EXP_CUT as f64);
                Duration::from_secs_f64(mean.as_secs_f64() * x)
            }
            Dist::Uniform(lo, hi) => {
                let u = unit(seed, key);
                lo + Duration::from_secs_f64((hi - lo).as_secs_f64() * (1.0 - u))
            }
        }
    }

    /// The mean of the draws (the cut's effect on an exponential's mean is 0.005%).
    pub fn mean(&self) -> Duration {
        match *self {
            Dist::Fixed(d) | Dist::Exp(d) => d,
            Dist::Uniform(lo, hi) => lo + (hi - lo) / 2,
        }
    }

    /// The longest possible draw.
    pub fn max(&self) -> Duration {
        match *self {
            Dist::Fixed(d) => d,
            Dist::Exp(mean) => mean * EXP_CUT,
            Dist::Uniform(_, hi) => hi,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.max().is_zero()
    }
}

/// A duration (`500ms`, `30s`, `10m`), or zero: `0` with or without a unit.
fn duration(s: &str) -> Result<Duration, String> {
    let number = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if number.parse::<f64>().is_ok_and(|n| n == 0.0) {
        return Ok(Duration::ZERO);
    }
    wirebench_duration(s)
}

/// A uniform value in (0, 1] from (seed, key).
fn unit(seed: u64, key: u64) -> f64 {
    let mut state = seed ^ key.wrapping_mul(0xd1b5_4a32_d192_ed03);
    ((splitmix64(&mut state) >> 11) + 1) as f64 / (1u64 << 53) as f64
}

fn secs(d: Duration) -> String {
    let ms = d.as_millis();
    if d == Duration::from_millis(ms as u64) {
        if ms % 1000 == 0 {
            format!("{}s", ms / 1000)
        } else {
            format!("{ms}ms")
        }
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Dist::Fixed(d) => write!(f, "{}", secs(d)),
            Dist::Exp(m) => write!(f, "exp:{}", secs(m)),
            Dist::Uniform(lo, hi) => write!(f, "uniform:{}..{}", secs(lo), secs(hi)),
        }
    }
}

impl TryFrom<String> for Dist {
    type Error = String;
    fn try_from(s: String) -> Result<Dist, String> {
        Dist::parse(&s)
    }
}

impl From<Dist> for String {
    fn from(d: Dist) -> String {
        d.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn forms_parse_and_print_back() {
        for t in ["10s", "exp:10s", "uniform:5s..15s", "500ms", "exp:1500ms"] {
            assert_eq!(Dist::parse(t).unwrap().to_string(), t);
        }
        assert_eq!(
            Dist::parse("2m").unwrap(),
            Dist::Fixed(Duration::from_secs(120))
        );
        for bad in ["exp:", "uniform:5s", "uniform:9s..1s", "normal:3s", "ten"] {
            assert!(Dist::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn exponential_draws_have_their_mean_and_repeat() {
        let d = Dist::parse("exp:10s").unwrap();
        let n = 100_000;
        let sum: f64 = (0..n).map(|k| d.draw(7, k).as_secs_f64()).sum();
        let mean = sum / n as f64;
        assert!((mean - 10.0).abs() < 0.15, "mean {mean}");
        assert_eq!(d.draw(7, 42), d.draw(7, 42));
        assert_ne!(d.draw(7, 42), d.draw(8, 42));
        // About 1 - 1/e of the draws are below the mean.
        let below = (0..n)
            .filter(|&k| d.draw(7, k) < Duration::from_secs(10))
            .count();
        let share = below as f64 / n as f64;
        assert!((share - 0.632).abs() < 0.01, "{share}");
    }

    proptest! {
        #[test]
        fn draws_stay_within_bounds(seed: u64, key: u64, lo in 0u64..100_000, span in 0u64..100_000) {
            let u = Dist::Uniform(Duration::from_millis(lo), Duration::from_millis(lo + span));
            let x = u.draw(seed, key);
            prop_assert!(x >= Duration::from_millis(lo) && x <= Duration::from_millis(lo + span));
            let e = Dist::Exp(Duration::from_millis(lo));
            prop_assert!(e.draw(seed, key) <= e.max());
        }

        #[test]
        fn parse_never_panics(s in ".{0,24}") {
            let _ = Dist::parse(&s);
        }
    }
}
