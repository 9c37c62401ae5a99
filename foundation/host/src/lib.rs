//! This machine's hosts as a case reaches them, without the lab that makes them:
//!
//! - [`program`]: the one lookup of the programs a run starts;
//! - [`command`]: commands run here or in a network namespace, root checked, a thread
//!   moved into a namespace;
//! - [`counters`]: what crossed the lab's link;
//! - [`view`]: the lab's two hosts and their addresses, as the trait [`LabView`] the lab
//!   implements.
//!
//! The lab (`foundation/lab`: namespaces made and deleted, TUN devices, the emulator,
//! pcap) builds on this crate; the plugin interface and the process toolkit use only it.

pub mod command;
pub mod counters;
pub mod program;
pub mod view;

pub use command::HostError;
pub use counters::{Counters, DirCounters, FlowKey};
pub use view::{CLIENT_ADDR, CLIENT_ADDR2, LabView, SERVER_ADDR, SERVER_ADDR2};
