//! The built-in XMPP server: the sans-IO [`ServerSession`] engine behind mio event loops
//! (epoll), one per worker thread, with a router between all sessions.
//!
//! Why an event loop here when the measuring clients use blocking threads
//! (docs/architecture.md): a server holding tens of thousands of mostly idle sessions
//! cannot afford a thread (and its stack) per connection; one readiness loop costs a few
//! hundred bytes per session. mio is the thin, well-kept epoll wrapper under tokio; the
//! loop needs nothing tokio adds.
//!
//! What protects the server from its clients: a session that has not bound a resource
//! within `handshake_timeout` is closed (a client that connects and sends nothing); a
//! session whose unwritten output passes `max_queued` bytes is closed (a client that stops
//! reading while messages queue for it); stanzas are capped by the engine; connections
//! beyond `max_sessions` are refused at accept.
//!
//! Workers: `workers` threads, each with its own listener on the same port
//! (`SO_REUSEPORT`: the kernel spreads new connections over them) and its own loop, so
//! every core logs in and relays. Who is online where is one shared map (bare JID ->
//! worker and slot); a stanza for a session of another worker goes into that worker's
//! inbox and wakes its loop (a mio `Waker`). One process still serves at most what its
//! open-file limit allows (20,000 on these machines); worker *processes* are the next
//! step (issue #13).

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wirebench_xmpp::{Directory, NumberedAccounts, ServerConfig, ServerEvent, ServerSession};

const LISTENER: Token = Token(usize::MAX);
const WAKER: Token = Token(usize::MAX - 1);
/// How often the loop wakes without traffic: shutdown checks and handshake timeouts.
const TICK: Duration = Duration::from_millis(100);

/// How to run the built-in server.
#[derive(Debug, Clone)]
pub struct XmppServerConfig {
    pub listen: SocketAddr,
    pub domain: String,
    pub accounts: NumberedAccounts,
    /// Connections held at once; more are accepted and closed at once.
    pub max_sessions: usize,
    /// A session must have bound a resource this long after connecting.
    pub handshake_timeout: Duration,
    /// Unwritten bytes a session may queue before it is closed as a slow reader.
    pub max_queued: usize,
    pub max_stanza: usize,
    /// Event-loop threads sharing the port (`SO_REUSEPORT`); 0: one per core.
    pub workers: usize,
    /// Offer STARTTLS with this configuration ([`self_signed`] makes one).
    pub tls: Option<Arc<wirebench_xmpp::rustls::ServerConfig>>,
}

impl XmppServerConfig {
    /// Users `user1..user<users>` with passwords `pass<N>`, two contacts each.
    pub fn new(listen: SocketAddr, domain: &str, users: u64) -> XmppServerConfig {
        XmppServerConfig {
            listen,
            domain: domain.to_string(),
            accounts: NumberedAccounts {
                user_prefix: "user".into(),
                password_prefix: "pass".into(),
                users,
                contacts: 2,
                domain: domain.to_string(),
            },
            max_sessions: 18_000,
            handshake_timeout: Duration::from_secs(30),
            max_queued: 4 << 20,
            max_stanza: 64 * 1024,
            workers: 0,
            tls: None,
        }
    }
}

/// A rustls server configuration with a certificate for `domain` made on the spot
/// (self-signed, rcgen): enough for STARTTLS in a lab, where clients are told to trust it
/// or not to verify. Not for anything facing real users.
pub fn self_signed(domain: &str) -> Result<Arc<wirebench_xmpp::rustls::ServerConfig>, String> {
    use wirebench_xmpp::rustls;
    let ck = rcgen::generate_simple_self_signed(vec![domain.to_string()])
        .map_err(|e| format!("cannot make a certificate for {domain}: {e}"))?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![ck.cert.der().clone()], key)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(cfg))
}

/// Counters, readable while the server runs.
#[derive(Debug, Default)]
pub struct ServerStats {
    pub accepted: AtomicU64,
    pub bound: AtomicU64,
    pub open: AtomicU64,
    pub routed: AtomicU64,
    /// Stanzas for a user with no session here.
    pub unroutable: AtomicU64,
    pub closed_timeout: AtomicU64,
    pub closed_slow: AtomicU64,
    pub closed_error: AtomicU64,
    pub refused_full: AtomicU64,
    /// Stanzas handed from one worker to another.
    pub cross_worker: AtomicU64,
}

/// Stanzas left for a worker: (slot, recipient's bare JID, stanza). The JID is checked
/// on delivery: the slot may hold another session by then.
type Inbox = Mutex<Vec<(usize, String, Vec<u8>)>>;

/// What the workers share: who is online where, and each worker's inbox.
struct Shared {
    /// Bare JID -> (worker, slot) of its bound session.
    online: Mutex<HashMap<String, (usize, usize)>>,
    inboxes: Vec<Inbox>,
    wakers: Vec<Waker>,
}

impl Shared {
    fn lookup(&self, bare: &str) -> Option<(usize, usize)> {
        self.online
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(bare)
            .copied()
    }
}

struct Conn {
    stream: TcpStream,
    session: ServerSession,
    /// Output the socket has not taken yet.
    pending: Vec<u8>,
    writable: bool,
    opened: Instant,
    bound: bool,
    closing: bool,
}

/// A bound listener; [`XmppServer::run`] serves until the flag is set.
pub struct XmppServer {
    cfg: XmppServerConfig,
    listeners: Vec<TcpListener>,
    pub stats: Arc<ServerStats>,
}

/// A listener with `SO_REUSEPORT`, so every worker can have one on the same port.
fn reuseport_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    Ok(TcpListener::from_std(s.into()))
}

impl XmppServer {
    /// Binds one listener per worker; port 0 picks one port for all.
    pub fn bind(mut cfg: XmppServerConfig) -> io::Result<XmppServer> {
        if cfg.workers == 0 {
            cfg.workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        }
        let first = reuseport_listener(cfg.listen)?;
        let addr = first.local_addr()?;
        let mut listeners = vec![first];
        for _ in 1..cfg.workers {
            listeners.push(reuseport_listener(addr)?);
        }
        Ok(XmppServer {
            cfg,
            listeners,
            stats: Arc::new(ServerStats::default()),
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listeners[0].local_addr()
    }

    pub fn workers(&self) -> usize {
        self.listeners.len()
    }

    /// Runs the loop on a new thread until `shutdown` is set.
    pub fn spawn(self, shutdown: Arc<AtomicBool>) -> io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new()
            .name("wb-xmpp-server".into())
            .spawn(move || {
                if let Err(e) = self.run(&shutdown) {
                    eprintln!("wirebench: XMPP server stopped: {e}");
                }
            })
    }

    /// Serves until `shutdown` is set; open sessions then get `system-shutdown`.
    pub fn run(self, shutdown: &AtomicBool) -> io::Result<()> {
        let scfg = Arc::new(ServerConfig {
            max_stanza: self.cfg.max_stanza,
            tls: self.cfg.tls.clone(),
            ..ServerConfig::new(&self.cfg.domain)
        });
        let mut polls = Vec::new();
        let mut wakers = Vec::new();
        for _ in &self.listeners {
            let poll = Poll::new()?;
            wakers.push(Waker::new(poll.registry(), WAKER)?);
            polls.push(poll);
        }
        let shared = Arc::new(Shared {
            online: Mutex::new(HashMap::new()),
            inboxes: self
                .listeners
                .iter()
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            wakers,
        });
        let cfg = &self.cfg;
        let stats = &self.stats;
        std::thread::scope(|sc| {
            let mut handles = Vec::new();
            for (id, (listener, poll)) in self.listeners.into_iter().zip(polls).enumerate() {
                let (shared, scfg) = (shared.clone(), scfg.clone());
                handles.push(
                    std::thread::Builder::new()
                        .name(format!("wb-xmpp-w{id}"))
                        .spawn_scoped(sc, move || {
                            worker(id, listener, poll, cfg, scfg, stats, &shared, shutdown)
                        }),
                );
            }
            let mut first_err = None;
            for h in handles {
                let r = match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(io::Error::other("an XMPP worker panicked"))),
                    Err(e) => Err(e),
                };
                if let Err(e) = r {
                    // One worker failing stops the others too.
                    first_err.get_or_insert(e);
                }
            }
            first_err.map_or(Ok(()), Err)
        })
    }
}

#[allow(clippy::too_many_arguments)]
fn worker(
    id: usize,
    mut listener: TcpListener,
    mut poll: Poll,
    cfg: &XmppServerConfig,
    scfg: Arc<ServerConfig>,
    stats: &Arc<ServerStats>,
    shared: &Arc<Shared>,
    shutdown: &AtomicBool,
) -> io::Result<()> {
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut lp = Loop {
        id,
        conns: Vec::new(),
        free: Vec::new(),
        shared: shared.clone(),
        buf: vec![0; 64 * 1024],
        next_id: id as u64 + 1,
        step: cfg.workers as u64,
        stats: stats.clone(),
        cfg,
        scfg,
    };
    let mut events = Events::with_capacity(1024);
    let mut last_sweep = Instant::now();
    while !shutdown.load(Ordering::Relaxed) {
        match poll.poll(&mut events, Some(TICK)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in events.iter() {
            match ev.token() {
                LISTENER => lp.accept(&listener, &poll),
                WAKER => lp.drain_inbox(&poll),
                Token(i) => {
                    if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                        lp.read(i, &poll);
                    }
                    if ev.is_writable() {
                        lp.flush(i, &poll);
                    }
                }
            }
        }
        if last_sweep.elapsed() >= Duration::from_secs(1) {
            last_sweep = Instant::now();
            lp.sweep(&poll);
        }
    }
    for i in 0..lp.conns.len() {
        if let Some(c) = lp.conns[i].as_mut() {
            c.session.close();
            lp.after_input(i, &poll);
        }
    }
    Ok(())
}

struct Loop<'a> {
    /// This worker's index.
    id: usize,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    shared: Arc<Shared>,
    buf: Vec<u8>,
    /// Stream ids: `id + 1`, then steps of the worker count, so they never collide.
    next_id: u64,
    step: u64,
    stats: Arc<ServerStats>,
    cfg: &'a XmppServerConfig,
    scfg: Arc<ServerConfig>,
}

impl Loop<'_> {
    fn open(&self) -> usize {
        self.conns.len() - self.free.len()
    }

    fn accept(&mut self, listener: &TcpListener, poll: &Poll) {
        loop {
            let (mut stream, _) = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Out of file descriptors or similar: try again on the next readiness.
                Err(_) => return,
            };
            self.stats.accepted.fetch_add(1, Ordering::Relaxed);
            if self.open() >= self.cfg.max_sessions {
                self.stats.refused_full.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let _ = stream.set_nodelay(true);
            let i = self.free.pop().unwrap_or_else(|| {
                self.conns.push(None);
                self.conns.len() - 1
            });
            if poll
                .registry()
                .register(&mut stream, Token(i), Interest::READABLE)
                .is_err()
            {
                self.free.push(i);
                continue;
            }
            let id = self.next_id;
            self.next_id += self.step;
            self.conns[i] = Some(Conn {
                stream,
                session: ServerSession::new(self.scfg.clone(), id),
                pending: Vec::new(),
                writable: false,
                opened: Instant::now(),
                bound: false,
                closing: false,
            });
            self.stats.open.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn read(&mut self, i: usize, poll: &Poll) {
        loop {
            let Some(c) = self.conns[i].as_mut() else {
                return;
            };
            match c.stream.read(&mut self.buf) {
                Ok(0) => {
                    c.session.handle_eof();
                    break;
                }
                Ok(n) => {
                    let dir: &dyn Directory = &self.cfg.accounts;
                    c.session.handle_input(&self.buf[..n], dir);
                    self.after_input(i, poll);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    c.session.handle_eof();
                    break;
                }
            }
        }
        self.after_input(i, poll);
    }

    /// Handles the session's events (routing to other sessions) and writes its output.
    fn after_input(&mut self, i: usize, poll: &Poll) {
        let mut touched = vec![i];
        while let Some(ev) = self.conns[i].as_mut().and_then(|c| c.session.poll_event()) {
            match ev {
                ServerEvent::Bound { user, .. } => {
                    if let Some(c) = self.conns[i].as_mut() {
                        c.bound = true;
                    }
                    self.stats.bound.fetch_add(1, Ordering::Relaxed);
                    self.shared
                        .online
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(format!("{user}@{}", self.cfg.domain), (self.id, i));
                }
                ServerEvent::Available { stanza } => {
                    let Some(me) = self.bare_of(i) else { continue };
                    let user = me.split('@').next().unwrap_or("").to_string();
                    let mine = self.conns[i]
                        .as_ref()
                        .map(|c| c.session.jid().to_string())
                        .unwrap_or_default();
                    for contact in self.cfg.accounts.roster(&user) {
                        let Some(at) = self.shared.lookup(&contact) else {
                            continue;
                        };
                        if at == (self.id, i) {
                            continue;
                        }
                        self.send_to(at, &contact, stanza.clone(), &mut touched);
                        // Theirs back to me: its full JID is only known where it lives,
                        // so ask for it with a probe the other side answers.
                        let probe =
                            format!("<presence type='probe' from='{mine}' to='{contact}'/>");
                        self.send_to(at, &contact, probe.into_bytes(), &mut touched);
                    }
                }
                ServerEvent::Unavailable { stanza } => {
                    let Some(me) = self.bare_of(i) else { continue };
                    let user = me.split('@').next().unwrap_or("").to_string();
                    for contact in self.cfg.accounts.roster(&user) {
                        if let Some(at) = self.shared.lookup(&contact) {
                            self.send_to(at, &contact, stanza.clone(), &mut touched);
                        }
                    }
                }
                ServerEvent::Route { to, stanza } => {
                    let bare = to.split('/').next().unwrap_or("").to_string();
                    match self.shared.lookup(&bare) {
                        Some(at) => {
                            self.send_to(at, &bare, stanza, &mut touched);
                            self.stats.routed.fetch_add(1, Ordering::Relaxed);
                        }
                        None => {
                            self.stats.unroutable.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                ServerEvent::Closed { error } => {
                    if error.is_some() {
                        self.stats.closed_error.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Some(c) = self.conns[i].as_mut() {
                        c.closing = true;
                    }
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for j in touched {
            self.flush(j, poll);
        }
    }

    /// Hands `stanza` to the session of `bare` at `(worker, slot)`: here directly, else
    /// through that worker's inbox.
    fn send_to(
        &mut self,
        at: (usize, usize),
        bare: &str,
        stanza: Vec<u8>,
        touched: &mut Vec<usize>,
    ) {
        let (w, j) = at;
        if w == self.id {
            self.deliver_local(j, bare, &stanza, touched);
            return;
        }
        self.stats.cross_worker.fetch_add(1, Ordering::Relaxed);
        self.shared.inboxes[w]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((j, bare.to_string(), stanza));
        let _ = self.shared.wakers[w].wake();
    }

    /// Delivers to slot `j` if it still holds `bare`'s session (it may have closed since
    /// the lookup); a presence probe is answered with the session's own presence.
    fn deliver_local(&mut self, j: usize, bare: &str, stanza: &[u8], touched: &mut Vec<usize>) {
        let Some(c) = self.conns[j].as_mut() else {
            return;
        };
        if c.session.jid().split('/').next() != Some(bare) {
            return;
        }
        if let Some(from) = probe_from(stanza) {
            let reply = format!("<presence from='{}' to='{from}'/>", c.session.jid());
            let from_bare = from.split('/').next().unwrap_or("").to_string();
            if let Some(at) = self.shared.lookup(&from_bare) {
                self.send_to(at, &from_bare, reply.into_bytes(), touched);
            }
            return;
        }
        c.session.deliver(stanza);
        touched.push(j);
    }

    /// Stanzas other workers left for this one.
    fn drain_inbox(&mut self, poll: &Poll) {
        let items = std::mem::take(
            &mut *self.shared.inboxes[self.id]
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        let mut touched = Vec::new();
        for (j, bare, stanza) in items {
            self.deliver_local(j, &bare, &stanza, &mut touched);
        }
        touched.sort_unstable();
        touched.dedup();
        for j in touched {
            self.flush(j, poll);
        }
    }

    fn bare_of(&self, i: usize) -> Option<String> {
        let c = self.conns[i].as_ref()?;
        Some(c.session.jid().split('/').next()?.to_string())
    }

    /// Writes what the session has queued; closes the connection when the session is over
    /// and everything is written, or when the client is too slow to take its output.
    fn flush(&mut self, i: usize, poll: &Poll) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        if let Some(out) = c.session.poll_transmit() {
            if c.pending.is_empty() {
                c.pending = out;
            } else {
                c.pending.extend_from_slice(&out);
            }
        }
        let mut broken = false;
        while !c.pending.is_empty() {
            match c.stream.write(&c.pending) {
                Ok(0) => {
                    broken = true;
                    break;
                }
                Ok(n) => {
                    c.pending.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    broken = true;
                    break;
                }
            }
        }
        if c.pending.len() > self.cfg.max_queued {
            self.stats.closed_slow.fetch_add(1, Ordering::Relaxed);
            return self.drop_conn(i, poll);
        }
        let want_write = !c.pending.is_empty();
        if want_write != c.writable {
            let interest = if want_write {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            let _ = poll
                .registry()
                .reregister(&mut c.stream, Token(i), interest);
            c.writable = want_write;
        }
        if c.pending.is_empty() {
            // An idle session keeps no buffer capacity.
            c.pending = Vec::new();
            c.session.shrink();
        }
        if broken || (c.closing && c.pending.is_empty()) {
            self.drop_conn(i, poll);
        }
    }

    fn drop_conn(&mut self, i: usize, poll: &Poll) {
        let Some(mut c) = self.conns[i].take() else {
            return;
        };
        let _ = poll.registry().deregister(&mut c.stream);
        let bare = c.session.jid().split('/').next().unwrap_or("").to_string();
        let mut online = self.shared.online.lock().unwrap_or_else(|p| p.into_inner());
        if online.get(&bare) == Some(&(self.id, i)) {
            online.remove(&bare);
        }
        drop(online);
        self.free.push(i);
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Closes sessions that did not bind in time.
    fn sweep(&mut self, poll: &Poll) {
        let limit = self.cfg.handshake_timeout;
        for i in 0..self.conns.len() {
            let late = self.conns[i]
                .as_ref()
                .is_some_and(|c| !c.bound && c.opened.elapsed() > limit);
            if late {
                self.stats.closed_timeout.fetch_add(1, Ordering::Relaxed);
                self.drop_conn(i, poll);
            }
        }
    }
}

/// The `from` of a `<presence type='probe'>` the router made, if `stanza` is one.
fn probe_from(stanza: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(stanza).ok()?;
    let rest = s.strip_prefix("<presence type='probe' from='")?;
    rest.split('\'').next()
}
