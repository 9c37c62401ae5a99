//! BOSH client, XEP-0124 + XEP-0206: presents one RFC 6120 stream to an XMPP client
//! engine and turns it into HTTP request bodies.
//!
//! The engine's stream header becomes the session creation request (or, after SASL
//! success, an `xmpp:restart='true'` request, §5 of XEP-0206); its stanzas ride in the next
//! request; its `</stream:stream>` becomes a `type='terminate'` request. The answers'
//! children go back to the engine, behind a stream header made from the creation answer's
//! `authid` and `from` (and another one for each restart).
//!
//! Requests: at most `requests` (from the creation answer) outstanding. With nothing
//! outstanding the client sends its queued stanzas, or an empty poll once the session is
//! up, so the manager always holds one request to answer when the server speaks; data
//! queued while one is held goes out in a second request at once (the manager then
//! answers the held one), never after a timer.

use crate::bosh::Body;
use crate::xml;
use crate::{WebError, ns};
use wirebench_xmpp::framer::{Frame, Framer};

#[derive(Debug, Clone)]
pub struct BoshClientConfig {
    /// The `to` of the creation request when the engine's header has none.
    pub to: String,
    /// `wait` asked for, seconds.
    pub wait: u64,
    /// `hold` asked for.
    pub hold: u64,
    pub max_stanza: usize,
    /// Stanzas per request stop at this many bytes (one always goes): a manager refuses
    /// bodies over its limit (`policy-violation`), and a client that queued a burst
    /// while its requests were out must not build one.
    pub max_body: usize,
}

impl BoshClientConfig {
    pub fn new(to: &str) -> BoshClientConfig {
        BoshClientConfig {
            to: to.into(),
            wait: 60,
            hold: 1,
            max_stanza: 64 * 1024,
            max_body: 64 * 1024,
        }
    }
}

#[derive(Debug)]
pub struct BoshClient {
    cfg: BoshClientConfig,
    rid: u64,
    sid: Option<String>,
    requests: u64,
    in_flight: u64,
    /// Splits the engine's output.
    framer: Framer,
    /// The engine's header, until the creation request carries it.
    create: Option<String>,
    restart: bool,
    terminate: bool,
    terminate_sent: bool,
    queue: std::collections::VecDeque<Vec<u8>>,
    to_engine: Vec<u8>,
    closed: bool,
    /// The manager's condition, if it ended the session with one.
    pub condition: Option<String>,
}

impl BoshClient {
    /// `seed` picks the first rid (XEP-0124 §14.1: random, far enough below 2^53).
    pub fn new(cfg: BoshClientConfig, seed: u64) -> BoshClient {
        let max = cfg.max_stanza;
        BoshClient {
            cfg,
            rid: 1 + (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 33),
            sid: None,
            requests: 1,
            in_flight: 0,
            framer: Framer::new(max),
            create: None,
            restart: false,
            terminate: false,
            terminate_sent: false,
            queue: std::collections::VecDeque::new(),
            to_engine: Vec::new(),
            closed: false,
            condition: None,
        }
    }

    pub fn sid(&self) -> Option<&str> {
        self.sid.as_deref()
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Requests sent and not answered yet.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Bytes the engine wrote.
    pub fn send(&mut self, bytes: &[u8]) -> Result<(), WebError> {
        if self.closed {
            return Err(WebError::Closed);
        }
        self.framer.push(bytes);
        while let Some(frame) = self.framer.next_frame()? {
            match frame {
                Frame::Header(r) => {
                    let tag = xml::start_tag(&self.framer.buf()[r])?;
                    if self.sid.is_none() && self.create.is_none() && self.in_flight == 0 {
                        self.create = Some(tag.attr("to").unwrap_or(&self.cfg.to).to_string());
                    } else {
                        // XEP-0206 §5: the manager restarts the server's stream; the new
                        // header the engine waits for is made here.
                        self.restart = true;
                        self.to_engine.extend_from_slice(self.header().as_bytes());
                    }
                }
                Frame::Element(r) => {
                    let el = xml::qualify(&self.framer.buf()[r])?;
                    self.queue.push_back(el);
                }
                Frame::End => {
                    self.terminate = true;
                    break;
                }
            }
        }
        Ok(())
    }

    fn header(&self) -> String {
        let mut s = format!(
            "<stream:stream xmlns='{}' xmlns:stream='{}' version='1.0'",
            ns::CLIENT,
            ns::STREAM
        );
        xml::push_attr(&mut s, "id", self.sid.as_deref().unwrap_or_default());
        xml::push_attr(&mut s, "from", &self.cfg.to);
        s.push('>');
        s
    }

    fn next_rid(&mut self) -> u64 {
        let r = self.rid;
        self.rid += 1;
        r
    }

    /// The next request body to POST now, if one is due.
    pub fn poll_request(&mut self) -> Option<Vec<u8>> {
        if self.closed || self.terminate_sent {
            return None;
        }
        if let Some(to) = self.create.take() {
            let rid = self.next_rid();
            let mut b = format!(
                "<body content='text/xml; charset=utf-8' xml:lang='en' ver='1.11' \
                 xmpp:version='1.0' xmlns='{}' xmlns:xmpp='{}'",
                ns::HTTPBIND,
                ns::XBOSH
            );
            xml::push_attr(&mut b, "to", &to);
            xml::push_attr(&mut b, "rid", &rid.to_string());
            xml::push_attr(&mut b, "wait", &self.cfg.wait.to_string());
            xml::push_attr(&mut b, "hold", &self.cfg.hold.to_string());
            b.push_str("/>");
            self.in_flight += 1;
            return Some(b.into_bytes());
        }
        let sid = self.sid.clone()?;
        if self.in_flight >= self.requests {
            return None;
        }
        let poll = self.in_flight == 0;
        if !(self.restart || self.terminate || !self.queue.is_empty() || poll) {
            return None;
        }
        let rid = self.next_rid();
        let mut b = format!("<body xmlns='{}' xmlns:xmpp='{}'", ns::HTTPBIND, ns::XBOSH);
        xml::push_attr(&mut b, "rid", &rid.to_string());
        xml::push_attr(&mut b, "sid", &sid);
        if self.restart {
            self.restart = false;
            xml::push_attr(&mut b, "to", &self.cfg.to);
            b.push_str(" xml:lang='en' xmpp:restart='true'/>");
            self.in_flight += 1;
            return Some(b.into_bytes());
        }
        let mut inner = Vec::new();
        while let Some(el) = self.queue.front() {
            if !inner.is_empty() && inner.len() + el.len() > self.cfg.max_body {
                break;
            }
            inner.extend_from_slice(el);
            self.queue.pop_front();
        }
        // The terminate goes with the last of the stanzas queued before it.
        if self.terminate && self.queue.is_empty() {
            b.push_str(" type='terminate'");
            self.terminate_sent = true;
        }
        let mut body = b.into_bytes();
        if inner.is_empty() {
            body.extend_from_slice(b"/>");
        } else {
            body.push(b'>');
            body.append(&mut inner);
            body.extend_from_slice(b"</body>");
        }
        self.in_flight += 1;
        Some(body)
    }

    /// The body of an answer to one of our requests.
    pub fn handle_response(&mut self, bytes: &[u8]) -> Result<(), WebError> {
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.closed {
            return Ok(());
        }
        let body = Body::parse(bytes, self.cfg.max_stanza)?;
        if self.sid.is_none() {
            let Some(sid) = body.attr("sid") else {
                self.closed = true;
                self.condition = body.attr("condition").map(str::to_string);
                return Err(WebError::Protocol(format!(
                    "the connection manager refused the session ({})",
                    body.attr("condition").unwrap_or("no sid, no condition")
                )));
            };
            self.sid = Some(sid.to_string());
            self.requests = body
                .attr("requests")
                .and_then(|r| r.parse().ok())
                .unwrap_or(2u64)
                .clamp(1, 2);
            if let Some(from) = body.attr("from") {
                self.cfg.to = from.to_string();
            }
            let mut h = self.header();
            if let Some(id) = body.attr("authid") {
                h = h.replacen(
                    &format!("id='{}'", self.sid.as_deref().unwrap_or_default()),
                    &format!("id='{id}'"),
                    1,
                );
            }
            self.to_engine.extend_from_slice(h.as_bytes());
        }
        for c in &body.children {
            self.to_engine.extend_from_slice(c);
            if xml::start_tag(c).is_ok_and(|t| xml::is_sasl_success(&t)) {
                // The engine's next header starts a new stream (RFC 6120 §6.4.6).
                self.framer.restart();
            }
        }
        if body.attr("type") == Some("terminate") {
            self.closed = true;
            self.condition = body.attr("condition").map(str::to_string);
            self.to_engine.extend_from_slice(b"</stream:stream>");
        }
        Ok(())
    }

    /// Bytes for the engine, in order.
    pub fn take_stream(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.to_engine)
    }
}
