//! Charts of the cases' time series, a line per case, so cases that differ in one knob
//! (the congestion control) read side by side (docs/links.md): from TCP_INFO
//! (`<case>.tcp_info.csv`) the congestion window and the smoothed round trip; from the
//! link emulator (`<case>.link.csv`) the queue and the packets' one-way delay in the
//! data's direction.

use super::{
    CASES_PER_CHART, Case, MAX_POINTS, Planned, case_names, constants, label, params_varying,
};
use crate::info::RunInfo;
use std::path::Path;
use wirebench_chart::{Axis, Chart, Kind, Series, Unit};

/// The record's name for the series (`series.tcp_info`).
const SERIES: &str = "tcp_info";

/// Points of one column against the series' seconds.
type Line = Vec<(f64, f64)>;

/// The record's name for the link emulator's series (`series.link`).
const LINK_SERIES: &str = "link";

/// One case's series `name`: (seconds, column value) for each of `columns`.
fn read(dir: &Path, c: &Case, name: &str, columns: &[&str]) -> Option<Vec<Line>> {
    let file = c.first.series.get(name)?.as_str()?;
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

/// A case with its series' lines.
type WithLines<'a> = (&'a Case<'a>, Vec<Line>);

/// One chart of a family: title, y axis, unit, kind and file stem.
type Panel = (&'static str, &'static str, Unit, Kind, &'static str);

/// The congestion window and round-trip charts of the cases with a TCP_INFO series.
pub(super) fn charts(all: &[&Case], dir: &Path, info: &RunInfo, out: &mut Vec<Planned>) {
    let with: Vec<(&Case, Vec<Line>)> = all
        .iter()
        .filter_map(|c| Some((*c, read(dir, c, SERIES, &["cwnd", "srtt_s"])?)))
        .collect();
    let panels = [
        (
            "Congestion window over time",
            "Congestion window (segments)",
            Unit::Count,
            Kind::Lines,
            "tcp-cwnd",
        ),
        (
            "Smoothed round trip over time",
            "Smoothed round trip",
            Unit::Seconds,
            Kind::Lines,
            "tcp-srtt",
        ),
    ];
    draw(
        &with,
        &panels,
        "Time since the connection was set up",
        info,
        out,
    );
}

/// The link's queue and one-way delay over time in each case's data direction (the one
/// that delivered more bytes), from the emulator's series.
pub(super) fn link_charts(all: &[&Case], dir: &Path, info: &RunInfo, out: &mut Vec<Planned>) {
    let cols = [
        "up_queue_packets",
        "up_one_way_mean_s",
        "up_delivered_bits_per_s",
        "down_queue_packets",
        "down_one_way_mean_s",
        "down_delivered_bits_per_s",
    ];
    let with: Vec<(&Case, Vec<Line>)> = all
        .iter()
        .filter_map(|c| {
            let mut v = read(dir, c, LINK_SERIES, &cols)?;
            let bits = |k: usize| v[k].iter().map(|p| p.1).sum::<f64>();
            let data = if bits(5) > bits(2) { 3 } else { 0 };
            Some((*c, v.drain(data..data + 2).collect()))
        })
        .collect();
    let panels = [
        (
            "Link queue over time, the data's direction",
            "Packets queued",
            Unit::Count,
            Kind::Steps,
            "link-queue",
        ),
        (
            "One-way delay over time, the data's direction (mean per 10 ms)",
            "One-way delay",
            Unit::Seconds,
            Kind::Lines,
            "link-one-way",
        ),
    ];
    draw(
        &with,
        &panels,
        "Time since the case's link was set up",
        info,
        out,
    );
}

/// The cases in charts of their own: those that differ only in the knob (the varying
/// parameter with the fewest values: the congestion control beside six links) share
/// one, at most [`CASES_PER_CHART`] each.
fn grouped<'a, 'b>(
    with: &'b [(&'a Case<'a>, Vec<Line>)],
) -> Vec<Vec<&'b (&'a Case<'a>, Vec<Line>)>> {
    let cases: Vec<&Case> = with.iter().map(|(c, _)| *c).collect();
    let varying = params_varying(&cases);
    let values = |p: &String| {
        cases
            .iter()
            .map(|c| label(c.first, p))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let knob = varying.iter().min_by_key(|p| values(p));
    let rest: Vec<&String> = varying.iter().filter(|p| Some(*p) != knob).collect();
    let mut groups: Vec<(Vec<String>, Vec<&WithLines>)> = Vec::new();
    for w in with {
        let key: Vec<String> = rest.iter().map(|p| label(w.0.first, p)).collect();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(w),
            None => groups.push((key, vec![w])),
        }
    }
    groups
        .into_iter()
        .flat_map(|(_, g)| {
            g.chunks(CASES_PER_CHART)
                .map(<[_]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A chart per panel per group of cases, a line per case.
fn draw(
    with: &[(&Case, Vec<Line>)],
    panels: &[Panel],
    x: &str,
    info: &RunInfo,
    out: &mut Vec<Planned>,
) {
    if with.is_empty() {
        return;
    }
    let chunks = grouped(with);
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let part = if n > 1 {
            format!(" ({}/{n})", i + 1)
        } else {
            String::new()
        };
        let cs: Vec<&Case> = chunk.iter().map(|(c, _)| *c).collect();
        let names = case_names(&cs, info);
        // What the group's cases share (the link, in a knob-per-link grid) is its subtitle.
        let sub = constants(&cs, &params_varying(&cs), info);
        for (k, (title, y, unit, kind, stem)) in panels.iter().enumerate() {
            let mut chart = Chart::new(
                format!("{title}{part}"),
                kind.clone(),
                Axis::new(x, Unit::Seconds),
                Axis::new(*y, unit.clone()),
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
            out.push(Planned::new(format!("{stem}-{}", i + 1), chart));
        }
    }
}
