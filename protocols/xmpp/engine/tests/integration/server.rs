//! The server engine against the client engine, in memory: logins, binding, roster,
//! presence to online contacts, message routing, pings and the stream errors bad input
//! gets. The router here is the smallest one that works (a map from bare JID to session),
//! as a driver would have.

use crate::common;

use common::transmit;
use std::collections::HashMap;
use std::sync::Arc;
use wirebench_engine::Engine as _;
use wirebench_xmpp::server::closed_for_input;
use wirebench_xmpp::{
    Client, ClientConfig, Event, Mechanism, NumberedAccounts, ServerConfig, ServerEngine,
    ServerEvent, ServerSession, TlsMode,
};

/// Session `s` as the one engine shape, with the accounts it checks logins against.
fn engine<'a>(s: &'a mut ServerSession, dir: &'a NumberedAccounts) -> ServerEngine<'a> {
    ServerEngine { session: s, dir }
}

fn accounts(users: u64, contacts: u64) -> NumberedAccounts {
    NumberedAccounts {
        user_prefix: "user".into(),
        password_prefix: "pass".into(),
        users,
        contacts,
        domain: "example.com".into(),
    }
}

fn client(n: u64, password: &str) -> Client {
    client_with(n, password, Mechanism::Plain)
}

fn client_with(n: u64, password: &str, m: Mechanism) -> Client {
    let mut cfg = ClientConfig::new(&format!("user{n}@example.com"), password);
    cfg.tls = TlsMode::Never;
    cfg.mechanisms = vec![m];
    Client::new(cfg, None, n)
}

/// Clients and their server sessions, joined by in-memory pipes and a router.
struct World {
    dir: NumberedAccounts,
    cfg: Arc<ServerConfig>,
    clients: Vec<Client>,
    servers: Vec<ServerSession>,
    /// Bare JID -> index of the bound, available session.
    online: HashMap<String, usize>,
    events: Vec<Vec<Event>>,
    closed: Vec<Option<Option<String>>>,
}

impl World {
    fn new(dir: NumberedAccounts) -> World {
        World::with_config(dir, ServerConfig::new("example.com"))
    }

    fn with_config(dir: NumberedAccounts, cfg: ServerConfig) -> World {
        World {
            dir,
            cfg: Arc::new(cfg),
            clients: Vec::new(),
            servers: Vec::new(),
            online: HashMap::new(),
            events: Vec::new(),
            closed: Vec::new(),
        }
    }

    fn connect(&mut self, c: Client) -> usize {
        let i = self.clients.len();
        self.clients.push(c);
        self.servers
            .push(ServerSession::new(self.cfg.clone(), i as u64 + 1));
        self.events.push(Vec::new());
        self.closed.push(None);
        i
    }

    /// Moves bytes and events until nothing moves.
    fn run(&mut self) {
        loop {
            let mut moved = false;
            for i in 0..self.clients.len() {
                if let Some(b) = transmit(&mut self.clients[i]) {
                    moved = true;
                    let Ok(()) = engine(&mut self.servers[i], &self.dir).handle_input(0, &b);
                }
                while let Some(e) = engine(&mut self.servers[i], &self.dir).poll_event() {
                    moved = true;
                    self.on_server_event(i, e);
                }
                if let Some(b) = transmit(&mut engine(&mut self.servers[i], &self.dir)) {
                    moved = true;
                    let _ = self.clients[i].handle_input(0, &b);
                }
                while let Some(e) = self.clients[i].poll_event() {
                    moved = true;
                    self.events[i].push(e);
                }
            }
            if !moved {
                return;
            }
        }
    }

    fn bare(&self, i: usize) -> String {
        self.servers[i]
            .jid()
            .split('/')
            .next()
            .unwrap_or("")
            .to_string()
    }

    fn on_server_event(&mut self, i: usize, e: ServerEvent) {
        match e {
            ServerEvent::Bound { .. } => {}
            ServerEvent::Available { stanza } => {
                let me = self.bare(i);
                let user = me.split('@').next().unwrap_or("").to_string();
                for contact in wirebench_xmpp::Directory::roster(&self.dir, &user) {
                    if let Some(&j) = self.online.get(&contact) {
                        self.servers[j].deliver(&stanza);
                        let theirs = format!("<presence from='{}'/>", self.servers[j].jid());
                        self.servers[i].deliver(theirs.as_bytes());
                    }
                }
                self.online.insert(me, i);
            }
            ServerEvent::Unavailable { stanza } => {
                let me = self.bare(i);
                self.online.remove(&me);
                let user = me.split('@').next().unwrap_or("").to_string();
                for contact in wirebench_xmpp::Directory::roster(&self.dir, &user) {
                    if let Some(&j) = self.online.get(&contact) {
                        self.servers[j].deliver(&stanza);
                    }
                }
            }
            ServerEvent::Route { to, stanza } => {
                let bare = to.split('/').next().unwrap_or("");
                if let Some(&j) = self.online.get(bare) {
                    self.servers[j].deliver(&stanza);
                }
            }
            ServerEvent::Closed { error } => self.closed[i] = Some(error),
        }
    }
}

#[test]
fn clients_log_in_bind_fetch_rosters_and_exchange_messages() {
    let mut w = World::new(accounts(10, 2));
    let a = w.connect(client(1, "pass1"));
    let b = w.connect(client(2, "pass2"));
    w.run();
    for i in [a, b] {
        assert!(
            w.events[i].contains(&Event::SessionEstablished),
            "{:?}",
            w.events[i]
        );
        // user1's contacts are user2 and user10; user2's are user3 and user1.
        assert!(
            w.events[i].contains(&Event::Roster { items: 2 }),
            "{:?}",
            w.events[i]
        );
    }
    assert_eq!(w.servers[a].jid(), "user1@example.com/wirebench");
    // user2 came online after user1 and is on user1's roster: each sees the other.
    assert!(w.events[a].iter().any(|e| matches!(e,
        Event::Presence { from, kind: None } if from == "user2@example.com/wirebench")));
    assert!(w.events[b].iter().any(|e| matches!(e,
        Event::Presence { from, kind: None } if from == "user1@example.com/wirebench")));

    w.clients[a]
        .send_message("user2@example.com", "hello <&> world", "m1")
        .unwrap();
    w.run();
    assert!(
        w.events[b].contains(&Event::Message {
            from: "user1@example.com/wirebench".into(),
            id: Some("m1".into()),
            body: "hello <&> world".into(),
        }),
        "{:?}",
        w.events[b]
    );

    w.clients[b].send_ping("example.com", "p1");
    w.run();
    assert!(w.events[b].contains(&Event::IqResult { id: "p1".into() }));

    // Closing: the server answers the stream end and user2 learns user1 left.
    w.clients[a].close();
    w.run();
    assert_eq!(w.closed[a], Some(None));
    assert!(w.events[b].iter().any(|e| matches!(e,
        Event::Presence { from, kind: Some(k) } if from == "user1@example.com/wirebench" && k == "unavailable")));
}

#[test]
fn scram_logins_prove_the_password_both_ways() {
    let mut w = World::new(accounts(10, 2));
    // The client checks the server's signature: success means both sides derived the
    // same keys from the password.
    let a = w.connect(client_with(1, "pass1", Mechanism::ScramSha256));
    let b = w.connect(client_with(2, "pass2", Mechanism::ScramSha1));
    let bad = w.connect(client_with(3, "pass4", Mechanism::ScramSha256));
    let ghost = w.connect(client_with(42, "pass42", Mechanism::ScramSha1));
    w.run();
    for i in [a, b] {
        assert!(
            w.events[i].contains(&Event::Authenticated {
                mechanism: if i == a {
                    Mechanism::ScramSha256
                } else {
                    Mechanism::ScramSha1
                }
            }),
            "{:?}",
            w.events[i]
        );
        assert!(w.events[i].contains(&Event::SessionEstablished));
    }
    assert_eq!(w.servers[a].jid(), "user1@example.com/wirebench");
    assert_eq!(w.servers[b].jid(), "user2@example.com/wirebench");
    for i in [bad, ghost] {
        assert!(!w.events[i].contains(&Event::SessionEstablished));
        assert!(w.servers[i].jid().is_empty());
    }
    // One PBKDF2 per account and hash, shared through the server's cache.
    w.clients[a].close();
    let again = w.connect(client_with(1, "pass1", Mechanism::ScramSha256));
    w.run();
    assert!(w.events[again].contains(&Event::SessionEstablished));
}

fn tls_client(n: u64, pki: &common::Pki, mode: TlsMode) -> Client {
    let mut cfg = ClientConfig::new(&format!("user{n}@example.com"), &format!("pass{n}"));
    cfg.tls = mode;
    cfg.mechanisms = vec![Mechanism::ScramSha256];
    let tls = (mode != TlsMode::Never).then(|| pki.client.clone());
    Client::new(cfg, tls, n)
}

#[test]
fn starttls_then_scram_then_messages_inside_tls() {
    let pki = common::pki("example.com");
    let cfg = ServerConfig {
        tls: Some(pki.server.clone()),
        ..ServerConfig::new("example.com")
    };
    let mut w = World::with_config(accounts(10, 2), cfg);
    let a = w.connect(tls_client(1, &pki, TlsMode::Required));
    let b = w.connect(tls_client(2, &pki, TlsMode::Required));
    // TLS offered, not required: a client without TLS still gets in.
    let c = w.connect(tls_client(3, &pki, TlsMode::Never));
    w.run();
    for i in [a, b] {
        assert!(
            w.events[i].contains(&Event::TlsEstablished),
            "{:?}",
            w.events[i]
        );
        assert!(
            w.events[i].contains(&Event::SessionEstablished),
            "{:?}",
            w.events[i]
        );
    }
    assert!(!w.events[c].contains(&Event::TlsEstablished));
    assert!(
        w.events[c].contains(&Event::SessionEstablished),
        "{:?}",
        w.events[c]
    );
    w.clients[a]
        .send_message("user2@example.com", "inside TLS", "t1")
        .unwrap();
    w.run();
    assert!(
        w.events[b]
            .iter()
            .any(|e| matches!(e, Event::Message { body, .. } if body == "inside TLS"))
    );
}

#[test]
fn required_tls_refuses_a_client_without_it() {
    let pki = common::pki("example.com");
    let cfg = ServerConfig {
        tls: Some(pki.server.clone()),
        require_tls: true,
        ..ServerConfig::new("example.com")
    };
    let mut w = World::with_config(accounts(10, 2), cfg);
    let plain = w.connect(tls_client(1, &pki, TlsMode::Never));
    let secure = w.connect(tls_client(2, &pki, TlsMode::IfOffered));
    w.run();
    assert!(!w.events[plain].contains(&Event::SessionEstablished));
    assert!(
        w.events[secure].contains(&Event::SessionEstablished),
        "{:?}",
        w.events[secure]
    );
}

#[test]
fn a_wrong_password_or_unknown_user_is_refused() {
    let mut w = World::new(accounts(10, 0));
    let bad = w.connect(client(1, "pass2"));
    let unknown = w.connect(client(11, "pass11"));
    w.run();
    for i in [bad, unknown] {
        assert!(
            !w.events[i].contains(&Event::SessionEstablished),
            "{:?}",
            w.events[i]
        );
        assert!(w.servers[i].jid().is_empty());
    }
}

/// Raw bytes into a fresh session; returns what it wrote back and whether it closed.
fn feed(bytes: &[&[u8]]) -> (String, Option<Option<String>>) {
    let dir = accounts(10, 0);
    let mut session = ServerSession::new(Arc::new(ServerConfig::new("example.com")), 7);
    let mut s = engine(&mut session, &dir);
    let mut closed = None;
    let mut out = Vec::new();
    for b in bytes {
        let Ok(()) = s.handle_input(0, b);
        while let Some(e) = s.poll_event() {
            if let ServerEvent::Closed { error } = e {
                closed = Some(error);
            }
        }
        s.poll_transmit(0, &mut out);
    }
    (String::from_utf8(out).unwrap(), closed)
}

const HEADER: &[u8] = b"<?xml version='1.0'?><stream:stream to='example.com' \
    xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>";

#[test]
fn bad_input_gets_a_stream_error_and_the_session_ends() {
    // The third: whether the close is for what the client sent (a strike against its
    // source), not for what a misconfigured real client also meets.
    let cases: &[(&[&[u8]], &str, bool)] = &[
        (
            &[HEADER, b"<message><body>x</wrong></message>"],
            "not-well-formed",
            true,
        ),
        (
            &[HEADER, b"<!DOCTYPE foo [<!ENTITY x 'y'>]><message/>"],
            "not-well-formed",
            true,
        ),
        (
            &[HEADER, b"<message to='user2@example.com'/>"],
            "not-authorized",
            false,
        ),
        (
            &[
                b"<?xml version='1.0'?><stream:stream to='other.org' xmlns='jabber:client' \
               xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>",
            ],
            "host-unknown",
            false,
        ),
        (
            &[b"<html><body>hello</body></html>"],
            "invalid-namespace",
            true,
        ),
        (
            // A second header inside the stream, no restart due (a WebSocket client's
            // <open/> after <open/>): refused at once, not held up to the stanza limit.
            &[HEADER, &HEADER[21..]],
            "unsupported-stanza-type",
            true,
        ),
    ];
    for (input, condition, for_input) in cases {
        let (out, closed) = feed(input);
        assert!(
            out.contains(&format!(
                "<{condition} xmlns='urn:ietf:params:xml:ns:xmpp-streams'/>"
            )),
            "{condition}: {out}"
        );
        assert!(out.ends_with("</stream:stream>"), "{out}");
        let closed = closed.unwrap_or_else(|| panic!("{condition}: not closed"));
        let closed = closed.unwrap();
        assert!(closed.starts_with(condition));
        assert_eq!(closed_for_input(&closed), *for_input, "{closed}");
    }
}

#[test]
fn an_oversized_stanza_is_a_policy_violation_without_buffering_it_all() {
    let dir = accounts(10, 0);
    let cfg = ServerConfig {
        max_stanza: 4096,
        ..ServerConfig::new("example.com")
    };
    let mut session = ServerSession::new(Arc::new(cfg), 1);
    let mut s = engine(&mut session, &dir);
    let Ok(()) = s.handle_input(0, HEADER);
    let Ok(()) = s.handle_input(0, b"<message><body>");
    let chunk = vec![b'a'; 1024];
    for _ in 0..64 {
        let Ok(()) = s.handle_input(0, &chunk);
        assert!(s.session.buffered() <= 8192, "{}", s.session.buffered());
    }
    assert!(s.session.is_closed());
    let mut reason = None;
    while let Some(e) = s.poll_event() {
        if let ServerEvent::Closed { error } = e {
            reason = error;
        }
    }
    let reason = reason.expect("a stream error");
    assert!(closed_for_input(&reason), "{reason}");
    let out = String::from_utf8(transmit(&mut s).unwrap()).unwrap();
    assert!(out.contains("policy-violation"), "{out}");
}

#[test]
fn numbered_accounts_follow_tsungs_convention() {
    let d = accounts(5, 4);
    use wirebench_xmpp::Directory;
    assert!(d.authenticate("user5", "pass5"));
    assert!(!d.authenticate("user5", "pass4"));
    assert!(!d.authenticate("user6", "pass6"));
    assert!(!d.authenticate("user0", "pass0"));
    assert!(!d.authenticate("userx", "passx"));
    assert_eq!(
        d.roster("user4"),
        [
            "user5@example.com",
            "user1@example.com",
            "user3@example.com",
            "user2@example.com"
        ]
    );
    // Mutual: whoever is on my roster has me on theirs.
    for n in 1..=5 {
        let me = format!("user{n}@example.com");
        for c in d.roster(&format!("user{n}")) {
            let them = c.split('@').next().unwrap().to_string();
            assert!(d.roster(&them).contains(&me), "{me} / {c}");
        }
    }
    assert_eq!(accounts(3, 10).roster("user1").len(), 2);
}

proptest::proptest! {
    /// Any bytes, in any split, after a valid header or not: no panic, and the session
    /// never holds more than one stanza's limit plus one read.
    #[test]
    fn arbitrary_input_never_panics_or_grows(
        with_header in proptest::bool::ANY,
        chunks in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..512), 0..16),
    ) {
        let dir = accounts(10, 2);
        let cfg = ServerConfig { max_stanza: 2048, ..ServerConfig::new("example.com") };
        let mut session = ServerSession::new(Arc::new(cfg), 1);
        let mut s = engine(&mut session, &dir);
        if with_header {
            let Ok(()) = s.handle_input(0, HEADER);
        }
        for c in &chunks {
            let Ok(()) = s.handle_input(0, c);
            proptest::prop_assert!(s.session.buffered() <= 2048 + 512 + 4096, "{}", s.session.buffered());
            let _ = transmit(&mut s);
            while s.poll_event().is_some() {}
        }
    }
}

#[test]
fn the_fuzz_entry_reaches_every_starting_state() {
    for mode in 0..4u8 {
        let mut input = vec![mode, 3];
        input.extend_from_slice(b"<message to='u2@example.com'><body>hi</body></message>");
        wirebench_xmpp::server::fuzz_input(&input);
    }
}
