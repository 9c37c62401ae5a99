//! Real Shadowsocks servers started per case beside the origin, in the lab's server host
//! (or on loopback): Debian's shadowsocks-libev (`ss-server`, 3.3.5) for
//! `shadowsocks.server=libev`, and shadowsocks-rust (`ssserver`, 1.25.0, the peer that
//! speaks Shadowsocks 2022; built by scripts/install-shadowsocks-rust.sh) for
//! `shadowsocks.server=rust`. Each listens only on the case's server address, with a
//! secret drawn for the case, and its ACL (the same format for both) blocks every
//! outbound destination but the origin (the complement of the origin's address as
//! networks), so it is no relay beyond the case.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use wirebench_peer::{self as peer, command_in, start_listening};
use wirebench_protocol::Fault;
use wirebench_protocol::Hosts;
use wirebench_protocol::prereq::on_path;
use wirebench_protocol::{Install, Lookup, Requirement, WorkloadError};
use wirebench_shadowsocks::Cipher;

pub const PROGRAM: &str = "ss-server";

/// shadowsocks-libev's server, as cases check for it and `wirebench doctor` lists it.
pub const LIBEV: Requirement = Requirement {
    name: "ss-server (shadowsocks-libev)",
    lookup: Lookup::Program(PROGRAM),
    install: Install::Debian("shadowsocks-libev"),
};

/// The shadowsocks-rust release scripts/install-shadowsocks-rust.sh builds.
pub const RUST_VERSION: &str = "1.25.0";

/// shadowsocks-rust's server, the pinned build or one on PATH ([`rust_program`]).
pub const RUST: Requirement = Requirement {
    name: "ssserver (shadowsocks-rust 1.25.0)",
    lookup: Lookup::Find(|| find_rust("ssserver")),
    install: Install::Script {
        // It builds with cargo, which comes with the toolchain that built wirebench (a
        // Debian cargo may be too old for it, so none is installed).
        path: "scripts/install-shadowsocks-rust.sh",
        needs: &[],
    },
};

/// A shadowsocks-rust program (`ssserver`, `sslocal`): the pinned build in this
/// checkout's target/peers, else one on `PATH`.
pub fn rust_program(name: &str) -> Result<PathBuf, WorkloadError> {
    find_rust(name).map_err(|_| {
        WorkloadError::Environment(format!(
            "{name} (shadowsocks-rust {RUST_VERSION}) is not installed; install it with: {}",
            RUST.install
        ))
    })
}

fn find_rust(name: &str) -> Result<PathBuf, String> {
    let pinned = format!("shadowsocks-rust-{RUST_VERSION}/bin/{name}");
    if let Ok(path) = wirebench_peer::built_peer(&pinned) {
        return Ok(path);
    }
    on_path(name)
        .map_err(|e| format!("no target/peers/shadowsocks-rust-{RUST_VERSION}/bin/{name}; {e}"))
}

/// A proxy of ours to stop (by its PID) when the case ends.
pub use wirebench_peer::ListeningPeer as External;

/// A free port on `ip` inside `netns` (bound and released: ss-server binds it next).
fn free_port(netns: Option<&str>, ip: IpAddr) -> Result<u16, WorkloadError> {
    peer::free_port(netns, ip)
        .ok_or_else(|| WorkloadError::Environment(format!("no free port on {ip}")))
}

/// Every IPv4 network but `keep` (a /32): one network per bit, each the sibling of a
/// prefix of `keep`, 32 in all.
pub fn complement_v4(keep: Ipv4Addr) -> Vec<String> {
    let k = u32::from(keep);
    (1..=32u32)
        .map(|len| {
            // Same first len-1 bits as `keep`, the len-th flipped.
            let flip = 1u32 << (32 - len);
            let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
            let net = (k ^ flip) & mask;
            format!("{}/{len}", Ipv4Addr::from(net))
        })
        .collect()
}

/// ss-server's ACL: accept clients, block every outbound destination but `origin`.
fn acl(origin: SocketAddr) -> Result<String, WorkloadError> {
    let IpAddr::V4(o) = origin.ip() else {
        return Err(WorkloadError::Input(format!(
            "shadowsocks.server=libev: the origin {origin} is IPv6, which this ACL does not cover"
        )));
    };
    let mut s = String::from("[accept_all]\n\n[outbound_block_list]\n");
    for n in complement_v4(o) {
        s.push_str(&n);
        s.push('\n');
    }
    s.push_str("::/0\n");
    Ok(s)
}

/// ssserver's ACL: accept clients, connect only to `origin`'s address. shadowsocks-rust
/// matches an IPv4 address against IPv6 rules as its mapped form (`::ffff:a.b.c.d`), so
/// the blacklist above (which blocks `::/0`) would block everything there; it takes a
/// whitelist instead, which ss-server 3.3.5 does not.
fn acl_rust(origin: SocketAddr) -> String {
    let net = match origin.ip() {
        IpAddr::V4(a) => format!("{a}/32"),
        IpAddr::V6(a) => format!("{a}/128"),
    };
    format!("[accept_all]\n\n[outbound_block_all]\n\n[outbound_allow_list]\n{net}\n")
}

/// Starts ss-server for `origin` with `cipher` and `password`, its ACL and output in
/// `dir`; TCP Fast Open on its listener when `tfo`.
pub fn start(
    lab: Option<Hosts>,
    dir: &Path,
    origin: SocketAddr,
    cipher: Cipher,
    password: &str,
    tfo: bool,
) -> Result<External, WorkloadError> {
    LIBEV.require().map_err(WorkloadError::from)?;
    spawn(Peer::Libev, lab, dir, origin, cipher.name(), password, tfo)
}

/// Starts shadowsocks-rust's ssserver for `origin` with `method` (any of its names,
/// the 2022 ones included) and `password` (for a 2022 method, the base64 key).
pub fn start_rust(
    lab: Option<Hosts>,
    dir: &Path,
    origin: SocketAddr,
    method: &str,
    password: &str,
    tfo: bool,
) -> Result<External, WorkloadError> {
    let program = rust_program("ssserver")?;
    spawn(Peer::Rust(program), lab, dir, origin, method, password, tfo)
}

enum Peer {
    Libev,
    Rust(PathBuf),
}

fn spawn(
    peer: Peer,
    lab: Option<Hosts>,
    dir: &Path,
    origin: SocketAddr,
    method: &str,
    password: &str,
    tfo: bool,
) -> Result<External, WorkloadError> {
    let name = match &peer {
        Peer::Libev => PROGRAM,
        Peer::Rust(_) => "ssserver",
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        WorkloadError::because(
            Fault::Environment,
            format!("cannot create {}", dir.display()),
            e,
        )
    })?;
    let netns = lab.map(|l| l.server().name().to_string());
    let ip = wirebench_rpc::server::server_ip(lab);
    let port = free_port(netns.as_deref(), ip)?;
    let acl_path = dir.join(format!("{name}.acl"));
    let acl_text = match &peer {
        Peer::Libev => acl(origin)?,
        Peer::Rust(_) => acl_rust(origin),
    };
    std::fs::write(&acl_path, acl_text).map_err(|e| {
        WorkloadError::because(
            Fault::Environment,
            format!("cannot write {}", acl_path.display()),
            e,
        )
    })?;
    let acl_arg = acl_path.to_string_lossy();
    let cmd = match &peer {
        Peer::Libev => {
            let mut cmd = command_in(netns.as_deref(), PROGRAM);
            cmd.args([
                "-s",
                &ip.to_string(),
                "-p",
                &port.to_string(),
                "-k",
                password,
                "-m",
                method,
                "-t",
                "30",
                "--no-delay",
                "--acl",
                &acl_arg,
            ]);
            if tfo {
                cmd.arg("--fast-open");
            }
            cmd
        }
        Peer::Rust(program) => {
            let mut cmd = command_in(netns.as_deref(), &program.to_string_lossy());
            cmd.args([
                "-s",
                &SocketAddr::new(ip, port).to_string(),
                "-k",
                password,
                "-m",
                method,
                "--timeout",
                "30",
                "--tcp-no-delay",
                "--acl",
                &acl_arg,
            ]);
            if tfo {
                cmd.arg("--tcp-fast-open");
            }
            cmd
        }
    };
    start_listening(cmd, name, dir, (ip, port), netns.as_deref(), &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rust_peer_is_named_with_its_pinned_version() {
        assert!(RUST.name.contains(RUST_VERSION), "{}", RUST.name);
        let script = include_str!("../../../../scripts/install-shadowsocks-rust.sh");
        assert!(script.contains(&format!("VERSION={RUST_VERSION}\n")));
    }

    #[test]
    fn complement_covers_all_but_one() {
        let keep = Ipv4Addr::new(198, 18, 0, 1);
        let nets = complement_v4(keep);
        assert_eq!(nets.len(), 32);
        let inside = |a: Ipv4Addr| {
            nets.iter().any(|n| {
                let (ip, len) = n.split_once('/').unwrap();
                let (ip, len): (Ipv4Addr, u32) = (ip.parse().unwrap(), len.parse().unwrap());
                let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
                u32::from(a) & mask == u32::from(ip) & mask
            })
        };
        assert!(!inside(keep));
        for a in [
            Ipv4Addr::new(198, 18, 0, 0),
            Ipv4Addr::new(198, 18, 0, 2),
            Ipv4Addr::new(127, 0, 0, 1),
            Ipv4Addr::new(8, 8, 8, 8),
            Ipv4Addr::new(255, 255, 255, 255),
            Ipv4Addr::UNSPECIFIED,
        ] {
            assert!(inside(a), "{a}");
        }
    }
}
