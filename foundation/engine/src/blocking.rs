//! The one blocking driver: an [`Engine`] on a connection read by one thread in blocking
//! calls with a timeout (the measurement path's choice, docs/architecture.md: a thread in
//! `recv` is woken by the kernel directly). Every event carries the CLOCK_MONOTONIC time
//! its bytes were read; the engine's timer is served between reads; a read never waits
//! longer than [`TICK`], so callers see their stop request ([`wirebench_model::Shutdown`]
//! or a case's flag) within a tick.
//!
//! That driver is for byte streams ([`Io`], [`Tcp`]); [`datagram`] holds its twin for
//! datagram engines and the UDP socket it runs on.

pub mod datagram;

use crate::Engine;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_model::clock::monotonic_ns;

/// Longest a read waits before the driver looks at its deadline and stop request again.
pub const TICK: Duration = Duration::from_millis(100);

/// A connection the driver reads and writes.
pub trait Io {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Reads into `buf` (its whole length; it may be grown), waiting at most `wait`.
    /// `Ok(0)`: the peer closed. A `WouldBlock` or `TimedOut` error: nothing in time.
    fn read(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize>;
}

/// A TCP connection whose read timeout changes only when the wait does (each change is
/// a system call): whole milliseconds from 1 (0 would mean "block") to [`TICK`].
#[derive(Debug)]
pub struct Tcp {
    pub stream: TcpStream,
    timeout: Option<Duration>,
}

impl Tcp {
    pub fn new(stream: TcpStream) -> Tcp {
        Tcp {
            stream,
            timeout: None,
        }
    }
}

impl Io for Tcp {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    fn read(&mut self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<usize> {
        let t = Duration::from_millis(wait.as_millis().clamp(1, TICK.as_millis()) as u64);
        if self.timeout != Some(t) {
            self.stream.set_read_timeout(Some(t))?;
            self.timeout = Some(t);
        }
        self.stream.read(buf)
    }
}

/// Why a drive stopped.
#[derive(Debug)]
pub enum DriveError<E> {
    /// Reading or writing the connection failed.
    Io { write: bool, error: io::Error },
    /// The engine failed (the peer broke the protocol, or a timer expired).
    Engine(E),
    /// The peer closed the connection; the engine's verdict on that
    /// ([`Engine::handle_eof`]: `Ok` after a clean close).
    Eof(Result<(), E>),
}

/// An event with the CLOCK_MONOTONIC time its bytes were read.
pub type Timed<E> = (u64, <E as Engine>::Event);

/// What [`wait_for`] ended with.
#[derive(Debug, PartialEq, Eq)]
pub enum Wait<T> {
    Got(T),
    /// The deadline passed first.
    Deadline,
    /// The stop request came first.
    Stopped,
}

/// A connection and what reading it needs; the engine it drives is passed to each call
/// (so its owner keeps it as a field of its own, next to the driver).
pub struct Driver<I> {
    pub io: I,
    buf: Vec<u8>,
    out: Vec<u8>,
    /// CLOCK_MONOTONIC of the last read.
    read_ns: u64,
    /// Bytes written and read on the connection.
    pub bytes_out: u64,
    pub bytes_in: u64,
}

impl<I: Io> Driver<I> {
    /// `read_buf`: bytes one read takes at most.
    pub fn new(io: I, read_buf: usize) -> Self {
        Driver {
            io,
            buf: vec![0; read_buf],
            out: Vec::new(),
            read_ns: 0,
            bytes_out: 0,
            bytes_in: 0,
        }
    }

    /// CLOCK_MONOTONIC of the last read (0 before any).
    pub fn read_ns(&self) -> u64 {
        self.read_ns
    }

    /// Writes what the engine has queued.
    pub fn flush<E: Engine>(&mut self, engine: &mut E) -> io::Result<()> {
        loop {
            self.out.clear();
            if engine.poll_transmit(monotonic_ns(), &mut self.out) == 0 {
                return Ok(());
            }
            self.io.write_all(&self.out)?;
            self.bytes_out += self.out.len() as u64;
        }
    }

    /// The next event with the time its bytes were read, or `None` at `deadline`.
    pub fn poll_event<E: Engine>(
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
            match self.io.read(&mut self.buf, wait) {
                Ok(0) => return Err(DriveError::Eof(engine.handle_eof())),
                Ok(n) => {
                    self.read_ns = monotonic_ns();
                    self.bytes_in += n as u64;
                    let r = engine.handle_input(self.read_ns, &self.buf[..n]);
                    // An engine that fails explains why to its peer where the protocol
                    // has a way to (a stream error, a DISCONNECT): send it.
                    let _ = self.flush(engine);
                    r.map_err(DriveError::Engine)?;
                }
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
}

/// Calls `poll` with deadlines at most a [`TICK`] away until it returns `Some`, `deadline`
/// (if any) passes, or `stop` is set: the waits of a case, which must see Ctrl-C (a
/// [`wirebench_model::Shutdown`]'s flag) within a tick. `poll` is typically a driver's
/// [`Driver::poll_event`] that picks the event awaited.
pub fn wait_for<T, E>(
    deadline: Option<Instant>,
    stop: &AtomicBool,
    mut poll: impl FnMut(Instant) -> Result<Option<T>, E>,
) -> Result<Wait<T>, E> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(Wait::Stopped);
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Ok(Wait::Deadline);
        }
        let step = deadline.map_or(now + TICK, |d| d.min(now + TICK));
        if let Some(t) = poll(step)? {
            return Ok(Wait::Got(t));
        }
    }
}

/// Nothing arrived in time (or a signal interrupted the wait): not an error.
fn quiet(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A scripted connection: reads hand out `input` one chunk at a time, then EOF.
    struct Script {
        input: VecDeque<Vec<u8>>,
        written: Vec<u8>,
    }

    impl Io for Script {
        fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
            self.written.extend_from_slice(bytes);
            Ok(())
        }
        fn read(&mut self, buf: &mut Vec<u8>, _wait: Duration) -> io::Result<usize> {
            match self.input.pop_front() {
                Some(c) if c.is_empty() => Err(io::ErrorKind::WouldBlock.into()),
                Some(c) => {
                    buf[..c.len()].copy_from_slice(&c);
                    Ok(c.len())
                }
                None => Ok(0),
            }
        }
    }

    /// Lines in, each line an event; answers every line with "ok\n".
    #[derive(Default)]
    struct Lines {
        partial: Vec<u8>,
        events: VecDeque<String>,
        out: Vec<u8>,
        eof: bool,
    }

    impl Engine for Lines {
        type Event = String;
        type Error = String;
        fn handle_input(&mut self, _now: u64, data: &[u8]) -> Result<(), String> {
            for &b in data {
                if b == b'\n' {
                    let l = String::from_utf8(std::mem::take(&mut self.partial)).unwrap();
                    if l == "bad" {
                        return Err("bad line".into());
                    }
                    self.events.push_back(l);
                    self.out.extend_from_slice(b"ok\n");
                } else {
                    self.partial.push(b);
                }
            }
            Ok(())
        }
        fn handle_eof(&mut self) -> Result<(), String> {
            self.eof = true;
            if self.partial.is_empty() {
                Ok(())
            } else {
                Err("cut".into())
            }
        }
        fn poll_transmit(&mut self, _now: u64, buf: &mut Vec<u8>) -> usize {
            let n = self.out.len();
            buf.append(&mut self.out);
            n
        }
        fn poll_event(&mut self) -> Option<String> {
            self.events.pop_front()
        }
    }

    fn driver(chunks: &[&[u8]]) -> (Lines, Driver<Script>) {
        let io = Script {
            input: chunks.iter().map(|c| c.to_vec()).collect(),
            written: Vec::new(),
        };
        (Lines::default(), Driver::new(io, 64))
    }

    #[test]
    fn events_carry_their_read_time_and_answers_are_written() {
        let (mut l, mut d) = driver(&[b"he", b"llo\nworld\n"]);
        let far = Instant::now() + Duration::from_secs(5);
        let (t1, e1) = d.poll_event(&mut l, far).unwrap().unwrap();
        let (t2, e2) = d.poll_event(&mut l, far).unwrap().unwrap();
        assert_eq!((e1.as_str(), e2.as_str()), ("hello", "world"));
        assert_eq!(t1, t2, "both lines came in one read");
        assert!(t1 > 0);
        assert_eq!(d.io.written, b"ok\nok\n");
        assert_eq!((d.bytes_in, d.bytes_out), (12, 6));
        assert!(matches!(
            d.poll_event(&mut l, far),
            Err(DriveError::Eof(Ok(())))
        ));
    }

    #[test]
    fn engine_errors_and_torn_eofs_are_told_apart() {
        let far = Instant::now() + Duration::from_secs(5);
        let (mut l, mut d) = driver(&[b"bad\n"]);
        assert!(matches!(d.poll_event(&mut l, far), Err(DriveError::Engine(e)) if e == "bad line"));
        let (mut l, mut d) = driver(&[b"torn"]);
        assert!(matches!(d.poll_event(&mut l, far), Err(DriveError::Eof(Err(e))) if e == "cut"));
    }

    #[test]
    fn wait_for_skips_events_and_honours_stop_and_deadline() {
        let far = Some(Instant::now() + Duration::from_secs(5));
        let go = AtomicBool::new(false);
        let (mut l, mut d) = driver(&[b"a\nb\n"]);
        let got = wait_for(far, &go, |t| {
            d.poll_event(&mut l, t)
                .map(|e| e.and_then(|(_, e)| (e == "b").then_some(e)))
        })
        .unwrap();
        assert_eq!(got, Wait::Got("b".to_string()));
        let (mut l, mut d) = driver(&[b"", b""]);
        let stop = AtomicBool::new(true);
        let r = wait_for(far, &stop, |t| d.poll_event(&mut l, t));
        assert!(matches!(r, Ok(Wait::Stopped)));
        let (mut l, mut d) = driver(&[b""]);
        let r = wait_for(Some(Instant::now()), &go, |t| d.poll_event(&mut l, t));
        assert!(matches!(r, Ok(Wait::Deadline)));
    }
}
