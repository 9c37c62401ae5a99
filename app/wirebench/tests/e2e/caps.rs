//! The caps of what a hostile client can make `wirebench serve` and the converter hold
//! (issue #34): connections of the `--also` servers and `wirebench converter`
//! (`--also-max-connections`, `--max-connections`), BOSH and SockJS sessions
//! (`--xmpp-bosh-max-sessions`, `--xmpp-sockjs-max-sessions`) and their expiry, gRPC's
//! HTTP/2 streams (`--also-max-streams`), bans, and the
//! line an operator sees for each close, at most one a second (serve's control port's
//! too). 127.0.0.1 only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common;
use common::{Serve, free_port, wirebench};

/// Whether the server closes `s` within `within` (EOF or reset), sending nothing.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 16];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// A SOCKS5 greeting answered: the proxy took the connection and serves it.
fn socks5_greeted(port: u16) -> Option<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s.write_all(&[5, 1, 0]).ok()?;
    let mut r = [0u8; 2];
    s.read_exact(&mut r).ok()?;
    (r == [5, 0]).then_some(s)
}

#[test]
fn also_servers_hold_their_cap_and_log_their_closes() {
    let (socks, http, echo) = (free_port(), free_port(), free_port());
    let serve = Serve::start(
        [
            "--listen".to_string(),
            "127.0.0.1:0".into(),
            "--also".into(),
            format!("socks5=127.0.0.1:{socks}"),
            "--also".into(),
            format!("http=127.0.0.1:{http}"),
            "--also".into(),
            format!("direct=127.0.0.1:{echo}"),
            "--proxy-threads".into(),
            "2".into(),
            "--also-max-connections".into(),
            "4".into(),
            "--also-header-timeout".into(),
            "1s".into(),
        ],
        "direct on",
    );
    // Four held over two threads: the cap is the proxy's, not each thread's.
    let mut held: Vec<_> = (0..4)
        .map(|i| socks5_greeted(socks).unwrap_or_else(|| panic!("connection {i} refused")))
        .collect();
    // It greets as any client does: the listener defers a connection to its first bytes
    // (TCP_DEFER_ACCEPT), so a silent one would be seen, and closed, a second late.
    let mut fifth = TcpStream::connect(("127.0.0.1", socks)).unwrap();
    fifth.write_all(&[5, 1, 0]).unwrap();
    let t = Instant::now();
    assert!(
        closed_within(&mut fifth, Duration::from_secs(3)),
        "the fifth connection stayed open"
    );
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    drop(held.pop());
    let end = Instant::now() + Duration::from_secs(3);
    let again = loop {
        // The proxy learns the close when it reads the client's EOF: a moment later.
        if let Some(s) = socks5_greeted(socks) {
            break s;
        }
        assert!(Instant::now() < end, "no room after one connection closed");
        std::thread::sleep(Duration::from_millis(50));
    };
    drop((again, held));

    // The echo origin run alone (`direct`) echoes, and holds the same cap.
    let echoes: Vec<_> = (0..4)
        .map(|i| {
            let mut s = TcpStream::connect(("127.0.0.1", echo)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            s.write_all(b"hi").unwrap();
            let mut back = [0u8; 2];
            s.read_exact(&mut back)
                .unwrap_or_else(|e| panic!("echo {i}: {e}"));
            assert_eq!(&back, b"hi");
            s
        })
        .collect();
    let mut over = TcpStream::connect(("127.0.0.1", echo)).unwrap();
    over.write_all(b"hi").unwrap();
    assert!(
        closed_within(&mut over, Duration::from_secs(3)),
        "the fifth echo connection stayed open"
    );
    drop(echoes);

    // An HTTP client that never asks is closed at --also-header-timeout, with a line.
    let mut idle = TcpStream::connect(("127.0.0.1", http)).unwrap();
    assert!(closed_within(&mut idle, Duration::from_secs(4)));
    // The server reads what the client still sends until it closes too, then logs.
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    let log = serve.stop();
    assert!(
        log.contains(&format!(
            "wirebench serve: socks5 127.0.0.1:{socks}: 4 connections open, the cap; closed a new one"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "wirebench serve: http 127.0.0.1:{http} 127.0.0.1:"
        )) && log.contains("HTTP connection: nothing received within 1s; closed"),
        "{log}"
    );
}

/// `wirebench ARGS` with its stderr in `log`, once `ready` is in it.
fn started(args: &[&str], log: &tempfile::NamedTempFile, ready: &str) -> std::process::Child {
    let child = wirebench()
        .args(args)
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(log.path()).unwrap().contains(ready) {
        assert!(Instant::now() < end, "{args:?} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Ctrl-C to `child`, then its log.
fn stopped(mut child: std::process::Child, log: &tempfile::NamedTempFile) -> String {
    // SAFETY: a process this test started, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().unwrap();
    std::fs::read_to_string(log.path()).unwrap()
}

#[test]
fn the_converter_and_its_client_hold_their_caps() {
    let (conv, front) = (free_port(), free_port());
    let (conv_at, front_at) = (format!("127.0.0.1:{conv}"), format!("127.0.0.1:{front}"));
    let (conv_log, front_log) = (
        tempfile::NamedTempFile::new().unwrap(),
        tempfile::NamedTempFile::new().unwrap(),
    );
    let converter = started(
        &[
            "converter",
            "--listen",
            &conv_at,
            "--allow",
            "127.0.0.1",
            "--threads",
            "2",
            "--max-connections",
            "2",
        ],
        &conv_log,
        "listening on",
    );
    let client = started(
        &[
            "converter-client",
            "--listen",
            &front_at,
            "--via",
            &conv_at,
            "--max-connections",
            "2",
        ],
        &front_log,
        "SOCKS5 on",
    );
    let mut held: Vec<_> = (0..2)
        .map(|_| TcpStream::connect(("127.0.0.1", conv)).unwrap())
        .collect();
    held.extend((0..2).map(|_| socks5_greeted(front).expect("the front refused")));
    // The converter's two accepted (they wait for their Convert message) before the third.
    std::thread::sleep(Duration::from_millis(300));
    let mut third = TcpStream::connect(("127.0.0.1", conv)).unwrap();
    let conv_closed = closed_within(&mut third, Duration::from_secs(2));
    let mut third = TcpStream::connect(("127.0.0.1", front)).unwrap();
    let front_closed = closed_within(&mut third, Duration::from_secs(2));
    drop(held);
    let (conv_text, front_text) = (stopped(converter, &conv_log), stopped(client, &front_log));
    assert!(
        conv_closed,
        "the converter's third stayed open: {conv_text}"
    );
    assert!(front_closed, "the front's third stayed open: {front_text}");
    for text in [conv_text, front_text] {
        assert!(
            text.contains("2 connections open, the cap; closed a new one"),
            "{text}"
        );
    }
}

/// An HTTP POST of `body` to `path` on `port`; the whole answer.
fn post(port: u16, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn bosh_and_sockjs_sessions_are_capped_and_expire() {
    let (xmpp, bosh, sockjs) = (free_port(), free_port(), free_port());
    let at = |p: u16| format!("127.0.0.1:{p}");
    let serve = Serve::start(
        [
            "--listen".to_string(),
            "127.0.0.1:0".into(),
            "--xmpp".into(),
            at(xmpp),
            "--xmpp-bosh".into(),
            at(bosh),
            "--xmpp-bosh-max-sessions".into(),
            "2".into(),
            "--xmpp-bosh-inactivity".into(),
            "1s".into(),
            "--xmpp-sockjs".into(),
            at(sockjs),
            "--xmpp-sockjs-max-sessions".into(),
            "2".into(),
            "--xmpp-sockjs-disconnect-delay".into(),
            "1s".into(),
        ],
        "SockJS",
    );
    let create = |rid: u32| {
        post(
            bosh,
            "/http-bind",
            &format!(
                "<body xmlns='http://jabber.org/protocol/httpbind' rid='{rid}' \
                 to='wirebench.test' wait='1' hold='1'/>"
            ),
        )
    };
    let open = |sid: &str| post(sockjs, &format!("/xmpp/000/{sid}/xhr"), "");
    for rid in [10, 20] {
        let a = create(rid);
        assert!(a.contains("sid='"), "{a}");
    }
    for sid in ["a", "b"] {
        let a = open(sid);
        assert!(a.ends_with("o\n"), "{a}");
    }
    let a = create(30);
    assert!(
        a.contains("type='terminate'") && a.contains("condition='undefined-condition'"),
        "{a}"
    );
    let a = open("c");
    assert!(
        a.ends_with("c[1013,\"Too many sessions, try again later\"]\n"),
        "{a}"
    );
    // Left alone, the sessions end (BOSH inactivity, SockJS disconnect delay) and make
    // room for others.
    std::thread::sleep(Duration::from_millis(2500));
    let a = create(40);
    assert!(a.contains("sid='"), "{a}");
    let a = open("d");
    assert!(a.ends_with("o\n"), "{a}");
    let log = serve.stop();
    assert!(
        log.contains("XMPP BOSH: 2 sessions open, the cap (--xmpp-bosh-max-sessions)"),
        "{log}"
    );
    assert!(
        log.contains("XMPP SockJS: 2 sessions held, the cap (--xmpp-sockjs-max-sessions)"),
        "{log}"
    );
}

#[test]
fn control_connection_lines_are_written_at_most_once_a_second() {
    let serve = Serve::start(["--listen", "127.0.0.1:0"], "control port listening on");
    let log = serve.log();
    let port: u16 = log
        .split("listening on 127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {log}"));
    let hello = || {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"{\"op\":\"hello\",\"version\":1,\"client\":\"t\"}\n")
            .unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut b = [0u8; 256];
        assert!(s.read(&mut b).unwrap() > 0, "no answer to hello");
    };
    // 300 clients, each says hello, reads its answer and leaves: a line each before.
    let t = Instant::now();
    for _ in 0..300 {
        hello();
    }
    let secs = t.elapsed().as_secs() as usize;
    // A second later, one more: its line counts those held back.
    std::thread::sleep(Duration::from_millis(1100));
    hello();
    std::thread::sleep(Duration::from_millis(300));
    let log = serve.stop();
    let hellos = log.matches("hello from").count();
    assert!(
        (2..=secs + 3).contains(&hellos),
        "{hellos} hello lines:\n{log}"
    );
    assert!(log.contains("more like it since the last line"), "{log}");
}

/// A connection from `from` to `port` that gets through within half a second.
fn connect_from(from: [u8; 4], port: u16) -> Option<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(&std::net::SocketAddr::from((from, 0)).into())
        .unwrap();
    let to = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    s.connect_timeout(&to.into(), Duration::from_millis(500))
        .ok()
        .map(|()| TcpStream::from(s))
}

#[test]
fn a_source_that_keeps_sending_garbage_is_banned_from_every_port_for_a_while() {
    let (http, xmpp, socks5) = (free_port(), free_port(), free_port());
    let serve = Serve::start(
        [
            "--listen".to_string(),
            "127.0.0.1:0".into(),
            "--xmpp".into(),
            format!("127.0.0.1:{xmpp}"),
            "--also".into(),
            format!("http=127.0.0.1:{http}"),
            "--also".into(),
            format!("socks5=127.0.0.1:{socks5}"),
            "--ban-after".into(),
            "5".into(),
            "--ban-for".into(),
            "3s".into(),
        ],
        // The `--also` servers announce themselves before the XMPP server binds: its
        // layout line is the last to come.
        "XMPP layout",
    );
    let bad = [127, 0, 0, 2];
    // Five refusals: not HTTP, bytes that are no XML, a head over the cap, not SOCKS5.
    let noise: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
    for i in 0..5 {
        let (port, what): (u16, &[u8]) = match i % 4 {
            0 => (http, b"\x16\x03\x01 not http at all\r\n\r\n"),
            1 => (xmpp, &noise),
            2 => (http, &[b'a'; 70 * 1024]),
            _ => (socks5, b"GET / HTTP/1.1\r\n\r\n"),
        };
        let mut s = connect_from(bad, port)
            .unwrap_or_else(|| panic!("refusal {i} (port {port}): not banned yet"));
        let _ = s.write_all(what);
        // Its answer (a stream error, a status) and then the close.
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut answer = Vec::new();
        let ended = s.read_to_end(&mut answer);
        assert!(
            ended.is_ok() || ended.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "refusal {i} not closed"
        );
    }
    let banned_at = Instant::now();
    // Its SYNs are dropped now, on both ports; another source is served all the while.
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        connect_from(bad, http).is_none(),
        "banned from the HTTP port"
    );
    assert!(
        connect_from(bad, xmpp).is_none(),
        "banned from the XMPP port"
    );
    assert!(
        connect_from(bad, socks5).is_none(),
        "banned from the SOCKS5 port"
    );
    let mut good = connect_from([127, 0, 0, 1], http).expect("127.0.0.1 is not banned");
    good.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    good.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut r = [0u8; 12];
    good.read_exact(&mut r).unwrap();
    assert_eq!(&r[..9], b"HTTP/1.1 ");
    // The ban ends on its own, with nobody else connecting meanwhile.
    let end = banned_at + Duration::from_secs(8);
    let back = loop {
        if let Some(s) = connect_from(bad, xmpp) {
            break s;
        }
        assert!(Instant::now() < end, "the ban did not end");
    };
    assert!(
        banned_at.elapsed() >= Duration::from_secs(2),
        "{:?}",
        banned_at.elapsed()
    );
    drop(back);
    let log = serve.stop();
    assert!(
        log.contains("wirebench: banned 127.0.0.2 for 3s: 5 connections refused within 10s"),
        "{log}"
    );
}

/// An HTTP/2 frame (RFC 9113 §4.1).
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// The server's frames until it closes: (type, stream, payload).
fn h2_frames(s: &mut TcpStream) -> Vec<(u8, u32, Vec<u8>)> {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let mut frames = Vec::new();
    let mut at = all.as_slice();
    while at.len() >= 9 {
        let n = u32::from_be_bytes([0, at[0], at[1], at[2]]) as usize;
        let Some(payload) = at.get(9..9 + n) else {
            break;
        };
        let stream = u32::from_be_bytes([at[5], at[6], at[7], at[8]]) & 0x7FFF_FFFF;
        frames.push((at[3], stream, payload.to_vec()));
        at = &at[9 + n..];
    }
    frames
}

#[test]
fn a_grpc_client_over_its_stream_cap_is_refused_then_closed() {
    let port = free_port();
    let serve = Serve::start(
        [
            "--listen".to_string(),
            "127.0.0.1:0".into(),
            "--also".into(),
            format!("grpc=127.0.0.1:{port}"),
            "--also-max-streams".into(),
            "4".into(),
        ],
        "grpc on",
    );
    // Calls whose request bodies never come: each holds its stream open.
    let mut headers = Vec::new();
    for (name, value) in [
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"http"),
        (b":path", b"/wirebench.Bench/Echo"),
        (b":authority", b"127.0.0.1"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
    ] {
        // A literal field without indexing, new name (RFC 7541 §6.2.2).
        headers.extend([0, name.len() as u8]);
        headers.extend(name);
        headers.push(value.len() as u8);
        headers.extend(value);
    }
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(h2_frame(4, 0, 0, &[]));
    // 4 streams held, then 5 over the cap: the fifth refusal is one too many.
    for i in 0..9 {
        out.extend(h2_frame(1, 4, 1 + 2 * i, &headers));
    }
    s.write_all(&out).unwrap();
    let frames = h2_frames(&mut s);
    let settings = &frames.iter().find(|f| f.0 == 4).expect("SETTINGS").2;
    assert!(
        settings.chunks(6).any(|c| c == [0, 3, 0, 0, 0, 4]),
        "SETTINGS_MAX_CONCURRENT_STREAMS 4 announced: {settings:?}"
    );
    let refused: Vec<u32> = frames
        .iter()
        .filter(|f| f.0 == 3 && f.2 == [0, 0, 0, 7])
        .map(|f| f.1)
        .collect();
    assert_eq!(refused, [9, 11, 13, 15], "REFUSED_STREAM: {frames:?}");
    let goaway = &frames.iter().find(|f| f.0 == 7).expect("GOAWAY").2;
    assert_eq!(goaway[4..8], [0, 0, 0, 0xb], "ENHANCE_YOUR_CALM");
    std::thread::sleep(Duration::from_millis(300));
    let log = serve.stop();
    assert!(log.contains("excessive load"), "{log}");
}
