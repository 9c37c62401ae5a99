//! A lab: two hosts (network namespaces) whose only connection is the emulated link.
//!
//! ```text
//!   host "client" (wb-<pid>-a)                         host "server" (wb-<pid>-b)
//!   198.18.0.1 wbtun0 ──fd──> [emulator: up model] ──fd──> wbtun0 198.18.0.2
//!                     <──fd── [emulator: down model] <──fd──
//! ```
//!
//! Addresses ([`wirebench_host::view`]) come from 198.18.0.0/15, the range RFC 2544
//! reserves for benchmarking. The hosts run real kernel TCP and UDP; the emulator sees
//! every IP packet they exchange.

use crate::emulator::{Counters, Emulator};
use crate::netns::{LabError, Netns};
use crate::pcap::{PcapOptions, PcapStats, PcapWriter};
use crate::tun::Tun;
use std::net::Ipv4Addr;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use wirebench_link::{LinkParams, PathRtts};

pub use wirebench_host::view::{CLIENT_ADDR, CLIENT_ADDR2, SERVER_ADDR, SERVER_ADDR2};
/// The second path's TUN device in each host.
const IFNAME2: &str = "wbtun1";

/// Field order matters: the emulator (holding the TUN devices) stops before the
/// namespaces are deleted.
pub struct Lab {
    /// The second path's emulator (`link2`), created by the first case that has one;
    /// its TUN devices go with it.
    second: Mutex<Option<Emulator>>,
    emulator: Emulator,
    /// `[client, server]` for a lab pair, `[shell host]` for `wirebench shell`.
    hosts: Vec<Netns>,
    /// Interfaces whose MTU follows the link's: (namespace or None for the root, name).
    interfaces: Vec<(Option<String>, String)>,
    mtu: AtomicU32,
    /// The configured link's round trip without queueing (both delays, ns) and its
    /// per-connection path round trips, for [`Lab::path_rtt_ns`].
    paths: Mutex<(u64, Option<Arc<PathRtts>>)>,
    /// `wirebench shell`'s addresses.
    shell: Option<ShellAddrs>,
}

/// The third octets of the /24s `wirebench shell` may take: 198.18.0.0/24 first (the
/// addresses the docs name), then 198.18.16.0/24 to 198.18.79.0/24 for shells that run
/// beside it. 198.18.1.0/24 is the lab pairs' second path; the gap leaves room for more.
const SHELL_SUBNETS: [u8; 65] = {
    let mut v = [0u8; 65];
    let mut i = 1;
    while i < 65 {
        v[i] = 15 + i as u8;
        i += 1;
    }
    v
};

/// The third octets of 198.18.X.1 addresses this machine's root namespace holds: the
/// subnets of running shells (a shell's device goes when its process does).
fn shell_subnets_in_use() -> Result<Vec<u8>, LabError> {
    let out = crate::netns::run("ip", &["-4", "-o", "addr", "show"])?;
    Ok(out
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("198.18.")?.split_once('.'))
        .filter_map(|(third, rest)| rest.starts_with("1/").then(|| third.parse::<u8>().ok())?)
        .collect())
}

/// Held while a shell picks its subnet and puts it on its device, so two shells started
/// at once do not pick the same one.
struct ShellLock {
    /// The lock lives as long as the open file.
    _file: std::fs::File,
}

impl ShellLock {
    fn take() -> Result<ShellLock, LabError> {
        use std::os::fd::AsRawFd;
        let io = |error| LabError::Io {
            what: "cannot lock /run/wirebench/shell.lock".into(),
            error,
        };
        std::fs::create_dir_all("/run/wirebench").map_err(io)?;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open("/run/wirebench/shell.lock")
            .map_err(io)?;
        // SAFETY: flock on a descriptor we own; released when the file is closed.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io(std::io::Error::last_os_error()));
        }
        Ok(ShellLock { _file: f })
    }
}

/// A shell's addresses: its host's, and this machine's across its link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellAddrs {
    pub host: Ipv4Addr,
    pub root: Ipv4Addr,
}

impl Lab {
    /// Creates both hosts and starts the emulator with `up` (client to server) and
    /// `down` models.
    pub fn create(
        up: LinkParams,
        down: LinkParams,
        seed: u64,
        pcap: Option<&PcapOptions>,
    ) -> Result<Lab, LabError> {
        let client = Netns::create("a")?;
        let server = Netns::create("b")?;
        let mtu = up.mtu.max(down.mtu);
        let ta = Tun::create(&client, &CLIENT_ADDR.to_string(), 24, mtu)?;
        let tb = Tun::create(&server, &SERVER_ADDR.to_string(), 24, mtu)?;
        let pcap = open_pcap(pcap)?;
        let paths = Mutex::new((up.delay_ns + down.delay_ns, up.paths.clone()));
        let emulator = start_emulator(ta, tb, up, down, seed, pcap)?;
        let interfaces = vec![
            (
                Some(client.name().to_string()),
                crate::tun::IFNAME.to_string(),
            ),
            (
                Some(server.name().to_string()),
                crate::tun::IFNAME.to_string(),
            ),
        ];
        Ok(Lab {
            second: Mutex::new(None),
            emulator,
            hosts: vec![client, server],
            interfaces,
            mtu: AtomicU32::new(mtu),
            paths,
            shell: None,
        })
    }

    /// `wirebench shell`: one host (198.18.X.2) whose only route to the root namespace
    /// (198.18.X.1, a TUN device `wb<pid>` there) crosses the link. `up` is the host's
    /// uplink (host to root). No default route: nothing else is reachable from the host.
    /// X is 0 for the first shell, and a /24 of its own for each shell running beside
    /// it ([`SHELL_SUBNETS`]), so their traffic never mixes (issue #19).
    pub fn shell(
        up: LinkParams,
        down: LinkParams,
        seed: u64,
        pcap: Option<&PcapOptions>,
    ) -> Result<Lab, LabError> {
        let host = Netns::create("shell")?;
        let mtu = up.mtu.max(down.mtu);
        let lock = ShellLock::take()?;
        let used = shell_subnets_in_use()?;
        let Some(x) = SHELL_SUBNETS.iter().copied().find(|x| !used.contains(x)) else {
            return Err(LabError::Busy(format!(
                "{} `wirebench shell`s are running, each with a /24 of 198.18.0.0/15 \
                 (see `ip -4 addr show`); wait for one to end",
                SHELL_SUBNETS.len()
            )));
        };
        let addrs = ShellAddrs {
            host: Ipv4Addr::new(198, 18, x, 2),
            root: Ipv4Addr::new(198, 18, x, 1),
        };
        let th = Tun::create(&host, &addrs.host.to_string(), 24, mtu)?;
        let root_name = format!("wb{}", std::process::id());
        let tr = Tun::create_root(&root_name, &addrs.root.to_string(), 24, mtu)?;
        // The address is on the device: the next shell sees it taken.
        drop(lock);
        let pcap = open_pcap(pcap)?;
        let paths = Mutex::new((up.delay_ns + down.delay_ns, up.paths.clone()));
        let emulator = start_emulator(th, tr, up, down, seed, pcap)?;
        let interfaces = vec![
            (
                Some(host.name().to_string()),
                crate::tun::IFNAME.to_string(),
            ),
            (None, root_name),
        ];
        Ok(Lab {
            second: Mutex::new(None),
            emulator,
            hosts: vec![host],
            interfaces,
            mtu: AtomicU32::new(mtu),
            paths,
            shell: Some(addrs),
        })
    }

    /// A shell's addresses (`None` for a lab pair).
    pub fn shell_addrs(&self) -> Option<ShellAddrs> {
        self.shell
    }

    /// The client host of a pair, or the shell host.
    pub fn client(&self) -> &Netns {
        &self.hosts[0]
    }

    /// The server host of a pair.
    pub fn server(&self) -> &Netns {
        &self.hosts[self.hosts.len() - 1]
    }

    /// New link models for the next case; also resizes the hosts' MTU if it changed.
    pub fn configure(&self, up: LinkParams, down: LinkParams, seed: u64) -> Result<(), LabError> {
        let mtu = up.mtu.max(down.mtu);
        if mtu != self.mtu.load(Ordering::SeqCst) {
            let m = mtu.to_string();
            for (ns, ifname) in &self.interfaces {
                let mut args: Vec<&str> = Vec::new();
                if let Some(ns) = ns {
                    args.extend(["-n", ns.as_str()]);
                }
                args.extend(["link", "set", ifname.as_str(), "mtu", &m]);
                crate::netns::run("ip", &args)?;
            }
            self.mtu.store(mtu, Ordering::SeqCst);
        }
        *self.paths.lock().unwrap_or_else(|p| p.into_inner()) =
            (up.delay_ns + down.delay_ns, up.paths.clone());
        self.emulator
            .configure(up, down, seed)
            .map_err(|error| LabError::Io {
                what: "cannot reconfigure the link".into(),
                error,
            })?;
        self.emulator.reset_release_error();
        Ok(())
    }

    /// Sets up (or reconfigures) the second path between a pair's hosts, for Multipath
    /// TCP: `wbtun1` with 198.18.1.1 and .2 on each side, its own emulator, and the
    /// kernel's path manager told to use it: the server announces 198.18.1.2 (a `signal`
    /// endpoint) and each side accepts up to 2 subflows, so an MPTCP connection made on
    /// the first path joins a subflow over the second (RFC 8684 ADD_ADDR, MP_JOIN).
    /// `None` removes it (and the announcement). Plain TCP never uses it: its routes
    /// are the first path's.
    pub fn configure_second(
        &self,
        link: Option<(LinkParams, LinkParams)>,
        seed: u64,
    ) -> Result<(), LabError> {
        let mut second = self.second.lock().unwrap_or_else(|p| p.into_inner());
        let Some((up, down)) = link else {
            if second.take().is_some() {
                self.server().ip(&["mptcp", "endpoint", "flush"])?;
            }
            return Ok(());
        };
        if self.hosts.len() != 2 {
            return Err(LabError::Busy(
                "a second path (link2) needs the lab's two hosts; `wirebench shell` has one".into(),
            ));
        }
        // A second seed, so the two paths' losses are independent.
        let seed = seed ^ 0x2b99_2ddf_a232_49d6;
        match &*second {
            Some(e) => e.configure(up, down, seed).map_err(|error| LabError::Io {
                what: "cannot reconfigure the second path".into(),
                error,
            })?,
            None => {
                let mtu = up.mtu.max(down.mtu);
                let (client, server) = (self.client(), self.server());
                let ta = Tun::create_dev(client, IFNAME2, &CLIENT_ADDR2.to_string(), 24, mtu)?;
                let tb = Tun::create_dev(server, IFNAME2, &SERVER_ADDR2.to_string(), 24, mtu)?;
                let e = start_emulator(ta, tb, up, down, seed, None)?;
                for host in [client, server] {
                    host.ip(&[
                        "mptcp",
                        "limits",
                        "set",
                        "subflow",
                        "2",
                        "add_addr_accepted",
                        "2",
                    ])?;
                }
                server.ip(&["mptcp", "endpoint", "flush"])?;
                server.ip(&[
                    "mptcp",
                    "endpoint",
                    "add",
                    &SERVER_ADDR2.to_string(),
                    "dev",
                    IFNAME2,
                    "signal",
                ])?;
                *second = Some(e);
            }
        }
        Ok(())
    }

    /// The second path's counters, while there is one.
    pub fn second_counters(&self) -> Option<Counters> {
        self.second
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(Emulator::counters)
    }

    /// Whether the configured link gives each connection its own path (`link.paths`).
    pub fn has_paths(&self) -> bool {
        self.paths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .is_some()
    }

    /// The round trip the link gives a TCP connection from `client` (its address in the
    /// client host), without serialization or queueing: both directions' delay plus the
    /// connection's own path round trip when `link.paths` is set (ns). `None` for IPv6.
    pub fn path_rtt_ns(&self, client: SocketAddr) -> Option<u64> {
        let SocketAddr::V4(a) = client else {
            return None;
        };
        let (base, paths) = &*self.paths.lock().unwrap_or_else(|p| p.into_inner());
        let key = wirebench_link::path_key(6, (a.ip().octets(), a.port()));
        // Each direction holds half the path's round trip (rounded down).
        Some(base + paths.as_ref().map_or(0, |p| p.rtt_ns(key) / 2 * 2))
    }

    /// Packets the hosts' kernels dropped on their TUN devices before the emulator saw
    /// them (`tx_dropped`; the txqueuelen of 20000 should keep this at zero).
    pub fn tun_drops(&self) -> u64 {
        self.interfaces
            .iter()
            .filter_map(|(ns, ifname)| {
                let mut args: Vec<&str> = Vec::new();
                if let Some(ns) = ns {
                    args.extend(["-n", ns.as_str()]);
                }
                args.extend(["-s", "-j", "link", "show", ifname.as_str()]);
                let json = crate::netns::run("ip", &args).ok()?;
                // `"tx":{...,"dropped":N,...}` in the stats64 object.
                let tx = &json[json.find("\"tx\":")?..];
                let d = &tx[tx.find("\"dropped\":")? + 10..];
                d[..d.find(|c: char| !c.is_ascii_digit())?]
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    }

    /// CPU time used by the emulator thread so far.
    pub fn emulator_cpu_ns(&self) -> Option<u64> {
        self.emulator.cpu_ns()
    }

    pub fn counters(&self) -> Counters {
        self.emulator.counters()
    }

    /// The case's packet times: one-way delays and the queue series since the link was
    /// last configured; `None` when the accounting is off (`WIREBENCH_LINK_TIMES=0`).
    pub fn link_times(&self) -> Option<crate::LinkTimes> {
        self.emulator.times()
    }

    pub fn reset_release_error(&self) {
        self.emulator.reset_release_error();
    }

    /// What the capture (`pcap` of [`Lab::create`]) has written, if there is one.
    pub fn pcap_stats(&self) -> Option<PcapStats> {
        self.emulator.pcap_stats()
    }

    /// Why the emulator stopped, if it did.
    pub fn emulator_error(&self) -> Option<String> {
        self.emulator.error()
    }
}

fn open_pcap(opts: Option<&PcapOptions>) -> Result<Option<PcapWriter>, LabError> {
    opts.map(|o| {
        PcapWriter::create(o).map_err(|error| LabError::Io {
            what: format!("cannot create {}", o.path.display()),
            error,
        })
    })
    .transpose()
}

fn start_emulator(
    a: Tun,
    b: Tun,
    up: LinkParams,
    down: LinkParams,
    seed: u64,
    pcap: Option<PcapWriter>,
) -> Result<Emulator, LabError> {
    Emulator::start(a, b, up, down, seed, pcap).map_err(|error| LabError::Io {
        what: "cannot start the emulator thread".into(),
        error,
    })
}

impl wirebench_host::LabView for Lab {
    fn client_name(&self) -> &str {
        self.client().name()
    }
    fn server_name(&self) -> &str {
        self.server().name()
    }
    fn counters(&self) -> Counters {
        Lab::counters(self)
    }
    fn has_paths(&self) -> bool {
        Lab::has_paths(self)
    }
    fn path_rtt_ns(&self, client: SocketAddr) -> Option<u64> {
        Lab::path_rtt_ns(self, client)
    }
}
