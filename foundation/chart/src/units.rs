//! Display units: turning base-unit values into short, familiar tick labels.

use crate::model::Unit;

/// One rung of a unit ladder: divide by `factor`, then append `suffix`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DisplayUnit {
    pub factor: f64,
    pub suffix: String,
    /// Whether a space separates number and suffix ("10 ms" but "10k", "25%").
    pub spaced: bool,
    /// What the axis title says in parentheses, if anything.
    pub title: Option<String>,
}

impl DisplayUnit {
    fn new(factor: f64, suffix: &str, spaced: bool, title: Option<&str>) -> Self {
        DisplayUnit {
            factor,
            suffix: suffix.to_string(),
            spaced,
            title: title.map(str::to_string),
        }
    }

    fn plain(factor: f64, suffix: &str) -> Self {
        DisplayUnit::new(factor, suffix, true, Some(suffix))
    }

    /// "40k msg/s": the prefix sticks to the number, the unit does not.
    fn prefixed(factor: f64, prefix: &str, unit: &str) -> Self {
        let suffix = format!("{prefix} {unit}");
        DisplayUnit {
            factor,
            suffix: suffix.clone(),
            spaced: false,
            title: Some(suffix),
        }
    }

    /// `display` is already divided by `factor`.
    pub fn label(&self, display: f64, decimals: usize) -> String {
        let num = format_number(display, decimals);
        // "0k" reads like a typo; zero needs no multiplier.
        let bare_zero =
            !self.spaced && self.factor > 1.0 && num.chars().all(|c| c == '0' || c == '.');
        if self.suffix.is_empty() || bare_zero {
            num
        } else if self.spaced {
            format!("{num} {}", self.suffix)
        } else {
            format!("{num}{}", self.suffix)
        }
    }
}

/// Formats with a fixed number of decimals, using a real minus sign and
/// never printing "-0".
pub(crate) fn format_number(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals.min(12), v);
    let negative_zero = s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.');
    if negative_zero {
        s[1..].to_string()
    } else if let Some(rest) = s.strip_prefix('-') {
        format!("\u{2212}{rest}")
    } else {
        s
    }
}

/// Formats with up to 3 significant digits and no trailing zeros; used for
/// log ticks, which are all 1, 2 or 5 times a power of ten (or of two).
fn format_compact(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).clamp(0, 12) as usize;
    let s = format!("{:.*}", decimals, v);
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    s.replacen('-', "\u{2212}", 1)
}

const KI: f64 = 1024.0;

/// The rungs a linear axis may use, smallest first, each with the magnitude
/// from which it is preferred.
fn linear_ladder(unit: &Unit) -> Vec<(f64, DisplayUnit)> {
    match unit {
        Unit::Seconds => vec![
            (0.0, DisplayUnit::plain(1e-9, "ns")),
            (1e-6, DisplayUnit::plain(1e-6, "µs")),
            (1e-3, DisplayUnit::plain(1e-3, "ms")),
            (1.0, DisplayUnit::plain(1.0, "s")),
            // Minutes only once seconds get unwieldy: "90 s" reads better
            // than "1.5 min", but "1200 s" does not.
            (300.0, DisplayUnit::plain(60.0, "min")),
            (3.0 * 3600.0, DisplayUnit::plain(3600.0, "h")),
        ],
        Unit::Bytes => binary_bytes().into_iter().map(|u| (u.factor, u)).collect(),
        Unit::BitsPerSecond => bits_per_second()
            .into_iter()
            .map(|u| (u.factor, u))
            .collect(),
        // Counts switch to k only from 10 000: "2500" reads better than "2.5k". The ticks
        // carry the multiplier, so the title says nothing: "Sessions (thousands)" over a
        // tick of "2000k" read as two thousand thousand thousands.
        Unit::Count | Unit::Ratio => vec![
            (0.0, DisplayUnit::new(1.0, "", false, None)),
            (1e4, DisplayUnit::new(1e3, "k", false, None)),
            (1e7, DisplayUnit::new(1e6, "M", false, None)),
            (1e10, DisplayUnit::new(1e9, "G", false, None)),
        ],
        Unit::Percent => vec![(0.0, DisplayUnit::new(0.01, "%", false, Some("%")))],
        Unit::Other(s) => vec![
            (0.0, DisplayUnit::plain(1.0, s)),
            (1e4, DisplayUnit::prefixed(1e3, "k", s)),
            (1e7, DisplayUnit::prefixed(1e6, "M", s)),
            (1e10, DisplayUnit::prefixed(1e9, "G", s)),
        ],
    }
}

fn binary_bytes() -> Vec<DisplayUnit> {
    ["B", "KiB", "MiB", "GiB", "TiB"]
        .iter()
        .enumerate()
        .map(|(i, s)| DisplayUnit::plain(KI.powi(i as i32), s))
        .collect()
}

fn bits_per_second() -> Vec<DisplayUnit> {
    ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"]
        .iter()
        .enumerate()
        .map(|(i, s)| DisplayUnit::plain(1e3f64.powi(i as i32), s))
        .collect()
}

/// Picks one display unit for a whole linear axis from the largest
/// magnitude on it, so every tick is comparable at a glance.
pub(crate) fn linear_unit(unit: &Unit, max_abs: f64) -> DisplayUnit {
    let ladder = linear_ladder(unit);
    let mut chosen = ladder[0].1.clone();
    for (threshold, rung) in ladder {
        if max_abs >= threshold * (1.0 - 1e-9) {
            chosen = rung;
        }
    }
    chosen
}

/// Rungs for per-tick labels on log axes. Only factors of 10 (1024 for bytes,
/// whose axes tick at powers of two) so that ticks stay round numbers.
fn log_ladder(unit: &Unit) -> Vec<DisplayUnit> {
    match unit {
        Unit::Seconds => ["ns", "µs", "ms", "s"]
            .iter()
            .enumerate()
            .map(|(i, s)| DisplayUnit::plain(1e-9 * 1e3f64.powi(i as i32), s))
            .collect(),
        // Binary always: byte axes tick at powers of two (see data.rs).
        Unit::Bytes => binary_bytes(),
        other => linear_ladder(other).into_iter().map(|(_, u)| u).collect(),
    }
}

/// Label for one tick of a log axis. A log axis spans decades, so each tick
/// gets its own unit ("100 µs", "1 ms", "10 ms") instead of "10000 µs".
pub(crate) fn log_label(unit: &Unit, v: f64) -> String {
    let ladder = log_ladder(unit);
    let mut chosen = &ladder[0];
    for rung in &ladder {
        if v.abs() >= rung.factor * (1.0 - 1e-9) {
            chosen = rung;
        }
    }
    let num = format_compact(v / chosen.factor);
    if chosen.suffix.is_empty() {
        num
    } else if chosen.spaced {
        format!("{num} {}", chosen.suffix)
    } else {
        format!("{num}{}", chosen.suffix)
    }
}

/// Formats any value in its best unit, for notes and tooltips.
pub(crate) fn format_value(unit: &Unit, v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    let du = linear_unit(unit, v.abs());
    let d = v / du.factor;
    let s = format_compact(d);
    if du.suffix.is_empty() {
        s
    } else if du.spaced {
        format!("{s} {}", du.suffix)
    } else {
        format!("{s}{}", du.suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_pick_ms_below_one_second() {
        assert_eq!(linear_unit(&Unit::Seconds, 0.8).suffix, "ms");
        assert_eq!(linear_unit(&Unit::Seconds, 1.5).suffix, "s");
        assert_eq!(linear_unit(&Unit::Seconds, 4e-5).suffix, "µs");
        assert_eq!(linear_unit(&Unit::Seconds, 1200.0).suffix, "min");
        assert_eq!(linear_unit(&Unit::Seconds, 0.0).suffix, "ns");
    }

    #[test]
    fn bytes_and_rates() {
        assert_eq!(linear_unit(&Unit::Bytes, 10.0 * 1024.0).suffix, "KiB");
        assert_eq!(linear_unit(&Unit::Bytes, 1000.0).suffix, "B");
        assert_eq!(linear_unit(&Unit::BitsPerSecond, 9.4e8).suffix, "Mbit/s");
        assert_eq!(linear_unit(&Unit::BitsPerSecond, 2.5e9).suffix, "Gbit/s");
    }

    #[test]
    fn log_labels_change_unit_per_tick() {
        assert_eq!(log_label(&Unit::Seconds, 1e-4), "100 µs");
        assert_eq!(log_label(&Unit::Seconds, 1e-3), "1 ms");
        assert_eq!(log_label(&Unit::Seconds, 5e-3), "5 ms");
        assert_eq!(log_label(&Unit::Bytes, 4096.0), "4 KiB");
        assert_eq!(log_label(&Unit::Bytes, 512.0), "512 B");
        assert_eq!(log_label(&Unit::Count, 1e6), "1M");
        assert_eq!(log_label(&Unit::Percent, 0.001), "0.1%");
    }

    #[test]
    fn count_ticks_carry_their_multiplier_and_the_title_none() {
        let k = linear_unit(&Unit::Count, 2e6);
        assert_eq!(k.label(2000.0, 0), "2000k");
        assert_eq!(
            k.title, None,
            "a title in words would multiply the ticks again"
        );
        assert_eq!(linear_unit(&Unit::Count, 2e7).title, None);
    }

    #[test]
    fn numbers() {
        assert_eq!(format_number(-0.0001, 2), "0.00");
        assert_eq!(format_number(-1.5, 1), "\u{2212}1.5");
        assert_eq!(format_compact(0.05), "0.05");
        assert_eq!(format_compact(250.0), "250");
        assert_eq!(format_value(&Unit::Seconds, 0.25), "250 ms");
    }
}
