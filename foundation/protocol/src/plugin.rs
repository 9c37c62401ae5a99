//! The plugin interface. A protocol is a folder `protocols/<name>/` (its sans-IO engine in
//! `engine/`, its drivers, parameters, server side or real peers and its `Protocol`
//! implementation in `plugin/`) plus one line in app/plan's Cargo.toml (its
//! `wirebench-plugin-NAME` dependency, from which that crate's build script makes the
//! registry). The case loop, the planner, the estimator, the merge and the CLI know
//! protocols only through this trait: their parameters, metrics, commands and `serve`
//! endpoints included.

use crate::params::ParamSpec;
use crate::surface::{PluginCommand, ServePlan};
use crate::{Case, CaseLink, Ctx, Hosts, Outcome, Transport, WorkloadError};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wirebench_model::MetricSpec;

/// A protocol wirebench can measure.
pub trait Protocol: Sync {
    /// The value of the `protocol` parameter.
    fn name(&self) -> &'static str;
    /// One line for `wirebench protocols`.
    fn summary(&self) -> &'static str;
    /// The workloads it can run ([`crate::params::WORKLOADS`] names); the runner refuses
    /// a case of any other before anything starts.
    fn workloads(&self) -> &'static [&'static str] {
        &["pingpong", "stream"]
    }

    /// Its own estimate of one run of `case`, seconds, when the shared estimator cannot
    /// make one (a load's phases and script are the protocol's parameters).
    fn estimate_secs(&self, _case: &Case) -> Option<f64> {
        None
    }

    /// Parameters only this protocol reads, with the workloads they apply to. A case of
    /// another protocol drops them, as a case drops parameters of other workloads.
    fn params(&self) -> &'static [ParamSpec] {
        &[]
    }
    /// Those of its parameters whose value alone names a chart series, as a protocol's
    /// name does (`prosody`, not `XMPP server prosody`); the runner hands them to the
    /// report.
    fn legend_by_value(&self) -> &'static [&'static str] {
        &[]
    }
    /// The metrics only its cases record (the shared ones are
    /// [`wirebench_model::metric::SHARED`]): `--columns` accepts them, `wirebench merge`
    /// merges them by their rule, and a test refuses a recorded metric nobody declares.
    fn metrics(&self) -> &'static [MetricSpec] {
        &[]
    }
    /// The largest payload its cases may ask of the server they use when the run starts
    /// it (the embedded reference server), so a larger one is refused before anything
    /// runs; `None`: no such limit.
    fn max_payload(&self) -> Option<u64> {
        None
    }
    /// Its own `wirebench` subcommands (standalone gateways, worker entry points).
    fn commands(&self) -> &'static [PluginCommand] {
        &[]
    }
    /// Adds its flags to `wirebench serve` (under a heading of its own).
    fn serve_flags(&self, serve: clap::Command) -> clap::Command {
        serve
    }
    /// The endpoints its `wirebench serve` flags ask for, checked before anything
    /// listens (`quiet`: serve's `--quiet`); `None` when none was asked for.
    fn serve_plan(
        &self,
        _flags: &clap::ArgMatches,
        _quiet: bool,
    ) -> anyhow::Result<Option<Box<dyn ServePlan>>> {
        Ok(None)
    }
    /// Its `wirebench serve` endpoint that `wirebench k8s --with-server` deploys as the
    /// server a sharded load runs against; `None`: it has none.
    fn load_server(&self) -> Option<crate::LoadServer> {
        None
    }
    /// `wirebench serve`'s own server (the reference server), bound to `listen` (a
    /// resolvable `host:port`) with serve's `--max-payload` and logging unless `--quiet`;
    /// `None` from every protocol but the one that owns it.
    fn serve_main(
        &self,
        _listen: &str,
        _max_payload: &str,
        _log: bool,
    ) -> Option<anyhow::Result<Box<dyn crate::MainServer>>> {
        None
    }
    /// One line for `serve --also`'s help when [`Protocol::serve_alone`] runs a server:
    /// what it serves, e.g. "(POST /soap)".
    fn serve_alone_help(&self) -> Option<&'static str> {
        None
    }
    /// Real servers, placed per case, that find each other by name: such a case runs in
    /// the lab (over an unlimited link unless one is given), whose hosts get these
    /// hosts-file entries.
    fn lab_hosts(&self, _case: &Case) -> Option<&'static [(Ipv4Addr, &'static str)]> {
        None
    }
    /// What a case needs on this machine beyond wirebench (a real server, a browser, a
    /// compiler), each with the parameter values that call for it. The runner checks them
    /// for every planned case before the first one starts, and `wirebench doctor` lists
    /// them; the lab's own needs (root) are the runner's to add.
    fn prerequisites(&self, _case: &Case) -> Vec<crate::Prerequisite> {
        Vec::new()
    }
    /// What its load sessions' being up is called in the load charts and table
    /// (`load.logged_in`, `load.login`): logged in, unless the protocol says otherwise.
    fn session_words(&self) -> wirebench_model::session_words::SessionWords {
        wirebench_model::session_words::SessionWords::LOGIN
    }
    /// Who a case talks to, in words, when not the reference server (for the run's first
    /// line): "Prosody servers started in the lab".
    fn servers(&self, _case: &Case) -> Option<&'static str> {
        None
    }
    /// Whether its cases talk to wirebench's reference server (raw's control channel),
    /// which the embedded server's payload limit applies to.
    fn uses_reference_server(&self) -> bool {
        false
    }
    /// Starts what its cases share for the whole run (a server, a connection kept between
    /// cases), before the results directory is created, so a run that cannot reach it
    /// fails before writing anything. Called once per run for a protocol with cases to
    /// run; each case gets what it returned as [`Env::service`], and the run keeps it
    /// (dropping it stops it) until the last case is done.
    fn start_run(&self, _run: &RunEnv) -> Result<Option<RunService>, WorkloadError> {
        Ok(None)
    }
    /// The transport its cases' traffic uses: the TCP knobs (`tcp.*`) apply to TCP's
    /// only, and the estimator counts each transport's headers, handshake and
    /// acknowledgements (`Transport::ipv4_packets`). CoAP and QUIC run over UDP.
    fn transport(&self) -> Transport {
        Transport::Tcp
    }
    /// A stream of this protocol is bounded by a message count, this one unless given,
    /// rather than by a duration.
    fn stream_count(&self) -> Option<u64> {
        None
    }
    /// How long its real peers take to start, link and carry a message, for estimates;
    /// `None`: no real peers.
    fn peer_model(&self, _case: &Case) -> Option<PeerModel> {
        None
    }
    /// Seconds the connection's set-up adds to the first exchange over `link` (the case's
    /// emulated link), for estimates, when the protocol can work them out better than
    /// [`PeerModel`]'s bytes and round trips; `None`: the model's. QUIC runs its own
    /// handshake over the link model, since its probe timeouts' bytes depend on the link.
    fn setup_over(&self, _case: &Case, _link: &CaseLink) -> Option<f64> {
        None
    }
    /// Seconds a case spends starting what it talks to beyond what the estimator models
    /// (a JVM per case; javac once, at the run's first case of this protocol).
    fn start_up(&self, _case: &Case) -> StartUp {
        StartUp::default()
    }
    /// Whether a stream case's messages come back (so both directions of the link carry
    /// them): raw's `mode=echo`. Ping-pong always does.
    fn stream_echoes(&self, _case: &Case) -> bool {
        false
    }
    /// Whether a stream case's payload travels from the server to the client (QUIC's
    /// HTTP/3 `GET /N`), so `link.utilization` is over the downlink's rate; otherwise the
    /// client sends it, over the uplink.
    fn stream_downloads(&self, _case: &Case) -> bool {
        false
    }
    /// Bytes each message adds to its payload on the wire above TCP, when fixed: the
    /// runner then records the link model's round trip (`rtt.model`) beside the measured.
    fn message_overhead(&self) -> Option<u64> {
        None
    }
    /// Round trips a connect case's connection takes to its first byte on an idle path
    /// (the TCP handshake, the protocol's own, the request and its answer), for estimates.
    fn connect_round_trips(&self, _case: &Case) -> f64 {
        2.0
    }
    /// The bytes a stream case may have unacknowledged by flow control (a QUIC stream's
    /// window), for estimates: a transfer moves at most this per round trip. `None`: the
    /// kernel's TCP windows, which grow with the path.
    fn stream_window(&self, _case: &Case) -> Option<f64> {
        None
    }
    /// CPU seconds of the whole machine (both ends, the kernel, the link emulator) one
    /// connect case's connection costs, for estimates: with many at once the cores, not
    /// the path, set the pace. 0: the path always does (TCP's handshake is cheap).
    fn connect_cpu_s(&self, _case: &Case) -> f64 {
        0.0
    }
    /// Starts this protocol's own server on `listener`, alone, for `wirebench serve
    /// --also NAME=ADDR` (so wrk, h2load, ghz or a remote wirebench can reach it), serving
    /// payloads up to `max_payload` until the process ends. `None`: its cases use the
    /// reference server or third-party servers instead.
    fn serve_alone(
        &self,
        _listener: std::net::TcpListener,
        _max_payload: usize,
    ) -> Option<Result<(), String>> {
        None
    }
    /// Whether `wirebench serve --also` may call [`Protocol::serve_alone`] once per thread
    /// (serve's `--proxy-threads`), each time on a listener of its own sharing one port
    /// (`SO_REUSEPORT`): true for servers whose connections share nothing (our proxies).
    fn serve_alone_per_core(&self) -> bool {
        false
    }
    /// [`Protocol::serve_alone`] with every limit `wirebench serve` sets for it: what
    /// `serve --also` calls. A protocol whose server reads an opening from its clients
    /// (an HTTP request head, a WebSocket upgrade) implements this one instead, to close
    /// connections that do not send it in time.
    fn serve_alone_limited(
        &self,
        listener: std::net::TcpListener,
        limits: &AloneLimits,
    ) -> Option<Result<(), String>> {
        self.serve_alone(listener, limits.max_payload)
    }
    /// [`Protocol::serve_alone_limited`] for a protocol over UDP (its
    /// [`Protocol::transport`]): its own server on `socket`, alone, for `wirebench serve
    /// --also NAME=ADDR`, on a thread of its own until the process ends.
    fn serve_alone_udp(
        &self,
        _socket: std::net::UdpSocket,
        _limits: &AloneLimits,
    ) -> Option<Result<(), String>> {
        None
    }
    /// Refuses, before anything runs, a case this protocol cannot run as planned: its
    /// parameters together (`connections` above `rounds`), or where the run places it (a
    /// server of the user's in a run with a link). These are the checks [`Protocol::run`]
    /// makes at the case's start, called by the runner for every planned case before it
    /// creates anything, so `--dry-run` and `wirebench doctor` refuse what the run would;
    /// the error names the parameters and what to give instead.
    fn check(&self, _case: &Case, _at: &Placement) -> Result<(), WorkloadError> {
        Ok(())
    }
    /// Runs one case (repeat `repeat`) and returns its metrics.
    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError>;
}

/// Where the run places its cases, for [`Protocol::check`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placement {
    /// The case runs in the lab: the run has a case with a link, and then every case's
    /// client side sits in the lab's client host, where loopback is the host's own.
    pub lab: bool,
    /// This run is shard `index` of `count` (`--shard I/N`).
    pub shard: Option<(u32, u32)>,
}

/// What `wirebench serve` gives a protocol's server run alone (`--also`).
#[derive(Debug, Clone)]
pub struct AloneLimits {
    /// Largest payload served (serve's `--max-payload`).
    pub max_payload: usize,
    /// How long a connection may take to send its opening (its first HTTP request, a
    /// WebSocket upgrade) before it is closed, and an HTTP connection may stay with no
    /// request (serve's `--also-header-timeout`).
    pub header_timeout: std::time::Duration,
    /// The server's cap on open connections (serve's `--also-max-connections`), one for
    /// all the threads of one `--also` server: over it a new connection is closed at once.
    pub connections: std::sync::Arc<wirebench_net::cap::ConnCap>,
    /// HTTP/2 streams one connection may have open at once (serve's
    /// `--also-max-streams`, the SETTINGS_MAX_CONCURRENT_STREAMS it announces).
    pub max_streams: u32,
    /// Log the clients the server closes, and why (serve without `--quiet`).
    pub log: bool,
}

/// What a run gives [`Protocol::start_run`].
pub struct RunEnv<'a> {
    /// The lab's hosts, when the run has a lab: a server belongs in its server host.
    pub lab: Option<Hosts<'a>>,
    /// A server address given on the command line (`--server`), to use instead of
    /// starting one.
    pub server: Option<&'a str>,
    /// How long connecting may take (longer over a slow emulated link).
    pub connect_timeout: Duration,
}

/// What a protocol keeps for a whole run: its state, and whom it talks to in words
/// ("the reference server at 10.77.0.2:7420") for the run's first line.
pub struct RunService {
    pub state: Box<dyn std::any::Any + Send + Sync>,
    pub against: Option<String>,
}

/// What the run gives each case.
pub struct Env<'a> {
    /// The lab's hosts, when the run has a lab: their namespaces, addresses and the
    /// link's counters.
    pub lab: Option<Hosts<'a>>,
    /// The results directory (absolute).
    pub out: &'a Path,
    /// The scenario's seed, for payload patterns and anything random.
    pub seed: u64,
    /// What this protocol's [`Protocol::start_run`] returned, if anything.
    pub service: Option<&'a (dyn std::any::Any + Send + Sync)>,
    /// This run's shard, when it is one of several (`--shard I/N`): only load cases run
    /// then, each generating its slice.
    pub shard: Option<&'a crate::Shard<'a>>,
}

impl<'a> Env<'a> {
    /// The lab's hosts, or an error naming the protocol that needs them.
    pub fn need_lab(&self, protocol: &str) -> Result<Hosts<'a>, WorkloadError> {
        self.lab.ok_or_else(|| {
            WorkloadError::Environment(format!("{protocol} cases need the lab (run as root)"))
        })
    }

    /// Where a case's peers keep their configuration and logs:
    /// `<results>/peers/case-NNNN-rK`.
    pub fn peer_dir(&self, case: &Case, repeat: u32) -> PathBuf {
        self.out
            .join("peers")
            .join(format!("case-{:04}-r{repeat}", case.index))
    }
}

/// A protocol's real peers for the estimator: start-up in seconds plus one-way delays,
/// then the servers' link set-up (bytes each way and one-way delays on its critical
/// path), then each message's bytes beyond its payload in each direction (the transport's
/// headers, `Transport::ipv4_overhead`, and over TCP the peer's ACK included). Without a
/// link (loopback) the same model applies with no delay and the emulator's rate, so
/// start-up and processing remain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerModel {
    pub start_s: f64,
    pub start_delays: f64,
    pub setup_bytes: f64,
    pub setup_delays: f64,
    pub per_message: f64,
    /// The servers' and clients' own work per message (parsing, routing), which a fast
    /// link leaves as the whole round trip.
    pub processing_s: f64,
}

/// Start-up a case pays beyond the estimator's model of its protocol, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StartUp {
    /// Every case.
    pub each: f64,
    /// Once per run, by its first case of this protocol.
    pub once: f64,
}
