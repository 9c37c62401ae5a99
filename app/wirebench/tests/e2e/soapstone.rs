//! Study S5's protocols end to end through the binary: each of http (1.1 and 2), soap,
//! grpc (unary and streaming), websocket and rmi runs a ping-pong and one-way and echo
//! streams on loopback with every message accounted for; http and grpc cross an emulated
//! link (their servers placed in the lab's server host); the open-loop rate mode keeps
//! its schedule. rmi needs a JDK (`scripts/test.sh` installs it).

use crate::common;
use common::{m, namespaces_of, records, wirebench};

fn run(args: &[&str]) -> Vec<serde_json::Value> {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = wirebench()
        .args([
            "run",
            "--quiet",
            "--no-report",
            "--out",
            out.to_str().unwrap(),
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "wirebench run {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    records(&out)
}

/// Every message came back (or was counted) intact.
fn all_delivered(r: &serde_json::Value) {
    let what = &r["params"];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(m(r, "messages.received"), m(r, "messages.sent"), "{what}");
    assert_eq!(m(r, "messages.corrupt"), 0.0, "{what}");
    assert!(m(r, "messages.sent") > 0.0, "{what}");
    if r["params"]["workload"] == "stream" {
        assert!(m(r, "throughput.bits_per_s") > 0.0, "{what}");
    } else {
        // A loopback round trip well under a second, whatever the protocol.
        assert!(
            m(r, "rtt.stable") > 0.0 && m(r, "rtt.stable") < 1.0,
            "{what}"
        );
    }
}

fn each_protocol(protocol: &str, extra: &[&str]) {
    let mut args = vec![
        "--protocol",
        protocol,
        "--workload",
        "pingpong,stream",
        "--mode",
        "oneway,echo",
        "--payload",
        "100,100KiB",
        "--rounds",
        "50",
        "--count",
        "300",
    ];
    args.extend_from_slice(extra);
    let recs = run(&args);
    // pingpong x 2 payloads (mode is a stream parameter) + stream x 2 modes x 2 payloads,
    // times the extra axis.
    assert!(recs.len() >= 6, "{} records", recs.len());
    for r in &recs {
        all_delivered(r);
    }
}

#[test]
fn http_both_versions() {
    each_protocol("http", &["--http-version", "1.1,2"]);
}

/// `http.version=3`: the echoed POSTs of a ping-pong in HTTP/3 over our QUIC engine.
#[test]
fn http3_pingpong() {
    let recs = run(&[
        "--protocol",
        "http",
        "--http-version",
        "3",
        "--workload",
        "pingpong",
        "--payload",
        "1000",
        "--rounds",
        "50",
    ]);
    assert_eq!(recs.len(), 1);
    all_delivered(&recs[0]);
    assert_eq!(recs[0]["params"]["http.version"], "3", "{}", recs[0]);
}

#[test]
fn grpc_unary_and_streaming() {
    each_protocol("grpc", &["--grpc-call", "unary,stream"]);
}

#[test]
fn websocket() {
    each_protocol("websocket", &[]);
}

#[test]
fn soap() {
    each_protocol("soap", &[]);
}

#[test]
fn rmi() {
    each_protocol("rmi", &[]);
}

#[test]
fn open_loop_rate_keeps_its_schedule() {
    let recs = run(&[
        "--protocol",
        "http",
        "--http-version",
        "1.1,2",
        "--rate",
        "2k/s",
        "--rounds",
        "2000",
        "--connections",
        "2",
        "--workload",
        "pingpong",
        "--payload",
        "100",
    ]);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        all_delivered(r);
        let achieved = m(r, "rate.achieved");
        // One second of requests: generous bounds for a loaded 2-core machine.
        assert!(
            (1000.0..=2100.0).contains(&achieved),
            "rate.achieved {achieved}"
        );
        assert_eq!(m(r, "rate.offered"), 2000.0);
        // Timed from the intended send, a request can only take longer than from its
        // actual send.
        assert!(
            m(r, "rtt.p99") >= m(r, "rtt.uncorrected.p99") * 0.999,
            "{r}"
        );
    }
}

#[test]
fn across_an_emulated_link() {
    if !nix_is_root() {
        eprintln!("skipped: the lab needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let child = wirebench()
        .args([
            "run",
            "--quiet",
            "--no-report",
            "--out",
            out.to_str().unwrap(),
        ])
        .args([
            "--protocol",
            "http,grpc,websocket",
            "--workload",
            "pingpong",
        ])
        .args(["--rounds", "20", "--payload", "100", "--link", "10Mbit/5ms"])
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    assert!(namespaces_of(pid).is_empty(), "namespaces left");
    let recs = records(&out);
    assert_eq!(recs.len(), 3);
    for r in &recs {
        all_delivered(r);
        // 5 ms each way: every round trip crosses the link.
        assert!(
            m(r, "rtt.min") >= 0.0099,
            "{}: {}",
            r["params"],
            m(r, "rtt.min")
        );
    }
}

#[test]
fn a_protocol_without_a_rate_mode_says_so_and_runs_closed_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = wirebench()
        .args(["run", "--no-report", "--out", out.to_str().unwrap()])
        .args([
            "--protocol",
            "http,rmi",
            "--workload",
            "pingpong",
            "--payload",
            "100",
        ])
        .args(["--rate", "100/s", "--rounds", "20"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("rate does not apply to rmi"), "{stderr}");
    let recs = records(&out);
    assert_eq!(recs.len(), 2, "{stderr}");
    for r in &recs {
        all_delivered(r);
        let open_loop = r["metrics"].get("rate.offered").is_some();
        assert_eq!(open_loop, r["params"]["protocol"] == "http", "{r}");
    }
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `wirebench serve --also` with `--max-payload 1KiB`, and the address each protocol got.
struct Served {
    child: std::process::Child,
    addrs: Vec<(String, String)>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_also(protocols: &[&str]) -> Served {
    use std::io::BufRead;
    let mut cmd = wirebench();
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--max-payload",
        "1KiB",
        "--quiet",
    ]);
    for p in protocols {
        cmd.args(["--also", &format!("{p}=127.0.0.1:0")]);
    }
    let mut child = cmd
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut addrs = Vec::new();
    while addrs.len() < protocols.len() {
        let l = lines.next().expect("serve ended early").unwrap();
        if let Some(rest) = l.strip_prefix("wirebench serve: ")
            && let Some((name, addr)) = rest.split_once(" on ")
            && protocols.contains(&name)
        {
            addrs.push((name.to_string(), addr.to_string()));
        }
    }
    Served { child, addrs }
}

/// Sends `req` on a fresh connection and returns what comes back until the server closes
/// or 2 s pass.
fn exchange(addr: &str, req: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    s.write_all(req).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = s.read(&mut chunk) {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") && !req.starts_with(b"POST /echo?ok") {
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

#[test]
fn misbehaving_http_and_soap_clients_get_errors_and_others_carry_on() {
    let s = serve_also(&["http", "soap"]);
    let addr = |p: &str| s.addrs.iter().find(|(n, _)| n == p).unwrap().1.clone();
    let http = addr("http");
    // Not HTTP at all.
    let r = exchange(&http, b"HELLO THERE\r\n\r\n");
    assert!(r.is_empty() || r.starts_with("HTTP/1.1 400"), "{r}");
    // A body over the 1 KiB limit, announced: refused unread, the connection closed.
    let r = exchange(
        &http,
        b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");
    // A truncated body, then the client goes away.
    drop(std::net::TcpStream::connect(&http).map(|mut c| {
        use std::io::Write;
        let _ = c.write_all(b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 500\r\n\r\nabc");
    }));
    // A well-formed SOAP request with a broken envelope gets a SOAP Fault and status 500.
    let env = b"<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body><x/></soap:Body></soap:Envelope>";
    let mut req = format!(
        "POST /soap HTTP/1.1\r\nhost: x\r\ncontent-type: text/xml\r\ncontent-length: {}\r\n\r\n",
        env.len()
    )
    .into_bytes();
    req.extend_from_slice(env);
    let r = exchange(&addr("soap"), &req);
    assert!(r.starts_with("HTTP/1.1 500"), "{r}");
    // After all that, a good client is served.
    let r = exchange(
        &http,
        b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
    );
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}

#[test]
fn our_clients_reach_a_server_started_apart() {
    let protocols = ["http", "soap", "grpc", "websocket"];
    let s = serve_also(&protocols);
    for (p, addr) in &s.addrs {
        // Payloads within the server's 1 KiB limit; seed 0 whatever --seed says, so the
        // server's verification matches.
        let recs = run(&[
            "--protocol",
            p,
            "--workload",
            "pingpong,stream",
            "--mode",
            "echo",
            "--payload",
            "100",
            "--rounds",
            "50",
            "--count",
            "200",
            "--seed",
            "9",
            "--target",
            addr,
        ]);
        assert_eq!(recs.len(), 2, "{p}");
        for r in &recs {
            all_delivered(r);
            let notes = r["notes"].to_string();
            assert!(
                notes.contains(&format!("against the server at {addr}")),
                "{r}"
            );
        }
    }
    // A server of the wrong protocol: the case fails with the peer's answer, the run goes on.
    let http = &s.addrs.iter().find(|(n, _)| n == "http").unwrap().1;
    let tmp = tempfile::tempdir().unwrap();
    let o = wirebench()
        .current_dir(tmp.path())
        .args([
            "run",
            "--quiet",
            "--no-report",
            "--protocol",
            "websocket,http",
        ])
        .args([
            "--workload",
            "pingpong",
            "--payload",
            "100",
            "--rounds",
            "20",
        ])
        .args(["--target", http])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let runs = tmp.path().join("wirebench-runs");
    let dir = runs.read_dir().unwrap().next().unwrap().unwrap().path();
    let mut status: Vec<_> = records(&dir)
        .iter()
        .map(|r| format!("{} {}", r["params"]["protocol"], r["status"]))
        .collect();
    status.sort();
    assert_eq!(status, [r#""http" "ok""#, r#""websocket" "failed""#]);
}

#[test]
fn a_target_off_this_machine_or_with_a_link_is_refused() {
    let o = wirebench()
        .args([
            "run",
            "--protocol",
            "http",
            "--target",
            "192.0.2.1:80",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a loopback address"), "{err}");
    let tmp = tempfile::tempdir().unwrap();
    let o = wirebench()
        .current_dir(tmp.path())
        .args(["run", "--quiet", "--no-report", "--protocol", "http"])
        .args(["--workload", "pingpong", "--rounds", "5", "--think", "10ms"])
        .args(["--target", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("think"), "{err}");
}
