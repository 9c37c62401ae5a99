//! A case's repeats read together, for the terminal summary and the HTML report alike:
//! the published-figure rows (one per case and metric; ours is the mean of its runs,
//! shown with their range, and so is the ratio to the published figure), and a warning
//! for a run that stands far from the case's others.
//!
//! The warning exists because one busy moment can make a headline: a browser's 100 XMPP
//! pings took 1.38 s in one run where the others took 0.16-0.24 s, and a mean or a lone
//! run would have reported it as the figure. Where a scenario repeats a part for this
//! (`repeat` in its `[[part]]`), the reader sees the range and which run to distrust.

use crate::numbers::{human, sig3};
use std::collections::BTreeMap;
use wirebench_model::{Record, Status};

/// A run this many times above or below the median of the case's other runs (or, of
/// two runs, one this many times the other) stands far from them. Twice is well beyond
/// the spread of repeats on a quiet machine (loopback round trips aside, the studies'
/// figures move by tens of percent between runs) and below what a busy moment does.
pub const FAR: f64 = 2.0;

/// One published figure beside ours, over all the runs of its case.
#[derive(Debug, Clone, PartialEq)]
pub struct Published<'a> {
    pub case: usize,
    /// The case's first record (its parameters and labels).
    pub first: &'a Record,
    pub metric: String,
    pub unit: String,
    /// Ours, one value per run, in run order.
    pub runs: Vec<f64>,
    pub published: f64,
    pub source: String,
}

impl Published<'_> {
    pub fn mean(&self) -> f64 {
        self.runs.iter().sum::<f64>() / self.runs.len() as f64
    }

    fn range(&self) -> (f64, f64) {
        let min = self.runs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (min, max)
    }

    /// `201ms`, or `201ms (160ms-240ms, 3 runs)` over repeats.
    pub fn ours(&self) -> String {
        match self.ours_range() {
            Some(range) => format!(
                "{} ({range}, {} runs)",
                human(self.mean(), &self.unit),
                self.runs.len()
            ),
            None => human(self.mean(), &self.unit),
        }
    }

    /// `160ms-240ms` over repeats; `None` for one run.
    pub fn ours_range(&self) -> Option<String> {
        let (lo, hi) = self.range();
        (self.runs.len() > 1)
            .then(|| format!("{}-{}", human(lo, &self.unit), human(hi, &self.unit)))
    }

    /// Ours over published: `1.92`, or `1.92 (1.53-2.3)` over repeats.
    pub fn ratio(&self) -> String {
        if self.published == 0.0 {
            return "-".into();
        }
        let ratio = sig3(self.mean() / self.published);
        if self.runs.len() < 2 {
            return ratio;
        }
        let (lo, hi) = self.range();
        format!(
            "{ratio} ({}-{})",
            sig3(lo / self.published),
            sig3(hi / self.published)
        )
    }
}

/// Every successful case with a published figure, once per case and metric, in case
/// order.
pub fn published(records: &[Record]) -> Vec<Published<'_>> {
    let mut out = Vec::new();
    for (case, reps) in by_case(records) {
        let first = reps[0];
        for (metric, reference) in &first.references {
            let (Some(published), Some(m)) = (reference["value"].as_f64(), first.metric(metric))
            else {
                continue;
            };
            out.push(Published {
                case,
                first,
                metric: metric.clone(),
                unit: m.unit,
                runs: reps
                    .iter()
                    .filter_map(|r| r.metric(metric))
                    .map(|m| m.value)
                    .collect(),
                published,
                source: reference["source"]
                    .as_str()
                    .unwrap_or("published")
                    .to_string(),
            });
        }
    }
    out
}

/// The successful records of each case, in case and then run order.
fn by_case(records: &[Record]) -> BTreeMap<usize, Vec<&Record>> {
    let mut cases: BTreeMap<usize, Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.status == Status::Ok) {
        cases.entry(r.case).or_default().push(r);
    }
    for reps in cases.values_mut() {
        reps.sort_by_key(|r| r.repeat);
    }
    cases
}

/// One sentence for each case whose runs of `metrics` (or of a metric with a published
/// figure) stand far apart: of two, one [`FAR`] times the other; of more, one [`FAR`]
/// times above or below their median. The case is named by
/// `describe`. A case run once has nothing to compare and gets none.
pub fn far_runs(
    records: &[Record],
    metrics: &[String],
    describe: impl Fn(&Record) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    for (case, reps) in by_case(records) {
        if reps.len() < 2 {
            continue;
        }
        let mut names: Vec<&str> = metrics.iter().map(String::as_str).collect();
        for m in reps[0].references.keys() {
            if !names.contains(&m.as_str()) {
                names.push(m);
            }
        }
        for name in names {
            let runs: Vec<(u32, f64, String)> = reps
                .iter()
                .filter_map(|r| r.metric(name).map(|m| (r.repeat, m.value, m.unit)))
                .filter(|(_, v, _)| *v > 0.0 && v.is_finite())
                .collect();
            let what = format!("case {case} ({})", describe(reps[0]));
            if let Some(s) = far_sentence(&what, name, &runs) {
                out.push(s);
            }
        }
    }
    out
}

fn far_sentence(what: &str, metric: &str, runs: &[(u32, f64, String)]) -> Option<String> {
    let unit = &runs.first()?.2;
    let h = |v: f64| human(v, unit);
    if runs.len() == 2 {
        let (a, b) = (runs[0].1, runs[1].1);
        let ratio = a.max(b) / a.min(b);
        return (ratio > FAR).then(|| {
            format!(
                "{what}: its two runs of {metric} differ {}-fold ({} and {}); a third \
                 (--repeat 3) would show which is typical",
                sig3(ratio),
                h(a),
                h(b)
            )
        });
    }
    // Against the median of all the runs: of three, one far run cannot move it.
    let mut all: Vec<f64> = runs.iter().map(|r| r.1).collect();
    all.sort_by(f64::total_cmp);
    let median = median(&all);
    let far: Vec<String> = runs
        .iter()
        .filter(|(_, v, _)| *v > FAR * median || *v * FAR < median)
        .map(|(repeat, v, _)| {
            format!(
                "run {repeat} gave {}, {}x the median of its {} runs ({})",
                h(*v),
                sig3(v / median),
                runs.len(),
                h(median)
            )
        })
        .collect();
    if far.is_empty() {
        return None;
    }
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    Some(format!(
        "{what}: {metric}: {}; the runs span {}-{} and their mean {} leans on the far one",
        far.join("; "),
        h(all[0]),
        h(all[all.len() - 1]),
        h(mean)
    ))
}

/// Of sorted, non-empty `v`.
fn median(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(case: usize, repeat: u32, total: f64) -> Record {
        serde_json::from_value(serde_json::json!({
            "schema": 1, "scenario": "s", "case": case, "repeat": repeat, "status": "ok",
            "params": {"xmpp.transport": "websocket"},
            "labels": {"xmpp.transport": "websocket"},
            "metrics": {"s2.total": {"value": total, "unit": "s"}},
            "references": {"s2.total": {"value": 0.101, "source": "S2"}},
            "seed": 1, "started": "", "wirebench": "0", "command": [],
            "host": {"hostname": "", "os": "", "kernel": "", "cpu": "", "cpus": 1, "memory_bytes": 0}
        }))
        .unwrap()
    }

    fn words(_: &Record) -> String {
        "xmpp.transport=websocket".into()
    }

    #[test]
    fn published_rows_carry_the_range_of_their_runs() {
        let rs = [record(1, 1, 0.16), record(1, 2, 0.24), record(1, 3, 0.2)];
        let p = published(&rs);
        assert_eq!(p.len(), 1, "one row per case and metric");
        assert_eq!(p[0].ours(), "200ms (160ms-240ms, 3 runs)");
        assert_eq!(p[0].ratio(), "1.98 (1.58-2.38)");
        let one = [record(2, 1, 0.2)];
        assert_eq!(published(&one)[0].ours(), "200ms");
        assert_eq!(published(&one)[0].ratio(), "1.98");
    }

    #[test]
    fn a_run_far_from_the_others_is_named_and_a_close_one_is_not() {
        let rs = [record(1, 1, 0.16), record(1, 2, 1.38), record(1, 3, 0.24)];
        let w = far_runs(&rs, &[], words);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("case 1 (xmpp.transport=websocket): s2.total: run 2 gave 1.38s"),
            "{}",
            w[0]
        );
        assert!(
            w[0].contains("5.75x the median of its 3 runs (240ms); the runs span 160ms-1.38s"),
            "{}",
            w[0]
        );
        // Within twice the median of the others: noise, no word.
        let calm = [record(1, 1, 0.16), record(1, 2, 0.3), record(1, 3, 0.24)];
        assert!(far_runs(&calm, &[], words).is_empty());
        // One run: nothing to compare.
        assert!(far_runs(&[record(1, 1, 9.0)], &[], words).is_empty());
    }

    #[test]
    fn two_runs_that_differ_ask_for_a_third() {
        let rs = [record(3, 1, 0.2), record(3, 2, 0.5)];
        let w = far_runs(&rs, &[], words);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("differ 2.5-fold (200ms and 500ms)"),
            "{}",
            w[0]
        );
    }

    #[test]
    fn a_fast_outlier_is_far_too() {
        let rs = [
            record(1, 1, 1.0),
            record(1, 2, 1.1),
            record(1, 3, 0.3),
            record(1, 4, 0.9),
        ];
        let w = far_runs(&rs, &[], words);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("run 3 gave 300ms"), "{}", w[0]);
    }
}
