//! The lab as a plugin sees it: two hosts (the client's and the server's network
//! namespaces) at fixed addresses, with the link's counters and path round trips. The
//! runner builds the lab (namespaces, TUN devices, the emulator), configures its link for
//! each case and captures it; a case only places things in its hosts and reads what
//! crossed, and this is all it is handed ([`crate::Env::lab`], [`crate::RunEnv::lab`]).
//!
//! - [`Hosts`]: the lab's two hosts, its counters and path round trips;
//! - [`Host`]: one host: its namespace's name (what the process toolkit's `PeerProcess`,
//!   `command_in` and `in_netns` take), a command run in it (`ip netns exec HOST sysctl
//!   ...`), and entering it from a thread;
//! - [`enter`] and [`run_in`]: the same by the host's name, for a thread spawned with an
//!   owned name (a server's thread: it and every socket and child it makes stay there)
//!   or a setting undone when its guard is dropped;
//! - [`CLIENT_ADDR`], [`SERVER_ADDR`] (and the second path's): the hosts' addresses, as
//!   constants so a protocol's [`crate::Protocol::lab_hosts`] can name them statically.
//!
//! The handle wraps the lab's view ([`wirebench_host::LabView`], which the lab
//! implements), not the lab: this crate, and so every plugin, compiles none of the
//! emulator, and `app/runner/tests/integration/tiers.rs` refuses a `wirebench-lab`
//! dependency in any protocol or workload crate. A `Copy` handle keeps `Option<Hosts>`
//! as easy to pass down as a reference.

use std::net::SocketAddr;
use wirebench_host::LabView;

/// Why entering a host or running a command in it failed.
pub use wirebench_host::HostError;
pub use wirebench_host::view::{CLIENT_ADDR, CLIENT_ADDR2, SERVER_ADDR, SERVER_ADDR2};
/// What crossed the link so far, each direction ([`Hosts::counters`]).
pub use wirebench_host::{Counters, DirCounters};

/// The lab's two hosts, as a case reaches them.
#[derive(Clone, Copy)]
pub struct Hosts<'a> {
    lab: &'a dyn LabView,
}

impl<'a> Hosts<'a> {
    /// The runner's lab, handed to plugins.
    pub fn new(lab: &'a dyn LabView) -> Hosts<'a> {
        Hosts { lab }
    }

    /// The client host ([`CLIENT_ADDR`]), where the case loop's thread runs.
    pub fn client(&self) -> Host<'a> {
        Host {
            name: self.lab.client_name(),
        }
    }

    /// The server host ([`SERVER_ADDR`]).
    pub fn server(&self) -> Host<'a> {
        Host {
            name: self.lab.server_name(),
        }
    }

    /// What has crossed the link (both directions) since the lab was made.
    pub fn counters(&self) -> Counters {
        self.lab.counters()
    }

    /// Whether the case's link gives each connection its own path (`link.paths`).
    pub fn has_paths(&self) -> bool {
        self.lab.has_paths()
    }

    /// The round trip the link gives a TCP connection from `client` (its address in the
    /// client host) without serialization or queueing, ns; `None` for IPv6.
    pub fn path_rtt_ns(&self, client: SocketAddr) -> Option<u64> {
        self.lab.path_rtt_ns(client)
    }
}

/// One of the lab's hosts.
#[derive(Clone, Copy, Debug)]
pub struct Host<'a> {
    name: &'a str,
}

impl<'a> Host<'a> {
    /// Its network namespace's name, for `ip netns exec` and [`enter`].
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Runs `program` with `args` in this host (`ip netns exec HOST ...`: its own sysctls,
    /// hosts file and interfaces) and returns its output; a non-zero exit is an error
    /// carrying its stderr.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<String, HostError> {
        run_in(self.name, program, args)
    }

    /// Moves the calling thread into this host for the rest of its life.
    pub fn enter(&self) -> Result<(), HostError> {
        enter(self.name)
    }
}

/// [`Host::run`] in the host whose namespace is `name`, for code that keeps the name
/// beyond the case (to undo a setting when it is dropped).
pub fn run_in(name: &str, program: &str, args: &[&str]) -> Result<String, HostError> {
    wirebench_host::command::run_in(name, program, args)
}

/// Moves the calling thread into the host whose namespace is `name` ([`Host::name`]) for
/// the rest of its life: sockets it opens, and children it spawns, belong there.
pub fn enter(name: &str) -> Result<(), HostError> {
    wirebench_host::command::enter(name)
}
