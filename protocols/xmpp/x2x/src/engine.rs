//! The link engine (sans-IO): framing, compression, acknowledgements and resend for one
//! gateway's side of an XEP-0361 link, across any number of TCP connections.
//!
//! # Wire format
//!
//! Each TCP connection carries, from its first byte, an optionally compressed
//! ([`crate::codec`]) sequence of XML elements as if inside the stream header
//! [`crate::xml::IMPLIED_HEADER`] (XEP-0361 §4.1: no header, features, TLS, SASL or
//! dialback is sent). The elements are:
//!
//! - stanzas (`message`, `presence`, `iq` in `jabber:server`), with their real
//!   `from`/`to`;
//! - `<a xmlns='urn:xmpp:sm:3' h='N'/>`: the sender of the `<a/>` has delivered `N`
//!   stanzas of the other direction (XEP-0198 §4, but `N` is a 64-bit count that does not
//!   wrap, and counts from the life of the sending process, not of the connection);
//! - `<r xmlns='urn:xmpp:sm:3'/>`: please send `<a/>` now;
//! - `<s xmlns='urn:wirebench:x2x:0' n='N' i='ID'/>`: the next stanza on this connection
//!   has sequence number `N` (the first stanza a process ever sends is 0) and comes from
//!   the gateway process `ID` (a random 64-bit number in hex).
//! - `</stream:stream>`: the sender is going away.
//!
//! # Exactly once, in order, without an extra round trip
//!
//! Each direction of the link numbers its stanzas; the numbers survive reconnections
//! for as long as both gateway processes live. The sender keeps every stanza until it is
//! acknowledged. On every new connection each side first sends `<s n=.. i=../>` with the
//! number of its first unacknowledged stanza and then, at once, all unacknowledged
//! stanzas: nothing waits for the peer to say what it has (XEP-0198 resumption would cost
//! a round trip here). The receiver counts the stanzas it has accepted and drops those
//! numbered below the count as duplicates. A receiver only sends `<a/>` on a connection
//! after it has seen that connection's marker, so an ack always refers to the sender
//! process that is on the other end now.
//!
//! A new `i` means the peer process restarted: the receiver starts counting again from
//! that marker's `n`. What a restarted process had queued is lost with it, and what a
//! restarted receiver had delivered without acknowledging yet is delivered again: the
//! guarantee is per pair of process lifetimes (there is no disk).
//!
//! # Where "delivered" is
//!
//! An inbound stanza becomes a [`Delivery`] for the component connection of its `from`
//! domain. It counts as delivered, and so may be acknowledged to the peer, only when the
//! driver reports with [`Engine::delivery_done`] that it was written to the component
//! socket. If writing fails, [`Engine::delivery_failed`] puts it back to be written on
//! the next component connection. So the peer's copy is released only once the stanza is
//! in the kernel's socket buffer towards Prosody; a Prosody crash after that can still
//! lose it (at-least-once up to this gateway, exactly-once into the component socket).
//!
//! # Bounds
//!
//! The outbound queue (unsent plus unacknowledged) is bounded in stanzas and bytes; a
//! stanza that does not fit is refused with a `resource-constraint` error back to the
//! local server (presence is dropped and counted instead, RFC 6120 §8.3.1 lets a server
//! not reply to presence). Inbound, stanzas waiting for the component are bounded the
//! same way; when that queue is full the engine stops decoding link input and
//! [`Engine::can_accept_link_input`] turns false, so the driver stops reading and TCP
//! flow control pushes back on the peer. Every element is bounded by `max_stanza`.

use std::collections::VecDeque;

use wirebench_xmpp::framer::{Frame, Framer};

use crate::codec::{CodecError, Compression, Deflater, Inflater};
use crate::xml::{
    self, Element, IMPLIED_HEADER, Kind, NS_COMPONENT, NS_SERVER, NS_SM, NS_X2X, Normalised,
    STREAM_CLOSE, StanzaInfo,
};

/// Decompressed bytes handed to the framer at a time (bounds the framer's buffer).
const INFLATE_CHUNK: usize = 4096;
/// Events kept for the driver before the oldest are dropped.
const MAX_EVENTS: usize = 1024;

/// What the engine needs to know; the gateway fills it from [`crate::Config`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Domains served by the local XMPP server (valid `from` outbound, `to` inbound).
    pub local_domains: Vec<String>,
    /// Domains served by the peer's XMPP server.
    pub remote_domains: Vec<String>,
    pub compression: Compression,
    /// Largest element accepted from the peer or the local server, in bytes.
    pub max_stanza: usize,
    /// Outbound queue bound (unsent + unacknowledged), and inbound delivery queue bound.
    pub queue_stanzas: usize,
    pub queue_bytes: usize,
    /// Send `<a/>` at once when this many delivered stanzas are unacknowledged ...
    pub ack_every: u64,
    /// ... or this long after the first unacknowledged delivery, whichever is first.
    /// In between, an ack rides along with outgoing stanzas once half of either is
    /// reached (each `<a/>` costs about 3 compressed bytes; a lone one costs a TCP
    /// segment, so acks wait for a ride rather than go alone).
    pub ack_delay_ns: u64,
    /// When the ack delay runs out while an answer is expected (the last stanza
    /// delivered was a message or an iq get/set, and nothing has gone the other way
    /// since), the lone `<a/>` waits until this long after the first unacknowledged
    /// delivery for the answer to ride on. A lone ack sent just before the answer puts a
    /// whole segment in front of it (~0.2 s at 2400 bit/s). At most `ack_delay` is used
    /// when this is shorter.
    pub reply_wait_ns: u64,
    /// Plain bytes per transmitted batch (one flush each).
    pub max_batch: usize,
    /// This gateway process's identity on the link (random, per process).
    pub instance: u64,
}

impl EngineConfig {
    pub fn new(local_domains: &[&str], remote_domains: &[&str], instance: u64) -> EngineConfig {
        EngineConfig {
            local_domains: local_domains
                .iter()
                .map(|d| d.to_ascii_lowercase())
                .collect(),
            remote_domains: remote_domains
                .iter()
                .map(|d| d.to_ascii_lowercase())
                .collect(),
            compression: Compression::ZlibDict,
            max_stanza: 256 * 1024,
            queue_stanzas: 1024,
            queue_bytes: 4 * 1024 * 1024,
            ack_every: 8,
            ack_delay_ns: 1_000_000_000,
            reply_wait_ns: 30_000_000_000,
            max_batch: 16 * 1024,
            instance,
        }
    }
}

/// Why the current link connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("malformed XML from the peer: {0}")]
    Malformed(String),
    #[error("the peer sent an element larger than max_stanza ({limit} bytes)")]
    TooLarge { limit: usize },
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("protocol violation by the peer: {0}")]
    Protocol(String),
    #[error("no link connection is up")]
    NotUp,
}

/// Why a stanza was not forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectReason {
    /// The outbound queue is at its stanza or byte bound.
    QueueFull,
    /// `from` is missing or not in the domains this side may send from.
    BadFrom,
    /// `to` is missing or not in the domains the other side serves.
    BadTo,
    TooLarge,
    /// Not a stanza, or not well-formed.
    Invalid(String),
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RejectReason::QueueFull => write!(f, "link queue full"),
            RejectReason::BadFrom => write!(f, "'from' not in the allowed domains"),
            RejectReason::BadTo => write!(f, "'to' not in the allowed domains"),
            RejectReason::TooLarge => write!(f, "stanza larger than max_stanza"),
            RejectReason::Invalid(s) => write!(f, "invalid: {s}"),
        }
    }
}

/// What [`Engine::enqueue_outbound`] did with a stanza.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    Queued {
        seq: u64,
    },
    /// Refused; `bounced` tells whether an error reply was queued for the local server.
    Rejected {
        reason: RejectReason,
        bounced: bool,
    },
}

/// Something the driver should know or log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The connection is unusable; close it and call [`Engine::link_down`].
    LinkFailed(LinkError),
    /// The peer sent `</stream:stream>`: close the connection.
    PeerClosed,
    /// A stanza from the local server was refused.
    Rejected {
        reason: RejectReason,
        kind: Option<Kind>,
        from: Option<String>,
        to: Option<String>,
        id: Option<String>,
        bounced: bool,
    },
    /// A stanza from the peer was dropped (domain validation).
    InboundDropped {
        reason: RejectReason,
        from: Option<String>,
        to: Option<String>,
        bounced: bool,
    },
    /// The peer's marker names a different process than before.
    PeerRestarted { old: u64, new: u64 },
}

/// Counters since the engine was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Stanzas from the local server accepted into the outbound queue.
    pub stanzas_queued: u64,
    /// Stanzas transmitted for the first time.
    pub stanzas_out: u64,
    /// Transmissions of stanzas already sent on an earlier connection.
    pub resent: u64,
    /// New stanzas accepted from the peer.
    pub stanzas_in: u64,
    /// Stanzas from the peer dropped because already accepted.
    pub duplicates_dropped: u64,
    /// Deliveries confirmed written to the component socket.
    pub delivered: u64,
    pub link_bytes_out: u64,
    pub link_bytes_in: u64,
    pub plain_bytes_out: u64,
    pub plain_bytes_in: u64,
    /// Message/iq refused because the queue was full (each got an error reply).
    pub rejected_queue_full: u64,
    /// Presence dropped because the queue was full.
    pub presence_dropped: u64,
    /// Outbound stanzas refused for any other reason (domains, size, not a stanza).
    pub rejected_invalid: u64,
    /// Inbound stanzas dropped by domain validation.
    pub inbound_invalid: u64,
    /// Error replies generated (towards either side).
    pub errors_generated: u64,
    /// Error replies that could not be queued (queue full) and were dropped.
    pub errors_dropped: u64,
    pub acks_sent: u64,
    pub acks_received: u64,
    pub requests_sent: u64,
    pub markers_sent: u64,
    pub link_ups: u64,
    pub link_failures: u64,
    pub peer_restarts: u64,
    pub events_dropped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryToken {
    epoch: u64,
    seq: Option<u64>,
}

/// A stanza to write to the component connection of `domain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The remote domain whose component connection must carry it (Prosody checks that
    /// `from` belongs to the component's domain).
    pub domain: String,
    pub bytes: Vec<u8>,
    pub token: DeliveryToken,
}

#[derive(Debug)]
struct OutItem {
    bytes: Vec<u8>,
}

/// Per-connection state, replaced at every [`Engine::link_up`].
struct Conn {
    deflate: Deflater,
    inflate: Inflater,
    framer: Framer,
    /// Compressed input not decoded yet (kept while the delivery queue is full).
    rx: Vec<u8>,
    failed: bool,
    peer_closed: bool,
    close_requested: bool,
    marker_sent: bool,
    /// The number the peer will give the next stanza we send here (from our markers).
    tx_next: Option<u64>,
    /// The peer's marker arrived on this connection.
    marker_seen: bool,
    /// The number of the next stanza the peer sends here.
    rx_next: u64,
    /// The last `h` sent on this connection.
    last_ack_sent: Option<u64>,
    ack_now: bool,
    /// When the first unacknowledged delivery happened (the ack timer runs).
    ack_started: Option<u64>,
    /// Half the ack delay has passed: the ack may ride on the next stanza.
    ack_ride: bool,
    /// The last stanza delivered invites an answer and none has been sent since.
    reply_expected: bool,
    r_outstanding: bool,
}

/// One side of the link. See the module documentation.
pub struct Engine {
    cfg: EngineConfig,
    conn: Option<Conn>,
    // Outbound: out_queue[0] has sequence number `acked`.
    out_queue: VecDeque<OutItem>,
    out_bytes: usize,
    next_seq: u64,
    acked: u64,
    /// One past the highest sequence number ever transmitted.
    max_sent: u64,
    /// The next sequence number to transmit on the current connection.
    send_next: u64,
    // Inbound.
    peer_instance: Option<u64>,
    /// Bumped when the peer restarts: deliveries of an older epoch no longer count.
    epoch: u64,
    /// Stanzas accepted from the peer (next expected sequence number).
    received: u64,
    /// Contiguous prefix of accepted stanzas that are delivered (or dropped).
    delivered: u64,
    /// For sequence numbers `delivered..received`: done yet?
    window: VecDeque<bool>,
    deliveries: Vec<(String, VecDeque<Delivery>)>,
    /// Queued plus handed out, not yet done.
    deliv_count: usize,
    deliv_bytes: usize,
    events: VecDeque<Event>,
    stats: EngineStats,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("up", &self.conn.is_some())
            .field("next_seq", &self.next_seq)
            .field("acked", &self.acked)
            .field("received", &self.received)
            .field("delivered", &self.delivered)
            .finish()
    }
}

impl Engine {
    pub fn new(mut cfg: EngineConfig) -> Engine {
        for d in cfg
            .local_domains
            .iter_mut()
            .chain(cfg.remote_domains.iter_mut())
        {
            *d = d.trim_end_matches('.').to_ascii_lowercase();
        }
        cfg.ack_every = cfg.ack_every.max(1);
        cfg.max_batch = cfg.max_batch.max(1);
        let deliveries = cfg
            .remote_domains
            .iter()
            .map(|d| (d.clone(), VecDeque::new()))
            .collect();
        Engine {
            cfg,
            conn: None,
            out_queue: VecDeque::new(),
            out_bytes: 0,
            next_seq: 0,
            acked: 0,
            max_sent: 0,
            send_next: 0,
            peer_instance: None,
            epoch: 0,
            received: 0,
            delivered: 0,
            window: VecDeque::new(),
            deliveries,
            deliv_count: 0,
            deliv_bytes: 0,
            events: VecDeque::new(),
            stats: EngineStats::default(),
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Whether a link connection is up (between `link_up` and `link_down`).
    pub fn is_up(&self) -> bool {
        self.conn.is_some()
    }

    /// Stanzas waiting for the peer's acknowledgement (sent or not).
    pub fn unacked(&self) -> usize {
        self.out_queue.len()
    }

    /// Inbound stanzas waiting for (or being written to) a component connection.
    pub fn pending_deliveries(&self) -> usize {
        self.deliv_count
    }

    /// Sequence state: (next outbound number, acknowledged by the peer, accepted from
    /// the peer, delivered).
    pub fn counters(&self) -> (u64, u64, u64, u64) {
        (self.next_seq, self.acked, self.received, self.delivered)
    }

    fn push_event(&mut self, e: Event) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
            self.stats.events_dropped += 1;
        }
        self.events.push_back(e);
    }

    // ----- connection lifecycle -----

    /// A new connection to the peer is established (dialled or accepted). Anything of a
    /// previous connection is forgotten; the first transmit will carry the marker and
    /// every unacknowledged stanza.
    pub fn link_up(&mut self, _now_ns: u64) {
        let mode = self.cfg.compression;
        let deflate = match Deflater::new(mode) {
            Ok(d) => d,
            Err(e) => {
                self.conn = None;
                self.stats.link_failures += 1;
                self.push_event(Event::LinkFailed(e.into()));
                return;
            }
        };
        let mut framer = Framer::new(self.cfg.max_stanza);
        framer.push(IMPLIED_HEADER);
        // The implied header is our own constant: it frames as exactly one header.
        let _ = framer.next_frame();
        self.conn = Some(Conn {
            deflate,
            inflate: Inflater::new(mode),
            framer,
            rx: Vec::new(),
            failed: false,
            peer_closed: false,
            close_requested: false,
            marker_sent: false,
            tx_next: None,
            marker_seen: false,
            rx_next: 0,
            last_ack_sent: None,
            ack_now: false,
            ack_started: None,
            ack_ride: false,
            reply_expected: false,
            r_outstanding: false,
        });
        self.send_next = self.acked;
        self.stats.link_ups += 1;
    }

    /// The connection is gone (closed by either side, or failed). Unacknowledged stanzas
    /// stay queued for the next connection.
    pub fn link_down(&mut self, _now_ns: u64) {
        self.conn = None;
        self.send_next = self.acked;
    }

    /// Asks for `</stream:stream>` to be sent (graceful shutdown); the driver closes the
    /// connection once the transmit is written.
    pub fn close(&mut self) {
        if let Some(c) = &mut self.conn {
            c.close_requested = true;
            // A final ack: the peer must not resend what we delivered to whatever
            // process takes our place (it could not tell it was delivered).
            if c.marker_seen && c.last_ack_sent != Some(self.delivered) {
                c.ack_now = true;
            }
        }
    }

    // ----- outbound -----

    /// A stanza from the local server (component stream), in any of the stanza
    /// namespaces. Validated, normalised and queued, or refused with an error reply for
    /// the local server (see [`Engine::poll_delivery`]).
    pub fn enqueue_outbound(&mut self, raw: &[u8]) -> Enqueued {
        if raw.len() > self.cfg.max_stanza {
            return self.reject(None, RejectReason::TooLarge);
        }
        let n = match xml::normalise(raw, NS_COMPONENT) {
            Ok(Element::Stanza(n)) => n,
            Ok(Element::Other { name, ns, .. }) => {
                let r = RejectReason::Invalid(format!("<{name} xmlns='{ns}'> is not a stanza"));
                return self.reject(None, r);
            }
            Err(e) => return self.reject(None, RejectReason::Invalid(e)),
        };
        if !self.in_domains(n.info.from.as_deref(), false) {
            return self.reject(Some(&n.info), RejectReason::BadFrom);
        }
        if !self.in_domains(n.info.to.as_deref(), true) {
            return self.reject(Some(&n.info), RejectReason::BadTo);
        }
        if !self.has_room(n.bytes.len()) {
            return self.reject(Some(&n.info), RejectReason::QueueFull);
        }
        let seq = self.push_out(n.bytes);
        self.stats.stanzas_queued += 1;
        Enqueued::Queued { seq }
    }

    fn in_domains(&self, jid: Option<&str>, remote: bool) -> bool {
        let list = if remote {
            &self.cfg.remote_domains
        } else {
            &self.cfg.local_domains
        };
        jid.is_some_and(|j| list.contains(&xml::domain_of(j)))
    }

    fn has_room(&self, len: usize) -> bool {
        self.out_queue.len() < self.cfg.queue_stanzas
            && self.out_bytes.saturating_add(len) <= self.cfg.queue_bytes
    }

    fn push_out(&mut self, bytes: Vec<u8>) -> u64 {
        let seq = self.next_seq;
        self.out_bytes += bytes.len();
        self.out_queue.push_back(OutItem { bytes });
        self.next_seq += 1;
        seq
    }

    /// Refuses a local stanza; message/iq get an error reply through the component of
    /// the domain they were addressed to, presence and errors are only counted.
    fn reject(&mut self, info: Option<&StanzaInfo>, reason: RejectReason) -> Enqueued {
        match reason {
            RejectReason::QueueFull if info.is_some_and(|i| i.kind == Kind::Presence) => {
                self.stats.presence_dropped += 1;
            }
            RejectReason::QueueFull => self.stats.rejected_queue_full += 1,
            _ => self.stats.rejected_invalid += 1,
        }
        let mut bounced = false;
        if let Some(info) = info {
            let to_domain = info.to.as_deref().map(xml::domain_of);
            // Prosody (validate_from_addresses) closes a component stream whose stanza
            // comes from outside the component's domain, so the reply must come from the
            // domain the stanza was addressed to, and that must be one of ours.
            let via = to_domain.filter(|d| self.cfg.remote_domains.contains(d));
            if let (Some(via), Some(to), true) = (via, &info.to, info.kind != Kind::Presence) {
                if info.may_get_error_reply() && info.from.is_some() {
                    let (cond, etype, text) = match &reason {
                        RejectReason::QueueFull => (
                            "resource-constraint",
                            "wait",
                            "x2x link queue is full; try again later",
                        ),
                        RejectReason::BadFrom => (
                            "not-allowed",
                            "cancel",
                            "x2x link does not carry stanzas from this domain",
                        ),
                        RejectReason::BadTo => (
                            "item-not-found",
                            "cancel",
                            "x2x link does not serve this domain",
                        ),
                        RejectReason::TooLarge => (
                            "policy-violation",
                            "modify",
                            "stanza too large for the x2x link",
                        ),
                        RejectReason::Invalid(_) => ("bad-request", "modify", "invalid stanza"),
                    };
                    let bytes = xml::error_reply(info, to, cond, etype, text);
                    bounced = self.queue_delivery(&via, bytes, None);
                }
            }
        }
        self.push_event(Event::Rejected {
            reason: reason.clone(),
            kind: info.map(|i| i.kind),
            from: info.and_then(|i| i.from.clone()),
            to: info.and_then(|i| i.to.clone()),
            id: info.and_then(|i| i.id.clone()),
            bounced,
        });
        Enqueued::Rejected { reason, bounced }
    }

    /// The bytes to write to the link connection now, if any: marker and resends at the
    /// start of a connection, queued stanzas, a piggybacked or due `<a/>`, an `<r/>` when
    /// the queue is half full. One sync-flushed batch of at most `max_batch` plain bytes
    /// (plus one stanza); call again until `None`.
    pub fn poll_link_transmit(&mut self) -> Option<Vec<u8>> {
        let conn = self.conn.as_mut()?;
        if conn.failed || conn.peer_closed {
            return None;
        }
        let mut plain = Vec::new();
        // The marker goes out with the first thing worth sending, not on its own at
        // connection time: at 2400 bit/s a lone segment costs ~0.3 s of link that the
        // first stanza or its answer would otherwise wait behind.
        let worth_sending = self.send_next < self.next_seq || conn.ack_now || conn.close_requested;
        if !conn.marker_sent && worth_sending {
            plain.extend_from_slice(xml::marker(self.send_next, self.cfg.instance).as_bytes());
            conn.marker_sent = true;
            conn.tx_next = Some(self.send_next);
            self.stats.markers_sent += 1;
        }
        let mut sent_any = false;
        while self.send_next < self.next_seq && plain.len() < self.cfg.max_batch {
            let idx = usize::try_from(self.send_next - self.acked).unwrap_or(usize::MAX);
            let Some(item) = self.out_queue.get(idx) else {
                break;
            };
            if conn.tx_next != Some(self.send_next) {
                // An ack arrived between marker and resend and let us skip stanzas.
                plain.extend_from_slice(xml::marker(self.send_next, self.cfg.instance).as_bytes());
                self.stats.markers_sent += 1;
            }
            plain.extend_from_slice(&item.bytes);
            if self.send_next < self.max_sent {
                self.stats.resent += 1;
            } else {
                self.stats.stanzas_out += 1;
                self.max_sent = self.send_next + 1;
            }
            self.send_next += 1;
            conn.tx_next = Some(self.send_next);
            sent_any = true;
        }
        if sent_any {
            conn.reply_expected = false;
        }
        let unacked = self.delivered - conn.last_ack_sent.unwrap_or(0).min(self.delivered);
        let ride = unacked > 0 && (unacked * 2 >= self.cfg.ack_every || conn.ack_ride);
        if conn.marker_seen && (conn.ack_now || (sent_any && ride)) {
            plain.extend_from_slice(xml::ack(self.delivered).as_bytes());
            conn.last_ack_sent = Some(self.delivered);
            conn.ack_now = false;
            conn.ack_started = None;
            conn.ack_ride = false;
            conn.reply_expected = false;
            self.stats.acks_sent += 1;
        }
        let in_flight = usize::try_from(self.send_next - self.acked).unwrap_or(usize::MAX);
        let half_full = in_flight.saturating_mul(2) >= self.cfg.queue_stanzas.max(2)
            || self.out_bytes.saturating_mul(2) >= self.cfg.queue_bytes.max(2);
        if !conn.r_outstanding && in_flight > 0 && half_full {
            plain.extend_from_slice(xml::request().as_bytes());
            conn.r_outstanding = true;
            self.stats.requests_sent += 1;
        }
        if conn.close_requested && self.send_next >= self.next_seq {
            plain.extend_from_slice(STREAM_CLOSE);
            conn.close_requested = false;
        }
        if plain.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(plain.len() / 2 + 16);
        if let Err(e) = conn.deflate.compress(&plain, &mut out) {
            conn.failed = true;
            self.stats.link_failures += 1;
            self.push_event(Event::LinkFailed(e.into()));
            return None;
        }
        self.stats.plain_bytes_out += plain.len() as u64;
        self.stats.link_bytes_out += out.len() as u64;
        Some(out)
    }

    // ----- inbound -----

    /// Whether the driver should read more from the link connection: false while
    /// earlier input waits for room in the delivery queue (TCP flow control then holds
    /// the peer back) or once the connection has failed.
    pub fn can_accept_link_input(&self) -> bool {
        match &self.conn {
            Some(c) => !c.failed && !c.peer_closed && c.rx.is_empty() && !self.deliveries_full(),
            None => false,
        }
    }

    fn deliveries_full(&self) -> bool {
        self.deliv_count >= self.cfg.queue_stanzas || self.deliv_bytes >= self.cfg.queue_bytes
    }

    /// Bytes read from the link connection. An error means the connection must be
    /// closed (it is also reported as [`Event::LinkFailed`]).
    pub fn handle_link_bytes(&mut self, now_ns: u64, bytes: &[u8]) -> Result<(), LinkError> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(LinkError::NotUp);
        };
        if conn.failed {
            return Err(LinkError::NotUp);
        }
        self.stats.link_bytes_in += bytes.len() as u64;
        if conn.peer_closed {
            return Ok(());
        }
        conn.rx.extend_from_slice(bytes);
        self.process_input(now_ns)
    }

    fn fail(&mut self, e: LinkError) -> Result<(), LinkError> {
        if let Some(c) = &mut self.conn {
            c.failed = true;
            c.rx = Vec::new();
        }
        self.stats.link_failures += 1;
        self.push_event(Event::LinkFailed(e.clone()));
        Err(e)
    }

    /// Decodes and handles input until it runs out or the delivery queue is full.
    fn process_input(&mut self, now: u64) -> Result<(), LinkError> {
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return Ok(());
            };
            if conn.failed || conn.peer_closed {
                return Ok(());
            }
            if self.deliv_count >= self.cfg.queue_stanzas
                || self.deliv_bytes >= self.cfg.queue_bytes
            {
                return Ok(());
            }
            match conn.framer.next_frame() {
                Ok(Some(Frame::Element(r))) => {
                    let raw = conn.framer.buf().get(r).unwrap_or(&[]).to_vec();
                    self.handle_element(now, &raw)?;
                    continue;
                }
                Ok(Some(Frame::End)) => {
                    conn.peer_closed = true;
                    conn.rx = Vec::new();
                    self.push_event(Event::PeerClosed);
                    return Ok(());
                }
                Ok(Some(Frame::Header(_))) => {
                    return self.fail(LinkError::Protocol(
                        "the peer sent a stream header (XEP-0361 links have none)".into(),
                    ));
                }
                Ok(None) => {}
                Err(wirebench_xmpp::XmppError::StanzaTooLarge { limit }) => {
                    return self.fail(LinkError::TooLarge { limit });
                }
                Err(e) => return self.fail(LinkError::Malformed(e.to_string())),
            }
            if conn.rx.is_empty() {
                return Ok(());
            }
            let mut plain = Vec::new();
            let consumed = match conn.inflate.decompress(&conn.rx, &mut plain, INFLATE_CHUNK) {
                Ok(n) => n,
                Err(e) => return self.fail(e.into()),
            };
            conn.rx.drain(..consumed.min(conn.rx.len()));
            if consumed == 0 && plain.is_empty() {
                // zlib needs more bytes than it has been given.
                return Ok(());
            }
            self.stats.plain_bytes_in += plain.len() as u64;
            conn.framer.push(&plain);
        }
    }

    fn handle_element(&mut self, now: u64, raw: &[u8]) -> Result<(), LinkError> {
        let el = match xml::normalise(raw, NS_SERVER) {
            Ok(el) => el,
            Err(e) => return self.fail(LinkError::Malformed(e)),
        };
        match el {
            Element::Stanza(n) => self.handle_stanza(now, n),
            Element::Other {
                ref name, ref ns, ..
            } => match (ns.as_str(), name.as_str()) {
                (NS_SM, "a") => {
                    let h = el.attr("h").and_then(|h| h.parse::<u64>().ok());
                    match h {
                        Some(h) => self.handle_ack(h),
                        None => self.fail(LinkError::Protocol("<a/> without a valid 'h'".into())),
                    }
                }
                (NS_SM, "r") => {
                    if let Some(c) = &mut self.conn {
                        c.ack_now |= c.marker_seen;
                    }
                    Ok(())
                }
                (NS_X2X, "s") => {
                    let n = el.attr("n").and_then(|v| v.parse::<u64>().ok());
                    let i = el.attr("i").and_then(|v| u64::from_str_radix(v, 16).ok());
                    match (n, i) {
                        (Some(n), Some(i)) => self.handle_marker(n, i),
                        _ => self.fail(LinkError::Protocol(
                            "resend marker without valid 'n' and 'i'".into(),
                        )),
                    }
                }
                _ => self.fail(LinkError::Protocol(format!(
                    "unexpected element <{name} xmlns='{ns}'> (RFC 6120 §4.9.3.22 \
                     unsupported-stanza-type)"
                ))),
            },
        }
    }

    fn handle_ack(&mut self, h: u64) -> Result<(), LinkError> {
        if h > self.max_sent {
            return self.fail(LinkError::Protocol(format!(
                "the peer acknowledged {h} stanzas but only {} were sent",
                self.max_sent
            )));
        }
        self.stats.acks_received += 1;
        if let Some(c) = &mut self.conn {
            c.r_outstanding = false;
        }
        while self.acked < h {
            if let Some(item) = self.out_queue.pop_front() {
                self.out_bytes -= item.bytes.len();
            }
            self.acked += 1;
        }
        self.send_next = self.send_next.max(self.acked);
        Ok(())
    }

    fn handle_marker(&mut self, n: u64, instance: u64) -> Result<(), LinkError> {
        if self.peer_instance != Some(instance) {
            if let Some(old) = self.peer_instance {
                self.stats.peer_restarts += 1;
                self.push_event(Event::PeerRestarted { old, new: instance });
            }
            self.peer_instance = Some(instance);
            self.epoch += 1;
            self.received = n;
            self.delivered = n;
            self.window.clear();
        } else if n > self.received {
            // The peer only resends from what we acknowledged, which never exceeds what
            // we accepted: a jump means its numbering is broken.
            return self.fail(LinkError::Protocol(format!(
                "resend marker n={n} skips stanzas (accepted so far: {})",
                self.received
            )));
        }
        let Some(c) = &mut self.conn else {
            return Ok(());
        };
        c.marker_seen = true;
        c.rx_next = n;
        // If the peer is resending what we already have, tell it at once so it can drop
        // its copies. Otherwise the usual ack policy will do: a lone ack at connection
        // time would delay the first answer by a whole segment on a slow link.
        if n < self.received {
            c.ack_now = true;
        }
        Ok(())
    }

    fn handle_stanza(&mut self, now: u64, n: Normalised) -> Result<(), LinkError> {
        let Some(c) = &mut self.conn else {
            return Ok(());
        };
        if !c.marker_seen {
            return self.fail(LinkError::Protocol(
                "stanza before the resend marker <s xmlns='urn:wirebench:x2x:0'/>".into(),
            ));
        }
        let seq = c.rx_next;
        c.rx_next += 1;
        if seq < self.received {
            self.stats.duplicates_dropped += 1;
            return Ok(());
        }
        self.received += 1;
        self.stats.stanzas_in += 1;
        let reason = if !self.in_domains(n.info.from.as_deref(), true) {
            Some(RejectReason::BadFrom)
        } else if !self.in_domains(n.info.to.as_deref(), false) {
            Some(RejectReason::BadTo)
        } else {
            None
        };
        match reason {
            None => {
                let domain = n
                    .info
                    .from
                    .as_deref()
                    .map(xml::domain_of)
                    .unwrap_or_default();
                if invites_answer(&n.info)
                    && let Some(c) = &mut self.conn
                {
                    c.reply_expected = true;
                }
                self.window.push_back(false);
                self.queue_delivery(&domain, n.bytes, Some(seq));
            }
            Some(reason) => {
                self.stats.inbound_invalid += 1;
                self.window.push_back(true);
                self.advance_delivered(now);
                let bounced = self.bounce_to_peer(&n.info, &reason);
                self.push_event(Event::InboundDropped {
                    reason,
                    from: n.info.from,
                    to: n.info.to,
                    bounced,
                });
            }
        }
        Ok(())
    }

    /// An error reply over the link for an inbound stanza that failed validation, when
    /// the reply itself would pass the peer's validation.
    fn bounce_to_peer(&mut self, info: &StanzaInfo, reason: &RejectReason) -> bool {
        if info.kind == Kind::Presence
            || !info.may_get_error_reply()
            || !self.in_domains(info.from.as_deref(), true)
        {
            return false;
        }
        // Reply from the addressed JID when it is ours, else from our main domain.
        let from = match &info.to {
            Some(to) if self.in_domains(Some(to), false) => to.clone(),
            _ => match self.cfg.local_domains.first() {
                Some(d) => d.clone(),
                None => return false,
            },
        };
        let cond = match reason {
            RejectReason::BadTo => "item-not-found",
            _ => "not-allowed",
        };
        let bytes = xml::error_reply(info, &from, cond, "cancel", "rejected by the x2x gateway");
        if !self.has_room(bytes.len()) {
            self.stats.errors_dropped += 1;
            return false;
        }
        self.stats.errors_generated += 1;
        self.push_out(bytes);
        true
    }

    fn queue_delivery(&mut self, domain: &str, bytes: Vec<u8>, seq: Option<u64>) -> bool {
        if seq.is_none() {
            // Locally generated errors must not crowd out real traffic.
            if self.deliveries_full() {
                self.stats.errors_dropped += 1;
                return false;
            }
            self.stats.errors_generated += 1;
        }
        let token = DeliveryToken {
            epoch: self.epoch,
            seq,
        };
        let Some((_, q)) = self.deliveries.iter_mut().find(|(d, _)| d == domain) else {
            // Unreachable by construction (domains are validated before), but never drop a
            // numbered stanza without accounting for it.
            if let Some(s) = seq {
                self.confirm(s, 0);
            }
            return false;
        };
        self.deliv_count += 1;
        self.deliv_bytes += bytes.len();
        q.push_back(Delivery {
            domain: domain.to_string(),
            bytes,
            token,
        });
        true
    }

    /// The next stanza for the component connection of `domain`. It stays counted
    /// against the inbound bound until [`Engine::delivery_done`] or
    /// [`Engine::delivery_failed`].
    pub fn poll_delivery(&mut self, domain: &str) -> Option<Delivery> {
        self.deliveries
            .iter_mut()
            .find(|(d, _)| d == domain)
            .and_then(|(_, q)| q.pop_front())
    }

    /// The next stanza for any component connection (for single-domain drivers and tests).
    pub fn poll_delivery_any(&mut self) -> Option<Delivery> {
        self.deliveries.iter_mut().find_map(|(_, q)| q.pop_front())
    }

    /// Whether a stanza is waiting for the component connection of `domain`.
    pub fn has_delivery(&self, domain: &str) -> bool {
        self.deliveries
            .iter()
            .any(|(d, q)| d == domain && !q.is_empty())
    }

    /// `d` was written completely to the component socket.
    pub fn delivery_done(&mut self, now_ns: u64, d: &Delivery) {
        self.deliv_count = self.deliv_count.saturating_sub(1);
        self.deliv_bytes = self.deliv_bytes.saturating_sub(d.bytes.len());
        self.stats.delivered += 1;
        if let (true, Some(seq)) = (d.token.epoch == self.epoch, d.token.seq) {
            self.confirm(seq, now_ns);
        }
        // Room freed: decode input that was waiting for it.
        let _ = self.process_input(now_ns);
    }

    /// Writing `d` failed; it goes back to the front of its queue.
    pub fn delivery_failed(&mut self, d: Delivery) {
        if let Some((_, q)) = self.deliveries.iter_mut().find(|(dd, _)| *dd == d.domain) {
            q.push_front(d);
        }
    }

    fn confirm(&mut self, seq: u64, now: u64) {
        if seq < self.delivered {
            return;
        }
        let idx = usize::try_from(seq - self.delivered).unwrap_or(usize::MAX);
        if let Some(slot) = self.window.get_mut(idx) {
            *slot = true;
        }
        self.advance_delivered(now);
    }

    fn advance_delivered(&mut self, now: u64) {
        while self.window.front() == Some(&true) {
            self.window.pop_front();
            self.delivered += 1;
        }
        let Some(c) = &mut self.conn else {
            return;
        };
        if !c.marker_seen {
            return;
        }
        let last = c.last_ack_sent.unwrap_or(0);
        if self.delivered.saturating_sub(last) >= self.cfg.ack_every {
            c.ack_now = true;
        } else if self.delivered > last && c.ack_started.is_none() {
            c.ack_started = Some(now);
        }
    }

    // ----- time -----

    /// How long after the first unacknowledged delivery a lone ack goes.
    fn ack_deadline(&self, c: &Conn) -> u64 {
        if c.reply_expected {
            self.cfg.reply_wait_ns.max(self.cfg.ack_delay_ns)
        } else {
            self.cfg.ack_delay_ns
        }
    }

    /// Whether [`Engine::poll_link_transmit`] would return something now (cheap check
    /// for drivers that wait on a condition variable).
    pub fn wants_transmit(&self) -> bool {
        let Some(c) = &self.conn else {
            return false;
        };
        if c.failed || c.peer_closed {
            return false;
        }
        !c.marker_sent
            || self.send_next < self.next_seq
            || (c.marker_seen && c.ack_now)
            || c.close_requested
    }
}

/// Whether a delivered stanza is one its recipient usually answers: a message that is
/// not an error, headline or groupchat (RFC 6121 §5.2.2), or an iq get/set (RFC 6120
/// §8.2.3 requires an answer). Presence and answers themselves invite none.
fn invites_answer(info: &StanzaInfo) -> bool {
    let t = info.stype.as_deref();
    match info.kind {
        Kind::Message => !matches!(t, Some("error" | "headline" | "groupchat")),
        Kind::Iq => matches!(t, Some("get" | "set")),
        _ => false,
    }
}

/// The one engine shape (`wirebench-engine`), on the link connection's side: bytes to
/// and from the peer gateway. The connection's life (`link_up`, `link_down`) and the
/// component side (`enqueue_outbound`, deliveries) stay the driver's calls; end of file
/// is the driver's `link_down`.
impl wirebench_engine::Engine for Engine {
    type Event = Event;
    type Error = LinkError;

    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), LinkError> {
        self.handle_link_bytes(now, data)
    }

    fn poll_transmit(&mut self, _now: u64, buf: &mut Vec<u8>) -> usize {
        let mut n = 0;
        while let Some(t) = self.poll_link_transmit() {
            n += t.len();
            buf.extend_from_slice(&t);
        }
        n
    }

    /// When the ack timer wants [`wirebench_engine::Engine::handle_timeout`] (same clock
    /// as the `now` arguments), if at all.
    fn poll_timeout(&self) -> Option<u64> {
        let c = self.conn.as_ref()?;
        if c.failed || c.ack_now {
            return None;
        }
        let start = c.ack_started?;
        Some(if !c.ack_ride {
            start.saturating_add(self.cfg.ack_delay_ns / 2)
        } else {
            start.saturating_add(self.ack_deadline(c))
        })
    }

    /// Half the ack delay lets an ack ride on the next stanza; the deadline sends it alone.
    fn handle_timeout(&mut self, now: u64) -> Result<(), LinkError> {
        let delay = self.cfg.ack_delay_ns;
        let Some(c) = self.conn.as_ref() else {
            return Ok(());
        };
        let deadline = self.ack_deadline(c);
        if let Some(c) = &mut self.conn
            && let Some(start) = c.ack_started
        {
            if now >= start.saturating_add(delay / 2) {
                c.ack_ride = true;
            }
            if now >= start.saturating_add(deadline) {
                c.ack_now = true;
                c.ack_started = None;
            }
        }
        Ok(())
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
