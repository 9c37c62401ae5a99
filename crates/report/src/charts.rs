//! Which charts a results directory gets, chosen from the grid's shape unless the
//! scenario names them (`[[chart]]`, see [`crate::info::ChartSpec`]):
//!
//! - a headline metric against each numeric parameter that varies (payload, delay, rate,
//!   think time, ...), one series per combination of the other varying parameters; only
//!   series with at least two points are drawn, so scenarios made of `[[part]]`s give one
//!   chart per part's axis. Log axes where the values span two decades or more (S5's
//!   throughput against payload). Published figures are markers beside our series;
//! - bars per category when only words vary (protocol, workload: S2);
//! - the value of every round of each ping-pong case (S1's RTT graph: first rounds
//!   higher), and the distribution of those values as a CDF (S3).
//!
//! Repeats of a case are averaged; their min and max become error bars.

use crate::info::{ChartSpec, RunInfo};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use wirebench_chart::{Axis, Chart, Kind, Marker, Point, Series, Unit};
use wirebench_model::{Record, Status};

/// Metrics worth a chart, in order, with their names in words.
pub const METRICS: &[(&str, &str)] = &[
    ("rtt.first", "First round trip"),
    ("rtt.stable", "Stable round trip"),
    ("rtt.p50", "Median round trip"),
    ("rtt.p99", "99th-percentile round trip"),
    ("connect.time", "Connection set-up"),
    (
        "xmpp.first_delivery",
        "First delivery (incl. server-to-server set-up)",
    ),
    ("throughput.bits_per_s", "Throughput"),
    ("throughput.messages_per_s", "Messages per second"),
    ("link.utilization", "Link utilization"),
    (
        "wire.stable.overhead_per_message",
        "Wire overhead per message (steady state)",
    ),
];

/// Most series one chart carries before it stops being legible.
const MAX_SERIES: usize = 12;
/// Cases per per-round or CDF chart.
const CASES_PER_CHART: usize = 8;

/// A chart and the file stem it is saved under.
pub struct Planned {
    pub stem: String,
    pub chart: Chart,
    /// Said under the chart: the metrics left out because they would draw the same.
    pub notes: Vec<String>,
}

impl Planned {
    fn new(stem: String, chart: Chart) -> Self {
        Planned {
            stem,
            chart,
            notes: Vec::new(),
        }
    }
}

/// Two charts whose every point differs by no more than this (relative) draw the same
/// picture; the second is left out (see [`near_duplicate`]).
pub const SAME_WITHIN: f64 = 0.05;

/// Whether `b` would show what `a` shows: the same kind, x axis and series, and every
/// value within [`SAME_WITHIN`] of `a`'s. The median round trip and the stable round trip
/// (the median after the first two rounds) nearly always are; with ten rounds the 99th
/// percentile is the slowest round, often the first.
fn near_duplicate(a: &Chart, b: &Chart) -> bool {
    if a.kind != b.kind || a.x != b.x || a.y.unit != b.y.unit || a.series.len() != b.series.len() {
        return false;
    }
    a.series.iter().zip(&b.series).all(|(sa, sb)| {
        sa.name == sb.name
            && sa.points.len() == sb.points.len()
            && sa.points.iter().zip(&sb.points).all(|(pa, pb)| {
                let scale = pa.y.abs().max(pb.y.abs());
                pa.x == pb.x && (scale == 0.0 || (pa.y - pb.y).abs() <= SAME_WITHIN * scale)
            })
    })
}

/// Adds `chart` unless an earlier chart draws the same; then that chart says so.
fn push_unless_duplicate(out: &mut Vec<Planned>, stem: String, chart: Chart, metric: &str) {
    if let Some(kept) = out.iter_mut().find(|p| near_duplicate(&p.chart, &chart)) {
        kept.notes.push(format!(
            "{} ({metric}) is within {:.0}% of this in every case, so it has no chart of its own.",
            words_of(metric),
            SAME_WITHIN * 100.0
        ));
        return;
    }
    out.push(Planned::new(stem, chart));
}

/// One case with its repeats folded: mean, min and max per metric.
struct Case<'a> {
    first: &'a Record,
    metrics: BTreeMap<String, (f64, f64, f64, String)>,
}

fn cases(records: &[Record]) -> Vec<Case<'_>> {
    let mut out: Vec<Case> = Vec::new();
    for r in records.iter().filter(|r| r.status == Status::Ok) {
        let idx = match out.iter().position(|c| c.first.case == r.case) {
            Some(i) => i,
            None => {
                out.push(Case {
                    first: r,
                    metrics: BTreeMap::new(),
                });
                out.len() - 1
            }
        };
        let c = &mut out[idx];
        for name in r.metrics.keys() {
            let Some(m) = r.metric(name) else { continue };
            if !m.value.is_finite() {
                continue;
            }
            c.metrics
                .entry(name.clone())
                .and_modify(|e| {
                    e.0 += m.value;
                    e.1 = e.1.min(m.value);
                    e.2 = e.2.max(m.value);
                })
                .or_insert((m.value, m.value, m.value, m.unit.clone()));
        }
    }
    for c in &mut out {
        let n = records
            .iter()
            .filter(|r| r.case == c.first.case && r.status == Status::Ok)
            .count()
            .max(1) as f64;
        for v in c.metrics.values_mut() {
            v.0 /= n;
        }
    }
    out
}

fn label(r: &Record, p: &str) -> String {
    match r.labels.get(p).or_else(|| r.params.get(p)) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

fn param_f64(r: &Record, p: &str) -> Option<f64> {
    r.params.get(p)?.as_f64()
}

pub fn unit_of(unit: &str) -> Unit {
    match unit {
        "s" => Unit::Seconds,
        "B" => Unit::Bytes,
        "bit/s" => Unit::BitsPerSecond,
        "count" => Unit::Count,
        "ratio" => Unit::Percent,
        "" => Unit::Ratio,
        other => Unit::Other(other.to_string()),
    }
}

fn words_of(metric: &str) -> String {
    METRICS
        .iter()
        .find(|(m, _)| *m == metric)
        .map(|(_, w)| w.to_string())
        .unwrap_or_else(|| metric.to_string())
}

/// Log scale when positive values span at least `decades` decades.
fn wide(values: impl Iterator<Item = f64>, ratio: f64) -> bool {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values {
        if v <= 0.0 {
            return false;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    hi > 0.0 && lo.is_finite() && hi / lo >= ratio
}

fn params_varying(cases: &[&Case], info: &RunInfo) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in cases {
        for k in c.first.params.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    names
        .into_iter()
        .filter(|p| {
            cases
                .iter()
                .filter(|c| c.first.params.contains_key(p))
                .map(|c| label(c.first, p))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        // `link` and its parts say the same thing; the parts chart better.
        .filter(|p| !(p == "link" && info.params.contains_key("link.delay")))
        .collect()
}

fn numeric(cases: &[&Case], p: &str, info: &RunInfo) -> bool {
    !info.unit(p).is_empty()
        && cases
            .iter()
            .filter(|c| c.first.params.contains_key(p))
            .all(|c| param_f64(c.first, p).is_some())
}

fn describe(r: &Record, params: &[String], info: &RunInfo) -> String {
    params
        .iter()
        // A parameter the case's protocol does not have ("-") tells its reader nothing,
        // and pushed the part that did past the legend's width (S3's two SOCKS5 lines).
        .filter(|p| label(r, p) != "-")
        .map(|p| format!("{} {}", info.words(p), label(r, p)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What stays the same across the cases of a chart, for its subtitle.
fn constants(cases: &[&Case], varying: &[String], info: &RunInfo) -> String {
    let Some(first) = cases.first() else {
        return String::new();
    };
    first
        .first
        .params
        .keys()
        .filter(|p| !varying.contains(p))
        .filter(|p| {
            cases
                .iter()
                .all(|c| label(c.first, p) == label(first.first, p))
        })
        .filter(|p| !matches!(p.as_str(), "mode" | "nodelay") || label(first.first, p) != "on")
        .map(|p| format!("{} {}", info.words(p), label(first.first, p)))
        .collect::<Vec<_>>()
        .join(" · ")
}

fn matches_filter(r: &Record, filter: &BTreeMap<String, String>) -> bool {
    filter.iter().all(|(k, v)| label(r, k) == *v)
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// Metric against parameter `x`; `None` if no series has two points.
fn line_chart(
    all: &[&Case],
    metric: &str,
    x: &str,
    series_params: &[String],
    info: &RunInfo,
    spec: Option<&ChartSpec>,
) -> Option<Chart> {
    let with: Vec<&Case> = all
        .iter()
        .copied()
        .filter(|c| c.metrics.contains_key(metric) && param_f64(c.first, x).is_some())
        .collect();
    let mut groups: Vec<(String, Vec<&Case>)> = Vec::new();
    for c in &with {
        let key = describe(c.first, series_params, info);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(c),
            None => groups.push((key, vec![c])),
        }
    }
    groups.retain(|(_, cs)| {
        cs.iter()
            .filter_map(|c| param_f64(c.first, x))
            .map(f64::to_bits)
            .collect::<BTreeSet<_>>()
            .len()
            >= 2
    });
    if groups.is_empty() || groups.len() > MAX_SERIES {
        return None;
    }
    // Name series only by what differs between the series drawn (a parameter that
    // varied elsewhere in the run, e.g. in another [[part]], goes to the subtitle).
    let used: Vec<String> = series_params
        .iter()
        .filter(|p| {
            groups
                .iter()
                .map(|(_, cs)| label(cs[0].first, p))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .cloned()
        .collect();
    for (name, cs) in &mut groups {
        *name = describe(cs[0].first, &used, info);
    }
    let series_params = &used[..];
    let unit = with.first()?.metrics[metric].3.clone();
    let mut chart_cases: Vec<&Case> = Vec::new();
    let mut series = Vec::new();
    let mut markers = Vec::new();
    for (name, mut cs) in groups {
        cs.sort_by(|a, b| {
            param_f64(a.first, x)
                .unwrap_or(0.0)
                .total_cmp(&param_f64(b.first, x).unwrap_or(0.0))
        });
        let points = cs
            .iter()
            .map(|c| {
                let (mean, lo, hi, _) = c.metrics[metric];
                let xv = param_f64(c.first, x).unwrap_or(0.0);
                if lo < hi {
                    Point::with_range(xv, mean, lo, hi)
                } else {
                    Point::new(xv, mean)
                }
            })
            .collect();
        for c in &cs {
            if let Some(v) = c
                .first
                .references
                .get(metric)
                .and_then(|r| r["value"].as_f64())
            {
                let source = c.first.references[metric]["source"]
                    .as_str()
                    .unwrap_or("published");
                markers.push(Marker::new(source, param_f64(c.first, x).unwrap_or(0.0), v));
            }
        }
        let name = if name.is_empty() {
            "measured".to_string()
        } else {
            name
        };
        series.push(Series::new(name, points));
        chart_cases.extend(cs);
    }
    let log_x = spec.and_then(|s| s.log_x).unwrap_or_else(|| {
        wide(
            chart_cases.iter().filter_map(|c| param_f64(c.first, x)),
            50.0,
        )
    });
    let log_y = spec
        .and_then(|s| s.log_y)
        .unwrap_or_else(|| wide(chart_cases.iter().map(|c| c.metrics[metric].0), 100.0));
    let mut xa = Axis::new(capitalize(info.words(x)), unit_of(info.unit(x)));
    if log_x {
        xa = xa.log();
    }
    let mut ya = Axis::new(words_of(metric), unit_of(&unit));
    if log_y {
        ya = ya.log();
    }
    let title = spec
        .and_then(|s| s.title.clone())
        .unwrap_or_else(|| format!("{} against {}", words_of(metric), info.words(x)));
    let mut varying = series_params.to_vec();
    varying.push(x.to_string());
    let mut chart = Chart::new(title, Kind::Lines, xa, ya);
    let sub = constants(&chart_cases, &varying, info);
    if !sub.is_empty() {
        chart = chart.subtitle(sub);
    }
    chart.series = series;
    chart.references = markers;
    Some(chart)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn bar_chart(all: &[&Case], metric: &str, cats: &[String], info: &RunInfo) -> Option<Chart> {
    let with: Vec<&Case> = all
        .iter()
        .copied()
        .filter(|c| c.metrics.contains_key(metric))
        .collect();
    if with.len() < 2 || with.len() > 24 {
        return None;
    }
    let unit = with[0].metrics[metric].3.clone();
    let categories: Vec<String> = with.iter().map(|c| describe(c.first, cats, info)).collect();
    let points = with
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (mean, lo, hi, _) = c.metrics[metric];
            if lo < hi {
                Point::with_range(i as f64, mean, lo, hi)
            } else {
                Point::new(i as f64, mean)
            }
        })
        .collect();
    let markers = with
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let r = c.first.references.get(metric)?;
            Some(Marker::new(
                r["source"].as_str().unwrap_or("published"),
                i as f64,
                r["value"].as_f64()?,
            ))
        })
        .collect();
    let mut chart = Chart::new(
        words_of(metric),
        Kind::Bars { categories },
        Axis::new("", Unit::Ratio),
        Axis::new(words_of(metric), unit_of(&unit)),
    );
    let sub = constants(&with, cats, info);
    if !sub.is_empty() {
        chart = chart.subtitle(sub);
    }
    chart.series = vec![Series::new("measured", points)];
    chart.references = markers;
    Some(chart)
}

/// Per-round values of the cases that wrote them (`*.rounds.csv`), in seconds.
fn rounds_of(dir: &Path, r: &Record) -> Option<Vec<f64>> {
    let file = r.histograms.get("rtt.rounds")?.as_str()?;
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    let v: Vec<f64> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(1)?.trim().parse().ok())
        .collect();
    (!v.is_empty()).then_some(v)
}

fn rounds_charts(all: &[&Case], dir: &Path, info: &RunInfo, out: &mut Vec<Planned>) {
    let with: Vec<(&Case, Vec<f64>)> = all
        .iter()
        .filter_map(|c| Some((*c, rounds_of(dir, c.first)?)))
        .collect();
    if with.is_empty() {
        return;
    }
    let cases: Vec<&Case> = with.iter().map(|(c, _)| *c).collect();
    let varying = params_varying(&cases, info);
    let chunks: Vec<&[(&Case, Vec<f64>)]> = with.chunks(CASES_PER_CHART).collect();
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let part = if n > 1 {
            format!(" ({}/{n})", i + 1)
        } else {
            String::new()
        };
        let name = |c: &Case| {
            let d = describe(c.first, &varying, info);
            if d.is_empty() {
                format!("case {}", c.first.case)
            } else {
                d
            }
        };
        let longest = chunk.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        // A connect case's per-round values are each connection's time to first byte.
        let connect = chunk.iter().all(|(c, _)| {
            c.first.params.get("workload").and_then(|w| w.as_str()) == Some("connect")
        });
        let (title, each, value, share) = if connect {
            (
                "Time to first byte per connection",
                "Connection",
                "Time to first byte",
                "Connections at or below",
            )
        } else {
            (
                "Round trip per round",
                "Round",
                "Round trip",
                "Rounds at or below",
            )
        };
        let mut chart = Chart::new(
            format!("{title}{part}"),
            if longest > 2000 {
                Kind::Scatter
            } else {
                Kind::Lines
            },
            Axis::new(each, Unit::Count),
            Axis::new(value, Unit::Seconds),
        );
        let ys = chunk.iter().flat_map(|(_, v)| v.iter().copied());
        if wide(ys, 100.0) {
            chart.y = chart.y.log();
        }
        let cs: Vec<&Case> = chunk.iter().map(|(c, _)| *c).collect();
        let sub = constants(&cs, &varying, info);
        if !sub.is_empty() {
            chart = chart.subtitle(sub.clone());
        }
        for (c, v) in chunk {
            // Thousands of rounds would be a smear: keep every k-th, plus the first ones.
            let step = (v.len() / 2000).max(1);
            let pts = v
                .iter()
                .enumerate()
                .filter(|(j, _)| *j < 10 || j % step == 0)
                .map(|(j, y)| ((j + 1) as f64, *y));
            chart.series.push(Series::from_xy(name(c), pts));
        }
        out.push(Planned::new(format!("rounds-{}", i + 1), chart));

        let mut cdf = Chart::new(
            if connect {
                format!("Distribution of time to first byte{part}")
            } else {
                format!("Distribution of round trips{part}")
            },
            Kind::Cdf,
            Axis::new(value, Unit::Seconds),
            Axis::new(share, Unit::Percent),
        );
        if wide(chunk.iter().flat_map(|(_, v)| v.iter().copied()), 20.0) {
            cdf.x = cdf.x.log();
        }
        if !sub.is_empty() {
            cdf = cdf.subtitle(sub);
        }
        for (c, v) in chunk.iter().filter(|(_, v)| v.len() >= 5) {
            cdf.series.push(Series::samples(name(c), v.iter().copied()));
        }
        if !cdf.series.is_empty() {
            out.push(Planned::new(format!("cdf-{}", i + 1), cdf));
        }
    }
}

/// Columns of a CSV by header name, one value per row (empty cells are NaN).
type Columns = Vec<(String, Vec<f64>)>;

/// A load case's time series (`case-NNNN-rK.load.csv`, docs/load.md).
fn load_series(dir: &Path, r: &Record) -> Option<Columns> {
    let file = dir.join(format!("case-{:04}-r{}.load.csv", r.case, r.repeat));
    let text = std::fs::read_to_string(file).ok()?;
    let mut lines = text.lines();
    let mut cols: Columns = lines
        .next()?
        .split(',')
        .map(|h| (h.to_string(), Vec::new()))
        .collect();
    for line in lines {
        for (col, cell) in cols.iter_mut().zip(line.split(',')) {
            col.1.push(cell.trim().parse().unwrap_or(f64::NAN));
        }
    }
    (cols.first().is_some_and(|c| !c.1.is_empty())).then_some(cols)
}

/// Charts over time of load cases: sessions active, logins per second, and the login and
/// message latency percentiles per interval, one series per case; memory and CPU of the
/// generator and the server, a series per case and process group.
fn load_charts(all: &[&Case], dir: &Path, info: &RunInfo, out: &mut Vec<Planned>) {
    let with: Vec<(&Case, Columns)> = all
        .iter()
        .filter_map(|c| Some((*c, load_series(dir, c.first)?)))
        .take(CASES_PER_CHART)
        .collect();
    if with.is_empty() {
        return;
    }
    let cases: Vec<&Case> = with.iter().map(|(c, _)| *c).collect();
    let varying = params_varying(&cases, info);
    let name = |c: &Case| {
        let d = describe(c.first, &varying, info);
        if d.is_empty() {
            format!("case {}", c.first.case)
        } else {
            d
        }
    };
    let col = |cols: &[(String, Vec<f64>)], n: &str| -> Vec<f64> {
        cols.iter()
            .find(|(h, _)| h == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let sub = constants(&cases, &varying, info);
    // (stem, title, kind, y axis, value of interval i from the columns)
    type Value = fn(&[f64], &[f64], usize) -> f64;
    let charts: [(&str, &str, Kind, Axis, &str, &str, Value); 4] = [
        (
            "load-active",
            "Sessions logged in over time",
            Kind::Steps,
            Axis::new("Sessions", Unit::Count),
            "active",
            "seconds",
            |v, _, i| v[i],
        ),
        (
            "load-logins",
            "Logins per second over time",
            Kind::Lines,
            Axis::new("Logins per second", Unit::Count),
            "logins",
            "seconds",
            |v, t, i| {
                let dt = if i == 0 { t[0] } else { t[i] - t[i - 1] };
                if dt > 0.0 { v[i] / dt } else { f64::NAN }
            },
        ),
        (
            "load-login-p99",
            "Login time p99 over time (from the intended start)",
            Kind::Lines,
            Axis::new("Login time, p99", Unit::Seconds),
            "login_p99_ms",
            "seconds",
            |v, _, i| v[i] / 1e3,
        ),
        (
            "load-message-p99",
            "Message latency p99 over time (from the intended send)",
            Kind::Lines,
            Axis::new("Message latency, p99", Unit::Seconds),
            "message_p99_ms",
            "seconds",
            |v, _, i| v[i] / 1e3,
        ),
    ];
    for (stem, title, kind, y, column, x, value) in charts {
        let mut chart = Chart::new(title, kind, Axis::new("Time", Unit::Seconds), y);
        if !sub.is_empty() {
            chart = chart.subtitle(sub.clone());
        }
        for (c, cols) in &with {
            let (v, t) = (col(cols, column), col(cols, x));
            let pts: Vec<(f64, f64)> = (0..v.len().min(t.len()))
                .map(|i| (t[i], value(&v, &t, i)))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            if pts.len() >= 2 {
                chart.series.push(Series::from_xy(name(c), pts));
            }
        }
        if !chart.series.is_empty() {
            out.push(Planned::new(stem.to_string(), chart));
        }
    }
    // What the processes used: a line per process group and case (columns the load
    // workload samples beside its intervals; a generator running inside wirebench with the
    // server is one group, `wirebench`).
    let groups = [
        ("generator", "generator"),
        ("wirebench", "wirebench"),
        ("server", "server"),
    ];
    let usage: [(&str, &str, Axis, &str, f64); 2] = [
        (
            "load-memory",
            "Memory over time (resident)",
            Axis::new("Resident memory", Unit::Bytes),
            "rss_mib",
            1024.0 * 1024.0,
        ),
        (
            "load-cpu",
            "CPU over time (100% = one core)",
            Axis::new("CPU (100% = one core)", Unit::Percent),
            "cpu_pct",
            0.01,
        ),
    ];
    for (stem, title, y, suffix, scale) in usage {
        let mut chart = Chart::new(title, Kind::Lines, Axis::new("Time", Unit::Seconds), y);
        if !sub.is_empty() {
            chart = chart.subtitle(sub.clone());
        }
        for (c, cols) in &with {
            let t = col(cols, "seconds");
            for (prefix, label) in groups {
                let v = col(cols, &format!("{prefix}_{suffix}"));
                let pts: Vec<(f64, f64)> = (0..v.len().min(t.len()))
                    .map(|i| (t[i], v[i] * scale))
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .collect();
                if pts.len() >= 2 {
                    chart
                        .series
                        .push(Series::from_xy(format!("{}, {label}", name(c)), pts));
                }
            }
        }
        if !chart.series.is_empty() {
            out.push(Planned::new(stem.to_string(), chart));
        }
    }
}

/// The charts for a results directory.
pub fn plan(records: &[Record], info: &RunInfo, dir: &Path) -> Vec<Planned> {
    let folded = cases(records);
    let all: Vec<&Case> = folded.iter().collect();
    let mut out = Vec::new();
    if !info.charts.is_empty() {
        for (i, spec) in info.charts.iter().enumerate() {
            let cs: Vec<&Case> = all
                .iter()
                .copied()
                .filter(|c| matches_filter(c.first, &spec.filter))
                .collect();
            let kind = spec.kind.as_deref().unwrap_or("lines");
            let stem = format!("{:02}-{}", i + 1, slug(&spec.metric));
            match kind {
                "rounds" | "cdf" => {
                    let mut tmp = Vec::new();
                    rounds_charts(&cs, dir, info, &mut tmp);
                    let prefix = if kind == "rounds" { "rounds" } else { "cdf" };
                    out.extend(tmp.into_iter().filter(|p| p.stem.starts_with(prefix)));
                }
                "bars" => {
                    let cats = spec
                        .series
                        .clone()
                        .unwrap_or_else(|| params_varying(&cs, info));
                    if let Some(mut chart) = bar_chart(&cs, &spec.metric, &cats, info) {
                        if let Some(t) = &spec.title {
                            chart.title = t.clone();
                        }
                        out.push(Planned::new(stem, chart));
                    }
                }
                _ => {
                    let Some(x) = spec.x.clone() else { continue };
                    let series = spec.series.clone().unwrap_or_else(|| {
                        params_varying(&cs, info)
                            .into_iter()
                            .filter(|p| *p != x)
                            .collect()
                    });
                    if let Some(chart) =
                        line_chart(&cs, &spec.metric, &x, &series, info, Some(spec))
                    {
                        out.push(Planned::new(stem, chart));
                    }
                }
            }
        }
        return out;
    }
    for (metric, _) in METRICS {
        let with: Vec<&Case> = all
            .iter()
            .copied()
            .filter(|c| c.metrics.contains_key(*metric))
            .collect();
        if with.len() < 2 {
            continue;
        }
        let varying = params_varying(&with, info);
        let numeric_params: Vec<&String> =
            varying.iter().filter(|p| numeric(&with, p, info)).collect();
        let mut drew = false;
        for x in &numeric_params {
            let others: Vec<String> = varying.iter().filter(|p| p != x).cloned().collect();
            if let Some(chart) = line_chart(&with, metric, x, &others, info, None) {
                let stem = format!("{}-vs-{}", slug(metric), slug(x));
                push_unless_duplicate(&mut out, stem, chart, metric);
                drew = true;
            }
        }
        if !drew && numeric_params.is_empty() && !varying.is_empty() {
            if let Some(chart) = bar_chart(&with, metric, &varying, info) {
                let stem = format!("{}-bars", slug(metric));
                push_unless_duplicate(&mut out, stem, chart, metric);
            }
        }
    }
    rounds_charts(&all, dir, info, &mut out);
    load_charts(&all, dir, info, &mut out);
    for (i, p) in out.iter_mut().enumerate() {
        p.stem = format!("{:02}-{}", i + 1, p.stem);
    }
    out
}
