//! Our QUIC client on the measurement path: the engine's [`Endpoint`] on the one
//! blocking datagram driver ([`DatagramDriver`] over [`Udp`], GSO and GRO where the
//! kernel has them), one connection to the case's server.
//!
//! The driver fits as it is: quinn-proto's transmit is the shape the driver was made for
//! (a destination, a GSO batch of equal segments, an ECN codepoint), its timer is one
//! deadline, and every event comes back stamped with the time its datagram was read, so
//! a round trip ends when the echo's datagram arrived, not when the workload looked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};
use wirebench_engine::blocking::DriveError;
use wirebench_engine::blocking::datagram::{DatagramDriver, Udp};
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::WorkloadError;
use wirebench_quic_engine::proto::{ConnectionError, ConnectionHandle, ConnectionStats};
use wirebench_quic_engine::{
    ClientTls, Endpoint, Event, Handshake, Identity, MAX_DATAGRAM, Transport,
};

/// The engine on a UDP socket of its own, and the one connection.
pub struct Conn {
    pub engine: Endpoint,
    pub driver: DatagramDriver<Udp>,
    pub handle: ConnectionHandle,
    pub local_port: u16,
}

impl Conn {
    /// Binds a socket (the case's thread is in the client host already) and queues the
    /// first Initial to `server`, which the next poll sends.
    pub fn open(
        transport: Transport,
        identity: &Identity,
        alpn: &[u8],
        server: SocketAddr,
        seed: u64,
        qlog: Option<Box<dyn std::io::Write + Send + Sync>>,
    ) -> Result<Conn, WorkloadError> {
        let any = Source { port: 0, tls: None };
        Self::open_from(transport, identity, alpn, server, seed, qlog, any)
    }

    /// [`Conn::open`] from `from.port` (0: any) with `from.tls`'s configurations, if
    /// given, and so their session tickets: the connection may resume from a ticket
    /// another endpoint received.
    pub fn open_from(
        transport: Transport,
        identity: &Identity,
        alpn: &[u8],
        server: SocketAddr,
        seed: u64,
        qlog: Option<Box<dyn std::io::Write + Send + Sync>>,
        from: Source,
    ) -> Result<Conn, WorkloadError> {
        let (socket, local_port) = bind(server, from.port)?;
        let mut engine = Endpoint::client(transport, Instant::now(), seed)
            .map_err(|e| WorkloadError::Input(format!("QUIC client: {e}")))?;
        if let Some(tls) = from.tls {
            engine.share_client_tls(tls);
        }
        let handle = engine
            .connect(
                monotonic_ns(),
                server,
                &identity.name,
                &identity.cert,
                alpn,
                qlog,
            )
            .map_err(|e| WorkloadError::Input(format!("QUIC client: {e}")))?;
        Ok(Conn {
            engine,
            driver: DatagramDriver::new(Udp::new(socket), usize::from(MAX_DATAGRAM) + 1),
            handle,
            local_port,
        })
    }

    /// Opens the endpoint's next connection to `server`, which the methods then act on
    /// (the one before should be closed). A ticket from an earlier connection resumes it
    /// (RFC 8446 §2.2); true if it may send 0-RTT data at once (RFC 9001 §4.6).
    ///
    /// Each connection gets a socket (a client port) of its own, as a TCP connection
    /// does: the emulated link draws a path per client port (`link.paths`), and a
    /// datagram of the closed connection still on its way cannot reach this one. The
    /// endpoint, and with it the session tickets, stays.
    /// `port`: the client port to send from (0: any).
    pub fn reconnect(
        &mut self,
        identity: &Identity,
        alpn: &[u8],
        server: SocketAddr,
        port: u16,
    ) -> Result<bool, WorkloadError> {
        let (socket, local_port) = bind(server, port)?;
        self.driver.io = Udp::new(socket);
        self.local_port = local_port;
        self.handle = self
            .engine
            .connect(
                monotonic_ns(),
                server,
                &identity.name,
                &identity.cert,
                alpn,
                None,
            )
            .map_err(|e| WorkloadError::Input(format!("QUIC client: {e}")))?;
        Ok(self.quic()?.has_0rtt())
    }

    /// The connection's quinn-proto state, to open, write and read streams.
    pub fn quic(&mut self) -> Result<&mut wirebench_quic_engine::proto::Connection, WorkloadError> {
        self.engine
            .connection(self.handle)
            .ok_or(WorkloadError::Closed {
                during: "the QUIC connection",
            })
    }

    pub fn handshake(&self) -> Handshake {
        self.engine
            .conn(self.handle)
            .map(|c| c.handshake)
            .unwrap_or_default()
    }

    pub fn stats(&self) -> Option<ConnectionStats> {
        self.engine.conn(self.handle).map(|c| c.conn.stats())
    }

    /// The next event of our connection with the time its datagram was read, or `None`
    /// at `deadline`. A lost connection is an error naming why.
    pub fn poll(
        &mut self,
        deadline: Instant,
    ) -> Result<Option<(u64, wirebench_quic_engine::proto::Event)>, WorkloadError> {
        let e = self
            .driver
            .poll_event(&mut self.engine, deadline)
            .map_err(|e| match e {
                DriveError::Io { write, error } => WorkloadError::Io {
                    during: if write {
                        "sending a datagram"
                    } else {
                        "receiving a datagram"
                    },
                    error,
                },
                DriveError::Engine(never) => match never {},
                DriveError::Eof(_) => WorkloadError::Closed {
                    during: "receiving a datagram",
                },
            })?;
        match e {
            Some((at, Event::Conn(h, ev))) if h == self.handle => match ev {
                wirebench_quic_engine::proto::Event::ConnectionLost { reason } => Err(lost(reason)),
                ev => Ok(Some((at, ev))),
            },
            _ => Ok(None),
        }
    }

    /// Closes the connection (RFC 9000 §10.2) and sends the CONNECTION_CLOSE, so the
    /// server's side ends now rather than at its idle timeout.
    pub fn close(&mut self) {
        self.close_with(0);
    }

    /// [`Conn::close`] for an HTTP/3 connection: H3_NO_ERROR (RFC 9114 §8.1).
    pub fn close_h3(&mut self) {
        self.close_with(wirebench_quic_engine::h3::H3_NO_ERROR);
    }

    fn close_with(&mut self, code: u32) {
        self.engine
            .close_with(monotonic_ns(), self.handle, code, b"done");
        let _ = self.driver.flush(&mut self.engine);
        // The close may be paced behind data still queued: a short linger sends it.
        let _ = self.poll(Instant::now() + Duration::from_millis(5));
    }
}

/// Where a connection leaves from: a client port, and TLS configurations to share.
pub struct Source {
    /// 0: one the kernel picks.
    pub port: u16,
    pub tls: Option<ClientTls>,
}

/// A UDP socket on `port` (0: an ephemeral one) of the family of `server` (the case's
/// thread is in the client host already), and its port.
fn bind(server: SocketAddr, port: u16) -> Result<(UdpSocket, u16), WorkloadError> {
    let any: IpAddr = match server {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket = UdpSocket::bind((any, port)).map_err(|error| WorkloadError::Io {
        during: "binding the client's UDP socket",
        error,
    })?;
    let port = socket.local_addr().map(|a| a.port()).unwrap_or(0);
    Ok((socket, port))
}

/// A lost connection as a case's error: the peer's close or a protocol error is the
/// peer's fault, an idle timeout the link's.
fn lost(reason: ConnectionError) -> WorkloadError {
    match reason {
        ConnectionError::TimedOut => WorkloadError::Link(
            "the QUIC connection timed out: nothing arrived within the idle timeout (RFC 9000 §10.1)"
                .into(),
        ),
        other => WorkloadError::Peer(format!("the QUIC connection was lost: {other}")),
    }
}
