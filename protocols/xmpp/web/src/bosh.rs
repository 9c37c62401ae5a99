//! BOSH connection manager, XEP-0124 (Bidirectional-streams Over Synchronous HTTP) with
//! XEP-0206 (XMPP over BOSH): many sessions, each in front of one RFC 6120 stream to an
//! XMPP server.
//!
//! The driver hands over each HTTP request's body with an id of its choosing
//! ([`Manager::handle_request`]) and whatever the XMPP server writes on a session's
//! stream ([`Manager::handle_server_bytes`]); it acts on [`Output`]s: answer request N
//! with this body, open or close a session's stream, write these bytes to it.
//!
//! What the manager does (XEP-0124 section in brackets):
//! - session creation (§7-8): a fresh random `sid`; `wait` capped by the configuration,
//!   `hold` capped at 1, `requests` = hold + 1; the creation request is answered as soon
//!   as the server's stream header arrives, with `authid` and `from` from it and whatever
//!   the server sent with it (its stream features, usually).
//! - requests (§9-§11): a request is processed in `rid` order; its stanzas go to the
//!   server at once; it is then held. A session holds at most `hold` requests: a newer one
//!   releases the oldest. **A held request is answered as soon as the server sends
//!   anything**, with everything queued: no timer of ours stands between the server's
//!   bytes and the client. Only an idle session meets a timer: a request held for `wait`
//!   seconds is answered empty (§11), a session without a held request for `inactivity`
//!   seconds ends (§8).
//! - `rid` window (§14): a `rid` up to `requests` ahead of the last processed is kept until
//!   the gap fills; a replay of one of the last `requests` answered rids gets the same
//!   answer again (§14.3); anything else ends the session with `item-not-found`.
//! - errors (§17): unknown `sid` → `item-not-found`, a body over `max_body` →
//!   `policy-violation`, an unparseable body → `bad-request`; each an HTTP 200 with a
//!   `type='terminate'` body, and any session concerned ends.
//! - acknowledgements (§9): a client whose creation request has `ack='1'` gets `ack` in
//!   the creation answer (its rid) and in every answer to a request older than the
//!   highest processed (that rid), so it can tell a lost answer from a held one; an `ack`
//!   in a client's request drops the answers kept for replay up to it (the client has
//!   them). `report`/`time` (resending a lost answer unasked, a MAY) are not offered.
//! - overactivity (§12, `polling` = 1 s): a new empty request (no stanzas, no restart, no
//!   terminate) that would make `requests` unanswered at once, less than `polling` after
//!   the previous request, ends the session with `policy-violation`. A client may keep
//!   `hold` requests waiting and add one with stanzas at any time; it may not spin.
//! - XEP-0206: `xmpp:restart='true'` sends a new stream header to the server (whose new
//!   header is swallowed, §5); `type='terminate'` forwards its stanzas, then closes the
//!   stream; the server's `</stream:stream>` ends the session with a terminate body
//!   (`remote-stream-error` if a `<stream:error>` came first, §8).
//!
//! Memory per session is bounded: at most `requests` bodies held, `requests` answers kept
//! for replay, and `max_queued` bytes of server output waiting for a request (beyond it
//! the session ends with `policy-violation`: the client stopped polling).

use crate::xml::{self, Tag};
use crate::{WebError, ns};
use std::collections::{BTreeMap, HashMap, VecDeque};
use wirebench_xmpp::framer::{Frame, Framer};

/// The driver's name for one HTTP request.
pub type ReqId = u64;

/// rid values are at most 2^53 - 1 (XEP-0124 §14.1, JavaScript's safe integers).
pub const MAX_RID: u64 = (1 << 53) - 1;

/// Limits and offers of a connection manager.
#[derive(Debug, Clone)]
pub struct BoshConfig {
    /// Longest `wait` granted, seconds.
    pub max_wait: u64,
    /// A session without a held request for this long ends, seconds.
    pub inactivity: u64,
    /// Largest request body, bytes.
    pub max_body: usize,
    /// Largest stanza (from either side), bytes.
    pub max_stanza: usize,
    /// Server output a session may queue while no request is held, bytes.
    pub max_queued: usize,
    /// Sessions at once: a request for one more is answered `terminate` with
    /// `undefined-condition`, XEP-0124 §17.2's condition for errors it does not list.
    pub max_sessions: usize,
}

impl Default for BoshConfig {
    fn default() -> Self {
        BoshConfig {
            max_wait: 60,
            inactivity: 60,
            max_body: 128 * 1024,
            max_stanza: 64 * 1024,
            max_queued: 4 << 20,
            max_sessions: 10_000,
        }
    }
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Answer request `req` with this body (HTTP 200, `text/xml; charset=utf-8`).
    Respond { req: ReqId, body: Vec<u8> },
    /// Open the session's stream to the XMPP server (writes for it follow).
    Open { sid: String },
    /// Write these bytes on the session's stream.
    ToServer { sid: String, bytes: Vec<u8> },
    /// Close the session's stream and forget it.
    Close { sid: String },
}

const NS_ATTRS: &str = "xmlns='http://jabber.org/protocol/httpbind' \
                        xmlns:xmpp='urn:xmpp:xbosh' \
                        xmlns:stream='http://etherx.jabber.org/streams'";

/// A terminate body with a condition (XEP-0124 §17.2).
pub fn terminate(condition: &str) -> Vec<u8> {
    format!(
        "<body type='terminate' condition='{condition}' xmlns='{}'/>",
        ns::HTTPBIND
    )
    .into_bytes()
}

/// A parsed request body: its attributes and its child elements (stanzas).
#[derive(Debug, Clone)]
pub struct Body {
    tag: Tag,
    pub children: Vec<Vec<u8>>,
}

impl Body {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.tag.attr(key)
    }

    /// Parses one `<body/>` in the httpbind namespace; each child at most `max_stanza`.
    pub fn parse(bytes: &[u8], max_stanza: usize) -> Result<Body, WebError> {
        let tag = xml::start_tag(bytes)?;
        if tag.local() != "body" || tag.own_ns() != Some(ns::HTTPBIND) {
            return Err(WebError::Protocol(format!(
                "the request's root is <{}>, not <body xmlns='{}'>",
                tag.name,
                ns::HTTPBIND
            )));
        }
        let mut children = Vec::new();
        let trimmed = trim(bytes);
        if tag.empty {
            // Only the declaration may precede, nothing may follow the empty tag.
            if !trimmed.ends_with(b"/>") || trimmed.iter().filter(|&&b| b == b'<').count() > 2 {
                return Err(WebError::Malformed("content after an empty <body/>".into()));
            }
            return Ok(Body { tag, children });
        }
        // The body start tag plays the framer's stream header, its children the stanzas.
        let mut f = Framer::new(max_stanza.max(256));
        f.push(bytes);
        let mut ended = false;
        while let Some(frame) = f.next_frame()? {
            match frame {
                Frame::Header(_) => {}
                Frame::Element(r) => children.push(f.buf()[r].to_vec()),
                Frame::End => {
                    ended = true;
                    break;
                }
            }
        }
        let close_ok = trimmed.ends_with(b">")
            && trimmed
                .windows(2)
                .rposition(|w| w == b"</")
                .is_some_and(|i| {
                    let inner = &trimmed[i + 2..trimmed.len() - 1];
                    inner.trim_ascii() == tag.name.as_bytes()
                });
        if !ended || !close_ok {
            return Err(WebError::Malformed(
                "the body is not one complete <body> element".into(),
            ));
        }
        Ok(Body { tag, children })
    }
}

fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

#[derive(Debug)]
struct Held {
    rid: u64,
    req: ReqId,
    deadline: u64,
}

#[derive(Debug)]
struct Session {
    /// The creation request, until the server's stream header answers it.
    creating: Option<(ReqId, u64)>,
    wait: u64,
    hold: usize,
    requests: u64,
    /// Highest rid processed (all below it were too).
    rid: u64,
    /// Requests ahead of `rid`, kept until the gap fills.
    pending: BTreeMap<u64, (ReqId, Body, u64)>,
    held: VecDeque<Held>,
    /// The last answers, by rid, for replays (§14.3).
    answered: BTreeMap<u64, Vec<u8>>,
    /// Qualified server elements not yet sent.
    queue: Vec<Vec<u8>>,
    queued: usize,
    /// Splits the server's stream.
    framer: Framer,
    /// The server's header (`id`, `from`) arrived.
    authid: Option<String>,
    from: Option<String>,
    /// The server's stream has restarted: swallow its next header.
    restarting: bool,
    /// The server ended its stream (`Some(condition)`); answer with terminate and forget.
    ended: Option<String>,
    /// When the session last had no held request (for inactivity).
    idle_since: u64,
    /// When the last new request (rid above those processed) arrived (for §12).
    last_request_at: u64,
    /// The client asked for acknowledgements (`ack='1'` at creation, §9.1).
    acks: bool,
    to: String,
    lang: Option<String>,
}

/// The connection manager: every session, keyed by sid.
#[derive(Debug)]
pub struct Manager {
    cfg: BoshConfig,
    sessions: HashMap<String, Session>,
    out: VecDeque<Output>,
    rng: u64,
    /// Session creations refused at `max_sessions`.
    refused: u64,
}

const NS: u64 = 1_000_000_000;

/// The shortest gap between two requests of a client that keeps `requests` of them
/// unanswered (the creation answer's `polling`, §12), seconds.
pub const POLLING: u64 = 1;

impl Manager {
    /// `seed` must be unpredictable to clients (sids are drawn from it; a guessed sid
    /// could hijack a session).
    pub fn new(cfg: BoshConfig, seed: u64) -> Manager {
        Manager {
            cfg,
            sessions: HashMap::new(),
            out: VecDeque::new(),
            rng: seed ^ 0x6a09_e667_f3bc_c908,
            refused: 0,
        }
    }

    pub fn config(&self) -> &BoshConfig {
        &self.cfg
    }

    /// Session creations refused so far for [`BoshConfig::max_sessions`].
    pub fn refused_sessions(&self) -> u64 {
        self.refused
    }

    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Server output waiting for the session's client, in bytes (`None`: no such
    /// session). A driver stops reading the server's stream while this is high, so a
    /// bulk transfer waits for the client instead of reaching `max_queued`.
    pub fn queued(&self, sid: &str) -> Option<usize> {
        self.sessions.get(sid).map(|s| s.queued)
    }

    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// The next instant [`Manager::handle_timeout`] has work to do.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.sessions
            .values()
            .flat_map(|s| {
                let held = s.held.iter().map(|h| h.deadline);
                let pending = s.pending.values().map(|p| p.2);
                let create = s.creating.map(|c| c.1);
                let idle = (s.held.is_empty() && s.creating.is_none())
                    .then_some(s.idle_since.saturating_add(self.cfg.inactivity * NS));
                held.chain(pending).chain(create).chain(idle)
            })
            .min()
    }

    fn next_sid(&mut self) -> String {
        let mut word = || {
            // SplitMix64: a well-mixed sequence from the secret seed.
            self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        format!("{:016x}{:016x}", word(), word())
    }

    fn respond(&mut self, req: ReqId, body: Vec<u8>) {
        self.out.push_back(Output::Respond { req, body });
    }

    /// A request whose body is over `max_body` (announced so, or found so while read):
    /// refused with `policy-violation`, ending the session its start tag names. `head` is
    /// what the driver read of the body, from its start: the start tag comes first, so a
    /// few KiB name the session without the rest being read.
    pub fn handle_too_large(&mut self, req: ReqId, head: &[u8]) {
        if let Some(sid) = xml::start_tag(head)
            .ok()
            .and_then(|t| t.attr("sid").map(str::to_string))
        {
            self.end_session(&sid, "policy-violation");
        }
        self.respond(req, terminate("policy-violation"));
    }

    /// One HTTP request's body. `body` may be cut short by the driver at `max_body + 1`
    /// bytes: anything over `max_body` is refused with `policy-violation` and ends the
    /// session it names.
    pub fn handle_request(&mut self, now: u64, req: ReqId, body: &[u8]) {
        if body.len() > self.cfg.max_body {
            self.handle_too_large(req, body);
            return;
        }
        let parsed = match Body::parse(body, self.cfg.max_stanza) {
            Ok(b) => b,
            Err(WebError::TooLarge { .. }) => {
                if let Some(sid) = xml::start_tag(body)
                    .ok()
                    .and_then(|t| t.attr("sid").map(str::to_string))
                {
                    self.end_session(&sid, "policy-violation");
                }
                self.respond(req, terminate("policy-violation"));
                return;
            }
            Err(_) => {
                // Too broken to trust its sid: the session (if any) lives on.
                self.respond(req, terminate("bad-request"));
                return;
            }
        };
        let Some(rid) = parsed.attr("rid").and_then(|r| r.parse::<u64>().ok()) else {
            self.respond(req, terminate("bad-request"));
            return;
        };
        if rid == 0 || rid > MAX_RID {
            self.respond(req, terminate("bad-request"));
            return;
        }
        match parsed.attr("sid").map(str::to_string) {
            None => self.create(now, req, rid, &parsed),
            Some(sid) => self.in_session(now, req, rid, &sid, parsed),
        }
    }

    fn create(&mut self, now: u64, req: ReqId, rid: u64, body: &Body) {
        let Some(to) = body.attr("to").filter(|t| !t.is_empty()) else {
            self.respond(req, terminate("improper-addressing"));
            return;
        };
        if self.sessions.len() >= self.cfg.max_sessions {
            self.refused += 1;
            self.respond(req, terminate("undefined-condition"));
            return;
        }
        let num = |k: &str, default: u64| {
            body.attr(k)
                .map(|v| v.parse::<u64>().map_err(|_| ()))
                .unwrap_or(Ok(default))
        };
        let (Ok(wait), Ok(hold)) = (num("wait", self.cfg.max_wait), num("hold", 1)) else {
            self.respond(req, terminate("bad-request"));
            return;
        };
        let wait = wait.min(self.cfg.max_wait);
        // hold 0 would make every request an immediate poll; we cap at 1 (the study's
        // servers' and Strophe's value): at most one request waits for data.
        let hold = hold.clamp(1, 1) as usize;
        let sid = self.next_sid();
        let to = to.to_string();
        let lang = body.attr("xml:lang").map(str::to_string);
        let mut header = format!(
            "<stream:stream xmlns='{}' xmlns:stream='{}' version='1.0'",
            ns::CLIENT,
            ns::STREAM
        );
        xml::push_attr(&mut header, "to", &to);
        if let Some(l) = &lang {
            xml::push_attr(&mut header, "xml:lang", l);
        }
        header.push('>');
        let s = Session {
            creating: Some((req, now.saturating_add(wait * NS))),
            wait,
            hold,
            requests: hold as u64 + 1,
            rid,
            pending: BTreeMap::new(),
            held: VecDeque::new(),
            answered: BTreeMap::new(),
            queue: Vec::new(),
            queued: 0,
            framer: Framer::new(self.cfg.max_stanza),
            authid: None,
            from: None,
            restarting: false,
            ended: None,
            idle_since: now,
            last_request_at: now,
            acks: body.attr("ack") == Some("1"),
            to,
            lang,
        };
        let mut stanzas = Vec::new();
        for c in &body.children {
            stanzas.extend_from_slice(c);
        }
        self.sessions.insert(sid.clone(), s);
        self.out.push_back(Output::Open { sid: sid.clone() });
        self.out.push_back(Output::ToServer {
            sid: sid.clone(),
            bytes: header.into_bytes(),
        });
        if !stanzas.is_empty() {
            self.out.push_back(Output::ToServer {
                sid,
                bytes: stanzas,
            });
        }
    }

    fn in_session(&mut self, now: u64, req: ReqId, rid: u64, sid: &str, body: Body) {
        let Some(s) = self.sessions.get_mut(sid) else {
            self.respond(req, terminate("item-not-found"));
            return;
        };
        if rid <= s.rid {
            if let Some(answer) = s.answered.get(&rid) {
                let answer = answer.clone();
                self.respond(req, answer);
                return;
            }
            if let Some(h) = s.held.iter_mut().find(|h| h.rid == rid) {
                // The client gave up on the first copy's connection: answer the newer one.
                let old = std::mem::replace(&mut h.req, req);
                self.respond(old, empty_body());
                return;
            }
            // A rid older than the window: the client and we disagree (§14.3).
            self.end_session(sid, "item-not-found");
            self.respond(req, terminate("item-not-found"));
            return;
        }
        if rid > s.rid + s.requests || s.creating.is_some() {
            self.end_session(sid, "item-not-found");
            self.respond(req, terminate("item-not-found"));
            return;
        }
        let spinning = body.children.is_empty()
            && body.attr("type").is_none()
            && body.attr("xmpp:restart") != Some("true")
            && body.attr("pause").is_none()
            && (s.held.len() + s.pending.len()) as u64 + 1 >= s.requests
            && now.saturating_sub(s.last_request_at) < POLLING * NS;
        s.last_request_at = now;
        if spinning {
            self.end_session(sid, "policy-violation");
            self.respond(req, terminate("policy-violation"));
            return;
        }
        if let Some(ack) = body.attr("ack").and_then(|a| a.parse::<u64>().ok()) {
            // §9.2: the client has every answer up to `ack`; none will be asked again.
            s.answered.retain(|r, _| *r > ack);
        }
        if let Some((old, _, _)) = s.pending.insert(rid, (req, body, now + s.wait * NS)) {
            self.respond(old, empty_body());
        }
        let sid = sid.to_string();
        // Process every request that is next in line.
        loop {
            let Some(s) = self.sessions.get_mut(&sid) else {
                return;
            };
            let next = s.rid + 1;
            let Some((req, body, _)) = s.pending.remove(&next) else {
                break;
            };
            s.rid = next;
            self.process(now, &sid, next, req, body);
        }
    }

    fn process(&mut self, now: u64, sid: &str, rid: u64, req: ReqId, body: Body) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        let mut bytes = Vec::new();
        for c in &body.children {
            bytes.extend_from_slice(c);
        }
        let restart = body.attr("xmpp:restart") == Some("true");
        let terminating = body.attr("type") == Some("terminate");
        if restart {
            // XEP-0206 §5: a new stream header, as a TCP client would send it.
            let mut h = format!(
                "<stream:stream xmlns='{}' xmlns:stream='{}' version='1.0'",
                ns::CLIENT,
                ns::STREAM
            );
            xml::push_attr(&mut h, "to", &s.to);
            if let Some(l) = &s.lang {
                xml::push_attr(&mut h, "xml:lang", l);
            }
            h.push('>');
            bytes.extend_from_slice(h.as_bytes());
            s.restarting = true;
            // Normally done at SASL <success/> already; a server's new stream starts
            // with a header (and maybe an XML declaration) either way.
            s.framer.restart();
        }
        if terminating {
            bytes.extend_from_slice(b"</stream:stream>");
        }
        if !bytes.is_empty() {
            self.out.push_back(Output::ToServer {
                sid: sid.to_string(),
                bytes,
            });
        }
        if terminating {
            // The answer carries what the server sent up to now; the stream's close
            // follows on the TCP side.
            let s = self.sessions.get_mut(sid).expect("checked above");
            let mut b = format!("<body type='terminate' {NS_ATTRS}>").into_bytes();
            for el in s.queue.drain(..) {
                b.extend_from_slice(&el);
            }
            b.extend_from_slice(b"</body>");
            let held: Vec<ReqId> = s.held.drain(..).map(|h| h.req).collect();
            for r in held {
                self.respond(r, empty_body());
            }
            self.respond(req, b);
            self.forget(sid);
            return;
        }
        let s = self.sessions.get_mut(sid).expect("checked above");
        s.held.push_back(Held {
            rid,
            req,
            deadline: now.saturating_add(s.wait * NS),
        });
        // Over `hold`: the oldest goes back now, with whatever is queued.
        let hold = s.hold;
        while self.sessions.get(sid).is_some_and(|s| s.held.len() > hold) {
            self.answer_oldest(now, sid);
        }
        self.flush(now, sid);
    }

    /// Answers held requests while there is something to send.
    fn flush(&mut self, now: u64, sid: &str) {
        loop {
            let Some(s) = self.sessions.get(sid) else {
                return;
            };
            if s.held.is_empty() || (s.queue.is_empty() && s.ended.is_none()) {
                return;
            }
            if s.ended.is_some() {
                let cond = s.ended.clone().unwrap_or_default();
                self.finish_ended(sid, &cond);
                return;
            }
            self.answer_oldest(now, sid);
        }
    }

    fn answer_oldest(&mut self, now: u64, sid: &str) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        let Some(h) = s.held.pop_front() else {
            return;
        };
        // §9.1: answering a request older than the newest processed says which that is,
        // so the client knows its newer ones arrived.
        let ack = if s.acks && h.rid < s.rid {
            format!(" ack='{}'", s.rid)
        } else {
            String::new()
        };
        let body = if s.queue.is_empty() {
            format!("<body xmlns='{}'{ack}/>", ns::HTTPBIND).into_bytes()
        } else {
            let mut b = format!("<body {NS_ATTRS}{ack}>").into_bytes();
            for el in s.queue.drain(..) {
                b.extend_from_slice(&el);
            }
            b.extend_from_slice(b"</body>");
            s.queued = 0;
            b
        };
        if s.held.is_empty() {
            s.idle_since = now;
        }
        s.answered.insert(h.rid, body.clone());
        while s.answered.len() as u64 > s.requests {
            s.answered.pop_first();
        }
        self.respond(h.req, body);
    }

    /// Bytes the XMPP server wrote on a session's stream.
    pub fn handle_server_bytes(&mut self, now: u64, sid: &str, bytes: &[u8]) {
        let max_queued = self.cfg.max_queued;
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        s.framer.push(bytes);
        let mut failed = None;
        loop {
            match s.framer.next_frame() {
                Ok(None) => break,
                Ok(Some(Frame::Header(r))) => {
                    let tag = match xml::start_tag(&s.framer.buf()[r]) {
                        Ok(t) => t,
                        Err(_) => {
                            failed = Some("remote-connection-failed");
                            break;
                        }
                    };
                    if s.restarting {
                        s.restarting = false;
                    } else {
                        s.authid = tag.attr("id").map(str::to_string);
                        s.from = tag.attr("from").map(str::to_string);
                    }
                }
                Ok(Some(Frame::Element(r))) => {
                    let el = &s.framer.buf()[r];
                    let (q, success) = match xml::start_tag(el)
                        .and_then(|t| Ok((xml::qualify(el)?, xml::is_sasl_success(&t))))
                    {
                        Ok(x) => x,
                        Err(_) => {
                            failed = Some("remote-connection-failed");
                            break;
                        }
                    };
                    if q.starts_with(b"<stream:error") {
                        s.ended.get_or_insert_with(|| "remote-stream-error".into());
                    }
                    s.queued += q.len();
                    s.queue.push(q);
                    if success {
                        s.framer.restart();
                    }
                }
                Ok(Some(Frame::End)) => {
                    s.ended.get_or_insert_with(String::new);
                    break;
                }
                Err(_) => {
                    failed = Some("remote-connection-failed");
                    break;
                }
            }
        }
        if failed.is_none() && s.queued > max_queued {
            failed = Some("policy-violation");
        }
        if let Some(cond) = failed {
            self.end_session(sid, cond);
            return;
        }
        self.answer_creation(now, sid);
        self.flush(now, sid);
    }

    /// The server closed the TCP connection.
    pub fn handle_server_eof(&mut self, now: u64, sid: &str) {
        if let Some(s) = self.sessions.get_mut(sid) {
            s.ended
                .get_or_insert_with(|| "remote-connection-failed".into());
            if s.creating.is_some() {
                self.end_session(sid, "remote-connection-failed");
                return;
            }
        }
        self.answer_creation(now, sid);
        self.flush(now, sid);
    }

    fn answer_creation(&mut self, now: u64, sid: &str) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        if s.authid.is_none() || s.creating.is_none() {
            return;
        }
        let (req, _) = s.creating.take().expect("checked");
        let mut b = format!("<body {NS_ATTRS}");
        xml::push_attr(&mut b, "sid", sid);
        for (k, v) in [
            ("wait", s.wait),
            ("hold", s.hold as u64),
            ("requests", s.requests),
            ("inactivity", self.cfg.inactivity),
            ("polling", POLLING),
        ] {
            xml::push_attr(&mut b, k, &v.to_string());
        }
        if s.acks {
            // §9.1: the creation request's rid, the one this answers.
            xml::push_attr(&mut b, "ack", &s.rid.to_string());
        }
        xml::push_attr(&mut b, "ver", "1.11");
        xml::push_attr(&mut b, "xmpp:version", "1.0");
        xml::push_attr(&mut b, "authid", s.authid.as_deref().unwrap_or_default());
        if let Some(f) = &s.from {
            xml::push_attr(&mut b, "from", f);
        }
        b.push('>');
        let mut body = b.into_bytes();
        for el in s.queue.drain(..) {
            body.extend_from_slice(&el);
        }
        s.queued = 0;
        body.extend_from_slice(b"</body>");
        s.answered.insert(s.rid, body.clone());
        s.idle_since = now;
        self.respond(req, body);
    }

    /// The server's stream is over: the oldest held request gets a terminate body with
    /// what was left, the others an empty one, and the session is forgotten.
    fn finish_ended(&mut self, sid: &str, cond: &str) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        let mut b = b"<body type='terminate'".to_vec();
        if !cond.is_empty() {
            b.extend_from_slice(format!(" condition='{cond}'").as_bytes());
        }
        b.extend_from_slice(format!(" {NS_ATTRS}>").as_bytes());
        for el in s.queue.drain(..) {
            b.extend_from_slice(&el);
        }
        b.extend_from_slice(b"</body>");
        let mut held: Vec<ReqId> = s.held.drain(..).map(|h| h.req).collect();
        held.extend(std::mem::take(&mut s.pending).into_values().map(|p| p.0));
        if !held.is_empty() {
            let first = held.remove(0);
            self.respond(first, b);
            for r in held {
                self.respond(r, empty_body());
            }
            self.forget(sid);
        }
    }

    /// Ends a session on an error: every open request gets a terminate body.
    fn end_session(&mut self, sid: &str, cond: &str) {
        let Some(s) = self.sessions.get_mut(sid) else {
            return;
        };
        let mut reqs: Vec<ReqId> = s.held.drain(..).map(|h| h.req).collect();
        reqs.extend(std::mem::take(&mut s.pending).into_values().map(|p| p.0));
        reqs.extend(s.creating.take().map(|c| c.0));
        for r in reqs {
            self.respond(r, terminate(cond));
        }
        self.out.push_back(Output::ToServer {
            sid: sid.to_string(),
            bytes: b"</stream:stream>".to_vec(),
        });
        self.forget(sid);
    }

    fn forget(&mut self, sid: &str) {
        if self.sessions.remove(sid).is_some() {
            self.out.push_back(Output::Close {
                sid: sid.to_string(),
            });
        }
    }

    /// Answers requests held for `wait`, ends sessions idle for `inactivity` or whose
    /// server never answered. Only idle sessions meet this: data never waits for it.
    pub fn handle_timeout(&mut self, now: u64) {
        let inactivity = self.cfg.inactivity * NS;
        let sids: Vec<String> = self.sessions.keys().cloned().collect();
        for sid in sids {
            let Some(s) = self.sessions.get_mut(&sid) else {
                continue;
            };
            if s.creating.is_some_and(|c| c.1 <= now) {
                self.end_session(&sid, "remote-connection-failed");
                continue;
            }
            if s.pending.values().any(|p| p.2 <= now) {
                // A gap in the rids that never filled.
                self.end_session(&sid, "item-not-found");
                continue;
            }
            // §11: nothing to say within `wait`, an empty answer.
            while self
                .sessions
                .get(&sid)
                .and_then(|s| s.held.front())
                .is_some_and(|h| h.deadline <= now)
            {
                self.answer_oldest(now, &sid);
            }
            let Some(s) = self.sessions.get_mut(&sid) else {
                continue;
            };
            if s.held.is_empty()
                && s.creating.is_none()
                && s.pending.is_empty()
                && now >= s.idle_since.saturating_add(inactivity)
            {
                // §8: the client stopped polling.
                self.end_session(&sid, "item-not-found");
            }
        }
    }
}

fn empty_body() -> Vec<u8> {
    format!("<body xmlns='{}'/>", ns::HTTPBIND).into_bytes()
}

#[cfg(test)]
mod tests;
