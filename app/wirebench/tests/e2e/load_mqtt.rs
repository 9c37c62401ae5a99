//! `wirebench run --protocol mqtt --workload load` against the Mosquitto it starts
//! (issue #51): 300 MQTT 5.0 sessions over 2 s, all held at once, partners publishing to
//! each other's topic at QoS 0 and at QoS 1. The figures must agree with each other (every
//! session connected, subscribed and held; delivered at most what was expected; each
//! latency's p50 at most its p99, CONNACK before SUBACK; at QoS 1 a PUBACK for every
//! message), not reach a speed; and a schedule beyond what one process may open is refused.
//! Needs Debian's mosquitto (scripts/test.sh installs it).

use crate::common;
use common::{m, records, run_ok};

#[test]
fn pairs_at_qos_0_and_1_agree_with_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_ok(&[
        "run",
        "--protocol",
        "mqtt",
        "--workload",
        "load",
        "--mqtt-version",
        "5",
        "--mqtt-qos",
        "0,1",
        "--payload",
        "32",
        "--load-phases",
        "2s@150/s",
        "--load-arrivals",
        "uniform",
        "--load-stay",
        "4s",
        "--load-think",
        "1s",
        "--load-every",
        "500ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let rs = records(&out);
    assert_eq!(rs.len(), 2, "{stderr}");
    for r in &rs {
        assert_eq!(r["status"], "ok", "{r}");
        let sessions = m(r, "load.sessions");
        assert_eq!(sessions, 300.0, "{r}");
        assert_eq!(m(r, "load.failed"), 0.0, "{r}");
        assert_eq!(m(r, "load.logged_in"), sessions, "{r}");
        // Arrivals end at 2 s, the first one leaves at 4 s: all are held at once.
        assert_eq!(m(r, "load.peak_active"), sessions, "{r}");
        let (expected, delivered) = (m(r, "mqtt.load.expected"), m(r, "mqtt.load.delivered"));
        let sent = m(r, "messages.sent");
        assert!(expected > 0.0 && expected <= sent, "{r}");
        assert!(delivered <= expected, "{r}");
        assert_eq!(m(r, "mqtt.load.missing"), expected - delivered, "{r}");
        assert!(m(r, "messages.received") >= delivered, "{r}");
        for lat in ["connect", "login", "message"] {
            let (p50, p99) = (
                m(r, &format!("load.{lat}.p50")),
                m(r, &format!("load.{lat}.p99")),
            );
            assert!(p50 > 0.0 && p50 <= p99, "load.{lat}: {r}");
        }
        // CONNACK comes before the SUBACK that follows it.
        assert!(m(r, "load.connect.p50") <= m(r, "load.login.p50"), "{r}");
        let acked = m(r, "mqtt.load.acked");
        match r["params"]["mqtt.qos"].as_str() {
            Some("1") => assert_eq!(acked, sent, "a PUBACK for every message: {r}"),
            _ => assert_eq!(acked, 0.0, "{r}"),
        }
        assert!(
            m(r, "server.rss") > 0.0,
            "the broker's memory was sampled: {r}"
        );
        // The time series adds up to the totals and ends with nobody held.
        let case = r["case"].as_u64().unwrap();
        let csv = std::fs::read_to_string(out.join(format!("case-{case:04}-r1.load.csv")))
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let cell = |l: &str, name: &str| -> f64 {
            l.split(',').nth(col(name)).unwrap().parse().unwrap_or(0.0)
        };
        let sum = |name: &str| -> f64 { csv.lines().skip(1).map(|l| cell(l, name)).sum() };
        assert_eq!(sum("connected"), sessions, "CONNACKs: {csv}");
        assert_eq!(sum("logins"), sessions, "SUBACKs: {csv}");
        assert_eq!(sum("sent"), sent, "{csv}");
        assert_eq!(cell(csv.lines().last().unwrap(), "active"), 0.0, "{csv}");
        assert!(header.contains(&"server_rss_mib"), "{csv}");
    }
    // An MQTT session is up at its SUBACK: the table and the charts say subscribed, and
    // nowhere that it logged in.
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("subscribed") && table.contains("subscription p99"),
        "{table}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Sessions subscribed over time"), "{html}");
    assert!(html.contains("Subscription time p99"), "charts' titles");
    for logged in [table.as_ref(), html.as_str()] {
        assert!(
            !logged.contains("logged in") && !logged.contains("Login"),
            "{logged}"
        );
    }
}

/// A schedule that would hold more sessions at once than one process may open files for
/// (the broker is one process) is refused before anything starts, saying why and what to
/// lower.
#[test]
fn a_peak_beyond_one_process_files_is_refused_before_it_starts() {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
    let phases = format!("1s@{}/s", r.rlim_max.min(10_000_000));
    let o = common::wirebench()
        .args([
            "run",
            "--protocol",
            "mqtt",
            "--workload",
            "load",
            "--payload",
            "64",
        ])
        .args(["--load-arrivals", "uniform", "--load-phases", &phases])
        .args(["--load-stay", "10s", "--dry-run"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    for needle in ["MQTT sessions at once", "ulimit -Hn", "lower load.phases"] {
        assert!(stderr.contains(needle), "{needle:?} missing: {stderr}");
    }
}

/// mochi-mqtt and rumqttd carry the same load as Mosquitto (`mqtt.broker`): 100 MQTT
/// 3.1.1 sessions at QoS 1, every one subscribed, a PUBACK for every message, nothing
/// delivered that was not expected, the broker's memory sampled; and a ping-pong through
/// each. A broker not built here is skipped, naming its script (scripts/test.sh runs
/// them through the install plan of the `mqtt-brokers` scenario).
#[test]
fn every_broker_carries_a_load_and_a_ping_pong() {
    let peers = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers");
    let mut brokers = Vec::new();
    for (name, bin, script) in [
        (
            "mochi",
            "mochi-mqtt-2.7.9/bin/mochi-mqtt",
            "install-mochi.sh",
        ),
        (
            "rumqttd",
            "rumqttd-0.20.0/bin/rumqttd",
            "install-rumqttd.sh",
        ),
    ] {
        if peers.join(bin).is_file() {
            brokers.push(name);
        } else {
            eprintln!("skipping mqtt.broker={name}: not built (bash scripts/{script})");
        }
    }
    if brokers.is_empty() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let list = brokers.join(",");
    run_ok(&[
        "run",
        "--protocol",
        "mqtt",
        "--workload",
        "load",
        "--mqtt-broker",
        &list,
        "--mqtt-qos",
        "1",
        "--payload",
        "32",
        "--load-phases",
        "1s@100/s",
        "--load-arrivals",
        "uniform",
        "--load-stay",
        "3s",
        "--load-think",
        "1s",
        "--load-every",
        "500ms",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let rs = records(&out);
    assert_eq!(rs.len(), brokers.len());
    for r in &rs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "load.logged_in"), 100.0, "{r}");
        let (expected, delivered) = (m(r, "mqtt.load.expected"), m(r, "mqtt.load.delivered"));
        assert!(delivered > 0.0 && delivered <= expected, "{r}");
        assert_eq!(m(r, "mqtt.load.acked"), m(r, "messages.sent"), "{r}");
        assert!(m(r, "server.rss") > 0.0, "{r}");
    }
    let pp = dir.path().join("pp");
    run_ok(&[
        "run",
        "--protocol",
        "mqtt",
        "--workload",
        "pingpong",
        "--mqtt-broker",
        &list,
        "--mqtt-version",
        "3.1.1,5",
        "--rounds",
        "20",
        "--quiet",
        "--out",
        pp.to_str().unwrap(),
    ]);
    for r in &records(&pp) {
        assert_eq!(r["status"], "ok", "{r}");
        assert!(m(r, "rtt.stable") > 0.0, "{r}");
    }
}
