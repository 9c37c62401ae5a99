//! The project's socket calls, in one place: the allocation-free calls of the
//! measurement loops, and the set-up of long-lived link connections (TCP Fast Open,
//! keepalive, user timeout, TCP_INFO) used by the x2x gateway.
//!
//! Measurement paths use blocking system calls on dedicated threads, the way sockperf
//! does: a blocked `recv` is woken directly by the kernel, with no event loop between the
//! packet and the timestamp. Per-call `MSG_DONTWAIT` lets one thread interleave sending
//! and receiving without toggling `O_NONBLOCK`. Each call here is one system call and
//! allocates nothing.
//!
//! TCP Fast Open (RFC 7413), Linux specifics: the dialling side sets
//! `TCP_FASTOPEN_CONNECT` before `connect`, so `connect` returns at once when the kernel
//! holds a TFO cookie for the peer and the SYN leaves with the first `write`, carrying
//! it. Without a cookie (the first connection ever to that peer) the handshake is
//! ordinary and the SYN asks for a cookie. The listening side sets `TCP_FASTOPEN` to the
//! length of its queue of pending TFO requests. Both need `net.ipv4.tcp_fastopen` (per
//! network namespace): bit 1 (value 1) for clients, bit 2 (value 2) for servers, hence 3
//! for a gateway that does both.
//!
//! Safe wrappers come from `nix` (send, recv, sendmsg, poll, shutdown, TCP options it
//! knows) and `socket2` (socket set-up, keepalive, user timeout, quick-ACK); the two
//! options neither has (`TCP_FASTOPEN` on a listener, `TCP_DEFER_ACCEPT`, `TCP_INFO`) go
//! through `libc`.

use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{self as nsock, MsgFlags, setsockopt, sockopt};
use socket2::{Domain, Protocol, SockRef, Socket, TcpKeepalive, Type};

// ---------------------------------------------------------------------------------------
// Measurement loops
// ---------------------------------------------------------------------------------------

/// `MSG_NOSIGNAL` added to the caller's flags, so a closed peer is an error, not a
/// SIGPIPE.
fn send_flags(flags: i32) -> MsgFlags {
    MsgFlags::from_bits_retain(flags | libc::MSG_NOSIGNAL)
}

/// `sendmsg` with flags; `MSG_NOSIGNAL` is always added so a closed peer is an error,
/// not a SIGPIPE.
pub fn sendmsg(fd: RawFd, iov: &[IoSlice<'_>], flags: i32) -> io::Result<usize> {
    // No control messages: nix's control buffer is empty and allocates nothing.
    nsock::sendmsg::<()>(fd, iov, &[], send_flags(flags), None).map_err(io::Error::from)
}

/// `send` of one buffer with flags (plus `MSG_NOSIGNAL`). Cheaper than `sendmsg` for
/// small messages, where the kernel's iovec handling is a visible share of the cost.
pub fn send(fd: RawFd, buf: &[u8], flags: i32) -> io::Result<usize> {
    nsock::send(fd, buf, send_flags(flags)).map_err(io::Error::from)
}

/// `recv` with flags.
pub fn recv(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<usize> {
    nsock::recv(fd, buf, MsgFlags::from_bits_retain(flags)).map_err(io::Error::from)
}

/// Waits up to `timeout` for `events` (`libc::POLLIN` / `libc::POLLOUT`); returns the
/// revents, 0 on timeout or when a signal interrupted the wait.
pub fn poll(fd: impl AsFd, events: i16, timeout: Duration) -> io::Result<i16> {
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::from_bits_retain(events))];
    let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
    match nix::poll::poll(&mut fds, timeout) {
        Ok(0) | Err(Errno::EINTR) => Ok(0),
        // nix knows every flag Linux reports; should it meet one it does not, say
        // "error" so the caller looks at the socket itself.
        Ok(_) => Ok(fds[0].revents().map_or(libc::POLLERR, |r| r.bits())),
        Err(e) => Err(e.into()),
    }
}

/// Waits up to `timeout` for `fd` to become readable (a listener: a connection waits).
pub fn wait_readable(fd: impl AsFd, timeout: Duration) -> io::Result<bool> {
    Ok(poll(fd, libc::POLLIN, timeout)? != 0)
}

/// Waits up to `timeout` for `fd` to become writable (a connecting socket: the
/// handshake is over, or failed).
pub fn wait_writable(fd: impl AsFd, timeout: Duration) -> io::Result<bool> {
    Ok(poll(fd, libc::POLLOUT, timeout)? != 0)
}

/// `shutdown(SHUT_RDWR)` of a socket another thread owns: wakes a thread blocked in
/// `accept` on a listener, from any thread or network namespace. Best effort.
pub fn shutdown_both(fd: RawFd) {
    let _ = nsock::shutdown(fd, nsock::Shutdown::Both);
}

/// True for the errors a timed-out or non-blocking call returns.
pub fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Socket options every data connection gets: Nagle off unless asked (messages leave
/// when written),
/// and short blocking timeouts so loops can notice a shutdown request.
pub fn tune_data_socket(s: &TcpStream, nodelay: bool, tick: Duration) -> io::Result<()> {
    s.set_nodelay(nodelay)?;
    s.set_read_timeout(Some(tick))?;
    s.set_write_timeout(Some(tick))?;
    Ok(())
}

/// Raw fd of a stream (for the calls above).
pub fn fd(s: &TcpStream) -> RawFd {
    s.as_raw_fd()
}

// ---------------------------------------------------------------------------------------
// Link connections: TCP Fast Open, keepalive, user timeout, TCP_INFO
// ---------------------------------------------------------------------------------------

/// `TCPI_OPT_SYN_DATA` of `<linux/tcp.h>`: SYN data was acknowledged (both ends).
const TCPI_OPT_SYN_DATA: u8 = 32;
/// `TCPI_OPT_TIMESTAMPS` of `<linux/tcp.h>`: both SYNs carried the timestamp option.
const TCPI_OPT_TIMESTAMPS: u8 = 1;
/// Pending TFO requests a listener queues (RFC 7413 §5.1 suggests bounding them): the
/// listen backlog wirebench's servers use. A smaller bound (such as 64) turns Fast Open
/// off for most of a connect case's connections once more than that many are in their
/// first round trip at once, which costs them a retransmitted SYN payload.
const TFO_QUEUE: libc::c_int = 4096;

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
    let tfo_set = tfo && setsockopt(&sock, sockopt::TcpFastOpenConnect, &true).is_ok();
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
                if wait_writable(&sock, Duration::from_millis(100))? {
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

/// The accept queue of a listener a user points clients at (`serve --also`, the web
/// gateways): std's 128 overflowed under a connection flood (bench/hostile.sh: connects
/// stalled 1 s), where the built-in XMPP server's 4096 took 41,000 a second.
pub const LISTEN_BACKLOG: libc::c_int = 4096;

/// How long, in seconds, a listener's kernel keeps a connection that has sent nothing
/// before handing it to `accept` (`TCP_DEFER_ACCEPT`, as nginx's `listen ... deferred`).
///
/// Every protocol our servers speak has the client speak first, so a connection is of
/// use to a server only once its first bytes are in. A connection closed before that, as
/// a flood's connect-and-reset, is dropped by the kernel and never costs the server an
/// accept, a task and a read: under `bench/hostile.sh`'s flood (35,000 a second) that
/// work had made a well-behaved client's p99 2.4-3.2 times its usual on the `--also`
/// servers. One second, not nginx's header timeout, so that a silent client still
/// reaches the server soon (after the kernel's first SYN-ACK retransmission) and meets
/// its handshake timeout as before; a full SYN queue answers with SYN cookies, which
/// bypass the deferral, so a silent crowd cannot lock others out.
pub const DEFER_ACCEPT_SECS: libc::c_int = 1;

/// [`DEFER_ACCEPT_SECS`] on a listener. A socket that refuses it stays an ordinary
/// listener: the deferral saves work, it is never needed for correctness. Not for a
/// Multipath TCP listener: a second path's join carries no data, and deferred, it did
/// not join (`tests/e2e/proxies.rs`, `multipath_tcp_over_a_second_path`).
pub fn defer_accept(s: &impl AsFd) {
    let _ = set_tcp_int(s, libc::TCP_DEFER_ACCEPT, DEFER_ACCEPT_SECS);
}

/// The most a connection of a listener under [`limit_unsent`] keeps queued in the kernel
/// and not yet sent (`TCP_NOTSENT_LOWAT`; accepted connections inherit it).
///
/// Without it the kernel takes up to its `tcp_wmem` maximum (4 MiB here) from a server
/// for a client that does not read: `bench/hostile.sh`'s half-open attack had the HTTP
/// server answer about 1,900 pipelined requests per non-reading connection (3 MB) before
/// it stopped, work that made a well-behaved client's p99 2.5-3 times its usual. At
/// 128 KiB it stops after about 130. Bytes in flight are not counted, so a long fat link
/// still fills its window: the limit only keeps a server from writing far ahead of what
/// the network takes (as HTTP/2 servers set it to, for prioritization).
pub const NOTSENT_LOWAT: libc::c_int = 128 * 1024;

/// [`NOTSENT_LOWAT`] on a listener, for the connections it accepts; a socket that
/// refuses it stays as it was (the limit saves work, correctness never needs it).
pub fn limit_unsent(s: &impl AsFd) {
    let _ = set_tcp_int(s, libc::TCP_NOTSENT_LOWAT, NOTSENT_LOWAT);
}

/// A plain listener on `addr` with a [`LISTEN_BACKLOG`]-deep accept queue,
/// [`defer_accept`] and [`limit_unsent`].
pub fn listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into())?;
    defer_accept(&sock);
    limit_unsent(&sock);
    sock.listen(LISTEN_BACKLOG)?;
    Ok(sock.into())
}

/// A listener with a TFO queue when `tfo`. Returns it and whether TFO could be set.
/// Not deferred ([`defer_accept`]): it is the x2x gateway's link listener, which refuses
/// strangers unread at accept anyway, and with the deferral x2x-gateway's
/// `tests/loopback.rs` (`connections_from_another_source_address_are_refused`) found the
/// link down after a stranger's refusal, for a reason not looked into.
pub fn listen(addr: SocketAddr, tfo: bool) -> io::Result<(TcpListener, bool)> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into())?;
    let tfo_set = tfo && set_tcp_fastopen(&sock, TFO_QUEUE).is_ok();
    // The x2x gateway's: strangers' connection floods are refused one by one, and the
    // peer's SYN must still find room in the queue meanwhile.
    sock.listen(LISTEN_BACKLOG)?;
    Ok((sock.into(), tfo_set))
}

/// `TCP_FASTOPEN_CONNECT` on a socket about to connect (see the module doc).
pub fn set_fastopen_connect(s: &impl AsFd) -> io::Result<()> {
    setsockopt(s, sockopt::TcpFastOpenConnect, &true).map_err(io::Error::from)
}

/// A TFO queue on a listener, before or after `listen` (Linux accepts both).
pub fn set_listener_fastopen(s: &impl AsFd) -> io::Result<()> {
    set_tcp_fastopen(s, TFO_QUEUE)
}

/// `TCP_FASTOPEN` (a listener's queue of pending TFO requests): neither nix nor socket2
/// has it.
fn set_tcp_fastopen(s: &impl AsFd, queue: libc::c_int) -> io::Result<()> {
    set_tcp_int(s, libc::TCP_FASTOPEN, queue)
}

/// An `int`-valued `IPPROTO_TCP` option neither nix nor socket2 has.
fn set_tcp_int(s: &impl AsFd, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `s` is a live socket for the duration of the call (borrowed), and the
    // option value is a c_int on our stack, passed with its exact size.
    let r = unsafe {
        libc::setsockopt(
            s.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
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
        // The kernel takes a non-negative int of milliseconds.
        let ms = u64::try_from(user_timeout.as_millis()).unwrap_or(u64::MAX);
        r.set_tcp_user_timeout(Some(Duration::from_millis(ms.min(i32::MAX as u64))))?;
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
    let _ = SockRef::from(s).set_tcp_quickack(false);
}

/// The kernel's TCP_INFO for a connection, if it can be read (neither nix nor socket2
/// reads it).
pub fn tcp_info(s: &impl AsRawFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain data (all-zero is a valid value); the kernel writes at
    // most `len` bytes into it, and `s` is a live socket borrowed for the call.
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
pub fn syn_data_acked(s: &impl AsRawFd) -> bool {
    tcp_info(s).is_some_and(|i| i.tcpi_options & TCPI_OPT_SYN_DATA != 0)
}

/// Whether the connection uses TCP timestamps (RFC 7323; TCP_INFO `tcpi_options &
/// TCPI_OPT_TIMESTAMPS`): then every segment carries 12 more bytes of header. Both ends
/// must offer them in the SYN. Meaningful once the handshake is over.
pub fn timestamps_on(s: &impl AsRawFd) -> bool {
    tcp_info(s).is_some_and(|i| i.tcpi_options & TCPI_OPT_TIMESTAMPS != 0)
}

/// Whether the connection is established (TCP_INFO `tcpi_state`): the handshake is over,
/// so a TFO cookie the peer offered is in the kernel's cache.
pub fn established(s: &impl AsRawFd) -> bool {
    tcp_state(s) == Some(TCP_ESTABLISHED)
}

/// States of `tcpi_state` (include/net/tcp_states.h).
pub const TCP_ESTABLISHED: u8 = 1;
pub const TCP_SYN_SENT: u8 = 2;
pub const TCP_CLOSE: u8 = 7;

/// The connection's TCP state (TCP_INFO `tcpi_state`, one of the `TCP_*` above), if it
/// can be read.
pub fn tcp_state(s: &impl AsRawFd) -> Option<u8> {
    tcp_info(s).map(|i| i.tcpi_state)
}

/// `IPPROTO_MPTCP` (Multipath TCP, RFC 8684; Linux 5.6+): a stream socket of this
/// protocol speaks MPTCP when the peer does and falls back to TCP when it does not.
pub const IPPROTO_MPTCP: libc::c_int = 262;
/// `SOL_MPTCP` and its `MPTCP_INFO` option (`<linux/mptcp.h>`): libc has neither.
const SOL_MPTCP: libc::c_int = 284;
const MPTCP_INFO: libc::c_int = 1;

/// A stream socket for `addr`'s family, Multipath TCP when `mptcp`, else TCP.
pub fn stream_socket(addr: SocketAddr, mptcp: bool) -> io::Result<Socket> {
    let proto = if mptcp {
        Protocol::from(IPPROTO_MPTCP)
    } else {
        Protocol::TCP
    };
    Socket::new(Domain::for_address(addr), Type::STREAM, Some(proto)).map_err(|e| {
        if mptcp && e.raw_os_error() == Some(libc::EPROTONOSUPPORT) {
            io::Error::new(
                e.kind(),
                "Multipath TCP is not available: this kernel lacks it, or net.mptcp.enabled is 0",
            )
        } else {
            e
        }
    })
}

/// Additional subflows of a Multipath TCP connection, as the kernel's path manager
/// counts them (`mptcp_info.mptcpi_subflows`: joined subflows, not the first); `None`
/// when the connection is not MPTCP (a TCP socket, or MPTCP that fell back to TCP).
pub fn mptcp_subflows(s: &impl AsRawFd) -> Option<u8> {
    // The fields wirebench reads come first in `struct mptcp_info`; the kernel copies at
    // most the length given.
    let mut info = [0u8; 8];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: a valid descriptor, and a buffer of `len` bytes the kernel may fill.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            SOL_MPTCP,
            MPTCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    // A fallen-back connection answers with an error or an empty info.
    (r == 0 && len > 0).then_some(info[0])
}

// ---------------------------------------------------------------------------------------
// Congestion control
// ---------------------------------------------------------------------------------------

/// The congestion control a connected socket uses (`TCP_CONGESTION` read back), so a
/// record says what the kernel ran rather than what was asked.
pub fn congestion(s: &impl AsFd) -> Option<String> {
    let name = SockRef::from(s).tcp_congestion().ok()?;
    // The kernel fills the option's 16 bytes and pads the name with NULs.
    let name = String::from_utf8_lossy(&name);
    let name = name.trim_end_matches('\0');
    (!name.is_empty()).then(|| name.to_string())
}

/// `net.ipv4.tcp_congestion_control`, the default new sockets get, as the calling
/// thread's network namespace sees it (per namespace since Linux 4.15).
pub fn congestion_default() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").ok()?;
    Some(text.trim().to_string()).filter(|s| !s.is_empty())
}

/// `net.ipv4.tcp_available_congestion_control`: the algorithms the kernel has loaded
/// (one list for the whole machine).
pub fn congestion_available() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_listeners_connections_queue_little_for_a_client_that_does_not_read() {
        use std::io::Write;
        let l = listener("127.0.0.1:0".parse().unwrap()).unwrap();
        let c = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        c.set_recv_buffer_size(4096).unwrap();
        c.connect(&l.local_addr().unwrap().into()).unwrap();
        // Deferred: the connection reaches accept with its first bytes.
        TcpStream::from(c.try_clone().unwrap())
            .write_all(b"x")
            .unwrap();
        let (server, _) = l.accept().unwrap();
        server.set_nonblocking(true).unwrap();
        let mut queued = 0;
        let chunk = [0u8; 1000];
        for _ in 0..20 {
            while let Ok(n) = (&server).write(&chunk) {
                queued += n;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let lowat = NOTSENT_LOWAT as usize;
        // What is in flight (the 4 KiB window) comes on top of the unsent bytes.
        assert!(queued < lowat + 64 * 1024, "{queued} bytes taken");
        assert!(queued >= lowat / 2, "{queued} bytes taken");
    }

    #[test]
    fn vectored_send_and_recv() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let n = sendmsg(fd(&a), &[IoSlice::new(b"hel"), IoSlice::new(b"lo")], 0).unwrap();
        assert_eq!(n, 5);
        assert_eq!(send(fd(&a), b"!", libc::MSG_DONTWAIT).unwrap(), 1);
        let mut buf = [0u8; 16];
        let mut got = 0;
        while got < 6 {
            got += recv(fd(&b), &mut buf[got..], 0).unwrap();
        }
        assert_eq!(&buf[..6], b"hello!");
        // Nothing more: a non-blocking recv would block.
        let e = recv(fd(&b), &mut buf, libc::MSG_DONTWAIT).unwrap_err();
        assert!(would_block(&e));
        assert_eq!(poll(&b, libc::POLLIN, Duration::from_millis(1)).unwrap(), 0);
        assert_eq!(
            poll(&a, libc::POLLOUT, Duration::from_millis(1)).unwrap(),
            libc::POLLOUT
        );
        // A closed peer: an error, not a SIGPIPE.
        drop(b);
        let mut failed = false;
        for _ in 0..100 {
            if send(fd(&a), b"x", 0).is_err() {
                failed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(failed, "sending to a closed peer fails");
    }

    #[test]
    fn shutdown_wakes_a_blocked_accept() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let raw = l.as_raw_fd();
        std::thread::scope(|s| {
            let t = s.spawn(|| l.accept().is_err());
            std::thread::sleep(Duration::from_millis(50));
            shutdown_both(raw);
            assert!(
                t.join().unwrap(),
                "accept fails once the listener is shut down"
            );
        });
        assert!(wait_readable(&l, Duration::from_millis(1)).unwrap());
    }

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
        let user_timeout = SockRef::from(&s).tcp_user_timeout().unwrap();
        assert_eq!(user_timeout, Some(Duration::from_secs(5)));
        assert!(established(&s) && established(&c));
        let _ = syn_data_acked(&c);
    }

    #[test]
    fn dial_to_a_closed_port_is_refused() {
        let (l, _) = listen("127.0.0.1:0".parse().unwrap(), false).unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let e = dial(addr, None, false, Duration::from_secs(5), &|| false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
    }
}
