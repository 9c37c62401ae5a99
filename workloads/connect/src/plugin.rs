//! A connect-workload protocol's whole plugin from its declaration. The `direct`,
//! `socks5`, `shadowsocks` and `convert` plugins are each one [`ConnectProtocol`], so
//! what they share (the one workload, `serve --also` once per core, the workload's checks
//! before a run) is written here once and each plugin says only what is its own: its
//! words, its parameters, who its cases talk to, its handshake's round trips, its server
//! alone and the case itself (usually [`crate::run_case`] with its [`crate::Dial`]).

use wirebench_model::MetricSpec;
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{
    AloneLimits, Case, CaseLink, Ctx, Env, Outcome, Placement, PluginCommand, Prerequisite,
    Protocol, WorkloadError,
};

/// A connect-workload protocol, declared.
pub struct ConnectProtocol {
    /// `--protocol`'s word, and the server's name in its logs.
    pub name: &'static str,
    /// One line for `wirebench protocols`.
    pub summary: &'static str,
    pub params: &'static [ParamSpec],
    /// Metrics of its own beyond the workload's (`convert.leg`).
    pub metrics: &'static [MetricSpec],
    /// Commands of its own beside `run` (`converter-client`).
    pub commands: &'static [PluginCommand],
    /// Who a case talks to, in words, for the run's first line.
    pub servers: fn(&Case) -> &'static str,
    /// What a case needs on this machine (a third-party proxy), with the parameter
    /// values that call for it: [`none_needed`] for our own servers only.
    pub prerequisites: fn(&Case) -> Vec<Prerequisite>,
    /// Round trips before the first byte can be sent: TCP's ([`crate::tcp_round_trips`])
    /// and the proxy's handshake, for the estimates.
    pub round_trips: fn(&Case) -> f64,
    /// What `serve --also NAME=ADDR` serves, for that flag's help.
    pub serves: &'static str,
    /// Its server alone on a listener of `serve --also`: called once per thread, each on
    /// a listener of its own sharing one port, since its connections share nothing.
    pub serve_alone: fn(std::net::TcpListener, &AloneLimits) -> Result<(), String>,
    /// What its own parameters must satisfy together, beyond the workload's checks
    /// ([`crate::check`]): [`no_check`] when any choice goes.
    pub check: fn(&Case) -> Result<(), WorkloadError>,
    /// One case, repeat `repeat`.
    pub run: fn(&Env, &Case, u32, &Ctx) -> Result<Outcome, WorkloadError>,
}

/// [`ConnectProtocol::prerequisites`] of a protocol whose cases need nothing but
/// wirebench.
pub fn none_needed(_case: &Case) -> Vec<Prerequisite> {
    Vec::new()
}

/// [`ConnectProtocol::check`] of a protocol whose parameters cannot conflict.
pub fn no_check(_case: &Case) -> Result<(), WorkloadError> {
    Ok(())
}

impl Protocol for ConnectProtocol {
    fn name(&self) -> &'static str {
        self.name
    }

    fn summary(&self) -> &'static str {
        self.summary
    }

    fn workloads(&self) -> &'static [&'static str] {
        &["connect"]
    }

    fn params(&self) -> &'static [ParamSpec] {
        self.params
    }

    fn metrics(&self) -> &'static [MetricSpec] {
        self.metrics
    }

    fn commands(&self) -> &'static [PluginCommand] {
        self.commands
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        Some((self.servers)(case))
    }

    fn prerequisites(&self, case: &Case) -> Vec<Prerequisite> {
        (self.prerequisites)(case)
    }

    fn connect_round_trips(&self, case: &Case) -> f64 {
        (self.round_trips)(case)
    }

    fn serve_alone_help(&self) -> Option<&'static str> {
        Some(self.serves)
    }

    fn serve_alone_per_core(&self) -> bool {
        true
    }

    fn serve_alone_limited(
        &self,
        listener: std::net::TcpListener,
        limits: &AloneLimits,
    ) -> Option<Result<(), String>> {
        Some((self.serve_alone)(listener, limits))
    }

    fn check(&self, case: &Case, at: &Placement) -> Result<(), WorkloadError> {
        crate::check(case, at)?;
        (self.check)(case)
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        (self.check)(case)?;
        (self.run)(env, case, repeat, ctx)
    }
}
