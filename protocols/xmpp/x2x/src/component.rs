//! The gateway's side of an XEP-0114 (Jabber Component Protocol) connection to the local
//! XMPP server, sans-IO: stream open, handshake, then stanzas both ways.
//!
//! ```text
//! gateway → server  <stream:stream xmlns='jabber:component:accept'
//!                     xmlns:stream='http://etherx.jabber.org/streams' to='b.test'>
//! server → gateway  <?xml version='1.0'?><stream:stream ... id='ID' from='b.test'>
//! gateway → server  <handshake>hex(SHA-1(ID + secret))</handshake>
//! server → gateway  <handshake/>            (or <stream:error><not-authorized/>...)
//! ```
//!
//! XEP-0114 §3 asks for the lowercase hex SHA-1 of the stream id concatenated with the
//! shared secret. No `version` is sent: XEP-0114 predates stream features, and Prosody
//! sends none to components. Facts about Prosody relied on (0.12, `mod_component`):
//! the header must carry `to` naming a configured `Component` (else `host-unknown`); a
//! second connection for the same component is refused with `conflict` unless
//! `component_conflict_resolve = "kick_old"`; stanzas from the component must have a
//! `from` in the component's domain (`validate_from_addresses`, on by default) or the
//! stream is closed with `invalid-from`; stanzas to the component arrive without
//! `xmlns` (they inherit `jabber:component:accept`); Prosody sends a single space as a
//! keepalive when the connection is idle.

use quick_xml::Reader;
use quick_xml::events::Event as XmlEvent;
use sha1::{Digest, Sha1};
use wirebench_xmpp::framer::{Frame, Framer};
use wirebench_xmpp::stanza::{NS_STREAM, escape_into};

use crate::xml::{self, Element, NS_COMPONENT};

/// Why a component connection ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComponentError {
    #[error("malformed XML from the XMPP server: {0}")]
    Malformed(String),
    #[error("the XMPP server sent an element larger than max_stanza ({limit} bytes)")]
    TooLarge { limit: usize },
    #[error("the XMPP server closed the component stream with <{condition}/>{}", text_suffix(.text))]
    StreamError {
        condition: String,
        text: Option<String>,
    },
    #[error("protocol violation by the XMPP server: {0}")]
    Protocol(String),
    #[error("the XMPP server closed the component stream")]
    Closed,
}

fn text_suffix(t: &Option<String>) -> String {
    t.as_ref().map(|t| format!(": {t}")).unwrap_or_default()
}

/// What the component connection produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComponentEvent {
    /// `<handshake/>` arrived: stanzas may flow.
    Ready,
    /// A stanza from the server for the remote domains (bytes as received).
    Stanza(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitHeader,
    AwaitHandshake,
    Ready,
    Closed,
}

/// One component connection for the domain `domain`.
#[derive(Debug)]
pub struct ComponentConn {
    domain: String,
    secret: String,
    phase: Phase,
    framer: Framer,
    out: Vec<u8>,
    events: std::collections::VecDeque<ComponentEvent>,
}

impl ComponentConn {
    /// Starts the stream: the header is the first thing to transmit.
    pub fn new(domain: &str, secret: &str, max_stanza: usize) -> ComponentConn {
        let mut header = String::from(
            "<stream:stream xmlns='jabber:component:accept' \
             xmlns:stream='http://etherx.jabber.org/streams' to='",
        );
        escape_into(&mut header, domain);
        header.push_str("'>");
        ComponentConn {
            domain: domain.to_string(),
            secret: secret.to_string(),
            phase: Phase::AwaitHeader,
            framer: Framer::new(max_stanza),
            out: header.into_bytes(),
            events: Default::default(),
        }
    }

    pub fn domain(&self) -> &str {
        &self.domain
    }

    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        (!self.out.is_empty()).then(|| std::mem::take(&mut self.out))
    }

    pub fn poll_event(&mut self) -> Option<ComponentEvent> {
        self.events.pop_front()
    }

    /// Queues `</stream:stream>` (XEP-0114 streams end like RFC 6120 streams).
    pub fn close(&mut self) {
        if self.phase != Phase::Closed {
            self.out.extend_from_slice(xml::STREAM_CLOSE);
            self.phase = Phase::Closed;
        }
    }

    fn fail(&mut self, e: ComponentError) -> Result<(), ComponentError> {
        self.phase = Phase::Closed;
        Err(e)
    }

    /// Bytes read from the server. After an error the connection is over.
    pub fn handle_input(&mut self, bytes: &[u8]) -> Result<(), ComponentError> {
        if self.phase == Phase::Closed {
            return Err(ComponentError::Closed);
        }
        self.framer.push(bytes);
        loop {
            let frame = match self.framer.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => return Ok(()),
                Err(wirebench_xmpp::XmppError::StanzaTooLarge { limit }) => {
                    return self.fail(ComponentError::TooLarge { limit });
                }
                Err(e) => return self.fail(ComponentError::Malformed(e.to_string())),
            };
            match frame {
                Frame::Header(r) => {
                    let raw = self.framer.buf().get(r).unwrap_or(&[]).to_vec();
                    self.handle_header(&raw)?;
                }
                Frame::Element(r) => {
                    let raw = self.framer.buf().get(r).unwrap_or(&[]).to_vec();
                    self.handle_element(raw)?;
                }
                Frame::End => return self.fail(ComponentError::Closed),
            }
        }
    }

    fn handle_header(&mut self, raw: &[u8]) -> Result<(), ComponentError> {
        if self.phase != Phase::AwaitHeader {
            return self.fail(ComponentError::Protocol("a second stream header".into()));
        }
        let id = match parse_header(raw) {
            Ok(v) => v,
            Err(e) => return self.fail(ComponentError::Malformed(e)),
        };
        let Some(id) = id else {
            return self.fail(ComponentError::Protocol(
                "the stream header has no 'id' (XEP-0114 §3 needs it for the handshake)".into(),
            ));
        };
        let digest = Sha1::digest(format!("{id}{}", self.secret).as_bytes());
        let mut hs = String::from("<handshake>");
        for b in digest {
            hs.push_str(&format!("{b:02x}"));
        }
        hs.push_str("</handshake>");
        self.out.extend_from_slice(hs.as_bytes());
        self.phase = Phase::AwaitHandshake;
        Ok(())
    }

    fn handle_element(&mut self, raw: Vec<u8>) -> Result<(), ComponentError> {
        let el = match xml::normalise(&raw, NS_COMPONENT) {
            Ok(el) => el,
            Err(e) => return self.fail(ComponentError::Malformed(e)),
        };
        match (&el, self.phase) {
            (Element::Other { name, ns, .. }, _) if ns == NS_STREAM && name == "error" => {
                let (condition, text) = stream_error(&raw);
                self.fail(ComponentError::StreamError { condition, text })
            }
            (Element::Other { name, ns, .. }, Phase::AwaitHandshake)
                if name == "handshake" && ns == NS_COMPONENT =>
            {
                self.phase = Phase::Ready;
                self.events.push_back(ComponentEvent::Ready);
                Ok(())
            }
            (Element::Stanza(_), Phase::Ready) => {
                self.events.push_back(ComponentEvent::Stanza(raw));
                Ok(())
            }
            (Element::Other { name, ns, .. }, _) => self.fail(ComponentError::Protocol(format!(
                "unexpected <{name} xmlns='{ns}'> on the component stream"
            ))),
            (Element::Stanza(_), _) => self.fail(ComponentError::Protocol(
                "a stanza before the handshake completed".into(),
            )),
        }
    }
}

/// The header's `id`, after checking that this is a component stream.
fn parse_header(raw: &[u8]) -> Result<Option<String>, String> {
    let mut r = Reader::from_reader(raw);
    let start = match r.read_event().map_err(|e| e.to_string())? {
        XmlEvent::Start(s) => s,
        other => return Err(format!("expected the stream header, got {other:?}")),
    };
    let mut id = None;
    let mut prefix = None;
    let mut default_ns = None;
    for a in start.attributes() {
        let a = a.map_err(|e| e.to_string())?;
        let v = a.unescape_value().map_err(|e| e.to_string())?.into_owned();
        match a.key.as_ref() {
            b"id" => id = Some(v),
            b"xmlns" => default_ns = Some(v),
            k if k.starts_with(b"xmlns:") && v == NS_STREAM => {
                prefix = Some(String::from_utf8_lossy(&k[6..]).into_owned());
            }
            _ => {}
        }
    }
    let qname = start.name();
    let local = qname.local_name();
    let own_prefix = qname
        .prefix()
        .map(|p| String::from_utf8_lossy(p.as_ref()).into_owned());
    if local.as_ref() != b"stream" || own_prefix.is_none() || own_prefix != prefix {
        return Err(format!(
            "the server's root element is <{}>, not <stream:stream> in {NS_STREAM}",
            String::from_utf8_lossy(qname.as_ref())
        ));
    }
    if default_ns.as_deref() != Some(NS_COMPONENT) {
        return Err(format!(
            "the server's stream has default namespace {default_ns:?}, not {NS_COMPONENT} \
             (is this the component port?)"
        ));
    }
    Ok(id)
}

/// The condition and text of a `<stream:error>` (RFC 6120 §4.9).
fn stream_error(raw: &[u8]) -> (String, Option<String>) {
    match wirebench_xmpp::stanza::parse(raw, "stream") {
        Ok(s) => {
            let mut condition = "undefined-condition".to_string();
            let mut text = None;
            for i in s.children(0) {
                let n = &s.nodes[i];
                if n.name == "text" {
                    text = Some(n.text.clone());
                } else {
                    condition.clone_from(&n.name);
                }
            }
            (condition, text)
        }
        Err(_) => ("undefined-condition".into(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROSODY_HEADER: &[u8] = b"<?xml version='1.0'?><stream:stream \
        xmlns:stream='http://etherx.jabber.org/streams' xml:lang='en' \
        xmlns='jabber:component:accept' id='3BF96D32' from='b.test'>";

    #[test]
    fn xep0114_handshake_digest() {
        // XEP-0114 §3 example: id 3BF96D32, secret "secret".
        let mut c = ComponentConn::new("b.test", "secret", 65536);
        let header = String::from_utf8(c.poll_transmit().unwrap()).unwrap();
        assert_eq!(
            header,
            "<stream:stream xmlns='jabber:component:accept' \
             xmlns:stream='http://etherx.jabber.org/streams' to='b.test'>"
        );
        c.handle_input(PROSODY_HEADER).unwrap();
        let hs = String::from_utf8(c.poll_transmit().unwrap()).unwrap();
        let want = {
            let d = Sha1::digest(b"3BF96D32secret");
            d.iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        assert_eq!(hs, format!("<handshake>{want}</handshake>"));
        assert!(!c.is_ready());
        c.handle_input(b" <handshake/>").unwrap();
        assert_eq!(c.poll_event(), Some(ComponentEvent::Ready));
        assert!(c.is_ready());
        // Stanzas flow, split anywhere; whitespace keepalives are ignored.
        let m =
            b"<message from='alice@a.test/r' to='bob@b.test' type='chat'><body>hi</body></message>";
        let (x, y) = m.split_at(20);
        c.handle_input(x).unwrap();
        c.handle_input(b"").unwrap();
        c.handle_input(y).unwrap();
        c.handle_input(b" ").unwrap();
        assert_eq!(c.poll_event(), Some(ComponentEvent::Stanza(m.to_vec())));
    }

    #[test]
    fn stream_errors_are_reported_with_condition_and_text() {
        let mut c = ComponentConn::new("b.test", "wrong", 65536);
        c.handle_input(PROSODY_HEADER).unwrap();
        let e = c
            .handle_input(
                b"<stream:error><not-authorized xmlns='urn:ietf:params:xml:ns:xmpp-streams'/>\
                  <text xmlns='urn:ietf:params:xml:ns:xmpp-streams'>Given token does not match \
                  calculated token</text></stream:error></stream:stream>",
            )
            .unwrap_err();
        assert_eq!(
            e,
            ComponentError::StreamError {
                condition: "not-authorized".into(),
                text: Some("Given token does not match calculated token".into())
            }
        );
        assert!(e.to_string().contains("not-authorized"));
        assert_eq!(c.handle_input(b"<x/>"), Err(ComponentError::Closed));
    }

    #[test]
    fn wrong_servers_and_garbage_are_refused() {
        for bad in [
            &b"<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' id='1'>"[..],
            b"<stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams'>",
            b"HTTP/1.1 400 Bad Request\r\n",
            b"<html>",
        ] {
            let mut c = ComponentConn::new("b.test", "s", 65536);
            assert!(c.handle_input(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        // A stanza before the handshake completed.
        let mut c = ComponentConn::new("b.test", "s", 65536);
        c.handle_input(PROSODY_HEADER).unwrap();
        assert!(matches!(
            c.handle_input(b"<message from='a@a.test' to='b@b.test'/>"),
            Err(ComponentError::Protocol(_))
        ));
        // Oversize.
        let mut c = ComponentConn::new("b.test", "s", 300);
        c.handle_input(PROSODY_HEADER).unwrap();
        c.handle_input(b"<handshake/>").unwrap();
        let big = format!("<message><body>{}</body></message>", "x".repeat(400));
        assert_eq!(
            c.handle_input(big.as_bytes()),
            Err(ComponentError::TooLarge { limit: 300 })
        );
    }

    #[test]
    fn close_sends_the_stream_end_once() {
        let mut c = ComponentConn::new("b.test", "s", 100);
        c.poll_transmit();
        c.close();
        c.close();
        assert_eq!(c.poll_transmit().unwrap(), b"</stream:stream>");
    }
}
