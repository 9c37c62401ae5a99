//! The RFC 7395 endpoint: a WebSocket connection with subprotocol `xmpp` becomes one
//! TCP connection to the XMPP server; [`Framing`] turns each text message into stream
//! bytes and the server's stream into messages, as soon as either arrives.

use crate::stats::WebStats;
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use wirebench_xmpp_web::Framing;
use wirebench_xmpp_web::framing::{SUBPROTOCOL, XMPP_READ_BUFFER};

/// A connection's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest stanza (and so message) a client may send.
    pub max_stanza: usize,
    /// [`Shaper`]'s rate, bytes a second; `None`: no limit.
    pub max_rate: Option<u64>,
    /// The upgrade's time limit, and again the first message's.
    pub opening: Duration,
}

/// A token bucket over one client's messages: `rate` bytes a second, at most one
/// second's worth banked. What it delays is reading the client's next message, so a
/// client over its rate meets TCP's own back-pressure, and one session sending at full
/// speed (bench/hostile.sh ws halfopen: 116 MB/s of 1 KB messages) can no longer keep
/// this thread busy while the XMPP server's worker waits for the CPU.
pub struct Shaper {
    rate: f64,
    tokens: f64,
    at: tokio::time::Instant,
}

impl Shaper {
    pub fn new(rate: u64) -> Shaper {
        Shaper {
            rate: rate as f64,
            tokens: rate as f64,
            at: tokio::time::Instant::now(),
        }
    }

    /// Counts `n` bytes received; waits until the bucket is no longer in debt.
    pub async fn take(&mut self, n: usize) {
        let now = tokio::time::Instant::now();
        let earned = now.duration_since(self.at).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + earned).min(self.rate) - n as f64;
        self.at = now;
        if self.tokens < 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(-self.tokens / self.rate)).await;
        }
    }
}

pub async fn serve(
    l: tokio::net::TcpListener,
    upstream: SocketAddr,
    limits: Limits,
    stats: Arc<WebStats>,
    log: bool,
) {
    let stop = std::future::pending();
    wirebench_net::accept::accept_spawn(&l, stop, None, |s, peer| {
        let stats = stats.clone();
        async move {
            if let Err(e) = conn(s, upstream, limits, &stats).await {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                if log {
                    eprintln!("wirebench serve: XMPP WebSocket {peer}: {e}");
                }
            }
        }
    })
    .await
}

/// Whether the client's `Sec-WebSocket-Protocol` list names `xmpp`.
fn offers_xmpp(req: &Request) -> bool {
    req.headers()
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == SUBPROTOCOL)
}

#[allow(clippy::result_large_err)] // tungstenite's callback signature
async fn conn(
    mut s: TcpStream,
    upstream: SocketAddr,
    limits: Limits,
    stats: &WebStats,
) -> Result<(), String> {
    let opening_limit = limits.opening;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let limit = limits.max_stanza + 1024;
    let cfg = WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit))
        .read_buffer_size(XMPP_READ_BUFFER);
    let handshake = |s| {
        tokio_tungstenite::accept_hdr_async_with_config(
            s,
            |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
                if !offers_xmpp(req) {
                    let mut e = ErrorResponse::new(Some(
                        "XMPP over WebSocket needs the subprotocol 'xmpp' (RFC 7395 section 3.1)\n"
                            .into(),
                    ));
                    *e.status_mut() = StatusCode::BAD_REQUEST;
                    return Err(e);
                }
                resp.headers_mut().insert(
                    "sec-websocket-protocol",
                    HeaderValue::from_static(SUBPROTOCOL),
                );
                Ok(resp)
            },
            Some(cfg),
        )
    };
    let opening = async {
        wirebench_net::head::whole_head(&mut s, wirebench_net::head::MAX_UPGRADE_HEAD).await?;
        handshake(s).await.map_err(|e| e.to_string())
    };
    // The opening's time limit (crate::OPENING_TIMEOUT), for the upgrade and again for the
    // first message (relay); the XMPP server behind then gives the session its own
    // --xmpp-handshake-timeout.
    let ws = tokio::time::timeout(opening_limit, opening)
        .await
        .map_err(|_| {
            format!(
                "WebSocket handshake: not finished within {}s; closed",
                opening_limit.as_secs_f64()
            )
        })?
        .map_err(|e| format!("WebSocket handshake: {e}"))?;
    stats.sessions.fetch_add(1, Ordering::Relaxed);
    stats.open.fetch_add(1, Ordering::Relaxed);
    let r = relay(ws, upstream, limits, stats).await;
    stats.open.fetch_sub(1, Ordering::Relaxed);
    r
}

/// The XMPP server's connection, opened for the client's first message (its `<open/>`),
/// not at the upgrade: a client that upgrades and then sends nothing, or only what is
/// refused (an oversized frame, binary, a broken framing), costs the server behind
/// nothing, where each had cost it a connection and a session (bench/hostile.sh ws,
/// oversized, 8,000 a second). Until then `opening_limit` is the gateway's to keep.
async fn connect_upstream(
    tx: &mut tokio_tungstenite::WebSocketStream<TcpStream>,
    upstream: SocketAddr,
) -> Result<(OwnedReadHalf, OwnedWriteHalf), String> {
    let up = match TcpStream::connect(upstream).await {
        Ok(up) => crate::trusted(up),
        Err(e) => {
            // RFC 6455 1011: the server cannot serve the request.
            let _ = tx
                .send(close(CloseCode::Error, "XMPP server unreachable"))
                .await;
            return Err(format!("cannot reach the XMPP server at {upstream}: {e}"));
        }
    };
    up.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(up.into_split())
}

/// Reads the XMPP server's next bytes, once connected (the branch is off until then).
async fn read_upstream(
    up: &mut Option<(OwnedReadHalf, OwnedWriteHalf)>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match up {
        Some((r, _)) => r.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn relay(
    ws: tokio_tungstenite::WebSocketStream<TcpStream>,
    upstream: SocketAddr,
    limits: Limits,
    stats: &WebStats,
) -> Result<(), String> {
    let opening_limit = limits.opening;
    let mut shaper = limits.max_rate.map(Shaper::new);
    // One stream for both directions, not split halves: select! drops the losing
    // branch's future before a branch body runs, so the body may use it mutably, and no
    // lock stands between the two directions.
    let mut tx = ws;
    let mut up: Option<(OwnedReadHalf, OwnedWriteHalf)> = None;
    let first_by = tokio::time::Instant::now() + opening_limit;
    let mut framing = Framing::new(limits.max_stanza);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(first_by), if up.is_none() => {
                let _ = tx.send(close(CloseCode::Policy, "no <open/> in time")).await;
                return Err(format!(
                    "no XMPP <open/> within {}s of the upgrade; closed",
                    opening_limit.as_secs_f64()
                ));
            }
            m = tx.next() => {
                let m = match m {
                    None => return Ok(()),
                    Some(Err(tungstenite::Error::Protocol(
                        tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
                    ))) => return Ok(()),
                    Some(Err(e)) => {
                        // An oversized message, invalid UTF-8 in a text message or a
                        // protocol error: say so, with RFC 6455 section 7.4.1's code for it,
                        // before closing; a strike against the source (not a transport
                        // error: a reset is no misuse).
                        let code = match e {
                            tungstenite::Error::Capacity(_) => CloseCode::Size,
                            tungstenite::Error::Utf8(_) => CloseCode::Invalid,
                            _ => CloseCode::Protocol,
                        };
                        let _ = tx.send(close(code, "")).await;
                        let misuse = matches!(
                            e,
                            tungstenite::Error::Capacity(_)
                                | tungstenite::Error::Utf8(_)
                                | tungstenite::Error::Protocol(_)
                        );
                        if misuse {
                            wirebench_net::ban::strike_peer(tx.get_ref());
                        }
                        return Err(format!("WebSocket: {e}"));
                    }
                    Some(Ok(m)) => m,
                };
                stats.requests.fetch_add(1, Ordering::Relaxed);
                if let Some(s) = shaper.as_mut() {
                    s.take(m.len()).await;
                }
                let text = match &m {
                    Message::Text(t) => t.as_bytes(),
                    Message::Binary(_) => {
                        let why = "a binary message (RFC 7395 section 3.2: text only)";
                        let _ = tx.send(close(CloseCode::Unsupported, why)).await;
                        return Err(why.into());
                    }
                    Message::Close(_) => {
                        // tungstenite queues its answer to the client's Close; it goes out
                        // on the next flush. Without one, the closing handshake (RFC 6455
                        // section 5.5.1) never completes and the client sees the connection
                        // dropped.
                        let _ = tx.flush().await;
                        return Ok(());
                    }
                    // tungstenite answers pings itself.
                    _ => continue,
                };
                match framing.message_to_stream(text) {
                    Ok(bytes) if bytes.is_empty() => {}
                    Ok(bytes) => {
                        if up.is_none() {
                            up = Some(connect_upstream(&mut tx, upstream).await?);
                        }
                        let Some((_, up_w)) = up.as_mut() else { continue };
                        up_w.write_all(&bytes)
                            .await
                            .map_err(|e| format!("writing to the XMPP server: {e}"))?
                    }
                    Err(e) => {
                        // RFC 7395 section 3.6 with RFC 6120 section 4.9: a stream error, then close.
                        let cond = match e {
                            wirebench_xmpp_web::WebError::TooLarge { .. } => "policy-violation",
                            wirebench_xmpp_web::WebError::Malformed(_) => "not-well-formed",
                            _ => "invalid-xml",
                        };
                        let err = format!(
                            "<stream:error xmlns:stream='http://etherx.jabber.org/streams'>\
                             <{cond} xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>"
                        );
                        let _ = tx.feed(Message::text(err)).await;
                        let _ = tx
                            .feed(Message::text(
                                "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>",
                            ))
                            .await;
                        let _ = tx.send(close(CloseCode::Policy, cond)).await;
                        return Err(format!("closed with <{cond}/>: {e}"));
                    }
                }
            }
            n = read_upstream(&mut up, &mut buf) => {
                let n = n.map_err(|e| format!("reading from the XMPP server: {e}"))?;
                if n == 0 {
                    let _ = tx.send(close(CloseCode::Normal, "")).await;
                    return Ok(());
                }
                let msgs = framing
                    .stream_to_messages(&buf[..n])
                    .map_err(|e| format!("the XMPP server's stream: {e}"))?;
                for m in msgs {
                    tx.feed(Message::text(m))
                        .await
                        .map_err(|e| format!("WebSocket send: {e}"))?;
                }
                tx.flush().await.map_err(|e| format!("WebSocket send: {e}"))?;
            }
        }
    }
}

fn close(code: CloseCode, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_string().into(),
    }))
}

#[cfg(test)]
mod tests {
    use super::Shaper;
    use std::time::Duration;
    use tokio::time::Instant;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_shaper_lets_a_seconds_worth_through_then_holds_to_its_rate() {
        let mut s = Shaper::new(100_000);
        let t = Instant::now();
        s.take(100_000).await;
        assert_eq!(t.elapsed(), Duration::ZERO, "a second's worth is banked");
        // In debt by 20,000 bytes: 0.2 s at 100,000 a second.
        s.take(20_000).await;
        assert_eq!(t.elapsed().as_millis(), 200);
        // Idle time banks no more than a second's worth.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let t = Instant::now();
        s.take(100_000).await;
        assert_eq!(t.elapsed(), Duration::ZERO);
        s.take(10_000).await;
        assert_eq!(t.elapsed().as_millis(), 100);
    }
}
