//! Sans-IO XMPP client engine for benchmarking: RFC 6120 (XMPP core: streams, STARTTLS,
//! SASL, resource binding, stanzas), RFC 6121 (IM: roster get, presence, chat messages),
//! RFC 3921 §3 legacy sessions, XEP-0199 pings.
//!
//! Layers, bottom up:
//!
//! - [`framer`]: splits the never-ending stream document into its header and complete
//!   level-1 elements, resumably and within `max_stanza` bytes (no DOM of the stream).
//! - [`stanza`]: parses one complete element with quick-xml into a flat view.
//! - [`sasl`]: PLAIN and SCRAM-SHA-1/-256 with a shareable salted-password cache.
//! - [`client`]: the state machine ([`Client`]), with rustls's sans-IO
//!   `ClientConnection` under the framer once STARTTLS is negotiated.
//! - [`server`]: the server side of a client connection ([`ServerSession`]), with
//!   accounts and rosters behind a [`Directory`].
//!
//! The engine never blocks, reads a clock or touches a socket: both sides are
//! [`wirebench_engine::Engine`]s (the client directly, a server session through
//! [`ServerEngine`]), and that trait is the only way in. A driver writes what
//! `poll_transmit` appends, passes what it reads to `handle_input` and reacts to
//! `poll_event`.

pub mod client;
pub mod error;
pub mod framer;
pub mod sasl;
pub mod server;
pub mod stanza;
mod tls;

use wirebench_engine::Engine as _;

pub use client::{Client, ClientConfig, Event, State, TlsMode};
pub use error::XmppError;
/// The TLS library the engine drives, so callers build configs with the same version.
pub use rustls;
pub use sasl::{Mechanism, ScramCache};
pub use server::{
    Directory, NumberedAccounts, ServerConfig, ServerEngine, ServerEvent, ServerSession,
};

/// Moves the engine's queued output `out` into the driver's `buf` and returns how many
/// bytes it was. Into an empty `buf` the two are swapped: nothing is copied, and `out`
/// keeps `buf`'s capacity for what comes next (a driver that reuses its buffer then
/// allocates nothing in steady state). Behind a non-empty `buf` (a driver with unwritten
/// bytes) it is appended.
pub(crate) fn hand_over(out: &mut Vec<u8>, buf: &mut Vec<u8>) -> usize {
    let n = out.len();
    if n > 0 {
        if buf.is_empty() {
            std::mem::swap(out, buf);
        } else {
            buf.append(out);
        }
    }
    n
}

/// Feeds arbitrary bytes to a fresh client, for a cargo-fuzz target. The first byte picks
/// the state the bytes arrive in: 0 = before the stream header, 1 = awaiting features,
/// 2 = SASL PLAIN in progress, 3 = session established (by a canned login). The rest is
/// fed in two pieces split at the second byte's position, to exercise resumption. Errors
/// are expected; a panic or unbounded growth is a bug.
pub fn fuzz_input(bytes: &[u8]) {
    let Some((&mode, rest)) = bytes.split_first() else {
        return;
    };
    let mut cfg = ClientConfig::new("user@example.com", "pencil");
    cfg.tls = TlsMode::Never;
    cfg.mechanisms = vec![Mechanism::Plain];
    cfg.roster = false;
    cfg.max_stanza = 4096;
    let mut c = Client::new(cfg, None, 1);
    const HEADER: &[u8] = b"<stream:stream xmlns='jabber:client' \
        xmlns:stream='http://etherx.jabber.org/streams' id='f' version='1.0'>";
    const FEATURES: &[u8] = b"<stream:features><mechanisms \
        xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>PLAIN</mechanism></mechanisms>\
        </stream:features>";
    let mut script: Vec<&[u8]> = Vec::new();
    if mode % 4 >= 1 {
        script.push(HEADER);
    }
    if mode % 4 >= 2 {
        script.push(FEATURES);
    }
    if mode % 4 >= 3 {
        script.push(b"<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>");
        script.push(HEADER);
        script.push(
            b"<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></stream:features>\
              <iq type='result' id='wb-bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>\
              <jid>user@example.com/r</jid></bind></iq>",
        );
    }
    for s in script {
        if c.handle_input(0, s).is_err() {
            return;
        }
    }
    let split = rest.first().map_or(0, |&b| b as usize).min(rest.len());
    let (a, b) = rest.split_at(split);
    let _ = c.handle_input(1, a).and_then(|()| c.handle_input(2, b));
    while c.poll_event().is_some() {}
    let _ = c.poll_transmit(3, &mut Vec::new());
}
