//! The lab as a case sees it: two hosts at fixed addresses, what crossed the link between
//! them and the round trip each connection's path gives. The lab (`wirebench-lab`)
//! implements [`LabView`]; the plugin interface hands it to cases behind its own handle,
//! so neither it nor any plugin compiles the emulator, the TUN devices or the capture.
//!
//! Addresses come from 198.18.0.0/15, the range RFC 2544 reserves for benchmarking, so
//! they can never be mistaken for (or routed to) a real network.

use crate::counters::Counters;
use std::net::{Ipv4Addr, SocketAddr};

/// The client host's address on the lab's link.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The server host's address on the lab's link.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// The hosts' addresses on the second path (`link2`), for Multipath TCP.
pub const CLIENT_ADDR2: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 1);
pub const SERVER_ADDR2: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);

/// What a case may read of the lab it runs in.
pub trait LabView: Sync {
    /// The client host's network namespace ([`CLIENT_ADDR`]).
    fn client_name(&self) -> &str;
    /// The server host's network namespace ([`SERVER_ADDR`]).
    fn server_name(&self) -> &str;
    /// What has crossed the link (both directions) since the lab was made.
    fn counters(&self) -> Counters;
    /// Whether the case's link gives each connection its own path (`link.paths`).
    fn has_paths(&self) -> bool;
    /// The round trip the link gives a TCP connection from `client` (its address in the
    /// client host) without serialization or queueing, ns; `None` for IPv6.
    fn path_rtt_ns(&self, client: SocketAddr) -> Option<u64>;
}
