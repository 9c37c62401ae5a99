//! What the user sees: progress while a run goes, the preflight and the summary around
//! it, and each command's result lines. Nothing here decides anything.

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use wirebench_lab::netns::Owner;
use wirebench_lab::pcap::PcapOptions;
use wirebench_lab::shell::ShellOutcome;
use wirebench_link::LinkSpec;
use wirebench_model::metric::RTT;
use wirebench_model::metric::RTT_STABLE;
use wirebench_model::metric::THROUGHPUT_BITS_PER_S;
use wirebench_model::metric::connect::TTFB;
use wirebench_model::{Record, Status};
use wirebench_report::summary::human;
use wirebench_runner::catalog::{ProtocolInfo, ScenarioInfo};
use wirebench_runner::estimate::{format_estimate, format_size};
use wirebench_runner::preflight::Prerequisites;
use wirebench_runner::prereq::Need;
use wirebench_runner::{Case, Observer, Preflight, RunSummary, Scenario};

/// The case count and estimated time, a warning for each case estimated above
/// `--max-case-time` (with the flags that shorten it), and the capture's estimated size.
pub fn preflight(p: &Preflight) {
    let runs = match p.repeat {
        Some(r) => format!(" x {r}"),
        // "58 cases, 86 runs": a part repeats its cases (`repeat` in its [[part]]).
        None => format!(", {} runs", p.runs),
    };
    eprintln!(
        "wirebench: {} case{}{runs}, estimated {}",
        p.cases,
        if p.cases == 1 { "" } else { "s" },
        format_estimate(p.total_secs)
    );
    for note in &p.notes {
        eprintln!("wirebench: note: {note}");
    }
    for case in &p.long {
        eprintln!(
            "wirebench: warning: case {} ({}) is estimated at {}{}{}",
            case.index,
            case.words,
            format_estimate(case.secs),
            if p.repeat != Some(1) { " per run" } else { "" },
            if case.advice.is_empty() {
                String::new()
            } else {
                format!("; {}", case.advice)
            }
        );
    }
    if let Some(c) = &p.capture {
        eprintln!(
            "wirebench: capture {}, estimated {} (limit {})",
            c.path.display(),
            format_size(c.bytes),
            format_size(c.limit)
        );
    }
    missing(&p.prerequisites);
}

/// What the planned cases need and this machine lacks: one row each, with how it is
/// installed and which cases need it and why, then the one command that installs all of
/// it. Nothing when nothing is missing.
fn missing(p: &Prerequisites) {
    let missing = p.missing();
    if missing.is_empty() {
        return;
    }
    let mut rows = vec![vec![
        "missing".to_string(),
        "install".into(),
        "cases".into(),
        "which, and why".into(),
    ]];
    for n in &missing {
        rows.push(vec![
            n.req.name.to_string(),
            n.req.install.to_string(),
            n.cases.len().to_string(),
            format!("{} ({})", n.case_list(false), n.why()),
        ]);
    }
    eprintln!(
        "wirebench: {} of {} case{} need{} what this machine lacks:",
        p.blocked_cases().len(),
        p.cases,
        if p.cases == 1 { "" } else { "s" },
        if p.blocked_cases().len() == 1 {
            "s"
        } else {
            ""
        },
    );
    eprint!("{}", table(&rows, "  "));
    eprintln!("wirebench: not found:");
    for n in &missing {
        if let Err(looked) = &n.found {
            eprintln!("  {}: {looked}", n.req.name);
        }
    }
    if p.installable() {
        eprintln!("wirebench: install all of it with: {}", p.install);
    }
}

/// Rows as columns padded to their widest cell (the last column is not padded), each
/// line after `indent`.
fn table(rows: &[Vec<String>], indent: &str) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = indent.to_string();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// After a run with `--skip-missing`: how many cases were skipped, and what runs them.
pub fn skipped(summary: &RunSummary, p: &Prerequisites) {
    let n = summary
        .records
        .iter()
        .filter(|r| r.status == Status::Skipped)
        .count();
    if n == 0 {
        return;
    }
    let names: Vec<&str> = p.missing().iter().map(|m| m.req.name).collect();
    eprintln!(
        "wirebench: {n} case run{} skipped for want of {}{}",
        if n == 1 { "" } else { "s" },
        names.join(", "),
        if p.installable() {
            format!("; to run them, install with: {}", p.install)
        } else {
            String::new()
        }
    );
}

/// `wirebench doctor`: every prerequisite of the cases in `scope`, present or not, then
/// where the missing ones were looked for and the command that installs them.
pub fn doctor(needs: &[Need], scope: &str, named: bool, install: &str) {
    if needs.is_empty() {
        println!("{scope}: needs nothing beyond wirebench");
        return;
    }
    let mut rows = vec![vec![
        "prerequisite".to_string(),
        "status".into(),
        "version".into(),
        "install".into(),
        "needed by".into(),
    ]];
    for n in needs {
        rows.push(vec![
            n.req.name.to_string(),
            if n.present() { "ok" } else { "MISSING" }.into(),
            n.version().unwrap_or_else(|| "-".into()),
            n.req.install.to_string(),
            format!(
                "{} case{} {} ({})",
                n.cases.len(),
                if n.cases.len() == 1 { "" } else { "s" },
                n.case_list(named),
                n.why()
            ),
        ]);
    }
    println!("{scope}:");
    print!("{}", table(&rows, "  "));
    let missing: Vec<&Need> = needs.iter().filter(|n| !n.present()).collect();
    if !missing.is_empty() {
        println!("not found:");
    }
    for n in &missing {
        if let Err(looked) = &n.found {
            println!("  {}: {looked}", n.req.name);
        }
    }
    if missing.is_empty() {
        println!("everything is present");
    } else if wirebench_runner::prereq::install_plan(needs)
        .iter()
        .any(|s| !matches!(s, wirebench_runner::prereq::Step::Manual(_)))
    {
        println!("install what is missing with: {install}");
    }
}

/// After a run: the summary tables (unless JSON lines went to stdout) and each failed
/// case with its error.
pub fn run_summary(summary: &RunSummary, json: bool, study: &[String]) {
    if !json {
        let width = wirebench_report::summary::terminal_width();
        let words = wirebench_runner::report_declared().session_words_of(&summary.records);
        println!(
            "{}",
            wirebench_report::summary::summary_table_with(&summary.records, width, study, words)
        );
        print!(
            "{}",
            wirebench_report::summary::comparisons(&summary.records, study, width)
        );
    }
    for r in summary
        .records
        .iter()
        .filter(|r| r.status == Status::Failed)
    {
        eprintln!(
            "wirebench: case {} failed: {}",
            r.case,
            r.error.as_deref().unwrap_or("?")
        );
    }
}

/// What `wirebench merge` made: the summary table of the merged cases, then how the shards
/// started each.
pub fn merged(m: &wirebench_runner::merge::Merged) {
    let width = wirebench_report::summary::terminal_width();
    let words = wirebench_runner::report_declared().session_words_of(&m.records);
    println!(
        "{}",
        wirebench_report::summary::summary_table_with(&m.records, width, &[], words)
    );
    eprintln!("merged {} shards", m.shards);
    for s in &m.starts {
        eprintln!("  {s}");
    }
    for r in m.records.iter().filter(|r| r.status != Status::Ok) {
        eprintln!(
            "wirebench: case {}: {}",
            r.case,
            r.error.as_deref().unwrap_or("?")
        );
    }
}

/// Progress bars on a terminal, one line per finished case otherwise.
/// The metrics `scenario`'s study is read by (its lead figures', then its `[output]
/// columns`): first in the summary table and on each case's line.
pub fn study_metrics(scenario: &Scenario) -> Vec<String> {
    let lead: Vec<String> = scenario
        .charts
        .iter()
        .filter(|c| c.lead && !c.metric.is_empty())
        .map(|c| c.metric.clone())
        .collect();
    wirebench_report::summary::study_metrics(&lead, scenario.columns.as_deref())
}

pub struct Terminal {
    study: Vec<String>,
    bar: Mutex<Option<ProgressBar>>,
    show_bars: bool,
    json: bool,
    total: AtomicUsize,
    varying: Vec<String>,
}

impl Terminal {
    pub fn new(scenario: &Scenario, show_bars: bool, json: bool) -> Terminal {
        let mut varying = wirebench_runner::varying(&wirebench_runner::plan(scenario));
        if !varying.iter().any(|v| v == "workload") {
            varying.insert(0, "workload".into());
        }
        Terminal {
            study: study_metrics(scenario),
            bar: Mutex::new(None),
            show_bars,
            json,
            total: AtomicUsize::new(0),
            varying,
        }
    }

    fn title(&self, case: &Case, repeat: u32) -> String {
        let only: Vec<&str> = self.varying.iter().map(String::as_str).collect();
        let rep = if case.runs > 1 {
            format!(" (run {repeat}/{})", case.runs)
        } else {
            String::new()
        };
        format!(
            "[{}/{}] {}{rep}",
            case.index,
            self.total.load(Ordering::Relaxed),
            case.describe(&only)
        )
    }
}

impl Observer for Terminal {
    fn run_started(&self, cases: usize, against: &str) {
        self.total.store(cases, Ordering::Relaxed);
        // The case count and estimate are already on the line above.
        eprintln!("wirebench: running against {against}");
    }

    fn case_started(&self, case: &Case, repeat: u32) {
        if !self.show_bars {
            return;
        }
        let bar = ProgressBar::new(1);
        bar.set_style(
            ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(self.title(case, repeat));
        *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar);
    }

    fn progress(&self, done: u64, total: u64) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            bar.set_length(total);
            bar.set_position(done);
        }
    }

    fn case_finished(&self, case: &Case, record: &Record) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            bar.finish_and_clear();
        }
        // The study's own metric when the case has it (S2's 100-ping total, not a round
        // trip), else the first of the usual ones it has.
        let study = self.study.iter().find_map(|m| Some((m, record.metric(m)?)));
        let headline = match (
            record.get(RTT_STABLE).or(record.get(RTT.at("p50"))),
            record.get(THROUGHPUT_BITS_PER_S),
            record.get(TTFB.at("p50")),
        ) {
            (_, Some(t), _) => human(t.value, &t.unit),
            (Some(r), None, _) => format!("RTT {}", human(r.value, &r.unit)),
            (None, None, Some(t)) => format!("TTFB p50 {}", human(t.value, &t.unit)),
            _ => String::new(),
        };
        let headline = match study {
            Some((m, v)) => format!("{m} {}", human(v.value, &v.unit)),
            None => headline,
        };
        let status = match record.status {
            Status::Ok => "ok".to_string(),
            Status::Failed => format!("FAILED: {}", record.error.as_deref().unwrap_or("")),
            Status::Interrupted => "interrupted".to_string(),
            Status::Skipped => format!("skipped: {}", record.error.as_deref().unwrap_or("")),
        };
        eprintln!("{}  {status}  {headline}", self.title(case, record.repeat));
        if self.json {
            if let Ok(line) = serde_json::to_string(record) {
                println!("{line}");
            }
        }
    }
}

/// `wirebench shell`: the command has started in the host.
pub fn shell_started(
    program: &str,
    host: &str,
    addrs: wirebench_lab::ShellAddrs,
    up: &LinkSpec,
    down: &LinkSpec,
) {
    eprintln!(
        "wirebench shell: {program} in {host} ({}); this machine is {} (also in $WIREBENCH_HOST_ADDR, $WIREBENCH_ROOT_ADDR); uplink {up}, downlink {down}",
        addrs.host, addrs.root
    );
}

/// `wirebench shell`: what crossed the link, and what the capture holds.
pub fn shell_finished(outcome: &ShellOutcome, pcap: Option<&PcapOptions>) {
    let c = &outcome.counters;
    eprintln!(
        "wirebench shell: uplink {} packets / {} B (dropped {}), downlink {} packets / {} B (dropped {})",
        c.up.delivered_packets,
        c.up.delivered_bytes,
        c.up.dropped(),
        c.down.delivered_packets,
        c.down.delivered_bytes,
        c.down.dropped()
    );
    if let (Some(p), Some(st)) = (pcap, &outcome.pcap) {
        let why = st
            .stopped
            .as_ref()
            .map(|w| format!("; stopped early: {w}"))
            .unwrap_or_default();
        eprintln!(
            "wirebench shell: capture {} ({} packets, {}){why}",
            p.path.display(),
            st.packets,
            format_size(st.bytes)
        );
    }
}

/// `wirebench lab list`.
pub fn lab_list(found: &[(String, Owner)]) {
    if found.is_empty() {
        eprintln!("no lab namespaces");
    }
    for (name, owner) in found {
        let state = match owner {
            Owner::Alive(p) => format!("run {p} alive"),
            Owner::Gone(p) => format!("run {p} gone"),
            Owner::Unknown => "unknown owner".into(),
        };
        println!("{name}  ({state})");
    }
}

/// `wirebench lab clean`.
pub fn lab_cleaned(deleted: &[String]) {
    if deleted.is_empty() {
        eprintln!("nothing to clean");
    }
    for n in deleted {
        println!("deleted {n}");
    }
}

/// `wirebench protocols`: the registry, as a user needs it to write `--protocol`.
pub fn protocols(protocols: &[ProtocolInfo]) {
    for p in protocols {
        println!("{}  {}", p.name, p.summary);
        for (w, params) in &p.workloads {
            println!("    {w:<9} {}", params.join(", "));
        }
        println!();
    }
    println!(
        "Link parameters (link, link.rate, ...) apply to every protocol; `wirebench run --help` \
         explains each parameter."
    );
}

/// `wirebench scenarios`: each built-in scenario with its case count and estimated time.
/// `wirebench links`: each named link, its two directions and its source. Written at
/// once and a closed pipe ignored (`wirebench links | head`).
pub fn links(links: &[wirebench_link::NamedLink]) {
    use std::fmt::Write as _;
    use std::io::Write as _;
    let w = links.iter().map(|l| l.name.len()).max().unwrap_or(0).max(4);
    let mut out = String::new();
    for l in links {
        let _ = writeln!(out, "{:<w$}  {}", l.name, l.summary);
        if l.up == l.down {
            let _ = writeln!(out, "{:<w$}  both ways: {}", "", l.up);
        } else {
            let _ = writeln!(out, "{:<w$}  uplink:    {}", "", l.up);
            let _ = writeln!(out, "{:<w$}  downlink:  {}", "", l.down);
        }
        let _ = writeln!(out, "{:<w$}  source:    {}", "", l.source);
    }
    out.push_str(
        "\nUse a name as --link NAME (or NAME,field=value to change a field); --uplink and \
         --downlink take a name's own direction. The specs' grammar: docs/links.md.\n",
    );
    let _ = std::io::stdout().write_all(out.as_bytes());
}

pub fn scenarios(scenarios: &[ScenarioInfo]) {
    let w = scenarios
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let rows: Vec<(&str, String, String, &str)> = scenarios
        .iter()
        .map(|s| {
            let (cases, time) = match s.estimate {
                Some(e) => (
                    match e.repeat {
                        Some(1) => e.cases.to_string(),
                        Some(r) => format!("{} x {r}", e.cases),
                        None => format!("{} ({} runs)", e.cases, e.runs),
                    },
                    format!("~{}", format_estimate(e.secs)),
                ),
                None => ("?".into(), "?".into()),
            };
            (s.name, cases, time, s.description.as_str())
        })
        .collect();
    let c = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(5);
    println!(
        "{:<w$} {:>c$}  {:>8}  description",
        "scenario", "cases", "time"
    );
    for (name, cases, time, description) in rows {
        println!("{name:<w$} {cases:>c$}  {time:>8}  {description}");
    }
    println!(
        "\nTimes are estimates: the link model and per-case costs calibrated on recorded runs \
         (docs/scenarios.md, \"Estimates\")."
    );
}
