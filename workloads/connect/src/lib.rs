//! The connect workload of study S3 (docs/protocols/proxies.md): `connects` fresh
//! connections, `concurrency` of them at a time, each opened to an echo server (the
//! "origin") directly or through a proxy, sent one message of `payload` bytes and timed
//! until the first byte of its echo comes back. Every proxy handshake round trip is paid
//! again on every connection, which is what the study measured.
//!
//! Per connection, three times are kept, each as a distribution (`.min`, `.mean`, `.p50`,
//! `.p90`, `.p99`, `.max` and an HdrHistogram):
//! - `connect.tcp`: the TCP handshake, to the origin or to the proxy;
//! - `connect.proxy`: the proxy's own handshake after it (zero for `direct`);
//! - `ttfb`: from the start of the TCP connect to the first byte of the answer, the figure
//!   S3's CDFs show.
//!
//! Each protocol supplies a [`Dial`]: `direct` (protocols/direct) or a proxy's client (the
//! `socks5` plugin). The origin and any proxy run in the lab's server host, so the emulated link
//! lies between the client and both, and the proxy reaches the origin over that host's
//! own loopback: what a proxy adds is its handshake's round trips on the client's path.
//!
//! Connections are closed with SO_LINGER 0 (a reset, no TIME_WAIT): 30,000 connections a
//! minute from one address would otherwise run out of ephemeral ports.

pub mod allow;
pub mod metrics;
pub mod params;
pub mod plugin;
pub mod proxy;

use crate::metrics::CONNECTS_MPTCP;
use crate::metrics::CONNECTS_PER_S;
use crate::metrics::CONNECTS_TFO;
use crate::metrics::MPTCP_JOINED;
use crate::metrics::MPTCP_SUBFLOWS;
use crate::metrics::PROXY_THREADS;
use crate::metrics::{
    CONNECT_PROXY, CONNECT_PROXY_ROUND_TRIPS, CONNECT_TCP, CONNECT_TCP_ROUND_TRIPS, CONNECTS_OK,
    ORIGIN_CPU_PER_CONNECTION, PATH_RTT, PROXY_BUSIEST_THREAD_CPU_PER_CONNECTION,
    PROXY_CPU_PER_CONNECTION, TTFB, TTFB_ROUND_TRIPS,
};
use futures_util::StreamExt;
use futures_util::future::try_join_all;
pub use plugin::ConnectProtocol;
pub use proxy::{Proxy, place_proxy};
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirebench_model::MetricSpec;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::RATE_ACHIEVED;
use wirebench_model::metric::RATE_OFFERED;
use wirebench_model::metric::RATE_SEND_LAG;
use wirebench_protocol::Fault;
use wirebench_protocol::stats::{histogram, mean, percentile, secs};
use wirebench_protocol::{Case, Ctx, Env, Outcome, TICK, WorkloadError};
use wirebench_rpc::Counters;
use wirebench_rpc::workload::within;

/// A connection's bytes as the workload writes and reads them: the TCP stream itself, or
/// a protocol's layer over it that frames and encrypts in place (Shadowsocks' AEAD), so
/// no relay or extra task sits on the timed path.
pub trait Conn: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin {
    /// The TCP connection underneath (for TCP_INFO and its addresses).
    fn tcp(&self) -> &TcpStream;
}

impl Conn for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

/// A connection ready for its first message, and what opening it took.
pub struct Dialed {
    pub stream: Box<dyn Conn>,
    /// The TCP handshake (to the origin or the proxy), ns.
    pub tcp_ns: u64,
    /// The proxy's handshake after it, ns; 0 without a proxy (or when the handshake
    /// rides with the first message: see `reply`).
    pub proxy_ns: u64,
    /// Bytes sent in front of the first message, in the same write: a 0-RTT protocol's
    /// request, which must share the SYN (TCP Fast Open) with the message.
    pub prefix: Vec<u8>,
    /// Reads the proxy's reply off the front of the answer: `Ok(None)` while incomplete,
    /// `Ok(Some(n))` once its `n` bytes are in, an error for a refusal. Its arrival,
    /// from the first write, is then the connection's `connect.proxy`.
    pub reply: Option<ReplyReader>,
}

/// See [`Dialed::reply`].
pub type ReplyReader = fn(&[u8]) -> Result<Option<usize>, WorkloadError>;

impl Dialed {
    /// A connection ready for the first message, nothing to add or strip.
    pub fn plain(stream: impl Conn + 'static, tcp_ns: u64, proxy_ns: u64) -> Dialed {
        Dialed {
            stream: Box::new(stream),
            tcp_ns,
            proxy_ns,
            prefix: Vec::new(),
            reply: None,
        }
    }
}

/// How a protocol opens a connection to the origin.
pub trait Dial {
    /// Opens a connection that reaches `origin`, through whatever the protocol puts
    /// between, and returns it with its phases timed.
    fn dial(
        &self,
        origin: SocketAddr,
    ) -> impl std::future::Future<Output = Result<Dialed, WorkloadError>>;
}

/// Opens a TCP connection to `addr` with the workload's socket options, and how long
/// the handshake took (ns).
pub async fn tcp(addr: SocketAddr) -> Result<(TcpStream, u64), WorkloadError> {
    open(addr, false, false).await
}

/// Like [`tcp`], with `TCP_FASTOPEN_CONNECT` (RFC 7413): with a cookie for `addr`, the
/// kernel returns from `connect` at once and sends the SYN with the first write, carrying
/// it; without one (the first connection), the handshake is ordinary and fetches one.
pub async fn tcp_fast_open(addr: SocketAddr) -> Result<(TcpStream, u64), WorkloadError> {
    open(addr, true, false).await
}

tokio::task_local! {
    /// The source port the connection being dialled binds to, when the workload chooses
    /// it (see [`run`]).
    static SOURCE_PORT: u16;
}

/// Connection `k`'s source port over per-connection paths: the same `k` of every case
/// leaves from the same port and so crosses the same path (`link.paths` draws from the
/// client-side endpoint, TCP's and UDP's alike). 40,000 ports, clear of the well-known
/// ones.
pub fn source_port(k: u64) -> u16 {
    20_000 + (k % 40_000) as u16
}

/// A first hop as the case asks: TCP Fast Open when `tfo`, Multipath TCP (RFC 8684)
/// when `mptcp` (falling back to TCP if the other end does not speak it). Returns the
/// stream, with Nagle off and a reset on close, and the handshake's time (ns).
pub async fn open(
    addr: SocketAddr,
    tfo: bool,
    mptcp: bool,
) -> Result<(TcpStream, u64), WorkloadError> {
    let fail = |error| WorkloadError::Connect {
        addr: addr.to_string(),
        error,
    };
    let sock = wirebench_net::sock::stream_socket(addr, mptcp).map_err(fail)?;
    if let Ok(port) = SOURCE_PORT.try_with(|p| *p) {
        // Reset on close leaves no TIME_WAIT, but a port may still be in one if the
        // other end closed first; SO_REUSEADDR lets the bind take it then.
        sock.set_reuse_address(true).map_err(fail)?;
        let any: SocketAddr = match addr {
            SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, port).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, port).into(),
        };
        sock.bind(&any.into()).map_err(fail)?;
    }
    if tfo {
        wirebench_net::sock::set_fastopen_connect(&sock).map_err(fail)?;
    }
    sock.set_nonblocking(true).map_err(fail)?;
    let sock = tokio::net::TcpSocket::from_std_stream(std::net::TcpStream::from(sock));
    let t = monotonic_ns();
    let s = sock.connect(addr).await.map_err(fail)?;
    let took = monotonic_ns() - t;
    let _ = s.set_nodelay(true);
    // A reset on close: no TIME_WAIT to exhaust the ephemeral ports (see the module doc).
    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
    Ok((s, took))
}

/// Round trips a connect case's connection takes to its first byte when its first hop
/// is plain TCP: the handshake and the message, or one when TCP Fast Open carries the
/// message in the SYN (`tfo=on`).
pub fn tcp_round_trips(case: &Case) -> f64 {
    if case.is_on(&params::TFO) { 1.0 } else { 2.0 }
}

/// Turns TCP Fast Open on for a case: client and server bits of `net.ipv4.tcp_fastopen`
/// in both lab hosts (a per-namespace sysctl); on loopback the machine's own setting must
/// already allow it, since a run does not change its host's configuration.
pub fn enable_tfo(lab: Option<wirebench_protocol::Hosts>) -> Result<(), WorkloadError> {
    match lab {
        Some(lab) => {
            for host in [lab.client(), lab.server()] {
                host.run("sysctl", &["-qw", "net.ipv4.tcp_fastopen=3"])
                    .map_err(|e| {
                        WorkloadError::because(Fault::Environment, "enabling TCP Fast Open", e)
                    })?;
            }
            Ok(())
        }
        None => match wirebench_net::sock::tfo_sysctl_problem(
            wirebench_net::sock::tfo_sysctl(),
            true,
            true,
        ) {
            None => Ok(()),
            Some(p) => Err(WorkloadError::Environment(format!(
                "tfo=on on loopback: {p}; or give the case a link (the lab sets it in its own hosts)"
            ))),
        },
    }
}

/// The origin: returns every byte it receives until the client closes. One 16 KiB
/// buffer per connection; a connection's error closes only it.
pub async fn serve_echo(l: tokio::net::TcpListener, counters: Arc<Counters>) {
    serve_echo_with(l, counters, false).await
}

/// [`serve_echo`], with a TCP Fast Open queue on the listener when `tfo`.
pub async fn serve_echo_with(l: tokio::net::TcpListener, counters: Arc<Counters>, tfo: bool) {
    serve_echo_capped(l, counters, tfo, None).await
}

/// [`serve_echo_with`] holding at most `cap`'s connections (`serve --also direct`, an
/// origin run alone); `None`: no cap.
pub async fn serve_echo_capped(
    l: tokio::net::TcpListener,
    counters: Arc<Counters>,
    tfo: bool,
    cap: Option<Arc<wirebench_net::cap::ConnCap>>,
) {
    if tfo && let Err(e) = wirebench_net::sock::set_listener_fastopen(&l) {
        counters.reject(format!("the origin cannot take TCP Fast Open: {e}"));
    }
    let stop = std::future::pending();
    let cap = cap.as_ref();
    wirebench_net::accept::accept_local_capped(&l, stop, Some(true), cap, |mut s, _| {
        let c = counters.clone();
        async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        c.payload_bytes.fetch_add(n as u64, Ordering::Relaxed);
                        if s.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    })
    .await
}

/// A case's connect workload, typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    pub connects: u64,
    pub concurrency: u32,
    pub payload: usize,
    /// TCP Fast Open on the first hop (`tfo=on`).
    pub tfo: bool,
    /// Multipath TCP on the first hop (`mptcp=on`).
    pub mptcp: bool,
    /// Open loop: connections started per second on a fixed schedule (`rate`).
    pub rate: Option<f64>,
}

impl Plan {
    pub fn from_case(case: &Case) -> Result<Plan, WorkloadError> {
        use wirebench_rpc::params::RATE;
        // The spec has a default, so the count is always there.
        let connects = case.count(&params::CONNECTS).unwrap_or_default();
        let rate = match case.text(&RATE) {
            Some(text) => Some(
                wirebench_rpc::params::parse_rate(text)
                    .ok()
                    .filter(|r| *r > 0.0 && r.is_finite())
                    .ok_or_else(|| {
                        WorkloadError::Input(format!(
                            "{}={text}: connections per second above 0, e.g. 500/s",
                            RATE.name
                        ))
                    })?,
            ),
            None => None,
        };
        // In the open loop `concurrency` only bounds the connections in flight; unset,
        // it does not hold the schedule back.
        let concurrency = case
            .count(&params::CONCURRENCY)
            .unwrap_or(if rate.is_some() {
                connects.min(10_000)
            } else {
                1
            });
        if connects == 0 {
            return Err(WorkloadError::Input("connects=0: open at least one".into()));
        }
        let concurrency = u32::try_from(concurrency)
            .ok()
            .filter(|c| (1..=10_000).contains(c) && u64::from(*c) <= connects)
            .ok_or_else(|| {
                WorkloadError::Input(format!(
                    "concurrency={concurrency}: use 1 to 10000, at most connects={connects}"
                ))
            })?;
        let payload = usize::try_from(case.payload())
            .ok()
            .filter(|p| (1..=1 << 20).contains(p))
            .ok_or_else(|| {
                WorkloadError::Input(format!(
                    "payload={}: the connect workload sends 1 byte to 1 MiB (its answer's first byte is the measure)",
                    case.payload()
                ))
            })?;
        Ok(Plan {
            connects,
            concurrency,
            payload,
            tfo: case.is_on(&params::TFO),
            mptcp: case.is_on(&params::MPTCP),
            rate,
        })
        .and_then(|p| {
            if p.tfo && p.mptcp {
                // Seen on Linux 6.18: an MPTCP listener acknowledges the data of a Fast
                // Open SYN but neither reports the connection to epoll nor hands the
                // data to the socket when the handshake's last ACK comes a round trip
                // later, so every connection after the first cookie stalls (a loopback
                // test without delay passes). Refuse rather than measure a stall.
                return Err(WorkloadError::Input(
                    "tfo=on with mptcp=on: this kernel loses a Fast Open SYN's data on a Multipath TCP listener over a path with delay (docs/protocols/proxies.md); use one or the other".into(),
                ));
            }
            Ok(p)
        })
    }
}

/// What [`run_case`] refuses at a case's start, for the plugins' `Protocol::check`: the
/// plan's limits, and TCP Fast Open on a loopback whose setting does not allow it.
pub fn check(case: &Case, at: &wirebench_protocol::Placement) -> Result<(), WorkloadError> {
    let plan = Plan::from_case(case)?;
    if plan.tfo && !at.lab {
        enable_tfo(None)?;
    }
    Ok(())
}

/// A whole connect case: places the origin (in the lab's server host, or on loopback),
/// lets `dialer` place what it needs for that origin (a proxy), runs the workload, and
/// stops everything placed.
pub fn run_case<D: Dial>(
    env: &Env,
    case: &Case,
    ctx: &Ctx,
    dialer: impl FnOnce(SocketAddr) -> Result<(D, Vec<Proxy>), WorkloadError>,
) -> Result<Outcome, WorkloadError> {
    let plan = Plan::from_case(case)?;
    if plan.tfo {
        enable_tfo(env.lab)?;
    }
    let tfo = plan.tfo;
    let origin = wirebench_rpc::place_on(env.lab, "origin", plan.mptcp, move |l, c| {
        serve_echo_with(l, c, tfo)
    })?;
    let (d, proxies) = dialer(origin.addr)?;
    let r = run(&plan, &d, origin.addr, env.lab, ctx);
    // Every thread of every proxy.
    let cpu: Vec<Arc<Counters>> = proxies
        .iter()
        .flat_map(|p| p.counters.iter().cloned())
        .collect();
    let rejected: u64 = cpu.iter().map(|c| c.rejected.load(Ordering::Relaxed)).sum();
    let first = cpu.iter().find_map(|c| {
        c.first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    });
    // Each server's own CPU per connection (all its threads'), known once its threads
    // have stopped: what it would set up per second with CPUs to itself (the client and
    // the emulator share this machine's).
    drop(proxies);
    let origin_cpu = origin.counters.clone();
    drop(origin);
    let per_conn = |c: &[Arc<Counters>], out: &mut Outcome, metric: MetricSpec| {
        let ns: u64 = c.iter().map(|c| c.cpu_ns.load(Ordering::Relaxed)).sum();
        let n = out.value(CONNECTS_OK).unwrap_or(0.0);
        if ns > 0 && n > 0.0 {
            out.put(metric, ns as f64 / 1e9 / n);
        }
    };
    let r = match r {
        Ok(mut out) => {
            per_conn(
                std::slice::from_ref(&origin_cpu),
                &mut out,
                ORIGIN_CPU_PER_CONNECTION,
            );
            if !cpu.is_empty() {
                per_conn(&cpu, &mut out, PROXY_CPU_PER_CONNECTION);
                out.put(PROXY_THREADS, cpu.len() as f64);
                // How evenly the kernel spread the connections over the threads.
                if let Some(busiest) = cpu.iter().max_by_key(|c| c.cpu_ns.load(Ordering::Relaxed)) {
                    per_conn(
                        std::slice::from_ref(busiest),
                        &mut out,
                        PROXY_BUSIEST_THREAD_CPU_PER_CONNECTION,
                    );
                }
            }
            Ok(out)
        }
        other => other,
    };
    let note = (rejected > 0).then(|| {
        format!(
            "the proxy closed {rejected} connection(s) on an error; the first: {}",
            first.unwrap_or_default()
        )
    });
    match (r, note) {
        (Ok(mut out), Some(n)) => {
            out.notes.push(n);
            Ok(out)
        }
        (Err(WorkloadError::InterruptedAfter(mut out)), Some(n)) => {
            out.notes.push(n);
            Err(WorkloadError::InterruptedAfter(out))
        }
        (r, _) => r,
    }
}

/// The three times of each finished connection, ns.
#[derive(Default)]
struct Samples {
    tcp: Vec<u64>,
    proxy: Vec<u64>,
    ttfb: Vec<u64>,
    /// Each connection's round trip on the emulated link (ns), when there is one.
    path: Vec<u64>,
    /// Connections whose SYN carried data the other end accepted.
    syn_data: u64,
    /// Of Multipath TCP connections, the subflows each had joined when its echo was
    /// back (the first subflow not counted).
    joined: Vec<u8>,
}

/// What every connection of a case shares while it runs.
struct Run<'a, D> {
    plan: &'a Plan,
    d: &'a D,
    origin: SocketAddr,
    lab: Option<wirebench_protocol::Hosts<'a>>,
    ctx: &'a Ctx<'a>,
    /// Over per-connection paths, every case gives its connection k the same path, so
    /// variants are compared over one population (see `source_port`).
    common_paths: bool,
    message: Vec<u8>,
    samples: RefCell<Samples>,
    done: Cell<u64>,
    /// The next connection to open: lanes take them as they come free, so one lane
    /// stuck on a slow path (a drawn round trip of seconds) does not hold back a fixed
    /// share.
    next: Cell<u64>,
    /// Open loop: how late each connection started (`rate.send_lag`).
    lag: RefCell<Vec<u64>>,
    t0: u64,
}

/// Runs `plan` through `d` to `origin` on a single-threaded runtime of this thread.
/// With a `lab`, each connection's path round trip is read from it, so the times can be
/// given in round trips of the connection's own path.
pub fn run<D: Dial>(
    plan: &Plan,
    d: &D,
    origin: SocketAddr,
    lab: Option<wirebench_protocol::Hosts>,
    ctx: &Ctx,
) -> Result<Outcome, WorkloadError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| WorkloadError::because(Fault::Environment, "cannot start a runtime", e))?;
    let run = Run {
        plan,
        d,
        origin,
        lab,
        ctx,
        common_paths: lab.is_some_and(|l| l.has_paths()),
        message: (0..plan.payload).map(|i| (i % 251) as u8).collect(),
        samples: RefCell::new(Samples::default()),
        done: Cell::new(0u64),
        next: Cell::new(0u64),
        lag: RefCell::new(Vec::new()),
        t0: monotonic_ns(),
    };
    let report = async {
        loop {
            (ctx.progress)(run.done.get(), plan.connects);
            tokio::time::sleep(TICK).await;
            if ctx.shutdown.load(Ordering::Relaxed) {
                return;
            }
        }
    };
    let r = rt.block_on(async {
        let work = async {
            match plan.rate {
                Some(rate) => run.open_loop(rate).await,
                None => run.closed_loop().await,
            }
        };
        tokio::select! {
            r = work => r,
            _ = report => Err(WorkloadError::Interrupted),
        }
    });
    let elapsed = monotonic_ns() - run.t0;
    let s = run.samples.into_inner();
    let lag = run.lag.into_inner();
    match r {
        Ok(()) => {
            (ctx.progress)(plan.connects, plan.connects);
            Ok(outcome(plan, s, &lag, elapsed))
        }
        Err(WorkloadError::Interrupted) if !s.ttfb.is_empty() => {
            let n = s.ttfb.len();
            let mut out = outcome(plan, s, &lag, elapsed);
            out.notes.push(format!(
                "interrupted after {n} of {} connections: the metrics cover those",
                plan.connects
            ));
            Err(WorkloadError::InterruptedAfter(Box::new(out)))
        }
        Err(e) => Err(e),
    }
}

impl<D: Dial> Run<'_, D> {
    /// One connection, start to finish: `k` picks its source port over shared paths.
    async fn one(&self, k: u64) -> Result<(), WorkloadError> {
        let (ctx, d, origin) = (self.ctx, self.d, self.origin);
        let start = monotonic_ns();
        let Dialed {
            mut stream,
            tcp_ns,
            proxy_ns,
            prefix,
            reply,
        } = within(ctx.connect_timeout, "connecting", async {
            if self.common_paths {
                SOURCE_PORT.scope(source_port(k), d.dial(origin)).await
            } else {
                d.dial(origin).await
            }
        })
        .await?;
        let (ttfb, replied) = within(
            ctx.stall_timeout,
            "waiting for the first byte",
            exchange(&mut stream, &prefix, &self.message, reply, start),
        )
        .await?;
        let proxy_ns = replied.unwrap_or(proxy_ns);
        let syn_data = wirebench_net::sock::syn_data_acked(stream.tcp());
        let joined = wirebench_net::sock::mptcp_subflows(stream.tcp());
        let path = self
            .lab
            .and_then(|l| l.path_rtt_ns(stream.tcp().local_addr().ok()?));
        drop(stream);
        let mut s = self.samples.borrow_mut();
        s.path.extend(path);
        s.joined.extend(joined);
        s.syn_data += u64::from(syn_data);
        s.tcp.push(tcp_ns);
        s.proxy.push(proxy_ns);
        s.ttfb.push(ttfb);
        self.done.set(self.done.get() + 1);
        Ok(())
    }

    /// Closed loop: `concurrency` lanes, each opening the next connection when its last
    /// one is done.
    async fn closed_loop(&self) -> Result<(), WorkloadError> {
        let lanes = (0..self.plan.concurrency).map(|_| async move {
            while self.next.get() < self.plan.connects {
                let k = self.next.get();
                self.next.set(k + 1);
                self.one(k).await?;
            }
            Ok::<(), WorkloadError>(())
        });
        try_join_all(lanes).await.map(|_| ())
    }

    /// Open loop: connection k starts at t0 + k / rate whatever the others are doing, up
    /// to `concurrency` in flight; how late each started is kept.
    async fn open_loop(&self, rate: f64) -> Result<(), WorkloadError> {
        let plan = self.plan;
        let mut inflight = futures_util::stream::FuturesUnordered::new();
        for k in 0..plan.connects {
            let due = self.t0 + (k as f64 / rate * 1e9) as u64;
            loop {
                let now = monotonic_ns();
                if now >= due {
                    break;
                }
                let wait = tokio::time::sleep(Duration::from_nanos(due - now));
                tokio::select! {
                    Some(r) = inflight.next(), if !inflight.is_empty() => r?,
                    _ = wait => {}
                }
            }
            while inflight.len() >= plan.concurrency as usize {
                if let Some(r) = inflight.next().await {
                    r?;
                }
            }
            self.lag
                .borrow_mut()
                .push(monotonic_ns().saturating_sub(due));
            inflight.push(self.one(k));
        }
        while let Some(r) = inflight.next().await {
            r?;
        }
        Ok(())
    }
}

/// Sends `prefix` and `message` in one write, reads the proxy's reply off the front of
/// the answer when there is one, then the echo, whole. Returns the time from `start` to
/// the echo's first byte, and from the write to the reply's completion.
async fn exchange<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + ?Sized>(
    s: &mut S,
    prefix: &[u8],
    message: &[u8],
    reply: Option<ReplyReader>,
    start: u64,
) -> Result<(u64, Option<u64>), WorkloadError> {
    let io = |during: &'static str| move |error| WorkloadError::Io { during, error };
    let sent_at = monotonic_ns();
    if prefix.is_empty() {
        s.write_all(message).await
    } else {
        let mut both = Vec::with_capacity(prefix.len() + message.len());
        both.extend_from_slice(prefix);
        both.extend_from_slice(message);
        s.write_all(&both).await
    }
    .map_err(io("sending the first message"))?;
    // Free on a TcpStream; a layer may hold bytes until it is flushed.
    s.flush().await.map_err(io("sending the first message"))?;
    let mut buf = vec![0u8; message.len().clamp(1024, 64 * 1024)];
    // The reply, then whatever of the echo came with it.
    let mut pending: Vec<u8> = Vec::new();
    let mut replied = None;
    if let Some(parse) = reply {
        loop {
            if let Some(n) = parse(&pending)? {
                replied = Some(monotonic_ns() - sent_at);
                pending.drain(..n);
                break;
            }
            if pending.len() > 64 * 1024 {
                return Err(WorkloadError::Peer(
                    "the proxy's reply is over 64 KiB".into(),
                ));
            }
            let n = s
                .read(&mut buf)
                .await
                .map_err(io("reading the proxy's reply"))?;
            if n == 0 {
                return Err(WorkloadError::Closed {
                    during: "waiting for the proxy's reply",
                });
            }
            pending.extend_from_slice(&buf[..n]);
        }
    }
    let mut got = 0usize;
    let mut first = None;
    let mut check = |chunk: &[u8], got: &mut usize| {
        first.get_or_insert_with(monotonic_ns);
        let end = (*got + chunk.len()).min(message.len());
        if chunk.len() > message.len() - *got || chunk != &message[*got..end] {
            return Err(WorkloadError::Peer(format!(
                "the answer differs from the message at byte {got} or after: the path altered it"
            )));
        }
        *got += chunk.len();
        Ok(())
    };
    if !pending.is_empty() {
        check(&pending, &mut got)?;
    }
    while got < message.len() {
        let want = (message.len() - got).min(buf.len());
        let n = s
            .read(&mut buf[..want])
            .await
            .map_err(io("reading the answer"))?;
        if n == 0 {
            return Err(WorkloadError::Closed {
                during: "waiting for the answer",
            });
        }
        check(&buf[..n], &mut got)?;
    }
    Ok((first.unwrap_or(start) - start, replied))
}

/// `name.min`, `.mean`, `.p50`, `.p90`, `.p99`, `.max` of dimensionless values.
/// `dist`'s mean and nearest-rank percentiles of `v`, ratios (round trips) not times.
pub fn push_ratios(out: &mut Outcome, dist: MetricSpec, mut v: Vec<f64>) {
    if v.is_empty() {
        return;
    }
    v.sort_unstable_by(f64::total_cmp);
    out.put(dist.at("mean"), v.iter().sum::<f64>() / v.len() as f64);
    for (q_name, q) in [
        ("min", 0.0),
        ("p50", 50.0),
        ("p90", 90.0),
        ("p99", 99.0),
        ("max", 100.0),
    ] {
        // Nearest rank, as `stats::percentile` does for the times.
        let i = ((q / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        out.put(dist.at(q_name), v[i]);
    }
}

/// A distribution of times (ns) declared with [`STATS`](wirebench_model::metric::STATS):
/// its `min`, `mean`, `p50`, `p90`, `p99`, `max` and its histogram, named as it is.
pub fn push_distribution(out: &mut Outcome, dist: MetricSpec, samples: &[u64]) {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    if let Some(m) = mean(&sorted) {
        out.put(dist.at("mean"), m / 1e9);
    }
    for (q_name, q) in [
        ("min", 0.0),
        ("p50", 50.0),
        ("p90", 90.0),
        ("p99", 99.0),
        ("max", 100.0),
    ] {
        if let Some(v) = percentile(&sorted, q) {
            out.put(dist.at(q_name), secs(v));
        }
    }
    out.histograms.push((dist.name.into(), histogram(samples)));
}

/// `ttfb.*`: [`push_distribution`] and study S3's own reading points, the slowest 15%
/// and 5% of connections (p85, p95).
pub fn push_ttfb(out: &mut Outcome, samples: &[u64]) {
    push_distribution(out, TTFB, samples);
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    for (q_name, q) in [("p85", 85.0), ("p95", 95.0)] {
        if let Some(v) = percentile(&sorted, q) {
            out.put(TTFB.at(q_name), secs(v));
        }
    }
}

fn outcome(plan: &Plan, s: Samples, lag: &[u64], elapsed: u64) -> Outcome {
    let mut out = Outcome::default();
    let n = s.ttfb.len() as u64;
    out.put(CONNECTS_OK, n as f64);
    if elapsed > 0 {
        out.put(CONNECTS_PER_S, n as f64 / secs(elapsed));
    }
    if let Some(rate) = plan.rate {
        out.put_in(RATE_OFFERED, rate, "conn/s");
        if elapsed > 0 {
            out.put_in(RATE_ACHIEVED, n as f64 / secs(elapsed), "conn/s");
        }
        let mut sorted = lag.to_vec();
        sorted.sort_unstable();
        for (q_name, q) in [("p50", 50.0), ("p99", 99.0), ("max", 100.0)] {
            if let Some(v) = percentile(&sorted, q) {
                out.put(RATE_SEND_LAG.at(q_name), secs(v));
            }
        }
        out.notes.push(format!(
            "open loop: a connection every {:.3} ms, at most {} in flight",
            1e3 / rate,
            plan.concurrency
        ));
    }
    if plan.tfo {
        out.put(CONNECTS_TFO, s.syn_data as f64);
        out.notes.push(format!(
            "TCP Fast Open: {} of {n} connections carried their message in the SYN (the first fetches the cookie)",
            s.syn_data
        ));
    }
    if plan.mptcp {
        let n_mp = s.joined.len();
        out.put(CONNECTS_MPTCP, n_mp as f64);
        if n_mp > 0 {
            let sum: u64 = s.joined.iter().map(|j| u64::from(*j)).sum();
            let with = s.joined.iter().filter(|j| **j > 0).count();
            out.put(MPTCP_SUBFLOWS.at("mean"), sum as f64 / n_mp as f64);
            out.put(
                MPTCP_SUBFLOWS.at("max"),
                f64::from(*s.joined.iter().max().unwrap_or(&0)),
            );
            out.put(MPTCP_JOINED, with as f64);
        }
        out.notes.push(format!(
            "Multipath TCP: {n_mp} of {n} connections spoke it (the rest fell back to TCP); {} had joined a subflow when their echo was back",
            s.joined.iter().filter(|j| **j > 0).count()
        ));
    }
    push_distribution(&mut out, CONNECT_TCP, &s.tcp);
    push_distribution(&mut out, CONNECT_PROXY, &s.proxy);
    push_ttfb(&mut out, &s.ttfb);
    // Over a link: each connection's times in round trips of its own path, the cost of
    // each handshake read off the measurement (a path without delay has no round trip
    // to count in).
    if s.path.len() == s.ttfb.len() && s.path.iter().all(|p| *p > 0) {
        push_distribution(&mut out, PATH_RTT, &s.path);
        let per_path = |v: &[u64]| -> Vec<f64> {
            v.iter()
                .zip(&s.path)
                .map(|(t, p)| *t as f64 / *p as f64)
                .collect()
        };
        push_ratios(&mut out, TTFB_ROUND_TRIPS, per_path(&s.ttfb));
        push_ratios(&mut out, CONNECT_TCP_ROUND_TRIPS, per_path(&s.tcp));
        push_ratios(&mut out, CONNECT_PROXY_ROUND_TRIPS, per_path(&s.proxy));
    }
    // Per connection, in order: the per-connection chart and the CDF.
    out.rounds = Some(s.ttfb);
    if plan.concurrency > 1 && plan.rate.is_none() {
        out.notes.push(format!(
            "{} connections, {} at a time",
            plan.connects, plan.concurrency
        ));
    }
    out
}
