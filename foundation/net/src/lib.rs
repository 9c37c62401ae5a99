//! The socket calls every crate shares (sock.rs: nix/socket2, TCP Fast Open, TCP_INFO,
//! MPTCP), address parsing with the reference port's default, and precise sleeps.
//! Protocol-free: the reference server and its control client are raw's
//! (`protocols/raw/server`).

pub mod addr;
pub mod sock;
pub mod timing;

pub use addr::{AddrError, DEFAULT_PORT, parse_addr};
