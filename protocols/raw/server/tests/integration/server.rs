//! The reference server against clients that ask for too much or send what no client of
//! ours would: each is refused or closed, and its session slot is always freed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use wirebench_raw::control::{Behaviour, Open};
use wirebench_raw::raw::{HEADER_LEN, Header, Kind};
use wirebench_raw_server::{ControlClient, NetError, Server, ServerConfig};

fn open(think: Duration, behaviour: Behaviour) -> Open {
    Open {
        protocol: "raw".into(),
        behaviour,
        max_payload: 16,
        think_ns: think.as_nanos() as u64,
        seed: 1,
        verify: false,
        nodelay: true,
    }
}

fn frame(seq: u64) -> [u8; HEADER_LEN] {
    Header {
        kind: Kind::Data,
        seq,
        sent_ns: 0,
        payload_len: 0,
    }
    .encode()
}

/// Connects to a session's data port and reads the server's hello.
fn data(ctl: &ControlClient, port: u16) -> TcpStream {
    let mut s = TcpStream::connect((ctl.peer_ip().unwrap(), port)).unwrap();
    let mut hello = [0u8; HEADER_LEN];
    s.read_exact(&mut hello).unwrap();
    s
}

#[test]
fn a_think_time_above_the_limit_is_refused_at_open() {
    let cfg = ServerConfig {
        max_think: Duration::from_secs(5),
        ..Default::default()
    };
    let server = Server::bind("127.0.0.1:0", cfg).unwrap().spawn().unwrap();
    let mut ctl =
        ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5)).unwrap();
    let err = ctl
        .open(open(Duration::from_secs(3600), Behaviour::Echo))
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, NetError::Refused { .. }), "{msg}");
    assert!(msg.contains("think time") && msg.contains("limit"), "{msg}");
    // Within the limit it is accepted.
    ctl.open(open(Duration::from_secs(1), Behaviour::Echo))
        .unwrap();
}

#[test]
fn a_session_in_its_think_time_does_not_hold_up_stop() {
    let mut server = Server::bind("127.0.0.1:0", ServerConfig::default())
        .unwrap()
        .spawn()
        .unwrap();
    let mut ctl =
        ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5)).unwrap();
    let (_, port) = ctl
        .open(open(Duration::from_secs(50), Behaviour::Echo))
        .unwrap();
    let mut d = data(&ctl, port);
    d.write_all(&frame(0)).unwrap();
    // The session thread is now waiting out its 50 s think time.
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    server.stop();
    // stop() joins only the accept thread; the session must notice and close too.
    d.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 64];
    let n = d.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the session answered instead of closing");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
}

#[test]
fn the_largest_sequence_number_ends_cleanly_and_frees_the_slot() {
    // Two slots: if a session kept its slot, the third open would be refused.
    let cfg = ServerConfig {
        max_sessions: 2,
        ..Default::default()
    };
    let server = Server::bind("127.0.0.1:0", cfg).unwrap().spawn().unwrap();
    let mut ctl =
        ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5)).unwrap();
    for round in 0..3 {
        let (session, port) = ctl.open(open(Duration::ZERO, Behaviour::Sink)).unwrap();
        let mut d = data(&ctl, port);
        d.write_all(&frame(u64::MAX)).unwrap();
        d.write_all(&frame(0)).unwrap();
        drop(d);
        let report = ctl.result(session).unwrap();
        assert_eq!(report.error, None, "round {round}");
        assert_eq!(report.counts.received, 1, "round {round}: {report:?}");
        assert_eq!(report.counts.duplicated, 1, "round {round}: {report:?}");
        assert_eq!(report.counts.lost, u64::MAX, "round {round}: {report:?}");
    }
}

#[test]
fn run_until_serves_until_told_then_stops() {
    let server = Server::bind("127.0.0.1:0", ServerConfig::default()).unwrap();
    let addr = server.local_addr().to_string();
    let mut served = false;
    server
        .run_until(|| {
            served = ControlClient::connect(&addr, Duration::from_secs(5)).is_ok();
        })
        .unwrap();
    assert!(served, "the control port answered while running");
    assert!(
        ControlClient::connect(&addr, Duration::from_secs(1)).is_err(),
        "nothing listens once it returned"
    );
}
