//! The XMPP client engine and one server session, in memory, for the transports' tests.

use std::sync::Arc;
use wirebench_xmpp::{
    Client, ClientConfig, Event, Mechanism, NumberedAccounts, ServerConfig, ServerSession, TlsMode,
};

pub(crate) fn accounts() -> NumberedAccounts {
    NumberedAccounts {
        user_prefix: "user".into(),
        password_prefix: "pass".into(),
        users: 10,
        contacts: 2,
        domain: "example.com".into(),
    }
}

pub(crate) fn client(mech: Mechanism) -> Client {
    let mut cfg = ClientConfig::new("user1@example.com", "pass1");
    cfg.tls = TlsMode::Never;
    cfg.mechanisms = vec![mech];
    Client::new(cfg, None, 3)
}

pub(crate) fn server() -> ServerSession {
    ServerSession::new(Arc::new(ServerConfig::new("example.com")), 42)
}

/// Drains the client's events into `seen`.
pub(crate) fn events(c: &mut Client, seen: &mut Vec<Event>) {
    while let Some(e) = c.poll_event() {
        seen.push(e);
    }
}
