//! Per-case servers. A request/response protocol's server runs in this process, on a
//! thread of its own with a single-threaded tokio runtime: in the lab's server host when
//! the case has a link (the thread enters that network namespace, so its sockets live
//! there), on loopback otherwise. It is started for the case with the case's behaviour
//! (think time, payload pattern, size limit) and stopped when the case ends, which is how
//! this tool "switches protocols on demand" where Soap-Stone sent control commands.

use bytes::Bytes;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wirebench_model::clock::monotonic_ns;
use wirebench_net::cap::{ConnCap, LogLimit};
use wirebench_net::threads::ServerThread;
use wirebench_payload::Pattern;
use wirebench_protocol::WorkloadError;
use wirebench_protocol::{AloneLimits, Hosts};

/// What the server does with each message, fixed for the case.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// Wait before answering (ping-pong's think time; excluded from RTTs by the client).
    pub think: Duration,
    /// The payload pattern the client sends, to verify every message.
    pub pattern: Arc<Pattern>,
    /// Largest payload accepted; a larger body closes the connection with an error.
    pub max_payload: usize,
    pub nodelay: bool,
    /// How long a connection may go without beginning a request (HTTP: the first one
    /// and, with none open, the next, [`within_limit`]; WebSocket: its upgrade) before it
    /// is closed; `None` for a case's own servers, which only our client reaches (the
    /// HTTP server then still closes a connection silent for 30 s).
    pub header_timeout: Option<Duration>,
    /// The cap on open connections of a server run alone (`serve --also`); `None` for a
    /// case's own servers.
    pub cap: Option<Arc<ConnCap>>,
    /// Where a server run alone reports the clients it closes, when it does.
    pub closes: Option<Arc<CloseLog>>,
    /// Whether a connection closed for what its client sent counts against its source
    /// ([`wirebench_net::ban::strike`]): for a server run alone, which anyone who can
    /// reach its port may misuse; not for a case's own, which only our client reaches.
    pub strikes: bool,
    /// HTTP/2 streams one connection may have open at once: [`CASE_MAX_STREAMS`] for a
    /// case's own server, `serve --also-max-streams` for one run alone. Also the streams
    /// the server may reset on one connection for the client's doing (over this cap, a
    /// broken request) before it closes it with GOAWAY ENHANCE_YOUR_CALM: a client that
    /// never reads its replies holds `max_streams` streams, then is refused, and would
    /// otherwise be refused 1,024 times (h2's default) at the server's expense.
    pub max_streams: u32,
}

/// A case's own HTTP/2 and gRPC servers take as many streams at once as the client keeps
/// in flight on a connection at most (the workload's open-loop cap).
pub const CASE_MAX_STREAMS: u32 = 1024;

/// Why a server closed a connection, and whether for what its client sent (bytes that
/// are not the protocol, a head or frame over a cap: [`Closed::input`]) rather than a
/// timeout, a reset or a failure of ours.
#[derive(Debug)]
pub struct Closed {
    pub why: String,
    pub for_input: bool,
}

impl Closed {
    /// Closed for what the client sent.
    pub fn input(why: impl Into<String>) -> Closed {
        Closed {
            why: why.into(),
            for_input: true,
        }
    }

    /// Closed for `e`, an error of hyper or h2 (perhaps boxed): for the client's input
    /// when it is a parse error (an HTTP/1 head that is not HTTP or is over the cap) or
    /// an HTTP/2 connection error this end declared (a frame over its size, a broken
    /// frame sequence); `what` prefixes the reason.
    pub fn from_error(what: &str, e: &(dyn std::error::Error + 'static)) -> Closed {
        // hyper's own words are terse ("http2 error"): its sources say what happened
        // ("connection error detected: too_many_internal_resets").
        let mut why = format!("{what}: {e}");
        let mut at = e.source();
        while let Some(s) = at {
            let said = s.to_string();
            if !why.ends_with(&said) {
                why = format!("{why}: {said}");
            }
            at = s.source();
        }
        Closed {
            why,
            for_input: error_is_input(e),
        }
    }
}

impl From<String> for Closed {
    fn from(why: String) -> Closed {
        Closed {
            why,
            for_input: false,
        }
    }
}

fn error_is_input(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(e);
    while let Some(e) = at {
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_parse() || h.is_parse_too_large())
        {
            return true;
        }
        if let Some(h) = e.downcast_ref::<h2::Error>() {
            use h2::Reason;
            // ENHANCE_YOUR_CALM: h2 closes a connection whose streams it had to reset
            // 1,024 times (over the stream cap, broken requests), which no client that
            // heeds SETTINGS_MAX_CONCURRENT_STREAMS meets.
            let broken = [
                Reason::PROTOCOL_ERROR,
                Reason::FRAME_SIZE_ERROR,
                Reason::COMPRESSION_ERROR,
                Reason::ENHANCE_YOUR_CALM,
            ];
            return h.is_library() && h.reason().is_some_and(|r| broken.contains(&r));
        }
        at = e.source();
    }
    false
}

/// The clients a server run alone closes, one line each on stderr (`wirebench serve:
/// http 127.0.0.1:8080 127.0.0.1:50412: no request within 30s; closed`), at most one a
/// second so that a flood cannot fill the operator's terminal: the others are counted
/// into the next line.
#[derive(Debug)]
pub struct CloseLog {
    what: String,
    limit: LogLimit,
}

impl CloseLog {
    pub fn new(what: impl Into<String>) -> CloseLog {
        CloseLog {
            what: what.into(),
            limit: LogLimit::new(),
        }
    }

    /// The connection from `peer` was closed for `why`.
    pub fn closed(&self, peer: SocketAddr, why: &str) {
        self.limit.eprint(|| {
            let end = if why.ends_with("closed") {
                ""
            } else {
                "; closed"
            };
            format!("{} {peer}: {why}{end}", self.what)
        });
    }
}

impl Behaviour {
    pub fn new(seed: u64, payload: usize, think: Duration, nodelay: bool) -> Behaviour {
        Behaviour {
            think,
            pattern: Arc::new(Pattern::new(seed, payload)),
            max_payload: payload,
            nodelay,
            header_timeout: None,
            cap: None,
            closes: None,
            strikes: false,
            max_streams: CASE_MAX_STREAMS,
        }
    }

    /// Whether `body` is message `seq`'s payload.
    pub fn verify(&self, seq: u64, body: &[u8]) -> bool {
        body.len() <= self.pattern.max_payload() && self.pattern.payload(seq, body.len()) == body
    }
}

/// What the server saw, shared with the client side of the case for its notes and with
/// the server's own tasks.
#[derive(Debug, Default)]
pub struct Counters {
    pub messages: AtomicU64,
    pub payload_bytes: AtomicU64,
    /// Messages whose payload was not the pattern.
    pub corrupt: AtomicU64,
    /// Connections closed for breaking the protocol (malformed, oversized, truncated).
    pub rejected: AtomicU64,
    pub last_rx_ns: AtomicU64,
    /// The first rejection's reason, for the case's error or notes.
    pub first_error: std::sync::Mutex<Option<String>>,
    /// CPU time the server's thread used, start to stop (ns): set once it has stopped.
    /// It is the server's own cost, apart from the client's and the emulator's on the
    /// same CPUs.
    pub cpu_ns: AtomicU64,
}

impl Counters {
    /// Counts a message and verifies it; returns whether it was intact.
    pub fn record(&self, b: &Behaviour, seq: u64, body: &[u8]) -> bool {
        let ok = b.verify(seq, body);
        self.messages.fetch_add(1, Ordering::Relaxed);
        self.payload_bytes
            .fetch_add(body.len() as u64, Ordering::Relaxed);
        if !ok {
            self.corrupt.fetch_add(1, Ordering::Relaxed);
        }
        self.last_rx_ns.store(monotonic_ns(), Ordering::Relaxed);
        ok
    }

    /// A connection closed for breaking the protocol; the others carry on.
    pub fn reject(&self, why: impl Into<String>) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            *first = Some(why.into());
        }
    }

    pub fn snapshot(&self) -> Summary {
        Summary {
            messages: self.messages.load(Ordering::Relaxed),
            payload_bytes: self.payload_bytes.load(Ordering::Relaxed),
            corrupt: self.corrupt.load(Ordering::Relaxed),
        }
    }
}

/// A server's count at the end of a one-way stream, as it reports it over the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub messages: u64,
    pub payload_bytes: u64,
    pub corrupt: u64,
}

impl Summary {
    /// `messages payload_bytes corrupt`, the form the protocols carry it in.
    pub fn encode(&self) -> Bytes {
        Bytes::from(format!(
            "{} {} {}",
            self.messages, self.payload_bytes, self.corrupt
        ))
    }

    pub fn decode(b: &[u8]) -> Option<Summary> {
        let s = std::str::from_utf8(b).ok()?;
        let mut it = s.split(' ').map(|w| w.parse::<u64>().ok());
        let s = Summary {
            messages: it.next()??,
            payload_bytes: it.next()??,
            corrupt: it.next()??,
        };
        it.next().is_none().then_some(s)
    }
}

/// A running per-case server; dropping it stops it (its connections are cut), waits
/// for its thread and sets its counters' `cpu_ns`.
pub struct Placed {
    pub addr: SocketAddr,
    pub counters: Arc<Counters>,
    thread: Option<ServerThread>,
}

impl Drop for Placed {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.counters.cpu_ns.store(t.stop(), Ordering::Relaxed);
        }
    }
}

/// The address a case's server listens on: the lab's server host, or loopback.
pub fn server_ip(lab: Option<Hosts>) -> IpAddr {
    match lab {
        Some(_) => IpAddr::V4(wirebench_protocol::hosts::SERVER_ADDR),
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

/// A listening socket with a backlog of 4096 (the kernel's default `somaxconn`), not
/// std's 128: a connect case opens up to 10,000 connections at once, and an overflowing
/// accept queue turns some of them into resets that no real server of that load would
/// send. Accepts are deferred to the client's first bytes
/// ([`wirebench_net::sock::defer_accept`]), except with Multipath TCP, and their unsent
/// bytes limited ([`wirebench_net::sock::limit_unsent`]).
fn listen(addr: SocketAddr, mptcp: bool) -> std::io::Result<std::net::TcpListener> {
    let s = wirebench_net::sock::stream_socket(addr, mptcp)?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    if !mptcp {
        // A second path's join carries no data of its own: not deferred.
        wirebench_net::sock::defer_accept(&s);
    }
    wirebench_net::sock::limit_unsent(&s);
    s.listen(wirebench_net::sock::LISTEN_BACKLOG)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// Starts `serve` on a listener of its own (an ephemeral port of [`server_ip`]) in a
/// thread of its own, inside the lab's server host when there is a lab. `serve` runs
/// until the returned [`Placed`] is dropped.
pub fn place<F, Fut>(lab: Option<Hosts>, what: &str, serve: F) -> Result<Placed, WorkloadError>
where
    F: FnOnce(tokio::net::TcpListener, Arc<Counters>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    place_on(lab, what, false, serve)
}

/// The `open` of [`wirebench_net::threads::spawn`] for a case's server thread: enters
/// the lab's server host (when there is a lab), then listens with `listen`.
pub fn open_in_lab(
    lab: Option<Hosts>,
    listen: impl FnOnce() -> std::io::Result<std::net::TcpListener> + Send + 'static,
    what: String,
) -> impl FnOnce() -> Result<std::net::TcpListener, String> + Send + 'static {
    let netns = lab.map(|l| l.server().name().to_string());
    move || {
        if let Some(ns) = &netns {
            wirebench_protocol::hosts::enter(ns).map_err(|e| e.to_string())?;
        }
        listen().map_err(|e| format!("cannot listen on {what}: {e}"))
    }
}

/// [`place`], listening with Multipath TCP (RFC 8684) when `mptcp`: such a listener
/// takes MPTCP and plain TCP clients alike.
pub fn place_on<F, Fut>(
    lab: Option<Hosts>,
    what: &str,
    mptcp: bool,
    serve: F,
) -> Result<Placed, WorkloadError>
where
    F: FnOnce(tokio::net::TcpListener, Arc<Counters>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let ip = server_ip(lab);
    let counters = Arc::new(Counters::default());
    let c = counters.clone();
    let open = open_in_lab(
        lab,
        move || listen(SocketAddr::new(ip, 0), mptcp),
        ip.to_string(),
    );
    // A LocalSet runs it, so connection tasks need not be Send (see `accept_loop`).
    let thread =
        wirebench_net::threads::spawn(format!("{what}-server"), open, move |l| serve(l, c))
            .map_err(|e| WorkloadError::Environment(format!("{what} server: {e}")))?;
    Ok(Placed {
        addr: thread.addr,
        counters,
        thread: Some(thread),
    })
}

/// Runs `serve` on `listener` in a thread of its own until the process ends (for
/// `wirebench serve --also`): the behaviour of a server no case configures, with no think
/// time, payloads up to `limits.max_payload`, unverified unless the client names its seed
/// 0 pattern's sequence numbers, at most `limits.connections` open.
pub fn serve_alone<F, Fut>(
    listener: std::net::TcpListener,
    what: &str,
    limits: &AloneLimits,
    serve: F,
) -> Result<(), String>
where
    F: FnOnce(tokio::net::TcpListener, Arc<Counters>, Behaviour) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let mut b = Behaviour::new(0, limits.max_payload, Duration::ZERO, true);
    b.cap = Some(limits.connections.clone());
    b.strikes = true;
    b.max_streams = limits.max_streams;
    b.closes = limits
        .log
        .then(|| Arc::new(CloseLog::new(limits.connections.what())));
    spawn_alone(listener, what, b, serve)
}

/// [`serve_alone`] for a server that reads an opening from its clients (HTTP, gRPC,
/// WebSocket): a connection that has not sent it within `limits.header_timeout` is
/// closed ([`Behaviour::header_timeout`]), since anyone who can reach the port may
/// connect.
pub fn serve_alone_timed<F, Fut>(
    listener: std::net::TcpListener,
    what: &str,
    limits: &AloneLimits,
    serve: F,
) -> Result<(), String>
where
    F: FnOnce(tokio::net::TcpListener, Arc<Counters>, Behaviour) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let timeout = limits.header_timeout;
    serve_alone(listener, what, limits, move |l, c, mut b| {
        b.header_timeout = Some(timeout);
        serve(l, c, b)
    })
}

fn spawn_alone<F, Fut>(
    listener: std::net::TcpListener,
    what: &str,
    b: Behaviour,
    serve: F,
) -> Result<(), String>
where
    F: FnOnce(tokio::net::TcpListener, Arc<Counters>, Behaviour) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    wirebench_net::threads::spawn(
        format!("{what}-server"),
        move || Ok(listener),
        move |l| serve(l, Arc::new(Counters::default()), b),
    )
    .map(ServerThread::detach)
}

/// What a connection's service is doing, for [`within_limit`]: requests begun, and
/// those not finished. The service marks each request with [`Activity::begin`].
#[derive(Debug, Default)]
pub struct Activity {
    begun: AtomicU64,
    open: AtomicU64,
}

impl Activity {
    /// A request has begun; it counts as open until the guard is dropped.
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.begun.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::Relaxed);
        Busy(self.clone())
    }
}

/// An open request of an [`Activity`].
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves one connection (`conn`), closing it when `limit` has passed with no request
/// begun and none open: its first request must begin within `limit` of the connect, and
/// after that, when `idle`, a connection with nothing to do is closed within 1 to 2 times
/// `limit` (not for gRPC, whose streams outlive the call that opened them). A
/// client that trickles its request head (HTTP/1.1) or its connection preface (HTTP/2)
/// a byte a second, or connects and never asks, would hold its socket for good
/// otherwise. One timer per connection and period, where hyper's header read timeout
/// arms and drops a timer per request: about 0.7 us more per HTTP/1.1 round trip on
/// loopback, 4%. `None`: no limit.
pub async fn within_limit<Fut, T, E>(
    what: &str,
    limit: Option<Duration>,
    idle: bool,
    activity: &Activity,
    conn: Fut,
) -> Result<T, Closed>
where
    Fut: Future<Output = Result<T, E>>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let failed = |e: E| {
        let e: Box<dyn std::error::Error + Send + Sync> = e.into();
        Closed::from_error(what, &*e)
    };
    let Some(limit) = limit else {
        return conn.await.map_err(failed);
    };
    tokio::pin!(conn);
    let mut seen = 0;
    loop {
        tokio::select! {
            biased;
            r = &mut conn => return r.map_err(failed),
            () = tokio::time::sleep(limit) => {}
        }
        let begun = activity.begun.load(Ordering::Relaxed);
        if begun == seen && activity.open.load(Ordering::Relaxed) == 0 {
            let secs = limit.as_secs_f64();
            return Err(Closed::from(if seen == 0 {
                format!("{what}: no request within {secs}s; closed")
            } else {
                format!("{what}: no request for {secs}s; closed")
            }));
        }
        if !idle {
            return conn.await.map_err(failed);
        }
        seen = begun;
    }
}

/// Accepts connections until stopped (at most [`Behaviour::cap`] open at once), each
/// served by `conn` in a task of its own; a connection's failure is counted (and logged
/// to [`Behaviour::closes`]) and closes only that connection.
pub async fn accept_loop<F, Fut>(
    l: tokio::net::TcpListener,
    b: &Behaviour,
    counters: Arc<Counters>,
    conn: F,
) where
    F: Fn(tokio::net::TcpStream, Arc<Counters>) -> Fut,
    Fut: Future<Output = Result<(), Closed>> + 'static,
{
    let stop = std::future::pending();
    let cap = b.cap.as_ref();
    let strikes = b.strikes;
    wirebench_net::accept::accept_local_capped(&l, stop, Some(b.nodelay), cap, |s, peer| {
        let c = counters.clone();
        let closes = b.closes.clone();
        let fut = conn(s, counters.clone());
        async move {
            if let Err(e) = fut.await {
                if strikes && e.for_input {
                    wirebench_net::ban::strike(peer.ip());
                }
                if let Some(log) = closes {
                    log.closed(peer, &e.why);
                }
                c.reject(e.why);
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_round_trips_and_rejects_junk() {
        let s = Summary {
            messages: 3,
            payload_bytes: 4500,
            corrupt: 1,
        };
        assert_eq!(Summary::decode(&s.encode()), Some(s));
        for junk in ["", "1 2", "1 2 3 4", "a b c", "1  2 3", "-1 2 3"] {
            assert_eq!(Summary::decode(junk.as_bytes()), None, "{junk}");
        }
    }

    #[test]
    fn verifies_against_the_pattern() {
        let b = Behaviour::new(7, 100, Duration::ZERO, true);
        let good = b.pattern.payload(5, 100).to_vec();
        assert!(b.verify(5, &good));
        assert!(!b.verify(6, &good));
        assert!(!b.verify(5, &[0u8; 200]));
    }
}
