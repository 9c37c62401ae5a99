//! XMPP cases (study S1's topology; RFC 6120/6121 between clients and servers, RFC 6120
//! server-to-server or XEP-0361 x2x gateways between the servers): two Prosody servers,
//! `a.test` in the client host and `b.test` in the server host, started fresh per case.

use crate::estimate::PeerModel;
use crate::link::CaseLink;
use crate::protocol::Protocol;
use crate::{Case, Job, x2x};
use std::net::Ipv4Addr;
use std::time::Duration;
use wirebench_lab::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_workload::xmpp::{Topology, XmppRun};
use wirebench_workload::{Ctx, Outcome, WorkloadError};

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

    fn params(&self) -> &'static [&'static str] {
        &["s2s"]
    }

    fn lab_hosts(&self) -> Option<&'static [(Ipv4Addr, &'static str)]> {
        Some(&[(CLIENT_ADDR, "a.test"), (SERVER_ADDR, "b.test")])
    }

    fn stream_count(&self) -> Option<u64> {
        Some(wirebench_workload::params::PEER_STREAM_COUNT)
    }

    fn peer_model(&self, case: &Case) -> Option<&'static PeerModel> {
        Some(match case.get("s2s").and_then(|v| v.as_word()) {
            Some("x2x" | "x2x-tfo") => &XMPP_X2X,
            _ => &XMPP_STANDARD,
        })
    }

    fn run(
        &self,
        job: &Job,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        job.run_xmpp(case, repeat, ctx)
    }
}

impl Job<'_> {
    /// An XMPP case in study S1's topology: fresh Prosody servers (so the first round
    /// includes server-to-server set-up), client1 here (client host), client2 in the
    /// server host. Server logs are kept under `peers/` in the results directory.
    pub(crate) fn run_xmpp(
        &self,
        case: &Case,
        repeat: u32,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        use wirebench_peers::prosody::{Prosody, ProsodyConfig};
        let lab = self
            .lab
            .ok_or_else(|| WorkloadError::Server("XMPP cases need the lab".into()))?;
        let dir = self
            .opts
            .out
            .join("peers")
            .join(format!("case-{:04}-r{repeat}", case.index));
        let s2s = x2x::S2s::from_word(case.get("s2s").and_then(|v| v.as_word()));
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
            Prosody::start(cfg, &dir.join(sub), Some(ns))
                .map_err(|e| WorkloadError::Server(e.to_string()))
        };
        let _a = start("a.test", "alice", CLIENT_ADDR, lab.client().name(), "a")?;
        let _b = start("b.test", "bob", SERVER_ADDR, lab.server().name(), "b")?;
        let gateways = match s2s {
            x2x::S2s::X2x { tfo } => Some(x2x::Pair::start(lab, tfo)?),
            x2x::S2s::Standard => None,
        };
        let stream = case.workload() == "stream";
        let count = if stream {
            case.get("count")
        } else {
            case.get("rounds")
        };
        let run = XmppRun {
            topology: Topology {
                a_jid: "alice@a.test".into(),
                b_jid: "bob@b.test".into(),
                password: XMPP_PASSWORD.into(),
                a_server: CLIENT_ADDR.into(),
                b_server: SERVER_ADDR.into(),
                b_netns: lab.server().name().to_string(),
            },
            payload: case.get("payload").and_then(|v| v.as_bytes()).unwrap_or(0) as usize,
            count: count.and_then(|v| v.as_count()).unwrap_or(0),
            think: case
                .get("think")
                .and_then(|v| v.as_duration())
                .unwrap_or_default(),
            seed: self.scenario.seed,
            stream,
        };
        x2x::wait_quiet(
            lab,
            Duration::from_secs(1),
            Duration::from_secs(30),
            ctx.shutdown,
        );
        let mut out = wirebench_workload::xmpp::run(&run, ctx);
        if let Some(pair) = gateways {
            let (a, b) = pair.stop();
            if let Ok(o) = &mut out {
                x2x::record(o, &a, &b, Some(run.payload));
            }
        }
        out
    }
}
