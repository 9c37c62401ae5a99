//! Per-connection path round trips: one emulated link standing for a population of
//! paths, as study S3 measured proxies over ~30,000 connections whose round trips spread
//! from a few milliseconds to hundreds.
//!
//! Each flow is given a round-trip time drawn from a distribution, and every packet of
//! the flow, in either direction, is held half of it on top of the link's own delay. The
//! draw is a hash of the flow's client-side endpoint (protocol, address and port), not a
//! random number, so:
//!
//! * both directions of a connection agree without the emulator remembering flows (no
//!   table to grow with 30,000 connections);
//! * a client that knows its connection's address computes the same round trip
//!   ([`PathRtts::rtt_ns`] of [`path_key`]) and can read its time to first byte in round
//!   trips of its own path, which is how the connect workload counts what each
//!   handshake costs;
//! * a client that chooses its source ports (the connect workload does: connection `k`
//!   of every case from the same port) gives every variant of a comparison the same
//!   population of paths, so their distributions differ by the protocol alone, not by
//!   the luck of the draw (common random numbers).
//!
//! Ports chosen by the kernel have nothing to do with the hash either, so successive
//! connections are independent draws from the distribution.
//!
//! # Grammar (the `link.paths` parameter)
//!
//! | form | meaning |
//! |---|---|
//! | `s3` | study S3's population: log-normal through its two published points, 85% of paths under 50 ms and 95% under 150 ms (median 7.7 ms) |
//! | `lognormal:pA=RTT,pB=RTT` | the log-normal through two quantiles, e.g. `lognormal:p50=20ms,p95=200ms` |
//! | `uniform:LOW..HIGH` | uniform between two round trips, e.g. `uniform:10ms..300ms` |
//! | `fixed:RTT` | every flow the same (a check of the mechanism) |
//! | `cdf:FILE` | an empirical distribution: lines `RTT,FRACTION` (`50ms,0.85`), both non-decreasing, the last fraction 1; linear between points |
//!
//! Log-normal draws are taken between the 0.1st and 99.9th percentiles, so one
//! connection in a thousand cannot stall a case for minutes; a `cdf` file states its own
//! range. Round trips are at most one day.

use std::fmt;

use wirebench_model::parse_duration;

const NS_PER_MS: f64 = 1e6;
const MAX_RTT_NS: u64 = 86_400 * 1_000_000_000;
/// Log-normal draws stay within these quantiles (see the module docs).
const TAIL: f64 = 0.001;

/// A distribution of path round trips; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct PathRtts {
    shape: Shape,
    /// The spec as written, for records and messages.
    text: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Fixed(u64),
    Uniform {
        lo: u64,
        hi: u64,
    },
    /// ln(RTT in ns) ~ N(mu, sigma^2).
    LogNormal {
        mu: f64,
        sigma: f64,
    },
    /// (fraction, RTT ns), both non-decreasing, the last fraction 1.
    Cdf(Vec<(f64, u64)>),
}

/// Why a `link.paths` value was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PathsError {
    #[error(
        "link.paths={value:?}: {reason} (examples: s3, lognormal:p50=20ms,p95=200ms, \
         uniform:10ms..300ms, fixed:50ms, cdf:paths.csv)"
    )]
    Invalid { value: String, reason: String },
    #[error("link.paths cdf file {file}: cannot read it: {error}")]
    Read { file: String, error: String },
    #[error(
        "link.paths cdf file {file}, line {line}: {reason} (a line is RTT,FRACTION, e.g. 50ms,0.85)"
    )]
    Line {
        file: String,
        line: usize,
        reason: String,
    },
}

fn invalid(value: &str, reason: impl Into<String>) -> PathsError {
    PathsError::Invalid {
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn rtt(value: &str, v: &str) -> Result<u64, PathsError> {
    let d = parse_duration(v.trim()).map_err(|e| invalid(value, e.to_string()))?;
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    if ns > MAX_RTT_NS {
        return Err(invalid(value, format!("{v} is over a day")));
    }
    Ok(ns)
}

impl PathRtts {
    /// Parses a spec; `cdf:FILE` reads the file (relative to the working directory).
    pub fn parse(value: &str) -> Result<PathRtts, PathsError> {
        Self::parse_with(value, |path| {
            std::fs::read_to_string(path).map_err(|e| PathsError::Read {
                file: path.to_string(),
                error: e.to_string(),
            })
        })
    }

    /// [`PathRtts::parse`] with the reader of `cdf` files given (for tests and fuzzing).
    pub fn parse_with(
        value: &str,
        read: impl FnOnce(&str) -> Result<String, PathsError>,
    ) -> Result<PathRtts, PathsError> {
        let v = value.trim();
        let (kind, args) = v.split_once(':').unwrap_or((v, ""));
        let shape = match kind.trim() {
            "s3" if args.is_empty() => {
                log_normal(v, (0.85, 50.0 * NS_PER_MS), (0.95, 150.0 * NS_PER_MS))?
            }
            "fixed" => Shape::Fixed(rtt(v, args)?),
            "uniform" => {
                let (lo, hi) = args
                    .split_once("..")
                    .ok_or_else(|| invalid(v, "uniform needs LOW..HIGH"))?;
                let (lo, hi) = (rtt(v, lo)?, rtt(v, hi)?);
                if lo > hi {
                    return Err(invalid(v, "LOW is above HIGH"));
                }
                Shape::Uniform { lo, hi }
            }
            "lognormal" => {
                let mut points = Vec::new();
                for item in args.split(',') {
                    let (q, r) = item
                        .split_once('=')
                        .ok_or_else(|| invalid(v, "lognormal needs two items pQ=RTT"))?;
                    let q: f64 = q
                        .trim()
                        .strip_prefix('p')
                        .and_then(|q| q.parse().ok())
                        .filter(|q: &f64| *q > 0.0 && *q < 100.0)
                        .ok_or_else(|| {
                            invalid(v, format!("{q:?} is not a percentile p1..p99 (e.g. p95)"))
                        })?;
                    let r = rtt(v, r)?;
                    if r == 0 {
                        return Err(invalid(v, "a log-normal round trip must be above 0"));
                    }
                    points.push((q / 100.0, r as f64));
                }
                let [a, b] = points[..] else {
                    return Err(invalid(v, "lognormal needs exactly two items pQ=RTT"));
                };
                log_normal(v, a, b)?
            }
            "cdf" if !args.trim().is_empty() => {
                let file = args.trim();
                Shape::Cdf(parse_cdf(file, &read(file)?)?)
            }
            _ => return Err(invalid(v, "unknown form")),
        };
        Ok(PathRtts {
            shape,
            text: v.to_string(),
        })
    }

    /// The round trip (ns) of the flow whose [`path_key`] is `key`.
    pub fn rtt_ns(&self, key: u64) -> u64 {
        // 53 bits of the key, centred in their cell: u is in (0, 1), never 0 or 1.
        let u = ((key >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        self.quantile(u)
    }

    /// The round trip below which a fraction `u` (in [0, 1]) of paths lie.
    pub fn quantile(&self, u: f64) -> u64 {
        let u = u.clamp(0.0, 1.0);
        match &self.shape {
            Shape::Fixed(r) => *r,
            Shape::Uniform { lo, hi } => lo + ((hi - lo) as f64 * u).round() as u64,
            Shape::LogNormal { mu, sigma } => {
                let z = inverse_normal_cdf(u.clamp(TAIL, 1.0 - TAIL));
                ((mu + sigma * z).exp().round() as u64).min(MAX_RTT_NS)
            }
            Shape::Cdf(points) => {
                let i = points.partition_point(|(f, _)| *f < u);
                if i == 0 {
                    return points[0].1;
                }
                let (f0, r0) = points[i - 1];
                let (f1, r1) = points[i.min(points.len() - 1)];
                if f1 <= f0 {
                    return r1;
                }
                let t = (u - f0) / (f1 - f0);
                (r0 as f64 + t * (r1 as f64 - r0 as f64)).round() as u64
            }
        }
    }

    /// The mean round trip (ns), for time estimates.
    pub fn mean_ns(&self) -> f64 {
        // The midpoint rule over 1000 cells: exact for the uniform and piecewise-linear
        // shapes, well within an estimate's precision for the truncated log-normal.
        (0..1000)
            .map(|i| self.quantile((i as f64 + 0.5) / 1000.0) as f64)
            .sum::<f64>()
            / 1000.0
    }
}

impl fmt::Display for PathRtts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The log-normal through two quantiles `(fraction, RTT ns)`.
fn log_normal(v: &str, a: (f64, f64), b: (f64, f64)) -> Result<Shape, PathsError> {
    let ((qa, ra), (qb, rb)) = if a.0 <= b.0 { (a, b) } else { (b, a) };
    let (za, zb) = (inverse_normal_cdf(qa), inverse_normal_cdf(qb));
    if qa == qb || ra > rb {
        return Err(invalid(
            v,
            "the two percentiles must differ and the higher one must have the longer round trip",
        ));
    }
    let sigma = (rb.ln() - ra.ln()) / (zb - za);
    Ok(Shape::LogNormal {
        mu: ra.ln() - sigma * za,
        sigma,
    })
}

/// Reads a `cdf` file's points; errors name the line.
fn parse_cdf(file: &str, text: &str) -> Result<Vec<(f64, u64)>, PathsError> {
    let line_err = |line: usize, reason: String| PathsError::Line {
        file: file.to_string(),
        line,
        reason,
    };
    let mut points: Vec<(f64, u64)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let l = raw.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        let (r, f) = l
            .split_once(',')
            .ok_or_else(|| line_err(n, format!("{l:?} has no comma")))?;
        let r = parse_duration(r.trim())
            .map_err(|e| line_err(n, e.to_string()))?
            .as_nanos();
        let r = u64::try_from(r)
            .ok()
            .filter(|r| *r <= MAX_RTT_NS)
            .ok_or_else(|| line_err(n, "a round trip over a day".into()))?;
        let f: f64 = f
            .trim()
            .parse()
            .ok()
            .filter(|f: &f64| (0.0..=1.0).contains(f))
            .ok_or_else(|| line_err(n, format!("{:?} is not a fraction 0..1", f.trim())))?;
        if let Some(&(pf, pr)) = points.last()
            && (f < pf || r < pr)
        {
            return Err(line_err(
                n,
                "round trips and fractions must not decrease from line to line".into(),
            ));
        }
        if points.len() >= 100_000 {
            return Err(line_err(n, "more than 100,000 points".into()));
        }
        points.push((f, r));
    }
    match points.last() {
        None => Err(line_err(0, "no points".into())),
        Some(&(f, _)) if f < 1.0 => Err(line_err(
            text.lines().count(),
            format!("the last fraction is {f}; it must be 1 (every path)"),
        )),
        Some(_) => Ok(points),
    }
}

/// The key of a flow from its client-side endpoint `(IPv4 address, port)`; `proto` is
/// the IP protocol number. The emulator takes the source of client-to-server packets and
/// the destination of the others, so both directions of a connection get one path.
/// TCP and UDP from the same endpoint get the same key: a QUIC connection from port p
/// crosses the path a TCP connection from p would, so transports compare over the same
/// paths connection by connection.
pub fn path_key(proto: u8, client: ([u8; 4], u16)) -> u64 {
    const TCP: u8 = 6;
    const UDP: u8 = 17;
    let proto = if proto == UDP { TCP } else { proto };
    let (ip, port) = client;
    let word = (u64::from(u32::from_be_bytes(ip)) << 16) | u64::from(port);
    // SplitMix64's finalizer, twice: every bit of the endpoint moves the whole draw.
    mix(mix(word ^ (u64::from(proto) << 56)))
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The standard normal quantile, Acklam's rational approximation (relative error below
/// 1.2e-9), for `p` in (0, 1).
fn inverse_normal_cdf(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn no_file(_: &str) -> Result<String, PathsError> {
        panic!("no file expected")
    }

    #[test]
    fn normal_quantiles() {
        for (p, z) in [
            (0.5, 0.0),
            (0.975, 1.959_964),
            (0.85, 1.036_433),
            (0.001, -3.090_232),
        ] {
            assert!((inverse_normal_cdf(p) - z).abs() < 1e-5, "{p}");
        }
    }

    #[test]
    fn s3_goes_through_the_studys_points() {
        let p = PathRtts::parse_with("s3", no_file).unwrap();
        let at = |u: f64| p.quantile(u) as f64 / MS as f64;
        assert!((at(0.85) - 50.0).abs() < 0.01, "{}", at(0.85));
        assert!((at(0.95) - 150.0).abs() < 0.05, "{}", at(0.95));
        assert!((at(0.5) - 7.7).abs() < 0.1, "{}", at(0.5));
        // The tails are cut at the 0.1st and 99.9th percentiles.
        assert_eq!(p.quantile(0.0), p.quantile(TAIL));
        assert_eq!(p.quantile(1.0), p.quantile(1.0 - TAIL));
    }

    #[test]
    fn forms() {
        let p = |s: &str| PathRtts::parse_with(s, no_file).unwrap();
        assert_eq!(p("fixed:50ms").rtt_ns(12345), 50 * MS);
        let u = p("uniform:10ms..300ms");
        assert_eq!(u.quantile(0.0), 10 * MS);
        assert_eq!(u.quantile(1.0), 300 * MS);
        assert_eq!(u.quantile(0.5), 155 * MS);
        let l = p("lognormal:p95=200ms,p50=20ms");
        assert!((l.quantile(0.5) as f64 / 20e6 - 1.0).abs() < 1e-6);
        assert!((l.quantile(0.95) as f64 / 200e6 - 1.0).abs() < 1e-6);
        assert_eq!(l.to_string(), "lognormal:p95=200ms,p50=20ms");
    }

    #[test]
    fn cdf_files() {
        let text = "# rtt,fraction\n5ms,0\n50ms,0.85\n150ms,0.95\n1s,1\n";
        let p = PathRtts::parse_with("cdf:paths.csv", |f| {
            assert_eq!(f, "paths.csv");
            Ok(text.into())
        })
        .unwrap();
        assert_eq!(p.quantile(0.0), 5 * MS);
        assert_eq!(p.quantile(0.85), 50 * MS);
        assert_eq!(p.quantile(0.9), 100 * MS);
        assert_eq!(p.quantile(1.0), 1000 * MS);
        let err = |t: &'static str| {
            PathRtts::parse_with("cdf:x.csv", |_| Ok(t.into()))
                .unwrap_err()
                .to_string()
        };
        assert!(
            err("5ms,0\n4ms,0.5\n1s,1\n").contains("line 2"),
            "{}",
            err("5ms,0\n4ms,0.5\n")
        );
        assert!(err("5ms,0\n50ms,0.5\n").contains("must be 1"));
        assert!(err("5ms 0\n").contains("line 1"));
        assert!(err("5ms,1.5\n").contains("not a fraction"));
        assert!(err("").contains("no points"));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let e = |s: &str| PathRtts::parse_with(s, no_file).unwrap_err().to_string();
        assert!(e("gauss:1").contains("unknown form"));
        assert!(e("uniform:300ms..10ms").contains("LOW is above HIGH"));
        assert!(e("uniform:10ms").contains("LOW..HIGH"));
        assert!(e("lognormal:p50=20ms").contains("exactly two"));
        assert!(e("lognormal:p50=20ms,p95=10ms").contains("higher one"));
        assert!(e("lognormal:q50=20ms,p95=10ms").contains("percentile"));
        assert!(e("fixed:2days").contains("link.paths"));
    }

    #[test]
    fn keys_spread() {
        let a = ([198, 18, 0, 1], 40000);
        // TCP and UDP from one endpoint share its path; other protocols do not.
        assert_eq!(path_key(6, a), path_key(17, a));
        assert_ne!(path_key(6, a), path_key(1, a));
        assert_ne!(path_key(6, a), path_key(6, ([198, 18, 0, 1], 40001)));
        // Successive ports give draws that follow the distribution.
        let p = PathRtts::parse_with("uniform:0ms..1000ms", no_file).unwrap();
        let n = 20_000u16;
        let below: usize = (0..n)
            .filter(|i| p.rtt_ns(path_key(6, ([198, 18, 0, 1], 32768 + i))) < 250 * MS)
            .count();
        let share = below as f64 / f64::from(n);
        assert!((share - 0.25).abs() < 0.02, "{share}");
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = PathRtts::parse_with(&s, |_| Ok("1ms,0.5\n2ms,1\n".into()));
        }

        #[test]
        fn cdf_parse_never_panics(t in "[0-9a-z.,#\n ]{0,80}") {
            let _ = PathRtts::parse_with("cdf:f", |_| Ok(t.clone()));
        }

        #[test]
        fn quantiles_do_not_decrease(a in 0.0f64..1.0, b in 0.0f64..1.0) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            for s in ["s3", "uniform:1ms..2s", "lognormal:p10=1ms,p90=1s"] {
                let p = PathRtts::parse_with(s, no_file).unwrap();
                prop_assert!(p.quantile(lo) <= p.quantile(hi));
            }
        }
    }
}
