//! The HTTP/1.1 client connection (RFC 9112): one request at a time on a keep-alive
//! connection, the request written in one system call, the response head parsed by
//! httparse (hyper's own parser) and the body read by its Content-Length.
//!
//! Why not hyper's client: it runs each connection as a task of its own and hands every
//! request and response across channels to it; on loopback, one 64-byte request at a
//! time, that cost our client a fifth of wrk's request rate against the same server
//! (docs/performance.md, "S5: our clients against wrk, oha, h2load, ghz"). A client that
//! only ever sends POSTs with a known length and reads the replies of servers that send
//! a Content-Length needs none of that machinery. A response it cannot read that way
//! (chunked, no length) is a clear per-case error, never a guess.

use bytes::{Bytes, BytesMut};
use std::io::Write as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirebench_protocol::Fault;
use wirebench_protocol::WorkloadError;

/// Largest response head read: far above any real server's, and a bound on what a peer
/// that never ends its headers can make us hold.
const MAX_HEAD: usize = 64 * 1024;
/// Bodies up to this size are copied behind the head and sent in one write; larger ones
/// go in a second write rather than being copied.
const COPY_BODY: usize = 16 * 1024;
/// Headers a response may carry.
const MAX_HEADERS: usize = 64;

pub struct H1 {
    s: TcpStream,
    rx: BytesMut,
    tx: Vec<u8>,
    host: String,
    /// The server said `Connection: close`; the next call fails as closed.
    closed: bool,
}

/// What one exchange needs to know of the request.
pub struct Post<'a> {
    pub path: &'a str,
    pub content_type: &'a str,
    pub soap_action: Option<&'a str>,
    pub body: Bytes,
}

/// The parts of a response head the client acts on.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub status: u16,
    pub body_len: usize,
    pub close: bool,
}

fn peer(why: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::Peer(format!("the HTTP server broke the protocol: {why}"))
}

/// Parses a response head at the start of `buf`: `Ok(None)` while incomplete. Checks
/// the body's length against `limit` before any of the body is read.
pub fn parse_head(buf: &[u8], limit: usize) -> Result<Option<Head>, WorkloadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    let len = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Err(peer(format!("a response head over {MAX_HEAD} bytes")));
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(peer(format!("unreadable response head: {e}"))),
    };
    let status = r.code.unwrap_or(0);
    if status < 100 {
        return Err(peer(format!("status {status:03} is not an HTTP status")));
    }
    if (100..200).contains(&status) {
        return Err(peer(format!(
            "an interim {status} response to a request that asked for none"
        )));
    }
    let mut body_len = None;
    let mut close = r.version == Some(0);
    for h in r.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .ok_or_else(|| peer("a Content-Length that is not a number"))?;
            if body_len.is_some_and(|b| b != v) {
                return Err(peer("two different Content-Lengths"));
            }
            body_len = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(WorkloadError::Peer(format!(
                "the HTTP server sent a {} response body; this client reads bodies with a \
                 Content-Length, as wirebench's own servers send them",
                String::from_utf8_lossy(h.value)
            )));
        } else if h.name.eq_ignore_ascii_case("connection") {
            close = h
                .value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
    let body_len = match (status, body_len) {
        (204 | 304, _) => 0,
        (_, Some(n)) => n,
        (_, None) => {
            return Err(peer(format!("a {status} response without Content-Length")));
        }
    };
    if body_len > limit {
        return Err(WorkloadError::Peer(format!(
            "HTTP response body of {body_len} bytes (limit {limit} bytes)"
        )));
    }
    Ok(Some(Head {
        len,
        status,
        body_len,
        close,
    }))
}

impl H1 {
    pub fn new(s: TcpStream, host: String) -> H1 {
        H1 {
            s,
            rx: BytesMut::with_capacity(8192),
            tx: Vec::with_capacity(512),
            host,
            closed: false,
        }
    }

    /// Sends `req` and returns the response's status and body (at most `limit` bytes).
    pub async fn post(
        &mut self,
        req: Post<'_>,
        limit: usize,
    ) -> Result<(u16, Bytes), WorkloadError> {
        if self.closed {
            return Err(WorkloadError::Closed {
                during: "an HTTP exchange (the server had said Connection: close)",
            });
        }
        let link = |e: std::io::Error, during: &str| {
            WorkloadError::because(Fault::Link, format!("HTTP connection failed {during}"), e)
        };
        self.tx.clear();
        // Writing to a Vec cannot fail.
        let _ = write!(
            self.tx,
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n",
            req.path,
            self.host,
            req.content_type,
            req.body.len()
        );
        if let Some(a) = req.soap_action {
            let _ = write!(self.tx, "soapaction: {a}\r\n");
        }
        self.tx.extend_from_slice(b"\r\n");
        if req.body.len() <= COPY_BODY {
            self.tx.extend_from_slice(&req.body);
            self.s
                .write_all(&self.tx)
                .await
                .map_err(|e| link(e, "sending a request"))?;
        } else {
            self.s
                .write_all(&self.tx)
                .await
                .map_err(|e| link(e, "sending a request"))?;
            self.s
                .write_all(&req.body)
                .await
                .map_err(|e| link(e, "sending a request"))?;
        }
        let head = loop {
            if let Some(h) = parse_head(&self.rx, limit)? {
                break h;
            }
            self.fill(8192).await?;
        };
        let total = head.len + head.body_len;
        while self.rx.len() < total {
            self.fill(total - self.rx.len()).await?;
        }
        let body = self.rx.split_to(total).freeze().slice(head.len..);
        self.closed = head.close;
        Ok((head.status, body))
    }

    /// Reads at least one more byte, making room for `want` more.
    async fn fill(&mut self, want: usize) -> Result<(), WorkloadError> {
        self.rx.reserve(want.clamp(4096, 1 << 20));
        match self.s.read_buf(&mut self.rx).await {
            Ok(0) => Err(WorkloadError::Closed {
                during: "an HTTP exchange",
            }),
            Ok(_) => Ok(()),
            Err(e) => Err(WorkloadError::because(
                Fault::Link,
                "HTTP connection failed waiting for a response",
                e,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Result<Option<Head>, WorkloadError> {
        parse_head(s.as_bytes(), 1000)
    }

    #[test]
    fn heads() {
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")
            .unwrap()
            .unwrap();
        assert_eq!((h.status, h.body_len, h.close, h.len), (200, 5, false, 38));
        assert!(head("HTTP/1.1 200 OK\r\ncontent-le").unwrap().is_none());
        let h =
            head("HTTP/1.1 413 x\r\nContent-Length: 0\r\nConnection: keep-alive, close\r\n\r\n")
                .unwrap()
                .unwrap();
        assert!(h.close);
        assert!(
            head("HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n")
                .unwrap()
                .unwrap()
                .close
        );
        assert_eq!(head("HTTP/1.1 204 x\r\n\r\n").unwrap().unwrap().body_len, 0);
    }

    #[test]
    fn refusals() {
        let e = |s: &str| head(s).unwrap_err().to_string();
        assert!(e("HTTP/1.1 200 OK\r\n\r\n").contains("without Content-Length"));
        assert!(e("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").contains("chunked"));
        assert!(e("HTTP/1.1 200 OK\r\ncontent-length: 2000\r\n\r\n").contains("limit 1000"));
        assert!(e("HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").contains("not a number"));
        assert!(
            e("HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n")
                .contains("two different")
        );
        assert!(e("HTTP/1.1 100 Continue\r\n\r\n").contains("interim"));
        assert!(e("SSH-2.0-OpenSSH\r\n\r\n").contains("unreadable"));
        assert!(e("HTTP/1.1 000 x\r\ncontent-length: 0\r\n\r\n").contains("not an HTTP status"));
        let long = format!("HTTP/1.1 200 OK\r\nx: {}", "a".repeat(MAX_HEAD + 1));
        assert!(e(&long).contains("over"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = parse_head(&b, 100);
        }
    }
}
