//! Drivers: sockets, the reference server and the control client. Protocol logic lives in
//! `wirebench-proto`; this crate only moves its bytes.

pub mod addr;
pub mod client;
pub mod server;
pub mod sock;
pub mod timing;
pub mod xmpp;

pub use addr::{AddrError, DEFAULT_PORT, parse_addr};
pub use client::{ControlClient, NetError};
pub use server::{PROTOCOLS, Server, ServerConfig, ServerHandle};
