//! Thin, allocation-free socket calls for measurement loops.
//!
//! Measurement paths use blocking system calls on dedicated threads, the way sockperf
//! does: a blocked `recv` is woken directly by the kernel, with no event loop between the
//! packet and the timestamp. Per-call `MSG_DONTWAIT` lets one thread interleave sending
//! and receiving without toggling `O_NONBLOCK`.

use std::io::{self, IoSlice};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

fn cvt(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// `sendmsg` with flags; `MSG_NOSIGNAL` is always added so a closed peer is an error,
/// not a SIGPIPE.
pub fn sendmsg(fd: RawFd, iov: &[IoSlice<'_>], flags: i32) -> io::Result<usize> {
    // SAFETY: msghdr is plain data; IoSlice is ABI-compatible with iovec (documented).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = iov.len() as _;
    // SAFETY: fd is a socket owned by the caller; msg points at live buffers.
    let r = unsafe { libc::sendmsg(fd, &msg, flags | libc::MSG_NOSIGNAL) };
    cvt(r)
}

/// `send` of one buffer with flags (plus `MSG_NOSIGNAL`). Cheaper than `sendmsg` for
/// small messages, where the kernel's iovec handling is a visible share of the cost.
pub fn send(fd: RawFd, buf: &[u8], flags: i32) -> io::Result<usize> {
    // SAFETY: buf is valid for reads of buf.len() bytes.
    let r = unsafe {
        libc::send(
            fd,
            buf.as_ptr() as *const libc::c_void,
            buf.len(),
            flags | libc::MSG_NOSIGNAL,
        )
    };
    cvt(r)
}

/// `recv` with flags.
pub fn recv(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    let r = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), flags) };
    cvt(r)
}

/// Waits up to `timeout` for `events` (POLLIN / POLLOUT); returns the revents.
pub fn poll(fd: RawFd, events: i16, timeout: Duration) -> io::Result<i16> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(if r == 0 { 0 } else { p.revents })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn vectored_send_and_recv() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let n = sendmsg(fd(&a), &[IoSlice::new(b"hel"), IoSlice::new(b"lo")], 0).unwrap();
        assert_eq!(n, 5);
        let mut buf = [0u8; 16];
        let mut got = 0;
        while got < 5 {
            got += recv(fd(&b), &mut buf[got..], 0).unwrap();
        }
        assert_eq!(&buf[..5], b"hello");
        // Nothing more: a non-blocking recv would block.
        let e = recv(fd(&b), &mut buf, libc::MSG_DONTWAIT).unwrap_err();
        assert!(would_block(&e));
        assert_eq!(
            poll(fd(&b), libc::POLLIN, Duration::from_millis(1)).unwrap(),
            0
        );
    }
}
