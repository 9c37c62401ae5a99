//! `wirebench compare A B`: the same cases in two results directories (matched by their
//! canonical parameters, so `1KiB` and `1024` are the same payload), every metric both
//! have as a ratio B/A, and the ones that moved by more than a threshold flagged — how a
//! user tracks regressions between versions, machines or links.

use crate::html::{ReportError, esc, head, read_records};
use crate::summary::human;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use std::fmt::Write as _;
use std::path::Path;
use wirebench_model::{Record, Status};

/// Metrics that describe the set-up rather than a result; left out of comparisons.
const SKIP: &[&str] = &["link.release_error", "link.emulator_cpu", "rtt.model"];

/// One metric of one matched case.
#[derive(Debug, Clone)]
pub struct Row {
    pub params: String,
    pub metric: String,
    pub unit: String,
    pub a: f64,
    pub b: f64,
    /// B / A (`None` when A is 0).
    pub ratio: Option<f64>,
    pub flagged: bool,
}

#[derive(Debug, Default)]
pub struct Comparison {
    pub rows: Vec<Row>,
    /// Cases only in A or only in B (their parameters).
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    pub threshold: f64,
}

impl Comparison {
    pub fn flagged(&self) -> usize {
        self.rows.iter().filter(|r| r.flagged).count()
    }
}

fn key(r: &Record) -> String {
    serde_json::to_string(&r.params).unwrap_or_default()
}

fn describe(r: &Record) -> String {
    r.labels
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str().map_or_else(|| v.to_string(), str::to_string)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Mean of each metric over a case's successful repeats.
fn means(rs: &[&Record]) -> Vec<(String, String, f64)> {
    let mut out: Vec<(String, String, f64, usize)> = Vec::new();
    for r in rs {
        for name in r.metrics.keys() {
            let Some(m) = r.metric(name) else { continue };
            if !m.value.is_finite() {
                continue;
            }
            match out.iter_mut().find(|e| e.0 == *name) {
                Some(e) => {
                    e.2 += m.value;
                    e.3 += 1;
                }
                None => out.push((name.clone(), m.unit, m.value, 1)),
            }
        }
    }
    out.into_iter()
        .map(|(n, u, sum, k)| (n, u, sum / k as f64))
        .collect()
}

fn group(records: &[Record]) -> Vec<(String, Vec<&Record>)> {
    let mut out: Vec<(String, Vec<&Record>)> = Vec::new();
    for r in records.iter().filter(|r| r.status == Status::Ok) {
        let k = key(r);
        match out.iter_mut().find(|(x, _)| *x == k) {
            Some((_, v)) => v.push(r),
            None => out.push((k, vec![r])),
        }
    }
    out
}

/// Compares two record sets; `threshold` is the relative change that gets flagged (0.05
/// = 5 %).
pub fn compare(a: &[Record], b: &[Record], threshold: f64) -> Comparison {
    let (ga, gb) = (group(a), group(b));
    let mut c = Comparison {
        threshold,
        ..Comparison::default()
    };
    for (k, ra) in &ga {
        let Some((_, rb)) = gb.iter().find(|(x, _)| x == k) else {
            c.only_a.push(describe(ra[0]));
            continue;
        };
        let mb = means(rb);
        for (metric, unit, va) in means(ra) {
            if SKIP.iter().any(|s| metric.starts_with(s)) {
                continue;
            }
            let Some((_, _, vb)) = mb.iter().find(|(n, _, _)| *n == metric) else {
                continue;
            };
            let ratio = (va != 0.0).then(|| vb / va);
            let flagged = match ratio {
                Some(r) => (r - 1.0).abs() > threshold,
                None => *vb != 0.0,
            };
            c.rows.push(Row {
                params: describe(ra[0]),
                metric,
                unit,
                a: va,
                b: *vb,
                ratio,
                flagged,
            });
        }
    }
    for (k, rb) in &gb {
        if !ga.iter().any(|(x, _)| x == k) {
            c.only_b.push(describe(rb[0]));
        }
    }
    c
}

pub fn load_and_compare(a: &Path, b: &Path, threshold: f64) -> Result<Comparison, ReportError> {
    Ok(compare(&read_records(a)?, &read_records(b)?, threshold))
}

/// The comparison as a terminal table; with `all = false` only flagged rows.
pub fn table(c: &Comparison, all: bool) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["case", "metric", "A", "B", "B/A", ""]);
    for r in c.rows.iter().filter(|r| all || r.flagged) {
        t.add_row(vec![
            Cell::new(&r.params),
            Cell::new(&r.metric),
            Cell::new(human(r.a, &r.unit)).set_alignment(CellAlignment::Right),
            Cell::new(human(r.b, &r.unit)).set_alignment(CellAlignment::Right),
            Cell::new(r.ratio.map_or("-".into(), |x| format!("{x:.3}")))
                .set_alignment(CellAlignment::Right),
            Cell::new(if r.flagged { "changed" } else { "" }),
        ]);
    }
    let mut s = t.to_string();
    s.push('\n');
    let _ = writeln!(
        s,
        "{} metric(s) compared over {} matched case(s); {} changed by more than {:.1}%",
        c.rows.len(),
        c.rows
            .iter()
            .map(|r| r.params.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        c.flagged(),
        c.threshold * 100.0
    );
    for p in &c.only_a {
        let _ = writeln!(s, "only in A: {p}");
    }
    for p in &c.only_b {
        let _ = writeln!(s, "only in B: {p}");
    }
    s
}

/// The comparison as a self-contained HTML page.
pub fn html(c: &Comparison, a: &Path, b: &Path) -> String {
    let mut s = head("wirebench · comparison");
    let _ = writeln!(
        s,
        "<body>\n<h1>wirebench · comparison</h1>\n<p class=\"lead\">A = <code>{}</code>, B = <code>{}</code>; \
         ratios B/A; changes beyond {:.1}% are marked.</p>",
        esc(&a.display().to_string()),
        esc(&b.display().to_string()),
        c.threshold * 100.0
    );
    s.push_str("<div class=\"scroll\"><table>\n<tr><th>case</th><th>metric</th><th>A</th><th>B</th><th>B/A</th><th></th></tr>\n");
    for r in &c.rows {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&r.params),
            esc(&r.metric),
            esc(&human(r.a, &r.unit)),
            esc(&human(r.b, &r.unit)),
            r.ratio.map_or("-".into(), |x| format!("{x:.3}")),
            if r.flagged {
                "<span class=\"bad\">changed</span>"
            } else {
                ""
            }
        );
    }
    s.push_str("</table></div>\n");
    for p in &c.only_a {
        let _ = writeln!(s, "<p>Only in A: <code>{}</code></p>", esc(p));
    }
    for p in &c.only_b {
        let _ = writeln!(s, "<p>Only in B: <code>{}</code></p>", esc(p));
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(case: usize, payload: u64, label: &str, p50: f64) -> Record {
        serde_json::from_value(serde_json::json!({
            "schema": 1, "scenario": "s", "case": case, "repeat": 1, "status": "ok",
            "params": {"payload": payload}, "labels": {"payload": label},
            "metrics": {"rtt.p50": {"value": p50, "unit": "s"},
                        "link.emulator_cpu": {"value": 0.5, "unit": "ratio"}},
            "seed": 1, "started": "", "wirebench": "0", "command": [],
            "host": {"hostname": "", "os": "", "kernel": "", "cpu": "", "cpus": 1, "memory_bytes": 0}
        }))
        .unwrap()
    }

    #[test]
    fn matches_by_canonical_parameters_and_flags_changes() {
        let a = vec![rec(1, 1024, "1KiB", 1.0e-3), rec(2, 64, "64", 50e-6)];
        let b = vec![
            rec(1, 1024, "1024", 1.2e-3),
            rec(2, 64, "64", 51e-6),
            rec(3, 9, "9", 1.0),
        ];
        let c = compare(&a, &b, 0.05);
        assert_eq!(c.rows.len(), 2, "{:?}", c.rows);
        let big = c.rows.iter().find(|r| r.params.contains("1KiB")).unwrap();
        assert!((big.ratio.unwrap() - 1.2).abs() < 1e-9);
        assert!(big.flagged);
        let small = c.rows.iter().find(|r| r.params.contains("64")).unwrap();
        assert!(!small.flagged);
        assert_eq!(c.only_b.len(), 1);
        assert!(c.only_a.is_empty());
        assert_eq!(c.flagged(), 1);
        let t = table(&c, false);
        assert!(t.contains("1 changed by more than 5.0%"), "{t}");
        assert!(html(&c, Path::new("a"), Path::new("b")).contains("changed"));
    }
}
