//! The per-case HTTP server: HTTP/1.1 and HTTP/2 (prior knowledge, "h2c") on one port,
//! told apart by the connection preface (hyper-util's auto builder), so wrk and h2load
//! reach the same server as our client. Bodies are bounded by the codec's limit; a
//! malformed or oversized request gets its status and is counted, and only its
//! connection suffers.

use super::codec::{Codec, Refusal};
use crate::server::accept_loop;
use crate::{Behaviour, Counters};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use wirebench_model::clock::monotonic_ns;

/// Serves `codec` requests on `l` until the runtime stops.
pub async fn serve<K: Codec>(
    l: tokio::net::TcpListener,
    counters: Arc<Counters>,
    b: Behaviour,
    codec: Arc<K>,
) {
    let b = Arc::new(b);
    let b2 = b.clone();
    accept_loop(l, &b2, counters, move |s, c| {
        let (b, codec) = (b.clone(), codec.clone());
        async move {
            let svc = hyper::service::service_fn(move |req| {
                handle(req, b.clone(), c.clone(), codec.clone())
            });
            let mut builder = auto::Builder::new(TokioExecutor::new());
            // As the client's: 1 MiB bodies must not wait on 64 KiB flow-control windows.
            builder
                .http2()
                .initial_stream_window_size(8 << 20)
                .initial_connection_window_size(16 << 20)
                .max_concurrent_streams(1024);
            builder
                .serve_connection(TokioIo::new(s), svc)
                .await
                .map_err(|e| format!("HTTP connection: {e}"))
        }
    })
    .await
}

fn reply(status: StatusCode, ct: &'static str, body: Bytes, close: bool) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, header::HeaderValue::from_static(ct));
    if close {
        r.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    r
}

async fn handle<K: Codec>(
    req: Request<Incoming>,
    b: Arc<Behaviour>,
    c: Arc<Counters>,
    codec: Arc<K>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let refuse = |r: Refusal, close: bool| {
        c.reject(format!("{} request refused: {}", codec.name(), r.why));
        let (ct, body) = codec.refusal(&r);
        let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
        Ok(reply(status, ct, body, close))
    };
    if req.method() != Method::POST {
        return refuse(
            Refusal {
                status: 405,
                why: format!("method {} (POST the payload)", req.method()),
            },
            false,
        );
    }
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let limit = codec.max_body(b.max_payload);
    // An announced length over the limit is refused before a byte of it is read.
    if hyper::body::Body::size_hint(req.body()).lower() > limit as u64 {
        let r = Refusal {
            status: 413,
            why: format!("body over {limit} bytes"),
        };
        return refuse(r, true);
    }
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            let r = Refusal {
                status: 413,
                why: format!("body over {limit} bytes"),
            };
            return refuse(r, true);
        }
        Err(e) => return refuse(Refusal::bad(format!("body: {e}")), true),
    };
    let parsed = match codec.parse_request(&path, body) {
        Ok(p) => p,
        Err(r) => return refuse(r, false),
    };
    match parsed.seq {
        Some(seq) => {
            c.record(&b, seq, &parsed.payload);
        }
        None => {
            c.messages.fetch_add(1, Ordering::Relaxed);
            c.payload_bytes
                .fetch_add(parsed.payload.len() as u64, Ordering::Relaxed);
            c.last_rx_ns.store(monotonic_ns(), Ordering::Relaxed);
        }
    }
    if !b.think.is_zero() {
        tokio::time::sleep(b.think).await;
    }
    let (ct, body) = codec.response(parsed.seq, parsed.echo.then_some(parsed.payload));
    Ok(reply(StatusCode::OK, ct, body, false))
}
