//! The lab as a plugin sees it: two hosts (the client's and the server's network
//! namespaces) at fixed addresses, with the link's counters and path round trips. The
//! runner builds the lab (`wirebench_lab::Lab`: namespaces, TUN devices, the emulator),
//! configures its link for each case and captures it; a case only places things in its
//! hosts and reads what crossed, and this is all it is handed ([`crate::Env::lab`],
//! [`crate::RunEnv::lab`]).
//!
//! - [`Hosts`]: the lab's two hosts, its counters and path round trips;
//! - [`Host`]: one host: its namespace's name (what [`crate::peer::PeerProcess`],
//!   [`crate::peer::command_in`] and [`crate::peer::in_netns`] take), a command run in it
//!   (`ip netns exec HOST sysctl ...`), and entering it from a thread;
//! - [`enter`] and [`run_in`]: the same by the host's name, for a thread spawned with an
//!   owned name (a server's thread: it and every socket and child it makes stay there)
//!   or a setting undone when its guard is dropped;
//! - [`CLIENT_ADDR`], [`SERVER_ADDR`] (and the second path's): the hosts' addresses, as
//!   constants so a protocol's [`crate::Protocol::lab_hosts`] can name them statically.
//!
//! A struct wrapping `&Lab` rather than a trait the runner implements: there is one lab,
//! plugin tests that need one build real namespaces anyway (a fake host could not hold
//! a server's sockets), and a `Copy` handle keeps `Option<Hosts>` as easy to pass down as
//! the `Option<&Lab>` it replaces. Narrow it stays because it is the only way a plugin
//! reaches the lab: `app/runner/tests/integration/tiers.rs` refuses a `wirebench-lab` dependency in
//! any protocol or workload crate.

use std::net::SocketAddr;
use wirebench_lab::Lab;

/// Why entering a host or running a command in it failed.
pub use wirebench_lab::LabError as HostError;
pub use wirebench_lab::lab::{CLIENT_ADDR, CLIENT_ADDR2, SERVER_ADDR, SERVER_ADDR2};
/// What crossed the link so far, each direction ([`Hosts::counters`]).
pub use wirebench_lab::{Counters, DirCounters};

/// The lab's two hosts, as a case reaches them.
#[derive(Clone, Copy)]
pub struct Hosts<'a> {
    lab: &'a Lab,
}

impl<'a> Hosts<'a> {
    /// The runner's lab, handed to plugins.
    pub fn new(lab: &'a Lab) -> Hosts<'a> {
        Hosts { lab }
    }

    /// The client host ([`CLIENT_ADDR`]), where the case loop's thread runs.
    pub fn client(&self) -> Host<'a> {
        Host {
            name: self.lab.client().name(),
        }
    }

    /// The server host ([`SERVER_ADDR`]).
    pub fn server(&self) -> Host<'a> {
        Host {
            name: self.lab.server().name(),
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
    wirebench_lab::netns::run_in(name, program, args)
}

/// Moves the calling thread into the host whose namespace is `name` ([`Host::name`]) for
/// the rest of its life: sockets it opens, and children it spawns, belong there.
pub fn enter(name: &str) -> Result<(), HostError> {
    wirebench_lab::netns::enter(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, TcpListener, TcpStream};

    /// Each of the handle's ways into a host lands in that host: a command sees its
    /// address, a thread that entered it can listen there, and a connection from the client
    /// host crosses the link (counted) with the link's round trip. Needs root, like every
    /// lab test (CI runs as root); it fails rather than passes without it.
    #[test]
    fn the_handle_reaches_the_right_hosts() {
        wirebench_lab::netns::check_privileges()
            .expect("this test builds a lab: run the suite as root (bash scripts/test.sh)");
        let spec = wirebench_link::LinkSpec::parse("10Mbit/5ms").unwrap();
        let lab = Lab::create(spec.to_params(), spec.to_params(), 1, None).unwrap();
        let hosts = Hosts::new(&lab);
        assert_ne!(hosts.client().name(), hosts.server().name());
        let addrs = hosts.server().run("ip", &["-4", "-o", "addr"]).unwrap();
        assert!(addrs.contains(&SERVER_ADDR.to_string()), "{addrs}");
        assert!(!addrs.contains(&CLIENT_ADDR.to_string()), "{addrs}");
        let by_name = run_in(hosts.client().name(), "ip", &["-4", "-o", "addr"]).unwrap();
        assert!(by_name.contains(&CLIENT_ADDR.to_string()), "{by_name}");

        let listener = std::thread::scope(|s| {
            s.spawn(|| {
                hosts.server().enter().unwrap();
                TcpListener::bind((SERVER_ADDR, 0)).unwrap()
            })
            .join()
            .unwrap()
        });
        let port = listener.local_addr().unwrap().port();
        let client = hosts.client().name().to_string();
        let before = hosts.counters();
        let local = std::thread::spawn(move || {
            enter(&client).unwrap();
            let s = TcpStream::connect((IpAddr::V4(SERVER_ADDR), port)).unwrap();
            s.local_addr().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(local.ip(), IpAddr::V4(CLIENT_ADDR));
        let after = hosts.counters();
        assert!(after.up.delivered_packets > before.up.delivered_packets);
        assert!(!hosts.has_paths());
        assert_eq!(hosts.path_rtt_ns(local), Some(10_000_000));
        assert!(enter("wb-no-such-host").is_err());
    }
}
