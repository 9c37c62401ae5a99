//! The lab: hosts in Linux network namespaces joined by an emulated link.
//!
//! - [`netns`]: namespaces (`wb-<pid>-<role>`), entering them, cleaning leftovers.
//! - [`tun`]: TUN devices, the hosts' interfaces.
//! - [`emulator`]: the thread that carries packets through `wirebench-link`'s model.
//! - [`lab`]: a client host and a server host joined by the emulator.
//! - [`pcap`]: captures of what crossed the link.
//! - [`times`]: each case's one-way packet delays and queue series.
//!
//! Needs root (CAP_NET_ADMIN + CAP_SYS_ADMIN) and `/dev/net/tun`.

pub mod emulator;
pub mod lab;
pub mod netns;
pub mod pcap;
pub mod shell;
pub mod times;
pub mod tun;

pub use emulator::{Counters, DirCounters};
pub use lab::{CLIENT_ADDR, Lab, SERVER_ADDR, ShellAddrs};
pub use netns::{LabError, Netns};
pub use times::LinkTimes;
/// The one program lookup, with the commands and the lab's view, in `wirebench-host`.
pub use wirebench_host::program;
