//! The client engine: RFC 6120 stream negotiation (STARTTLS §5, SASL §6, resource binding
//! §7), the RFC 3921 §3 legacy session when a server still requires it, the RFC 6121 §2.2
//! roster get and initial presence (§4.2), and the runtime stanza handling of RFC 6120 §8
//! (every unhandled `get`/`set` iq is answered, XEP-0199 pings with a result).
//!
//! Sans-IO in the quinn-proto style, through `wirebench_engine::Engine` only: bytes in
//! through `handle_input`, bytes out through `poll_transmit`, what happened through
//! `poll_event`; no socket, no clock (times are arguments in nanoseconds), no thread.
//!
//! TLS is layered *below* the framer: after `<proceed/>` every received byte goes to a
//! `rustls::ClientConnection` (its own sans-IO API: `read_tls`, `process_new_packets`,
//! `reader`, `writer`, `write_tls`) and only its plaintext reaches the XML framer; every
//! byte the engine writes goes through `writer()` and leaves as TLS records. Bytes that
//! arrived in the same read as `<proceed/>` are TLS already and are handed to rustls. The
//! restarted stream header is written into rustls right after the ClientHello: rustls
//! holds it until the handshake is done and sends it together with the client's Finished,
//! which saves one one-way trip on slow links.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

use crate::error::XmppError;
use crate::framer::{Frame, Framer};
use crate::sasl::{Mechanism, Scram, ScramCache, plain_initial};
use crate::stanza::{self, NS_CLIENT, NS_STREAM, Stanza, escape_into};

const NS_TLS: &str = "urn:ietf:params:xml:ns:xmpp-tls";
const NS_SASL: &str = "urn:ietf:params:xml:ns:xmpp-sasl";
const NS_BIND: &str = "urn:ietf:params:xml:ns:xmpp-bind";
const NS_SESSION: &str = "urn:ietf:params:xml:ns:xmpp-session";
const NS_STREAMS: &str = "urn:ietf:params:xml:ns:xmpp-streams";
const NS_STANZAS: &str = "urn:ietf:params:xml:ns:xmpp-stanzas";
const NS_ROSTER: &str = "jabber:iq:roster";
const NS_PING: &str = "urn:xmpp:ping";

const ID_BIND: &str = "wb-bind";
const ID_SESSION: &str = "wb-sess";
const ID_ROSTER: &str = "wb-roster";

/// When to use STARTTLS (RFC 6120 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Never; fails if the server requires it.
    Never,
    /// When the server offers it (and a rustls config was given).
    IfOffered,
    /// Always; fails if the server does not offer it.
    Required,
}

/// What one session does.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `user@domain`.
    pub jid: String,
    pub password: String,
    pub resource: String,
    /// Stream `to` when it differs from the JID's domain.
    pub host: Option<String>,
    pub tls: TlsMode,
    /// Largest element accepted from the server, in bytes.
    pub max_stanza: usize,
    /// SASL mechanisms in order of preference; the first the server offers is used.
    pub mechanisms: Vec<Mechanism>,
    /// Fetch the roster (RFC 6121 §2.2) before [`Event::SessionEstablished`].
    pub roster: bool,
    /// Send `<presence/>` before [`Event::SessionEstablished`].
    pub initial_presence: bool,
    /// Whitespace keepalive after this much time without sending (RFC 6120 §4.6.1).
    pub keepalive_ns: Option<u64>,
}

impl ClientConfig {
    /// Defaults: resource `wirebench`, TLS if offered, 256 KiB stanzas, SCRAM-SHA-256,
    /// SCRAM-SHA-1 then PLAIN, roster and initial presence, no keepalive.
    pub fn new(jid: &str, password: &str) -> ClientConfig {
        ClientConfig {
            jid: jid.to_string(),
            password: password.to_string(),
            resource: "wirebench".into(),
            host: None,
            tls: TlsMode::IfOffered,
            max_stanza: 256 * 1024,
            mechanisms: vec![
                Mechanism::ScramSha256,
                Mechanism::ScramSha1,
                Mechanism::Plain,
            ],
            roster: true,
            initial_presence: true,
            keepalive_ns: None,
        }
    }
}

/// Coarse session state, for drivers and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Waiting for the server's stream header and features.
    Connecting,
    /// STARTTLS requested or TLS handshake in progress.
    Tls,
    Authenticating,
    /// Resource binding, legacy session, roster and presence.
    Binding,
    Established,
    Closed,
}

/// What happened, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    StreamOpened {
        id: String,
    },
    TlsEstablished,
    Authenticated {
        mechanism: Mechanism,
    },
    Bound {
        jid: String,
    },
    Roster {
        items: usize,
    },
    /// Bound (+ legacy session) + roster (if asked) + initial presence (if asked) sent.
    SessionEstablished,
    /// A message with a `<body>` (entities resolved).
    Message {
        from: String,
        id: Option<String>,
        body: String,
    },
    /// A `<message type='error'>`.
    MessageError {
        from: String,
        id: Option<String>,
        condition: String,
    },
    Presence {
        from: String,
        /// The `type` attribute (`None` = available).
        kind: Option<String>,
    },
    IqResult {
        id: String,
    },
    IqError {
        id: String,
        condition: String,
    },
    /// The server sent `<stream:error>`; [`Event::Closed`] follows.
    StreamError {
        condition: String,
        text: Option<String>,
    },
    Closed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Initial,
    Secured,
    Authenticated,
}

#[derive(Debug)]
enum Phase {
    AwaitHeader(Stage),
    AwaitFeatures(Stage),
    StartTls,
    Sasl {
        mechanism: Mechanism,
        scram: Option<Scram>,
        /// SCRAM: client-final sent, server-final expected.
        sent_final: bool,
        verified: bool,
    },
    Bind,
    Session,
    Roster,
    Established,
    Closed,
}

/// A sans-IO XMPP client session.
pub struct Client {
    cfg: ClientConfig,
    local: String,
    domain: String,
    config_error: Option<String>,
    tls_config: Option<Arc<rustls::ClientConfig>>,
    /// Boxed: a rustls connection is over a kilobyte, and most sessions of a load have none.
    tls: Option<Box<rustls::ClientConnection>>,
    tls_announced: bool,
    framer: Framer,
    stream_prefix: String,
    /// The server's stream is open (header seen, no end yet).
    peer_open: bool,
    /// We sent `</stream:stream>`.
    close_sent: bool,
    out: Vec<u8>,
    events: VecDeque<Event>,
    phase: Phase,
    session_needed: bool,
    rng: u64,
    nonce_override: Option<String>,
    cache: ScramCache,
    now_ns: u64,
    last_tx_ns: u64,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("jid", &self.cfg.jid)
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A session that has written its stream header into the transmit buffer. A JID that
    /// is not `user@domain` surfaces as [`XmppError::Usage`] from the first input.
    pub fn new(cfg: ClientConfig, tls: Option<Arc<rustls::ClientConfig>>, rng_seed: u64) -> Self {
        let (local, domain, config_error) = match cfg.jid.split_once('@') {
            Some((l, d)) if !l.is_empty() && !d.is_empty() && !d.contains(['@', '/']) => {
                (l.to_string(), d.to_string(), None)
            }
            _ => (
                String::new(),
                cfg.jid.clone(),
                Some(format!(
                    "ClientConfig::jid {:?} is not of the form user@domain",
                    cfg.jid
                )),
            ),
        };
        let mut c = Client {
            framer: Framer::new(cfg.max_stanza),
            cfg,
            local,
            domain,
            config_error,
            tls_config: tls,
            tls: None,
            tls_announced: false,
            stream_prefix: "stream".into(),
            peer_open: false,
            close_sent: false,
            out: Vec::new(),
            events: VecDeque::new(),
            phase: Phase::AwaitHeader(Stage::Initial),
            session_needed: false,
            rng: rng_seed ^ 0x9E37_79B9_7F4A_7C15,
            nonce_override: None,
            cache: ScramCache::new(),
            now_ns: 0,
            last_tx_ns: 0,
        };
        c.send_header();
        c
    }

    /// Shares a SCRAM salted-password cache with other sessions (see [`ScramCache`]).
    pub fn with_scram_cache(mut self, cache: ScramCache) -> Self {
        self.cache = cache;
        self
    }

    /// Fixes the SCRAM client nonce (tests against published vectors, reproductions);
    /// by default it comes from the seeded RNG.
    pub fn set_client_nonce(&mut self, nonce: &str) {
        self.nonce_override = Some(nonce.to_string());
    }

    pub fn state(&self) -> State {
        match self.phase {
            Phase::AwaitHeader(_) | Phase::AwaitFeatures(_)
                if self.tls.as_ref().is_some_and(|t| t.is_handshaking()) =>
            {
                State::Tls
            }
            Phase::AwaitHeader(Stage::Authenticated)
            | Phase::AwaitFeatures(Stage::Authenticated) => State::Binding,
            Phase::AwaitHeader(_) | Phase::AwaitFeatures(_) => State::Connecting,
            Phase::StartTls => State::Tls,
            Phase::Sasl { .. } => State::Authenticating,
            Phase::Bind | Phase::Session | Phase::Roster => State::Binding,
            Phase::Established => State::Established,
            Phase::Closed => State::Closed,
        }
    }

    /// Gives back buffer capacity an idle session does not need (a load generator holds
    /// many idle sessions; the server's sessions do the same).
    pub fn shrink(&mut self) {
        self.framer.shrink();
        self.out.shrink_to_fit();
        self.events.shrink_to_fit();
    }

    /// Sends `<message type='chat'>` with a body. Only once established.
    pub fn send_message(&mut self, to: &str, body: &str, id: &str) -> Result<(), XmppError> {
        if !matches!(self.phase, Phase::Established) {
            return Err(XmppError::Usage(format!(
                "send_message in state {:?}: wait for Event::SessionEstablished",
                self.state()
            )));
        }
        if to.is_empty() {
            return Err(XmppError::Usage("send_message to an empty JID".into()));
        }
        let mut s = String::with_capacity(48 + to.len() + body.len() + id.len());
        s.push_str("<message type='chat' to='");
        escape_into(&mut s, to);
        s.push_str("' id='");
        escape_into(&mut s, id);
        s.push_str("'><body>");
        escape_into(&mut s, body);
        s.push_str("</body></message>");
        self.send(&s);
        Ok(())
    }

    /// Sends a XEP-0199 ping; the answer arrives as [`Event::IqResult`] (or
    /// [`Event::IqError`]) with this id. Ignored unless established.
    pub fn send_ping(&mut self, to: &str, id: &str) {
        if !matches!(self.phase, Phase::Established) {
            return;
        }
        let mut s = String::from("<iq type='get' to='");
        escape_into(&mut s, to);
        s.push_str("' id='");
        escape_into(&mut s, id);
        s.push_str("'><ping xmlns='urn:xmpp:ping'/></iq>");
        self.send(&s);
    }

    /// Sends one space (RFC 6120 §4.6.1), the smallest thing that keeps NATs open.
    pub fn send_whitespace_keepalive(&mut self) {
        if !matches!(self.phase, Phase::Closed) {
            self.send(" ");
        }
    }

    /// Closes our stream (RFC 6120 §4.4). The server's `</stream:stream>` then yields
    /// [`Event::Closed`].
    pub fn close(&mut self) {
        if !self.close_sent && !matches!(self.phase, Phase::Closed) {
            self.send("</stream:stream>");
            self.close_sent = true;
            if let Some(tls) = &mut self.tls {
                tls.send_close_notify();
                self.flush_tls();
            }
        }
    }

    // ---- output ----

    fn send(&mut self, s: &str) {
        self.last_tx_ns = self.now_ns;
        match &mut self.tls {
            Some(tls) => {
                // rustls buffers plaintext without limit once set_buffer_limit(None) was
                // called, so this write cannot be short.
                if tls.writer().write_all(s.as_bytes()).is_ok() {
                    self.flush_tls();
                }
            }
            None => self.out.extend_from_slice(s.as_bytes()),
        }
    }

    fn flush_tls(&mut self) {
        if let Some(tls) = &mut self.tls {
            crate::tls::flush(tls, &mut self.out);
        }
    }

    fn send_header(&mut self) {
        let mut s = String::from("<?xml version='1.0'?><stream:stream to='");
        let to = self.cfg.host.clone().unwrap_or_else(|| self.domain.clone());
        escape_into(&mut s, &to);
        s.push_str(
            "' version='1.0' xmlns='jabber:client' \
             xmlns:stream='http://etherx.jabber.org/streams'>",
        );
        self.send(&s);
    }

    fn fail(&mut self, e: &XmppError) {
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        if self.peer_open && !self.close_sent {
            // Tell the server why, where RFC 6120 §4.9.3 has a condition for it.
            let cond = match e {
                XmppError::Malformed(_) => Some("not-well-formed"),
                XmppError::StanzaTooLarge { .. } => Some("policy-violation"),
                XmppError::Protocol(_) => Some("unsupported-stanza-type"),
                _ => None,
            };
            if let Some(c) = cond {
                self.send(&format!(
                    "<stream:error><{c} xmlns='{NS_STREAMS}'/></stream:error>"
                ));
            }
        }
        self.close();
        self.phase = Phase::Closed;
        self.events.push_back(Event::Closed);
    }

    // ---- input ----

    fn input(&mut self, bytes: &[u8]) -> Result<(), XmppError> {
        if self.tls.is_some() {
            self.tls_input(bytes)?;
        } else {
            self.framer.push(bytes);
        }
        while let Some(frame) = self.framer.next_frame()? {
            match frame {
                Frame::Header(r) => {
                    let h = stanza::parse_header(&self.framer.buf()[r])?;
                    self.on_header(h)?;
                }
                Frame::Element(r) => {
                    let s = stanza::parse(&self.framer.buf()[r], &self.stream_prefix)?;
                    self.on_element(s)?;
                }
                Frame::End => return self.on_end(),
            }
            if matches!(self.phase, Phase::Closed) {
                break;
            }
        }
        Ok(())
    }

    fn tls_input(&mut self, bytes: &[u8]) -> Result<(), XmppError> {
        let Some(tls) = &mut self.tls else {
            return Ok(());
        };
        let result = crate::tls::feed(tls, bytes, &mut self.framer).map_err(XmppError::Tls);
        let handshaking = tls.is_handshaking();
        // Handshake messages and alerts (also the one rustls queues on error).
        self.flush_tls();
        result?;
        if !handshaking && !self.tls_announced {
            self.tls_announced = true;
            self.events.push_back(Event::TlsEstablished);
        }
        Ok(())
    }

    fn start_tls(&mut self) -> Result<(), XmppError> {
        let Some(cfg) = self.tls_config.clone() else {
            return Err(XmppError::Negotiation("no rustls config given".into()));
        };
        let name = rustls::pki_types::ServerName::try_from(self.domain.clone()).map_err(|e| {
            XmppError::Usage(format!(
                "domain {:?} is not a TLS server name: {e}",
                self.domain
            ))
        })?;
        let mut conn = rustls::ClientConnection::new(cfg, name)
            .map_err(|e| XmppError::Tls(format!("starting TLS: {e}")))?;
        conn.set_buffer_limit(None);
        let rest = self.framer.take_unlexed();
        self.tls = Some(Box::new(conn));
        self.peer_open = false;
        self.phase = Phase::AwaitHeader(Stage::Secured);
        self.send_header();
        self.tls_input(&rest)
    }

    fn on_header(&mut self, h: stanza::StreamHeader) -> Result<(), XmppError> {
        let Phase::AwaitHeader(stage) = self.phase else {
            return Err(XmppError::Protocol(
                "server sent a second stream header".into(),
            ));
        };
        let major = h
            .version
            .as_deref()
            .and_then(|v| v.split('.').next())
            .and_then(|m| m.parse::<u32>().ok());
        if major.is_none_or(|m| m < 1) {
            return Err(XmppError::Negotiation(format!(
                "server speaks pre-XMPP-1.0 streams (version {:?}); this client needs \
                 version='1.0' (RFC 6120 §4.7.5)",
                h.version
            )));
        }
        self.stream_prefix = h.stream_prefix;
        self.peer_open = true;
        self.events.push_back(Event::StreamOpened {
            id: h.id.unwrap_or_default(),
        });
        self.phase = Phase::AwaitFeatures(stage);
        Ok(())
    }

    fn on_end(&mut self) -> Result<(), XmppError> {
        self.peer_open = false;
        let expected = matches!(self.phase, Phase::Established) || self.close_sent;
        self.close();
        self.phase = Phase::Closed;
        self.events.push_back(Event::Closed);
        if expected {
            Ok(())
        } else {
            Err(XmppError::Protocol(
                "server closed the stream before the session was established".into(),
            ))
        }
    }

    fn on_element(&mut self, s: Stanza) -> Result<(), XmppError> {
        if s.is("error", NS_STREAM) {
            let condition = first_condition(&s, 0, NS_STREAMS);
            let text = s
                .child(0, "text", Some(NS_STREAMS))
                .map(|i| s.text(i).to_string());
            self.events.push_back(Event::StreamError {
                condition: condition.clone(),
                text: text.clone(),
            });
            return Err(XmppError::Stream { condition, text });
        }
        match &mut self.phase {
            Phase::AwaitFeatures(stage) => {
                let stage = *stage;
                if !s.is("features", NS_STREAM) {
                    return Err(XmppError::Protocol(format!(
                        "expected <stream:features>, got <{}>",
                        s.name()
                    )));
                }
                self.on_features(stage, &s)
            }
            Phase::StartTls => {
                if s.is("proceed", NS_TLS) {
                    self.start_tls()
                } else if s.is("failure", NS_TLS) {
                    Err(XmppError::Negotiation("server refused STARTTLS".into()))
                } else {
                    Err(unexpected(&s, "<proceed/> after <starttls/>"))
                }
            }
            Phase::Sasl { .. } => self.on_sasl(&s),
            Phase::Bind if is_our_iq(&s, ID_BIND) => {
                if s.attr("type") != Some("result") {
                    return Err(XmppError::Negotiation(format!(
                        "resource binding refused: <{}/>",
                        stanza_error(&s)
                    )));
                }
                let jid = s
                    .child(0, "bind", Some(NS_BIND))
                    .and_then(|b| s.child(b, "jid", Some(NS_BIND)))
                    .map(|j| s.text(j).trim().to_string())
                    .filter(|j| !j.is_empty())
                    .ok_or_else(|| {
                        XmppError::Protocol("bind result without <jid> (RFC 6120 §7.6.1)".into())
                    })?;
                self.events.push_back(Event::Bound { jid });
                if self.session_needed {
                    self.send(&format!(
                        "<iq type='set' id='{ID_SESSION}'><session xmlns='{NS_SESSION}'/></iq>"
                    ));
                    self.phase = Phase::Session;
                } else {
                    self.after_session();
                }
                Ok(())
            }
            Phase::Session if is_our_iq(&s, ID_SESSION) => {
                if s.attr("type") != Some("result") {
                    return Err(XmppError::Negotiation(format!(
                        "session establishment refused: <{}/>",
                        stanza_error(&s)
                    )));
                }
                self.after_session();
                Ok(())
            }
            Phase::Roster if is_our_iq(&s, ID_ROSTER) => {
                // A roster error is not fatal: the session works without one.
                let items = s
                    .child(0, "query", Some(NS_ROSTER))
                    .map_or(0, |q| s.children(q).count());
                self.events.push_back(Event::Roster { items });
                self.established();
                Ok(())
            }
            Phase::Bind | Phase::Session | Phase::Roster | Phase::Established => self.on_stanza(&s),
            Phase::AwaitHeader(_) | Phase::Closed => Ok(()),
        }
    }

    fn after_session(&mut self) {
        if self.cfg.roster {
            self.send(&format!(
                "<iq type='get' id='{ID_ROSTER}'><query xmlns='{NS_ROSTER}'/></iq>"
            ));
            self.phase = Phase::Roster;
        } else {
            self.established();
        }
    }

    fn established(&mut self) {
        if self.cfg.initial_presence {
            self.send("<presence/>");
        }
        self.phase = Phase::Established;
        self.events.push_back(Event::SessionEstablished);
    }

    fn on_features(&mut self, stage: Stage, s: &Stanza) -> Result<(), XmppError> {
        if stage == Stage::Initial {
            let starttls = s.child(0, "starttls", Some(NS_TLS));
            let required = starttls.is_some_and(|i| s.child(i, "required", None).is_some());
            let want = match self.cfg.tls {
                TlsMode::Never => false,
                TlsMode::IfOffered => self.tls_config.is_some(),
                TlsMode::Required => true,
            };
            match (starttls.is_some(), want) {
                (true, true) => {
                    if self.tls_config.is_none() {
                        return Err(XmppError::Usage(
                            "ClientConfig::tls is Required but Client::new got no rustls config"
                                .into(),
                        ));
                    }
                    self.send(&format!("<starttls xmlns='{NS_TLS}'/>"));
                    self.phase = Phase::StartTls;
                    return Ok(());
                }
                (false, true) if self.cfg.tls == TlsMode::Required => {
                    return Err(XmppError::Negotiation(
                        "server does not offer STARTTLS but ClientConfig::tls is Required".into(),
                    ));
                }
                (true, false) if required => {
                    return Err(XmppError::Negotiation(
                        "server requires STARTTLS but TLS is disabled or no rustls config \
                         was given"
                            .into(),
                    ));
                }
                _ => {}
            }
        }
        if stage != Stage::Authenticated {
            let offered: Vec<&str> = s
                .child(0, "mechanisms", Some(NS_SASL))
                .map(|m| s.children(m).map(|i| s.text(i).trim()).collect())
                .unwrap_or_default();
            let Some(mechanism) = self
                .cfg
                .mechanisms
                .iter()
                .copied()
                .find(|m| offered.contains(&m.name()))
            else {
                return Err(XmppError::Negotiation(format!(
                    "no SASL mechanism in common: server offers {offered:?}, \
                     ClientConfig::mechanisms allows {:?}",
                    self.cfg.mechanisms
                )));
            };
            return self.start_sasl(mechanism);
        }
        if s.child(0, "bind", Some(NS_BIND)).is_none() {
            return Err(XmppError::Negotiation(
                "server does not offer resource binding after authentication (RFC 6120 §7.2)"
                    .into(),
            ));
        }
        // RFC 3921 §3 session: only when offered and not marked optional (RFC 6121 App. E).
        self.session_needed = s
            .child(0, "session", Some(NS_SESSION))
            .is_some_and(|i| s.child(i, "optional", None).is_none());
        let mut iq = format!("<iq type='set' id='{ID_BIND}'><bind xmlns='{NS_BIND}'>");
        if !self.cfg.resource.is_empty() {
            iq.push_str("<resource>");
            escape_into(&mut iq, &self.cfg.resource);
            iq.push_str("</resource>");
        }
        iq.push_str("</bind></iq>");
        self.send(&iq);
        self.phase = Phase::Bind;
        Ok(())
    }

    fn start_sasl(&mut self, mechanism: Mechanism) -> Result<(), XmppError> {
        let (initial, scram) = if mechanism == Mechanism::Plain {
            (plain_initial(&self.local, &self.cfg.password), None)
        } else {
            let nonce = match &self.nonce_override {
                Some(n) => n.clone(),
                None => self.nonce(),
            };
            let scram = Scram::new(mechanism, &self.local, &self.cfg.password, &nonce)
                .ok_or_else(|| XmppError::Usage("not a SCRAM mechanism".into()))?;
            (scram.client_first(), Some(scram))
        };
        self.send(&format!(
            "<auth xmlns='{NS_SASL}' mechanism='{}'>{}</auth>",
            mechanism.name(),
            B64.encode(initial)
        ));
        self.phase = Phase::Sasl {
            mechanism,
            scram,
            sent_final: false,
            verified: false,
        };
        Ok(())
    }

    /// 24 base64 characters from the seeded xorshift64* generator.
    fn nonce(&mut self) -> String {
        let mut bytes = Vec::with_capacity(24);
        while bytes.len() < 18 {
            let x = &mut self.rng;
            *x ^= *x >> 12;
            *x ^= *x << 25;
            *x ^= *x >> 27;
            bytes.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        bytes.truncate(18);
        B64.encode(bytes)
    }

    fn on_sasl(&mut self, s: &Stanza) -> Result<(), XmppError> {
        let Phase::Sasl {
            mechanism,
            scram,
            sent_final,
            verified,
        } = &mut self.phase
        else {
            return Ok(());
        };
        let mechanism = *mechanism;
        if s.ns() != NS_SASL {
            return Err(unexpected(s, "a SASL element"));
        }
        let data = || {
            let t = s.text(0).trim();
            if t == "=" {
                return Ok(Vec::new());
            }
            B64.decode(t).map_err(|e| {
                XmppError::Auth(format!("server's SASL <{}> is not base64: {e}", s.name()))
            })
        };
        match s.name() {
            "challenge" => {
                let Some(sc) = scram else {
                    return Err(XmppError::Auth(
                        "server sent a SASL challenge to PLAIN, which has none".into(),
                    ));
                };
                let reply = if !*sent_final {
                    *sent_final = true;
                    B64.encode(sc.client_final(&data()?, &self.cache)?)
                } else {
                    // Server-final as a challenge (RFC 6120 §6.4.3): verify, empty reply.
                    sc.verify_server_final(&data()?)?;
                    *verified = true;
                    String::new()
                };
                self.send(&format!("<response xmlns='{NS_SASL}'>{reply}</response>"));
                Ok(())
            }
            "success" => {
                if let Some(sc) = scram {
                    if !*sent_final {
                        return Err(XmppError::Auth(
                            "server sent SASL success before the client proved the password".into(),
                        ));
                    }
                    if !*verified {
                        // Server-final rides in <success> (RFC 6120 §6.3.10).
                        sc.verify_server_final(&data()?)?;
                    }
                }
                self.events.push_back(Event::Authenticated { mechanism });
                self.framer.restart();
                self.peer_open = false;
                self.phase = Phase::AwaitHeader(Stage::Authenticated);
                self.send_header();
                Ok(())
            }
            "failure" => {
                let cond = first_condition(s, 0, NS_SASL);
                let text = s
                    .child(0, "text", Some(NS_SASL))
                    .map(|i| format!(": {}", s.text(i)))
                    .unwrap_or_default();
                Err(XmppError::Auth(format!(
                    "server refused {} authentication with <{cond}/>{text}",
                    mechanism.name()
                )))
            }
            _ => Err(unexpected(s, "<challenge>, <success> or <failure>")),
        }
    }

    /// Runtime stanzas (RFC 6120 §8, RFC 6121).
    fn on_stanza(&mut self, s: &Stanza) -> Result<(), XmppError> {
        if s.ns() != NS_CLIENT {
            return Err(XmppError::Protocol(format!(
                "unsupported top-level element <{}> in namespace {:?}",
                s.name(),
                s.ns()
            )));
        }
        let from = s.attr("from").unwrap_or_default().to_string();
        let id = s.attr("id").map(str::to_string);
        match s.name() {
            "message" => {
                if s.attr("type") == Some("error") {
                    self.events.push_back(Event::MessageError {
                        from,
                        id,
                        condition: stanza_error(s),
                    });
                } else if let Some(b) = s.child(0, "body", Some(NS_CLIENT)) {
                    self.events.push_back(Event::Message {
                        from,
                        id,
                        body: s.text(b).to_string(),
                    });
                }
                Ok(())
            }
            "presence" => {
                self.events.push_back(Event::Presence {
                    from,
                    kind: s.attr("type").map(str::to_string),
                });
                Ok(())
            }
            "iq" => {
                let id = id.unwrap_or_default();
                match s.attr("type") {
                    Some("result") => self.events.push_back(Event::IqResult { id }),
                    Some("error") => self.events.push_back(Event::IqError {
                        id,
                        condition: stanza_error(s),
                    }),
                    Some(t @ ("get" | "set")) => {
                        let payload = s.children(0).next();
                        let is = |name, ns| {
                            payload.is_some_and(|p| s.nodes[p].name == name && s.nodes[p].ns == ns)
                        };
                        // XEP-0199 §4 ping; RFC 6121 §2.1.6 roster push must be acknowledged.
                        let ok = (t == "get" && is("ping", NS_PING))
                            || (t == "set" && is("query", NS_ROSTER));
                        self.reply_iq(&from, &id, ok);
                    }
                    _ => {}
                }
                Ok(())
            }
            other => Err(XmppError::Protocol(format!(
                "unsupported stanza type <{other}> (RFC 6120 §8 knows message, presence, iq)"
            ))),
        }
    }

    fn reply_iq(&mut self, to: &str, id: &str, ok: bool) {
        let mut r = String::from("<iq type='");
        r.push_str(if ok { "result" } else { "error" });
        r.push_str("' id='");
        escape_into(&mut r, id);
        if !to.is_empty() {
            r.push_str("' to='");
            escape_into(&mut r, to);
        }
        if ok {
            r.push_str("'/>");
        } else {
            // RFC 6120 §8.2.3 / §8.3.3.19.
            r.push_str(
                "'><error type='cancel'><service-unavailable \
                 xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>",
            );
        }
        self.send(&r);
    }
}

fn is_our_iq(s: &Stanza, id: &str) -> bool {
    s.is("iq", NS_CLIENT)
        && s.attr("id") == Some(id)
        && matches!(s.attr("type"), Some("result" | "error"))
}

fn unexpected(s: &Stanza, wanted: &str) -> XmppError {
    XmppError::Protocol(format!(
        "expected {wanted}, got <{}> in namespace {:?}",
        s.name(),
        s.ns()
    ))
}

/// The first child of `idx` in `ns` that is not `<text>`: the defined condition.
fn first_condition(s: &Stanza, idx: usize, ns: &str) -> String {
    s.children(idx)
        .find(|&i| s.nodes[i].ns == ns && s.nodes[i].name != "text")
        .map(|i| s.nodes[i].name.clone())
        .unwrap_or_else(|| "undefined-condition".into())
}

/// The condition of a stanza's `<error>` child (RFC 6120 §8.3).
fn stanza_error(s: &Stanza) -> String {
    match s.child(0, "error", None) {
        Some(e) => first_condition(s, e, NS_STANZAS),
        None => "undefined-condition".into(),
    }
}

/// The one engine shape (`wirebench-engine`): the only way bytes, time and events pass
/// between a driver and the session.
impl wirebench_engine::Engine for Client {
    type Event = Event;
    type Error = XmppError;

    /// Feeds bytes received from the transport. An error ends the session: the engine
    /// queues a stream error / `</stream:stream>` for the server where useful, emits
    /// [`Event::Closed`] and refuses further input with [`XmppError::Closed`].
    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), XmppError> {
        if matches!(self.phase, Phase::Closed) {
            return Err(XmppError::Closed);
        }
        self.now_ns = now;
        let r = match self.config_error.take() {
            Some(e) => Err(XmppError::Usage(e)),
            None => self.input(data),
        };
        if let Err(e) = &r {
            self.fail(e);
        }
        r
    }

    /// The transport reached end of file. `Ok` only if the stream had been closed
    /// cleanly; otherwise the error says what was cut off.
    fn handle_eof(&mut self) -> Result<(), XmppError> {
        if matches!(self.phase, Phase::Closed) {
            return Ok(());
        }
        let held = self.framer.buffered();
        let e = if held > 0 {
            XmppError::Malformed(format!(
                "connection closed in the middle of an element ({held} bytes unfinished)"
            ))
        } else {
            XmppError::Protocol("server closed the connection without closing the stream".into())
        };
        self.peer_open = false;
        self.fail(&e);
        Err(e)
    }

    /// Everything queued since the last call (already TLS-encrypted when TLS is on).
    /// Into an empty `buf` the queue is swapped rather than copied.
    fn poll_transmit(&mut self, _now: u64, buf: &mut Vec<u8>) -> usize {
        crate::hand_over(&mut self.out, buf)
    }

    /// The whitespace keepalive's time, if one is configured and the session is up.
    fn poll_timeout(&self) -> Option<u64> {
        match (self.cfg.keepalive_ns, &self.phase) {
            (Some(k), Phase::Established) if !self.close_sent => {
                Some(self.last_tx_ns.saturating_add(k))
            }
            _ => None,
        }
    }

    /// Sends the keepalive if it is due; never fails.
    fn handle_timeout(&mut self, now: u64) -> Result<(), XmppError> {
        self.now_ns = now;
        if self.poll_timeout().is_some_and(|t| now >= t) {
            self.send_whitespace_keepalive();
        }
        Ok(())
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
