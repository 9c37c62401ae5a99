//! The built-in XMPP server on loopback, with the blocking client driver: logins,
//! presence, routed messages both ways; and the clients it must shed (silent, bad XML,
//! wrong password) while the others carry on.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_xmpp::{ClientConfig, Event, Mechanism, TlsMode};
use wirebench_xmpp_client::session::XmppSession;
use wirebench_xmpp_server::{XmppServer, XmppServerConfig};

struct Running {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    stats: Arc<wirebench_xmpp_server::ServerStats>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap().unwrap();
        }
    }
}

fn start(tweak: impl FnOnce(&mut XmppServerConfig)) -> Running {
    let mut cfg = XmppServerConfig::new("127.0.0.1:0".parse().unwrap(), "example.com", 100);
    tweak(&mut cfg);
    let server = XmppServer::bind(cfg).unwrap();
    let addr = server.local_addr().unwrap();
    let stats = server.stats.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = Some(server.spawn(stop.clone()).unwrap());
    Running {
        addr,
        stop,
        thread,
        stats,
    }
}

fn login(addr: SocketAddr, n: u64, password: &str) -> Result<XmppSession, String> {
    let mut cfg = ClientConfig::new(&format!("user{n}@example.com"), password);
    cfg.tls = TlsMode::Never;
    cfg.mechanisms = vec![Mechanism::Plain];
    XmppSession::login(addr, cfg, n, Duration::from_secs(5))
        .map(|(s, _)| s)
        .map_err(|e| e.to_string())
}

fn next_message(s: &mut XmppSession) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let (_, Event::Message { from, body, .. }) = s.next_event(deadline, "a message").unwrap()
        {
            return (from, body);
        }
    }
}

#[test]
fn two_sessions_exchange_messages_through_the_builtin_server() {
    let srv = start(|_| {});
    let mut a = login(srv.addr, 1, "pass1").unwrap();
    let mut b = login(srv.addr, 2, "pass2").unwrap();
    for k in 0..50 {
        a.send_message("user2@example.com", &format!("ping {k}"), &format!("p{k}"))
            .unwrap();
        assert_eq!(
            next_message(&mut b),
            ("user1@example.com/wirebench".into(), format!("ping {k}"))
        );
        b.send_message("user1@example.com", &format!("pong {k}"), &format!("q{k}"))
            .unwrap();
        assert_eq!(next_message(&mut a).1, format!("pong {k}"));
    }
    assert_eq!(srv.stats.routed.load(Ordering::Relaxed), 100);
    a.close();
    b.close();
}

#[test]
fn bad_clients_are_shed_while_good_ones_carry_on() {
    let srv = start(|c| c.handshake_timeout = Duration::from_secs(1));
    // Connects and says nothing.
    let mut silent = TcpStream::connect(srv.addr).unwrap();
    // Sends garbage after a valid header.
    let mut garbage = TcpStream::connect(srv.addr).unwrap();
    garbage
        .write_all(
            b"<?xml version='1.0'?><stream:stream to='example.com' xmlns='jabber:client' \
              xmlns:stream='http://etherx.jabber.org/streams' version='1.0'><a><b></a></b>",
        )
        .unwrap();
    assert!(login(srv.addr, 3, "wrong").is_err());
    let mut a = login(srv.addr, 1, "pass1").unwrap();
    let mut b = login(srv.addr, 2, "pass2").unwrap();
    a.send_message("user2@example.com", "still here", "x")
        .unwrap();
    assert_eq!(next_message(&mut b).1, "still here");

    let mut buf = Vec::new();
    garbage
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = garbage.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    assert!(text.contains("not-well-formed"), "{text}");
    assert!(text.contains("malformed XML from the client"), "{text}");

    // The silent one is closed after the handshake timeout (1 s, swept every second).
    silent
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let t = Instant::now();
    let mut one = [0u8; 1];
    assert_eq!(silent.read(&mut one).unwrap_or(0), 0);
    assert!(t.elapsed() < Duration::from_secs(4));
    assert!(srv.stats.closed_timeout.load(Ordering::Relaxed) >= 1);
    a.close();
    b.close();
}

#[test]
fn messages_cross_between_worker_threads() {
    // Two workers on one port: the kernel spreads 40 sessions over both, so some of the
    // 20 pairs (user 2k-1 -> user 2k) straddle them (all 20 on one side: p = 2^-20).
    let srv = start(|c| c.workers = 2);
    let mut sessions: Vec<XmppSession> = (1..=40)
        .map(|n| login(srv.addr, n, &format!("pass{n}")).unwrap())
        .collect();
    for k in 0..20 {
        let to = format!("user{}@example.com", 2 * k + 2);
        sessions[2 * k]
            .send_message(&to, &format!("hello {k}"), "x")
            .unwrap();
        let (from, body) = next_message(&mut sessions[2 * k + 1]);
        assert_eq!(from, format!("user{}@example.com/wirebench", 2 * k + 1));
        assert_eq!(body, format!("hello {k}"));
    }
    assert_eq!(srv.stats.routed.load(Ordering::Relaxed), 20);
    assert!(
        srv.stats.cross_worker.load(Ordering::Relaxed) > 0,
        "no stanza crossed workers"
    );
    for s in sessions {
        s.close();
    }
}

#[test]
fn contacts_see_each_others_presence_across_workers() {
    let srv = start(|c| c.workers = 2);
    let mut sessions: Vec<XmppSession> = (1..=10)
        .map(|n| login(srv.addr, n, &format!("pass{n}")).unwrap())
        .collect();
    // Rosters are the neighbours (user k: k-1 and k+1); users 2..9 have both online.
    for k in 2..=9usize {
        let want = [
            format!("user{}@example.com/wirebench", k - 1),
            format!("user{}@example.com/wirebench", k + 1),
        ];
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !want.iter().all(|w| seen.contains(w)) {
            match sessions[k - 1].next_event(deadline, "presence") {
                Ok((_, Event::Presence { from, kind: None })) => seen.push(from),
                Ok(_) => {}
                Err(e) => panic!("user{k} saw {seen:?}, not {want:?}: {e}"),
            }
        }
    }
    for s in sessions {
        s.close();
    }
}

#[test]
fn a_message_sent_right_after_the_recipients_login_reaches_it() {
    // The recipient's worker tells the others before its login completes (acked notes),
    // so a message sent the moment its login returns finds it on any worker. Without
    // that, about one pair in four straddling the workers lost this message.
    let srv = start(|c| c.workers = 2);
    for k in 0..30u64 {
        let mut a = login(srv.addr, 2 * k + 1, &format!("pass{}", 2 * k + 1)).unwrap();
        let mut b = login(srv.addr, 2 * k + 2, &format!("pass{}", 2 * k + 2)).unwrap();
        a.send_message(&format!("user{}@example.com", 2 * k + 2), "now", "x")
            .unwrap();
        assert_eq!(next_message(&mut b).1, "now", "pair {k}");
        a.close();
        b.close();
    }
}
