//! Sans-IO browser transports for XMPP, both sides of each:
//!
//! - [`framing`]: XMPP over WebSocket, RFC 7395. Every WebSocket message carries one
//!   complete top-level element; `<open/>` and `<close/>` in
//!   `urn:ietf:params:xml:ns:xmpp-framing` replace the `<stream:stream>` start and end
//!   tags. [`framing::Framing`] translates between an RFC 6120 byte stream and those
//!   messages, in either role (a gateway in front of a TCP XMPP server, or a client whose
//!   engine speaks the TCP stream).
//! - [`bosh`]: BOSH, XEP-0124 (HTTP long polling with `rid`/`sid`, `wait`/`hold`/`requests`)
//!   and XEP-0206 (XMPP over it: `xmpp:restart`, stream features in `<body>`). [`bosh::Manager`] is the
//!   connection manager (many sessions, each in front of one RFC 6120 stream);
//!   [`bosh_client::BoshClient`] is a client presenting one RFC 6120 stream to its engine.
//! - [`sockjs`]: SockJS 0.3.3 sessions and frames (websocket, xhr-streaming, xhr-polling,
//!   jsonp-polling, eventsource, htmlfile); XMPP rides it one RFC 7395 element per SockJS
//!   message, through [`framing::Framing`].
//!
//! Neither side knows XMPP beyond the stream's framing: the XMPP engines
//! (`wirebench-xmpp`'s `Client` and `ServerSession`) keep speaking RFC 6120 streams and
//! never learn which transport carries them. No engine here blocks, reads a clock or
//! touches a socket: drivers pass bytes and `now` (nanoseconds, any monotonic origin) in
//! and take bytes and deadlines out.

pub mod bosh;
pub mod bosh_client;
pub mod framing;
pub mod sockjs;
mod xml;

#[cfg(test)]
mod testkit;

pub use bosh::{BoshConfig, Manager, Output};
pub use bosh_client::{BoshClient, BoshClientConfig};
pub use framing::Framing;

/// What went wrong with a peer's bytes, in words fit for a log line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebError {
    #[error("malformed XML: {0}")]
    Malformed(String),
    #[error("protocol violation: {0}")]
    Protocol(String),
    #[error("element larger than the limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the stream is closed")]
    Closed,
}

impl From<wirebench_xmpp::XmppError> for WebError {
    fn from(e: wirebench_xmpp::XmppError) -> Self {
        match e {
            wirebench_xmpp::XmppError::StanzaTooLarge { limit } => WebError::TooLarge { limit },
            wirebench_xmpp::XmppError::Malformed(m) => {
                // The framer words its errors for the client engine ("server sent ...").
                WebError::Malformed(m.replacen("server sent", "peer sent", 1))
            }
            other => WebError::Protocol(other.to_string()),
        }
    }
}

/// XML namespaces of the two transports and of the stream they carry.
pub mod ns {
    pub const FRAMING: &str = "urn:ietf:params:xml:ns:xmpp-framing";
    pub const HTTPBIND: &str = "http://jabber.org/protocol/httpbind";
    pub const XBOSH: &str = "urn:xmpp:xbosh";
    pub const STREAM: &str = "http://etherx.jabber.org/streams";
    pub const CLIENT: &str = "jabber:client";
    pub const SASL: &str = "urn:ietf:params:xml:ns:xmpp-sasl";
}

/// Feeds arbitrary bytes to both framing directions, for a cargo-fuzz target; errors are
/// expected, a panic or unbounded growth is a bug.
pub fn fuzz_framing(bytes: &[u8]) {
    let mut f = Framing::new(4096);
    let split = bytes.first().map_or(0, |&b| b as usize).min(bytes.len());
    let (a, b) = bytes.split_at(split);
    let _ = f.message_to_stream(a);
    let _ = f.message_to_stream(b);
    let mut g = Framing::new(4096);
    let _ = g.stream_to_messages(a);
    let _ = g.stream_to_messages(b);
}

/// Feeds arbitrary bytes to a connection manager as requests (both to a fresh manager and
/// to an established session) and as server output, and to a client as responses.
pub fn fuzz_bosh(bytes: &[u8]) {
    let cfg = BoshConfig {
        max_body: 4096,
        ..BoshConfig::default()
    };
    let mut m = Manager::new(cfg, 7);
    m.handle_request(0, 1, bytes);
    let create =
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='10' to='x' wait='10' hold='1'/>";
    m.handle_request(0, 2, create);
    let mut sid = None;
    while let Some(o) = m.poll_output() {
        if let Output::Open { sid: s } = o {
            sid = Some(s);
        }
    }
    if let Some(sid) = sid {
        m.handle_server_bytes(1, &sid, bytes);
        let req =
            format!("<body xmlns='http://jabber.org/protocol/httpbind' rid='11' sid='{sid}'>");
        let mut r = req.into_bytes();
        r.extend_from_slice(bytes);
        r.extend_from_slice(b"</body>");
        m.handle_request(2, 3, &r);
        m.handle_timeout(u64::MAX / 2);
    }
    while m.poll_output().is_some() {}
    let mut c = BoshClient::new(BoshClientConfig::new("x"), 1);
    let _ = c.send(b"<stream:stream to='x' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>");
    let _ = c.poll_request();
    let _ = c.handle_response(bytes);
    let _ = c.take_stream();
}
