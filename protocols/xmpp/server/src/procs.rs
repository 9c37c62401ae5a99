//! Worker processes: how the built-in server outgrows one process's open-file limit.
//!
//! The parent binds every worker's listener and makes every pair of workers' Unix socket
//! pair (so a port in use or a missing permission is reported before anything starts),
//! then runs its own executable once per worker as `EXE xmpp-worker --index I`, handing
//! it, at fixed descriptor numbers, its listener (3) and its links (4, 5, ...: to the
//! other workers in index order). The configuration goes in on the worker's stdin as one
//! JSON document; the worker's counters come back on its stdout, one JSON line about
//! twice a second and one at exit, which the parent sums into the server's [`ServerStats`].
//!
//! Stopping: Ctrl-C reaches every worker (same process group); the parent also sends
//! each worker SIGTERM by its PID when told to stop, and KILLs one that has not exited
//! five seconds later. A worker whose parent is gone stops by itself (checked every
//! second), and if one worker dies the parent stops the rest and reports it.

use crate::accounts::Accounts;
use crate::config::{TlsIdentity, XmppServerConfig};
use crate::fabric::{link_of, mesh};
use crate::layout::{Layout, open_file_limit};
use crate::stats::{ServerStats, StatsSnapshot};
use crate::worker;
use std::io::{self, BufRead, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirebench_xmpp::NumberedAccounts;

/// The subcommand a worker process runs as; the `wirebench` binary routes it to
/// [`worker_main`].
pub const WORKER_COMMAND: &str = "xmpp-worker";
/// A worker's listener; its links follow.
const FIRST_FD: i32 = 3;

/// What a worker process is told on its stdin.
#[derive(serde::Serialize, serde::Deserialize)]
struct Spec {
    index: usize,
    workers: usize,
    per_process: usize,
    domain: String,
    user_prefix: String,
    password_prefix: String,
    users: u64,
    contacts: u64,
    users_file: Option<std::path::PathBuf>,
    roster_file: Option<std::path::PathBuf>,
    handshake_timeout_ms: u64,
    max_queued: usize,
    max_stanza: usize,
    tls: Option<(Vec<u8>, Vec<u8>)>,
    /// The parent's ban policy (`serve --ban-after`, `--ban-for`): strikes, lifetime.
    ban: (u32, u64),
}

/// Runs one worker process per listener (`listeners[i]` is worker `i`'s) until
/// `shutdown` is set, summing their reports into `stats`.
pub(crate) fn run(
    cfg: &XmppServerConfig,
    layout: &Layout,
    listeners: Vec<std::net::TcpListener>,
    stats: &Arc<ServerStats>,
    shutdown: &AtomicBool,
) -> io::Result<()> {
    use command_fds::{CommandFdExt, FdMapping};
    let n = layout.workers;
    let exe = std::env::current_exe()?;
    let mut links = mesh(n)?;
    let reports: Arc<Mutex<Vec<StatsSnapshot>>> = Arc::default();
    let mut children: Vec<Child> = Vec::new();
    let mut readers = Vec::new();
    let started = (|| -> io::Result<()> {
        for (index, listener) in listeners.into_iter().enumerate() {
            let mut fds = vec![FdMapping {
                parent_fd: OwnedFd::from(listener),
                child_fd: FIRST_FD,
            }];
            for (k, end) in std::mem::take(&mut links[index])
                .into_iter()
                .flatten()
                .enumerate()
            {
                fds.push(FdMapping {
                    parent_fd: end.into(),
                    child_fd: FIRST_FD + 1 + k as i32,
                });
            }
            let mut cmd = Command::new(&exe);
            cmd.args([WORKER_COMMAND, "--index", &index.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit());
            cmd.fd_mappings(fds)
                .map_err(|e| io::Error::other(format!("worker {index}: {e}")))?;
            let mut child = cmd.spawn().map_err(|e| {
                io::Error::new(e.kind(), format!("cannot start {}: {e}", exe.display()))
            })?;
            let spec = spec_of(cfg, index, n, layout.per_process);
            let mut stdin = child.stdin.take().expect("piped");
            let out = child.stdout.take().expect("piped");
            children.push(child);
            serde_json::to_writer(&mut stdin, &spec).map_err(io::Error::other)?;
            drop(stdin);
            reports
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(StatsSnapshot::default());
            let (reports, stats) = (reports.clone(), stats.clone());
            readers.push(std::thread::spawn(move || {
                read_reports(out, index, &reports, &stats)
            }));
        }
        Ok(())
    })();

    let mut failure = started.err();
    while failure.is_none() && !shutdown.load(Ordering::Relaxed) {
        for (i, c) in children.iter_mut().enumerate() {
            if let Ok(Some(status)) = c.try_wait() {
                failure = Some(io::Error::other(format!(
                    "worker process {i} (pid {}) exited ({status}); stopping the others",
                    c.id()
                )));
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Signal them all first, then wait: they shut down side by side.
    for c in &children {
        if let Ok(pid) = i32::try_from(c.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
    for c in &mut children {
        wirebench_peer::stop_child(c, Duration::from_secs(5));
    }
    for r in readers {
        let _ = r.join();
    }
    failure.map_or(Ok(()), Err)
}

fn spec_of(cfg: &XmppServerConfig, index: usize, workers: usize, per_process: usize) -> Spec {
    let (users_file, roster_file) = cfg.accounts.files();
    Spec {
        index,
        workers,
        per_process,
        domain: cfg.domain.clone(),
        user_prefix: cfg.accounts.numbered.user_prefix.clone(),
        password_prefix: cfg.accounts.numbered.password_prefix.clone(),
        users: cfg.accounts.numbered.users,
        contacts: cfg.accounts.numbered.contacts,
        users_file,
        roster_file,
        handshake_timeout_ms: cfg.handshake_timeout.as_millis() as u64,
        max_queued: cfg.max_queued,
        max_stanza: cfg.max_stanza,
        tls: cfg
            .tls
            .as_ref()
            .map(|t| (t.cert_der.clone(), t.key_der.clone())),
        ban: {
            let p = wirebench_net::ban::policy();
            (p.strikes, p.lifetime.as_millis() as u64)
        },
    }
}

/// Keeps worker `index`'s latest counters and the sum of all in `stats`.
fn read_reports(
    out: impl Read,
    index: usize,
    reports: &Mutex<Vec<StatsSnapshot>>,
    stats: &ServerStats,
) {
    for line in io::BufReader::new(out).lines() {
        let Ok(line) = line else { return };
        let Ok(snap) = serde_json::from_str::<StatsSnapshot>(&line) else {
            continue;
        };
        let mut all = reports.lock().unwrap_or_else(|p| p.into_inner());
        all[index] = snap;
        let sum = all.iter().fold(StatsSnapshot::default(), |acc, s| acc + *s);
        stats.store(&sum);
    }
}

/// A worker process's life: reads its `Spec` from stdin, claims its descriptors, serves
/// until `shutdown` is set or its parent is gone, reporting its counters on stdout.
pub fn worker_main(index: usize, shutdown: &AtomicBool) -> io::Result<()> {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input)?;
    let spec: Spec = serde_json::from_str(&input).map_err(|e| {
        io::Error::other(format!(
            "`{WORKER_COMMAND}` is started by `wirebench serve --xmpp`, not by hand \
             (bad configuration on stdin: {e})"
        ))
    })?;
    if spec.index != index || index >= spec.workers {
        return Err(io::Error::other("worker index or count does not match"));
    }
    wirebench_net::ban::configure(wirebench_net::ban::Policy {
        strikes: spec.ban.0,
        lifetime: std::time::Duration::from_millis(spec.ban.1),
        ..wirebench_net::ban::DEFAULT_POLICY
    });
    let listener = std::net::TcpListener::from(claim(FIRST_FD)?);
    let mut links = Vec::with_capacity(spec.workers);
    let mut next = FIRST_FD + 1;
    for w in 0..spec.workers {
        if w == index {
            links.push(None);
        } else {
            let s = std::os::unix::net::UnixStream::from(claim(next)?);
            links.push(Some(link_of(s)?));
            next += 1;
        }
    }
    let mut cfg = XmppServerConfig::new(listener.local_addr()?, &spec.domain, spec.users);
    // Each worker reads the files again (the parent checked them): one copy per worker.
    cfg.accounts = Accounts::numbered(NumberedAccounts {
        user_prefix: spec.user_prefix,
        password_prefix: spec.password_prefix,
        users: spec.users,
        contacts: spec.contacts,
        domain: spec.domain.clone(),
    });
    if let Some(f) = &spec.users_file {
        cfg.accounts.load_users(f).map_err(io::Error::other)?;
    }
    if let Some(f) = &spec.roster_file {
        cfg.accounts.load_rosters(f).map_err(io::Error::other)?;
    }
    cfg.handshake_timeout = Duration::from_millis(spec.handshake_timeout_ms);
    cfg.max_queued = spec.max_queued;
    cfg.max_stanza = spec.max_stanza;
    cfg.tls = spec
        .tls
        .map(|(cert_der, key_der)| TlsIdentity { cert_der, key_der });
    let scfg = cfg.session_config().map_err(io::Error::other)?;
    // Raise the soft limit as the parent did: this process holds its own share.
    open_file_limit();
    let stats = ServerStats::default();
    let parent = std::os::unix::process::parent_id();
    let also_stop = move || std::os::unix::process::parent_id() != parent;
    let done = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let reporter = sc.spawn(|| {
            let mut last = None;
            while !done.load(Ordering::Relaxed) {
                report(&stats, &mut last);
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        let r = worker::mio_listener(listener).and_then(|l| {
            worker::run(
                worker::WorkerCtx {
                    id: index,
                    workers: spec.workers,
                    cfg: &cfg,
                    scfg,
                    stats: &stats,
                    max_sessions: spec.per_process,
                    shutdown,
                    also_stop: &also_stop,
                },
                l,
                links,
            )
        });
        done.store(true, Ordering::Relaxed);
        let _ = reporter.join();
        report(&stats, &mut None);
        r
    })
}

/// Prints the counters on stdout if they changed since `last`, with this process's
/// memory and CPU.
fn report(stats: &ServerStats, last: &mut Option<StatsSnapshot>) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    stats.rss_kib.store(kib("VmRSS:"), Ordering::Relaxed);
    stats.rss_peak_kib.store(kib("VmHWM:"), Ordering::Relaxed);
    if let Some(u) = wirebench_peer::usage(std::process::id()) {
        stats
            .cpu_ms
            .store((u.cpu_s * 1000.0) as u64, Ordering::Relaxed);
        let ms = |s: f64| (s * 1000.0) as u64;
        stats.cpu_user_ms.store(ms(u.user_s), Ordering::Relaxed);
        stats.cpu_sys_ms.store(ms(u.sys_s), Ordering::Relaxed);
    }
    let now = stats.snapshot();
    if *last != Some(now) {
        let mut out = io::stdout().lock();
        if serde_json::to_writer(&mut out, &now).is_ok() {
            let _ = out.write_all(b"\n");
            let _ = out.flush();
        }
        *last = Some(now);
    }
}

/// Takes ownership of descriptor `fd`, which the parent mapped into this process.
fn claim(fd: i32) -> io::Result<OwnedFd> {
    // Refuse a number that is not open rather than own a stranger's (or nothing).
    std::fs::symlink_metadata(format!("/proc/self/fd/{fd}")).map_err(|e| {
        io::Error::other(format!(
            "descriptor {fd} is not open ({e}): `{WORKER_COMMAND}` is started by \
             `wirebench serve --xmpp`, not by hand"
        ))
    })?;
    // SAFETY: `fd` is open (checked above) and was mapped into this process by the parent
    // for this worker alone (command-fds, before exec); nothing else in this process
    // refers to it, and it is claimed once, at start-up.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
