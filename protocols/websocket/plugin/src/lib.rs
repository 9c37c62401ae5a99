//! `websocket`: binary messages over RFC 6455 (tokio-tungstenite) against a server of
//! ours started for each case. The upgrade request's path says what the server does with
//! the connection's binary messages: `/echo` returns each one, `/sink` counts and
//! verifies them (the n-th message of a connection against the payload pattern's n-th).
//! A text message `end` asks for the server's count, which it sends as text
//! (`messages payload_bytes corrupt`) after everything before it; that closes a stream.
//! `/conformance` echoes text messages as well as binary ones (what the Autobahn
//! testsuite expects of an echo server; `docs/conformance.md`).
//! Ping-pong sends a message and waits for its echo. `docs/protocols/soapstone.md`.

pub mod autobahn;

use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::Fault;
use wirebench_protocol::params::{MODE, NODELAY, ParamSpec};
use wirebench_protocol::{Protocol, WorkloadError};
use wirebench_rpc::params::{CONNECTIONS, RATE, TARGET};
use wirebench_rpc::server::{Closed, accept_loop};
use wirebench_rpc::{
    Behaviour, Call, Connect, Connected, Counters, Incoming, MsgRx, MsgTx, Opened, RpcProtocol,
    Streams, Summary,
};

const PARAMS: &[ParamSpec] = &[MODE, NODELAY, RATE, CONNECTIONS, TARGET];

/// A binary frame's header, client to server (masked): up to 14 bytes.
const OVERHEAD: u64 = 14;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &WEBSOCKET;

static WEBSOCKET: RpcProtocol<Client, Client> = RpcProtocol {
    name: "websocket",
    summary: "binary WebSocket messages (RFC 6455, tokio-tungstenite) against a server of ours started per case",
    params: PARAMS,
    servers: [
        "the WebSocket server at --target (started apart)",
        "WebSocket servers of ours started per case",
    ],
    serves: "(ws://ADDR/echo, /sink; /conformance echoes text too, for Autobahn)",
    overhead: OVERHEAD,
    serve: |l, c, b| Box::pin(serve(l, c, b)),
    client: |_, addr, plan| {
        let c = Client {
            addr,
            max_payload: plan.payload,
            nodelay: plan.nodelay,
        };
        (c.clone(), Some(c))
    },
};

/// Frames and messages bounded by the case's payload (plus room for the text summary),
/// so a peer cannot make either side buffer more.
fn config(max_payload: usize) -> WebSocketConfig {
    let limit = max_payload.max(256);
    WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit))
}

// ---- server ----

/// Serves WebSocket connections on `l` until the runtime stops.
pub async fn serve(l: tokio::net::TcpListener, counters: Arc<Counters>, b: Behaviour) {
    let b = Arc::new(b);
    let b2 = b.clone();
    accept_loop(l, &b2, counters, move |s, c| serve_conn(s, c, b.clone())).await
}

/// Whether a WebSocket error is the client's doing (a strike against its source, a
/// refused upgrade head being struck in `whole_head`): a message over the cap, text
/// that is not UTF-8, broken framing; not a transport failure.
fn error_is_input(e: &tungstenite::Error) -> bool {
    matches!(
        e,
        tungstenite::Error::Capacity(_)
            | tungstenite::Error::Utf8(_)
            | tungstenite::Error::Protocol(_)
    )
}

#[allow(clippy::result_large_err)] // tungstenite's callback signature
async fn serve_conn(mut s: TcpStream, c: Arc<Counters>, b: Arc<Behaviour>) -> Result<(), Closed> {
    // Known before the stream is handed to tungstenite, for a strike against it.
    let peer = s.peer_addr().ok().filter(|_| b.strikes);
    let mut path = String::new();
    let opening = async {
        wirebench_net::head::whole_head(&mut s, wirebench_net::head::MAX_UPGRADE_HEAD).await?;
        tokio_tungstenite::accept_hdr_async_with_config(
            s,
            |req: &tungstenite::handshake::server::Request, resp| {
                path = req.uri().path().to_string();
                Ok(resp)
            },
            Some(config(b.max_payload)),
        )
        .await
        .map_err(|e| e.to_string())
    };
    // A client that connects and stalls, or trickles its upgrade, is closed when the
    // server runs alone (`serve --also`); a case's own server has no limit.
    let opened = match b.header_timeout {
        Some(limit) => tokio::time::timeout(limit, opening).await.map_err(|_| {
            format!(
                "WebSocket handshake: not finished within {}s; closed",
                limit.as_secs_f64()
            )
        })?,
        None => opening.await,
    };
    let ws = opened.map_err(|e| format!("WebSocket handshake: {e}"))?;
    // `/conformance` is for test suites (Autobahn): it echoes text too, `end` included,
    // so the benchmark paths keep `end` as their summary request.
    let (echo, echo_text) = match path.as_str() {
        "/echo" | "/" => (true, false),
        "/sink" => (false, false),
        "/conformance" => (true, true),
        p => {
            return Err(format!("WebSocket path {p:?} (use /echo, /sink or /conformance)").into());
        }
    };
    let (mut tx, mut rx) = ws.split();
    let mut seq = 0u64;
    let mut seen = Summary::default();
    while let Some(m) = rx.next().await {
        let m = match m {
            Ok(m) => m,
            // Clients (ours included) may hang up without a close frame once done.
            Err(tungstenite::Error::Protocol(
                tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
            )) => break,
            Err(e) => {
                // Failing the connection (RFC 6455 §7.1.7) with the §7.4.1 code that
                // says why, where the stream still allows it.
                let code = match &e {
                    tungstenite::Error::Utf8(_) => CloseCode::Invalid,
                    tungstenite::Error::Capacity(_) => CloseCode::Size,
                    _ => CloseCode::Protocol,
                };
                let close = CloseFrame {
                    code,
                    reason: "".into(),
                };
                let _ = tx.send(Message::Close(Some(close))).await;
                if let Some(p) = peer
                    && error_is_input(&e)
                {
                    wirebench_net::ban::strike(p.ip());
                }
                return Err(format!("WebSocket: {e}").into());
            }
        };
        match m {
            Message::Binary(body) => {
                let intact = echo || c.record(&b, seq, &body);
                seen.messages += 1;
                seen.payload_bytes += body.len() as u64;
                seen.corrupt += u64::from(!intact);
                seq += 1;
                if echo {
                    if !b.think.is_zero() {
                        tokio::time::sleep(b.think).await;
                    }
                    tx.send(Message::Binary(body))
                        .await
                        .map_err(|e| format!("WebSocket send: {e}"))?;
                }
            }
            Message::Text(t) if echo_text => {
                tx.send(Message::Text(t))
                    .await
                    .map_err(|e| format!("WebSocket send: {e}"))?;
            }
            Message::Text(t) if t.as_str() == "end" => {
                let s = String::from_utf8_lossy(&seen.encode()).into_owned();
                tx.send(Message::text(s))
                    .await
                    .map_err(|e| format!("WebSocket send: {e}"))?;
            }
            Message::Text(t) => {
                let t: String = t.as_str().chars().take(40).collect();
                return Err(format!("unexpected WebSocket text message {t:?}").into());
            }
            Message::Close(_) => break,
            // tungstenite answers pings itself.
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
        }
    }
    // tungstenite queues its answer to the client's Close frame; it goes out only when
    // the sending half is flushed. Without this the closing handshake (RFC 6455 §7.1.2)
    // never completes and the client sees the connection dropped.
    let _ = tx.close().await;
    Ok(())
}

// ---- client ----

#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub max_payload: usize,
    pub nodelay: bool,
}

type Ws = WebSocketStream<TcpStream>;

fn ws_error(e: tungstenite::Error, during: &'static str) -> WorkloadError {
    match e {
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
            WorkloadError::Closed { during }
        }
        tungstenite::Error::Io(error) => WorkloadError::Io { during, error },
        e => WorkloadError::because(Fault::Peer, format!("WebSocket {during}"), e),
    }
}

impl Client {
    async fn open_ws(&self, path: &str) -> Result<(Ws, u64, Option<u16>), WorkloadError> {
        let t = monotonic_ns();
        let (s, port) = wirebench_rpc::client::tcp_connect(self.addr, self.nodelay).await?;
        let url = format!("ws://{}{path}", self.addr);
        let (ws, _) =
            tokio_tungstenite::client_async_with_config(url, s, Some(config(self.max_payload)))
                .await
                .map_err(|e| ws_error(e, "upgrade"))?;
        Ok((ws, monotonic_ns() - t, port))
    }
}

/// A data message as the client receives it: control frames are tungstenite's business
/// (it answers pings and the server's Close itself).
enum Data {
    Binary(Bytes),
    Text(tungstenite::Utf8Bytes),
}

/// The next data message, `None` once the server closed: the client's one receive path,
/// shared by the benchmarks ([`next_message`]) and the Autobahn echo ([`autobahn`]).
async fn next_data(
    rx: &mut (impl futures_util::Stream<Item = Result<Message, tungstenite::Error>> + Unpin),
) -> Result<Option<Data>, WorkloadError> {
    loop {
        match rx.next().await {
            None => return Ok(None),
            Some(m) => match m.map_err(|e| ws_error(e, "receiving"))? {
                Message::Binary(b) => return Ok(Some(Data::Binary(b))),
                Message::Text(t) => return Ok(Some(Data::Text(t))),
                Message::Close(_) => return Ok(None),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
            },
        }
    }
}

/// The next data message: binary as an echo, text as the server's summary.
async fn next_message(
    rx: &mut (impl futures_util::Stream<Item = Result<Message, tungstenite::Error>> + Unpin),
) -> Result<Option<Incoming>, WorkloadError> {
    match next_data(rx).await? {
        None => Ok(None),
        Some(Data::Binary(b)) => Ok(Some(Incoming::Echo(b))),
        Some(Data::Text(t)) => Summary::decode(t.as_bytes())
            .map(|s| Some(Incoming::Summary(s)))
            .ok_or_else(|| {
                WorkloadError::Peer(format!(
                    "the server's summary {:?} is not `messages bytes corrupt`",
                    t.as_str()
                ))
            }),
    }
}

pub struct Conn(Ws);

impl Connect for Client {
    type Conn = Conn;
    async fn connect(&self) -> Result<Connected<Conn>, WorkloadError> {
        let (ws, handshake_ns, local_port) = self.open_ws("/echo").await?;
        Ok(Connected {
            conn: Conn(ws),
            handshake_ns,
            local_port,
        })
    }
}

impl Call for Conn {
    /// Always an echo: a one-way stream over WebSocket is a [`Streams`] stream.
    async fn call(&mut self, _seq: u64, body: Bytes, _echo: bool) -> Result<Bytes, WorkloadError> {
        self.0
            .send(Message::Binary(body))
            .await
            .map_err(|e| ws_error(e, "sending"))?;
        match next_message(&mut self.0).await? {
            Some(Incoming::Echo(b)) => Ok(b),
            Some(Incoming::Summary(_)) => Err(WorkloadError::Peer(
                "the server sent a summary where an echo was due".into(),
            )),
            None => Err(WorkloadError::Closed {
                during: "waiting for an echo",
            }),
        }
    }
}

pub struct Tx(SplitSink<Ws, Message>);
pub struct Rx(SplitStream<Ws>);

impl Streams for Client {
    type Tx = Tx;
    type Rx = Rx;
    async fn open(&self, echo: bool) -> Result<Opened<Tx, Rx>, WorkloadError> {
        let (ws, handshake_ns, local_port) =
            self.open_ws(if echo { "/echo" } else { "/sink" }).await?;
        let (tx, rx) = ws.split();
        Ok(Opened {
            tx: Tx(tx),
            rx: Rx(rx),
            handshake_ns,
            local_port,
        })
    }
}

impl MsgTx for Tx {
    async fn send(&mut self, body: Bytes) -> Result<(), WorkloadError> {
        // Each message is written as it is sent (flushed), as an application sends it and
        // as raw sends its frames, so streams compare per-message costs alike.
        self.0
            .send(Message::Binary(body))
            .await
            .map_err(|e| ws_error(e, "sending"))
    }

    async fn finish(&mut self) -> Result<(), WorkloadError> {
        self.0
            .send(Message::text("end"))
            .await
            .map_err(|e| ws_error(e, "ending the stream"))
    }
}

impl MsgRx for Rx {
    async fn recv(&mut self) -> Result<Option<Incoming>, WorkloadError> {
        next_message(&mut self.0).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6455 §5.5.1: the server answers the client's Close frame with its own before
    /// closing the TCP connection (Autobahn counts a missing answer as an unclean close).
    #[tokio::test(flavor = "current_thread")]
    async fn the_server_answers_a_close_frame() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let b = Arc::new(Behaviour::new(1, 64, std::time::Duration::ZERO, true));
        let server = tokio::spawn(async move {
            let (s, _) = l.accept().await.unwrap();
            serve_conn(s, Arc::new(Counters::default()), b).await
        });
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/echo"))
            .await
            .unwrap();
        ws.send(Message::Binary(Bytes::from_static(b"x")))
            .await
            .unwrap();
        assert!(matches!(ws.next().await, Some(Ok(Message::Binary(_)))));
        ws.send(Message::Close(None)).await.unwrap();
        let answer = tokio::time::timeout(std::time::Duration::from_secs(5), ws.next())
            .await
            .expect("no answer to the Close frame");
        assert!(matches!(answer, Some(Ok(Message::Close(_)))), "{answer:?}");
        server.await.unwrap().unwrap();
    }
}
