//! The socket calls every crate shares (sock.rs: nix/socket2, TCP Fast Open, TCP_INFO,
//! MPTCP), address parsing with the reference port's default, precise sleeps, and
//! servers on threads of their own, one or one per core (threads.rs), and the caps on
//! what a server's clients may make it hold (cap.rs), and the wait for a whole HTTP request
//! head before a handshake parser that re-reads it is given a connection (head.rs), and the
//! bans on sources that keep sending what the servers refuse (ban.rs), and the return of
//! freed memory to the system (trim.rs).
//! Protocol-free: the reference server and its control client are raw's
//! (`protocols/raw/server`).

pub mod accept;
pub mod addr;
pub mod ban;
pub mod cap;
pub mod head;
pub mod sock;
pub mod tcpinfo;
pub mod threads;
pub mod timing;
pub mod trim;

pub use addr::{AddrError, DEFAULT_PORT, parse_addr};
