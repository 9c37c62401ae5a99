//! `results.csv`: the records pivoted into tables the way Soap-Stone lays them out (study
//! S5, Tuffs 2004, "Logging"; docs/studies.md): parameters that vary are split into *table*
//! parameters (one table per combination) and *column* parameters (one column per
//! combination); rows are metrics. By default every varying parameter but the right-most
//! makes tables, and the right-most makes columns. Repeated cases are averaged, with min
//! and max rows added.
//!
//! ```text
//! wirebench results,scenario=default
//! constant,protocol=raw,rounds=1000
//!
//! table,workload=pingpong
//! metric,unit,payload=64,payload=1500
//! rtt.p50,s,5.1e-5,5.3e-5
//! ```

use std::collections::BTreeSet;
use wirebench_model::{Record, Status};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PivotOptions {
    /// Parameters that split tables (`--tables`). `None`: all varying but the right-most.
    /// `Some(empty)`: one single table.
    pub tables: Option<Vec<String>>,
    /// Metrics kept (`--columns`); a trailing `*` matches a prefix (`rtt.*`). `None`: all.
    pub metrics: Option<Vec<String>>,
}

fn label(r: &Record, p: &str) -> String {
    match r.labels.get(p).or_else(|| r.params.get(p)) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

fn wanted(metric: &str, filter: &Option<Vec<String>>) -> bool {
    match filter {
        None => true,
        Some(list) => list.iter().any(|f| match f.strip_suffix('*') {
            Some(prefix) => metric.starts_with(prefix),
            None => metric == f,
        }),
    }
}

/// CSV field quoting per RFC 4180.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn row(cells: &[String]) -> String {
    let mut s = cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
    s.push('\n');
    s
}

fn combo(r: &Record, params: &[String]) -> Vec<String> {
    params
        .iter()
        .map(|p| format!("{p}={}", label(r, p)))
        .collect()
}

fn first_appearance<T: PartialEq + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// True if the records that have parameter `p` do not all share one value.
fn varies(records: &[&Record], p: &str) -> bool {
    records
        .iter()
        .filter(|r| r.params.contains_key(p))
        .map(|r| label(r, p))
        .collect::<BTreeSet<_>>()
        .len()
        > 1
}

/// Renders the pivot of the successful records.
pub fn pivot(records: &[Record], opts: &PivotOptions) -> String {
    let ok: Vec<&Record> = records.iter().filter(|r| r.status == Status::Ok).collect();
    let scenario = records.first().map(|r| r.scenario.as_str()).unwrap_or("");
    let mut out = row(&["wirebench results".into(), format!("scenario={scenario}")]);
    if ok.is_empty() {
        return out;
    }
    let params: Vec<String> = first_appearance(ok.iter().flat_map(|r| r.params.keys().cloned()));
    let varying: Vec<String> = params.iter().filter(|p| varies(&ok, p)).cloned().collect();
    let constant: Vec<String> = params
        .iter()
        .filter(|p| !varying.contains(p))
        .cloned()
        .collect();
    if !constant.is_empty() {
        let mut cells = vec!["constant".to_string()];
        for p in &constant {
            if let Some(r) = ok.iter().find(|r| r.params.contains_key(p.as_str())) {
                cells.push(format!("{p}={}", label(r, p)));
            }
        }
        out.push_str(&row(&cells));
    }
    let table_params: Vec<String> = match &opts.tables {
        Some(t) => t.iter().filter(|p| varying.contains(p)).cloned().collect(),
        None => varying
            .iter()
            .take(varying.len().saturating_sub(1))
            .cloned()
            .collect(),
    };
    let repeated = ok.iter().any(|r| r.repeat > 1);

    for table in first_appearance(ok.iter().map(|r| combo(r, &table_params))) {
        let in_table: Vec<&Record> = ok
            .iter()
            .copied()
            .filter(|r| combo(r, &table_params) == table)
            .collect();
        // Columns: what still varies inside this table (a parameter that only some
        // workloads use is constant within each workload's table).
        let column_params: Vec<String> = varying
            .iter()
            .filter(|p| !table_params.contains(p) && varies(&in_table, p))
            .cloned()
            .collect();
        out.push('\n');
        let mut head = vec!["table".to_string()];
        head.extend(if table.is_empty() {
            vec!["all".to_string()]
        } else {
            table.clone()
        });
        out.push_str(&row(&head));
        let columns = first_appearance(in_table.iter().map(|r| combo(r, &column_params)));
        let mut header = vec!["metric".to_string(), "unit".to_string()];
        header.extend(columns.iter().map(|c| {
            if c.is_empty() {
                "value".to_string()
            } else {
                c.join(" ")
            }
        }));
        out.push_str(&row(&header));
        let metrics = first_appearance(
            in_table
                .iter()
                .flat_map(|r| r.metrics.keys().cloned())
                .filter(|m| wanted(m, &opts.metrics)),
        );
        for m in metrics {
            let unit = in_table
                .iter()
                .find_map(|r| r.metric(&m))
                .map(|x| x.unit)
                .unwrap_or_default();
            let per_column: Vec<Vec<f64>> = columns
                .iter()
                .map(|c| {
                    in_table
                        .iter()
                        .filter(|r| &combo(r, &column_params) == c)
                        .filter_map(|r| r.metric(&m).map(|x| x.value))
                        .collect()
                })
                .collect();
            let stat = |f: &dyn Fn(&[f64]) -> f64| -> Vec<String> {
                per_column
                    .iter()
                    .map(|v| {
                        if v.is_empty() {
                            String::new()
                        } else {
                            format!("{}", f(v))
                        }
                    })
                    .collect()
            };
            let mut cells = vec![m.clone(), unit.clone()];
            cells.extend(stat(&|v| v.iter().sum::<f64>() / v.len() as f64));
            out.push_str(&row(&cells));
            if repeated {
                let mut cells = vec![format!("{m} [min]"), unit.clone()];
                cells.extend(stat(&|v| v.iter().cloned().fold(f64::INFINITY, f64::min)));
                out.push_str(&row(&cells));
                let mut cells = vec![format!("{m} [max]"), unit];
                cells.extend(stat(&|v| {
                    v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                }));
                out.push_str(&row(&cells));
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::{Map, json};
    use wirebench_model::{HostFacts, Metric};

    pub(crate) fn rec(
        case: usize,
        repeat: u32,
        params: &[(&str, serde_json::Value)],
        metrics: &[(&str, f64)],
    ) -> Record {
        let mut p = Map::new();
        for (k, v) in params {
            p.insert(k.to_string(), v.clone());
        }
        let mut r = Record {
            schema: 1,
            scenario: "t".into(),
            case,
            repeat,
            status: Status::Ok,
            error: None,
            fault: None,
            params: p.clone(),
            labels: p,
            metrics: Map::new(),
            histograms: Map::new(),
            series: Map::new(),
            references: Map::new(),
            notes: vec![],
            transport: Map::new(),
            seed: 1,
            started: String::new(),
            wirebench: "0".into(),
            command: vec![],
            host: HostFacts::default(),
        };
        for (m, v) in metrics {
            r.set_metric(m, Metric::new(*v, "s"));
        }
        r
    }

    /// Soap-Stone's example: protocol x echo x payload, 2 x 2 x 3 = 12 cases.
    fn grid() -> Vec<Record> {
        let mut v = Vec::new();
        let mut case = 0;
        for proto in ["raw", "http"] {
            for echo in ["false", "true"] {
                for payload in [100, 1000, 10000] {
                    case += 1;
                    v.push(rec(
                        case,
                        1,
                        &[
                            ("protocol", json!(proto)),
                            ("echo", json!(echo)),
                            ("payload", json!(payload)),
                            ("k", json!(1)),
                        ],
                        &[
                            ("rtt.p50", case as f64),
                            ("throughput.bits_per_s", 10.0 * case as f64),
                        ],
                    ));
                }
            }
        }
        v
    }

    #[test]
    fn default_pivot_one_table_per_combination_but_right_most() {
        let csv = pivot(&grid(), &PivotOptions::default());
        assert_eq!(csv.matches("\ntable,").count(), 4, "{csv}");
        assert!(csv.contains("constant,k=1\n"), "{csv}");
        assert!(csv.contains("table,protocol=raw,echo=false\nmetric,unit,payload=100,payload=1000,payload=10000\nrtt.p50,s,1,2,3\n"), "{csv}");
        assert!(csv.contains("table,protocol=http,echo=true\n"), "{csv}");
    }

    #[test]
    fn tables_option_pushes_other_parameters_into_columns() {
        let opts = PivotOptions {
            tables: Some(vec!["protocol".into()]),
            metrics: Some(vec!["rtt.*".into()]),
        };
        let csv = pivot(&grid(), &opts);
        assert_eq!(csv.matches("\ntable,").count(), 2, "{csv}");
        assert!(csv.contains("metric,unit,echo=false payload=100,echo=false payload=1000,echo=false payload=10000,echo=true payload=100"), "{csv}");
        assert!(!csv.contains("throughput"), "{csv}");
        let one = pivot(
            &grid(),
            &PivotOptions {
                tables: Some(vec![]),
                metrics: None,
            },
        );
        assert_eq!(one.matches("\ntable,").count(), 1);
        assert!(one.contains("table,all\n"));
    }

    #[test]
    fn repeats_are_averaged_with_min_and_max_and_failures_skipped() {
        let mut v = vec![
            rec(1, 1, &[("payload", json!(1))], &[("rtt.p50", 1.0)]),
            rec(1, 2, &[("payload", json!(1))], &[("rtt.p50", 3.0)]),
            rec(2, 1, &[("payload", json!(2))], &[("rtt.p50", 5.0)]),
        ];
        let mut failed = rec(2, 2, &[("payload", json!(2))], &[("rtt.p50", 1000.0)]);
        failed.status = Status::Failed;
        v.push(failed);
        let csv = pivot(&v, &PivotOptions::default());
        assert!(csv.contains("rtt.p50,s,2,5\n"), "{csv}");
        assert!(csv.contains("rtt.p50 [min],s,1,5\n"), "{csv}");
        assert!(csv.contains("rtt.p50 [max],s,3,5\n"), "{csv}");
    }

    #[test]
    fn quoting() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("plain"), "plain");
    }
}
