//! Every metric a case can record: the shared ones ([`wirebench_model::results::SHARED`]),
//! the connect workload's, and each registered plugin's own. `--columns`, scenario
//! references and `wirebench merge` read this list; a test refuses a recorded metric
//! that nobody declares.

use std::sync::LazyLock;
use wirebench_model::MetricSpec;

static DECLARED: LazyLock<Vec<MetricSpec>> = LazyLock::new(|| {
    let mut all: Vec<MetricSpec> = wirebench_model::results::SHARED.to_vec();
    all.extend_from_slice(wirebench_connect::metrics::METRICS);
    for p in crate::registry::REGISTRY {
        all.extend_from_slice(p.metrics());
    }
    all
});

static NAMES: LazyLock<Vec<String>> =
    LazyLock::new(|| DECLARED.iter().flat_map(MetricSpec::names).collect());

/// Every declaration, the shared first, then the plugins' in the registry's order.
pub fn declared() -> &'static [MetricSpec] {
    &DECLARED
}

/// Every metric name, in the order of [`declared`].
pub fn names() -> &'static [String] {
    &NAMES
}

/// The declaration of `metric`, if any.
pub fn spec(metric: &str) -> Option<&'static MetricSpec> {
    DECLARED.iter().find(|s| s.declares(metric))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_model::Record;

    #[test]
    fn every_name_is_declared_once() {
        let mut names = names().to_vec();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "a metric is declared twice");
        assert!(n > 150, "only {n} metrics declared");
        // The plugins' own are there, and those once recorded but not listed.
        for m in [
            "x2x.resent",
            "irc.login",
            "convert.onward_tfo",
            "load.presences",
            "shard.index",
            "ttfb.p85",
        ] {
            assert!(spec(m).is_some(), "{m}");
        }
    }

    /// Every results file (`*.jsonl`) under `dir`.
    fn jsonl_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                jsonl_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }

    /// The committed runs (docs/runs, the report's test data) record only declared
    /// metrics: a new metric must be declared by its plugin (or, shared, in the model)
    /// before `--columns` and `wirebench merge` can know it.
    #[test]
    fn every_recorded_metric_is_declared() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        jsonl_files(&root.join("docs/runs"), &mut files);
        jsonl_files(&root.join("foundation/report/testdata"), &mut files);
        assert!(files.len() >= 3, "only {} results files found", files.len());
        let mut missing = Vec::new();
        let mut seen = 0;
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let r: Record =
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                for name in r.metrics.keys() {
                    seen += 1;
                    if spec(name).is_none() && !missing.contains(name) {
                        missing.push(name.clone());
                    }
                }
            }
        }
        assert!(seen > 100, "only {seen} metrics in {} files", files.len());
        assert!(
            missing.is_empty(),
            "recorded but declared by nobody: {missing:?}"
        );
    }

    /// Metric names written as literals where a workload records them
    /// (`out.push("convert.onward_tfo", ...)`, `rec.set_metric("shards.count", ...)`,
    /// `push_distribution(out, "convert.leg", ...)` and its siblings, which add the
    /// statistics' suffixes), outside tests. Names built with `format!` are not seen; the
    /// recorded runs' names are checked above.
    fn recorded_literals(text: &str) -> Vec<String> {
        const STATS: &[&str] = &["mean", "min", "p50", "p90", "p99", "max"];
        let text = text.split("#[cfg(test)]").next().unwrap_or(text);
        let mut out = Vec::new();
        for (call, suffixes) in [
            ("push(", &[][..]),
            ("set_metric(", &[]),
            ("per_conn(", &[]),
            ("push_distribution(", STATS),
            ("push_ratios(", STATS),
        ] {
            for (at, _) in text.match_indices(call) {
                // Arguments up to the call's end: metric names hold no parentheses.
                let args = &text[at + call.len()..];
                if args.trim_start().starts_with('(') {
                    continue; // a tuple: a histogram's name, not a metric
                }
                let args = &args[..args.find(')').unwrap_or(args.len())];
                let Some(name) = args.split('"').skip(1).step_by(2).find(|n| {
                    n.starts_with(|c: char| c.is_ascii_lowercase())
                        && n.contains('.')
                        && n.chars().all(|c| {
                            c.is_ascii_lowercase() || c.is_ascii_digit() || "._".contains(c)
                        })
                }) else {
                    continue;
                };
                if suffixes.is_empty() {
                    out.push(name.to_string());
                }
                out.extend(suffixes.iter().map(|s| format!("{name}.{s}")));
            }
        }
        out
    }

    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if !["tests", "target", "fuzz", "node_modules", "java"]
                    .contains(&name.to_str().unwrap_or(""))
                {
                    sources(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The names the code records as literals are declared too (a metric no committed run
    /// has yet is caught here).
    #[test]
    fn every_metric_the_code_records_is_declared() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in [
            "foundation",
            "workloads",
            "protocols",
            "app/runner/src",
            "app/plan/src",
        ] {
            sources(&root.join(dir), &mut files);
        }
        let mut missing = Vec::new();
        let mut seen = 0;
        for f in &files {
            for name in recorded_literals(&std::fs::read_to_string(f).unwrap()) {
                seen += 1;
                if spec(&name).is_none() {
                    missing.push(format!("{name} ({})", f.display()));
                }
            }
        }
        // The scan itself must find the workloads' calls, or it would pass on nothing.
        assert!(
            seen > 50,
            "only {seen} metric names found under {}",
            root.display()
        );
        assert!(
            missing.is_empty(),
            "recorded but declared by nobody: {missing:?}"
        );
        assert_eq!(
            recorded_literals(
                "out.push(\n    \"a.b\", 1.0, \"s\"); v.push(\"127.0.0.1\"); \
                 push_ratios(o, \"c.d\", v, \"round trips\")"
            ),
            [
                "a.b", "c.d.mean", "c.d.min", "c.d.p50", "c.d.p90", "c.d.p99", "c.d.max"
            ]
        );
    }
}
