//! What a protocol's client side gives the shared workloads: a way to connect, a call
//! (one request, one reply) and, for protocols with message streams (WebSocket, gRPC
//! streaming), a way to open one.

use crate::server::Summary;
use bytes::Bytes;
use std::future::Future;
use wirebench_protocol::WorkloadError;

/// A connection, open and ready for its first request.
pub struct Connected<C> {
    pub conn: C,
    /// From the TCP connect to the protocol's readiness (HTTP/2 preface and settings,
    /// WebSocket upgrade), nanoseconds.
    pub handshake_ns: u64,
    pub local_port: Option<u16>,
}

/// Opens connections to the case's server.
pub trait Connect {
    type Conn: Call;
    fn connect(&self) -> impl Future<Output = Result<Connected<Self::Conn>, WorkloadError>>;
}

/// One request/response exchange on a connection.
pub trait Call: Sized {
    /// Sends message `seq` carrying `body` and waits for the reply: `body` itself when
    /// `echo`, an empty body otherwise (a one-way message still gets its protocol's
    /// acknowledgement, as an HTTP POST gets its status).
    fn call(
        &mut self,
        seq: u64,
        body: Bytes,
        echo: bool,
    ) -> impl Future<Output = Result<Bytes, WorkloadError>>;

    /// Another handle on the same connection whose requests may overlap this one's
    /// (HTTP/2 streams, gRPC calls); `None` when the protocol carries one request at a
    /// time (HTTP/1.1 without pipelining, SOAP over it).
    fn share(&self) -> Option<Self> {
        None
    }
}

/// What the receiving half of a message stream hands back.
#[derive(Debug)]
pub enum Incoming {
    /// The next echoed message.
    Echo(Bytes),
    /// The server's count after the sender finished; the stream is over.
    Summary(Summary),
}

/// An open message stream: its two halves, the handshake time (ns), the local port.
pub struct Opened<T, R> {
    pub tx: T,
    pub rx: R,
    pub handshake_ns: u64,
    pub local_port: Option<u16>,
}

/// Protocols whose messages flow without a reply each: a stream is opened once and
/// both halves run at once.
pub trait Streams {
    type Tx: MsgTx;
    type Rx: MsgRx;
    /// Opens a stream, one-way or echoed.
    fn open(
        &self,
        echo: bool,
    ) -> impl Future<Output = Result<Opened<Self::Tx, Self::Rx>, WorkloadError>>;
}

pub trait MsgTx {
    fn send(&mut self, body: Bytes) -> impl Future<Output = Result<(), WorkloadError>>;
    /// No more messages: the server answers with its [`Summary`] (or, for a protocol
    /// that ends streams itself, closes its side after the last echo).
    fn finish(&mut self) -> impl Future<Output = Result<(), WorkloadError>>;
}

pub trait MsgRx {
    /// The next message; `None` when the server ended the stream.
    fn recv(&mut self) -> impl Future<Output = Result<Option<Incoming>, WorkloadError>>;
}

/// A stand-in for protocols without message streams.
pub enum NoStreams {}

impl Streams for NoStreams {
    type Tx = NoStreams;
    type Rx = NoStreams;
    async fn open(&self, _echo: bool) -> Result<Opened<Self::Tx, Self::Rx>, WorkloadError> {
        match *self {}
    }
}

impl MsgTx for NoStreams {
    async fn send(&mut self, _body: Bytes) -> Result<(), WorkloadError> {
        match *self {}
    }
    async fn finish(&mut self) -> Result<(), WorkloadError> {
        match *self {}
    }
}

impl MsgRx for NoStreams {
    async fn recv(&mut self) -> Result<Option<Incoming>, WorkloadError> {
        match *self {}
    }
}

/// A plain TCP connection to a server of the case, with `TCP_NODELAY` as the case asks,
/// and its local port (which the lab's flow counters go by).
pub async fn tcp_connect(
    addr: std::net::SocketAddr,
    nodelay: bool,
) -> Result<(tokio::net::TcpStream, Option<u16>), WorkloadError> {
    let s = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|error| WorkloadError::Connect {
            addr: addr.to_string(),
            error,
        })?;
    let _ = s.set_nodelay(nodelay);
    let local_port = s.local_addr().ok().map(|a| a.port());
    Ok((s, local_port))
}
