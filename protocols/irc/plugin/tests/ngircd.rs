//! Study S1's IRC row with real servers: two ngircd linked across a veth pair between two
//! lab hosts, one client on each, PRIVMSG both ways across the server link (registration
//! with a PING cookie on one side, a payload split over several lines, timing of the
//! first messages on a new link), then stop and check nothing is left. Needs root and
//! ngircd (`apt-get install ngircd`); without root it prints why and passes.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use wirebench_irc::{Config, Event, Reassembler};
use wirebench_lab::Netns;
use wirebench_plugin_irc::conn::IrcConn;
use wirebench_plugin_irc::ngircd::{self, Ngircd, NgircdConfig};

const ADDR_A: Ipv4Addr = Ipv4Addr::new(198, 19, 7, 1);
const ADDR_B: Ipv4Addr = Ipv4Addr::new(198, 19, 7, 2);

fn tx_bytes(ns: &Netns, dev: &str) -> u64 {
    wirebench_lab::netns::run(
        "ip",
        &[
            "netns",
            "exec",
            ns.name(),
            "cat",
            &format!("/sys/class/net/{dev}/statistics/tx_bytes"),
        ],
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap()
}

/// Deterministic incompressible-looking text (printable, no spaces).
fn noise(len: usize, seed: &mut u64) -> String {
    (0..len)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            char::from(b'!' + (*seed % 94) as u8)
        })
        .collect()
}

/// Waits until `c`'s server knows `nick` (ISON), i.e. the nick crossed the server link.
fn wait_known(c: &mut IrcConn, nick: &str, deadline: Instant) -> Duration {
    let t0 = Instant::now();
    loop {
        c.client.send_raw(&format!("ISON {nick}")).unwrap();
        loop {
            match c.next_event(deadline, "RPL_ISON").unwrap() {
                Event::Reply { code: 303, params } => {
                    if params
                        .last()
                        .is_some_and(|p| p.split(' ').any(|n| n == nick))
                    {
                        return t0.elapsed();
                    }
                    break;
                }
                _ => continue,
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, step by step
fn two_linked_ngircd_relay_privmsg_both_ways() {
    // Root-needing tests fail, never pass silently, without it (CI runs as root).
    wirebench_lab::netns::check_privileges().expect(
        "this test builds network namespaces: run the suite as root (bash scripts/test.sh)",
    );
    let ha = Netns::create("irca").unwrap();
    let hb = Netns::create("ircb").unwrap();
    ha.ip(&[
        "link",
        "add",
        "wbirc0",
        "type",
        "veth",
        "peer",
        "name",
        "wbirc1",
        "netns",
        hb.name(),
    ])
    .unwrap();
    ha.ip(&["addr", "add", &format!("{ADDR_A}/24"), "dev", "wbirc0"])
        .unwrap();
    hb.ip(&["addr", "add", &format!("{ADDR_B}/24"), "dev", "wbirc1"])
        .unwrap();
    ha.ip(&["link", "set", "wbirc0", "up"]).unwrap();
    hb.ip(&["link", "set", "wbirc1", "up"]).unwrap();
    let hosts = [
        (IpAddr::V4(ADDR_A), "a.irc.test"),
        (IpAddr::V4(ADDR_B), "b.irc.test"),
    ];
    ha.set_hosts(&hosts).unwrap();
    hb.set_hosts(&hosts).unwrap();

    let tmp = tempfile::tempdir().unwrap();
    // ngircd runs as `irc`, which must reach its directory.
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut ca = NgircdConfig::new("a.irc.test", IpAddr::V4(ADDR_A));
    let mut cb = NgircdConfig::new("b.irc.test", IpAddr::V4(ADDR_B));
    cb.require_auth_ping = true;
    // A connects to B by name: the hosts file `ip netns exec` mounts resolves it.
    ngircd::link(&mut ca, &mut cb, "b.irc.test");

    // Passive side first: the active side tries once at start-up, then every 5 s.
    let mut sb = Ngircd::start(Some(hb.name()), &tmp.path().join("b"), cb).unwrap();
    let mut sa = Ngircd::start(Some(ha.name()), &tmp.path().join("a"), ca).unwrap();
    let ready = sa.started.elapsed();
    let link_a = sa
        .wait_linked(
            "wblinka",
            "b.irc.test",
            Duration::from_secs(15),
            &AtomicBool::new(false),
        )
        .unwrap_or_else(|e| panic!("{e}\nB's log:\n{}", sb.log_tail()));
    let link_b = sb
        .wait_linked(
            "wblinkb",
            "a.irc.test",
            Duration::from_secs(5),
            &AtomicBool::new(false),
        )
        .unwrap();
    println!(
        "ngircd A accepting after {ready:?}; link seen from A {link_a:?} after A's start, \
         from B {link_b:?} after B's start"
    );
    let log = std::fs::read_to_string(tmp.path().join("a/ngircd.log")).unwrap();
    assert!(log.contains("Enabled link compression (zlib)"), "{log}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let mut alice = IrcConn::connect(
        Some(ha.name()),
        sa.addr(),
        Config::new("alice"),
        Duration::from_secs(10),
    )
    .unwrap();
    // B sends a PING cookie before welcoming (RequireAuthPing): the engine answers it.
    let mut bob = IrcConn::connect(
        Some(hb.name()),
        sb.addr(),
        Config::new("bob"),
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(bob.client.mask(), Some("bob!~bob@198.19.7.2"));
    let known = wait_known(&mut alice, "bob", deadline);
    wait_known(&mut bob, "alice", deadline);
    println!("bob known on A {known:?} after his registration on B");

    // A second "alice", on B: the nick is taken network-wide (433), the engine retries.
    let alice2 = IrcConn::connect(
        Some(hb.name()),
        sb.addr(),
        Config::new("alice"),
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(alice2.client.nick(), "alice_1");
    alice2.quit();

    // A channel spanning both servers.
    alice.client.join("#s1").unwrap();
    alice.flush().unwrap();
    while alice.next_event(deadline, "JOIN").unwrap()
        != (Event::Joined {
            channel: "#s1".into(),
        })
    {}
    bob.client.join("#s1").unwrap();
    bob.flush().unwrap();
    // Once alice sees bob's JOIN, A knows the channel has a member behind the link.
    loop {
        if let Event::Other(m) = alice.next_event(deadline, "bob's JOIN").unwrap() {
            if m.command == "JOIN" && m.source_nick() == Some("bob") {
                break;
            }
        }
    }
    alice.client.privmsg("#s1", "to the channel").unwrap();
    alice.flush().unwrap();
    assert_eq!(
        bob.next_message(deadline).unwrap(),
        ("alice".into(), "#s1".into(), "to the channel".into())
    );

    // Ping-pong across the link: the first rounds on a new link are the slow ones.
    let mut rtts = Vec::new();
    for k in 0..6 {
        let t = Instant::now();
        alice.client.privmsg("bob", &format!("ping {k}")).unwrap();
        alice.flush().unwrap();
        let (from, target, text) = bob.next_message(deadline).unwrap();
        assert_eq!(
            (from.as_str(), target.as_str(), text.as_str()),
            ("alice", "bob", format!("ping {k}").as_str())
        );
        bob.client.privmsg("alice", &format!("pong {k}")).unwrap();
        bob.flush().unwrap();
        let (from, _, text) = alice.next_message(deadline).unwrap();
        assert_eq!((from.as_str(), text), ("bob", format!("pong {k}")));
        rtts.push(t.elapsed());
    }
    println!("ping-pong RTTs over the link (veth, no delay): {rtts:?}");

    // The largest single text the engine allows arrives whole (not `[CUT]`).
    let room = alice.client.text_room("bob");
    let full = "y".repeat(room);
    alice.client.privmsg("bob", &full).unwrap();
    alice.flush().unwrap();
    assert_eq!(bob.next_message(deadline).unwrap().2, full);

    // A payload longer than a line, split and reassembled.
    let mut seed = 0x9E37_79B9_7F4A_7C15;
    let payload = noise(1500, &mut seed);
    let pieces = alice.client.send_payload("bob", &payload).unwrap();
    alice.flush().unwrap();
    let mut r = Reassembler::new();
    let got = loop {
        let (from, target, text) = bob.next_message(deadline).unwrap();
        assert!(!text.ends_with("[CUT]"));
        if let Some(m) = r.push(&from, &target, &text).unwrap() {
            break m;
        }
    };
    assert_eq!(got.payload, payload);
    assert_eq!(got.pieces, pieces);
    assert!(got.was_split() && pieces == 4, "{pieces}");

    // Bytes on the server link per message, A to B: 20 texts of 100 noise bytes (each
    // different) or 100 repeated bytes, sent in one burst or one at a time (each
    // delivered before the next). zlib and the TCP/IP headers both show in the count.
    for (label, repetitive, burst) in [
        ("noise, burst", false, true),
        ("noise, one at a time", false, false),
        ("repetitive, one at a time", true, false),
    ] {
        let texts: Vec<String> = (0..20)
            .map(|_| {
                if repetitive {
                    "z".repeat(100)
                } else {
                    noise(100, &mut seed)
                }
            })
            .collect();
        let before = tx_bytes(&ha, "wbirc0");
        let t0 = Instant::now();
        for t in &texts {
            alice.client.privmsg("bob", t).unwrap();
            if !burst {
                alice.flush().unwrap();
                assert_eq!(&bob.next_message(deadline).unwrap().2, t);
            }
        }
        if burst {
            alice.flush().unwrap();
            for t in &texts {
                assert_eq!(&bob.next_message(deadline).unwrap().2, t);
            }
        }
        let took = t0.elapsed();
        std::thread::sleep(Duration::from_millis(50));
        let per = (tx_bytes(&ha, "wbirc0") - before) as f64 / 20.0;
        println!("A->B veth bytes per 100-byte PRIVMSG text ({label}): {per:.0}; 20 took {took:?}");
    }

    alice.quit();
    bob.quit();
    let pids = [sa.pid().unwrap(), sb.pid().unwrap()];
    let t = Instant::now();
    sa.stop();
    sb.stop();
    println!("both servers stopped in {:?}", t.elapsed());
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} left"
        );
    }
    for h in [&ha, &hb] {
        let left = wirebench_lab::netns::run("ip", &["netns", "pids", h.name()]).unwrap();
        assert!(left.trim().is_empty(), "left in {}: {left}", h.name());
    }
    let names = [ha.name().to_string(), hb.name().to_string()];
    drop((sa, sb));
    drop((ha, hb));
    for n in names {
        assert!(!Path::new(&format!("/run/netns/{n}")).exists());
        assert!(!Path::new(&format!("/etc/netns/{n}")).exists());
    }
}

/// Issue #34's fault: a real server that cannot start. Its port is taken (bound, not
/// listening, so nothing answers there), ngircd gives up, and the error says so in one
/// line and then names the log to read, with its last lines.
#[test]
fn a_server_that_cannot_start_names_its_log() {
    wirebench_lab::netns::check_privileges()
        .expect("ngircd runs as its own user: run the suite as root (bash scripts/test.sh)");
    // SAFETY: plain socket calls on a descriptor this test owns and closes.
    let (fd, port) = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let mut a: libc::sockaddr_in = std::mem::zeroed();
        a.sin_family = libc::AF_INET as libc::sa_family_t;
        a.sin_addr.s_addr = u32::from(Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(libc::bind(fd, (&raw const a).cast(), len), 0);
        let mut len = len;
        assert_eq!(libc::getsockname(fd, (&raw mut a).cast(), &mut len), 0);
        (fd, u16::from_be(a.sin_port))
    };
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = NgircdConfig::new("taken.irc.test", IpAddr::V4(Ipv4Addr::LOCALHOST));
    cfg.port = port;
    let t0 = Instant::now();
    let e = Ngircd::start(None, dir.path(), cfg)
        .err()
        .expect("ngircd started on a taken port");
    // SAFETY: the descriptor opened above.
    unsafe { libc::close(fd) };
    let text = e.to_string();
    eprintln!("{text}");
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("ngircd taken.irc.test "), "{text}");
    let log = dir.path().join("ngircd.log");
    assert!(
        text.contains(&format!("{} ends with:", log.display())),
        "the error does not name the log: {text}"
    );
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
}
