//! What the real XMPP servers (Prosody 0.12, ejabberd 23.01) have in common as lab peers:
//! the settings a run gives them ([`PeerConfig`], from [`crate::config`]), which one to
//! start ([`Server`], [`real_server`]), and a running one ([`RealServer`]) with its
//! start-up wait, resource figures and stop.
//!
//! Both run as a child process in the foreground, inside a lab host via `ip netns exec`
//! (which execs in place, so the child's PID is the server's and `/etc/netns/<host>/hosts`
//! is its `/etc/hosts`), in their own process group (Ctrl-C is for wirebench, which stops
//! them itself) and with a parent-death signal (no orphan if wirebench is killed).

pub use crate::config::{PeerConfig, TlsFiles};
use crate::ejabberd::Ejabberd;
use crate::prosody::Prosody;
use std::path::Path;
use wirebench_peer::{PeerError, Usage};
use wirebench_protocol::Case;
use wirebench_protocol::params::{Kind, ParamSpec, WORKLOADS};

/// Server set-ups (`xmpp.server`): the built-in server, or two (one for study S2) real
/// servers of a kind.
pub const SERVERS: &[&str] = &["builtin", "prosody", "ejabberd"];

/// XMPP server-to-server links (`s2s`); absent means standard.
pub const S2S_LINKS: &[&str] = &["standard", "x2x", "x2x-tfo"];

// The two parameters that choose the real servers, declared here because
// [`real_server`] (run by the plugin and by the load workload) reads them.

/// `xmpp.server`.
pub const SERVER: ParamSpec = ParamSpec {
    name: "xmpp.server",
    kind: Kind::Choice(SERVERS),
    default: "",
    workloads: WORKLOADS,
    help: "XMPP servers: builtin (wirebench's own, one server, no root needed; the default unless s2s is given), prosody (two Prosody 0.12 servers in lab hosts, study S1's topology; needs root; the default with s2s) or ejabberd (the same with two ejabberd 23.01 servers); for workload load, one server of the kind on loopback with the accounts and rosters the sessions need; with xmpp.ping=server (study S2), one server of the kind in the server host (loopback without a link), client1 on its own endpoint for xmpp.transport (tcp, websocket or bosh)",
    words: "XMPP server",
};

/// `s2s`.
pub const S2S: ParamSpec = ParamSpec {
    name: "s2s",
    kind: Kind::Choice(S2S_LINKS),
    default: "",
    workloads: WORKLOADS,
    help: "server-to-server link between the two real servers (xmpp.server=prosody or ejabberd): standard (dialback over TCP), x2x (wirebench's zero-handshake XEP-0361 gateways as each server's XEP-0114 component, zlib + dictionary, connect on demand) or x2x-tfo (the same with TCP Fast Open)",
    words: "server link",
};

/// Which real server implementation a case runs (`xmpp.server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Prosody,
    Ejabberd,
}

impl Server {
    pub fn name(self) -> &'static str {
        match self {
            Server::Prosody => "prosody",
            Server::Ejabberd => "ejabberd",
        }
    }

    /// Starts one server of this kind with `cfg`, its files under `dir`, in network
    /// namespace `netns` (or here), and waits until every port listens.
    pub fn start(
        self,
        cfg: PeerConfig,
        dir: &Path,
        netns: Option<&str>,
    ) -> Result<RealServer, PeerError> {
        Ok(match self {
            Server::Prosody => RealServer::Prosody(Prosody::start(cfg, dir, netns)?),
            Server::Ejabberd => RealServer::Ejabberd(Ejabberd::start(cfg, dir, netns)?),
        })
    }
}

/// A running real server; stopped when dropped.
pub enum RealServer {
    Prosody(Prosody),
    Ejabberd(Ejabberd),
}

impl RealServer {
    /// The server's process ID (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        match self {
            RealServer::Prosody(p) => p.pid(),
            RealServer::Ejabberd(e) => e.pid(),
        }
    }

    /// What the server uses now (`None` once stopped).
    pub fn usage(&self) -> Option<Usage> {
        match self {
            RealServer::Prosody(p) => p.usage(),
            RealServer::Ejabberd(e) => e.usage(),
        }
    }

    /// The last lines of the server's logs, for error messages.
    pub fn log_tail(&self) -> String {
        match self {
            RealServer::Prosody(p) => p.log_tail(),
            RealServer::Ejabberd(e) => e.log_tail(),
        }
    }
}

/// The real servers a case runs, if any: `xmpp.server=prosody` or `ejabberd`, or Prosody
/// when `s2s` is given without `xmpp.server` (a server-to-server link only exists
/// between two servers).
pub fn real_server(case: &Case) -> Option<Server> {
    match case.text(&SERVER) {
        Some("prosody") => Some(Server::Prosody),
        Some("ejabberd") => Some(Server::Ejabberd),
        Some(_) => None,
        None => case.has(&S2S).then_some(Server::Prosody),
    }
}
