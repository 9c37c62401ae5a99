//! Study S1's topology with real servers (Prosody or ejabberd, crate
//! `wirebench-xmpp-peers`): one in each lab host, linked by their own server-to-server
//! link (RFC 6120 dialback) or by the x2x gateways (XEP-0361).

use crate::params::{Params, S2sLink};
use crate::workload::{self, Topology, XmppRun};
use std::time::Duration;
use wirebench_protocol::hosts::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_protocol::{Case, Ctx, Env, Outcome, WorkloadError};
use wirebench_xmpp_client::transport::Transport;
use wirebench_xmpp_peers::peer::{PeerConfig, Server};
use wirebench_xmpp_peers::x2x;

/// Password of the lab's XMPP users (they exist only inside a run's private servers).
const XMPP_PASSWORD: &str = "wirebench";

/// The parameters study S1's two-server topology cannot run, refused before the run and
/// again before its servers start.
pub(crate) fn check_input(p: &Params) -> Result<(), WorkloadError> {
    if p.transport != Transport::Tcp {
        return Err(WorkloadError::Input(
            "xmpp.transport other than tcp with xmpp.server=prosody or ejabberd runs study S2's \
             test only (xmpp.ping=server: one server, its own endpoints); study S1's two-server \
             topology is over TCP"
                .into(),
        ));
    }
    if p.in_browser() {
        return Err(WorkloadError::Input(
            "xmpp.client=browser runs study S2's test: it needs xmpp.ping=server".into(),
        ));
    }
    Ok(())
}

/// An XMPP case in study S1's topology: fresh real servers (so the first round
/// includes server-to-server set-up), client1 here (client host), client2 in the server
/// host. Server logs are kept under `peers/` in the results directory.
pub(crate) fn run(
    env: &Env,
    case: &Case,
    p: &Params,
    repeat: u32,
    ctx: &Ctx,
    server: Server,
) -> Result<Outcome, WorkloadError> {
    check_input(p)?;
    let lab = env.need_lab("XMPP")?;
    let dir = env.peer_dir(case, repeat);
    let s2s = p.s2s.map_or(x2x::S2s::Standard, S2sLink::gateways);
    let start = |domain: &str, user: &str, addr: std::net::Ipv4Addr, ns: &str, sub: &str| {
        let mut cfg = PeerConfig::new(domain, addr.into());
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
        Ok::<_, WorkloadError>(server.start(cfg, &dir.join(sub), Some(ns))?)
    };
    let a = start("a.test", "alice", CLIENT_ADDR, lab.client().name(), "a")?;
    let b = start("b.test", "bob", SERVER_ADDR, lab.server().name(), "b")?;
    let gateways = match s2s {
        x2x::S2s::X2x { tfo } => Some(x2x::Pair::start(
            lab,
            &x2x::Options {
                tfo,
                user_timeout: p.user_timeout,
                timestamps_off: !p.tcp_timestamps,
                log_dir: Some(dir.clone()),
            },
        )?),
        x2x::S2s::Standard => None,
    };
    let run = XmppRun::from_case(
        case,
        p,
        Topology {
            a_jid: "alice@a.test".into(),
            a_password: XMPP_PASSWORD.into(),
            b_jid: "bob@b.test".into(),
            b_password: XMPP_PASSWORD.into(),
            a_server: (CLIENT_ADDR, 5222).into(),
            b_server: (SERVER_ADDR, 5222).into(),
            b_netns: Some(lab.server().name().to_string()),
            transport: Transport::Tcp,
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
    if let Ok(o) = &mut out {
        let both = a.usage().zip(b.usage()).map(|(x, y)| x + y);
        wirebench_peer::record_usage(o, both);
        // One client on each server.
        wirebench_peer::record_sessions(o, 2);
        wirebench_peer::record_kernel_tcp(o);
    }
    if let Some(pair) = gateways {
        let (a, b) = pair.stop();
        if let Ok(o) = &mut out {
            x2x::record(o, &a, &b, Some(run.payload));
        }
    }
    out
}
