//! Drivers: sockets, the reference server (the `raw` protocol's server side, which the
//! runner places on loopback or in a lab host) and its control client. Protocol logic
//! lives in `wirebench-raw` (protocols/raw/engine); this crate only moves its bytes.

pub mod accept;
pub mod addr;
pub mod client;
pub mod server;
pub mod sock;
pub mod timing;

pub use addr::{AddrError, DEFAULT_PORT, parse_addr};
pub use client::{ControlClient, NetError};
pub use server::{PROTOCOLS, Server, ServerConfig, ServerHandle};
