//! wirebench-x2x: the sans-IO engine of a zero-handshake XMPP server-to-server link.
//!
//! Study S1 (XMPP over a 2400 bit/s satellite link with up to 1 s one-way delay) found
//! that standard server-to-server XMPP (RFC 6120: two TCP connections, stream headers,
//! features, TLS, SASL or dialback, each a round trip) needs 36 to 78 s before the first
//! message crosses, and that Isode's zero-handshake link, specified as XEP-0361 ("Zero
//! Handshake Server to Server Protocol"), needs 2.9 to 6.9 s. This crate is the link's
//! protocol for servers that do not implement XEP-0361, such as Prosody; the gateway
//! that carries it between two of them is `wirebench-x2x-gateway`:
//!
//! ```text
//!  Prosody a.test ══XEP-0114══ gateway A ══XEP-0361 link (one TCP)══ gateway B ══XEP-0114══ Prosody b.test
//!                  component "b.test"                                  component "a.test"
//! ```
//!
//! What the link does beyond XEP-0361:
//! - pre-agreed compression ([`codec`], RFC 1950/1951 zlib with a partial flush per write,
//!   optionally with the preset dictionary of [`dict`]);
//! - acknowledgements in the manner of XEP-0198 and an immediate resend on every
//!   (re)connection, so nothing is lost or duplicated when the link breaks ([`engine`]).
//!
//! Everything here is a state machine without I/O, clock or thread (bytes and time in,
//! bytes and events out): [`engine`] is the link, [`component`] the gateway's XEP-0114
//! session with its local server, [`xml`] the stanza normalisation and the link's own
//! elements.

pub mod codec;
pub mod component;
pub mod dict;
pub mod engine;
pub mod xml;

pub use codec::Compression;
pub use engine::{Engine, EngineConfig, EngineStats};
pub use xml::NS_X2X;

/// The fuzz target `x2x_link`: the engine on arbitrary bytes from the peer gateway.
/// The first byte picks the compression mode, the rest arrives in two pieces; errors
/// close the link, a panic or unbounded growth is a bug. Also the outbound side: the same
/// bytes as a stanza from the local server.
pub fn fuzz_input(data: &[u8]) {
    use wirebench_engine::Engine as _;
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut cfg = EngineConfig::new(&["a.test"], &["b.test"], 1);
    cfg.compression = match mode % 3 {
        0 => Compression::None,
        1 => Compression::Zlib,
        _ => Compression::ZlibDict,
    };
    cfg.max_stanza = 4096;
    let mut e = Engine::new(cfg);
    e.link_up(0);
    let split = rest.first().map_or(0, |&b| b as usize).min(rest.len());
    let (a, b) = rest.split_at(split);
    let _ = e.handle_link_bytes(1, a);
    let _ = e.handle_link_bytes(2, b);
    let _ = e.enqueue_outbound(rest);
    let _ = e.handle_timeout(10_000_000_000);
    while e.poll_link_transmit().is_some() {}
    while e.poll_event().is_some() {}
    while e.poll_delivery_any().is_some() {}
}

#[cfg(test)]
mod engine_tests;
