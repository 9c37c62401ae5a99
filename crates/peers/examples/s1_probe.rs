//! A probe of study S1 with real Prosody servers, until `--protocol xmpp` lands in the
//! runner: ping-pong between alice@a.test and bob@b.test over server-to-server across
//! an emulated link. Prints the first round (fresh servers: s2s set-up included) and the
//! stable round trip.
//!
//!   cargo run --release -p wirebench-peers --example s1_probe -- 2400bit/0ms 10
//!
//! Needs root and Prosody.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use wirebench_lab::{CLIENT_ADDR, Lab, SERVER_ADDR};
use wirebench_link::LinkSpec;
use wirebench_net::xmpp::XmppSession;
use wirebench_peers::prosody::{Prosody, ProsodyConfig};
use wirebench_xmpp::{ClientConfig, Event, TlsMode};

fn login(ns: &str, addr: IpAddr, jid: &str) -> (XmppSession, Duration) {
    let (ns, jid) = (ns.to_string(), jid.to_string());
    std::thread::spawn(move || {
        wirebench_lab::netns::enter(&ns).expect("enter namespace");
        let mut cfg = ClientConfig::new(&jid, "secret");
        cfg.tls = TlsMode::Never;
        let t = Instant::now();
        let s = XmppSession::login(
            SocketAddr::new(addr, 5222),
            cfg,
            1,
            Duration::from_secs(600),
        )
        .unwrap_or_else(|e| panic!("{jid}: {e}"))
        .0;
        (s, t.elapsed())
    })
    .join()
    .expect("login thread")
}

fn wait_message(s: &mut XmppSession) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        if let (_, Event::Message { .. }) = s.next_event(deadline, "a message").expect("message") {
            return Instant::now();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let spec = LinkSpec::parse(args.get(1).map(String::as_str).unwrap_or("2400bit/0ms"))
        .expect("link spec");
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(10);
    let lab = Lab::create(spec.to_params(), spec.to_params(), 1, None).expect("lab");
    let hosts = [
        (IpAddr::V4(CLIENT_ADDR), "a.test"),
        (IpAddr::V4(SERVER_ADDR), "b.test"),
    ];
    lab.client().set_hosts(&hosts).expect("hosts");
    lab.server().set_hosts(&hosts).expect("hosts");
    let tmp = std::env::temp_dir().join(format!("wb-s1-probe-{}", std::process::id()));
    let mut ca = ProsodyConfig::new("a.test", IpAddr::V4(CLIENT_ADDR));
    ca.users.push(("alice".into(), "secret".into()));
    let mut cb = ProsodyConfig::new("b.test", IpAddr::V4(SERVER_ADDR));
    cb.users.push(("bob".into(), "secret".into()));
    let _pa = Prosody::start(ca, &tmp.join("a"), Some(lab.client().name())).expect("prosody a");
    let _pb = Prosody::start(cb, &tmp.join("b"), Some(lab.server().name())).expect("prosody b");
    let (mut alice, la) = login(lab.client().name(), IpAddr::V4(CLIENT_ADDR), "alice@a.test");
    let (mut bob, lb) = login(lab.server().name(), IpAddr::V4(SERVER_ADDR), "bob@b.test");
    println!(
        "link {spec}: login alice {:.3}s, bob {:.3}s (c2s only, not across the link)",
        la.as_secs_f64(),
        lb.as_secs_f64()
    );
    let before = lab.counters();
    let mut rtts = Vec::new();
    for i in 0..rounds {
        let t = Instant::now();
        alice
            .send_message("bob@b.test", "xq", &format!("p{i}"))
            .expect("send");
        wait_message(&mut bob);
        bob.send_message("alice@a.test", "zk", &format!("r{i}"))
            .expect("send");
        let back = wait_message(&mut alice);
        rtts.push(back.duration_since(t).as_secs_f64());
        println!("round {:>3}: {:.3}s", i + 1, rtts[i]);
    }
    let after = lab.counters();
    let mut stable: Vec<f64> = rtts.iter().skip(2).copied().collect();
    stable.sort_by(f64::total_cmp);
    let median = stable.get(stable.len() / 2).copied().unwrap_or(f64::NAN);
    println!(
        "first {:.3}s  stable (median of rounds 3..) {:.3}s  link bytes up {} down {} (packets {} / {})",
        rtts[0],
        median,
        after.up.delivered_bytes - before.up.delivered_bytes,
        after.down.delivered_bytes - before.down.delivered_bytes,
        after.up.delivered_packets - before.up.delivered_packets,
        after.down.delivered_packets - before.down.delivered_packets,
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
