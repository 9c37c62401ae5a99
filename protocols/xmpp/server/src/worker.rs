//! One worker of the built-in server: a mio (epoll) loop over its own listener, its
//! sessions' sans-IO [`ServerSession`]s, and its links to the other workers
//! ([`crate::fabric`]). A session is reached through the one engine shape
//! (`wirebench_engine::Engine`) on a [`ServerEngine`] borrowed for the call: the sessions
//! live in the worker's slots, the accounts once in its configuration.
//!
//! What protects the server from its clients: a session that has not bound a resource
//! within `handshake_timeout` is closed (a client that connects and sends nothing); a
//! session whose unwritten output passes `max_queued` bytes is closed (a client that stops
//! reading while messages queue for it); stanzas are capped by the engine; connections
//! beyond the process's session cap are closed at accept.

use crate::config::XmppServerConfig;
use crate::fabric::{self, Note, WorkerLink};
use crate::stats::ServerStats;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_engine::Engine as _;
use wirebench_engine::edge::{self, Output, Step};
use wirebench_xmpp::{Directory, ServerConfig, ServerEngine, ServerEvent, ServerSession};

const LISTENER: Token = Token(usize::MAX);
/// WorkerLink to worker `w` is `Token(LINK0 - w)`; sessions count up from 0, so they never meet.
const LINK0: usize = usize::MAX - 1;
/// How often the loop wakes without traffic: shutdown checks and handshake timeouts.
const TICK: Duration = Duration::from_millis(100);
/// How long a worker waits, after a link to another worker broke, for its own stop before
/// it calls the loss an error (the parent stops workers one after another).
const LINK_GRACE: Duration = Duration::from_secs(2);
/// New connections taken per turn of the loop, after the sessions' input: accepting until
/// the queue was empty let a flood of connections (30,000 a second, bench/hostile.sh)
/// hold a turn long enough to double a well-behaved session's p99. A login burst of the
/// load runs still gets 16 a turn, turns as fast as the loop can go.
const ACCEPT_BATCH: usize = 16;

/// Where a bound user's session is, as this worker knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    /// Here, in this slot.
    Here(u32),
    /// At that worker.
    At(u16),
}

/// Bare JID -> where its session is, keyed by a 64-bit hash of the JID rather than the
/// JID itself (16 bytes an entry instead of ~70). A worker holds entries for its own
/// sessions and for the users whose home it is ([`crate::fabric`]). A collision (p ~ n^2 /
/// 2^65: 3e-8 at a million users) would send a stanza to the wrong worker, which finds no
/// session for its JID there and counts it unroutable; delivery always checks the
/// session's own JID. The hash is std's SipHash with fixed keys, the same in every worker
/// process (they run the same binary), so every worker computes the same home.
#[derive(Default)]
struct Located(HashMap<u64, Where>);

impl Located {
    fn key(bare: &str) -> u64 {
        use std::hash::Hasher;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write(bare.as_bytes());
        h.finish()
    }

    /// The worker (of `workers`) that keeps track of `bare`'s session.
    fn home(bare: &str, workers: usize) -> usize {
        (Self::key(bare) % workers.max(1) as u64) as usize
    }

    fn get(&self, bare: &str) -> Option<Where> {
        self.0.get(&Self::key(bare)).copied()
    }

    fn insert(&mut self, bare: &str, at: Where) {
        self.0.insert(Self::key(bare), at);
    }

    fn remove(&mut self, bare: &str) {
        self.0.remove(&Self::key(bare));
    }
}

/// What a worker needs from the server around it.
pub(crate) struct WorkerCtx<'a> {
    pub id: usize,
    pub workers: usize,
    pub cfg: &'a XmppServerConfig,
    pub scfg: Arc<ServerConfig>,
    /// Counters of this worker's process (shared by its worker threads).
    pub stats: &'a ServerStats,
    /// Sessions this process may hold (its open-file limit less a reserve).
    pub max_sessions: usize,
    pub shutdown: &'a AtomicBool,
    /// Checked every tick besides `shutdown` (a worker process's parent is gone).
    pub also_stop: &'a (dyn Fn() -> bool + Sync),
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
    /// Acks still awaited for this session's `Online` (from its user's home worker, if
    /// that is another): its output (the bind result first) is held until then.
    held: u32,
}

/// Serves until `ctx.shutdown` is set; open sessions then get `system-shutdown`.
/// `links[w]` is the link to worker `w` (`None` at `ctx.id`).
pub(crate) fn run(
    ctx: WorkerCtx,
    mut listener: TcpListener,
    mut links: Vec<Option<WorkerLink>>,
) -> io::Result<()> {
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let _bans = wirebench_net::ban::guard(&listener);
    for (w, link) in links.iter_mut().enumerate() {
        if let Some(l) = link {
            poll.registry()
                .register(&mut l.stream, Token(LINK0 - w), Interest::READABLE)?;
        }
    }
    let mut lp = Loop {
        next_id: ctx.id as u64 + 1,
        ctx,
        conns: Vec::new(),
        free: Vec::new(),
        online: Located::default(),
        links,
        buf: vec![0; 64 * 1024],
        lost: None,
        paused: false,
        stalled: Vec::new(),
    };
    let mut events = Events::with_capacity(1024);
    let mut last_sweep = Instant::now();
    // The last accept stopped at its batch: connections may still wait, and the
    // edge-triggered listener will not say so again.
    let mut backlog = false;
    while !lp.ctx.shutdown.load(Ordering::Relaxed) {
        let wait = if backlog { Duration::ZERO } else { TICK };
        match poll.poll(&mut events, Some(wait)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let mut accept = backlog;
        for ev in events.iter() {
            match ev.token() {
                LISTENER => accept = true,
                Token(t) if t > LINK0 - lp.ctx.workers && t <= LINK0 => {
                    let w = LINK0 - t;
                    if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                        lp.receive(w, &poll)?;
                    }
                }
                Token(i) => {
                    if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                        lp.read(i, &poll, ev.is_read_closed() || ev.is_error());
                    }
                    if ev.is_writable() {
                        lp.flush(i, &poll);
                    }
                }
            }
        }
        // After the sessions' input: a flood of new connections waits behind them.
        if accept {
            backlog = lp.accept(&listener, &poll);
        }
        lp.flush_links(&poll)?;
        lp.resume(&poll);
        if let Some((at, _)) = &lp.lost
            && at.elapsed() > LINK_GRACE
            && !lp.ctx.shutdown.load(Ordering::Relaxed)
            && !(lp.ctx.also_stop)()
        {
            return Err(lp
                .lost
                .take()
                .map(|l| l.1)
                .unwrap_or_else(|| io::Error::other("lost")));
        }
        if last_sweep.elapsed() >= Duration::from_secs(1) {
            last_sweep = Instant::now();
            lp.sweep(&poll);
            if (lp.ctx.also_stop)() {
                break;
            }
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
    ctx: WorkerCtx<'a>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    /// Bare JID -> where its bound session is: this worker's own sessions, and those of
    /// the users whose home this worker is, from the other workers' `Online`/`Offline`.
    online: Located,
    links: Vec<Option<WorkerLink>>,
    buf: Vec<u8>,
    /// Stream ids: `id + 1`, then steps of the worker count, so they never collide.
    next_id: u64,
    /// The first link to another worker that broke, and when.
    lost: Option<(Instant, io::Error)>,
    /// A link's backlog passed [`fabric::PAUSE_READS_AT`]: sessions are not read until
    /// every link is down to [`fabric::RESUME_READS_AT`].
    paused: bool,
    /// Sessions with input left unread while paused (their readiness, edge-triggered,
    /// will not come again for it).
    stalled: Vec<usize>,
}

impl<'a> Loop<'a> {
    /// Accepts at most [`ACCEPT_BATCH`] connections; true when it stopped there (more may
    /// be waiting).
    fn accept(&mut self, listener: &TcpListener, poll: &Poll) -> bool {
        for _ in 0..ACCEPT_BATCH {
            let (mut stream, peer) = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Out of file descriptors or similar: try again on the next readiness.
                Err(_) => return false,
            };
            let stats = self.ctx.stats;
            stats.accepted.fetch_add(1, Ordering::Relaxed);
            if wirebench_net::ban::banned(peer.ip()) {
                // Queued before its source was banned: closed unread.
                continue;
            }
            if stats.open.load(Ordering::Relaxed) as usize >= self.ctx.max_sessions {
                stats.refused_full.fetch_add(1, Ordering::Relaxed);
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
            self.next_id += self.ctx.workers as u64;
            self.conns[i] = Some(Conn {
                stream,
                session: ServerSession::new(self.ctx.scfg.clone(), id),
                pending: Vec::new(),
                writable: false,
                opened: Instant::now(),
                bound: false,
                closing: false,
                held: 0,
            });
            stats.open.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    /// Reads what the connection has, routing what each read completed before the next
    /// ([`wirebench_engine::edge`]: an edge is read until a short read, unless the peer has
    /// closed, `closing`, when it reads on so the close is seen). A paused worker leaves
    /// the rest for [`Loop::resume`].
    fn read(&mut self, i: usize, poll: &Poll, closing: bool) {
        let dir = self.dir();
        loop {
            if self.paused {
                self.stalled.push(i);
                return;
            }
            let Some(c) = self.conns[i].as_mut() else {
                return;
            };
            match edge::read_once(
                &mut c.stream,
                &mut engine(&mut c.session, dir),
                &mut self.buf,
                0,
            ) {
                Step::Read(n, Ok(())) => {
                    self.after_input(i, poll);
                    if n < self.buf.len() && !closing {
                        return;
                    }
                }
                Step::Ended { said: Ok(()), .. } => break,
                Step::Blocked => return,
            }
        }
        self.after_input(i, poll);
    }

    /// `bare`'s home worker, if it is not this one.
    fn home_elsewhere(&self, bare: &str) -> Option<usize> {
        let home = Located::home(bare, self.ctx.workers);
        (home != self.ctx.id).then_some(home)
    }

    /// Tells `bare`'s home worker, if that is another; true if it was told.
    fn tell_home(&mut self, bare: &str, note: &Note) -> bool {
        let Some(home) = self.home_elsewhere(bare) else {
            return false;
        };
        match self.links.get_mut(home).and_then(Option::as_mut) {
            Some(link) => link.push(note),
            None => false,
        }
    }

    /// Handles the session's events (routing to other sessions) and writes its output.
    fn after_input(&mut self, i: usize, poll: &Poll) {
        let stats = self.ctx.stats;
        let mut touched = vec![i];
        let dir = self.dir();
        while let Some(ev) = self.conns[i]
            .as_mut()
            .and_then(|c| engine(&mut c.session, dir).poll_event())
        {
            match ev {
                ServerEvent::Bound { user, .. } => {
                    stats.bound.fetch_add(1, Ordering::Relaxed);
                    let bare = format!("{user}@{}", self.ctx.cfg.domain);
                    self.online.insert(&bare, Where::Here(i as u32));
                    let told = self.tell_home(&bare, &Note::Online(&bare));
                    if let Some(c) = self.conns[i].as_mut() {
                        c.bound = true;
                        c.held = u32::from(told);
                    }
                }
                ServerEvent::Available { stanza } => {
                    let Some(me) = self.bare_of(i) else { continue };
                    let user = me.split('@').next().unwrap_or("").to_string();
                    let mine = self.conns[i]
                        .as_ref()
                        .map(|c| c.session.jid().to_string())
                        .unwrap_or_default();
                    for contact in self.ctx.cfg.accounts.roster(&user) {
                        if contact == me {
                            continue;
                        }
                        self.route(&contact, &stanza, true, &mut touched);
                        // Theirs back to me: its full JID is only known where it lives,
                        // so ask for it with a probe the other side answers.
                        let probe =
                            format!("<presence type='probe' from='{mine}' to='{contact}'/>");
                        self.route(&contact, probe.as_bytes(), true, &mut touched);
                    }
                }
                ServerEvent::Unavailable { stanza } => {
                    let Some(me) = self.bare_of(i) else { continue };
                    let user = me.split('@').next().unwrap_or("").to_string();
                    for contact in self.ctx.cfg.accounts.roster(&user) {
                        if contact != me {
                            self.route(&contact, &stanza, true, &mut touched);
                        }
                    }
                }
                ServerEvent::Route { to, stanza } => {
                    let bare = to.split('/').next().unwrap_or("").to_string();
                    self.route(&bare, &stanza, false, &mut touched);
                }
                ServerEvent::Closed { error } => {
                    if let Some(e) = error {
                        stats.closed_error.fetch_add(1, Ordering::Relaxed);
                        if wirebench_xmpp::server::closed_for_input(&e)
                            && let Some(c) = &self.conns[i]
                        {
                            wirebench_net::ban::strike_peer(&c.stream);
                        }
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

    /// Hands `stanza` from one of this worker's sessions to `bare`'s session: here
    /// directly; else to the worker that has it, if this is `bare`'s home; else to `bare`'s
    /// home, which passes it on (links are written at the end of this loop iteration).
    /// `presence`: a roster broadcast, for which an offline contact is no failure.
    fn route(&mut self, bare: &str, stanza: &[u8], presence: bool, touched: &mut Vec<usize>) {
        let stats = self.ctx.stats;
        let to = match (self.online.get(bare), self.home_elsewhere(bare)) {
            (Some(Where::Here(j)), _) => {
                if !presence {
                    stats.routed.fetch_add(1, Ordering::Relaxed);
                }
                return self.deliver_local(j as usize, bare, stanza, touched);
            }
            (Some(Where::At(w)), None) => w as usize,
            (None, Some(home)) => home,
            // At its home (here) and not online, or a stale entry at a home elsewhere
            // (cannot happen: entries for users homed elsewhere are only this worker's own).
            (None, None) | (Some(Where::At(_)), Some(_)) => {
                if !presence {
                    stats.unroutable.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
        };
        if !presence {
            stats.routed.fetch_add(1, Ordering::Relaxed);
            stats.routed_across.fetch_add(1, Ordering::Relaxed);
        }
        self.push_stanza(to, bare, stanza, presence);
    }

    /// Queues a stanza for `bare` on the link to worker `w`.
    fn push_stanza(&mut self, w: usize, bare: &str, body: &[u8], presence: bool) {
        let Some(link) = self.links.get_mut(w).and_then(Option::as_mut) else {
            return;
        };
        let note = if presence {
            Note::Presence { to: bare, body }
        } else {
            Note::Stanza { to: bare, body }
        };
        if link.push(&note) {
            self.ctx.stats.cross_worker.fetch_add(1, Ordering::Relaxed);
        } else {
            self.ctx.stats.dropped_link.fetch_add(1, Ordering::Relaxed);
        }
        if link.backlog() > fabric::PAUSE_READS_AT && !self.paused {
            self.paused = true;
            self.ctx.stats.read_pauses.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Reads the sessions stalled while a link was too far behind, once every link is
    /// down to [`fabric::RESUME_READS_AT`] (after `flush_links`).
    fn resume(&mut self, poll: &Poll) {
        if !self.paused {
            return;
        }
        let behind = self
            .links
            .iter()
            .flatten()
            .any(|l| l.backlog() > fabric::RESUME_READS_AT);
        if behind {
            return;
        }
        self.paused = false;
        let mut stalled = std::mem::take(&mut self.stalled);
        stalled.sort_unstable();
        stalled.dedup();
        for i in stalled {
            // Read to the end (the readiness was used up): a session that pauses again
            // goes back on the list.
            self.read(i, poll, true);
        }
    }

    /// Delivers to slot `j` if it still holds `bare`'s session; a presence probe is
    /// answered with the session's own presence.
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
            self.route(&from_bare, reply.as_bytes(), true, touched);
            return;
        }
        c.session.deliver(stanza);
        touched.push(j);
    }

    /// What worker `w` sent.
    fn receive(&mut self, w: usize, poll: &Poll) -> io::Result<()> {
        let Some(link) = self.links[w].as_mut() else {
            return Ok(());
        };
        let filled = link.fill(&mut self.buf);
        let rx = link.take_received();
        let mut touched = Vec::new();
        let mut at = 0;
        let mut bad = None;
        loop {
            let note = match fabric::decode(&rx[at..]) {
                Ok(Some((note, used))) => {
                    at += used;
                    note
                }
                Ok(None) => break,
                Err(e) => {
                    bad = Some(e);
                    break;
                }
            };
            self.handle_note(w, note, &mut touched);
        }
        if let Some(l) = self.links[w].as_mut() {
            l.restore(rx, at);
        }
        touched.sort_unstable();
        touched.dedup();
        for j in touched {
            self.flush(j, poll);
        }
        let failed = match (filled, bad) {
            (_, Some(e)) => Some(io::Error::other(format!("bad frame: {e}"))),
            (Err(e), None) => Some(e),
            (Ok(()), None) => None,
        };
        if let Some(e) = failed {
            // Workers stop one by one at shutdown (the parent signals each in turn), so a
            // link may close just before this worker is told to stop: losing one is
            // fatal only if no stop follows within LINK_GRACE (checked in the loop).
            self.forget(w, poll);
            if !self.ctx.shutdown.load(Ordering::Relaxed) && self.lost.is_none() {
                let e = io::Error::new(
                    e.kind(),
                    format!("worker {} lost its link to worker {w}: {e}", self.ctx.id),
                );
                self.lost = Some((Instant::now(), e));
            }
        }
        Ok(())
    }

    /// Stops watching the link to `w` (it closed at shutdown).
    fn forget(&mut self, w: usize, poll: &Poll) {
        if let Some(mut l) = self.links[w].take() {
            let _ = poll.registry().deregister(&mut l.stream);
        }
    }

    fn handle_note(&mut self, w: usize, note: Note, touched: &mut Vec<usize>) {
        match note {
            Note::Online(bare) => {
                // A session of ours for the same user wins: it is the one we can reach.
                if !matches!(self.online.get(bare), Some(Where::Here(_))) {
                    self.online.insert(bare, Where::At(w as u16));
                }
                if let Some(l) = self.links[w].as_mut() {
                    l.push(&Note::Ack(bare));
                }
            }
            Note::Ack(bare) => {
                if let Some(Where::Here(j)) = self.online.get(bare)
                    && let Some(c) = self.conns[j as usize].as_mut()
                    && c.held > 0
                {
                    c.held -= 1;
                    if c.held == 0 {
                        touched.push(j as usize);
                    }
                }
            }
            Note::Offline(bare) => {
                if self.online.get(bare) == Some(Where::At(w as u16)) {
                    self.online.remove(bare);
                }
            }
            Note::Stanza { to, body } => self.arrived(w, to, body, false, touched),
            Note::Presence { to, body } => self.arrived(w, to, body, true, touched),
        }
    }

    /// A stanza from worker `w` for `to`: delivered if its session is here, passed on if
    /// this is `to`'s home and the session is on a third worker (the second and last hop),
    /// otherwise undeliverable (counted, unless a roster presence).
    fn arrived(
        &mut self,
        w: usize,
        to: &str,
        body: &[u8],
        presence: bool,
        touched: &mut Vec<usize>,
    ) {
        match self.online.get(to) {
            Some(Where::Here(j)) => self.deliver_local(j as usize, to, body, touched),
            Some(Where::At(owner)) if owner as usize != w && self.home_elsewhere(to).is_none() => {
                self.push_stanza(owner as usize, to, body, presence);
            }
            _ if presence => {}
            _ => {
                self.ctx.stats.unroutable.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Writes every link's queued notes; a link that cannot take them all now is watched
    /// for writable readiness.
    fn flush_links(&mut self, poll: &Poll) -> io::Result<()> {
        for (w, link) in self.links.iter_mut().enumerate() {
            let Some(l) = link else { continue };
            if !l.has_backlog() && !l.writable {
                continue;
            }
            if l.backlog() > fabric::RESUME_READS_AT {
                let b = l.backlog() as u64;
                self.ctx
                    .stats
                    .link_backlog_peak
                    .fetch_max(b, Ordering::Relaxed);
            }
            if let Err(e) = l.flush() {
                if self.ctx.shutdown.load(Ordering::Relaxed) {
                    continue;
                }
                return Err(io::Error::new(
                    e.kind(),
                    format!("worker {} cannot write to worker {w}: {e}", self.ctx.id),
                ));
            }
            let want = l.has_backlog();
            if want != l.writable {
                let interest = if want {
                    Interest::READABLE | Interest::WRITABLE
                } else {
                    Interest::READABLE
                };
                poll.registry()
                    .reregister(&mut l.stream, Token(LINK0 - w), interest)?;
                l.writable = want;
            }
        }
        Ok(())
    }

    /// The accounts every session authenticates against; a reference that outlives the
    /// borrow of `self`, so it can sit beside a borrowed session.
    fn dir(&self) -> &'a dyn Directory {
        &self.ctx.cfg.accounts
    }

    fn bare_of(&self, i: usize) -> Option<String> {
        let c = self.conns[i].as_ref()?;
        Some(c.session.jid().split('/').next()?.to_string())
    }

    /// Writes what the session has queued; closes the connection when the session is over
    /// and everything is written, or when the client is too slow to take its output.
    fn flush(&mut self, i: usize, poll: &Poll) {
        let dir = self.dir();
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        // Into an empty `pending` the session's queue is swapped, not copied.
        engine(&mut c.session, dir).poll_transmit(0, &mut c.pending);
        let broken =
            c.held == 0 && edge::write_pending(&mut c.stream, &mut c.pending) == Output::Broken;
        if c.pending.len() > self.ctx.cfg.max_queued {
            self.ctx.stats.closed_slow.fetch_add(1, Ordering::Relaxed);
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
        if edge::release_idle(&mut c.pending) {
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
        if c.bound {
            let bare = c.session.jid().split('/').next().unwrap_or("");
            if self.online.get(bare) == Some(Where::Here(i as u32)) {
                self.online.remove(bare);
                let bare = bare.to_string();
                self.tell_home(&bare, &Note::Offline(&bare));
            }
        }
        self.free.push(i);
        self.ctx.stats.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Closes sessions that did not bind in time.
    fn sweep(&mut self, poll: &Poll) {
        let limit = self.ctx.cfg.handshake_timeout;
        for i in 0..self.conns.len() {
            let late = self.conns[i]
                .as_ref()
                .is_some_and(|c| !c.bound && c.opened.elapsed() > limit);
            if late {
                self.ctx
                    .stats
                    .closed_timeout
                    .fetch_add(1, Ordering::Relaxed);
                self.drop_conn(i, poll);
            }
        }
    }
}

/// Session `session` as the one engine shape, with the accounts it authenticates against:
/// built per call, at no cost (two references).
fn engine<'s>(session: &'s mut ServerSession, dir: &'s dyn Directory) -> ServerEngine<'s> {
    ServerEngine { session, dir }
}

/// The `from` of a `<presence type='probe'>` the router made, if `stanza` is one.
fn probe_from(stanza: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(stanza).ok()?;
    let rest = s.strip_prefix("<presence type='probe' from='")?;
    rest.split('\'').next()
}

/// A worker's listener, handed over to its event loop.
pub(crate) fn mio_listener(l: std::net::TcpListener) -> io::Result<TcpListener> {
    l.set_nonblocking(true)?;
    Ok(TcpListener::from_std(l))
}
