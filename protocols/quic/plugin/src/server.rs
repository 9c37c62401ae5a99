//! The builtin server of a case: the engine's [`Service`] (echo and sink by ALPN) on a
//! thread of its own, bound in the lab's server host (the thread enters its namespace
//! first, so its socket is there) or on loopback, on the same blocking datagram driver
//! as the client. It is ready once its socket is bound: UDP has no accept, and the
//! client's first Initial waits in the socket's buffer until the loop reads it.
//! Stopped when dropped, after a case, a failed one, an interrupt or a panic.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wirebench_engine::blocking::datagram::{DatagramDriver, Udp};
use wirebench_protocol::WorkloadError;
use wirebench_quic_engine::{
    ALPN_ECHO, ALPN_H3, ALPN_SINK, Endpoint, Identity, MAX_DATAGRAM, Service, ServiceStats,
    Transport,
};

/// How often the loop looks at its stop flag when nothing arrives.
const STOP_TICK: Duration = Duration::from_millis(50);

pub struct Server {
    pub addr: SocketAddr,
    /// From the thread's spawn to its socket bound.
    pub start_time: Duration,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<ServiceStats>>,
}

impl Server {
    /// Starts the service for `identity` on `at` (port 0: any; in `netns` if given) with
    /// the case's transport settings.
    pub fn start(
        netns: Option<&str>,
        at: SocketAddr,
        identity: &Identity,
        transport: &Transport,
        seed: u64,
    ) -> Result<Server, WorkloadError> {
        let t = Instant::now();
        let endpoint = Endpoint::server(
            transport.clone(),
            identity,
            &[ALPN_ECHO, ALPN_SINK, ALPN_H3],
            Instant::now(),
            seed,
        )
        .map_err(|e| WorkloadError::Input(format!("QUIC server: {e}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let netns = netns.map(str::to_owned);
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wb-quic-server".into())
            .spawn(move || {
                let socket = netns
                    .as_deref()
                    .map_or(Ok(()), |ns| {
                        wirebench_protocol::hosts::enter(ns).map_err(|e| e.to_string())
                    })
                    .and_then(|()| UdpSocket::bind(at).map_err(|e| e.to_string()));
                match socket {
                    Ok(s) => {
                        let _ = tx.send(s.local_addr().map_err(|e| e.to_string()));
                        serve(s, Service::new(endpoint), &stop2)
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        ServiceStats::default()
                    }
                }
            })
            .map_err(|error| WorkloadError::Io {
                during: "starting the QUIC server's thread",
                error,
            })?;
        let addr = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(|e| {
                WorkloadError::Environment(format!(
                    "the builtin QUIC server could not bind {at}: {e}"
                ))
            })?;
        Ok(Server {
            addr,
            start_time: t.elapsed(),
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the loop and returns what the service did.
    pub fn finish(mut self) -> Option<ServiceStats> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take()?.join().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
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
