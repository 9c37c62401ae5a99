//! The blocking driver for a [`DatagramEngine`], and its UDP socket.
//!
//! [`DatagramDriver`] is [`Driver`](super::Driver) for datagrams: the same loop (write
//! what the engine queued, hand out its events, serve its timer, read with a wait of at
//! most [`TICK`]), with one datagram per send and per receive instead of a byte stream,
//! and no end of input. It runs over any [`DatagramIo`]; [`Udp`] is the one for sockets.
//!
//! [`Udp`] follows quinn-udp's use of Linux's UDP offloads (udp(7)): a transmit of equal
//! segments goes out in one `sendmsg` with a UDP_SEGMENT control message (GSO, Linux
//! 4.18), and the socket asks for UDP_GRO (Linux 5.0) so that one `recvmsg` may return
//! several datagrams of one size with their segment size, which the driver hands to the
//! engine one by one. Where the kernel lacks either (the socket option is refused, or a
//! device refuses a GSO send with EIO, as quinn-udp found), it falls back to one system
//! call per datagram. ECN (RFC 3168) rides in IP_TOS / IPV6_TCLASS control messages both
//! ways. The socket may be connected (no destination) or not (each transmit's
//! destination); left blocking it serves this driver, set non-blocking it serves an
//! event loop (a receive without data is `WouldBlock` either way).

use super::{DriveError, TICK, quiet};
use crate::{DatagramEngine, Ecn, Received, Transmit};
use nix::errno::Errno;
use nix::sys::socket::{
    ControlMessage, ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, sendmsg, setsockopt,
    sockopt,
};
use std::io::{self, IoSlice, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wirebench_model::clock::monotonic_ns;

/// Datagrams one GSO send may carry (UDP_MAX_SEGMENTS, `include/linux/udp.h`).
pub const MAX_SEGMENTS: usize = 64;

/// What a GRO receive may coalesce: one IP packet's worth of UDP payload.
const GRO_BUF: usize = u16::MAX as usize;

/// A datagram socket the driver sends on and receives from.
pub trait DatagramIo {
    /// Sends the datagrams of `t`, whose `size` bytes are `bytes`.
    fn send(&mut self, t: &Transmit, bytes: &[u8]) -> io::Result<()>;

    /// Receives into `buf` (its whole length; it may be grown), waiting at most `wait`:
    /// one datagram, or several of one size ([`Recv::segment_size`]). A `WouldBlock` or
    /// `TimedOut` error: nothing in time.
    fn recv(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<Recv>;

    /// Datagrams one [`DatagramIo::send`] takes at once (the engine's `max_datagrams`).
    fn max_datagrams(&self) -> usize {
        1
    }
}

/// What one receive put in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recv {
    /// Bytes received, all datagrams together.
    pub len: usize,
    pub from: Option<SocketAddr>,
    pub ecn: Option<Ecn>,
    /// `Some(s)`: datagrams of `s` bytes each, the last possibly shorter (GRO).
    pub segment_size: Option<usize>,
}

impl Recv {
    /// The datagrams of the receive buffer, one slice each.
    pub fn datagrams<'b>(&self, buf: &'b [u8]) -> impl Iterator<Item = &'b [u8]> + use<'b> {
        Transmit {
            destination: None,
            ecn: None,
            size: self.len,
            segment_size: self.segment_size,
        }
        .split(buf)
    }
}

/// A UDP socket with the kernel's offloads where it has them (see the module docs).
#[derive(Debug)]
pub struct Udp {
    pub socket: UdpSocket,
    gso: bool,
    gro: bool,
    v6: bool,
    timeout: Option<Duration>,
}

impl Udp {
    /// Takes a bound socket, connected or not, and turns on GRO and the reception of
    /// ECN codepoints where the kernel allows them.
    pub fn new(socket: UdpSocket) -> Udp {
        let v6 = socket.local_addr().is_ok_and(|a| a.is_ipv6());
        // Setting a default segment size of 0 changes nothing but fails where the
        // kernel has no UDP_SEGMENT: quinn-udp's probe.
        let gso = setsockopt(&socket, sockopt::UdpGsoSegment, &0).is_ok();
        let gro = setsockopt(&socket, sockopt::UdpGroSegment, &true).is_ok();
        // Without them ECN reads as Not-ECT, which is what the engine would see anyway.
        let _ = if v6 {
            setsockopt(&socket, sockopt::Ipv6RecvTClass, &true)
        } else {
            setsockopt(&socket, sockopt::IpRecvTos, &true)
        };
        Udp {
            socket,
            gso,
            gro,
            v6,
            timeout: None,
        }
    }

    /// No GSO or GRO: one system call per datagram, as on a kernel without them.
    pub fn without_offload(mut self) -> Udp {
        if self.gro && setsockopt(&self.socket, sockopt::UdpGroSegment, &false).is_ok() {
            self.gro = false;
        }
        self.gso = false;
        self
    }

    /// Whether a transmit of several datagrams goes out in one system call.
    pub fn gso(&self) -> bool {
        self.gso
    }

    /// Whether one receive may return several datagrams.
    pub fn gro(&self) -> bool {
        self.gro
    }

    /// One `sendmsg`: `bytes` as one datagram, or as datagrams of `segment` bytes.
    fn sendmsg(&self, t: &Transmit, bytes: &[u8], segment: Option<u16>) -> Result<usize, Errno> {
        let to = t.destination.map(SockaddrStorage::from);
        let tos = t.ecn.map_or(0, |e| e as u8);
        let tclass = i32::from(tos);
        let mut cmsgs = Vec::with_capacity(2);
        if let Some(s) = &segment {
            cmsgs.push(ControlMessage::UdpGsoSegments(s));
        }
        if t.ecn.is_some() {
            cmsgs.push(if self.v6 {
                ControlMessage::Ipv6TClass(&tclass)
            } else {
                ControlMessage::Ipv4Tos(&tos)
            });
        }
        let iov = [IoSlice::new(bytes)];
        loop {
            match sendmsg(
                self.socket.as_raw_fd(),
                &iov,
                &cmsgs,
                MsgFlags::empty(),
                to.as_ref(),
            ) {
                Err(Errno::EINTR) => continue,
                r => return r,
            }
        }
    }
}

impl DatagramIo for Udp {
    fn send(&mut self, t: &Transmit, bytes: &[u8]) -> io::Result<()> {
        let bytes = &bytes[..t.size];
        if t.datagrams() > 1 && self.gso {
            let segment = u16::try_from(t.segment()).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "a segment over 64 KiB")
            })?;
            match self.sendmsg(t, bytes, Some(segment)) {
                Ok(_) => return Ok(()),
                // A device without checksum offload refuses GSO only when used.
                Err(Errno::EIO) => self.gso = false,
                Err(e) => return Err(e.into()),
            }
        }
        for datagram in t.split(bytes) {
            self.sendmsg(t, datagram, None)?;
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<Recv> {
        let t = Duration::from_millis(wait.as_millis().clamp(1, TICK.as_millis()) as u64);
        if self.timeout != Some(t) {
            self.socket.set_read_timeout(Some(t))?;
            self.timeout = Some(t);
        }
        if self.gro && buf.len() < GRO_BUF {
            buf.resize(GRO_BUF, 0);
        }
        let cap = buf.len();
        let mut cmsg = nix::cmsg_space!(i32, i32);
        let mut iov = [IoSliceMut::new(buf)];
        let msg = loop {
            match recvmsg::<SockaddrStorage>(
                self.socket.as_raw_fd(),
                &mut iov,
                Some(&mut cmsg),
                MsgFlags::empty(),
            ) {
                Err(Errno::EINTR) => continue,
                r => break r?,
            }
        };
        if msg.flags.contains(MsgFlags::MSG_TRUNC) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a datagram longer than the {cap}-byte receive buffer"),
            ));
        }
        let from = msg.address.and_then(|a| {
            a.as_sockaddr_in()
                .map(|a| SocketAddr::from(*a))
                .or_else(|| a.as_sockaddr_in6().map(|a| SocketAddr::from(*a)))
        });
        let mut got = Recv {
            len: msg.bytes,
            from,
            ecn: None,
            segment_size: None,
        };
        for c in msg.cmsgs()? {
            match c {
                ControlMessageOwned::UdpGroSegments(s) if s > 0 && (s as usize) < got.len => {
                    got.segment_size = Some(s as usize);
                }
                ControlMessageOwned::Ipv4Tos(tos) => got.ecn = Ecn::from_bits(tos),
                ControlMessageOwned::Ipv6TClass(tc) => got.ecn = Ecn::from_bits(tc as u8),
                _ => {}
            }
        }
        Ok(got)
    }

    fn max_datagrams(&self) -> usize {
        if self.gso { MAX_SEGMENTS } else { 1 }
    }
}

/// An event with the CLOCK_MONOTONIC time its datagram was received.
pub type Timed<E> = (u64, <E as DatagramEngine>::Event);

/// A datagram socket and what receiving from it needs; the engine it drives is passed
/// to each call, as with [`Driver`](super::Driver).
pub struct DatagramDriver<I> {
    pub io: I,
    buf: Vec<u8>,
    out: Vec<u8>,
    /// CLOCK_MONOTONIC of the last receive.
    read_ns: u64,
    /// Payload bytes (UDP headers not counted) and datagrams sent and received.
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub datagrams_out: u64,
    pub datagrams_in: u64,
}

impl<I: DatagramIo> DatagramDriver<I> {
    /// `read_buf`: the longest datagram a receive takes (a longer one is an error).
    pub fn new(io: I, read_buf: usize) -> Self {
        DatagramDriver {
            io,
            buf: vec![0; read_buf],
            out: Vec::new(),
            read_ns: 0,
            bytes_out: 0,
            bytes_in: 0,
            datagrams_out: 0,
            datagrams_in: 0,
        }
    }

    /// CLOCK_MONOTONIC of the last receive (0 before any).
    pub fn read_ns(&self) -> u64 {
        self.read_ns
    }

    /// Sends what the engine has queued.
    pub fn flush<E: DatagramEngine>(&mut self, engine: &mut E) -> io::Result<()> {
        loop {
            self.out.clear();
            let max = self.io.max_datagrams();
            let Some(t) = engine.poll_transmit(monotonic_ns(), max, &mut self.out) else {
                return Ok(());
            };
            self.io.send(&t, &self.out)?;
            self.bytes_out += t.size as u64;
            self.datagrams_out += t.datagrams() as u64;
        }
    }

    /// The next event with the time its datagram was received, or `None` at `deadline`.
    pub fn poll_event<E: DatagramEngine>(
        &mut self,
        engine: &mut E,
        deadline: Instant,
    ) -> Result<Option<Timed<E>>, DriveError<E::Error>> {
        loop {
            self.flush(engine)
                .map_err(|error| DriveError::Io { write: true, error })?;
            if let Some(e) = engine.poll_event() {
                return Ok(Some((self.read_ns, e)));
            }
            let mut wait = deadline.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return Ok(None);
            }
            if let Some(t) = engine.poll_timeout() {
                let m = monotonic_ns();
                if m >= t {
                    engine.handle_timeout(m).map_err(DriveError::Engine)?;
                    continue;
                }
                wait = wait.min(Duration::from_nanos(t - m));
            }
            match self.io.recv(&mut self.buf, wait) {
                Ok(r) => self.deliver(engine, r)?,
                Err(e) if quiet(&e) => {}
                Err(error) => {
                    return Err(DriveError::Io {
                        write: false,
                        error,
                    });
                }
            }
        }
    }

    /// Hands a receive's datagrams to the engine one by one, all with its time.
    fn deliver<E: DatagramEngine>(
        &mut self,
        engine: &mut E,
        r: Recv,
    ) -> Result<(), DriveError<E::Error>> {
        self.read_ns = monotonic_ns();
        self.bytes_in += r.len as u64;
        let mut failed = None;
        for data in r.datagrams(&self.buf) {
            self.datagrams_in += 1;
            let d = Received {
                from: r.from,
                ecn: r.ecn,
                data,
            };
            if let Err(e) = engine.handle_datagram(self.read_ns, d) {
                failed = Some(e);
                break;
            }
        }
        match failed {
            None => Ok(()),
            Some(e) => {
                // As on a stream: a failing engine may have a last word for its peer.
                let _ = self.flush(engine);
                Err(DriveError::Engine(e))
            }
        }
    }
}

#[cfg(test)]
#[path = "datagram_tests.rs"]
mod tests;
