//! The SockJS 0.3.3 endpoint (<https://sockjs.github.io/sockjs-protocol/sockjs-protocol-0.3.3.html>):
//! HTTP/1.1 (hyper) in front of a [`Server`]; each SockJS session gets its own TCP
//! connection to the XMPP server, and each SockJS message carries one RFC 7395 element
//! ([`Framing`], as over the WebSocket endpoint).
//!
//! URLs, under any prefix of one or more path segments (`/xmpp` below):
//! `/xmpp` and `/xmpp/` (greeting), `/xmpp/info`, `/xmpp/iframe*.html`,
//! `/xmpp/websocket` (raw websocket: one XMPP element per message, no SockJS framing),
//! and `/xmpp/<server>/<session>/<transport>` with transport `websocket`, `xhr`,
//! `xhr_send`, `xhr_streaming`, `jsonp`, `jsonp_send`, `eventsource` or `htmlfile`.
//!
//! As on the BOSH endpoint, a waiting poll or an open stream is written the moment the
//! XMPP server's bytes are read, in the same wake-up; the one timer (every 100 ms) only
//! sends heartbeats (25 s) and forgets sessions left without a receiving request for the
//! disconnect delay (5 s).

mod services;

use crate::stats::WebStats;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use services::Service;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use wirebench_model::clock::monotonic_ns;
use wirebench_xmpp_web::Framing;
use wirebench_xmpp_web::sockjs::{
    self, GO_AWAY, Output, RecvId, SendError, Server, SockJsConfig, Wire,
};

/// The endpoint's settings.
#[derive(Debug, Clone)]
pub struct SockJsOptions {
    pub cfg: SockJsConfig,
    /// Largest XMPP element either way.
    pub max_stanza: usize,
    /// The spec's JSESSIONID option: `cookie_needed` in `/info`, and a `JSESSIONID`
    /// cookie (the client's, or `dummy`) set on session requests, for load balancers
    /// that route by it.
    pub jsessionid: bool,
    /// The SockJS test suite's services (`/echo`, `/close`, `/cookie_needed_echo`,
    /// `/disabled_websocket_echo`) beside XMPP on the other prefixes ([`services`]).
    pub test_services: bool,
}

impl Default for SockJsOptions {
    fn default() -> Self {
        SockJsOptions {
            cfg: SockJsConfig::default(),
            max_stanza: 64 * 1024,
            jsessionid: false,
            test_services: false,
        }
    }
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

struct Shared {
    srv: Server,
    recvs: HashMap<RecvId, mpsc::UnboundedSender<Bytes>>,
    ups: HashMap<String, Up>,
    /// The sessions of a test service (the others are XMPP's).
    tests: HashMap<String, Service>,
}

struct Up {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    framing: Framing,
}

struct Ctx {
    state: Mutex<Shared>,
    upstream: SocketAddr,
    stats: Arc<WebStats>,
    opt: SockJsOptions,
    log: bool,
    /// Session refusals logged at most once a second (a flood of them is one line).
    refusals: wirebench_net::cap::LogLimit,
}

fn lock(c: &Ctx) -> std::sync::MutexGuard<'_, Shared> {
    c.state.lock().unwrap_or_else(|p| p.into_inner())
}

pub async fn serve(
    l: tokio::net::TcpListener,
    upstream: SocketAddr,
    opt: SockJsOptions,
    opening: std::time::Duration,
    stats: Arc<WebStats>,
    log: bool,
) {
    let ctx = Arc::new(Ctx {
        state: Mutex::new(Shared {
            srv: Server::new(opt.cfg.clone()),
            recvs: HashMap::new(),
            ups: HashMap::new(),
            tests: HashMap::new(),
        }),
        upstream,
        stats,
        opt,
        log,
        refusals: wirebench_net::cap::LogLimit::new(),
    });
    let ticker = ctx.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let mut s = lock(&ticker);
            if s.srv.poll_timeout().is_some_and(|t| t <= monotonic_ns()) {
                s.srv.handle_timeout(monotonic_ns());
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
                .with_upgrades()
                .await;
            crate::connection_ended(r, "SockJS", peer, opening, &stats, log);
        }
    })
    .await
}

/// Carries out what the sessions asked for.
fn drain(s: &mut Shared, ctx: &Arc<Ctx>) {
    while let Some(o) = s.srv.poll_output() {
        match o {
            Output::Data { recv, bytes } => {
                if let Some(tx) = s.recvs.get(&recv) {
                    let _ = tx.send(Bytes::from(bytes));
                }
            }
            Output::End { recv } => {
                // Dropping the sender ends the response.
                s.recvs.remove(&recv);
            }
            Output::Open { sid } if s.tests.contains_key(&sid) => {
                // A test service: no XMPP connection; `/close` closes at once.
                if s.tests.get(&sid) == Some(&Service::Close) {
                    s.srv.close(monotonic_ns(), &sid, GO_AWAY.0, GO_AWAY.1);
                }
            }
            Output::Open { sid } => {
                let (tx, rx) = mpsc::unbounded_channel();
                s.ups.insert(
                    sid.clone(),
                    Up {
                        tx,
                        framing: Framing::new(ctx.opt.max_stanza),
                    },
                );
                ctx.stats.sessions.fetch_add(1, Ordering::Relaxed);
                ctx.stats.open.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(upstream(sid, rx, ctx.clone()));
            }
            Output::Close { sid } => {
                s.tests.remove(&sid);
                if s.ups.remove(&sid).is_some() {
                    ctx.stats.open.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// One session's XMPP connection: writes what the client sent, turns what the server
/// says into SockJS messages. Ends when the session is forgotten (its sender dropped).
async fn upstream(sid: String, mut rx: mpsc::UnboundedReceiver<Vec<u8>>, ctx: Arc<Ctx>) {
    let mut up = match tokio::net::TcpStream::connect(ctx.upstream)
        .await
        .map(crate::trusted)
    {
        Ok(c) => c,
        Err(e) => {
            if ctx.log {
                eprintln!(
                    "wirebench serve: XMPP SockJS: cannot reach the XMPP server at {}: {e}",
                    ctx.upstream
                );
            }
            let mut s = lock(&ctx);
            s.srv
                .close(monotonic_ns(), &sid, 1011, "XMPP server unreachable");
            drain(&mut s, &ctx);
            return;
        }
    };
    let _ = up.set_nodelay(true);
    let (mut r, mut w) = up.split();
    let mut buf = vec![0u8; 64 * 1024];
    // Flow control: while this much waits for a client that does not poll, stop reading
    // the server (its TCP window pushes back); the session ends after the disconnect delay.
    let high_water = ctx.opt.cfg.response_limit.max(64 * 1024);
    loop {
        let backlog = lock(&ctx).srv.queued(&sid).unwrap_or(0);
        if backlog > high_water {
            tokio::select! {
                m = rx.recv() => match m {
                    Some(b) => if w.write_all(&b).await.is_err() { break },
                    None => { let _ = w.shutdown().await; return; }
                },
                () = tokio::time::sleep(std::time::Duration::from_millis(1)) => {}
            }
            continue;
        }
        tokio::select! {
            m = rx.recv() => match m {
                Some(b) => if w.write_all(&b).await.is_err() { break },
                None => { let _ = w.shutdown().await; return; }
            },
            n = r.read(&mut buf) => {
                let mut s = lock(&ctx);
                let now = monotonic_ns();
                let n: usize = n.unwrap_or_default();
                let msgs = match s.ups.get_mut(&sid) {
                    Some(u) if n > 0 => u.framing.stream_to_messages(&buf[..n]),
                    _ => Ok(Vec::new()),
                };
                match msgs {
                    Ok(msgs) => for m in msgs { s.srv.send(now, &sid, m) },
                    Err(e) => {
                        if ctx.log {
                            eprintln!("wirebench serve: XMPP SockJS: the XMPP server's stream: {e}");
                        }
                        s.srv.close(now, &sid, GO_AWAY.0, GO_AWAY.1);
                        drain(&mut s, &ctx);
                        break;
                    }
                }
                if n == 0 {
                    // The server ended the stream: "Go away!" to this and later polls.
                    s.srv.close(now, &sid, GO_AWAY.0, GO_AWAY.1);
                    drain(&mut s, &ctx);
                    break;
                }
                drain(&mut s, &ctx);
            }
        }
    }
    // Wait for the session to be forgotten, so late polls still find their close frame.
    while rx.recv().await.is_some() {}
}

/// Client messages in, bytes to the XMPP server out; an XMPP error becomes a stream
/// error and `<close/>` for the client, and the session closes (as RFC 7395 §3.6 has it).
fn deliver(s: &mut Shared, ctx: &Arc<Ctx>, sid: &str, msgs: Vec<String>) {
    let now = monotonic_ns();
    if s.tests.contains_key(sid) {
        // An echo service (`/close` sessions are closed, so nothing reaches here).
        for m in msgs {
            s.srv.send(now, sid, m);
        }
        return;
    }
    for m in msgs {
        let Some(up) = s.ups.get_mut(sid) else {
            return;
        };
        match up.framing.message_to_stream(m.as_bytes()) {
            Ok(b) if b.is_empty() => {}
            Ok(b) => {
                let _ = up.tx.send(b);
            }
            Err(e) => {
                let cond = match e {
                    wirebench_xmpp_web::WebError::TooLarge { .. } => "policy-violation",
                    wirebench_xmpp_web::WebError::Malformed(_) => "not-well-formed",
                    _ => "invalid-xml",
                };
                ctx.stats.refused.fetch_add(1, Ordering::Relaxed);
                if ctx.log {
                    eprintln!("wirebench serve: XMPP SockJS session {sid}: <{cond}/>: {e}");
                }
                s.srv.send(now, sid, stream_error(cond));
                s.srv.send(
                    now,
                    sid,
                    "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>".into(),
                );
                s.srv.close(now, sid, GO_AWAY.0, GO_AWAY.1);
                if s.ups.remove(sid).is_some() {
                    ctx.stats.open.fetch_sub(1, Ordering::Relaxed);
                }
                return;
            }
        }
    }
}

fn stream_error(cond: &str) -> String {
    format!(
        "<stream:error xmlns:stream='http://etherx.jabber.org/streams'>\
         <{cond} xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>"
    )
}

fn full(status: StatusCode, ctype: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

/// A bodiless answer (a preflight's 204, 304, 405): no `Content-Type`, as the spec's
/// tests check.
fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *r.status_mut() = status;
    r
}

/// 405 with the methods the URL takes (`Allow`, RFC 9110 §15.5.6), bodiless.
fn not_allowed(allow: &'static str) -> Response<Body> {
    let mut r = empty(StatusCode::METHOD_NOT_ALLOWED);
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}

const TEXT: &str = "text/plain; charset=UTF-8";
const JS: &str = "application/javascript; charset=UTF-8";

/// CORS as the spec's tests expect: the page's origin echoed, with credentials (so the
/// JSESSIONID cookie works cross-origin), or `*` without credentials when there is none
/// (or it is `null`): a wildcard origin with credentials is one browsers refuse.
fn cors(req_headers: &http::HeaderMap, r: &mut Response<Body>) {
    let origin = req_headers
        .get(header::ORIGIN)
        .filter(|o| o.as_bytes() != b"null");
    let h = r.headers_mut();
    match origin {
        Some(o) => {
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o.clone());
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        None => {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
        }
    }
    if let Some(a) = req_headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, a.clone());
    }
}

/// Private data sent by GET (the spec's `verify_not_cached`): exactly this value, which
/// is why `no-transform` (a later sockjs-node addition) is not in it.
fn no_cache(r: &mut Response<Body>) {
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-store, no-cache, must-revalidate, max-age=0"),
    );
}

/// Whether JSESSIONID is on for requests to `service`.
fn jsessionid(ctx: &Ctx, service: Service) -> bool {
    ctx.opt.jsessionid || service == Service::CookieEcho
}

fn cookie(on: bool, req_headers: &http::HeaderMap, r: &mut Response<Body>) {
    if !on {
        return;
    }
    let given = req_headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix("JSESSIONID="))
        .unwrap_or("dummy");
    if let Ok(v) = HeaderValue::from_str(&format!("JSESSIONID={given}; path=/")) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
}

/// The 204 answer to a CORS preflight (`OPTIONS`), cached for a year as the spec says.
fn preflight(req_headers: &http::HeaderMap, methods: &'static str) -> Response<Body> {
    let mut r = empty(StatusCode::NO_CONTENT);
    cors(req_headers, &mut r);
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(methods),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("31536000"),
    );
    h.insert(header::EXPIRES, HeaderValue::from_static(FAR_EXPIRES));
    r
}

/// `Expires` of what may be cached for a year (preflights, the iframe page). A fixed date
/// past any year from now: HTTP/1.1 caches go by `max-age`, and `Expires` is for the old.
const FAR_EXPIRES: &str = "Fri, 01 Jan 2038 00:00:00 GMT";

const IFRAME: &str = "<!DOCTYPE html>\n<html>\n<head>\n  <meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />\n  <meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />\n  <script>\n    document.domain = document.domain;\n    _sockjs_onload = function(){SockJS.bootstrap_iframe();};\n  </script>\n  <script src=\"https://cdn.jsdelivr.net/npm/sockjs-client@1/dist/sockjs.min.js\"></script>\n</head>\n<body>\n  <h2>Don't panic!</h2>\n  <p>This is a SockJS hidden iframe. It's used for cross domain magic.</p>\n</body>\n</html>";

/// What a request's path names.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    Greeting,
    Info,
    Iframe,
    RawWebSocket,
    Session { sid: &'a str, transport: &'a str },
    NotFound,
}

fn route(path: &str) -> Route<'_> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let n = segs.len();
    let last = segs[n - 1];
    // A session URL: a prefix of at least one segment, then server, session, transport.
    if n >= 4 && !segs[0].is_empty() {
        let (server, session, transport) = (segs[n - 3], segs[n - 2], last);
        const T: &[&str] = &[
            "websocket",
            "xhr",
            "xhr_send",
            "xhr_streaming",
            "jsonp",
            "jsonp_send",
            "eventsource",
            "htmlfile",
        ];
        if T.contains(&transport) {
            return if sockjs::valid_id(server) && sockjs::valid_id(session) {
                Route::Session {
                    sid: session,
                    transport,
                }
            } else {
                Route::NotFound
            };
        }
    }
    if n < 2 || segs[0].is_empty() {
        return if n == 1 && !segs[0].is_empty() {
            Route::Greeting
        } else {
            Route::NotFound
        };
    }
    match last {
        "" if n == 2 => Route::Greeting,
        "info" => Route::Info,
        "websocket" => Route::RawWebSocket,
        l if l.starts_with("iframe") && l.ends_with(".html") => Route::Iframe,
        _ => Route::NotFound,
    }
}

fn query_param(q: Option<&str>, key: &str) -> Option<String> {
    q?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| url_decode(v))
    })
}

fn url_decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut o = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => o.push(b' '),
            b'%' if i + 2 < b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(x) => {
                        o.push(x);
                        i += 2;
                    }
                    None => o.push(b'%'),
                }
            }
            c => o.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&o).into_owned()
}

async fn handle(req: Request<Incoming>, ctx: Arc<Ctx>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    let m = req.method().clone();
    let service = Service::of(&path, ctx.opt.test_services);
    let r = match route(&path) {
        Route::Greeting => full(StatusCode::OK, TEXT, "Welcome to SockJS!\n"),
        Route::Info => match m {
            Method::GET => {
                let mut r = full(
                    StatusCode::OK,
                    "application/json; charset=UTF-8",
                    format!(
                        "{{\"websocket\":{},\"origins\":[\"*:*\"],\"cookie_needed\":{},\"entropy\":{}}}",
                        service.websocket(),
                        jsessionid(&ctx, service),
                        monotonic_ns() as u32
                    ),
                );
                cors(req.headers(), &mut r);
                no_cache(&mut r);
                r
            }
            Method::OPTIONS => preflight(req.headers(), "OPTIONS, GET"),
            _ => not_allowed("OPTIONS, GET"),
        },
        Route::Iframe => {
            let etag = format!("\"{:x}\"", IFRAME.len() * 31 + 7);
            if req
                .headers()
                .get(header::IF_NONE_MATCH)
                .is_some_and(|v| v.as_bytes() == etag.as_bytes())
            {
                empty(StatusCode::NOT_MODIFIED)
            } else {
                let mut r = full(StatusCode::OK, "text/html; charset=UTF-8", IFRAME);
                let h = r.headers_mut();
                h.insert(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=31536000"),
                );
                h.insert(header::EXPIRES, HeaderValue::from_static(FAR_EXPIRES));
                if let Ok(v) = HeaderValue::from_str(&etag) {
                    h.insert(header::ETAG, v);
                }
                r
            }
        }
        Route::RawWebSocket => upgrade(req, ctx, None, service),
        Route::Session { sid, transport } => {
            let sid = sid.to_string();
            let transport = transport.to_string();
            session_request(req, ctx, &sid, &transport, service).await
        }
        Route::NotFound => full(StatusCode::NOT_FOUND, TEXT, "Not found\n"),
    };
    Ok(r)
}

async fn session_request(
    req: Request<Incoming>,
    ctx: Arc<Ctx>,
    sid: &str,
    transport: &str,
    service: Service,
) -> Response<Body> {
    let m = req.method().clone();
    let q = req.uri().query().map(str::to_string);
    let headers = req.headers().clone();
    let bad_method = || {
        not_allowed(match transport {
            "eventsource" | "jsonp" | "htmlfile" => "GET",
            "jsonp_send" => "POST",
            _ => "OPTIONS, POST",
        })
    };
    if transport == "websocket" {
        return upgrade(req, ctx, Some(sid.to_string()), service);
    }
    ctx.stats.requests.fetch_add(1, Ordering::Relaxed);
    let wire = match (transport, &m) {
        ("xhr" | "xhr_streaming", &Method::OPTIONS) | ("xhr_send", &Method::OPTIONS) => {
            return preflight(&headers, "OPTIONS, POST");
        }
        ("xhr", &Method::POST) => Wire::XhrPolling,
        ("xhr_streaming", &Method::POST) => Wire::XhrStreaming,
        ("eventsource", &Method::GET) => Wire::EventSource,
        ("jsonp" | "htmlfile", &Method::GET) => {
            let Some(cb) = query_param(q.as_deref(), "c") else {
                return full(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TEXT,
                    "\"callback\" parameter required",
                );
            };
            if !sockjs::valid_callback(&cb) {
                return full(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TEXT,
                    "invalid \"callback\" parameter",
                );
            }
            if transport == "jsonp" {
                Wire::Jsonp(cb)
            } else {
                Wire::HtmlFile(cb)
            }
        }
        ("xhr_send" | "jsonp_send", &Method::POST) => {
            return send_request(req, ctx, sid, transport == "jsonp_send", service).await;
        }
        _ => return bad_method(),
    };
    let ctype = match wire {
        Wire::EventSource => "text/event-stream; charset=UTF-8",
        Wire::HtmlFile(_) => "text/html; charset=UTF-8",
        _ => JS,
    };
    let streaming = wire.streaming();
    let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
    let id = {
        let mut s = lock(&ctx);
        if service != Service::Xmpp && s.srv.queued(sid).is_none() {
            s.tests.insert(sid.to_string(), service);
        }
        let refused = s.srv.refused();
        let id = s.srv.receive(monotonic_ns(), sid, wire);
        if s.srv.refused() > refused {
            ctx.stats.refused.fetch_add(1, Ordering::Relaxed);
            if ctx.log {
                ctx.refusals.eprint(|| {
                    format!(
                        "wirebench serve: XMPP SockJS: {} sessions held, the cap (--xmpp-sockjs-max-sessions); refused a new one with c[{},\"{}\"]",
                        ctx.opt.cfg.max_sessions,
                        sockjs::TOO_MANY.0,
                        sockjs::TOO_MANY.1
                    )
                });
            }
        }
        s.recvs.insert(id, tx);
        drain(&mut s, &ctx);
        id
    };
    // If the client goes away first (hyper drops this future or the body), the session
    // learns it at once and starts its disconnect delay.
    let guard = Gone {
        ctx: ctx.clone(),
        id,
    };
    let mut r = if streaming {
        let stream = futures_util::stream::unfold((rx, guard), |(mut rx, g)| async move {
            let b = rx.recv().await?;
            Some((Ok::<_, Infallible>(Frame::data(b)), (rx, g)))
        });
        let mut r = Response::new(StreamBody::new(stream).boxed_unsync());
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
        r
    } else {
        let mut body = Vec::new();
        while let Some(b) = rx.recv().await {
            body.extend_from_slice(&b);
        }
        drop(guard);
        full(StatusCode::OK, ctype, body)
    };
    cors(&headers, &mut r);
    no_cache(&mut r);
    cookie(jsessionid(&ctx, service), &headers, &mut r);
    r
}

struct Gone {
    ctx: Arc<Ctx>,
    id: RecvId,
}

impl Drop for Gone {
    fn drop(&mut self) {
        let mut s = lock(&self.ctx);
        if s.recvs.remove(&self.id).is_some() {
            s.srv.gone(monotonic_ns(), self.id);
        }
    }
}

/// xhr_send (204 when accepted) and jsonp_send (200 `ok`; a form field `d` or the raw
/// body). Bodies over the limit are cut off unread and refused.
async fn send_request(
    req: Request<Incoming>,
    ctx: Arc<Ctx>,
    sid: &str,
    jsonp: bool,
    service: Service,
) -> Response<Body> {
    let headers = req.headers().clone();
    let form = headers.get(header::CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes()
            .starts_with(b"application/x-www-form-urlencoded")
    });
    let max = ctx.opt.cfg.max_body;
    let mut body = req.into_body();
    let mut bytes = Vec::new();
    let mut cut = false;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return full(StatusCode::BAD_REQUEST, TEXT, Bytes::new());
        };
        if let Some(d) = frame.data_ref() {
            let room = max + 1 - bytes.len();
            bytes.extend_from_slice(&d[..d.len().min(room)]);
            if bytes.len() > max {
                cut = true;
                break;
            }
        }
    }
    if jsonp && form && !cut {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        bytes = query_param(Some(&text), "d")
            .unwrap_or_default()
            .into_bytes();
    }
    let res = {
        let mut s = lock(&ctx);
        let res = s.srv.client_data(sid, &bytes);
        if let Ok(msgs) = res.clone() {
            deliver(&mut s, &ctx, sid, msgs);
            drain(&mut s, &ctx);
        }
        res
    };
    let mut r = match res {
        Ok(_) if jsonp => full(StatusCode::OK, TEXT, "ok"),
        // text/plain although bodiless: Firefox takes a 204 without a type for XML and
        // complains (the spec's XhrPolling test checks it).
        Ok(_) => full(StatusCode::NO_CONTENT, TEXT, Bytes::new()),
        Err(e) => {
            if e != SendError::UnknownSession {
                ctx.stats.refused.fetch_add(1, Ordering::Relaxed);
            }
            if ctx.log && e != SendError::UnknownSession {
                eprintln!("wirebench serve: XMPP SockJS session {sid}: {}", e.body());
            }
            full(
                StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                TEXT,
                e.body(),
            )
        }
    };
    cors(&headers, &mut r);
    no_cache(&mut r);
    cookie(jsessionid(&ctx, service), &headers, &mut r);
    if cut {
        // The rest of the body was never read: the connection cannot carry another request.
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

/// The websocket transports: `sid` Some for SockJS's (`o`, `a[...]`, `h`, `c[...]`
/// frames; client messages JSON), None for the raw one (one XMPP element per message).
fn upgrade(
    req: Request<Incoming>,
    ctx: Arc<Ctx>,
    sid: Option<String>,
    service: Service,
) -> Response<Body> {
    if !service.websocket() {
        return full(StatusCode::NOT_FOUND, TEXT, "Not found\n");
    }
    if req.method() != Method::GET {
        return not_allowed("GET");
    }
    let h = req.headers();
    let has = |name: header::HeaderName, word: &str| {
        h.get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(word))
    };
    if !has(header::UPGRADE, "websocket") {
        return full(
            StatusCode::BAD_REQUEST,
            TEXT,
            "Can \"Upgrade\" only to \"WebSocket\".",
        );
    }
    if !has(header::CONNECTION, "upgrade") {
        return full(
            StatusCode::BAD_REQUEST,
            TEXT,
            "\"Connection\" must be \"Upgrade\".",
        );
    }
    let Some(key) = h.get(header::SEC_WEBSOCKET_KEY) else {
        return full(StatusCode::BAD_REQUEST, TEXT, "Sec-WebSocket-Key missing");
    };
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut r = empty(StatusCode::SWITCHING_PROTOCOLS);
    let rh = r.headers_mut();
    rh.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    rh.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        rh.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    // A client that asks for RFC 7395's subprotocol on the raw endpoint gets it.
    if sid.is_none() && has(header::SEC_WEBSOCKET_PROTOCOL, "xmpp") {
        rh.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("xmpp"),
        );
    }
    tokio::spawn(async move {
        let Ok(up) = hyper::upgrade::on(req).await else {
            return;
        };
        let limit = ctx.opt.max_stanza + 1024;
        let cfg = WebSocketConfig::default()
            .max_message_size(Some(limit * 2))
            .max_frame_size(Some(limit * 2))
            .read_buffer_size(wirebench_xmpp_web::framing::XMPP_READ_BUFFER);
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(up), Role::Server, Some(cfg)).await;
        if service != Service::Xmpp {
            let hb = std::time::Duration::from_nanos(ctx.opt.cfg.heartbeat_ns.max(1_000_000));
            let _ = services::ws_serve(ws, service, sid.is_some(), hb).await;
            return;
        }
        let r = match tokio::net::TcpStream::connect(ctx.upstream)
            .await
            .map(crate::trusted)
        {
            Ok(t) => {
                let _ = t.set_nodelay(true);
                ctx.stats.sessions.fetch_add(1, Ordering::Relaxed);
                ctx.stats.open.fetch_add(1, Ordering::Relaxed);
                let r = ws_relay(ws, t, &ctx, sid.is_some()).await;
                ctx.stats.open.fetch_sub(1, Ordering::Relaxed);
                r
            }
            Err(e) => {
                let mut ws = ws;
                let _ = ws
                    .send(close(CloseCode::Error, "XMPP server unreachable"))
                    .await;
                Err(format!("cannot reach the XMPP server: {e}"))
            }
        };
        if let Err(e) = r {
            ctx.stats.refused.fetch_add(1, Ordering::Relaxed);
            if ctx.log {
                eprintln!("wirebench serve: XMPP SockJS websocket: {e}");
            }
        }
    });
    r
}

/// Sends `frame` (a Close) and reads, for a second at most, until the client's Close in
/// answer: the closing handshake of RFC 6455 §7.1. Dropping the connection at once
/// would leave that answer unread, and the client would see a reset, not the close.
async fn close_ws<S>(ws: &mut WebSocketStream<S>, frame: Message)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    if ws.send(frame).await.is_err() {
        return;
    }
    let answer = async { while let Some(Ok(_)) = ws.next().await {} };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), answer).await;
}

fn close(code: CloseCode, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_string().into(),
    }))
}

async fn ws_relay<S>(
    mut ws: WebSocketStream<S>,
    up: tokio::net::TcpStream,
    ctx: &Ctx,
    framed: bool,
) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut up_r, mut up_w) = up.into_split();
    let mut framing = Framing::new(ctx.opt.max_stanza);
    let mut buf = vec![0u8; 64 * 1024];
    let hb = std::time::Duration::from_nanos(ctx.opt.cfg.heartbeat_ns.max(1_000_000));
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + hb, hb);
    if framed {
        ws.send(Message::text("o"))
            .await
            .map_err(|e| e.to_string())?;
    }
    loop {
        tokio::select! {
            m = ws.next() => {
                let text = match m {
                    None | Some(Ok(Message::Close(_))) => return Ok(()),
                    Some(Err(e)) => {
                        let _ = ws.send(close(CloseCode::Size, "")).await;
                        return Err(format!("WebSocket: {e}"));
                    }
                    Some(Ok(Message::Text(t))) => t.to_string(),
                    Some(Ok(Message::Binary(_))) => {
                        close_ws(&mut ws, close(CloseCode::Unsupported, "text only")).await;
                        return Err("a binary message".into());
                    }
                    Some(Ok(_)) => continue,
                };
                ctx.stats.requests.fetch_add(1, Ordering::Relaxed);
                let msgs = if framed {
                    if text.trim().is_empty() {
                        continue;
                    }
                    match sockjs::decode_messages(text.as_bytes()) {
                        Some(m) => m,
                        None => {
                            // The spec: broken JSON on a websocket session closes it.
                            close_ws(&mut ws, close(CloseCode::Protocol, "Broken framing.")).await;
                            return Err("broken JSON framing".into());
                        }
                    }
                } else {
                    vec![text]
                };
                for m in msgs {
                    match framing.message_to_stream(m.as_bytes()) {
                        Ok(b) if b.is_empty() => {}
                        Ok(b) => up_w.write_all(&b).await.map_err(|e| e.to_string())?,
                        Err(e) => {
                            let cond = match e {
                                wirebench_xmpp_web::WebError::TooLarge { .. } => "policy-violation",
                                wirebench_xmpp_web::WebError::Malformed(_) => "not-well-formed",
                                _ => "invalid-xml",
                            };
                            let out = vec![
                                stream_error(cond),
                                "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>".into(),
                            ];
                            if framed {
                                let _ = ws.feed(Message::text(sockjs::array_frame(&out))).await;
                                let _ = ws.feed(Message::text(sockjs::close_frame(GO_AWAY.0, GO_AWAY.1))).await;
                            } else {
                                for o in out {
                                    let _ = ws.feed(Message::text(o)).await;
                                }
                            }
                            close_ws(&mut ws, close(CloseCode::Policy, cond)).await;
                            return Err(format!("closed with <{cond}/>: {e}"));
                        }
                    }
                }
            }
            n = up_r.read(&mut buf) => {
                let n = n.map_err(|e| e.to_string())?;
                if n == 0 {
                    if framed {
                        let _ = ws.feed(Message::text(sockjs::close_frame(GO_AWAY.0, GO_AWAY.1))).await;
                    }
                    close_ws(&mut ws, close(CloseCode::Normal, "")).await;
                    return Ok(());
                }
                let msgs = framing.stream_to_messages(&buf[..n]).map_err(|e| e.to_string())?;
                if framed {
                    if !msgs.is_empty() {
                        ws.send(Message::text(sockjs::array_frame(&msgs))).await.map_err(|e| e.to_string())?;
                    }
                } else {
                    for m in msgs {
                        ws.feed(Message::text(m)).await.map_err(|e| e.to_string())?;
                    }
                    ws.flush().await.map_err(|e| e.to_string())?;
                }
            }
            _ = beat.tick(), if framed => {
                ws.send(Message::text("h")).await.map_err(|e| e.to_string())?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/xmpp"), Route::Greeting);
        assert_eq!(route("/xmpp/"), Route::Greeting);
        assert_eq!(route("/xmpp/info"), Route::Info);
        assert_eq!(route("/xmpp/iframe-a.html"), Route::Iframe);
        assert_eq!(route("/xmpp/websocket"), Route::RawWebSocket);
        assert_eq!(
            route("/a/b/000/s1/xhr"),
            Route::Session {
                sid: "s1",
                transport: "xhr"
            }
        );
        assert_eq!(route("/xmpp/000/s.1/xhr"), Route::NotFound);
        assert_eq!(route("/xmpp/000//xhr"), Route::NotFound);
        assert_eq!(route("/000/s1/xhr"), Route::NotFound);
        assert_eq!(route("/"), Route::NotFound);
        assert_eq!(url_decode("a%2Bb+c%"), "a+b c%");
    }
}
