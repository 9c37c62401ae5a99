//! The `tradeoff` chart: one metric against another, a marker per run and each series'
//! mean, as Pantheon (Yan et al., USENIX ATC 2018) draws a congestion control's mean
//! throughput against the 95th percentile of its packets' one-way delay. A delay on
//! the x axis runs right to left on a log scale, so "better" (more throughput, less
//! delay) is up and right.

use super::{Case, compact, constants, describe, params_varying, unit_of, words_of};
use crate::info::{ChartSpec, RunInfo};
use wirebench_chart::{Axis, Chart, Kind, Point, Series, Unit};

/// The chart `spec` asks for over `cs`, if any case has both metrics.
pub(super) fn chart(cs: &[&Case], spec: &ChartSpec, info: &RunInfo) -> Option<Chart> {
    let (y, x) = (spec.metric.as_str(), spec.x_metric.as_deref()?);
    let with: Vec<&Case> = cs
        .iter()
        .copied()
        .filter(|c| c.metrics.contains_key(x) && c.metrics.contains_key(y))
        .collect();
    let first = with.first()?;
    let series_params = spec.series.clone().unwrap_or_else(|| params_varying(&with));
    let mut groups: Vec<(String, Vec<&Case>)> = Vec::new();
    for c in &with {
        let key = describe(c.first, &series_params, info);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(c),
            None => groups.push((key, vec![c])),
        }
    }
    let mut series = Vec::new();
    let mut runs_in_all = 0;
    for (_, group) in &groups {
        let name = compact(group[0].first, &series_params, info);
        let runs: Vec<(f64, f64)> = group
            .iter()
            .flat_map(|c| &c.runs)
            .filter_map(|r| Some((r.metric(x)?.value, r.metric(y)?.value)))
            .filter(|(a, b)| a.is_finite() && b.is_finite())
            .collect();
        if runs.is_empty() {
            continue;
        }
        runs_in_all += runs.len();
        let n = runs.len() as f64;
        let (mx, my) = (
            runs.iter().map(|p| p.0).sum::<f64>() / n,
            runs.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let (lo, hi) = runs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| {
                (l.min(p.1), h.max(p.1))
            });
        let mut points: Vec<Point> = runs.iter().map(|&(a, b)| Point::new(a, b)).collect();
        // The mean, with its runs' spread of the y metric, when there is more than one.
        if runs.len() > 1 {
            points.push(Point::with_range(mx, my, lo, hi));
        }
        let name = if name.is_empty() {
            "measured".to_string()
        } else {
            name
        };
        series.push(Series::new(name, points));
    }
    if series.is_empty() {
        return None;
    }
    let x_unit = unit_of(&first.metrics[x].3);
    let mut xa = Axis::new(words_of(x, info), x_unit.clone()).log();
    if x_unit == Unit::Seconds {
        xa = xa.reversed();
    }
    let mut ya = Axis::new(words_of(y, info), unit_of(&first.metrics[y].3));
    if spec.log_y == Some(true) {
        ya = ya.log();
    }
    let title = spec
        .title
        .clone()
        .unwrap_or_else(|| format!("{} against {}", words_of(y, info), words_of(x, info)));
    let mut chart = Chart::new(title, Kind::Scatter, xa, ya);
    let sub = constants(&with, &series_params, info);
    let how = if runs_in_all > series.len() {
        "a marker per run; the one with a bar is the mean, the bar its runs' range"
    } else {
        "a marker per run"
    };
    chart = chart.subtitle(if sub.is_empty() {
        how.to_string()
    } else {
        format!("{sub}; {how}")
    });
    chart.series = series;
    Some(chart)
}
