//! The blocking driver: std threads and sockets around one [`Engine`] behind a mutex.
//!
//! Threads:
//! - per remote domain, a component thread: connects to the local XMPP server's
//!   component port, runs the XEP-0114 handshake ([`ComponentConn`]), then reads
//!   stanzas into the engine; with a writer thread that writes the engine's deliveries
//!   for that domain and confirms them once `write` has returned;
//! - an acceptor (unless `dial = "local"`), refusing any source address but the peer's
//!   and banning a stranger that keeps trying ([`wirebench_net::ban`]);
//! - a dialer (unless `dial = "peer"`), with exponential backoff;
//! - per link connection, a reader and a writer. Only one link connection is current;
//!   a newer one replaces it, except during a simultaneous open (connections of opposite
//!   direction within [`COLLISION_WINDOW`]) where both ends keep the connection dialled
//!   by the lower IP address (on one host: by the gateway with the lower listen port).
//!
//! Every blocking call has a short timeout so that the threads notice shutdown and
//! superseded connections; the engine is only touched under the mutex, and every change
//! is followed by `notify_all` on the one condition variable.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::{Config, ConfigError, Dial, LogLevel};
use wirebench_engine::Engine as _;
use wirebench_net::sock;
use wirebench_x2x::component::{ComponentConn, ComponentEvent};
use wirebench_x2x::engine::{Engine, EngineConfig, EngineStats, Event};

/// How often blocked threads look at the shutdown flag.
const TICK: Duration = Duration::from_millis(100);
/// Two link connections of opposite direction opened this close together are a
/// simultaneous open, not a replacement.
pub const COLLISION_WINDOW: Duration = Duration::from_secs(10);
/// Deliveries written to the component socket in one `write`.
const COMPONENT_BATCH: usize = 64 * 1024;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    // Not a `source`: the cause is in the message, so chains printed with `{:#}` do
    // not repeat it.
    #[error("cannot listen on {addr}: {error}")]
    Listen { addr: SocketAddr, error: io::Error },
    #[error("cannot start a thread: {0}")]
    Thread(io::Error),
    #[error("cannot open the log file {}: {error}", path.display())]
    LogFile {
        path: std::path::PathBuf,
        error: io::Error,
    },
}

/// Counters of a gateway's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Stanzas sent to the peer for the first time.
    pub stanzas_out: u64,
    /// New stanzas received from the peer.
    pub stanzas_in: u64,
    /// Link bytes (compressed, as written to / read from TCP).
    pub link_bytes_out: u64,
    pub link_bytes_in: u64,
    /// Stanzas sent again on a new connection.
    pub resent: u64,
    /// Stanzas from the peer dropped as already received.
    pub duplicates_dropped: u64,
    /// Stanzas written to the local server's component socket (including error replies).
    pub delivered: u64,
    /// Messages and iqs refused because the queue was full (each got an error back).
    pub rejected_queue_full: u64,
    /// Presence dropped because the queue was full.
    pub presence_dropped: u64,
    /// Stanzas refused or dropped by validation (domains, size, not a stanza), both ways.
    pub rejected_invalid: u64,
    /// Incoming connections closed at once because of their source address.
    pub refused_connections: u64,
    /// Link connections established (dialled or accepted, and kept).
    pub link_connections: u64,
    /// Link connections after the first.
    pub reconnects: u64,
    /// Link connections that ended in an error (peer data, I/O, timeout).
    pub link_errors: u64,
    /// Link connections whose SYN carried data the other end accepted (TCP_INFO).
    pub tfo_used: u64,
    /// Link connections that negotiated TCP timestamps (TCP_INFO), counted by the end that
    /// received data on them: 12 bytes more per segment, the price that matters on slow
    /// links (docs/x2x.md, "TCP timestamps").
    pub timestamps_used: u64,
    /// `net.ipv4.tcp_fastopen` at start, if readable.
    pub tfo_sysctl: Option<u32>,
    /// Component connections that completed the handshake.
    pub component_connections: u64,
    /// Component connections that failed or were closed by the server.
    pub component_errors: u64,
    /// All engine counters.
    pub engine: EngineStats,
}

struct LinkSlot {
    cid: u64,
    stream: TcpStream,
    dialled: bool,
    /// The IP address of the connection's initiator (for the collision rule).
    initiator: IpAddr,
    since: Instant,
}

struct CompSlot {
    domain: String,
    cid: u64,
    /// Present while a handshaken connection is up.
    stream: Option<TcpStream>,
}

struct State {
    engine: Engine,
    link: Option<LinkSlot>,
    next_id: u64,
    comps: Vec<CompSlot>,
    stats: Stats,
    /// A link connection got its first bytes since the dialer last looked.
    link_confirmed: bool,
    closing: bool,
}

impl State {
    fn link_is(&self, cid: u64) -> bool {
        self.link.as_ref().is_some_and(|l| l.cid == cid)
    }
    fn comp_is(&self, domain: &str, cid: u64) -> bool {
        self.comps
            .iter()
            .any(|c| c.domain == domain && c.cid == cid && c.stream.is_some())
    }
}

struct Shared {
    cfg: Config,
    start: Instant,
    stop: AtomicBool,
    st: Mutex<State>,
    cv: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// `cfg.log_file`, open; stderr when `None`.
    log_out: Option<Mutex<std::fs::File>>,
}

impl Shared {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking thread must not take the whole gateway down with it.
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, g: MutexGuard<'a, State>, d: Duration) -> MutexGuard<'a, State> {
        match self.cv.wait_timeout(g, d) {
            Ok((g, _)) => g,
            Err(p) => p.into_inner().0,
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn log(&self, level: LogLevel, msg: impl AsRef<str>) {
        if level > self.cfg.log {
            return;
        }
        match &self.log_out {
            Some(f) => {
                let t = self.start.elapsed().as_secs_f64();
                let line = format!("{t:10.3} x2x {}: {}\n", self.cfg.name, msg.as_ref());
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                // One write per line, so lines of concurrent threads stay whole; a log
                // that cannot be written must not stop the link.
                let _ = f.write_all(line.as_bytes());
            }
            None => eprintln!("x2x {}: {}", self.cfg.name, msg.as_ref()),
        }
    }

    fn spawn(
        self: &Arc<Self>,
        name: &str,
        f: impl FnOnce(Arc<Shared>) + Send + 'static,
    ) -> io::Result<()> {
        let me = self.clone();
        let h = std::thread::Builder::new()
            .name(format!("x2x-{name}"))
            .spawn(move || f(me))?;
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        threads.retain(|t| !t.is_finished());
        threads.push(h);
        Ok(())
    }

    /// Logs engine events; true if the link connection must close.
    fn drain_events(&self, st: &mut State) -> bool {
        let mut failed = false;
        while let Some(e) = st.engine.poll_event() {
            match e {
                Event::LinkFailed(e) => {
                    failed = true;
                    self.log(LogLevel::Warn, format!("closing the link connection: {e}"));
                }
                Event::PeerClosed => {
                    failed = true;
                    self.log(LogLevel::Info, "the peer closed the link stream");
                }
                Event::Rejected {
                    reason,
                    kind,
                    from,
                    to,
                    bounced,
                    ..
                } => self.log(
                    LogLevel::Info,
                    format!(
                        "refused {} from {} to {}: {reason}{}",
                        kind.map_or("element", |k| k.name()),
                        from.as_deref().unwrap_or("?"),
                        to.as_deref().unwrap_or("?"),
                        if bounced { " (error returned)" } else { "" }
                    ),
                ),
                Event::InboundDropped {
                    reason,
                    from,
                    to,
                    bounced,
                } => self.log(
                    LogLevel::Warn,
                    format!(
                        "dropped a stanza from the peer, from {} to {}: {reason}{}",
                        from.as_deref().unwrap_or("?"),
                        to.as_deref().unwrap_or("?"),
                        if bounced { " (error returned)" } else { "" }
                    ),
                ),
                Event::PeerRestarted { old, new } => self.log(
                    LogLevel::Warn,
                    format!(
                        "the peer gateway restarted (instance {old:x} -> {new:x}): numbering \
                         starts again; what it had not sent is lost with it"
                    ),
                ),
            }
        }
        failed
    }

    /// Ends link connection `cid` if it is still current.
    fn link_broken(&self, st: &mut State, cid: u64, why: &str, error: bool) {
        if !st.link_is(cid) {
            return;
        }
        if let Some(slot) = st.link.take() {
            let _ = slot.stream.shutdown(Shutdown::Both);
        }
        st.engine.link_down(self.now());
        if error {
            st.stats.link_errors += 1;
        }
        self.log(
            if error {
                LogLevel::Warn
            } else {
                LogLevel::Info
            },
            format!(
                "link connection down ({why}); {} stanzas wait for the peer's ack",
                st.engine.unacked()
            ),
        );
        self.cv.notify_all();
    }
}

/// A running gateway. Dropping it stops it.
pub struct Gateway {
    shared: Arc<Shared>,
    listen_addr: Option<SocketAddr>,
}

impl Gateway {
    /// Validates `config`, binds the listener (if any) and starts the threads.
    pub fn start(config: Config) -> Result<Gateway, Error> {
        config.validate("configuration")?;
        let instance = instance_id();
        let local: Vec<&str> = config.local_domains.iter().map(String::as_str).collect();
        let remote: Vec<&str> = config.remote_domains.iter().map(String::as_str).collect();
        let mut ec = EngineConfig::new(&local, &remote, instance);
        ec.compression = config.link.compression;
        ec.max_stanza = config.limits.max_stanza;
        ec.queue_stanzas = config.limits.queue_stanzas;
        ec.queue_bytes = config.limits.queue_bytes;
        ec.ack_every = config.timing.ack_every;
        ec.ack_delay_ns = u64::try_from(config.timing.ack_delay.as_nanos()).unwrap_or(u64::MAX);
        ec.reply_wait_ns = u64::try_from(config.timing.reply_wait.as_nanos()).unwrap_or(u64::MAX);
        let engine = Engine::new(ec);
        let listens = config.link.dial != Dial::Local;
        let dials = config.link.dial != Dial::Peer;
        let mut listener = None;
        let mut listen_addr = None;
        if listens && let Some(addr) = config.link.listen {
            let (l, _) = sock::listen(addr, config.link.tfo)
                .map_err(|error| Error::Listen { addr, error })?;
            listen_addr = l.local_addr().ok();
            listener = Some(l);
        }
        let log_out = match &config.log_file {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|error| Error::LogFile {
                        path: path.clone(),
                        error,
                    })?,
            )),
            None => None,
        };
        let tfo_sysctl = sock::tfo_sysctl();
        let comps = config
            .remote_domains
            .iter()
            .map(|d| CompSlot {
                domain: d.to_ascii_lowercase(),
                cid: 0,
                stream: None,
            })
            .collect();
        let shared = Arc::new(Shared {
            start: Instant::now(),
            stop: AtomicBool::new(false),
            st: Mutex::new(State {
                engine,
                link: None,
                next_id: 1,
                comps,
                stats: Stats {
                    tfo_sysctl,
                    ..Stats::default()
                },
                link_confirmed: false,
                closing: false,
            }),
            cv: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            log_out,
            cfg: config,
        });
        let cfg = &shared.cfg;
        shared.log(
            LogLevel::Info,
            format!(
                "instance {instance:x}: {} <-> {} via peer {} (dial {}, listen {}, {}, TFO {})",
                cfg.local_domains.join(","),
                cfg.remote_domains.join(","),
                cfg.link.peer,
                cfg.link.dial.name(),
                listen_addr.map_or("-".to_string(), |a| a.to_string()),
                cfg.link.compression.name(),
                if cfg.link.tfo { "on" } else { "off" },
            ),
        );
        if cfg.link.tfo
            && let Some(problem) = sock::tfo_sysctl_problem(tfo_sysctl, dials, listens)
        {
            shared.log(LogLevel::Warn, problem);
        }
        let gw = Gateway {
            shared: shared.clone(),
            listen_addr,
        };
        let started = (|| -> io::Result<()> {
            for d in &shared.cfg.remote_domains {
                let d = d.to_ascii_lowercase();
                shared.spawn(&format!("comp-{d}"), move |s| component_loop(&s, &d))?;
            }
            if let Some(l) = listener {
                shared.spawn("accept", move |s| accept_loop(&s, l))?;
            }
            if dials {
                shared.spawn("dial", |s| dial_loop(&s))?;
            }
            Ok(())
        })();
        if let Err(e) = started {
            gw.shutdown();
            return Err(Error::Thread(e));
        }
        Ok(gw)
    }

    /// The bound listen address (useful with port 0).
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        self.listen_addr
    }

    pub fn stats(&self) -> Stats {
        stats_of(&self.shared.lock())
    }

    pub fn link_is_up(&self) -> bool {
        self.shared.lock().link.is_some()
    }

    /// Component connections that completed the handshake and are up.
    pub fn components_ready(&self) -> usize {
        self.shared
            .lock()
            .comps
            .iter()
            .filter(|c| c.stream.is_some())
            .count()
    }

    /// Stanzas waiting for the peer's acknowledgement.
    pub fn unacked(&self) -> usize {
        self.shared.lock().engine.unacked()
    }

    /// Test and operations hook: breaks the current link connection as a network
    /// failure would (no `</stream:stream>`). True if there was one.
    pub fn break_link(&self) -> bool {
        let mut st = self.shared.lock();
        let Some(cid) = st.link.as_ref().map(|l| l.cid) else {
            return false;
        };
        self.shared
            .link_broken(&mut st, cid, "broken on request", false);
        true
    }

    /// Sends `</stream:stream>` on the link and the component connections, stops every
    /// thread and returns the final counters.
    pub fn stop(self) -> Stats {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&self) {
        let s = &self.shared;
        {
            let mut st = s.lock();
            st.closing = true;
            st.engine.close();
            s.cv.notify_all();
        }
        // Give the link writer a moment to send the stream close (XEP-0361 §4.1).
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            {
                let st = s.lock();
                if st.link.is_none() || !st.engine.wants_transmit() {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        s.stop.store(true, Ordering::SeqCst);
        {
            let mut st = s.lock();
            if let Some(l) = st.link.take() {
                let _ = l.stream.shutdown(Shutdown::Both);
            }
            for c in &mut st.comps {
                if let Some(sk) = c.stream.take() {
                    // Best effort, and never long while holding the lock.
                    let _ = sk.set_write_timeout(Some(Duration::from_millis(50)));
                    let _ = (&sk).write_all(wirebench_x2x::xml::STREAM_CLOSE);
                    let _ = sk.shutdown(Shutdown::Both);
                }
            }
            s.cv.notify_all();
        }
        loop {
            let h = s.threads.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let Some(h) = h else { break };
            let _ = h.join();
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if !self.shared.stopping() {
            self.shutdown();
        }
    }
}

fn stats_of(st: &State) -> Stats {
    let e = st.engine.stats();
    Stats {
        stanzas_out: e.stanzas_out,
        stanzas_in: e.stanzas_in,
        link_bytes_out: e.link_bytes_out,
        link_bytes_in: e.link_bytes_in,
        resent: e.resent,
        duplicates_dropped: e.duplicates_dropped,
        delivered: e.delivered,
        rejected_queue_full: e.rejected_queue_full,
        presence_dropped: e.presence_dropped,
        rejected_invalid: e.rejected_invalid + e.inbound_invalid,
        reconnects: st.stats.link_connections.saturating_sub(1),
        engine: e,
        ..st.stats
    }
}

/// Serves the link and the component connections until `shutdown` is set, reconnecting
/// whatever breaks; returns the final counters. The entry point for a CLI.
pub fn run(config: Config, shutdown: Arc<AtomicBool>) -> Result<Stats, Error> {
    let gw = Gateway::start(config)?;
    while !shutdown.load(Ordering::Relaxed) {
        std::thread::sleep(TICK);
    }
    Ok(gw.stop())
}

/// A random process identity for the resend marker, without a random-number crate:
/// std's hasher keys are random per process.
fn instance_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

// ----- link connections -----

/// Makes `stream` the current link connection unless the collision rule keeps the
/// current one. Returns whether it was installed.
fn install_link(s: &Arc<Shared>, stream: TcpStream, dialled: bool, initiator: IpAddr) -> bool {
    let mut st = s.lock();
    if s.stopping() || st.closing {
        return false;
    }
    if let Some(cur) = &st.link {
        let collision = cur.dialled != dialled && cur.since.elapsed() < COLLISION_WINDOW;
        if collision && !new_wins(&s.cfg, cur, dialled, initiator) {
            s.log(
                LogLevel::Info,
                format!(
                    "simultaneous open: keeping the connection dialled by {}, closing the other",
                    cur.initiator
                ),
            );
            let _ = stream.shutdown(Shutdown::Both);
            return false;
        }
        let cid = cur.cid;
        s.link_broken(&mut st, cid, "replaced by a newer connection", false);
    }
    if let Err(e) = sock::tune_link(&stream, s.cfg.timing.user_timeout) {
        s.log(
            LogLevel::Warn,
            format!("cannot set link socket options: {e}"),
        );
    }
    let (Ok(rd), Ok(wr), Ok(keep)) = (stream.try_clone(), stream.try_clone(), stream.try_clone())
    else {
        s.log(LogLevel::Warn, "cannot clone the link socket");
        return false;
    };
    let cid = st.next_id;
    st.next_id += 1;
    st.link = Some(LinkSlot {
        cid,
        stream: keep,
        dialled,
        initiator,
        since: Instant::now(),
    });
    st.stats.link_connections += 1;
    st.engine.link_up(s.now());
    s.log(
        LogLevel::Info,
        format!(
            "link connection up ({} {}); sending the marker and {} unacknowledged stanzas",
            if dialled {
                "dialled to"
            } else {
                "accepted from"
            },
            if dialled {
                s.cfg.link.peer.to_string()
            } else {
                initiator.to_string()
            },
            st.engine.unacked()
        ),
    );
    s.cv.notify_all();
    drop(st);
    let ok = s
        .spawn(&format!("link-w{cid}"), move |s| {
            link_writer(&s, cid, wr, dialled)
        })
        .and_then(|()| {
            s.spawn(&format!("link-r{cid}"), move |s| {
                link_reader(&s, cid, rd, dialled)
            })
        });
    if let Err(e) = ok {
        let mut st = s.lock();
        s.link_broken(
            &mut st,
            cid,
            &format!("cannot start its threads: {e}"),
            true,
        );
        return false;
    }
    true
}

/// The collision rule: both ends keep the connection dialled by the lower IP address,
/// or, when both gateways share an address, by the one with the lower listen port.
fn new_wins(cfg: &Config, cur: &LinkSlot, new_dialled: bool, new_initiator: IpAddr) -> bool {
    let (ours, theirs) = if new_dialled {
        (new_initiator, cur.initiator)
    } else {
        (cur.initiator, new_initiator)
    };
    let we_win = if ours != theirs {
        ours < theirs
    } else {
        cfg.link.listen.map_or(0, |l| l.port()) < cfg.link.peer.port()
    };
    // The new connection survives if it is the one the winner dialled.
    we_win == new_dialled
}

fn link_writer(s: &Arc<Shared>, cid: u64, mut stream: TcpStream, dialled: bool) {
    let _ = stream.set_write_timeout(Some(TICK));
    let mut first = dialled;
    loop {
        let data = {
            let mut st = s.lock();
            loop {
                if s.stopping() || !st.link_is(cid) {
                    return;
                }
                let now = s.now();
                // The ack timer only sets flags: it has no error to report.
                let _ = st.engine.handle_timeout(now);
                let out = st.engine.poll_link_transmit();
                if s.drain_events(&mut st) {
                    s.link_broken(&mut st, cid, "engine error", true);
                    return;
                }
                if let Some(d) = out {
                    break d;
                }
                let wait = st.engine.poll_timeout().map_or(TICK, |t| {
                    Duration::from_nanos(t.saturating_sub(now)).min(TICK)
                });
                st = s.wait(st, wait.max(Duration::from_millis(1)));
            }
        };
        if let Err(e) = write_all(s, cid, &mut stream, &data) {
            let mut st = s.lock();
            s.link_broken(&mut st, cid, &format!("write failed: {e}"), true);
            return;
        }
        if std::mem::take(&mut first) {
            count_syn_data(s, cid, &stream);
        }
    }
}

/// On a dialled connection, after its first write (the one TFO puts in the SYN): waits
/// for the handshake, then counts whether the peer accepted the SYN's data. Waiting costs
/// nothing: until the handshake completes the kernel could not send more anyway.
fn count_syn_data(s: &Shared, cid: u64, stream: &TcpStream) {
    let deadline = Instant::now() + s.cfg.timing.connect_timeout;
    while !sock::established(stream) {
        if Instant::now() > deadline || s.stopping() || !s.lock().link_is(cid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if sock::syn_data_acked(stream) {
        s.lock().stats.tfo_used += 1;
        s.log(LogLevel::Info, "TCP Fast Open: our data rode in the SYN");
    }
}

/// `write_all` that keeps trying through send timeouts (a 2400 bit/s link drains
/// slowly) while the connection is current.
fn write_all(s: &Shared, cid: u64, stream: &mut TcpStream, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        match stream.write(data) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if s.stopping() || !s.lock().link_is(cid) {
                    return Err(io::Error::other("connection superseded"));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn link_reader(s: &Arc<Shared>, cid: u64, mut stream: TcpStream, dialled: bool) {
    let _ = stream.set_read_timeout(Some(TICK));
    let mut buf = vec![0u8; 16 * 1024];
    let since = Instant::now();
    let mut got_any = false;
    loop {
        {
            let mut st = s.lock();
            loop {
                if s.stopping() || !st.link_is(cid) {
                    return;
                }
                if st.engine.can_accept_link_input() {
                    break;
                }
                // Deliveries are backed up: leave the bytes in TCP (flow control).
                st = s.wait(st, TICK);
            }
        }
        match stream.read(&mut buf) {
            Ok(0) => {
                let mut st = s.lock();
                s.link_broken(&mut st, cid, "closed by the peer", false);
                return;
            }
            Ok(n) => {
                sock::delay_acks(&stream);
                let first = !got_any;
                got_any = true;
                // The writer counts dialled connections; here, accepted ones (the
                // peer's SYN carried data we accepted).
                let tfo = first && !dialled && sock::syn_data_acked(&stream);
                let timestamps = first && sock::timestamps_on(&stream);
                let mut st = s.lock();
                if !st.link_is(cid) {
                    return;
                }
                if first {
                    st.link_confirmed = true;
                    if timestamps {
                        st.stats.timestamps_used += 1;
                    }
                    if tfo {
                        st.stats.tfo_used += 1;
                        s.log(LogLevel::Info, "TCP Fast Open: data rode in the SYN");
                    }
                }
                let r = st.engine.handle_link_bytes(s.now(), &buf[..n]);
                let failed = s.drain_events(&mut st);
                if r.is_err() || failed {
                    let why = match r {
                        Err(e) => format!("bad data from the peer: {e}"),
                        Ok(()) => "stream closed by the peer".to_string(),
                    };
                    s.link_broken(&mut st, cid, &why, !why.starts_with("stream closed"));
                    return;
                }
                s.cv.notify_all();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                // The peer sends its marker the moment the connection is up: silence
                // means the connection (or its SYN) never got through.
                if !got_any && since.elapsed() > s.cfg.timing.connect_timeout {
                    let mut st = s.lock();
                    s.link_broken(&mut st, cid, "nothing received from the peer", true);
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let mut st = s.lock();
                s.link_broken(&mut st, cid, &format!("read failed: {e}"), true);
                return;
            }
        }
    }
}

/// Refusals of strangers' link connections, logged at most once per
/// [`REFUSAL_LOG_EVERY`]: a flood of connections must not become a flood of log lines
/// (the log may be a file on a small disk).
#[derive(Default)]
struct Refusals {
    last_logged: Option<Instant>,
    /// Refused since the last line, and the latest of them.
    unlogged: u64,
    latest: Option<SocketAddr>,
}

/// How often refusals of strangers' link connections are logged, at most.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(1);

impl Refusals {
    fn refused(&mut self, s: &Shared, from: SocketAddr, allowed: IpAddr) {
        self.unlogged += 1;
        self.latest = Some(from);
        self.flush(s, allowed);
    }

    /// Logs the refusals not logged yet, unless the last line was too recent.
    fn flush(&mut self, s: &Shared, allowed: IpAddr) {
        let due = self
            .last_logged
            .is_none_or(|t| t.elapsed() >= REFUSAL_LOG_EVERY);
        let Some(from) = self.latest else {
            return;
        };
        if self.unlogged == 0 || !due {
            return;
        }
        let line = if self.unlogged == 1 {
            format!("refused a link connection from {from}: only {allowed} is the peer")
        } else {
            format!(
                "refused {} link connections (the last from {from}): only {allowed} is the peer",
                self.unlogged
            )
        };
        s.log(LogLevel::Warn, line);
        self.unlogged = 0;
        self.last_logged = Some(Instant::now());
    }
}

fn accept_loop(s: &Arc<Shared>, listener: TcpListener) {
    let allowed = s.cfg.peer_source();
    let mut refusals = Refusals::default();
    // A stranger that keeps connecting is banned like any refused source
    // (wirebench_net::ban): its SYNs are then dropped in the kernel and cost the link
    // nothing. The peer is never struck, so it is never banned.
    let _bans = wirebench_net::ban::guard(&listener);
    while !s.stopping() {
        refusals.flush(s, allowed);
        match sock::wait_readable(&listener, TICK) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                s.log(LogLevel::Warn, format!("listener poll failed: {e}"));
                std::thread::sleep(TICK);
                continue;
            }
        }
        let (stream, from) = match listener.accept() {
            Ok(v) => v,
            Err(e) => {
                s.log(LogLevel::Warn, format!("accept failed: {e}"));
                // EMFILE leaves the listener readable: back off instead of spinning.
                std::thread::sleep(TICK);
                continue;
            }
        };
        if from.ip() != allowed {
            // XEP-0361 §4.2: the source address is the peer's identity; anything it may
            // have sent (even in its SYN) is discarded unread.
            let _ = stream.shutdown(Shutdown::Both);
            drop(stream);
            // Struck before it is counted, so that a count seen means a strike made.
            wirebench_net::ban::strike(from.ip());
            s.lock().stats.refused_connections += 1;
            refusals.refused(s, from, allowed);
            continue;
        }
        install_link(s, stream, false, from.ip());
    }
}

fn dial_loop(s: &Arc<Shared>) {
    let t = s.cfg.timing;
    let mut backoff = Duration::ZERO;
    let l = &s.cfg.link;
    if l.on_demand && l.tfo {
        prime_tfo_cookie(s);
    }
    loop {
        {
            let mut st = s.lock();
            loop {
                if s.stopping() {
                    return;
                }
                if st.link_confirmed {
                    st.link_confirmed = false;
                    backoff = Duration::ZERO;
                }
                // On demand: only once a stanza waits for the peer.
                let wanted = !s.cfg.link.on_demand || st.engine.unacked() > 0;
                if st.link.is_none() && !st.closing && wanted {
                    break;
                }
                st = s.wait(st, TICK);
            }
        }
        if !sleep_unless_stopped(s, backoff) {
            return;
        }
        backoff = (backoff * 2).clamp(t.reconnect_min, t.reconnect_max);
        if s.lock().link.is_some() {
            // The peer dialled us meanwhile.
            continue;
        }
        let l = &s.cfg.link;
        match sock::dial(l.peer, l.dial_from, l.tfo, t.connect_timeout, &|| {
            s.stopping()
        }) {
            Ok((stream, _)) => {
                let initiator = stream
                    .local_addr()
                    .map_or_else(|_| l.dial_from.unwrap_or(l.peer.ip()), |a| a.ip());
                install_link(s, stream, true, initiator);
            }
            Err(e) => s.log(
                LogLevel::Info,
                format!(
                    "cannot reach the peer at {}: {e} (retry in {backoff:?})",
                    l.peer
                ),
            ),
        }
    }
}

/// Gets a TFO cookie from the peer (RFC 7413 §4.1) before any stanza needs the link: a
/// connection that is opened and closed at once. Linux caches the cookie per peer address
/// in this network namespace, so the first connection made on demand carries its first
/// stanza in the SYN instead of paying a round trip for the handshake. Without this, only
/// re-connections would.
fn prime_tfo_cookie(s: &Arc<Shared>) {
    let l = &s.cfg.link;
    match sock::dial(
        l.peer,
        l.dial_from,
        true,
        s.cfg.timing.connect_timeout,
        &|| s.stopping(),
    ) {
        Ok((mut stream, _)) => {
            // With a cookie already cached the kernel holds the SYN until data comes: a
            // space (whitespace between stanzas is allowed, RFC 6120 §11.7) makes it go.
            // Without a cookie the handshake asks for one; either way wait until done.
            let _ = std::io::Write::write_all(&mut stream, b" ");
            let deadline = Instant::now() + s.cfg.timing.connect_timeout;
            while Instant::now() < deadline && !s.stopping() && !sock::established(&stream) {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = stream.shutdown(std::net::Shutdown::Both);
            s.log(LogLevel::Info, "TFO cookie primed with the peer");
        }
        Err(e) => s.log(
            LogLevel::Info,
            format!("cannot prime a TFO cookie with {}: {e}", l.peer),
        ),
    }
}

fn sleep_unless_stopped(s: &Shared, d: Duration) -> bool {
    let end = Instant::now() + d;
    loop {
        if s.stopping() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(TICK));
    }
}

// ----- component connections -----

fn component_loop(s: &Arc<Shared>, domain: &str) {
    let t = s.cfg.timing;
    let mut backoff = Duration::ZERO;
    let mut failures = 0u32;
    while !s.stopping() {
        if !sleep_unless_stopped(s, backoff) {
            return;
        }
        backoff = (backoff * 2).clamp(t.reconnect_min, t.reconnect_max);
        let stream = match TcpStream::connect_timeout(&s.cfg.component.address, t.connect_timeout) {
            Ok(st) => st,
            Err(e) => {
                // The XMPP server may just not be up yet: say so, but not every 100 ms.
                if failures < 3 || backoff == t.reconnect_max {
                    s.log(
                        LogLevel::Info,
                        format!(
                            "component {domain}: cannot connect to {}: {e}",
                            s.cfg.component.address
                        ),
                    );
                }
                failures += 1;
                continue;
            }
        };
        failures = 0;
        let (ready, r) = component_session(s, domain, stream);
        if ready {
            backoff = Duration::ZERO;
        }
        if let Err(why) = r
            && !s.stopping()
            && !s.lock().closing
        {
            s.lock().stats.component_errors += 1;
            s.log(LogLevel::Warn, format!("component {domain}: {why}"));
        }
    }
}

/// One component connection: handshake, then stanzas from the server into the engine
/// until it ends. Returns whether the handshake completed, and how it ended.
fn component_session(
    s: &Arc<Shared>,
    domain: &str,
    mut stream: TcpStream,
) -> (bool, Result<(), String>) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(TICK));
    let _ = stream.set_write_timeout(Some(s.cfg.timing.connect_timeout));
    let mut conn = ComponentConn::new(domain, &s.cfg.component.secret, s.cfg.limits.max_stanza);
    let mut buf = vec![0u8; 16 * 1024];
    let started = Instant::now();
    let mut cid = None;
    let result = 'session: loop {
        if let Some(out) = conn.poll_transmit()
            && let Err(e) = stream.write_all(&out)
        {
            break Err(format!("write failed: {e}"));
        }
        if s.stopping() {
            break Ok(());
        }
        match cid {
            Some(g) if !s.lock().comp_is(domain, g) => {
                break Err("the connection failed while writing to it".into());
            }
            None if started.elapsed() > s.cfg.timing.connect_timeout => {
                break Err("no handshake answer from the XMPP server".into());
            }
            _ => {}
        }
        let n = match stream.read(&mut buf) {
            Ok(0) => break Err("closed by the XMPP server".into()),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => break Err(format!("read failed: {e}")),
        };
        if let Err(e) = conn.handle_input(&buf[..n]) {
            break Err(e.to_string());
        }
        while let Some(ev) = conn.poll_event() {
            match ev {
                ComponentEvent::Ready => {
                    let (Ok(w), Ok(keep)) = (stream.try_clone(), stream.try_clone()) else {
                        break 'session Err("cannot clone the component socket".into());
                    };
                    let g = {
                        let mut st = s.lock();
                        let g = st.next_id;
                        st.next_id += 1;
                        st.stats.component_connections += 1;
                        if let Some(c) = st.comps.iter_mut().find(|c| c.domain == domain) {
                            c.cid = g;
                            c.stream = Some(keep);
                        }
                        s.cv.notify_all();
                        g
                    };
                    cid = Some(g);
                    s.log(
                        LogLevel::Info,
                        format!(
                            "component {domain} connected to {}",
                            s.cfg.component.address
                        ),
                    );
                    let d = domain.to_string();
                    if let Err(e) = s.spawn(&format!("comp-w-{domain}"), move |s| {
                        component_writer(&s, &d, g, w)
                    }) {
                        break 'session Err(format!("cannot start the writer thread: {e}"));
                    }
                }
                ComponentEvent::Stanza(raw) => {
                    let mut st = s.lock();
                    st.engine.enqueue_outbound(&raw);
                    s.drain_events(&mut st);
                    s.cv.notify_all();
                }
            }
        }
    };
    // Take the slot down so the writer stops; deliveries wait for the next session.
    {
        let mut st = s.lock();
        if let Some(c) = st.comps.iter_mut().find(|c| c.domain == domain)
            && cid == Some(c.cid)
        {
            c.stream = None;
        }
        s.cv.notify_all();
    }
    let _ = stream.shutdown(Shutdown::Both);
    (cid.is_some(), result)
}

fn component_writer(s: &Arc<Shared>, domain: &str, cid: u64, mut stream: TcpStream) {
    loop {
        let batch = {
            let mut st = s.lock();
            loop {
                if s.stopping() || !st.comp_is(domain, cid) {
                    return;
                }
                let mut batch = Vec::new();
                let mut size = 0;
                while size < COMPONENT_BATCH {
                    let Some(d) = st.engine.poll_delivery(domain) else {
                        break;
                    };
                    size += d.bytes.len();
                    batch.push(d);
                }
                if !batch.is_empty() {
                    break batch;
                }
                st = s.wait(st, TICK);
            }
        };
        let bytes: Vec<u8> = batch.iter().flat_map(|d| d.bytes.iter().copied()).collect();
        let r = stream.write_all(&bytes);
        let mut st = s.lock();
        match r {
            Ok(()) => {
                let now = s.now();
                for d in &batch {
                    st.engine.delivery_done(now, d);
                }
                s.drain_events(&mut st);
                s.cv.notify_all();
            }
            Err(e) => {
                // Not written, or only partly (the server then discards the truncated
                // stanza with the connection): written again on the next connection.
                for d in batch.into_iter().rev() {
                    st.engine.delivery_failed(d);
                }
                if let Some(c) = st
                    .comps
                    .iter_mut()
                    .find(|c| c.domain == domain && c.cid == cid)
                    && let Some(sk) = c.stream.take()
                {
                    let _ = sk.shutdown(Shutdown::Both);
                }
                s.log(
                    LogLevel::Warn,
                    format!("component {domain}: write failed: {e}"),
                );
                s.cv.notify_all();
                return;
            }
        }
    }
}
