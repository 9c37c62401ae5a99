//! The XMPP client engine and one server session, in memory, for the transports' tests.

use std::sync::Arc;
use wirebench_engine::Engine;
use wirebench_xmpp::{
    Client, ClientConfig, Event, Mechanism, NumberedAccounts, ServerConfig, ServerEngine,
    ServerSession, TlsMode,
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

/// Session `s` as the one engine shape, with the accounts it checks logins against.
pub(crate) fn engine<'a>(s: &'a mut ServerSession, dir: &'a NumberedAccounts) -> ServerEngine<'a> {
    ServerEngine { session: s, dir }
}

/// What `e` has queued to send, in a buffer of its own; `None` if nothing.
pub(crate) fn transmit(e: &mut impl Engine) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    (e.poll_transmit(0, &mut out) > 0).then_some(out)
}

/// Drains the client's events into `seen`.
pub(crate) fn events(c: &mut Client, seen: &mut Vec<Event>) {
    while let Some(e) = c.poll_event() {
        seen.push(e);
    }
}
