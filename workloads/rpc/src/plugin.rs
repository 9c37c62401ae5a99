//! A request/response protocol's whole plugin from its declaration: what it is called,
//! its parameters, its server and how a case makes its client. The `http`, `soap`,
//! `grpc` and `websocket` plugins are each one [`RpcProtocol`], so what they share (who
//! the cases talk to, echo streams, `serve --also`, the checks before a run, the case
//! itself through [`crate::workload::run_case`]) is written here once.

use crate::client::{Connect, Streams};
use crate::server::{Behaviour, Counters};
use crate::workload::Plan;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use wirebench_protocol::params::{Mode, ParamSpec};
use wirebench_protocol::{
    AloneLimits, Case, CaseLink, Ctx, Env, Outcome, Placement, Protocol, WorkloadError,
};

/// The protocol's server on a listener, with the case's counters and behaviour; boxed,
/// so that a declaration can name it as a plain function.
pub type Serve = fn(tokio::net::TcpListener, Arc<Counters>, Behaviour) -> ServeFuture;

/// What [`Serve`] returns: the server, run on the caller's runtime until it stops.
pub type ServeFuture = Pin<Box<dyn Future<Output = ()>>>;

/// A request/response protocol, declared: `C` is its client, `S` its message streams
/// ([`crate::NoStreams`] for none).
pub struct RpcProtocol<C, S> {
    /// `--protocol`'s word, and the server's name in its logs.
    pub name: &'static str,
    /// One line for `wirebench protocols`.
    pub summary: &'static str,
    pub params: &'static [ParamSpec],
    /// Who a case talks to, in words: with `--target`, and without (a server of ours
    /// started per case).
    pub servers: [&'static str; 2],
    /// What `serve --also NAME=ADDR` serves, for that flag's help.
    pub serves: &'static str,
    /// Bytes a message adds to its payload above TCP, about: for link budgets only.
    pub overhead: u64,
    pub serve: Serve,
    /// The case's client to the server at the address, and its streams when the case
    /// has them.
    pub client: fn(&Case, SocketAddr, &Plan) -> (C, Option<S>),
}

impl<C, S> Protocol for RpcProtocol<C, S>
where
    C: Connect,
    S: Streams,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn summary(&self) -> &'static str {
        self.summary
    }

    fn params(&self) -> &'static [ParamSpec] {
        self.params
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        let [at_target, ours] = self.servers;
        Some(if crate::params::has_target(case) {
            at_target
        } else {
            ours
        })
    }

    fn stream_echoes(&self, case: &Case) -> bool {
        Mode::of(case).is_echo()
    }

    fn serve_alone_help(&self) -> Option<&'static str> {
        Some(self.serves)
    }

    fn serve_alone_limited(
        &self,
        listener: std::net::TcpListener,
        limits: &AloneLimits,
    ) -> Option<Result<(), String>> {
        Some(crate::server::serve_alone_timed(
            listener, self.name, limits, self.serve,
        ))
    }

    fn check(&self, case: &Case, at: &Placement) -> Result<(), WorkloadError> {
        crate::workload::check(case, at)
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        _repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        let client = self.client;
        crate::workload::run_case(
            env,
            case,
            ctx,
            self.name,
            self.serve,
            |addr, plan| client(case, addr, plan),
            self.overhead,
        )
    }
}
