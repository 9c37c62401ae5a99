//! Every metric a case can record: the shared ones ([`wirebench_model::metric::SHARED`]),
//! the connect workload's, and each registered plugin's own. `--columns`, scenario
//! references and `wirebench merge` read this list; a test refuses a recorded metric
//! that nobody declares.

use std::sync::LazyLock;
use wirebench_model::MetricSpec;

static DECLARED: LazyLock<Vec<MetricSpec>> = LazyLock::new(|| {
    let mut all: Vec<MetricSpec> = wirebench_model::metric::SHARED.to_vec();
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

    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_str().unwrap_or("");
            if path.is_dir() {
                if !["tests", "target", "fuzz", "node_modules", "java"].contains(&name) {
                    sources(&path, out);
                }
            } else if name.ends_with(".rs") && !name.ends_with("tests.rs") {
                out.push(path);
            }
        }
    }

    /// Whether the literal ending just before `at` in `code` names the metric a
    /// declaration declares (`MetricSpec::new("rtt.first", ...)`, the model's `m(...)`), or
    /// a parameter of the same name (`name: "proxy.threads"`).
    fn is_declaration(code: &str, at: usize) -> bool {
        let before = code[..at].trim_end();
        [
            "MetricSpec::new(",
            "MetricSpec::dist(",
            " m(",
            "\tm(",
            "name:",
        ]
        .iter()
        .any(|d| before.ends_with(d))
    }

    /// The metric names written as string literals in `text` outside declarations,
    /// outside comments and tests: `known` holds every declared name (statistics
    /// included), and a recording call with a literal name (`out.push("a.b", ...)`) is
    /// one too, declared or not.
    fn literal_names(text: &str, known: &std::collections::BTreeSet<String>) -> Vec<String> {
        let text = text.split("#[cfg(test)]").next().unwrap_or(text);
        let code: String = text
            .lines()
            .map(|l| match l.trim_start().starts_with("//") {
                true => "",
                false => l,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mut out = Vec::new();
        let bytes = code.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                // A quote as a character ('"' or '\"') opens no string.
                b'\'' if bytes.get(i + 1) == Some(&b'"') => i += 3,
                b'\'' if bytes[i + 1..].starts_with(b"\\\"'") => i += 4,
                b'"' => {
                    let start = i + 1;
                    let mut end = start;
                    while end < bytes.len() && bytes[end] != b'"' {
                        end += if bytes[end] == b'\\' { 2 } else { 1 };
                    }
                    let lit = &code[start..end.min(code.len())];
                    let metric_like = lit.contains('.')
                        && lit.starts_with(|c: char| c.is_ascii_lowercase())
                        && lit.chars().all(|c| {
                            c.is_ascii_lowercase() || c.is_ascii_digit() || "._".contains(c)
                        });
                    let recorded = ["push(", "set_metric("]
                        .iter()
                        .any(|c| code[..i].trim_end().ends_with(c));
                    if metric_like && (known.contains(lit) || recorded) && !is_declaration(&code, i)
                    {
                        out.push(lit.to_string());
                    }
                    i = end + 1;
                }
                _ => i += 1,
            }
        }
        out
    }

    /// Every metric is written once, where it is declared: code records and reads it
    /// through its constant (`out.put(RTT_STABLE, v)`, `record.get(TTFB.at("p50"))`), so a
    /// renamed or mistyped metric fails to compile instead of reading nothing.
    #[test]
    fn no_metric_name_is_written_outside_its_declaration() {
        let known: std::collections::BTreeSet<String> = names().iter().cloned().collect();
        assert_eq!(
            literal_names(
                "out.push(\"a.b\", 1.0, \"s\"); v.push(\"127.0.0.1\"); l.split('\"');\n\
                 x.get(\"rtt.stable\");\n\
                 // \"rtt.first\" in a comment\n\
                 const A: MetricSpec = MetricSpec::new(\"rtt.first\", \"s\", \"\");",
                &known
            ),
            ["a.b", "rtt.stable"]
        );
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in ["foundation", "workloads", "protocols", "app"] {
            sources(&root.join(dir), &mut files);
        }
        // The scan must see the declarations, or it would pass on nothing.
        let declared: usize = files
            .iter()
            .map(|f| {
                let t = std::fs::read_to_string(f).unwrap();
                t.matches("MetricSpec::new(").count() + t.matches("MetricSpec::dist(").count()
            })
            .sum();
        assert!(declared > 60, "only {declared} declarations found");
        let mut found = Vec::new();
        for f in &files {
            for name in literal_names(&std::fs::read_to_string(f).unwrap(), &known) {
                found.push(format!("{name} ({})", f.display()));
            }
        }
        assert!(
            found.is_empty(),
            "metric names written outside their declarations (use the constant): {found:?}"
        );
    }
}
