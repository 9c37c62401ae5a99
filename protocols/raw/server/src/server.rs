//! The reference server behind `wirebench serve` (and embedded in `wirebench run`).
//!
//! Like Soap-Stone's server it sits on a control port and starts, per client request, a
//! data listener with the behaviour the workload needs (see `docs/protocols/control.md`).
//! It never exits because of a client: every connection has its own thread, its own
//! bounded buffers and its own errors; garbage closes only the connection that sent it.
//!
//! Threads rather than an event loop: a measurement connection gets a blocked `recv`
//! woken directly by the kernel, which is what keeps its added latency at sockperf's level.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wirebench_model::clock::monotonic_ns;
use wirebench_net::cap::LogLimit;
use wirebench_net::sock::{self, would_block};
use wirebench_net::timing::sleep_until_ns;
use wirebench_raw::control::{self, Behaviour, LineBuffer, Open, Reply, Request, SessionReport};
use wirebench_raw::engine::Responder;
use wirebench_raw::raw::Pattern;

/// Protocols this server can serve on a data connection.
pub const PROTOCOLS: &[&str] = &["raw"];

/// How often blocked calls wake to check for shutdown and idleness.
const TICK: Duration = Duration::from_millis(200);
/// Bytes read per `recv` on data connections (as large as iperf3's default).
const READ_BUF: usize = 64 * 1024;

/// Limits that bound what one client can make the server hold.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest payload a session may ask for.
    pub max_payload: u32,
    /// Simultaneous control connections. When all are taken, a new one takes the place
    /// of the oldest that has sent no request yet, or else of the one longest idle (at
    /// least `first_request_timeout`, no session of its own running); failing both it is
    /// refused with an error line.
    pub max_control: usize,
    /// A control connection must complete its first request (a hello) within this.
    pub first_request_timeout: Duration,
    /// Longest a control connection may block the server writing a reply it does not read.
    pub write_timeout: Duration,
    /// Sessions opened but not yet collected; more are refused.
    pub max_sessions: usize,
    /// How long a data listener waits for its connection.
    pub accept_timeout: Duration,
    /// A data connection silent this long is closed, and a control connection this long
    /// after its last complete request unless a session it opened is still running (a
    /// case can run for many minutes between its `open` and its `result`). Bytes that do
    /// not complete a request do not count: a byte every few minutes holds no slot.
    pub idle_timeout: Duration,
    /// Longest a `result` request waits for its session to end.
    pub result_wait: Duration,
    /// Longest think time a session may ask for; larger ones are refused at open (a
    /// client-chosen wait must not hold a session thread without bound).
    pub max_think: Duration,
    /// Log connections and errors to stderr.
    pub log: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_payload: 16 << 20,
            max_control: 128,
            // As the proxies' and the XMPP server's opening timeouts: our client sends its
            // hello as soon as it is connected.
            first_request_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_sessions: 256,
            accept_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            result_wait: Duration::from_secs(60),
            // S1's typing delay is 10 s; a minute leaves room without holding a slot long.
            max_think: Duration::from_secs(60),
            log: false,
        }
    }
}

struct Slot {
    report: Option<SessionReport>,
    finished: Option<Instant>,
}

/// One control connection, as the accept loop sees it when choosing one to close.
struct ControlConn {
    /// A handle on its socket, to shut it down.
    stream: TcpStream,
    accepted: Instant,
    /// When it last completed a request, or last had a session of its own running.
    active: Option<Instant>,
    /// Inside a request (a `result` may wait a minute for its session).
    busy: bool,
}

struct Shared {
    cfg: ServerConfig,
    shutdown: AtomicBool,
    next_session: AtomicU64,
    next_control: AtomicU64,
    /// The open control connections by id (the order they came in).
    controls: Mutex<BTreeMap<u64, ControlConn>>,
    sessions: Mutex<HashMap<u64, Slot>>,
    session_done: Condvar,
    /// The per-connection lines (hellos, closes), each at most once a second: a flood of
    /// control connections (bench/hostile.sh `control`) wrote 700,000 lines before.
    hellos: LogLimit,
    closes: LogLimit,
}

impl Shared {
    fn log(&self, msg: impl AsRef<str>) {
        if self.cfg.log {
            eprintln!("wirebench serve: {}", msg.as_ref());
        }
    }
    /// A per-connection line through `limit`: written at most once a second, with the
    /// count of those held back.
    fn log_limited(&self, limit: &LogLimit, msg: impl FnOnce() -> String) {
        if self.cfg.log {
            limit.eprint(|| format!("wirebench serve: {}", msg()));
        }
    }
    fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::Relaxed)
    }

    fn controls(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, ControlConn>> {
        self.controls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a new control connection, making room if every slot is taken (see
    /// [`ServerConfig::max_control`]). `Err` carries the refusal for the client.
    fn admit(&self, id: u64, stream: &TcpStream) -> Result<(), &'static str> {
        let handle = stream
            .try_clone()
            .map_err(|_| "cannot serve this connection")?;
        let mut controls = self.controls();
        if controls.len() >= self.cfg.max_control {
            let victim = controls
                .iter()
                .find(|(_, c)| c.active.is_none())
                .or_else(|| {
                    controls
                        .iter()
                        .filter(|(_, c)| !c.busy)
                        .filter_map(|(id, c)| Some((id, c, c.active?)))
                        .filter(|(_, _, t)| t.elapsed() >= self.cfg.first_request_timeout)
                        .min_by_key(|(_, _, t)| *t)
                        .map(|(id, c, _)| (id, c))
                })
                .map(|(id, _)| *id);
            let Some(victim) = victim else {
                return Err("too many control connections; try again later");
            };
            if let Some(c) = controls.remove(&victim) {
                // Its thread sees the end of the stream and, finding itself gone from the
                // table, logs why.
                sock::shutdown_both(c.stream.as_raw_fd());
            }
        }
        controls.insert(
            id,
            ControlConn {
                stream: handle,
                accepted: Instant::now(),
                active: None,
                busy: false,
            },
        );
        Ok(())
    }
}

pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    pub fn bind(addr: impl ToSocketAddrs, cfg: ServerConfig) -> io::Result<Server> {
        // A deep accept queue: a flood of connections must not stall a real client's.
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to listen on");
        let mut listener = None;
        for a in addr.to_socket_addrs()? {
            match sock::listener(a) {
                Ok(l) => {
                    listener = Some(l);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let listener = listener.ok_or(last)?;
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                cfg,
                shutdown: AtomicBool::new(false),
                next_session: AtomicU64::new(1),
                next_control: AtomicU64::new(1),
                controls: Mutex::new(BTreeMap::new()),
                sessions: Mutex::new(HashMap::new()),
                session_done: Condvar::new(),
                hellos: LogLimit::new(),
                closes: LogLimit::new(),
            }),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("bound listener has an address")
    }

    /// Serves until [`ServerHandle::stop`] (or forever).
    pub fn run(&self) {
        self.shared
            .log(format!("control port listening on {}", self.local_addr()));
        let _bans = wirebench_net::ban::guard(&self.listener);
        for conn in self.listener.incoming() {
            if self.shared.stopping() {
                break;
            }
            let stream = match conn {
                Ok(s) => s,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    self.shared.log(format!("accept failed: {e}"));
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            if wirebench_net::ban::peer_banned(&stream) {
                // Queued before its source was banned: closed unread.
                continue;
            }
            let shared = self.shared.clone();
            let id = shared.next_control.fetch_add(1, Ordering::Relaxed);
            if let Err(why) = shared.admit(id, &stream) {
                // A fresh socket's buffer takes the line; a write timeout all the same,
                // since this is the accepting thread.
                let mut s = stream;
                let _ = s.set_write_timeout(Some(TICK));
                let _ = s.write_all(&Reply::error(why).to_line());
                continue;
            }
            let spawned = std::thread::Builder::new()
                .name("wb-control".into())
                .spawn(move || {
                    let peer = stream
                        .peer_addr()
                        .map(|a| a.to_string())
                        .unwrap_or_default();
                    let ended = handle_control(&shared, id, stream);
                    let evicted = shared.controls().remove(&id).is_none();
                    if evicted {
                        shared.log_limited(&shared.closes, || {
                            format!(
                                "control connection from {peer} closed: its slot went to a \
                                 new client (every slot was taken and it was idle)"
                            )
                        });
                    } else if let Err(why) = ended {
                        shared.log_limited(&shared.closes, || {
                            format!("control connection from {peer} closed: {why}")
                        });
                    }
                });
            if let Err(e) = spawned {
                self.shared.log(format!("cannot start a thread: {e}"));
                self.shared.controls().remove(&id);
            }
        }
    }

    /// Serves on background threads until `wait` returns (it blocks until the caller
    /// wants to stop: a signal, a channel), then stops accepting, asks every connection
    /// to end at its next tick and returns once the accepting thread has ended. The
    /// entry point of `wirebench serve`.
    pub fn run_until(self, wait: impl FnOnce()) -> io::Result<()> {
        let mut handle = self.spawn()?;
        wait();
        handle.stop();
        Ok(())
    }

    /// Runs the server on a background thread. The server's threads inherit the calling
    /// thread's network namespace.
    pub fn spawn(self) -> io::Result<ServerHandle> {
        let addr = self.local_addr();
        let shared = self.shared.clone();
        let listener_fd = self.listener.as_raw_fd();
        let thread = std::thread::Builder::new()
            .name("wb-server".into())
            .spawn(move || self.run())?;
        Ok(ServerHandle {
            addr,
            shared,
            listener_fd,
            thread: Some(thread),
        })
    }
}

/// A server running on a background thread; dropping it stops it.
pub struct ServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The listening socket, owned by the server thread.
    listener_fd: std::os::fd::RawFd,
    thread: Option<JoinHandle<()>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and asks every connection thread to end at its next tick.
    pub fn stop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            // Wake the blocked accept. shutdown(2) on a listening socket makes accept
            // fail at once, and works from any thread or namespace, unlike connecting
            // to it.
            // The server thread owns the socket until it ends, after this call.
            sock::shutdown_both(self.listener_fd);
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Serves one control connection. Returns why it ended, for the log.
fn handle_control(shared: &Arc<Shared>, id: u64, mut stream: TcpStream) -> Result<(), String> {
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(TICK))
        .map_err(|e| e.to_string())?;
    // A client that does not read its replies must not hold this thread for good.
    stream
        .set_write_timeout(Some(shared.cfg.write_timeout))
        .map_err(|e| e.to_string())?;
    let mut lines = LineBuffer::default();
    let mut buf = [0u8; 4096];
    // Sessions this connection opened and has not collected.
    let mut mine: Vec<u64> = Vec::new();
    let mut last_check = Instant::now();
    loop {
        // A line too long, not UTF-8, or no request: refused for what the client sent,
        // a strike against its source (wirebench_net::ban).
        loop {
            let line = match lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    let _ = stream.write_all(&Reply::error(e.to_string()).to_line());
                    wirebench_net::ban::strike_peer(&stream);
                    return Err(e.to_string());
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let req = match control::parse_request(&line) {
                Ok(r) => r,
                Err(msg) => {
                    let _ = stream.write_all(&Reply::error(&msg).to_line());
                    wirebench_net::ban::strike_peer(&stream);
                    return Err(msg);
                }
            };
            mark(shared, id, true);
            let collected = match req {
                Request::Result { session } => Some(session),
                _ => None,
            };
            let reply = dispatch(shared, &stream, req);
            mark(shared, id, false);
            if let Some(s) = reply.session {
                if collected.is_some() {
                    mine.retain(|m| *m != s);
                } else {
                    mine.push(s);
                }
            }
            stream
                .write_all(&reply.to_line())
                .map_err(|e| e.to_string())?;
        }
        match stream.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => lines.push(&buf[..n]),
            Err(e) if would_block(&e) => {}
            Err(e) => return Err(e.to_string()),
        }
        // Also between bytes that come faster than the read timeout: they do not count.
        if last_check.elapsed() >= TICK {
            last_check = Instant::now();
            if shared.stopping() {
                return Err("server stopping".into());
            }
            check_idle(shared, id, &mut mine)?;
        }
    }
}

/// Records that connection `id` entered (`busy`) or finished a request.
fn mark(shared: &Shared, id: u64, busy: bool) {
    if let Some(c) = shared.controls().get_mut(&id) {
        c.busy = busy;
        c.active = Some(Instant::now());
    }
}

/// Errs when connection `id` has overstayed: no first request within
/// `first_request_timeout`, or none for `idle_timeout` while no session it opened runs.
/// Also forgets the ids in `mine` whose results were dropped unread.
fn check_idle(shared: &Shared, id: u64, mine: &mut Vec<u64>) -> Result<(), String> {
    let running = {
        let sessions = shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
        mine.retain(|s| sessions.contains_key(s));
        mine.iter()
            .any(|s| sessions.get(s).is_some_and(|slot| slot.report.is_none()))
    };
    let mut controls = shared.controls();
    // Gone from the table: its slot was given to a new client.
    let Some(c) = controls.get_mut(&id) else {
        return Err("its slot went to a new client".into());
    };
    match c.active {
        None if c.accepted.elapsed() > shared.cfg.first_request_timeout => Err(format!(
            "no complete request within {}s",
            shared.cfg.first_request_timeout.as_secs()
        )),
        None => Ok(()),
        Some(_) if running => {
            c.active = Some(Instant::now());
            Ok(())
        }
        Some(t) if t.elapsed() > shared.cfg.idle_timeout => Err(format!(
            "no request for {}s",
            shared.cfg.idle_timeout.as_secs()
        )),
        Some(_) => Ok(()),
    }
}

fn dispatch(shared: &Arc<Shared>, control: &TcpStream, req: Request) -> Reply {
    match req {
        Request::Hello { version, client } => {
            if version != control::VERSION {
                return Reply::error(format!(
                    "control protocol version {version} is not supported (this server speaks {}); \
                     run the same wirebench version on both ends",
                    control::VERSION
                ));
            }
            shared.log_limited(&shared.hellos, || format!("hello from {client}"));
            Reply {
                ok: true,
                server: Some(format!("wirebench {}", env!("CARGO_PKG_VERSION"))),
                version: Some(control::VERSION),
                clock_ns: Some(monotonic_ns()),
                ..Default::default()
            }
        }
        Request::Open(open) => open_session(shared, control, open),
        Request::Result { session } => wait_result(shared, session),
    }
}

fn open_session(shared: &Arc<Shared>, control: &TcpStream, open: Open) -> Reply {
    if !PROTOCOLS.contains(&open.protocol.as_str()) {
        return Reply::error(format!(
            "unknown protocol {:?}: this server serves {}",
            open.protocol,
            PROTOCOLS.join(", ")
        ));
    }
    if open.max_payload > shared.cfg.max_payload {
        return Reply::error(format!(
            "payload of {} bytes exceeds this server's limit of {} bytes",
            open.max_payload, shared.cfg.max_payload
        ));
    }
    if open.think_ns > shared.cfg.max_think.as_nanos() as u64 {
        return Reply::error(format!(
            "think time of {} exceeds this server's limit of {}",
            wirebench_model::format_seconds(open.think_ns as f64 / 1e9),
            wirebench_model::format_seconds(shared.cfg.max_think.as_secs_f64())
        ));
    }
    let id = shared.next_session.fetch_add(1, Ordering::SeqCst);
    {
        let mut sessions = shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
        // Forget results nobody collected.
        sessions.retain(|_, s| {
            s.finished
                .is_none_or(|t| t.elapsed() < Duration::from_secs(600))
        });
        if sessions.len() >= shared.cfg.max_sessions {
            return Reply::error("too many open sessions; collect results or try again later");
        }
        sessions.insert(
            id,
            Slot {
                report: None,
                finished: None,
            },
        );
    }
    // Listen on the address the client reached us at, so the data path is the same path.
    let ip = match control.local_addr() {
        Ok(a) => a.ip(),
        Err(e) => return Reply::error(format!("cannot read control address: {e}")),
    };
    let listener = match TcpListener::bind((ip, 0)) {
        Ok(l) => l,
        Err(e) => return Reply::error(format!("cannot open a data listener on {ip}: {e}")),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let sh = shared.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("wb-data-{id}"))
        .spawn(move || {
            // Fills the slot however the thread ends, a panic included, so a session
            // can never hold its slot for good.
            let mut guard = SlotGuard {
                shared: sh,
                id,
                report: None,
            };
            let sh = &guard.shared;
            let report = match accept_timeout(&listener, sh.cfg.accept_timeout) {
                Ok(stream) => {
                    drop(listener);
                    run_session(sh, stream, &open)
                }
                Err(e) => SessionReport {
                    error: Some(e),
                    ..Default::default()
                },
            };
            guard.report = Some(report);
        });
    if let Err(e) = spawned {
        return Reply::error(format!("cannot start a session thread: {e}"));
    }
    Reply {
        ok: true,
        session: Some(id),
        port: Some(port),
        ..Default::default()
    }
}

/// A session thread's claim on its slot: on drop, the slot gets the report, or an error
/// if the thread died before it had one.
struct SlotGuard {
    shared: Arc<Shared>,
    id: u64,
    report: Option<SessionReport>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let report = self.report.take().unwrap_or_else(|| SessionReport {
            error: Some("the session ended abnormally (a server bug; see its log)".into()),
            ..Default::default()
        });
        if let Some(e) = &report.error {
            self.shared.log(format!("session {}: {e}", self.id));
        }
        let mut sessions = self
            .shared
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = sessions.get_mut(&self.id) {
            slot.report = Some(report);
            slot.finished = Some(Instant::now());
        }
        self.shared.session_done.notify_all();
    }
}

fn wait_result(shared: &Arc<Shared>, session: u64) -> Reply {
    let deadline = Instant::now() + shared.cfg.result_wait;
    let mut sessions = shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        match sessions.get(&session) {
            None => return Reply::error(format!("no session {session} on this server")),
            Some(Slot {
                report: Some(_), ..
            }) => {
                let report = sessions.remove(&session).and_then(|s| s.report);
                return Reply {
                    ok: true,
                    session: Some(session),
                    report,
                    ..Default::default()
                };
            }
            Some(_) => {}
        }
        let now = Instant::now();
        if now >= deadline || shared.stopping() {
            return Reply::error(format!("session {session} is still running"));
        }
        sessions = shared
            .session_done
            .wait_timeout(sessions, (deadline - now).min(TICK))
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

fn accept_timeout(listener: &TcpListener, timeout: Duration) -> Result<TcpStream, String> {
    if !sock::wait_readable(listener, timeout).map_err(|e| e.to_string())? {
        return Err(format!(
            "no data connection arrived within {}s",
            timeout.as_secs()
        ));
    }
    listener
        .accept()
        .map(|(s, _)| s)
        .map_err(|e| format!("accept failed: {e}"))
}

/// A data connection's socket, with the shutdown and idle checks every blocking call
/// makes between ticks. The protocol itself is [`Responder`]'s.
struct Session<'a> {
    shared: &'a Shared,
    stream: TcpStream,
    last_input: Instant,
}

impl Session<'_> {
    /// One `recv`; `Ok(None)` on end of stream; `Err` carries the reason to stop.
    fn read(&mut self, buf: &mut [u8]) -> Result<Option<usize>, String> {
        loop {
            match sock::recv(self.stream.as_raw_fd(), buf, 0) {
                Ok(0) => return Ok(None),
                Ok(n) => {
                    self.last_input = Instant::now();
                    return Ok(Some(n));
                }
                Err(e) if would_block(&e) => self.check_alive()?,
                Err(e) => return Err(format!("data connection failed: {e}")),
            }
        }
    }

    /// Writes whatever the engine has due, all of it.
    fn flush(&mut self, engine: &mut Responder) -> Result<(), String> {
        loop {
            let out = engine.poll_transmit(monotonic_ns());
            if out.is_empty() {
                return Ok(());
            }
            match sock::sendmsg(self.stream.as_raw_fd(), &[IoSlice::new(out)], 0) {
                Ok(n) => engine.transmitted(n),
                Err(e) if would_block(&e) => self.check_alive()?,
                Err(e) => return Err(format!("data connection failed: {e}")),
            }
        }
    }

    fn check_stopping(&self) -> Result<(), String> {
        if self.shared.stopping() {
            return Err("server stopping".into());
        }
        Ok(())
    }

    fn check_alive(&self) -> Result<(), String> {
        self.check_stopping()?;
        if self.last_input.elapsed() > self.shared.cfg.idle_timeout {
            return Err(format!(
                "no data for {}s",
                self.shared.cfg.idle_timeout.as_secs()
            ));
        }
        Ok(())
    }
}

/// Drives a [`Responder`] over a blocking socket: write what is due, wait out a think
/// time (in ticks, so a stopping server is not held up), read, repeat.
fn run_session(shared: &Shared, stream: TcpStream, open: &Open) -> SessionReport {
    let mut s = Session {
        shared,
        stream,
        last_input: Instant::now(),
    };
    let pattern = (open.verify && open.behaviour == Behaviour::Sink)
        .then(|| Pattern::new(open.seed, open.max_payload as usize));
    let mut engine = Responder::new(open, pattern.as_ref(), monotonic_ns());
    let result = sock::tune_data_socket(&s.stream, open.nodelay, TICK)
        .map_err(|e| format!("cannot configure data socket: {e}"))
        .and_then(|_| serve(&mut s, &mut engine));
    let mut report = engine.report();
    if let Err(e) = result {
        report.error = Some(e);
    }
    report
}

fn serve(s: &mut Session, engine: &mut Responder) -> Result<(), String> {
    let mut buf = vec![0u8; READ_BUF];
    loop {
        s.flush(engine)?;
        if let Some(due) = engine.poll_timeout() {
            let tick = TICK.as_nanos() as u64;
            while monotonic_ns() < due {
                s.check_stopping()?;
                sleep_until_ns(due.min(monotonic_ns().saturating_add(tick)));
            }
            continue;
        }
        match s.read(&mut buf)? {
            Some(n) => engine
                .handle_input(monotonic_ns(), &buf[..n])
                .map_err(|e| format!("peer sent an invalid frame: {e}"))?,
            None => {
                engine.handle_eof()?;
                return s.flush(engine);
            }
        }
    }
}
