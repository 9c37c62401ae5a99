//! The plugin's workloads on loopback, no root: against the builtin server, libcoap and
//! aiocoap (installed by `bash scripts/install-peers.sh`; a missing one fails the test,
//! naming the command), against a server slower than ACK_TIMEOUT (spurious
//! retransmissions counted, none once tuned) and against one that answers garbage
//! (counted and survived, the request timed out).

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wirebench_coap_engine::{Server, ServerConfig, Szx, TransmissionParams};
use wirebench_plugin_coap::peers::{Kind, Peer};
use wirebench_plugin_coap::workload::{self, CoapRun};
use wirebench_protocol::{Ctx, Outcome};

fn metric(out: &Outcome, name: &str) -> f64 {
    out.metrics
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, m)| m.value)
        .unwrap_or_else(|| panic!("{name} missing from {:?}", out.metrics))
}

fn run_against(server: SocketAddr, kind: Kind, f: impl FnOnce(&mut CoapRun)) -> Outcome {
    let mut run = CoapRun {
        kind,
        server,
        confirmable: true,
        params: TransmissionParams::default(),
        payload: 64,
        count: 5,
        think: Duration::ZERO,
        stream: false,
        block: Szx::MAX,
        seed: 7,
    };
    f(&mut run);
    let shutdown = AtomicBool::new(false);
    let ctx = Ctx {
        shutdown: &shutdown,
        progress: &|_, _| {},
        stall_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(10),
        mark_stable: &|| {},
        link_budget: &Ctx::no_budget,
    };
    let mut out = Outcome::default();
    workload::run(&run, &ctx, &mut out).expect("the workload runs");
    out
}

fn started(kind: Kind) -> (tempfile::TempDir, Peer) {
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::start(
        kind,
        None,
        dir.path(),
        "127.0.0.1".parse().unwrap(),
        1 << 20,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
    (dir, peer)
}

/// Ping-pong and a block-wise stream against each server: every round echoed intact,
/// every upload acknowledged in its blocks, nothing retransmitted on loopback.
#[test]
fn every_server_echoes_and_takes_uploads() {
    for kind in [Kind::Builtin, Kind::Libcoap, Kind::Aiocoap] {
        let (_dir, peer) = started(kind);
        let out = run_against(peer.addr, kind, |_| {});
        assert_eq!(metric(&out, "messages.received"), 5.0, "{}", kind.name());
        assert_eq!(metric(&out, "messages.corrupt"), 0.0, "{}", kind.name());
        assert!(metric(&out, "rtt.stable") < 0.5, "{}", kind.name());
        assert_eq!(metric(&out, "coap.retransmissions"), 0.0);
        let out = run_against(peer.addr, kind, |r| {
            r.stream = true;
            r.payload = 3000;
            r.count = 3;
            r.block = Szx::at_most(256);
        });
        assert_eq!(metric(&out, "messages.received"), 3.0, "{}", kind.name());
        // 3000 B in 256-byte blocks: 12 exchanges per upload.
        assert_eq!(metric(&out, "coap.exchanges"), 36.0, "{}", kind.name());
        assert!(metric(&out, "throughput.bits_per_s") > 0.0);
        let out = run_against(peer.addr, kind, |r| r.confirmable = false);
        assert_eq!(
            metric(&out, "messages.received"),
            5.0,
            "NON, {}",
            kind.name()
        );
    }
}

/// A CoAP server (the engine's) that takes `delay` over each datagram, on a thread
/// stopped when the flag is set.
fn slow_server(delay: Duration) -> (SocketAddr, Arc<AtomicBool>) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    std::thread::spawn(move || {
        let mut server = Server::new(ServerConfig::default(), 1);
        socket
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let mut buf = [0u8; 2048];
        let t0 = std::time::Instant::now();
        while !stop2.load(Ordering::Relaxed) {
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                std::thread::sleep(delay);
                let now = t0.elapsed().as_nanos() as u64;
                let _ = server.handle_datagram(now, from, &buf[..n]);
                while let Some(t) = server.poll_transmit(now) {
                    socket.send_to(&t.datagram, t.destination).unwrap();
                }
            }
        }
    });
    (addr, stop)
}

/// ACK_TIMEOUT below the server's answer time: each request is sent again though the
/// first copy arrived, and the second ACK shows it; above it, none is.
#[test]
fn an_ack_timeout_below_the_round_trip_retransmits_spuriously() {
    let (addr, stop) = slow_server(Duration::from_millis(250));
    let short = run_against(addr, Kind::Builtin, |r| {
        r.count = 3;
        r.params.ack_timeout_ns = 100_000_000;
    });
    let tuned = run_against(addr, Kind::Builtin, |r| {
        r.count = 3;
        r.params = TransmissionParams::for_round_trip(250_000_000);
        r.params.ack_timeout_ns = 600_000_000;
    });
    stop.store(true, Ordering::Relaxed);
    assert_eq!(metric(&short, "messages.received"), 3.0);
    let (re, sp) = (
        metric(&short, "coap.retransmissions"),
        metric(&short, "coap.spurious"),
    );
    assert!(re >= 3.0 && sp >= 3.0 && sp <= re, "{re} {sp}");
    assert_eq!(metric(&tuned, "coap.retransmissions"), 0.0);
    assert_eq!(metric(&tuned, "coap.spurious"), 0.0);
}

/// A peer that answers every datagram with garbage: the client drops it, retransmits,
/// gives up after MAX_RETRANSMIT and reports the round lost, without panicking.
#[test]
fn garbage_from_the_server_is_survived() {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let junk: [&[u8]; 4] = [b"", &[0xff; 3], &[0x40, 0x45, 0, 0, 0xff], &[0x7f; 40]];
        let mut i = 0;
        while let Ok((_, from)) = socket.recv_from(&mut buf) {
            let _ = socket.send_to(junk[i % junk.len()], from);
            i += 1;
        }
    });
    let out = run_against(addr, Kind::Builtin, |r| {
        r.count = 1;
        r.params.ack_timeout_ns = 50_000_000;
        r.params.max_retransmit = 2;
    });
    assert_eq!(metric(&out, "coap.timeouts"), 1.0);
    assert_eq!(metric(&out, "coap.retransmissions"), 2.0);
    assert_eq!(metric(&out, "messages.lost"), 1.0);
}
