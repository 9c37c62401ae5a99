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
        _ => format!("{value} {unit}"),
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
