//! wirebench-x2x: a zero-handshake XMPP server-to-server link gateway.
//!
//! Study S1 (XMPP over a 2400 bit/s satellite link with up to 1 s one-way delay) found
//! that standard server-to-server XMPP (RFC 6120: two TCP connections, stream headers,
//! features, TLS, SASL or dialback, each a round trip) needs 36 to 78 s before the first
//! message crosses, and that Isode's zero-handshake link, specified as XEP-0361 ("Zero
//! Handshake Server to Server Protocol"), needs 2.9 to 6.9 s. This crate is such a link
//! for servers that do not implement XEP-0361, such as Prosody:
//!
//! ```text
//!  Prosody a.test ══XEP-0114══ gateway A ══XEP-0361 link (one TCP)══ gateway B ══XEP-0114══ Prosody b.test
//!                  component "b.test"                                  component "a.test"
//! ```
//!
//! Each gateway attaches to its local server as the XEP-0114 external component of every
//! remote domain, so the server routes stanzas for those domains to it; it carries them
//! over one bidirectional TCP connection to the peer gateway, which hands them to its own
//! server through its component connection. Stanzas keep their real `from`/`to`.
//!
//! What the link does beyond XEP-0361:
//! - pre-agreed compression ([`codec`], RFC 1950/1951 zlib with a partial flush per write,
//!   optionally with the preset dictionary of [`dict`]);
//! - acknowledgements in the manner of XEP-0198 and an immediate resend on every
//!   (re)connection, so nothing is lost or duplicated when the link breaks ([`engine`]);
//! - TCP Fast Open (RFC 7413) so a re-connection's first bytes ride in the SYN
//!   ([`wirebench_net::sock`]).
//!
//! Layers: [`engine`] and [`component`] are sans-IO state machines (bytes and time in,
//! bytes and events out); [`gateway`] drives them with blocking std threads;
//! [`config`] reads the TOML configuration. Entry points: [`Config`] and [`run`] (or
//! [`Gateway::start`] for a handle with statistics and test hooks).

pub mod codec;
pub mod component;
pub mod config;
pub mod dict;
pub mod engine;
pub mod gateway;
pub mod xml;

pub use codec::Compression;
pub use config::{
    ComponentConfig, Config, ConfigError, Dial, Limits, LinkConfig, LogLevel, Timing,
};
pub use engine::{Engine, EngineConfig, EngineStats};
pub use gateway::{Error, Gateway, Stats, run};
pub use xml::NS_X2X;

#[cfg(test)]
mod engine_tests;
