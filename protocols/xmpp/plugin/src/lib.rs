//! XMPP cases (RFC 6120/6121 between clients and servers), against one of three server
//! set-ups chosen by the `xmpp.server` parameter, each started fresh per case:
//!
//! - `builtin` (the default unless `s2s` is given): wirebench's own server ([`serve`]), on loopback or, with a
//!   link, in the lab's server host; client1 crosses the link, client2 sits beside the
//!   server. Needs neither root nor an installed server.
//! - `prosody`: study S1's topology, two Prosody servers, `a.test` in the client host and
//!   `b.test` in the server host, linked by RFC 6120 server-to-server or XEP-0361 x2x
//!   gateways (`s2s`, which implies this set-up); only their server link crosses the
//!   emulated link. Needs root.
//! - `ejabberd`: the same topology with two ejabberd 23.01 servers ([`ejabberd`]): its
//!   dialback s2s, or the x2x gateways as its XEP-0114 components. Needs root.
//!
//! Study S2's test (`xmpp.ping=server`) against `prosody` or `ejabberd` runs one server,
//! placed as the built-in one is, with client1 on its own BOSH or WebSocket endpoint
//! ([`s2`]); it needs root only for a link.
//!
//! The folder, one crate per job, imports pointing down only: the sans-IO client and
//! server engine in `engine` (`wirebench-xmpp`); the built-in server on mio event loops in
//! `server` ([`serve`]); the web gateways on tokio in `gateway` ([`web`]); the session
//! load generator in `load` ([`load`], [`load_case`], [`hold`]); the real servers and
//! the x2x gateway pair as lab peers in `peers` ([`peer`], [`prosody`], [`ejabberd`],
//! [`x2x`]). Here, on blocking threads: the plugin, its client driver ([`session`] over
//! a [`transport`]), the S1 workloads ([`workload`]), study S2 ([`s2`]) and its browser
//! client (headless Chromium with Strophe.js, [`browser`], `xmpp.client=browser`).

pub mod browser;
mod builtin;
pub mod commands;
mod endpoint;
pub mod metrics;
mod s1;
pub mod s2;
pub mod session;
pub mod transport;
pub mod workload;

// The other crates of the folder, under the paths the binary and the tests know.
pub use wirebench_xmpp_gateway as web;
pub use wirebench_xmpp_load::open_loop as load;
pub use wirebench_xmpp_load::{hold, load_case, tls};
pub use wirebench_xmpp_peers::{ejabberd, peer, prosody, x2x};
pub use wirebench_xmpp_server as serve;

use std::net::Ipv4Addr;
use wirebench_model::Kind;
use wirebench_protocol::hosts::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_protocol::params::{ON_OFF, PEER_STREAM_COUNT, ParamSpec, WORKLOADS};
use wirebench_protocol::{
    Case, CaseLink, Ctx, Env, Outcome, PeerModel, Prerequisite, Protocol, WorkloadError,
};
use wirebench_xmpp_peers::peer::{Server, real_server};

/// XMPP server-to-server links; absent means standard.
pub const S2S: &[&str] = &["standard", "x2x", "x2x-tfo"];

/// Server set-ups.
pub const SERVERS: &[&str] = &["builtin", "prosody", "ejabberd"];

/// The plugin's parameters: the server set-up's below, then the load workload's.
static ALL_PARAMS: std::sync::LazyLock<Vec<ParamSpec>> =
    std::sync::LazyLock::new(|| PARAMS.iter().chain(load_case::PARAMS).copied().collect());

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "xmpp.server",
        kind: Kind::Choice(SERVERS),
        default: "",
        workloads: WORKLOADS,
        help: "XMPP servers: builtin (wirebench's own, one server, no root needed; the default unless s2s is given), prosody (two Prosody 0.12 servers in lab hosts, study S1's topology; needs root; the default with s2s) or ejabberd (the same with two ejabberd 23.01 servers); for workload load, one server of the kind on loopback with the accounts and rosters the sessions need; with xmpp.ping=server (study S2), one server of the kind in the server host (loopback without a link), client1 on its own endpoint for xmpp.transport (tcp, websocket or bosh)",
        words: "XMPP server",
    },
    ParamSpec {
        name: "xmpp.transport",
        kind: Kind::Choice(transport::TRANSPORTS),
        default: "tcp",
        workloads: &["pingpong", "stream"],
        help: "what carries the clients' XMPP streams to the built-in server: tcp (RFC 6120), websocket (RFC 7395, through wirebench's WebSocket endpoint) or bosh (XEP-0124/0206, through wirebench's BOSH connection manager), or SockJS 0.3.3 through wirebench's SockJS endpoint: sockjs-websocket, xhr-streaming, xhr-polling, jsonp-polling, eventsource or htmlfile (each SockJS message one RFC 7395 element); the endpoint runs in front of the server, each session with its own TCP connection to it; with xmpp.server=prosody or ejabberd (xmpp.ping=server only), tcp, websocket or bosh straight to that server's own endpoint (Prosody's mod_websocket and mod_bosh, ejabberd's ejabberd_http_ws and mod_bosh)",
        words: "XMPP transport",
    },
    ParamSpec {
        name: "xmpp.ping",
        kind: Kind::Choice(workload::PINGS),
        default: "message",
        workloads: &["pingpong"],
        help: "what one ping-pong round is: message (client1 -> client2 -> client1 chat messages) or server (study S2: client1 alone sends XEP-0199 iq pings to its server, each waiting for its pong; s2.total times connect, login and every round)",
        words: "XMPP ping",
    },
    ParamSpec {
        name: "xmpp.client",
        kind: Kind::Choice(browser::CLIENTS),
        default: "native",
        workloads: &["pingpong"],
        help: "who is client1 in study S2 (xmpp.ping=server): native (wirebench's own client engine) or browser (headless Chromium running Strophe.js from npm in a page wirebench serves; needs xmpp.transport=websocket, bosh or a SockJS transport (sockjs-client under Strophe's WebSocket transport), `apt-get install chromium` and scripts/install-strophe.sh)",
        words: "XMPP client",
    },
    ParamSpec {
        name: "xmpp.endpoint",
        kind: Kind::Choice(s2::ENDPOINTS),
        default: "own",
        workloads: &["pingpong"],
        help: "xmpp.ping=server with xmpp.server=prosody or ejabberd: whose web endpoint the client reaches, the server's own (own: Prosody's mod_websocket and mod_bosh, ejabberd's ejabberd_http_ws and mod_bosh) or wirebench's gateway in front of the server's client port (wirebench; the only way to SockJS, which neither server has)",
        words: "web endpoint",
    },
    ParamSpec {
        name: "xmpp.flush",
        kind: Kind::Choice(browser::FLUSH),
        default: "on",
        workloads: &["pingpong"],
        help: "xmpp.client=browser: the page calls Strophe's connection.flush() after each ping (on), after every stanza Strophe sends, the login's too (all), or leaves sending to Strophe (off: its BOSH transport sends a queued stanza from a 100 ms idle timer)",
        words: "flush after send",
    },
    ParamSpec {
        name: "s2s",
        kind: Kind::Choice(S2S),
        default: "",
        workloads: WORKLOADS,
        help: "server-to-server link between the two real servers (xmpp.server=prosody or ejabberd): standard (dialback over TCP), x2x (wirebench's zero-handshake XEP-0361 gateways as each server's XEP-0114 component, zlib + dictionary, connect on demand) or x2x-tfo (the same with TCP Fast Open)",
        words: "server link",
    },
    ParamSpec {
        name: "x2x.user_timeout",
        kind: Kind::Duration,
        default: "",
        workloads: &["pingpong", "stream"],
        help: "s2s=x2x or x2x-tfo: TCP_USER_TIMEOUT of the gateways' link connection, how long sent data may stay unacknowledged before the connection is declared dead and the gateways reconnect and resend what was not acknowledged (default 120s: TCP bridges outages shorter than that by retransmission)",
        words: "x2x user timeout",
    },
    ParamSpec {
        name: "x2x.tcp_timestamps",
        kind: Kind::Choice(ON_OFF),
        default: "on",
        workloads: &["pingpong", "stream"],
        help: "s2s=x2x or x2x-tfo: TCP timestamps (RFC 7323) on the gateways' link connection; off saves 12 bytes in every segment (0.04 s per segment at 2400 bit/s), but only pays while the link's round trip stays below 1 s (Linux's initial retransmission timeout): above it, without timestamps the kernel never gets a valid RTT sample and resends every segment (docs/x2x.md); set as net.ipv4.tcp_timestamps in both gateway hosts for the case",
        words: "x2x TCP timestamps",
    },
];

// Peer models for estimates, calibrated on the recorded runs in
// app/runner/tests/data/recorded/ (browser-transports and satcom-xmpp; 2-core VM).

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
fn browser_costs(transport: Option<&str>, flush: Option<&str>) -> (f64, f64) {
    match transport {
        Some("websocket" | "sockjs-websocket") => (0.05, 0.0015),
        Some("bosh") if flush == Some("off") => (0.6, 0.107),
        Some("bosh") => (0.5, 0.005),
        Some("xhr-polling" | "eventsource") => (0.2, 0.03),
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
        commands::serve_flags(serve)
    }
    fn serve_plan(
        &self,
        flags: &clap::ArgMatches,
        quiet: bool,
    ) -> anyhow::Result<Option<Box<dyn wirebench_protocol::ServePlan>>> {
        commands::serve_plan(flags, quiet)
    }
    fn load_server(&self) -> Option<wirebench_protocol::LoadServer> {
        Some(commands::LOAD_SERVER)
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
        (case.workload() != "load" && !is_s2(case) && real_server(case).is_some())
            .then_some(&[(CLIENT_ADDR, "a.test"), (SERVER_ADDR, "b.test")])
    }

    fn prerequisites(&self, case: &Case) -> Vec<Prerequisite> {
        let mut out = Vec::new();
        // Said as the case says it: `s2s` alone implies Prosody.
        let server = || match (case.word("xmpp.server"), case.word("s2s")) {
            (Some(s), _) => format!("xmpp.server={s}"),
            (None, s2s) => format!("s2s={}", s2s.unwrap_or("")),
        };
        // A case refused for its parameters needs nothing: its refusal is what the user
        // must hear, whatever is installed.
        let s2_refused = |s: Server| is_s2(case) && s2::check_input(case, s.name()).is_err();
        match real_server(case) {
            Some(s) if s2_refused(s) => return out,
            Some(Server::Prosody) => out.push(prosody::PROSODY.because(server())),
            Some(Server::Ejabberd) => {
                out.push(ejabberd::EJABBERD.because(server()));
                // A load case's accounts are imported from files that luerl reads.
                if case.workload() == "load" {
                    out.push(ejabberd::LUERL.because("xmpp.server=ejabberd workload=load"));
                }
            }
            None => {}
        }
        if case.word("xmpp.client") == Some("browser") && browser::check_input(case).is_ok() {
            out.push(browser::CHROMIUM.because("xmpp.client=browser"));
            out.push(browser::STROPHE.because("xmpp.client=browser"));
        }
        out
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        let load = case.workload() == "load";
        Some(match real_server(case) {
            Some(Server::Prosody) if load => "a Prosody server started on loopback",
            Some(Server::Ejabberd) if load => "an ejabberd server started on loopback",
            Some(Server::Prosody) if is_s2(case) => {
                "a Prosody server started for the case, with its own BOSH and WebSocket endpoints"
            }
            Some(Server::Ejabberd) if is_s2(case) => {
                "an ejabberd server started for the case, with its own BOSH and WebSocket endpoints"
            }
            Some(Server::Prosody) => "two Prosody servers started in the lab",
            Some(Server::Ejabberd) => "two ejabberd servers started in the lab",
            None if case.word("load.target").is_some_and(|t| t != "builtin") => {
                "the XMPP server at load.target"
            }
            None => "wirebench's built-in XMPP server",
        })
    }

    fn stream_count(&self) -> Option<u64> {
        Some(PEER_STREAM_COUNT)
    }

    fn peer_model(&self, case: &Case) -> Option<PeerModel> {
        let mut m = match (real_server(case), case.word("s2s")) {
            (None, _) => XMPP_BUILTIN,
            (Some(Server::Ejabberd), _) if is_s2(case) => XMPP_S2_EJABBERD,
            (Some(_), _) if is_s2(case) => XMPP_S2_PROSODY,
            (Some(_), Some("x2x" | "x2x-tfo")) => XMPP_X2X,
            (Some(_), _) => XMPP_STANDARD,
        };
        if case.word("xmpp.client") == Some("browser") {
            let (login, round) =
                browser_costs(case.word("xmpp.transport"), case.word("xmpp.flush"));
            m.start_s += BROWSER_START_S + login;
            // The estimator counts processing at both ends of a round.
            m.processing_s = m.processing_s.max(round / 2.0);
        }
        Some(m)
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
        match real_server(case) {
            Some(server) if is_s2(case) => s2::run(env, case, repeat, ctx, server),
            Some(server) => s1::run(env, case, repeat, ctx, server),
            None => builtin::run(env, case, ctx),
        }
    }
}

/// Study S2's test: client1 pings its own server.
fn is_s2(case: &Case) -> bool {
    case.word("xmpp.ping") == Some("server")
}
