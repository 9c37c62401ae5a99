//! Open-loop XMPP session load (study S4; issue #14): one mio event loop drives its share of
//! a [`Schedule`] of sessions through a script (connect, authenticate, roster, initial
//! presence, messages to a partner at a fixed interval, stay, leave), recording counters
//! and latencies per interval in a [`Recorder`] (crate `wirebench-load`).
//!
//! Open-loop means every time is measured from when something was *meant* to happen:
//! session `i` is meant to connect at `schedule.start(i)`, its `k`-th message is meant to
//! leave at `start + first_message + k * message_every`. A server (or generator) that
//! stalls makes the following sessions late, and their lateness is in the latencies, not
//! hidden by arrivals slowing down (coordinated omission).
//!
//! Messages go to the session's partner (user 2k-1 and user 2k, the numbered accounts'
//! neighbours, so contacts on the built-in server), which may run in another worker or
//! process. The body carries the intended send time on `CLOCK_MONOTONIC`, which every
//! process on the machine shares, so the receiver records the one-way latency.
//!
//! Loopback or lab addresses only ([`crate::hold::lab_address`]), unless the user says
//! otherwise for a cluster ([`crate::hold::target_allowed`]).

use crate::hold::{ALLOW_ANY_TARGET, lab_address, target_allowed};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wirebench_engine::Engine as _;
use wirebench_engine::edge;
use wirebench_load::{Cause, Dist, Interval, Latency, Recorder, Schedule};
use wirebench_xmpp::{Client, ClientConfig, Event, Mechanism, TlsMode, XmppError};

/// What every session does.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Script {
    /// Server addresses; session `i` uses `addrs[i % len]`.
    pub addrs: Vec<SocketAddr>,
    pub domain: String,
    /// Session `i` is user `first_user + i * user_stride`, password `pass<N>`. A stride of
    /// 2 logs in every other user, so half of each numbered roster is online (study S4).
    pub first_user: u64,
    #[serde(default = "one")]
    pub user_stride: u64,
    /// SASL mechanism (`Mechanism::name`, e.g. PLAIN or SCRAM-SHA-256).
    pub mechanism: String,
    pub roster: bool,
    pub presence: bool,
    /// How long a session stays after its intended start, then leaves (drawn once per
    /// session).
    pub stay: Dist,
    /// Messages to the partner every this long (none if `None`; drawn for each message),
    /// the first `first_message` after the intended start (drawn once per session), the
    /// last before the session's stay ends.
    pub message_every: Option<Dist>,
    pub first_message: Dist,
    /// Seeds the draws of `stay`, `first_message` and `message_every`.
    #[serde(default)]
    pub seed: u64,
    /// STARTTLS before authenticating (required: a server that does not offer it fails
    /// the session).
    #[serde(default)]
    pub tls: bool,
    /// The certificate (DER) to trust for STARTTLS; `None`: any (a server not ours).
    #[serde(default)]
    pub tls_cert: Option<Vec<u8>>,
    /// A session not logged in this long after its intended start fails (timeout).
    pub login_timeout: Duration,
    /// Body bytes of each message (at least the timestamp, ~20 characters).
    pub payload: usize,
    /// Source addresses, used in turn; each gives ports 10000-32767 (22,768 sessions at
    /// once). The ports are chosen per worker: two workers must not share an address.
    pub from: Vec<IpAddr>,
    /// Write every latency sample, raw, to `<this>.w<worker>.csv` (`load.samples`): the
    /// check that histograms and their merges keep the percentiles.
    #[serde(default)]
    pub samples: Option<std::path::PathBuf>,
}

fn one() -> u64 {
    1
}

/// Keys of the draws: session `i`'s stay, its first message, its message `k`'s gap.
const DRAW_STAY: u64 = 0;
const DRAW_THINK: u64 = 1;
const DRAW_EVERY: u64 = 2;

impl Script {
    /// How long session `i` stays.
    pub fn stay_of(&self, i: usize) -> Duration {
        self.stay.draw(self.seed, draw_key(i, DRAW_STAY))
    }

    /// When session `i` sends its first message, after its intended start.
    pub fn think_of(&self, i: usize) -> Duration {
        self.first_message.draw(self.seed, draw_key(i, DRAW_THINK))
    }

    /// The gap after session `i`'s message `k`.
    pub fn gap_of(&self, i: usize, k: u64) -> Option<Duration> {
        self.message_every
            .map(|d| d.draw(self.seed, draw_key(i, DRAW_EVERY + k)))
    }

    /// The user number of session `i`.
    pub fn user(&self, i: usize) -> u64 {
        self.first_user + i as u64 * self.user_stride.max(1)
    }
}

fn draw_key(i: usize, what: u64) -> u64 {
    (i as u64) << 24 ^ what
}

/// A session's life.
enum Stage {
    Connecting,
    LoggingIn,
    Established,
    /// Stream closed by us; waiting for the server to close the connection.
    Leaving,
}

struct Session {
    /// Index in the schedule.
    index: usize,
    stream: TcpStream,
    client: Client,
    pending: Vec<u8>,
    stage: Stage,
    /// Messages sent so far (the next one's number).
    sent: u64,
}

/// A timer: (due, monotonic ns) -> (slot, what).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    LoginTimeout,
    Message,
    Leave,
    /// A leaving session the server has not closed yet.
    Drop,
}

/// How long a leaving session waits for the server to close its connection.
const LEAVE_GRACE_NS: u64 = 5_000_000_000;

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine.
pub use wirebench_model::clock::monotonic_ns;

/// What one worker saw, besides its intervals.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct WorkerSummary {
    pub sessions: u64,
    /// A generator process's resident memory before its first session and at its
    /// highest (VmHWM), KiB, and its CPU seconds; absent for a generator thread, whose
    /// process holds other things too.
    #[serde(default)]
    pub rss_start_kib: Option<u64>,
    #[serde(default)]
    pub rss_peak_kib: Option<u64>,
    #[serde(default)]
    pub cpu_s: Option<f64>,
    /// Most sessions open at once in this worker.
    pub peak_open: u64,
    /// Roster items the server sent, all sessions together: the rosters it holds.
    #[serde(default)]
    pub roster_items: u64,
    /// Available presences from contacts: the server's fan-out, seen from the clients.
    #[serde(default)]
    pub presences: u64,
    /// The first failure, in words.
    pub first_error: Option<String>,
}

/// Which part of a run a worker plays.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Part {
    /// This worker's number, from 0, and how many share the schedule: it runs sessions
    /// `worker, worker + workers, ...`.
    pub worker: usize,
    pub workers: usize,
    /// The run's start, monotonic ns ([`monotonic_ns`]), the same for every worker.
    pub t0: u64,
    /// Width of the time series' intervals.
    pub width: Duration,
}

/// Runs one worker's share of `schedule`. Every closed interval goes to `on_interval`, the
/// last one too. Returns when every session has left or failed, or `stop` is set
/// (sessions still open are then closed).
pub fn run_worker(
    schedule: &Schedule,
    part: Part,
    script: &Script,
    stop: &AtomicBool,
    on_interval: impl FnMut(Interval),
) -> std::io::Result<WorkerSummary> {
    let Part {
        worker: w,
        workers,
        t0,
        width,
    } = part;
    check_script(script)?;
    // One TLS configuration for all of this worker's sessions (rustls shares it).
    let tls = if script.tls {
        Some(
            crate::tls::client_config(script.tls_cert.as_deref())
                .map_err(|e| std::io::Error::other(format!("load: TLS: {e}")))?,
        )
    } else {
        None
    };
    let poll = Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let mut mine = schedule.share(w, workers).peekable();
    let raw = match &script.samples {
        Some(p) => {
            let mut name = p.clone().into_os_string();
            name.push(format!(".w{w}.csv"));
            Some(std::io::BufWriter::new(std::fs::File::create(name)?))
        }
        None => None,
    };
    let mut run = Worker {
        clock: Clock { schedule, t0 },
        script,
        tls,
        poll,
        slots: Vec::new(),
        free: Vec::new(),
        timers: BinaryHeap::new(),
        rec: Recorder::new(width),
        summary: WorkerSummary::default(),
        open: 0,
        buf: vec![0u8; 64 * 1024],
        raw,
        body_pad: "x".repeat(script.payload.saturating_sub(21)),
        on_interval,
    };
    loop {
        let now = monotonic_ns();
        let stopping = stop.load(Ordering::Relaxed);
        if !stopping {
            run.start_due(&mut mine, now);
        }
        run.fire_timers(now);
        if stopping || (mine.peek().is_none() && run.open == 0) {
            break;
        }
        // Sleep until the next arrival, timer or interval boundary (1 s at most).
        let next_arrival = mine.peek().map(|&i| run.clock.intended(i));
        let next_timer = run.timers.peek().map(|Reverse((d, ..))| *d);
        let wake = [next_arrival, next_timer]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + 1_000_000_000)
            .min(now + 1_000_000_000);
        let timeout = Duration::from_nanos(wake.saturating_sub(monotonic_ns()));
        match run.poll.poll(&mut events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let now = monotonic_ns();
        for ev in events.iter() {
            run.on_readiness(ev, now);
        }
    }
    run.finish()
}

/// What a worker refuses to run: addresses outside the lab, an unknown SASL mechanism,
/// no server.
fn check_script(script: &Script) -> std::io::Result<()> {
    if !script.addrs.iter().all(|a| target_allowed(a.ip()))
        || !script.from.iter().all(|ip| lab_address(*ip))
    {
        return Err(std::io::Error::other(format!(
            "load: only loopback or lab (198.18.0.0/15) addresses, unless {ALLOW_ANY_TARGET}=1"
        )));
    }
    if Mechanism::from_name(&script.mechanism).is_none() {
        return Err(std::io::Error::other(format!(
            "load: unknown SASL mechanism {:?} (PLAIN, SCRAM-SHA-1 or SCRAM-SHA-256)",
            script.mechanism
        )));
    }
    if script.addrs.is_empty() {
        return Err(std::io::Error::other("load: no server address"));
    }
    Ok(())
}

/// The run's clock: when session `i` is meant to start, and an instant's place in the
/// time series.
#[derive(Clone, Copy)]
struct Clock<'a> {
    schedule: &'a Schedule,
    /// The run's start, monotonic ns.
    t0: u64,
}

impl Clock<'_> {
    fn intended(&self, i: usize) -> u64 {
        self.t0 + self.schedule.start(i).as_nanos() as u64
    }

    fn since(&self, now: u64) -> Duration {
        Duration::from_nanos(now.saturating_sub(self.t0))
    }
}

/// One worker's event loop state: its sessions, their timers and what it recorded.
struct Worker<'a, F: FnMut(Interval)> {
    clock: Clock<'a>,
    script: &'a Script,
    tls: Option<Arc<wirebench_xmpp::rustls::ClientConfig>>,
    poll: Poll,
    slots: Vec<Option<Session>>,
    free: Vec<usize>,
    timers: BinaryHeap<Reverse<(u64, usize, usize, Due)>>,
    rec: Recorder,
    summary: WorkerSummary,
    /// Sessions count towards `open` from connect to close.
    open: u64,
    buf: Vec<u8>,
    /// The raw latency samples file (`load.samples`).
    raw: Option<std::io::BufWriter<std::fs::File>>,
    body_pad: String,
    on_interval: F,
}

impl<F: FnMut(Interval)> Worker<'_, F> {
    /// Starts every session of `mine` whose time has come.
    fn start_due(&mut self, mine: &mut std::iter::Peekable<impl Iterator<Item = usize>>, now: u64) {
        let (clock, script) = (self.clock, self.script);
        while mine.peek().is_some_and(|&i| clock.intended(i) <= now) {
            let i = mine.next().unwrap_or_default();
            let opened = self.summary.sessions as usize;
            self.summary.sessions += 1;
            let iv = self.rec.at(clock.since(now), &mut self.on_interval);
            iv.counts.arrivals += 1;
            let tls = &self.tls;
            match open_session(
                i,
                opened,
                script,
                tls,
                &self.poll,
                &mut self.slots,
                &mut self.free,
            ) {
                Ok(slot) => {
                    self.open += 1;
                    self.summary.peak_open = self.summary.peak_open.max(self.open);
                    self.timers.push(Reverse((
                        clock.intended(i) + script.login_timeout.as_nanos() as u64,
                        slot,
                        i,
                        Due::LoginTimeout,
                    )));
                }
                Err((cause, e)) => {
                    iv.fail(cause);
                    self.summary.first_error.get_or_insert(e);
                }
            }
        }
    }

    /// Acts on the timers that are due: login timeouts, messages, leaving, dropping.
    fn fire_timers(&mut self, now: u64) {
        let (clock, script) = (self.clock, self.script);
        while let Some(&Reverse((due, slot, i, what))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            // A timer outlives its session when the slot was reused: check the index.
            let Some(s) = self.slots.get_mut(slot).and_then(|s| s.as_mut()) else {
                continue;
            };
            if s.index != i {
                continue;
            }
            let iv = self.rec.at(clock.since(now), &mut self.on_interval);
            let mut dropped = false;
            match (what, &s.stage) {
                (Due::LoginTimeout, Stage::Connecting | Stage::LoggingIn) => {
                    iv.fail(Cause::Timeout);
                    self.summary.first_error.get_or_insert_with(|| {
                        format!(
                            "user {}: not logged in within {:?} of its intended start",
                            script.user(i),
                            script.login_timeout
                        )
                    });
                    dropped = true;
                }
                // Messages are meant strictly before the session leaves.
                (Due::Message, Stage::Established)
                    if due < clock.intended(i) + script.stay_of(i).as_nanos() as u64 =>
                {
                    let to = partner(i, clock.schedule.len())
                        .map(|p| format!("user{}@{}", script.user(p), script.domain));
                    if let Some(to) = to {
                        // The intended send time from the case's start: every generator,
                        // in any shard on any machine, counts from the same agreed start.
                        let body = format!("{} {}", due.saturating_sub(clock.t0), self.body_pad);
                        let id = format!("m{}", s.sent);
                        if s.client.send_message(&to, &body, &id).is_ok() {
                            s.sent += 1;
                            iv.counts.sent += 1;
                            flush(s, now);
                        }
                        if let Some(gap) = script.gap_of(i, s.sent) {
                            self.timers.push(Reverse((
                                due + gap.as_nanos().max(1) as u64,
                                slot,
                                i,
                                Due::Message,
                            )));
                        }
                    }
                }
                (Due::Leave, Stage::Established) => {
                    s.client.close();
                    flush(s, now);
                    s.stage = Stage::Leaving;
                    iv.counts.left += 1;
                    iv.counts.active_delta -= 1;
                    // The server closes the connection after our </stream:stream>; one
                    // that does not is dropped after a grace period.
                    self.timers
                        .push(Reverse((now + LEAVE_GRACE_NS, slot, i, Due::Drop)));
                }
                (Due::Drop, Stage::Leaving) => dropped = true,
                _ => {}
            }
            if dropped {
                drop_session(&mut self.slots, &mut self.free, slot, &self.poll);
                self.open -= 1;
            }
        }
    }

    /// A session's socket is ready: finish its connect, or move its bytes and act on
    /// what the engine says; drops the session if that ended it.
    fn on_readiness(&mut self, ev: &mio::event::Event, now: u64) {
        let (clock, script) = (self.clock, self.script);
        let slot = ev.token().0;
        let Some(s) = self.slots.get_mut(slot).and_then(|s| s.as_mut()) else {
            return;
        };
        let i = s.index;
        let iv = self.rec.at(clock.since(now), &mut self.on_interval);
        let late = |now: u64| Duration::from_nanos(now.saturating_sub(clock.intended(i)));
        // Why the session ended, if it did: (cause to count, words for the first
        // failure); `None` as the cause for a session that had already left.
        let mut gone: Option<(Option<Cause>, String)> = None;
        if matches!(s.stage, Stage::Connecting) && ev.is_writable() {
            match s.stream.peer_addr() {
                Ok(_) => {
                    iv.counts.connected += 1;
                    record(iv, &mut self.raw, Latency::Connect, late(now));
                    s.stage = Stage::LoggingIn;
                }
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
                    gone = Some((Some(cause), format!("connect: {why}")));
                }
                Err(_) => {}
            }
        }
        if gone.is_none() {
            let drain = ev.is_read_closed() || ev.is_error();
            let (evs, error, eof) = pump(s, &mut self.buf, ev.is_readable(), drain, now);
            // A leaving session is dropped once the server has closed the connection,
            // not when its closing tag arrives: closing first would leave this side's
            // port in TIME_WAIT.
            if eof && matches!(s.stage, Stage::Leaving) {
                gone = Some((None, String::new()));
            }
            for e in evs {
                match e {
                    Event::SessionEstablished => {
                        iv.counts.logged_in += 1;
                        iv.counts.active_delta += 1;
                        record(iv, &mut self.raw, Latency::Login, late(now));
                        s.stage = Stage::Established;
                        let start = clock.intended(i);
                        let leave = start + script.stay_of(i).as_nanos() as u64;
                        self.timers.push(Reverse((leave, slot, i, Due::Leave)));
                        if script.message_every.is_some()
                            && partner(i, clock.schedule.len()).is_some()
                        {
                            let first = start + script.think_of(i).as_nanos() as u64;
                            self.timers.push(Reverse((first, slot, i, Due::Message)));
                        }
                    }
                    Event::Roster { items } => self.summary.roster_items += items as u64,
                    // RFC 6121 4.2.2: a session also gets its own presence back.
                    Event::Presence { kind: None, from }
                        if !from.starts_with(&format!("user{}@", script.user(i))) =>
                    {
                        self.summary.presences += 1
                    }
                    Event::Message { body, .. } => {
                        iv.counts.received += 1;
                        let sent = body.split(' ').next().and_then(|t| t.parse::<u64>().ok());
                        if let Some(sent) = sent {
                            let d = Duration::from_nanos(now.saturating_sub(clock.t0 + sent));
                            record(iv, &mut self.raw, Latency::Message, d);
                        }
                    }
                    Event::StreamError { condition, .. } if !matches!(s.stage, Stage::Leaving) => {
                        let why = format!("stream error <{condition}/>");
                        gone = Some((Some(Cause::StreamError), why));
                    }
                    Event::Closed if !matches!(s.stage, Stage::Leaving) => {
                        gone.get_or_insert_with(|| match &error {
                            Some(XmppError::Auth(t)) => {
                                (Some(Cause::Auth), format!("authentication failed: {t}"))
                            }
                            Some(e) => (Some(Cause::StreamError), e.to_string()),
                            None => (
                                Some(Cause::Reset),
                                "the server closed the connection".into(),
                            ),
                        });
                    }
                    _ => {}
                }
            }
        }
        if let Some((cause, why)) = gone {
            if let Some(cause) = cause {
                if matches!(s.stage, Stage::Established) {
                    iv.counts.active_delta -= 1;
                }
                iv.fail(cause);
                self.summary
                    .first_error
                    .get_or_insert_with(|| format!("user {}: {why}", script.user(i)));
            }
            drop_session(&mut self.slots, &mut self.free, slot, &self.poll);
            self.open -= 1;
        }
    }

    /// Closes what is still open (stopped early: the established count as having left),
    /// hands over the last interval and flushes the samples file.
    fn finish(mut self) -> std::io::Result<WorkerSummary> {
        let now = monotonic_ns();
        let iv = self.rec.at(self.clock.since(now), &mut self.on_interval);
        for slot in 0..self.slots.len() {
            if let Some(s) = self.slots[slot].as_mut() {
                if matches!(s.stage, Stage::Established) {
                    iv.counts.active_delta -= 1;
                    iv.counts.left += 1;
                }
                s.client.close();
                flush(s, now);
                drop_session(&mut self.slots, &mut self.free, slot, &self.poll);
            }
        }
        (self.on_interval)(self.rec.finish());
        if let Some(w) = self.raw.as_mut() {
            w.flush()?;
        }
        Ok(self.summary)
    }
}

/// Records a latency in the open interval and, with `load.samples`, raw in the samples
/// file (`kind,ns`).
fn record(
    iv: &mut Interval,
    raw: &mut Option<std::io::BufWriter<std::fs::File>>,
    which: Latency,
    d: Duration,
) {
    iv.record(which, d);
    if let Some(w) = raw {
        let kind = wirebench_load::series::LATENCY_NAMES[which as usize];
        let _ = writeln!(w, "{kind},{}", d.as_nanos());
    }
}

/// Session `i`'s partner in the schedule (2k and 2k+1), if it exists.
fn partner(i: usize, n: usize) -> Option<usize> {
    let p = i ^ 1;
    (p < n).then_some(p)
}

/// Opens session `i` of the schedule, this worker's `nth` (which picks its source address
/// and port).
fn open_session(
    i: usize,
    nth: usize,
    script: &Script,
    tls: &Option<Arc<wirebench_xmpp::rustls::ClientConfig>>,
    poll: &Poll,
    slots: &mut Vec<Option<Session>>,
    free: &mut Vec<usize>,
) -> Result<usize, (Cause, String)> {
    let addr = script.addrs[wirebench_load::phase::Schedule::worker_of(i, script.addrs.len())];
    let from = (!script.from.is_empty()).then(|| {
        let per = nth / script.from.len();
        (script.from[nth % script.from.len()], per)
    });
    let (ip, port_index) = from.map_or((None, 0), |(ip, k)| (Some(ip), k));
    let mut stream = crate::hold::connect(addr, ip, port_index).map_err(|e| {
        let cause = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => Cause::Refused,
            _ => Cause::Other,
        };
        (cause, format!("connect to {addr}: {e}"))
    })?;
    let slot = free.pop().unwrap_or_else(|| {
        slots.push(None);
        slots.len() - 1
    });
    poll.registry()
        .register(
            &mut stream,
            Token(slot),
            Interest::READABLE | Interest::WRITABLE,
        )
        .map_err(|e| (Cause::Other, format!("register: {e}")))?;
    let user = script.user(i);
    let mut cfg = ClientConfig::new(
        &format!("user{user}@{}", script.domain),
        &format!("pass{user}"),
    );
    cfg.tls = if tls.is_some() {
        TlsMode::Required
    } else {
        TlsMode::Never
    };
    // Checked by run_worker before any session starts.
    cfg.mechanisms = vec![Mechanism::from_name(&script.mechanism).unwrap_or(Mechanism::Plain)];
    cfg.roster = script.roster;
    cfg.initial_presence = script.presence;
    // Messages of the case's payload must fit, with the stanza around them.
    cfg.max_stanza = (64 * 1024).max(script.payload + 4096);
    slots[slot] = Some(Session {
        index: i,
        stream,
        client: Client::new(cfg, tls.clone(), user),
        pending: Vec::new(),
        stage: Stage::Connecting,
        sent: 0,
    });
    Ok(slot)
}

fn drop_session(slots: &mut [Option<Session>], free: &mut Vec<usize>, slot: usize, poll: &Poll) {
    if let Some(mut s) = slots[slot].take() {
        let _ = poll.registry().deregister(&mut s.stream);
        free.push(slot);
    }
}

/// Reads what arrived and writes what the engine has to say; returns its events, the
/// error that ended the session if one did, and whether the server closed the connection
/// ([`wirebench_engine::edge`]: an edge is read until a short read, unless the server has
/// closed, `drain`). A reset is a reset, not the stream error the engine makes of it.
fn pump(
    s: &mut Session,
    buf: &mut [u8],
    readable: bool,
    drain: bool,
    now: u64,
) -> (Vec<Event>, Option<XmppError>, bool) {
    let (mut error, mut eof) = (None, false);
    if readable {
        let input = edge::read_ready(&mut s.stream, &mut s.client, buf, drain, now);
        eof = input.ended();
        error = input.error();
    }
    flush(s, now);
    (
        std::iter::from_fn(|| s.client.poll_event()).collect(),
        error,
        eof,
    )
}

/// Writes what the session has queued at `now`. The engine swaps its queue into the
/// empty `pending` (no copy); only what the socket does not take stays there.
fn flush(s: &mut Session, now: u64) {
    edge::flush(&mut s.stream, &mut s.client, &mut s.pending, now);
    if edge::release_idle(&mut s.pending) {
        s.client.shrink();
    }
}
