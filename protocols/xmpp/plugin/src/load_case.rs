//! The `load` workload of `--protocol xmpp` (study S4, issue #14): sessions arriving in
//! Tsung-style phases against a built-in server started for the case, each running the
//! script of [`wirebench_xmpp_load::open_loop`], with the per-interval time series written beside the
//! records and the totals as the case's metrics.
//!
//! Layout: one generator thread inside wirebench while the peak of concurrent sessions
//! fits beside the server in one process's open files; beyond that the server runs worker
//! processes and the generator too (`EXE xmpp-load-worker`, each at most
//! `room::PER_GENERATOR` sessions, each from its own 127.0.x.y source address). A generator
//! process gets its part on stdin as JSON and sends its closed intervals back on stdout,
//! one JSON line each; the parent adds them up, so the merged histograms are exact.

pub mod metrics;
mod room;
mod usage;

use crate::params::{S2S, real_server};
use metrics::GENERATOR_CPU;
use metrics::GENERATOR_CPU_PER_SESSION;
use metrics::GENERATOR_RSS;
use metrics::GENERATOR_RSS_PER_SESSION;
use metrics::LOAD_PRESENCES;
use metrics::LOAD_ROSTER_ITEMS;
use room::{Ends, IN_PROCESS, Machine, Needs};
use std::io::{self, BufRead, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use usage::{ServerProbe, Usage, UsageSampler, push_login_cpu};
use wirebench_load::{Arrivals, Cause, Dist, Interval, Phase, Schedule, Series, Wire};
use wirebench_model::Kind;
use wirebench_model::metric::SERVER_CPU;
use wirebench_model::metric::SERVER_CPU_PER_SESSION;
use wirebench_model::metric::SERVER_ROUTED;
use wirebench_model::metric::SERVER_RSS;
use wirebench_model::metric::SERVER_RSS_PER_SESSION;
use wirebench_model::metric::SHARD_CLOCK_ERROR;
use wirebench_model::metric::SHARD_CLOCK_OFFSET;
use wirebench_model::metric::SHARD_COUNT;
use wirebench_model::metric::SHARD_INDEX;
use wirebench_model::metric::SHARD_START_MARGIN;
use wirebench_protocol::Fault;
use wirebench_protocol::params::{ON_OFF, ParamSpec};
use wirebench_protocol::{Case, Ctx, Env, Outcome, Start, WorkloadError};
use wirebench_xmpp_load::hold::{ALLOW_ANY_TARGET, target_allowed};
use wirebench_xmpp_load::open_loop::{Part, Script, WorkerSummary, monotonic_ns, run_worker};
use wirebench_xmpp_peers::peer::{PeerConfig, RealServer, Server};

/// The subcommand a generator process runs as; `wirebench` routes it to [`worker_main`].
pub const WORKER_COMMAND: &str = "xmpp-load-worker";

use wirebench_session_load::LOAD;
pub use wirebench_session_load::{ARRIVALS, EVERY, INTERVAL, PHASES, STAY, THINK, TIMEOUT};

fn check_domain(s: &str) -> Result<(), String> {
    if s.is_empty()
        || s.len() > 253
        || s.chars()
            .any(|c| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
    {
        return Err("expected a domain name (letters, digits, dots and hyphens)".into());
    }
    Ok(())
}

/// `load.target`: `builtin`, or the address of a server already running on this machine
/// (or, with [`ALLOW_ANY_TARGET`]`=1`, anywhere: a cluster's server by name).
fn check_target(s: &str) -> Result<(), String> {
    target_syntax(s).map(|_| ())
}

/// `builtin`, or `HOST:PORT` split; an address literal is checked against the allowed
/// targets at once (a name only once it is resolved, as the case starts).
fn target_syntax(s: &str) -> Result<Option<(&str, u16)>, String> {
    if s == "builtin" {
        return Ok(None);
    }
    let bad = || {
        "expected builtin or IP:PORT of a server on this machine, e.g. 127.0.0.1:5222 (or, in a \
         cluster, HOST:PORT)"
            .to_string()
    };
    if let Ok(addr) = s.parse::<std::net::SocketAddr>() {
        check_allowed(addr.ip())?;
        return Ok(Some((s, addr.port())));
    }
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    {
        return Err(bad());
    }
    Ok(Some((host, port)))
}

fn check_allowed(ip: IpAddr) -> Result<(), String> {
    if target_allowed(ip) {
        return Ok(());
    }
    Err(format!(
        "{ip} is neither loopback nor a lab address: load is only generated towards this machine \
         (127.0.0.0/8, ::1, the lab's 198.18.0.0/15) unless {ALLOW_ANY_TARGET}=1 says otherwise \
         (the Job `wirebench k8s` writes sets it; docs/cluster.md)"
    ))
}

/// The server a load case targets: `None` for one started for the case. A name is
/// resolved here; every address it has must be an allowed target.
pub fn target_addr(s: &str) -> Result<Option<std::net::SocketAddr>, String> {
    let Some((host, port)) = target_syntax(s)? else {
        return Ok(None);
    };
    if let Ok(addr) = s.parse::<std::net::SocketAddr>() {
        return Ok(Some(addr));
    }
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let first = *addrs
        .first()
        .ok_or_else(|| format!("{host} has no address"))?;
    for a in &addrs {
        check_allowed(a.ip())?;
    }
    Ok(Some(first))
}

pub const PARAMS: &[ParamSpec] = &[
    TARGET,
    SERVER_DOMAIN,
    PHASES,
    ARRIVALS,
    STAY,
    EVERY,
    THINK,
    MECH,
    TLS,
    ROSTER,
    PRESENCE,
    CONTACTS,
    ONLINE,
    INTERVAL,
    SAMPLES,
    TIMEOUT,
];

pub const TARGET: ParamSpec = ParamSpec {
    name: "load.target",
    kind: Kind::Custom {
        what: "load target",
        check: check_target,
    },
    default: "builtin",
    workloads: LOAD,
    help: "the server sessions log in to: builtin (started for the case), or IP:PORT of one already running on loopback or in the lab, with accounts user<N>/pass<N> (Tsung's convention), e.g. `wirebench serve --xmpp 127.0.0.1:5222` or Prosody; a sharded run (--shard) needs one: every shard loads it",
    words: "load target",
};

pub const SERVER_DOMAIN: ParamSpec = ParamSpec {
    name: "load.domain",
    kind: Kind::Custom {
        what: "XMPP domain",
        check: check_domain,
    },
    default: DOMAIN,
    workloads: LOAD,
    help: "the XMPP domain of the accounts (with load.target=IP:PORT: the server's)",
    words: "domain",
};

pub const MECH: ParamSpec = ParamSpec {
    name: "load.mech",
    kind: Kind::Choice(&["PLAIN", "SCRAM-SHA-1", "SCRAM-SHA-256"]),
    default: "PLAIN",
    workloads: LOAD,
    help: "SASL mechanism of every session",
    words: "SASL mechanism",
};

pub const TLS: ParamSpec = ParamSpec {
    name: "load.tls",
    kind: Kind::Choice(ON_OFF),
    default: "off",
    workloads: LOAD,
    help: "STARTTLS before authenticating (RFC 6120 section 5): the built-in server offers it with a certificate made for the case; a load.target server must offer it (its certificate is not checked)",
    words: "STARTTLS",
};

pub const ROSTER: ParamSpec = ParamSpec {
    name: "load.roster",
    kind: Kind::Choice(ON_OFF),
    default: "on",
    workloads: LOAD,
    help: "fetch the roster after binding",
    words: "roster get",
};

pub const PRESENCE: ParamSpec = ParamSpec {
    name: "load.presence",
    kind: Kind::Choice(ON_OFF),
    default: "on",
    workloads: LOAD,
    help: "send initial presence (the server fans it out to online contacts)",
    words: "initial presence",
};

pub const CONTACTS: ParamSpec = ParamSpec {
    name: "load.contacts",
    kind: Kind::Count,
    default: "2",
    workloads: LOAD,
    help: "roster size of every user: the k/2 users before and after it (0: empty rosters; study S4 used 0 and 50)",
    words: "roster size",
};

pub const ONLINE: ParamSpec = ParamSpec {
    name: "load.online",
    kind: Kind::Choice(&["all", "half"]),
    default: "all",
    workloads: LOAD,
    help: "which users log in: all, or half (every other user, so half of each roster is online, as in study S4)",
    words: "users online",
};

pub const SAMPLES: ParamSpec = ParamSpec {
    name: "load.samples",
    kind: Kind::Choice(ON_OFF),
    default: "off",
    workloads: LOAD,
    help: "also write every latency sample, raw, beside the record (case-NNNN-rK.load.samples.wW.csv, about 20 bytes a sample): to check percentiles against the histograms",
    words: "raw samples",
};

/// A load case's settings, read from the case.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LoadSpec {
    pub phases: Vec<Phase>,
    pub arrivals: Arrivals,
    pub seed: u64,
    pub script: Script,
    pub width: Duration,
    /// Roster size of the numbered accounts.
    pub contacts: u64,
    /// A server already running (`load.target`); `None`: the built-in one for the case.
    pub target: Option<std::net::SocketAddr>,
    /// Raw latency samples beside the record (`load.samples`).
    #[serde(default)]
    pub samples: bool,
}

impl LoadSpec {
    pub fn from_case(case: &Case, seed: u64) -> Result<LoadSpec, WorkloadError> {
        // Every spec below has a default, so each value is there.
        let dur = |spec: &ParamSpec| case.duration(spec).unwrap_or_default();
        let word = |spec: &ParamSpec| case.choice(spec).to_string();
        let phases = wirebench_load::parse_phases(&word(&PHASES))
            .map_err(|e| WorkloadError::Input(format!("{}: {e}", PHASES.name)))?;
        let dist = |spec: &ParamSpec| {
            Dist::parse(&word(spec))
                .map_err(|e| WorkloadError::Input(format!("{}: {e}", spec.name)))
        };
        let every = dist(&EVERY)?;
        Ok(LoadSpec {
            phases,
            arrivals: arrivals_from_word(case.choice(&ARRIVALS)).unwrap_or(Arrivals::Poisson),
            seed,
            script: Script {
                addrs: Vec::new(),
                domain: word(&SERVER_DOMAIN),
                first_user: 1,
                user_stride: if case.choice(&ONLINE) == "half" { 2 } else { 1 },
                mechanism: word(&MECH),
                roster: case.is_on(&ROSTER),
                presence: case.is_on(&PRESENCE),
                stay: dist(&STAY)?,
                message_every: (!every.is_zero()).then_some(every),
                first_message: dist(&THINK)?,
                seed,
                tls: case.is_on(&TLS),
                tls_cert: None,
                login_timeout: dur(&TIMEOUT),
                payload: case.payload() as usize,
                from: Vec::new(),
                samples: None,
            },
            samples: case.is_on(&SAMPLES),
            width: dur(&INTERVAL).max(Duration::from_millis(10)),
            contacts: case.count(&CONTACTS).unwrap_or_default(),
            target: target_addr(&word(&TARGET))
                .map_err(|e| WorkloadError::Input(format!("{}: {e}", TARGET.name)))?,
        })
    }

    /// The stay that sizes the layout and the up-front check: the longest there can be,
    /// except for an exponential, whose concurrency settles near rate x mean (Little's
    /// law); a quarter more for its fluctuation.
    pub fn peak_stay(&self) -> Duration {
        match self.script.stay {
            Dist::Exp(mean) => mean + mean / 4,
            d => d.max(),
        }
    }

    pub fn schedule(&self) -> Result<Schedule, WorkloadError> {
        Schedule::new(&self.phases, self.arrivals, self.seed)
            .map_err(|e| WorkloadError::because(Fault::Input, "load.phases", e))
    }
}

const DOMAIN: &str = "wirebench.test";

/// `load.arrivals`'s words.
fn arrivals_from_word(word: &str) -> Option<Arrivals> {
    match word {
        "poisson" => Some(Arrivals::Poisson),
        "uniform" => Some(Arrivals::Uniform),
        _ => None,
    }
}

/// Seconds a load case takes: its last arrival, that session's longest stay, start-up
/// and a leaving margin, and a real server's start with its accounts and rosters.
pub fn estimate_secs(case: &Case) -> Option<f64> {
    let spec = LoadSpec::from_case(case, 0).ok()?;
    // The case ends when its last session has left, not when its phases end (a hold
    // phase with no arrivals adds nothing after that).
    let schedule = spec.schedule().ok()?;
    let last = match schedule.len() {
        0 => 0.0,
        n => schedule.start(n - 1).as_secs_f64(),
    };
    // Accounts and roster entries the server is given before the case (s4-tigase,
    // 2026-11-27: with 600 sessions Prosody took 0.6 s more than the built-in server
    // without rosters and 1.3 s with 50 contacts, ejabberd 4.2 s without; with 50
    // contacts its import_prosody took 7 to 31 s for 300 to 1,200 sessions, about
    // 0.5 ms per account or roster entry, unevenly).
    let entries = schedule.len() as f64 * (1 + spec.contacts) as f64;
    let server = match real_server(case) {
        Some(Server::Prosody) => 1.0 + entries * 3e-5,
        Some(Server::Ejabberd) => 4.0 + entries * 5e-4,
        None => 0.0,
    };
    Some(last + spec.script.stay.max().as_secs_f64() + 3.0 + server)
}

/// What a generator process is told on its stdin.
#[derive(serde::Serialize, serde::Deserialize)]
struct WorkerSpec {
    spec: LoadSpec,
    part: Part,
}

/// What a generator process says on its stdout, a line each.
#[derive(serde::Serialize, serde::Deserialize)]
enum WorkerLine {
    Interval(Wire),
    Done(WorkerSummary),
    Failed(String),
}

/// A generator process: reads its part, runs it, reports. Ends early on SIGTERM (`stop`).
pub fn worker_main(stop: &AtomicBool) -> io::Result<()> {
    let mut input = String::new();
    io::Read::read_to_string(&mut io::stdin(), &mut input)?;
    let w: WorkerSpec = serde_json::from_str(&input)
        .map_err(|e| io::Error::other(format!("bad generator spec on stdin: {e}")))?;
    // The reports leave through a thread of their own: the event loop must never wait
    // for the parent to read (its sessions' timers would run late, and open-loop figures
    // would blame the server for it).
    // Ok: an interval (compressing its histograms is the writer's work too); Err: the
    // last line.
    let (tx, rx) = std::sync::mpsc::channel::<Result<Interval, WorkerLine>>();
    let writer = std::thread::spawn(move || {
        let mut o = io::stdout().lock();
        for msg in rx {
            let line = match msg {
                Ok(i) => WorkerLine::Interval(i.to_wire()),
                Err(line) => line,
            };
            if let Ok(text) = serde_json::to_string(&line) {
                let _ = writeln!(o, "{text}");
                let _ = o.flush();
            }
        }
    });
    let schedule = Schedule::new(&w.spec.phases, w.spec.arrivals, w.spec.seed)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let me = std::process::id();
    let rss_start = wirebench_peer::usage(me).map(|u| u.rss_bytes / 1024);
    let last = match run_worker(&schedule, w.part, &w.spec.script, stop, |i| {
        let _ = tx.send(Ok(i));
    }) {
        Ok(mut summary) => {
            summary.rss_start_kib = rss_start;
            summary.rss_peak_kib = peak_rss_kib();
            summary.cpu_s = wirebench_peer::usage(me).map(|u| u.cpu_s);
            WorkerLine::Done(summary)
        }
        Err(e) => WorkerLine::Failed(e.to_string()),
    };
    let _ = tx.send(Err(last));
    drop(tx);
    let _ = writer.join();
    Ok(())
}

/// This process's highest resident memory (VmHWM), KiB.
fn peak_rss_kib() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs a load case against a built-in server started for it.
pub fn run(env: &Env, case: &Case, repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let (mut spec, real) = checked_spec(env, case, repeat)?;
    let schedule = spec.schedule()?;
    // This run's share of the schedule: all of it, or its shard's slice.
    let shards = env.shard.map_or(1, |s| s.count as usize);
    let peak = schedule.peak(spec.peak_stay()).div_ceil(shards);
    let needs = room_needed(&spec, real.is_some(), peak)?;
    // The server: an external one, a real one started for the case, or the built-in one
    // sized for the peak (worker processes when one process cannot hold it).
    let in_process = spec.target.is_none() && real.is_none() && peak <= IN_PROCESS;
    let (server, placed) = place_server(env, case, &mut spec, schedule.len(), peak, in_process)?;
    // As many as the open files need, and no more (a Tsung run beside it uses as many
    // VMs).
    let generators = room::generators(peak, server.is_some());
    // Start far enough ahead for every generator process to be up; a shard at the start
    // all shards agree on.
    let lead = Duration::from_millis(if in_process { 100 } else { 500 });
    let (t0, agreed) = agree_start(env, case, repeat, lead, ctx)?;
    let series = Arc::new(Mutex::new(Series::new()));
    let summaries = Arc::new(Mutex::new(Vec::<WorkerSummary>::new()));
    let total = match env.shard {
        Some(sh) => (0..generators)
            .map(|g| {
                let (w, n) = sh.worker(g, generators);
                schedule.share(w, n).count() as u64
            })
            .sum(),
        None => schedule.len() as u64,
    };
    let progress = |s: &Series| {
        let c = s.counts();
        (ctx.progress)(c.logged_in + c.failures(), total);
    };
    let gen_pids = Arc::new(Mutex::new(Vec::<u32>::new()));
    let probe = match (&server, &placed) {
        (Some(s), _) if !in_process => Some(ServerProbe::Builtin(s.stats.clone())),
        (_, Some(r)) => r.server.pid().map(ServerProbe::Pid),
        (Some(_), _) => Some(ServerProbe::Threads),
        _ => None,
    };
    let sampler = UsageSampler::start(t0, spec.width, gen_pids.clone(), in_process, probe);
    let to = Collect {
        series: &series,
        summaries: &summaries,
        progress: &progress,
        pids: &gen_pids,
    };
    let result = if in_process {
        run_in_process(&mut spec, &schedule, t0, ctx, &to).map(|()| Vec::new())
    } else {
        run_processes(&spec, generators, env.shard, t0, ctx, &to)
    };
    // What the server used, before it stops.
    let usage = sampler.finish();
    let server = server.map(|s| s.stop(in_process));
    let placed = placed.map(Placed::stop);
    let lost = result?;

    let series = std::mem::take(&mut *series.lock().unwrap_or_else(|e| e.into_inner()));
    let summaries = std::mem::take(&mut *summaries.lock().unwrap_or_else(|e| e.into_inner()));
    let mut out = Outcome::default();
    let (peak_active, logged_in) =
        push_session_figures(&mut out, &series, &summaries, total, spec.width);
    if let Some(s) = &server {
        push_builtin_usage(&mut out, s, in_process, peak_active);
    }
    push_generator_usage(&mut out, &summaries, peak_active, logged_in);
    if let Some(l) = usage.login_cpu(&series, spec.width) {
        push_login_cpu(&mut out, &l);
    }
    if let Some(s) = &server {
        out.put(SERVER_ROUTED, s.routed as f64);
        wirebench_peer::record_sessions(&mut out, s.bound);
    }
    if let Some(p) = &placed
        && let Some(u) = p.end
    {
        push_placed_usage(&mut out, p, u, &usage, peak_active, logged_in);
    }
    wirebench_peer::record_kernel_tcp(&mut out);
    // The intervals, whole, for `wirebench merge`: case-NNNN-rK.load.intervals.jsonl.
    let intervals = format!("case-{:04}-r{repeat}.load.intervals.jsonl", case.index);
    write_result(env, &intervals, series.to_intervals_file(total, spec.width))?;
    if let (Some(sh), Some(start)) = (env.shard, &agreed) {
        push_shard(&mut out, sh, start, total, schedule.len());
    }
    // The time series beside the records: case-NNNN-rK.load.csv.
    let name = format!("case-{:04}-r{repeat}.load.csv", case.index);
    let csv = usage.append_to(&series.csv(spec.width), spec.width, in_process);
    write_result(env, &name, csv)?;
    if peak > IN_PROCESS {
        out.notes.push(format!("load: {}", needs.describe()));
    }
    out.notes.push(format!(
        "load: {total} sessions, peak {peak_active} at once, {generators} generator(s); server: {}; time series in {name}",
        match (&server, &placed) {
            (Some(s), _) => s.layout.clone(),
            (None, Some(p)) => format!(
                "{} on {} (its files in {})",
                p.name,
                spec.script.addrs[0],
                p.dir.display()
            ),
            (None, None) => format!("{} (load.target)", spec.script.addrs[0]),
        }
    ));
    if let Some(e) = summaries.iter().find_map(|s| s.first_error.clone()) {
        out.notes.push(format!("first failure: {e}"));
    }
    let failure = if lost.is_empty() {
        target_gone(&series, spec.width, &spec.script.addrs[0].to_string())
    } else {
        Some(WorkloadError::Environment(format!(
            "{} of {generators} load generators ended without reporting: {}; the figures hold what each reported until it ended",
            lost.len(),
            lost.join("; ")
        )))
    };
    match failure {
        Some(error) => Err(WorkloadError::FailedAfter {
            outcome: Box::new(out),
            error: Box::new(error),
        }),
        None => Ok(out),
    }
}

/// The case's failure when its server stopped listening: connections refused (nothing
/// listening: a backlog that overflows drops SYNs, it does not refuse them). Sessions
/// that fail in other ways (timeouts, stream errors, resets) are what a load test
/// measures; a refused connection means there was no server left to measure.
fn target_gone(series: &Series, width: Duration, addr: &str) -> Option<WorkloadError> {
    let c = series.counts();
    let refused = c.failures_of(Cause::Refused);
    if refused == 0 {
        return None;
    }
    let from = series
        .intervals()
        .find(|i| i.counts.failures_of(Cause::Refused) > 0)
        .map_or(0.0, |i| i.index as f64 * width.as_secs_f64());
    let others: Vec<String> = Cause::ALL
        .iter()
        .filter(|k| **k != Cause::Refused && c.failures_of(**k) > 0)
        .map(|k| format!("{} {}", c.failures_of(*k), k.name()))
        .collect();
    let broke = if others.is_empty() {
        String::new()
    } else {
        format!("; other failed sessions: {}", others.join(", "))
    };
    Some(WorkloadError::Peer(format!(
        "the XMPP server at {addr} refused {refused} connection(s) from {from:.0}s on: nothing was listening (it stopped, or never started); {} session(s) had logged in{broke}; the figures so far are kept",
        c.logged_in
    )))
}

/// What the case's peak needs on this machine (memory, open files, tracked
/// connections), refused before anything starts when it cannot fit; a large one says
/// what it needs on stderr as it starts.
fn room_needed(spec: &LoadSpec, real: bool, peak: usize) -> Result<Needs, WorkloadError> {
    // A server on this machine (ours, a real one, or one on loopback) holds the other end.
    let ends = match spec.target {
        Some(t) if !t.ip().is_loopback() => Ends::GeneratorOnly,
        Some(_) => Ends::BothHere,
        None if real => Ends::BothHere,
        None => Ends::BothOurs,
    };
    // As the built-in server lays itself out (it raises its open-file limit to the hard
    // one): a process per limit's worth of its sessions, and at least one per core.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_worker = open_file_limit().1.saturating_sub(256).max(1) as usize;
    let workers = (peak + peak / 10 + 100).div_ceil(per_worker).max(cores);
    let needs = Needs::of(peak, ends, workers);
    needs
        .check(&Machine::read())
        .map_err(WorkloadError::Environment)?;
    if peak > IN_PROCESS {
        eprintln!("load: {}", needs.describe());
    }
    Ok(needs)
}

/// Refuses a load case that asks for what the workload cannot do (a link, a server link,
/// two servers, a sharded server per shard, TLS to a real server): before the run (the
/// plugin's `Protocol::check`) and again at the case's start.
pub fn check(case: &Case, at: &wirebench_protocol::Placement) -> Result<(), WorkloadError> {
    if at.lab {
        return Err(WorkloadError::Input(
            "the load workload runs on loopback for now (no link parameters)".into(),
        ));
    }
    if case.has(&S2S) {
        return Err(WorkloadError::Input(
            "the load workload runs one server: no s2s (xmpp.server chooses the server)".into(),
        ));
    }
    let spec = LoadSpec::from_case(case, 0)?;
    // Choices checked by the parameter table; s2s (which would imply Prosody) refused above.
    let real = real_server(case);
    if let (Some(r), Some(t)) = (real, spec.target) {
        return Err(WorkloadError::Input(format!(
            "load.target={t} and xmpp.server={}: a case loads either a server it starts or one \
             already running, not both",
            r.name()
        )));
    }
    if let Some((index, count)) = at.shard
        && (spec.target.is_none() || real.is_some())
    {
        return Err(WorkloadError::Input(format!(
            "shard {index}/{count}: a sharded load case needs load.target=HOST:PORT, the one \
             server every shard loads (a server started per shard would split the sessions \
             between servers)"
        )));
    }
    if let (Some(r), true) = (real, spec.script.tls) {
        return Err(WorkloadError::Input(format!(
            "load.tls=on with xmpp.server={} is not supported yet (the built-in server and \
             load.target are)",
            r.name()
        )));
    }
    Ok(())
}

/// The case's load specification ([`check`]ed), with the real server it starts, if any.
fn checked_spec(
    env: &Env,
    case: &Case,
    repeat: u32,
) -> Result<(LoadSpec, Option<Server>), WorkloadError> {
    let at = wirebench_protocol::Placement {
        lab: env.lab.is_some(),
        shard: env.shard.map(|s| (s.index, s.count)),
    };
    check(case, &at)?;
    let mut spec = LoadSpec::from_case(case, env.seed)?;
    if spec.samples {
        let stem = format!("case-{:04}-r{repeat}.load.samples", case.index);
        spec.script.samples = Some(env.out.join(stem));
    }
    Ok((spec, real_server(case)))
}

/// Points the sessions at their server: the one at `load.target`, a real one started for
/// the case, or the built-in one (returned, with a real one, to be stopped after the run).
fn place_server(
    env: &Env,
    case: &Case,
    spec: &mut LoadSpec,
    sessions: usize,
    peak: usize,
    in_process: bool,
) -> Result<(Option<Builtin>, Option<Placed>), WorkloadError> {
    Ok(match (spec.target, real_server(case)) {
        (Some(addr), _) => {
            spec.script.addrs = vec![addr];
            (None, None)
        }
        (None, Some(kind)) => {
            let r = start_real(kind, env, case, spec, sessions, peak)?;
            spec.script.addrs = vec![r.addr];
            (None, Some(r))
        }
        (None, None) => {
            let s = start_builtin(spec, sessions, peak, in_process)?;
            spec.script.addrs = s.addrs.clone();
            spec.script.tls_cert = s.cert.clone();
            (Some(s), None)
        }
    })
}

/// The run's start on `CLOCK_MONOTONIC`, `lead` from now, or the start all shards agree
/// on (with what this shard knows of how well it kept it).
fn agree_start(
    env: &Env,
    case: &Case,
    repeat: u32,
    lead: Duration,
    ctx: &Ctx,
) -> Result<(u64, Option<Start>), WorkloadError> {
    let Some(sh) = env.shard else {
        return Ok((monotonic_ns() + lead.as_nanos() as u64, None));
    };
    let start = sh
        .align
        .start(case.index, repeat, lead, ctx.shutdown)
        .map_err(|e| {
            if ctx.shutdown.load(Ordering::SeqCst) {
                WorkloadError::Interrupted
            } else {
                WorkloadError::Environment(format!("shard {}/{}: {e}", sh.index, sh.count))
            }
        })?;
    Ok((start.t0_mono_ns, Some(start)))
}

/// Runs the whole schedule on one generator thread inside wirebench.
fn run_in_process(
    spec: &mut LoadSpec,
    schedule: &Schedule,
    t0: u64,
    ctx: &Ctx,
    to: &Collect<'_>,
) -> Result<(), WorkloadError> {
    spec.script.from = vec![IpAddr::V4(Ipv4Addr::new(127, 0, 1, 1))];
    let part = Part {
        worker: 0,
        workers: 1,
        t0,
        width: spec.width,
    };
    run_worker(schedule, part, &spec.script, ctx.shutdown, |i| {
        let mut s = to.series.lock().unwrap_or_else(|e| e.into_inner());
        s.add(&i);
        (to.progress)(&s);
    })
    .map(|summary| {
        to.summaries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(summary)
    })
    .map_err(|e| WorkloadError::because(Fault::Environment, "load generator", e))
}

/// The sessions' figures (the series' metrics and histograms, the rosters the server
/// holds and its presence fan-out, as the clients saw them); returns the peak of active
/// sessions and the logins.
fn push_session_figures(
    out: &mut Outcome,
    series: &Series,
    summaries: &[WorkerSummary],
    total: u64,
    width: Duration,
) -> (i64, u64) {
    let figures = series.figures(total, width);
    for (name, v, unit) in &figures.metrics {
        out.push(name, *v, unit);
    }
    out.histograms.extend(figures.histograms);
    let logged_in = series.counts().logged_in;
    let roster_items: u64 = summaries.iter().map(|s| s.roster_items).sum();
    let presences: u64 = summaries.iter().map(|s| s.presences).sum();
    if logged_in > 0 {
        out.put(LOAD_ROSTER_ITEMS, roster_items as f64 / logged_in as f64);
    }
    out.put(LOAD_PRESENCES, presences as f64);
    (figures.peak_active, logged_in)
}

/// What the built-in server used.
fn push_builtin_usage(out: &mut Outcome, s: &BuiltinUsage, in_process: bool, peak_active: i64) {
    out.put(SERVER_CPU, s.cpu);
    // A server inside wirebench shares its memory with the generator thread: not
    // separable, not recorded.
    if !in_process && s.rss_peak_kib > 0 {
        out.put(SERVER_RSS, (s.rss_peak_kib * 1024) as f64);
        if peak_active > 0 {
            let per =
                s.rss_peak_kib.saturating_sub(s.rss_start_kib) as f64 * 1024.0 / peak_active as f64;
            out.put(SERVER_RSS_PER_SESSION, per);
        }
    }
}

/// Generator processes' own figures (a generator thread shares wirebench's process).
fn push_generator_usage(
    out: &mut Outcome,
    summaries: &[WorkerSummary],
    peak_active: i64,
    logged_in: u64,
) {
    let gens: Vec<&WorkerSummary> = summaries
        .iter()
        .filter(|s| s.rss_peak_kib.is_some())
        .collect();
    if !gens.is_empty() && gens.len() == summaries.len() {
        let peak: u64 = gens.iter().filter_map(|s| s.rss_peak_kib).sum();
        let start: u64 = gens.iter().filter_map(|s| s.rss_start_kib).sum();
        let cpu: f64 = gens.iter().filter_map(|s| s.cpu_s).sum();
        out.put(GENERATOR_RSS, (peak * 1024) as f64);
        out.put(GENERATOR_CPU, cpu);
        if peak_active > 0 {
            let per = peak.saturating_sub(start) as f64 * 1024.0 / peak_active as f64;
            out.put(GENERATOR_RSS_PER_SESSION, per);
        }
        if logged_in > 0 {
            out.put(GENERATOR_CPU_PER_SESSION, cpu / logged_in as f64);
        }
    }
}

/// What a real server started for the case used: CPU from start to end, memory at the
/// highest sample less what it held before the first session.
fn push_placed_usage(
    out: &mut Outcome,
    p: &PlacedUsage,
    end: wirebench_peer::Usage,
    usage: &Usage,
    peak_active: i64,
    logged_in: u64,
) {
    let top = usage
        .rows
        .values()
        .filter_map(|r| r.server.map(|s| s.0))
        .max();
    let cpu = end.cpu_s - p.start.cpu_s;
    out.put(SERVER_CPU, cpu);
    if let Some(top) = top {
        out.put(SERVER_RSS, (top * 1024) as f64);
        if peak_active > 0 {
            let per =
                top.saturating_sub(p.start.rss_bytes / 1024) as f64 * 1024.0 / peak_active as f64;
            out.put(SERVER_RSS_PER_SESSION, per);
        }
    }
    if logged_in > 0 {
        out.put(SERVER_CPU_PER_SESSION, cpu / logged_in as f64);
    }
    wirebench_peer::record_sessions(out, logged_in);
}

/// This shard's place and how well it kept the agreed start.
fn push_shard(
    out: &mut Outcome,
    sh: &wirebench_protocol::Shard<'_>,
    start: &Start,
    total: u64,
    sessions: usize,
) {
    out.put(SHARD_INDEX, sh.index as f64);
    out.put(SHARD_COUNT, sh.count as f64);
    out.put(SHARD_START_MARGIN, start.margin_s);
    if let Some(o) = start.offset_s {
        out.put(SHARD_CLOCK_OFFSET, o);
    }
    if let Some(e) = start.error_s {
        out.put(SHARD_CLOCK_ERROR, e);
    }
    out.notes.push(format!(
        "shard {}/{}: {total} of the schedule's {sessions} sessions; started by {} at {}, {}",
        sh.index,
        sh.count,
        start.method,
        start.unix_ns,
        if start.margin_s >= 0.0 {
            format!("ready {:.3} s before", start.margin_s)
        } else {
            format!(
                "{:.3} s LATE (its first sessions started late)",
                -start.margin_s
            )
        }
    ));
}

/// Writes one of the case's files beside the records.
fn write_result(env: &Env, name: &str, contents: String) -> Result<(), WorkloadError> {
    let path = env.out.join(name);
    std::fs::write(&path, contents).map_err(|e| {
        WorkloadError::because(
            Fault::Environment,
            format!("cannot write {}", path.display()),
            e,
        )
    })
}

/// Prosody or ejabberd, started for a load case on loopback.
struct Placed {
    server: RealServer,
    name: &'static str,
    addr: std::net::SocketAddr,
    dir: std::path::PathBuf,
    /// What it used once started, before the first session.
    start: wirebench_peer::Usage,
}

/// What a [`Placed`] server used, read as it stops.
struct PlacedUsage {
    name: &'static str,
    dir: std::path::PathBuf,
    start: wirebench_peer::Usage,
    /// At the end of the case (`None` if it had died).
    end: Option<wirebench_peer::Usage>,
}

impl Placed {
    /// Reads what it used and stops it (SIGTERM, then SIGKILL, as it drops). The accounts
    /// and rosters written for it (a file or two per user) go with it; its logs stay with
    /// the results.
    fn stop(self) -> PlacedUsage {
        let end = self.server.usage();
        let Placed {
            server,
            name,
            dir,
            start,
            ..
        } = self;
        drop(server);
        for sub in ["data", "prosody-data", "spool"] {
            let _ = std::fs::remove_dir_all(dir.join(sub));
        }
        PlacedUsage {
            name,
            dir,
            start,
            end,
        }
    }
}

/// Starts Prosody or ejabberd on 127.0.0.1 with the accounts (and rosters) of every session
/// of the schedule, its files in the case's own directory under the results.
fn start_real(
    kind: Server,
    env: &Env,
    case: &Case,
    spec: &LoadSpec,
    sessions: usize,
    peak: usize,
) -> Result<Placed, WorkloadError> {
    let name = kind.name();
    // One process holds every session: its open-file limit caps them.
    let files = open_file_limit().0;
    let cap = files.saturating_sub(1_000) as usize;
    if peak > cap {
        return Err(WorkloadError::Input(format!(
            "{name} runs as one process, and a process may open {files} files here (ulimit -n): \
             at most {cap} sessions at once, but this case's peak is {peak}; lower load.phases' \
             rate or load.stay"
        )));
    }
    // Any free port: a fixed one could be taken by a server the user runs.
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| WorkloadError::because(Fault::Environment, "no free port on 127.0.0.1", e))?;
    let mut cfg = PeerConfig::new(&spec.script.domain, [127, 0, 0, 1].into());
    cfg.c2s_port = port;
    cfg.s2s = false;
    cfg.for_load = true;
    cfg.numbered = Some(wirebench_xmpp::NumberedAccounts {
        user_prefix: "user".into(),
        password_prefix: "pass".into(),
        users: spec.script.user(sessions.saturating_sub(1)).max(1),
        contacts: spec.contacts,
        domain: spec.script.domain.clone(),
    });
    let dir = env.out.join(format!("case-{:04}-{name}", case.index));
    let server = kind
        .start(cfg, &dir, None)
        .map_err(|e| WorkloadError::Environment(e.to_string()))?;
    Ok(Placed {
        start: server.usage().unwrap_or_default(),
        server,
        name,
        addr: ([127, 0, 0, 1], port).into(),
        dir,
    })
}

/// This process's open-file limit, soft and hard (its children inherit it).
fn open_file_limit() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        (r.rlim_cur, r.rlim_max)
    } else {
        (20_000, 20_000)
    }
}

/// The built-in server while a case runs.
struct Builtin {
    /// Its STARTTLS certificate (DER), if it offers STARTTLS.
    cert: Option<Vec<u8>>,
    addrs: Vec<std::net::SocketAddr>,
    layout: String,
    stats: Arc<wirebench_xmpp_server::ServerStats>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<io::Result<()>>,
    /// Its worker processes' memory before the first session, KiB.
    rss_start_kib: u64,
}

/// What the built-in server used, read as it stops.
struct BuiltinUsage {
    layout: String,
    cpu: f64,
    rss_start_kib: u64,
    rss_peak_kib: u64,
    routed: u64,
    bound: u64,
}

/// Starts the built-in server for a case: accounts for every session of the schedule,
/// room for the peak, worker processes unless it runs `in_process`.
fn start_builtin(
    spec: &LoadSpec,
    sessions: usize,
    peak: usize,
    in_process: bool,
) -> Result<Builtin, WorkloadError> {
    let mut cfg = wirebench_xmpp_server::XmppServerConfig::new(
        ([127, 0, 0, 1], 0).into(),
        &spec.script.domain,
        spec.script.user(sessions),
    );
    cfg.accounts.numbered.contacts = spec.contacts;
    cfg.sessions = peak + peak / 10 + 100;
    cfg.processes = !in_process;
    // Each worker on its own port, so that the generators can send a block of arrivals to
    // the same worker (`Schedule::worker_of`) rather than SO_REUSEPORT's hash spreading
    // every second's logins over all of them.
    cfg.port_per_worker = !in_process;
    cfg.max_stanza = cfg.max_stanza.max(spec.script.payload + 4096);
    let mut cert = None;
    if spec.script.tls {
        let id = wirebench_xmpp_server::self_signed(&spec.script.domain)
            .map_err(WorkloadError::Environment)?;
        cert = Some(id.cert_der().to_vec());
        cfg.tls = Some(id);
    }
    let server = wirebench_xmpp_server::XmppServer::bind(cfg).map_err(|e| {
        WorkloadError::because(Fault::Environment, "cannot start the XMPP server", e)
    })?;
    let layout = server.layout().to_string();
    let addrs = server.layout().addrs.clone();
    let stats = server.stats.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = server.spawn(stop.clone()).map_err(|e| {
        WorkloadError::because(Fault::Environment, "cannot start the XMPP server", e)
    })?;
    // With worker processes, their memory before the first session (they report twice a
    // second).
    let mut rss_start_kib = 0;
    if !in_process {
        let until = std::time::Instant::now() + Duration::from_secs(3);
        while stats.rss_kib.load(Ordering::Relaxed) == 0 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        rss_start_kib = stats.rss_kib.load(Ordering::Relaxed);
    }
    Ok(Builtin {
        cert,
        addrs,
        layout,
        stats,
        stop,
        thread,
        rss_start_kib,
    })
}

impl Builtin {
    /// Reads what the server used (its threads' CPU, or its worker processes' memory at
    /// their highest and CPU) and stops it.
    fn stop(self, in_process: bool) -> BuiltinUsage {
        let cpu = if in_process {
            wirebench_xmpp_server::worker_cpu_seconds()
        } else {
            self.stats.cpu_ms.load(Ordering::Relaxed) as f64 / 1000.0
        };
        let usage = BuiltinUsage {
            layout: self.layout,
            cpu,
            rss_start_kib: self.rss_start_kib,
            rss_peak_kib: self.stats.rss_peak_kib.load(Ordering::Relaxed),
            routed: self.stats.routed.load(Ordering::Relaxed),
            bound: self.stats.bound.load(Ordering::Relaxed),
        };
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
        usage
    }
}

/// Where generator processes' reports go: the merged series, their summaries, progress,
/// and their PIDs (for the usage sampler).
struct Collect<'a> {
    series: &'a Arc<Mutex<Series>>,
    summaries: &'a Arc<Mutex<Vec<WorkerSummary>>>,
    progress: &'a (dyn Fn(&Series) + Sync),
    pids: &'a Mutex<Vec<u32>>,
}

/// Runs `generators` generator processes and merges what they report.
fn run_processes(
    spec: &LoadSpec,
    generators: usize,
    shard: Option<&wirebench_protocol::Shard<'_>>,
    t0: u64,
    ctx: &Ctx,
    to: &Collect<'_>,
) -> Result<Vec<String>, WorkloadError> {
    let exe = std::env::current_exe().map_err(|e| {
        WorkloadError::because(Fault::Environment, "cannot find wirebench itself", e)
    })?;
    let mut children: Vec<Child> = Vec::new();
    let spawn_all = (|| -> io::Result<()> {
        for w in 0..generators {
            let mut spec = spec.clone();
            // Each generator its own source address: 22,768 source ports each. Towards a
            // server elsewhere (the lab, a cluster) the kernel picks the address and the
            // port, from its ephemeral range.
            // Numbered across all shards, so shards on one machine never share one.
            let (worker, workers) = shard.map_or((w, generators), |s| s.worker(w, generators));
            let local = spec.script.addrs.iter().all(|a| a.ip().is_loopback());
            spec.script.from = if local {
                vec![IpAddr::V4(Ipv4Addr::new(
                    127,
                    0,
                    1 + (worker / 250) as u8,
                    1 + (worker % 250) as u8,
                ))]
            } else {
                Vec::new()
            };
            let part = Part {
                worker,
                workers,
                t0,
                width: spec.width,
            };
            let mut child = Command::new(&exe)
                .arg(WORKER_COMMAND)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()?;
            let text =
                serde_json::to_string(&WorkerSpec { spec, part }).map_err(io::Error::other)?;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(text.as_bytes())?;
            }
            to.pids
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(child.id());
            children.push(child);
        }
        Ok(())
    })();
    let stop_all = |children: &mut Vec<Child>| {
        for c in children.iter() {
            // SAFETY: signals a generator process this case started, by its PID.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        for c in children.iter_mut() {
            wirebench_peer::stop_child(c, Duration::from_secs(10));
        }
    };
    if let Err(e) = spawn_all {
        stop_all(&mut children);
        return Err(WorkloadError::because(
            Fault::Environment,
            "cannot start a load generator",
            e,
        ));
    }
    let failed: Mutex<Option<String>> = Mutex::new(None);
    let reported: Vec<AtomicBool> = children.iter().map(|_| AtomicBool::new(false)).collect();
    std::thread::scope(|scope| {
        let mut readers = Vec::new();
        for (c, reported) in children.iter_mut().zip(&reported) {
            let Some(stdout) = c.stdout.take() else {
                continue;
            };
            let failed = &failed;
            readers.push(scope.spawn(move || {
                for line in io::BufReader::new(stdout).lines().map_while(Result::ok) {
                    match serde_json::from_str::<WorkerLine>(&line) {
                        Ok(WorkerLine::Interval(w)) => match Interval::from_wire(&w) {
                            Ok(i) => {
                                let mut s = to.series.lock().unwrap_or_else(|e| e.into_inner());
                                s.add(&i);
                                (to.progress)(&s);
                            }
                            Err(e) => {
                                failed
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .get_or_insert(e);
                            }
                        },
                        Ok(WorkerLine::Done(s)) => {
                            reported.store(true, Ordering::Relaxed);
                            to.summaries
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(s);
                        }
                        Ok(WorkerLine::Failed(e)) => {
                            failed
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert(format!("a load generator failed: {e}"));
                        }
                        Err(_) => {}
                    }
                }
            }));
        }
        // Ctrl-C: the generators close their sessions and report what they have.
        let mut told = false;
        while readers.iter().any(|r| !r.is_finished()) {
            if !told && ctx.shutdown.load(Ordering::Relaxed) {
                told = true;
                for c in children.iter() {
                    // SAFETY: signals a generator process this case started, by its PID.
                    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    // How the silent ones ended, read before stop_all reaps them as its own.
    let lost: Vec<String> = children
        .iter_mut()
        .zip(&reported)
        .enumerate()
        .filter(|(_, (_, r))| !r.load(Ordering::Relaxed))
        .map(|(i, (c, _))| {
            let how = match c.try_wait() {
                Ok(Some(status)) => format!("{status}"),
                _ => "still running, stopped".to_string(),
            };
            format!("generator {} (pid {}, {how})", i + 1, c.id())
        })
        .collect();
    stop_all(&mut children);
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(WorkloadError::Environment(e));
    }
    if ctx.shutdown.load(Ordering::Relaxed) {
        return Ok(Vec::new());
    }
    Ok(lost)
}

#[cfg(test)]
mod tests {
    use super::{ARRIVALS, ONLINE, arrivals_from_word};

    /// The specs and the code cannot drift: a choice added to a spec needs a meaning.
    #[test]
    fn every_choice_parses() {
        for w in ARRIVALS.choices() {
            assert!(arrivals_from_word(w).is_some(), "load.arrivals={w}");
        }
        // `half` is the one that changes the accounts' stride; `all` is the rest.
        assert_eq!(ONLINE.choices(), ["all", "half"]);
    }
}
