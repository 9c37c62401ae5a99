//! Helpers shared by the binary's end-to-end tests (each test file uses some of them).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

pub fn wirebench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wirebench"))
}

/// Runs the binary and fails the test, with its output, unless it exits 0.
pub fn run_ok(args: &[&str]) -> Output {
    let out = wirebench().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "wirebench {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// Runs the binary, which builds a lab, and fails the test unless it exits 0 and leaves
/// none of its network namespaces behind; its stderr.
pub fn lab_run_ok(args: &[&str]) -> String {
    let child = wirebench()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr).to_string();
    assert!(done.status.success(), "wirebench {args:?} failed: {err}");
    assert!(
        namespaces_of(pid).is_empty(),
        "namespaces left: {:?}",
        namespaces_of(pid)
    );
    err
}

/// The records of a results directory (none if it has no results.jsonl yet).
pub fn records(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .map(|t| {
            t.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// A metric's value; the test fails naming it if the record lacks it.
pub fn m(r: &serde_json::Value, name: &str) -> f64 {
    r["metrics"][name]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {name} in {r}"))
}

/// Lab namespaces created by process `pid`.
pub fn namespaces_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("wb-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

/// A port on 127.0.0.1 free now, for a server the test starts. Below the kernel's
/// ephemeral range (32768-60999 by default): one picked by binding port 0 lies inside
/// it, where any test's outgoing connection could take it before the server binds it
/// (CI saw "Address already in use" so). Each call in a test binary gets another port.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 10_000;
    const SPAN: u32 = 22_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Test binaries run one after another, but a pid spreads them apart anyway.
    let start = std::process::id().wrapping_mul(7919);
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FIRST + start.wrapping_add(n) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 in {FIRST}..{}", FIRST + SPAN);
}

/// A `wirebench serve` of the test's own, its stderr in a log file. Dropping it stops it
/// by its PID (SIGTERM, then SIGKILL if it has not exited within 10 s), so a failing
/// test leaves no server behind.
pub struct Serve {
    child: std::process::Child,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Serve {
    /// Starts `wirebench serve ARGS` and waits up to 10 s for `ready` in its log.
    pub fn start<I, S>(args: I, ready: &str) -> Serve
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("serve.log");
        let child = wirebench()
            .arg("serve")
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let s = Serve {
            child,
            log,
            _dir: dir,
        };
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !s.log().contains(ready) {
            assert!(
                std::time::Instant::now() < end,
                "serve did not start: {}",
                s.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        s
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ctrl-C, then the log with its totals.
    pub fn stop(self) -> String {
        self.stop_by(libc::SIGINT).1
    }

    /// Signal `sig`, then how it exited and its log; the test fails if it has not
    /// exited within 10 s.
    pub fn stop_by(mut self, sig: i32) -> (std::process::ExitStatus, String) {
        self.signal(sig);
        assert!(
            self.wait(),
            "serve did not stop on signal {sig}: {}",
            self.log()
        );
        let status = self.child.try_wait().unwrap().expect("exited");
        (status, self.log())
    }

    fn signal(&self, sig: i32) {
        // SAFETY: signals the server this test started, by its PID (not yet reaped).
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// Whether it exits within 10 s.
    fn wait(&mut self) -> bool {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > end {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        true
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        self.signal(libc::SIGTERM);
        if !self.wait() {
            self.signal(libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}
