//! Issue #34's faults: a real XMPP server that cannot start (its client port is taken)
//! fails with one line saying which server and why, followed by its logs, each headed by
//! the log file's path, so that a user knows where to look. Needs Prosody and ejabberd
//! (`bash scripts/install-peers.sh`); CI installs both.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};
use wirebench_xmpp_peers::config::PeerConfig;
use wirebench_xmpp_peers::ejabberd::Ejabberd;
use wirebench_xmpp_peers::prosody::Prosody;

/// A loopback port bound but not listening: a server cannot bind it, and nothing accepts
/// on it (so the start-up wait cannot mistake it for the server).
fn taken_port() -> (socket2::Socket, u16) {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
        .unwrap();
    let port = s.local_addr().unwrap().as_socket().unwrap().port();
    (s, port)
}

fn config(domain: &str, port: u16) -> PeerConfig {
    let mut cfg = PeerConfig::new(domain, IpAddr::V4(Ipv4Addr::LOCALHOST));
    cfg.c2s_port = port;
    cfg.s2s = false;
    cfg
}

/// The error's first line names the server; a log under `dir` is named with its path.
fn check(text: &str, first: &str, dir: &Path, t0: Instant) {
    eprintln!("{text}");
    let line = text.lines().next().unwrap_or_default();
    assert!(line.contains(first), "first line: {line}\n{text}");
    assert!(
        text.contains(&format!("{}", dir.display())),
        "the error names no log file under {}: {text}",
        dir.display()
    );
    assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
}

#[test]
fn prosody_on_a_taken_port_names_its_log() {
    let (_held, port) = taken_port();
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let e = Prosody::start(config("taken.prosody.test", port), dir.path(), None)
        .err()
        .expect("prosody started on a taken port");
    check(
        &e.to_string(),
        "prosody for taken.prosody.test",
        dir.path(),
        t0,
    );
}

#[test]
fn ejabberd_on_a_taken_port_names_its_log() {
    let (_held, port) = taken_port();
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let e = Ejabberd::start(config("taken.ejabberd.test", port), dir.path(), None)
        .err()
        .expect("ejabberd started on a taken port");
    check(&e.to_string(), "ejabberd", dir.path(), t0);
}
