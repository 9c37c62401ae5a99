//! A session flooding sessions that never read, on another worker (bench/hostile.sh's
//! half-open attack, in small): the non-readers are closed at their `max_queued`, the
//! link between the workers stays within `fabric::PAUSE_READS_AT` plus one read (the
//! sending worker stops reading its client meanwhile), and no stanza is dropped on it. Its own test binary, so that
//! nothing else runs in the process while it floods.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_xmpp_server::fabric::PAUSE_READS_AT;
use wirebench_xmpp_server::{XmppServer, XmppServerConfig};

const DOMAIN: &str = "wirebench.test";

fn read_until(s: &mut TcpStream, mark: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        let n = s.read(&mut buf).expect("the server answers");
        assert!(
            n > 0,
            "closed before {mark:?}: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&got).contains(mark) {
            return String::from_utf8_lossy(&got).into_owned();
        }
    }
    panic!("no {mark:?} in 5 s: {}", String::from_utf8_lossy(&got));
}

/// A session of `user` on the worker at `at`, logged in with SASL PLAIN and bound.
fn login(at: SocketAddr, user: u32, rcvbuf: Option<usize>) -> TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    if let Some(n) = rcvbuf {
        sock.set_recv_buffer_size(n).unwrap();
    }
    sock.connect(&at.into()).unwrap();
    let mut s: TcpStream = sock.into();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let open = format!(
        "<?xml version='1.0'?><stream:stream to='{DOMAIN}' xmlns='jabber:client' \
         xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>"
    );
    s.write_all(open.as_bytes()).unwrap();
    read_until(&mut s, "</stream:features>");
    let cred = format!("\0user{user}\0pass{user}");
    let b64 = base64(cred.as_bytes());
    let auth =
        format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{b64}</auth>");
    s.write_all(auth.as_bytes()).unwrap();
    read_until(&mut s, "<success");
    s.write_all(open.as_bytes()).unwrap();
    read_until(&mut s, "</stream:features>");
    s.write_all(
        b"<iq type='set' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>\
          <resource>r</resource></bind></iq>",
    )
    .unwrap();
    read_until(&mut s, "</iq>");
    s
}

fn base64(b: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Sessions that never read, half on each worker.
const SINKS: u32 = 32;

/// Sends 1 KB messages to every sink in turn from `sender`, as fast as the server takes
/// them, until `want` bytes or `end`; reads and drops what comes back, so that only the
/// sinks are slow. Returns the bytes sent.
fn flood(mut sender: TcpStream, want: usize, end: Instant) -> usize {
    let mut back = sender.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while matches!(back.read(&mut buf), Ok(n) if n > 0) {}
    });
    let batch: String = (0..256)
        .map(|i| {
            format!(
                "<message type='chat' to='user{}@{DOMAIN}'><body>{}</body></message>",
                3 + i % SINKS,
                "x".repeat(1000)
            )
        })
        .collect();
    sender
        .set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut sent = 0usize;
    while sent < want && Instant::now() < end {
        match sender.write(batch.as_bytes()) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => panic!("the sender was cut off: {e}"),
        }
    }
    sent
}

#[test]
fn a_flood_toward_non_readers_on_another_worker_stays_bounded() {
    let users = 2 + u64::from(SINKS);
    let mut cfg = XmppServerConfig::new("127.0.0.1:0".parse().unwrap(), DOMAIN, users);
    cfg.workers = 2;
    cfg.port_per_worker = true;
    let max_queued = cfg.max_queued;
    let server = XmppServer::bind(cfg).unwrap();
    // With port 0, each worker listens on a free port of its own.
    let (first, second) = (server.layout().addrs[0], server.layout().addrs[1]);
    let stats = server.stats.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = server.spawn(stop.clone()).unwrap();

    let _sinks: Vec<TcpStream> = (0..SINKS)
        .map(|k| login(if k % 2 == 0 { first } else { second }, 3 + k, Some(4096)))
        .collect();
    // A sender on each worker, each flooding all the sinks: each worker is kept busy
    // reading its own client while the other's stanzas queue on the link to it.
    let want = SINKS as usize * max_queued;
    let end = Instant::now() + Duration::from_secs(4);
    let senders: Vec<_> = [(first, 1), (second, 2)]
        .into_iter()
        .map(|(at, user)| {
            let s = login(at, user, None);
            std::thread::spawn(move || flood(s, want, end))
        })
        .collect();
    let sent: usize = senders.into_iter().map(|t| t.join().unwrap()).sum();
    // Let the server work through what it took.
    std::thread::sleep(Duration::from_millis(500));
    let s = stats.snapshot();
    eprintln!("{sent} bytes sent; {s:?}");
    stop.store(true, Ordering::SeqCst);
    let _ = thread.join();
    assert!(
        sent > 16 << 20,
        "only {sent} bytes went in: too slow a machine?"
    );
    assert!(s.closed_slow >= 1, "no non-reader was closed: {s:?}");
    assert_eq!(s.dropped_link, 0, "stanzas dropped on the link: {s:?}");
    let bound = (PAUSE_READS_AT + (1 << 20)) as u64;
    assert!(
        s.link_backlog_peak <= bound,
        "a link held {} bytes (bound {bound}): {s:?}",
        s.link_backlog_peak
    );
}
