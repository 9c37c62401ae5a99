//! Socket set-up for the link: TCP Fast Open (RFC 7413) on both ends, keepalive and
//! TCP_USER_TIMEOUT so a dead satellite link is noticed, and TCP_INFO to tell whether
//! data really rode in the SYN.
//!
//! Linux specifics: the dialling side sets `TCP_FASTOPEN_CONNECT` before `connect`, so
//! `connect` returns at once when the kernel holds a TFO cookie for the peer and the SYN
//! leaves with the first `write`, carrying it. Without a cookie (the first connection
//! ever to that peer) the handshake is ordinary and the SYN asks for a cookie. The
//! listening side sets `TCP_FASTOPEN` to the length of its queue of pending TFO
//! requests. Both need `net.ipv4.tcp_fastopen` (per network namespace): bit 1 (value 1)
//! for clients, bit 2 (value 2) for servers, hence 3 for a gateway that does both.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockRef, Socket, TcpKeepalive, Type};

/// `TCPI_OPT_SYN_DATA` of `<linux/tcp.h>`: SYN data was acknowledged (both ends).
const TCPI_OPT_SYN_DATA: u8 = 32;
/// Pending TFO requests a listener queues (RFC 7413 §5.1 suggests bounding them).
const TFO_QUEUE: libc::c_int = 64;

fn setsockopt_int(
    fd: libc::c_int,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: a valid fd and a pointer to a c_int with its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `net.ipv4.tcp_fastopen` as the calling thread's network namespace sees it.
pub fn tfo_sysctl() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_fastopen")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// What the sysctl prevents, if anything, for a gateway that dials and/or listens.
pub fn tfo_sysctl_problem(sysctl: Option<u32>, dials: bool, listens: bool) -> Option<String> {
    let Some(v) = sysctl else {
        return Some("cannot read net.ipv4.tcp_fastopen: TCP Fast Open state unknown".to_string());
    };
    let mut missing = Vec::new();
    if dials && v & 1 == 0 {
        missing.push("bit 1 (client: data in our SYN)");
    }
    if listens && v & 2 == 0 {
        missing.push("bit 2 (server: accept data in the peer's SYN)");
    }
    (!missing.is_empty()).then(|| {
        format!(
            "net.ipv4.tcp_fastopen = {v} in this network namespace lacks {}: TCP Fast Open \
             will not be used that way (set it to 3)",
            missing.join(" and ")
        )
    })
}

/// Connects to `peer`, with `TCP_FASTOPEN_CONNECT` when `tfo`, giving up after
/// `timeout` or as soon as `stop()` says so. Returns the stream and whether the TFO
/// option could be set. With a TFO cookie the kernel defers the SYN to the first write,
/// so this returns at once and the first write carries the data in the SYN.
pub fn dial(
    peer: SocketAddr,
    from: Option<IpAddr>,
    tfo: bool,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> io::Result<(TcpStream, bool)> {
    let sock = Socket::new(Domain::for_address(peer), Type::STREAM, Some(Protocol::TCP))?;
    let tfo_set = tfo
        && setsockopt_int(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_FASTOPEN_CONNECT,
            1,
        )
        .is_ok();
    if let Some(ip) = from {
        sock.bind(&SocketAddr::new(ip, 0).into())?;
    }
    sock.set_tcp_nodelay(true)?;
    sock.set_nonblocking(true)?;
    match sock.connect(&peer.into()) {
        Ok(()) => {}
        Err(e)
            if e.raw_os_error() == Some(libc::EINPROGRESS)
                || e.kind() == io::ErrorKind::WouldBlock =>
        {
            let start = Instant::now();
            loop {
                if stop() {
                    return Err(io::Error::other("gateway stopping"));
                }
                if start.elapsed() > timeout {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                if wait_fd(sock.as_raw_fd(), libc::POLLOUT, Duration::from_millis(100))? {
                    if let Some(e) = sock.take_error()? {
                        return Err(e);
                    }
                    break;
                }
            }
        }
        Err(e) => return Err(e),
    }
    sock.set_nonblocking(false)?;
    Ok((sock.into(), tfo_set))
}

/// A listener with a TFO queue when `tfo`. Returns it and whether TFO could be set.
pub fn listen(addr: SocketAddr, tfo: bool) -> io::Result<(TcpListener, bool)> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into())?;
    let tfo_set = tfo
        && setsockopt_int(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_FASTOPEN,
            TFO_QUEUE,
        )
        .is_ok();
    sock.listen(64)?;
    Ok((sock.into(), tfo_set))
}

/// Options for an established link connection: no Nagle delay (stanzas are written
/// whole, one batch at a time), keepalive so an idle dead link is found, and a user
/// timeout so a link whose data is never acknowledged is given up.
pub fn tune_link(s: &TcpStream, user_timeout: Duration) -> io::Result<()> {
    s.set_nodelay(true)?;
    let r = SockRef::from(s);
    r.set_tcp_keepalive(
        &TcpKeepalive::new()
            .with_time(Duration::from_secs(60))
            .with_interval(Duration::from_secs(10))
            .with_retries(3),
    )?;
    if !user_timeout.is_zero() {
        let ms = libc::c_int::try_from(user_timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        setsockopt_int(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, ms)?;
    }
    delay_acks(s);
    Ok(())
}

/// Leaves Linux's quick-ACK mode (TCP_QUICKACK = 0), so the ACK of a stanza can ride on
/// the answer written a few milliseconds later instead of going alone first. A new
/// connection starts in quick-ACK mode; at 2400 bit/s the lone 52-byte ACK in front of
/// the first answer costs 0.17 s. The kernel may re-enter the mode, so the reader calls
/// this again after each read. Best effort: an error only costs that optimisation.
pub fn delay_acks(s: &TcpStream) {
    let _ = setsockopt_int(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_QUICKACK, 0);
}

/// The kernel's TCP_INFO for a connection, if it can be read.
fn tcp_info(s: &TcpStream) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain data; the kernel fills at most `len` bytes.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let r = libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        (r == 0).then_some(info)
    }
}

/// Whether the connection's SYN carried data that the other end accepted (TCP_INFO
/// `tcpi_options & TCPI_OPT_SYN_DATA`). Meaningful once the handshake is over.
pub fn syn_data_acked(s: &TcpStream) -> bool {
    tcp_info(s).is_some_and(|i| i.tcpi_options & TCPI_OPT_SYN_DATA != 0)
}

/// Whether the connection is established (TCP_INFO `tcpi_state`): the handshake is over,
/// so a TFO cookie the peer offered is in the kernel's cache.
pub fn established(s: &TcpStream) -> bool {
    // 1 = TCP_ESTABLISHED (include/net/tcp_states.h).
    tcp_info(s).is_some_and(|i| i.tcpi_state == 1)
}

/// Waits up to `timeout` for `fd` to become readable (a listener: a connection waits).
pub fn wait_readable(fd: libc::c_int, timeout: Duration) -> io::Result<bool> {
    wait_fd(fd, libc::POLLIN, timeout)
}

fn wait_fd(fd: libc::c_int, events: libc::c_short, timeout: Duration) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_problems_are_spelled_out() {
        assert_eq!(tfo_sysctl_problem(Some(3), true, true), None);
        let m = tfo_sysctl_problem(Some(1), true, true).unwrap();
        assert!(
            m.contains("= 1") && m.contains("bit 2") && !m.contains("bit 1"),
            "{m}"
        );
        assert_eq!(tfo_sysctl_problem(Some(1), true, false), None);
        assert!(
            tfo_sysctl_problem(Some(0), true, false)
                .unwrap()
                .contains("bit 1")
        );
        assert!(tfo_sysctl_problem(None, true, true).is_some());
    }

    #[test]
    fn loopback_dial_and_listen_with_tfo_options() {
        let (l, tfo_listen) = listen("127.0.0.1:0".parse().unwrap(), true).unwrap();
        let addr = l.local_addr().unwrap();
        let (c, tfo_dial) = dial(
            addr,
            Some("127.0.0.1".parse().unwrap()),
            true,
            Duration::from_secs(5),
            &|| false,
        )
        .unwrap();
        assert!(tfo_listen && tfo_dial, "Linux accepts both options");
        use std::io::{Read, Write};
        (&c).write_all(b"x").unwrap();
        let (mut s, _) = l.accept().unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        tune_link(&s, Duration::from_secs(5)).unwrap();
        let _ = syn_data_acked(&c);
    }
}
