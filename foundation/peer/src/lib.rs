//! The process toolkit: what every protocol that places third-party servers (Prosody,
//! ngircd, microsocks, ...) in lab hosts shares: their errors, finding and starting them in a host's namespace,
//! waiting for their ports, stopping a child by its PID, and quoting its logs. Each server's
//! own configuration, start and readiness live in its protocol's folder
//! (`protocols/xmpp/plugin/src/prosody.rs`, `protocols/irc/plugin/src/ngircd.rs`).

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use wirebench_model::metric::KERNEL_TCP_MEM;
use wirebench_model::metric::SERVER_CPU;
use wirebench_model::metric::SERVER_CPU_PER_SESSION;
use wirebench_model::metric::SERVER_RSS;
use wirebench_model::metric::SERVER_RSS_PER_SESSION;
use wirebench_model::metric::SERVER_SESSIONS;

/// A peer's failures, typed as the interface's (a case's `?` turns them into its
/// [`wirebench_protocol::WorkloadError`], by who is at fault).
pub use wirebench_protocol::PeerError;

/// Stops a server we started: SIGTERM, then SIGKILL after `grace`. Only this child's PID
/// is signalled (never by name); `ip netns exec` execs the server in place, so the PID is
/// the server's own.
pub fn stop_child(child: &mut std::process::Child, grace: std::time::Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    // SAFETY: signalling our own child by pid (not yet reaped, so not reused).
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A third-party server we started (ngircd, mosquitto, microsocks, ss-server, ...): its
/// PID and usage while it runs, and [`stop_child`] with its own grace period when stopped
/// or dropped, so no server outlives its case.
#[derive(Debug)]
pub struct PeerProcess {
    child: Option<Child>,
    grace: Duration,
}

impl PeerProcess {
    /// Holds `child`; stopping it gives it `grace` between SIGTERM and SIGKILL.
    pub fn new(child: Child, grace: Duration) -> PeerProcess {
        PeerProcess {
            child: Some(child),
            grace,
        }
    }

    /// Holds `child` once [`wait_ports`] says it is ready; if it is not, it is stopped at
    /// once (1 s of grace: it never served anyone) and the error returned.
    #[allow(clippy::too_many_arguments)] // wait_ports's own, plus the child and its grace
    pub fn ready(
        child: Child,
        grace: Duration,
        what: &str,
        addr: IpAddr,
        ports: &[u16],
        netns: Option<&str>,
        limit: Duration,
        logs: impl Fn() -> String,
    ) -> Result<PeerProcess, PeerError> {
        let mut p = PeerProcess::new(child, grace);
        if let Err(e) = p.wait_ports(what, addr, ports, netns, limit, logs) {
            p.grace = Duration::from_secs(1);
            p.stop();
            return Err(e);
        }
        Ok(p)
    }

    /// [`wait_ports`] for this server; `Ok` at once if it has been stopped.
    pub fn wait_ports(
        &mut self,
        what: &str,
        addr: IpAddr,
        ports: &[u16],
        netns: Option<&str>,
        limit: Duration,
        logs: impl Fn() -> String,
    ) -> Result<(), PeerError> {
        match &mut self.child {
            Some(child) => wait_ports(child, what, addr, ports, netns, limit, logs),
            None => Ok(()),
        }
    }

    /// The server's PID (the spawned process itself: `ip netns exec` execs in place);
    /// `None` once stopped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// What the server uses now (`None` once stopped or gone).
    pub fn usage(&self) -> Option<Usage> {
        usage(self.pid()?)
    }

    /// Whether it has exited by itself (and how); `None` while it runs or once stopped.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Stops the server: SIGTERM, then SIGKILL after its grace. Only its PID is signalled.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_child(&mut child, self.grace);
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A third-party server started for a case and listening at `addr`; stopped (by its PID)
/// when dropped.
pub struct ListeningPeer {
    _process: PeerProcess,
    pub addr: SocketAddr,
}

impl ListeningPeer {
    /// What the server uses now (`None` once gone).
    pub fn usage(&self) -> Option<Usage> {
        self._process.usage()
    }
}

/// Starts `cmd`, a server named `name` that is to listen on `ip:port` (in `netns`), with
/// its output in DIR/NAME.out, and waits up to 10 s until it accepts connections. Stopping
/// it gives it 2 s. A start that fails quotes the last 20 lines of that output and of
/// `logs`.
pub fn start_listening(
    mut cmd: Command,
    name: &str,
    dir: &std::path::Path,
    (ip, port): (IpAddr, u16),
    netns: Option<&str>,
    logs: &[std::path::PathBuf],
) -> Result<ListeningPeer, wirebench_protocol::WorkloadError> {
    use wirebench_protocol::WorkloadError;
    let out_path = dir.join(format!("{name}.out"));
    let out = std::fs::File::create(&out_path)
        .map_err(|e| WorkloadError::Environment(format!("{name} output: {e}")))?;
    let err = out
        .try_clone()
        .map_err(|e| WorkloadError::Environment(e.to_string()))?;
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(out))
        .stderr(std::process::Stdio::from(err));
    let child = cmd
        .spawn()
        .map_err(|e| WorkloadError::Environment(format!("cannot start {name}: {e}")))?;
    let files: Vec<std::path::PathBuf> = std::iter::once(out_path)
        .chain(logs.iter().cloned())
        .collect();
    let process = PeerProcess::ready(
        child,
        Duration::from_secs(2),
        name,
        ip,
        &[port],
        netns,
        Duration::from_secs(10),
        || tail_lines(&files, 20),
    )?;
    Ok(ListeningPeer {
        _process: process,
        addr: SocketAddr::new(ip, port),
    })
}

/// A free port on `ip` inside `netns`, bound and released for a server to bind next.
pub fn free_port(netns: Option<&str>, ip: IpAddr) -> Option<u16> {
    in_netns(netns, || {
        std::net::TcpListener::bind((ip, 0)).and_then(|l| l.local_addr().map(|a| a.port()))
    })
    .and_then(Result::ok)
}

/// A peer the repository's install scripts built (`scripts/install-*.sh`), at `rel`
/// under this checkout's `target/peers` (where they link the per-machine build):
/// its path, or `no target/peers/REL` when it is not there.
pub fn built_peer(rel: &str) -> Result<std::path::PathBuf, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/peers")
        .join(rel);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("no target/peers/{rel}"))
    }
}

/// The last `n` lines of each of these log files that exist, each under a line naming
/// its file (so an operator knows where to read on), for error messages.
pub fn tail_lines(files: &[std::path::PathBuf], n: usize) -> String {
    let mut out = String::new();
    for f in files {
        let Ok(t) = std::fs::read_to_string(f) else {
            continue;
        };
        let lines: Vec<&str> = t.lines().collect();
        if lines.is_empty() {
            continue;
        }
        out.push_str(&format!("{} ends with:\n", f.display()));
        for l in &lines[lines.len().saturating_sub(n)..] {
            out.push_str("  ");
            out.push_str(l);
            out.push('\n');
        }
    }
    if out.is_empty() {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        out = format!("(nothing in its logs: {})\n", names.join(", "));
    }
    out
}

/// What a running process uses: resident memory and CPU time so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Resident set size, bytes (`VmRSS`).
    pub rss_bytes: u64,
    /// User plus system CPU time, seconds.
    pub cpu_s: f64,
    /// Of it, time in user mode and in the kernel (`utime`, `stime`), seconds.
    pub user_s: f64,
    pub sys_s: f64,
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        Usage {
            rss_bytes: self.rss_bytes + o.rss_bytes,
            cpu_s: self.cpu_s + o.cpu_s,
            user_s: self.user_s + o.user_s,
            sys_s: self.sys_s + o.sys_s,
        }
    }
}

/// Reads [`Usage`] of process `pid` from /proc; `None` if it is gone.
pub fn usage(pid: u32) -> Option<Usage> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let (user_s, sys_s) = stat_cpu(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    Some(Usage {
        rss_bytes: rss_kib * 1024,
        cpu_s: user_s + sys_s,
        user_s,
        sys_s,
    })
}

/// User and system CPU seconds from a `/proc/PID/stat` or `/proc/PID/task/TID/stat` line.
fn stat_cpu(stat: &str) -> Option<(f64, f64)> {
    // Fields after the command name (which may hold spaces) start at state (field 3);
    // utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    let (utime, stime) = (ticks(11)?, ticks(12)?);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some((utime as f64 / hz, stime as f64 / hz))
}

/// User and system CPU seconds of this process's threads whose name starts with `prefix`
/// (a server's worker threads inside wirebench), from /proc; (0, 0) if there are none.
pub fn threads_cpu(prefix: &str) -> (f64, f64) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return (0.0, 0.0);
    };
    let mut sum = (0.0, 0.0);
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        if let Some((u, s)) = stat_cpu(&stat) {
            sum = (sum.0 + u, sum.1 + s);
        }
    }
    sum
}

/// Records the placed servers' combined usage as `server.rss` and `server.cpu`.
pub fn record_usage(out: &mut wirebench_protocol::Outcome, usage: Option<Usage>) {
    if let Some(u) = usage {
        out.put(SERVER_RSS, u.rss_bytes as f64);
        out.put(SERVER_CPU, u.cpu_s);
    }
}

/// Records `server.sessions` (sessions the server held for the case) and, where
/// `server.rss` and `server.cpu` were recorded, each divided by it.
pub fn record_sessions(out: &mut wirebench_protocol::Outcome, sessions: u64) {
    out.put(SERVER_SESSIONS, sessions as f64);
    if sessions == 0 {
        return;
    }
    // A caller that measured a figure per session more closely (memory from before the
    // first session to the peak, say) has pushed it already: that one stands.
    let rss = out
        .value(SERVER_RSS)
        .filter(|_| out.value(SERVER_RSS_PER_SESSION).is_none());
    let cpu = out
        .value(SERVER_CPU)
        .filter(|_| out.value(SERVER_CPU_PER_SESSION).is_none());
    if let Some(rss) = rss {
        out.put(SERVER_RSS_PER_SESSION, rss / sessions as f64);
    }
    if let Some(cpu) = cpu {
        out.put(SERVER_CPU_PER_SESSION, cpu / sessions as f64);
    }
}

/// The kernel's TCP socket buffer memory now, in bytes (`/proc/net/sockstat`, the `mem`
/// of its `TCP:` line, in pages). The whole machine's, not one process's: what every open
/// TCP socket holds in queued data.
pub fn kernel_tcp_mem() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/net/sockstat").ok()?;
    let line = s.lines().find(|l| l.starts_with("TCP:"))?;
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        if w == "mem" {
            let pages: u64 = words.next()?.parse().ok()?;
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
            return Some(pages * page);
        }
    }
    None
}

/// Records [`kernel_tcp_mem`] as `kernel.tcp_mem`, read while the case's sessions are
/// still open.
pub fn record_kernel_tcp(out: &mut wirebench_protocol::Outcome) {
    if let Some(b) = kernel_tcp_mem() {
        out.put(KERNEL_TCP_MEM, b as f64);
    }
}

/// `program` started in network namespace `netns` (or here), in its own process group and
/// with SIGTERM as its parent-death signal.
pub fn command_in(netns: Option<&str>, program: &str) -> Command {
    // The files the prerequisites' lookup finds, not a second lookup by name.
    let program = wirebench_host::program::program_path(program);
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new(wirebench_host::program::program_path("ip"));
            c.args(["netns", "exec", ns]).arg(program);
            c
        }
        None => Command::new(program),
    };
    // Its own process group, so a Ctrl-C at the terminal reaches only wirebench, which
    // records the interrupted case and then stops the server itself.
    cmd.process_group(0);
    // If wirebench dies without stopping the server (SIGKILL), the kernel sends it
    // SIGTERM: no orphaned servers. `ip netns exec` execs in place, and the death signal
    // survives exec.
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    cmd
}

/// Runs `f` on a thread inside network namespace `netns` (or on one here): sockets it
/// opens belong to that namespace.
pub fn in_netns<T: Send>(netns: Option<&str>, f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(ns) = netns {
                wirebench_protocol::hosts::enter(ns).ok()?;
            }
            Some(f())
        })
        .join()
        .ok()
        .flatten()
    })
}

/// Waits until `addr` accepts connections on every one of `ports` (checked from inside
/// `netns`), failing with `logs` if the child exits first or `limit` passes.
pub fn wait_ports(
    child: &mut Child,
    what: &str,
    addr: IpAddr,
    ports: &[u16],
    netns: Option<&str>,
    limit: Duration,
    logs: impl Fn() -> String,
) -> Result<(), PeerError> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(PeerError::Failed {
                what: format!("{what} exited ({status}) during start-up"),
                detail: logs(),
            });
        }
        let up = in_netns(netns, || {
            ports.iter().all(|p| {
                TcpStream::connect_timeout(&SocketAddr::new(addr, *p), Duration::from_millis(200))
                    .is_ok()
            })
        })
        .unwrap_or(false);
        if up {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(PeerError::Failed {
                what: format!(
                    "{what} did not open its ports {ports:?} within {}s",
                    limit.as_secs()
                ),
                detail: logs(),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// utime and stime are read after the command name, which may hold spaces and ')'.
    #[test]
    fn stat_cpu_reads_user_and_system_time() {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 5 0";
        assert_eq!(stat_cpu(line), Some((250.0 / hz, 75.0 / hz)));
        let me = usage(std::process::id()).unwrap();
        assert!((me.cpu_s - me.user_s - me.sys_s).abs() < 1e-9);
    }

    #[test]
    fn a_peer_process_is_stopped_when_dropped() {
        let child = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = child.id();
        let mut p = PeerProcess::new(child, Duration::from_secs(2));
        assert_eq!(p.pid(), Some(pid));
        assert!(p.usage().is_some());
        assert!(p.exited().is_none());
        drop(p);
        // Reaped by the stop: its /proc entry is gone.
        assert!(usage(pid).is_none());
    }

    #[test]
    fn a_server_that_exits_during_start_up_is_an_error() {
        let child = Command::new("true").spawn().unwrap();
        let lo = "127.0.0.1".parse().unwrap();
        let e = PeerProcess::ready(
            child,
            Duration::from_secs(2),
            "true",
            lo,
            &[1],
            None,
            Duration::from_secs(5),
            || "its log".into(),
        )
        .unwrap_err();
        let PeerError::Failed { what, detail } = e else {
            panic!("{e:?}")
        };
        assert!(what.contains("exited"), "{what}");
        assert_eq!(detail, "its log");
    }

    #[test]
    fn log_tails_name_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        std::fs::write(&log, "one\ntwo\nthree\n").unwrap();
        let absent = dir.path().join("absent.log");
        let t = tail_lines(&[absent.clone(), log.clone()], 2);
        assert_eq!(t, format!("{} ends with:\n  two\n  three\n", log.display()));
        let none = tail_lines(std::slice::from_ref(&absent), 2);
        assert!(
            none.contains("nothing in its logs") && none.contains("absent.log"),
            "{none}"
        );
    }

    #[test]
    fn a_stopped_peer_process_has_no_pid() {
        let mut p = PeerProcess::new(Command::new("true").spawn().unwrap(), Duration::ZERO);
        p.stop();
        assert_eq!(p.pid(), None);
        assert!(p.usage().is_none());
        let lo = "127.0.0.1".parse().unwrap();
        assert!(
            p.wait_ports("true", lo, &[1], None, Duration::ZERO, String::new)
                .is_ok()
        );
        assert!(free_port(None, "127.0.0.1".parse().unwrap()).is_some_and(|p| p > 0));
    }

    #[test]
    fn usage_of_this_process_is_plausible() {
        let u = usage(std::process::id()).unwrap();
        assert!(u.rss_bytes > 100 * 1024 && u.rss_bytes < 1 << 40, "{u:?}");
        assert!(u.cpu_s >= 0.0 && u.cpu_s < 1e6, "{u:?}");
        assert!(usage(u32::MAX).is_none());
    }

    #[test]
    fn per_session_figures_divide_what_was_recorded() {
        let mut o = wirebench_protocol::Outcome::default();
        o.push("server.rss", 2048.0, "B");
        o.push("server.cpu", 0.5, "s");
        record_sessions(&mut o, 4);
        let get = |n: &str| o.metrics.iter().find(|(m, _)| m == n).map(|(_, m)| m.value);
        assert_eq!(get("server.sessions"), Some(4.0));
        assert_eq!(get("server.rss_per_session"), Some(512.0));
        assert_eq!(get("server.cpu_per_session"), Some(0.125));
        let mut none = wirebench_protocol::Outcome::default();
        record_sessions(&mut none, 0);
        assert_eq!(none.metrics.len(), 1);
    }

    #[test]
    fn kernel_tcp_memory_is_read() {
        // Linux always has the line; the value may be 0 on an idle machine.
        assert!(kernel_tcp_mem().is_some());
    }
}
