//! Opens many XMPP client sessions against a server, logs them all in, holds them, and
//! reports the login rate: the client side of `bench/xmpp-sessions.sh` (server memory
//! per idle session, logins per second). One mio event loop drives every session's
//! sans-IO client engine; `KEEP` connections at most are logging in at once.
//!
//! ```text
//! cargo run --release -p wirebench-plugin-xmpp --example hold_sessions -- \
//!     ADDR DOMAIN SESSIONS [HOLD_SECS] [MECHANISM]
//! ```
//!
//! Users are `user1..userSESSIONS` with passwords `pass<N>` (the built-in server's and
//! Tsung's convention). Prints one line `established N in S s = R logins/s`, then holds
//! the sessions HOLD_SECS seconds (default 10) and exits. Loopback or lab addresses only:
//! this is a load tool.

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use wirebench_xmpp::{Client, ClientConfig, Event, Mechanism, TlsMode};

/// Logins in progress at once: enough to keep both cores busy, few enough that the
/// server's accept queue never overflows.
const KEEP: usize = 512;

struct Session {
    stream: TcpStream,
    client: Client,
    pending: Vec<u8>,
    done: bool,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!(
            "usage: hold_sessions ADDR DOMAIN SESSIONS [HOLD_SECS] [PLAIN|SCRAM-SHA-1|SCRAM-SHA-256]"
        );
        std::process::exit(2);
    }
    let addr: SocketAddr = args[0].parse().expect("ADDR is IP:PORT");
    assert!(
        addr.ip().is_loopback() || addr.ip().to_string().starts_with("198.18."),
        "only loopback or lab addresses"
    );
    let domain = &args[1];
    let n: usize = args[2].parse().expect("SESSIONS is a number");
    let hold: u64 = args.get(3).map_or(10, |h| h.parse().expect("HOLD_SECS"));
    let mechanism = args.get(4).map_or(Mechanism::Plain, |m| {
        Mechanism::from_name(m).expect("mechanism")
    });

    let mut poll = Poll::new().expect("poll");
    let mut events = Events::with_capacity(1024);
    let mut sessions: Vec<Option<Session>> = Vec::with_capacity(n);
    let mut next = 0usize;
    let mut in_flight = 0usize;
    let mut established = 0usize;
    let mut failed = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    let t0 = Instant::now();
    let open = |i: usize, poll: &Poll| -> Session {
        let mut stream = TcpStream::connect(addr).expect("connect");
        poll.registry()
            .register(
                &mut stream,
                Token(i),
                Interest::READABLE | Interest::WRITABLE,
            )
            .expect("register");
        let mut cfg = ClientConfig::new(
            &format!("user{}@{domain}", i + 1),
            &format!("pass{}", i + 1),
        );
        cfg.tls = TlsMode::Never;
        cfg.mechanisms = vec![mechanism];
        cfg.roster = false;
        cfg.max_stanza = 16 * 1024;
        Session {
            stream,
            client: Client::new(cfg, None, i as u64 + 1),
            pending: Vec::new(),
            done: false,
        }
    };
    while established + failed < n {
        while in_flight < KEEP && next < n {
            sessions.push(Some(open(next, &poll)));
            next += 1;
            in_flight += 1;
        }
        poll.poll(&mut events, Some(Duration::from_millis(100)))
            .expect("poll");
        for ev in events.iter() {
            let i = ev.token().0;
            let Some(s) = sessions[i].as_mut() else {
                continue;
            };
            if ev.is_readable() {
                loop {
                    match s.stream.read(&mut buf) {
                        Ok(0) => {
                            let _ = s.client.handle_eof();
                            break;
                        }
                        Ok(k) => {
                            let _ = s.client.handle_input(0, &buf[..k]);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            let _ = s.client.handle_eof();
                            break;
                        }
                    }
                }
            }
            while let Some(e) = s.client.poll_event() {
                match e {
                    Event::SessionEstablished if !s.done => {
                        s.done = true;
                        established += 1;
                        in_flight -= 1;
                    }
                    Event::Closed if !s.done => {
                        s.done = true;
                        failed += 1;
                        in_flight -= 1;
                    }
                    _ => {}
                }
            }
            if let Some(out) = s.client.poll_transmit() {
                s.pending.extend_from_slice(&out);
            }
            while !s.pending.is_empty() {
                match s.stream.write(&s.pending) {
                    Ok(k) => {
                        s.pending.drain(..k);
                    }
                    Err(_) => break,
                }
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "established {established} in {secs:.3} s = {:.0} logins/s ({failed} failed)",
        established as f64 / secs
    );
    std::thread::sleep(Duration::from_secs(hold));
}
