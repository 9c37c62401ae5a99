//! wirebench's web endpoint in front of a case's XMPP server (the gateways of crate
//! `wirebench-xmpp-gateway`: WebSocket, BOSH, SockJS), started for the case's transport,
//! and what it saw of the case.

use crate::metrics::TRANSPORT_REQUESTS;
use crate::metrics::TRANSPORT_SESSIONS;
use wirebench_protocol::Outcome;
use wirebench_protocol::hosts::SERVER_ADDR;
use wirebench_xmpp_client::transport::Transport;

/// Starts wirebench's endpoint for `transport` (none for tcp) in front of the XMPP server
/// at `upstream`, in `netns` when given (the lab's server host, on the usual port 5280),
/// else on a free loopback port.
pub(crate) fn start(
    transport: &Transport,
    upstream: std::net::SocketAddr,
    netns: Option<String>,
    max_stanza: usize,
) -> Result<Option<wirebench_xmpp_gateway::Endpoint>, String> {
    let kind = match transport {
        Transport::Tcp => return Ok(None),
        // A case's own gateway carries only its own load: no rate limit.
        Transport::WebSocket { .. } => wirebench_xmpp_gateway::Kind::WebSocket {
            max_stanza,
            max_rate: None,
        },
        Transport::SockJs { .. } => {
            wirebench_xmpp_gateway::Kind::SockJs(wirebench_xmpp_gateway::sockjs::SockJsOptions {
                max_stanza,
                cfg: wirebench_xmpp_web::sockjs::SockJsConfig {
                    max_body: (max_stanza * 2 + 4096).max(128 * 1024),
                    ..Default::default()
                },
                jsessionid: false,
                test_services: false,
            })
        }
        Transport::Bosh { .. } => {
            wirebench_xmpp_gateway::Kind::Bosh(wirebench_xmpp_web::BoshConfig {
                max_stanza,
                // Our client sends at most 64 KiB of stanzas per request, or one stanza.
                max_body: (max_stanza * 2 + 4096).max(128 * 1024),
                ..Default::default()
            })
        }
    };
    let bind: std::net::SocketAddr = match &netns {
        Some(_) => (SERVER_ADDR, 5280).into(),
        None => ([127, 0, 0, 1], 0).into(),
    };
    // Its thread inherits the namespace of the thread that starts it.
    std::thread::spawn(move || {
        if let Some(ns) = &netns {
            wirebench_protocol::hosts::enter(ns).map_err(|e| e.to_string())?;
        }
        let l = std::net::TcpListener::bind(bind)
            .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        wirebench_xmpp_gateway::spawn(l, upstream, kind, false).map_err(|e| e.to_string())
    })
    .join()
    .map_err(|_| "the endpoint's start-up panicked".to_string())?
    .map(Some)
}

/// What a wirebench endpoint saw of the case since `since` (sessions and requests
/// before the timed part: [`web_counts`]): `transport.sessions` and `transport.requests`
/// (WebSocket messages or HTTP requests from the clients).
pub(crate) fn push_stats(
    o: &mut Outcome,
    st: &wirebench_xmpp_gateway::WebStats,
    since: (u64, u64),
) {
    let (sessions, requests) = web_counts(st);
    o.put(TRANSPORT_SESSIONS, sessions.saturating_sub(since.0) as f64);
    o.put(TRANSPORT_REQUESTS, requests.saturating_sub(since.1) as f64);
}

/// An endpoint's (sessions, requests) so far.
pub(crate) fn web_counts(st: &wirebench_xmpp_gateway::WebStats) -> (u64, u64) {
    use std::sync::atomic::Ordering::Relaxed;
    (st.sessions.load(Relaxed), st.requests.load(Relaxed))
}

/// The URL a page opens for `transport` at `front` (the endpoints' paths).
pub(crate) fn url(t: &Transport, front: std::net::SocketAddr) -> String {
    match t {
        Transport::WebSocket { path } => format!("ws://{front}{path}"),
        Transport::SockJs { prefix, .. } => format!("http://{front}{prefix}"),
        Transport::Bosh { path } => format!("http://{front}{path}"),
        Transport::Tcp => format!("xmpp://{front}"),
    }
}
