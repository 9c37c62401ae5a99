//! `rmi`: Java RMI (the Java SE RMI specification's JRMP over TCP), study S5's own
//! protocol, with the JDK's implementation: `protocols/rmi/java/WbRmi.java`, compiled
//! with `javac` at the first case of a run, gives a server (`WbRmiServer`, started per
//! case in the lab's server host or on loopback) and a client (`WbRmiClient`, run per
//! case where this thread's sockets live). The client prints one JSON line; this plugin
//! turns it into the same metrics as every other protocol. `docs/protocols/soapstone.md`.
//!
//! It does not declare `rate` or `connections` (the Java client is closed-loop, one call
//! in flight), so the planner drops them from rmi cases with a note.

use serde::Deserialize;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wirebench_model::metric::BYTES_PAYLOAD;
use wirebench_model::metric::CONNECT_HANDSHAKE;
use wirebench_model::metric::THROUGHPUT_BITS_PER_S;
use wirebench_model::metric::THROUGHPUT_DURATION;
use wirebench_model::metric::THROUGHPUT_MESSAGES_PER_S;
use wirebench_peer::stop_child;
use wirebench_protocol::Fault;
use wirebench_protocol::params::{MODE, Mode, ParamSpec};
use wirebench_protocol::prereq::{on_path, program_path};
use wirebench_protocol::stats::{push_counts, push_load_rtts, push_rtts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::{
    Case, CaseLink, Ctx, Env, Install, Lookup, Outcome, Prerequisite, Protocol, Requirement,
    StartUp, TICK, Workload, WorkloadError,
};

/// The Java sources, compiled at run time (the binary carries them).
const SOURCE: &str = include_str!("../../java/WbRmi.java");
const PARAMS: &[ParamSpec] = &[MODE];
/// A JDK: javac compiles the pair at a run's first case, java runs it.
pub const JDK: Requirement = Requirement {
    name: "javac (JDK)",
    lookup: Lookup::Find(|| {
        on_path("java")?;
        on_path("javac")
    }),
    install: Install::Debian("default-jdk-headless"),
};

pub struct Rmi;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Rmi;

impl Protocol for Rmi {
    fn name(&self) -> &'static str {
        "rmi"
    }

    fn summary(&self) -> &'static str {
        "Java RMI with the JDK's own implementation (a small client/server pair compiled with javac at run time)"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn servers(&self, _case: &Case) -> Option<&'static str> {
        Some("Java RMI servers (JVMs) started per case")
    }

    fn prerequisites(&self, _case: &Case) -> Vec<Prerequisite> {
        vec![JDK.because("protocol=rmi")]
    }

    fn stream_echoes(&self, case: &Case) -> bool {
        Mode::of(case).is_echo()
    }

    /// Two JVMs per case (server and client) cost a second beside the workload; javac at
    /// the run's first case 2.8 s more (soapstone's rmi cases, 1 s streams: 2.0 s each,
    /// the first 4.8 s).
    fn start_up(&self, _case: &Case) -> StartUp {
        StartUp {
            each: 1.0,
            once: 2.8,
        }
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        let classes = compile(&env.out.join("peers").join("rmi-classes"))?;
        let think = case.workload_params().think();
        let dir = env.peer_dir(case, repeat);
        std::fs::create_dir_all(&dir).map_err(|e| {
            WorkloadError::because(
                Fault::Environment,
                format!("cannot create {}", dir.display()),
                e,
            )
        })?;
        let ip = wirebench_rpc::server::server_ip(env.lab);
        let mut server = Server::start(env, &classes, &dir, ip, think, env.seed)?;
        let args = client_args(case, env.seed, &format!("{ip}:{}", server.port), ctx)?;
        let r = run_client(&classes, &dir, &args, ctx);
        server.stop();
        let report = r?;
        outcome(case, report, think)
    }
}

fn java_missing(program: &str) -> WorkloadError {
    WorkloadError::Environment(format!(
        "rmi cases need a JDK ({program} is not installed); install it with: {}",
        JDK.install
    ))
}

/// Compiles the pair into `dir` unless a compile of these same sources is there.
fn compile(dir: &Path) -> Result<PathBuf, WorkloadError> {
    let stamp = dir.join("source.java");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == SOURCE)
        && dir.join("WbRmiServer.class").exists()
    {
        return Ok(dir.to_path_buf());
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        WorkloadError::because(
            Fault::Environment,
            format!("cannot create {}", dir.display()),
            e,
        )
    })?;
    let src = dir.join("WbRmi.java");
    std::fs::write(&src, SOURCE).map_err(|e| {
        WorkloadError::because(
            Fault::Environment,
            format!("cannot write {}", src.display()),
            e,
        )
    })?;
    let out = Command::new(program_path("javac"))
        .arg("-nowarn")
        .arg("-d")
        .arg(dir)
        .arg(&src)
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => java_missing("javac"),
            _ => WorkloadError::because(Fault::Environment, "cannot run javac", e),
        })?;
    if !out.status.success() {
        return Err(WorkloadError::Environment(format!(
            "javac failed on the RMI sources: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    std::fs::write(&stamp, SOURCE).map_err(|e| {
        WorkloadError::because(
            Fault::Environment,
            format!("cannot write {}", stamp.display()),
            e,
        )
    })?;
    Ok(dir.to_path_buf())
}

/// A running `WbRmiServer`; it stops when its stdin closes, and is killed by PID if it
/// does not.
struct Server {
    child: Option<Child>,
    port: u16,
}

impl Server {
    fn start(
        env: &Env,
        classes: &Path,
        dir: &Path,
        ip: std::net::IpAddr,
        think: Duration,
        seed: u64,
    ) -> Result<Server, WorkloadError> {
        let log = std::fs::File::create(dir.join("rmi-server.log"))
            .map_err(|e| WorkloadError::because(Fault::Environment, "server log", e))?;
        let mut cmd = Command::new(program_path("java"));
        cmd.arg("-cp")
            .arg(classes)
            .arg("WbRmiServer")
            .arg("--listen")
            .arg(format!("{ip}:0"))
            .arg("--think-ns")
            .arg(think.as_nanos().to_string())
            .arg("--seed")
            .arg(seed.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log);
        // Its sockets must live in the lab's server host: spawn from a thread that is
        // there (a child inherits the spawning thread's network namespace).
        let netns = env.lab.map(|l| l.server().name().to_string());
        let spawned = std::thread::scope(|s| {
            s.spawn(|| -> Result<Child, WorkloadError> {
                if let Some(ns) = &netns {
                    wirebench_protocol::hosts::enter(ns)
                        .map_err(|e| WorkloadError::Environment(e.to_string()))?;
                }
                cmd.spawn().map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => java_missing("java"),
                    _ => WorkloadError::because(Fault::Environment, "cannot start java", e),
                })
            })
            .join()
            .unwrap_or_else(|_| Err(WorkloadError::Environment("spawn panicked".into())))
        })?;
        let mut server = Server {
            child: Some(spawned),
            port: 0,
        };
        let stdout = server
            .child
            .as_mut()
            .and_then(|c| c.stdout.take())
            .ok_or_else(|| WorkloadError::Environment("no server stdout".into()))?;
        // A JVM takes a second or two to start; the line comes from a thread so a hung
        // JVM cannot hang the case.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        match line
            .trim()
            .strip_prefix("ready ")
            .and_then(|p| p.parse().ok())
        {
            Some(p) => server.port = p,
            None => {
                server.stop();
                let log = std::fs::read_to_string(dir.join("rmi-server.log")).unwrap_or_default();
                return Err(WorkloadError::Peer(format!(
                    "the RMI server did not come up (it printed {:?}): {}",
                    line.trim(),
                    log.trim()
                )));
            }
        }
        Ok(server)
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            drop(c.stdin.take());
            stop_child(&mut c, Duration::from_secs(3));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn client_args(
    case: &Case,
    seed: u64,
    server: &str,
    ctx: &Ctx,
) -> Result<Vec<String>, WorkloadError> {
    let mut a = vec![
        "--server".to_string(),
        server.to_string(),
        "--payload".into(),
        case.payload().to_string(),
        "--seed".into(),
        seed.to_string(),
        "--timeout-ms".into(),
        (ctx.stall_timeout + case.workload_params().think())
            .as_millis()
            .to_string(),
    ];
    match case.workload_params() {
        Workload::PingPong { rounds, .. } => {
            a.extend([
                "--workload".into(),
                "pingpong".into(),
                "--rounds".into(),
                rounds.to_string(),
            ]);
        }
        Workload::Stream { count, duration } => {
            let mode = case.choice(&MODE);
            a.extend([
                "--workload".into(),
                "stream".into(),
                "--mode".into(),
                mode.into(),
            ]);
            if let Some(c) = count {
                a.extend(["--count".into(), c.to_string()]);
            }
            if let Some(d) = duration {
                a.extend(["--duration-ms".into(), d.as_millis().max(1).to_string()]);
            }
        }
        Workload::Load | Workload::Connect => {
            return Err(WorkloadError::Input(format!(
                "rmi has no {} workload",
                case.workload()
            )));
        }
    }
    Ok(a)
}

/// The client's report (protocols/rmi/java/README.md).
#[derive(Debug, Deserialize)]
struct Report {
    lookup_ns: u64,
    sent: u64,
    received: u64,
    corrupt: u64,
    elapsed_ns: u64,
    #[serde(default)]
    rtts_ns: Vec<u64>,
    #[serde(default)]
    server_messages: u64,
    #[serde(default)]
    server_bad: u64,
}

fn run_client(
    classes: &Path,
    dir: &Path,
    args: &[String],
    ctx: &Ctx,
) -> Result<Report, WorkloadError> {
    let err_path = dir.join("rmi-client.log");
    let err = std::fs::File::create(&err_path)
        .map_err(|e| WorkloadError::because(Fault::Environment, "client log", e))?;
    let mut child = Command::new(program_path("java"))
        .arg("-cp")
        .arg(classes)
        .arg("WbRmiClient")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => java_missing("java"),
            _ => WorkloadError::because(Fault::Environment, "cannot start java", e),
        })?;
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| WorkloadError::Environment("no stdout".into()))?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        // One JSON line; bounded so a runaway client cannot fill memory.
        let _ = (&mut stdout).take(256 << 20).read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if ctx.shutdown.load(Ordering::Relaxed) {
            stop_child(&mut child, Duration::from_secs(1));
            return Err(WorkloadError::Interrupted);
        }
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => std::thread::sleep(TICK),
            Err(e) => {
                return Err(WorkloadError::because(
                    Fault::Environment,
                    "waiting for java",
                    e,
                ));
            }
        }
        (ctx.progress)(started.elapsed().as_secs(), 0);
    };
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        let why = std::fs::read_to_string(&err_path).unwrap_or_default();
        let why = why.trim();
        return Err(if status.code() == Some(2) {
            WorkloadError::Input(format!("the RMI client refused its arguments: {why}"))
        } else {
            WorkloadError::Peer(format!("the RMI client failed: {why}"))
        });
    }
    serde_json::from_str(out.trim()).map_err(|e| {
        WorkloadError::Peer(format!(
            "the RMI client's report is not the expected JSON ({e}): {:?}",
            out.chars().take(200).collect::<String>()
        ))
    })
}

fn outcome(case: &Case, r: Report, think: Duration) -> Result<Outcome, WorkloadError> {
    let mut out = Outcome::default();
    out.put(CONNECT_HANDSHAKE, secs(r.lookup_ns));
    out.notes.push(
        "connect.handshake is the RMI registry lookup in a fresh JVM (class loading included)"
            .into(),
    );
    let mut tally = Tally::new();
    tally.counts.received = r.received;
    tally.counts.lost = r.sent.saturating_sub(r.received);
    tally.counts.corrupt = r.corrupt + r.server_bad;
    push_counts(&mut out, r.sent, &tally);
    match case.workload_params() {
        Workload::PingPong { .. } => {
            let think_ns = think.as_nanos() as u64;
            let rtts: Vec<u64> = r
                .rtts_ns
                .iter()
                .map(|t| t.saturating_sub(think_ns))
                .collect();
            push_rtts(&mut out, rtts);
            out.notes.push(
                "a new JVM per case: the first rounds run interpreted, before the JIT compiles them"
                    .into(),
            );
        }
        _ => {
            let echo = Mode::of(case).is_echo();
            let delivered = if echo { r.received } else { r.server_messages };
            let bytes = delivered * case.payload();
            if r.elapsed_ns > 0 {
                let t = secs(r.elapsed_ns);
                out.put(THROUGHPUT_DURATION, t);
                out.put(THROUGHPUT_BITS_PER_S, bytes as f64 * 8.0 / t);
                out.put(THROUGHPUT_MESSAGES_PER_S, delivered as f64 / t);
            }
            out.put(BYTES_PAYLOAD, bytes as f64);
            if echo {
                push_load_rtts(&mut out, &r.rtts_ns);
            }
            out.notes.push(
                "stream: one RMI call in flight, each sent when the last returned (RMI has no one-way call: sink() returns an empty reply)"
                    .into(),
            );
        }
    }
    Ok(out)
}
