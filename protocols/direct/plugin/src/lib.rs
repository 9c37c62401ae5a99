//! `direct`: the proxies' baseline (study S3, docs/protocols/proxies.md): the connect
//! workload over a plain TCP connection to the echo origin, with TCP Fast Open (RFC 7413)
//! or Multipath TCP (RFC 8684) when asked.

use std::net::SocketAddr;
use wirebench_connect::{ConnectProtocol, Dial, Dialed, open, params, plugin, run_case};
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Case, Ctx, Env, Outcome, Protocol, WorkloadError};

/// The baseline: straight to the origin, with TCP Fast Open when `tfo`, over
/// Multipath TCP when `mptcp`.
pub struct Direct {
    pub tfo: bool,
    pub mptcp: bool,
}

impl Dial for Direct {
    async fn dial(&self, origin: SocketAddr) -> Result<Dialed, WorkloadError> {
        let (stream, tcp_ns) = open(origin, self.tfo, self.mptcp).await?;
        Ok(Dialed::plain(stream, tcp_ns, 0))
    }
}

const DIRECT_PARAMS: &[ParamSpec] = &[
    params::CONNECTS,
    params::CONCURRENCY,
    params::TFO,
    params::MPTCP,
    wirebench_rpc::params::RATE,
];

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &ConnectProtocol {
    name: "direct",
    summary: "plain TCP to an echo server, the proxies' baseline (workload connect: time to first byte)",
    params: DIRECT_PARAMS,
    metrics: &[],
    commands: &[],
    servers: |_| "an echo server of ours started per case",
    prerequisites: plugin::none_needed,
    round_trips: wirebench_connect::tcp_round_trips,
    serves: "(an echo server, every byte back: an origin for the proxies)",
    // serve_alone puts serve's connection cap in the Behaviour it hands over.
    serve_alone: |listener, limits| {
        wirebench_rpc::server::serve_alone(listener, "direct", limits, |l, c, b| {
            wirebench_connect::serve_echo_capped(l, c, true, b.cap)
        })
    },
    check: plugin::no_check,
    run,
};

fn run(env: &Env, case: &Case, _repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let tfo = case.is_on(&params::TFO);
    let mptcp = case.is_on(&params::MPTCP);
    run_case(env, case, ctx, |_| Ok((Direct { tfo, mptcp }, Vec::new())))
}
