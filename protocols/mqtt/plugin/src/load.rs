//! The `load` workload of `--protocol mqtt` (issue #51; docs/load.md, "MQTT"): sessions
//! arriving in Tsung-style phases (`load.phases`, the schedule of `wirebench-load`)
//! against a Mosquitto broker started for the case, each running the script of
//! [`open_loop`] (MQTT 3.1.1 or 5.0, topology `pairs`, QoS 0 or 1), with the per-interval
//! time series written beside the record and the totals as the case's metrics.
//!
//! One generator thread (the case's own) drives every session from one mio event loop;
//! the broker is one process. Each session is a socket on each side, so the open-file
//! limit of one process caps the sessions held at once: a schedule whose peak would pass
//! it is refused before anything starts.

pub mod open_loop;

use crate::MQTT_LOAD_ACKED;
use crate::MQTT_LOAD_CONNECTS_PER_S_MAX;
use crate::MQTT_LOAD_DELIVERED;
use crate::MQTT_LOAD_DUPLICATES;
use crate::MQTT_LOAD_EXPECTED;
use crate::MQTT_LOAD_MISSING;
use crate::MQTT_LOAD_UNSENT;
use crate::broker::{Broker, BrokerOptions};
use open_loop::{HEADER, Script, Summary};
use std::net::Ipv4Addr;
use std::time::Duration;
use wirebench_load::{Arrivals, Cause, Dist, Interval, Phase, Schedule, Series};
use wirebench_model::Kind;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::GENERATOR_CPU_PER_SESSION;
use wirebench_model::metric::GENERATOR_RSS_PER_SESSION;
use wirebench_model::metric::SERVER_CPU;
use wirebench_model::metric::{
    GENERATOR_CPU, SERVER_CPU_PER_SESSION, SERVER_RSS, SERVER_RSS_PER_SESSION,
};
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Case, Ctx, Env, Fault, Outcome, Placement, WorkloadError};

use wirebench_session_load::LOAD;
pub use wirebench_session_load::{ARRIVALS, EVERY, INTERVAL, PHASES, STAY, THINK, TIMEOUT};

/// `mqtt.topology`: who publishes to whom. `pairs` only, so far (issue #51 adds fan-in,
/// fan-out and shared subscriptions).
pub const TOPOLOGY: ParamSpec = ParamSpec {
    name: "mqtt.topology",
    kind: Kind::Choice(&["pairs"]),
    default: "pairs",
    workloads: LOAD,
    help: "who publishes to whom in a load: pairs (sessions 2k and 2k+1 each subscribe to their own topic, wb/<N>, and publish to the other's)",
    words: "topology",
};

pub const PARAMS: &[ParamSpec] = &[
    PHASES, ARRIVALS, STAY, EVERY, THINK, INTERVAL, TIMEOUT, TOPOLOGY,
];

/// The CONNECT's Keep Alive: a session that publishes every second never pings; an idle
/// one (`load.every=0`) sends a PINGREQ a minute.
const KEEP_ALIVE_S: u16 = 60;

/// Open files a process keeps beside its sessions (wirebench's own, Mosquitto's
/// listeners and log): the sessions held at once get the rest of the limit.
const FILES_SLACK: u64 = 1_000;

/// A load case's settings, read from the case.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub phases: Vec<Phase>,
    pub arrivals: Arrivals,
    pub seed: u64,
    pub width: Duration,
    /// The sessions' script; its broker address is set once the broker listens.
    pub script: Script,
}

impl LoadSpec {
    pub fn from_case(case: &Case, seed: u64) -> Result<LoadSpec, WorkloadError> {
        let word = |spec: &ParamSpec| case.choice(spec).to_string();
        let phases = wirebench_load::parse_phases(&word(&PHASES))
            .map_err(|e| WorkloadError::Input(format!("{}: {e}", PHASES.name)))?;
        let dist = |spec: &ParamSpec| {
            Dist::parse(&word(spec))
                .map_err(|e| WorkloadError::Input(format!("{}: {e}", spec.name)))
        };
        let every = dist(&EVERY)?;
        let payload = case.payload() as usize;
        if payload < HEADER {
            return Err(WorkloadError::Input(format!(
                "payload={payload}: an MQTT load message carries a {HEADER}-byte header \
                 (its intended send time, number and whether its subscriber was ready); \
                 give payload={HEADER} or more"
            )));
        }
        Ok(LoadSpec {
            phases,
            arrivals: match case.choice(&ARRIVALS) {
                "uniform" => Arrivals::Uniform,
                _ => Arrivals::Poisson,
            },
            seed,
            width: case
                .duration(&INTERVAL)
                .unwrap_or(Duration::from_secs(1))
                .max(Duration::from_millis(10)),
            script: Script {
                broker: (Ipv4Addr::LOCALHOST, 0).into(),
                version: crate::workload::version_of(case),
                qos: crate::workload::qos_of(case),
                stay: dist(&STAY)?,
                think: dist(&THINK)?,
                every: (!every.is_zero()).then_some(every),
                seed,
                timeout: case.duration(&TIMEOUT).unwrap_or(Duration::from_secs(30)),
                payload,
                keep_alive_s: KEEP_ALIVE_S,
            },
        })
    }

    pub fn schedule(&self) -> Result<Schedule, WorkloadError> {
        Schedule::new(&self.phases, self.arrivals, self.seed)
            .map_err(|e| WorkloadError::because(Fault::Input, "load.phases", e))
    }

    /// The stay that sizes the check of open files: the longest there can be, except for
    /// an exponential, whose concurrency settles near rate x mean (Little's law); a
    /// quarter more for its fluctuation.
    fn peak_stay(&self) -> Duration {
        match self.script.stay {
            Dist::Exp(mean) => mean + mean / 4,
            d => d.max(),
        }
    }

    /// When the case gives up on sessions still open: the last arrival's longest stay,
    /// its timeout and the leaving grace after it.
    fn deadline(&self, schedule: &Schedule) -> Duration {
        let last = schedule.start(schedule.len().saturating_sub(1));
        last + self.script.stay.max() + self.script.timeout + Duration::from_secs(10)
    }
}

/// Seconds a load case takes: the last arrival (or, at a broker that accepts fewer
/// connections a second than arrive, its last accept), its longest stay, the broker's
/// start and a leaving margin.
pub fn estimate_secs(case: &Case) -> Option<f64> {
    let spec = LoadSpec::from_case(case, 0).ok()?;
    let schedule = spec.schedule().ok()?;
    let last = schedule
        .start(schedule.len().saturating_sub(1))
        .as_secs_f64();
    let accepted = match crate::broker_of(case).accepts_per_s() {
        Some(rate) => last.max(schedule.len() as f64 / rate),
        None => last,
    };
    Some(accepted + spec.script.stay.max().as_secs_f64() + 2.0)
}

/// This process's open-file limit, soft and hard (the broker inherits it).
fn open_file_limit() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        (r.rlim_cur, r.rlim_max)
    } else {
        (1024, 1024)
    }
}

/// Raises this process's soft open-file limit to its hard one, for the generator's
/// sessions and the broker it starts (which inherits it).
fn raise_open_files() -> u64 {
    let (soft, hard) = open_file_limit();
    if soft < hard {
        let r = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct it is given; raising the soft limit up to
        // the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } == 0 {
            return hard;
        }
    }
    soft
}

/// Refuses a load case the workload cannot run: a link (loopback only), a sharded run, a
/// peak of sessions one process's open files cannot hold. Before the run
/// (`Protocol::check`) and again at the case's start.
pub fn check(case: &Case, at: &Placement) -> Result<(), WorkloadError> {
    if at.lab {
        return Err(WorkloadError::Input(
            "the MQTT load workload runs on loopback for now (no link parameters)".into(),
        ));
    }
    if let Some((index, count)) = at.shard {
        return Err(WorkloadError::Input(format!(
            "shard {index}/{count}: the MQTT load workload does not run sharded yet (each \
             shard would start its own broker)"
        )));
    }
    let spec = LoadSpec::from_case(case, 0)?;
    let peak = spec.schedule()?.peak(spec.peak_stay()) as u64;
    let hard = open_file_limit().1;
    let cap = hard.saturating_sub(FILES_SLACK);
    if peak > cap {
        return Err(WorkloadError::Input(format!(
            "this case holds up to {peak} MQTT sessions at once, but the broker runs as one \
             process and the generator as one thread, and a process may open {hard} files \
             here (the hard limit, ulimit -Hn): at most {cap} sessions at once; lower \
             load.phases' rate or load.stay (peak = arrivals within any load.stay)"
        )));
    }
    Ok(())
}

/// What the case's processes used at the end of one interval.
#[derive(Debug, Clone, Copy, Default)]
struct UsageRow {
    gen_rss_kib: u64,
    gen_cpu_pct: f64,
    broker_rss_kib: u64,
    broker_cpu_pct: f64,
}

/// Samples wirebench (the generator thread's process) and the broker as intervals close.
struct Sampler {
    broker: u32,
    width: Duration,
    last: Option<(wirebench_peer::Usage, wirebench_peer::Usage)>,
    rows: std::collections::BTreeMap<u64, UsageRow>,
    /// Before the first session.
    start: (wirebench_peer::Usage, wirebench_peer::Usage),
}

impl Sampler {
    fn new(broker: u32, width: Duration) -> Sampler {
        let read = || {
            (
                wirebench_peer::usage(std::process::id()).unwrap_or_default(),
                wirebench_peer::usage(broker).unwrap_or_default(),
            )
        };
        let start = read();
        Sampler {
            broker,
            width,
            last: Some(start),
            rows: Default::default(),
            start,
        }
    }

    fn sample(&mut self, index: u64) {
        let now = (
            wirebench_peer::usage(std::process::id()).unwrap_or_default(),
            wirebench_peer::usage(self.broker).unwrap_or_default(),
        );
        let w = self.width.as_secs_f64();
        let pct = |a: f64, b: f64| ((a - b) / w * 100.0).max(0.0);
        let (g0, b0) = self.last.unwrap_or(now);
        self.rows.insert(
            index,
            UsageRow {
                gen_rss_kib: now.0.rss_bytes / 1024,
                gen_cpu_pct: pct(now.0.cpu_s, g0.cpu_s),
                broker_rss_kib: now.1.rss_bytes / 1024,
                broker_cpu_pct: pct(now.1.cpu_s, b0.cpu_s),
            },
        );
        self.last = Some(now);
    }

    /// The series' CSV with the usage columns the report charts (`wirebench_*`: the
    /// generator runs inside wirebench; `server_*`: the broker).
    fn append_to(&self, csv: &str) -> String {
        let mut out = String::with_capacity(csv.len() * 2);
        let mut lines = csv.lines();
        if let Some(head) = lines.next() {
            out.push_str(head);
            out.push_str(",wirebench_rss_mib,wirebench_cpu_pct,server_rss_mib,server_cpu_pct\n");
        }
        let w = self.width.as_secs_f64();
        for line in lines {
            out.push_str(line);
            let end: f64 = line
                .split(',')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            let index = ((end / w).round() as u64).saturating_sub(1);
            let mib = |k: u64| k as f64 / 1024.0;
            match self.rows.get(&index) {
                Some(r) => out.push_str(&format!(
                    ",{:.1},{:.1},{:.1},{:.1}\n",
                    mib(r.gen_rss_kib),
                    r.gen_cpu_pct,
                    mib(r.broker_rss_kib),
                    r.broker_cpu_pct
                )),
                None => out.push_str(",,,,\n"),
            }
        }
        out
    }
}

/// Runs a load case against a Mosquitto started for it.
pub fn run(env: &Env, case: &Case, repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let at = Placement {
        lab: env.lab.is_some(),
        shard: env.shard.map(|s| (s.index, s.count)),
    };
    check(case, &at)?;
    let mut spec = LoadSpec::from_case(case, env.seed)?;
    let schedule = spec.schedule()?;
    let files = raise_open_files();
    let peak = schedule.peak(spec.peak_stay()) as u64;
    if peak + FILES_SLACK > files {
        return Err(WorkloadError::Environment(format!(
            "this case holds up to {peak} sessions at once, but this process may open only \
             {files} files (ulimit -n) and could not raise it"
        )));
    }
    let dir = env.peer_dir(case, repeat);
    let opts = BrokerOptions {
        nodelay: true,
        load: true,
        v5: spec.script.version == wirebench_mqtt::Version::V5,
    };
    let kind = crate::broker_of(case);
    let mut broker = Broker::start(kind, None, &dir, Ipv4Addr::LOCALHOST.into(), opts)?;
    spec.script.broker = broker.addr;
    let total = schedule.len() as u64;
    let mut series = Series::new();
    let mut sampler = Sampler::new(broker.pid(), spec.width);
    let t0 = monotonic_ns() + 100_000_000;
    let deadline = t0 + spec.deadline(&schedule).as_nanos() as u64;
    let result = open_loop::run(
        &schedule,
        t0,
        spec.width,
        &spec.script,
        ctx.shutdown,
        deadline,
        |i: Interval| {
            sampler.sample(i.index);
            series.add(&i);
            let c = series.counts();
            (ctx.progress)(c.logged_in + c.failures(), total);
        },
    );
    let exited = broker.exited();
    let stopped = ctx.shutdown.load(std::sync::atomic::Ordering::Relaxed);
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            return Err(WorkloadError::because(
                Fault::Environment,
                "MQTT load generator",
                e,
            ));
        }
    };
    let mut out = Outcome::default();
    let peak_active = push_figures(&mut out, &series, &summary, total, spec.width);
    push_usage(&mut out, &sampler, peak_active, series.counts().logged_in);
    out.put(GENERATOR_CPU, summary.cpu_s);
    if series.counts().logged_in > 0 {
        let per = summary.cpu_s / series.counts().logged_in as f64;
        out.put(GENERATOR_CPU_PER_SESSION, per);
    }
    wirebench_peer::record_kernel_tcp(&mut out);
    let intervals = format!("case-{:04}-r{repeat}.load.intervals.jsonl", case.index);
    write_result(env, &intervals, series.to_intervals_file(total, spec.width))?;
    let name = format!("case-{:04}-r{repeat}.load.csv", case.index);
    write_result(env, &name, sampler.append_to(&series.csv(spec.width)))?;
    out.notes.push(format!(
        "load: {total} sessions, peak {peak_active} at once, MQTT {} at QoS {}, topology \
         pairs, 1 generator thread; broker: {} at {} (its files in {}); time series \
         in {name}",
        spec.script.version.name(),
        spec.script.qos.bits(),
        kind.words(),
        broker.addr,
        broker.dir.display()
    ));
    if let Some(e) = &summary.first_error {
        out.notes.push(format!("first failure: {e}"));
    }
    let ended_at = Duration::from_nanos(monotonic_ns().saturating_sub(t0)).as_secs_f64();
    if stopped {
        // Interrupted: the runner records the case so, with what it measured.
        let error = WorkloadError::Environment(format!(
            "stopped at {ended_at:.1} s of the schedule; {} session(s) open then were closed",
            summary.cut_short
        ));
        return Err(WorkloadError::FailedAfter {
            outcome: Box::new(out),
            error: Box::new(error),
        });
    }
    if summary.cut_short > 0 {
        out.notes.push(format!(
            "the load reached its deadline at {ended_at:.1} s with {} session(s) still open, \
             closed then (the generator or the broker fell far behind)",
            summary.cut_short
        ));
    }
    match broker_gone(&series, spec.width, &mut broker, exited) {
        Some(error) => Err(WorkloadError::FailedAfter {
            outcome: Box::new(out),
            error: Box::new(error),
        }),
        None => Ok(out),
    }
}

/// The series' figures (`load.*`, `messages.*`), and MQTT's own: delivered against
/// expected, the connect rate. Returns the peak of sessions held.
fn push_figures(
    out: &mut Outcome,
    series: &Series,
    s: &Summary,
    total: u64,
    width: Duration,
) -> i64 {
    let figures = series.figures(total, width);
    for (name, v, unit) in &figures.metrics {
        out.push(name, *v, unit);
    }
    out.histograms.extend(figures.histograms);
    let best = series
        .intervals()
        .map(|i| i.counts.connected)
        .max()
        .unwrap_or(0);
    out.put(
        MQTT_LOAD_CONNECTS_PER_S_MAX,
        best as f64 / width.as_secs_f64(),
    );
    out.put(MQTT_LOAD_EXPECTED, s.expected as f64);
    out.put(MQTT_LOAD_DELIVERED, s.delivered as f64);
    out.put(
        MQTT_LOAD_MISSING,
        s.expected.saturating_sub(s.delivered) as f64,
    );
    out.put(MQTT_LOAD_DUPLICATES, s.duplicates as f64);
    out.put(MQTT_LOAD_ACKED, s.acked as f64);
    out.put(MQTT_LOAD_UNSENT, s.unsent as f64);
    figures.peak_active
}

/// Memory and CPU of the generator (wirebench's process, from before the first session
/// to its highest sample) and of the broker, per session held at the peak.
fn push_usage(out: &mut Outcome, sampler: &Sampler, peak_active: i64, held: u64) {
    let top = |f: fn(&UsageRow) -> u64| sampler.rows.values().map(f).max().unwrap_or(0);
    let (g0, b0) = sampler.start;
    let gen_top = top(|r| r.gen_rss_kib) * 1024;
    let broker_top = top(|r| r.broker_rss_kib) * 1024;
    if peak_active > 0 {
        let per = |top: u64, start: u64| top.saturating_sub(start) as f64 / peak_active as f64;
        out.put(GENERATOR_RSS_PER_SESSION, per(gen_top, g0.rss_bytes));
        out.put(SERVER_RSS_PER_SESSION, per(broker_top, b0.rss_bytes));
    }
    out.put(SERVER_RSS, broker_top as f64);
    if let Some((_, b)) = sampler.last {
        let cpu = (b.cpu_s - b0.cpu_s).max(0.0);
        out.put(SERVER_CPU, cpu);
        if held > 0 {
            out.put(SERVER_CPU_PER_SESSION, cpu / held as f64);
        }
    }
    wirebench_peer::record_sessions(out, held);
}

/// The case's failure when the broker stopped listening (connections refused) or exited:
/// the figures so far are kept with it.
fn broker_gone(
    series: &Series,
    width: Duration,
    broker: &mut Broker,
    exited: Option<std::process::ExitStatus>,
) -> Option<WorkloadError> {
    let refused = series.counts().failures_of(Cause::Refused);
    if refused == 0 && exited.is_none() {
        return None;
    }
    let from = series
        .intervals()
        .find(|i| i.counts.failures_of(Cause::Refused) > 0)
        .map_or(0.0, |i| i.index as f64 * width.as_secs_f64());
    let how = match exited {
        Some(status) => format!(
            "{} exited ({status}):\n{}",
            broker.kind.name(),
            broker.log_tail(10)
        ),
        None => format!("its log: {}", broker.log().display()),
    };
    Some(WorkloadError::Peer(format!(
        "the broker at {} refused {refused} connection(s) from {from:.0}s on; {} session(s) \
         had subscribed; {how}",
        broker.addr,
        series.counts().logged_in
    )))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_columns_follow_the_series_rows() {
        let mut s = Sampler {
            broker: 0,
            width: Duration::from_secs(1),
            last: None,
            rows: Default::default(),
            start: Default::default(),
        };
        s.rows.insert(
            1,
            UsageRow {
                gen_rss_kib: 2048,
                gen_cpu_pct: 50.0,
                broker_rss_kib: 1024,
                broker_cpu_pct: 10.0,
            },
        );
        let csv = s.append_to("seconds,active\n1,3\n2,4\n");
        let rows: Vec<&str> = csv.lines().collect();
        assert!(rows[0].ends_with(",server_cpu_pct"), "{}", rows[0]);
        assert_eq!(rows[1], "1,3,,,,");
        assert_eq!(rows[2], "2,4,2.0,50.0,1.0,10.0");
    }
}
