//! `wirebench serve`'s opening timeouts (issue #34, bench/hostile.sh's slowloris): a
//! client that sends its opening a byte at a time is closed once
//! `--also-header-timeout` (the HTTP, gRPC and WebSocket bench servers) or
//! `--xmpp-web-opening-timeout` (the WebSocket, BOSH and SockJS gateways) has passed, not when it
//! has finished. 127.0.0.1 only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common;
use common::{Serve, free_port};

/// How long the trickle would take to the end: far beyond the 1 s limit.
const BYTE_EVERY: Duration = Duration::from_millis(250);

/// Sends `opening` to `port` a byte every [`BYTE_EVERY`]; returns how long after the
/// connect the server closed the connection, or `None` if it was still open when the
/// opening was all sent.
fn trickle(port: u16, opening: &[u8]) -> Option<Duration> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(BYTE_EVERY)).unwrap();
    let start = Instant::now();
    let mut sink = [0u8; 4096];
    for b in opening {
        if s.write_all(std::slice::from_ref(b)).is_err() {
            return Some(start.elapsed());
        }
        match s.read(&mut sink) {
            Ok(0) | Err(_) if !timed_out(&s) => return Some(start.elapsed()),
            _ => {}
        }
    }
    None
}

/// Whether the last read merely timed out (the connection is still open).
fn timed_out(s: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    s.set_nonblocking(true).unwrap();
    let r = s.peek(&mut b);
    s.set_nonblocking(false).unwrap();
    matches!(r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// The ports of [`endpoints`]'s servers.
struct Ports {
    xws: u16,
    bosh: u16,
    sockjs: u16,
    http: u16,
    grpc: u16,
    ws: u16,
}

/// `wirebench serve` with the built-in XMPP server, its WebSocket, BOSH and SockJS
/// gateways and the HTTP, gRPC and WebSocket bench servers; `limits`, when given, is
/// `[--xmpp-web-opening-timeout, --also-header-timeout]`.
fn endpoints(limits: &[&str]) -> (Serve, Ports) {
    let p = Ports {
        xws: free_port(),
        bosh: free_port(),
        sockjs: free_port(),
        http: free_port(),
        grpc: free_port(),
        ws: free_port(),
    };
    let at = |p: u16| format!("127.0.0.1:{p}");
    let mut args = vec![
        "--listen".to_string(),
        "127.0.0.1:0".into(),
        "--xmpp".into(),
        at(free_port()),
        "--xmpp-websocket".into(),
        at(p.xws),
        "--xmpp-bosh".into(),
        at(p.bosh),
        "--xmpp-sockjs".into(),
        at(p.sockjs),
        "--also".into(),
        format!("http={}", at(p.http)),
        "--also".into(),
        format!("grpc={}", at(p.grpc)),
        "--also".into(),
        format!("websocket={}", at(p.ws)),
    ];
    if let [web, also] = limits {
        args.extend([
            "--xmpp-web-opening-timeout".to_string(),
            web.to_string(),
            "--also-header-timeout".into(),
            also.to_string(),
        ]);
    }
    (Serve::start(args, "SockJS"), p)
}

#[test]
fn slow_openings_are_closed_at_their_timeout() {
    let (
        serve,
        Ports {
            xws,
            bosh,
            sockjs,
            http,
            grpc,
            ws,
        },
    ) = endpoints(&["1s", "1s"]);
    let long = "a".repeat(40);
    let cases: Vec<(&str, u16, Vec<u8>)> = vec![
        (
            "http",
            http,
            format!("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: {long}\r\n\r\n").into_bytes(),
        ),
        (
            "grpc",
            grpc,
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0".to_vec(),
        ),
        (
            "websocket",
            ws,
            String::from(
                "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
            )
            .into_bytes(),
        ),
        (
            "xmpp websocket",
            xws,
            String::from(
                "GET /xmpp-websocket HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\
                 Connection: Upgrade\r\nSec-WebSocket-Protocol: xmpp\r\n\
                 Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
            )
            .into_bytes(),
        ),
        (
            "bosh",
            bosh,
            format!("POST /http-bind HTTP/1.1\r\nHost: x\r\nX-Slow: {long}\r\n\r\n").into_bytes(),
        ),
        (
            "sockjs",
            sockjs,
            format!("GET /xmpp/info HTTP/1.1\r\nHost: x\r\nX-Slow: {long}\r\n\r\n").into_bytes(),
        ),
    ];
    let runs: Vec<_> = cases
        .into_iter()
        .map(|(name, port, opening)| {
            std::thread::spawn(move || (name, opening.len(), trickle(port, &opening)))
        })
        .collect();
    for r in runs {
        let (name, len, closed) = r.join().unwrap();
        let after = closed.unwrap_or_else(|| {
            panic!(
                "{name}: still open after its whole {len}-byte opening ({:?})",
                BYTE_EVERY * len as u32
            )
        });
        assert!(
            after >= Duration::from_millis(900) && after < Duration::from_secs(4),
            "{name}: closed {after:?} after connecting (limit 1s)"
        );
    }
    // Upgraded, then silent: the gateway has not opened the XMPP server's connection
    // yet (that waits for the first message), so the limit is its own to keep.
    let mut s = TcpStream::connect(("127.0.0.1", xws)).unwrap();
    s.write_all(
        b"GET /xmpp-websocket HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\
          Connection: Upgrade\r\nSec-WebSocket-Protocol: xmpp\r\n\
          Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let start = Instant::now();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let after = start.elapsed();
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("HTTP/1.1 101 "), "{got:?}");
    assert!(
        after >= Duration::from_millis(900) && after < Duration::from_secs(4),
        "closed {after:?} after the upgrade (limit 1s)"
    );
    let log = serve.stop();
    assert!(
        log.contains("XMPP BOSH") && log.contains("no request head within 1s; closed"),
        "{log}"
    );
    assert!(
        log.contains("no XMPP <open/> within 1s of the upgrade"),
        "{log}"
    );
}

/// Sends `opening` whole, then reads what comes back until the server closes (5 s at most).
fn answer_to(port: u16, opening: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(opening).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    String::from_utf8_lossy(&got).into_owned()
}

/// Heads over their caps and a BOSH body announced over its cap are refused on what has
/// come, without waiting for the rest (bench/hostile.sh's oversized: reading on to the
/// caps held the endpoints' one thread long enough to multiply a well-behaved client's
/// p99).
#[test]
fn openings_over_their_caps_are_refused_on_what_has_come() {
    let (
        serve,
        Ports {
            xws,
            bosh,
            http,
            ws,
            ..
        },
    ) = endpoints(&[]);
    // Exactly the cap, without the head's end: all of it is read, so the answer is not
    // lost to a reset.
    let head = |path: &str, cap: usize| {
        let mut h = format!("GET {path} HTTP/1.1\r\nHost: x\r\nX-Big: ").into_bytes();
        h.resize(cap, b'a');
        h
    };
    for (name, port, opening) in [
        ("http", http, head("/", 64 * 1024)),
        ("websocket", ws, head("/echo", 16 * 1024)),
        ("xmpp websocket", xws, head("/xmpp-websocket", 16 * 1024)),
    ] {
        let a = answer_to(port, &opening);
        assert!(a.starts_with("HTTP/1.1 431 "), "{name}: {a:?}");
    }
    let big = "POST /http-bind HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\n\
               Content-Length: 1073741824\r\n\r\n<body rid='1' sid='none' \
               xmlns='http://jabber.org/protocol/httpbind'>";
    let a = answer_to(bosh, big.as_bytes());
    assert!(a.starts_with("HTTP/1.1 200 "), "{a:?}");
    assert!(a.contains("condition='policy-violation'"), "{a:?}");
    assert!(
        a.to_ascii_lowercase().contains("connection: close"),
        "{a:?}"
    );
    drop(serve);
}
