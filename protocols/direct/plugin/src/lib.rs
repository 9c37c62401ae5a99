//! `direct`: the proxies' baseline (study S3, docs/protocols/proxies.md): the connect
//! workload over a plain TCP connection to the echo origin, with TCP Fast Open (RFC 7413)
//! or Multipath TCP (RFC 8684) when asked.

use std::net::SocketAddr;
use wirebench_connect::{Dial, Dialed, open, params, run_case};
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Case, CaseLink, Ctx, Env, Outcome, Protocol, WorkloadError};

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

/// `direct`: the baseline of the proxies, a plain TCP connection to the origin.
pub struct DirectProtocol;

const DIRECT_PARAMS: &[ParamSpec] = &[
    params::CONNECTS,
    params::CONCURRENCY,
    params::TFO,
    params::MPTCP,
    wirebench_rpc::params::RATE,
];

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &DirectProtocol;

impl Protocol for DirectProtocol {
    fn name(&self) -> &'static str {
        "direct"
    }

    fn summary(&self) -> &'static str {
        "plain TCP to an echo server, the proxies' baseline (workload connect: time to first byte)"
    }

    fn workloads(&self) -> &'static [&'static str] {
        &["connect"]
    }

    fn params(&self) -> &'static [ParamSpec] {
        DIRECT_PARAMS
    }

    fn servers(&self, _case: &Case) -> Option<&'static str> {
        Some("an echo server of ours started per case")
    }

    fn serve_alone_help(&self) -> Option<&'static str> {
        Some("(an echo server, every byte back: an origin for the proxies)")
    }

    fn serve_alone_per_core(&self) -> bool {
        true
    }

    fn serve_alone_limited(
        &self,
        listener: std::net::TcpListener,
        limits: &wirebench_protocol::AloneLimits,
    ) -> Option<Result<(), String>> {
        // serve_alone puts serve's connection cap in the Behaviour it hands over.
        Some(wirebench_rpc::server::serve_alone(
            listener,
            "direct",
            limits,
            |l, c, b| wirebench_connect::serve_echo_capped(l, c, true, b.cap),
        ))
    }

    fn connect_round_trips(&self, case: &Case) -> f64 {
        wirebench_connect::tcp_round_trips(case)
    }

    fn check(&self, case: &Case, at: &wirebench_protocol::Placement) -> Result<(), WorkloadError> {
        wirebench_connect::check(case, at)
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        _repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        let tfo = case.is_on(&wirebench_connect::params::TFO);
        let mptcp = case.is_on(&wirebench_connect::params::MPTCP);
        run_case(env, case, ctx, |_| Ok((Direct { tfo, mptcp }, Vec::new())))
    }
}
