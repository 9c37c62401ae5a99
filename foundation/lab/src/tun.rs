//! TUN devices: the lab hosts' network interfaces. The kernel hands every IP packet a
//! host sends through its TUN device to our file descriptor, and takes packets we write
//! as if they had arrived from a wire (Linux `Documentation/networking/tuntap.rst`).

use crate::netns::{LabError, Netns};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

/// TUN interface name inside each host (names are per namespace).
pub const IFNAME: &str = "wbtun0";
/// Packets the kernel may queue on a TUN device before dropping them silently. The
/// default (500) loses packets under load before the emulator ever sees them.
const TXQUEUELEN: &str = "20000";

// From <linux/if_tun.h>.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// An open TUN device (non-blocking), removed when the last descriptor closes.
#[derive(Debug)]
pub struct Tun {
    file: File,
}

impl Tun {
    /// Creates `wbtun0` inside `ns` with `addr/prefix`, brings it up with `mtu`.
    pub fn create(ns: &Netns, addr: &str, prefix: u8, mtu: u32) -> Result<Tun, LabError> {
        Tun::create_dev(ns, IFNAME, addr, prefix, mtu)
    }

    /// Creates `ifname` inside `ns` with `addr/prefix` (the second path's `wbtun1`).
    pub fn create_dev(
        ns: &Netns,
        ifname: &str,
        addr: &str,
        prefix: u8,
        mtu: u32,
    ) -> Result<Tun, LabError> {
        // The device is created in the namespace of the thread that opens it, so open it
        // from a short-lived thread that entered the namespace.
        let name = ns.name().to_string();
        let file = std::thread::scope(|s| {
            s.spawn(|| -> Result<File, LabError> {
                crate::netns::enter(&name)?;
                open_tun(ifname).map_err(|error| LabError::Io {
                    what: "cannot create a TUN device (is /dev/net/tun available?)".into(),
                    error,
                })
            })
            .join()
            .unwrap_or_else(|_| {
                Err(LabError::Command {
                    command: "tun".into(),
                    detail: "thread panicked".into(),
                })
            })
        })?;
        let mtu = mtu.to_string();
        ns.ip(&["addr", "add", &format!("{addr}/{prefix}"), "dev", ifname])?;
        ns.ip(&[
            "link",
            "set",
            ifname,
            "mtu",
            &mtu,
            "txqueuelen",
            TXQUEUELEN,
            "up",
        ])?;
        Ok(Tun { file })
    }

    /// Creates a TUN device `name` in the root namespace (for `wirebench shell`). It is
    /// not persistent: it disappears when this process closes it or dies.
    pub fn create_root(name: &str, addr: &str, prefix: u8, mtu: u32) -> Result<Tun, LabError> {
        let file = open_tun(name).map_err(|error| LabError::Io {
            what: "cannot create a TUN device (is /dev/net/tun available?)".into(),
            error,
        })?;
        // IPv4 only on the link (see Netns::create); best effort, the counters show
        // anything else that crosses.
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"), "1");
        let mtu = mtu.to_string();
        crate::netns::run(
            "ip",
            &["addr", "add", &format!("{addr}/{prefix}"), "dev", name],
        )?;
        crate::netns::run(
            "ip",
            &[
                "link",
                "set",
                name,
                "mtu",
                &mtu,
                "txqueuelen",
                TXQUEUELEN,
                "up",
            ],
        )?;
        Ok(Tun { file })
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Reads one packet; `Ok(None)` when none is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock {
                Ok(None)
            } else {
                Err(e)
            };
        }
        Ok(Some(n as usize))
    }

    /// Injects one packet.
    pub fn send(&self, pkt: &[u8]) -> io::Result<()> {
        // SAFETY: pkt is valid for reads of pkt.len() bytes.
        let n = unsafe { libc::write(self.fd(), pkt.as_ptr() as *const libc::c_void, pkt.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

fn open_tun(name: &str) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    let bytes = name.as_bytes();
    req.name[..bytes.len().min(libc::IFNAMSIZ - 1)]
        .copy_from_slice(&bytes[..bytes.len().min(libc::IFNAMSIZ - 1)]);
    // SAFETY: TUNSETIFF takes a pointer to a struct ifreq, which IfReq mirrors.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}
