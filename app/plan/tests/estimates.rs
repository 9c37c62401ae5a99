//! Every built-in scenario's cases against how long they took on a recorded run
//! (`tests/data/recorded/<scenario>.tsv`, written by `scripts/record-times.sh` from a
//! results directory): each case's estimate must be within 2x of its time, or within
//! [`FLOOR_S`] of it for the short ones, whose time is mostly scheduling noise.
//!
//! `cargo test -p wirebench-plan --test estimates -- --nocapture` prints the table.

use wirebench_plan::estimate::{estimate_cases, format_estimate};
use wirebench_plan::{Case, Scenario, case_links, params, plan};

/// Cases under a second or two may be off by this much in either direction: a
/// busy machine's scheduling moves them by tenths of a second, and a user does not plan
/// around them.
const FLOOR_S: f64 = 1.0;
/// How far an estimate may be from the recorded time, as a factor either way.
const FACTOR: f64 = 2.0;

struct Recorded {
    /// Where the times come from (the file's first line).
    source: String,
    cases: Vec<(Case, f64)>,
}

/// A scenario's recorded runs: `NAME.tsv` and any `NAME.*.tsv` beside it.
fn recorded(name: &str) -> Vec<Recorded> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/recorded");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|f| {
            f == &format!("{name}.tsv")
                || (f.starts_with(&format!("{name}.")) && f.ends_with(".tsv"))
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| parse(name, &std::fs::read_to_string(dir.join(f)).unwrap()).unwrap())
        .collect()
}

fn parse(name: &str, text: &str) -> Option<Recorded> {
    let mut lines = text.lines();
    let source = lines.next()?.trim_start_matches("# ").to_string();
    let columns: Vec<&str> = lines.next()?.split('\t').collect();
    let mut cases = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split('\t').collect();
        let index: usize = fields[0].parse().unwrap();
        let secs: f64 = fields[1].parse().unwrap();
        let point = columns[2..]
            .iter()
            .zip(&fields[2..])
            .filter(|(_, v)| **v != "-")
            .map(|(n, v)| {
                let spec = params::spec(n).unwrap_or_else(|| panic!("{name}: no parameter {n}"));
                (n.to_string(), spec.parse(v).unwrap())
            })
            .collect();
        cases.push((
            Case {
                index,
                point,
                ignored: Vec::new(),
                runs: 1,
            },
            secs,
        ));
    }
    Some(Recorded { source, cases })
}

/// A case's kind, for the table: protocol, workload and what sets its costs apart.
fn kind(c: &Case) -> String {
    let mut k = format!("{} {}", c.protocol(), c.workload());
    for p in ["xmpp.client", "xmpp.server", "s2s", "socks5.server", "mode"] {
        if let Some(v) = c.word(p) {
            k.push_str(&format!(" {v}"));
        }
    }
    if c.get("link.delay").is_some() || c.get("link.rate").is_some() || c.get("link").is_some() {
        k.push_str(" link");
    }
    k
}

#[test]
fn estimates_hold_within_2x_of_the_recorded_runs() {
    let mut bad = Vec::new();
    let mut rows = Vec::new();
    for (name, _) in wirebench_plan::BUILTIN {
        let scenario = Scenario::builtin(name).unwrap();
        let runs = recorded(name);
        if runs.is_empty() {
            bad.push(format!("{name}: no recorded run (scripts/record-times.sh)"));
        }
        for rec in runs {
            check_run(name, &scenario, &rec, &mut rows, &mut bad);
        }
    }
    println!("{}", rows.join("\n"));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Each case of one recorded run against its estimate: a row each, and what is off.
fn check_run(
    name: &str,
    scenario: &Scenario,
    rec: &Recorded,
    rows: &mut Vec<String>,
    bad: &mut Vec<String>,
) {
    {
        let planned = plan(scenario);
        let covered = planned
            .iter()
            .filter(|p| rec.cases.iter().any(|(c, _)| same_case(p, c)))
            .count();
        // The recorded cases in their order, as one plan: a protocol's first case pays
        // its once-per-run start-up.
        let cases: Vec<Case> = rec.cases.iter().map(|(c, _)| c.clone()).collect();
        let estimates = estimate_cases(&cases, &case_links(&cases).unwrap()).cases;
        let (mut est_total, mut took_total) = (0.0, 0.0);
        for ((case, took), e) in rec.cases.iter().zip(&estimates) {
            let est = e.secs;
            est_total += est;
            took_total += took;
            let ok =
                (est <= took * FACTOR && est >= took / FACTOR) || (est - took).abs() <= FLOOR_S;
            rows.push(format!(
                "{name:<18} {:>3} {:<44} {:>8} {:>8} {:>5.2}{}",
                case.index,
                kind(case),
                format_estimate(est),
                format_estimate(*took),
                est / took.max(1e-9),
                if ok { "" } else { "  <- off" }
            ));
            if !ok {
                bad.push(format!(
                    "{name} case {} ({}): estimated {est:.2} s, took {took:.2} s",
                    case.index,
                    kind(case)
                ));
            }
        }
        println!(
            "{name}: {covered} of {} planned cases recorded; estimated {} in all, took {} ({})",
            planned.len(),
            format_estimate(est_total),
            format_estimate(took_total),
            rec.source
        );
    }
}

/// The same parameters with the same values (labels may differ: 1KiB and 1024).
fn same_case(a: &Case, b: &Case) -> bool {
    a.point.len() == b.point.len() && a.point.iter().all(|(n, v)| b.get(n) == Some(&v.value))
}
