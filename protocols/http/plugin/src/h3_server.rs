//! The case's HTTP/3 server for `http.version=3`: the QUIC engine's [`Service`] (ALPN
//! `h3` only) on a thread of its own, bound in the lab's server host or on loopback, on
//! the blocking datagram driver, as the quic protocol's builtin server runs. Its POSTs
//! are the http protocol's (RFC 9114 §4.1): `/echo?seq=N` returns the body, `/sink?seq=N`
//! an empty 200, every body verified against the case's pattern in the case's
//! [`Counters`], as the HTTP/1.1 and HTTP/2 server does.

use bytes::Bytes;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_engine::blocking::datagram::{DatagramDriver, Udp};
use wirebench_protocol::udp_server::UdpServerThread;
use wirebench_protocol::{Hosts, WorkloadError};
use wirebench_quic_engine::{
    ALPN_H3, Endpoint, Identity, MAX_DATAGRAM, Service, ServiceStats, Transport,
};
use wirebench_rpc::http::codec::{Codec, Plain};
use wirebench_rpc::{Behaviour, Counters};

/// How often the loop looks at its stop flag when nothing arrives.
const STOP_TICK: Duration = Duration::from_millis(50);

/// Starts the server (in the lab's server host when there is a lab).
pub fn start(
    lab: Option<Hosts>,
    identity: &Identity,
    transport: &Transport,
    seed: u64,
    b: Behaviour,
    counters: Arc<Counters>,
) -> Result<UdpServerThread<ServiceStats>, WorkloadError> {
    let endpoint = Endpoint::server(
        transport.clone(),
        identity,
        &[ALPN_H3],
        Instant::now(),
        seed,
    )
    .map_err(|e| WorkloadError::Input(format!("HTTP/3 server: {e}")))?;
    let netns = lab.map(|l| l.server().name().to_string());
    let ip: IpAddr = match lab {
        Some(_) => wirebench_protocol::hosts::SERVER_ADDR.into(),
        None => Ipv4Addr::LOCALHOST.into(),
    };
    let post = Box::new(move |path: &[u8], body: Vec<u8>| {
        let path = String::from_utf8_lossy(path);
        match Plain.parse_request(&path, Bytes::from(body)) {
            Ok(p) => {
                match p.seq {
                    Some(seq) => {
                        counters.record(&b, seq, &p.payload);
                    }
                    None => {
                        counters.messages.fetch_add(1, Ordering::Relaxed);
                    }
                }
                let (_, body) = Plain.response(p.seq, p.echo.then_some(p.payload));
                (200, body.to_vec())
            }
            Err(r) => {
                counters.reject(r.why.clone());
                (r.status, Plain.refusal(&r).1.to_vec())
            }
        }
    });
    UdpServerThread::spawn(
        "wb-http3-server",
        netns.as_deref(),
        SocketAddr::new(ip, 0),
        move |s, stop| serve(s, Service::with_post(endpoint, post), stop),
    )
    .map_err(|e| WorkloadError::Environment(format!("the HTTP/3 server {e}")))
}

fn serve(socket: UdpSocket, mut service: Service, stop: &AtomicBool) -> ServiceStats {
    let mut driver = DatagramDriver::new(Udp::new(socket), usize::from(MAX_DATAGRAM) + 1);
    while !stop.load(Ordering::Relaxed) {
        if driver
            .poll_event(&mut service, Instant::now() + STOP_TICK)
            .is_err()
        {
            break;
        }
    }
    service.stats()
}
