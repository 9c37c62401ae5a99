//! The one non-blocking driver: an [`Engine`] over a non-blocking stream socket in an
//! edge-triggered readiness loop (mio's, epoll(7) with `EPOLLET`), for the loops that
//! hold many sessions per thread: the MQTT and XMPP load generators and the XMPP
//! server's workers. The loop owns the poll, the timers and what the events mean; this
//! module owns what every such loop must get right about the socket:
//!
//! - **Reading an edge** ([`read_ready`]): read until the socket has nothing left, each
//!   read into the engine with the time it was read. A read that does not fill the buffer
//!   took all the socket held, so reading stops there rather than spend a system call on
//!   the `WouldBlock` that would follow (one per message on a relay path): epoll reports
//!   the next arrival as a new edge, as tokio also relies on. Once the peer has closed
//!   (`drain`), it reads on to the end, so the close is seen and the engine told.
//! - **Writing** ([`flush`]): what the engine has to send is appended to the session's one
//!   output buffer and written as far as the socket takes it; the rest waits there for the
//!   next writable edge. An engine that swaps its queue into an empty buffer (the XMPP
//!   engines) costs no copy.
//! - **Idle sessions keep no buffer** ([`release_idle`]): at a million sessions every byte
//!   of capacity kept per session is a megabyte.
//!
//! A loop that must act between reads (the XMPP server routes what each read completed
//! before reading on, and stops reading while a worker's queue is full) repeats
//! [`read_once`] itself.

use crate::Engine;
use std::io::{ErrorKind, Read, Write};

/// What one [`read_once`] did.
#[derive(Debug)]
pub enum Step<E> {
    /// `n` bytes read and handed to the engine, which said this.
    Read(usize, Result<(), E>),
    /// The connection ended, cleanly (`broken: false`, the peer closed its side) or not (a
    /// reset); the engine was told ([`Engine::handle_eof`]) and said this.
    Ended { broken: bool, said: Result<(), E> },
    /// Nothing to read until the next edge.
    Blocked,
}

/// One read from `stream` into `engine` at `now` (an interrupted read is retried).
pub fn read_once<S: Read, E: Engine>(
    stream: &mut S,
    engine: &mut E,
    buf: &mut [u8],
    now: u64,
) -> Step<E::Error> {
    loop {
        match stream.read(buf) {
            Ok(0) => {
                return Step::Ended {
                    broken: false,
                    said: engine.handle_eof(),
                };
            }
            Ok(n) => return Step::Read(n, engine.handle_input(now, &buf[..n])),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Blocked,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                return Step::Ended {
                    broken: true,
                    said: engine.handle_eof(),
                };
            }
        }
    }
}

/// What [`read_ready`] saw of one readable edge.
#[derive(Debug)]
pub struct Input<E> {
    /// The engine refused what it read: the protocol is broken and reading stopped there.
    pub refused: Option<E>,
    /// The connection ended (see [`Step::Ended`]), if it did.
    pub ended: Option<Ended<E>>,
}

/// How a connection ended, and what the engine said when told.
#[derive(Debug)]
pub struct Ended<E> {
    /// Broken (a reset), rather than closed by the peer.
    pub broken: bool,
    pub said: Result<(), E>,
}

impl<E> Input<E> {
    /// Whether the connection ended.
    pub fn ended(&self) -> bool {
        self.ended.is_some()
    }

    /// The engine's error that ended the session, if one did: what it refused, or what
    /// it said of the end when the peer closed cleanly. A reset's is left out: a loop
    /// that counts a reset as a reset ([`Input::ended`]) would otherwise count it as the
    /// protocol error the engine reports for a stream cut short.
    pub fn error(self) -> Option<E> {
        self.refused.or_else(|| match self.ended {
            Some(Ended {
                broken: false,
                said: Err(e),
            }) => Some(e),
            _ => None,
        })
    }

    /// [`Input::error`], a reset's included.
    pub fn any_error(self) -> Option<E> {
        self.refused
            .or_else(|| self.ended.and_then(|e| e.said.err()))
    }
}

/// Reads one readable edge into `engine` at `now`: until the socket is empty (a short
/// read), the connection ends or the engine refuses what it read. `drain`: the peer has
/// closed, so read on past short reads to the end.
pub fn read_ready<S: Read, E: Engine>(
    stream: &mut S,
    engine: &mut E,
    buf: &mut [u8],
    drain: bool,
    now: u64,
) -> Input<E::Error> {
    loop {
        match read_once(stream, engine, buf, now) {
            Step::Read(_, Err(e)) => {
                return Input {
                    refused: Some(e),
                    ended: None,
                };
            }
            Step::Read(n, Ok(())) if n < buf.len() && !drain => break,
            Step::Read(_, Ok(())) => {}
            Step::Ended { broken, said } => {
                return Input {
                    refused: None,
                    ended: Some(Ended { broken, said }),
                };
            }
            Step::Blocked => break,
        }
    }
    Input {
        refused: None,
        ended: None,
    }
}

/// What a write left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Everything is written.
    Written,
    /// The socket took what it could; the rest waits for its next writable edge.
    Waiting,
    /// The connection is broken (a write failed or wrote nothing): the next read sees how.
    Broken,
}

/// Writes `pending` as far as the socket takes it, draining what it wrote.
pub fn write_pending<S: Write>(stream: &mut S, pending: &mut Vec<u8>) -> Output {
    while !pending.is_empty() {
        match stream.write(pending) {
            Ok(0) => return Output::Broken,
            Ok(n) => {
                pending.drain(..n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Output::Waiting,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Output::Broken,
        }
    }
    Output::Written
}

/// Appends what `engine` has to send at `now` to `pending` and writes as far as the
/// socket takes it.
pub fn flush<S: Write, E: Engine>(
    stream: &mut S,
    engine: &mut E,
    pending: &mut Vec<u8>,
    now: u64,
) -> Output {
    engine.poll_transmit(now, pending);
    write_pending(stream, pending)
}

/// Frees an empty output buffer's capacity; true if it was empty (the session is idle).
pub fn release_idle(pending: &mut Vec<u8>) -> bool {
    if !pending.is_empty() {
        return false;
    }
    if pending.capacity() > 0 {
        *pending = Vec::new();
    }
    true
}

#[cfg(test)]
#[path = "edge_tests.rs"]
mod tests;
