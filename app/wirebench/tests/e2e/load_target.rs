//! The load workload against a server it did not start (`load.target`): a `wirebench
//! serve --xmpp --xmpp-tls` process of the test's own, every session doing STARTTLS
//! (certificate not checked, as against any server not ours) and SCRAM-SHA-256, staying
//! for an exponentially drawn time. Every session must log in over TLS, the server must
//! count them all, and the stays must spread as drawn. 127.0.0.1 only; the server ends
//! with the test.

use crate::common;
use common::{Serve, free_port, m, records, run_ok};

#[test]
fn sessions_log_in_over_starttls_to_a_server_given_by_address() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = Serve::start(
        [
            "--listen".to_string(),
            "127.0.0.1:0".into(),
            "--xmpp".into(),
            format!("127.0.0.1:{port}"),
            "--xmpp-users".into(),
            "2000".into(),
            "--xmpp-tls".into(),
        ],
        "XMPP layout",
    );

    let out = dir.path().join("run");
    let target = format!("127.0.0.1:{port}");
    let o = run_ok(&[
        "run",
        "--protocol",
        "xmpp",
        "--workload",
        "load",
        "--load-target",
        &target,
        "--load-tls",
        "on",
        "--load-mech",
        "SCRAM-SHA-256",
        "--load-phases",
        "2s@500/s:max=1000",
        "--load-arrivals",
        "uniform",
        "--load-stay",
        "exp:2s",
        "--load-every",
        "0",
        "--payload",
        "32",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let rs = records(&out);
    assert_eq!(rs.len(), 1, "{stderr}");
    let r = &rs[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(m(r, "load.sessions"), 1000.0, "{r}");
    assert_eq!(m(r, "load.logged_in"), 1000.0, "{r}");
    assert_eq!(m(r, "load.failed"), 0.0, "{r}");
    // Not our server: no server figures in the record.
    assert!(r["metrics"].get("server.cpu").is_none(), "{r}");
    assert!(
        stderr.contains("the XMPP server at load.target"),
        "{stderr}"
    );
    // Stays drawn from an exponential with a 2 s mean, arrivals spread over 2 s: about a
    // third of the sessions have left by 2 s (a fixed stay would have none), and about 6%
    // are still there at 6 s (e^-2.5 to e^-3 of them; a fixed stay would have none).
    let csv = std::fs::read_to_string(out.join("case-0001-r1.load.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|v| v.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    let left_by_2s: f64 = rows
        .iter()
        .filter(|r| r[col("seconds")] <= 2.0)
        .map(|r| r[col("left")])
        .sum();
    let active_at_6s = rows
        .iter()
        .find(|r| r[col("seconds")] == 6.0)
        .map_or(0.0, |r| r[col("active")]);
    assert!(left_by_2s > 100.0, "{csv}");
    assert!(active_at_6s > 10.0, "{csv}");
    let text = server.log();
    drop(server);
    assert!(text.contains("XMPP"), "{text}");
}

/// Issue #34's fault: the load target dies mid-run. The case fails (exit 1) with one line
/// that says the server stopped listening and from when, its record keeps the failures
/// by cause, and its interval and series files are kept.
#[test]
fn a_target_killed_mid_run_fails_the_case_and_keeps_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = Serve::start(
        [
            "--listen".to_string(),
            "127.0.0.1:0".into(),
            "--xmpp".into(),
            format!("127.0.0.1:{port}"),
            "--xmpp-users".into(),
            "1000".into(),
        ],
        "XMPP layout",
    );
    let out = dir.path().join("run");
    let run = common::wirebench()
        .args([
            "run",
            "--protocol",
            "xmpp",
            "--workload",
            "load",
            "--load-target",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--load-phases", "4s@200/s:max=800", "--load-stay", "30s"])
        .args(["--load-every", "1s", "--payload", "64", "-q", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (_, _) = server.stop_by(libc::SIGKILL);
    let o = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("refused") && l.contains("nothing was listening"))
        .unwrap_or_else(|| panic!("no clear line: {stderr}"));
    assert!(line.contains(&format!("127.0.0.1:{port}")), "{line}");
    let rs = records(&out);
    assert_eq!(rs.len(), 1, "{stderr}");
    let r = &rs[0];
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["fault"], "peer", "{r}");
    assert!(m(r, "load.failed.refused") > 0.0, "{r}");
    assert!(m(r, "load.logged_in") > 0.0, "{r}");
    for f in ["case-0001-r1.load.csv", "case-0001-r1.load.intervals.jsonl"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap_or_default();
        assert!(text.lines().count() > 2, "{f}: {text}");
    }
}
