//! `http.version=3`: the http protocol's POSTs in HTTP/3 (RFC 9114) over QUIC (RFC 9000),
//! our QUIC engine (`wirebench_quic_engine`, quinn-proto) under the shared request/
//! response workloads of `wirebench_rpc`, so that ping-pong, open loop and stream mean
//! what they mean in HTTP/1.1 and HTTP/2.
//!
//! - A connection is one QUIC connection (ALPN `h3`, TLS 1.3 to a certificate made for
//!   the case, which the client alone trusts); it is ready when the handshake completes
//!   (RFC 9001 §4.1.1), when our control stream with SETTINGS is opened (RFC 9114
//!   §6.2.1). The server's control and QPACK streams are read and discarded.
//! - A request is `POST /echo?seq=N` (or `/sink`) on a new bidirectional stream (§4.1):
//!   HEADERS (QPACK, static table and literals only: RFC 9204 §3.2.3), one DATA frame with
//!   the body, FIN. The response is HEADERS with the status, DATA, FIN.
//! - Requests multiplex as HTTP/2's do: [`H3Conn::share`] gives another handle on the
//!   same connection, each request on its own stream, up to the server's stream credit
//!   (1024, RFC 9000 §4.6; a request waits for credit beyond it).
//!
//! The connection's I/O runs as HTTP/2's does in h2: a task on the case's runtime (the
//! [`drive`] loop: datagrams in as the socket becomes readable, the engine's timer,
//! datagrams out), the engine shared with the requests, which write their own request
//! and flush it at once, so a request leaves without waiting for the task. The socket is
//! the blocking datagram driver's [`Udp`] set non-blocking (GSO and GRO where the kernel
//! has them); a send the socket's buffer refuses is kept and sent when it is writable.

use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::Interest;
use tokio::sync::{Notify, oneshot};
use wirebench_engine::blocking::datagram::{DatagramIo, Udp};
use wirebench_engine::{DatagramEngine, Received, Transmit};
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::WorkloadError;
use wirebench_quic_engine::h3::{self, FrameReader, H3_NO_ERROR, Part};
use wirebench_quic_engine::proto::{
    ConnectionError, ConnectionHandle, Dir, ReadError, StreamEvent, StreamId, WriteError,
};
use wirebench_quic_engine::{ALPN_H3, Endpoint, Event, Identity, MAX_DATAGRAM, Transport};
use wirebench_rpc::http::codec::{Codec, Plain};
use wirebench_rpc::{Call, Connect, Connected};

/// The name the case's certificate is made for, and every request's `:authority`.
pub const SERVER_NAME: &str = "http3.wirebench.test";

/// Connects to the case's HTTP/3 server.
pub struct H3Client {
    pub addr: SocketAddr,
    pub identity: Arc<Identity>,
    pub transport: Transport,
    /// Seeds each connection's QUIC randomness (connection IDs), one apart.
    pub seed: u64,
    pub max_payload: usize,
    pub next: AtomicU64,
}

/// A handle on one HTTP/3 connection; the connection closes (H3_NO_ERROR, RFC 9114
/// §8.1) when the last handle is dropped.
pub struct H3Conn {
    link: Arc<Link>,
}

struct Link {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the driver task: a request was queued or the connection closed.
    wake: Notify,
}

/// Why the connection is gone, kept to fail every later request alike.
#[derive(Debug, Clone)]
struct Lost {
    link: bool,
    why: String,
}

impl Lost {
    fn error(&self) -> WorkloadError {
        if self.link {
            WorkloadError::Link(self.why.clone())
        } else {
            WorkloadError::Peer(self.why.clone())
        }
    }
}

type Reply = oneshot::Sender<Result<(u16, Bytes), WorkloadError>>;

/// A request not yet on a stream (waiting for the server's stream credit).
struct Queued {
    head: Vec<u8>,
    body: Bytes,
    reply: Reply,
}

/// A request on its stream, and its response as far as it came.
struct Exchange {
    head: Vec<u8>,
    body: Bytes,
    /// Request bytes written (head, then body).
    written: usize,
    finished: bool,
    reader: FrameReader,
    status: Option<u16>,
    data: Vec<u8>,
    reply: Option<Reply>,
}

struct State {
    engine: Endpoint,
    udp: Udp,
    handle: ConnectionHandle,
    queued: VecDeque<Queued>,
    streams: HashMap<StreamId, Exchange>,
    uni: Vec<StreamId>,
    connected: Option<oneshot::Sender<Result<(), WorkloadError>>>,
    lost: Option<Lost>,
    closing: bool,
    /// A transmit the socket's buffer refused, sent first when it is writable.
    unsent: Option<(Transmit, Vec<u8>)>,
    out: Vec<u8>,
    buf: Vec<u8>,
    max_body: usize,
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(|p| p.into_inner())
}

fn lost(reason: &ConnectionError) -> Lost {
    match reason {
        ConnectionError::TimedOut => Lost {
            link: true,
            why: "the QUIC connection timed out: nothing arrived within the idle timeout (RFC 9000 §10.1)"
                .into(),
        },
        other => Lost {
            link: false,
            why: format!("the HTTP/3 connection was lost: {other}"),
        },
    }
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

impl State {
    fn fail(&mut self, l: Lost) {
        if let Some(c) = self.connected.take() {
            let _ = c.send(Err(l.error()));
        }
        for q in self.queued.drain(..) {
            let _ = q.reply.send(Err(l.error()));
        }
        for (_, x) in self.streams.drain() {
            if let Some(r) = x.reply {
                let _ = r.send(Err(l.error()));
            }
        }
        self.lost.get_or_insert(l);
    }

    /// Sends what the engine has queued, the refused transmit first.
    fn flush(&mut self) {
        if let Some((t, bytes)) = self.unsent.take() {
            match self.udp.send(&t, &bytes) {
                Ok(()) => {}
                Err(e) if would_block(&e) => {
                    self.unsent = Some((t, bytes));
                    return;
                }
                Err(e) => return self.fail(io_lost("sending a datagram", &e)),
            }
        }
        loop {
            self.out.clear();
            let max = self.udp.max_datagrams();
            let Some(t) = self
                .engine
                .poll_transmit(monotonic_ns(), max, &mut self.out)
            else {
                return;
            };
            match self.udp.send(&t, &self.out) {
                Ok(()) => {}
                Err(e) if would_block(&e) => {
                    self.unsent = Some((t, std::mem::take(&mut self.out)));
                    return;
                }
                Err(e) => return self.fail(io_lost("sending a datagram", &e)),
            }
        }
    }

    /// Reads every datagram the socket has into the engine.
    fn receive(&mut self) {
        loop {
            match self.udp.recv(&mut self.buf, Duration::ZERO) {
                Ok(r) => {
                    let now = monotonic_ns();
                    for data in r.datagrams(&self.buf) {
                        let d = Received {
                            from: r.from,
                            ecn: r.ecn,
                            data,
                        };
                        let Ok(()) = self.engine.handle_datagram(now, d);
                    }
                }
                Err(e) if would_block(&e) => return,
                Err(e) => return self.fail(io_lost("receiving a datagram", &e)),
            }
        }
    }

    /// Serves the timer, the engine's events and the requests' streams, then sends.
    fn step(&mut self) {
        let now = monotonic_ns();
        if self.engine.poll_timeout().is_some_and(|t| t <= now) {
            let Ok(()) = self.engine.handle_timeout(now);
        }
        self.events();
        self.start_queued();
        self.flush();
        // Sending may have produced events (a lost connection, streams freed).
        self.events();
    }

    fn events(&mut self) {
        while let Some(e) = self.engine.poll_event() {
            let Event::Conn(h, ev) = e else { continue };
            if h != self.handle {
                continue;
            }
            match ev {
                wirebench_quic_engine::proto::Event::Connected => self.open_control(),
                wirebench_quic_engine::proto::Event::ConnectionLost { reason } => {
                    self.fail(lost(&reason));
                }
                wirebench_quic_engine::proto::Event::Stream(s) => match s {
                    StreamEvent::Opened { dir: Dir::Uni } | StreamEvent::Readable { .. } => {
                        self.drain_uni();
                        if let StreamEvent::Readable { id } = s {
                            self.read(id);
                        }
                    }
                    StreamEvent::Writable { id } => self.write(id),
                    StreamEvent::Available { dir: Dir::Bi } => self.start_queued(),
                    StreamEvent::Stopped { id, error_code } => {
                        if let Some(r) = self.streams.remove(&id).and_then(|x| x.reply) {
                            let _ = r.send(Err(WorkloadError::Peer(format!(
                                "the server stopped the request stream (code {:#x})",
                                error_code.into_inner()
                            ))));
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }

    /// Our control stream with SETTINGS, once the handshake completed; then the
    /// connection is ready.
    fn open_control(&mut self) {
        let Some(q) = self.engine.connection(self.handle) else {
            return;
        };
        let opened = q
            .streams()
            .open(Dir::Uni)
            .map(|id| q.send_stream(id).write(&h3::control_stream()));
        let r = match opened {
            Some(Ok(_)) => Ok(()),
            _ => Err(WorkloadError::Peer(
                "the server allows no unidirectional stream for HTTP/3's control stream".into(),
            )),
        };
        if let Some(c) = self.connected.take() {
            let _ = c.send(r);
        }
    }

    /// Accepts and reads (discarding) the server's unidirectional streams.
    fn drain_uni(&mut self) {
        let Some(q) = self.engine.connection(self.handle) else {
            return;
        };
        while let Some(id) = q.streams().accept(Dir::Uni) {
            self.uni.push(id);
        }
        self.uni.retain(|id| {
            let mut recv = q.recv_stream(*id);
            let Ok(mut chunks) = recv.read(true) else {
                return false;
            };
            let open = loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(ReadError::Reset(_)) => break false,
                    Err(ReadError::Blocked) => break true,
                }
            };
            let _ = chunks.finalize();
            open
        });
    }

    /// Puts queued requests on new streams while the server's credit allows.
    fn start_queued(&mut self) {
        while !self.queued.is_empty() {
            let Some(q) = self.engine.connection(self.handle) else {
                return;
            };
            let Some(id) = q.streams().open(Dir::Bi) else {
                return;
            };
            let Some(r) = self.queued.pop_front() else {
                return;
            };
            self.streams.insert(
                id,
                Exchange {
                    head: r.head,
                    body: r.body,
                    written: 0,
                    finished: false,
                    reader: FrameReader::default(),
                    status: None,
                    data: Vec::new(),
                    reply: Some(r.reply),
                },
            );
            self.write(id);
        }
    }

    /// Writes what flow control takes of a request, and its FIN after the body.
    fn write(&mut self, id: StreamId) {
        let Some(x) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(q) = self.engine.connection(self.handle) else {
            return;
        };
        let mut send = q.send_stream(id);
        let total = x.head.len() + x.body.len();
        while x.written < total {
            let (part, off) = if x.written < x.head.len() {
                (&x.head[..], x.written)
            } else {
                (&x.body[..], x.written - x.head.len())
            };
            match send.write(&part[off..]) {
                Ok(n) => x.written += n,
                Err(WriteError::Blocked) => return,
                Err(e) => {
                    let why = format!("the server refused the request stream: {e}");
                    if let Some(r) = self.streams.remove(&id).and_then(|x| x.reply) {
                        let _ = r.send(Err(WorkloadError::Peer(why)));
                    }
                    return;
                }
            }
        }
        if !x.finished {
            x.finished = send.finish().is_ok();
        }
    }

    /// Reads a response stream; at its FIN the response goes to its request.
    fn read(&mut self, id: StreamId) {
        let Some(x) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(q) = self.engine.connection(self.handle) else {
            return;
        };
        let limit = self.max_body;
        let mut recv = q.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut done: Option<Result<(), WorkloadError>> = None;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(c)) => {
                    let (status, data) = (&mut x.status, &mut x.data);
                    let pushed = x.reader.push(&c.bytes, &mut |p| {
                        match p {
                            Part::Headers(f) if status.is_none() => {
                                *status = h3::field(&f, ":status")
                                    .and_then(|s| std::str::from_utf8(s).ok())
                                    .and_then(|s| s.parse().ok());
                            }
                            // Trailers (RFC 9114 §4.1) carry nothing we need.
                            Part::Headers(_) => {}
                            Part::Data(_) if status.is_none() => {
                                return Err(h3::H3Error::Frame("DATA before HEADERS"));
                            }
                            Part::Data(d) if data.len() + d.len() > limit => {
                                return Err(h3::H3Error::Frame("a body over the case's limit"));
                            }
                            Part::Data(d) => data.extend_from_slice(d),
                        }
                        Ok(())
                    });
                    if let Err(e) = pushed {
                        done = Some(Err(WorkloadError::Peer(format!(
                            "the server's HTTP/3 response: {e} (limit {limit} bytes)"
                        ))));
                        break;
                    }
                }
                Ok(None) => {
                    done = Some(x.reader.finish().map_err(|e| {
                        WorkloadError::Peer(format!("the server's HTTP/3 response: {e}"))
                    }));
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    done = Some(Err(WorkloadError::Peer(format!(
                        "the server reset the response stream (code {:#x})",
                        code.into_inner()
                    ))));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        let Some(r) = done else { return };
        let Some(x) = self.streams.remove(&id) else {
            return;
        };
        let answer = r.and_then(|()| {
            x.status
                .map(|s| (s, Bytes::from(x.data)))
                .ok_or_else(|| WorkloadError::Peer("an HTTP/3 response without :status".into()))
        });
        if let Some(reply) = x.reply {
            let _ = reply.send(answer);
        }
    }
}

fn io_lost(during: &str, e: &std::io::Error) -> Lost {
    Lost {
        link: false,
        why: format!("{during}: {e}"),
    }
}

/// The connection's I/O until it is lost or closed: the socket's datagrams, the
/// engine's timer, sends the socket's buffer held back, and requests queued.
async fn drive(shared: Arc<Shared>, fd: tokio::net::UdpSocket) {
    loop {
        let (timeout, unsent) = {
            let mut st = lock(&shared);
            st.step();
            if st.lost.is_some() || st.closing {
                return;
            }
            (st.engine.poll_timeout(), st.unsent.is_some())
        };
        let wait = timeout.map_or(Duration::from_secs(3600), |t| {
            Duration::from_nanos(t.saturating_sub(monotonic_ns()))
        });
        tokio::select! {
            r = fd.readable() => match r {
                Ok(()) => {
                    lock(&shared).receive();
                    // The reads went through the other descriptor until WouldBlock:
                    // this clears tokio's readiness, which a new datagram sets again.
                    let _ = fd.try_io(Interest::READABLE, || Err::<(), _>(blocked()));
                }
                Err(e) => return lock(&shared).fail(io_lost("waiting for a datagram", &e)),
            },
            r = fd.writable(), if unsent => {
                if r.is_ok() {
                    let _ = fd.try_io(Interest::WRITABLE, || Err::<(), _>(blocked()));
                }
            }
            () = tokio::time::sleep(wait) => {}
            () = shared.wake.notified() => {}
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let mut st = lock(&self.shared);
        if st.lost.is_none() {
            let h = st.handle;
            st.engine
                .close_with(monotonic_ns(), h, H3_NO_ERROR, b"done");
            // Sent here: the case's runtime may end before the task runs again.
            st.flush();
        }
        st.closing = true;
        drop(st);
        self.shared.wake.notify_one();
    }
}

fn blocked() -> std::io::Error {
    std::io::ErrorKind::WouldBlock.into()
}

/// The client's socket, non-blocking, and a second descriptor of it that tokio watches
/// for readiness (the reads and writes go through [`Udp`], which owns the first).
fn bind(server: SocketAddr) -> Result<(UdpSocket, tokio::net::UdpSocket, u16), WorkloadError> {
    let any: IpAddr = match server {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let io = |during, error| WorkloadError::Io { during, error };
    let socket = UdpSocket::bind((any, 0)).map_err(|e| io("binding the client's UDP socket", e))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| io("making the UDP socket non-blocking", e))?;
    let local_port = socket.local_addr().map(|a| a.port()).unwrap_or(0);
    let watched = socket
        .try_clone()
        .and_then(tokio::net::UdpSocket::from_std)
        .map_err(|e| io("watching the UDP socket", e))?;
    Ok((socket, watched, local_port))
}

impl Connect for H3Client {
    type Conn = H3Conn;

    async fn connect(&self) -> Result<Connected<H3Conn>, WorkloadError> {
        let t = monotonic_ns();
        let (socket, fd, local_port) = bind(self.addr)?;
        let seed = self
            .seed
            .wrapping_add(self.next.fetch_add(1, Ordering::Relaxed));
        let mut engine = Endpoint::client(self.transport.clone(), Instant::now(), seed)
            .map_err(|e| WorkloadError::Input(format!("QUIC client: {e}")))?;
        let handle = engine
            .connect(
                monotonic_ns(),
                self.addr,
                &self.identity.name,
                &self.identity.cert,
                ALPN_H3,
                None,
            )
            .map_err(|e| WorkloadError::Input(format!("QUIC client: {e}")))?;
        let (ready, connected) = oneshot::channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                engine,
                udp: Udp::new(socket),
                handle,
                queued: VecDeque::new(),
                streams: HashMap::new(),
                uni: Vec::new(),
                connected: Some(ready),
                lost: None,
                closing: false,
                unsent: None,
                out: Vec::new(),
                buf: vec![0; usize::from(MAX_DATAGRAM) + 1],
                max_body: Plain.max_body(self.max_payload).max(4096),
            }),
            wake: Notify::new(),
        });
        let link = Arc::new(Link {
            shared: shared.clone(),
        });
        tokio::spawn(drive(shared, fd));
        connected.await.map_err(|_| WorkloadError::Closed {
            during: "the QUIC handshake",
        })??;
        Ok(Connected {
            conn: H3Conn { link },
            handshake_ns: monotonic_ns() - t,
            local_port: Some(local_port),
        })
    }
}

impl Call for H3Conn {
    async fn call(&mut self, seq: u64, body: Bytes, echo: bool) -> Result<Bytes, WorkloadError> {
        let (path, _, b) = Plain.request(seq, body, echo);
        let mut head = h3::post(SERVER_NAME, &path, b.len() as u64);
        if !b.is_empty() {
            head.extend(h3::data_header(b.len() as u64));
        }
        let (reply, answer) = oneshot::channel();
        {
            let mut st = lock(&self.link.shared);
            if let Some(l) = &st.lost {
                return Err(l.error());
            }
            st.queued.push_back(Queued {
                head,
                body: b,
                reply,
            });
            st.start_queued();
            st.flush();
        }
        self.link.shared.wake.notify_one();
        let (status, body) = answer.await.map_err(|_| WorkloadError::Closed {
            during: "an HTTP/3 exchange",
        })??;
        Plain
            .parse_response(status, body)
            .map_err(|e| WorkloadError::Peer(format!("HTTP/3 server: {e}")))
    }

    fn share(&self) -> Option<Self> {
        Some(H3Conn {
            link: self.link.clone(),
        })
    }
}
