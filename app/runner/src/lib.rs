//! The scenario runner: runs what `wirebench-plan` plans. From a command line's request
//! (request.rs) through the preflight (estimates against limits, what the cases need on
//! this machine: preflight.rs, prereq.rs) to the lab and each case's link, the case loop
//! (each case's workload against its server), and the results directory, with one record
//! per case written as soon as the case ends; the report and `wirebench merge` glue.

mod cc;
pub mod host;
pub mod link;
pub mod preflight;
pub mod prereq;
pub mod request;

pub use preflight::Preflight;
pub use request::{Prepared, RunRequest, prepare};
/// What a run is made of (the wirebench-plan crate), re-exported so a front end needs
/// this crate alone: the registry, the parameter and metric tables, scenarios, the plan
/// of cases, the estimates and the `wirebench protocols`/`scenarios` listings.
pub use wirebench_plan::{
    BUILTIN, Case, CaseLink, PlanError, Scenario, ScenarioError, case_links, catalog, check_given,
    check_workloads, estimate, metrics, params, plan, registry, scenario, varying,
};
/// Sharded runs: their aligned starts and `shard.json` (the wirebench-shard crate).
pub use wirebench_shard as shard;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use wirebench_lab::Lab;
use wirebench_lab::pcap::PcapOptions;
use wirebench_model::metric::CASE_DURATION;
use wirebench_model::metric::LINK_DROPPED_TUN;
use wirebench_model::metric::LINK_EMULATOR_CPU;
use wirebench_model::metric::LINK2_BYTES;
use wirebench_model::metric::LINK2_PACKETS;
use wirebench_model::metric::ROUNDS_HISTOGRAM;
use wirebench_model::{HostFacts, Record, Status, results::SCHEMA};
use wirebench_protocol::{Ctx, Env, Outcome, WorkloadError};
use wirebench_report::{PivotOptions, ResultsDir};

/// Where and how to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `host:port` of a running `wirebench serve`; `None` starts the embedded server.
    pub server: Option<String>,
    pub out: PathBuf,
    pub connect_timeout: Duration,
    pub command: Vec<String>,
    /// Capture what crosses the emulated link. A relative path is taken from the current
    /// directory when the run starts.
    pub pcap: Option<PcapOptions>,
    /// This run is one shard of several (`--shard I/N`).
    pub shard: Option<shard::ShardOptions>,
    /// Record the cases whose prerequisites are missing as skipped and run the others
    /// (`--skip-missing`); without it such a case runs and fails.
    pub skip_missing: bool,
}

/// Callbacks for a front end (progress bars, JSON lines).
pub trait Observer {
    /// `against`: who the cases talk to, in words.
    fn run_started(&self, _cases: usize, _against: &str) {}
    fn case_started(&self, _case: &Case, _repeat: u32) {}
    /// Called from the measuring thread: must be cheap.
    fn progress(&self, _done: u64, _total: u64) {}
    fn case_finished(&self, _case: &Case, _record: &Record) {}
    /// Something the user must know now (a capture that stopped, ...).
    fn warning(&self, message: &str) {
        eprintln!("wirebench: warning: {message}");
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A protocol's run-long service could not start.
    #[error(transparent)]
    Service(wirebench_protocol::WorkloadError),
    #[error(transparent)]
    Lab(#[from] wirebench_lab::LabError),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("cannot write results to {path}: {error}")]
    Results { path: String, error: std::io::Error },
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Report(#[from] wirebench_report::ReportError),
    #[error("cannot write run.json into {dir}: {error}")]
    RunInfo { dir: String, error: std::io::Error },
    #[error(transparent)]
    Shard(#[from] wirebench_shard::ShardError),
}

/// What a run did.
pub struct RunSummary {
    pub records: Vec<Record>,
    pub interrupted: bool,
}

impl RunSummary {
    /// True when every planned case ran and succeeded, but those skipped as asked
    /// (`--skip-missing`: the user chose to run without them, and the summary lists them).
    pub fn all_ok(&self) -> bool {
        !self.interrupted
            && self
                .records
                .iter()
                .all(|r| matches!(r.status, Status::Ok | Status::Skipped))
    }

    /// The exit code of `wirebench run`: 130 when interrupted, 0 when every case that ran
    /// succeeded, 1 when one failed.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            130
        } else if self.all_ok() {
            0
        } else {
            1
        }
    }
}

pub fn run(
    scenario: &Scenario,
    opts: &RunOptions,
    shutdown: &AtomicBool,
    observer: &(dyn Observer + Sync),
) -> Result<RunSummary, RunError> {
    let opts = &absolute_paths(opts)?;
    let cases = plan(scenario);
    let links = case_links(&cases)?;
    // A skipped case gets no lab, hosts entries or reference server of its own: a run
    // whose lab cases are all skipped for want of root must not need root.
    let skipped = if opts.skip_missing {
        prereq::skip_reasons(&prereq::collect(&scenario.name, &cases, &links), &cases)
    } else {
        vec![None; cases.len()]
    };
    // Made by `prepare` already; again here for a caller that comes without it.
    check_plan(&cases, &links, &skipped, opts)?;
    let aligner = match &opts.shard {
        Some(o) => Some(shard_aligner(scenario, &cases, o, shutdown)?),
        None => None,
    };
    let shard = match (&opts.shard, &aligner) {
        (Some(o), Some(a)) => Some(wirebench_protocol::Shard {
            index: o.index,
            count: o.count,
            align: a,
        }),
        _ => None,
    };
    let hosts = lab_hosts(&cases, &skipped);
    let run_links: Vec<&Option<CaseLink>> = links
        .iter()
        .zip(&skipped)
        .filter(|(_, s)| s.is_none())
        .map(|(l, _)| l)
        .collect();
    let needs_lab = run_links.iter().any(|l| l.is_some());
    let pcap = opts
        .pcap
        .as_ref()
        .map(check_pcap(&cases, &links))
        .transpose()?;
    let lab = if needs_lab {
        let first = run_links
            .iter()
            .find_map(|l| l.as_ref())
            .cloned()
            .unwrap_or_default();
        Some(Lab::create(
            first.up_params(),
            first.down_params(),
            scenario.seed,
            pcap.as_ref(),
        )?)
    } else {
        None
    };
    if let (Some(lab), false) = (&lab, hosts.is_empty()) {
        lab.client().set_hosts(&hosts)?;
        lab.server().set_hosts(&hosts)?;
    }
    let job = Job {
        scenario,
        opts,
        pcap: pcap.as_ref(),
        pcap_stop_told: AtomicBool::new(false),
        shutdown,
        observer,
        cases: &cases,
        links: &links,
        skipped: &skipped,
        lab: lab.as_ref(),
        shard: shard.as_ref().zip(aligner.as_ref()),
    };
    match &lab {
        // The client side runs in the lab's client host: every socket it opens is there.
        Some(lab) => std::thread::scope(|s| {
            s.spawn(|| -> Result<RunSummary, RunError> {
                lab.client().enter()?;
                job.run()
            })
            .join()
            .unwrap_or_else(|_| Err(RunError::Usage("the measuring thread panicked".into())))
        }),
        None => job.run(),
    }
}

/// `opts` with absolute paths: peers (Prosody, ngircd, gateways) run with other working
/// directories and resolve relative paths against their own.
fn absolute_paths(opts: &RunOptions) -> Result<RunOptions, RunError> {
    let absolute = |p: &std::path::Path| {
        std::path::absolute(p).map_err(|error| RunError::Results {
            path: p.display().to_string(),
            error,
        })
    };
    Ok(RunOptions {
        out: absolute(&opts.out)?,
        pcap: match &opts.pcap {
            Some(p) => Some(PcapOptions {
                path: absolute(&p.path)?,
                ..p.clone()
            }),
            None => None,
        },
        ..opts.clone()
    })
}

/// Hosts-file entries of every protocol in the plan that places named servers, but for
/// skipped cases.
fn lab_hosts<'a>(
    cases: &'a [Case],
    skipped: &[Option<String>],
) -> Vec<(std::net::IpAddr, &'a str)> {
    let mut hosts: Vec<(std::net::IpAddr, &str)> = Vec::new();
    for (c, _) in cases.iter().zip(skipped).filter(|(_, s)| s.is_none()) {
        for (ip, name) in registry::of(c).lab_hosts(c).unwrap_or_default() {
            if !hosts.iter().any(|(_, n)| n == name) {
                hosts.push(((*ip).into(), name));
            }
        }
    }
    hosts
}

/// Every refusal that depends on the plan and on where its cases run, for the cases that
/// run (`skipped`: per case, why it is skipped, or `None`): the workloads their protocols
/// offer, the options that do not go with a lab or its absence, a sharded run's limits,
/// and each protocol's own check of its cases ([`registry::Protocol::check`]). Made by
/// [`prepare`] (so `--dry-run` and `wirebench doctor` refuse what the run would) and by
/// [`run`], before either creates anything.
pub fn check_plan(
    cases: &[Case],
    links: &[Option<CaseLink>],
    skipped: &[Option<String>],
    opts: &RunOptions,
) -> Result<(), RunError> {
    check_workloads(cases)?;
    let runs = || {
        cases
            .iter()
            .zip(links)
            .zip(skipped)
            .filter(|(_, s)| s.is_none())
            .map(|(c, _)| c)
    };
    let lab = runs().any(|(_, l)| l.is_some());
    check_where(opts, lab)?;
    cc::check(
        runs().map(|(c, _)| c),
        lab,
        &wirebench_net::sock::congestion_available(),
        &cc::loadable,
    )?;
    if let Some(o) = &opts.shard {
        check_shardable(cases, links, o)?;
    }
    let at = wirebench_protocol::Placement {
        lab,
        shard: opts.shard.as_ref().map(|o| (o.index, o.count)),
    };
    for (c, _) in runs() {
        registry::of(c)
            .check(c, &at)
            .map_err(|e| RunError::Usage(format!("case {}: {e}", c.index)))?;
    }
    Ok(())
}

/// Refuses the options that do not go with where the run happens (in a lab or not).
fn check_where(opts: &RunOptions, needs_lab: bool) -> Result<(), RunError> {
    if needs_lab && opts.server.is_some() {
        return Err(RunError::Usage(
            "--server cannot be combined with an emulated link: the lab runs its own server in \
             its server host (use `wirebench shell --link ...` to put your own program behind a link)"
                .into(),
        ));
    }
    if !needs_lab && opts.pcap.is_some() {
        return Err(RunError::Usage(
            "--pcap needs an emulated link (--link ...): on loopback there is no link to capture"
                .into(),
        ));
    }
    Ok(())
}

/// Refuses a sharded run of what cannot be sharded: only load cases (a ping-pong is one
/// connection: there is nothing to slice), no emulated link (each shard sits in its own
/// host already).
fn check_shardable(
    cases: &[Case],
    links: &[Option<CaseLink>],
    o: &shard::ShardOptions,
) -> Result<(), RunError> {
    if let Some(c) = cases.iter().find(|c| c.workload() != "load") {
        return Err(RunError::Usage(format!(
            "shard {}/{}: case {} is a {} case; a sharded run slices load cases only (--workload load)",
            o.index,
            o.count,
            c.index,
            c.workload()
        )));
    }
    if links.iter().any(Option::is_some) {
        return Err(RunError::Usage(
            "a sharded run takes no link parameters: put each shard behind its own link with \
             `wirebench shell --link ... -- wirebench run --shard I/N ...`"
                .into(),
        ));
    }
    Ok(())
}

/// The alignment of a sharded run ([`check_shardable`] has passed).
fn shard_aligner(
    scenario: &Scenario,
    cases: &[Case],
    o: &shard::ShardOptions,
    shutdown: &AtomicBool,
) -> Result<shard::Aligner, RunError> {
    // --start-at alone: each case a slot long enough for it, so shards agree without
    // talking (a case that overruns makes the next start late, which its record says).
    let mut slots = Vec::new();
    for c in cases {
        let est = registry::of(c).estimate_secs(c).unwrap_or(60.0);
        let slot = Duration::from_secs((est * 1.25 + 10.0).ceil() as u64);
        for r in 1..=c.runs {
            slots.push(((c.index, r), slot));
        }
    }
    let plan = plan_json(cases);
    let fp = shard::fingerprint(&plan, scenario.seed, scenario.repeat);
    Ok(shard::Aligner::new(o, slots, &fp, shutdown)?)
}

/// Parameters that say where a shard finds the server, not what the run is: shards may
/// reach one server by different addresses (each lab host sees this machine at its own).
const PLACE_PARAMS: &[&str] = &["load.target"];

/// Every case's parameters, in order, as `shard.json` and the barrier compare them.
fn plan_json(cases: &[Case]) -> Vec<serde_json::Value> {
    cases
        .iter()
        .map(|c| {
            let mut m = serde_json::Map::new();
            for (name, v) in c
                .point
                .iter()
                .filter(|(n, _)| !PLACE_PARAMS.contains(&n.as_str()))
            {
                m.insert(name.clone(), v.value.to_json());
            }
            serde_json::Value::Object(m)
        })
        .collect()
}

/// Writes (replaces) `shard.json` with the starts so far: after every case, so a shard
/// that dies leaves what it did.
fn write_shard_file(
    out: &std::path::Path,
    scenario: &Scenario,
    cases: &[Case],
    sh: &wirebench_protocol::Shard<'_>,
    aligner: &shard::Aligner,
) -> std::io::Result<()> {
    let file = shard::ShardFile {
        index: sh.index,
        count: sh.count,
        wirebench: env!("CARGO_PKG_VERSION").into(),
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        repeat: scenario.repeat,
        plan: plan_json(cases),
        method: aligner.method().into(),
        starts: aligner.starts(),
    };
    let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
    let tmp = out.join(format!("{}.tmp", shard::FILE));
    std::fs::write(&tmp, text)?;
    std::fs::rename(tmp, out.join(shard::FILE))
}

/// Checks a capture's estimated size against its limit before anything runs, and makes
/// its path absolute (the run enters network namespaces; the file must land where the
/// user was when they typed the command).
fn check_pcap<'a>(
    cases: &'a [Case],
    links: &'a [Option<CaseLink>],
) -> impl Fn(&PcapOptions) -> Result<PcapOptions, RunError> + 'a {
    move |p| {
        let path = std::path::absolute(&p.path)
            .map_err(|e| RunError::Usage(format!("--pcap {}: {e}", p.path.display())))?;
        let p = PcapOptions { path, ..p.clone() };
        check_capture(&estimate::estimate_cases(cases, links), &p)?;
        Ok(p)
    }
}

/// Refuses a capture estimated above its limit, saying how to shrink it.
pub(crate) fn check_capture(est: &estimate::PlanEstimate, p: &PcapOptions) -> Result<(), RunError> {
    let size = est.capture_bytes(p.snaplen);
    if size <= p.limit {
        return Ok(());
    }
    let small = est.capture_bytes(128);
    let snap = if p.snaplen > 128 && small <= p.limit {
        format!(
            ", keep 128 bytes of each packet with --pcap-snaplen 128 (about {})",
            estimate::format_size(small)
        )
    } else {
        String::new()
    };
    Err(RunError::Usage(format!(
        "the capture {} is estimated at {} ({} packets), above its limit of {}: raise \
         --pcap-limit{snap}, or shorten the run",
        p.path.display(),
        estimate::format_size(size),
        est.capture_packets(),
        estimate::format_size(p.limit),
    )))
}

/// Everything the case loop needs, so it can run on whichever thread sits in the right
/// network namespace.
pub struct Job<'a> {
    scenario: &'a Scenario,
    opts: &'a RunOptions,
    shutdown: &'a AtomicBool,
    observer: &'a (dyn Observer + Sync),
    cases: &'a [Case],
    links: &'a [Option<CaseLink>],
    /// Per case, why it is skipped (`--skip-missing`), or `None`: it runs.
    skipped: &'a [Option<String>],
    lab: Option<&'a Lab>,
    /// The capture, its path made absolute.
    pcap: Option<&'a PcapOptions>,
    /// The capture's early stop has been reported.
    pcap_stop_told: AtomicBool,
    /// This run's shard and how it aligns its starts, when sharded.
    shard: Option<(&'a wirebench_protocol::Shard<'a>, &'a shard::Aligner)>,
}

/// The lab's counters at a case's start, to count what the case made cross the link.
struct LinkBefore {
    counters: wirebench_lab::Counters,
    emulator_cpu_ns: Option<u64>,
    tun_drops: u64,
    second: Option<wirebench_lab::Counters>,
}

impl Job<'_> {
    /// Each protocol's run-long service ([`wirebench_protocol::Protocol::start_run`]),
    /// in the order of the protocols' first cases that will run.
    fn start_services(&self, connect_timeout: Duration) -> Result<Services, RunError> {
        let run = wirebench_protocol::RunEnv {
            lab: self.lab.map(|lab| wirebench_protocol::Hosts::new(lab)),
            server: self.opts.server.as_deref(),
            connect_timeout,
        };
        let mut services = Vec::new();
        let mut seen: Vec<&'static str> = Vec::new();
        for (c, _) in self
            .cases
            .iter()
            .zip(self.skipped)
            .filter(|(_, s)| s.is_none())
        {
            let p = registry::of(c);
            if seen.contains(&p.name()) {
                continue;
            }
            seen.push(p.name());
            if let Some(s) = p.start_run(&run).map_err(RunError::Service)? {
                services.push((p.name(), s));
            }
        }
        Ok(services)
    }

    fn run(&self) -> Result<RunSummary, RunError> {
        let (scenario, opts) = (self.scenario, self.opts);
        // Over a slow emulated link a TCP handshake alone can take seconds.
        let connect_timeout = if self.lab.is_some() {
            opts.connect_timeout.max(Duration::from_secs(60))
        } else {
            opts.connect_timeout
        };
        // Fail fast, before creating any file, if a protocol's run-long server cannot be
        // started or reached.
        let services = self.start_services(connect_timeout)?;
        let pivot = PivotOptions {
            tables: scenario.tables.clone(),
            metrics: scenario.columns.clone(),
        };
        let mut dir = ResultsDir::create(&opts.out, pivot).map_err(|e| self.results_err(e))?;
        run_info(scenario)
            .write(&dir.path)
            .map_err(|e| self.results_err(e))?;
        let host = host::facts();
        self.observer
            .run_started(self.cases.len(), &self.against(&services).join(" and "));

        let mut interrupted = false;
        'cases: for ((case, link), skip) in self.cases.iter().zip(self.links).zip(self.skipped) {
            for repeat in 1..=case.runs {
                if self.shutdown.load(Ordering::SeqCst) {
                    interrupted = true;
                    break 'cases;
                }
                if let Some(why) = skip {
                    self.skip(&mut dir, case, repeat, &host, why)
                        .map_err(|e| self.results_err(e))?;
                    continue;
                }
                let case_run = CaseRun {
                    case,
                    link: link.as_ref(),
                    repeat,
                    connect_timeout,
                };
                if self.run_case(&mut dir, &case_run, &host, &services)? {
                    interrupted = true;
                    break 'cases;
                }
            }
        }
        dir.finish().map_err(|e| self.results_err(e))?;
        Ok(RunSummary {
            records: std::mem::take(&mut dir.records),
            interrupted,
        })
    }

    fn results_err(&self, error: std::io::Error) -> RunError {
        RunError::Results {
            path: self.opts.out.display().to_string(),
            error,
        }
    }

    /// Who the cases talk to, for the front end's first line.
    fn against(&self, services: &Services) -> Vec<String> {
        let mut against: Vec<String> = Vec::new();
        against.extend(services.iter().filter_map(|(_, s)| s.against.clone()));
        for (c, _) in self
            .cases
            .iter()
            .zip(self.skipped)
            .filter(|(_, s)| s.is_none())
        {
            if let Some(who) = registry::of(c).servers(c) {
                if !against.iter().any(|a| a == who) {
                    against.push(who.to_string());
                }
            }
        }
        against
    }

    /// Runs one repeat of a case and records it; true when the run was interrupted.
    fn run_case(
        &self,
        dir: &mut ResultsDir,
        r: &CaseRun<'_>,
        host: &HostFacts,
        services: &Services,
    ) -> Result<bool, RunError> {
        let (scenario, opts, observer) = (self.scenario, self.opts, self.observer);
        let (case, link, repeat) = (r.case, r.link, r.repeat);
        observer.case_started(case, repeat);
        let mut record = base_record(
            scenario,
            case,
            repeat,
            SystemTime::now(),
            &opts.command,
            host,
        );
        let before = self.configure_link(&mut record, link)?;
        let started = SystemTime::now();
        let t0 = Instant::now();
        let progress = |d: u64, t: u64| observer.progress(d, t);
        let marked: std::sync::Mutex<Option<wirebench_lab::Counters>> = std::sync::Mutex::new(None);
        let mark = || {
            if let Some(lab) = self.lab {
                *marked.lock().unwrap_or_else(|p| p.into_inner()) = Some(lab.counters());
            }
        };
        let budget = |bytes: u64, echo: bool, d: Duration| {
            link.and_then(|l| estimate::stream_budget(bytes, echo, l, d))
        };
        let ctx = Ctx {
            mark_stable: &mark,
            shutdown: self.shutdown,
            progress: &progress,
            stall_timeout: scenario.stall_timeout,
            connect_timeout: r.connect_timeout,
            link_budget: &budget,
        };
        let env = Env {
            lab: self.lab.map(|lab| wirebench_protocol::Hosts::new(lab)),
            out: &opts.out,
            seed: scenario.seed,
            service: services
                .iter()
                .find(|(p, _)| *p == case.protocol())
                .map(|(_, s)| &*s.state),
            shard: self.shard.map(|(s, _)| s),
        };
        let client_cc = self.case_cc(case)?;
        let result = registry::of(case).run(&env, case, repeat, link, &ctx);
        let elapsed = t0.elapsed();
        record.set(CASE_DURATION, elapsed.as_secs_f64());
        let result = result.map(|mut outcome| {
            if let (Some(lab), Some(before), Some(l)) = (self.lab, &before, link) {
                let mark = marked.lock().unwrap_or_else(|p| p.into_inner()).take();
                link_metrics(&mut outcome, lab, case, l, before, mark.as_ref(), elapsed);
            }
            outcome
        });
        let client_cc = client_cc.as_ref().map(|(cc, from)| (cc.as_str(), *from));
        let result = record_cc(&mut record, case, result, client_cc);
        if self.lab.is_some() {
            // The routes were read back with these on them (cc::set).
            cc::Knobs::of(case).record_windows(&mut record);
            cc::Buffers::of(case).record(&mut record);
        }
        let stem = format!("case-{:04}-r{}", case.index, repeat);
        let interrupted = self
            .record_result(dir, &mut record, &stem, result, started, elapsed)
            .map_err(|e| self.results_err(e))?;
        self.note_pcap(&mut record);
        dir.append(record.clone())
            .map_err(|e| self.results_err(e))?;
        if let Some((sh, aligner)) = self.shard {
            write_shard_file(&opts.out, scenario, self.cases, sh, aligner)
                .map_err(|e| self.results_err(e))?;
        }
        observer.case_finished(case, &record);
        Ok(interrupted)
    }

    /// Sets the lab's link for the case (an ideal one for a case without link
    /// parameters in a lab run) and returns its counters before the case.
    fn configure_link(
        &self,
        record: &mut Record,
        link: Option<&CaseLink>,
    ) -> Result<Option<LinkBefore>, RunError> {
        let seed = self.scenario.seed;
        Ok(match (self.lab, link) {
            (Some(lab), Some(l)) => {
                lab.configure(l.up_params(), l.down_params(), seed)?;
                lab.configure_second(l.second_params(), seed)?;
                record
                    .notes
                    .push(format!("link up: {}; link down: {}", l.up, l.down));
                if let Some(s) = &l.second {
                    record.notes.push(format!("second path (link2): {s}"));
                }
                Some(LinkBefore {
                    counters: lab.counters(),
                    emulator_cpu_ns: lab.emulator_cpu_ns(),
                    tun_drops: lab.tun_drops(),
                    second: lab.second_counters(),
                })
            }
            // A case without link parameters in a run whose other cases have
            // them: its peers are placed in the lab all the same, so the link
            // must be ideal, not the previous case's (a 162 ms link once stood
            // under the "loopback" cases of browser-transports).
            (Some(lab), None) => {
                let ideal = wirebench_link::LinkParams::default();
                lab.configure(ideal.clone(), ideal, seed)?;
                lab.configure_second(None, seed)?;
                record.notes.push(
                    "no link parameters: an ideal link (no delay, no rate limit) in the run's lab"
                        .into(),
                );
                None
            }
            _ => None,
        })
    }

    /// Puts the case's result in its record (and its files beside it); true when the
    /// run was interrupted.
    fn record_result(
        &self,
        dir: &ResultsDir,
        record: &mut Record,
        stem: &str,
        result: Result<Outcome, WorkloadError>,
        started: SystemTime,
        elapsed: Duration,
    ) -> std::io::Result<bool> {
        match result {
            // A workload that stops at Ctrl-C with what it measured so far (a session
            // load's phases cut short) returns its figures: the case is interrupted all
            // the same, and its record says so.
            Ok(outcome) if self.shutdown.load(Ordering::SeqCst) => {
                record.status = Status::Interrupted;
                record.error = Some(
                    "interrupted before the case finished; its figures are those measured until then"
                        .into(),
                );
                attach(dir, record, stem, outcome, started, elapsed)?;
                Ok(true)
            }
            Ok(outcome) => {
                attach(dir, record, stem, outcome, started, elapsed)?;
                Ok(false)
            }
            Err(WorkloadError::InterruptedAfter(outcome)) => {
                record.status = Status::Interrupted;
                record.error = Some(format!(
                    "interrupted after {} of the case's rounds",
                    outcome.rounds.as_ref().map_or(0, Vec::len)
                ));
                attach(dir, record, stem, *outcome, started, elapsed)?;
                Ok(true)
            }
            Err(WorkloadError::Interrupted) => {
                record.status = Status::Interrupted;
                record.error = Some("interrupted before the case finished".into());
                Ok(true)
            }
            Err(WorkloadError::FailedAfter { outcome, error }) => {
                let stopped = self.shutdown.load(Ordering::SeqCst);
                if stopped {
                    record.status = Status::Interrupted;
                    record.error = Some(format!("interrupted ({error})"));
                } else {
                    record.status = Status::Failed;
                    record.fault = error.fault().map(|f| f.as_str().to_string());
                    record.error = Some(error.to_string());
                }
                attach(dir, record, stem, *outcome, started, elapsed)?;
                Ok(stopped)
            }
            // Whatever broke after Ctrl-C (a server that saw the signal, a
            // connection cut short) is the interrupt's doing, not the case's.
            Err(e) if self.shutdown.load(Ordering::SeqCst) => {
                record.status = Status::Interrupted;
                record.error = Some(format!("interrupted ({e})"));
                Ok(true)
            }
            Err(e) => {
                record.status = Status::Failed;
                record.fault = e.fault().map(|f| f.as_str().to_string());
                let mut msg = e.to_string();
                if let Some(why) = self.lab.and_then(|l| l.emulator_error()) {
                    msg.push_str(&format!(" (link emulator stopped: {why})"));
                }
                record.error = Some(msg);
                Ok(false)
            }
        }
    }
}

/// Each protocol's run-long service, by protocol name.
type Services = Vec<(&'static str, wirebench_protocol::RunService)>;

/// One repeat of one case, as the run loop hands it on.
struct CaseRun<'a> {
    case: &'a Case,
    link: Option<&'a CaseLink>,
    repeat: u32,
    connect_timeout: Duration,
}

impl Job<'_> {
    /// Puts the case's TCP knobs (congestion control, initial windows) on the lab hosts'
    /// routes and its buffers in their sysctls (or takes them back where it asks for
    /// none) before its servers start, and returns what the client
    /// host gives a new connection, with where that comes from: the lab's client host, or
    /// on loopback this machine's own default.
    fn case_cc(&self, case: &Case) -> Result<Option<(String, &'static str)>, RunError> {
        let Some(lab) = self.lab else {
            return Ok(
                wirebench_net::sock::congestion_default().map(|d| (d, "client host default"))
            );
        };
        cc::set(lab, &cc::Knobs::of(case))?;
        cc::set_buffers(lab, &cc::Buffers::of(case))?;
        Ok(Some(cc::client_effective(lab)?))
    }
}

/// Says in the record which congestion control the data connection used; one other than
/// the case asked for fails the case, keeping what it measured.
fn record_cc(
    record: &mut Record,
    case: &Case,
    result: Result<Outcome, WorkloadError>,
    client: Option<(&str, &str)>,
) -> Result<Outcome, WorkloadError> {
    let asked = cc::asked(case);
    match result {
        // A UDP data connection (CoAP) has no congestion control to report.
        Ok(outcome) if outcome.transport == wirebench_protocol::Transport::Udp => Ok(outcome),
        Ok(outcome) => {
            let socket = outcome.congestion.as_deref();
            match cc::record(record, asked, socket, client) {
                Ok(()) => Ok(outcome),
                Err(e) => Err(WorkloadError::FailedAfter {
                    outcome: Box::new(outcome),
                    error: Box::new(WorkloadError::Environment(e)),
                }),
            }
        }
        Err(e) => {
            // Failed: what its connections were given is still known.
            let _ = cc::record(record, None, None, client);
            Err(e)
        }
    }
}

/// What crossed the emulated link during the case (see [`link::add_wire_metrics`]),
/// the second path, the TUN drops and the emulator's CPU.
fn link_metrics(
    outcome: &mut Outcome,
    lab: &Lab,
    case: &Case,
    l: &CaseLink,
    before: &LinkBefore,
    mark: Option<&wirebench_lab::Counters>,
    elapsed: Duration,
) {
    link::add_wire_metrics(outcome, case, l, &before.counters, mark, &lab.counters());
    // What crossed the second path: Multipath TCP's joined subflows.
    if let (Some(s0), Some(s1)) = (&before.second, lab.second_counters()) {
        let d = |c: &wirebench_lab::Counters| c.up.delivered_packets + c.down.delivered_packets;
        let b = |c: &wirebench_lab::Counters| c.up.delivered_bytes + c.down.delivered_bytes;
        outcome.put(LINK2_PACKETS, (d(&s1) - d(s0)) as f64);
        outcome.put(LINK2_BYTES, (b(&s1) - b(s0)) as f64);
    }
    let tun = lab.tun_drops().saturating_sub(before.tun_drops);
    outcome.put(LINK_DROPPED_TUN, tun as f64);
    if let Some(times) = lab.link_times() {
        link::add_link_times(outcome, &times);
    }
    if let (Some(c0), Some(c1)) = (before.emulator_cpu_ns, lab.emulator_cpu_ns()) {
        let share = c1.saturating_sub(c0) as f64 / elapsed.as_nanos().max(1) as f64;
        outcome.put(LINK_EMULATOR_CPU, share);
    }
}

impl Job<'_> {
    /// Records a case not run for a missing prerequisite (`--skip-missing`): in the
    /// results like any other, so the summary and the report show it.
    fn skip(
        &self,
        dir: &mut ResultsDir,
        case: &Case,
        repeat: u32,
        host: &HostFacts,
        why: &str,
    ) -> std::io::Result<()> {
        let mut record = base_record(
            self.scenario,
            case,
            repeat,
            SystemTime::now(),
            &self.opts.command,
            host,
        );
        record.status = Status::Skipped;
        record.error = Some(why.to_string());
        dir.append(record.clone())?;
        self.observer.case_finished(case, &record);
        Ok(())
    }

    /// Says in the record what the capture holds, and, once, on stderr when it stopped.
    fn note_pcap(&self, record: &mut Record) {
        let (Some(opts), Some(lab)) = (self.pcap, self.lab) else {
            return;
        };
        let mut note = format!("pcap: {}", opts.path.display());
        if opts.snaplen < wirebench_lab::pcap::MAX_SNAPLEN {
            note.push_str(&format!(
                " (snaplen {} bytes: longer packets are cut)",
                opts.snaplen
            ));
        }
        record.notes.push(note);
        if let Some(why) = lab.pcap_stats().and_then(|s| s.stopped) {
            if self.pcap_stop_told.swap(true, Ordering::SeqCst) {
                record
                    .notes
                    .push("the capture had stopped: it holds nothing of this case".into());
            } else {
                record
                    .notes
                    .push(format!("the capture stopped during this case: {why}"));
                self.observer.warning(&format!(
                    "the capture {} stopped during case {}: {why}; the run goes on without it",
                    opts.path.display(),
                    record.case
                ));
            }
        }
    }
}

/// The scenario's published figures that apply to this case.
fn references(scenario: &Scenario, case: &Case) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    for r in &scenario.references {
        if r.when
            .iter()
            .all(|(name, v)| case.get(name) == Some(&v.value))
        {
            for (metric, value) in &r.metrics {
                out.insert(
                    metric.clone(),
                    serde_json::json!({"value": value, "source": r.source}),
                );
            }
        }
    }
    out
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
        fault: None,
        params,
        labels,
        metrics: serde_json::Map::new(),
        histograms: serde_json::Map::new(),
        series: serde_json::Map::new(),
        references: references(scenario, case),
        notes: Vec::new(),
        transport: serde_json::Map::new(),
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
        record
            .histograms
            .insert(ROUNDS_HISTOGRAM.into(), file.into());
    }
    for (name, csv) in &outcome.series {
        let file = dir.write_series(stem, name, csv)?;
        record.series.insert(name.clone(), file.into());
    }
    record.notes.extend(outcome.notes);
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

/// What `wirebench report` needs besides the records (`run.json`).
pub fn run_info(scenario: &Scenario) -> wirebench_report::RunInfo {
    let params = params::names()
        .into_iter()
        .map(|n| {
            (
                n.to_string(),
                wirebench_report::ParamInfo {
                    unit: params::unit(n).to_string(),
                    words: params::words(n).to_string(),
                },
            )
        })
        .collect();
    wirebench_report::RunInfo {
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        tables: scenario.tables.clone(),
        columns: scenario.columns.clone(),
        charts: scenario.charts.clone(),
        params,
        declared: report_declared(),
    }
}

/// What the plugins declare about charts: the metrics they chart as headline delays
/// (`MetricSpec::chart`) and the parameters whose value alone names a series
/// (`Protocol::legend_by_value`). Every report is written with it.
pub fn report_declared() -> wirebench_report::Declared {
    wirebench_report::Declared {
        delays: metrics::declared()
            .iter()
            .filter_map(|m| m.chart.map(|w| (m.name.to_string(), w.to_string())))
            .collect(),
        legend_by_value: registry::REGISTRY
            .iter()
            .flat_map(|p| p.legend_by_value())
            .map(|p| p.to_string())
            .collect(),
        words: metrics::declared()
            .iter()
            .filter_map(|m| m.words.map(|w| (m.name.to_string(), w.to_string())))
            .collect(),
        session_words: registry::REGISTRY
            .iter()
            .filter(|p| p.workloads().contains(&"load"))
            .map(|p| (p.name().to_string(), p.session_words()))
            .collect(),
    }
}

/// Writes `dir/report.html` and its charts from a results directory (`wirebench
/// report`). A directory from before run.json existed first gets one: from the built-in
/// scenario of its name (for its chart choices), or none, with today's parameter registry.
pub fn write_report(dir: &std::path::Path) -> Result<wirebench_report::html::Written, RunError> {
    if dir.join("results.jsonl").exists() && !dir.join(wirebench_report::info::FILE).exists() {
        let records = wirebench_report::html::read_records(dir)?;
        let name = records
            .first()
            .map(|r| r.scenario.clone())
            .unwrap_or_default();
        let scenario = Scenario::builtin(&name).unwrap_or_else(|| Scenario::empty(&name));
        run_info(&scenario)
            .write(dir)
            .map_err(|error| RunError::RunInfo {
                dir: dir.display().to_string(),
                error,
            })?;
    }
    Ok(wirebench_report::write_report(dir, &report_declared())?)
}

/// `wirebench merge`: the shards' results as one run's (wirebench-shard's merge), each
/// metric by the rule its declaration gives (undeclared: the shards must agree); the
/// declarations are the registry's, so the rule is looked up here.
pub mod merge {
    use std::path::{Path, PathBuf};
    use wirebench_model::Merge;
    pub use wirebench_shard::merge::Merged;

    /// Merges the shards in `dirs` into `out` (a new directory).
    pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, crate::RunError> {
        let rule_of = |name: &str| crate::metrics::spec(name).map_or(Merge::Agree, |s| s.merge);
        Ok(wirebench_shard::merge::merge(dirs, out, &rule_of)?)
    }
}

#[cfg(test)]
mod legend_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_union_and_references_attach() {
        let s = Scenario::builtin("satcom-xmpp").unwrap();
        let cases = plan(&s);
        // Per server link (standard, x2x, x2x-tfo): latency 2x3, payload 4 (2 B already
        // in latency), think 3, throughput 4; and for x2x and x2x-tfo the latency rows
        // again with TCP timestamps off.
        assert_eq!(cases.len(), 3 * (6 + 3 + 3 + 4) + 2 * 6);
        let first = &cases[0];
        let refs = references(&s, first);
        assert_eq!(refs["rtt.first"]["value"], 36.3, "{refs:?}");
        assert_eq!(refs["rtt.first"]["source"], "S1 standard S2S", "{refs:?}");
        let x2x = cases
            .iter()
            .find(|c| c.get("s2s").and_then(|v| v.as_word()) == Some("x2x-tfo"))
            .unwrap();
        let refs = references(&s, x2x);
        assert_eq!(refs["rtt.first"]["value"], 2.9, "{refs:?}");
        assert_eq!(refs["rtt.first"]["source"], "S1 optimized S2S", "{refs:?}");
        let stream = cases.iter().find(|c| c.workload() == "stream").unwrap();
        assert!(references(&s, stream).contains_key("link.utilization"));
        // The command line overrides what a part sets.
        let mut s2 = s.clone();
        s2.set_param("link.delay", "0").unwrap();
        assert!(plan(&s2).iter().all(
            |c| c.get("link.delay") == Some(&wirebench_model::Value::Duration(Duration::ZERO))
        ));
    }
}
