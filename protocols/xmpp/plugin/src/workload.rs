//! XMPP workloads in study S1's topology (Isode 2010; docs/studies.md): client1
//! (`alice@a.test`, in the client host, on server A) and client2 (`bob@b.test`, in the
//! server host, on server B); only the servers' server-to-server traffic crosses the link.
//!
//! - ping-pong: client1 sends a `<message>` whose body is exactly `payload` random
//!   characters (letters and digits: they compress poorly); client2 answers with a body of
//!   the same size after `think`. Round 1 on fresh servers includes the server-to-server
//!   connection set-up (`rtt.first`); `rtt.stable` is the median after the first two.
//! - stream: client1 sends `count` messages back to back; client2 counts them. Throughput
//!   is timed until client2 has the last one; `link.utilization` is payload bits
//!   delivered over link capacity in the same time.
//!
//! Messages are RFC 6121 `<message type='chat'>` stanzas; the engine is `wirebench-xmpp`.
//! The ping-pong and stream loops are the shared chat workloads' (`wirebench-chat`); this
//! module brings XMPP's session and figures, and study S2's server pings.

use crate::metrics::S2_LOGIN;
use crate::metrics::S2_PINGS;
use crate::metrics::S2_TOTAL;
use crate::metrics::XMPP_FIRST_DELIVERY;
use crate::metrics::XMPP_LOGIN;
use crate::params::Params;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wirebench_chat::{self as chat, Chat, Client2, Incoming, Plan, Style};
use wirebench_protocol::seeded::xorshift;
use wirebench_protocol::stats::{interrupted, push_counts, push_rtts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::{Case, Ctx, Outcome, WorkloadError};
use wirebench_xmpp::{ClientConfig, Event, TlsMode};
use wirebench_xmpp_client::session::{XmppDriveError, XmppSession};
use wirebench_xmpp_client::transport::Transport;

/// Where the two clients log in.
#[derive(Debug, Clone)]
pub struct Topology {
    pub a_jid: String,
    pub a_password: String,
    pub b_jid: String,
    pub b_password: String,
    pub a_server: SocketAddr,
    pub b_server: SocketAddr,
    /// Network namespace of client2 (`None`: the caller's); client1 runs in the calling
    /// thread's.
    pub b_netns: Option<String>,
    /// What carries both clients' streams (`a_server`/`b_server` are then the endpoint's).
    pub transport: Transport,
}

impl Topology {
    /// Both clients on one server at `front` (the built-in one, or a real one in study
    /// S2), as the numbered accounts `user1`/`pass1` and `user2`/`pass2` of `domain`;
    /// client2 in `b_netns`.
    pub fn one_server(
        domain: &str,
        front: SocketAddr,
        b_netns: Option<String>,
        transport: Transport,
    ) -> Topology {
        Topology {
            a_jid: format!("user1@{domain}"),
            a_password: "pass1".into(),
            b_jid: format!("user2@{domain}"),
            b_password: "pass2".into(),
            a_server: front,
            b_server: front,
            b_netns,
            transport,
        }
    }
}

#[derive(Debug, Clone)]
pub struct XmppRun {
    pub topology: Topology,
    pub payload: usize,
    /// Ping-pong rounds, or stream messages.
    pub count: u64,
    pub think: Duration,
    pub seed: u64,
    pub stream: bool,
    /// Study S2: client1 pings its server (XEP-0199) instead of messaging client2.
    pub server_pings: bool,
}

impl XmppRun {
    /// The run a case asks for, between the clients of `topology`.
    pub fn from_case(case: &Case, p: &Params, topology: Topology, seed: u64) -> XmppRun {
        let w = case.workload_params();
        XmppRun {
            topology,
            payload: case.payload() as usize,
            count: w.messages(),
            think: w.think(),
            seed,
            stream: w.is_stream(),
            server_pings: p.is_s2(),
        }
    }
}

/// Letters and digits from a seeded xorshift generator.
pub fn random_text(state: &mut u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..len)
        .map(|_| ALPHABET[(xorshift(state) % ALPHABET.len() as u64) as usize] as char)
        .collect()
}

impl XmppRun {
    fn plan(&self) -> Plan {
        Plan {
            payload: self.payload,
            count: self.count,
            think: self.think,
            seed: self.seed,
            stream: self.stream,
            tcp_info: None,
        }
    }
}

/// What differs in XMPP's chat: stanzas carry ids (stream messages are counted by
/// them), the first answer may wait for the server-to-server set-up, client1 is served
/// every 50 ms while client2 reads.
const STYLE: Style = Style {
    first_delivery: XMPP_FIRST_DELIVERY,
    answer_grace: Duration::from_secs(600),
    service_wait: Duration::from_millis(50),
    send_metric: None,
    tagged: true,
};

/// A client's session as the chat workloads use it: `<message>` stanzas to `peer`.
struct XmppChat {
    session: XmppSession,
    peer: String,
}

impl Chat for XmppChat {
    type Body = String;

    /// Bodies are not compared: the stanza ids say which message is which.
    const VERIFIES: bool = false;

    fn body(state: &mut u64, len: usize) -> String {
        random_text(state, len)
    }

    /// A fixed short body: it only waits for the server-to-server link.
    fn warm_up(_state: &mut u64, _len: usize) -> (String, &'static str) {
        ("warm-up".into(), "warm-up")
    }

    fn send(&mut self, body: &String, tag: &str) -> Result<u64, WorkloadError> {
        self.session.send_message(&self.peer, body, tag)?;
        Ok(0)
    }

    fn recv(&mut self, deadline: Instant) -> Result<Option<Incoming<String>>, WorkloadError> {
        match self.session.next_event(deadline, "a message") {
            Ok((at, Event::Message { id, body, .. })) => Ok(Some(Incoming { at, body, tag: id })),
            Ok(_) | Err(XmppDriveError::Timeout { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn close(self) {
        self.session.close();
    }
}

fn login(
    transport: &Transport,
    jid: &str,
    password: &str,
    server: SocketAddr,
    seed: u64,
    timeout: Duration,
    payload: usize,
) -> Result<(XmppSession, Duration), WorkloadError> {
    let mut cfg = ClientConfig::new(jid, password);
    cfg.tls = TlsMode::Never;
    // Messages of the case's payload must fit the client's stanza limit.
    cfg.max_stanza = cfg.max_stanza.max(payload + 4096);
    let t = Instant::now();
    let (s, _) = XmppSession::login_via(transport, server, cfg, None, seed, timeout)?;
    Ok((s, t.elapsed()))
}

pub fn run(run: &XmppRun, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    // Logins are local (client and server in one host) but a slow link can delay
    // everything else; be patient.
    let timeout = ctx.stall_timeout.max(Duration::from_secs(60));
    if run.server_pings {
        return server_pings(run, ctx, timeout);
    }
    let (alice, login_a) = login(
        &run.topology.transport,
        &run.topology.a_jid,
        &run.topology.a_password,
        run.topology.a_server,
        run.seed ^ 1,
        timeout,
        run.payload,
    )?;
    let plan = run.plan();
    let (top, seed, payload) = (run.topology.clone(), run.seed, run.payload);
    let client2 = Client2::start(
        "wb-xmpp-client2",
        run.topology.b_netns.clone(),
        &plan,
        move |_| {
            let (session, _) = login(
                &top.transport,
                &top.b_jid,
                &top.b_password,
                top.b_server,
                seed ^ 2,
                timeout,
                payload,
            )?;
            Ok(XmppChat {
                session,
                peer: top.a_jid,
            })
        },
        timeout + Duration::from_secs(5),
        ctx,
    )?;
    let mut out = Outcome::default();
    out.put(XMPP_LOGIN, login_a.as_secs_f64());
    let mut alice = XmppChat {
        session: alice,
        peer: run.topology.b_jid.clone(),
    };
    if run.stream {
        // Without a warm-up message the servers would queue the whole stream behind the
        // server-to-server set-up and deliver it in one burst; no window: the study sent
        // back to back.
        if chat::stream(&plan, &STYLE, u64::MAX, ctx, &mut alice, &client2, &mut out)? {
            out.notes.push(
                "XMPP stream: timed from the first send to client2's last receipt, after a \
                 warm-up message set up the server-to-server link (xmpp.first_delivery)"
                    .into(),
            );
        }
    } else {
        chat::ping_pong(&plan, &STYLE, ctx, &mut alice, &client2, &mut out)?;
    }
    client2.finish()?;
    alice.close();
    out.notes.push(format!(
        "XMPP over Prosody s2s (dialback, no TLS, no compression): {} -> {}",
        run.topology.a_jid, run.topology.b_jid
    ));
    Ok(out)
}

/// Study S2: client1 connects, logs in and sends `count` XEP-0199 pings to its server,
/// each waiting for its pong. `s2.total` runs from the connect to the last pong (what the
/// study's page timed); `s2.login` is the part before the first ping, `s2.pings` the rest;
/// `rtt.*` are the pings' round trips.
fn server_pings(run: &XmppRun, ctx: &Ctx, timeout: Duration) -> Result<Outcome, WorkloadError> {
    let t0 = wirebench_model::clock::monotonic_ns();
    let (mut alice, login_a) = login(
        &run.topology.transport,
        &run.topology.a_jid,
        &run.topology.a_password,
        run.topology.a_server,
        run.seed ^ 1,
        timeout,
        run.payload,
    )?;
    let domain = run
        .topology
        .a_jid
        .rsplit('@')
        .next()
        .unwrap_or_default()
        .to_string();
    let mut out = Outcome::default();
    out.put(XMPP_LOGIN, login_a.as_secs_f64());
    let stall = ctx.stall_timeout;
    let mut rtts = Vec::with_capacity(run.count as usize);
    let mut tally = Tally::new();
    let t_first = wirebench_model::clock::monotonic_ns();
    let mut last = t_first;
    for i in 0..run.count {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(interrupted(rtts, run.count, tally));
        }
        if i == 2 {
            (ctx.mark_stable)();
        }
        let id = format!("s2-{i}");
        let t = wirebench_model::clock::monotonic_ns();
        alice.client.send_ping(&domain, &id);
        alice.flush()?;
        let deadline = Instant::now() + stall;
        let at = loop {
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(interrupted(rtts, run.count, tally));
            }
            let step = deadline.min(Instant::now() + wirebench_protocol::TICK);
            match alice.next_event(step, "the server's pong") {
                Ok((at, Event::IqResult { id: got })) if got == id => break at,
                Ok((_, Event::IqError { id: got, .. })) if got == id => {
                    return Err(WorkloadError::Peer(format!(
                        "the server answered ping {id} with an error"
                    )));
                }
                Ok(_) => {}
                Err(XmppDriveError::Timeout { .. }) if Instant::now() < deadline => {}
                Err(e) => return Err(e.into()),
            }
        };
        tally.observe(i, false);
        rtts.push(at.saturating_sub(t));
        last = at;
        (ctx.progress)(i + 1, run.count);
    }
    tally.finish(run.count);
    out.put(S2_TOTAL, secs(last.saturating_sub(t0)));
    out.put(S2_LOGIN, secs(t_first.saturating_sub(t0)));
    out.put(S2_PINGS, secs(last.saturating_sub(t_first)));
    push_counts(&mut out, run.count, &tally);
    push_rtts(&mut out, rtts);
    alice.close();
    out.notes.push(format!(
        "study S2: {} XEP-0199 pings from {} to its server over {}, each waiting for its pong",
        run.count,
        run.topology.a_jid,
        run.topology.transport.word()
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn random_text_is_reproducible_and_alphanumeric() {
        let (mut a, mut b) = (7u64, 7u64);
        let x = super::random_text(&mut a, 100);
        assert_eq!(x, super::random_text(&mut b, 100));
        assert_eq!(x.len(), 100);
        assert!(x.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(x, super::random_text(&mut a, 100));
    }
}
