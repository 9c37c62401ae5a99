//! What carries a native client's XMPP stream: TCP (RFC 6120), WebSocket (RFC 7395) or
//! BOSH (XEP-0124/0206). The XMPP engine sees the same RFC 6120 byte stream on all
//! three; [`Conn`] turns it into the transport's messages with the sans-IO engines of
//! `wirebench-xmpp-web` and moves them with blocking sockets, like the TCP driver.
//!
//! BOSH keeps up to two HTTP/1.1 keep-alive connections (the `requests` a manager grants
//! with `hold` 1): one request held at the manager for the server to answer into, and a
//! second for data sent meanwhile. `poll(2)` waits on both.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use tungstenite::Message;
use tungstenite::client::IntoClientRequest;
use wirebench_xmpp_web::{BoshClient, BoshClientConfig, Framing};

/// The `xmpp.transport` choices.
pub const TRANSPORTS: &[&str] = &["tcp", "websocket", "bosh"];

/// How a client reaches its server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Transport {
    #[default]
    Tcp,
    /// `ws://ADDR/PATH`, subprotocol `xmpp`.
    WebSocket { path: String },
    /// `http://ADDR/PATH`, POST.
    Bosh { path: String },
}

impl Transport {
    pub fn from_word(w: Option<&str>) -> Transport {
        match w {
            Some("websocket") => Transport::WebSocket {
                path: "/xmpp-websocket".into(),
            },
            Some("bosh") => Transport::Bosh {
                path: "/http-bind".into(),
            },
            _ => Transport::Tcp,
        }
    }

    pub fn word(&self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::WebSocket { .. } => "websocket",
            Transport::Bosh { .. } => "bosh",
        }
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::WouldBlock, "no data before the deadline")
}

fn proto(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// One client's connection, any transport.
pub enum Conn {
    Tcp(TcpStream),
    Ws(Box<WsConn>),
    Bosh(Box<BoshConn>),
}

impl Conn {
    /// Connects (and for WebSocket, upgrades); `domain` is the XMPP domain (BOSH's `to`).
    pub fn connect(
        t: &Transport,
        addr: SocketAddr,
        domain: &str,
        max_stanza: usize,
        seed: u64,
        timeout: Duration,
    ) -> io::Result<Conn> {
        Ok(match t {
            Transport::Tcp => {
                let s = TcpStream::connect_timeout(&addr, timeout)?;
                s.set_nodelay(true)?;
                Conn::Tcp(s)
            }
            Transport::WebSocket { path } => {
                Conn::Ws(Box::new(WsConn::connect(addr, path, max_stanza, timeout)?))
            }
            Transport::Bosh { path } => Conn::Bosh(Box::new(BoshConn::new(
                addr, path, domain, max_stanza, seed, timeout,
            ))),
        })
    }

    /// Writes bytes of the client's stream.
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.write_all(bytes),
            Conn::Ws(w) => w.write(bytes),
            Conn::Bosh(b) => b.write(bytes),
        }
    }

    /// Reads bytes of the server's stream into `buf` (grown if needed), waiting at most
    /// `wait`. `Ok(0)`: the server closed. A `WouldBlock` error: nothing in time.
    pub fn read(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => {
                s.set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
                s.read(buf)
            }
            Conn::Ws(w) => w.read(buf, wait),
            Conn::Bosh(b) => b.read(buf, wait),
        }
    }
}

fn put(buf: &mut Vec<u8>, bytes: &[u8]) -> usize {
    if buf.len() < bytes.len() {
        buf.resize(bytes.len(), 0);
    }
    buf[..bytes.len()].copy_from_slice(bytes);
    bytes.len()
}

pub struct WsConn {
    ws: tungstenite::WebSocket<TcpStream>,
    framing: Framing,
}

impl WsConn {
    fn connect(addr: SocketAddr, path: &str, max: usize, timeout: Duration) -> io::Result<WsConn> {
        let s = TcpStream::connect_timeout(&addr, timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        let mut req = format!("ws://{addr}{path}")
            .into_client_request()
            .map_err(proto)?;
        req.headers_mut().insert(
            "sec-websocket-protocol",
            tungstenite::http::HeaderValue::from_static("xmpp"),
        );
        let limit = max + 1024;
        let cfg = tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(limit))
            .max_frame_size(Some(limit));
        let (ws, resp) = tungstenite::client::client_with_config(req, s, Some(cfg))
            .map_err(|e| proto(format!("WebSocket handshake with {addr}: {e}")))?;
        let agreed = resp
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok());
        if agreed != Some("xmpp") {
            return Err(proto(format!(
                "the WebSocket server at {addr} did not agree to subprotocol xmpp (RFC 7395 section 3.1)"
            )));
        }
        Ok(WsConn {
            ws,
            framing: Framing::new(max),
        })
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        for m in self.framing.stream_to_messages(bytes).map_err(proto)? {
            self.ws.write(Message::text(m)).map_err(ws_io)?;
        }
        self.ws.flush().map_err(ws_io)
    }

    fn read(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            self.ws
                .get_mut()
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
            match self.ws.read() {
                Ok(Message::Text(t)) => {
                    let bytes = self
                        .framing
                        .message_to_stream(t.as_bytes())
                        .map_err(proto)?;
                    if !bytes.is_empty() {
                        return Ok(put(buf, &bytes));
                    }
                }
                Ok(Message::Close(_)) => return Ok(0),
                Ok(Message::Binary(_)) => {
                    return Err(proto("a binary WebSocket message (RFC 7395: text only)"));
                }
                Ok(_) => {}
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                    return Ok(0);
                }
                Err(e) => return Err(ws_io(e)),
            }
        }
    }
}

fn ws_io(e: tungstenite::Error) -> io::Error {
    match e {
        tungstenite::Error::Io(e) => e,
        other => proto(other),
    }
}

/// One HTTP/1.1 keep-alive connection carrying at most one BOSH request at a time.
struct Slot {
    stream: Option<TcpStream>,
    busy: bool,
    rx: Vec<u8>,
    /// The request in flight, for one re-send if the server closed the kept-alive
    /// connection under it (XEP-0124 §14.3: the manager answers a repeated rid again).
    last: Vec<u8>,
    retried: bool,
}

pub struct BoshConn {
    addr: SocketAddr,
    path: String,
    client: BoshClient,
    slots: [Slot; 2],
    timeout: Duration,
    /// HTTP requests sent (each a round trip to the manager).
    pub requests: u64,
}

impl BoshConn {
    fn new(
        addr: SocketAddr,
        path: &str,
        domain: &str,
        max: usize,
        seed: u64,
        timeout: Duration,
    ) -> BoshConn {
        let mut cfg = BoshClientConfig::new(domain);
        cfg.max_stanza = max;
        let slot = || Slot {
            stream: None,
            busy: false,
            rx: Vec::new(),
            last: Vec::new(),
            retried: false,
        };
        BoshConn {
            addr,
            path: path.into(),
            client: BoshClient::new(cfg, seed),
            slots: [slot(), slot()],
            timeout,
            requests: 0,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.client.send(bytes).map_err(proto)?;
        self.pump()
    }

    /// Sends every request the client has due, each on a free connection.
    fn pump(&mut self) -> io::Result<()> {
        while self.slots.iter().any(|s| !s.busy) {
            let Some(body) = self.client.poll_request() else {
                return Ok(());
            };
            let slot = self
                .slots
                .iter_mut()
                .find(|s| !s.busy)
                .expect("checked above");
            let mut req = format!(
                "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: text/xml; charset=utf-8\r\n\
                 Content-Length: {}\r\n\r\n",
                self.path,
                self.addr,
                body.len()
            )
            .into_bytes();
            req.extend_from_slice(&body);
            // A kept-alive connection the server has closed since fails at the first
            // write: one fresh connection, then give up.
            let reused = slot.stream.is_some();
            let sent = match slot.stream.as_mut() {
                Some(st) => st.write_all(&req),
                None => Err(io::Error::from(io::ErrorKind::NotConnected)),
            };
            if let Err(e) = sent {
                if reused
                    && e.kind() != io::ErrorKind::BrokenPipe
                    && e.kind() != io::ErrorKind::ConnectionReset
                {
                    return Err(e);
                }
                let mut s = TcpStream::connect_timeout(&self.addr, self.timeout)?;
                s.set_nodelay(true)?;
                s.write_all(&req)?;
                slot.stream = Some(s);
                slot.rx.clear();
            }
            slot.last = req;
            slot.retried = false;
            slot.busy = true;
            self.requests += 1;
        }
        Ok(())
    }

    fn read(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize> {
        let deadline = Instant::now() + wait;
        loop {
            let out = self.client.take_stream();
            if !out.is_empty() {
                return Ok(put(buf, &out));
            }
            if self.client.is_closed() {
                return Ok(0);
            }
            self.pump()?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            let mut fds: Vec<libc::pollfd> = Vec::new();
            let mut which = Vec::new();
            for (i, s) in self.slots.iter().enumerate() {
                if let (true, Some(st)) = (s.busy, &s.stream) {
                    fds.push(libc::pollfd {
                        fd: st.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    which.push(i);
                }
            }
            if fds.is_empty() {
                return Err(proto("BOSH: no request outstanding and nothing to send"));
            }
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            for (fd, &i) in fds.iter().zip(&which) {
                if fd.revents == 0 {
                    continue;
                }
                if let Some(body) = self.read_slot(i)? {
                    self.client.handle_response(&body).map_err(proto)?;
                }
            }
        }
    }

    /// Reads what a busy connection has; returns a response's body once complete.
    fn read_slot(&mut self, i: usize) -> io::Result<Option<Vec<u8>>> {
        let slot = &mut self.slots[i];
        let Some(st) = slot.stream.as_mut() else {
            return Ok(None);
        };
        let mut tmp = [0u8; 16 * 1024];
        // A reset is how a closed kept-alive connection often shows: same as end of file.
        let n = match st.read(&mut tmp) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => 0,
            Err(e) => return Err(e),
        };
        if n == 0 && slot.rx.is_empty() && !slot.retried {
            let mut s = TcpStream::connect_timeout(&self.addr, self.timeout)?;
            s.set_nodelay(true)?;
            s.write_all(&slot.last)?;
            slot.stream = Some(s);
            slot.retried = true;
            return Ok(None);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the BOSH server closed an HTTP connection with a request outstanding",
            ));
        }
        slot.rx.extend_from_slice(&tmp[..n]);
        if slot.rx.len() > (1 << 20) + 64 * 1024 {
            return Err(proto("BOSH response over 1 MiB"));
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        let head = match resp.parse(&slot.rx).map_err(proto)? {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => return Ok(None),
        };
        let status = resp.code.unwrap_or(0);
        let mut len = None;
        let mut close = false;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                len = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<usize>().ok());
            } else if h.name.eq_ignore_ascii_case("connection") {
                close = h.value.eq_ignore_ascii_case(b"close");
            }
        }
        let Some(len) = len else {
            return Err(proto(
                "BOSH response without Content-Length (chunked answers are not supported)",
            ));
        };
        if slot.rx.len() < head + len {
            return Ok(None);
        }
        let body = slot.rx[head..head + len].to_vec();
        slot.rx.drain(..head + len);
        slot.busy = false;
        if close {
            slot.stream = None;
            slot.rx.clear();
        }
        if status != 200 {
            return Err(proto(format!(
                "BOSH server answered HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        Ok(Some(body))
    }
}
