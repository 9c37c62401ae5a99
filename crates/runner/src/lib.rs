//! The scenario runner: expands a scenario's grid into cases, runs each case's workload
//! against a server (the embedded reference server unless told otherwise), and writes one
//! record per case to the results directory as soon as the case ends.

pub mod host;
pub mod scenario;

pub use scenario::{BUILTIN, Scenario, ScenarioError};

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use wirebench_model::{HostFacts, Point, Record, Status, results::SCHEMA};
use wirebench_net::{ControlClient, NetError, Server, ServerConfig, ServerHandle};
use wirebench_report::{PivotOptions, ResultsDir};
use wirebench_workload::params::applies;
use wirebench_workload::pingpong::{self, PingPong};
use wirebench_workload::stream::{self, Mode, Stream};
use wirebench_workload::{Ctx, Outcome, WorkloadError};

/// One point of the grid, with only the parameters its workload uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// 1-based, in grid order.
    pub index: usize,
    pub point: Point,
}

impl Case {
    pub fn get(&self, name: &str) -> Option<&wirebench_model::Value> {
        self.point
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| &v.value)
    }

    pub fn workload(&self) -> &str {
        self.get("workload")
            .and_then(|v| v.as_word())
            .unwrap_or("pingpong")
    }

    /// `workload=pingpong payload=64` for progress lines.
    pub fn describe(&self, only: &[&str]) -> String {
        self.point
            .iter()
            .filter(|(n, _)| only.contains(&n.as_str()))
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Expands the grid; parameters that do not apply to a case's workload are dropped, and
/// the duplicates that leaves (e.g. `rounds` varying under `stream`) are run once.
pub fn plan(scenario: &Scenario) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    for point in scenario.complete_grid().expand() {
        let workload = point
            .iter()
            .find(|(n, _)| n == "workload")
            .and_then(|(_, v)| v.value.as_word().map(str::to_string))
            .unwrap_or_default();
        let kept: Point = point
            .into_iter()
            .filter(|(n, _)| applies(n, &workload))
            .collect();
        if !cases.iter().any(|c| c.point == kept) {
            cases.push(Case {
                index: cases.len() + 1,
                point: kept,
            });
        }
    }
    cases
}

/// Where and how to run.
pub struct RunOptions {
    /// `host:port` of a running `wirebench serve`; `None` starts the embedded server.
    pub server: Option<String>,
    pub out: PathBuf,
    pub connect_timeout: Duration,
    pub command: Vec<String>,
}

/// Callbacks for a front end (progress bars, JSON lines).
pub trait Observer {
    fn run_started(&self, _cases: usize, _repeat: u32, _server: &str) {}
    fn case_started(&self, _case: &Case, _repeat: u32) {}
    /// Called from the measuring thread: must be cheap.
    fn progress(&self, _done: u64, _total: u64) {}
    fn case_finished(&self, _case: &Case, _record: &Record) {}
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Net(#[from] NetError),
    #[error("cannot start the embedded server: {0}")]
    EmbeddedServer(std::io::Error),
    #[error("cannot write results to {path}: {source}")]
    Results {
        path: String,
        source: std::io::Error,
    },
}

/// What a run did.
pub struct RunSummary {
    pub records: Vec<Record>,
    pub interrupted: bool,
}

impl RunSummary {
    /// True when every planned case ran and succeeded.
    pub fn all_ok(&self) -> bool {
        !self.interrupted && self.records.iter().all(|r| r.status == Status::Ok)
    }
}

pub fn run(
    scenario: &Scenario,
    opts: &RunOptions,
    shutdown: &AtomicBool,
    observer: &(dyn Observer + Sync),
) -> Result<RunSummary, RunError> {
    let cases = plan(scenario);
    // Keep the embedded server alive for the whole run; dropping it stops it.
    let (_embedded, addr): (Option<ServerHandle>, String) = match &opts.server {
        Some(a) => (None, a.clone()),
        None => {
            let h = Server::bind("127.0.0.1:0", ServerConfig::default())
                .and_then(|s| s.spawn())
                .map_err(RunError::EmbeddedServer)?;
            let a = h.addr().to_string();
            (Some(h), a)
        }
    };
    // Fail fast, before creating any file, if the server cannot be reached.
    let mut control = Some(ControlClient::connect(&addr, opts.connect_timeout)?);
    let results_err = |source| RunError::Results {
        path: opts.out.display().to_string(),
        source,
    };
    let pivot = PivotOptions {
        tables: scenario.tables.clone(),
        metrics: scenario.columns.clone(),
    };
    let mut dir = ResultsDir::create(&opts.out, pivot).map_err(results_err)?;
    let host = host::facts();
    observer.run_started(cases.len(), scenario.repeat, &addr);

    let mut interrupted = false;
    'cases: for case in &cases {
        for repeat in 1..=scenario.repeat {
            if shutdown.load(Ordering::SeqCst) {
                interrupted = true;
                break 'cases;
            }
            observer.case_started(case, repeat);
            let started = SystemTime::now();
            let t0 = Instant::now();
            let ctl = match control.take() {
                Some(c) => Ok(c),
                // A failed case may have left the control connection unusable.
                None => ControlClient::connect(&addr, opts.connect_timeout),
            };
            let result = ctl.map_err(WorkloadError::from).and_then(|mut c| {
                let progress = |d: u64, t: u64| observer.progress(d, t);
                let ctx = Ctx {
                    shutdown,
                    progress: &progress,
                    stall_timeout: scenario.stall_timeout,
                    connect_timeout: opts.connect_timeout,
                };
                let r = run_case(&mut c, case, scenario.seed, &ctx);
                if r.is_ok() {
                    control = Some(c);
                }
                r
            });
            let elapsed = t0.elapsed();
            let mut record = base_record(scenario, case, repeat, started, &opts.command, &host);
            record.set_metric(
                "case.duration",
                wirebench_model::Metric::new(elapsed.as_secs_f64(), "s"),
            );
            match result {
                Ok(outcome) => {
                    let stem = format!("case-{:04}-r{}", case.index, repeat);
                    attach(&dir, &mut record, &stem, outcome, started, elapsed)
                        .map_err(results_err)?;
                }
                Err(WorkloadError::Interrupted) => {
                    record.status = Status::Interrupted;
                    record.error = Some("interrupted before the case finished".into());
                    interrupted = true;
                }
                Err(e) => {
                    record.status = Status::Failed;
                    record.error = Some(e.to_string());
                }
            }
            dir.append(record.clone()).map_err(results_err)?;
            observer.case_finished(case, &record);
            if interrupted {
                break 'cases;
            }
        }
    }
    Ok(RunSummary {
        records: dir.records,
        interrupted,
    })
}

fn run_case(
    ctl: &mut ControlClient,
    case: &Case,
    seed: u64,
    ctx: &Ctx,
) -> Result<Outcome, WorkloadError> {
    let word = |n: &str| {
        case.get(n)
            .and_then(|v| v.as_word())
            .unwrap_or("")
            .to_string()
    };
    let payload = case.get("payload").and_then(|v| v.as_bytes()).unwrap_or(0);
    let payload = u32::try_from(payload)
        .map_err(|_| WorkloadError::Server(format!("payload of {payload} bytes is too large")))?;
    let nodelay = word("nodelay") != "off";
    match case.workload() {
        "stream" => stream::run(
            ctl,
            &Stream {
                protocol: word("protocol"),
                mode: if word("mode") == "echo" {
                    Mode::Echo
                } else {
                    Mode::OneWay
                },
                payload,
                count: case.get("count").and_then(|v| v.as_count()).unwrap_or(0),
                seed,
                nodelay,
            },
            ctx,
        ),
        _ => pingpong::run(
            ctl,
            &PingPong {
                protocol: word("protocol"),
                payload,
                rounds: case.get("rounds").and_then(|v| v.as_count()).unwrap_or(0),
                think: case
                    .get("think")
                    .and_then(|v| v.as_duration())
                    .unwrap_or_default(),
                seed,
                nodelay,
            },
            ctx,
        ),
    }
}

fn base_record(
    scenario: &Scenario,
    case: &Case,
    repeat: u32,
    started: SystemTime,
    command: &[String],
    host: &HostFacts,
) -> Record {
    let mut params = serde_json::Map::new();
    let mut labels = serde_json::Map::new();
    for (name, v) in &case.point {
        params.insert(name.clone(), v.value.to_json());
        labels.insert(name.clone(), v.label.clone().into());
    }
    Record {
        schema: SCHEMA,
        scenario: scenario.name.clone(),
        case: case.index,
        repeat,
        status: Status::Ok,
        error: None,
        params,
        labels,
        metrics: serde_json::Map::new(),
        histograms: serde_json::Map::new(),
        notes: Vec::new(),
        seed: scenario.seed,
        started: humantime::format_rfc3339_millis(started).to_string(),
        wirebench: env!("CARGO_PKG_VERSION").to_string(),
        command: command.to_vec(),
        host: host.clone(),
    }
}

/// Moves an outcome into its record, writing histogram and per-round files beside it.
fn attach(
    dir: &ResultsDir,
    record: &mut Record,
    stem: &str,
    outcome: Outcome,
    started: SystemTime,
    elapsed: Duration,
) -> std::io::Result<()> {
    for (name, m) in outcome.metrics {
        record.set_metric(&name, m);
    }
    for (family, h) in &outcome.histograms {
        let file = dir.write_histogram(stem, family, h, started, elapsed)?;
        record.histograms.insert(family.clone(), file.into());
    }
    if let Some(rounds) = &outcome.rounds {
        let file = dir.write_rounds(stem, "rtt", rounds)?;
        record.histograms.insert("rtt.rounds".into(), file.into());
    }
    record.notes = outcome.notes;
    Ok(())
}

/// A fresh output directory name: `wirebench-runs/20261121-110000-default`.
pub fn default_out_dir(scenario: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let compact: String = stamp
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let compact = compact.replace('T', "-");
    let base = PathBuf::from("wirebench-runs");
    let mut dir = base.join(format!("{compact}-{scenario}"));
    let mut n = 2;
    while dir.exists() {
        dir = base.join(format!("{compact}-{scenario}-{n}"));
        n += 1;
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_drops_irrelevant_parameters_and_duplicates() {
        let mut s = Scenario::empty("t");
        s.set_param("workload", "pingpong,stream").unwrap();
        s.set_param("rounds", "10,20").unwrap();
        s.set_param("payload", "1,2").unwrap();
        let cases = plan(&s);
        // pingpong: 2 rounds x 2 payloads; stream: rounds irrelevant -> 2 payloads.
        assert_eq!(cases.len(), 6);
        let stream: Vec<_> = cases.iter().filter(|c| c.workload() == "stream").collect();
        assert_eq!(stream.len(), 2);
        assert!(
            stream
                .iter()
                .all(|c| c.get("rounds").is_none() && c.get("count").is_some())
        );
        let idx: Vec<usize> = cases.iter().map(|c| c.index).collect();
        assert_eq!(idx, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn default_scenario_plan() {
        let s = Scenario::builtin("default").unwrap();
        let cases = plan(&s);
        assert_eq!(cases.len(), 6);
        assert_eq!(
            cases[0].describe(&["workload", "payload"]),
            "workload=pingpong payload=64"
        );
    }
}
