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
