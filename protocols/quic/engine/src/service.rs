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
//!
//! The service emits no events: it consumes its endpoint's, and counts in
//! [`ServiceStats`].

use crate::endpoint::{Endpoint, Event};
use crate::tls::{ALPN_ECHO, ALPN_SINK};
use quinn_proto::{ConnectionHandle, Dir, ReadError, StreamEvent, StreamId, WriteError};
use std::collections::BTreeMap;
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
}

#[derive(Debug, Default)]
struct Stream {
    /// Bytes read and not yet written back (echo) or the answer not yet written (sink).
    pending: Vec<u8>,
    /// The client's FIN was read.
    ended: bool,
    /// Our FIN was sent.
    finished: bool,
    sink: bool,
    count: u64,
}

/// The echo and sink services on one endpoint.
pub struct Service {
    pub endpoint: Endpoint,
    streams: BTreeMap<(ConnectionHandle, StreamId), Stream>,
    sinks: BTreeMap<ConnectionHandle, bool>,
    stats: ServiceStats,
}

impl Service {
    pub fn new(endpoint: Endpoint) -> Self {
        Service {
            endpoint,
            streams: BTreeMap::new(),
            sinks: BTreeMap::new(),
            stats: ServiceStats::default(),
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
                Event::Conn(h, quinn_proto::Event::HandshakeDataReady) => {
                    let sink = self.endpoint.alpn(h).as_deref() == Some(ALPN_SINK);
                    debug_assert!(sink || self.endpoint.alpn(h).as_deref() == Some(ALPN_ECHO));
                    self.sinks.insert(h, sink);
                }
                Event::Conn(h, quinn_proto::Event::Stream(s)) => self.stream_event(h, s),
                Event::Conn(h, quinn_proto::Event::ConnectionLost { reason }) => {
                    use quinn_proto::ConnectionError as E;
                    if !matches!(reason, E::ApplicationClosed(_) | E::TimedOut) {
                        self.stats.failed += 1;
                    }
                    self.streams.retain(|(c, _), _| *c != h);
                    self.sinks.remove(&h);
                }
                Event::Conn(..) => {}
            }
        }
    }

    fn stream_event(&mut self, h: ConnectionHandle, e: StreamEvent) {
        match e {
            StreamEvent::Opened { dir: Dir::Bi } => {
                let sink = self.sinks.get(&h).copied().unwrap_or(false);
                while let Some(id) = self
                    .endpoint
                    .connection(h)
                    .and_then(|c| c.streams().accept(Dir::Bi))
                {
                    self.stats.streams += 1;
                    let s = Stream {
                        sink,
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
                if !s.sink {
                    s.pending.extend_from_slice(&c.bytes);
                    break;
                }
            }
            Ok(None) => {
                s.ended = true;
                if s.sink {
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
