//! Study S1's topology with real servers: client1 and server A (a.test) in one lab host,
//! server B (b.test) and client2 in the other, only the emulated link between them, so
//! the messages cross it over server-to-server (dialback, no TLS). Once with Prosody, once
//! with ejabberd. Needs root and both servers (`bash scripts/test.sh` installs them).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use wirebench_lab::{CLIENT_ADDR, Lab, SERVER_ADDR};
use wirebench_link::LinkSpec;
use wirebench_xmpp::{ClientConfig, Event, TlsMode};
use wirebench_xmpp_client::session::XmppSession;
use wirebench_xmpp_peers::peer::{PeerConfig, Server};

fn login(ns: &str, addr: IpAddr, jid: &str) -> XmppSession {
    let ns = ns.to_string();
    let jid = jid.to_string();
    std::thread::spawn(move || {
        wirebench_lab::netns::enter(&ns).unwrap();
        let mut cfg = ClientConfig::new(&jid, "secret");
        cfg.tls = TlsMode::Never;
        XmppSession::login(SocketAddr::new(addr, 5222), cfg, 1, Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{jid}: {e}"))
            .0
    })
    .join()
    .unwrap()
}

fn wait_message(s: &mut XmppSession, secs: u64) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match s.next_event(deadline, "a message").unwrap() {
            (_, Event::Message { from, body, .. }) => return (from, body),
            _ => continue,
        }
    }
}

#[test]
fn messages_cross_the_link_between_prosody_servers() {
    messages_cross_the_link_over_server_to_server(Server::Prosody);
}

#[test]
fn messages_cross_the_link_between_ejabberd_servers() {
    messages_cross_the_link_over_server_to_server(Server::Ejabberd);
}

/// A lab's namespaces are named after the process: one lab at a time per test binary.
static ONE_LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn messages_cross_the_link_over_server_to_server(server: Server) {
    let _lab = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let spec = LinkSpec::parse("10Mbit/20ms").unwrap();
    let lab = Lab::create(spec.to_params(), spec.to_params(), 1, None).unwrap();
    let hosts = [
        (IpAddr::V4(CLIENT_ADDR), "a.test"),
        (IpAddr::V4(SERVER_ADDR), "b.test"),
    ];
    lab.client().set_hosts(&hosts).unwrap();
    lab.server().set_hosts(&hosts).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut ca = PeerConfig::new("a.test", IpAddr::V4(CLIENT_ADDR));
    ca.users.push(("alice".into(), "secret".into()));
    let mut cb = PeerConfig::new("b.test", IpAddr::V4(SERVER_ADDR));
    cb.users.push(("bob".into(), "secret".into()));
    let pa = server
        .start(ca, &tmp.path().join("a"), Some(lab.client().name()))
        .unwrap();
    let pb = server
        .start(cb, &tmp.path().join("b"), Some(lab.server().name()))
        .unwrap();

    let mut alice = login(lab.client().name(), IpAddr::V4(CLIENT_ADDR), "alice@a.test");
    let mut bob = login(lab.server().name(), IpAddr::V4(SERVER_ADDR), "bob@b.test");

    // First message: the servers have to connect (dialback) first.
    let t0 = Instant::now();
    alice
        .send_message("bob@b.test", "ping <1> & \"x\"", "m1")
        .unwrap();
    let (from, body) = wait_message(&mut bob, 30);
    let first = t0.elapsed();
    assert!(from.starts_with("alice@a.test"), "{from}");
    assert_eq!(body, "ping <1> & \"x\"");
    bob.send_message("alice@a.test", "pong", "m2").unwrap();
    let (from, body) = wait_message(&mut alice, 30);
    assert!(from.starts_with("bob@b.test"), "{from}");
    assert_eq!(body, "pong");

    // Later messages ride the established server link: one crossing each way.
    let t1 = Instant::now();
    alice.send_message("bob@b.test", "again", "m3").unwrap();
    wait_message(&mut bob, 30);
    let later = t1.elapsed();
    assert!(
        later >= Duration::from_millis(20),
        "the link's delay must show: {later:?}"
    );
    assert!(
        first > later,
        "set-up makes the first message slower: {first:?} vs {later:?}"
    );
    let c = lab.counters();
    assert!(
        c.up.delivered_packets > 5 && c.down.delivered_packets > 5,
        "{c:?}"
    );

    alice.close();
    bob.close();
    drop((pa, pb));
    drop(lab);
    assert!(
        !std::path::Path::new("/etc/netns")
            .read_dir()
            .is_ok_and(|mut d| d.any(|e| {
                e.is_ok_and(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("wb-{}-", std::process::id()))
                })
            }))
    );
}
