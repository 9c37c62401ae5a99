//! What carries a native client's XMPP stream: TCP (RFC 6120), WebSocket (RFC 7395),
//! BOSH (XEP-0124/0206) or one of SockJS 0.3.3's transports. The XMPP engine sees the same RFC 6120 byte stream on all
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
use wirebench_xmpp_web::sockjs::{self, Frame, StreamReader, Wire};
use wirebench_xmpp_web::{BoshClient, BoshClientConfig, Framing};

/// The `xmpp.transport` choices: the last six are SockJS 0.3.3's transports.
pub const TRANSPORTS: &[&str] = &[
    "tcp",
    "websocket",
    "bosh",
    "sockjs-websocket",
    "xhr-streaming",
    "xhr-polling",
    "jsonp-polling",
    "eventsource",
    "htmlfile",
];

/// How a client reaches its server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Transport {
    #[default]
    Tcp,
    /// `ws://ADDR/PATH`, subprotocol `xmpp`.
    WebSocket { path: String },
    /// `http://ADDR/PATH`, POST.
    Bosh { path: String },
    /// SockJS 0.3.3 under `http://ADDR/PREFIX`.
    SockJs { prefix: String, kind: SockJsKind },
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
            Some(w) if sockjs_kind(w).is_some() => Transport::SockJs {
                prefix: "/xmpp".into(),
                kind: sockjs_kind(w).expect("checked"),
            },
            _ => Transport::Tcp,
        }
    }

    pub fn word(&self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::WebSocket { .. } => "websocket",
            Transport::Bosh { .. } => "bosh",
            Transport::SockJs { kind, .. } => match kind {
                SockJsKind::WebSocket => "sockjs-websocket",
                SockJsKind::XhrStreaming => "xhr-streaming",
                SockJsKind::XhrPolling => "xhr-polling",
                SockJsKind::JsonpPolling => "jsonp-polling",
                SockJsKind::EventSource => "eventsource",
                SockJsKind::HtmlFile => "htmlfile",
            },
        }
    }
}

fn sockjs_kind(w: &str) -> Option<SockJsKind> {
    Some(match w {
        "sockjs-websocket" => SockJsKind::WebSocket,
        "xhr-streaming" => SockJsKind::XhrStreaming,
        "xhr-polling" => SockJsKind::XhrPolling,
        "jsonp-polling" => SockJsKind::JsonpPolling,
        "eventsource" => SockJsKind::EventSource,
        "htmlfile" => SockJsKind::HtmlFile,
        _ => return None,
    })
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::WouldBlock, "no data before the deadline")
}

fn proto(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// One client's connection, any transport.
pub enum Conn {
    /// Plain TCP, its read timeout set only when it changes (a system call per read
    /// otherwise, on the measurement path).
    Tcp(wirebench_engine::blocking::Tcp),
    Ws(Box<WsConn>),
    Bosh(Box<BoshConn>),
    SockJs(Box<SockJsConn>),
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
                Conn::Tcp(wirebench_engine::blocking::Tcp::new(s))
            }
            Transport::WebSocket { path } => {
                Conn::Ws(Box::new(WsConn::connect(addr, path, max_stanza, timeout)?))
            }
            Transport::Bosh { path } => Conn::Bosh(Box::new(BoshConn::new(
                addr, path, domain, max_stanza, seed, timeout,
            ))),
            Transport::SockJs { prefix, kind } => Conn::SockJs(Box::new(SockJsConn::connect(
                addr, prefix, *kind, max_stanza, seed, timeout,
            )?)),
        })
    }

    /// Writes bytes of the client's stream.
    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.stream.write_all(bytes),
            Conn::Ws(w) => w.write(bytes),
            Conn::Bosh(b) => b.write(bytes),
            Conn::SockJs(s) => s.write(bytes),
        }
    }

    /// Reads bytes of the server's stream into `buf` (grown if needed), waiting at most
    /// `wait`. `Ok(0)`: the server closed. A `WouldBlock` error: nothing in time.
    pub fn read(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => wirebench_engine::blocking::Io::read(s, buf, wait),
            Conn::Ws(w) => w.read(buf, wait),
            Conn::Bosh(b) => b.read(buf, wait),
            Conn::SockJs(s) => s.read(buf, wait),
        }
    }
}

/// Every transport is a connection for the one blocking driver.
impl wirebench_engine::blocking::Io for Conn {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write(bytes)
    }

    fn read(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize> {
        Conn::read(self, buf, wait)
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
    /// The socket's read timeout, set only when it changes (a system call each time).
    timeout: Option<Duration>,
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
            .max_frame_size(Some(limit))
            .read_buffer_size(wirebench_xmpp_web::framing::XMPP_READ_BUFFER);
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
            timeout: None,
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
            // Whole milliseconds up to the driver's tick, as the blocking driver's Tcp: a
            // read may end early with WouldBlock, which the driver takes as "nothing yet".
            let t = Duration::from_millis(
                left.as_millis()
                    .clamp(1, wirebench_engine::blocking::TICK.as_millis()) as u64,
            );
            if self.timeout != Some(t) {
                self.ws.get_mut().set_read_timeout(Some(t))?;
                self.timeout = Some(t);
            }
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

/// Which SockJS 0.3.3 transport a [`SockJsConn`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SockJsKind {
    WebSocket,
    XhrStreaming,
    XhrPolling,
    JsonpPolling,
    EventSource,
    /// The iframe transport of old browsers: one streaming page of `<script>` calls.
    HtmlFile,
}

impl SockJsKind {
    fn wire(self) -> Wire {
        match self {
            SockJsKind::WebSocket => Wire::WebSocket,
            SockJsKind::XhrStreaming => Wire::XhrStreaming,
            SockJsKind::XhrPolling => Wire::XhrPolling,
            SockJsKind::JsonpPolling => Wire::Jsonp(JSONP_CB.into()),
            SockJsKind::EventSource => Wire::EventSource,
            SockJsKind::HtmlFile => Wire::HtmlFile(JSONP_CB.into()),
        }
    }
}

const JSONP_CB: &str = "_jp.a1";

/// A receiving HTTP response being read: its body as it arrives, chunked or sized.
#[derive(Default)]
struct HttpIn {
    rx: Vec<u8>,
    /// Parsed head: (status, Some(length) or None for chunked, connection: close).
    head: Option<(u16, Option<usize>, bool)>,
    /// Body bytes of a sized response taken so far.
    taken: usize,
}

impl HttpIn {
    /// Appends bytes; returns body bytes decoded so far and whether the response ended.
    fn push(&mut self, bytes: &[u8]) -> io::Result<(Vec<u8>, bool)> {
        self.rx.extend_from_slice(bytes);
        if self.head.is_none() {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            let n = match resp.parse(&self.rx).map_err(proto)? {
                httparse::Status::Complete(n) => n,
                httparse::Status::Partial => return Ok((Vec::new(), false)),
            };
            let (mut len, mut chunked, mut close) = (None, false, false);
            for h in resp.headers.iter() {
                if h.name.eq_ignore_ascii_case("content-length") {
                    len = std::str::from_utf8(h.value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok());
                } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = h.value.eq_ignore_ascii_case(b"chunked");
                } else if h.name.eq_ignore_ascii_case("connection") {
                    close = h.value.eq_ignore_ascii_case(b"close");
                }
            }
            let status = resp.code.unwrap_or(0);
            if status == 204 || status == 304 {
                // No body, whatever the headers say (RFC 9112 section 6.3).
                len = Some(0);
                chunked = false;
            }
            if !chunked && len.is_none() {
                return Err(proto("SockJS response with neither length nor chunks"));
            }
            self.head = Some((status, if chunked { None } else { len }, close));
            self.rx.drain(..n);
            self.taken = 0;
        }
        let Some((_, len, _)) = self.head else {
            return Ok((Vec::new(), false));
        };
        let mut out = Vec::new();
        match len {
            Some(len) => {
                let k = (len - self.taken).min(self.rx.len());
                out.extend(self.rx.drain(..k));
                self.taken += k;
                Ok((out, self.taken == len))
            }
            None => loop {
                let Some(eol) = self.rx.windows(2).position(|w| w == b"\r\n") else {
                    return Ok((out, false));
                };
                let size = std::str::from_utf8(&self.rx[..eol])
                    .ok()
                    .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok())
                    .ok_or_else(|| proto("bad chunk size"))?;
                if self.rx.len() < eol + 2 + size + 2 {
                    return Ok((out, false));
                }
                out.extend_from_slice(&self.rx[eol + 2..eol + 2 + size]);
                self.rx.drain(..eol + 2 + size + 2);
                if size == 0 {
                    return Ok((out, true));
                }
            },
        }
    }
}

/// A native SockJS 0.3.3 client: one receiving request at a time (a poll, or a stream
/// reopened after its 128 KiB), client data POSTed to xhr_send / jsonp_send on a second
/// keep-alive connection, each SockJS message one RFC 7395 element. Over the websocket
/// transport, one websocket connection with SockJS frames.
pub struct SockJsConn {
    addr: SocketAddr,
    kind: SockJsKind,
    /// `/prefix/server/session`.
    base: String,
    framing: Framing,
    reader: StreamReader,
    recv: Option<TcpStream>,
    recv_busy: bool,
    http: HttpIn,
    send: Option<TcpStream>,
    ws: Option<tungstenite::WebSocket<TcpStream>>,
    pending: Vec<u8>,
    closed: bool,
    timeout: Duration,
    /// HTTP requests (or websocket messages) sent.
    pub requests: u64,
}

fn form_encode(s: &str) -> String {
    let mut o = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

impl SockJsConn {
    fn connect(
        addr: SocketAddr,
        prefix: &str,
        kind: SockJsKind,
        max: usize,
        seed: u64,
        timeout: Duration,
    ) -> io::Result<SockJsConn> {
        // Session ids must not repeat while the server remembers a closed session (the
        // disconnect delay): the seed, the clock and a process-wide counter.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let session = format!(
            "{:016x}{k:x}",
            (seed ^ t).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        );
        let mut c = SockJsConn {
            addr,
            kind,
            base: format!("{prefix}/000/{session}"),
            framing: Framing::new(max),
            reader: StreamReader::new(kind.wire(), max * 2 + 4096),
            recv: None,
            recv_busy: false,
            http: HttpIn::default(),
            send: None,
            ws: None,
            pending: Vec::new(),
            closed: false,
            timeout,
            requests: 0,
        };
        if kind == SockJsKind::WebSocket {
            let s = TcpStream::connect_timeout(&addr, timeout)?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(timeout))?;
            let req = format!("ws://{addr}{}/websocket", c.base)
                .into_client_request()
                .map_err(proto)?;
            let (ws, _) = tungstenite::client::client(req, s)
                .map_err(|e| proto(format!("SockJS websocket handshake with {addr}: {e}")))?;
            c.ws = Some(ws);
        }
        // The session exists once `o` has come back: data sent before would be refused.
        let deadline = Instant::now() + timeout;
        loop {
            match c.next_frames(deadline.saturating_duration_since(Instant::now()))? {
                Some(frames) if frames.contains(&Frame::Open) => break,
                Some(frames) => {
                    if let Some(Frame::Close(code, why)) =
                        frames.iter().find(|f| matches!(f, Frame::Close(..)))
                    {
                        return Err(proto(format!("SockJS: closed before `o`: {code} {why}")));
                    }
                }
                None => return Err(proto("SockJS: the server closed before `o`")),
            }
            if Instant::now() >= deadline {
                return Err(timed_out());
            }
        }
        Ok(c)
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let msgs = self.framing.stream_to_messages(bytes).map_err(proto)?;
        if msgs.is_empty() {
            return Ok(());
        }
        let mut json = String::from("[");
        for (i, m) in msgs.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json.push_str(&sockjs::quote(m));
        }
        json.push(']');
        self.requests += 1;
        if let Some(ws) = self.ws.as_mut() {
            ws.write(Message::text(json)).map_err(ws_io)?;
            return ws.flush().map_err(ws_io);
        }
        let (path, ctype, body) = if self.kind == SockJsKind::JsonpPolling {
            (
                "jsonp_send",
                "application/x-www-form-urlencoded",
                format!("d={}", form_encode(&json)),
            )
        } else {
            ("xhr_send", "text/plain;charset=UTF-8", json)
        };
        let req = format!(
            "POST {}/{path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n{body}",
            self.base,
            self.addr,
            body.len()
        );
        // One re-send on a fresh connection if the kept-alive one was closed meanwhile.
        for attempt in 0..2 {
            if self.send.is_none() {
                let s = TcpStream::connect_timeout(&self.addr, self.timeout)?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(self.timeout))?;
                self.send = Some(s);
            }
            let s = self.send.as_mut().expect("set above");
            let mut h = HttpIn::default();
            let r = s.write_all(req.as_bytes()).and_then(|()| {
                let mut tmp = [0u8; 4096];
                loop {
                    let n = s.read(&mut tmp)?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    let (body, done) = h.push(&tmp[..n])?;
                    if done {
                        return Ok(body);
                    }
                }
            });
            match r {
                Ok(body) => {
                    let (status, _, close) = h.head.unwrap_or((0, None, true));
                    if close {
                        self.send = None;
                    }
                    if status != 204 && status != 200 {
                        return Err(proto(format!(
                            "SockJS {path} answered HTTP {status}: {}",
                            String::from_utf8_lossy(&body)
                        )));
                    }
                    return Ok(());
                }
                Err(e) if attempt == 0 && h.head.is_none() => {
                    let _ = e;
                    self.send = None;
                }
                Err(e) => return Err(e),
            }
        }
        Err(proto("SockJS send failed twice"))
    }

    /// Starts the next receiving request if none is out.
    fn start_recv(&mut self) -> io::Result<()> {
        if self.recv_busy || self.ws.is_some() {
            return Ok(());
        }
        let (method, path) = match self.kind {
            SockJsKind::XhrStreaming => ("POST", "xhr_streaming".to_string()),
            SockJsKind::XhrPolling => ("POST", "xhr".to_string()),
            SockJsKind::JsonpPolling => ("GET", format!("jsonp?c={JSONP_CB}")),
            SockJsKind::EventSource => ("GET", "eventsource".to_string()),
            SockJsKind::HtmlFile => ("GET", format!("htmlfile?c={JSONP_CB}")),
            SockJsKind::WebSocket => unreachable!("checked above"),
        };
        let req = format!(
            "{method} {}/{path} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
            self.base, self.addr
        );
        for attempt in 0..2 {
            if self.recv.is_none() {
                let s = TcpStream::connect_timeout(&self.addr, self.timeout)?;
                s.set_nodelay(true)?;
                self.recv = Some(s);
            }
            match self
                .recv
                .as_mut()
                .expect("set above")
                .write_all(req.as_bytes())
            {
                Ok(()) => break,
                Err(e) if attempt == 0 => {
                    let _ = e;
                    self.recv = None;
                }
                Err(e) => return Err(e),
            }
        }
        self.http = HttpIn::default();
        self.recv_busy = true;
        self.requests += 1;
        Ok(())
    }

    /// Waits at most `wait` for frames. `Ok(None)`: the server closed the session.
    fn next_frames(&mut self, wait: Duration) -> io::Result<Option<Vec<Frame>>> {
        if let Some(ws) = self.ws.as_mut() {
            ws.get_mut()
                .set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
            return match ws.read() {
                Ok(Message::Text(t)) => Ok(Some(
                    sockjs::parse_frame(t.as_str())
                        .map(|f| vec![f])
                        .ok_or_else(|| proto("a broken SockJS frame"))?,
                )),
                Ok(Message::Close(_)) => Ok(None),
                Ok(_) => Ok(Some(Vec::new())),
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {
                    Ok(None)
                }
                Err(e) => Err(ws_io(e)),
            };
        }
        self.start_recv()?;
        let s = self.recv.as_mut().expect("started above");
        s.set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
        let mut tmp = [0u8; 64 * 1024];
        let n = match s.read(&mut tmp) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => 0,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if self.http.head.is_none() && self.http.rx.is_empty() {
                // A kept-alive connection closed under a new request: once more afresh.
                self.recv = None;
                self.recv_busy = false;
                return Ok(Some(Vec::new()));
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the SockJS server closed a receiving request mid-response",
            ));
        }
        let (body, done) = self.http.push(&tmp[..n])?;
        let status = self.http.head.map_or(200, |h| h.0);
        if status != 200 {
            return Err(proto(format!("SockJS receiving request: HTTP {status}")));
        }
        let frames = self
            .reader
            .push(&body)
            .ok_or_else(|| proto("a broken SockJS frame"))?;
        if done {
            if self.http.head.is_some_and(|h| h.2) {
                self.recv = None;
            }
            self.recv_busy = false;
            // The next receiving request goes out now, before whatever the client sends
            // on reading these frames: over a link, a poll sent after the next ping
            // reaches the server after that ping's answer and holds it back a round trip
            // (as sockjs-client does, a new poll the moment one returns).
            if !frames.iter().any(|f| matches!(f, Frame::Close(..))) {
                self.start_recv()?;
            }
        }
        Ok(Some(frames))
    }

    fn read(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize> {
        let deadline = Instant::now() + wait;
        loop {
            if !self.pending.is_empty() {
                let n = put(buf, &self.pending);
                self.pending.clear();
                return Ok(n);
            }
            if self.closed {
                return Ok(0);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            let frames = match self.next_frames(left) {
                Ok(Some(f)) => f,
                Ok(None) => {
                    self.closed = true;
                    continue;
                }
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.kind() == io::ErrorKind::TimedOut =>
                {
                    return Err(timed_out());
                }
                Err(e) => return Err(e),
            };
            for f in frames {
                match f {
                    Frame::Messages(ms) => {
                        for m in ms {
                            let b = self
                                .framing
                                .message_to_stream(m.as_bytes())
                                .map_err(proto)?;
                            self.pending.extend_from_slice(&b);
                        }
                    }
                    Frame::Close(..) => self.closed = true,
                    Frame::Open | Frame::Heartbeat => {}
                }
            }
        }
    }
}
