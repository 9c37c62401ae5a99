//! The HTTP client: one connection per [`HttpConn`], HTTP/1.1 keep-alive ([`super::h1`],
//! one request at a time, no pipelining) or HTTP/2 with prior knowledge (the h2 crate,
//! requests multiplexed as streams on one connection). hyper serves both on the other
//! side ([`super::server`]).

use super::codec::Codec;
use crate::{Call, Connect, Connected};
use bytes::Bytes;
use http::{Request, header};
use std::net::SocketAddr;
use std::sync::Arc;
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::Fault;
use wirebench_protocol::WorkloadError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http1,
    Http2,
}

impl Version {
    /// `http.version`'s words.
    pub fn from_word(w: &str) -> Option<Version> {
        match w {
            "1.1" => Some(Version::Http1),
            "2" => Some(Version::Http2),
            _ => None,
        }
    }
}

/// Connects to one server with one codec.
pub struct HttpClient<K> {
    pub addr: SocketAddr,
    pub version: Version,
    pub codec: Arc<K>,
    pub max_payload: usize,
    pub nodelay: bool,
}

enum Sender {
    H1(super::h1::H1),
    /// The h2 crate (hyper's own HTTP/2) directly: hyper's HTTP/2 client adds a task per
    /// request body and a dispatch channel, a fifth of the client's time per small request.
    H2(h2::client::SendRequest<Bytes>),
}

pub struct HttpConn<K> {
    sender: Sender,
    codec: Arc<K>,
    /// The URI's authority (HTTP/2), parsed once per connection.
    authority: http::uri::Authority,
    max_body: usize,
}

fn h2_error(e: h2::Error, during: &str) -> WorkloadError {
    if e.is_io() {
        WorkloadError::because(Fault::Link, format!("HTTP/2 connection failed {during}"), e)
    } else if e.is_go_away() && e.reason() == Some(h2::Reason::NO_ERROR) {
        WorkloadError::Closed {
            during: "an HTTP/2 exchange",
        }
    } else {
        WorkloadError::because(
            Fault::Peer,
            format!("the HTTP/2 server broke the exchange {during}"),
            e,
        )
    }
}

impl<K: Codec> Connect for HttpClient<K> {
    type Conn = HttpConn<K>;

    async fn connect(&self) -> Result<Connected<HttpConn<K>>, WorkloadError> {
        let t = monotonic_ns();
        let (s, local_port) = crate::client::tcp_connect(self.addr, self.nodelay).await?;
        let sender = match self.version {
            Version::Http1 => Sender::H1(super::h1::H1::new(s, self.addr.to_string())),
            Version::Http2 => {
                let (tx, conn) = h2::client::Builder::new()
                    // Large payloads: windows that do not throttle a 1 MiB body on a
                    // fast link (the protocol's default is 64 KiB).
                    .initial_window_size(8 << 20)
                    .initial_connection_window_size(16 << 20)
                    .handshake::<_, Bytes>(s)
                    .await
                    .map_err(|e| h2_error(e, "in the handshake"))?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                let tx = tx
                    .ready()
                    .await
                    .map_err(|e| h2_error(e, "in the handshake"))?;
                Sender::H2(tx)
            }
        };
        let authority = self.addr.to_string();
        Ok(Connected {
            conn: HttpConn {
                sender,
                codec: self.codec.clone(),
                authority: authority.parse().map_err(|e| {
                    WorkloadError::because(Fault::Input, format!("authority {authority}"), e)
                })?,
                max_body: self.codec.max_body(self.max_payload),
            },
            handshake_ns: monotonic_ns() - t,
            local_port,
        })
    }
}

impl<K: Codec> Call for HttpConn<K> {
    async fn call(&mut self, seq: u64, body: Bytes, echo: bool) -> Result<Bytes, WorkloadError> {
        let action = self.codec.action(echo);
        let (path, ct, b) = self.codec.request(seq, body, echo);
        let limit = self.max_body.max(4096);
        let too_big = |e: &dyn std::fmt::Display| {
            WorkloadError::Peer(format!(
                "{} response body: {e} (limit {limit} bytes)",
                self.codec.name()
            ))
        };
        let (status, body) = match &mut self.sender {
            Sender::H1(c) => {
                let post = super::h1::Post {
                    path: &path,
                    content_type: ct,
                    soap_action: action,
                    body: b,
                };
                c.post(post, limit).await?
            }
            Sender::H2(tx) => {
                let uri = http::Uri::builder()
                    .scheme(http::uri::Scheme::HTTP)
                    .authority(self.authority.clone())
                    .path_and_query(path)
                    .build()
                    .map_err(|e| WorkloadError::because(Fault::Input, "bad URI", e))?;
                let mut req = Request::post(uri).header(header::CONTENT_TYPE, ct);
                if let Some(a) = action {
                    req = req.header("soapaction", a);
                }
                let req = req.body(()).map_err(|e| {
                    WorkloadError::because(Fault::Input, "cannot build a request", e)
                })?;
                std::future::poll_fn(|cx| tx.poll_ready(cx))
                    .await
                    .map_err(|e| h2_error(e, "before a request"))?;
                let (resp, mut out) = tx
                    .send_request(req, b.is_empty())
                    .map_err(|e| h2_error(e, "sending a request"))?;
                if !b.is_empty() {
                    // Buffered by h2 until the server's window admits it.
                    out.send_data(b, true)
                        .map_err(|e| h2_error(e, "sending a request"))?;
                }
                let resp = resp
                    .await
                    .map_err(|e| h2_error(e, "waiting for a response"))?;
                let status = resp.status().as_u16();
                let mut rx = resp.into_body();
                // One DATA frame (the usual small reply) is kept as it came, uncopied.
                let mut first: Option<Bytes> = None;
                let mut joined: Vec<u8> = Vec::new();
                let mut have = 0usize;
                while let Some(chunk) = rx.data().await {
                    let chunk = chunk.map_err(|e| h2_error(e, "reading a response"))?;
                    let _ = rx.flow_control().release_capacity(chunk.len());
                    have += chunk.len();
                    if have > limit {
                        return Err(too_big(&"longer than the limit"));
                    }
                    match first.take() {
                        None if joined.is_empty() => first = Some(chunk),
                        Some(f) => {
                            joined.extend_from_slice(&f);
                            joined.extend_from_slice(&chunk);
                        }
                        None => joined.extend_from_slice(&chunk),
                    }
                }
                let body = first.unwrap_or_else(|| Bytes::from(joined));
                (status, body)
            }
        };
        self.codec
            .parse_response(status, body)
            .map_err(|e| WorkloadError::Peer(format!("{} server: {e}", self.codec.name())))
    }

    fn share(&self) -> Option<Self> {
        match &self.sender {
            Sender::H1(_) => None,
            Sender::H2(tx) => Some(HttpConn {
                sender: Sender::H2(tx.clone()),
                codec: self.codec.clone(),
                authority: self.authority.clone(),
                max_body: self.max_body,
            }),
        }
    }
}
