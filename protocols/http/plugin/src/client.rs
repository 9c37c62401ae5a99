//! The HTTP client: one hyper connection per [`HttpConn`], HTTP/1.1 keep-alive (one
//! request at a time; hyper does not pipeline) or HTTP/2 with prior knowledge (requests
//! multiplexed as streams on one connection).

use crate::codec::Codec;
use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::SocketAddr;
use std::sync::Arc;
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::WorkloadError;
use wirebench_rpc::{Call, Connect, Connected};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http1,
    Http2,
}

impl Version {
    pub fn from_word(w: Option<&str>) -> Version {
        match w {
            Some("2") => Version::Http2,
            _ => Version::Http1,
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
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

pub struct HttpConn<K> {
    sender: Sender,
    codec: Arc<K>,
    authority: Arc<str>,
    max_body: usize,
}

fn hyper_error(e: hyper::Error, during: &str) -> WorkloadError {
    if e.is_parse() || e.is_parse_status() || e.is_user() {
        WorkloadError::Peer(format!("the HTTP server broke the protocol {during}: {e}"))
    } else if e.is_closed() || e.is_incomplete_message() || e.is_canceled() {
        WorkloadError::Closed {
            during: "an HTTP exchange",
        }
    } else {
        WorkloadError::Link(format!("HTTP connection failed {during}: {e}"))
    }
}

impl<K: Codec> Connect for HttpClient<K> {
    type Conn = HttpConn<K>;

    async fn connect(&self) -> Result<Connected<HttpConn<K>>, WorkloadError> {
        let t = monotonic_ns();
        let s = tokio::net::TcpStream::connect(self.addr)
            .await
            .map_err(|error| WorkloadError::Connect {
                addr: self.addr.to_string(),
                error,
            })?;
        let _ = s.set_nodelay(self.nodelay);
        let local_port = s.local_addr().ok().map(|a| a.port());
        let io = TokioIo::new(s);
        let sender = match self.version {
            Version::Http1 => {
                let (mut tx, conn) = http1::handshake(io)
                    .await
                    .map_err(|e| hyper_error(e, "in the handshake"))?;
                tokio::spawn(conn);
                tx.ready()
                    .await
                    .map_err(|e| hyper_error(e, "in the handshake"))?;
                Sender::H1(tx)
            }
            Version::Http2 => {
                let (mut tx, conn) = http2::Builder::new(TokioExecutor::new())
                    // Large payloads: windows that do not throttle a 1 MiB body on a
                    // fast link (hyper's defaults are 64 KiB-ish).
                    .initial_stream_window_size(8 << 20)
                    .initial_connection_window_size(16 << 20)
                    .handshake(io)
                    .await
                    .map_err(|e| hyper_error(e, "in the handshake"))?;
                tokio::spawn(conn);
                tx.ready()
                    .await
                    .map_err(|e| hyper_error(e, "in the handshake"))?;
                Sender::H2(tx)
            }
        };
        Ok(Connected {
            conn: HttpConn {
                sender,
                codec: self.codec.clone(),
                authority: self.addr.to_string().into(),
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
        let mut req = Request::post(path).header(header::CONTENT_TYPE, ct);
        if let Some(a) = action {
            req = req.header("soapaction", a);
        }
        let mut req = req
            .body(Full::new(b))
            .map_err(|e| WorkloadError::Input(format!("cannot build a request: {e}")))?;
        let resp = match &mut self.sender {
            Sender::H1(tx) => {
                req.headers_mut().insert(
                    header::HOST,
                    header::HeaderValue::from_str(&self.authority)
                        .map_err(|e| WorkloadError::Input(e.to_string()))?,
                );
                tx.ready()
                    .await
                    .map_err(|e| hyper_error(e, "before a request"))?;
                tx.send_request(req).await
            }
            Sender::H2(tx) => {
                *req.uri_mut() = format!("http://{}{}", self.authority, req.uri())
                    .parse()
                    .map_err(|e| WorkloadError::Input(format!("bad URI: {e}")))?;
                tx.send_request(req).await
            }
        }
        .map_err(|e| hyper_error(e, "waiting for a response"))?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), self.max_body.max(4096))
            .collect()
            .await
            .map_err(|e| {
                WorkloadError::Peer(format!(
                    "{} response body: {e} (limit {} bytes)",
                    self.codec.name(),
                    self.max_body.max(4096)
                ))
            })?
            .to_bytes();
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
