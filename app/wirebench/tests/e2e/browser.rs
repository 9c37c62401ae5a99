//! Study S2 in a real browser (`--xmpp-client browser`): `wirebench run` starts the
//! built-in XMPP server with its WebSocket (RFC 7395), BOSH (XEP-0124/0206) or SockJS 0.3.3
//! endpoint, serves the S2 page with Strophe.js (and sockjs-client) and has headless
//! Chromium run it; the page's timings come back as `s2.*` and `rtt.*`. Also the bad cases: a transport a browser cannot use,
//! Chromium or Strophe.js missing. 127.0.0.1 only. Skipped (with a message) only when
//! Chromium is not installed; Strophe.js is installed by scripts/install-strophe.sh, which
//! this test runs first (it does nothing when the install is current).

use crate::common;

use std::path::Path;

fn have_chromium() -> bool {
    std::process::Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn install_strophe() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new("bash")
        .arg(repo.join("scripts/install-strophe.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/install-strophe.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const S2: &[&str] = &[
    "run",
    "--protocol",
    "xmpp",
    "--workload",
    "pingpong",
    "--xmpp-ping",
    "server",
    "--xmpp-client",
    "browser",
    "--payload",
    "64",
];

#[test]
fn s2_in_chromium_over_websocket_and_bosh() {
    if !have_chromium() {
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        return;
    }
    install_strophe();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s2");
    let mut args = S2.to_vec();
    args.extend([
        "--xmpp-transport",
        "websocket,bosh",
        "--rounds",
        "20",
        "--out",
        out.to_str().unwrap(),
    ]);
    common::run_ok(&args);
    let recs = common::records(&out);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(common::m(r, "messages.received"), 20.0, "{r}");
        assert_eq!(common::m(r, "messages.lost"), 0.0, "{r}");
        let total = common::m(r, "s2.total");
        let login = common::m(r, "s2.login");
        let pings = common::m(r, "s2.pings");
        // Sane: positive, the parts add up, and far from Strophe's 100 ms BOSH timer per
        // ping (the page flushes after each send by default).
        assert!(total > 0.0 && login > 0.0 && pings > 0.0, "{r}");
        assert!((login + pings - total).abs() < 1e-3, "{r}");
        assert!(pings < 20.0 * 0.05, "20 pings took {pings} s: {r}");
        assert!(total < 10.0, "{r}");
        assert!(common::m(r, "rtt.p50") > 0.0, "{r}");
        assert_eq!(common::m(r, "transport.sessions"), 1.0, "{r}");
        eprintln!(
            "{}: total {:.1} ms, login {:.1} ms, 20 pings {:.1} ms",
            r["params"]["xmpp.transport"],
            total * 1e3,
            login * 1e3,
            pings * 1e3
        );
    }
}

/// The page against Prosody's and ejabberd's own endpoints, started for each case: their
/// CORS answers must let the page (served from another origin) log in and ping.
#[test]
fn s2_in_chromium_against_prosodys_and_ejabberds_own_endpoints() {
    if !have_chromium() {
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        return;
    }
    install_strophe();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s2");
    let mut args = S2.to_vec();
    args.extend([
        "--xmpp-server",
        "prosody,ejabberd",
        "--xmpp-transport",
        "websocket,bosh",
        "--rounds",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    common::run_ok(&args);
    let recs = common::records(&out);
    assert_eq!(recs.len(), 4);
    let mut servers = Vec::new();
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(common::m(r, "messages.received"), 10.0, "{r}");
        assert_eq!(common::m(r, "messages.lost"), 0.0, "{r}");
        let total = common::m(r, "s2.total");
        assert!(total > 0.0 && total < 10.0, "{r}");
        // Straight to the server: no endpoint of ours counted sessions.
        assert!(r["metrics"].get("transport.sessions").is_none(), "{r}");
        let server = r["params"]["xmpp.server"].as_str().unwrap().to_string();
        let notes = r["notes"].to_string();
        assert!(notes.contains("headless Chromium"), "{notes}");
        assert!(notes.contains("'s own "), "{notes}");
        servers.push(server);
    }
    servers.sort();
    assert_eq!(servers, ["ejabberd", "ejabberd", "prosody", "prosody"]);
}

#[test]
fn s2_in_chromium_over_sockjs() {
    if !have_chromium() {
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        return;
    }
    install_strophe();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s2");
    let mut args = S2.to_vec();
    let transports = "sockjs-websocket,xhr-streaming,xhr-polling,jsonp-polling,eventsource";
    args.extend([
        "--xmpp-transport",
        transports,
        "--rounds",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    common::run_ok(&args);
    let recs = common::records(&out);
    assert_eq!(recs.len(), 5);
    for r in &recs {
        // sockjs-client under Strophe's WebSocket transport: every pong comes back.
        assert_eq!(common::m(r, "messages.received"), 10.0, "{r}");
        let total = common::m(r, "s2.total");
        assert!(total > 0.0 && total < 20.0, "{r}");
        assert!(common::m(r, "transport.sessions") >= 1.0, "{r}");
    }
}

#[test]
fn without_flush_strophe_bosh_waits_for_its_timer() {
    if !have_chromium() {
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        return;
    }
    install_strophe();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s2");
    let mut args = S2.to_vec();
    args.extend([
        "--xmpp-transport",
        "bosh",
        "--xmpp-flush",
        "off",
        "--rounds",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    common::run_ok(&args);
    let r = &common::records(&out)[0];
    assert_eq!(common::m(r, "messages.received"), 5.0, "{r}");
    // Each ping waits for Strophe's 100 ms idle timer before it is sent.
    let pings = common::m(r, "s2.pings");
    assert!(
        pings > 5.0 * 0.08,
        "5 pings without flush took only {pings} s: {r}"
    );
}

#[test]
fn bad_cases_are_refused_with_a_reason() {
    // A browser cannot open a raw TCP XMPP stream: refused before anything starts.
    let mut args = S2.to_vec();
    args.extend(["--xmpp-transport", "tcp", "--rounds", "3"]);
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("tcp");
    args.extend(["--out", o.to_str().unwrap()]);
    let out = common::wirebench().args(&args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("xmpp.transport=websocket, bosh or a SockJS"),
        "{err}"
    );

    // Chromium missing: the case fails naming the package.
    let o = dir.path().join("nochromium");
    let out = common::wirebench()
        .env("WIREBENCH_CHROMIUM", "wirebench-no-such-chromium")
        .args(S2)
        .args(["--xmpp-transport", "websocket", "--rounds", "3"])
        .args(["--out", o.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    if Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/strophe-browser/node_modules/strophe.js")
        .exists()
    {
        assert!(err.contains("apt-get install chromium"), "{err}");
    }

    // Strophe.js missing: the case fails naming the set-up script.
    let empty = tempfile::tempdir().unwrap();
    let o = dir.path().join("nostrophe");
    let out = common::wirebench()
        .env("WIREBENCH_STROPHE_DIR", empty.path())
        .args(S2)
        .args(["--xmpp-transport", "bosh", "--rounds", "3"])
        .args(["--out", o.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("scripts/install-strophe.sh"), "{err}");
}
