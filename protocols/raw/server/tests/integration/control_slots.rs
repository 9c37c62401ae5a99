//! The control port against clients that hold its slots (issue #34, docs/reliability.md):
//! silent connections, a trickle of bytes, a hello and then silence. None may lock a real
//! client out, and none may cut a real client's connection while its case runs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use wirebench_raw::control::{Behaviour, Open};
use wirebench_raw::raw::{HEADER_LEN, Header, Kind};
use wirebench_raw_server::{ControlClient, Server, ServerConfig, ServerHandle};

fn start(cfg: ServerConfig) -> ServerHandle {
    Server::bind("127.0.0.1:0", cfg).unwrap().spawn().unwrap()
}

/// True once the server has closed `s` (EOF or reset), waiting at most `within`.
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

#[test]
fn silent_connections_do_not_lock_a_real_client_out() {
    let server = start(ServerConfig::default());
    let max = ServerConfig::default().max_control;
    let silent: Vec<TcpStream> = (0..max + 2)
        .map(|_| TcpStream::connect(server.addr()).unwrap())
        .collect();
    // Let the server accept them all first.
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    let c = ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5));
    assert!(c.is_ok(), "refused: {}", c.err().unwrap());
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    drop(silent);
}

#[test]
fn a_connection_must_complete_its_first_request_in_time_however_it_trickles() {
    let server = start(ServerConfig {
        first_request_timeout: Duration::from_secs(1),
        ..Default::default()
    });
    let mut silent = TcpStream::connect(server.addr()).unwrap();
    let mut trickle = TcpStream::connect(server.addr()).unwrap();
    let t0 = Instant::now();
    let feeder = {
        let mut t = trickle.try_clone().unwrap();
        std::thread::spawn(move || {
            for b in b"{\"op\":\"hello\",\"version\":1,\"client\":\"slow" {
                if t.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    assert!(closed_within(&mut silent, Duration::from_secs(3)));
    assert!(closed_within(&mut trickle, Duration::from_secs(3)));
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}");
    feeder.join().unwrap();
}

#[test]
fn bytes_after_a_request_do_not_keep_a_connection_open() {
    let server = start(ServerConfig {
        idle_timeout: Duration::from_secs(1),
        ..Default::default()
    });
    // A raw connection that says hello, then sends a space every 200 ms.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(b"{\"op\":\"hello\",\"version\":1,\"client\":\"t\"}\n")
        .unwrap();
    let mut w = s.try_clone().unwrap();
    let feeder = std::thread::spawn(move || {
        for _ in 0..20 {
            if w.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    assert!(closed_within(&mut s, Duration::from_secs(3)));
    feeder.join().unwrap();
}

#[test]
fn a_connection_whose_session_runs_is_not_idle() {
    let server = start(ServerConfig {
        idle_timeout: Duration::from_secs(1),
        ..Default::default()
    });
    let mut ctl =
        ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5)).unwrap();
    let (session, port) = ctl
        .open(Open {
            protocol: "raw".into(),
            behaviour: Behaviour::Sink,
            max_payload: 16,
            think_ns: 0,
            seed: 1,
            verify: false,
            nodelay: true,
        })
        .unwrap();
    let mut d = TcpStream::connect((ctl.peer_ip().unwrap(), port)).unwrap();
    let mut hello = [0u8; HEADER_LEN];
    d.read_exact(&mut hello).unwrap();
    // A case three times the idle timeout long: the data connection is busy, the
    // control connection silent.
    for seq in 0..15 {
        let frame = Header {
            kind: Kind::Data,
            seq,
            sent_ns: 0,
            payload_len: 0,
        }
        .encode();
        d.write_all(&frame).unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(d);
    let report = ctl.result(session).unwrap();
    assert_eq!(report.counts.received, 15, "{report:?}");
    // Idle again, with nothing running: now it is closed.
    std::thread::sleep(Duration::from_millis(1600));
    assert!(!ctl.is_open(), "still open after the idle timeout");
}

#[test]
fn a_client_idle_since_its_hello_gives_its_slot_to_a_new_one() {
    let server = start(ServerConfig {
        max_control: 2,
        first_request_timeout: Duration::from_millis(500),
        ..Default::default()
    });
    let addr = server.addr().to_string();
    let a = ControlClient::connect(&addr, Duration::from_secs(5)).unwrap();
    let b = ControlClient::connect(&addr, Duration::from_secs(5)).unwrap();
    // Both slots taken by clients that said hello a moment ago: refused.
    let err = ControlClient::connect(&addr, Duration::from_secs(5)).err();
    assert!(
        err.as_ref()
            .is_some_and(|e| e.to_string().contains("too many control connections")),
        "{err:?}"
    );
    std::thread::sleep(Duration::from_millis(800));
    // Idle longer than the first-request timeout: the one idle longest goes.
    let c = ControlClient::connect(&addr, Duration::from_secs(5));
    assert!(c.is_ok(), "{:?}", c.err());
    std::thread::sleep(Duration::from_millis(300));
    assert!(!a.is_open(), "the oldest idle client kept its slot");
    assert!(b.is_open());
}
