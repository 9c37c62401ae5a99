//! XMPP cases (study S1's topology; RFC 6120/6121 between clients and servers, RFC 6120
//! server-to-server or XEP-0361 x2x gateways between the servers): two Prosody servers,
//! `a.test` in the client host and `b.test` in the server host, started fresh per case.
//!
//! The folder: the sans-IO client engine in `protocols/xmpp/engine` (`wirebench-xmpp`);
//! here its blocking driver ([`session`]), the S1 workloads ([`workload`]), the Prosody
//! peer ([`prosody`]), the x2x gateway pair ([`x2x`], crate `wirebench-x2x`), the built-in
//! server ([`serve`]) and the plugin.

pub mod prosody;
pub mod serve;
pub mod session;
pub mod workload;
pub mod x2x;

use prosody::{Prosody, ProsodyConfig};
use std::net::Ipv4Addr;
use std::time::Duration;
use wirebench_lab::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_model::Kind;
use wirebench_protocol::params::{PEER_STREAM_COUNT, ParamSpec, WORKLOADS};
use wirebench_protocol::{Case, CaseLink, Ctx, Env, Outcome, PeerModel, Protocol, WorkloadError};
use workload::{Topology, XmppRun};

/// XMPP server-to-server links; absent means standard.
pub const S2S: &[&str] = &["standard", "x2x", "x2x-tfo"];

const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "s2s",
    kind: Kind::Choice(S2S),
    default: "",
    workloads: WORKLOADS,
    help: "XMPP server-to-server link: standard (dialback over TCP), x2x (wirebench's zero-handshake XEP-0361 gateways, zlib + dictionary, connect on demand) or x2x-tfo (the same with TCP Fast Open)",
    words: "server link",
}];

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
/// Prosody with x2x gateways: no stream negotiation, compressed stanzas.
const XMPP_X2X: PeerModel = PeerModel {
    start_s: 2.5,
    start_delays: 4.0,
    setup_bytes: 400.0,
    setup_delays: 4.0,
    per_message: 70.0,
    processing_s: 0.005,
};
/// Password of the lab's XMPP users (they exist only inside a run's private servers).
const XMPP_PASSWORD: &str = "wirebench";

pub struct Xmpp;

impl Protocol for Xmpp {
    fn name(&self) -> &'static str {
        "xmpp"
    }

    fn summary(&self) -> &'static str {
        "XMPP between two Prosody servers in lab hosts, over standard S2S or wirebench's x2x \
         gateways (study S1; needs root)"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn lab_hosts(&self) -> Option<&'static [(Ipv4Addr, &'static str)]> {
        Some(&[(CLIENT_ADDR, "a.test"), (SERVER_ADDR, "b.test")])
    }

    fn stream_count(&self) -> Option<u64> {
        Some(PEER_STREAM_COUNT)
    }

    fn peer_model(&self, case: &Case) -> Option<&'static PeerModel> {
        Some(match case.word("s2s") {
            Some("x2x" | "x2x-tfo") => &XMPP_X2X,
            _ => &XMPP_STANDARD,
        })
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        run_case(env, case, repeat, ctx)
    }
}

/// An XMPP case in study S1's topology: fresh Prosody servers (so the first round
/// includes server-to-server set-up), client1 here (client host), client2 in the server
/// host. Server logs are kept under `peers/` in the results directory.
fn run_case(env: &Env, case: &Case, repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let lab = env.need_lab("XMPP")?;
    let dir = env.peer_dir(case, repeat);
    let s2s = x2x::S2s::from_word(case.word("s2s"));
    let start = |domain: &str, user: &str, addr: std::net::Ipv4Addr, ns: &str, sub: &str| {
        let mut cfg = ProsodyConfig::new(domain, addr.into());
        cfg.users.push((user.into(), XMPP_PASSWORD.into()));
        if let x2x::S2s::X2x { .. } = s2s {
            // The gateway is the other domain, as a component (XEP-0114).
            let other = if domain == "a.test" {
                "b.test"
            } else {
                "a.test"
            };
            cfg.components.push((other.into(), x2x::SECRET.into()));
            cfg.component_port = x2x::COMPONENT_PORT;
            cfg.s2s = false;
        }
        Ok::<_, WorkloadError>(Prosody::start(cfg, &dir.join(sub), Some(ns))?)
    };
    let _a = start("a.test", "alice", CLIENT_ADDR, lab.client().name(), "a")?;
    let _b = start("b.test", "bob", SERVER_ADDR, lab.server().name(), "b")?;
    let gateways = match s2s {
        x2x::S2s::X2x { tfo } => Some(x2x::Pair::start(lab, tfo)?),
        x2x::S2s::Standard => None,
    };
    let run = XmppRun::from_case(
        case,
        Topology {
            a_jid: "alice@a.test".into(),
            b_jid: "bob@b.test".into(),
            password: XMPP_PASSWORD.into(),
            a_server: CLIENT_ADDR.into(),
            b_server: SERVER_ADDR.into(),
            b_netns: lab.server().name().to_string(),
        },
        env.seed,
    );
    x2x::wait_quiet(
        lab,
        Duration::from_secs(1),
        Duration::from_secs(30),
        ctx.shutdown,
    );
    let mut out = workload::run(&run, ctx);
    if let Some(pair) = gateways {
        let (a, b) = pair.stop();
        if let Ok(o) = &mut out {
            x2x::record(o, &a, &b, Some(run.payload));
        }
    }
    out
}
