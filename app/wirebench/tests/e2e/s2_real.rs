//! Study S2's test against Prosody's and ejabberd's own endpoints (`--xmpp-ping server
//! --xmpp-server prosody|ejabberd`), native client over WebSocket and BOSH on loopback:
//! every ping must get its pong, each row must say which server answered, and the server's
//! own log must show the session arriving on the endpoint it was meant for (no gateway of
//! ours in between). Needs the Debian packages (scripts/test.sh installs them); the servers
//! are started and stopped by wirebench, their files under the test's temporary directory.

use crate::common;
use common::{m, records, run_ok, wirebench};

const PINGS: f64 = 10.0;

#[test]
fn s2_runs_against_prosodys_and_ejabberds_own_websocket_and_bosh_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_ok(&[
        "run",
        "--protocol",
        "xmpp",
        "--workload",
        "pingpong",
        "--xmpp-ping",
        "server",
        "--xmpp-server",
        "prosody,ejabberd",
        "--xmpp-transport",
        "websocket,bosh",
        "--rounds",
        "10",
        "--payload",
        "64",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let rs = records(&out);
    assert_eq!(rs.len(), 4, "{stderr}");
    let mut seen = Vec::new();
    for r in &rs {
        assert_eq!(r["status"], "ok", "{r}");
        let server = r["params"]["xmpp.server"].as_str().unwrap_or_default();
        let transport = r["params"]["xmpp.transport"].as_str().unwrap_or_default();
        seen.push((server.to_string(), transport.to_string()));
        assert_eq!(m(r, "messages.sent"), PINGS, "{r}");
        assert_eq!(m(r, "messages.received"), PINGS, "{r}");
        assert_eq!(m(r, "messages.lost"), 0.0, "{r}");
        let total = m(r, "s2.total");
        assert!(total > 0.0 && total < 5.0, "{r}");
        assert!(m(r, "s2.login") < total, "{r}");
        // No gateway of ours: it would have counted the client's requests.
        assert!(r["metrics"].get("transport.requests").is_none(), "{r}");
        let notes = r["notes"].to_string();
        let who = match server {
            "prosody" => "Prosody 0.12",
            _ => "ejabberd 23.01",
        };
        assert!(
            notes.contains(&format!("{who}'s own {transport} endpoint")),
            "{notes}"
        );
        // The server's own log: both logins (the untimed warm-up's and the timed one)
        // arrived over the transport's endpoint; one would be the warm-up's alone.
        let case = r["case"].as_u64().unwrap();
        let peer = out.join(format!("peers/case-{case:04}-r1/{server}"));
        let log = |p: &str| std::fs::read_to_string(peer.join(p)).unwrap_or_default();
        match (server, transport) {
            ("prosody", t) => {
                let text = log("prosody.log");
                assert_eq!(
                    text.matches("Authenticated as user1@wirebench.test")
                        .count(),
                    2,
                    "{text}"
                );
                let bosh = if t == "bosh" { 2 } else { 0 };
                assert_eq!(
                    text.matches("New BOSH session").count(),
                    bosh,
                    "{t}: {text}"
                );
            }
            (_, t) => {
                let text = log("logs/ejabberd.log");
                let via = if t == "bosh" {
                    "http_bind"
                } else {
                    "websocket"
                };
                let logins = text
                    .lines()
                    .filter(|l| l.contains("Accepted c2s") && l.contains("user1@wirebench.test"));
                let via_endpoint: Vec<_> =
                    logins.map(|l| l.contains(&format!("({via}|"))).collect();
                assert_eq!(via_endpoint, [true, true], "{t}: {text}");
            }
        }
        // The server's data (accounts, databases) went with it; its logs stay.
        assert!(!peer.join("data").exists() && !peer.join("spool").exists());
    }
    seen.sort();
    let want: Vec<(String, String)> = [
        ("ejabberd", "bosh"),
        ("ejabberd", "websocket"),
        ("prosody", "bosh"),
        ("prosody", "websocket"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(seen, want);
}

/// Neither server has a SockJS endpoint of its own: refused before anything starts.
#[test]
fn s2_against_a_real_server_refuses_sockjs() {
    let dir = tempfile::tempdir().unwrap();
    let o = wirebench()
        .args([
            "run",
            "--protocol",
            "xmpp",
            "--workload",
            "pingpong",
            "--xmpp-ping",
            "server",
            "--xmpp-server",
            "prosody",
            "--xmpp-transport",
            "xhr-polling",
            "--rounds",
            "3",
            "--out",
        ])
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(
        stderr.contains("xmpp.server=prosody has no SockJS endpoint")
            && stderr.contains("--xmpp-endpoint wirebench"),
        "{stderr}"
    );
    assert!(!dir.path().join("run/peers").exists(), "{stderr}");
}

/// `--xmpp-endpoint wirebench`: our gateways in front of the real server's client port,
/// SockJS included, every ping answered, the gateway's requests counted without the
/// warm-up's, and the server's log showing the logins arriving over plain c2s (from the
/// gateway), not over its own web endpoint.
#[test]
fn s2_through_our_gateways_in_front_of_a_real_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_ok(&[
        "run",
        "--protocol",
        "xmpp",
        "--workload",
        "pingpong",
        "--xmpp-ping",
        "server",
        "--xmpp-server",
        "prosody,ejabberd",
        "--xmpp-endpoint",
        "wirebench",
        "--xmpp-transport",
        "websocket,xhr-polling",
        "--rounds",
        "10",
        "--payload",
        "64",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let rs = records(&out);
    assert_eq!(rs.len(), 4, "{stderr}");
    for r in &rs {
        assert_eq!(r["status"], "ok", "{r}");
        let server = r["params"]["xmpp.server"].as_str().unwrap_or_default();
        let transport = r["params"]["xmpp.transport"].as_str().unwrap_or_default();
        assert_eq!(m(r, "messages.received"), PINGS, "{r}");
        assert_eq!(m(r, "transport.sessions"), 1.0, "{r}");
        // Login plus one request per ping (two when polling), a few to spare.
        let per = if transport == "xhr-polling" { 2.0 } else { 1.0 };
        let reqs = m(r, "transport.requests");
        assert!(reqs >= per * PINGS && reqs <= per * (PINGS + 15.0), "{r}");
        let notes = r["notes"].to_string();
        assert!(notes.contains("wirebench's"), "{notes}");
        let case = r["case"].as_u64().unwrap();
        let peer = out.join(format!("peers/case-{case:04}-r1/{server}"));
        let log = |p: &str| std::fs::read_to_string(peer.join(p)).unwrap_or_default();
        if server == "prosody" {
            let text = log("prosody.log");
            assert_eq!(text.matches("New BOSH session").count(), 0, "{text}");
            assert_eq!(
                text.matches("Authenticated as user1@wirebench.test")
                    .count(),
                2,
                "{text}"
            );
        } else {
            let text = log("logs/ejabberd.log");
            let logins: Vec<_> = text
                .lines()
                .filter(|l| l.contains("Accepted c2s") && l.contains("user1@wirebench.test"))
                .collect();
            assert_eq!(logins.len(), 2, "{text}");
            assert!(
                logins
                    .iter()
                    .all(|l| !l.contains("(websocket|") && !l.contains("(http_bind|")),
                "{text}"
            );
        }
    }
}
