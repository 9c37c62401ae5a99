//! The SockJS 0.3.3 rules on headers, framing and sessions that the protocol's own test
//! suite (sockjs-protocol's `sockjs-protocol-0.3.3.py`, run by
//! `scripts/conformance/sockjs.sh`) checks, restated here from the spec so CI keeps them:
//! the suite is on no package registry a CI machine reaches. Written from the protocol's
//! rules (<https://sockjs.github.io/sockjs-protocol/sockjs-protocol-0.3.3.html>), not
//! from the suite's code. The XMPP prefix (`/xmpp`) is checked for every rule that does
//! not depend on what the application answers; the test services (`/echo`, `/close`,
//! `/cookie_needed_echo`, `/disabled_websocket_echo`) for the rest.
//! docs/conformance.md lists what this covers.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};
use wirebench_xmpp_gateway::{Kind, sockjs::SockJsOptions, spawn};

/// The value the spec's tests want on every answer that must not be cached.
const NOT_CACHED: &str = "no-store, no-cache, must-revalidate, max-age=0";

struct Gateway {
    addr: SocketAddr,
    _endpoint: wirebench_xmpp_gateway::Endpoint,
}

/// A SockJS endpoint with the test services, in front of a stand-in XMPP server that
/// accepts connections and stays silent (so XMPP sessions stay open).
fn gateway() -> Gateway {
    let xmpp = TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = xmpp.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in xmpp.incoming() {
            held.push(s);
        }
    });
    let opt = SockJsOptions {
        test_services: true,
        ..Default::default()
    };
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = spawn(l, upstream, Kind::SockJs(opt), false).unwrap();
    Gateway {
        addr: endpoint.addr,
        _endpoint: endpoint,
    }
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Writes a request on a fresh connection (`Connection: close`).
fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    s
}

/// One request and its whole answer (the server's answers to these have a length).
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut s = send(addr, method, path, headers, body);
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

fn get(addr: SocketAddr, path: &str) -> Answer {
    http(addr, "GET", path, &[], "")
}

fn post(addr: SocketAddr, path: &str, body: &str) -> Answer {
    http(addr, "POST", path, &[], body)
}

fn assert_not_cached(a: &Answer, what: &str) {
    assert_eq!(a.header("cache-control"), Some(NOT_CACHED), "{what}");
    assert_eq!(a.header("expires"), None, "{what}");
    assert_eq!(a.header("last-modified"), None, "{what}");
}

/// CORS: a real origin is echoed with credentials; none (or `null`) gets `*` without.
fn assert_cors(a: &Answer, origin: Option<&str>, what: &str) {
    match origin.filter(|o| *o != "null") {
        Some(o) => {
            assert_eq!(a.header("access-control-allow-origin"), Some(o), "{what}");
            assert_eq!(
                a.header("access-control-allow-credentials"),
                Some("true"),
                "{what}"
            );
        }
        None => {
            assert_eq!(a.header("access-control-allow-origin"), Some("*"), "{what}");
            assert_eq!(a.header("access-control-allow-credentials"), None, "{what}");
        }
    }
}

/// Cacheable for a year: `public`, a max-age of at least 7 digits, and `Expires`.
fn assert_cached_for_long(a: &Answer, what: &str) {
    let cc = a.header("cache-control").unwrap_or_default();
    assert!(cc.contains("public"), "{what}: {cc}");
    let age: u64 = cc
        .split(',')
        .find_map(|d| d.trim().strip_prefix("max-age="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(age >= 1_000_000, "{what}: {cc}");
    assert!(a.header("expires").is_some(), "{what}");
}

fn sid(tag: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{tag}{n}")
}

#[test]
fn info_is_not_cached_and_answers_cors() {
    let g = gateway();
    for prefix in ["/xmpp", "/echo"] {
        let a = get(g.addr, &format!("{prefix}/info"));
        assert_eq!(a.status, 200);
        assert_eq!(
            a.header("content-type"),
            Some("application/json; charset=UTF-8")
        );
        assert!(a.body.contains("\"websocket\":true"), "{}", a.body);
        assert!(a.body.contains("\"cookie_needed\":false"), "{}", a.body);
        assert_not_cached(&a, prefix);
        assert_cors(&a, None, prefix);
        for origin in ["test", "null"] {
            let a = http(
                g.addr,
                "GET",
                &format!("{prefix}/info"),
                &[("Origin", origin)],
                "",
            );
            assert_cors(&a, Some(origin), prefix);
        }
    }
}

#[test]
fn preflights_are_cacheable_bodiless_and_cors() {
    let g = gateway();
    for (path, methods) in [
        ("/xmpp/info", "OPTIONS, GET"),
        ("/xmpp/abc/abc/xhr", "OPTIONS, POST"),
        ("/xmpp/abc/abc/xhr_send", "OPTIONS, POST"),
        ("/xmpp/abc/abc/xhr_streaming", "OPTIONS, POST"),
    ] {
        for origin in ["test", "null"] {
            let h = [
                ("Origin", origin),
                ("Access-Control-Request-Method", methods),
            ];
            let a = http(g.addr, "OPTIONS", path, &h, "");
            assert!(a.status == 204 || a.status == 200, "{path}: {}", a.status);
            assert_cached_for_long(&a, path);
            let max_age: u64 = a.header("access-control-max-age").unwrap().parse().unwrap();
            assert!(max_age > 1_000_000, "{path}");
            let allowed = a.header("access-control-allow-methods").unwrap();
            for m in methods.split(',') {
                assert!(allowed.contains(m.trim()), "{path}: {allowed}");
            }
            assert_eq!(a.body, "", "{path}");
            assert_eq!(a.header("content-type"), None, "{path}");
            assert_cors(&a, Some(origin), path);
        }
    }
}

#[test]
fn the_iframe_page_is_cacheable_and_304_is_bodiless() {
    let g = gateway();
    for path in [
        "/xmpp/iframe.html",
        "/xmpp/iframe-0.1.2.html",
        "/xmpp/iframe-a.html?t=1234",
    ] {
        let a = get(g.addr, path);
        assert_eq!(a.status, 200, "{path}");
        assert_eq!(a.header("content-type"), Some("text/html; charset=UTF-8"));
        assert_cached_for_long(&a, path);
        assert_eq!(a.header("last-modified"), None);
        let etag = a.header("etag").expect("an ETag").to_string();
        assert!(a.body.starts_with("<!DOCTYPE html>"), "{}", a.body);
        let b = http(g.addr, "GET", path, &[("If-None-Match", &etag)], "");
        assert_eq!(b.status, 304, "{path}");
        assert_eq!(b.header("content-type"), None, "{path}");
        assert_eq!(b.body, "", "{path}");
    }
}

#[test]
fn method_not_allowed_says_allow_and_has_no_body() {
    let g = gateway();
    for (path, upgrade) in [
        ("/xmpp/0/0/websocket", true),
        ("/xmpp/0/0/websocket", false),
        ("/xmpp/websocket", false),
    ] {
        let h: &[(&str, &str)] = if upgrade {
            &[("Upgrade", "WebSocket"), ("Connection", "Upgrade")]
        } else {
            &[]
        };
        let a = http(g.addr, "POST", path, h, "");
        assert_eq!(a.status, 405, "{path}");
        assert_eq!(a.header("content-type"), None, "{path}");
        assert!(a.header("allow").is_some(), "{path}");
        assert_eq!(a.body, "", "{path}");
    }
    let a = http(g.addr, "PUT", "/xmpp/info", &[], "");
    assert_eq!((a.status, a.header("allow")), (405, Some("OPTIONS, GET")));
    let a = http(g.addr, "GET", "/xmpp/0/0/xhr", &[], "");
    assert_eq!((a.status, a.header("allow")), (405, Some("OPTIONS, POST")));
}

#[test]
fn session_answers_are_not_cached_and_cors_on_xmpp_too() {
    let g = gateway();
    let s = sid("x");
    let a = http(
        g.addr,
        "POST",
        &format!("/xmpp/000/{s}/xhr"),
        &[("Origin", "test")],
        "",
    );
    assert_eq!((a.status, a.body.as_str()), (200, "o\n"));
    assert_eq!(
        a.header("content-type"),
        Some("application/javascript; charset=UTF-8")
    );
    assert_cors(&a, Some("test"), "xhr");
    assert_not_cached(&a, "xhr");
    let a = http(
        g.addr,
        "POST",
        &format!("/xmpp/000/{s}/xhr_send"),
        &[("Origin", "test")],
        "[\"<presence/>\"]",
    );
    // A bodiless 204 that still says text/plain: Firefox takes one without for XML.
    assert_eq!((a.status, a.body.as_str()), (204, ""));
    assert_eq!(a.header("content-type"), Some("text/plain; charset=UTF-8"));
    assert_cors(&a, Some("test"), "xhr_send");
    assert_not_cached(&a, "xhr_send");
    // No cookie unless the JSESSIONID option (or the cookie service) asks for it.
    assert_eq!(a.header("set-cookie"), None);
}

#[test]
fn jsonp_frames_are_the_callback_call_alone() {
    let g = gateway();
    for prefix in ["/xmpp", "/echo"] {
        let s = sid("j");
        let a = get(g.addr, &format!("{prefix}/000/{s}/jsonp?c=x"));
        assert_eq!(
            (a.status, a.body.as_str()),
            (200, "x(\"o\");\r\n"),
            "{prefix}"
        );
        assert_eq!(
            a.header("content-type"),
            Some("application/javascript; charset=UTF-8")
        );
        assert_not_cached(&a, prefix);
    }
    // Through the echo service: a message comes back in the same wrapping.
    let s = sid("j");
    get(g.addr, &format!("/echo/000/{s}/jsonp?c=x"));
    let a = http(
        g.addr,
        "POST",
        &format!("/echo/000/{s}/jsonp_send"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        "d=%5B%22x%22%5D",
    );
    assert_eq!((a.status, a.body.as_str()), (200, "ok"));
    let a = get(g.addr, &format!("/echo/000/{s}/jsonp?c=x"));
    assert_eq!(a.body, "x(\"a[\\\"x\\\"]\");\r\n");
}

/// A poll the client aborts closes the session: the next receiving request gets `o` (a new
/// session) or `c[1002,"Connection interrupted"]` (ours), never a wait.
#[test]
fn an_aborted_poll_interrupts_the_session() {
    let g = gateway();
    for prefix in ["/xmpp", "/echo"] {
        let s = sid("a");
        let url = format!("{prefix}/000/{s}/xhr");
        assert_eq!(post(g.addr, &url, "").body, "o\n");
        // A poll that waits (nothing to say), then a second one refused while it does.
        let held = send(g.addr, "POST", &url, &[], "");
        let t0 = Instant::now();
        let mut b = post(g.addr, &url, "").body;
        while b != "c[2010,\"Another connection still open\"]\n"
            && t0.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(20));
            b = post(g.addr, &url, "").body;
        }
        assert_eq!(b, "c[2010,\"Another connection still open\"]\n", "{prefix}");
        drop(held);
        // The server learns of the abort when the connection closes.
        let t0 = Instant::now();
        loop {
            let b = post(g.addr, &url, "").body;
            if b == "c[1002,\"Connection interrupted\"]\n" {
                break;
            }
            assert_eq!(b, "c[2010,\"Another connection still open\"]\n", "{prefix}");
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{prefix}: the abort went unseen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn the_test_services_answer_as_the_suite_expects() {
    let g = gateway();
    // /echo: what is sent comes back.
    let s = sid("e");
    assert_eq!(post(g.addr, &format!("/echo/000/{s}/xhr"), "").body, "o\n");
    let a = post(g.addr, &format!("/echo/000/{s}/xhr_send"), "[\"a\",\"b\"]");
    assert_eq!(a.status, 204);
    assert_eq!(
        post(g.addr, &format!("/echo/000/{s}/xhr"), "").body,
        "a[\"a\",\"b\"]\n"
    );
    // /close: opened, then closed at once.
    let s = sid("c");
    assert_eq!(post(g.addr, &format!("/close/000/{s}/xhr"), "").body, "o\n");
    assert_eq!(
        post(g.addr, &format!("/close/000/{s}/xhr"), "").body,
        "c[3000,\"Go away!\"]\n"
    );
    // /cookie_needed_echo: cookie_needed, and JSESSIONID set (the client's, or dummy).
    let a = get(g.addr, "/cookie_needed_echo/info");
    assert!(a.body.contains("\"cookie_needed\":true"), "{}", a.body);
    let s = sid("k");
    let a = post(g.addr, &format!("/cookie_needed_echo/000/{s}/xhr"), "");
    assert_eq!(a.header("set-cookie"), Some("JSESSIONID=dummy; path=/"));
    let s = sid("k");
    let a = http(
        g.addr,
        "POST",
        &format!("/cookie_needed_echo/000/{s}/xhr"),
        &[("Cookie", "JSESSIONID=abcdef")],
        "",
    );
    assert_eq!(a.header("set-cookie"), Some("JSESSIONID=abcdef; path=/"));
    // /disabled_websocket_echo: no websocket, said in /info and by its URLs.
    let a = get(g.addr, "/disabled_websocket_echo/info");
    assert!(a.body.contains("\"websocket\":false"), "{}", a.body);
    let h = [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "x3JJHMbDL1EzLkh9GBhXDw=="),
    ];
    let a = http(
        g.addr,
        "GET",
        "/disabled_websocket_echo/000/s/websocket",
        &h,
        "",
    );
    assert_eq!(a.status, 404);
    // Every other prefix is XMPP: no echo there (the stand-in server says nothing).
    let a = get(g.addr, "/xmpp/info");
    assert!(a.body.contains("\"websocket\":true"), "{}", a.body);
}

#[test]
fn websocket_test_services_frame_and_close() {
    let g = gateway();
    let connect = |path: &str| {
        let url = format!("ws://{}{path}", g.addr);
        let s = TcpStream::connect(g.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tungstenite::client::client(url, s).unwrap().0
    };
    let mut ws = connect("/echo/000/w1/websocket");
    assert_eq!(ws.read().unwrap().to_text().unwrap(), "o");
    // An empty message is ignored; a JSON array comes back as one frame.
    ws.send(tungstenite::Message::text("")).unwrap();
    ws.send(tungstenite::Message::text("[\"a\"]")).unwrap();
    assert_eq!(ws.read().unwrap().to_text().unwrap(), "a[\"a\"]");
    let mut ws = connect("/close/000/w2/websocket");
    assert_eq!(ws.read().unwrap().to_text().unwrap(), "o");
    assert_eq!(
        ws.read().unwrap().to_text().unwrap(),
        "c[3000,\"Go away!\"]"
    );
    assert!(matches!(
        ws.read(),
        Ok(tungstenite::Message::Close(_)) | Err(_)
    ));
    // The raw websocket echoes each message as it is.
    let mut ws = connect("/echo/websocket");
    ws.send(tungstenite::Message::text("Hello world!\u{ffff}"))
        .unwrap();
    assert_eq!(
        ws.read().unwrap().to_text().unwrap(),
        "Hello world!\u{ffff}"
    );
}
