//! The `raw` protocol's network side: the reference server (`wirebench serve`, placed by
//! the runner on loopback or in a lab host) and the control client that opens its data
//! sessions (the JSON-lines control channel, docs/protocols/control.md). Protocol logic
//! lives in `wirebench-raw` (the engine); this crate only moves its bytes.

pub mod client;
pub mod server;

pub use client::{ControlClient, NetError};
pub use server::{PROTOCOLS, Server, ServerConfig, ServerHandle};
