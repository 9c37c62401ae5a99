//! The SockJS 0.3.3 test services, on the same endpoint and session engine as XMPP:
//! what the protocol's own test suite (sockjs-protocol's `sockjs-protocol-0.3.3.py`)
//! expects every server under test to offer. Its tests of the session and framing rules
//! need an application whose answer they know, and XMPP is not one.
//!
//! With [`SockJsOptions::test_services`](super::SockJsOptions) on, these prefixes leave
//! XMPP (every other prefix is still an XMPP session):
//! - `/echo`: every message comes back, as it came;
//! - `/close`: a session is opened and closed at once with `c[3000,"Go away!"]`;
//! - `/cookie_needed_echo`: `/echo` with the JSESSIONID option on (`cookie_needed`);
//! - `/disabled_websocket_echo`: `/echo` with the websocket transports off (`/info`
//!   says `"websocket":false` and their URLs are not found).

use super::{CloseCode, GO_AWAY, Message, close, close_ws};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::WebSocketStream;
use wirebench_xmpp_web::sockjs;

/// What a request's prefix is served by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Service {
    Xmpp,
    Echo,
    Close,
    CookieEcho,
    NoWebSocketEcho,
}

impl Service {
    /// The service of `path` (a request's path: its first segment is the prefix the test
    /// suite uses); always XMPP unless the test services are on.
    pub(super) fn of(path: &str, test_services: bool) -> Service {
        if !test_services {
            return Service::Xmpp;
        }
        match path.trim_start_matches('/').split('/').next() {
            Some("echo") => Service::Echo,
            Some("close") => Service::Close,
            Some("cookie_needed_echo") => Service::CookieEcho,
            Some("disabled_websocket_echo") => Service::NoWebSocketEcho,
            _ => Service::Xmpp,
        }
    }

    pub(super) fn websocket(self) -> bool {
        self != Service::NoWebSocketEcho
    }
}

/// A test service over a websocket: `framed` the SockJS websocket transport (`o`, `a[...]`,
/// `c[...]` frames, JSON arrays in), else the raw one (each text message as it is).
/// `/close` opens and closes at once; the echo services send each message back.
pub(super) async fn ws_serve<S>(
    mut ws: WebSocketStream<S>,
    service: Service,
    framed: bool,
    heartbeat: std::time::Duration,
) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    if framed {
        ws.send(Message::text("o"))
            .await
            .map_err(|e| e.to_string())?;
    }
    if service == Service::Close {
        if framed {
            let _ = ws
                .feed(Message::text(sockjs::close_frame(GO_AWAY.0, GO_AWAY.1)))
                .await;
        }
        close_ws(&mut ws, close(CloseCode::from(GO_AWAY.0), GO_AWAY.1)).await;
        return Ok(());
    }
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    loop {
        tokio::select! {
            m = ws.next() => {
                let text = match m {
                    None | Some(Ok(Message::Close(_))) => return Ok(()),
                    Some(Err(e)) => return Err(format!("WebSocket: {e}")),
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Binary(_))) => {
                        close_ws(&mut ws, close(CloseCode::Unsupported, "text only")).await;
                        return Err("a binary message".into());
                    }
                    Some(Ok(_)) => continue,
                };
                if !framed {
                    ws.send(Message::Text(text)).await.map_err(|e| e.to_string())?;
                    continue;
                }
                // The spec: an empty message is ignored, broken JSON closes the session.
                if text.trim().is_empty() {
                    continue;
                }
                let Some(msgs) = sockjs::decode_messages(text.as_bytes()) else {
                    close_ws(&mut ws, close(CloseCode::Protocol, "Broken framing.")).await;
                    return Err("broken JSON framing".into());
                };
                if !msgs.is_empty() {
                    let frame = sockjs::array_frame(&msgs);
                    ws.send(Message::text(frame)).await.map_err(|e| e.to_string())?;
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
    use super::Service;

    #[test]
    fn prefixes_pick_a_service_only_when_asked() {
        assert_eq!(Service::of("/echo/info", false), Service::Xmpp);
        assert_eq!(Service::of("/echo/000/s/xhr", true), Service::Echo);
        assert_eq!(Service::of("/close", true), Service::Close);
        assert_eq!(
            Service::of("/cookie_needed_echo/info", true),
            Service::CookieEcho
        );
        assert_eq!(
            Service::of("/disabled_websocket_echo/000/s/websocket", true),
            Service::NoWebSocketEcho
        );
        assert_eq!(Service::of("/xmpp/000/s/xhr", true), Service::Xmpp);
        assert_eq!(Service::of("/echoes/info", true), Service::Xmpp);
        assert!(!Service::NoWebSocketEcho.websocket() && Service::Echo.websocket());
    }
}
