//! A QUIC endpoint (RFC 9000 §5: connections demultiplexed by connection ID on one
//! socket) as a [`DatagramEngine`]: quinn-proto's `Endpoint` and its `Connection`s, fed
//! one datagram at a time, polled for transmits, timers and events.
//!
//! quinn-proto keeps time as `std::time::Instant`; the engine shape keeps it as
//! nanoseconds the driver read. An [`Endpoint`] is given an `epoch`, the instant that
//! stands for 0 ns, and hands quinn `epoch + now`: only differences matter to either, so
//! virtual time (a test's 0, 1, 2 ... ns) and CLOCK_MONOTONIC (the blocking driver's)
//! both work, and no clock is read here.
//!
//! Beside quinn's own events the endpoint keeps, per connection, the times of its
//! handshake (RFC 9001 §4.1.1 complete, §4.1.2 confirmed: a client is confirmed when the
//! HANDSHAKE_DONE frame arrives, a server when its handshake completes), which quinn does
//! not report as times.

use crate::config::{ConfigError, Transport};
use crate::tls::{self, Identity, TlsError};
use bytes::BytesMut;
use quinn_proto::crypto::rustls::{HandshakeData, QuicClientConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, EcnCodepoint, EndpointConfig,
    QlogConfig, ServerConfig,
};
use rustls::pki_types::CertificateDer;
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirebench_engine::{DatagramEngine, Ecn, Received, Transmit};

/// Building an endpoint or a connection failed: our configuration, not the peer.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("cannot connect: {0}")]
    Connect(#[from] quinn_proto::ConnectError),
}

/// What the endpoint tells its driver.
#[derive(Debug)]
pub enum Event {
    /// A server accepted a connection from a client's first Initial.
    Accepted(ConnectionHandle),
    /// A server answered a client's first Initial with a Retry (RFC 9000 §8.1.2): the
    /// client comes back with the token, and its connection is accepted then.
    Retried,
    /// One of quinn's connection events (connected, stream readable, lost, ...).
    Conn(ConnectionHandle, quinn_proto::Event),
}

/// A connection's handshake, in the driver's nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handshake {
    /// The client's first Initial was queued (client), or arrived (server).
    pub started: u64,
    /// The handshake completed (RFC 9001 §4.1.1).
    pub completed: Option<u64>,
    /// The handshake was confirmed (RFC 9001 §4.1.2).
    pub confirmed: Option<u64>,
}

/// One connection and its handshake times.
pub struct Conn {
    pub conn: Connection,
    pub handshake: Handshake,
    is_client: bool,
}

/// A QUIC endpoint on one UDP socket; a client, a server, or both.
pub struct Endpoint {
    inner: quinn_proto::Endpoint,
    conns: BTreeMap<ConnectionHandle, Conn>,
    transport: Transport,
    server: Option<Arc<ServerConfig>>,
    epoch: Instant,
    /// Datagrams the endpoint answered itself (version negotiation, a refusal, a
    /// stateless reset), before any connection's.
    responses: VecDeque<(Transmit, Vec<u8>)>,
    events: VecDeque<Event>,
    timeout: Option<u64>,
    /// The connection polled first for the next transmit, so that none starves.
    turn: usize,
    /// Where a datagram comes from when the driver names no source (the harness).
    peer: Option<SocketAddr>,
    scratch: Vec<u8>,
    /// The TLS configurations of this endpoint's connections by certificate and ALPN,
    /// made once: each keeps its session tickets, and a ticket resumes a session only
    /// through the configuration that verified its server (rustls checks).
    clients: ClientTls,
}

/// An endpoint's TLS client configurations, each with its session-ticket store, to hand
/// to other endpoints (on other threads): their connections then resume from tickets
/// any of them received, as the connections of one browser do.
#[derive(Clone, Default)]
pub struct ClientTls(Vec<(CertificateDer<'static>, Vec<u8>, Arc<QuicClientConfig>)>);

impl ClientTls {
    /// A configuration for servers of `cert` offering `alpn`, with 0-RTT if
    /// `early_data`, made before any endpoint so that every endpoint given it shares it.
    pub fn new(
        cert: &CertificateDer<'static>,
        alpn: &[u8],
        early_data: bool,
    ) -> Result<Self, EndpointError> {
        let t = Arc::new(tls::client(cert, alpn, early_data)?);
        Ok(ClientTls(vec![(cert.clone(), alpn.to_vec(), t)]))
    }
}

fn ecn_in(e: Option<Ecn>) -> Option<EcnCodepoint> {
    e.map(|e| match e {
        Ecn::Ect0 => EcnCodepoint::Ect0,
        Ecn::Ect1 => EcnCodepoint::Ect1,
        Ecn::Ce => EcnCodepoint::Ce,
    })
}

fn ecn_out(e: Option<EcnCodepoint>) -> Option<Ecn> {
    e.map(|e| match e {
        EcnCodepoint::Ect0 => Ecn::Ect0,
        EcnCodepoint::Ect1 => Ecn::Ect1,
        EcnCodepoint::Ce => Ecn::Ce,
    })
}

fn transmit(t: &quinn_proto::Transmit) -> Transmit {
    Transmit {
        destination: Some(t.destination),
        ecn: ecn_out(t.ecn),
        size: t.size,
        segment_size: t.segment_size,
    }
}

impl Endpoint {
    /// An endpoint without a server side; `seed` seeds quinn's own randomness
    /// (connection IDs, packet number skips), not TLS's.
    pub fn client(transport: Transport, epoch: Instant, seed: u64) -> Result<Self, EndpointError> {
        Self::new(transport, None, epoch, seed)
    }

    /// An endpoint that accepts connections for `identity` with any of `alpns`.
    pub fn server(
        transport: Transport,
        identity: &Identity,
        alpns: &[&[u8]],
        epoch: Instant,
        seed: u64,
    ) -> Result<Self, EndpointError> {
        let crypto = tls::server(identity, alpns, transport.zero_rtt)?;
        let mut server = ServerConfig::with_crypto(Arc::new(crypto));
        server.transport_config(Arc::new(transport.config()?));
        Self::new(transport, Some(Arc::new(server)), epoch, seed)
    }

    fn new(
        transport: Transport,
        server: Option<Arc<ServerConfig>>,
        epoch: Instant,
        seed: u64,
    ) -> Result<Self, EndpointError> {
        transport.validate()?;
        let mut seed32 = [0u8; 32];
        seed32[..8].copy_from_slice(&seed.to_le_bytes());
        let mut config = EndpointConfig::default();
        config.rng_seed(Some(seed32));
        // The sockets do not set Don't Fragment: no path MTU discovery (RFC 8899).
        let inner = quinn_proto::Endpoint::new(Arc::new(config), server.clone(), false, None);
        Ok(Endpoint {
            inner,
            conns: BTreeMap::new(),
            transport,
            server,
            epoch,
            responses: VecDeque::new(),
            events: VecDeque::new(),
            timeout: None,
            turn: 0,
            peer: None,
            scratch: Vec::new(),
            clients: ClientTls::default(),
        })
    }

    /// This endpoint's TLS client configurations, to share with others.
    pub fn client_tls(&self) -> ClientTls {
        self.clients.clone()
    }

    /// Makes this endpoint's connections use `tls`'s configurations, and with them its
    /// session tickets, where it has one for the certificate and ALPN.
    pub fn share_client_tls(&mut self, tls: ClientTls) {
        self.clients = tls;
    }

    /// Takes datagrams without a source (the harness's) as coming from `addr`.
    pub fn assume_peer(&mut self, addr: SocketAddr) {
        self.peer = Some(addr);
    }

    fn at(&self, now: u64) -> Instant {
        self.epoch + Duration::from_nanos(now)
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_nanos() as u64
    }

    /// Opens a connection to `remote`, verifying `server_name` against `cert` alone and
    /// offering `alpn`; its qlog goes to `qlog` if given. The first Initial goes out at
    /// the next transmit.
    pub fn connect(
        &mut self,
        now: u64,
        remote: SocketAddr,
        server_name: &str,
        cert: &rustls::pki_types::CertificateDer<'static>,
        alpn: &[u8],
        qlog: Option<Box<dyn Write + Send + Sync>>,
    ) -> Result<ConnectionHandle, EndpointError> {
        let known = self
            .clients
            .0
            .iter()
            .find(|(c, a, _)| c == cert && a == alpn)
            .map(|(_, _, t)| t.clone());
        let crypto = match known {
            Some(t) => t,
            None => {
                let t = Arc::new(tls::client(cert, alpn, self.transport.zero_rtt)?);
                self.clients
                    .0
                    .push((cert.clone(), alpn.to_vec(), t.clone()));
                t
            }
        };
        let mut config = ClientConfig::new(crypto);
        let mut t = self.transport.config()?;
        if let Some(w) = qlog {
            let mut q = QlogConfig::default();
            q.writer(w)
                .title(Some(format!("wirebench quic client to {remote}")))
                .start_time(self.at(now));
            t.qlog_stream(q.into_stream());
        }
        config.transport_config(Arc::new(t));
        self.peer.get_or_insert(remote);
        let (h, conn) = self
            .inner
            .connect(self.at(now), config, remote, server_name)?;
        let handshake = Handshake {
            started: now,
            ..Handshake::default()
        };
        self.conns.insert(
            h,
            Conn {
                conn,
                handshake,
                is_client: true,
            },
        );
        self.refresh_timeout();
        Ok(h)
    }

    /// A connection by handle, to open, write and read its streams.
    pub fn connection(&mut self, h: ConnectionHandle) -> Option<&mut Connection> {
        self.conns.get_mut(&h).map(|c| &mut c.conn)
    }

    /// A connection with its handshake times.
    pub fn conn(&self, h: ConnectionHandle) -> Option<&Conn> {
        self.conns.get(&h)
    }

    /// The handles of every connection, drained ones included (their stats remain).
    pub fn handles(&self) -> impl Iterator<Item = ConnectionHandle> + '_ {
        self.conns.keys().copied()
    }

    /// The ALPN a connection agreed on, once its handshake data is ready.
    pub fn alpn(&self, h: ConnectionHandle) -> Option<Vec<u8>> {
        let data = self.conns.get(&h)?.conn.crypto_session().handshake_data()?;
        data.downcast::<HandshakeData>().ok()?.protocol
    }

    /// Closes a connection with application error code 0 (RFC 9000 §10.2).
    pub fn close(&mut self, now: u64, h: ConnectionHandle, reason: &[u8]) {
        self.close_with(now, h, 0, reason);
    }

    /// Closes a connection with application error `code`: HTTP/3 has its own
    /// (H3_NO_ERROR is 0x100, RFC 9114 §8.1).
    pub fn close_with(&mut self, now: u64, h: ConnectionHandle, code: u32, reason: &[u8]) {
        let at = self.at(now);
        if let Some(c) = self.conns.get_mut(&h) {
            c.conn
                .close(at, code.into(), bytes::Bytes::copy_from_slice(reason));
        }
        self.service(now, h);
        self.refresh_timeout();
    }

    /// Hands a connection's endpoint events to the endpoint and the answers back, then
    /// queues its application events, noting handshake times on the way.
    fn service(&mut self, now: u64, h: ConnectionHandle) {
        let Some(c) = self.conns.get_mut(&h) else {
            return;
        };
        let mut drained = false;
        while let Some(ev) = c.conn.poll_endpoint_events() {
            drained |= ev.is_drained();
            if let Some(back) = self.inner.handle_event(h, ev) {
                c.conn.handle_event(back);
            }
        }
        if c.handshake.confirmed.is_none()
            && c.is_client
            && c.conn.stats().frame_rx.handshake_done > 0
        {
            c.handshake.confirmed = Some(now);
        }
        while let Some(e) = c.conn.poll() {
            if matches!(e, quinn_proto::Event::Connected) {
                c.handshake.completed.get_or_insert(now);
                if !c.is_client {
                    c.handshake.confirmed.get_or_insert(now);
                }
            }
            self.events.push_back(Event::Conn(h, e));
        }
        if drained {
            // quinn frees the handle, and may give it to the next connection.
            self.conns.remove(&h);
        }
    }

    fn refresh_timeout(&mut self) {
        let mut next: Option<Instant> = None;
        for c in self.conns.values_mut() {
            if let Some(t) = c.conn.poll_timeout() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        self.timeout = next.map(|t| self.ns(t));
    }

    fn accept(&mut self, now: u64, incoming: quinn_proto::Incoming) {
        self.scratch.clear();
        if self.transport.retry && !incoming.remote_address_validated() {
            // Not validated: quinn guarantees a Retry is allowed (`may_retry`).
            if let Ok(t) = self.inner.retry(incoming, &mut self.scratch) {
                let bytes = self.scratch[..t.size].to_vec();
                self.responses.push_back((transmit(&t), bytes));
                self.events.push_back(Event::Retried);
            }
            return;
        }
        let at = self.at(now);
        match self.inner.accept(incoming, at, &mut self.scratch, None) {
            Ok((h, conn)) => {
                let handshake = Handshake {
                    started: now,
                    ..Handshake::default()
                };
                self.conns.insert(
                    h,
                    Conn {
                        conn,
                        handshake,
                        is_client: false,
                    },
                );
                self.events.push_back(Event::Accepted(h));
                self.service(now, h);
            }
            Err(e) => {
                if let Some(t) = e.response {
                    let bytes = self.scratch[..t.size].to_vec();
                    self.responses.push_back((transmit(&t), bytes));
                }
            }
        }
    }
}

impl DatagramEngine for Endpoint {
    type Event = Event;
    /// A datagram never fails the endpoint: what quinn cannot use it drops (RFC 9000
    /// §5.2 and §12.2 ask for exactly that), and a broken connection is an event.
    type Error = std::convert::Infallible;

    fn handle_datagram(&mut self, now: u64, d: Received<'_>) -> Result<(), Self::Error> {
        let Some(from) = d.from.or(self.peer) else {
            return Ok(());
        };
        self.scratch.clear();
        let at = self.at(now);
        let event = self.inner.handle(
            at,
            from,
            None,
            ecn_in(d.ecn),
            BytesMut::from(d.data),
            &mut self.scratch,
        );
        match event {
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some(c) = self.conns.get_mut(&h) {
                    c.conn.handle_event(ev);
                }
                self.service(now, h);
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                if self.server.is_some() {
                    self.accept(now, incoming);
                } else {
                    self.inner.ignore(incoming);
                }
            }
            Some(DatagramEvent::Response(t)) => {
                let bytes = self.scratch[..t.size].to_vec();
                self.responses.push_back((transmit(&t), bytes));
            }
            None => {}
        }
        self.refresh_timeout();
        Ok(())
    }

    fn poll_transmit(
        &mut self,
        now: u64,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        if let Some((t, bytes)) = self.responses.pop_front() {
            buf.extend_from_slice(&bytes);
            return Some(t);
        }
        let handles: Vec<ConnectionHandle> = self.conns.keys().copied().collect();
        let at = self.at(now);
        // A GSO send is one IP packet's worth at most (udp(7): EMSGSIZE beyond 64 KiB),
        // whatever segment count the socket allows.
        let fit = (usize::from(u16::MAX) - 48) / usize::from(self.transport.max_datagram);
        let max_datagrams = max_datagrams.min(fit).max(1);
        for i in 0..handles.len() {
            let h = handles[(self.turn + i) % handles.len()];
            let Some(c) = self.conns.get_mut(&h) else {
                continue;
            };
            // quinn writes from the start of the buffer it is given.
            self.scratch.clear();
            let t = c
                .conn
                .poll_transmit(at, max_datagrams.max(1), &mut self.scratch);
            self.service(now, h);
            if let Some(t) = t {
                self.turn = (self.turn + i + 1) % handles.len();
                buf.extend_from_slice(&self.scratch[..t.size]);
                return Some(transmit(&t));
            }
        }
        self.refresh_timeout();
        None
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.timeout
    }

    fn handle_timeout(&mut self, now: u64) -> Result<(), Self::Error> {
        let at = self.at(now);
        let due: Vec<ConnectionHandle> = self
            .conns
            .iter_mut()
            .filter_map(|(h, c)| c.conn.poll_timeout().is_some_and(|t| t <= at).then_some(*h))
            .collect();
        for h in due {
            if let Some(c) = self.conns.get_mut(&h) {
                c.conn.handle_timeout(at);
            }
            self.service(now, h);
        }
        self.refresh_timeout();
        Ok(())
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
