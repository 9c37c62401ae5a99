//! Open-loop MQTT session load (MQTT 3.1.1 and 5.0, OASIS 2014 and 2019): one mio event
//! loop drives every session of a [`Schedule`] through its script, recording counters and
//! latencies per interval in a [`Recorder`] (crate `wirebench-load`).
//!
//! A session: TCP connect at its intended start, CONNECT (clean session), and on CONNACK
//! a SUBSCRIBE to its own topic (`wb/<i>`, 3.1.1 §3.8, 5.0 §3.8) at the case's QoS; once
//! the SUBACK grants it, the session is ready. From `think` after its intended start it
//! publishes to its partner's topic (sessions `2k` and `2k + 1` are partners: topology
//! `pairs`) every `every`, strictly before either of the two is meant to leave. At `stay`
//! after its intended start it sends DISCONNECT (§3.14) and waits for the broker to close
//! the connection, so that no TIME_WAIT port stays on this side.
//!
//! Open-loop: CONNACK and SUBACK latencies run from the session's intended start, a
//! message's from its intended send time (carried in its payload, with its number and
//! whether its subscriber was ready when it left) to its delivery. A broker or generator
//! that falls behind shows in the figures instead of slowing the arrivals down.
//!
//! A message is *expected* when its subscriber had its SUBACK and had not left as it was
//! published; the subscriber counts it *delivered* when it arrives once (a number at or
//! below the last one from that partner is a duplicate). Both partners run in this loop,
//! so the publisher knows its subscriber's state exactly.

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wirebench_engine::Engine as _;
use wirebench_engine::edge;
use wirebench_load::{Cause, Dist, Interval, Latency, Recorder, Schedule};
use wirebench_model::clock::monotonic_ns;
use wirebench_mqtt::{Client, Config, Event, MqttError, QoS, Version};

/// What every session does.
#[derive(Debug, Clone)]
pub struct Script {
    pub broker: SocketAddr,
    pub version: Version,
    /// QoS of every subscription and message.
    pub qos: QoS,
    /// How long a session stays after its intended start (drawn once per session).
    pub stay: Dist,
    /// The first message this long after the intended start (drawn once per session).
    pub think: Dist,
    /// A message to the partner this often (`None`: none; drawn for each gap).
    pub every: Option<Dist>,
    /// Seeds the draws of `stay`, `think` and `every`.
    pub seed: u64,
    /// A session without its SUBACK this long after its intended start fails (timeout).
    pub timeout: Duration,
    /// Bytes of each message's payload (at least [`HEADER`]).
    pub payload: usize,
    /// The CONNECT's Keep Alive, seconds (3.1.1 §3.1.2.10).
    pub keep_alive_s: u16,
}

/// Bytes of a message's payload the generator uses: the intended send time (ns since the
/// run's start), the message's number, and whether its subscriber was ready.
pub const HEADER: usize = 13;

/// Keys of the draws: session `i`'s stay, its first message, its message `k`'s gap (as
/// the XMPP load draws them, so the two protocols' sessions follow the same script).
const DRAW_STAY: u64 = 0;
const DRAW_THINK: u64 = 1;
const DRAW_EVERY: u64 = 2;

fn draw_key(i: usize, what: u64) -> u64 {
    (i as u64) << 24 ^ what
}

impl Script {
    pub fn stay_of(&self, i: usize) -> Duration {
        self.stay.draw(self.seed, draw_key(i, DRAW_STAY))
    }

    pub fn think_of(&self, i: usize) -> Duration {
        self.think.draw(self.seed, draw_key(i, DRAW_THINK))
    }

    pub fn gap_of(&self, i: usize, k: u64) -> Option<Duration> {
        self.every
            .map(|d| d.draw(self.seed, draw_key(i, DRAW_EVERY + k)))
    }
}

/// The topic session `i` subscribes to.
pub fn topic(i: usize) -> String {
    format!("wb/{i}")
}

/// Session `i`'s partner in the schedule (2k and 2k+1), if it exists.
pub fn partner(i: usize, n: usize) -> Option<usize> {
    let p = i ^ 1;
    (p < n).then_some(p)
}

/// What the loop saw besides its intervals.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub sessions: u64,
    /// Most connections open at once.
    pub peak_open: u64,
    /// Messages published while their subscriber was ready.
    pub expected: u64,
    /// Of those, the ones that arrived (once).
    pub delivered: u64,
    /// Messages that arrived again, or out of their publisher's order.
    pub duplicates: u64,
    /// PUBACKs for our QoS 1 messages.
    pub acked: u64,
    /// Messages the engine would not send (5.0 Receive Maximum reached, a broker limit).
    pub unsent: u64,
    /// Sessions still open when the loop ended (stopped, or at its deadline), closed then.
    pub cut_short: u64,
    /// CPU seconds of the loop's thread, from its first session to its end.
    pub cpu_s: f64,
    /// The first failure, in words.
    pub first_error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// TCP connect in progress.
    Connecting,
    /// CONNECT written, no CONNACK yet.
    Handshake,
    /// SUBSCRIBE written, no SUBACK yet.
    Subscribing,
    Ready,
    /// DISCONNECT written; waiting for the broker to close the connection.
    Leaving,
}

struct Session {
    index: usize,
    stream: TcpStream,
    client: Client,
    pending: Vec<u8>,
    stage: Stage,
    /// The next message's number.
    sent: u32,
    /// The last number received from the partner.
    last_in: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    Timeout,
    Message,
    KeepAlive,
    Leave,
    /// A leaving session the broker has not closed yet.
    Drop,
}

/// How long a leaving session waits for the broker to close its connection.
const LEAVE_GRACE_NS: u64 = 5_000_000_000;

/// Runs every session of `schedule`, the run starting at `t0` (monotonic ns). Every
/// closed interval goes to `on_interval`, the last one too. Returns when every session
/// has left or failed, at `deadline` (monotonic ns: sessions still open are closed), or
/// when `stop` is set.
pub fn run(
    schedule: &Schedule,
    t0: u64,
    width: Duration,
    script: &Script,
    stop: &AtomicBool,
    deadline: u64,
    on_interval: impl FnMut(Interval),
) -> std::io::Result<Summary> {
    if script.payload < HEADER {
        return Err(std::io::Error::other(format!(
            "load: a payload of {} bytes cannot carry the {HEADER}-byte message header",
            script.payload
        )));
    }
    let mut body = vec![b'x'; script.payload];
    body[..HEADER].fill(0);
    let mut w = Loop {
        schedule,
        t0,
        script,
        poll: Poll::new()?,
        slots: Vec::new(),
        free: Vec::new(),
        by_index: HashMap::new(),
        timers: BinaryHeap::new(),
        rec: Recorder::new(width),
        summary: Summary::default(),
        open: 0,
        buf: vec![0u8; 64 * 1024],
        body,
        on_interval,
    };
    let wake = Wake::new(&w.poll)?;
    let cpu_start = thread_cpu_s();
    let mut events = Events::with_capacity(1024);
    let mut next = 0usize;
    loop {
        let now = monotonic_ns();
        let stopping = stop.load(Ordering::Relaxed) || now >= deadline;
        if !stopping {
            while next < schedule.len() && w.intended(next) <= now {
                w.start(next, now);
                next += 1;
            }
        }
        w.fire_timers(now);
        if stopping || (next >= schedule.len() && w.open == 0) {
            break;
        }
        // Sleep until the next arrival or timer, woken by the timer fd to the microsecond;
        // epoll's own timeout (1 s at most, so that stop is seen) is the backstop.
        let next_arrival = (next < schedule.len()).then(|| w.intended(next));
        let next_timer = w.timers.peek().map(|Reverse((d, ..))| *d);
        let at = [next_arrival, next_timer]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(u64::MAX)
            .min(now + 1_000_000_000);
        wake.set(at);
        let timeout =
            Duration::from_nanos(at.saturating_sub(monotonic_ns())) + Duration::from_millis(1);
        match w.poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let now = monotonic_ns();
        for ev in events.iter() {
            if ev.token() == WAKE {
                wake.clear();
            } else {
                w.on_readiness(ev, now);
            }
        }
    }
    let mut summary = w.finish();
    summary.cpu_s = (thread_cpu_s() - cpu_start).max(0.0);
    Ok(summary)
}

/// This thread's CPU time (CLOCK_THREAD_CPUTIME_ID): the generator's alone, though it
/// shares its process with the rest of wirebench.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// The timer fd's token: no session's slot.
const WAKE: Token = Token(usize::MAX);

/// A timer fd (timerfd_create(2)) on CLOCK_MONOTONIC, the clock of every intended time,
/// that wakes the event loop when the next arrival or timer is due. epoll's own timeout
/// counts whole milliseconds (mio rounds it up): every timed connect and publish would
/// leave up to 1 ms late, and open-loop timing would count that against the broker.
struct Wake {
    fd: std::os::fd::OwnedFd,
    /// The time it is armed for: arming it again for the same time is a system call
    /// saved (most wake-ups are sockets', which leave the next timer as it was).
    armed: std::cell::Cell<u64>,
}

impl Wake {
    fn new(poll: &Poll) -> std::io::Result<Wake> {
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: timerfd_create takes no pointers; a valid fd is owned from here on.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new fd that nothing else owns.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        poll.registry().register(
            &mut mio::unix::SourceFd(&fd.as_raw_fd()),
            WAKE,
            Interest::READABLE,
        )?;
        Ok(Wake {
            fd,
            armed: std::cell::Cell::new(0),
        })
    }

    /// Arms the timer for `at_ns` (CLOCK_MONOTONIC, absolute); a time already past fires
    /// at once.
    fn set(&self, at_ns: u64) {
        use std::os::fd::AsRawFd;
        let at = at_ns.max(1);
        if at == self.armed.get() {
            return;
        }
        self.armed.set(at);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked for (null).
        unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }

    /// Reads the expirations, so that the next one is a new edge for epoll; the timer is
    /// disarmed now.
    fn clear(&self) {
        self.armed.set(0);
        use std::os::fd::AsRawFd;
        let mut n = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `n`; a non-blocking fd with nothing to read
        // returns EAGAIN, which is ignored.
        unsafe { libc::read(self.fd.as_raw_fd(), n.as_mut_ptr().cast(), n.len()) };
    }
}

/// The event loop's state: its sessions, their timers and what it recorded.
struct Loop<'a, F: FnMut(Interval)> {
    schedule: &'a Schedule,
    t0: u64,
    script: &'a Script,
    poll: Poll,
    slots: Vec<Option<Session>>,
    free: Vec<usize>,
    /// Slot of each open session, by its index in the schedule.
    by_index: HashMap<usize, usize>,
    timers: BinaryHeap<Reverse<(u64, usize, usize, Due)>>,
    rec: Recorder,
    summary: Summary,
    open: u64,
    buf: Vec<u8>,
    /// A message's payload: its header is written in place before each PUBLISH.
    body: Vec<u8>,
    on_interval: F,
}

/// Why a session ended: the cause to count (`None`: it had left as scripted) and words.
type Gone = (Option<Cause>, String);

impl<F: FnMut(Interval)> Loop<'_, F> {
    fn intended(&self, i: usize) -> u64 {
        self.t0 + self.schedule.start(i).as_nanos() as u64
    }

    fn leave_of(&self, i: usize) -> u64 {
        self.intended(i) + self.script.stay_of(i).as_nanos() as u64
    }

    fn iv(&mut self, now: u64) -> &mut Interval {
        let since = Duration::from_nanos(now.saturating_sub(self.t0));
        self.rec.at(since, &mut self.on_interval)
    }

    fn push_timer(&mut self, due: u64, slot: usize, i: usize, what: Due) {
        self.timers.push(Reverse((due, slot, i, what)));
    }

    /// Opens session `i`: a non-blocking connect, the CONNECT queued behind it.
    fn start(&mut self, i: usize, now: u64) {
        self.summary.sessions += 1;
        self.iv(now).counts.arrivals += 1;
        let mut cfg = Config::new(self.script.version, &format!("wb{i}"));
        cfg.keep_alive_s = self.script.keep_alive_s;
        // The load's own timeout (to SUBACK, from the intended start) applies instead.
        cfg.connect_timeout_ns = None;
        cfg.max_packet_size = (self.script.payload as u32).saturating_add(1024);
        let opened = Client::new(cfg, now)
            .map_err(|e| (Cause::Other, e.to_string()))
            .and_then(|client| {
                let nth = self.summary.sessions as usize - 1;
                let stream = connect(self.script.broker, nth).map_err(|e| {
                    let cause = match e.kind() {
                        std::io::ErrorKind::ConnectionRefused => Cause::Refused,
                        _ => Cause::Other,
                    };
                    (cause, format!("connect to {}: {e}", self.script.broker))
                })?;
                Ok((stream, client))
            });
        let (mut stream, client) = match opened {
            Ok(s) => s,
            Err((cause, why)) => return self.count_failure(now, i, cause, why),
        };
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            Token(slot),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            self.free.push(slot);
            return self.count_failure(now, i, Cause::Other, format!("register: {e}"));
        }
        let _ = stream.set_nodelay(true);
        self.slots[slot] = Some(Session {
            index: i,
            stream,
            client,
            pending: Vec::new(),
            stage: Stage::Connecting,
            sent: 0,
            last_in: None,
        });
        self.by_index.insert(i, slot);
        self.open += 1;
        self.summary.peak_open = self.summary.peak_open.max(self.open);
        let timeout = self.intended(i) + self.script.timeout.as_nanos() as u64;
        self.push_timer(timeout, slot, i, Due::Timeout);
    }

    fn count_failure(&mut self, now: u64, i: usize, cause: Cause, why: String) {
        self.iv(now).fail(cause);
        self.summary
            .first_error
            .get_or_insert_with(|| format!("session {i}: {why}"));
    }

    /// Acts on the timers that are due.
    fn fire_timers(&mut self, now: u64) {
        while let Some(&Reverse((due, slot, i, what))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            // A timer outlives its session when the slot was reused: check the index.
            let Some(stage) = self.session(slot, i).map(|s| s.stage) else {
                continue;
            };
            let gone = match (what, stage) {
                (Due::Timeout, Stage::Connecting | Stage::Handshake | Stage::Subscribing) => {
                    Some((
                        Some(Cause::Timeout),
                        format!(
                            "no SUBACK within {:?} of its intended start ({stage:?})",
                            self.script.timeout
                        ),
                    ))
                }
                (Due::Message, Stage::Ready) => {
                    self.publish(slot, i, due, now);
                    None
                }
                (Due::KeepAlive, Stage::Ready) => self.keep_alive(slot, i, now),
                (Due::Leave, Stage::Ready) => {
                    self.leave(slot, i, now);
                    None
                }
                (Due::Drop, Stage::Leaving) => Some((None, String::new())),
                _ => None,
            };
            if let Some(gone) = gone {
                self.end(slot, now, gone);
            }
        }
    }

    fn session(&mut self, slot: usize, i: usize) -> Option<&mut Session> {
        self.slots
            .get_mut(slot)
            .and_then(|s| s.as_mut())
            .filter(|s| s.index == i)
    }

    /// Publishes session `i`'s message meant at `due` to its partner, and plans the next.
    fn publish(&mut self, slot: usize, i: usize, due: u64, now: u64) {
        let n = self.schedule.len();
        let Some(p) = partner(i, n) else {
            return;
        };
        // Messages are meant strictly before either partner leaves.
        if due >= self.leave_of(i).min(self.leave_of(p)) {
            return;
        }
        let ready = self
            .by_index
            .get(&p)
            .and_then(|&ps| self.slots[ps].as_ref())
            .is_some_and(|s| s.stage == Stage::Ready);
        let (qos, t0) = (self.script.qos, self.t0);
        let Some(s) = self.slots[slot].as_mut() else {
            return;
        };
        let seq = s.sent;
        self.body[..8].copy_from_slice(&due.saturating_sub(t0).to_le_bytes());
        self.body[8..12].copy_from_slice(&seq.to_le_bytes());
        self.body[12] = u8::from(ready);
        let sent = s.client.publish(&topic(p), &self.body, qos, false).is_ok();
        if sent {
            s.sent += 1;
            flush(s, now);
        }
        let next = self.script.gap_of(i, u64::from(seq) + 1);
        if sent {
            self.iv(now).counts.sent += 1;
            self.summary.expected += u64::from(ready);
        } else {
            self.summary.unsent += 1;
        }
        if let Some(gap) = next {
            self.push_timer(due + gap.as_nanos().max(1) as u64, slot, i, Due::Message);
        }
    }

    /// Serves the engine's keep-alive: a PINGREQ when nothing was sent for the interval.
    fn keep_alive(&mut self, slot: usize, i: usize, now: u64) -> Option<Gone> {
        let s = self.slots[slot].as_mut()?;
        if let Err(e) = s.client.handle_timeout(now) {
            return Some((Some(cause_of(&e)), e.to_string()));
        }
        flush(s, now);
        let next = s.client.poll_timeout();
        if let Some(t) = next {
            self.push_timer(t.max(now + 1), slot, i, Due::KeepAlive);
        }
        None
    }

    fn leave(&mut self, slot: usize, i: usize, now: u64) {
        if let Some(s) = self.slots[slot].as_mut() {
            let _ = s.client.disconnect();
            flush(s, now);
            s.stage = Stage::Leaving;
        }
        let iv = self.iv(now);
        iv.counts.left += 1;
        iv.counts.active_delta -= 1;
        self.push_timer(now + LEAVE_GRACE_NS, slot, i, Due::Drop);
    }

    /// A session's socket is ready: finish its connect, or move its bytes and act on
    /// what the engine says; ends the session if that ended it.
    fn on_readiness(&mut self, ev: &mio::event::Event, now: u64) {
        let slot = ev.token().0;
        let Some(s) = self.slots.get_mut(slot).and_then(|s| s.as_mut()) else {
            return;
        };
        let i = s.index;
        if s.stage == Stage::Connecting && ev.is_writable() {
            match s.stream.peer_addr() {
                Ok(_) => s.stage = Stage::Handshake,
                Err(e) if e.kind() == std::io::ErrorKind::NotConnected => {
                    let err = s.stream.take_error().ok().flatten();
                    let refused = err
                        .as_ref()
                        .is_some_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused);
                    let cause = if refused {
                        Cause::Refused
                    } else {
                        Cause::Other
                    };
                    let why = err.map_or("failed".into(), |e| e.to_string());
                    return self.end(slot, now, (Some(cause), format!("connect: {why}")));
                }
                Err(_) => {}
            }
        }
        if s.stage == Stage::Connecting {
            return;
        }
        let drain = ev.is_read_closed() || ev.is_error();
        let (events, error, eof) = pump(s, &mut self.buf, ev.is_readable(), drain, now);
        let mut gone: Option<Gone> = None;
        for e in events {
            if let Some(g) = self.on_event(slot, i, e, now) {
                gone.get_or_insert(g);
            }
        }
        let leaving = self.slots[slot]
            .as_ref()
            .is_some_and(|s| s.stage == Stage::Leaving);
        if gone.is_none() {
            gone = match (error, eof, leaving) {
                (_, true, true) => Some((None, String::new())),
                (Some(e), _, false) => Some((Some(cause_of(&e)), e.to_string())),
                (None, true, false) => Some((
                    Some(Cause::Reset),
                    "the broker closed the connection".into(),
                )),
                _ => None,
            };
        }
        if let Some(g) = gone {
            self.end(slot, now, g);
        }
    }

    /// Acts on one engine event of session `i`.
    fn on_event(&mut self, slot: usize, i: usize, e: Event, now: u64) -> Option<Gone> {
        let late = Duration::from_nanos(now.saturating_sub(self.intended(i)));
        let qos = self.script.qos;
        match e {
            Event::Connected(_) => {
                let iv = self.iv(now);
                iv.counts.connected += 1;
                iv.record(Latency::Connect, late);
                let s = self.slots[slot].as_mut()?;
                if let Err(e) = s.client.subscribe(&[(&topic(i), qos)]) {
                    return Some((Some(Cause::Other), e.to_string()));
                }
                flush(s, now);
                s.stage = Stage::Subscribing;
            }
            Event::Subscribed { codes, .. } => {
                let granted = codes.first().copied().unwrap_or(0x80);
                if granted != qos.bits() {
                    return Some((
                        Some(Cause::Auth),
                        format!(
                            "the broker answered the subscription at QoS {} with {granted:#04x}",
                            qos.bits()
                        ),
                    ));
                }
                self.ready(slot, i, now, late);
            }
            Event::Message(m) => self.on_message(slot, &m.payload, now),
            Event::Published { code, .. } if code < 0x80 => self.summary.acked += 1,
            Event::Closed { reason } => {
                let leaving = self.slots[slot]
                    .as_ref()
                    .is_some_and(|s| s.stage == Stage::Leaving);
                if !leaving {
                    return Some((Some(Cause::Reset), reason));
                }
            }
            _ => {}
        }
        None
    }

    /// Session `i` has its SUBACK: it counts as held, and its script's timers start.
    fn ready(&mut self, slot: usize, i: usize, now: u64, late: Duration) {
        let iv = self.iv(now);
        iv.counts.logged_in += 1;
        iv.counts.active_delta += 1;
        iv.record(Latency::Login, late);
        if let Some(s) = self.slots[slot].as_mut() {
            s.stage = Stage::Ready;
        }
        let start = self.intended(i);
        self.push_timer(self.leave_of(i), slot, i, Due::Leave);
        if self.script.every.is_some() && partner(i, self.schedule.len()).is_some() {
            let first = start + self.script.think_of(i).as_nanos() as u64;
            self.push_timer(first, slot, i, Due::Message);
        }
        if self.script.keep_alive_s > 0 {
            let t = now + u64::from(self.script.keep_alive_s) * 1_000_000_000;
            self.push_timer(t, slot, i, Due::KeepAlive);
        }
    }

    fn on_message(&mut self, slot: usize, payload: &[u8], now: u64) {
        self.iv(now).counts.received += 1;
        let Some(head) = payload.get(..HEADER) else {
            return;
        };
        let word = |r: std::ops::Range<usize>| {
            let mut b = [0u8; 8];
            b[..r.len()].copy_from_slice(&head[r]);
            u64::from_le_bytes(b)
        };
        let (sent_ns, seq, expected) = (word(0..8), word(8..12) as u32, head[12] == 1);
        let Some(s) = self.slots[slot].as_mut() else {
            return;
        };
        if s.last_in.is_some_and(|l| seq <= l) {
            self.summary.duplicates += 1;
            return;
        }
        s.last_in = Some(seq);
        self.summary.delivered += u64::from(expected);
        let d = Duration::from_nanos(now.saturating_sub(self.t0 + sent_ns));
        self.iv(now).record(Latency::Message, d);
    }

    /// Ends the session in `slot`: counts a failure, if it was one, and closes it.
    fn end(&mut self, slot: usize, now: u64, (cause, why): Gone) {
        let Some(mut s) = self.slots[slot].take() else {
            return;
        };
        if let Some(cause) = cause {
            let held = s.stage == Stage::Ready;
            let iv = self.iv(now);
            if held {
                iv.counts.active_delta -= 1;
            }
            self.count_failure(now, s.index, cause, why);
        }
        let _ = self.poll.registry().deregister(&mut s.stream);
        self.by_index.remove(&s.index);
        self.free.push(slot);
        self.open -= 1;
    }

    /// Closes what is still open (stopped early: the held count as having left) and
    /// hands over the last interval.
    fn finish(mut self) -> Summary {
        let now = monotonic_ns();
        self.summary.cut_short = self.open;
        for slot in 0..self.slots.len() {
            let Some(s) = self.slots[slot].as_mut() else {
                continue;
            };
            let held = s.stage == Stage::Ready;
            let _ = s.client.disconnect();
            flush(s, now);
            if held {
                let iv = self.iv(now);
                iv.counts.active_delta -= 1;
                iv.counts.left += 1;
            }
            self.end(slot, now, (None, String::new()));
        }
        let last = self.rec.finish();
        (self.on_interval)(last);
        self.summary
    }
}

/// The source address of every session: loopback, not the broker's own address, so that
/// the ports below are this load's alone.
const SOURCE: std::net::Ipv4Addr = std::net::Ipv4Addr::new(127, 0, 1, 1);
/// Source ports: above the ports servers here listen on, below the kernel's ephemeral
/// range (32768-60999), so 22,768 of them.
const FIRST_SOURCE_PORT: u16 = 10_000;

/// Connects the `nth` session to `broker` from [`SOURCE`], its port chosen here
/// (`FIRST_SOURCE_PORT + nth`, wrapping) rather than by the kernel. Linux's `connect()`
/// tries ephemeral ports of one parity first and scans all of them before the other
/// half: with half the range open to one broker (14,100 sessions here) each connect
/// scanned 14,000 ports, and the generator stalled in the kernel for seconds (tried:
/// 18,000 sessions at 6,000/s held at 14,124 for 5 s). `SO_REUSEADDR` lets a port whose
/// last connection is in TIME_WAIT here be taken again; the kernel still refuses one
/// that would repeat a live connection (EADDRNOTAVAIL), and the next port is tried.
fn connect(broker: SocketAddr, nth: usize) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let range = 32_768 - FIRST_SOURCE_PORT as usize;
    for k in 0..64 {
        let port = FIRST_SOURCE_PORT + ((nth + k) % range) as u16;
        let s = Socket::new(Domain::IPV4, Type::STREAM.nonblocking(), None)?;
        s.set_reuse_address(true)?;
        match s.bind(&SocketAddr::from((SOURCE, port)).into()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        }
        match s.connect(&broker.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => continue,
            Err(e) => return Err(e),
        }
        return Ok(TcpStream::from_std(s.into()));
    }
    Err(std::io::Error::other(format!(
        "no free source port on {SOURCE} near {} (64 tried)",
        FIRST_SOURCE_PORT as usize + nth % range
    )))
}

/// Which failure an engine error is.
fn cause_of(e: &MqttError) -> Cause {
    match e {
        MqttError::Refused { .. } => Cause::Auth,
        MqttError::ConnectTimeout { .. } | MqttError::KeepAliveTimeout { .. } => Cause::Timeout,
        MqttError::Eof { .. } => Cause::Reset,
        MqttError::Config(_) | MqttError::Usage(_) => Cause::Other,
        _ => Cause::StreamError,
    }
}

/// Reads what arrived and writes what the engine has to say; returns its events, the
/// error that ended the session if one did, and whether the broker closed the
/// connection ([`wirebench_engine::edge`]: an edge is read until a short read, unless the
/// broker has closed, `drain`).
fn pump(
    s: &mut Session,
    buf: &mut [u8],
    readable: bool,
    drain: bool,
    now: u64,
) -> (Vec<Event>, Option<MqttError>, bool) {
    let (mut error, mut eof) = (None, false);
    if readable || drain {
        let input = edge::read_ready(&mut s.stream, &mut s.client, buf, drain, now);
        eof = input.ended();
        // A reset's end of stream is the engine's Eof error: a reset (cause_of) either way.
        error = input.any_error();
    }
    flush(s, now);
    (
        std::iter::from_fn(|| s.client.poll_event()).collect(),
        error,
        eof,
    )
}

/// Writes what the session has queued; what the socket does not take waits for its next
/// writable edge. A broken connection is seen by the next read.
fn flush(s: &mut Session, now: u64) {
    edge::flush(&mut s.stream, &mut s.client, &mut s.pending, now);
    edge::release_idle(&mut s.pending);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partners_pair_up_and_the_last_odd_one_has_none() {
        assert_eq!(partner(0, 3), Some(1));
        assert_eq!(partner(1, 3), Some(0));
        assert_eq!(partner(2, 3), None);
        assert_eq!(topic(12), "wb/12");
    }
}
