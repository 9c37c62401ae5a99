//! Browser transports in front of an XMPP server: an RFC 7395 WebSocket endpoint
//! ([`ws`]), a XEP-0124/0206 BOSH connection manager ([`bosh`]) and a SockJS 0.3.3
//! endpoint ([`sockjs`]), all *gateways*: each
//! session opens its own TCP connection to the XMPP server (the built-in one, or any
//! other) and the sans-IO engines of `wirebench-xmpp-web` translate between the
//! browser's framing and the RFC 6120 stream on it.
//!
//! Why a gateway and not a new front door inside the built-in server's workers: the
//! workers' mio loops own their sockets and speak raw streams; a gateway needs no change
//! to them, serves any XMPP server the same way (Prosody's or ejabberd's c2s port too),
//! and what it adds per stanza is one loopback TCP hop (measured in
//! docs/browser-transports.md). Each endpoint runs on a thread of its own with a
//! single-threaded tokio runtime: one socket readiness wakes the task that moves the
//! bytes, with no hand-off between threads on the way.

pub mod bosh;
pub mod sockjs;
mod stats;
pub mod ws;

pub use stats::WebStats;
pub use wirebench_xmpp_web::BoshConfig;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A running endpoint: its address, counters and thread.
pub struct Endpoint {
    pub addr: SocketAddr,
    pub stats: Arc<WebStats>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Endpoint {
    /// Stops it: open sessions are dropped (their XMPP connections closed).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Which endpoint, with its limits.
#[derive(Debug, Clone)]
pub enum Kind {
    /// `max_rate`: bytes a second one client's messages may bring, with one second's
    /// worth banked (`None`: no limit); see [`ws::Shaper`].
    WebSocket {
        max_stanza: usize,
        max_rate: Option<u64>,
    },
    Bosh(wirebench_xmpp_web::BoshConfig),
    SockJs(sockjs::SockJsOptions),
}

/// How long a connection may take over its opening before it is closed, by default: the
/// WebSocket upgrade; for BOSH and SockJS each HTTP request head, and the wait for the
/// next one on a kept-alive connection (hyper's header read timeout). A client that
/// connects and stalls, or sends its opening a byte a second, would otherwise hold its
/// socket and some KiB for good (bench/hostile.sh's idle and slowloris attacks).
pub const OPENING_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts an endpoint on `listener` in front of the XMPP server at `upstream`, with the
/// default [`OPENING_TIMEOUT`]. `log`: print refusals and errors to stderr (a server run
/// by hand), or stay quiet (tests, cases).
pub fn spawn(
    listener: std::net::TcpListener,
    upstream: SocketAddr,
    kind: Kind,
    log: bool,
) -> std::io::Result<Endpoint> {
    spawn_timed(listener, upstream, kind, OPENING_TIMEOUT, log)
}

/// [`spawn`] with its connections' opening limited to `opening` ([`OPENING_TIMEOUT`]).
pub fn spawn_timed(
    listener: std::net::TcpListener,
    upstream: SocketAddr,
    kind: Kind,
    opening: Duration,
    log: bool,
) -> std::io::Result<Endpoint> {
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let stats = Arc::new(WebStats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (st, sp) = (stats.clone(), stop.clone());
    let name = match kind {
        Kind::WebSocket { .. } => "wb-xmpp-ws",
        Kind::Bosh(_) => "wb-xmpp-bosh",
        Kind::SockJs(_) => "wb-xmpp-sockjs",
    };
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("wirebench: cannot start the {name} runtime: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                let l = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        eprintln!("wirebench: {name}: {e}");
                        return;
                    }
                };
                let serve = async {
                    match kind {
                        Kind::WebSocket {
                            max_stanza,
                            max_rate,
                        } => {
                            let limits = ws::Limits {
                                max_stanza,
                                max_rate,
                                opening,
                            };
                            ws::serve(l, upstream, limits, st, log).await
                        }
                        Kind::Bosh(cfg) => bosh::serve(l, upstream, cfg, opening, st, log).await,
                        Kind::SockJs(o) => sockjs::serve(l, upstream, o, opening, st, log).await,
                    }
                };
                let watch = async {
                    while !sp.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                };
                tokio::select! {
                    () = serve => {}
                    () = watch => {}
                }
            });
            // Dropping the runtime cancels every session's task and closes its sockets.
        })?;
    Ok(Endpoint {
        addr,
        stats,
        stop,
        thread: Some(thread),
    })
}

/// hyper's HTTP/1.1 server for BOSH and SockJS: keep-alive, and every request head
/// (the first too, and the wait for the next) within `opening` and within
/// [`wirebench_net::cap::MAX_HTTP_HEAD`].
fn http1(opening: Duration) -> hyper::server::conn::http1::Builder {
    let mut b = hyper::server::conn::http1::Builder::new();
    b.keep_alive(true)
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(opening)
        .max_buf_size(wirebench_net::cap::MAX_HTTP_HEAD);
    b
}

/// The gateway's connection to the XMPP server, its source address trusted by the bans
/// ([`wirebench_net::ban::trust`]): what it relays is its clients' doing.
fn trusted(up: tokio::net::TcpStream) -> tokio::net::TcpStream {
    if let Ok(a) = up.local_addr() {
        wirebench_net::ban::trust(a.ip());
    }
    up
}

/// Counts, and logs when `log`, a BOSH or SockJS connection closed because its request
/// head did not come within `opening`; the other ends of a connection are the client's
/// to know (and the session's, whose errors are logged where they happen). A request
/// hyper refused (not HTTP, a head over the cap) is a strike against its source
/// ([`wirebench_net::ban`]).
fn connection_ended(
    r: Result<(), hyper::Error>,
    what: &str,
    peer: SocketAddr,
    opening: Duration,
    stats: &WebStats,
    log: bool,
) {
    if let Err(e) = &r
        && (e.is_parse() || e.is_parse_too_large())
    {
        wirebench_net::ban::strike(peer.ip());
    }
    if let Err(e) = r
        && e.is_timeout()
    {
        stats.refused.fetch_add(1, Ordering::Relaxed);
        if log {
            eprintln!(
                "wirebench serve: XMPP {what} {peer}: no request head within {}s; closed",
                opening.as_secs_f64()
            );
        }
    }
}
