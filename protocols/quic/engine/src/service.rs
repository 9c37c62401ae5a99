//! Our server side: an [`Endpoint`] that accepts every connection and serves its
//! bidirectional streams (RFC 9000 §2) by the ALPN the client chose:
//!
//! - [`ALPN_ECHO`]: each stream's bytes are written back on it as they arrive, and its
//!   end (FIN) ends the echo. A stream whose echo is blocked by the client's flow control
//!   (RFC 9000 §4.1) is not read further until it drains, so the client's own window
//!   holds back its sending: the service never holds more than one read's worth a
//!   stream.
//! - [`ALPN_SINK`]: each stream is read to its end and counted; the answer is the count,
//!   8 bytes big-endian, then FIN. A one-way transfer is timed to that answer.
//! - [`ALPN_H3`]: HTTP/3 (RFC 9114, [`crate::h3`]): a request `GET /N` is answered with
//!   status 200 and N bytes of quic-go's example server's generator ([`Body::Lehmer`]),
//!   N up to [`h3::MAX_BODY`]; any other request with 400. The body is made as flow
//!   control takes it, never held whole. A `POST` (RFC 9114 §4.1: HEADERS, DATA, FIN) is
//!   read to its FIN, its body kept (up to [`MAX_POST`] bytes, 413 beyond), and answered
//!   as the service's [`PostHandler`] says: by default `/echo` returns the body and
//!   `/sink` an empty 200 ([`echo_post`]), the `http` protocol's requests. Each
//!   connection gets our control stream with SETTINGS; the client's control and QPACK
//!   streams are read and discarded.
//!
//! The service emits no events: it consumes its endpoint's, and counts in
//! [`ServiceStats`].

use crate::endpoint::{Endpoint, Event};
use crate::h3::{self, ALPN_H3, Body, FrameReader, Part};
use crate::tls::ALPN_SINK;
use quinn_proto::{ConnectionHandle, Dir, ReadError, StreamEvent, StreamId, WriteError};
use std::collections::{BTreeMap, BTreeSet};
use wirebench_engine::{DatagramEngine, Received, Transmit};

/// What the service did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServiceStats {
    pub connections: u64,
    pub streams: u64,
    /// Stream bytes received and sent.
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Connections that ended with an error other than the client's close or the idle
    /// timeout.
    pub failed: u64,
    /// HTTP/3 requests answered, and those refused (400) or malformed.
    pub requests: u64,
    pub bad_requests: u64,
    /// Connections whose handshake accepted 0-RTT data (RFC 9001 §4.6).
    pub zero_rtt: u64,
    /// Retry packets sent (RFC 9000 §8.1.2, [`crate::Transport::retry`]).
    pub retries: u64,
}

/// The service a connection's ALPN chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum App {
    #[default]
    Echo,
    Sink,
    H3,
}

/// The largest POST body the service keeps (a request above it is answered 413).
pub const MAX_POST: usize = 64 << 20;

/// What the service answers to an HTTP/3 POST, from its `:path` and its body: the
/// status and the response body.
pub type PostHandler = Box<dyn FnMut(&[u8], Vec<u8>) -> (u16, Vec<u8>) + Send>;

/// The default [`PostHandler`]: `/echo...` returns the body, `/sink...` an empty 200,
/// any other path 404 (a query after the path is ignored).
pub fn echo_post(path: &[u8], body: Vec<u8>) -> (u16, Vec<u8>) {
    let p = path.split(|b| *b == b'?').next().unwrap_or_default();
    match p {
        b"/echo" | b"/" => (200, body),
        b"/sink" => (200, Vec::new()),
        _ => (404, Vec::new()),
    }
}

/// A request's method and path, once its HEADERS arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Head {
    /// `GET`, or any method we do not serve (with an empty path, so answered 400).
    Get(Vec<u8>),
    Post(Vec<u8>),
}

/// An HTTP/3 request stream's state.
#[derive(Debug, Default)]
struct Request {
    reader: FrameReader,
    head: Option<Head>,
    /// A POST's body as far as it came, and whether it outgrew [`MAX_POST`].
    posted: Vec<u8>,
    too_long: bool,
    /// The request's FIN was read.
    fin: bool,
    /// The response's body still to make, once the request was read.
    body: Option<(Body, u64)>,
}

#[derive(Debug, Default)]
struct Stream {
    /// Bytes read and not yet written back (echo) or the answer not yet written (sink).
    pending: Vec<u8>,
    /// The client's FIN was read.
    ended: bool,
    /// Our FIN was sent.
    finished: bool,
    app: App,
    count: u64,
    h3: Request,
}

/// The echo and sink services on one endpoint.
pub struct Service {
    pub endpoint: Endpoint,
    streams: BTreeMap<(ConnectionHandle, StreamId), Stream>,
    apps: BTreeMap<ConnectionHandle, App>,
    /// The client's unidirectional streams (HTTP/3 control and QPACK), drained.
    uni: BTreeSet<(ConnectionHandle, StreamId)>,
    stats: ServiceStats,
    post: PostHandler,
}

impl Service {
    pub fn new(endpoint: Endpoint) -> Self {
        Self::with_post(endpoint, Box::new(echo_post))
    }

    /// A service whose HTTP/3 POSTs `post` answers (the `http` protocol's, which
    /// verifies each body against its case's pattern).
    pub fn with_post(endpoint: Endpoint, post: PostHandler) -> Self {
        Service {
            endpoint,
            streams: BTreeMap::new(),
            apps: BTreeMap::new(),
            uni: BTreeSet::new(),
            stats: ServiceStats::default(),
            post,
        }
    }

    pub fn stats(&self) -> ServiceStats {
        self.stats
    }

    /// Acts on every event the endpoint queued.
    fn pump(&mut self) {
        while let Some(e) = self.endpoint.poll_event() {
            match e {
                Event::Accepted(_) => self.stats.connections += 1,
                Event::Retried => self.stats.retries += 1,
                Event::Conn(h, quinn_proto::Event::HandshakeDataReady) => {
                    let app = match self.endpoint.alpn(h).as_deref() {
                        Some(ALPN_SINK) => App::Sink,
                        Some(ALPN_H3) => App::H3,
                        _ => App::Echo,
                    };
                    self.apps.insert(h, app);
                }
                Event::Conn(h, quinn_proto::Event::Connected) => {
                    // A server's connection has 0-RTT keys only when its TLS took the
                    // early data (quinn-proto's `accepted_0rtt` is the client's view).
                    if self.endpoint.connection(h).is_some_and(|c| c.has_0rtt()) {
                        self.stats.zero_rtt += 1;
                    }
                    if self.apps.get(&h) == Some(&App::H3) {
                        self.open_control(h);
                    }
                }
                Event::Conn(h, quinn_proto::Event::Stream(s)) => self.stream_event(h, s),
                Event::Conn(h, quinn_proto::Event::ConnectionLost { reason }) => {
                    use quinn_proto::ConnectionError as E;
                    if !matches!(reason, E::ApplicationClosed(_) | E::TimedOut) {
                        self.stats.failed += 1;
                    }
                    self.streams.retain(|(c, _), _| *c != h);
                    self.uni.retain(|(c, _)| *c != h);
                    self.apps.remove(&h);
                }
                Event::Conn(..) => {}
            }
        }
    }

    fn stream_event(&mut self, h: ConnectionHandle, e: StreamEvent) {
        match e {
            StreamEvent::Opened { dir: Dir::Uni } => {
                while let Some(id) = self
                    .endpoint
                    .connection(h)
                    .and_then(|c| c.streams().accept(Dir::Uni))
                {
                    self.uni.insert((h, id));
                    self.drain(h, id);
                }
            }
            StreamEvent::Readable { id } if self.uni.contains(&(h, id)) => self.drain(h, id),
            StreamEvent::Opened { dir: Dir::Bi } => {
                let app = self.apps.get(&h).copied().unwrap_or_default();
                while let Some(id) = self
                    .endpoint
                    .connection(h)
                    .and_then(|c| c.streams().accept(Dir::Bi))
                {
                    self.stats.streams += 1;
                    let s = Stream {
                        app,
                        ..Stream::default()
                    };
                    self.streams.insert((h, id), s);
                    self.serve(h, id);
                }
            }
            StreamEvent::Readable { id } | StreamEvent::Writable { id } => self.serve(h, id),
            StreamEvent::Stopped { id, .. } => {
                self.streams.remove(&(h, id));
            }
            _ => {}
        }
    }

    /// Writes what is pending, and reads while nothing is, until the stream blocks
    /// either way or ends.
    fn serve(&mut self, h: ConnectionHandle, id: StreamId) {
        let Some(s) = self.streams.get_mut(&(h, id)) else {
            return;
        };
        let Some(conn) = self.endpoint.connection(h) else {
            return;
        };
        if s.app == App::H3 {
            if !serve_h3(conn, id, s, &mut self.stats, &mut self.post) {
                self.streams.remove(&(h, id));
            }
            return;
        }
        let gone = loop {
            if !flush(conn, id, s, &mut self.stats) || s.finished {
                break true;
            }
            if !s.pending.is_empty() {
                break false;
            }
            match read(conn, id, s, &mut self.stats) {
                Read::More => {}
                Read::Blocked => break false,
                Read::Reset => break true,
            }
        };
        if gone {
            self.streams.remove(&(h, id));
        }
    }
}

impl Service {
    /// Opens our HTTP/3 control stream with its SETTINGS (RFC 9114 §6.2.1); a few bytes,
    /// which the stream's initial credit always takes.
    fn open_control(&mut self, h: ConnectionHandle) {
        let Some(conn) = self.endpoint.connection(h) else {
            return;
        };
        if let Some(id) = conn.streams().open(Dir::Uni) {
            let _ = conn.send_stream(id).write(&h3::control_stream());
        }
    }

    /// Reads and discards what a client's unidirectional stream has.
    fn drain(&mut self, h: ConnectionHandle, id: StreamId) {
        let Some(conn) = self.endpoint.connection(h) else {
            return;
        };
        let mut recv = conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            self.uni.remove(&(h, id));
            return;
        };
        let end = loop {
            match chunks.next(usize::MAX) {
                Ok(Some(_)) => {}
                Ok(None) | Err(ReadError::Reset(_)) => break true,
                Err(ReadError::Blocked) => break false,
            }
        };
        let _ = chunks.finalize();
        if end {
            self.uni.remove(&(h, id));
        }
    }
}

/// How much body is made at a time: what one write usually takes.
const BODY_CHUNK: u64 = 16 * 1024;

/// Serves one HTTP/3 request stream: reads the request (a GET until its HEADERS, a POST
/// to its FIN), then writes the response as flow control allows. False: the stream is
/// done or gone.
fn serve_h3(
    conn: &mut quinn_proto::Connection,
    id: StreamId,
    s: &mut Stream,
    stats: &mut ServiceStats,
    post: &mut PostHandler,
) -> bool {
    let read = read_request(conn, id, s, stats);
    if s.h3.body.is_none() {
        if read.is_err() {
            stats.bad_requests += 1;
            return false;
        }
        match s.h3.head.take() {
            Some(Head::Get(path)) => answer_get(s, &path, stats),
            Some(Head::Post(path)) if s.h3.fin => answer_post(s, &path, stats, post),
            head => {
                s.h3.head = head;
                return true;
            }
        }
    }
    loop {
        if !flush(conn, id, s, stats) {
            return false;
        }
        if !s.pending.is_empty() {
            return true;
        }
        let Some((body, left)) = &mut s.h3.body else {
            return true;
        };
        if *left == 0 {
            s.ended = true;
            return flush(conn, id, s, stats) && !s.finished;
        }
        let n = (*left).min(BODY_CHUNK) as usize;
        s.pending.resize(n, 0);
        body.fill(&mut s.pending);
        *left -= n as u64;
    }
}

/// `GET /N`: status 200 and N generated bytes, or 400.
fn answer_get(s: &mut Stream, path: &[u8], stats: &mut ServiceStats) {
    let n = path
        .strip_prefix(b"/")
        .and_then(|p| std::str::from_utf8(p).ok())
        .and_then(|p| p.parse::<u64>().ok())
        .filter(|n| (1..=h3::MAX_BODY).contains(n));
    match n {
        Some(n) => {
            stats.requests += 1;
            s.pending = h3::response(200, Some(n));
            s.pending.extend(h3::data_header(n));
            s.h3.body = Some((Body::lehmer(), n));
        }
        None => {
            stats.bad_requests += 1;
            s.pending = h3::response(400, Some(0));
            s.h3.body = Some((Body::lehmer(), 0));
        }
    }
}

/// A POST read to its FIN: the handler's answer in one HEADERS and one DATA frame.
fn answer_post(s: &mut Stream, path: &[u8], stats: &mut ServiceStats, post: &mut PostHandler) {
    let (status, body) = if s.h3.too_long {
        (413, Vec::new())
    } else {
        post(path, std::mem::take(&mut s.h3.posted))
    };
    if status == 200 {
        stats.requests += 1;
    } else {
        stats.bad_requests += 1;
    }
    let n = body.len() as u64;
    s.pending = h3::response(status, Some(n));
    if n > 0 {
        s.pending.extend(h3::data_header(n));
        s.pending.extend(body);
    }
    s.h3.body = Some((Body::lehmer(), 0));
}

/// Reads what a request stream has: its HEADERS into `s.h3.head`, a POST's DATA into
/// `s.h3.posted`, its FIN into `s.h3.fin`. Err: the request is malformed (DATA before
/// HEADERS, RFC 9114 §4.1.2), ended without HEADERS or was reset, and the stream is
/// abandoned.
fn read_request(
    conn: &mut quinn_proto::Connection,
    id: StreamId,
    s: &mut Stream,
    stats: &mut ServiceStats,
) -> Result<(), ()> {
    let mut recv = conn.recv_stream(id);
    let mut chunks = recv.read(true).map_err(|_| ())?;
    let mut bad = false;
    let r = &mut s.h3;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(c)) => {
                stats.bytes_in += c.bytes.len() as u64;
                let (head, posted, too_long) = (&mut r.head, &mut r.posted, &mut r.too_long);
                let pushed = r.reader.push(&c.bytes, &mut |p| {
                    match p {
                        Part::Headers(f) if head.is_none() => {
                            let path = h3::field(&f, ":path").unwrap_or(b"").to_vec();
                            *head = Some(match h3::field(&f, ":method") {
                                Some(b"GET") => Head::Get(path),
                                Some(b"POST") => Head::Post(path),
                                _ => Head::Get(Vec::new()),
                            });
                        }
                        // Trailers (RFC 9114 §4.1) carry nothing we need.
                        Part::Headers(_) => {}
                        Part::Data(_) if head.is_none() => {
                            return Err(h3::H3Error::Frame("DATA before HEADERS"));
                        }
                        Part::Data(d) => {
                            if posted.len() + d.len() > MAX_POST {
                                *too_long = true;
                                posted.clear();
                            } else if !*too_long {
                                posted.extend_from_slice(d);
                            }
                        }
                    }
                    Ok(())
                });
                bad |= pushed.is_err();
            }
            Ok(None) => {
                r.fin = true;
                bad |= r.head.is_none() || r.reader.finish().is_err();
                break;
            }
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(_)) => {
                bad = true;
                break;
            }
        }
    }
    let _ = chunks.finalize();
    if bad { Err(()) } else { Ok(()) }
}

enum Read {
    /// Something was read (or the end): write before reading on.
    More,
    Blocked,
    Reset,
}

/// Reads one chunk into `s.pending` (echo; see the module docs) or every chunk there is
/// (sink), and notes the client's FIN.
fn read(
    conn: &mut quinn_proto::Connection,
    id: StreamId,
    s: &mut Stream,
    stats: &mut ServiceStats,
) -> Read {
    let mut recv = conn.recv_stream(id);
    let Ok(mut chunks) = recv.read(true) else {
        return Read::Reset;
    };
    let mut got = Read::Blocked;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(c)) => {
                let n = c.bytes.len() as u64;
                stats.bytes_in += n;
                s.count += n;
                got = Read::More;
                if s.app == App::Echo {
                    s.pending.extend_from_slice(&c.bytes);
                    break;
                }
            }
            Ok(None) => {
                s.ended = true;
                if s.app == App::Sink {
                    s.pending.extend_from_slice(&s.count.to_be_bytes());
                }
                got = Read::More;
                break;
            }
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(_)) => {
                got = Read::Reset;
                break;
            }
        }
    }
    let _ = chunks.finalize();
    got
}

/// Writes `s.pending`, and FIN once the client's FIN was read and nothing is pending.
/// False: the stream is gone (stopped or closed).
fn flush(
    conn: &mut quinn_proto::Connection,
    id: StreamId,
    s: &mut Stream,
    stats: &mut ServiceStats,
) -> bool {
    let mut send = conn.send_stream(id);
    while !s.pending.is_empty() {
        match send.write(&s.pending) {
            Ok(n) => {
                stats.bytes_out += n as u64;
                s.pending.drain(..n);
            }
            Err(WriteError::Blocked) => return true,
            Err(_) => return false,
        }
    }
    if s.ended && !s.finished {
        if send.finish().is_err() {
            return false;
        }
        s.finished = true;
    }
    true
}

impl DatagramEngine for Service {
    type Event = ();
    type Error = std::convert::Infallible;

    fn handle_datagram(&mut self, now: u64, d: Received<'_>) -> Result<(), Self::Error> {
        self.endpoint.handle_datagram(now, d)?;
        self.pump();
        Ok(())
    }

    fn poll_transmit(
        &mut self,
        now: u64,
        max_datagrams: usize,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        let t = self.endpoint.poll_transmit(now, max_datagrams, buf);
        self.pump();
        t
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.endpoint.poll_timeout()
    }

    fn handle_timeout(&mut self, now: u64) -> Result<(), Self::Error> {
        self.endpoint.handle_timeout(now)?;
        self.pump();
        Ok(())
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::echo_post;

    #[test]
    fn the_default_post_echoes_and_sinks() {
        assert_eq!(
            echo_post(b"/echo?seq=3", b"abc".to_vec()),
            (200, b"abc".to_vec())
        );
        assert_eq!(
            echo_post(b"/sink?seq=3", b"abc".to_vec()),
            (200, Vec::new())
        );
        assert_eq!(echo_post(b"/other", b"abc".to_vec()).0, 404);
    }
}
