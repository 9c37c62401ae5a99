//! `wirebench serve --xmpp` as its own process against the clients RFC 6120 section 4.9
//! says a server must survive, all at once, while two good sessions keep talking:
//! 10,000 connections that never finish the handshake (half silent, half stopping after
//! the stream header), malformed XML, a DTD with an entity declaration, an oversized
//! stanza, and a logged-in client that stops reading while messages queue for it. Each
//! bad one must get a stream error or be closed after the handshake timeout; the
//! server's memory stays bounded; the good sessions' messages keep arriving. 127.0.0.1
//! only; every connection and the server end with the test.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};
use wirebench_xmpp::{ClientConfig, Event, Mechanism, TlsMode};
use wirebench_xmpp_client::session::XmppSession;

use crate::common;
use common::{Serve, free_port};

const DOMAIN: &str = "wirebench.test";
const STALLED: usize = 10_000;
const HEADER: &[u8] = b"<?xml version='1.0'?><stream:stream to='wirebench.test' \
    xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>";

/// `wirebench serve --xmpp` with tight limits, so the bad clients meet them quickly.
fn start_server(port: u16) -> Serve {
    Serve::start(
        [
            "--listen".to_string(),
            "127.0.0.1:0".into(),
            "--xmpp".into(),
            format!("127.0.0.1:{port}"),
            "--xmpp-users".into(),
            "10".into(),
            "--xmpp-sessions".into(),
            "12000".into(),
            "--xmpp-handshake-timeout".into(),
            "3s".into(),
            "--xmpp-max-stanza".into(),
            "16KiB".into(),
            "--xmpp-max-queued".into(),
            "256KiB".into(),
        ],
        "XMPP layout",
    )
}

/// Resident memory of the server process, KiB (its workers are threads here).
fn rss_kib(server: &Serve) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn login(addr: SocketAddr, n: u64) -> XmppSession {
    let mut cfg = ClientConfig::new(&format!("user{n}@{DOMAIN}"), &format!("pass{n}"));
    cfg.tls = TlsMode::Never;
    cfg.mechanisms = vec![Mechanism::Plain];
    XmppSession::login(addr, cfg, n, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("user{n} cannot log in: {e}"))
        .0
}

/// A round trip between the good sessions: a message each way.
fn round_trip(a: &mut XmppSession, b: &mut XmppSession, i: usize) -> Duration {
    let t = Instant::now();
    let body = format!("hello {i}");
    a.send_message(&format!("user2@{DOMAIN}"), &body, &format!("m{i}"))
        .unwrap();
    expect_message(b, &body);
    b.send_message(&format!("user1@{DOMAIN}"), &body, &format!("r{i}"))
        .unwrap();
    expect_message(a, &body);
    t.elapsed()
}

fn expect_message(s: &mut XmppSession, body: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let (_, Event::Message { body: got, .. }) = s.next_event(deadline, "a message").unwrap()
        {
            assert_eq!(got, body);
            return;
        }
    }
}

/// Everything the server sends until it closes (at most `limit`).
fn read_until_closed(mut s: TcpStream, limit: Duration) -> String {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Whether the server has closed `s` (a read sees end of stream or a reset).
fn closed_by_server(s: &TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: reads into a local buffer from a socket this test owns.
        let n = unsafe {
            libc::recv(
                s.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        match n {
            0 => return true,
            n if n > 0 => continue,
            _ => {
                let e = std::io::Error::last_os_error();
                return e.kind() != std::io::ErrorKind::WouldBlock;
            }
        }
    }
}

#[test]
fn bad_clients_are_shed_and_good_ones_carry_on() {
    let port = free_port();
    let server = start_server(port);
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let mut a = login(addr, 1);
    let mut b = login(addr, 2);
    round_trip(&mut a, &mut b, 0);
    let rss_before = rss_kib(&server);

    // 10,000 connections that never finish: even ones silent, odd ones stop after the
    // stream header.
    let t0 = Instant::now();
    let mut stalled = Vec::with_capacity(STALLED);
    for i in 0..STALLED {
        let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connection {i}: {e}"));
        if i % 2 == 1 {
            s.write_all(HEADER).unwrap();
        }
        stalled.push(s);
        if i % 1000 == 999 {
            // The good sessions are served in the middle of the flood.
            round_trip(&mut a, &mut b, i);
        }
    }
    let opened = t0.elapsed();
    // Give the server a moment to accept and read them all.
    std::thread::sleep(Duration::from_millis(500));
    let rss_open = rss_kib(&server);

    // Malformed XML, and a DTD declaring an entity (never processed): stream errors.
    let mut malformed = TcpStream::connect(addr).unwrap();
    malformed.write_all(HEADER).unwrap();
    malformed.write_all(b"<message><body>x</message>").unwrap();
    let mut dtd = TcpStream::connect(addr).unwrap();
    dtd.write_all(
        b"<?xml version='1.0'?><!DOCTYPE lol [<!ENTITY lol 'lol'><!ENTITY lol2 '&lol;&lol;'>]>",
    )
    .unwrap();
    dtd.write_all(HEADER).unwrap();

    // A logged-in client sends a stanza over the 16 KiB limit.
    let mut big = login(addr, 3);
    big.send_message(&format!("user1@{DOMAIN}"), &"x".repeat(32 * 1024), "big")
        .unwrap();

    // A logged-in client stops reading; user 1 sends it 40 MB, more than the kernel's
    // socket buffers and the 256 KiB the server may queue.
    let deaf = login(addr, 4);
    let chunk = "y".repeat(8 * 1024);
    for i in 0..5000 {
        a.send_message(&format!("user4@{DOMAIN}"), &chunk, &format!("d{i}"))
            .unwrap();
    }
    // The good pair still gets through while that backs up.
    let during = round_trip(&mut a, &mut b, STALLED + 1);

    let text = read_until_closed(malformed, Duration::from_secs(5));
    assert!(text.contains("<stream:error"), "malformed XML got: {text}");
    assert!(text.contains("not-well-formed"), "{text}");
    let text = read_until_closed(dtd, Duration::from_secs(5));
    assert!(text.contains("<stream:error"), "a DTD got: {text}");
    assert!(
        !text.contains("lol"),
        "the entity must not be expanded: {text}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let err = loop {
        match big.next_event(deadline, "the stream error") {
            Ok(_) => continue,
            Err(e) => break e.to_string(),
        }
    };
    assert!(err.contains("policy-violation"), "oversized stanza: {err}");

    // After the handshake timeout (3 s, swept every second) every stalled connection is
    // closed by the server.
    let deadline = t0 + opened + Duration::from_secs(20);
    let mut open = stalled.len();
    while Instant::now() < deadline {
        stalled.retain(|s| !closed_by_server(s));
        open = stalled.len();
        if open == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        open,
        0,
        "{open} of {STALLED} stalled connections still open 20 s after they were all opened \
         (in {opened:?}); server log:\n{}",
        server.log()
    );
    let rss_during = rss_kib(&server);
    eprintln!(
        "{STALLED} stalled connections opened in {opened:?}, all closed by the server {:?} \
         after the first; server RSS {rss_before} KiB before, {rss_open} KiB with them open, {rss_during} KiB after; good \
         round trip while a reader was deaf: {during:?}",
        t0.elapsed()
    );
    // After all that the good pair is still served.
    for i in 0..20 {
        let rtt = round_trip(&mut a, &mut b, STALLED + 10 + i);
        assert!(rtt < Duration::from_secs(2), "round trip {i} took {rtt:?}");
    }
    assert!(
        during < Duration::from_secs(5),
        "round trip while a reader was deaf: {during:?}"
    );
    // Generous: 10,000 half-open sessions and one deaf reader's queue, not unbounded.
    assert!(
        rss_open.max(rss_during) < rss_before + 200 * 1024,
        "server RSS {rss_before} KiB -> {rss_open} KiB (10,000 stalled) -> {rss_during} KiB"
    );

    a.close();
    b.close();
    drop(deaf);
    let (status, log) = server.stop_by(libc::SIGTERM);
    assert!(status.success(), "server exit {status}: {log}");
    let totals = log
        .lines()
        .find(|l| l.contains("XMPP totals"))
        .unwrap_or_else(|| panic!("no totals in the server log:\n{log}"))
        .to_string();
    // "closed: T on handshake timeout, S slow readers, E on stream errors, ..."
    let count = |what: &str| -> u64 {
        let before = totals.split(what).next().unwrap();
        before
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no count before {what:?} in {totals}"))
    };
    assert!(count(" on handshake timeout") >= STALLED as u64, "{totals}");
    assert!(count(" slow readers") >= 1, "{totals}");
    assert!(count(" on stream errors") >= 3, "{totals}");
}
