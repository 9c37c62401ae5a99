//! The settings a run gives a real XMPP server, whichever implementation runs it
//! ([`PeerConfig`]), and the process helpers every implementation shares.

use std::net::IpAddr;
use std::path::PathBuf;
use wirebench_xmpp::NumberedAccounts;

/// One real server's settings, whichever implementation runs it.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// The XMPP domain it serves (`a.test`).
    pub domain: String,
    /// Address it listens on inside its host.
    pub addr: IpAddr,
    pub c2s_port: u16,
    pub s2s_port: u16,
    /// Users to register: (name, password).
    pub users: Vec<(String, String)>,
    /// Extra components (XEP-0114): (name, secret).
    pub components: Vec<(String, String)>,
    pub component_port: u16,
    /// Certificate and key (PEM files) for STARTTLS. `None`: TLS is disabled and never
    /// offered, as in study S1. With TLS on, STARTTLS is offered on s2s too.
    pub tls: Option<TlsFiles>,
    /// Refuse c2s logins without TLS (RFC 6120 §5.3.1 mandatory-to-negotiate).
    pub c2s_require_encryption: bool,
    /// Standard server-to-server links. Off when a gateway carries the remote domains as
    /// components (XEP-0114), so nothing can bypass it.
    pub s2s: bool,
    /// Accounts `user<N>`/`pass<N>` for N in 1..=users with the formula's rosters (Tsung's
    /// convention, as the built-in server has them), for session load: thousands of
    /// accounts, so they are written in bulk rather than registered one by one.
    pub numbered: Option<NumberedAccounts>,
    /// Set up for session load: warnings only in the log (logging every login costs a
    /// single-threaded server its core) and a listen backlog of 4096 (Prosody's 128
    /// overflows with a thousand logins in flight; the kernel then drops connections).
    pub for_load: bool,
    /// The server's own HTTP listener with its BOSH (`/http-bind`) and WebSocket
    /// (`/xmpp-websocket`) endpoints, on `addr` (study S2); `None`: no such endpoints.
    pub http_port: Option<u16>,
    /// ejabberd's HTTP API (user registration) when there are no web endpoints to share
    /// a listener with; `None`: a free port picked at start, so that two servers on one
    /// address (two runs, two tests) do not both want 5281.
    pub api_port: Option<u16>,
}

/// PEM files for a server's certificate and private key.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl PeerConfig {
    pub fn new(domain: &str, addr: IpAddr) -> PeerConfig {
        PeerConfig {
            domain: domain.to_string(),
            addr,
            c2s_port: 5222,
            s2s_port: 5269,
            users: Vec::new(),
            components: Vec::new(),
            component_port: 5347,
            tls: None,
            c2s_require_encryption: false,
            s2s: true,
            numbered: None,
            for_load: false,
            http_port: None,
            api_port: None,
        }
    }

    /// Every listener the configuration asks for: c2s, s2s unless off, components.
    pub fn ports(&self) -> Vec<u16> {
        let mut ports = vec![self.c2s_port];
        if self.s2s {
            ports.push(self.s2s_port);
        }
        if !self.components.is_empty() {
            ports.push(self.component_port);
        }
        ports.extend(self.http_port);
        ports
    }
}

// Shared with every plugin that starts third-party servers.
pub(crate) use wirebench_peer::{command_in, in_netns};
