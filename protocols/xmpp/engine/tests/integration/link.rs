//! The client engine against the server session over the link model in virtual time
//! (`wirebench_engine::harness`): a login completes across a satellite link, and a
//! XEP-0199 ping's round trip is exactly two delays plus the ping and its answer each
//! serialized once.

use wirebench_engine::Engine;
use wirebench_engine::harness::Pair;
use wirebench_link::{LinkParams, serialization_ns};
use wirebench_xmpp::{
    Client, ClientConfig, Event, Mechanism, NumberedAccounts, ServerConfig, ServerEngine,
    ServerSession, TlsMode,
};

/// An engine whose transmits' sizes are recorded.
struct Tap<E> {
    inner: E,
    sent: Vec<usize>,
}

impl<E: Engine> Engine for Tap<E> {
    type Event = E::Event;
    type Error = E::Error;

    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), E::Error> {
        self.inner.handle_input(now, data)
    }

    fn poll_transmit(&mut self, now: u64, buf: &mut Vec<u8>) -> usize {
        let n = self.inner.poll_transmit(now, buf);
        if n > 0 {
            self.sent.push(n);
        }
        n
    }

    fn poll_event(&mut self) -> Option<E::Event> {
        self.inner.poll_event()
    }
}

fn tap<E>(inner: E) -> Tap<E> {
    Tap {
        inner,
        sent: Vec::new(),
    }
}

#[test]
fn a_ping_over_a_satcom_link_matches_the_link_arithmetic() {
    let mut cfg = ClientConfig::new("user1@example.com", "pass1");
    cfg.tls = TlsMode::Never;
    cfg.mechanisms = vec![Mechanism::Plain];
    let mut session = ServerSession::new(std::sync::Arc::new(ServerConfig::new("example.com")), 1);
    let dir = NumberedAccounts {
        user_prefix: "user".into(),
        password_prefix: "pass".into(),
        users: 2,
        contacts: 0,
        domain: "example.com".into(),
    };
    let server = ServerEngine {
        session: &mut session,
        dir: &dir,
    };
    let link = LinkParams {
        rate_bps: Some(2400),
        delay_ns: 500_000_000,
        queue_packets: None,
        ..Default::default()
    };
    let mut pair = Pair::new(
        tap(Client::new(cfg, None, 1)),
        tap(server),
        link.clone(),
        link,
    );
    let mut established = false;
    let logged_in = pair.run_until(|_, c, _| {
        while let Some(e) = c.poll_event() {
            established |= e == Event::SessionEstablished;
        }
        established
    });
    // Every step of the login crossed the link: at least a few round trips of 1 s.
    assert!(logged_in > 3_000_000_000, "{logged_in}");

    let (mut sent_at, mut back_at) = (None, None);
    pair.run_until(|now, c, _| {
        if sent_at.is_none() {
            c.inner.send_ping("example.com", "p1");
            sent_at = Some(now);
        }
        while let Some(e) = c.poll_event() {
            if e == (Event::IqResult { id: "p1".into() }) {
                back_at = Some(now);
            }
        }
        back_at.is_some()
    });
    let ping = *pair.a.sent.last().unwrap() as u64;
    let pong = *pair.b.sent.last().unwrap() as u64;
    let rtt = back_at.unwrap() - sent_at.unwrap();
    assert_eq!(
        rtt,
        2 * 500_000_000 + serialization_ns(ping, 2400) + serialization_ns(pong, 2400)
    );
}
