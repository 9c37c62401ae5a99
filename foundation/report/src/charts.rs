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

mod tcp_info;
mod tradeoff;

use crate::info::{ChartSpec, RunInfo};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::LazyLock;
use wirebench_chart::{Axis, Chart, Guide, Kind, Marker, Point, Series, Unit};
use wirebench_model::metric::connect::{TTFB, TTFB_ROUND_TRIPS};
use wirebench_model::metric::{
    CONNECT_TIME, LINK_ONE_WAY, LINK_UTILIZATION, LOAD_PEAK_ACTIVE, ROUNDS_HISTOGRAM, RTT,
    RTT_FIRST, RTT_STABLE, THROUGHPUT_BITS_PER_S, THROUGHPUT_DURATION, THROUGHPUT_MESSAGES_PER_S,
    WIRE_STABLE_OVERHEAD_PER_MESSAGE, named,
};
use wirebench_model::session_words::SessionWords;
use wirebench_model::{Record, Status};

/// The shared headline delays worth a chart, in order, with their names in words; the
/// protocols' own ([`crate::info::Declared::delays`]) follow them.
static DELAYS: LazyLock<Vec<(String, &str)>> = LazyLock::new(|| {
    named(&[
        (RTT_FIRST.key(), "First round trip"),
        (RTT_STABLE.key(), "Stable round trip"),
        (RTT.at("p50"), "Median round trip"),
        (RTT.at("p99"), "99th-percentile round trip"),
        (CONNECT_TIME.key(), "Connection set-up"),
    ])
});

/// The other headline metrics worth a chart, after every delay.
static RATES: LazyLock<Vec<(String, &str)>> = LazyLock::new(|| {
    named(&[
        (THROUGHPUT_BITS_PER_S.key(), "Throughput"),
        (THROUGHPUT_MESSAGES_PER_S.key(), "Messages per second"),
        (LINK_UTILIZATION.key(), "Link utilization"),
        (
            WIRE_STABLE_OVERHEAD_PER_MESSAGE.key(),
            "Wire overhead per message (steady state)",
        ),
    ])
});

/// Metrics worth a chart, in order, with their names in words: the shared delays, the
/// protocols' declared ones, then rates and overheads.
pub fn headline(info: &RunInfo) -> Vec<(&str, &str)> {
    let declared = info
        .declared
        .delays
        .iter()
        .map(|(m, w)| (m.as_str(), w.as_str()));
    let shared = |l: &'static [(String, &'static str)]| l.iter().map(|(m, w)| (m.as_str(), *w));
    shared(&DELAYS)
        .chain(declared)
        .chain(shared(&RATES))
        .collect()
}

/// The studies' shared metrics in words, for their lead figures and tables (not charted
/// unless a scenario asks); the protocols' own are [`crate::info::Declared::words`].
static STUDY_METRICS: LazyLock<Vec<(String, &str)>> = LazyLock::new(|| {
    named(&[
        (TTFB.at("p50"), "Time to first byte, median"),
        (TTFB.at("p85"), "Time to first byte, p85"),
        (TTFB.at("p95"), "Time to first byte, p95"),
        (TTFB_ROUND_TRIPS.at("p50"), "Round trips to the first byte"),
        (LOAD_PEAK_ACTIVE.key(), "Peak sessions logged in"),
        (THROUGHPUT_DURATION.key(), "Transfer time"),
        (LINK_ONE_WAY.at("p95"), "One-way delay of the data, p95"),
        (LINK_ONE_WAY.at("mean"), "One-way delay of the data, mean"),
    ])
});

/// Most series one chart carries before it stops being legible.
const MAX_SERIES: usize = 12;
/// Cases per per-round or CDF chart.
const CASES_PER_CHART: usize = 8;

/// A chart and the file stem it is saved under.
pub struct Planned {
    pub stem: String,
    pub chart: Chart,
    /// Said under the chart: the metrics left out because they would draw the same, the
    /// points where repeats leave an ordering open.
    pub notes: Vec<String>,
    /// The study's own figure (`lead = true` in its `[[chart]]`): first in the report.
    pub lead: bool,
}

impl Planned {
    fn new(stem: String, chart: Chart) -> Self {
        Planned {
            stem,
            chart,
            notes: Vec::new(),
            lead: false,
        }
    }
}

/// Columns of the load series a `load` chart can draw (`[[chart]] kind = "load"`).
pub const LOAD_COLUMNS: &[&str] = &["active", "logins", "login_p99", "message_p99"];

/// Most points a chart draws as separate marks; beyond it a per-round chart is thinned
/// (or, for connections in no meaningful order, left to the CDF).
const MAX_POINTS: usize = 2000;

/// Height of a lead figure (others: the chart crate's 450).
const LEAD_HEIGHT: u32 = 560;

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
/// Returns whether it was added.
fn push_unless_duplicate(
    out: &mut Vec<Planned>,
    stem: String,
    chart: Chart,
    metric: &str,
    info: &RunInfo,
) -> bool {
    if let Some(kept) = out.iter_mut().find(|p| near_duplicate(&p.chart, &chart)) {
        // The scenario's own chart of the same metric: nothing to say.
        if kept.chart.y.label == words_of(metric, info) {
            return false;
        }
        kept.notes.push(format!(
            "{} ({metric}) is within {:.0}% of this in every case, so it has no chart of its own.",
            words_of(metric, info),
            SAME_WITHIN * 100.0
        ));
        return false;
    }
    out.push(Planned::new(stem, chart));
    true
}

/// One case with its repeats folded: mean, min and max per metric.
struct Case<'a> {
    first: &'a Record,
    /// Every run of the case that succeeded (`first` among them).
    runs: Vec<&'a Record>,
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
                    runs: Vec::new(),
                    metrics: BTreeMap::new(),
                });
                out.len() - 1
            }
        };
        let c = &mut out[idx];
        c.runs.push(r);
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

pub fn words_of(metric: &str, info: &RunInfo) -> String {
    let study = STUDY_METRICS.iter().map(|(m, w)| (m.as_str(), *w));
    let declared = info
        .declared
        .words
        .iter()
        .map(|(m, w)| (m.as_str(), w.as_str()));
    headline(info)
        .into_iter()
        .chain(study)
        .chain(declared)
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

fn params_varying(cases: &[&Case]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in cases {
        for k in c.first.params.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    let varying: Vec<String> = names
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
        .collect();
    // `link` and its parts say the same thing; the parts chart better, where they vary
    // (a list of whole links, `--link A,B`, has no parts).
    let parts = varying.iter().any(|p| p.starts_with("link."));
    varying
        .into_iter()
        .filter(|p| !(p == "link" && parts))
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

/// Whether a case passes a chart's filter. A case that does not have a parameter (its
/// protocol or workload does not read it: standard S2S has no x2x options) passes on it:
/// the filter picks among the cases it applies to.
fn matches_filter(r: &Record, filter: &BTreeMap<String, String>) -> bool {
    filter.iter().all(|(k, v)| {
        let l = label(r, k);
        l == *v || l == "-"
    })
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

/// Metric against parameter `x`, with notes on the points where repeats leave the order
/// of two series open; `None` if no series has two points.
fn line_chart(
    all: &[&Case],
    metric: &str,
    x: &str,
    series_params: &[String],
    info: &RunInfo,
    spec: Option<&ChartSpec>,
) -> Option<(Chart, Vec<String>)> {
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
        *name = compact(cs[0].first, &used, info);
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
                // The study's figure for this series' case: drawn in its colour.
                markers.push(
                    Marker::new(source, param_f64(c.first, x).unwrap_or(0.0), v)
                        .of_series(series.len()),
                );
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
    let mut ya = Axis::new(words_of(metric, info), unit_of(&unit));
    if log_y {
        ya = ya.log();
    }
    let title = spec
        .and_then(|s| s.title.clone())
        .unwrap_or_else(|| format!("{} against {}", words_of(metric, info), info.words(x)));
    let mut varying = series_params.to_vec();
    varying.push(x.to_string());
    let mut chart = Chart::new(title, Kind::Lines, xa, ya);
    let sub = constants(&chart_cases, &varying, info);
    if !sub.is_empty() {
        chart = chart.subtitle(sub);
    }
    chart.series = series;
    chart.references = markers;
    let notes = overlaps(&chart, info.words(x), info.unit(x));
    Some((chart, notes))
}

/// Whether two series names ("x2x, link rate 2400bit") differ in exactly one of their
/// comma-separated parts.
fn differ_in_one(a: &str, b: &str) -> bool {
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split(", ").collect(), b.split(", ").collect());
    pa.len() == pb.len() && pa.iter().zip(&pb).filter(|(x, y)| x != y).count() == 1
}

/// Two single-run values closer than this (relative) may swap places in the next run.
const CLOSE: f64 = 0.10;

/// Most notes on unsettled orderings under one chart; the rest are counted.
const MAX_OVERLAP_NOTES: usize = 4;

/// Where two series' spreads over repeats (min to max) overlap at the same x: the chart
/// cannot say which is higher there, and a study's ordering may flip between runs
/// (soapstone's SOAP and HTTP at 100 B did).
fn overlaps(chart: &Chart, x_words: &str, x_unit: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (i, a) in chart.series.iter().enumerate() {
        // Only series a study would compare: alike but for one parameter.
        for b in chart.series[i + 1..]
            .iter()
            .filter(|b| differ_in_one(&a.name, &b.name))
        {
            for pa in &a.points {
                let Some(pb) = b.points.iter().find(|p| p.x == pa.x) else {
                    continue;
                };
                let at = crate::numbers::human(pa.x, x_unit);
                let (Some(alo), Some(ahi), Some(blo), Some(bhi)) =
                    (pa.y_min, pa.y_max, pb.y_min, pb.y_max)
                else {
                    // One run each: no spread to compare, but values this close have
                    // flipped between runs (x2x's first round trip: 1.65 s, then 1.35 s).
                    let scale = pa.y.abs().max(pb.y.abs());
                    if scale > 0.0 && (pa.y - pb.y).abs() <= CLOSE * scale {
                        found.push(format!(
                            "At {x_words} {at}, {} and {} are within {:.0}% from one run each: \
                             their order may flip (--repeat 3 shows the spread).",
                            a.name,
                            b.name,
                            CLOSE * 100.0
                        ));
                    }
                    continue;
                };
                if alo <= bhi && blo <= ahi {
                    found.push(format!(
                        "At {x_words} {at}, {} and {} overlap over their repeats (min to max): \
                         which is higher there is not settled.",
                        a.name, b.name
                    ));
                }
            }
        }
    }
    if found.len() > MAX_OVERLAP_NOTES {
        let more = found.len() - MAX_OVERLAP_NOTES;
        found.truncate(MAX_OVERLAP_NOTES);
        found.push(format!("{more} more such points."));
    }
    found
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
    let named: Vec<(&Case, String)> = with
        .iter()
        .map(|c| (*c, format!("case {}", c.first.case)))
        .collect();
    let categories = series_names(&named, cats, info);
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
            Some(
                Marker::new(
                    r["source"].as_str().unwrap_or("published"),
                    i as f64,
                    r["value"].as_f64()?,
                )
                .of_series(0),
            )
        })
        .collect();
    let mut chart = Chart::new(
        words_of(metric, info),
        Kind::Bars { categories },
        Axis::new("", Unit::Ratio),
        Axis::new(words_of(metric, info), unit_of(&unit)),
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
    let file = r.histograms.get(ROUNDS_HISTOGRAM)?.as_str()?;
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
    let varying = params_varying(&cases);
    let chunks: Vec<&[(&Case, Vec<f64>)]> = with.chunks(CASES_PER_CHART).collect();
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let part = if n > 1 {
            format!(" ({}/{n})", i + 1)
        } else {
            String::new()
        };
        // Named by what differs within this chart only; the rest is its subtitle.
        let in_chunk: Vec<&Case> = chunk.iter().map(|(c, _)| *c).collect();
        let names = case_names(&in_chunk, info);
        let name = |c: &Case| {
            let i = chunk.iter().position(|(x, _)| x.first.case == c.first.case);
            i.map_or_else(|| format!("case {}", c.first.case), |i| names[i].clone())
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
            Kind::Lines,
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
        // Connections are timed in no meaningful order over a population of paths: thousands
        // of them are a smear of points that the CDF below says better.
        let drawn = !(connect && longest > MAX_POINTS);
        // Thousands of rounds would be a smear too: keep every k-th, plus the first ones,
        // at most MAX_POINTS over all the chart's series.
        let budget = (MAX_POINTS / chunk.len().max(1)).max(10);
        for (c, v) in chunk.iter().filter(|_| drawn) {
            let step = (v.len() / budget).max(1);
            let pts = v
                .iter()
                .enumerate()
                .filter(|(j, _)| *j < 10 || j % step == 0)
                .map(|(j, y)| ((j + 1) as f64, *y));
            chart.series.push(Series::from_xy(name(c), pts));
        }
        if drawn {
            out.push(Planned::new(format!("rounds-{}", i + 1), chart));
        }

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

/// One chart over time of load cases: its file stem, title, kind, y axis, the column of
/// the intervals file it reads and how interval i's value comes from it.
struct LoadDef {
    key: &'static str,
    stem: &'static str,
    /// The title and the y axis, in the words of the cases' sessions.
    title: fn(&SessionWords) -> String,
    kind: Kind,
    y: fn(&SessionWords) -> String,
    unit: Unit,
    column: &'static str,
    value: fn(&[f64], &[f64], usize) -> f64,
}

const LOAD_DEFS: [LoadDef; 4] = [
    LoadDef {
        key: "active",
        stem: "load-active",
        title: |w| format!("Sessions {} over time", w.up),
        kind: Kind::Steps,
        y: |_| "Sessions".into(),
        unit: Unit::Count,
        column: "active",
        value: |v, _, i| v[i],
    },
    LoadDef {
        key: "logins",
        stem: "load-logins",
        title: |w| format!("{} per second over time", w.events_title()),
        kind: Kind::Lines,
        y: |w| format!("{} per second", w.events_title()),
        unit: Unit::Count,
        column: "logins",
        value: |v, t, i| {
            let dt = if i == 0 { t[0] } else { t[i] - t[i - 1] };
            if dt > 0.0 { v[i] / dt } else { f64::NAN }
        },
    },
    LoadDef {
        key: "login_p99",
        stem: "load-login-p99",
        title: |w| {
            format!(
                "{} time p99 over time (from the intended start)",
                w.event_title()
            )
        },
        kind: Kind::Lines,
        y: |w| format!("{} time, p99", w.event_title()),
        unit: Unit::Seconds,
        column: "login_p99_ms",
        value: |v, _, i| v[i] / 1e3,
    },
    LoadDef {
        key: "message_p99",
        stem: "load-message-p99",
        title: |_| "Message latency p99 over time (from the intended send)".into(),
        kind: Kind::Lines,
        y: |_| "Message latency, p99".into(),
        unit: Unit::Seconds,
        column: "message_p99_ms",
        value: |v, _, i| v[i] / 1e3,
    },
];

/// One case's series of `def`, if it has two points.
fn load_series_of(def: &LoadDef, cols: &[(String, Vec<f64>)], name: String) -> Option<Series> {
    let col = |n: &str| -> Vec<f64> {
        cols.iter()
            .find(|(h, _)| h == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (v, t) = (col(def.column), col("seconds"));
    let pts: Vec<(f64, f64)> = (0..v.len().min(t.len()))
        .map(|i| (t[i], (def.value)(&v, &t, i)))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    (pts.len() >= 2).then(|| Series::from_xy(name, pts))
}

/// A `load` chart of the scenario's (`column`), with the study's peaks as guides on the
/// sessions chart (references of `load.peak_active`).
fn load_column_chart(cs: &[&Case], dir: &Path, info: &RunInfo, spec: &ChartSpec) -> Option<Chart> {
    let def = LOAD_DEFS
        .iter()
        .find(|d| Some(d.key) == spec.column.as_deref())?;
    let with: Vec<(&Case, Columns)> = cs
        .iter()
        .filter_map(|c| Some((*c, load_series(dir, c.first)?)))
        .take(MAX_SERIES)
        .collect();
    let cases: Vec<&Case> = with.iter().map(|(c, _)| *c).collect();
    let varying = params_varying(&cases);
    let names = case_names(&cases, info);
    let words = info
        .declared
        .session_words_of(cases.iter().map(|c| c.first));
    let mut chart = Chart::new(
        (def.title)(&words),
        def.kind.clone(),
        Axis::new("Time", Unit::Seconds),
        Axis::new((def.y)(&words), def.unit.clone()),
    );
    let sub = constants(&cases, &varying, info);
    if !sub.is_empty() {
        chart = chart.subtitle(sub);
    }
    for ((_, cols), name) in with.iter().zip(names) {
        if let Some(s) = load_series_of(def, cols, name) {
            chart.series.push(s);
        }
    }
    if def.key == "active" {
        for c in &cases {
            let Some(r) = c.first.references.get(LOAD_PEAK_ACTIVE.name) else {
                continue;
            };
            let Some(v) = r["value"].as_f64() else {
                continue;
            };
            if chart.guides.iter().any(|g| g.y == v) {
                continue;
            }
            let source = r["source"].as_str().unwrap_or("published");
            // The figure first: a long source is cut at its end, never the number.
            chart.guides.push(Guide::new(
                v,
                format!("{} ({source})", crate::numbers::human(v, "count")),
            ));
        }
    }
    (!chart.series.is_empty()).then_some(chart)
}

/// Our highest point against the study's levels, in words: a run far below them draws a
/// line along the floor, and the caption says how far (a short run offers less load; the
/// levels are what the study reached, not a limit of ours).
fn peak_against_guides(chart: &Chart) -> Vec<String> {
    let ours = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.y))
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max);
    chart
        .guides
        .iter()
        .filter(|g| g.y > 0.0)
        .map(|g| {
            format!(
                "Our highest: {} ({}% of {}).",
                crate::numbers::human(ours, "count"),
                crate::numbers::sig3(ours / g.y * 100.0),
                g.label
            )
        })
        .collect()
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
    let varying = params_varying(&cases);
    let names = case_names(&cases, info);
    let name = |c: &Case| {
        let i = cases.iter().position(|x| x.first.case == c.first.case);
        i.map_or_else(|| format!("case {}", c.first.case), |i| names[i].clone())
    };
    let col = |cols: &[(String, Vec<f64>)], n: &str| -> Vec<f64> {
        cols.iter()
            .find(|(h, _)| h == n)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let sub = constants(&cases, &varying, info);
    let words = info
        .declared
        .session_words_of(cases.iter().map(|c| c.first));
    for def in &LOAD_DEFS {
        let mut chart = Chart::new(
            (def.title)(&words),
            def.kind.clone(),
            Axis::new("Time", Unit::Seconds),
            Axis::new((def.y)(&words), def.unit.clone()),
        );
        if !sub.is_empty() {
            chart = chart.subtitle(sub.clone());
        }
        for (c, cols) in &with {
            if let Some(s) = load_series_of(def, cols, name(c)) {
                chart.series.push(s);
            }
        }
        if !chart.series.is_empty() {
            out.push(Planned::new(def.stem.to_string(), chart));
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
                // A process that has ended reads as 0 from then on: its line ends where
                // it did, instead of dropping to zero.
                let alive = v
                    .iter()
                    .rposition(|x| x.is_finite() && *x > 0.0)
                    .map_or(0, |i| i + 1);
                let pts: Vec<(f64, f64)> = (0..alive.min(t.len()))
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

/// The charts for a results directory: the scenario's own (`[[chart]]`, its lead figure
/// first), then those chosen from the grid's shape, leaving out any that would draw what an
/// earlier one draws.
pub fn plan(records: &[Record], info: &RunInfo, dir: &Path) -> Vec<Planned> {
    let folded = cases(records);
    let all: Vec<&Case> = folded.iter().collect();
    let mut out = Vec::new();
    let specs = info
        .charts
        .iter()
        .filter(|s| s.lead)
        .chain(info.charts.iter().filter(|s| !s.lead));
    for spec in specs {
        let cs: Vec<&Case> = all
            .iter()
            .copied()
            .filter(|c| matches_filter(c.first, &spec.filter))
            .collect();
        let before = out.len();
        spec_charts(spec, &cs, dir, info, &mut out);
        for p in &mut out[before..] {
            p.lead = spec.lead;
            if spec.lead {
                // The study's answer gets the room to show every series and mark.
                p.chart.height = LEAD_HEIGHT;
            }
        }
    }
    generic_charts(&all, info, &mut out);
    let mut extra = Vec::new();
    rounds_charts(&all, dir, info, &mut extra);
    load_charts(&all, dir, info, &mut extra);
    tcp_info::charts(&all, dir, info, &mut extra);
    tcp_info::link_charts(&all, dir, info, &mut extra);
    let own = |kind: &str| info.charts.iter().any(|c| c.kind.as_deref() == Some(kind));
    for p in extra {
        // The scenario's own per-round, CDF or load charts already drew these cases.
        let kind = if p.stem.starts_with("rounds") {
            "rounds"
        } else if p.stem.starts_with("cdf") {
            "cdf"
        } else if p.stem.starts_with("tcp-") {
            "tcp_info"
        } else if p.stem.starts_with("link-") {
            "link"
        } else {
            "load"
        };
        let own_load = LOAD_DEFS.iter().any(|d| {
            p.stem == d.stem
                && info
                    .charts
                    .iter()
                    .any(|c| c.column.as_deref() == Some(d.key))
        });
        let drawn_already = out.iter().any(|o| o.chart.title == p.chart.title)
            || (kind != "load" && own(kind))
            || own_load;
        if !drawn_already {
            out.push(p);
        }
    }
    for (i, p) in out.iter_mut().enumerate() {
        p.stem = format!("{:02}-{}", i + 1, p.stem);
    }
    out
}

/// The charts one `[[chart]]` asks for.
fn spec_charts(spec: &ChartSpec, cs: &[&Case], dir: &Path, info: &RunInfo, out: &mut Vec<Planned>) {
    let kind = spec.kind.as_deref().unwrap_or("lines");
    let stem = slug(&format!("{kind}-{}", spec.metric));
    let titled = |mut chart: Chart| {
        if let Some(t) = &spec.title {
            chart.title = t.clone();
        }
        chart
    };
    match kind {
        "rounds" => {
            let mut tmp = Vec::new();
            rounds_charts(cs, dir, info, &mut tmp);
            out.extend(tmp.into_iter().filter(|p| p.stem.starts_with("rounds")));
        }
        "cdf" => {
            if let Some(chart) = one_cdf(cs, dir, info, spec) {
                out.push(Planned::new(stem, titled(chart)));
            }
        }
        "load" => {
            if let Some(chart) = load_column_chart(cs, dir, info, spec) {
                let notes = peak_against_guides(&chart);
                let mut p = Planned::new(stem, titled(chart));
                p.notes = notes;
                out.push(p);
            }
        }
        "tradeoff" => {
            if let Some(chart) = tradeoff::chart(cs, spec, info) {
                // One such chart per filtered group (a link each): stems apart.
                let tail: Vec<&str> = spec.filter.values().map(String::as_str).collect();
                let stem = slug(&format!("{stem}-{}", tail.join("-")));
                out.push(Planned::new(stem, chart));
            }
        }
        "bars" => {
            let chart = match &spec.x {
                Some(x) => grouped_bars(cs, spec, x, info),
                None => {
                    let cats = spec.series.clone().unwrap_or_else(|| params_varying(cs));
                    bar_chart(cs, &spec.metric, &cats, info)
                }
            };
            if let Some(mut chart) = chart {
                if spec.log_y == Some(true) {
                    chart.y = chart.y.log();
                }
                out.push(Planned::new(stem, titled(chart)));
            }
        }
        _ => {
            let Some(x) = spec.x.clone() else { return };
            let series = spec
                .series
                .clone()
                .unwrap_or_else(|| params_varying(cs).into_iter().filter(|p| *p != x).collect());
            if let Some((chart, notes)) =
                line_chart(cs, &spec.metric, &x, &series, info, Some(spec))
            {
                let mut p = Planned::new(stem, chart);
                p.notes = notes;
                out.push(p);
            }
        }
    }
}

/// A chart per headline metric against each numeric parameter that varies, or bars when
/// only words vary.
fn generic_charts(all: &[&Case], info: &RunInfo, out: &mut Vec<Planned>) {
    for (metric, _) in headline(info) {
        let with: Vec<&Case> = all
            .iter()
            .copied()
            .filter(|c| c.metrics.contains_key(metric))
            .collect();
        if with.len() < 2 {
            continue;
        }
        let varying = params_varying(&with);
        let numeric_params: Vec<&String> =
            varying.iter().filter(|p| numeric(&with, p, info)).collect();
        let mut drew = false;
        for x in &numeric_params {
            let others: Vec<String> = varying.iter().filter(|p| p != x).cloned().collect();
            if let Some((chart, notes)) = line_chart(&with, metric, x, &others, info, None) {
                let stem = format!("{}-vs-{}", slug(metric), slug(x));
                if push_unless_duplicate(out, stem, chart, metric, info) {
                    if let Some(p) = out.last_mut() {
                        p.notes.extend(notes);
                    }
                }
                drew = true;
            }
        }
        if !drew && numeric_params.is_empty() && !varying.is_empty() {
            if let Some(chart) = bar_chart(&with, metric, &varying, info) {
                let stem = format!("{}-bars", slug(metric));
                push_unless_duplicate(out, stem, chart, metric, info);
            }
        }
    }
}

/// A series' name from its parameters, as short as it stays clear: the protocol by its
/// name alone, a switch by its name when on and not at all when off ("convert, TCP Fast
/// Open"), anything else as "words value".
fn compact(r: &Record, params: &[String], info: &RunInfo) -> String {
    params
        .iter()
        .filter_map(|p| {
            let v = label(r, p);
            match v.as_str() {
                "-" | "off" => None,
                "on" => Some(info.words(p).to_string()),
                _ if p == "protocol" || info.declared.legend_by_value.contains(p) => Some(v),
                _ => Some(format!("{} {v}", info.words(p))),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each case's name from the parameters that vary among `cases` ("case N" when none do).
fn case_names(cases: &[&Case], info: &RunInfo) -> Vec<String> {
    let varying = params_varying(cases);
    let named: Vec<(&Case, String)> = cases
        .iter()
        .map(|c| (*c, format!("case {}", c.first.case)))
        .collect();
    series_names(&named, &varying, info)
}

/// The name of a series from the parameters that differ between the series drawn only
/// (what is common goes to the subtitle), or `fallback` when nothing differs.
fn series_names(groups: &[(&Case, String)], params: &[String], info: &RunInfo) -> Vec<String> {
    let used: Vec<String> = params
        .iter()
        .filter(|p| {
            groups
                .iter()
                .map(|(c, _)| label(c.first, p))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .cloned()
        .collect();
    groups
        .iter()
        .map(|(c, fallback)| {
            let mut d = compact(c.first, &used, info);
            // A case without the link parameters that tell the others apart ran with no
            // link at all: say so, or "native" and "native, one-way delay 81ms" read as
            // if the first had no delay parameter rather than no link.
            let no_link = used
                .iter()
                .any(|p| p.starts_with("link") && label(c.first, p) == "-");
            if no_link {
                d = if d.is_empty() {
                    "loopback".into()
                } else {
                    format!("{d}, loopback")
                };
            }
            if d.is_empty() { fallback.clone() } else { d }
        })
        .collect()
}

/// Bars of `spec.metric` grouped by the values of parameter `x` (S2: one group per
/// transport), one bar per combination of `spec.series` (client, link), published figures
/// as markers over the bar they belong to.
fn grouped_bars(cs: &[&Case], spec: &ChartSpec, x: &str, info: &RunInfo) -> Option<Chart> {
    let metric = spec.metric.as_str();
    let with: Vec<&Case> = cs
        .iter()
        .copied()
        .filter(|c| c.metrics.contains_key(metric))
        .collect();
    let mut categories: Vec<String> = Vec::new();
    for c in &with {
        let v = label(c.first, x);
        if !categories.contains(&v) {
            categories.push(v);
        }
    }
    let series_params: Vec<String> = spec.series.clone().unwrap_or_else(|| {
        params_varying(&with)
            .into_iter()
            .filter(|p| p != x)
            .collect()
    });
    let mut keys: Vec<(String, &Case)> = Vec::new();
    for c in &with {
        let k = describe(c.first, &series_params, info);
        if !keys.iter().any(|(key, _)| *key == k) {
            keys.push((k, c));
        }
    }
    if categories.len() < 2 && keys.len() < 2 || keys.len() > MAX_SERIES {
        return None;
    }
    let named: Vec<(&Case, String)> = keys.iter().map(|(_, c)| (*c, "measured".into())).collect();
    let names = series_names(&named, &series_params, info);
    let n = keys.len() as f64;
    let mut series = Vec::new();
    let mut markers = Vec::new();
    for (s, ((key, _), name)) in keys.iter().zip(names).enumerate() {
        let mut points = Vec::new();
        for c in with
            .iter()
            .filter(|c| describe(c.first, &series_params, info) == *key)
        {
            let Some(i) = categories.iter().position(|v| *v == label(c.first, x)) else {
                continue;
            };
            let (mean, lo, hi, _) = c.metrics[metric];
            points.push(if lo < hi {
                Point::with_range(i as f64, mean, lo, hi)
            } else {
                Point::new(i as f64, mean)
            });
            if let Some(r) = c.first.references.get(metric) {
                if let Some(v) = r["value"].as_f64() {
                    // Over this series' bar: the chart draws a group's bars across 80% of
                    // the category's band, in series order.
                    let offset = -0.4 + (s as f64 + 0.5) * 0.8 / n;
                    markers.push(
                        Marker::new(
                            r["source"].as_str().unwrap_or("published"),
                            i as f64 + offset,
                            v,
                        )
                        .of_series(s),
                    );
                }
            }
        }
        series.push(Series::new(name, points));
    }
    let unit = with.first()?.metrics[metric].3.clone();
    let mut chart = Chart::new(
        words_of(metric, info),
        Kind::Bars { categories },
        Axis::new(capitalize(info.words(x)), Unit::Ratio),
        Axis::new(words_of(metric, info), unit_of(&unit)),
    );
    let mut varying = series_params.clone();
    varying.push(x.to_string());
    let sub = constants(&with, &varying, info);
    if !sub.is_empty() {
        chart = chart.subtitle(sub);
    }
    chart.series = series;
    chart.references = markers;
    Some(chart)
}

/// One CDF of every case's per-round (or per-connection) values, with the quantiles the
/// study reads marked (`quantiles`), and its claims drawn where it states them
/// relative to a baseline (`claims`, see [`ChartSpec`]).
fn one_cdf(cs: &[&Case], dir: &Path, info: &RunInfo, spec: &ChartSpec) -> Option<Chart> {
    let with: Vec<(&Case, Vec<f64>)> = cs
        .iter()
        .filter_map(|c| Some((*c, rounds_of(dir, c.first)?)))
        .filter(|(_, v)| v.len() >= 5)
        .take(MAX_SERIES)
        .collect();
    if with.is_empty() {
        return None;
    }
    let cases: Vec<&Case> = with.iter().map(|(c, _)| *c).collect();
    let varying = params_varying(&cases);
    let names = case_names(&cases, info);
    let connect = cases
        .iter()
        .all(|c| c.first.params.get("workload").and_then(|w| w.as_str()) == Some("connect"));
    let (title, value, share) = if connect {
        (
            "Distribution of time to first byte",
            "Time to first byte",
            "Connections at or below",
        )
    } else {
        (
            "Distribution of round trips",
            "Round trip",
            "Rounds at or below",
        )
    };
    let mut chart = Chart::new(
        title,
        Kind::Cdf,
        Axis::new(value, Unit::Seconds),
        Axis::new(share, Unit::Percent),
    );
    let log_x = spec
        .log_x
        .unwrap_or_else(|| wide(with.iter().flat_map(|(_, v)| v.iter().copied()), 20.0));
    if log_x {
        chart.x = chart.x.log();
    }
    let sub = constants(&cases, &varying, info);
    if !sub.is_empty() {
        chart = chart.subtitle(sub);
    }
    for ((_, v), name) in with.iter().zip(names) {
        chart.series.push(Series::samples(name, v.iter().copied()));
    }
    for q in spec.quantiles.iter().flatten() {
        chart.guides.push(Guide::new(
            *q,
            format!("p{}", crate::numbers::sig3(q * 100.0)),
        ));
    }
    for claim in &spec.claims {
        let base = with
            .iter()
            .find(|(c, _)| matches_filter(c.first, &claim.base));
        if let Some((_, v)) = base {
            let at = quantile(v, claim.quantile) + claim.add;
            chart
                .references
                .push(Marker::new(claim.label.clone(), at, claim.quantile));
        }
    }
    Some(chart)
}

/// The `q` quantile of `values` (nearest rank).
fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

#[cfg(test)]
mod overlap_tests {
    use super::*;

    fn chart(a: Point, b: Point) -> Chart {
        let mut c = Chart::new(
            "t",
            Kind::Lines,
            Axis::new("x", Unit::Bytes),
            Axis::new("y", Unit::Count),
        );
        c.series = vec![Series::new("soap", vec![a]), Series::new("http", vec![b])];
        c
    }

    #[test]
    fn spreads_that_overlap_are_named_and_apart_ones_are_not() {
        let c = chart(
            Point::with_range(100.0, 11.0, 6.0, 12.0),
            Point::with_range(100.0, 7.0, 6.5, 11.5),
        );
        let notes = overlaps(&c, "payload", "B");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("payload 100B") && notes[0].contains("soap and http"),
            "{notes:?}"
        );
        let c = chart(
            Point::with_range(100.0, 11.0, 10.0, 12.0),
            Point::with_range(100.0, 7.0, 6.5, 7.5),
        );
        assert!(overlaps(&c, "payload", "B").is_empty());
    }

    #[test]
    fn close_single_runs_are_flagged_far_ones_are_not() {
        let c = chart(Point::new(1.0, 1.65), Point::new(1.0, 1.55));
        assert_eq!(overlaps(&c, "delay", "s").len(), 1);
        let c = chart(Point::new(1.0, 1.65), Point::new(1.0, 1.2));
        assert!(overlaps(&c, "delay", "s").is_empty());
    }
}
