//! The table printed at the end of a run: one row per case (repeats averaged), the
//! parameters that vary, and the headline metrics in human units.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use std::collections::BTreeSet;
use wirebench_model::{Rate, Record, Status, format_seconds};

/// Headline metrics, in display order, with their column titles.
const HEADLINE: &[(&str, &str)] = &[
    ("connect.time", "connect"),
    ("rtt.first", "first RTT"),
    ("rtt.stable", "stable RTT"),
    ("rtt.p50", "p50"),
    ("rtt.p99", "p99"),
    ("rtt.max", "max"),
    ("throughput.bits_per_s", "throughput"),
    ("throughput.messages_per_s", "messages/s"),
];

fn label(r: &Record, p: &str) -> String {
    match r.labels.get(p).or_else(|| r.params.get(p)) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

/// Formats a metric value for people.
pub fn human(value: f64, unit: &str) -> String {
    match unit {
        "s" => format_seconds(value),
        "bit/s" => Rate(value).to_string(),
        "msg/s" | "count" => {
            if value >= 1e6 {
                format!("{:.2}M", value / 1e6)
            } else if value >= 1e4 {
                format!("{:.1}k", value / 1e3)
            } else {
                format!("{}", (value * 100.0).round() / 100.0)
            }
        }
        "ratio" => format!("{:.1}%", value * 100.0),
        "B" => format!("{} B", (value * 10.0).round() / 10.0),
        _ => format!("{} {unit}", (value * 1000.0).round() / 1000.0),
    }
}

pub fn summary_table(records: &[Record]) -> String {
    let params: Vec<String> = {
        let mut seen: Vec<String> = Vec::new();
        for k in records.iter().flat_map(|r| r.params.keys()) {
            if !seen.contains(k) {
                seen.push(k.clone());
            }
        }
        seen.into_iter()
            .filter(|p| {
                records
                    .iter()
                    .filter(|r| r.params.contains_key(p.as_str()))
                    .map(|r| label(r, p))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect()
    };
    let shown: Vec<&(&str, &str)> = HEADLINE
        .iter()
        .filter(|(m, _)| records.iter().any(|r| r.metrics.contains_key(*m)))
        .collect();
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    let mut header = vec![Cell::new("case")];
    header.extend(params.iter().map(Cell::new));
    header.extend(shown.iter().map(|(_, title)| Cell::new(title)));
    header.push(Cell::new("lost/corrupt"));
    header.push(Cell::new("status"));
    t.set_header(header);

    let cases: Vec<usize> = records
        .iter()
        .map(|r| r.case)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for case in cases {
        let reps: Vec<&Record> = records.iter().filter(|r| r.case == case).collect();
        let ok: Vec<&&Record> = reps.iter().filter(|r| r.status == Status::Ok).collect();
        let mut cells = vec![Cell::new(case)];
        cells.extend(params.iter().map(|p| Cell::new(label(reps[0], p))));
        for (m, _) in &shown {
            let vals: Vec<(f64, String)> = ok
                .iter()
                .filter_map(|r| r.metric(m))
                .map(|x| (x.value, x.unit))
                .collect();
            let text = if vals.is_empty() {
                String::new()
            } else {
                let mean = vals.iter().map(|v| v.0).sum::<f64>() / vals.len() as f64;
                human(mean, &vals[0].1)
            };
            cells.push(Cell::new(text).set_alignment(CellAlignment::Right));
        }
        let bad: f64 = ok
            .iter()
            .flat_map(|r| [r.metric("messages.lost"), r.metric("messages.corrupt")])
            .flatten()
            .map(|m| m.value)
            .sum();
        cells.push(
            Cell::new(if ok.is_empty() {
                String::new()
            } else {
                format!("{bad}")
            })
            .set_alignment(CellAlignment::Right),
        );
        let status = if ok.len() == reps.len() {
            if reps.len() > 1 {
                format!("ok x{}", reps.len())
            } else {
                "ok".into()
            }
        } else {
            let failed: Vec<String> = reps
                .iter()
                .filter(|r| r.status != Status::Ok)
                .map(|r| format!("{:?}", r.status).to_lowercase())
                .collect();
            format!("{}/{} {}", ok.len(), reps.len(), failed.join(","))
        };
        cells.push(Cell::new(status));
        t.add_row(cells);
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(human(52.3e-6, "s"), "52.3µs");
        assert_eq!(human(2.5e10, "bit/s"), "25Gbit/s");
        assert_eq!(human(812_345.0, "msg/s"), "812.3k");
        assert_eq!(human(3.0, "count"), "3");
    }
}

fn case_label(r: &Record, skip: &str) -> String {
    r.labels
        .iter()
        .filter(|(k, _)| k.as_str() != skip)
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Least-squares line through (x, y): (intercept, slope).
pub fn fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    Some((my - slope * mx, slope))
}

/// Published figures beside ours, and how round trips grow with the link's delay
/// (study S1's laws: stable RTT grows by 2 x delay; a first RTT that grows by k x delay
/// implies about k/2 round trips of set-up). Where the references cover several delays,
/// their own line is fitted too, so the two slopes can be compared directly.
pub fn comparisons(records: &[Record]) -> String {
    let ok: Vec<&Record> = records.iter().filter(|r| r.status == Status::Ok).collect();
    let mut out = String::new();
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec![
        "case",
        "parameters",
        "metric",
        "ours",
        "published",
        "ours/published",
        "source",
    ]);
    let mut rows = 0;
    // Only what differs between the rows; the rest is the same for all of them.
    let with_refs: Vec<&Record> = ok
        .iter()
        .copied()
        .filter(|r| !r.references.is_empty())
        .collect();
    let differing: Vec<String> = {
        let mut names: Vec<String> = Vec::new();
        for r in &with_refs {
            for k in r.labels.keys() {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        names
            .into_iter()
            .filter(|p| {
                with_refs
                    .iter()
                    .map(|r| label(r, p))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect()
    };
    for r in &with_refs {
        for (metric, reference) in &r.references {
            let (Some(rv), Some(ours)) = (reference["value"].as_f64(), r.metric(metric)) else {
                continue;
            };
            let ratio = if rv != 0.0 {
                format!("{:.2}", ours.value / rv)
            } else {
                "-".into()
            };
            t.add_row(vec![
                Cell::new(format!("{} r{}", r.case, r.repeat)),
                Cell::new(
                    differing
                        .iter()
                        .map(|p| format!("{p}={}", label(r, p)))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                Cell::new(metric),
                Cell::new(human(ours.value, &ours.unit)).set_alignment(CellAlignment::Right),
                Cell::new(human(rv, &ours.unit)).set_alignment(CellAlignment::Right),
                Cell::new(ratio).set_alignment(CellAlignment::Right),
                Cell::new(reference["source"].as_str().unwrap_or("reference")),
            ]);
            rows += 1;
        }
    }
    if rows > 0 {
        out.push_str("Published figures beside ours:\n");
        out.push_str(&t.to_string());
        out.push('\n');
    }
    // Groups of cases that differ only in link.delay.
    let mut groups: Vec<(String, Vec<&Record>)> = Vec::new();
    for r in ok.iter().filter(|r| r.params.contains_key("link.delay")) {
        let key = case_label(r, "link.delay");
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let mut fits = String::new();
    for (key, rs) in &groups {
        let delays: BTreeSet<String> = rs.iter().map(|r| label(r, "link.delay")).collect();
        if delays.len() < 2 {
            continue;
        }
        let mut parts = Vec::new();
        for metric in ["rtt.first", "rtt.stable"] {
            let delay = |r: &Record| r.params.get("link.delay")?.as_f64();
            let ours: Vec<(f64, f64)> = rs
                .iter()
                .filter_map(|r| Some((delay(r)?, r.metric(metric)?.value)))
                .collect();
            let published: Vec<(f64, f64)> = rs
                .iter()
                .filter_map(|r| Some((delay(r)?, r.references.get(metric)?["value"].as_f64()?)))
                .collect();
            if let Some((a, b)) = fit(&ours) {
                let mut line = format!(
                    "{metric} = {} + {b:.2} x delay (~{:.1} round trips)",
                    human(a, "s"),
                    b / 2.0
                );
                if let Some((pa, pb)) = fit(&published) {
                    line.push_str(&format!(
                        ", published {} + {pb:.2} x delay (~{:.1})",
                        human(pa, "s"),
                        pb / 2.0
                    ));
                }
                parts.push(line);
            }
        }
        if !parts.is_empty() {
            fits.push_str(&format!("  {key}:\n    {}\n", parts.join("\n    ")));
        }
    }
    if !fits.is_empty() {
        out.push_str("Growth with the link's one-way delay (least squares):\n");
        out.push_str(&fits);
    }
    out
}

#[cfg(test)]
mod fit_tests {
    #[test]
    fn line_through_points() {
        let (a, b) = super::fit(&[(0.0, 36.3), (0.5, 57.0), (1.0, 78.5)]).unwrap();
        assert!((b - 42.2).abs() < 0.01, "{b}");
        assert!((a - 36.22).abs() < 0.1, "{a}");
        assert!(super::fit(&[(1.0, 2.0)]).is_none());
        assert!(super::fit(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
    }
}

#[cfg(test)]
mod comparison_tests {
    use wirebench_model::Record;

    fn record(case: usize, delay: f64, label: &str, first: f64, published: f64) -> Record {
        serde_json::from_value(serde_json::json!({
            "schema": 1, "scenario": "s", "case": case, "repeat": 1, "status": "ok",
            "params": {"link.delay": delay, "payload": 2},
            "labels": {"link.delay": label, "payload": "2"},
            "metrics": {"rtt.first": {"value": first, "unit": "s"}},
            "references": {"rtt.first": {"value": published, "source": "S1 standard S2S"}},
            "seed": 1, "started": "", "wirebench": "0", "command": [],
            "host": {"hostname": "", "os": "", "kernel": "", "cpu": "", "cpus": 1, "memory_bytes": 0}
        }))
        .unwrap()
    }

    #[test]
    fn published_figures_and_both_slopes() {
        let rs = vec![
            record(1, 0.0, "0", 15.0, 36.3),
            record(2, 0.5, "500ms", 22.1, 57.0),
            record(3, 1.0, "1s", 31.1, 78.5),
        ];
        let out = super::comparisons(&rs);
        assert!(out.contains("Published figures beside ours"), "{out}");
        assert!(out.contains("S1 standard S2S"), "{out}");
        // 15.0 / 36.3
        assert!(out.contains("0.41"), "{out}");
        assert!(out.contains("+ 16.10 x delay (~8.1 round trips)"), "{out}");
        assert!(
            out.contains("published 36.17s + 42.20 x delay (~21.1)"),
            "{out}"
        );
    }
}
