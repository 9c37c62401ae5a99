//! XMPP over WebSocket, RFC 7395: translation between an RFC 6120 byte stream and
//! WebSocket text messages of one complete element each.
//!
//! The stream's `<stream:stream ...>` start tag becomes `<open xmlns=
//! 'urn:ietf:params:xml:ns:xmpp-framing' .../>` with the same `to`, `from`, `id`,
//! `version` and `xml:lang` (§3.3.1); `</stream:stream>` becomes `<close/>` (§3.6);
//! every other top-level element travels alone and fully qualified (§3.3.3), so
//! `<stream:features>` carries its `xmlns:stream` and stanzas their `jabber:client`.
//!
//! One [`Framing`] serves either end. A gateway in front of a TCP XMPP server passes the
//! server's bytes through [`Framing::stream_to_messages`] and each browser message
//! through [`Framing::message_to_stream`]; a native client does the same with its
//! engine's output and the server's messages. The stream that goes out of
//! [`Framing::stream_to_messages`] restarts after SASL `<success/>` in either direction
//! (RFC 6120 §6.4.6: a new header, perhaps after a new XML declaration, follows).

use crate::xml::{self, Tag};
use crate::{WebError, ns};
use wirebench_xmpp::framer::{Frame, Framer};

/// The WebSocket subprotocol an RFC 7395 client asks for and the server echoes (§3.1).
pub const SUBPROTOCOL: &str = "xmpp";

/// tungstenite's read buffer for XMPP, for the gateway's and the native client's
/// WebSocket (both use tungstenite): it zero-fills the whole buffer before every read
/// (snapview/tungstenite-rs#547), and its 128 KiB default cost a chat message's relay
/// more than it read; stanzas are small, a larger one takes a few reads.
pub const XMPP_READ_BUFFER: usize = 8 * 1024;

/// One WebSocket connection's translation state.
#[derive(Debug)]
pub struct Framing {
    /// Splits the local RFC 6120 stream (the server's output at a gateway, the engine's
    /// at a client).
    out: Framer,
    max: usize,
    /// A peer `<open/>` was seen and no `<close/>` since.
    peer_open: bool,
    peer_closed: bool,
    local_closed: bool,
}

impl Framing {
    /// `max`: the largest element accepted in either direction, in bytes.
    pub fn new(max: usize) -> Framing {
        Framing {
            out: Framer::new(max),
            max,
            peer_open: false,
            peer_closed: false,
            local_closed: false,
        }
    }

    /// Whether both directions have closed (`<close/>` both ways).
    pub fn is_closed(&self) -> bool {
        self.peer_closed && self.local_closed
    }

    /// Whether the local stream has ended (a `<close/>` was produced).
    pub fn local_closed(&self) -> bool {
        self.local_closed
    }

    /// Bytes of the local stream in, WebSocket messages out (each one element, to be sent
    /// as a text frame in this order). Partial input is kept until its element completes.
    pub fn stream_to_messages(&mut self, bytes: &[u8]) -> Result<Vec<String>, WebError> {
        if self.local_closed {
            return if bytes.iter().all(u8::is_ascii_whitespace) {
                Ok(Vec::new())
            } else {
                Err(WebError::Closed)
            };
        }
        self.out.push(bytes);
        let mut msgs = Vec::new();
        loop {
            match self.out.next_frame()? {
                None => break,
                Some(Frame::Header(r)) => {
                    let header = self.out.buf()[r].to_vec();
                    wirebench_xmpp::stanza::parse_header(&header)?;
                    let tag = xml::start_tag(&header)?;
                    msgs.push(open_from_header(&tag));
                }
                Some(Frame::Element(r)) => {
                    let el = self.out.buf()[r].to_vec();
                    let tag = xml::start_tag(&el)?;
                    let q = xml::qualify(&el)?;
                    msgs.push(String::from_utf8(q).map_err(|_| {
                        WebError::Malformed("an element is not valid UTF-8".into())
                    })?);
                    if xml::is_sasl_success(&tag) {
                        self.out.restart();
                    }
                }
                Some(Frame::End) => {
                    msgs.push(format!("<close xmlns='{}'/>", ns::FRAMING));
                    self.local_closed = true;
                    break;
                }
            }
        }
        Ok(msgs)
    }

    /// One WebSocket message from the peer in, bytes of the local stream out: `<open/>`
    /// becomes a stream header, `<close/>` the stream's end tag, anything else passes
    /// as it is once checked to be exactly one element. Whitespace alone yields nothing.
    pub fn message_to_stream(&mut self, msg: &[u8]) -> Result<Vec<u8>, WebError> {
        if self.peer_closed {
            return Err(WebError::Protocol(
                "a message after <close/> (RFC 7395 §3.6)".into(),
            ));
        }
        if msg.len() > self.max {
            return Err(WebError::TooLarge { limit: self.max });
        }
        let Some((tag, range)) = xml::one_element(msg, self.max)? else {
            return Ok(Vec::new());
        };
        let framing = tag.own_ns() == Some(ns::FRAMING);
        match tag.local() {
            "open" if framing => {
                if !tag.empty {
                    return Err(WebError::Protocol(
                        "<open> must be an empty element (RFC 7395 §3.3.1)".into(),
                    ));
                }
                self.peer_open = true;
                Ok(header_from_open(&tag).into_bytes())
            }
            "close" if framing => {
                self.peer_closed = true;
                Ok(b"</stream:stream>".to_vec())
            }
            _ if !self.peer_open => Err(WebError::Protocol(format!(
                "<{}> before <open/> (RFC 7395 §3.3.1: the first message opens the stream)",
                tag.name
            ))),
            "stream" if tag.name.contains(':') || tag.own_ns() == Some(ns::STREAM) => {
                Err(WebError::Protocol(
                    "<stream:stream> inside a WebSocket message; RFC 7395 §3.3.1 uses <open/>"
                        .into(),
                ))
            }
            _ => {
                if xml::is_sasl_success(&tag) {
                    self.out.restart();
                }
                Ok(msg[range].to_vec())
            }
        }
    }
}

const STREAM_ATTRS: &[&str] = &["to", "from", "id", "version", "xml:lang"];

fn open_from_header(tag: &Tag) -> String {
    let mut s = format!("<open xmlns='{}'", ns::FRAMING);
    for k in STREAM_ATTRS {
        if let Some(v) = tag.attr(k) {
            xml::push_attr(&mut s, k, v);
        }
    }
    s.push_str("/>");
    s
}

fn header_from_open(tag: &Tag) -> String {
    let mut s = format!(
        "<stream:stream xmlns='{}' xmlns:stream='{}'",
        ns::CLIENT,
        ns::STREAM
    );
    for k in STREAM_ATTRS {
        if let Some(v) = tag.attr(k) {
            xml::push_attr(&mut s, k, v);
        }
    }
    s.push('>');
    s
}

#[cfg(test)]
mod tests;
