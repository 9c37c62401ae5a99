//! The XEP-0124/0206 endpoint: HTTP/1.1 (hyper) in front of a [`Manager`]; each BOSH
//! session gets its own TCP connection to the XMPP server.
//!
//! A request's body goes to the manager at once; its answer is whatever the manager says
//! when it says it: the task reading a session's XMPP connection feeds the manager and
//! delivers any answer it releases in the same wake-up, so a pong leaves as soon as it is
//! read. The one timer (every 100 ms) only answers requests held for `wait` and ends
//! sessions idle for `inactivity`; no data waits for it.
//!
//! Requests must be `POST` (any path; browsers from other origins get CORS headers and
//! their `OPTIONS` preflight answered); bodies over the limit are cut off and refused with
//! `policy-violation`.

use crate::stats::WebStats;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use wirebench_model::clock::monotonic_ns;
use wirebench_xmpp_web::bosh::ReqId;
use wirebench_xmpp_web::{BoshConfig, Manager, Output};

struct Shared {
    m: Manager,
    waiting: HashMap<ReqId, oneshot::Sender<Vec<u8>>>,
    streams: HashMap<String, mpsc::UnboundedSender<Vec<u8>>>,
    next_req: ReqId,
}

type State = Arc<Mutex<Shared>>;

struct Ctx {
    state: State,
    upstream: SocketAddr,
    stats: Arc<WebStats>,
    max_body: usize,
    max_queued: usize,
    log: bool,
    /// Refusals logged at most once a second (a flood of them is one line).
    refusals: wirebench_net::cap::LogLimit,
}

/// A seed no client can guess (session ids derive from it).
fn secret_seed() -> u64 {
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .is_ok()
    {
        return u64::from_le_bytes(b);
    }
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(monotonic_ns());
    h.finish()
}

pub async fn serve(
    l: tokio::net::TcpListener,
    upstream: SocketAddr,
    cfg: BoshConfig,
    opening: std::time::Duration,
    stats: Arc<WebStats>,
    log: bool,
) {
    let max_body = cfg.max_body;
    let max_queued = cfg.max_queued;
    let ctx = Arc::new(Ctx {
        state: Arc::new(Mutex::new(Shared {
            m: Manager::new(cfg, secret_seed()),
            waiting: HashMap::new(),
            streams: HashMap::new(),
            next_req: 1,
        })),
        upstream,
        stats,
        max_body,
        max_queued,
        log,
        refusals: wirebench_net::cap::LogLimit::new(),
    });
    let ticker = ctx.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let mut s = lock(&ticker.state);
            if s.m.poll_timeout().is_some_and(|t| t <= monotonic_ns()) {
                s.m.handle_timeout(monotonic_ns());
                drain(&mut s, &ticker);
            }
        }
    });
    let stop = std::future::pending();
    wirebench_net::accept::accept_spawn(&l, stop, Some(true), |s, peer| {
        let ctx = ctx.clone();
        async move {
            let stats = ctx.stats.clone();
            let svc = hyper::service::service_fn(move |req| handle(req, ctx.clone()));
            let r = crate::http1(opening)
                .serve_connection(TokioIo::new(s), svc)
                .await;
            crate::connection_ended(r, "BOSH", peer, opening, &stats, log);
        }
    })
    .await
}

fn lock(s: &State) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// Carries out what the manager asked for.
fn drain(s: &mut Shared, ctx: &Arc<Ctx>) {
    while let Some(o) = s.m.poll_output() {
        match o {
            Output::Respond { req, body } => {
                if let Some(tx) = s.waiting.remove(&req) {
                    // The client may have gone; the manager kept the answer for a replay.
                    let _ = tx.send(body);
                }
            }
            Output::Open { sid } => {
                let (tx, rx) = mpsc::unbounded_channel();
                s.streams.insert(sid.clone(), tx);
                ctx.stats.sessions.fetch_add(1, Ordering::Relaxed);
                ctx.stats.open.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(upstream(sid, rx, ctx.clone()));
            }
            Output::ToServer { sid, bytes } => {
                if let Some(tx) = s.streams.get(&sid) {
                    let _ = tx.send(bytes);
                }
            }
            Output::Close { sid } => {
                if s.streams.remove(&sid).is_some() {
                    ctx.stats.open.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// One session's XMPP connection: writes what the manager sends it, feeds it what the
/// server says. Ends when the manager closes the session (its sender dropped).
async fn upstream(sid: String, mut rx: mpsc::UnboundedReceiver<Vec<u8>>, ctx: Arc<Ctx>) {
    let conn = tokio::net::TcpStream::connect(ctx.upstream)
        .await
        .map(crate::trusted);
    let mut up = match conn {
        Ok(c) => c,
        Err(e) => {
            if ctx.log {
                eprintln!(
                    "wirebench serve: XMPP BOSH: cannot reach the XMPP server at {}: {e}",
                    ctx.upstream
                );
            }
            let mut s = lock(&ctx.state);
            s.m.handle_server_eof(monotonic_ns(), &sid);
            drain(&mut s, &ctx);
            return;
        }
    };
    let _ = up.set_nodelay(true);
    let (mut r, mut w) = up.split();
    let mut buf = vec![0u8; 64 * 1024];
    // Flow control: above this much waiting for the client, stop reading the server
    // (its TCP window then pushes back) until the client has fetched some.
    let high_water = ctx.max_queued / 4;
    loop {
        let backlog = lock(&ctx.state).m.queued(&sid).unwrap_or(0);
        if backlog > high_water {
            tokio::select! {
                m = rx.recv() => match m {
                    Some(bytes) => {
                        if w.write_all(&bytes).await.is_err() {
                            break;
                        }
                    }
                    None => {
                        let _ = w.shutdown().await;
                        return;
                    }
                },
                () = tokio::time::sleep(std::time::Duration::from_millis(1)) => {}
            }
            continue;
        }
        tokio::select! {
            m = rx.recv() => match m {
                Some(bytes) => {
                    if w.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                None => {
                    let _ = w.shutdown().await;
                    return;
                }
            },
            n = r.read(&mut buf) => {
                let mut s = lock(&ctx.state);
                match n {
                    Ok(0) | Err(_) => {
                        s.m.handle_server_eof(monotonic_ns(), &sid);
                        drain(&mut s, &ctx);
                        break;
                    }
                    Ok(n) => {
                        s.m.handle_server_bytes(monotonic_ns(), &sid, &buf[..n]);
                        drain(&mut s, &ctx);
                    }
                }
            }
        }
    }
    // The server is gone: wait for the manager to let the session go, so a late request
    // still finds its terminate answer.
    while rx.recv().await.is_some() {}
}

/// How much of a body announced over the cap is read to find the session it names: its
/// start tag, attributes and all, fits in this.
const TOO_LARGE_HEAD: usize = 4096;

fn reply(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/xml; charset=utf-8"),
    );
    // Strophe.js pages are often served from another origin than the BOSH URL.
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        header::HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        header::HeaderValue::from_static("Content-Type"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        header::HeaderValue::from_static("POST, OPTIONS"),
    );
    r
}

async fn handle(
    req: Request<Incoming>,
    ctx: Arc<Ctx>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    match *req.method() {
        Method::POST => {}
        Method::OPTIONS => return Ok(reply(StatusCode::OK, Bytes::new())),
        _ => {
            let mut r = reply(
                StatusCode::METHOD_NOT_ALLOWED,
                Bytes::from_static(b"BOSH (XEP-0124/0206): POST a <body/>\n"),
            );
            r.headers_mut().insert(
                header::ALLOW,
                header::HeaderValue::from_static("POST, OPTIONS"),
            );
            return Ok(r);
        }
    }
    ctx.stats.requests.fetch_add(1, Ordering::Relaxed);
    // Read at most max_body + 1 bytes: enough to know the body is too big and to find
    // the sid in its start tag; the rest is never buffered. A body announced over the cap
    // is refused on its first few KiB, its start tag: reading and parsing 128 KiB of each
    // such request held the gateway's one thread long enough to make a well-behaved
    // client's p99 25 times its usual (bench/hostile.sh bosh, oversized).
    let too_large = hyper::body::Body::size_hint(req.body()).lower() > ctx.max_body as u64;
    let keep = if too_large {
        TOO_LARGE_HEAD.min(ctx.max_body)
    } else {
        ctx.max_body + 1
    };
    let mut body = req.into_body();
    let mut bytes = Vec::new();
    let mut cut = too_large;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Ok(reply(StatusCode::BAD_REQUEST, Bytes::new()));
        };
        if let Some(d) = frame.data_ref() {
            let room = keep - bytes.len();
            bytes.extend_from_slice(&d[..d.len().min(room)]);
            // Announced too large: its first piece carries the start tag (it comes with the
            // head, or right after), and a client may well send no more before the answer.
            if bytes.len() >= keep || too_large {
                cut = true;
                break;
            }
        }
    }
    let (tx, rx) = oneshot::channel();
    let full = {
        let mut s = lock(&ctx.state);
        let id = s.next_req;
        s.next_req += 1;
        s.waiting.insert(id, tx);
        let refused = s.m.refused_sessions();
        if too_large {
            s.m.handle_too_large(id, &bytes);
        } else {
            s.m.handle_request(monotonic_ns(), id, &bytes);
        }
        drain(&mut s, &ctx);
        s.m.refused_sessions() > refused
    };
    let answer = rx.await.unwrap_or_default();
    if answer.windows(16).any(|w| w == b"type='terminate'")
        && answer.windows(10).any(|w| w == b"condition=")
    {
        ctx.stats.refused.fetch_add(1, Ordering::Relaxed);
        if ctx.log {
            ctx.refusals.eprint(|| {
                let answer = String::from_utf8_lossy(&answer);
                if full {
                    let max = lock(&ctx.state).m.config().max_sessions;
                    format!(
                        "wirebench serve: XMPP BOSH: {max} sessions open, the cap (--xmpp-bosh-max-sessions); refused a new one: {answer}"
                    )
                } else {
                    format!(
                        "wirebench serve: XMPP BOSH: {answer} (request: {})",
                        String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                    )
                }
            });
        }
    }
    let mut r = reply(StatusCode::OK, Bytes::from(answer));
    if cut {
        // The rest of the body was never read: the connection cannot carry another request.
        r.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    Ok(r)
}
