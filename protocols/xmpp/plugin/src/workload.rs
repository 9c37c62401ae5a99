//! XMPP workloads in study S1's topology (seed 000): client1 (`alice@a.test`, in the
//! client host, on server A) and client2 (`bob@b.test`, in the server host, on server B);
//! only the servers' server-to-server traffic crosses the link.
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

use crate::session::{XmppDriveError, XmppSession};
use crate::transport::Transport;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wirebench_protocol::stats::{interrupted, push_counts, push_rtts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::{Case, Ctx, Outcome, WorkloadError};
use wirebench_xmpp::{ClientConfig, Event, TlsMode};

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

/// The `xmpp.ping` choices: chat messages between the clients, or XEP-0199 pings to the
/// server (study S2).
pub const PINGS: &[&str] = &["message", "server"];

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
    pub fn from_case(case: &Case, topology: Topology, seed: u64) -> XmppRun {
        let w = case.workload_params();
        XmppRun {
            topology,
            payload: case.payload() as usize,
            count: w.messages(),
            think: w.think(),
            seed,
            stream: w.is_stream(),
            server_pings: case.word("xmpp.ping") == Some("server"),
        }
    }
}

impl From<XmppDriveError> for WorkloadError {
    fn from(e: XmppDriveError) -> Self {
        let msg = e.to_string();
        match e {
            XmppDriveError::Connect { error, .. }
                if error.kind() == std::io::ErrorKind::ConnectionRefused =>
            {
                WorkloadError::Peer(msg)
            }
            XmppDriveError::Connect { .. }
            | XmppDriveError::Io { .. }
            | XmppDriveError::Timeout { .. } => WorkloadError::Link(msg),
            XmppDriveError::Protocol { .. } | XmppDriveError::Closed { .. } => {
                WorkloadError::Peer(msg)
            }
        }
    }
}

/// Letters and digits from a seeded xorshift generator.
pub fn random_text(state: &mut u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..len)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            ALPHABET[(*state % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
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

/// Client2: answers (ping-pong) or counts (stream) until told to stop.
struct Responder {
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    /// CLOCK_MONOTONIC of the first and last message received.
    first_ns: Arc<AtomicU64>,
    last_ns: Arc<AtomicU64>,
    /// Stream mode: the stanzas' sequence numbers as they arrived (ids `s<N>`), so loss,
    /// duplicates and reordering across the server link are counted, not assumed away.
    seen: Arc<std::sync::Mutex<Tally>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl Responder {
    fn start(run: &XmppRun, timeout: Duration) -> Result<Responder, WorkloadError> {
        let stop = Arc::new(AtomicBool::new(false));
        let received = Arc::new(AtomicU64::new(0));
        let first_ns = Arc::new(AtomicU64::new(0));
        let last_ns = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(std::sync::Mutex::new(Tally::new()));
        let seen2 = seen.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (r, st, rc, fl, ln) = (
            run.clone(),
            stop.clone(),
            received.clone(),
            first_ns.clone(),
            last_ns.clone(),
        );
        let thread = std::thread::Builder::new()
            .name("wb-xmpp-client2".into())
            .spawn(move || -> Result<(), String> {
                let setup = (|| {
                    if let Some(ns) = &r.topology.b_netns {
                        wirebench_lab::netns::enter(ns).map_err(|e| e.to_string())?;
                    }
                    login(
                        &r.topology.transport,
                        &r.topology.b_jid,
                        &r.topology.b_password,
                        r.topology.b_server,
                        r.seed ^ 2,
                        timeout,
                        r.payload,
                    )
                    .map_err(|e| e.to_string())
                })();
                let mut session = match setup {
                    Ok((s, _)) => {
                        let _ = ready_tx.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.clone()));
                        return Err(e);
                    }
                };
                let mut rng = r.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                while !st.load(Ordering::Relaxed) {
                    let deadline = Instant::now() + Duration::from_millis(200);
                    match session.next_event(deadline, "a message") {
                        Ok((at, Event::Message { id, .. })) => {
                            if rc.fetch_add(1, Ordering::SeqCst) == 0 {
                                fl.store(at, Ordering::SeqCst);
                            }
                            ln.store(at, Ordering::SeqCst);
                            if let Some(n) = id
                                .as_deref()
                                .and_then(|i| i.strip_prefix('s'))
                                .and_then(|n| n.parse::<u64>().ok())
                            {
                                seen2
                                    .lock()
                                    .unwrap_or_else(|p| p.into_inner())
                                    .observe(n, false);
                            }
                            if !r.stream {
                                std::thread::sleep(r.think);
                                let body = random_text(&mut rng, r.payload);
                                let id = format!("r{}", id.unwrap_or_default());
                                session
                                    .send_message(&r.topology.a_jid, &body, &id)
                                    .map_err(|e| e.to_string())?;
                            }
                        }
                        Ok(_) => {}
                        Err(XmppDriveError::Timeout { .. }) => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
                session.close();
                Ok(())
            })
            .map_err(|e| WorkloadError::Environment(format!("cannot start client2: {e}")))?;
        match ready_rx.recv_timeout(timeout + Duration::from_secs(5)) {
            Ok(Ok(())) => Ok(Responder {
                stop,
                received,
                first_ns,
                last_ns,
                seen,
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(WorkloadError::Peer(format!("client2 login: {e}"))),
            Err(_) => Err(WorkloadError::Peer("client2 did not log in in time".into())),
        }
    }

    fn finish(mut self) -> Result<(), WorkloadError> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(Err(e))) => Err(WorkloadError::Peer(format!("client2: {e}"))),
            Some(Err(_)) => Err(WorkloadError::Environment("client2 panicked".into())),
            _ => Ok(()),
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Services client1's session until client2 has received `n` messages.
fn wait_received(
    alice: &mut XmppSession,
    responder: &Responder,
    n: u64,
    stall: Duration,
    ctx: &Ctx,
) -> Result<(), WorkloadError> {
    wirebench_protocol::stats::wait_received(&responder.received, n, stall, ctx, || {
        // Keep client1's session serviced (pings, acks) while waiting.
        match alice.next_event(Instant::now() + Duration::from_millis(50), "events") {
            Ok(_) | Err(XmppDriveError::Timeout { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    })
}

pub fn run(run: &XmppRun, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    // Logins are local (client and server in one host) but a slow link can delay
    // everything else; be patient.
    let timeout = ctx.stall_timeout.max(Duration::from_secs(60));
    if run.server_pings {
        return server_pings(run, ctx, timeout);
    }
    let (mut alice, login_a) = login(
        &run.topology.transport,
        &run.topology.a_jid,
        &run.topology.a_password,
        run.topology.a_server,
        run.seed ^ 1,
        timeout,
        run.payload,
    )?;
    let responder = Responder::start(run, timeout)?;
    let mut out = Outcome::default();
    out.push("xmpp.login", login_a.as_secs_f64(), "s");
    let mut rng = run.seed | 1;
    let stall = ctx.stall_timeout + run.think;
    if run.stream {
        // A warm-up message first: it waits for the server-to-server connection, and
        // once it has arrived the stream runs on an established link (the study measured
        // stable throughput too). Without it the servers would queue the whole stream
        // behind the set-up and deliver it in one burst.
        let t_warm = wirebench_model::clock::monotonic_ns();
        alice.send_message(&run.topology.b_jid, "warm-up", "warm-up")?;
        wait_received(&mut alice, &responder, 1, stall, ctx)?;
        out.push(
            "xmpp.first_delivery",
            secs(
                responder
                    .first_ns
                    .load(Ordering::SeqCst)
                    .saturating_sub(t_warm),
            ),
            "s",
        );
        // From here on the link carries only the timed stanzas (and their ACKs).
        (ctx.mark_stable)();
        let start = wirebench_model::clock::monotonic_ns();
        for i in 0..run.count {
            let body = random_text(&mut rng, run.payload);
            alice.send_message(&run.topology.b_jid, &body, &format!("s{i}"))?;
            if i % 64 == 0 {
                (ctx.progress)(i, run.count);
            }
        }
        wait_received(&mut alice, &responder, run.count + 1, stall, ctx)?;
        let last = responder.last_ns.load(Ordering::SeqCst);
        let mut tally = responder
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        tally.finish(run.count);
        push_counts(&mut out, run.count, &tally);
        if last > start {
            let t = secs(last - start);
            out.push("throughput.duration", t, "s");
            out.push(
                "throughput.bits_per_s",
                (run.count * run.payload as u64 * 8) as f64 / t,
                "bit/s",
            );
            out.push("throughput.messages_per_s", run.count as f64 / t, "msg/s");
            out.notes.push(
                "XMPP stream: timed from the first send to client2's last receipt, after a \
                 warm-up message set up the server-to-server link (xmpp.first_delivery)"
                    .into(),
            );
        }
    } else {
        let mut rtts = Vec::with_capacity(run.count as usize);
        let mut tally = Tally::new();
        for i in 0..run.count {
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(interrupted(rtts, run.count, tally));
            }
            if i == 2 {
                (ctx.mark_stable)();
            }
            let body = random_text(&mut rng, run.payload);
            let id = format!("p{i}");
            let t0 = wirebench_model::clock::monotonic_ns();
            alice.send_message(&run.topology.b_jid, &body, &id)?;
            let deadline = Instant::now() + stall + Duration::from_secs(600);
            let want = format!("r{id}");
            // Short waits, so Ctrl-C during a slow round is seen within a tick.
            let at = loop {
                if ctx.shutdown.load(Ordering::Relaxed) {
                    return Err(interrupted(rtts, run.count, tally));
                }
                let step = deadline.min(Instant::now() + wirebench_protocol::TICK);
                match alice.next_event(step, "client2's answer") {
                    Ok((at, Event::Message { id: Some(got), .. })) if got == want => break at,
                    Ok(_) => {}
                    Err(XmppDriveError::Timeout { .. }) if Instant::now() < deadline => {}
                    Err(e) => return Err(e.into()),
                }
            };
            tally.observe(i, false);
            rtts.push(
                at.saturating_sub(t0)
                    .saturating_sub(run.think.as_nanos() as u64),
            );
            (ctx.progress)(i + 1, run.count);
        }
        tally.finish(run.count);
        push_counts(&mut out, run.count, &tally);
        push_rtts(&mut out, rtts);
    }
    responder.finish()?;
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
    out.push("xmpp.login", login_a.as_secs_f64(), "s");
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
    out.push("s2.total", secs(last.saturating_sub(t0)), "s");
    out.push("s2.login", secs(t_first.saturating_sub(t0)), "s");
    out.push("s2.pings", secs(last.saturating_sub(t_first)), "s");
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
