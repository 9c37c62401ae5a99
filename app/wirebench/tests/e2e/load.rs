//! `wirebench run --protocol xmpp --workload load` at a scale that needs worker
//! processes on both sides (issue #14's test): 20,000 sessions, peak above what one
//! process may open, so the built-in server runs worker processes and the load comes
//! from two generator processes. Every session logs in and leaves, every message
//! arrives (partners 2k-1 and 2k sit in different generators), and the records and the
//! time series agree.

use crate::common;
use common::{m, records, run_ok, wirebench};
use std::time::Duration;

#[test]
fn twenty_thousand_sessions_over_worker_processes_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_ok(&[
        "run",
        "--protocol",
        "xmpp",
        "--workload",
        "load",
        "--payload",
        "32",
        "--load-phases",
        "5s@4000/s:max=20000",
        "--load-arrivals",
        "uniform",
        "--load-stay",
        "9s",
        "--load-think",
        "6s",
        "--load-every",
        "1s",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let rs = records(&out);
    assert_eq!(rs.len(), 1, "{stderr}");
    let r = &rs[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(m(r, "load.sessions"), 20000.0);
    assert_eq!(m(r, "load.logged_in"), 20000.0, "{r}");
    assert_eq!(m(r, "load.failed"), 0.0, "{r}");
    assert_eq!(m(r, "load.peak_active"), 20000.0, "{r}");
    // Messages at 6, 7 and 8 s after each start, all partners online by then.
    assert_eq!(m(r, "messages.sent"), 60000.0, "{r}");
    assert_eq!(m(r, "messages.received"), 60000.0, "{r}");
    assert_eq!(m(r, "server.sessions"), 20000.0, "{r}");
    let notes = r["notes"].to_string();
    assert!(notes.contains("2 generator(s)"), "{notes}");
    assert!(notes.contains("worker processes"), "{notes}");
    // The time series sums to the totals.
    let csv = std::fs::read_to_string(out.join("case-0001-r1.load.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let sum = |name: &str| -> f64 {
        csv.lines()
            .skip(1)
            .map(|l| l.split(',').nth(col(name)).unwrap().parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!(sum("logins"), 20000.0);
    assert_eq!(sum("received"), 60000.0);
    let last_active: f64 = csv
        .lines()
        .last()
        .unwrap()
        .split(',')
        .nth(col("active"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(last_active, 0.0);
    // Resources were sampled beside the intervals: at the peak (20,000 held, 40,000
    // loopback sockets) the generators and the server hold memory and the kernel counts
    // the sockets.
    let peak_row = csv
        .lines()
        .skip(1)
        .find(|l| l.split(',').nth(col("active")) == Some("20000"))
        .expect("an interval with every session held");
    let cell = |name: &str| -> f64 {
        peak_row
            .split(',')
            .nth(col(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} empty in {peak_row}"))
    };
    assert!(cell("generator_rss_mib") > 20.0, "{peak_row}");
    assert!(cell("server_rss_mib") > 5.0, "{peak_row}");
    assert!(cell("tcp_sockets") >= 40000.0, "{peak_row}");
    // The report charts the series over time.
    let charts: Vec<String> = std::fs::read_dir(out.join("charts"))
        .unwrap()
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .collect();
    for stem in [
        "load-active",
        "load-logins",
        "load-login-p99",
        "load-message-p99",
        "load-memory",
        "load-cpu",
    ] {
        assert!(
            charts.iter().any(|c| c.ends_with(&format!("{stem}.svg"))),
            "{stem} missing from {charts:?}"
        );
    }
    // The three latency histograms were written.
    for family in ["connect", "login", "message"] {
        assert!(
            out.join(format!("case-0001-r1.load.{family}.hlog"))
                .exists()
        );
    }
}

/// The load generator processes `parent` started (hidden command `xmpp-load-worker`).
fn generators_of(parent: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command's closing parenthesis: state, ppid, ...
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmd = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(parent) && cmd.contains("xmpp-load-worker") {
            pids.push(pid);
        }
    }
    pids
}

/// Issue #34's fault: one generator process is killed mid-run. The case fails (exit 1)
/// naming that generator and how it ended, and keeps the figures and files: the other
/// generator's, and what the killed one reported before it died.
#[test]
fn a_killed_generator_fails_the_case_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = common::wirebench()
        .args([
            "run",
            "--protocol",
            "xmpp",
            "--workload",
            "load",
            "--payload",
            "32",
        ])
        .args([
            "--load-phases",
            "3s@3000/s:max=9000",
            "--load-arrivals",
            "uniform",
        ])
        .args(["--load-stay", "6s", "--load-every", "1s", "-q", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let victim = loop {
        let gens = generators_of(run.id());
        if gens.len() == 2 {
            break gens[0];
        }
        assert!(
            std::time::Instant::now() < end,
            "no two generators: {gens:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::thread::sleep(std::time::Duration::from_secs(3));
    // SAFETY: a generator process of the run this test started, by its PID.
    unsafe { libc::kill(victim as i32, libc::SIGKILL) };
    let o = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let r = &records(&out)[0];
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["fault"], "environment", "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("pid {victim}")) && error.contains("SIGKILL"),
        "{error}"
    );
    assert!(m(r, "load.logged_in") > 0.0, "{r}");
    assert!(out.join("case-0001-r1.load.csv").exists());
}

/// Ctrl-C during a load's phases: the generators close their sessions, and the record is
/// `interrupted` with the figures measured until then, not `ok`.
#[test]
fn an_interrupted_load_is_recorded_as_interrupted_with_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut child = wirebench()
        .args(["run", "--protocol", "xmpp", "--workload", "load", "--quiet"])
        .args(["--load-phases", "30s@50/s", "--load-stay", "30s"])
        .args(["--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run says whom it runs against when its first case starts; sessions arrive at
    // 50/s from then on.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("running against") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the load never started");
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let rs = records(&out);
    assert_eq!(rs.len(), 1);
    let r = &rs[0];
    assert_eq!(r["status"], "interrupted", "{r}");
    assert!(m(r, "load.logged_in") > 0.0, "{r}");
    assert!(m(r, "load.sessions") < 1500.0, "{r}");
}
