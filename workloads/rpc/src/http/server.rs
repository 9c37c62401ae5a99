//! The per-case HTTP server: HTTP/1.1 and HTTP/2 (prior knowledge, "h2c") on one port,
//! told apart by the connection preface (hyper-util's auto builder), so wrk and h2load
//! reach the same server as our client. Bodies are bounded by the codec's limit; a
//! malformed or oversized request gets its status and is counted, and only its
//! connection suffers.

use super::codec::{Codec, Refusal};
use crate::server::{Activity, Closed, accept_loop, within_limit};
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
            let silence = b.header_timeout.unwrap_or(OPENING_TIMEOUT);
            if let Some((why, for_input)) = implausible_opening(&s, silence).await {
                refuse_opening(s).await;
                let why = format!("HTTP connection: {why}");
                return Err(if for_input {
                    Closed::input(why)
                } else {
                    Closed::from(why)
                });
            }
            let limit = b.header_timeout;
            let max_streams = b.max_streams;
            let activity = Arc::new(Activity::default());
            // Counted only under a limit: a case's own server pays nothing for it.
            let act = limit.map(|_| activity.clone());
            let svc = hyper::service::service_fn(move |req| {
                let busy = act.as_ref().map(Activity::begin);
                let answer = handle(req, b.clone(), c.clone(), codec.clone());
                async move {
                    let r = answer.await;
                    drop(busy);
                    r
                }
            });
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .max_buf_size(wirebench_net::cap::MAX_HTTP_HEAD);
            // As the client's: 1 MiB bodies must not wait on 64 KiB flow-control windows.
            builder
                .http2()
                .initial_stream_window_size(8 << 20)
                .initial_connection_window_size(16 << 20)
                .max_concurrent_streams(max_streams)
                .max_local_error_reset_streams(Some(max_streams as usize));
            let conn = builder.serve_connection(TokioIo::new(s), svc);
            within_limit("HTTP connection", limit, true, &activity, conn).await
        }
    })
    .await
}

/// The HTTP/2 client connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Why `s` is refused, if it is, and whether for what it sent (not for its silence): its
/// first bytes (peeked, so hyper still reads them)
/// cannot begin an HTTP/2 preface or an HTTP/1.x request, or none came in time.
/// hyper-util's auto builder answers anything that is not the HTTP/2 preface as HTTP/1.1
/// (a 400), where an invalid preface must close the connection. Judged on what the first
/// read brings: a client that sends its opening a byte at a time is left to hyper (and,
/// with a header timeout, to [`within_limit`]).
async fn implausible_opening(
    s: &tokio::net::TcpStream,
    silence: std::time::Duration,
) -> Option<(String, bool)> {
    let mut buf = [0u8; 64];
    match tokio::time::timeout(silence, s.peek(&mut buf)).await {
        // Nothing at all in time: an idle connection would hold its socket for good.
        Err(_) => Some((
            format!("nothing received within {}s; closed", silence.as_secs_f64()),
            false,
        )),
        // An error or an empty read: hyper sees the same and ends the connection.
        Ok(Ok(0) | Err(_)) => None,
        Ok(Ok(n)) if opening_is_plausible(&buf[..n]) => None,
        Ok(Ok(_)) => Some((
            "neither an HTTP/2 preface nor an HTTP/1.x request line".into(),
            true,
        )),
    }
}

/// How long a new connection may stay silent before it is closed (bench/hostile.sh:
/// 9,984 idle connections held 2.8 KiB each, for good), unless the behaviour has a
/// header timeout, which then also bounds the rest of the opening ([`within_limit`]: a
/// client sending it a byte at a time too).
const OPENING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Ends a connection whose opening is no HTTP at all, unanswered: RFC 9113 §3.4 makes an
/// invalid preface a connection error, and lets the GOAWAY be omitted since the peer is
/// not speaking HTTP/2 (nor HTTP/1.x, so no 400 either). What the client sent is read
/// first, and briefly until it closes too: a close with unread bytes would reach it as a
/// reset rather than an end.
async fn refuse_opening(mut s: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sink = [0u8; 1024];
    let _ = s.try_read(&mut sink);
    if s.shutdown().await.is_ok() {
        let drain = async { while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {} };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), drain).await;
    }
}

/// `first` (a connection's first bytes) begins the HTTP/2 preface or a request line
/// httparse does not reject (complete or partial).
fn opening_is_plausible(first: &[u8]) -> bool {
    let n = first.len().min(H2_PREFACE.len());
    if first[..n] == H2_PREFACE[..n] {
        return true;
    }
    let mut headers = [httparse::EMPTY_HEADER; 0];
    match httparse::Request::new(&mut headers).parse(first) {
        Ok(_) | Err(httparse::Error::TooManyHeaders) => true,
        Err(_) => false,
    }
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
    let limit = codec.max_body(b.max_payload);
    if req.method() != Method::POST {
        // Answered once the request has ended (its body read and dropped, bounded), so
        // the response follows the client's frames: an HTTP/2 stream reset or closed
        // meanwhile gets the stream error RFC 9113 §5.1 asks for, not our 405 first.
        let method = req.method().clone();
        let _ = Limited::new(req.into_body(), limit).collect().await;
        return refuse(
            Refusal {
                status: 405,
                why: format!("method {method} (POST the payload)"),
            },
            false,
        );
    }
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
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

#[cfg(test)]
mod tests {
    use super::opening_is_plausible;

    #[test]
    fn tells_an_invalid_preface_from_valid_openings() {
        for ok in [
            &b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[..],
            b"PRI * HT",
            b"POST /echo HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.0\r\n\r\n",
            b"GET /a-long-path-not-yet-ended",
            b"\r\nGET / HTTP/1.1\r\n",
        ] {
            assert!(opening_is_plausible(ok), "{}", String::from_utf8_lossy(ok));
        }
        for bad in [
            &b"INVALID CONNECTION PREFACE\r\n\r\n"[..],
            b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n",
            b"\x16\x03\x01\x02\x00",
            b"GET / HTTP/2.0\r\n\r\n",
        ] {
            assert!(
                !opening_is_plausible(bad),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
