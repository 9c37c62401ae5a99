//! The public conformance suites a fresh machine can install, run by their scripts in
//! `scripts/conformance/` against this build's binary (issue #32, docs/conformance.md):
//! h2spec (a Go module) against `serve --also http`; Autobahn's fuzzingclient (PyPI), its
//! quick cases, against `serve --also websocket`, and the cases that apply against the
//! RFC 7395 endpoint (`serve --xmpp-websocket`), and its fuzzingserver (the same quick
//! cases) against the `websocket` protocol's client (the script builds the plugin's
//! example `autobahn_client` with cargo); the `http` protocol's HTTP/2 client against two
//! strict servers, nghttpd (Debian nghttp2-server) and golang.org/x/net/http2's (a Go
//! module); and xmpp.js (npm) logging in, messaging and pinging through `serve --xmpp`.
//! A test fails on any failed case, and also when its suite could not be installed or
//! run (the script's exit status 2): a suite that did not run has shown nothing. The
//! SockJS suite is on no registry a CI machine reaches; its header and framing rules are
//! restated as Rust tests in `protocols/xmpp/gateway/tests/sockjs_conformance.rs`.

use std::path::PathBuf;
use std::process::Command;

/// Runs `scripts/conformance/NAME.sh` with `env`; returns its closing counts line after
/// checking that the suite ran, every case passed and there was at least one.
fn suite(name: &str, env: &[(&str, &str)]) -> String {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(repo.join(format!("scripts/conformance/{name}.sh")))
        .env("WB", env!("CARGO_BIN_EXE_wirebench"))
        .envs(env.iter().copied())
        .current_dir(&repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{name}.sh failed ({}):\n{report}",
        out.status
    );
    let last = stdout.lines().last().unwrap_or_default().to_string();
    let counts: Vec<u64> = last
        .strip_prefix(&format!("{name}: "))
        .unwrap_or_default()
        .split(", ")
        .filter_map(|c| c.split(' ').next()?.parse().ok())
        .collect();
    assert!(
        matches!(counts.as_slice(), [p, 0, _] if *p > 0),
        "{name}: expected `N passed, 0 failed, N skipped`, got {last:?}:\n{report}"
    );
    last
}

#[test]
fn h2spec_passes_every_case() {
    eprintln!("{}", suite("h2spec", &[]));
}

#[test]
fn autobahn_quick_cases_pass() {
    eprintln!("{}", suite("autobahn", &[("QUICK", "1")]));
}

/// The RFC 7395 endpoint: every case that does not need an echo (it carries XMPP),
/// from 2.* to 7.* (1.* and 9.* all need one).
#[test]
fn autobahn_cases_that_apply_pass_against_the_xmpp_websocket_endpoint() {
    let env = [
        ("ENDPOINT", "xmpp-websocket"),
        ("CASES", "2.*,3.*,4.*,5.*,6.*,7.*"),
    ];
    eprintln!("{}", suite("autobahn", &env));
}

#[test]
fn autobahn_fuzzingserver_quick_cases_pass_against_our_client() {
    eprintln!("{}", suite("autobahn-client", &[("QUICK", "1")]));
}

#[test]
fn our_http2_client_passes_against_nghttpd_and_go() {
    eprintln!("{}", suite("h2-client", &[]));
}

#[test]
fn xmppjs_sessions_pass_every_check() {
    eprintln!("{}", suite("xmppjs", &[]));
}
