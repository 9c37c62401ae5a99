//! The per-case gRPC server: `wirebench.Bench` on tonic's server-side call handling
//! (`tonic::server::Grpc`), served over HTTP/2 by hyper. Messages above the case's
//! payload size are refused by tonic's decoding limit (RESOURCE_EXHAUSTED) and counted.

use crate::codec::BlobCodec;
use crate::pings::{PingWatch, TOO_MANY_PINGS};
use bytes::Bytes;
use futures_like::Pending;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};
use wirebench_rpc::server::{Activity, Closed, accept_loop, within_limit};
use wirebench_rpc::{Behaviour, Counters, Summary};

mod futures_like {
    pub type Pending<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'static>>;
}

#[derive(Clone)]
struct Shared {
    b: Arc<Behaviour>,
    c: Arc<Counters>,
}

fn seq_of<T>(r: &Request<T>) -> Option<u64> {
    r.metadata()
        .get("wb-seq")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok())
}

impl Shared {
    fn count(&self, seq: Option<u64>, body: &[u8]) -> bool {
        match seq {
            Some(s) => self.c.record(&self.b, s, body),
            None => {
                use std::sync::atomic::Ordering;
                self.c.messages.fetch_add(1, Ordering::Relaxed);
                self.c
                    .payload_bytes
                    .fetch_add(body.len() as u64, Ordering::Relaxed);
                true
            }
        }
    }
}

struct Unary {
    s: Shared,
    echo: bool,
}

impl tonic::server::UnaryService<Bytes> for Unary {
    type Response = Bytes;
    type Future = Pending<Result<Response<Bytes>, Status>>;
    fn call(&mut self, req: Request<Bytes>) -> Self::Future {
        let (s, echo) = (self.s.clone(), self.echo);
        Box::pin(async move {
            let seq = seq_of(&req);
            let body = req.into_inner();
            s.count(seq, &body);
            if !s.b.think.is_zero() {
                tokio::time::sleep(s.b.think).await;
            }
            Ok(Response::new(if echo { body } else { Bytes::new() }))
        })
    }
}

struct EchoStream(Shared);

type Echoes =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<Bytes, Status>> + Send + 'static>>;

impl tonic::server::StreamingService<Bytes> for EchoStream {
    type Response = Bytes;
    type ResponseStream = Echoes;
    type Future = Pending<Result<Response<Echoes>, Status>>;
    fn call(&mut self, req: Request<Streaming<Bytes>>) -> Self::Future {
        let s = self.0.clone();
        Box::pin(async move {
            let mut inbound = req.into_inner();
            // Echo in order, one at a time: the reply stream pulls the next request.
            let out = async_stream_lite(move |tx| async move {
                loop {
                    match inbound.message().await {
                        Ok(Some(b)) => {
                            s.count(None, &b);
                            if !s.b.think.is_zero() {
                                tokio::time::sleep(s.b.think).await;
                            }
                            if tx.send(Ok(b)).await.is_err() {
                                return;
                            }
                        }
                        Ok(None) => return,
                        Err(st) => {
                            s.c.reject(format!("EchoStream: {st}"));
                            let _ = tx.send(Err(st)).await;
                            return;
                        }
                    }
                }
            });
            Ok(Response::new(out))
        })
    }
}

/// A response stream fed by a task through a short channel.
fn async_stream_lite<F, Fut>(f: F) -> Echoes
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Bytes, Status>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(f(tx));
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
}

struct SinkStream(Shared);

impl tonic::server::ClientStreamingService<Bytes> for SinkStream {
    type Response = Bytes;
    type Future = Pending<Result<Response<Bytes>, Status>>;
    fn call(&mut self, req: Request<Streaming<Bytes>>) -> Self::Future {
        let s = self.0.clone();
        Box::pin(async move {
            let mut inbound = req.into_inner();
            let mut seen = Summary::default();
            while let Some(b) = inbound.message().await.inspect_err(|st| {
                s.c.reject(format!("SinkStream: {st}"));
            })? {
                let ok = s.c.record(&s.b, seen.messages, &b);
                seen.messages += 1;
                seen.payload_bytes += b.len() as u64;
                seen.corrupt += u64::from(!ok);
            }
            Ok(Response::new(seen.encode()))
        })
    }
}

async fn route(
    req: http::Request<hyper::body::Incoming>,
    s: Shared,
) -> Result<http::Response<tonic::body::Body>, Infallible> {
    let limit = s.b.max_payload + 64;
    let grpc = || {
        tonic::server::Grpc::new(BlobCodec)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(limit)
    };
    let path = req.uri().path().to_string();
    Ok(match path.as_str() {
        "/wirebench.Bench/Echo" => grpc().unary(Unary { s, echo: true }, req).await,
        "/wirebench.Bench/Sink" => grpc().unary(Unary { s, echo: false }, req).await,
        "/wirebench.Bench/EchoStream" => grpc().streaming(EchoStream(s), req).await,
        "/wirebench.Bench/SinkStream" => grpc().client_streaming(SinkStream(s), req).await,
        _ => {
            s.c.reject(format!("gRPC method {path:?} does not exist"));
            Status::unimplemented(format!("no method {path}")).into_http()
        }
    })
}

/// Serves `wirebench.Bench` on `l` until the runtime stops.
pub async fn serve(l: tokio::net::TcpListener, counters: Arc<Counters>, b: Behaviour) {
    let b = Arc::new(b);
    let b2 = b.clone();
    accept_loop(l, &b2, counters, move |sock, c| {
        let s = Shared { b: b.clone(), c };
        let limit = b.header_timeout;
        // The keepalive policy only where strangers reach the server (run alone).
        let enforce = b.strikes;
        let max_streams = b.max_streams;
        async move {
            let activity = Arc::new(Activity::default());
            // Counted only under a limit: a case's own server pays nothing for it.
            let act = limit.map(|_| activity.clone());
            let svc = hyper::service::service_fn(move |req| {
                let busy = act.as_ref().map(Activity::begin);
                let answer = route(req, s.clone());
                async move {
                    let r = answer.await;
                    drop(busy);
                    r
                }
            });
            let io = PingWatch::new(sock, enforce);
            let refused = io.refused();
            let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .initial_stream_window_size(8 << 20)
                .initial_connection_window_size(16 << 20)
                .max_concurrent_streams(max_streams)
                .max_local_error_reset_streams(Some(max_streams as usize))
                .serve_connection(TokioIo::new(io), svc);
            let r = within_limit("gRPC connection", limit, false, &activity, conn).await;
            if refused.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(Closed::input(format!("gRPC connection: {TOO_MANY_PINGS}")));
            }
            r
        }
    })
    .await
}
