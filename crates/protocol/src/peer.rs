//! What every protocol that places third-party servers (Prosody, ngircd, ...) in lab hosts
//! shares: their errors, stopping a child by its PID, and quoting its logs. Each server's
//! own configuration, start and readiness live in its protocol's folder
//! (`protocols/xmpp/plugin/src/prosody.rs`, `protocols/irc/plugin/src/ngircd.rs`).

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{program} is not installed; install it with: {install}")]
    Missing { program: String, install: String },
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error("{what}\n{detail}")]
    Failed { what: String, detail: String },
}

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

/// The last `n` lines of each of these log files that exist, for error messages.
pub fn tail_lines(files: &[std::path::PathBuf], n: usize) -> String {
    let mut out = String::new();
    for f in files {
        if let Ok(t) = std::fs::read_to_string(f) {
            let lines: Vec<&str> = t.lines().collect();
            for l in &lines[lines.len().saturating_sub(n)..] {
                out.push_str(l);
                out.push('\n');
            }
        }
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
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        Usage {
            rss_bytes: self.rss_bytes + o.rss_bytes,
            cpu_s: self.cpu_s + o.cpu_s,
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
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at state (field 3);
    // utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    let (utime, stime) = (ticks(11)?, ticks(12)?);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(Usage {
        rss_bytes: rss_kib * 1024,
        cpu_s: (utime + stime) as f64 / hz,
    })
}

/// Records the placed servers' combined usage as `server.rss` and `server.cpu`.
pub fn record_usage(out: &mut crate::Outcome, usage: Option<Usage>) {
    if let Some(u) = usage {
        out.push("server.rss", u.rss_bytes as f64, "B");
        out.push("server.cpu", u.cpu_s, "s");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_of_this_process_is_plausible() {
        let u = usage(std::process::id()).unwrap();
        assert!(u.rss_bytes > 100 * 1024 && u.rss_bytes < 1 << 40, "{u:?}");
        assert!(u.cpu_s >= 0.0 && u.cpu_s < 1e6, "{u:?}");
        assert!(usage(u32::MAX).is_none());
    }
}
