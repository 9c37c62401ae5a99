//! The WebSocket (RFC 7395) and BOSH (XEP-0124/0206) endpoints in front of the built-in
//! server, on loopback, with the native clients: study S2's 100 pings over each transport,
//! chat between clients on different transports, and the clients the endpoints must
//! shed (bad frames, unknown or expired sids, wrong rids, oversized bodies, a client that
//! never polls) while a good session carries on; the same for the SockJS 0.3.3 endpoint
//! (broken JSON, unknown sessions, a second receiving request, oversized bodies, idle
//! sessions past the disconnect delay).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_xmpp::{ClientConfig, Event, Mechanism, TlsMode};
use wirebench_xmpp_client::session::XmppSession;
use wirebench_xmpp_client::transport::Transport;
use wirebench_xmpp_gateway::{BoshConfig, Endpoint, Kind};
use wirebench_xmpp_server::{XmppServer, XmppServerConfig};

struct Running {
    addr: SocketAddr,
    ws: Option<Endpoint>,
    bosh: Option<Endpoint>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    stats: Arc<wirebench_xmpp_server::ServerStats>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(e) = self.ws.take() {
            e.stop();
        }
        if let Some(e) = self.bosh.take() {
            e.stop();
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap().unwrap();
        }
    }
}

fn start(bosh: BoshConfig) -> Running {
    let mut cfg = XmppServerConfig::new("127.0.0.1:0".parse().unwrap(), "example.com", 100);
    cfg.workers = 1;
    let server = XmppServer::bind(cfg).unwrap();
    let addr = server.local_addr().unwrap();
    let stats = server.stats.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = Some(server.spawn(stop.clone()).unwrap());
    let l = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ws = wirebench_xmpp_gateway::spawn(
        l(),
        addr,
        Kind::WebSocket {
            max_stanza: 16 * 1024,
            max_rate: Some(1 << 20),
        },
        false,
    )
    .unwrap();
    let bosh = wirebench_xmpp_gateway::spawn(l(), addr, Kind::Bosh(bosh), false).unwrap();
    Running {
        addr,
        ws: Some(ws),
        bosh: Some(bosh),
        stop,
        thread,
        stats,
    }
}

impl Running {
    fn ws_addr(&self) -> SocketAddr {
        self.ws.as_ref().unwrap().addr
    }
    fn bosh_addr(&self) -> SocketAddr {
        self.bosh.as_ref().unwrap().addr
    }
    fn bosh_open(&self) -> u64 {
        self.bosh
            .as_ref()
            .unwrap()
            .stats
            .open
            .load(Ordering::Relaxed)
    }
}

fn login(t: &Transport, addr: SocketAddr, n: u64) -> XmppSession {
    let mut cfg = ClientConfig::new(&format!("user{n}@example.com"), &format!("pass{n}"));
    cfg.tls = TlsMode::Never;
    cfg.mechanisms = vec![Mechanism::ScramSha256];
    XmppSession::login_via(t, addr, cfg, None, n, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{t:?}: {e}"))
        .0
}

fn ping(s: &mut XmppSession, id: &str) {
    s.client.send_ping("example.com", id);
    s.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match s.next_event(deadline, "a pong").unwrap() {
            (_, Event::IqResult { id: got }) if got == id => return,
            _ => {}
        }
    }
}

fn ws() -> Transport {
    Transport::from_word(Some("websocket"))
}
fn bosh() -> Transport {
    Transport::from_word(Some("bosh"))
}

#[test]
fn study_s2_100_pings_over_each_transport() {
    let r = start(BoshConfig::default());
    let mut figures = Vec::new();
    for (t, addr) in [
        (Transport::Tcp, r.addr),
        (ws(), r.ws_addr()),
        (bosh(), r.bosh_addr()),
    ] {
        // Best of three: the figure is the transport's cost, not the machine's hiccups.
        let mut best = Duration::MAX;
        for k in 0..3 {
            let t0 = Instant::now();
            let mut s = login(&t, addr, 1 + k);
            for i in 0..100 {
                ping(&mut s, &format!("p{i}"));
            }
            best = best.min(t0.elapsed());
            s.close();
        }
        figures.push(format!("{}: {:.1} ms", t.word(), best.as_secs_f64() * 1e3));
        // Generous bounds (a loaded 2-core machine); the issue's targets are 50 ms for
        // WebSocket and 300 ms for BOSH, and docs/browser-transports.md has the figures.
        assert!(best < Duration::from_secs(2), "{}: {best:?}", t.word());
    }
    eprintln!(
        "S2, 100 pings incl. connect and login: {}",
        figures.join(", ")
    );
    // One HTTP request per ping (plus the login's): the manager answered each held
    // request with its pong, none was answered empty first.
    let reqs = r
        .bosh
        .as_ref()
        .unwrap()
        .stats
        .requests
        .load(Ordering::Relaxed);
    assert!(
        reqs <= 3 * (100 + 12),
        "{reqs} BOSH requests for 3 x 100 pings"
    );
}

#[test]
fn chat_between_a_websocket_client_and_a_bosh_client() {
    let r = start(BoshConfig::default());
    let mut a = login(&ws(), r.ws_addr(), 1);
    let mut b = login(&bosh(), r.bosh_addr(), 2);
    for i in 0..20 {
        let body = format!("hello <&> {i}");
        a.send_message("user2@example.com", &body, &format!("m{i}"))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let (_, Event::Message { body: got, .. }) =
                b.next_event(deadline, "a message").unwrap()
            {
                assert_eq!(got, body);
                break;
            }
        }
        b.send_message("user1@example.com", "back", &format!("r{i}"))
            .unwrap();
        loop {
            if let (_, Event::Message { body: got, .. }) =
                a.next_event(deadline, "a reply").unwrap()
            {
                assert_eq!(got, "back");
                break;
            }
        }
    }
    a.close();
    b.close();
    let deadline = Instant::now() + Duration::from_secs(5);
    while r.bosh_open() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(r.bosh_open(), 0, "the BOSH session ended with the stream");
    assert!(r.stats.routed.load(Ordering::Relaxed) >= 40);
}

/// A raw WebSocket client (tungstenite), subprotocol `xmpp` unless told otherwise.
fn raw_ws(
    addr: SocketAddr,
    proto: Option<&str>,
) -> Result<tungstenite::WebSocket<TcpStream>, String> {
    use tungstenite::client::IntoClientRequest;
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!("ws://{addr}/xmpp-websocket")
        .into_client_request()
        .unwrap();
    if let Some(p) = proto {
        req.headers_mut()
            .insert("sec-websocket-protocol", p.parse().unwrap());
    }
    tungstenite::client::client(req, s)
        .map(|(ws, _)| ws)
        .map_err(|e| e.to_string())
}

/// Reads text messages until the connection ends; returns them.
fn read_all(ws: &mut tungstenite::WebSocket<TcpStream>) -> Vec<String> {
    let mut got = Vec::new();
    while let Ok(m) = ws.read() {
        match m {
            tungstenite::Message::Text(t) => got.push(t.to_string()),
            tungstenite::Message::Close(c) => {
                got.push(format!("CLOSE {c:?}"));
            }
            _ => {}
        }
    }
    got
}

const OPEN: &str =
    "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='example.com' version='1.0'/>";

#[test]
fn websocket_clients_that_misbehave_are_shed_and_others_carry_on() {
    let r = start(BoshConfig::default());
    let mut good = login(&ws(), r.ws_addr(), 1);
    // No subprotocol: refused at the handshake.
    let e = raw_ws(r.ws_addr(), None).unwrap_err();
    assert!(e.contains("400"), "{e}");
    let e = raw_ws(r.ws_addr(), Some("chat")).unwrap_err();
    assert!(e.contains("400"), "{e}");
    ping(&mut good, "a");

    type Case = (&'static str, Vec<tungstenite::Message>, &'static str);
    let cases: Vec<Case> = vec![
        (
            "malformed XML",
            vec![OPEN.into(), "<message><body>x</message>".into()],
            "not-well-formed",
        ),
        (
            "two elements in one message",
            vec![OPEN.into(), "<presence/><presence/>".into()],
            "not-well-formed",
        ),
        ("a stanza before <open/>", vec!["<presence/>".into()], "invalid-xml"),
        (
            "a <stream:stream> header",
            vec!["<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='example.com' version='1.0'>".into()],
            "not-well-formed",
        ),
        (
            "a binary message",
            vec![OPEN.into(), tungstenite::Message::Binary(vec![1, 2, 3].into())],
            "CLOSE",
        ),
        (
            "an element over the limit",
            vec![OPEN.into(), format!("<message><body>{}</body></message>", "x".repeat(20_000)).into()],
            "CLOSE",
        ),
    ];
    for (what, msgs, want) in cases {
        let mut c = raw_ws(r.ws_addr(), Some("xmpp")).unwrap();
        for m in msgs {
            let _ = c.send(m);
        }
        let got = read_all(&mut c);
        assert!(
            got.iter().any(|m| m.contains(want)),
            "{what}: wanted {want} in {got:?}"
        );
        ping(&mut good, what);
    }
    good.close();
}

/// POSTs one body on its own connection; returns the answer's body.
fn post(addr: SocketAddr, body: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST /http-bind HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/xml\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    text.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or(text)
}

fn attr(body: &str, key: &str) -> String {
    let k = format!("{key}='");
    let at = body
        .find(&k)
        .unwrap_or_else(|| panic!("no {key} in {body}"))
        + k.len();
    body[at..].split('\'').next().unwrap().to_string()
}

const NS: &str = "xmlns='http://jabber.org/protocol/httpbind'";

fn create(addr: SocketAddr, rid: u64) -> String {
    let b = post(
        addr,
        format!("<body {NS} rid='{rid}' to='example.com' wait='2' hold='1' xmpp:version='1.0' xmlns:xmpp='urn:xmpp:xbosh'/>").as_bytes(),
    );
    attr(&b, "sid")
}

#[test]
fn bosh_clients_that_misbehave_are_shed_and_others_carry_on() {
    let r = start(BoshConfig {
        inactivity: 1,
        max_wait: 2,
        max_body: 8 * 1024,
        ..BoshConfig::default()
    });
    let mut good = login(&bosh(), r.bosh_addr(), 1);

    // Unknown sid.
    let b = post(
        r.bosh_addr(),
        format!("<body {NS} rid='5' sid='0123456789abcdef'/>").as_bytes(),
    );
    assert!(
        b.contains("type='terminate'") && b.contains("item-not-found"),
        "{b}"
    );
    // Not a body, not XML, no rid.
    for bad in ["<iq/>", "hello", &format!("<body {NS} sid='x'/>")] {
        let b = post(r.bosh_addr(), bad.as_bytes());
        assert!(
            b.contains("type='terminate'") && b.contains("bad-request"),
            "{bad}: {b}"
        );
    }
    ping(&mut good, "after-garbage");

    // A rid out of the window ends the session; the sid is then unknown.
    let sid = create(r.bosh_addr(), 1000);
    let b = post(
        r.bosh_addr(),
        format!("<body {NS} rid='1050' sid='{sid}'/>").as_bytes(),
    );
    assert!(b.contains("item-not-found"), "{b}");
    let b = post(
        r.bosh_addr(),
        format!("<body {NS} rid='1001' sid='{sid}'/>").as_bytes(),
    );
    assert!(b.contains("item-not-found"), "{b}");

    // An oversized body: policy-violation, session gone.
    let sid = create(r.bosh_addr(), 2000);
    let big = format!(
        "<body {NS} rid='2001' sid='{sid}'><message to='user1@example.com'><body>{}</body></message></body>",
        "x".repeat(20_000)
    );
    let b = post(r.bosh_addr(), big.as_bytes());
    assert!(b.contains("policy-violation"), "{b}");
    let b = post(
        r.bosh_addr(),
        format!("<body {NS} rid='2002' sid='{sid}'/>").as_bytes(),
    );
    assert!(b.contains("item-not-found"), "{b}");
    ping(&mut good, "after-big");

    // Clients that create sessions and never poll: cleaned after `inactivity` (1 s),
    // their XMPP connections closed; the good session (polling) lives on.
    let before = r.bosh_open();
    for k in 0..20 {
        create(r.bosh_addr(), 3000 + k * 10);
    }
    assert!(r.bosh_open() >= before + 20, "{} open", r.bosh_open());
    let t0 = Instant::now();
    while r.bosh_open() > 1 && t0.elapsed() < Duration::from_secs(5) {
        ping(&mut good, "meanwhile");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(r.bosh_open(), 1, "only the good session is left");
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "cleaned in {:?}",
        t0.elapsed()
    );
    // The good one idles past `wait` (2 s) while its driver keeps reading: its held
    // request comes back empty and it polls again, so it is not inactive.
    let idle = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < idle {
        match good.next_event(idle, "nothing") {
            Ok(_) | Err(wirebench_xmpp_client::session::XmppDriveError::Timeout { .. }) => {}
            Err(e) => panic!("idle: {e}"),
        }
    }
    ping(&mut good, "after-idle");
    good.close();
}

/// Reads one HTTP/1.1 message (head + Content-Length body) from `s`.
fn read_http(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                buf.truncate(end + 4 + len);
                return Some(buf);
            }
        }
        let n = s.read(&mut tmp).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

#[test]
fn the_bosh_client_survives_a_server_that_closes_kept_alive_connections() {
    let r = start(BoshConfig::default());
    let upstream = r.bosh_addr();
    // A proxy that answers one request per connection and then hangs up, without saying
    // so (no `Connection: close`): the client's next request on it finds it closed.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = l.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let t = std::thread::spawn(move || {
        l.set_nonblocking(true).unwrap();
        let mut workers = Vec::new();
        while !st.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((mut c, _)) => {
                    c.set_nonblocking(false).unwrap();
                    workers.push(std::thread::spawn(move || {
                        let Some(req) = read_http(&mut c) else { return };
                        let mut u = TcpStream::connect(upstream).unwrap();
                        u.write_all(&req).unwrap();
                        if let Some(resp) = read_http(&mut u) {
                            let _ = c.write_all(&resp);
                        }
                    }));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        for w in workers {
            let _ = w.join();
        }
    });
    let mut s = login(&bosh(), proxy, 1);
    for i in 0..20 {
        ping(&mut s, &format!("k{i}"));
    }
    s.close();
    stop.store(true, Ordering::SeqCst);
    t.join().unwrap();
}

// ---- SockJS 0.3.3 ----

struct SockJsRunning {
    /// Stops the endpoint before the server (dropped first).
    sj: Option<Endpoint>,
    _server: Running,
}

impl SockJsRunning {
    fn addr(&self) -> SocketAddr {
        self.sj.as_ref().unwrap().addr
    }
    fn stats(&self) -> &wirebench_xmpp_gateway::WebStats {
        &self.sj.as_ref().unwrap().stats
    }
}

impl Drop for SockJsRunning {
    fn drop(&mut self) {
        if let Some(e) = self.sj.take() {
            e.stop();
        }
    }
}

fn start_sockjs(disconnect_delay: Duration) -> SockJsRunning {
    let server = start(BoshConfig::default());
    let opt = wirebench_xmpp_gateway::sockjs::SockJsOptions {
        max_stanza: 16 * 1024,
        jsessionid: true,
        cfg: wirebench_xmpp_web::sockjs::SockJsConfig {
            disconnect_delay_ns: disconnect_delay.as_nanos() as u64,
            max_body: 32 * 1024,
            ..Default::default()
        },
        test_services: false,
    };
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let sj = wirebench_xmpp_gateway::spawn(l, server.addr, Kind::SockJs(opt), false).unwrap();
    SockJsRunning {
        sj: Some(sj),
        _server: server,
    }
}

/// One HTTP request on a fresh connection: (status, headers, body).
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    ctype: &str,
    body: &[u8],
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {ctype}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let (h, b) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = h
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, h.to_string(), b.to_string())
}

const SJ_OPEN: &str =
    r#"["<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='example.com' version='1.0'/>"]"#;

#[test]
fn sockjs_study_s2_100_pings_over_each_transport() {
    let r = start_sockjs(Duration::from_secs(5));
    let mut figures = Vec::new();
    for w in [
        "sockjs-websocket",
        "xhr-streaming",
        "xhr-polling",
        "jsonp-polling",
        "eventsource",
    ] {
        let t = Transport::from_word(Some(w));
        let mut best = Duration::MAX;
        for k in 0..3 {
            let t0 = Instant::now();
            let mut s = login(&t, r.addr(), 1 + k);
            for i in 0..100 {
                ping(&mut s, &format!("p{i}"));
            }
            best = best.min(t0.elapsed());
            s.close();
        }
        figures.push(format!("{w}: {:.1} ms", best.as_secs_f64() * 1e3));
        // The issue's target is 300 ms; generous here for a loaded machine.
        assert!(best < Duration::from_secs(2), "{w}: {best:?}");
    }
    eprintln!(
        "S2 over SockJS, 100 pings incl. connect and login: {}",
        figures.join(", ")
    );
}

#[test]
fn sockjs_info_iframe_and_urls() {
    let r = start_sockjs(Duration::from_secs(5));
    let a = r.addr();
    let (st, h, b) = http(a, "GET", "/xmpp/info", "text/plain", b"");
    assert_eq!(st, 200);
    assert!(
        b.contains("\"websocket\":true") && b.contains("\"cookie_needed\":true"),
        "{b}"
    );
    assert!(h.to_ascii_lowercase().contains("no-store"), "{h}");
    let (st, _, b) = http(a, "GET", "/xmpp", "text/plain", b"");
    assert_eq!((st, b.as_str()), (200, "Welcome to SockJS!\n"));
    let (st, h, b) = http(a, "GET", "/xmpp/iframe.html", "text/plain", b"");
    assert!(
        st == 200 && b.contains("SockJS") && h.to_ascii_lowercase().contains("etag"),
        "{h}"
    );
    let (st, _, _) = http(a, "OPTIONS", "/xmpp/000/s/xhr", "text/plain", b"");
    assert_eq!(st, 204);
    // Ids with a dot, an empty id: not found.
    assert_eq!(
        http(a, "POST", "/xmpp/000/a.b/xhr", "text/plain", b"").0,
        404
    );
    assert_eq!(http(a, "POST", "/xmpp/000//xhr", "text/plain", b"").0, 404);
    // The JSESSIONID option: a cookie on session requests.
    let (st, h, b) = http(a, "POST", "/xmpp/000/c1/xhr", "text/plain", b"");
    assert_eq!((st, b.as_str()), (200, "o\n"));
    assert!(h.contains("JSESSIONID=dummy"), "{h}");
    // jsonp needs a valid callback.
    assert_eq!(
        http(a, "GET", "/xmpp/000/j1/jsonp", "text/plain", b"").0,
        500
    );
    assert_eq!(
        http(a, "GET", "/xmpp/000/j1/jsonp?c=a%28b", "text/plain", b"").0,
        500
    );
    let (st, _, b) = http(a, "GET", "/xmpp/000/j1/jsonp?c=cb", "text/plain", b"");
    assert_eq!((st, b.as_str()), (200, "cb(\"o\");\r\n"));
    // Websocket URLs need an upgrade.
    let (st, _, b) = http(a, "GET", "/xmpp/000/w1/websocket", "text/plain", b"");
    assert_eq!(st, 400, "{b}");
    // Streaming transports start with their prelude: 2 KiB of h for xhr-streaming.
    let mut s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(
        b"POST /xmpp/000/st/xhr_streaming HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    )
    .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    while !String::from_utf8_lossy(&got).contains("\no\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&got).contains(&"h".repeat(2048)));
}

#[test]
fn sockjs_clients_that_misbehave_are_shed_and_others_carry_on() {
    let r = start_sockjs(Duration::from_secs(1));
    let a = r.addr();
    let mut good = login(&Transport::from_word(Some("xhr-polling")), a, 1);
    ping(&mut good, "g0");
    let p = |path: &str, body: &[u8]| http(a, "POST", path, "text/plain", body);
    // A session to misbehave in.
    assert_eq!(p("/xmpp/000/bad/xhr", b"").2, "o\n");
    assert_eq!(
        p("/xmpp/000/bad/xhr_send", b"[\"x").2,
        "Broken JSON encoding."
    );
    assert_eq!(p("/xmpp/000/bad/xhr_send", b"[1,2]").0, 500);
    assert_eq!(p("/xmpp/000/bad/xhr_send", b"").2, "Payload expected.");
    assert_eq!(p("/xmpp/000/nope/xhr_send", b"[\"a\"]").0, 404);
    assert_eq!(
        http(
            a,
            "POST",
            "/xmpp/000/nope/jsonp_send",
            "application/x-www-form-urlencoded",
            b"d=%5B%5D"
        )
        .0,
        404
    );
    // Over the body limit: refused, and at most the limit is read.
    assert_eq!(p("/xmpp/000/bad/xhr_send", &vec![b' '; 64 * 1024]).0, 413);
    ping(&mut good, "g1");
    // A second receiving request while one waits: c[2010], the first keeps waiting.
    let mut held = TcpStream::connect(a).unwrap();
    held.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    held.write_all(b"POST /xmpp/000/bad/xhr HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let (_, _, b) = p("/xmpp/000/bad/xhr", b"");
    assert_eq!(b, "c[2010,\"Another connection still open\"]\n");
    // XMPP that is not one element: a stream error, <close/>, and the session goes away.
    assert_eq!(p("/xmpp/000/bad/xhr_send", SJ_OPEN.as_bytes()).0, 204);
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    while !String::from_utf8_lossy(&got).contains("a[") {
        let n = held.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&got).contains("<open"));
    assert_eq!(p("/xmpp/000/bad/xhr_send", b"[\"<a><b></a>\"]").0, 204);
    let (_, _, b) = p("/xmpp/000/bad/xhr", b"");
    assert!(
        b.contains("not-well-formed") || b.contains("invalid-xml"),
        "{b}"
    );
    assert!(b.contains("<close"), "{b}");
    let (_, _, b) = p("/xmpp/000/bad/xhr", b"");
    assert_eq!(b, "c[3000,\"Go away!\"]\n");
    // A websocket session sent broken JSON: closed with 1002.
    let mut ws = tungstenite::client::client(
        format!("ws://{a}/xmpp/000/wsbad/websocket"),
        TcpStream::connect(a).unwrap(),
    )
    .unwrap()
    .0;
    assert_eq!(ws.read().unwrap().to_text().unwrap(), "o");
    ws.send(tungstenite::Message::text("[\"x")).unwrap();
    loop {
        match ws.read() {
            Ok(tungstenite::Message::Close(Some(f))) => {
                assert_eq!(u16::from(f.code), 1002);
                break;
            }
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
    }
    // Twenty clients that open a session and never poll again: all forgotten after the
    // disconnect delay, their XMPP connections closed; the good client carries on.
    for i in 0..20 {
        assert_eq!(p(&format!("/xmpp/000/idle{i}/xhr"), b"").2, "o\n");
    }
    assert!(r.stats().open.load(Ordering::Relaxed) >= 21);
    let t0 = Instant::now();
    let mut i = 2;
    while r.stats().open.load(Ordering::Relaxed) > 1 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "idle sessions not cleaned"
        );
        ping(&mut good, &format!("g{i}"));
        i += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(t0.elapsed() >= Duration::from_millis(800));
    for k in 0..20 {
        ping(&mut good, &format!("h{k}"));
    }
    assert_eq!(p("/xmpp/000/idle0/xhr_send", b"[\"a\"]").0, 404);
    good.close();
}

#[test]
fn sockjs_raw_websocket_htmlfile_and_eventsource() {
    let r = start_sockjs(Duration::from_secs(5));
    let a = r.addr();
    // The raw websocket: XMPP elements as they are, no SockJS frames.
    let mut ws = tungstenite::client::client(
        format!("ws://{a}/xmpp/websocket"),
        TcpStream::connect(a).unwrap(),
    )
    .unwrap()
    .0;
    ws.send(tungstenite::Message::text(OPEN)).unwrap();
    let first = ws.read().unwrap().into_text().unwrap().to_string();
    assert!(first.starts_with("<open "), "{first}");
    let second = ws.read().unwrap().into_text().unwrap().to_string();
    assert!(second.starts_with("<stream:features"), "{second}");
    // htmlfile and eventsource: each a stream that starts with its prelude, then `o`.
    for (path, want) in [
        (
            "/xmpp/000/hf/htmlfile?c=cb",
            "<script>\np(\"o\");\n</script>\r\n",
        ),
        ("/xmpp/000/es/eventsource", "\r\ndata: o\r\n\r\n"),
    ] {
        let mut s = TcpStream::connect(a).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 8192];
        while !String::from_utf8_lossy(&got).contains(want) {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "{path}: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got);
        if path.contains("htmlfile") {
            assert!(
                text.contains("parent.cb") && text.contains("text/html"),
                "{text}"
            );
        } else {
            assert!(text.contains("text/event-stream"), "{text}");
        }
    }
}
