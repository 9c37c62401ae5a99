//! wirebench-x2x-gateway: the blocking gateway of the zero-handshake XMPP
//! server-to-server link (XEP-0361), whose protocol is the sans-IO engine of
//! `wirebench-x2x`.
//!
//! ```text
//!  Prosody a.test ══XEP-0114══ gateway A ══XEP-0361 link (one TCP)══ gateway B ══XEP-0114══ Prosody b.test
//!                  component "b.test"                                  component "a.test"
//! ```
//!
//! Each gateway attaches to its local server as the XEP-0114 external component of every
//! remote domain, so the server routes stanzas for those domains to it; it carries them
//! over one bidirectional TCP connection to the peer gateway, which hands them to its own
//! server through its component connection. Stanzas keep their real `from`/`to`. The
//! link's connection uses TCP Fast Open (RFC 7413) so a re-connection's first bytes ride
//! in the SYN ([`wirebench_net::sock`]).
//!
//! Layers: [`gateway`] drives the sans-IO XEP-0114 component session
//! ([`wirebench_x2x::component`]) and the link engine ([`wirebench_x2x::Engine`]) with blocking std threads (one
//! concurrency model: threads, one mutex + condvar); [`config`] reads the TOML
//! configuration. Entry points: [`Config`] and [`run`] (or [`Gateway::start`] for a
//! handle with statistics and test hooks).

pub mod config;
pub mod gateway;

pub use config::{
    ComponentConfig, Config, ConfigError, Dial, Limits, LinkConfig, LogLevel, Timing,
};
pub use gateway::{Error, Gateway, Stats, run};
pub use wirebench_x2x::Compression;
