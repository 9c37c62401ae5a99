//! SockJS protocol 0.3.3 (<https://sockjs.github.io/sockjs-protocol/sockjs-protocol-0.3.3.html>),
//! sans-IO: the server's sessions ([`Server`]) and the client's frame parsing
//! ([`parse_frame`], [`StreamReader`]).
//!
//! A SockJS session is addressed as `/<prefix>/<server_id>/<session_id>/<transport>`; the
//! server sends frames: `o` (open), `h` (heartbeat), `a["msg",...]` (messages, JSON),
//! `c[code,"reason"]` (close). Receiving transports differ only in how a frame is wrapped
//! ([`Wire`]): xhr (`frame\n`), jsonp (`callback("frame");\r\n`), eventsource
//! (`data: frame\r\n\r\n`), htmlfile (`<script>\np("frame");\n</script>\r\n`) and websocket
//! (one message per frame). Polling receivers get one frame and end; streaming ones keep
//! going until 128 KiB were sent (then the client opens a new one, so the browser can free
//! the response). Client data arrives as a JSON array of strings (xhr_send, jsonp_send,
//! websocket messages).
//!
//! Session rules (the spec's "Session URLs" and "Protocol and framing" sections): one
//! receiving request per session at a time (a second gets `c[2010,"Another connection
//! still open"]`); a closed session answers `c[3000,"Go away!"]` until it is forgotten; a
//! session with no receiving request for the disconnect delay (5 s) is closed; a receiving
//! request the client aborts closes the session (`c[1002,"Connection interrupted"]`); a
//! receiver idle for 25 s gets `h`. No engine here reads a clock: `now` is passed in (ns).

mod json;
#[cfg(test)]
mod tests;

pub use json::{decode_messages, quote};

use std::collections::{HashMap, VecDeque};

/// The close frame for a session that was closed ("Go away!", code 3000).
pub const GO_AWAY: (u16, &str) = (3000, "Go away!");
/// The close frame for a second receiving request on a session.
pub const STILL_OPEN: (u16, &str) = (2010, "Another connection still open");

/// The close frame for a session whose receiving request the client aborted.
pub const INTERRUPTED: (u16, &str) = (1002, "Connection interrupted");

/// The close frame refusing a new session when [`SockJsConfig::max_sessions`] are held:
/// SockJS defines no code for it, so it is WebSocket's "Try Again Later" (RFC 6455's
/// IANA registry), whose close codes SockJS's frames carry.
pub const TOO_MANY: (u16, &str) = (1013, "Too many sessions, try again later");

/// Limits and timers; the defaults are the spec's (and sockjs-node's).
#[derive(Debug, Clone)]
pub struct SockJsConfig {
    /// A receiving request idle this long is sent `h` (streaming) or answered `h` (polling).
    pub heartbeat_ns: u64,
    /// A session without a receiving request this long is closed and forgotten.
    pub disconnect_delay_ns: u64,
    /// A streaming response ends after this many bytes (the client opens another).
    pub response_limit: usize,
    /// Largest client request body (xhr_send / jsonp_send) or websocket message, bytes.
    pub max_body: usize,
    /// Sessions held at most (open, or closed and not yet forgotten): a receiving request
    /// for a new one over it is answered [`TOO_MANY`] and no session is made.
    pub max_sessions: usize,
}

impl Default for SockJsConfig {
    fn default() -> Self {
        SockJsConfig {
            heartbeat_ns: 25_000_000_000,
            disconnect_delay_ns: 5_000_000_000,
            response_limit: 128 * 1024,
            max_body: 128 * 1024,
            max_sessions: 10_000,
        }
    }
}

/// How frames are wrapped on one receiving transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wire {
    XhrStreaming,
    XhrPolling,
    /// jsonp polling, with the page's callback name.
    Jsonp(String),
    EventSource,
    /// htmlfile streaming, with the page's callback name.
    HtmlFile(String),
    /// The SockJS websocket transport: one frame per message, no prelude.
    WebSocket,
}

impl Wire {
    /// Whether one response carries many frames.
    pub fn streaming(&self) -> bool {
        matches!(
            self,
            Wire::XhrStreaming | Wire::EventSource | Wire::HtmlFile(_) | Wire::WebSocket
        )
    }

    /// What a response starts with, before any frame. xhr-streaming: 2 KiB of `h` and a
    /// newline, because some browsers deliver nothing of a response before 2 KiB (spec,
    /// "XhrStreaming"); htmlfile: the page that calls the parent's callback, padded past
    /// 1 KiB for the same reason; eventsource: a blank line.
    pub fn prelude(&self) -> Vec<u8> {
        match self {
            Wire::XhrStreaming => {
                let mut v = vec![b'h'; 2048];
                v.push(b'\n');
                v
            }
            Wire::EventSource => b"\r\n".to_vec(),
            Wire::HtmlFile(cb) => {
                let mut s = format!(
                    "<!doctype html>\n<html><head>\n  <meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />\n  <meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />\n</head><body><h2>Don't panic!</h2>\n  <script>\n    document.domain = document.domain;\n    var c = parent.{cb};\n    c.start();\n    function p(d) {{c.message(d);}};\n    window.onload = function() {{c.stop();}};\n  </script>"
                );
                while s.len() < 1024 {
                    s.push(' ');
                }
                s.push_str("\r\n\r\n");
                s.into_bytes()
            }
            _ => Vec::new(),
        }
    }

    /// One frame as this transport sends it.
    pub fn encode(&self, frame: &str) -> Vec<u8> {
        match self {
            Wire::XhrStreaming | Wire::XhrPolling => format!("{frame}\n").into_bytes(),
            Wire::Jsonp(cb) => format!("{cb}({});\r\n", quote(frame)).into_bytes(),
            Wire::EventSource => format!("data: {frame}\r\n\r\n").into_bytes(),
            Wire::HtmlFile(_) => {
                format!("<script>\np({});\n</script>\r\n", quote(frame)).into_bytes()
            }
            Wire::WebSocket => frame.as_bytes().to_vec(),
        }
    }
}

/// A JSONP callback name the spec accepts: letters, digits, `_` and `.`, at most 32.
pub fn valid_callback(cb: &str) -> bool {
    !cb.is_empty()
        && cb.len() <= 32
        && cb
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// A server or session id the spec accepts in a URL: non-empty, no `.` (and no `/`).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && !id.contains('.') && !id.contains('/')
}

/// `a[...]`: messages as one frame.
pub fn array_frame(msgs: &[String]) -> String {
    let mut s = String::from("a[");
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&quote(m));
    }
    s.push(']');
    s
}

/// `c[code,"reason"]`.
pub fn close_frame(code: u16, reason: &str) -> String {
    format!("c[{code},{}]", quote(reason))
}

/// A receiving request's id, chosen by [`Server::receive`].
pub type RecvId = u64;

/// What the driver must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A new session: connect its upstream (the XMPP server).
    Open { sid: String },
    /// Bytes for a receiving request's response (or websocket message).
    Data { recv: RecvId, bytes: Vec<u8> },
    /// The receiving request's response is complete.
    End { recv: RecvId },
    /// The session is gone: close its upstream.
    Close { sid: String },
}

/// Why client data was refused, with the HTTP status and body the spec gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// No such session (404).
    UnknownSession,
    /// Empty body (500 "Payload expected.").
    Empty,
    /// Not a JSON array of strings (500 "Broken JSON encoding.").
    BrokenJson,
    /// Over `max_body` (413).
    TooLarge,
}

impl SendError {
    pub fn status(&self) -> u16 {
        match self {
            SendError::UnknownSession => 404,
            SendError::TooLarge => 413,
            _ => 500,
        }
    }
    pub fn body(&self) -> &'static str {
        match self {
            SendError::UnknownSession => "Session not found.",
            SendError::Empty => "Payload expected.",
            SendError::BrokenJson => "Broken JSON encoding.",
            SendError::TooLarge => "Payload too large.",
        }
    }
}

#[derive(Debug)]
struct Receiver {
    id: RecvId,
    wire: Wire,
    sent: usize,
    heartbeat_at: u64,
}

#[derive(Debug)]
struct Session {
    closed: Option<(u16, String)>,
    queue: Vec<String>,
    queued_bytes: usize,
    recv: Option<Receiver>,
    /// When the last receiving request ended (the disconnect delay counts from here).
    idle_since: u64,
}

/// The server side: every session of one endpoint.
#[derive(Debug)]
pub struct Server {
    cfg: SockJsConfig,
    sessions: HashMap<String, Session>,
    out: VecDeque<Output>,
    next_recv: RecvId,
    /// New sessions refused at [`SockJsConfig::max_sessions`].
    refused: u64,
}

impl Server {
    pub fn new(cfg: SockJsConfig) -> Server {
        Server {
            cfg,
            sessions: HashMap::new(),
            out: VecDeque::new(),
            next_recv: 1,
            refused: 0,
        }
    }

    pub fn config(&self) -> &SockJsConfig {
        &self.cfg
    }

    /// Sessions held now (open, or closed and not yet forgotten).
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// New sessions refused so far for [`SockJsConfig::max_sessions`].
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Bytes of messages waiting for a receiving request on `sid`.
    pub fn queued(&self, sid: &str) -> Option<usize> {
        self.sessions.get(sid).map(|s| s.queued_bytes)
    }

    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// A receiving request (xhr, xhr_streaming, jsonp, eventsource, htmlfile, websocket)
    /// for session `sid` arrived. Its response is what the outputs for the returned id say:
    /// a new session is created and opened (`o`); a closed one answers `c[3000]`; one that
    /// already has a receiving request answers `c[2010]`; otherwise queued messages go out
    /// at once, or the request waits for them.
    pub fn receive(&mut self, now: u64, sid: &str, wire: Wire) -> RecvId {
        let id = self.next_recv;
        self.next_recv += 1;
        let prelude = wire.prelude();
        if !prelude.is_empty() {
            self.out.push_back(Output::Data {
                recv: id,
                bytes: prelude,
            });
        }
        let cfg_hb = self.cfg.heartbeat_ns;
        let new = !self.sessions.contains_key(sid);
        if new && self.sessions.len() >= self.cfg.max_sessions {
            self.refused += 1;
            self.out.push_back(Output::Data {
                recv: id,
                bytes: wire.encode(&close_frame(TOO_MANY.0, TOO_MANY.1)),
            });
            self.out.push_back(Output::End { recv: id });
            return id;
        }
        let s = self
            .sessions
            .entry(sid.to_string())
            .or_insert_with(|| Session {
                closed: None,
                queue: Vec::new(),
                queued_bytes: 0,
                recv: None,
                idle_since: now,
            });
        if new {
            self.out.push_back(Output::Open { sid: sid.into() });
            self.out.push_back(Output::Data {
                recv: id,
                bytes: wire.encode("o"),
            });
            if !wire.streaming() {
                self.out.push_back(Output::End { recv: id });
                s.idle_since = now;
                return id;
            }
        } else if let Some((code, reason)) = &s.closed {
            // What was sent before the close (a stream error, say) still goes first.
            if !s.queue.is_empty() {
                let msgs = std::mem::take(&mut s.queue);
                s.queued_bytes = 0;
                self.out.push_back(Output::Data {
                    recv: id,
                    bytes: wire.encode(&array_frame(&msgs)),
                });
                if !wire.streaming() {
                    self.out.push_back(Output::End { recv: id });
                    return id;
                }
            }
            self.out.push_back(Output::Data {
                recv: id,
                bytes: wire.encode(&close_frame(*code, reason)),
            });
            self.out.push_back(Output::End { recv: id });
            return id;
        } else if s.recv.is_some() {
            self.out.push_back(Output::Data {
                recv: id,
                bytes: wire.encode(&close_frame(STILL_OPEN.0, STILL_OPEN.1)),
            });
            self.out.push_back(Output::End { recv: id });
            return id;
        }
        s.recv = Some(Receiver {
            id,
            wire,
            sent: 0,
            heartbeat_at: now.saturating_add(cfg_hb),
        });
        self.flush(now, sid);
        id
    }

    /// The client went away from a receiving request (connection closed) before its end.
    /// Frames may have been lost with it, so the session is closed with
    /// `c[1002,"Connection interrupted"]` (the spec's "HandlingClose" rule): the next
    /// receiving request gets that frame (after anything still queued), and the session is
    /// forgotten after the disconnect delay.
    pub fn gone(&mut self, now: u64, recv: RecvId) {
        let sid = self.sessions.iter_mut().find_map(|(sid, s)| {
            s.recv.take_if(|r| r.id == recv)?;
            s.idle_since = now;
            Some(sid.clone())
        });
        if let Some(sid) = sid {
            self.close(now, &sid, INTERRUPTED.0, INTERRUPTED.1);
        }
    }

    /// A message from the application (the XMPP server's side) for the client: sent at
    /// once if a request is receiving, else kept for the next one.
    pub fn send(&mut self, now: u64, sid: &str, msg: String) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        if s.closed.is_some() {
            return;
        }
        s.queued_bytes += msg.len();
        s.queue.push(msg);
        self.flush(now, sid);
    }

    /// The application closes the session: the receiving request (now or next) gets
    /// `c[code,"reason"]`, later ones too until the session is forgotten.
    pub fn close(&mut self, now: u64, sid: &str, code: u16, reason: &str) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        if s.closed.is_some() {
            return;
        }
        s.closed = Some((code, reason.into()));
        // Messages already queued go first, in their own frame.
        self.flush(now, sid);
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        if let Some(r) = s.recv.take() {
            self.out.push_back(Output::Data {
                recv: r.id,
                bytes: r.wire.encode(&close_frame(code, reason)),
            });
            self.out.push_back(Output::End { recv: r.id });
            s.idle_since = now;
        }
    }

    /// Forgets a session at once (a websocket session whose connection ended).
    pub fn remove(&mut self, sid: &str) {
        if let Some(s) = self.sessions.remove(sid) {
            if let Some(r) = s.recv {
                self.out.push_back(Output::End { recv: r.id });
            }
            self.out.push_back(Output::Close { sid: sid.into() });
        }
    }

    /// Client data (an xhr_send or jsonp_send body, or a websocket message): the messages
    /// it carries, in order. A JSON string alone is taken as one message (sockjs-node does).
    pub fn client_data(&mut self, sid: &str, body: &[u8]) -> Result<Vec<String>, SendError> {
        let Some(s) = self.sessions.get(sid) else {
            return Err(SendError::UnknownSession);
        };
        if s.closed.is_some() {
            return Err(SendError::UnknownSession);
        }
        if body.len() > self.cfg.max_body {
            return Err(SendError::TooLarge);
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(SendError::Empty);
        }
        decode_messages(body).ok_or(SendError::BrokenJson)
    }

    /// Sends what is queued to the session's receiving request, if any.
    fn flush(&mut self, now: u64, sid: &str) {
        let limit = self.cfg.response_limit;
        let hb = self.cfg.heartbeat_ns;
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        let Some(r) = s.recv.as_mut() else {
            return;
        };
        if s.queue.is_empty() {
            return;
        }
        let msgs = std::mem::take(&mut s.queue);
        s.queued_bytes = 0;
        let bytes = r.wire.encode(&array_frame(&msgs));
        r.sent += bytes.len();
        r.heartbeat_at = now.saturating_add(hb);
        self.out.push_back(Output::Data { recv: r.id, bytes });
        if !r.wire.streaming() || (r.wire != Wire::WebSocket && r.sent >= limit) {
            self.out.push_back(Output::End { recv: r.id });
            s.recv = None;
            s.idle_since = now;
        }
    }

    /// The earliest time [`Server::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.sessions
            .values()
            .map(|s| match &s.recv {
                Some(r) => r.heartbeat_at,
                None => s.idle_since.saturating_add(self.cfg.disconnect_delay_ns),
            })
            .min()
    }

    /// Heartbeats for idle receiving requests; sessions without one for the disconnect
    /// delay are closed and forgotten.
    pub fn handle_timeout(&mut self, now: u64) {
        let delay = self.cfg.disconnect_delay_ns;
        let hb = self.cfg.heartbeat_ns;
        let mut dead = Vec::new();
        for (sid, s) in self.sessions.iter_mut() {
            match s.recv.as_mut() {
                Some(r) if r.heartbeat_at <= now => {
                    let bytes = r.wire.encode("h");
                    r.sent += bytes.len();
                    r.heartbeat_at = now.saturating_add(hb);
                    self.out.push_back(Output::Data { recv: r.id, bytes });
                    if !r.wire.streaming() {
                        self.out.push_back(Output::End { recv: r.id });
                        s.recv = None;
                        s.idle_since = now;
                    }
                }
                None if s.idle_since.saturating_add(delay) <= now => dead.push(sid.clone()),
                _ => {}
            }
        }
        dead.sort();
        for sid in dead {
            self.sessions.remove(&sid);
            self.out.push_back(Output::Close { sid });
        }
    }
}

/// A frame from the server, as a client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Open,
    Heartbeat,
    Messages(Vec<String>),
    Close(u16, String),
}

/// One frame's text (without its transport's wrapping). The xhr-streaming prelude (a
/// line of `h`) reads as a heartbeat.
pub fn parse_frame(f: &str) -> Option<Frame> {
    let f = f.trim_end_matches(['\r', '\n']);
    match f.as_bytes().first()? {
        b'o' if f.len() == 1 => Some(Frame::Open),
        b'h' if f.bytes().all(|b| b == b'h') => Some(Frame::Heartbeat),
        b'a' => decode_messages(&f.as_bytes()[1..])
            .filter(|_| f.as_bytes().get(1) == Some(&b'['))
            .map(Frame::Messages),
        b'm' => match json::parse(&f.as_bytes()[1..])? {
            json::Value::Str(s) => Some(Frame::Messages(vec![s])),
            _ => None,
        },
        b'c' => match json::parse(&f.as_bytes()[1..])? {
            json::Value::Arr(v) => match v.as_slice() {
                [json::Value::Num(c), json::Value::Str(r)] if (0.0..65536.0).contains(c) => {
                    Some(Frame::Close(*c as u16, r.clone()))
                }
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// Splits a receiving response's body into frames, for each transport's wrapping.
#[derive(Debug)]
pub struct StreamReader {
    wire: Wire,
    buf: Vec<u8>,
    max: usize,
}

impl StreamReader {
    /// `max`: the longest frame accepted, in bytes.
    pub fn new(wire: Wire, max: usize) -> StreamReader {
        StreamReader {
            wire,
            buf: Vec::new(),
            max,
        }
    }

    /// Body bytes in, complete frames out. `None`: bytes that are no frame of this wire.
    pub fn push(&mut self, bytes: &[u8]) -> Option<Vec<Frame>> {
        self.buf.extend_from_slice(bytes);
        let mut frames = Vec::new();
        loop {
            let (sep, skip): (&[u8], usize) = match self.wire {
                Wire::EventSource => (b"\r\n\r\n", 4),
                Wire::Jsonp(_) => (b";\r\n", 3),
                Wire::HtmlFile(_) => (b"</script>\r\n", 11),
                _ => (b"\n", 1),
            };
            let Some(at) = self.buf.windows(sep.len()).position(|w| w == sep) else {
                if self.buf.len() > self.max + 64 {
                    return None;
                }
                return Some(frames);
            };
            let item: Vec<u8> = self.buf.drain(..at + skip).take(at).collect();
            let text = std::str::from_utf8(&item).ok()?;
            let frame = match &self.wire {
                Wire::EventSource => {
                    let t = text.trim_start_matches(['\r', '\n']);
                    if t.is_empty() {
                        continue;
                    }
                    parse_frame(t.strip_prefix("data: ")?)?
                }
                Wire::HtmlFile(_) => {
                    // The prelude, if still here, ends before the frame's own script.
                    let t = &text[text.rfind("<script>\np(")? + 11..];
                    let inner = t.trim_end().strip_suffix(");")?;
                    match json::parse(inner.as_bytes())? {
                        json::Value::Str(s) => parse_frame(&s)?,
                        _ => return None,
                    }
                }
                Wire::Jsonp(cb) => {
                    let t = text.trim_start_matches("/**/");
                    let inner = t.strip_prefix(cb.as_str())?.strip_prefix('(')?;
                    let inner = inner.strip_suffix(')')?;
                    match json::parse(inner.as_bytes())? {
                        json::Value::Str(s) => parse_frame(&s)?,
                        _ => return None,
                    }
                }
                _ => parse_frame(text)?,
            };
            frames.push(frame);
        }
    }
}

/// Feeds arbitrary bytes to a server (as client data and websocket messages) and to a
/// client's frame readers, for a cargo-fuzz target: errors are expected, panics are bugs.
pub fn fuzz(bytes: &[u8]) {
    let mut s = Server::new(SockJsConfig {
        max_body: 4096,
        ..SockJsConfig::default()
    });
    let r = s.receive(0, "a", Wire::XhrStreaming);
    if let Ok(msgs) = s.client_data("a", bytes) {
        for m in msgs {
            s.send(1, "a", m);
        }
    }
    let text = String::from_utf8_lossy(bytes).into_owned();
    s.send(2, "a", text.clone());
    s.close(3, "a", 3000, &text);
    s.gone(4, r);
    s.handle_timeout(u64::MAX / 2);
    while s.poll_output().is_some() {}
    let _ = parse_frame(&text);
    for w in [
        Wire::XhrStreaming,
        Wire::EventSource,
        Wire::Jsonp("cb".into()),
        Wire::HtmlFile("cb".into()),
    ] {
        let mut rd = StreamReader::new(w, 4096);
        let half = bytes.len() / 2;
        let _ = rd.push(&bytes[..half]);
        let _ = rd.push(&bytes[half..]);
    }
}
