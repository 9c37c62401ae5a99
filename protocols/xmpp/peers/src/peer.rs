//! What the real XMPP servers (Prosody 0.12, ejabberd 23.01) have in common as lab peers:
//! the settings a run gives them ([`PeerConfig`], from [`crate::config`]), which one to
//! start ([`Server`]), and a running one ([`RealServer`]) with its
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
