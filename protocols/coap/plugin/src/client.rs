//! Our CoAP client on the measurement path: the engine's [`Client`] as a
//! [`DatagramEngine`], so that the one blocking datagram driver
//! ([`DatagramDriver`] over [`Udp`]) runs it like every other client's engine.
//!
//! The mapping is one to one: the engine's transmit is one datagram with its destination
//! (one datagram is one CoAP message, RFC 7252 §3), never a GSO batch, since a CoAP
//! client with NSTART 1 (§4.7) has one message in flight; a datagram received is handed
//! over with its source, which the engine matches against the exchange's server (§4.4,
//! §5.3.2). A datagram the engine drops (malformed, or matching nothing) is counted in its
//! [`wirebench_coap_engine::Stats`] and does not fail the case: a peer's bad data never
//! stops the driver, as on a real network it would be noise.

use std::convert::Infallible;
use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;
use wirebench_coap_engine::{Client, ClientConfig, Event, MAX_DATAGRAM, RequestError};
use wirebench_engine::blocking::datagram::{DatagramDriver, Udp};
use wirebench_engine::{DatagramEngine, Received, Transmit};
use wirebench_protocol::WorkloadError;

/// The client endpoint and the server it talks to.
pub struct CoapEngine {
    pub client: Client,
    /// The source of a datagram whose receive named none (never, on a UDP socket).
    server: SocketAddr,
}

impl CoapEngine {
    pub fn new(config: ClientConfig, seed: u64, server: SocketAddr) -> Result<Self, RequestError> {
        Ok(CoapEngine {
            client: Client::new(config, seed)?,
            server,
        })
    }
}

impl DatagramEngine for CoapEngine {
    type Event = Event;
    type Error = Infallible;

    fn handle_datagram(&mut self, now: u64, d: Received<'_>) -> Result<(), Infallible> {
        // Dropped datagrams are counted by the engine (see the module docs).
        let _ = self
            .client
            .handle_datagram(now, d.from.unwrap_or(self.server), d.data);
        Ok(())
    }

    fn poll_transmit(
        &mut self,
        now: u64,
        _max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        let t = self.client.poll_transmit(now)?;
        buf.extend_from_slice(&t.datagram);
        Some(Transmit {
            destination: Some(t.destination),
            ecn: None,
            size: t.datagram.len(),
            segment_size: None,
        })
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.client.poll_timeout()
    }

    fn handle_timeout(&mut self, now: u64) -> Result<(), Infallible> {
        self.client.handle_timeout(now);
        Ok(())
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.client.poll_event()
    }
}

/// The engine on a UDP socket of its own.
pub struct Conn {
    pub engine: CoapEngine,
    pub driver: DatagramDriver<Udp>,
    pub local_port: u16,
}

impl Conn {
    /// A socket bound to any address (the case's thread is in the client host already)
    /// and the engine configured by `config`.
    pub fn open(
        config: ClientConfig,
        seed: u64,
        server: SocketAddr,
    ) -> Result<Conn, WorkloadError> {
        let any: std::net::IpAddr = match server {
            SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
        };
        let socket = UdpSocket::bind((any, 0)).map_err(|error| WorkloadError::Io {
            during: "binding the client's UDP socket",
            error,
        })?;
        let local_port = socket.local_addr().map(|a| a.port()).unwrap_or(0);
        let engine = CoapEngine::new(config, seed, server)
            .map_err(|e| WorkloadError::Input(format!("CoAP client: {e}")))?;
        Ok(Conn {
            engine,
            // Room for the largest datagram and one byte: a longer one is an error, not
            // a silently cut message.
            driver: DatagramDriver::new(Udp::new(socket), MAX_DATAGRAM + 1),
            local_port,
        })
    }

    /// The next event with the time its datagram was received, or `None` at `deadline`.
    pub fn poll(&mut self, deadline: Instant) -> Result<Option<(u64, Event)>, WorkloadError> {
        self.driver
            .poll_event(&mut self.engine, deadline)
            .map_err(|e| match e {
                wirebench_engine::blocking::DriveError::Io { write, error } => WorkloadError::Io {
                    during: if write {
                        "sending a datagram"
                    } else {
                        "receiving a datagram"
                    },
                    error,
                },
                wirebench_engine::blocking::DriveError::Engine(never) => match never {},
                wirebench_engine::blocking::DriveError::Eof(_) => WorkloadError::Closed {
                    during: "receiving a datagram",
                },
            })
    }
}
