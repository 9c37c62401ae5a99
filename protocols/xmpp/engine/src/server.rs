//! Sans-IO XMPP server session, client-to-server (RFC 6120 streams, SASL PLAIN and
//! SCRAM-SHA-1/-256 (RFC 4616, 5802, 7677), resource
//! binding, stream errors; RFC 6121 roster get and presence; RFC 3921 §3 legacy session;
//! XEP-0199 ping): the server side of one client connection, the counterpart of
//! [`crate::Client`].
//!
//! The session knows nothing of other sessions: what crosses between them (a message to
//! another user, presence for contacts) leaves as a [`ServerEvent::Route`] or presence
//! event for the driver's router, which hands stanzas for this session back through
//! [`ServerSession::deliver`]. Accounts and rosters come from a [`Directory`] the driver
//! passes in, so one directory serves any number of sessions: the driver reaches a
//! session through `wirebench_engine::Engine` on a [`ServerEngine`], the session and the
//! directory borrowed together for the call.
//!
//! Memory is what a server holding a million idle sessions cares about: a session is a
//! small struct whose buffers are empty between stanzas (the driver may call
//! [`ServerSession::shrink`] when it goes idle); the configuration is shared.
//!
//! STARTTLS (RFC 6120 §5) runs rustls's sans-IO `ServerConnection` under the framer when
//! [`ServerConfig::tls`] is set. Not here: XEP-0198.

use crate::framer::{Frame, Framer};
use crate::sasl::{Mechanism, ScramCache, ScramServer};
use crate::stanza::{self, Stanza, escape_into};
use base64::Engine as _;
use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;
use wirebench_engine::Engine as _;

const NS_TLS: &str = "urn:ietf:params:xml:ns:xmpp-tls";
const NS_SASL: &str = "urn:ietf:params:xml:ns:xmpp-sasl";
const NS_BIND: &str = "urn:ietf:params:xml:ns:xmpp-bind";
const NS_SESSION: &str = "urn:ietf:params:xml:ns:xmpp-session";
const NS_ROSTER: &str = "jabber:iq:roster";
const NS_PING: &str = "urn:xmpp:ping";
const NS_STREAMS: &str = "urn:ietf:params:xml:ns:xmpp-streams";
const NS_STANZAS: &str = "urn:ietf:params:xml:ns:xmpp-stanzas";

/// Failed authentications before the stream is closed (RFC 6120 §6.4.5 lets the server
/// choose; a load test that gets the password wrong should fail fast).
const MAX_AUTH_FAILURES: u8 = 2;

/// Accounts and rosters, shared by every session of a server.
pub trait Directory {
    /// The password of account `user` (the local part), if it exists. SCRAM needs it
    /// (or keys derived from it) on the server side.
    fn password(&self, user: &str) -> Option<String>;
    /// Whether account `user` exists with this password.
    fn authenticate(&self, user: &str, password: &str) -> bool {
        self.password(user).is_some_and(|p| p == password)
    }
    /// The bare JIDs on `user`'s roster.
    fn roster(&self, user: &str) -> Vec<String>;
}

/// What every session of one server shares.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The domain served (`example.com`); streams `to` another one are refused.
    pub domain: String,
    /// Largest element accepted from a client, in bytes (RFC 6120 §13.12 suggests at least
    /// 10,000); larger ones get `policy-violation`.
    pub max_stanza: usize,
    /// SASL mechanisms offered, in this order.
    pub mechanisms: Vec<Mechanism>,
    /// Salted passwords for SCRAM, shared by all sessions (one PBKDF2 per account).
    pub scram_cache: ScramCache,
    /// Makes SCRAM server nonces differ between server runs.
    pub nonce_seed: u64,
    /// Offer STARTTLS (RFC 6120 §5) with this rustls configuration.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Refuse to authenticate before TLS (only with `tls`).
    pub require_tls: bool,
}

impl ServerConfig {
    /// SCRAM-SHA-256, SCRAM-SHA-1 and PLAIN offered; 64 KiB stanzas.
    pub fn new(domain: &str) -> ServerConfig {
        use std::hash::{BuildHasher, Hasher};
        // A per-process random value without a clock or an RNG crate: std's hasher keys.
        let nonce_seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        ServerConfig {
            domain: domain.to_string(),
            max_stanza: 64 * 1024,
            mechanisms: vec![
                Mechanism::ScramSha256,
                Mechanism::ScramSha1,
                Mechanism::Plain,
            ],
            scram_cache: ScramCache::new(),
            nonce_seed,
            tls: None,
            require_tls: false,
        }
    }
}

/// What the driver must act on, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// The client authenticated as `user` and bound `user@domain/resource`: register the
    /// session with the router under this full JID.
    Bound { user: String, resource: String },
    /// The client sent initial (or updated) available presence: broadcast `stanza` (its
    /// presence, `from` stamped) to its online contacts and send it theirs.
    Available { stanza: Vec<u8> },
    /// The client went unavailable (presence `unavailable`, or the stream ended after
    /// presence was sent): tell its online contacts with `stanza`.
    Unavailable { stanza: Vec<u8> },
    /// A stanza for another entity, `from` stamped with this session's full JID: deliver
    /// it to `to` (a bare or full JID) with [`ServerSession::deliver`] on its session, or
    /// bounce it.
    Route { to: String, stanza: Vec<u8> },
    /// The session is over: write what [`ServerEngine`]'s `poll_transmit` still holds,
    /// then close the connection. `error` is the stream error sent, if any.
    Closed { error: Option<String> },
}

/// Whether a [`ServerEvent::Closed`] error says the client sent what is not XMPP or is
/// over a cap (bytes that do not parse, a stanza over the limit, a broken TLS layer), as
/// a prober or an attacker would; not a failed login, an unknown host or a shutdown,
/// which a misconfigured real client meets too. The server bans a source that keeps
/// doing it (`wirebench_net::ban`).
pub fn closed_for_input(error: &str) -> bool {
    const CONDITIONS: [&str; 5] = [
        "not-well-formed",
        "invalid-xml",
        "invalid-namespace",
        "unsupported-stanza-type",
        "TLS:",
    ];
    CONDITIONS.iter().any(|c| error.starts_with(c))
        || error.starts_with("policy-violation: stanzas are limited")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the client's stream header; `true` after SASL success.
    AwaitHeader {
        authenticated: bool,
    },
    /// Stream open, SASL not done.
    Auth,
    /// SCRAM server-first sent; client-final expected in `<response>`.
    Scram,
    /// Authenticated stream open, no resource bound.
    Bind,
    Bound,
    Closed,
}

/// One client connection's server side.
pub struct ServerSession {
    cfg: Arc<ServerConfig>,
    framer: Framer,
    phase: Phase,
    prefix: String,
    stream_id: u64,
    /// The authenticated local part, then `user@domain/resource` once bound.
    user: String,
    full_jid: String,
    auth_failures: u8,
    scram: Option<Box<ScramServer>>,
    /// TLS after STARTTLS; boxed, so sessions without TLS stay small.
    tls: Option<Box<rustls::ServerConnection>>,
    /// Our stream header of the current stream was written.
    stream_open: bool,
    /// Available presence was sent (so ending the session must announce unavailability).
    available: bool,
    out: Vec<u8>,
    events: VecDeque<ServerEvent>,
}

impl std::fmt::Debug for ServerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSession")
            .field("phase", &self.phase)
            .field("jid", &self.full_jid)
            .finish_non_exhaustive()
    }
}

impl ServerSession {
    /// A session for a new connection; `stream_id` must be unique per server (it goes
    /// into the stream header's `id`).
    pub fn new(cfg: Arc<ServerConfig>, stream_id: u64) -> ServerSession {
        ServerSession {
            framer: Framer::new(cfg.max_stanza),
            cfg,
            phase: Phase::AwaitHeader {
                authenticated: false,
            },
            prefix: "stream".into(),
            stream_id,
            user: String::new(),
            full_jid: String::new(),
            auth_failures: 0,
            scram: None,
            tls: None,
            stream_open: false,
            available: false,
            out: Vec::new(),
            events: VecDeque::new(),
        }
    }

    /// The bound full JID (empty before binding).
    pub fn jid(&self) -> &str {
        &self.full_jid
    }

    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Gives back buffer capacity an idle session does not need.
    pub fn shrink(&mut self) {
        self.framer.shrink();
        self.out.shrink_to_fit();
        self.events.shrink_to_fit();
    }

    /// Bytes held in buffers (for memory accounting).
    pub fn buffered(&self) -> usize {
        self.framer.buffered() + self.out.len()
    }

    /// A stanza routed to this session (already `from`-stamped by its sender's session).
    pub fn deliver(&mut self, stanza: &[u8]) {
        if self.phase == Phase::Bound {
            self.send(stanza);
        }
    }

    /// Ends the session from the server side (shutdown): `system-shutdown`.
    pub fn close(&mut self) {
        self.stream_error("system-shutdown", None);
    }

    /// Bytes read from the client ([`ServerEngine`]'s `handle_input`).
    fn input(&mut self, bytes: &[u8], dir: &dyn Directory) {
        if self.phase == Phase::Closed {
            return;
        }
        if self.tls.is_some() {
            if let Err(e) = self.tls_input(bytes) {
                // No stream error: the TLS layer is what failed, it cannot carry one.
                self.phase = Phase::Closed;
                self.events.push_back(ServerEvent::Closed {
                    error: Some(format!("TLS: {e}")),
                });
                return;
            }
        } else {
            self.framer.push(bytes);
        }
        while self.phase != Phase::Closed {
            let frame = match self.framer.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(crate::XmppError::StanzaTooLarge { limit }) => {
                    self.stream_error(
                        "policy-violation",
                        Some(&format!("stanzas are limited to {limit} bytes")),
                    );
                    break;
                }
                Err(e @ crate::XmppError::Protocol(_)) => {
                    // RFC 6120 §4.9.3.24: a level-1 element the server does not support.
                    self.stream_error("unsupported-stanza-type", Some(&client_said(&e)));
                    break;
                }
                Err(e) => {
                    self.stream_error("not-well-formed", Some(&client_said(&e)));
                    break;
                }
            };
            match frame {
                Frame::Header(r) => {
                    let bytes = self.framer.buf()[r].to_vec();
                    self.on_header(&bytes);
                }
                Frame::Element(r) => {
                    let parsed = stanza::parse(&self.framer.buf()[r.clone()], &self.prefix);
                    match parsed {
                        Ok(s) => {
                            let raw = self.framer.buf()[r].to_vec();
                            self.on_element(&s, &raw, dir);
                        }
                        Err(e) => self.stream_error("not-well-formed", Some(&client_said(&e))),
                    }
                }
                Frame::End => {
                    self.send(b"</stream:stream>");
                    self.finish(None);
                }
            }
        }
    }

    /// Queues bytes for the client, through TLS once it is on.
    fn send(&mut self, bytes: &[u8]) {
        match &mut self.tls {
            Some(tls) => {
                // Unlimited plaintext buffer (set at start): the write cannot be short.
                let _ = tls.writer().write_all(bytes);
                self.flush_tls();
            }
            None => self.out.extend_from_slice(bytes),
        }
    }

    fn flush_tls(&mut self) {
        if let Some(tls) = &mut self.tls {
            crate::tls::flush(tls, &mut self.out);
        }
    }

    fn tls_input(&mut self, bytes: &[u8]) -> Result<(), String> {
        let Some(tls) = &mut self.tls else {
            return Ok(());
        };
        let result = crate::tls::feed(tls, bytes, &mut self.framer);
        // Handshake messages and alerts (also the one rustls queues on error).
        self.flush_tls();
        result
    }

    /// `<starttls/>`: `<proceed/>` in the clear, then TLS; the client restarts its stream
    /// inside it (RFC 6120 §5.4.3.3).
    fn start_tls(&mut self) {
        let Some(cfg) = self.cfg.tls.clone() else {
            return;
        };
        self.send(b"<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>");
        let mut conn = match rustls::ServerConnection::new(cfg) {
            Ok(c) => c,
            Err(e) => {
                self.send(b"<failure xmlns='urn:ietf:params:xml:ns:xmpp-tls'/></stream:stream>");
                self.finish(Some(format!("TLS: {e}")));
                return;
            }
        };
        conn.set_buffer_limit(None);
        let rest = self.framer.take_unlexed();
        self.tls = Some(Box::new(conn));
        self.stream_open = false;
        self.phase = Phase::AwaitHeader {
            authenticated: false,
        };
        if let Err(e) = self.tls_input(&rest) {
            self.phase = Phase::Closed;
            self.events.push_back(ServerEvent::Closed {
                error: Some(format!("TLS: {e}")),
            });
        }
    }

    fn on_header(&mut self, bytes: &[u8]) {
        let authenticated = match self.phase {
            Phase::AwaitHeader { authenticated } => authenticated,
            _ => {
                self.stream_error("invalid-xml", Some("a second stream header"));
                return;
            }
        };
        // Our header goes out first: a stream error needs an open stream (§4.9.1.2).
        let mut h = String::with_capacity(256);
        h.push_str(
            "<?xml version='1.0'?><stream:stream xmlns='jabber:client' \
             xmlns:stream='http://etherx.jabber.org/streams' id='",
        );
        h.push_str(&format!("{:x}", self.stream_id));
        h.push_str("' from='");
        escape_into(&mut h, &self.cfg.domain);
        h.push_str("' version='1.0' xml:lang='en'>");
        self.send(h.as_bytes());
        self.stream_open = true;
        let header = match stanza::parse_header(bytes) {
            Ok(header) => header,
            Err(e) => {
                self.stream_error("invalid-namespace", Some(&e.to_string()));
                return;
            }
        };
        self.prefix = header.stream_prefix;
        if header.to.as_deref() != Some(self.cfg.domain.as_str()) {
            self.stream_error("host-unknown", None);
            return;
        }
        if authenticated {
            self.send(
                b"<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/>\
                  <session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session>\
                  </stream:features>",
            );
            self.phase = Phase::Bind;
        } else {
            let mut f = String::from("<stream:features>");
            let offer_tls = self.cfg.tls.is_some() && self.tls.is_none();
            if offer_tls {
                f.push_str("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'>");
                if self.cfg.require_tls {
                    f.push_str("<required/>");
                }
                f.push_str("</starttls>");
            }
            if !(offer_tls && self.cfg.require_tls) {
                f.push_str("<mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>");
                for m in &self.cfg.mechanisms {
                    f.push_str("<mechanism>");
                    f.push_str(m.name());
                    f.push_str("</mechanism>");
                }
                f.push_str("</mechanisms>");
            }
            f.push_str("</stream:features>");
            self.send(f.as_bytes());
            self.phase = Phase::Auth;
        }
    }

    fn on_element(&mut self, s: &Stanza, raw: &[u8], dir: &dyn Directory) {
        match self.phase {
            Phase::Auth => {
                if s.is("starttls", NS_TLS) && self.cfg.tls.is_some() && self.tls.is_none() {
                    self.start_tls();
                } else if s.is("auth", NS_SASL) {
                    if self.cfg.require_tls && self.tls.is_none() {
                        return self.sasl_failure("encryption-required");
                    }
                    self.on_auth(s, dir);
                } else {
                    self.stream_error("not-authorized", None);
                }
            }
            Phase::Scram => {
                if s.is("response", NS_SASL) {
                    self.on_scram_response(s);
                } else if s.is("abort", NS_SASL) {
                    self.scram = None;
                    self.send(
                        b"<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><aborted/></failure>",
                    );
                    self.phase = Phase::Auth;
                    self.auth_failed();
                } else {
                    self.stream_error("not-authorized", None);
                }
            }
            Phase::Bind => {
                if s.name() == "iq" && s.attr("type") == Some("set") {
                    if let Some(b) = s.child(0, "bind", Some(NS_BIND)) {
                        self.on_bind(s, b);
                        return;
                    }
                }
                self.stream_error("not-authorized", Some("bind a resource first"));
            }
            Phase::Bound => self.on_stanza(s, raw, dir),
            Phase::AwaitHeader { .. } | Phase::Closed => {}
        }
    }

    fn sasl_failure(&mut self, condition: &str) {
        self.send(format!("<failure xmlns='{NS_SASL}'><{condition}/></failure>").as_bytes());
        self.phase = Phase::Auth;
        self.auth_failed();
    }

    fn on_auth(&mut self, s: &Stanza, dir: &dyn Directory) {
        let mechanism = s
            .attr("mechanism")
            .and_then(Mechanism::from_name)
            .filter(|m| self.cfg.mechanisms.contains(m));
        let Some(mechanism) = mechanism else {
            return self.sasl_failure("invalid-mechanism");
        };
        if mechanism != Mechanism::Plain {
            return self.on_scram_first(mechanism, s, dir);
        }
        // RFC 4616: [authzid] NUL authcid NUL passwd.
        let decoded = base64::engine::general_purpose::STANDARD.decode(s.text(0).trim());
        let parts: Option<(String, String)> = decoded.ok().and_then(|d| {
            let mut it = d.split(|&b| b == 0);
            let (_authzid, user, pass) = (it.next()?, it.next()?, it.next()?);
            if it.next().is_some() {
                return None;
            }
            Some((
                String::from_utf8(user.to_vec()).ok()?,
                String::from_utf8(pass.to_vec()).ok()?,
            ))
        });
        let Some((user, pass)) = parts else {
            return self.sasl_failure("malformed-request");
        };
        if user.is_empty() || !dir.authenticate(&user, &pass) {
            return self.sasl_failure("not-authorized");
        }
        self.send(b"<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>");
        self.authenticated(user);
    }

    /// Success: RFC 6120 §6.4.6, both sides restart the stream; what follows is a new
    /// header.
    fn authenticated(&mut self, user: String) {
        self.user = user;
        self.stream_open = false;
        self.framer.restart();
        self.phase = Phase::AwaitHeader {
            authenticated: true,
        };
    }

    fn on_scram_first(&mut self, mechanism: Mechanism, s: &Stanza, dir: &dyn Directory) {
        let Ok(first) = base64::engine::general_purpose::STANDARD.decode(s.text(0).trim()) else {
            return self.sasl_failure("malformed-request");
        };
        let nonce = format!(
            "{:016x}{:x}",
            splitmix(self.cfg.nonce_seed ^ self.stream_id),
            self.stream_id
        );
        match ScramServer::start(
            mechanism,
            &first,
            |u| dir.password(u),
            &nonce,
            &self.cfg.scram_cache,
        ) {
            Ok((scram, server_first)) => {
                let mut c = format!("<challenge xmlns='{NS_SASL}'>");
                c.push_str(&base64::engine::general_purpose::STANDARD.encode(server_first));
                c.push_str("</challenge>");
                self.send(c.as_bytes());
                self.scram = Some(Box::new(scram));
                self.phase = Phase::Scram;
            }
            Err(_) => self.sasl_failure("malformed-request"),
        }
    }

    fn on_scram_response(&mut self, s: &Stanza) {
        let Some(scram) = self.scram.take() else {
            return self.sasl_failure("malformed-request");
        };
        let Ok(fin) = base64::engine::general_purpose::STANDARD.decode(s.text(0).trim()) else {
            return self.sasl_failure("malformed-request");
        };
        match scram.finish(&fin) {
            Ok(server_final) => {
                let mut ok = format!("<success xmlns='{NS_SASL}'>");
                ok.push_str(&base64::engine::general_purpose::STANDARD.encode(server_final));
                ok.push_str("</success>");
                self.send(ok.as_bytes());
                self.authenticated(scram.user().to_string());
            }
            Err(_) => self.sasl_failure("not-authorized"),
        }
    }

    fn auth_failed(&mut self) {
        self.auth_failures += 1;
        if self.auth_failures >= MAX_AUTH_FAILURES {
            self.stream_error("policy-violation", Some("too many failed authentications"));
        }
    }

    fn on_bind(&mut self, s: &Stanza, bind: usize) {
        let resource = s
            .child(bind, "resource", None)
            .map(|r| s.text(r).trim().to_string())
            .filter(|r| !r.is_empty() && r.len() <= 1023)
            .unwrap_or_else(|| format!("wb{:x}", self.stream_id));
        self.full_jid = format!("{}@{}/{}", self.user, self.cfg.domain, resource);
        let mut r = String::with_capacity(160);
        r.push_str("<iq type='result' id='");
        escape_into(&mut r, s.attr("id").unwrap_or(""));
        r.push_str("'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>");
        escape_into(&mut r, &self.full_jid);
        r.push_str("</jid></bind></iq>");
        self.send(r.as_bytes());
        self.phase = Phase::Bound;
        self.events.push_back(ServerEvent::Bound {
            user: self.user.clone(),
            resource,
        });
    }

    /// Whether `to` is this server itself (absent, the domain, or our bare JID for iq).
    fn for_server(&self, to: Option<&str>) -> bool {
        match to {
            None => true,
            Some(t) => t == self.cfg.domain,
        }
    }

    fn on_stanza(&mut self, s: &Stanza, raw: &[u8], dir: &dyn Directory) {
        if let Some(from) = s.attr("from") {
            let bare = self.full_jid.split('/').next().unwrap_or("");
            if from != self.full_jid && from != bare {
                self.stream_error("invalid-from", None);
                return;
            }
        }
        match s.name() {
            "iq" if self.for_server(s.attr("to")) || s.attr("to") == Some(self.bare()) => {
                self.on_server_iq(s, dir)
            }
            "presence" if s.attr("to").is_none() => {
                let stanza = self.stamped(raw);
                if s.attr("type") == Some("unavailable") {
                    self.available = false;
                    self.events.push_back(ServerEvent::Unavailable { stanza });
                } else if s.attr("type").is_none() {
                    self.available = true;
                    self.events.push_back(ServerEvent::Available { stanza });
                }
            }
            "message" | "presence" | "iq" => match s.attr("to") {
                Some(to) if !self.for_server(Some(to)) => {
                    let to = to.to_string();
                    let stanza = self.stamped(raw);
                    self.events.push_back(ServerEvent::Route { to, stanza });
                }
                // Messages and presence to the server itself: nothing to do.
                _ => {}
            },
            _ => self.stream_error("unsupported-stanza-type", None),
        }
    }

    fn bare(&self) -> &str {
        self.full_jid.split('/').next().unwrap_or("")
    }

    fn on_server_iq(&mut self, s: &Stanza, dir: &dyn Directory) {
        let kind = s.attr("type").unwrap_or("");
        if kind == "result" || kind == "error" {
            return;
        }
        let id = s.attr("id").unwrap_or("").to_string();
        let mut r = String::with_capacity(128);
        r.push_str("<iq type='result' id='");
        escape_into(&mut r, &id);
        r.push_str("' to='");
        escape_into(&mut r, &self.full_jid);
        if kind == "get" && s.child(0, "query", Some(NS_ROSTER)).is_some() {
            r.push_str("'><query xmlns='jabber:iq:roster'>");
            for jid in dir.roster(&self.user) {
                r.push_str("<item jid='");
                escape_into(&mut r, &jid);
                r.push_str("' subscription='both'/>");
            }
            r.push_str("</query></iq>");
        } else if (kind == "get" && s.child(0, "ping", Some(NS_PING)).is_some())
            || (kind == "set" && s.child(0, "session", Some(NS_SESSION)).is_some())
        {
            r.push_str("'/>");
        } else {
            r.clear();
            r.push_str("<iq type='error' id='");
            escape_into(&mut r, &id);
            r.push_str("'><error type='cancel'><service-unavailable xmlns='");
            r.push_str(NS_STANZAS);
            r.push_str("'/></error></iq>");
        }
        self.send(r.as_bytes());
    }

    /// The stanza's bytes with `from` set to this session's full JID (RFC 6120 §8.1.2.1),
    /// inserted after the element name unless the client gave a (checked) `from`.
    fn stamped(&self, raw: &[u8]) -> Vec<u8> {
        let name_end = raw
            .iter()
            .skip(1)
            .position(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
            .map_or(raw.len(), |p| p + 1);
        let has_from = {
            let tag_end = raw.iter().position(|&b| b == b'>').unwrap_or(raw.len());
            raw[..tag_end]
                .windows(6)
                .any(|w| w == b" from=" || w == b"\tfrom=" || w == b"\nfrom=")
        };
        if has_from {
            return raw.to_vec();
        }
        let mut out = Vec::with_capacity(raw.len() + self.full_jid.len() + 8);
        out.extend_from_slice(&raw[..name_end]);
        let mut attr = String::from(" from='");
        escape_into(&mut attr, &self.full_jid);
        attr.push('\'');
        out.extend_from_slice(attr.as_bytes());
        out.extend_from_slice(&raw[name_end..]);
        out
    }

    /// Sends `<stream:error>` with `condition` (RFC 6120 §4.9.3) and closes the stream.
    fn stream_error(&mut self, condition: &str, text: Option<&str>) {
        if self.phase == Phase::Closed {
            return;
        }
        if !self.stream_open {
            // No stream of ours is open yet: open one to carry the error (§4.9.1.2).
            let mut h = String::from(
                "<?xml version='1.0'?><stream:stream xmlns='jabber:client' \
                 xmlns:stream='http://etherx.jabber.org/streams' version='1.0' from='",
            );
            escape_into(&mut h, &self.cfg.domain);
            h.push_str("'>");
            self.send(h.as_bytes());
        }
        let mut e = format!("<stream:error><{condition} xmlns='{NS_STREAMS}'/>");
        if let Some(t) = text {
            e.push_str("<text xmlns='");
            e.push_str(NS_STREAMS);
            e.push_str("'>");
            escape_into(&mut e, t);
            e.push_str("</text>");
        }
        e.push_str("</stream:error></stream:stream>");
        self.send(e.as_bytes());
        let reason = match text {
            Some(t) => format!("{condition}: {t}"),
            None => condition.to_string(),
        };
        self.finish(Some(reason));
    }

    fn finish(&mut self, error: Option<String>) {
        if self.available {
            self.available = false;
            let mut p = String::from("<presence type='unavailable' from='");
            escape_into(&mut p, &self.full_jid);
            p.push_str("'/>");
            self.events.push_back(ServerEvent::Unavailable {
                stanza: p.into_bytes(),
            });
        }
        self.phase = Phase::Closed;
        self.events.push_back(ServerEvent::Closed { error });
    }
}

/// Accounts in Tsung's convention: users `PREFIX1` .. `PREFIXn` with password
/// `PASSPREFIX<N>` (same N). Each user's roster is the `contacts / 2` users after it and
/// the `contacts / 2` before it (wrapping; an odd `contacts` is rounded down), so rosters
/// are mutual, deterministic, and known without a file.
#[derive(Debug, Clone)]
pub struct NumberedAccounts {
    pub user_prefix: String,
    pub password_prefix: String,
    pub users: u64,
    pub contacts: u64,
    pub domain: String,
}

impl NumberedAccounts {
    fn number(&self, user: &str) -> Option<u64> {
        let n: u64 = user.strip_prefix(&self.user_prefix)?.parse().ok()?;
        (1..=self.users).contains(&n).then_some(n)
    }
}

impl Directory for NumberedAccounts {
    fn password(&self, user: &str) -> Option<String> {
        self.number(user)
            .map(|n| format!("{}{n}", self.password_prefix))
    }

    fn roster(&self, user: &str) -> Vec<String> {
        let Some(n) = self.number(user) else {
            return Vec::new();
        };
        let half = (self.contacts / 2).min(self.users.saturating_sub(1) / 2);
        let jid = |m: u64| format!("{}{m}@{}", self.user_prefix, self.domain);
        (1..=half)
            .map(|k| (n - 1 + k) % self.users + 1)
            .chain((1..=half).map(|k| (n - 1 + self.users - k) % self.users + 1))
            .map(jid)
            .collect()
    }
}

/// The text of a stream error for bad XML from the client. The framer and parser are the
/// client's too, and word their errors from a client's side ("server sent ...").
fn client_said(e: &crate::XmppError) -> String {
    match e {
        crate::XmppError::Malformed(m) => format!(
            "malformed XML from the client: {}",
            m.strip_prefix("server ").unwrap_or(m)
        ),
        crate::XmppError::Protocol(m) => format!(
            "protocol violation by the client: {}",
            m.strip_prefix("server ").unwrap_or(m)
        ),
        other => other.to_string(),
    }
}

/// Feeds arbitrary bytes to a fresh session, for a cargo-fuzz target. The first byte picks
/// how far the session gets first: 0 = nothing, 1 = a valid stream header, 2 = header and
/// a PLAIN login, 3 = logged in and bound. The rest is fed in two pieces split at the
/// second byte's position. A panic or a buffer beyond the stanza limit is a bug.
pub fn fuzz_input(bytes: &[u8]) {
    let Some((&mode, rest)) = bytes.split_first() else {
        return;
    };
    let dir = NumberedAccounts {
        user_prefix: "u".into(),
        password_prefix: "p".into(),
        users: 4,
        contacts: 2,
        domain: "example.com".into(),
    };
    let cfg = ServerConfig {
        max_stanza: 4096,
        ..ServerConfig::new("example.com")
    };
    let mut session = ServerSession::new(Arc::new(cfg), 1);
    let mut s = ServerEngine {
        session: &mut session,
        dir: &dir,
    };
    const HEADER: &[u8] = b"<stream:stream to='example.com' xmlns='jabber:client' \
        xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>";
    let mut script: Vec<&[u8]> = Vec::new();
    if mode % 4 >= 1 {
        script.push(HEADER);
    }
    if mode % 4 >= 2 {
        // base64("\0u1\0p1")
        script.push(
            b"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>AHUxAHAx</auth>",
        );
        script.push(HEADER);
    }
    if mode % 4 >= 3 {
        script.push(b"<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>");
    }
    let cut = rest.first().map_or(0, |&c| c as usize % (rest.len() + 1));
    script.push(&rest[..cut]);
    script.push(&rest[cut..]);
    let mut out = Vec::new();
    for part in script {
        let Ok(()) = s.handle_input(0, part);
        assert!(s.session.buffered() <= 4096 + rest.len() + 64 * 1024);
        out.clear();
        s.poll_transmit(0, &mut out);
        while s.poll_event().is_some() {}
    }
}

/// SplitMix64: a well-mixed 64-bit value from a counter (nonces, not secrets).
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A server session with the accounts it authenticates against: the one engine shape
/// (`wirebench-engine`) for a session that serves one connection, and the only way in.
/// Both are borrowed, so a driver that keeps its sessions apart from the one directory
/// (the built-in server's workers) builds one per call at no cost. Session failures are
/// stream errors sent to the client and [`ServerEvent`]s, never an `Err`.
pub struct ServerEngine<'a> {
    pub session: &'a mut ServerSession,
    pub dir: &'a dyn Directory,
}

impl wirebench_engine::Engine for ServerEngine<'_> {
    type Event = ServerEvent;
    type Error = std::convert::Infallible;

    fn handle_input(&mut self, _now: u64, data: &[u8]) -> Result<(), Self::Error> {
        self.session.input(data, self.dir);
        Ok(())
    }

    /// The client closed the connection without ending its stream.
    fn handle_eof(&mut self) -> Result<(), Self::Error> {
        if self.session.phase != Phase::Closed {
            self.session.finish(None);
        }
        Ok(())
    }

    /// Bytes to write to the client. Into an empty `buf` the queue is swapped rather than
    /// copied, so a driver that writes from its own buffer copies nothing.
    fn poll_transmit(&mut self, _now: u64, buf: &mut Vec<u8>) -> usize {
        crate::hand_over(&mut self.session.out, buf)
    }

    fn poll_event(&mut self) -> Option<ServerEvent> {
        self.session.events.pop_front()
    }
}
