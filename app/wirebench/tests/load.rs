//! `wirebench run --protocol xmpp --workload load` at a scale that needs worker
//! processes on both sides (issue #14's test): 20,000 sessions, peak above what one
//! process may open, so the built-in server runs worker processes and the load comes
//! from two generator processes. Every session logs in and leaves, every message
//! arrives (partners 2k-1 and 2k sit in different generators), and the records and the
//! time series agree.

mod common;
use common::{m, records, run_ok};

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
