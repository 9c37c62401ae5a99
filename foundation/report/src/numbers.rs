//! Numbers for people: every value the terminal summary, the HTML report and comparisons
//! show goes through [`human`], so a figure reads the same everywhere.
//!
//! The rule (docs/reports.md, "Numbers and units"): three significant digits, but never
//! fewer than the integer digits (`1234s`, not `1230s`); times in ns/µs/ms/s; rates in
//! decimal SI units (bit/s, kbit/s, Mbit/s, Gbit/s) because link rates are quoted that
//! way (2400 bit/s, 1 Gbit/s); byte sizes always in binary units (B, KiB, MiB, GiB)
//! because payloads and buffers are given and allocated in powers of two (`64KiB`), and
//! one page mixing kB and KiB is what confused readers. No space between number and
//! unit, the way `--payload 64KiB` or `--link 2400bit/500ms` are typed.

/// Rounds to three significant digits (all integer digits kept) and drops trailing
/// zeros: 14.051 -> "14.1", 0.0063551 -> "0.00636", 1234.6 -> "1235".
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).clamp(0, 15) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

/// Picks the largest rung whose factor the value reaches (after rounding, so 999.7 µs
/// becomes "1ms", not "1000µs") and formats with [`sig3`].
fn ladder(v: f64, rungs: &[(f64, &str)], step: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        let base = rungs.iter().find(|r| r.0 == 1.0).unwrap_or(&rungs[0]);
        return format!("0{}", base.1);
    }
    let mut i = 0;
    for (j, (f, _)) in rungs.iter().enumerate() {
        if v.abs() >= *f {
            i = j;
        }
    }
    let mut text = sig3(v / rungs[i].0);
    // Rounding may reach the next rung: 999.7 -> "1000".
    if i + 1 < rungs.len() && text.trim_start_matches('-').parse::<f64>().unwrap_or(0.0) >= step {
        i += 1;
        text = sig3(v / rungs[i].0);
    }
    format!("{text}{}", rungs[i].1)
}

const TIME: &[(f64, &str)] = &[(1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s")];
const RATE: &[(f64, &str)] = &[
    (1.0, "bit/s"),
    (1e3, "kbit/s"),
    (1e6, "Mbit/s"),
    (1e9, "Gbit/s"),
    (1e12, "Tbit/s"),
];
const KI: f64 = 1024.0;
const BYTES: &[(f64, &str)] = &[
    (1.0, "B"),
    (KI, "KiB"),
    (KI * KI, "MiB"),
    (KI * KI * KI, "GiB"),
    (KI * KI * KI * KI, "TiB"),
];
const COUNT: &[(f64, &str)] = &[(1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G")];

/// Formats a metric value in its unit for people (see the module docs for the rule).
pub fn human(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return "-".into();
    }
    match unit {
        // Seconds stay seconds above 1 s: "31.5s", "1235s"; 0 reads as "0s".
        "s" if value == 0.0 => "0s".into(),
        "s" => ladder(value, TIME, 1000.0),
        "bit/s" => ladder(value, RATE, 1000.0),
        "B" => ladder(value, BYTES, 1024.0),
        "msg/s" | "count" => {
            // "2500" reads better than "2.5k"; k only from 10 000.
            if value.abs() < 1e4 {
                sig3(value)
            } else {
                ladder(value, COUNT, 1000.0)
            }
        }
        "ratio" => format!("{}%", sig3(value * 100.0)),
        // Events per second: "293/s", "12.5k/s".
        "1/s" => format!("{}/s", human(value, "count")),
        "" => sig3(value),
        other => format!("{} {other}", sig3(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig3(0.00016922929800000002), "0.000169");
        assert_eq!(sig3(14.051), "14.1");
        assert_eq!(sig3(1234.6), "1235");
        assert_eq!(sig3(2.0), "2");
        assert_eq!(sig3(-0.0001), "-0.0001");
        assert_eq!(sig3(f64::NAN), "-");
    }

    #[test]
    fn units() {
        assert_eq!(human(0.00016922929800000002, "s"), "169µs");
        assert_eq!(human(52.3e-6, "s"), "52.3µs");
        assert_eq!(human(0.0009997, "s"), "1ms");
        assert_eq!(human(31.473247674, "s"), "31.5s");
        assert_eq!(human(0.0, "s"), "0s");
        assert_eq!(human(2.5e10, "bit/s"), "25Gbit/s");
        assert_eq!(human(253.2e6, "bit/s"), "253Mbit/s");
        assert_eq!(human(2400.0, "bit/s"), "2.4kbit/s");
        assert_eq!(human(65536.0, "B"), "64KiB");
        assert_eq!(human(1500.0, "B"), "1.46KiB");
        assert_eq!(human(542.55, "B"), "543B");
        assert_eq!(human(1023.9, "B"), "1KiB");
        assert_eq!(human(812_345.0, "msg/s"), "812k");
        assert_eq!(human(2500.0, "msg/s"), "2500");
        assert_eq!(human(3.0, "count"), "3");
        assert_eq!(human(0.016, "ratio"), "1.6%");
        assert_eq!(human(0.006355113, "cores"), "0.00636 cores");
    }
}
