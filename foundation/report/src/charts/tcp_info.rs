//! Charts of the cases' TCP_INFO series (`<case>.tcp_info.csv`, docs/links.md): the
//! congestion window and the smoothed round trip over time, a line per case, so cases
//! that differ in one knob (the congestion control) read side by side.

use super::{CASES_PER_CHART, Case, MAX_POINTS, Planned, case_names, constants, params_varying};
use crate::info::RunInfo;
use std::path::Path;
use wirebench_chart::{Axis, Chart, Kind, Series, Unit};

/// The record's name for the series (`series.tcp_info`).
const SERIES: &str = "tcp_info";

/// Points of one column against the series' seconds.
type Line = Vec<(f64, f64)>;

/// One case's series: (seconds, column value) for each of `columns`.
fn read(dir: &Path, c: &Case, columns: &[&str]) -> Option<Vec<Line>> {
    let file = c.first.series.get(SERIES)?.as_str()?;
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next()?.split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name);
    let (t, cols) = (
        at("seconds")?,
        columns.iter().map(|c| at(c)).collect::<Option<Vec<_>>>()?,
    );
    let mut out = vec![Vec::new(); cols.len()];
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let Some(x) = cells.get(t).and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        for (k, col) in cols.iter().enumerate() {
            if let Some(y) = cells.get(*col).and_then(|v| v.parse::<f64>().ok()) {
                out[k].push((x, y));
            }
        }
    }
    out.iter().any(|v| !v.is_empty()).then_some(out)
}

/// Every k-th point, so a chart draws at most [`MAX_POINTS`] over its `lines` lines.
fn thinned(v: &[(f64, f64)], lines: usize) -> impl Iterator<Item = (f64, f64)> + '_ {
    let step = (v.len() / (MAX_POINTS / lines.max(1)).max(10)).max(1);
    v.iter()
        .enumerate()
        .filter(move |(j, _)| j % step == 0 || *j + 1 == v.len())
        .map(|(_, p)| *p)
}

/// The congestion window and round-trip charts of the cases with a TCP_INFO series.
pub(super) fn charts(all: &[&Case], dir: &Path, info: &RunInfo, out: &mut Vec<Planned>) {
    let with: Vec<(&Case, Vec<Line>)> = all
        .iter()
        .filter_map(|c| Some((*c, read(dir, c, &["cwnd", "srtt_s"])?)))
        .collect();
    if with.is_empty() {
        return;
    }
    let cases: Vec<&Case> = with.iter().map(|(c, _)| *c).collect();
    let varying = params_varying(&cases);
    let chunks: Vec<_> = with.chunks(CASES_PER_CHART).collect();
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let part = if n > 1 {
            format!(" ({}/{n})", i + 1)
        } else {
            String::new()
        };
        let cs: Vec<&Case> = chunk.iter().map(|(c, _)| *c).collect();
        let names = case_names(&cs, info);
        let sub = constants(&cs, &varying, info);
        for (k, (title, y, unit, stem)) in [
            (
                "Congestion window over time",
                "Congestion window (segments)",
                Unit::Count,
                "cwnd",
            ),
            (
                "Smoothed round trip over time",
                "Smoothed round trip",
                Unit::Seconds,
                "srtt",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let mut chart = Chart::new(
                format!("{title}{part}"),
                Kind::Lines,
                Axis::new("Time since the connection was set up", Unit::Seconds),
                Axis::new(y, unit),
            );
            if !sub.is_empty() {
                chart = chart.subtitle(sub.clone());
            }
            for ((_, cols), name) in chunk.iter().zip(&names) {
                chart.series.push(Series::from_xy(
                    name.clone(),
                    thinned(&cols[k], chunk.len()),
                ));
            }
            out.push(Planned::new(format!("tcp-{stem}-{}", i + 1), chart));
        }
    }
}
