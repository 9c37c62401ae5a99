//! Every chart of every built-in scenario's report, drawn from records shaped like its
//! cases: no two legend entries and no two bar categories may read alike once shortened
//! to fit (the word that tells them apart must survive), and no chart draws more than
//! ~2,000 marks as points (issue #35: a study's report reads like its paper); no two series
//! are drawn alike, no legend entry is cut or left out, and every published marker is in its
//! series' colour, has its legend entry and lies inside the frame (issue #54).

use super::*;
use crate::scenario::BUILTIN;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use wirebench_chart::{Kind, LayoutInfo, LegendKind, Rect, TextRole, layout_info};
use wirebench_model::{HostFacts, Metric};

/// A value per case that differs between cases, so no two charts collapse as duplicates.
fn value(case: usize, k: f64) -> f64 {
    k * (1.0 + case as f64 * 0.37).ln_1p()
}

/// Records for every planned case of `scenario`, with its per-round and load files in
/// `dir`, as a run would leave them.
fn fake_run(scenario: &Scenario, dir: &std::path::Path) -> Vec<Record> {
    let mut out = Vec::new();
    for case in plan(scenario) {
        let mut r = base_record(
            scenario,
            &case,
            1,
            SystemTime::UNIX_EPOCH,
            &[],
            &HostFacts::default(),
        );
        let i = case.index;
        let metrics: [(&str, f64, &str); 12] = [
            ("rtt.first", 2.0, "s"),
            ("rtt.stable", 1.0, "s"),
            ("rtt.p99", 1.5, "s"),
            ("throughput.bits_per_s", 1e6, "bit/s"),
            ("link.utilization", 0.3, "ratio"),
            ("wire.stable.overhead_per_message", 60.0, "B"),
            ("s2.total", 3.0, "s"),
            ("ttfb.p50", 0.1, "s"),
            ("ttfb.round_trips.p50", 2.0, "round trips"),
            ("load.peak_active", 1e4, "count"),
            ("connect.time", 0.01, "s"),
            ("xmpp.first_delivery", 0.5, "s"),
        ];
        for (name, k, unit) in metrics {
            r.set_metric(name, Metric::new(value(i, k), unit));
        }
        // A protocol's own metric a chart of the scenario draws (CoAP's `coap.spurious`).
        for c in &scenario.charts {
            if r.metric(&c.metric).is_none() {
                r.set_metric(&c.metric, Metric::new(value(i, 1.0), "count"));
            }
            // A tradeoff chart's x axis (Pantheon's delay, `link.one_way.p95`).
            if let Some(x) = c.x_metric.as_deref().filter(|x| r.metric(x).is_none()) {
                r.set_metric(x, Metric::new(value(i, 0.1), "s"));
            }
        }
        let stem = format!("case-{i:04}-r1");
        let mut rounds = String::from("round,rtt_s\n");
        for j in 0..50 {
            let _ = writeln!(rounds, "{},{}", j + 1, value(i + j, 0.01));
        }
        std::fs::write(dir.join(format!("{stem}.rtt.rounds.csv")), rounds).unwrap();
        r.histograms
            .insert("rtt.rounds".into(), format!("{stem}.rtt.rounds.csv").into());
        if case.workload() == "load" {
            let mut load = String::from(
                "seconds,active,logins,login_p99_ms,message_p99_ms,generator_rss_mib,server_rss_mib,generator_cpu_pct,server_cpu_pct\n",
            );
            for t in 1..=20 {
                let _ = writeln!(
                    load,
                    "{t},{},{},5,3,{},{},50,40",
                    t * 100 * i,
                    100 * i,
                    10 + t,
                    20 + t
                );
            }
            std::fs::write(dir.join(format!("{stem}.load.csv")), load).unwrap();
        }
        out.push(r);
    }
    out
}

#[test]
fn no_legend_entry_or_category_of_a_built_in_report_reads_like_another() {
    for (name, _) in BUILTIN {
        let scenario = Scenario::builtin(name).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let records = fake_run(&scenario, dir.path());
        let info = run_info(&scenario);
        let planned = wirebench_report::charts::plan(&records, &info, dir.path());
        assert!(!planned.is_empty(), "{name}: no chart");
        if scenario.charts.iter().any(|c| c.lead) {
            assert!(planned[0].lead, "{name}: its lead figure is not first");
        }
        for p in &planned {
            let layout = layout_info(&p.chart);
            for role in [TextRole::Legend, TextRole::XTick] {
                // A legend entry may wrap onto several lines: it reads as all of them.
                let shown: Vec<String> = if role == TextRole::Legend {
                    layout
                        .legend_items
                        .iter()
                        .filter(|e| e.kind != LegendKind::More)
                        .map(|e| e.lines.join(" "))
                        .collect()
                } else {
                    layout
                        .texts
                        .iter()
                        .filter(|t| t.role == role)
                        .map(|t| t.text.clone())
                        .collect()
                };
                let distinct: BTreeSet<&String> = shown.iter().collect();
                if role == TextRole::XTick && !matches!(p.chart.kind, Kind::Bars { .. }) {
                    continue;
                }
                assert_eq!(
                    distinct.len(),
                    shown.len(),
                    "{name}, chart {} ({}): {role:?} entries read alike: {shown:?}",
                    p.stem,
                    p.chart.title
                );
            }
            if matches!(p.chart.kind, Kind::Scatter) {
                let points: usize = p.chart.series.iter().map(|s| s.points.len()).sum();
                assert!(points <= 2000, "{name}, {}: {points} points", p.stem);
            }
        }
    }
}

/// The words of `text`, without the commas they end in and the "…" that marks words left
/// out (a legend may leave out what every entry shares: the subtitle says it).
fn words(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c| c == '…' || c == ','))
        .filter(|w| !w.is_empty())
        .collect()
}

fn within(inner: Rect, outer: Rect) -> bool {
    inner.x0 >= outer.x0 && inner.x1 <= outer.x1 && inner.y0 >= outer.y0 && inner.y1 <= outer.y1
}

/// A chart of up to this many series gives each its own colour (the chart crate's
/// palette); beyond it, series that share a colour differ in dash.
const HUES: usize = 10;

/// Issue #54's three faults in one chart: two series drawn alike, a legend cut (an entry
/// left out or cut mid-word), a published marker that is not its series' colour, has no
/// legend entry of its own or straddles the frame.
fn faults(chart: &wirebench_chart::Chart, info: &LayoutInfo) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in info.series.iter().enumerate() {
        for (j, b) in info.series.iter().enumerate().skip(i + 1) {
            if a.colour == b.colour && (a.dash == b.dash || info.series.len() <= HUES) {
                out.push(format!(
                    "series {i} and {j} are both {} (dashes {:?}, {:?})",
                    a.colour, a.dash, b.dash
                ));
            }
        }
    }
    for e in &info.legend_items {
        if e.kind == LegendKind::More {
            out.push("the legend is cut short".into());
            continue;
        }
        let full = words(&e.full);
        for w in e.lines.iter().flat_map(|l| words(l)) {
            if !full.contains(&w) {
                out.push(format!("legend entry {:?} reads {:?}", e.full, e.lines));
                break;
            }
        }
    }
    for m in &info.markers {
        if !within(m.bounds, info.plot) {
            out.push(format!(
                "marker {:?} at {:?} crosses the frame {:?}",
                m.label, m.bounds, info.plot
            ));
        }
        // A CDF's markers are claims against a baseline, not one series' figures.
        if matches!(chart.kind, Kind::Cdf) {
            continue;
        }
        let Some(s) = m.series else {
            out.push(format!("marker {:?} belongs to no series", m.label));
            continue;
        };
        if m.colour != info.series[s].colour {
            out.push(format!("marker {:?} is not its series' colour", m.label));
        }
        let entry = LegendKind::Reference {
            label: m.label.clone(),
            series: Some(s),
        };
        if !info.legend_items.iter().any(|e| e.kind == entry) {
            out.push(format!(
                "marker {:?} of series {s} has no legend entry",
                m.label
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_series_legend_entry_and_marker_of_a_built_in_report_can_be_told_apart() {
    let mut found = Vec::new();
    for (name, _) in BUILTIN {
        let scenario = Scenario::builtin(name).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let records = fake_run(&scenario, dir.path());
        let planned = wirebench_report::charts::plan(&records, &run_info(&scenario), dir.path());
        for p in &planned {
            for f in faults(&p.chart, &layout_info(&p.chart)) {
                found.push(format!("{name}, chart {} ({}): {f}", p.stem, p.chart.title));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} faults:\n{}",
        found.len(),
        found.join("\n")
    );
}
