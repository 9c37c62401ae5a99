//! `--protocol quic` end to end through the binary: our client against our server on
//! loopback (every stream mode and controller runs, messages come back whole, the qlog
//! is written), and in the lab across a 20 ms one-way link, where the first round
//! carries the handshake's round trip (RFC 9001 §4.1) and the later ones do not. The
//! UDP flow is counted on the wire. The lab test needs root.
//!
//! Interop with real peers (docs/conformance.md's QUIC table), on loopback: our client in
//! HTTP/3 against quic-go's and ngtcp2's example servers (the interop runner's
//! `handshake` and `transfer`, every body checked byte by byte), and their clients
//! against `wirebench serve --quic`. A peer that is not installed is skipped with the
//! command that installs it; the builtin server always runs.

use crate::common;
use common::{lab_run_ok, m, records, run_ok};
use std::path::PathBuf;

/// quic-go's example binaries as scripts/install-quic-go.sh leaves them.
fn quic_go(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/peers/quic-go-0.65.0/bin")
        .join(name);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "{} is missing (bash scripts/install-quic-go.sh): its cases skipped",
            p.display()
        );
        None
    }
}

fn have(program: &str, package: &str) -> bool {
    let ok = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("{program} is missing (apt-get install {package}): its cases skipped");
    }
    ok
}

#[test]
fn quic_h3_handshake_and_transfer_against_real_servers() {
    let mut servers = vec!["builtin"];
    if quic_go("quic-go-server").is_some() {
        servers.push("quic-go");
    }
    if have("gtlsserver", "ngtcp2-server") {
        servers.push("ngtcp2");
    }
    let list = servers.join(",");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--quic-app",
        "h3",
        "--quic-server",
        &list,
        "--workload",
        "pingpong,stream",
        "--payload",
        "16KiB",
        "--rounds",
        "5",
        "--count",
        "64",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 2 * servers.len());
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        // Every body is checked against the server's own generator: none corrupt.
        assert_eq!(m(r, "messages.corrupt"), 0.0, "{r}");
        let hs = m(r, "quic.handshake");
        assert!(hs > 0.0 && hs >= m(r, "quic.handshake_complete"), "{r}");
        if r["params"]["workload"] == "stream" {
            // 1 MiB in one GET; above a megabit even on a busy machine.
            assert_eq!(m(r, "messages.received"), 64.0, "{r}");
            assert!(m(r, "throughput.bits_per_s") > 1e6, "{r}");
        } else {
            assert_eq!(m(r, "messages.received"), 5.0, "{r}");
            assert!(m(r, "rtt.first") >= m(r, "quic.handshake_complete"), "{r}");
        }
    }
}

/// The interop runner's multiplexing from our client: 150 requests at once on one
/// connection, more than quic-go's 100 concurrent streams, so the later ones wait for
/// the server's MAX_STREAMS (RFC 9000 §4.6); every body checked. Raw QUIC has no such
/// mode and says so.
#[test]
fn quic_h3_multiplexes_requests_against_real_servers() {
    let mut servers = vec!["builtin"];
    if quic_go("quic-go-server").is_some() {
        servers.push("quic-go");
    }
    if have("gtlsserver", "ngtcp2-server") {
        servers.push("ngtcp2");
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--quic-app",
        "h3",
        "--quic-server",
        &servers.join(","),
        "--workload",
        "stream",
        "--quic-streams",
        "per-message",
        "--payload",
        "1000",
        "--count",
        "150",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), servers.len());
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "messages.received"), 150.0, "{r}");
        assert_eq!(m(r, "messages.corrupt"), 0.0, "{r}");
    }
    let o = common::wirebench()
        .args(["run", "--protocol", "quic", "--workload", "stream"])
        .args(["--quic-streams", "per-message", "--quiet", "--out"])
        .arg(tmp.path().join("raw"))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("--quic-app h3"), "{e}");
}

/// quic-go's example generator (`generatePRData`), which our server's bodies follow.
fn lehmer(n: usize) -> Vec<u8> {
    let mut x: u64 = 1;
    (0..n)
        .map(|_| {
            x = x * 48271 % 2_147_483_647;
            x as u8
        })
        .collect()
}

#[test]
fn quic_real_clients_against_serve_quic() {
    let port = common::free_port();
    let at = format!("127.0.0.1:{port}");
    let server = common::Serve::start(
        ["--listen", "127.0.0.1:0", "--quic", &at],
        "wirebench serve: QUIC on udp",
    );
    const N: usize = 1 << 20;
    let mut answered = 0;
    let mut early = 0;
    if let Some(client) = quic_go("quic-go-client") {
        let url = format!("https://{at}/{N}");
        let o = std::process::Command::new(client)
            .args(["-insecure", "-q", &url, &format!("https://{at}/1000")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(err.contains(&format!("Response Body: {N} bytes")), "{err}");
        assert!(err.contains("Response Body: 1000 bytes"), "{err}");
        answered += 2;
    }
    if have("gtlsclient", "ngtcp2-client") {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("https://{at}/{N}");
        let o = std::process::Command::new("gtlsclient")
            .args(["-q", "--exit-on-all-streams-close", "--download"])
            .arg(dir.path())
            .args(["127.0.0.1", &port.to_string(), &url])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let got = std::fs::read(dir.path().join(N.to_string())).unwrap();
        assert!(
            got == lehmer(N),
            "gtlsclient's download differs ({} bytes)",
            got.len()
        );
        answered += 1;
        // The interop runner's zerortt: a second client resumes the first one's session
        // (its ticket and transport parameters kept in files) and sends its request as
        // 0-RTT data, which the server takes.
        let (session, tp) = (dir.path().join("session"), dir.path().join("tp"));
        for _ in 0..2 {
            let o = std::process::Command::new("gtlsclient")
                .args(["-q", "--exit-on-all-streams-close"])
                .arg(format!("--session-file={}", session.display()))
                .arg(format!("--tp-file={}", tp.display()))
                .args([
                    "127.0.0.1",
                    &port.to_string(),
                    &format!("https://{at}/1000"),
                ])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            answered += 1;
        }
        early = 1;
    }
    let log = server.stop();
    assert!(
        log.contains(&format!(
            "({early} with 0-RTT data), 0 Retry packet(s) sent, {answered} HTTP/3 request(s) answered, 0 refused"
        )),
        "{log}"
    );
}

/// The interop runner's retry against our server: `serve --quic --quic-retry` answers
/// each client's first Initial with a Retry (RFC 9000 §8.1.2), and quic-go's and ngtcp2's
/// clients follow it to a whole answer.
#[test]
fn quic_real_clients_follow_a_retry_from_serve_quic() {
    let port = common::free_port();
    let at = format!("127.0.0.1:{port}");
    let server = common::Serve::start(
        ["--listen", "127.0.0.1:0", "--quic", &at, "--quic-retry"],
        "validated with a Retry first",
    );
    let mut clients = 0;
    if let Some(client) = quic_go("quic-go-client") {
        let o = std::process::Command::new(client)
            .args(["-insecure", "-q", &format!("https://{at}/1000")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success() && err.contains("Response Body: 1000 bytes"),
            "{err}"
        );
        clients += 1;
    }
    if have("gtlsclient", "ngtcp2-client") {
        let dir = tempfile::tempdir().unwrap();
        let o = std::process::Command::new("gtlsclient")
            .args(["-q", "--exit-on-all-streams-close", "--download"])
            .arg(dir.path())
            .args([
                "127.0.0.1",
                &port.to_string(),
                &format!("https://{at}/1000"),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            std::fs::read(dir.path().join("1000")).unwrap(),
            lehmer(1000)
        );
        clients += 1;
    }
    let log = server.stop();
    // At least one Retry per connection: an Initial sent again before the Retry came
    // back gets one too.
    let retries: u64 = log
        .split(" Retry packet(s) sent")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(retries >= clients, "{log}");
    assert!(
        log.contains(&format!(
            "{clients} connection(s) (0 with 0-RTT data), {retries} Retry packet(s) sent, {clients} HTTP/3 request(s) answered"
        )),
        "{log}"
    );
}

#[test]
fn quic_pingpong_on_loopback_echoes_every_message() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--workload",
        "pingpong",
        "--payload",
        "100",
        "--rounds",
        "20",
        "--quic-streams",
        "one,per-message",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "messages.received"), 20.0, "{r}");
        assert_eq!(m(r, "messages.corrupt"), 0.0, "{r}");
        assert_eq!(m(r, "quic.lost_packets"), 0.0, "{r}");
        let hs = m(r, "quic.handshake");
        assert!(hs > 0.0 && hs >= m(r, "quic.handshake_complete"), "{r}");
        // The first round waited for the handshake; loopback's are short anyway.
        assert!(m(r, "rtt.first") >= m(r, "quic.handshake_complete"), "{r}");
        assert!(m(r, "rtt.stable") < 0.5, "{r}");
    }
    let qlog = std::fs::read_dir(out.join("peers"))
        .unwrap()
        .map(|d| d.unwrap().path().join("client.sqlog"))
        .next()
        .unwrap();
    let text = std::fs::read_to_string(&qlog).unwrap();
    assert!(text.contains("packet_sent"), "{}", qlog.display());
}

#[test]
fn quic_stream_reaches_the_sink_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--workload",
        "stream",
        "--payload",
        "16KiB",
        "--count",
        "256",
        "--quic-cc",
        "cubic,bbr",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "messages.received"), 256.0, "{r}");
        // 4 MiB on loopback: well above a megabit even on a busy machine.
        assert!(m(r, "throughput.bits_per_s") > 1e6, "{r}");
    }
}

#[test]
fn quic_first_round_over_a_link_carries_the_handshake() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    lab_run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--workload",
        "pingpong",
        "--payload",
        "64",
        "--rounds",
        "5",
        "--link",
        "10Mbit/20ms",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(m(r, "messages.received"), 5.0, "{r}");
    // One round trip is 40 ms; the handshake completes after one and is confirmed
    // after two; the first echo comes a round trip after the handshake completed.
    let (first, stable) = (m(r, "rtt.first"), m(r, "rtt.stable"));
    assert!(m(r, "quic.handshake_complete") >= 0.039, "{r}");
    assert!(m(r, "quic.handshake") >= 0.079, "{r}");
    assert!(first >= 0.079, "{r}");
    assert!((0.039..0.5).contains(&stable), "{r}");
    assert!(first >= stable + 0.035, "{r}");
    assert!(m(r, "quic.path_rtt") >= 0.039, "{r}");
    assert!(m(r, "wire.bytes") > 0.0, "{r}");
    // The padded Initial alone is 1200 bytes (RFC 9000 §14.1).
    assert!(m(r, "wire.bytes") > 1200.0, "{r}");
}

/// The interop runner's `retry`: ngtcp2 validates our client's address with a Retry
/// (RFC 9000 §8.1.2), which our client follows; the server's transport parameters then
/// carry retry_source_connection_id (§7.3), as its qlog shows.
#[test]
fn quic_retry_from_ngtcp2_is_followed() {
    if !have("gtlsserver", "ngtcp2-server") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--quic-app",
        "h3",
        "--quic-server",
        "ngtcp2",
        "--quic-retry",
        "on",
        "--workload",
        "pingpong",
        "--payload",
        "1000",
        "--rounds",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs[0]["status"], "ok", "{}", recs[0]);
    assert_eq!(m(&recs[0], "messages.corrupt"), 0.0);
    let dir = std::fs::read_dir(out.join("peers"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let server_qlogs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sqlog") && !p.ends_with("client.sqlog"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(
        !server_qlogs.is_empty(),
        "no qlog of gtlsserver in {}",
        dir.display()
    );
    assert!(
        server_qlogs
            .iter()
            .all(|q| q.contains("\"retry_source_connection_id\"")),
        "a connection without Retry"
    );
}

#[test]
fn quic_connect_resumes_with_0rtt_after_the_first_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--workload",
        "connect",
        "--payload",
        "100",
        "--connects",
        "10",
        "--concurrency",
        "1,3",
        "--quic-0rtt",
        "off,on",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "connects.ok"), 10.0, "{r}");
        assert!(m(r, "ttfb.p50") > 0.0, "{r}");
        // Every connection that started after a ticket came had one (each waits for
        // its own before closing), and the server took the 0-RTT data: all but the
        // first alone, all but the first three at most (at once, none had a ticket).
        let clients = r["params"]["concurrency"].as_u64().unwrap() as f64;
        let accepted = m(r, "quic.0rtt_accepted");
        if r["params"]["quic.0rtt"] == "on" {
            assert!((10.0 - clients..=9.0).contains(&accepted), "{r}");
        } else {
            assert_eq!(accepted, 0.0, "{r}");
        }
    }
}

/// The open loop: connections start on the schedule whatever the others are doing, each
/// timed from its start, with how late it started; a rate for ping-pong is refused.
#[test]
fn quic_connect_runs_an_open_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--workload",
        "connect",
        "--payload",
        "10",
        "--connects",
        "20",
        "--rate",
        "400/s",
        "--quic-0rtt",
        "on",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let r = &records(&out)[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(m(r, "connects.ok"), 20.0, "{r}");
    assert_eq!(m(r, "rate.offered"), 400.0, "{r}");
    // 20 connections due over 47.5 ms: the case cannot end much sooner.
    assert!(m(r, "case.duration") >= 0.0475, "{r}");
    assert!(m(r, "rate.send_lag.p50") >= 0.0, "{r}");
    // The clients share their tickets: only those started before the first came lack one.
    assert!(m(r, "quic.0rtt_accepted") >= 1.0, "{r}");
    let o = common::wirebench()
        .args(["run", "--protocol", "quic", "--workload", "pingpong"])
        .args(["--rate", "10/s", "--quiet", "--out"])
        .arg(tmp.path().join("p"))
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("closed loop only"), "{e}");
}

/// The interop runner's `zerortt`, in HTTP/3: ngtcp2's server takes 0-RTT data on every
/// connection after the first; quic-go's example server accepts none (the example
/// enables no 0-RTT), so its connections stay 1-RTT and still succeed.
#[test]
fn quic_connect_in_http3_resumes_with_real_servers() {
    let mut servers = vec!["builtin"];
    if quic_go("quic-go-server").is_some() {
        servers.push("quic-go");
    }
    if have("gtlsserver", "ngtcp2-server") {
        servers.push("ngtcp2");
    }
    let list = servers.join(",");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--quic-app",
        "h3",
        "--quic-server",
        &list,
        "--workload",
        "connect",
        "--quic-0rtt",
        "on",
        "--payload",
        "100",
        "--connects",
        "5",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), servers.len());
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "connects.ok"), 5.0, "{r}");
        let want = match r["params"]["quic.server"].as_str() {
            Some("quic-go") => 0.0,
            _ => 4.0,
        };
        assert_eq!(m(r, "quic.0rtt_accepted"), want, "{r}");
    }
}
