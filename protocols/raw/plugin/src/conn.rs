//! A client data connection as a byte pipe for the `raw` engines
//! (`wirebench_raw::engine`): connect, send a frame while draining replies, receive, all
//! with shutdown and stall checks. What the bytes mean is the engine's business: every
//! read goes to `on_input(arrival_ns, bytes)`.

use std::io::IoSlice;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wirebench_model::clock::monotonic_ns;
use wirebench_net::sock;
use wirebench_protocol::{Ctx, TICK, WorkloadError};
use wirebench_raw::engine::Transmit;

/// Bytes per `recv`.
const READ_BUF: usize = 256 * 1024;
/// Messages up to this size are copied into one buffer and sent with `send`; larger
/// ones go out with `sendmsg` straight from the pattern (no copy).
const COPY_MAX: usize = 16 * 1024;

/// Connection set-up timings, nanoseconds from the start of `connect()`.
pub struct Setup {
    /// `connect()` returned (TCP handshake done, as the client sees it).
    pub handshake_ns: u64,
    /// The server's first byte (HELLO) arrived.
    pub first_byte_ns: u64,
}

pub struct Conn<'a> {
    pub stream: TcpStream,
    fd: RawFd,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    ctx: &'a Ctx<'a>,
    stall: Duration,
    /// Bytes moved (in + out) when progress was last seen, and when. Updated only on the
    /// slow path (a call that would block), so the fast path reads no clock for it.
    progress_mark: std::cell::Cell<(u64, Instant)>,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Whether a receive may block.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Block,
    NoWait,
}

/// What a driver does with the bytes of one read, stamped with their arrival.
pub type OnInput<'f> = dyn FnMut(u64, &[u8]) -> Result<(), WorkloadError> + 'f;

impl<'a> Conn<'a> {
    /// Connects and reads until `hello_at()` says the server's HELLO has arrived
    /// (everything read goes to `on_input`).
    pub fn open(
        ip: IpAddr,
        port: u16,
        nodelay: bool,
        ctx: &'a Ctx<'a>,
        stall: Duration,
        on_input: &mut OnInput,
        hello_at: &dyn Fn() -> Option<u64>,
    ) -> Result<(Conn<'a>, Setup), WorkloadError> {
        let addr = SocketAddr::new(ip, port);
        let start = monotonic_ns();
        let stream = TcpStream::connect_timeout(&addr, ctx.connect_timeout).map_err(|error| {
            WorkloadError::Connect {
                addr: addr.to_string(),
                error,
            }
        })?;
        let handshake_ns = monotonic_ns() - start;
        sock::tune_data_socket(&stream, nodelay, TICK).map_err(|error| WorkloadError::Io {
            during: "connecting",
            error,
        })?;
        let fd = stream.as_raw_fd();
        let mut conn = Conn {
            stream,
            fd,
            buf: vec![0u8; READ_BUF],
            scratch: Vec::with_capacity(COPY_MAX),
            ctx,
            stall,
            progress_mark: std::cell::Cell::new((0, Instant::now())),
            bytes_in: 0,
            bytes_out: 0,
        };
        const GREETING: &str = "waiting for the server's greeting";
        while hello_at().is_none() {
            if !conn.recv(Wait::Block, GREETING, on_input)? {
                return Err(WorkloadError::Closed { during: GREETING });
            }
        }
        let at = hello_at().unwrap_or(start);
        Ok((
            conn,
            Setup {
                handshake_ns,
                first_byte_ns: at.saturating_sub(start),
            },
        ))
    }

    /// Fails if the user interrupted or nothing has happened for too long.
    fn check(&self, during: &'static str) -> Result<(), WorkloadError> {
        if self.ctx.shutdown.load(Ordering::Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        let moved = self.bytes_in + self.bytes_out;
        let (mark, since) = self.progress_mark.get();
        if moved != mark {
            self.progress_mark.set((moved, Instant::now()));
        } else if since.elapsed() > self.stall {
            return Err(WorkloadError::Stalled {
                secs: self.stall.as_secs(),
                during,
            });
        }
        Ok(())
    }

    /// One receive, handed to `on_input(arrival_ns, bytes)`. Returns `false` at end of
    /// stream.
    pub fn recv(
        &mut self,
        wait: Wait,
        during: &'static str,
        on_input: &mut OnInput,
    ) -> Result<bool, WorkloadError> {
        let flags = if wait == Wait::NoWait {
            libc::MSG_DONTWAIT
        } else {
            0
        };
        loop {
            match sock::recv(self.fd, &mut self.buf, flags) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    let now = monotonic_ns();
                    self.bytes_in += n as u64;
                    on_input(now, &self.buf[..n])?;
                    return Ok(true);
                }
                Err(e) if sock::would_block(&e) => {
                    self.check(during)?;
                    if wait == Wait::NoWait {
                        return Ok(true);
                    }
                }
                Err(error) => return Err(WorkloadError::Io { during, error }),
            }
        }
    }

    /// Sends a frame completely. With `drain`, never blocks in the send: whenever the
    /// socket is full it reads replies instead (so a large echoed frame cannot deadlock
    /// both ends).
    pub fn send(
        &mut self,
        t: &Transmit<'_>,
        drain: bool,
        on_input: &mut OnInput,
    ) -> Result<(), WorkloadError> {
        let mut iov = [IoSlice::new(&t.header), IoSlice::new(t.payload)];
        let iov = &mut iov[..];
        let total: usize = iov.iter().map(|s| s.len()).sum();
        let mut scratch = std::mem::take(&mut self.scratch);
        let copied = total <= COPY_MAX;
        if copied {
            scratch.clear();
            for s in iov.iter() {
                scratch.extend_from_slice(s);
            }
        }
        let flags = if drain { libc::MSG_DONTWAIT } else { 0 };
        let result = if copied {
            self.send_slices(&mut [IoSlice::new(&scratch)], flags, drain, on_input)
        } else {
            self.send_slices(iov, flags, drain, on_input)
        };
        self.scratch = scratch;
        result
    }

    fn send_slices(
        &mut self,
        mut slices: &mut [IoSlice<'_>],
        flags: i32,
        drain: bool,
        on_input: &mut OnInput,
    ) -> Result<(), WorkloadError> {
        const DURING: &str = "sending";
        while !slices.is_empty() {
            let sent = if slices.len() == 1 {
                sock::send(self.fd, &slices[0], flags)
            } else {
                sock::sendmsg(self.fd, slices, flags)
            };
            match sent {
                Ok(n) => {
                    self.bytes_out += n as u64;
                    IoSlice::advance_slices(&mut slices, n);
                }
                Err(e) if sock::would_block(&e) => {
                    self.check(DURING)?;
                    if drain {
                        let ev = sock::poll(&self.stream, libc::POLLIN | libc::POLLOUT, TICK)
                            .map_err(|error| WorkloadError::Io {
                                during: DURING,
                                error,
                            })?;
                        if ev & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
                            && !self.recv(Wait::NoWait, DURING, on_input)?
                        {
                            return Err(WorkloadError::Closed { during: DURING });
                        }
                    }
                }
                Err(error) => {
                    return Err(WorkloadError::Io {
                        during: DURING,
                        error,
                    });
                }
            }
        }
        Ok(())
    }

    /// Signals the end of our messages (TCP FIN) so the server can finish its account.
    pub fn finish_sending(&self) -> Result<(), WorkloadError> {
        self.stream
            .shutdown(std::net::Shutdown::Write)
            .map_err(|error| WorkloadError::Io {
                during: "closing",
                error,
            })
    }
}
