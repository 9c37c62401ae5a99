//! `grpc`: gRPC over HTTP/2 (tonic) against a server of ours started for each case. The
//! service is `proto/wirebench.proto`'s `wirebench.Bench`; its one message, `Blob`, is
//! encoded by `wirebench-grpc` (no protoc). `grpc.call=unary`: every message is a unary
//! `Echo` or `Sink` call, several in flight on one connection in rate mode; `stream`:
//! messages flow on one bidirectional `EchoStream` call (or `SinkStream`, whose reply is
//! the server's count). `docs/protocols/soapstone.md`.

mod codec;
pub mod pings;
pub mod server;

use bytes::Bytes;
use codec::BlobCodec;
use std::net::SocketAddr;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};
use wirebench_model::Kind;
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::Fault;
use wirebench_protocol::params::{MODE, ParamSpec};
use wirebench_protocol::{Case, Protocol, WorkloadError};
use wirebench_rpc::params::{CONNECTIONS, RATE, TARGET};
use wirebench_rpc::{
    Call, Connect, Connected, Incoming, MsgRx, MsgTx, Opened, RpcProtocol, Streams, Summary,
};

pub const CALL: ParamSpec = ParamSpec {
    name: "grpc.call",
    kind: Kind::Choice(&["unary", "stream"]),
    default: "unary",
    workloads: &["pingpong", "stream"],
    help: "unary (a call per message) or stream (messages on one bidirectional streaming call)",
    words: "gRPC call",
};

const PARAMS: &[ParamSpec] = &[CALL, MODE, RATE, CONNECTIONS, TARGET];

/// [`CALL`], typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    Unary,
    Stream,
}

impl CallKind {
    fn from_word(word: &str) -> Option<CallKind> {
        match word {
            "unary" => Some(CallKind::Unary),
            "stream" => Some(CallKind::Stream),
            _ => None,
        }
    }

    fn of(case: &Case) -> CallKind {
        CallKind::from_word(case.choice(&CALL)).unwrap_or(CallKind::Unary)
    }
}

/// A message's gRPC framing (5 bytes), protobuf tag and length (~4), and for a unary call
/// the HTTP/2 HEADERS and trailers (~60 with HPACK): for link budgets only.
const OVERHEAD: u64 = 70;

pub const SERVICE: &str = "/wirebench.Bench/";

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &GRPC;

static GRPC: RpcProtocol<Client, Client> = RpcProtocol {
    name: "grpc",
    summary: "gRPC unary or bidirectional-streaming calls (tonic) against a server of ours started per case",
    params: PARAMS,
    servers: [
        "the gRPC server at --target (started apart)",
        "gRPC servers of ours started per case",
    ],
    serves: "(wirebench.Bench, protocols/grpc/plugin/proto/wirebench.proto)",
    overhead: OVERHEAD,
    serve: |l, c, b| Box::pin(server::serve(l, c, b)),
    client: |case, addr, plan| {
        let streaming = CallKind::of(case) == CallKind::Stream;
        let c = Client {
            addr,
            max_payload: plan.payload,
            streaming,
        };
        // Unary streams are calls one after another: no message-stream half.
        (c.clone(), streaming.then_some(c))
    },
};

fn status_error(s: tonic::Status, during: &'static str) -> WorkloadError {
    use tonic::Code;
    match s.code() {
        Code::Unavailable => WorkloadError::Link(format!("gRPC {during}: {}", s.message())),
        Code::Cancelled => WorkloadError::Closed { during },
        _ => WorkloadError::Peer(format!("gRPC {during}: {:?}: {}", s.code(), s.message())),
    }
}

#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub max_payload: usize,
    /// Ping-pong over one bidirectional stream rather than unary calls.
    pub streaming: bool,
}

impl Client {
    async fn channel(&self) -> Result<(tonic::client::Grpc<Channel>, u64), WorkloadError> {
        let t = monotonic_ns();
        let ch = Endpoint::from_shared(format!("http://{}", self.addr))
            .map_err(|e| WorkloadError::because(Fault::Input, "gRPC endpoint", e))?
            .tcp_nodelay(true)
            .initial_stream_window_size(8 << 20)
            .initial_connection_window_size(16 << 20)
            .connect()
            .await
            .map_err(|e| {
                WorkloadError::because(Fault::Link, format!("cannot connect to {}", self.addr), e)
            })?;
        let limit = self.max_payload + 64;
        let g = tonic::client::Grpc::new(ch)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(limit);
        Ok((g, monotonic_ns() - t))
    }

    async fn open_stream(
        &self,
        g: &mut tonic::client::Grpc<Channel>,
    ) -> Result<(mpsc::Sender<Bytes>, tonic::Streaming<Bytes>), WorkloadError> {
        // A short queue: the sender waits for the HTTP/2 stream instead of buffering.
        let (tx, rx) = mpsc::channel::<Bytes>(16);
        g.ready()
            .await
            .map_err(|e| WorkloadError::because(Fault::Link, "gRPC channel", e))?;
        let path = http::uri::PathAndQuery::from_static("/wirebench.Bench/EchoStream");
        let resp = g
            .streaming(
                tonic::Request::new(ReceiverStream::new(rx)),
                path,
                BlobCodec,
            )
            .await
            .map_err(|s| status_error(s, "opening EchoStream"))?;
        Ok((tx, resp.into_inner()))
    }
}

pub enum Conn {
    Unary(tonic::client::Grpc<Channel>),
    Stream(mpsc::Sender<Bytes>, tonic::Streaming<Bytes>),
}

impl Connect for Client {
    type Conn = Conn;
    async fn connect(&self) -> Result<Connected<Conn>, WorkloadError> {
        let (mut g, handshake_ns) = self.channel().await?;
        let conn = if self.streaming {
            let (tx, rx) = self.open_stream(&mut g).await?;
            Conn::Stream(tx, rx)
        } else {
            Conn::Unary(g)
        };
        Ok(Connected {
            conn,
            handshake_ns,
            local_port: None,
        })
    }
}

impl Call for Conn {
    async fn call(&mut self, seq: u64, body: Bytes, echo: bool) -> Result<Bytes, WorkloadError> {
        match self {
            Conn::Unary(g) => {
                g.ready()
                    .await
                    .map_err(|e| WorkloadError::because(Fault::Link, "gRPC channel", e))?;
                let mut req = tonic::Request::new(body);
                req.metadata_mut().insert(
                    "wb-seq",
                    seq.to_string()
                        .parse()
                        .map_err(|_| WorkloadError::Input("seq".into()))?,
                );
                let path = http::uri::PathAndQuery::from_static(if echo {
                    "/wirebench.Bench/Echo"
                } else {
                    "/wirebench.Bench/Sink"
                });
                let r = g
                    .unary(req, path, BlobCodec)
                    .await
                    .map_err(|s| status_error(s, "call"))?;
                Ok(r.into_inner())
            }
            Conn::Stream(tx, rx) => {
                tx.send(body).await.map_err(|_| WorkloadError::Closed {
                    during: "sending on EchoStream",
                })?;
                match rx.message().await {
                    Ok(Some(b)) => Ok(b),
                    Ok(None) => Err(WorkloadError::Closed {
                        during: "waiting for an echo",
                    }),
                    Err(s) => Err(status_error(s, "EchoStream")),
                }
            }
        }
    }

    fn share(&self) -> Option<Self> {
        match self {
            Conn::Unary(g) => Some(Conn::Unary(g.clone())),
            Conn::Stream(..) => None,
        }
    }
}

pub struct Tx(Option<mpsc::Sender<Bytes>>);

pub enum Rx {
    Echo(Box<tonic::Streaming<Bytes>>),
    /// The `SinkStream` call, running as a task until the sender finishes.
    Sink(Option<tokio::task::JoinHandle<Result<Bytes, tonic::Status>>>),
}

impl Streams for Client {
    type Tx = Tx;
    type Rx = Rx;
    async fn open(&self, echo: bool) -> Result<Opened<Tx, Rx>, WorkloadError> {
        let (mut g, handshake_ns) = self.channel().await?;
        if echo {
            let (tx, rx) = self.open_stream(&mut g).await?;
            return Ok(Opened {
                tx: Tx(Some(tx)),
                rx: Rx::Echo(Box::new(rx)),
                handshake_ns,
                local_port: None,
            });
        }
        let (tx, rx) = mpsc::channel::<Bytes>(16);
        g.ready()
            .await
            .map_err(|e| WorkloadError::because(Fault::Link, "gRPC channel", e))?;
        let call = tokio::spawn(async move {
            let path = http::uri::PathAndQuery::from_static("/wirebench.Bench/SinkStream");
            g.client_streaming(
                tonic::Request::new(ReceiverStream::new(rx)),
                path,
                BlobCodec,
            )
            .await
            .map(tonic::Response::into_inner)
        });
        Ok(Opened {
            tx: Tx(Some(tx)),
            rx: Rx::Sink(Some(call)),
            handshake_ns,
            local_port: None,
        })
    }
}

impl MsgTx for Tx {
    async fn send(&mut self, body: Bytes) -> Result<(), WorkloadError> {
        let Some(tx) = &self.0 else {
            return Err(WorkloadError::Closed {
                during: "sending after the end",
            });
        };
        tx.send(body).await.map_err(|_| WorkloadError::Closed {
            during: "sending on the stream",
        })
    }

    /// Dropping the sender ends the request stream (END_STREAM).
    async fn finish(&mut self) -> Result<(), WorkloadError> {
        self.0 = None;
        Ok(())
    }
}

impl MsgRx for Rx {
    async fn recv(&mut self) -> Result<Option<Incoming>, WorkloadError> {
        match self {
            Rx::Echo(s) => match s.message().await {
                Ok(m) => Ok(m.map(Incoming::Echo)),
                Err(st) => Err(status_error(st, "EchoStream")),
            },
            Rx::Sink(call) => {
                let Some(h) = call.take() else {
                    return Ok(None);
                };
                let b = h
                    .await
                    .map_err(|e| WorkloadError::because(Fault::Peer, "SinkStream task", e))?
                    .map_err(|s| status_error(s, "SinkStream"))?;
                Summary::decode(&b)
                    .map(|s| Some(Incoming::Summary(s)))
                    .ok_or_else(|| {
                        WorkloadError::Peer(
                            "SinkStream's reply is not `messages bytes corrupt`".into(),
                        )
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{CALL, CallKind};

    /// The spec and the enum cannot drift: a choice added to `grpc.call` needs a variant.
    #[test]
    fn every_choice_parses() {
        for w in CALL.choices() {
            assert!(CallKind::from_word(w).is_some(), "grpc.call={w}");
        }
    }
}
