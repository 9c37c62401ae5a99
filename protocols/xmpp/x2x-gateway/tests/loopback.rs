//! Two gateways and two fake XEP-0114 servers on loopback: stanzas both ways, broken
//! link connections, refused sources, garbage from the peer, queue limits, component
//! reconnection and TCP Fast Open (in a private network namespace when permitted).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};
use wirebench_x2x_gateway::{Compression, Config, Dial, Gateway, LogLevel};
use wirebench_xmpp::framer::{Frame, Framer};

const SECRET: &str = "s3cret";

/// A stand-in for Prosody's component port (`mod_component`): one component domain,
/// the XEP-0114 handshake, then it records what the gateway writes and writes what the
/// test sends.
struct FakeServer {
    addr: SocketAddr,
    inner: Arc<FakeInner>,
}

struct FakeInner {
    domain: String,
    received: Mutex<Vec<String>>,
    conn: Mutex<Option<TcpStream>>,
    connections: AtomicUsize,
    stop: AtomicBool,
}

impl FakeServer {
    fn start(domain: &str) -> FakeServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        l.set_nonblocking(true).unwrap();
        let inner = Arc::new(FakeInner {
            domain: domain.to_string(),
            received: Mutex::new(Vec::new()),
            conn: Mutex::new(None),
            connections: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let i = inner.clone();
        std::thread::spawn(move || {
            while !i.stop.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((s, _)) => {
                        let i = i.clone();
                        std::thread::spawn(move || serve(&i, s));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeServer { addr, inner }
    }

    fn send(&self, stanza: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            {
                let g = self.inner.conn.lock().unwrap();
                if let Some(s) = g.as_ref() {
                    (&*s).write_all(stanza.as_bytes()).unwrap();
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "component {} never connected",
                self.inner.domain
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn wait_connected(&self) {
        self.send("");
    }

    fn received(&self) -> Vec<String> {
        self.inner.received.lock().unwrap().clone()
    }

    fn wait_for(&self, n: usize, secs: u64) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let r = self.received();
            if r.len() >= n || Instant::now() > deadline {
                return r;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn kill_connection(&self) {
        if let Some(s) = self.inner.conn.lock().unwrap().take() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn connections(&self) -> usize {
        self.inner.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::Relaxed);
        self.kill_connection();
    }
}

fn serve(i: &FakeInner, mut s: TcpStream) {
    let mut f = Framer::new(1 << 20);
    let mut buf = [0u8; 8192];
    let mut authed = false;
    let id = format!("id{}", i.connections.load(Ordering::SeqCst));
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        f.push(&buf[..n]);
        loop {
            let frame = match f.next_frame() {
                Ok(Some(fr)) => fr,
                Ok(None) => break,
                Err(_) => return,
            };
            match frame {
                Frame::Header(r) => {
                    let h = String::from_utf8_lossy(&f.buf()[r]).into_owned();
                    assert!(h.contains("xmlns='jabber:component:accept'"), "{h}");
                    if !h.contains(&format!("to='{}'", i.domain)) {
                        let _ = s.write_all(b"<stream:error><host-unknown xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>");
                        return;
                    }
                    let _ = s.write_all(format!(
                        "<?xml version='1.0'?><stream:stream xmlns:stream='http://etherx.jabber.org/streams' \
                         xml:lang='en' xmlns='jabber:component:accept' id='{id}' from='{}'>",
                        i.domain
                    ).as_bytes());
                }
                Frame::Element(r) => {
                    let e = String::from_utf8_lossy(&f.buf()[r]).into_owned();
                    if !authed {
                        let want: String = Sha1::digest(format!("{id}{SECRET}").as_bytes())
                            .iter()
                            .map(|b| format!("{b:02x}"))
                            .collect();
                        if e != format!("<handshake>{want}</handshake>") {
                            let _ = s.write_all(b"<stream:error><not-authorized xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error></stream:stream>");
                            return;
                        }
                        authed = true;
                        s.write_all(b"<handshake/>").unwrap();
                        *i.conn.lock().unwrap() = Some(s.try_clone().unwrap());
                        i.connections.fetch_add(1, Ordering::SeqCst);
                    } else {
                        i.received.lock().unwrap().push(e);
                    }
                }
                Frame::End => return,
            }
        }
    }
}

fn config(local: &str, remote: &str, peer: SocketAddr, comp: SocketAddr) -> Config {
    let mut c = Config::new(&[local], &[remote], peer, comp, SECRET);
    c.name = local.to_string();
    c.link.listen = Some("127.0.0.1:0".parse().unwrap());
    c.timing.reconnect_min = Duration::from_millis(20);
    c.timing.reconnect_max = Duration::from_millis(300);
    c.timing.ack_delay = Duration::from_millis(100);
    c.timing.connect_timeout = Duration::from_secs(5);
    c.log = if std::env::var_os("X2X_LOG").is_some() {
        LogLevel::Info
    } else {
        LogLevel::Off
    };
    c
}

struct Pair {
    a: Gateway,
    b: Gateway,
    /// The XMPP server of a.test (the gateway beside it is component b.test).
    sa: FakeServer,
    sb: FakeServer,
}

/// A dials, B listens (B only accepts 127.0.0.1).
fn pair(mode: Compression, tweak: impl Fn(&mut Config)) -> Pair {
    let sa = FakeServer::start("b.test");
    let sb = FakeServer::start("a.test");
    let mut cb = config("b.test", "a.test", "127.0.0.1:1".parse().unwrap(), sb.addr);
    cb.link.dial = Dial::Peer;
    cb.link.compression = mode;
    tweak(&mut cb);
    let b = Gateway::start(cb).unwrap();
    let mut ca = config("a.test", "b.test", b.listen_addr().unwrap(), sa.addr);
    ca.link.dial = Dial::Local;
    ca.link.listen = None;
    ca.link.compression = mode;
    tweak(&mut ca);
    let a = Gateway::start(ca).unwrap();
    Pair { a, b, sa, sb }
}

fn wait(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn chat(from: &str, to: &str, id: &str, body: &str) -> String {
    format!("<message to='{to}' from='{from}' type='chat' id='{id}'><body>{body}</body></message>")
}

#[test]
fn messages_cross_both_ways_in_every_mode() {
    for mode in Compression::ALL {
        let p = pair(mode, |_| {});
        p.sa.wait_connected();
        p.sb.wait_connected();
        p.sa.send(&chat(
            "alice@a.test/wb",
            "bob@b.test/wb",
            "m1",
            "ping &amp; &lt;x&gt;",
        ));
        let got = p.sb.wait_for(1, 10);
        assert_eq!(
            got,
            vec![
                "<message from='alice@a.test/wb' to='bob@b.test/wb' type='chat' id='m1'>\
                  <body>ping &amp; &lt;x&gt;</body></message>"
                    .to_string()
            ],
            "{mode:?}"
        );
        p.sb.send(&chat("bob@b.test/wb", "alice@a.test/wb", "r1", "pong"));
        let got = p.sa.wait_for(1, 10);
        assert_eq!(got.len(), 1, "{mode:?}");
        assert!(got[0].starts_with("<message from='bob@b.test/wb' to='alice@a.test/wb'"));
        let (sa, sb) = (p.a.stop(), p.b.stop());
        assert_eq!((sa.stanzas_out, sa.stanzas_in), (1, 1));
        assert_eq!((sb.stanzas_out, sb.stanzas_in), (1, 1));
        assert!(
            sa.link_bytes_out > 0 && sa.link_bytes_out == sb.link_bytes_in.max(sa.link_bytes_out)
        );
        assert_eq!(sa.component_connections, 1);
    }
}

/// The number in `id='pN'` of each received stanza.
fn ids(got: &[String], prefix: &str) -> Vec<usize> {
    got.iter()
        .filter_map(|s| {
            let rest = s.split(&format!("id='{prefix}")).nth(1)?;
            rest.split('\'').next()?.parse().ok()
        })
        .collect()
}

#[test]
fn a_thousand_stanzas_each_way_exactly_once_in_order_across_link_breaks() {
    let p = pair(Compression::ZlibDict, |_| {});
    p.sa.wait_connected();
    p.sb.wait_connected();
    wait("the link", 10, || p.a.link_is_up() && p.b.link_is_up());
    const N: usize = 1000;
    std::thread::scope(|sc| {
        sc.spawn(|| {
            for i in 0..N {
                p.sa.send(&chat(
                    "alice@a.test/wb",
                    "bob@b.test/wb",
                    &format!("p{i}"),
                    "xy",
                ));
                if i % 50 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        });
        sc.spawn(|| {
            for i in 0..N {
                p.sb.send(&chat(
                    "bob@b.test/wb",
                    "alice@a.test/wb",
                    &format!("q{i}"),
                    "yz",
                ));
                if i % 50 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        });
        // Break the link from either side, several times, while stanzas flow.
        for k in 0..8 {
            std::thread::sleep(Duration::from_millis(15));
            if k % 2 == 0 {
                p.a.break_link();
            } else {
                p.b.break_link();
            }
        }
    });
    let got_b = p.sb.wait_for(N, 30);
    let got_a = p.sa.wait_for(N, 30);
    // Give a moment for any duplicate to show up.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(ids(&p.sb.received(), "p"), (0..N).collect::<Vec<_>>());
    assert_eq!(ids(&p.sa.received(), "q"), (0..N).collect::<Vec<_>>());
    assert_eq!((got_a.len(), got_b.len()), (N, N));
    wait("all acknowledged", 10, || {
        p.a.unacked() == 0 && p.b.unacked() == 0
    });
    let (sa, sb) = (p.a.stats(), p.b.stats());
    assert!(sa.reconnects >= 4, "{sa:?}");
    eprintln!(
        "1000+1000 stanzas, {} reconnects: A resent {} (B dropped {} duplicates), \
         B resent {} (A dropped {}); link bytes A->B {} B->A {}",
        sa.reconnects,
        sa.resent,
        sb.duplicates_dropped,
        sb.resent,
        sa.duplicates_dropped,
        sa.link_bytes_out,
        sb.link_bytes_out
    );
}

#[test]
fn connections_from_another_source_address_are_refused() {
    let p = pair(Compression::ZlibDict, |_| {});
    wait("the link", 10, || p.a.link_is_up());
    let target = p.b.listen_addr().unwrap();
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(&"127.0.0.2:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    sock.connect(&target.into()).unwrap();
    let mut s: TcpStream = sock.into();
    let _ = s.write_all(b"<s xmlns='urn:wirebench:x2x:0' n='0' i='1'/>");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 16];
    let r = s.read(&mut b);
    assert!(
        matches!(r, Ok(0) | Err(_)),
        "the gateway closes at once: {r:?}"
    );
    wait("the refusal to be counted", 5, || {
        p.b.stats().refused_connections == 1
    });
    // The real link is untouched.
    assert!(p.a.link_is_up() && p.b.link_is_up());
    assert_eq!(p.b.stats().link_connections, 1);
}

/// A flood of strangers' connections is refused one by one, and logged as a few lines
/// with counts rather than a line each (the log may be a file on a small disk); at the
/// ban policy's count the stranger is banned and its next SYN goes unanswered.
#[test]
fn a_flood_of_strangers_is_refused_with_a_few_log_lines_then_banned() {
    let sb = FakeServer::start("a.test");
    let dir = std::env::temp_dir().join(format!("x2x-refusals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("gw.log");
    let mut cb = config("b.test", "a.test", "127.0.0.1:1".parse().unwrap(), sb.addr);
    cb.link.dial = Dial::Peer;
    cb.log = LogLevel::Info;
    cb.log_file = Some(log.clone());
    let b = Gateway::start(cb).unwrap();
    let target = b.listen_addr().unwrap();
    let stranger = || {
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.bind(&"127.0.0.3:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        sock.connect_timeout(&target.into(), Duration::from_millis(500))
            .map(|()| TcpStream::from(sock))
    };
    let n = u64::from(wirebench_net::ban::DEFAULT_POLICY.strikes);
    for _ in 0..n {
        let mut s = stranger().expect("not banned yet");
        let _ = s.write_all(b"garbage");
    }
    wait("every refusal to be counted", 10, || {
        b.stats().refused_connections == n
    });
    assert!(
        stranger().is_err(),
        "banned after {n} refusals: its SYNs are dropped"
    );
    // The last ones are logged within a second of the flood.
    std::thread::sleep(Duration::from_millis(1300));
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("refused")).collect();
    assert!(
        !lines.is_empty() && lines.len() <= 6,
        "{} refusal lines, the first: {:?}",
        lines.len(),
        &lines[..lines.len().min(3)]
    );
    let counted: u64 = lines
        .iter()
        .map(|l| {
            l.split("refused ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|w| w.parse().ok())
                .unwrap_or(1)
        })
        .sum();
    assert_eq!(counted, n, "{lines:?}");
    drop(b);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn garbage_from_the_peer_closes_the_connection_and_the_gateway_reconnects() {
    let sa = FakeServer::start("b.test");
    let fake_peer = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut ca = config("a.test", "b.test", fake_peer.local_addr().unwrap(), sa.addr);
    ca.link.dial = Dial::Local;
    ca.link.listen = None;
    ca.link.compression = Compression::None;
    let a = Gateway::start(ca).unwrap();
    let (mut c1, _) = fake_peer.accept().unwrap();
    c1.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // The marker rides with the first stanza: give the gateway one to send.
    sa.wait_connected();
    sa.send(&chat("alice@a.test/wb", "bob@b.test/wb", "g1", "xy"));
    let mut buf = [0u8; 256];
    let n = c1.read(&mut buf).unwrap();
    let first = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(
        first.starts_with("<s xmlns='urn:wirebench:x2x:0' n='0' i='"),
        "no stream header, only the marker: {first}"
    );
    c1.write_all(b"<s xmlns='urn:wirebench:x2x:0' n='0' i='ff'/>\x00\x01garbage<<<")
        .unwrap();
    // The gateway closes this connection ...
    let mut rest = Vec::new();
    let r = c1.read_to_end(&mut rest);
    assert!(r.is_ok() || rest.is_empty(), "{r:?}");
    // ... and dials again.
    fake_peer.set_nonblocking(false).unwrap();
    let (mut c2, _) = fake_peer.accept().unwrap();
    c2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = c2.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("<s xmlns='urn:wirebench:x2x:0'"));
    let st = a.stats();
    assert!(st.link_errors >= 1 && st.link_connections >= 2, "{st:?}");
    // An oversize element from the peer is refused the same way.
    let mut big = b"<s xmlns='urn:wirebench:x2x:0' n='0' i='ff'/><message from='bob@b.test' to='alice@a.test'><body>".to_vec();
    big.extend(std::iter::repeat_n(b'x', 300 * 1024));
    let _ = c2.write_all(&big);
    let mut rest = Vec::new();
    let _ = c2.read_to_end(&mut rest);
    wait("the second error", 5, || a.stats().link_errors >= 2);
    drop(a);
}

#[test]
fn a_full_queue_returns_errors_and_drops_presence() {
    let sa = FakeServer::start("b.test");
    // The peer is not there: everything queues.
    let mut ca = config("a.test", "b.test", "127.0.0.1:9".parse().unwrap(), sa.addr);
    ca.link.dial = Dial::Local;
    ca.link.listen = None;
    ca.limits.queue_stanzas = 5;
    let a = Gateway::start(ca).unwrap();
    sa.wait_connected();
    for i in 0..7 {
        sa.send(&chat(
            "alice@a.test/wb",
            "bob@b.test/wb",
            &format!("p{i}"),
            "xy",
        ));
    }
    sa.send("<presence from='alice@a.test/wb' to='bob@b.test'/>");
    let got = sa.wait_for(2, 10);
    assert_eq!(got.len(), 2, "{got:?}");
    for (g, id) in got.iter().zip(["p5", "p6"]) {
        assert!(
            g.starts_with(&format!(
                "<message from='bob@b.test/wb' to='alice@a.test/wb' type='error' id='{id}'>\
                 <error type='wait'><resource-constraint"
            )),
            "{g}"
        );
    }
    wait("presence counted", 5, || a.stats().presence_dropped == 1);
    let st = a.stats();
    assert_eq!((st.rejected_queue_full, a.unacked()), (2, 5));
}

#[test]
fn deliveries_wait_for_a_component_reconnection() {
    let p = pair(Compression::ZlibDict, |_| {});
    p.sa.wait_connected();
    p.sb.wait_connected();
    wait("the link", 10, || p.a.link_is_up());
    p.sb.kill_connection();
    wait("B's component to notice", 5, || {
        p.b.components_ready() == 0 || p.sb.connections() >= 2
    });
    for i in 0..20 {
        p.sa.send(&chat(
            "alice@a.test/wb",
            "bob@b.test/wb",
            &format!("p{i}"),
            "xy",
        ));
    }
    let got = p.sb.wait_for(20, 15);
    assert_eq!(ids(&got, "p"), (0..20).collect::<Vec<_>>());
    assert!(p.sb.connections() >= 2);
    assert!(p.b.stats().component_connections >= 2);
}

#[test]
fn both_sides_dialling_converge_on_one_connection() {
    let free = || {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    };
    let (la, lb) = (free(), free());
    let sa = FakeServer::start("b.test");
    let sb = FakeServer::start("a.test");
    let mut ca = config("a.test", "b.test", lb, sa.addr);
    ca.link.listen = Some(la);
    ca.link.dial = Dial::Both;
    let mut cb = config("b.test", "a.test", la, sb.addr);
    cb.link.listen = Some(lb);
    cb.link.dial = Dial::Both;
    let a = Gateway::start(ca).unwrap();
    let b = Gateway::start(cb).unwrap();
    sa.wait_connected();
    sb.wait_connected();
    for i in 0..50 {
        sa.send(&chat(
            "alice@a.test/wb",
            "bob@b.test/wb",
            &format!("p{i}"),
            "xy",
        ));
        sb.send(&chat(
            "bob@b.test/wb",
            "alice@a.test/wb",
            &format!("q{i}"),
            "yz",
        ));
    }
    assert_eq!(ids(&sb.wait_for(50, 15), "p"), (0..50).collect::<Vec<_>>());
    assert_eq!(ids(&sa.wait_for(50, 15), "q"), (0..50).collect::<Vec<_>>());
    wait("one stable connection", 10, || {
        a.link_is_up() && b.link_is_up()
    });
    std::thread::sleep(Duration::from_millis(300));
    let (x, y) = (a.stats().link_connections, b.stats().link_connections);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        (a.stats().link_connections, b.stats().link_connections),
        (x, y),
        "no churn"
    );
}

#[test]
fn run_returns_when_told_to_stop() {
    let sa = FakeServer::start("b.test");
    let mut c = config("a.test", "b.test", "127.0.0.1:9".parse().unwrap(), sa.addr);
    c.link.dial = Dial::Local;
    c.link.listen = None;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let h = std::thread::spawn(move || wirebench_x2x_gateway::run(c, s2));
    sa.wait_connected();
    stop.store(true, Ordering::SeqCst);
    let stats = h.join().unwrap().unwrap();
    assert_eq!(stats.component_connections, 1);
    // A bad configuration is an error, not a panic.
    let mut bad = config("a.test", "a.test", "127.0.0.1:9".parse().unwrap(), sa.addr);
    bad.link.dial = Dial::Local;
    let e = wirebench_x2x_gateway::run(bad, Arc::new(AtomicBool::new(true))).unwrap_err();
    assert!(
        e.to_string().contains("both a local and a remote domain"),
        "{e}"
    );
}

/// Brings `lo` up in the calling thread's (new) network namespace.
fn lo_up() -> bool {
    // SAFETY: plain ioctls on a throwaway socket with a zeroed ifreq.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return false;
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        let mut ok = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) == 0;
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        ok &= libc::ioctl(fd, libc::SIOCSIFFLAGS, &mut ifr) == 0;
        libc::close(fd);
        ok
    }
}

#[test]
fn rfc7413_reconnections_carry_data_in_the_syn() {
    // TCP Fast Open needs net.ipv4.tcp_fastopen = 3, a per-namespace sysctl: run in a
    // private network namespace (needs CAP_SYS_ADMIN) so the host's setting is untouched.
    let r = std::thread::spawn(|| {
        // SAFETY: unshare affects only this thread, which then runs the whole test.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(format!(
                "unshare(CLONE_NEWNET): {}",
                std::io::Error::last_os_error()
            ));
        }
        if !lo_up() {
            return Err("cannot bring lo up".into());
        }
        std::fs::write("/proc/sys/net/ipv4/tcp_fastopen", "3").map_err(|e| e.to_string())?;
        let p = pair(Compression::ZlibDict, |_| {});
        assert_eq!(p.a.stats().tfo_sysctl, Some(3));
        p.sa.wait_connected();
        p.sb.wait_connected();
        wait("the link", 10, || p.a.link_is_up() && p.b.link_is_up());
        // The first connection fetched a cookie; each reconnection should use it.
        let mut seen = 0;
        for round in 0..3 {
            p.a.break_link();
            p.sa.send(&chat(
                "alice@a.test/wb",
                "bob@b.test/wb",
                &format!("p{round}"),
                "xy",
            ));
            let got = p.sb.wait_for(round + 1, 10);
            assert_eq!(got.len(), round + 1);
            wait("the new connection", 10, || p.a.link_is_up());
            std::thread::sleep(Duration::from_millis(50));
            seen = p.a.stats().tfo_used;
        }
        let (sa, sb) = (p.a.stats(), p.b.stats());
        eprintln!(
            "TFO: dialler saw SYN data acked on {} connections, listener on {} (of {} / {})",
            sa.tfo_used, sb.tfo_used, sa.link_connections, sb.link_connections
        );
        assert!(seen >= 2, "TFO used on {seen} of 3 reconnections: {sa:?}");
        Ok(())
    })
    .join()
    .unwrap();
    if let Err(why) = r {
        eprintln!("SKIPPED: TCP Fast Open test needs a private network namespace: {why}");
    }
}
