//! The builtin server of a case: the engine's [`Service`] (echo and sink by ALPN) on a
//! thread of its own, bound in the lab's server host (the thread enters its namespace
//! first, so its socket is there) or on loopback, on the same blocking datagram driver
//! as the client. It is ready once its socket is bound: UDP has no accept, and the
//! client's first Initial waits in the socket's buffer until the loop reads it.
//! Stopped when dropped, after a case, a failed one, an interrupt or a panic.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_engine::blocking::datagram::{DatagramDriver, Udp};
use wirebench_protocol::WorkloadError;
use wirebench_protocol::udp_server::UdpServerThread;
use wirebench_quic_engine::{
    ALPN_ECHO, ALPN_H3, ALPN_SINK, Endpoint, Identity, MAX_DATAGRAM, Service, ServiceStats,
    Transport,
};

/// How often the loop looks at its stop flag when nothing arrives.
const STOP_TICK: Duration = Duration::from_millis(50);

/// The builtin server: its address, start time, and its counts once finished.
pub type Server = UdpServerThread<ServiceStats>;

/// Starts the service for `identity` on `at` (port 0: any; in `netns` if given) with the
/// case's transport settings.
pub fn start(
    netns: Option<&str>,
    at: SocketAddr,
    identity: &Identity,
    transport: &Transport,
    seed: u64,
) -> Result<Server, WorkloadError> {
    let endpoint = Endpoint::server(
        transport.clone(),
        identity,
        &[ALPN_ECHO, ALPN_SINK, ALPN_H3],
        Instant::now(),
        seed,
    )
    .map_err(|e| WorkloadError::Input(format!("QUIC server: {e}")))?;
    UdpServerThread::spawn("wb-quic-server", netns, at, move |s, stop| {
        serve(s, Service::new(endpoint), stop)
    })
    .map_err(|e| WorkloadError::Environment(format!("the builtin QUIC server {e}")))
}

/// The loop: the driver serves the endpoint (datagrams in, transmits out, timers)
/// until `stop`. A socket error ends it: the client then fails on its own timeout,
/// which names the link, and the case's error says so.
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
