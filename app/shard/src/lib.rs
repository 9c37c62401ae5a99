//! Sharded runs (issue #18; docs/cluster.md): `--shard I/N` runs slice `I` of every load
//! case, and the shards start each case at one agreed moment, either
//!
//! - at a **barrier** on shard 0 (`--barrier HOST:PORT`): shard 0 listens, the others
//!   connect (retrying while shard 0's pod starts and its name appears in DNS), each
//!   estimates its clock's offset from shard 0's with Cristian's method (eight probes, the
//!   shortest round trip wins, the error is at most half of it), and before every case all
//!   say they are ready and shard 0 announces the start on its clock; or
//! - at a wall-clock time given to all (`--start-at`), the clocks trusted to NTP: the
//!   first case at that time, each later one a fixed slot (its estimate, a quarter more,
//!   and 10 s) after the previous one's start, so shards agree without talking.
//!
//! Each shard writes `shard.json` into its results: who it is, the plan it ran (so `wirebench
//! merge` refuses shards of different runs), and every case's start as it saw it.
//!
//! The barrier speaks JSON lines over TCP: `{"hello":..}` / `{"welcome":..}` or
//! `{"refused":".."}`, `{"probe":T}` / `{"clock":T}`, `{"ready":[case,repeat]}` /
//! `{"go":[case,repeat,UNIX_NS]}`.

pub mod merge;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::{Align, Start};

/// Why a sharded run or a merge cannot go on. The runner's `RunError` carries it
/// unchanged (`#[error(transparent)]`), so the messages are the same as before the split.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot write results to {path}: {error}")]
    Results { path: String, error: std::io::Error },
    #[error(transparent)]
    Report(#[from] wirebench_report::ReportError),
}

/// The file a shard writes into its results directory.
pub const FILE: &str = "shard.json";

/// How a run takes part in a sharded run.
#[derive(Debug, Clone)]
pub struct ShardOptions {
    pub index: u32,
    pub count: u32,
    /// `HOST:PORT` of shard 0's barrier (shard 0 listens on PORT, on every address).
    pub barrier: Option<String>,
    /// The first case starts no earlier than this.
    pub start_at: Option<SystemTime>,
    /// How long the barrier waits for every shard (to connect, and at each case).
    pub barrier_timeout: Duration,
}

impl ShardOptions {
    /// Refuses options that cannot align the shards, before anything starts: a barrier
    /// that is no `HOST:PORT`, a start in the past, or several shards with neither.
    pub fn check(&self) -> Result<(), ShardError> {
        let usage = |m: String| ShardError::Usage(m);
        if self.barrier.is_some() {
            return self.barrier_port().map(|_| ());
        }
        match self.start_at {
            Some(first) if first < SystemTime::now() => Err(usage(format!(
                "--start-at {} is in the past: give every shard the same time, a little ahead",
                humantime::format_rfc3339_seconds(first)
            ))),
            None if self.count > 1 => Err(usage(format!(
                "shard {}/{}: shards must start together: give them all --barrier HOST:PORT \
                 (shard 0's address) or --start-at TIME",
                self.index, self.count
            ))),
            _ => Ok(()),
        }
    }

    /// The port of `--barrier HOST:PORT`, which shard 0 listens on.
    fn barrier_port(&self) -> Result<u16, ShardError> {
        let addr = self.barrier.as_deref().unwrap_or_default();
        let usage = |m: String| ShardError::Usage(m);
        let (_, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| usage(format!("--barrier {addr}: expected HOST:PORT of shard 0")))?;
        port.parse()
            .map_err(|_| usage(format!("--barrier {addr}: bad port")))
    }
}

/// Parses `I/N`.
pub fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("--shard {s}: expected I/N, e.g. 0/4 (shard I of N, I from 0)");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(format!(
            "--shard {s}: the index must be below the count (0/{n} .. {}/{n})",
            n.max(1) - 1
        ));
    }
    Ok((i, n))
}

/// What `shard.json` holds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ShardFile {
    pub index: u32,
    pub count: u32,
    pub wirebench: String,
    pub scenario: String,
    pub seed: u64,
    pub repeat: u32,
    /// Every case's parameters, in order: shards of one run have the same.
    pub plan: Vec<serde_json::Value>,
    pub method: String,
    pub starts: Vec<CaseStart>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CaseStart {
    pub case: usize,
    pub repeat: u32,
    #[serde(flatten)]
    pub start: Start,
}

fn unix_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A wall-clock instant (this machine's clock) as a `CLOCK_MONOTONIC` instant, and how far
/// ahead of now it is, seconds.
fn to_monotonic(unix: i64) -> (u64, f64) {
    let (mono, now) = (monotonic_ns() as i64, unix_ns());
    let ahead = unix - now;
    ((mono + ahead).max(0) as u64, ahead as f64 / 1e9)
}

/// The kernel's estimate of its clock's error, seconds, and whether it says the clock is
/// unsynchronised (adjtimex(2)).
fn kernel_clock() -> (Option<f64>, bool) {
    // SAFETY: timex is plain old data; all zeroes is a valid value of it.
    let mut t: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: with modes 0 adjtimex only reads the kernel's state into `t`, which we own.
    let state = unsafe { libc::adjtimex(&mut t) };
    if state < 0 {
        return (None, false);
    }
    (Some(t.esterror as f64 / 1e6), state == libc::TIME_ERROR)
}

/// How the shards of this run agree on starts; remembers each start for `shard.json`.
pub struct Aligner {
    how: How,
    starts: Mutex<Vec<CaseStart>>,
}

enum How {
    /// Case k's start: `first` plus the slots of the cases before it.
    StartAt {
        first: SystemTime,
        slots: BTreeMap<(usize, u32), Duration>,
    },
    Leader(Arc<Leader>),
    Follower(Mutex<Follower>),
    /// `--shard 0/1`: no one to agree with.
    Alone,
}

impl Aligner {
    /// Sets up the alignment `opts` asks for: shard 0 starts listening, the others
    /// connect and measure their clock offset now, before the first case. `slots`: each
    /// (case, repeat)'s slot for `--start-at` alone, in run order; `plan`: the run's
    /// fingerprint, which every shard must share.
    pub fn new(
        opts: &ShardOptions,
        slots: Vec<((usize, u32), Duration)>,
        plan: &str,
        shutdown: &AtomicBool,
    ) -> Result<Aligner, ShardError> {
        opts.check()?;
        let how = match (&opts.barrier, opts.start_at) {
            (Some(addr), start_at) => {
                let port = opts.barrier_port()?;
                if opts.index == 0 {
                    How::Leader(Leader::listen(port, opts, plan, start_at)?)
                } else {
                    How::Follower(Mutex::new(Follower::join(addr, opts, plan, shutdown)?))
                }
            }
            (None, Some(first)) => {
                let mut at = Duration::ZERO;
                let mut starts = BTreeMap::new();
                for (key, slot) in slots {
                    starts.insert(key, at);
                    at += slot;
                }
                How::StartAt {
                    first,
                    slots: starts,
                }
            }
            // One shard alone: nobody to wait for, each case starts as soon as it can.
            (None, None) => How::Alone,
        };
        Ok(Aligner {
            how,
            starts: Mutex::new(Vec::new()),
        })
    }

    pub fn method(&self) -> &'static str {
        match self.how {
            How::StartAt { .. } => "start-at",
            How::Alone => "alone",
            How::Leader(_) | How::Follower(_) => "barrier",
        }
    }

    pub fn starts(&self) -> Vec<CaseStart> {
        self.starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Align for Aligner {
    fn start(
        &self,
        case: usize,
        repeat: u32,
        lead: Duration,
        shutdown: &AtomicBool,
    ) -> Result<Start, String> {
        let start = match &self.how {
            How::StartAt { first, slots } => {
                let offset = slots.get(&(case, repeat)).copied().unwrap_or_default();
                let at = *first + offset;
                let unix = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()) as i64;
                let (t0, ahead) = to_monotonic(unix);
                let (error_s, unsynchronised) = kernel_clock();
                Start {
                    t0_mono_ns: t0,
                    unix_ns: unix,
                    method: "start-at".into(),
                    margin_s: ahead - lead.as_secs_f64(),
                    offset_s: None,
                    error_s,
                    unsynchronised,
                }
            }
            How::Alone => {
                let unix = unix_ns() + lead.as_nanos() as i64;
                Start {
                    t0_mono_ns: to_monotonic(unix).0,
                    unix_ns: unix,
                    method: "alone".into(),
                    // Ready by construction: the start is the lead from now.
                    margin_s: 0.0,
                    ..Start::default()
                }
            }
            How::Leader(l) => l.start(case, repeat, lead, shutdown)?,
            How::Follower(f) => f
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .start(case, repeat, lead, shutdown)?,
        };
        self.starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(CaseStart {
                case,
                repeat,
                start: start.clone(),
            });
        Ok(start)
    }
}

/// A line of the barrier's protocol.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Msg {
    Hello {
        index: u32,
        count: u32,
        wirebench: String,
        plan: String,
    },
    Welcome,
    Refused(String),
    Probe(i64),
    Clock(i64),
    Ready(usize, u32),
    Go(usize, u32, i64),
}

fn send(w: &mut TcpStream, m: &Msg) -> std::io::Result<()> {
    let mut line = serde_json::to_string(m).map_err(std::io::Error::other)?;
    line.push('\n');
    w.write_all(line.as_bytes())
}

/// How long shard 0 waits for a new connection's hello.
const HELLO_WITHIN: Duration = Duration::from_secs(10);

/// Longest line of the barrier's protocol: a peer is not trusted.
const MAX_LINE: usize = 64 * 1024;

/// How [`recv`]'s errors for what the peer sent begin (a line too long, not a message,
/// not text), as opposed to a timeout or a close: a connection refused for one of them
/// is a strike against its source ([`wirebench_net::ban`]).
const LINE_TOO_LONG: &str = "a line over 64 KiB";
const MALFORMED: &str = "a malformed message";
const NOT_TEXT: &str = "a line that is not UTF-8";

fn misused(why: &str) -> bool {
    [LINE_TOO_LONG, MALFORMED, NOT_TEXT]
        .iter()
        .any(|m| why.starts_with(m))
}

/// Reads one line (a message), waiting at most until `deadline` and no longer than the
/// user wants (`shutdown`). A line longer than [`MAX_LINE`] is refused, however slowly
/// it trickles in.
fn recv(
    r: &mut BufReader<TcpStream>,
    deadline: Option<Instant>,
    shutdown: &AtomicBool,
) -> Result<Msg, String> {
    let mut line = String::new();
    // Reads wake up to look at the deadline and the user.
    let _ = r
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)));
    loop {
        if shutdown.load(Ordering::SeqCst) {
            return Err("interrupted".into());
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            return Err("timed out".into());
        }
        // A read cut short by the timeout keeps what it read: the room left bounds the
        // line across reads, not each read alone.
        let room = MAX_LINE.saturating_sub(line.len());
        if room == 0 {
            return Err(LINE_TOO_LONG.into());
        }
        match (&mut *r).take(room as u64).read_line(&mut line) {
            Ok(0) if line.is_empty() => return Err("the connection closed".into()),
            Ok(_) if line.ends_with('\n') => {
                return serde_json::from_str(line.trim()).map_err(|e| format!("{MALFORMED} ({e})"));
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(format!("{NOT_TEXT} ({e})"));
            }
            Ok(0) => return Err("the connection closed mid-line".into()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

use std::io::Read as _;

/// Shard 0: accepts the others, answers their clock probes, says go.
struct Leader {
    count: u32,
    timeout: Duration,
    start_at: Option<SystemTime>,
    state: Mutex<LeaderState>,
    changed: Condvar,
    /// Connections that have not said hello yet, by arrival (for [`Leader::admit`]).
    pending: Mutex<BTreeMap<u64, TcpStream>>,
}

#[derive(Default)]
struct LeaderState {
    /// Followers' write halves, by index.
    joined: BTreeMap<u32, TcpStream>,
    ready: BTreeMap<(usize, u32), BTreeSet<u32>>,
    /// Why a follower left, by index.
    gone: BTreeMap<u32, String>,
    first_go: bool,
}

impl Leader {
    fn listen(
        port: u16,
        opts: &ShardOptions,
        plan: &str,
        start_at: Option<SystemTime>,
    ) -> Result<Arc<Leader>, ShardError> {
        // A deep accept queue: strangers' connection floods must not make the kernel drop
        // a shard's connection (std's 128 overflowed under bench/hostile.sh's flood).
        let any = std::net::SocketAddr::from(([0, 0, 0, 0], port));
        let listener = wirebench_net::sock::listener(any).map_err(|e| {
            ShardError::Usage(format!(
                "shard 0 cannot listen for the barrier on port {port}: {e}"
            ))
        })?;
        let leader = Arc::new(Leader {
            count: opts.count,
            timeout: opts.barrier_timeout,
            start_at,
            state: Mutex::new(LeaderState::default()),
            changed: Condvar::new(),
            pending: Mutex::new(BTreeMap::new()),
        });
        let (l, plan) = (leader.clone(), plan.to_string());
        // Accepts for the whole run: a shard that reconnects is refused (its index is
        // taken), anyone else who is not a shard of this run is refused at hello. A
        // thread per connection; connections that have not said hello yet are capped at
        // a few more than the shards, the oldest making room for a new one, so that
        // strangers holding connections open cannot keep a shard out (a shard whose
        // connection is closed before its answer connects again).
        let most = opts.count as usize + 8;
        std::thread::spawn(move || {
            let _bans = wirebench_net::ban::guard(&listener);
            for (id, stream) in listener.incoming().flatten().enumerate() {
                if wirebench_net::ban::peer_banned(&stream) {
                    // Queued before its source was banned: closed unread.
                    continue;
                }
                if !l.admit(id as u64, &stream, most) {
                    continue;
                }
                let (l, plan) = (l.clone(), plan.clone());
                std::thread::spawn(move || {
                    l.serve(id as u64, stream, &plan);
                    l.pending().remove(&(id as u64));
                });
            }
        });
        Ok(leader)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, TcpStream>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts connection `id` among those yet to say hello, closing the oldest of them
    /// when `most` are already waiting. False if it cannot be served.
    fn admit(&self, id: u64, stream: &TcpStream, most: usize) -> bool {
        let Ok(handle) = stream.try_clone() else {
            return false;
        };
        let mut pending = self.pending();
        while pending.len() >= most {
            if let Some((_, oldest)) = pending.pop_first() {
                // Its thread's read ends; it never became a shard.
                let _ = oldest.shutdown(std::net::Shutdown::Both);
            }
        }
        pending.insert(id, handle);
        true
    }

    /// One follower's connection, until it closes.
    fn serve(&self, id: u64, stream: TcpStream, plan: &str) {
        let _ = stream.set_nodelay(true);
        let Ok(mut w) = stream.try_clone() else {
            return;
        };
        let mut r = BufReader::new(stream);
        let never = AtomicBool::new(false);
        // A shard sends its hello as soon as it is connected.
        let deadline = Some(Instant::now() + HELLO_WITHIN);
        let hello = recv(&mut r, deadline, &never);
        self.pending().remove(&id);
        let index = match hello {
            Ok(Msg::Hello {
                index,
                count,
                wirebench,
                plan: theirs,
            }) => {
                let mine = env!("CARGO_PKG_VERSION");
                let refusal = if count != self.count {
                    Some(format!("this run has {} shards, not {count}", self.count))
                } else if index == 0 || index >= count {
                    Some(format!("shard index {index} is not 1..{}", count - 1))
                } else if wirebench != mine {
                    Some(format!(
                        "shard 0 runs wirebench {mine}, this one {wirebench}"
                    ))
                } else if theirs != plan {
                    Some(
                        "shard 0 runs another scenario (cases, parameters, seed or repeats differ)"
                            .into(),
                    )
                } else if self.lock().joined.contains_key(&index) {
                    Some(format!("shard {index} has already joined"))
                } else {
                    None
                };
                if let Some(why) = refusal {
                    let _ = send(&mut w, &Msg::Refused(why.clone()));
                    // It will not come back: the run cannot be whole, so say so at once
                    // rather than at the barrier's timeout.
                    if index > 0 && index < self.count {
                        self.lock().gone.insert(index, format!("refused: {why}"));
                        self.changed.notify_all();
                    }
                    return;
                }
                index
            }
            Ok(_) => return,
            Err(why) => {
                if misused(&why) {
                    wirebench_net::ban::strike_peer(&w);
                }
                return;
            }
        };
        if send(&mut w, &Msg::Welcome).is_err() {
            return;
        }
        if let Ok(writer) = w.try_clone() {
            self.lock().joined.insert(index, writer);
            self.changed.notify_all();
        }
        let why = loop {
            match recv(&mut r, None, &never) {
                Ok(Msg::Probe(_)) => {
                    if let Err(e) = send(&mut w, &Msg::Clock(unix_ns())) {
                        break e.to_string();
                    }
                }
                Ok(Msg::Ready(case, repeat)) => {
                    self.lock()
                        .ready
                        .entry((case, repeat))
                        .or_default()
                        .insert(index);
                    self.changed.notify_all();
                }
                Ok(other) => break format!("an unexpected message {other:?}"),
                Err(e) => break e,
            }
        };
        let mut st = self.lock();
        st.joined.remove(&index);
        st.gone.insert(index, why);
        self.changed.notify_all();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LeaderState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start(
        &self,
        case: usize,
        repeat: u32,
        lead: Duration,
        shutdown: &AtomicBool,
    ) -> Result<Start, String> {
        let deadline = Instant::now() + self.timeout;
        let mut st = self.lock();
        loop {
            if let Some((i, why)) = st.gone.iter().next() {
                return Err(format!("shard {i} left the barrier ({why})"));
            }
            let ready = st.ready.get(&(case, repeat)).map_or(0, BTreeSet::len);
            if ready as u32 + 1 >= self.count {
                break;
            }
            if shutdown.load(Ordering::SeqCst) {
                return Err("interrupted at the barrier".into());
            }
            if Instant::now() > deadline {
                let missing: Vec<String> = (1..self.count)
                    .filter(|i| !st.ready.get(&(case, repeat)).is_some_and(|s| s.contains(i)))
                    .map(|i| i.to_string())
                    .collect();
                return Err(format!(
                    "barrier: shard(s) {} did not reach case {case} within {}",
                    missing.join(", "),
                    humantime::format_duration(self.timeout)
                ));
            }
            st = self
                .changed
                .wait_timeout(st, Duration::from_millis(200))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        // Far enough ahead for the go to reach every shard and their generators to start.
        let mut go = unix_ns() + (lead + Duration::from_millis(300)).as_nanos() as i64;
        if !st.first_go
            && let Some(at) = self.start_at
        {
            let at = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()) as i64;
            go = go.max(at);
        }
        st.first_go = true;
        let mut failed = None;
        for (i, w) in st.joined.iter_mut() {
            if let Err(e) = send(w, &Msg::Go(case, repeat, go)) {
                failed.get_or_insert(format!("shard {i}: {e}"));
            }
        }
        st.ready.remove(&(case, repeat));
        drop(st);
        if let Some(e) = failed {
            return Err(format!("cannot tell every shard to start: {e}"));
        }
        let (t0, ahead) = to_monotonic(go);
        Ok(Start {
            t0_mono_ns: t0,
            unix_ns: go,
            method: "barrier".into(),
            margin_s: ahead - lead.as_secs_f64(),
            offset_s: Some(0.0),
            error_s: Some(0.0),
            unsynchronised: false,
        })
    }
}

/// Shards 1..N: connected to shard 0, their clock's offset from its clock measured.
struct Follower {
    r: BufReader<TcpStream>,
    w: TcpStream,
    /// This clock minus shard 0's, ns, and the most that can be off.
    offset_ns: i64,
    error_ns: i64,
    timeout: Duration,
}

/// Connects to shard 0's barrier, retrying every half second until `deadline`.
fn connect_until(
    addr: &str,
    deadline: Instant,
    opts: &ShardOptions,
    shutdown: &AtomicBool,
) -> Result<TcpStream, String> {
    loop {
        let attempt = addr
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
            .and_then(|a| {
                TcpStream::connect_timeout(&a, Duration::from_secs(2)).map_err(|e| e.to_string())
            });
        match attempt {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() > deadline => {
                return Err(format!(
                    "shard 0 not reached within {}: {e}",
                    humantime::format_duration(opts.barrier_timeout)
                ));
            }
            Err(_) if shutdown.load(Ordering::SeqCst) => {
                return Err("interrupted while waiting for shard 0".into());
            }
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

impl Follower {
    fn join(
        addr: &str,
        opts: &ShardOptions,
        plan: &str,
        shutdown: &AtomicBool,
    ) -> Result<Follower, ShardError> {
        let fail =
            |m: String| ShardError::Usage(format!("shard {}: barrier {addr}: {m}", opts.index));
        let deadline = Instant::now() + opts.barrier_timeout;
        let hello = Msg::Hello {
            index: opts.index,
            count: opts.count,
            wirebench: env!("CARGO_PKG_VERSION").into(),
            plan: plan.into(),
        };
        // Shard 0 may not be up, nor its name in DNS, for a while, and it closes
        // connections beyond its limit (strangers may hold its port): retry until the
        // timeout.
        let (mut r, mut w, answer_by) = loop {
            let stream = connect_until(addr, deadline, opts, shutdown).map_err(fail)?;
            let _ = stream.set_nodelay(true);
            let mut w = stream.try_clone().map_err(|e| fail(e.to_string()))?;
            let mut r = BufReader::new(stream);
            let answer_by = Some(Instant::now() + Duration::from_secs(30));
            let answer = send(&mut w, &hello)
                .map_err(|e| e.to_string())
                .and_then(|()| recv(&mut r, answer_by, shutdown));
            match answer {
                Ok(Msg::Welcome) => break (r, w, answer_by),
                Ok(Msg::Refused(why)) => return Err(fail(format!("refused by shard 0: {why}"))),
                Ok(other) => return Err(fail(format!("an unexpected answer {other:?}"))),
                Err(e)
                    if e.starts_with("the connection closed")
                        || e.contains("reset")
                        || e.contains("Broken pipe") =>
                {
                    if Instant::now() > deadline {
                        return Err(fail(format!("shard 0 closed the connection: {e}")));
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => return Err(fail(e)),
            }
        };
        // Cristian's method: the probe with the shortest round trip bounds the error best.
        let mut best: Option<(i64, i64)> = None;
        for _ in 0..8 {
            let t1 = unix_ns();
            send(&mut w, &Msg::Probe(t1)).map_err(|e| fail(e.to_string()))?;
            let Msg::Clock(theirs) = recv(&mut r, answer_by, shutdown).map_err(fail)? else {
                return Err(fail("an unexpected answer to a clock probe".into()));
            };
            let t2 = unix_ns();
            let (offset, error) = ((t1 + t2) / 2 - theirs, (t2 - t1) / 2);
            if best.is_none_or(|(_, e)| error < e) {
                best = Some((offset, error));
            }
        }
        let (offset_ns, error_ns) = best.unwrap_or_default();
        Ok(Follower {
            r,
            w,
            offset_ns,
            error_ns,
            timeout: opts.barrier_timeout,
        })
    }

    fn start(
        &mut self,
        case: usize,
        repeat: u32,
        lead: Duration,
        shutdown: &AtomicBool,
    ) -> Result<Start, String> {
        send(&mut self.w, &Msg::Ready(case, repeat)).map_err(|e| format!("barrier: {e}"))?;
        let deadline = Some(Instant::now() + self.timeout + Duration::from_secs(30));
        let go = match recv(&mut self.r, deadline, shutdown) {
            Ok(Msg::Go(c, r, go)) if (c, r) == (case, repeat) => go,
            Ok(other) => return Err(format!("barrier: an unexpected message {other:?}")),
            Err(e) => {
                return Err(format!(
                    "barrier: waiting for shard 0 to start case {case}: {e}"
                ));
            }
        };
        // Shard 0's instant on this clock.
        let local = go + self.offset_ns;
        let (t0, ahead) = to_monotonic(local);
        Ok(Start {
            t0_mono_ns: t0,
            unix_ns: local,
            method: "barrier".into(),
            margin_s: ahead - lead.as_secs_f64(),
            offset_s: Some(self.offset_ns as f64 / 1e9),
            error_s: Some(self.error_ns as f64 / 1e9),
            unsynchronised: false,
        })
    }
}

/// A stable fingerprint of a run's plan (FNV-1a over its JSON): shards must share it.
pub fn fingerprint(plan: &[serde_json::Value], seed: u64, repeat: u32) -> String {
    let text = serde_json::json!({"plan": plan, "seed": seed, "repeat": repeat}).to_string();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn opts(index: u32, count: u32, port: u16) -> ShardOptions {
        ShardOptions {
            index,
            count,
            barrier: Some(format!("127.0.0.1:{port}")),
            start_at: None,
            barrier_timeout: Duration::from_secs(20),
        }
    }

    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap()
    }

    #[test]
    fn shard_specs_parse_and_bad_ones_say_why() {
        assert_eq!(parse_shard("0/4"), Ok((0, 4)));
        assert_eq!(parse_shard("3/4"), Ok((3, 4)));
        assert!(parse_shard("4/4").unwrap_err().contains("below the count"));
        assert!(parse_shard("1/0").is_err());
        assert!(parse_shard("x").unwrap_err().contains("I/N"));
    }

    /// Three shards meet at the barrier for two cases: each gets the same start, on the
    /// same clock here, within the barrier's own error bound.
    #[test]
    fn shards_meet_at_the_barrier_and_agree_on_each_start() {
        let port = free_port();
        let stop = AtomicBool::new(false);
        let leader = Aligner::new(&opts(0, 3, port), Vec::new(), "p", &stop).unwrap();
        let starts: Vec<Vec<Start>> = std::thread::scope(|s| {
            let mut hs = Vec::new();
            for i in 1..3 {
                let stop = &stop;
                hs.push(s.spawn(move || {
                    let a = Aligner::new(&opts(i, 3, port), Vec::new(), "p", stop).unwrap();
                    (1..=2)
                        .map(|case| a.start(case, 1, Duration::from_millis(50), stop).unwrap())
                        .collect::<Vec<_>>()
                }));
            }
            let mine: Vec<Start> = (1..=2)
                .map(|case| {
                    leader
                        .start(case, 1, Duration::from_millis(50), &stop)
                        .unwrap()
                })
                .collect();
            let mut all = vec![mine];
            all.extend(hs.into_iter().map(|h| h.join().unwrap()));
            all
        });
        for case in 0..2 {
            let t0s: Vec<u64> = starts.iter().map(|s| s[case].t0_mono_ns).collect();
            let spread = t0s.iter().max().unwrap() - t0s.iter().min().unwrap();
            let bound: f64 = starts.iter().map(|s| s[case].error_s.unwrap()).sum();
            assert!(
                (spread as f64) <= bound * 1e9 + 1e6,
                "case {case}: starts {t0s:?} spread {spread} ns, error bound {bound} s"
            );
            assert!(starts.iter().all(|s| s[case].margin_s > 0.0));
        }
        assert_eq!(leader.starts().len(), 2);
    }

    #[test]
    fn a_shard_of_another_run_is_refused_with_the_reason() {
        let port = free_port();
        let stop = AtomicBool::new(false);
        let _leader = Aligner::new(&opts(0, 2, port), Vec::new(), "plan-a", &stop).unwrap();
        let err = Aligner::new(&opts(1, 2, port), Vec::new(), "plan-b", &stop)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("another scenario"), "{err}");
        let err = Aligner::new(&opts(1, 3, port), Vec::new(), "plan-a", &stop)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("2 shards, not 3"), "{err}");
    }

    #[test]
    fn the_leader_gives_up_on_a_missing_shard_and_names_it() {
        let port = free_port();
        let stop = AtomicBool::new(false);
        let mut o = opts(0, 2, port);
        o.barrier_timeout = Duration::from_millis(600);
        let leader = Aligner::new(&o, Vec::new(), "p", &stop).unwrap();
        let err = leader
            .start(1, 1, Duration::from_millis(10), &stop)
            .unwrap_err();
        assert!(err.contains("shard(s) 1 did not reach case 1"), "{err}");
    }

    /// Strangers holding more connections open than shard 0 serves do not keep a real
    /// shard from joining (dropping every connection beyond the limit for as long as the
    /// strangers stay, 30 s each, would keep it out), nor does their garbage stop the
    /// run.
    #[test]
    fn strangers_at_the_barrier_do_not_keep_a_shard_out() {
        let port = free_port();
        let stop = AtomicBool::new(false);
        let leader = Aligner::new(&opts(0, 2, port), Vec::new(), "p", &stop).unwrap();
        let mut strangers: Vec<TcpStream> = (0..24)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        // And garbage on a few more.
        for _ in 0..3 {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let _ = s.write_all(b"\x16\x03\x01 not json\n");
            strangers.push(s);
        }
        std::thread::sleep(Duration::from_millis(300));
        let t0 = Instant::now();
        std::thread::scope(|s| {
            let stop = &stop;
            let follower = s.spawn(move || {
                let a = Aligner::new(&opts(1, 2, port), Vec::new(), "p", stop)?;
                a.start(1, 1, Duration::from_millis(50), stop)
                    .map_err(ShardError::Usage)
            });
            leader.start(1, 1, Duration::from_millis(50), stop).unwrap();
            follower.join().unwrap().unwrap();
        });
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        drop(strangers);
    }

    /// A peer that trickles a line without end in pieces, each cut short by the read
    /// timeout, is refused at 64 KiB instead of growing the buffer.
    #[test]
    fn an_endless_line_is_refused_however_slowly_it_comes() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let writer = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            for _ in 0..4 {
                if s.write_all(&[b'x'; 30_000]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        let (stream, _) = listener.accept().unwrap();
        let mut r = BufReader::new(stream);
        let err = recv(&mut r, None, &AtomicBool::new(false)).unwrap_err();
        assert!(err.contains("over 64 KiB"), "{err}");
        writer.join().unwrap();
    }

    /// `--shard 0/1`: no one to wait for; a later case is not late for a start long past.
    #[test]
    fn a_shard_alone_starts_each_case_when_ready() {
        let o = ShardOptions {
            index: 0,
            count: 1,
            barrier: None,
            start_at: None,
            barrier_timeout: Duration::from_secs(1),
        };
        let stop = AtomicBool::new(false);
        let a = Aligner::new(&o, Vec::new(), "p", &stop).unwrap();
        a.start(1, 1, Duration::from_millis(10), &stop).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let s = a.start(2, 1, Duration::from_millis(10), &stop).unwrap();
        assert!(s.margin_s >= 0.0, "{s:?}");
        let ahead = s.t0_mono_ns as i64 - monotonic_ns() as i64;
        assert!(ahead > 0 && ahead <= 10_000_000, "{ahead} ns ahead");
    }

    #[test]
    fn start_at_gives_later_cases_their_slots() {
        let first = SystemTime::now() + Duration::from_secs(5);
        let o = ShardOptions {
            index: 1,
            count: 2,
            barrier: None,
            start_at: Some(first),
            barrier_timeout: Duration::from_secs(1),
        };
        let slots = vec![
            ((1, 1), Duration::from_secs(20)),
            ((2, 1), Duration::from_secs(30)),
        ];
        let a = Aligner::new(&o, slots, "p", &AtomicBool::new(false)).unwrap();
        let stop = AtomicBool::new(false);
        let s1 = a.start(1, 1, Duration::ZERO, &stop).unwrap();
        let s2 = a.start(2, 1, Duration::ZERO, &stop).unwrap();
        assert_eq!(s2.unix_ns - s1.unix_ns, 20_000_000_000);
        assert!((s1.margin_s - 5.0).abs() < 0.5, "{}", s1.margin_s);
        let past = ShardOptions {
            start_at: Some(SystemTime::now() - Duration::from_secs(1)),
            ..o
        };
        let err = Aligner::new(&past, Vec::new(), "p", &stop)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("in the past"), "{err}");
    }
}
