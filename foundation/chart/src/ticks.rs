//! Tick candidates. Each function returns several labelled tick sets, densest
//! first; the layout keeps the first whose labels fit without colliding.

use crate::model::Unit;
use crate::units::{self, DisplayUnit};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tick {
    /// Position in base units.
    pub value: f64,
    /// `None` for minor ticks, which get a faint gridline and no label.
    pub label: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TickSet {
    /// The axis range in base units; for linear axes it is widened to whole
    /// steps so the frame ends on a labelled gridline.
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<Tick>,
    /// The unit for the axis title, when one unit covers the whole axis.
    pub title_unit: Option<String>,
}

#[cfg(test)]
impl TickSet {
    pub fn labelled(&self) -> impl Iterator<Item = (f64, &str)> {
        self.ticks
            .iter()
            .filter_map(|t| t.label.as_deref().map(|l| (t.value, l)))
    }
}

const MAX_LINEAR_TICKS: f64 = 16.0;

/// Nice-number (1-2-5) tick sets for `[lo, hi]` in base units.
pub(crate) fn linear(unit: &Unit, lo: f64, hi: f64) -> Vec<TickSet> {
    let (lo, hi) = if hi > lo { (lo, hi) } else { widen(lo) };
    let du: DisplayUnit = units::linear_unit(unit, lo.abs().max(hi.abs()));
    let (dlo, dhi) = (lo / du.factor, hi / du.factor);
    let span = dhi - dlo;
    if !(span.is_finite() && span > 0.0 && lo.is_finite() && hi.is_finite()) {
        return vec![fallback(unit, lo, hi)];
    }
    let mut out = Vec::new();
    let first_exp = (span / MAX_LINEAR_TICKS).log10().floor() as i32;
    'outer: for exp in first_exp..first_exp + 6 {
        for mantissa in [1.0, 2.0, 5.0] {
            let step = mantissa * 10f64.powi(exp);
            // Tolerate rounding noise: 0.30000000000000004 / 0.1 is still 3.
            let k0 = (dlo / step + 1e-9).floor();
            let k1 = (dhi / step - 1e-9).ceil();
            let count = k1 - k0 + 1.0;
            if count > MAX_LINEAR_TICKS + 1.0 {
                continue;
            }
            let decimals = (-(step.log10()) - 1e-9).ceil().max(0.0) as usize;
            let ticks = (0..count as usize)
                .map(|i| {
                    let d = (k0 + i as f64) * step;
                    Tick {
                        value: d * du.factor,
                        label: Some(du.label(d, decimals)),
                    }
                })
                .collect();
            out.push(TickSet {
                lo: k0 * step * du.factor,
                hi: k1 * step * du.factor,
                ticks,
                title_unit: du.title.clone(),
            });
            if count <= 2.0 {
                break 'outer;
            }
        }
    }
    out
}

/// Extreme ranges (near f64::MAX) cannot be stepped; label just the ends.
fn fallback(unit: &Unit, lo: f64, hi: f64) -> TickSet {
    let lo = if lo.is_finite() { lo } else { f64::MIN / 2.0 };
    let hi = if hi.is_finite() && hi > lo {
        hi
    } else {
        lo + lo.abs().max(1.0)
    };
    let hi = if hi.is_finite() { hi } else { f64::MAX };
    TickSet {
        lo,
        hi,
        ticks: [lo, hi]
            .iter()
            .map(|&v| Tick {
                value: v,
                label: Some(units::format_value(unit, v)),
            })
            .collect(),
        title_unit: None,
    }
}

/// A single value gets a range around it so it lands mid-axis.
fn widen(v: f64) -> (f64, f64) {
    if v == 0.0 {
        (0.0, 1.0)
    } else {
        let d = v.abs() * 0.5;
        (v - d, v + d)
    }
}

/// Logarithmic tick sets for `[lo, hi]`, both > 0. Decades, with 2 and 5
/// labelled too when the range is short; powers of two for byte sizes that
/// are all powers of two.
pub(crate) fn log(unit: &Unit, lo: f64, hi: f64, powers_of_two: bool) -> Vec<TickSet> {
    // Beyond these, decade arithmetic under- or overflows (10^-324 == 0).
    let lo = lo.clamp(1e-300, 1e300);
    let hi = hi.clamp(lo, 1e300);
    if powers_of_two {
        log2(unit, lo, hi)
    } else {
        log10(unit, lo, hi)
    }
}

fn floor_125(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    for m in [5.0, 2.0, 1.0] {
        if m * p <= v * (1.0 + 1e-9) {
            return m * p;
        }
    }
    p
}

fn ceil_125(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= v * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

fn log10(unit: &Unit, lo: f64, hi: f64) -> Vec<TickSet> {
    let mut a = floor_125(lo);
    let mut b = ceil_125(hi);
    if b <= a * (1.0 + 1e-9) {
        a = floor_125(a * 0.99);
        b = ceil_125(b * 1.01);
    }
    let e0 = a.log10().floor() as i32;
    let e1 = b.log10().ceil() as i32;
    let in_range = |v: f64| v >= a * (1.0 - 1e-9) && v <= b * (1.0 + 1e-9);
    // (exponent, mantissa, value) for every 1..9 multiple in range.
    let all: Vec<(i32, u32, f64)> = (e0..=e1)
        .flat_map(|e| (1..=9).map(move |m| (e, m, m as f64 * 10f64.powi(e))))
        .filter(|&(_, _, v)| in_range(v))
        .collect();
    let decades = all.iter().filter(|t| t.1 == 1).count();
    let minor_all = decades <= 6;

    let make = |labelled: &dyn Fn(i32, u32) -> bool| -> TickSet {
        let ticks = all
            .iter()
            .filter(|&&(e, m, _)| labelled(e, m) || minor_all || m == 1)
            .map(|&(e, m, v)| Tick {
                value: v,
                label: labelled(e, m).then(|| units::log_label(unit, v)),
            })
            .collect();
        TickSet {
            lo: a,
            hi: b,
            ticks,
            title_unit: None,
        }
    };

    let mut out = Vec::new();
    if decades <= 3 {
        out.push(make(&|_, m| m == 1 || m == 2 || m == 5));
    }
    if decades < 2 {
        // Half a decade or less: without 3s the axis may show only 2 labels.
        out.insert(0, make(&|_, _| true));
    }
    for stride in [1, 2, 3, 4, 5, 10, 20, 50, 100] {
        out.push(make(&|e, m| m == 1 && e.rem_euclid(stride) == 0));
    }
    out
}

fn log2(unit: &Unit, lo: f64, hi: f64) -> Vec<TickSet> {
    let mut k0 = lo.log2().floor() as i32;
    let mut k1 = hi.log2().ceil() as i32;
    if k1 <= k0 {
        k0 -= 1;
        k1 += 1;
    }
    let count = k1 - k0 + 1;
    let mut out = Vec::new();
    for stride in [1, 2, 3, 4, 5, 10, 20, 50] {
        let ticks = (k0..=k1)
            .filter(|k| count <= 40 || k.rem_euclid(stride) == 0)
            .map(|k| {
                let v = 2f64.powi(k);
                Tick {
                    value: v,
                    label: (k.rem_euclid(stride) == 0).then(|| units::log_label(unit, v)),
                }
            })
            .collect();
        out.push(TickSet {
            lo: 2f64.powi(k0),
            hi: 2f64.powi(k1),
            ticks,
            title_unit: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(t: &TickSet) -> Vec<String> {
        t.labelled().map(|(_, l)| l.to_string()).collect()
    }

    #[test]
    fn linear_seconds() {
        let sets = linear(&Unit::Seconds, 0.0, 1.5);
        let five = sets.iter().find(|s| s.ticks.len() == 4).unwrap();
        assert_eq!(labels(five), ["0.0 s", "0.5 s", "1.0 s", "1.5 s"]);
        assert_eq!(five.title_unit.as_deref(), Some("s"));
    }

    #[test]
    fn linear_ms() {
        let sets = linear(&Unit::Seconds, 0.0, 0.8);
        let t = sets.iter().find(|s| s.ticks.len() == 5).unwrap();
        assert_eq!(labels(t), ["0 ms", "200 ms", "400 ms", "600 ms", "800 ms"]);
    }

    #[test]
    fn log_short_range_labels_125() {
        let sets = log(&Unit::Seconds, 5e-5, 5e-3, false);
        assert_eq!(
            labels(&sets[0]),
            [
                "50 µs", "100 µs", "200 µs", "500 µs", "1 ms", "2 ms", "5 ms"
            ]
        );
    }

    #[test]
    fn log_bytes_pow2() {
        let sets = log(&Unit::Bytes, 16.0, 65536.0, true);
        assert_eq!(
            labels(&sets[1]),
            [
                "16 B", "64 B", "256 B", "1 KiB", "4 KiB", "16 KiB", "64 KiB"
            ]
        );
    }

    #[test]
    fn degenerate_ranges() {
        assert!(!linear(&Unit::Count, 5.0, 5.0).is_empty());
        assert!(!linear(&Unit::Count, 0.0, 0.0).is_empty());
        assert!(!log(&Unit::Count, 7.0, 7.0, false).is_empty());
        assert!(!log(&Unit::Bytes, 8.0, 8.0, true).is_empty());
    }
}
