//! Sans-IO engines for a `raw` data connection (`docs/protocols/raw.md`): the server's
//! [`Responder`] (echo or sink) and the client's [`PingPong`] and [`Stream`] senders.
//!
//! No sockets, clocks or threads, in the style of quinn-proto and smoltcp: a driver hands
//! each engine the bytes it read with the time it read them
//! ([`handle_input`](Responder::handle_input)), asks what to write
//! ([`poll_transmit`](Responder::poll_transmit)) and when to come back
//! ([`poll_timeout`](Responder::poll_timeout)). The same engines therefore run behind
//! blocking sockets (`wirebench-net`, `wirebench-plugin-raw`), against each other in memory,
//! and over the link model in virtual time (the tests below), where every timing can be
//! checked to the nanosecond.
//!
//! Each implements [`wirebench_engine::Engine`], the one engine shape, which the tests'
//! virtual-time harness ([`wirebench_engine::harness`]) drives.
//!
//! Times are CLOCK_MONOTONIC nanoseconds as the driver reads them; the engines only
//! compare and subtract them.

use crate::control::{Behaviour, Open, SessionReport};
use crate::raw::{Decoder, Frame, FrameError, HEADER_LEN, Header, Kind, Pattern};
use std::collections::VecDeque;
use std::convert::Infallible;
use wirebench_engine::Engine;
use wirebench_payload::tally::Tally;

/// Bytes a [`Responder`] holds for sending before it asks its driver to stop reading
/// ([`Responder::wants_input`]): a client that sends without reading its echoes meets
/// TCP flow control instead of growing the server's memory.
pub const MAX_BUFFERED: usize = 4 << 20;

/// One frame to send: the header, and its payload borrowed from the session's pattern
/// (so a driver can `sendmsg` both without copying). The driver writes all of it.
#[derive(Debug, Clone, Copy)]
pub struct Transmit<'p> {
    pub header: [u8; HEADER_LEN],
    pub payload: &'p [u8],
}

impl Transmit<'_> {
    pub fn len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Header and payload in one buffer (tests and small messages).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        v.extend_from_slice(&self.header);
        v.extend_from_slice(self.payload);
        v
    }
}

fn data_frame<'p>(pattern: &'p Pattern, seq: u64, payload: u32, now: u64) -> Transmit<'p> {
    Transmit {
        header: Header {
            kind: Kind::Data,
            seq,
            sent_ns: now,
            payload_len: payload,
        }
        .encode(),
        payload: pattern.payload(seq, payload as usize),
    }
}

/// The server side of a data connection: greets with HELLO, then echoes every frame
/// (after the session's think time, if any) or sinks it, counting and, when asked,
/// verifying payloads.
#[derive(Debug)]
pub struct Responder<'p> {
    echo: bool,
    think_ns: u64,
    dec: Decoder<'p>,
    tally: Tally,
    report: SessionReport,
    /// Bytes to send now; `out[sent..]` is still unsent.
    out: Vec<u8>,
    sent: usize,
    /// Echo with think time: the bytes received and not yet due, in order, and the due
    /// time and length of each complete frame among them.
    held: Vec<u8>,
    due: VecDeque<(u64, usize)>,
}

impl<'p> Responder<'p> {
    /// `pattern` verifies payloads (sink sessions that asked for verification); the
    /// HELLO greeting is queued at once, stamped `now`.
    pub fn new(open: &Open, pattern: Option<&'p Pattern>, now: u64) -> Responder<'p> {
        let hello = Header {
            kind: Kind::Hello,
            seq: 0,
            sent_ns: now,
            payload_len: 0,
        };
        Responder {
            echo: open.behaviour == Behaviour::Echo,
            think_ns: open.think_ns,
            dec: Decoder::new(open.max_payload, pattern),
            tally: Tally::new(),
            report: SessionReport::default(),
            out: hello.encode().to_vec(),
            sent: 0,
            held: Vec::new(),
            due: VecDeque::new(),
        }
    }

    /// Bytes read from the connection at `now`. An error means the peer broke the
    /// protocol: close the connection.
    pub fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), FrameError> {
        if data.is_empty() {
            return Ok(());
        }
        let r = &mut self.report;
        if r.first_rx_ns == 0 {
            r.first_rx_ns = now;
        }
        r.last_rx_ns = now;
        r.bytes += data.len() as u64;
        let (tally, report, due) = (&mut self.tally, &mut self.report, &mut self.due);
        let think = self.think_ns;
        let delayed = self.echo && think > 0;
        self.dec.feed(data, |f: Frame| {
            tally.observe(f.header.seq, f.corrupt);
            report.payload_bytes += u64::from(f.header.payload_len);
            if delayed {
                due.push_back((now.saturating_add(think), f.header.frame_len() as usize));
            }
        })?;
        if self.echo {
            // Without think time bytes go back as they come, whole frames or not: the
            // lowest latency an echo can have.
            if delayed {
                self.held.extend_from_slice(data);
            } else {
                self.out.extend_from_slice(data);
            }
        }
        Ok(())
    }

    /// The peer closed its side; an error if it stopped inside a frame.
    pub fn handle_eof(&mut self) -> Result<(), String> {
        if self.dec.at_boundary() {
            Ok(())
        } else {
            Err(FrameError::Torn.to_string())
        }
    }

    /// Bytes to write now (empty: nothing due). Report what was written with
    /// [`Responder::transmitted`].
    pub fn poll_transmit(&mut self, now: u64) -> &[u8] {
        while let Some(&(at, len)) = self.due.front() {
            if at > now {
                break;
            }
            self.due.pop_front();
            self.out.extend(self.held.drain(..len));
        }
        &self.out[self.sent..]
    }

    /// `n` bytes of the last [`Responder::poll_transmit`] were written.
    pub fn transmitted(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.out.len());
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
    }

    /// When the next held echo falls due.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.due.front().map(|(at, _)| *at)
    }

    /// False while the engine holds [`MAX_BUFFERED`] bytes or more for sending: the
    /// driver should write (or wait) before it reads again.
    pub fn wants_input(&self) -> bool {
        self.out.len() - self.sent + self.held.len() < MAX_BUFFERED
    }

    /// What the client collects over the control channel.
    pub fn report(&self) -> SessionReport {
        SessionReport {
            counts: self.tally.counts.clone(),
            ..self.report.clone()
        }
    }
}

/// A client that waits for HELLO, then reads every frame it is sent.
#[derive(Debug)]
struct Receiver<'p> {
    dec: Decoder<'p>,
    hello_ns: Option<u64>,
    tally: Tally,
    bytes_in: u64,
}

impl<'p> Receiver<'p> {
    fn new(max_payload: u32, verify: Option<&'p Pattern>) -> Self {
        Receiver {
            dec: Decoder::new(max_payload, verify),
            hello_ns: None,
            tally: Tally::new(),
            bytes_in: 0,
        }
    }

    /// Feeds `data`, calling `on_data` for each DATA frame completed.
    fn feed(
        &mut self,
        now: u64,
        data: &[u8],
        mut on_data: impl FnMut(&Frame),
    ) -> Result<(), FrameError> {
        self.bytes_in += data.len() as u64;
        let (hello, tally) = (&mut self.hello_ns, &mut self.tally);
        self.dec.feed(data, |f| match f.header.kind {
            Kind::Hello => {
                hello.get_or_insert(now);
            }
            Kind::Data => {
                tally.observe(f.header.seq, f.corrupt);
                on_data(&f);
            }
        })
    }
}

/// Ping-pong: one frame in flight; each answer completes a round, whose round trip (less
/// the server's think time) is kept.
#[derive(Debug)]
pub struct PingPong<'p> {
    pattern: &'p Pattern,
    payload: u32,
    rounds: u64,
    think_ns: u64,
    rx: Receiver<'p>,
    /// Send time of the frame in flight.
    in_flight: Option<u64>,
    next_seq: u64,
    rtts: Vec<u64>,
}

impl<'p> PingPong<'p> {
    /// Answers are verified against `pattern`, which also provides the payloads.
    pub fn new(pattern: &'p Pattern, payload: u32, rounds: u64, think_ns: u64) -> Self {
        PingPong {
            pattern,
            payload,
            rounds,
            think_ns,
            rx: Receiver::new(payload, Some(pattern)),
            in_flight: None,
            next_seq: 0,
            rtts: Vec::with_capacity(rounds.min(10_000_000) as usize),
        }
    }

    pub fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), FrameError> {
        let (in_flight, rtts, next_seq) = (&mut self.in_flight, &mut self.rtts, &mut self.next_seq);
        let think = self.think_ns;
        self.rx.feed(now, data, |_| {
            // Any answer ends the round; the tally tells a wrong one apart.
            if let Some(sent) = in_flight.take() {
                rtts.push(now.saturating_sub(sent).saturating_sub(think));
                *next_seq += 1;
            }
        })
    }

    /// The next frame, once HELLO has arrived and no frame is in flight; its send time
    /// is `now`, so read the clock right before writing it.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit<'p>> {
        if self.rx.hello_ns.is_none() || self.in_flight.is_some() || self.next_seq >= self.rounds {
            return None;
        }
        self.in_flight = Some(now);
        Some(data_frame(self.pattern, self.next_seq, self.payload, now))
    }

    pub fn hello_at(&self) -> Option<u64> {
        self.rx.hello_ns
    }

    pub fn is_done(&self) -> bool {
        self.rtts.len() as u64 >= self.rounds
    }

    /// Round trips so far, in round order (nanoseconds, think time excluded).
    pub fn rtts(&self) -> &[u64] {
        &self.rtts
    }

    pub fn into_rtts(self) -> Vec<u64> {
        self.rtts
    }

    /// Accounting of the answers received so far, nothing counted as lost yet.
    pub fn answers(&self) -> &Tally {
        &self.rx.tally
    }

    /// Accounting of the answers, with the unanswered rounds sent so far as lost.
    pub fn tally(&self) -> Tally {
        let mut t = self.rx.tally.clone();
        t.finish(self.next_seq + u64::from(self.in_flight.is_some()));
        t
    }

    pub fn bytes_in(&self) -> u64 {
        self.rx.bytes_in
    }
}

/// Stream: frames back to back until `count` are sent or [`Stream::stop`] is called;
/// with `echo`, each answer's round trip under load is kept.
#[derive(Debug)]
pub struct Stream<'p> {
    pattern: &'p Pattern,
    payload: u32,
    count: u64,
    echo: bool,
    stopped: bool,
    next_seq: u64,
    rx: Receiver<'p>,
    received: u64,
    last_arrival: u64,
    rtts: Vec<u64>,
}

impl<'p> Stream<'p> {
    pub fn new(pattern: &'p Pattern, payload: u32, count: u64, echo: bool) -> Self {
        Stream {
            pattern,
            payload,
            count,
            echo,
            stopped: false,
            next_seq: 0,
            rx: Receiver::new(payload, echo.then_some(pattern)),
            received: 0,
            last_arrival: 0,
            rtts: Vec::new(),
        }
    }

    pub fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), FrameError> {
        let (received, last, rtts) = (&mut self.received, &mut self.last_arrival, &mut self.rtts);
        self.rx.feed(now, data, |f| {
            *received += 1;
            *last = now;
            rtts.push(now.saturating_sub(f.header.sent_ns));
        })
    }

    /// The next frame, once HELLO has arrived, until the count is reached or the stream
    /// is stopped.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Transmit<'p>> {
        if self.rx.hello_ns.is_none() || self.stopped || self.next_seq >= self.count {
            return None;
        }
        let t = data_frame(self.pattern, self.next_seq, self.payload, now);
        self.next_seq += 1;
        Some(t)
    }

    /// Send no more (a duration-limited stream whose time is up).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    pub fn sent(&self) -> u64 {
        self.next_seq
    }

    /// Everything is sent and, for echo, every echo is back.
    pub fn is_done(&self) -> bool {
        (self.stopped || self.next_seq >= self.count)
            && (!self.echo || self.received >= self.next_seq)
    }

    pub fn hello_at(&self) -> Option<u64> {
        self.rx.hello_ns
    }

    pub fn received(&self) -> u64 {
        self.received
    }

    pub fn last_arrival(&self) -> u64 {
        self.last_arrival
    }

    /// Echo round trips in arrival order (nanoseconds).
    pub fn rtts(&self) -> &[u64] {
        &self.rtts
    }

    pub fn tally(&self) -> Tally {
        let mut t = self.rx.tally.clone();
        t.finish(self.next_seq);
        t
    }
}

// The one engine shape (`wirebench-engine`), for the harness and any generic driver.
// Raw's own drivers keep the inherent calls above: `Transmit` borrows the payload from
// the pattern so a frame goes out in one `sendmsg` without a copy, which a `Vec` cannot.

impl Engine for Responder<'_> {
    type Event = Infallible;
    type Error = FrameError;

    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), FrameError> {
        Responder::handle_input(self, now, data)
    }

    fn handle_eof(&mut self) -> Result<(), FrameError> {
        Responder::handle_eof(self).map_err(|_| FrameError::Torn)
    }

    fn poll_transmit(&mut self, now: u64, buf: &mut Vec<u8>) -> usize {
        let out = Responder::poll_transmit(self, now);
        let n = out.len();
        buf.extend_from_slice(out);
        self.transmitted(n);
        n
    }

    fn poll_timeout(&self) -> Option<u64> {
        Responder::poll_timeout(self)
    }

    fn poll_event(&mut self) -> Option<Infallible> {
        None
    }
}

fn append(t: Option<Transmit<'_>>, buf: &mut Vec<u8>) -> usize {
    t.map_or(0, |t| {
        buf.extend_from_slice(&t.header);
        buf.extend_from_slice(t.payload);
        t.len()
    })
}

impl Engine for PingPong<'_> {
    type Event = Infallible;
    type Error = FrameError;

    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), FrameError> {
        PingPong::handle_input(self, now, data)
    }

    fn poll_transmit(&mut self, now: u64, buf: &mut Vec<u8>) -> usize {
        append(PingPong::poll_transmit(self, now), buf)
    }

    fn poll_event(&mut self) -> Option<Infallible> {
        None
    }
}

/// One frame per call: a stream without a count never runs dry.
impl Engine for Stream<'_> {
    type Event = Infallible;
    type Error = FrameError;

    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), FrameError> {
        Stream::handle_input(self, now, data)
    }

    fn poll_transmit(&mut self, now: u64, buf: &mut Vec<u8>) -> usize {
        append(Stream::poll_transmit(self, now), buf)
    }

    fn poll_event(&mut self) -> Option<Infallible> {
        None
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
