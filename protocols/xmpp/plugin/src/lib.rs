//! XMPP cases (RFC 6120/6121 between clients and servers), against one of three server
//! set-ups chosen by the `xmpp.server` parameter, each started fresh per case:
//!
//! - `builtin` (the default unless `s2s` is given): wirebench's own server (`wirebench-xmpp-server`), on loopback or, with a
//!   link, in the lab's server host; client1 crosses the link, client2 sits beside the
//!   server. Needs neither root nor an installed server.
//! - `prosody`: study S1's topology, two Prosody servers, `a.test` in the client host and
//!   `b.test` in the server host, linked by RFC 6120 server-to-server or XEP-0361 x2x
//!   gateways (`s2s`, which implies this set-up); only their server link crosses the
//!   emulated link. Needs root.
//! - `ejabberd`: the same topology with two ejabberd 23.01 servers (`wirebench_xmpp_peers::ejabberd`): its
//!   dialback s2s, or the x2x gateways as its XEP-0114 components. Needs root.
//!
//! Study S2's test (`xmpp.ping=server`) against `prosody` or `ejabberd` runs one server,
//! placed as the built-in one is, with client1 on its own BOSH or WebSocket endpoint
//! ([`s2`]); it needs root only for a link.
//!
//! The plugin's one job is the plugin: its parameters ([`params`]), metrics ([`metrics`])
//! and commands ([`commands`]), and each case's set-up and figures, S1's workloads
//! ([`workload`]), study S2 ([`s2`]) and the load workload's case ([`load_case`]).
//! Concurrency: blocking threads; a case runs on the runner's thread, with client2 on a
//! thread of its own, beside what the case starts in the models of the crates below
//! (the server's mio loops, the gateways' tokio threads, the generators' mio loops).
//!
//! The folder, one crate per job, imports pointing down only: the sans-IO client and
//! server engine in `engine` (`wirebench-xmpp`); the built-in server on mio event loops in
//! `server` (`wirebench-xmpp-server`); the web gateways on tokio in `gateway`
//! (`wirebench-xmpp-gateway`); the native client driver, blocking, in `client`
//! (`wirebench-xmpp-client`); study S2's headless Chromium with Strophe.js in `browser`
//! (`wirebench-xmpp-browser`, `xmpp.client=browser`); the session load generator on mio
//! loops in `load` (`wirebench-xmpp-load`); the real servers and the x2x gateway pair as
//! lab peers in `peers` (`wirebench-xmpp-peers`); `wirebench serve`'s XMPP flags in
//! `serve` (`wirebench-xmpp-serve`).

mod builtin;
pub mod commands;
mod endpoint;
pub mod load_case;
pub mod metrics;
pub mod params;
mod s1;
pub mod s2;
pub mod workload;

use params::{Params, S2sLink};
use std::net::Ipv4Addr;
use wirebench_protocol::hosts::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_protocol::params::{PEER_STREAM_COUNT, ParamSpec};
use wirebench_protocol::{
    Case, CaseLink, Ctx, Env, Outcome, PeerModel, Prerequisite, Protocol, WorkloadError,
};
use wirebench_xmpp_peers::peer::Server;

/// The plugin's parameters: the server set-up's below, then the load workload's.
static ALL_PARAMS: std::sync::LazyLock<Vec<ParamSpec>> =
    std::sync::LazyLock::new(|| PARAMS.iter().chain(load_case::PARAMS).copied().collect());

const PARAMS: &[ParamSpec] = &[
    params::SERVER,
    params::TRANSPORT,
    params::PING,
    params::CLIENT,
    params::ENDPOINT,
    params::FLUSH,
    params::S2S,
    params::USER_TIMEOUT,
    params::TCP_TIMESTAMPS,
];

// Peer models for estimates, calibrated on the recorded runs in
// app/plan/tests/data/recorded/ (browser-transports and satcom-xmpp; 2-core VM).

/// The built-in server: start-up is a bind; logins (a dozen one-way delays, more for the
/// polling transports) cross the link for the client only; a 2-byte chat message is ~150
/// bytes on the wire; 100 loopback pings took 0.1 s with any native transport.
const XMPP_BUILTIN: PeerModel = PeerModel {
    start_s: 0.05,
    start_delays: 16.0,
    setup_bytes: 0.0,
    setup_delays: 0.0,
    per_message: 150.0,
    processing_s: 0.0002,
};

/// Prosody with standard S2S: 4.3 kB of dialback set-up (5.4 kB measured both ways,
/// with retransmissions), ~16 one-way delays; a 2-byte stanza is 217 bytes each way.
const XMPP_STANDARD: PeerModel = PeerModel {
    start_s: 3.0,
    start_delays: 6.0,
    setup_bytes: 4300.0,
    setup_delays: 16.0,
    per_message: 217.0,
    processing_s: 0.005,
};
/// Prosody with x2x gateways: no stream negotiation, compressed stanzas; the first
/// message arrived 1.0 s after the logins at 2400 bit/s (about 250 bytes of set-up), and
/// a 19200 bit/s case of 10 rounds took 2.3 s in all.
const XMPP_X2X: PeerModel = PeerModel {
    start_s: 1.5,
    start_delays: 4.0,
    setup_bytes: 250.0,
    setup_delays: 4.0,
    per_message: 70.0,
    processing_s: 0.005,
};
/// One Prosody for study S2: its account files and modules start in a tenth of a
/// second (0.1-0.2 s for a loopback case of 100 pings); no server link; BOSH's HTTP
/// wrapping makes a ping's bytes on the wire several times a TCP stanza's.
const XMPP_S2_PROSODY: PeerModel = PeerModel {
    start_s: 0.15,
    start_delays: 16.0,
    setup_bytes: 0.0,
    setup_delays: 0.0,
    per_message: 600.0,
    processing_s: 0.0005,
};
/// ejabberd for study S2: its Erlang VM takes 2.2 s to start on loopback, 3.3 s in a
/// lab host.
const XMPP_S2_EJABBERD: PeerModel = PeerModel {
    start_s: 2.8,
    ..XMPP_S2_PROSODY
};
/// Headless Chromium: its start, the page's load and its end, beside the ping test
/// itself (0.85-1.35 s a case, loopback or 162 ms away).
const BROWSER_START_S: f64 = 1.0;

/// A browser's login and ping round trip over a transport, on loopback, flushing after
/// each ping (Strophe.js and sockjs-client; 100 pings, 2026-11-27): WebSocket frames
/// 0.6-1.4 ms a round, BOSH 4.8 ms (its login 0.47 s), the polling and streaming SockJS
/// transports 29 ms (xhr-polling, eventsource) and 51-58 ms (xhr-streaming,
/// jsonp-polling; htmlfile taken as these). BOSH without flushing waits for Strophe's
/// 100 ms idle timer: 107 ms a round (docs/browser-transports.md).
fn browser_costs(
    transport: &wirebench_xmpp_client::transport::Transport,
    flush: params::Flush,
) -> (f64, f64) {
    match transport.word() {
        "websocket" | "sockjs-websocket" => (0.05, 0.0015),
        "bosh" if flush == params::Flush::Off => (0.6, 0.107),
        "bosh" => (0.5, 0.005),
        "xhr-polling" | "eventsource" => (0.2, 0.03),
        _ => (0.5, 0.058),
    }
}

pub struct Xmpp;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Xmpp;

impl Protocol for Xmpp {
    fn metrics(&self) -> &'static [wirebench_model::MetricSpec] {
        metrics::METRICS
    }
    fn commands(&self) -> &'static [wirebench_protocol::PluginCommand] {
        commands::COMMANDS
    }
    fn serve_flags(&self, serve: clap::Command) -> clap::Command {
        wirebench_xmpp_serve::serve_flags(serve)
    }
    fn serve_plan(
        &self,
        flags: &clap::ArgMatches,
        quiet: bool,
    ) -> anyhow::Result<Option<Box<dyn wirebench_protocol::ServePlan>>> {
        wirebench_xmpp_serve::serve_plan(flags, quiet)
    }
    fn load_server(&self) -> Option<wirebench_protocol::LoadServer> {
        Some(wirebench_xmpp_serve::LOAD_SERVER)
    }
    fn legend_by_value(&self) -> &'static [&'static str] {
        // Their values (prosody, browser) read as names in a legend on their own.
        &["xmpp.client", "xmpp.server"]
    }

    fn name(&self) -> &'static str {
        "xmpp"
    }

    fn summary(&self) -> &'static str {
        "XMPP client-to-server against wirebench's built-in server (default, no root), or \
         between two Prosody or ejabberd servers in lab hosts over standard S2S or wirebench's x2x \
         gateways (xmpp.server=prosody: study S1; needs root)"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &ALL_PARAMS
    }

    fn workloads(&self) -> &'static [&'static str] {
        &["pingpong", "stream", "load"]
    }

    fn estimate_secs(&self, case: &Case) -> Option<f64> {
        (case.workload() == "load")
            .then(|| load_case::estimate_secs(case))
            .flatten()
    }

    fn lab_hosts(&self, case: &Case) -> Option<&'static [(Ipv4Addr, &'static str)]> {
        // A load case runs its one server on loopback; study S2's one server is reached
        // by address, so it needs the lab only for a link.
        let p = Params::from_case(case);
        (case.workload() != "load" && !p.is_s2() && p.real_server.is_some())
            .then_some(&[(CLIENT_ADDR, "a.test"), (SERVER_ADDR, "b.test")])
    }

    fn prerequisites(&self, case: &Case) -> Vec<Prerequisite> {
        let mut out = Vec::new();
        let p = Params::from_case(case);
        // A case refused for its parameters needs nothing: its refusal is what the user
        // must hear, whatever is installed.
        let s2_refused = |s: Server| p.is_s2() && s2::check_input(&p, s.name()).is_err();
        match p.real_server {
            Some(s) if s2_refused(s) => return out,
            Some(Server::Prosody) => {
                out.push(wirebench_xmpp_peers::prosody::PROSODY.because(p.server_reason()))
            }
            Some(Server::Ejabberd) => {
                out.push(wirebench_xmpp_peers::ejabberd::EJABBERD.because(p.server_reason()));
                // A load case's accounts are imported from files that luerl reads.
                if case.workload() == "load" {
                    out.push(
                        wirebench_xmpp_peers::ejabberd::LUERL
                            .because("xmpp.server=ejabberd workload=load"),
                    );
                }
            }
            None => {}
        }
        if p.in_browser() && s2::check_browser(case, &p).is_ok() {
            out.push(wirebench_xmpp_browser::CHROMIUM.because("xmpp.client=browser"));
            out.push(wirebench_xmpp_browser::STROPHE.because("xmpp.client=browser"));
        }
        out
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        let load = case.workload() == "load";
        let p = Params::from_case(case);
        Some(match p.real_server {
            Some(Server::Prosody) if load => "a Prosody server started on loopback",
            Some(Server::Ejabberd) if load => "an ejabberd server started on loopback",
            Some(Server::Prosody) if p.is_s2() => {
                "a Prosody server started for the case, with its own BOSH and WebSocket endpoints"
            }
            Some(Server::Ejabberd) if p.is_s2() => {
                "an ejabberd server started for the case, with its own BOSH and WebSocket endpoints"
            }
            Some(Server::Prosody) => "two Prosody servers started in the lab",
            Some(Server::Ejabberd) => "two ejabberd servers started in the lab",
            None if case
                .text(&load_case::TARGET)
                .is_some_and(|t| t != "builtin") =>
            {
                "the XMPP server at load.target"
            }
            None => "wirebench's built-in XMPP server",
        })
    }

    fn stream_count(&self) -> Option<u64> {
        Some(PEER_STREAM_COUNT)
    }

    fn peer_model(&self, case: &Case) -> Option<PeerModel> {
        let p = Params::from_case(case);
        let mut m = match (p.real_server, p.s2s) {
            (None, _) => XMPP_BUILTIN,
            (Some(Server::Ejabberd), _) if p.is_s2() => XMPP_S2_EJABBERD,
            (Some(_), _) if p.is_s2() => XMPP_S2_PROSODY,
            (Some(_), Some(S2sLink::X2x | S2sLink::X2xTfo)) => XMPP_X2X,
            (Some(_), _) => XMPP_STANDARD,
        };
        if p.in_browser() {
            let (login, round) = browser_costs(&p.transport, p.flush);
            m.start_s += BROWSER_START_S + login;
            // The estimator counts processing at both ends of a round.
            m.processing_s = m.processing_s.max(round / 2.0);
        }
        Some(m)
    }

    fn check(&self, case: &Case, at: &wirebench_protocol::Placement) -> Result<(), WorkloadError> {
        if case.workload() == "load" {
            return load_case::check(case, at);
        }
        let p = Params::from_case(case);
        match p.real_server {
            Some(server) if p.is_s2() => s2::check_input(&p, server.name())?,
            Some(_) => s1::check_input(&p)?,
            None => {}
        }
        if p.in_browser() {
            s2::check_browser(case, &p)?;
        }
        Ok(())
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        if case.workload() == "load" {
            return load_case::run(env, case, repeat, ctx);
        }
        let p = Params::from_case(case);
        match p.real_server {
            Some(server) if p.is_s2() => s2::run(env, case, &p, repeat, ctx, server),
            Some(server) => s1::run(env, case, &p, repeat, ctx, server),
            None => builtin::run(env, case, &p, ctx),
        }
    }
}
