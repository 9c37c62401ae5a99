//! A session flooding one that never reads, on another worker (bench/hostile.sh's
//! half-open attack, in small): what queues toward the non-reader stays within its
//! `max_queued` and the link between the workers within `fabric::PAUSE_READS_AT` plus
//! one read, and no stanza is dropped on the link for it. Its own test binary, so that
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
        assert!(n > 0, "closed before {mark:?}: {}", String::from_utf8_lossy(&got));
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
    let auth = format!(
        "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{b64}</auth>"
    );
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

#[test]
fn a_flood_toward_a_non_reader_on_another_worker_stays_bounded() {
    let mut cfg = XmppServerConfig::new("127.0.0.1:0".parse().unwrap(), DOMAIN, 10);
    cfg.workers = 2;
    cfg.port_per_worker = true;
    cfg.max_queued = 1 << 20;
    let server = XmppServer::bind(cfg).unwrap();
    let first = server.local_addr().unwrap();
    let second = SocketAddr::new(first.ip(), first.port() + 1);
    let stats = server.stats.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = server.spawn(stop.clone()).unwrap();

    let _sink = login(second, 2, Some(4096));
    let mut sender = login(first, 1, None);
    // Whatever comes back to the sender is read and dropped, so only the sink is slow.
    let mut back = sender.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while matches!(back.read(&mut buf), Ok(n) if n > 0) {}
    });
    let msg = format!(
        "<message type='chat' to='user2@{DOMAIN}'><body>{}</body></message>",
        "x".repeat(1000)
    );
    let batch = msg.repeat(256);
    // 96 MiB as fast as the server takes it, or 4 s.
    let end = Instant::now() + Duration::from_secs(4);
    let mut sent = 0usize;
    sender
        .set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    while sent < 96 << 20 && Instant::now() < end {
        match sender.write(batch.as_bytes()) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => panic!("the sender was cut off: {e}"),
        }
    }
    // Let the server work through what it took.
    std::thread::sleep(Duration::from_millis(500));
    let s = stats.snapshot();
    stop.store(true, Ordering::SeqCst);
    let _ = thread.join();
    assert!(sent > 16 << 20, "only {sent} bytes went in: too slow a machine?");
    assert!(s.closed_slow >= 1, "the non-reader was not closed: {s:?}");
    assert_eq!(s.dropped_link, 0, "stanzas dropped on the link: {s:?}");
    let bound = (PAUSE_READS_AT + (1 << 20)) as u64;
    assert!(
        s.link_backlog_peak <= bound,
        "a link held {} bytes (bound {bound}): {s:?}",
        s.link_backlog_peak
    );
}
