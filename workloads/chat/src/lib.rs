//! Study S1's chat workloads, shared by the protocols that carry messages between two
//! clients through servers (IRC, MQTT, XMPP): client1 on the case's thread, client2 on a
//! thread of its own (in the lab's server host when there is one).
//!
//! - ping-pong ([`ping_pong`]): client1 sends a message of exactly `payload` bytes,
//!   client2 answers with as many after `think`; each round trip runs from client1's
//!   write to the read that completes the answer, think time excluded.
//! - stream ([`stream`]): a warm-up message (`<proto>.first_delivery`), then `count`
//!   messages back to back within a window, timed from the first write until client2
//!   has read the last one.
//!
//! Both sides derive the payloads from the seed (client1's from [`seed_a`], client2's
//! answers from [`seed_b`]), so a payload that arrives changed counts in
//! `messages.corrupt`. A protocol brings its session as a [`Chat`] and keeps the rest:
//! its set-up and its metrics around these loops, and its notes.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wirebench_model::MetricSpec;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::THROUGHPUT_BITS_PER_S;
use wirebench_model::metric::THROUGHPUT_DURATION;
use wirebench_model::metric::THROUGHPUT_MESSAGES_PER_S;
use wirebench_protocol::Fault;
use wirebench_protocol::stats::{interrupted, push_counts, push_rtts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::tcpinfo;
use wirebench_protocol::{Ctx, Outcome, TICK, WorkloadError};

/// One client's session, as the chat workloads use it.
pub trait Chat: Send + 'static {
    /// A message's payload as the protocol carries it (text or bytes).
    type Body: PartialEq + Send;

    /// Whether received payloads are checked against the sender's (else never corrupt).
    const VERIFIES: bool = true;

    /// The next payload of `len` bytes from a seeded generator
    /// ([`wirebench_protocol::seeded`]).
    fn body(state: &mut u64, len: usize) -> Self::Body;

    /// Sends `body` to the other client; `tag` names the message where the protocol
    /// carries an id (`p<N>` a ping, `r<tag>` its answer, `s<N>` a stream message).
    /// Returns what the plugin counts of a send (IRC: lines, MQTT: bytes on the wire).
    fn send(&mut self, body: &Self::Body, tag: &str) -> Result<u64, WorkloadError>;

    /// Serves the session until `deadline`; the next message from the other client, if
    /// one arrives (others are consumed and dropped).
    fn recv(&mut self, deadline: Instant) -> Result<Option<Incoming<Self::Body>>, WorkloadError>;

    /// The stream's warm-up message and its tag: by default a payload like the others.
    fn warm_up(state: &mut u64, len: usize) -> (Self::Body, &'static str) {
        (Self::body(state, len), "warm-up")
    }

    /// Whether a stream may send one more now (MQTT QoS 1: the broker's Receive Maximum).
    fn may_send(&self) -> bool {
        true
    }

    /// Messages waiting for the server's acknowledgement (a stream's progress counts them).
    fn unacked(&self) -> u64 {
        0
    }

    /// Client1's TCP connection, where it is the one that crosses the link (MQTT's, to
    /// the broker in the server host), for its TCP_INFO series; `None` where the
    /// servers' link carries the messages across (IRC's and XMPP's S1 topologies).
    fn socket(&self) -> Option<&TcpStream> {
        None
    }

    /// Ends the session politely (QUIT, DISCONNECT, `</stream:stream>`).
    fn close(self);
}

/// A message from the other client.
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming<B> {
    /// CLOCK_MONOTONIC time its (last) bytes were read.
    pub at: u64,
    pub body: B,
    /// Its id, where the protocol carries one.
    pub tag: Option<String>,
}

/// Client1's generator state for `seed`.
pub fn seed_a(seed: u64) -> u64 {
    seed | 1
}

/// Client2's generator state for `seed` (its answers).
pub fn seed_b(seed: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// What a case asks of the chat.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Payload bytes per message.
    pub payload: usize,
    /// Ping-pong rounds, or stream messages.
    pub count: u64,
    pub think: Duration,
    pub seed: u64,
    pub stream: bool,
    /// How often a stream samples client1's TCP_INFO (`tcp.info`), where [`Chat::socket`]
    /// gives its connection; `None`: never.
    pub tcp_info: Option<Duration>,
}

/// What client2's thread shares with client1's.
#[derive(Default)]
pub struct Shared {
    stop: AtomicBool,
    received: AtomicU64,
    corrupt: AtomicU64,
    /// CLOCK_MONOTONIC of the first and last message read.
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    /// What the last answer's [`Chat::send`] returned.
    answer_sent: AtomicU64,
    /// Stream messages' sequence numbers as they arrived (tags `s<N>`), so loss,
    /// duplicates and reordering are counted, not assumed away.
    seen: Mutex<Tally>,
    error: Mutex<Option<String>>,
}

impl Shared {
    fn record(&self, at: u64, corrupt: bool) {
        if corrupt {
            self.corrupt.fetch_add(1, Ordering::SeqCst);
        }
        if self.received.load(Ordering::SeqCst) == 0 {
            self.first_ns.store(at, Ordering::SeqCst);
        }
        self.last_ns.store(at, Ordering::SeqCst);
        self.received.fetch_add(1, Ordering::SeqCst);
    }
}

/// Client2: answers (ping-pong) or counts (stream) on its own thread until told to stop.
pub struct Client2 {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Client2 {
    /// Starts client2 on a thread named `name` (in network namespace `netns`, if any);
    /// `connect` sets its session up (it may wait for the other client: it gets the
    /// stop flag). Returns once it is ready, or fails after `ready_limit`.
    pub fn start<C: Chat>(
        name: &str,
        netns: Option<String>,
        plan: &Plan,
        connect: impl FnOnce(&AtomicBool) -> Result<C, WorkloadError> + Send + 'static,
        ready_limit: Duration,
        ctx: &Ctx,
    ) -> Result<Client2, WorkloadError> {
        let shared = Arc::new(Shared::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (plan, sh) = (plan.clone(), shared.clone());
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let setup = (|| {
                    if let Some(ns) = &netns {
                        wirebench_protocol::hosts::enter(ns)
                            .map_err(|e| WorkloadError::Environment(e.to_string()))?;
                    }
                    connect(&sh.stop)
                })();
                let mut c = match setup {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                if let Err(e) = respond(&mut c, &plan, &sh) {
                    *sh.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                }
                c.close();
            })
            .map_err(|e| WorkloadError::because(Fault::Environment, "cannot start client2", e))?;
        let mut client2 = Client2 {
            shared,
            thread: Some(thread),
        };
        let t = Instant::now();
        loop {
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            match ready_rx.recv_timeout(TICK) {
                Ok(Ok(())) => return Ok(client2),
                Ok(Err(e)) => {
                    client2.thread.take().map(|t| t.join());
                    return Err(WorkloadError::Peer(format!("client2: {e}")));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(WorkloadError::Environment("client2 panicked".into()));
                }
                Err(_) if t.elapsed() > ready_limit => {
                    return Err(WorkloadError::Peer(
                        "client2 did not get ready in time".into(),
                    ));
                }
                Err(_) => {}
            }
        }
    }

    /// Client2's failure, if it failed or stopped unasked.
    pub fn failed(&self) -> Option<String> {
        if let Some(e) = self
            .shared
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Some(format!("client2: {e}"));
        }
        if self.thread.as_ref().is_some_and(|t| t.is_finished())
            && !self.shared.stop.load(Ordering::SeqCst)
        {
            return Some("client2 stopped unexpectedly".into());
        }
        None
    }

    /// Messages client2 has read.
    pub fn received(&self) -> u64 {
        self.shared.received.load(Ordering::SeqCst)
    }

    /// What client2's last answer's [`Chat::send`] returned (0: no answer yet).
    pub fn answer_sent(&self) -> u64 {
        self.shared.answer_sent.load(Ordering::SeqCst)
    }

    /// Stops client2 and waits for it to close its session.
    pub fn finish(mut self) -> Result<(), WorkloadError> {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                return Err(WorkloadError::Environment("client2 panicked".into()));
            }
        }
        match self
            .shared
            .error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            Some(e) => Err(WorkloadError::Peer(format!("client2: {e}"))),
            None => Ok(()),
        }
    }

    fn check(&self) -> Result<(), WorkloadError> {
        match self.failed() {
            Some(e) => Err(WorkloadError::Peer(e)),
            None => Ok(()),
        }
    }
}

impl Drop for Client2 {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Client2's loop: every message is checked, counted and (ping-pong) answered.
fn respond<C: Chat>(c: &mut C, plan: &Plan, sh: &Shared) -> Result<(), WorkloadError> {
    let mut expect = seed_a(plan.seed);
    let mut answer = seed_b(plan.seed);
    while !sh.stop.load(Ordering::Relaxed) {
        let Some(m) = c.recv(Instant::now() + TICK)? else {
            continue;
        };
        let corrupt = C::VERIFIES && m.body != C::body(&mut expect, plan.payload);
        if let Some(n) = m.tag.as_deref().and_then(stream_seq) {
            sh.seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .observe(n, false);
        }
        sh.record(m.at, corrupt);
        if !plan.stream {
            std::thread::sleep(plan.think);
            let body = C::body(&mut answer, plan.payload);
            let tag = format!("r{}", m.tag.unwrap_or_default());
            let n = c.send(&body, &tag)?;
            sh.answer_sent.store(n, Ordering::SeqCst);
        }
    }
    Ok(())
}

/// The sequence number of a stream message's tag `s<N>`.
fn stream_seq(tag: &str) -> Option<u64> {
    tag.strip_prefix('s')?.parse().ok()
}

/// How the shared loops differ between protocols.
#[derive(Debug, Clone)]
pub struct Style {
    /// The protocol's `<name>.first_delivery`: the warm-up message's trip.
    pub first_delivery: MetricSpec,
    /// Waiting for an answer may take this much longer than the case's stall timeout
    /// (XMPP's first round includes the server-to-server set-up).
    pub answer_grace: Duration,
    /// How long client1's session is served per turn while it waits for client2.
    pub service_wait: Duration,
    /// The metric of the first message's [`Chat::send`] result (MQTT's PUBLISH size).
    pub send_metric: Option<MetricSpec>,
    /// Stream messages tagged `s<N>`, counted by sequence number (else by count).
    pub tagged: bool,
}

/// Ping-pong between `c1` and client2; pushes `messages.*` and `rtt.*` to `out`.
pub fn ping_pong<C: Chat>(
    plan: &Plan,
    style: &Style,
    ctx: &Ctx,
    c1: &mut C,
    client2: &Client2,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let stall = ctx.stall_timeout + plan.think;
    let mut rng_a = seed_a(plan.seed);
    let mut rng_b = seed_b(plan.seed);
    let mut rtts = Vec::with_capacity(plan.count as usize);
    let mut tally = Tally::new();
    let think_ns = plan.think.as_nanos() as u64;
    for i in 0..plan.count {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(interrupted(rtts, plan.count, tally));
        }
        if i == 2 {
            (ctx.mark_stable)();
        }
        let body = C::body(&mut rng_a, plan.payload);
        let want = C::body(&mut rng_b, plan.payload);
        let tag = format!("p{i}");
        let t0 = monotonic_ns();
        let sent = c1.send(&body, &tag)?;
        if let (0, Some(metric)) = (i, style.send_metric) {
            out.put(metric, sent as f64);
        }
        let deadline = Instant::now() + stall + style.answer_grace;
        let answer = format!("r{tag}");
        let (at, corrupt) = loop {
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(interrupted(rtts, plan.count, tally));
            }
            client2.check()?;
            if Instant::now() >= deadline {
                return Err(WorkloadError::Stalled {
                    secs: stall.as_secs(),
                    during: "waiting for client2's answer",
                });
            }
            if let Some(m) = c1.recv(Instant::now() + TICK)? {
                if m.tag.as_ref().is_none_or(|t| *t == answer) {
                    break (m.at, C::VERIFIES && m.body != want);
                }
            }
        };
        tally.observe(i, corrupt);
        rtts.push(at.saturating_sub(t0).saturating_sub(think_ns));
        (ctx.progress)(i + 1, plan.count);
    }
    tally.finish(plan.count);
    push_counts(out, plan.count, &tally);
    push_rtts(out, rtts);
    Ok(())
}

/// Serves client1's session until client2 has read `n` messages.
fn wait_received<C: Chat>(
    c1: &mut C,
    client2: &Client2,
    n: u64,
    stall: Duration,
    wait: Duration,
    ctx: &Ctx,
) -> Result<(), WorkloadError> {
    wirebench_protocol::stats::wait_received(&client2.shared.received, n, stall, ctx, || {
        client2.check()?;
        // Keep client1's session serviced (pings, acknowledgements) while waiting.
        c1.recv(Instant::now() + wait)?;
        Ok(())
    })
}

/// A stream from `c1` to client2, at most `window` messages ahead of it; pushes
/// `<name>.first_delivery`, `messages.*` and `throughput.*` to `out`. Returns whether
/// throughput was measured (the time was positive), for the plugin's note.
pub fn stream<C: Chat>(
    plan: &Plan,
    style: &Style,
    window: u64,
    ctx: &Ctx,
    c1: &mut C,
    client2: &Client2,
    out: &mut Outcome,
) -> Result<bool, WorkloadError> {
    let stall = ctx.stall_timeout + plan.think;
    let mut rng = seed_a(plan.seed);
    let sampler = match c1.socket() {
        Some(s) => tcpinfo::start(plan.tcp_info, s),
        None => Ok(None),
    };
    // A warm-up message first: the first messages on a new connection meet delayed
    // ACKs (and XMPP's the server-to-server set-up), which a flood's figure should not
    // carry.
    let t_warm = monotonic_ns();
    let (body, tag) = C::warm_up(&mut rng, plan.payload);
    let sent = c1.send(&body, tag)?;
    if let Some(metric) = style.send_metric {
        out.put(metric, sent as f64);
    }
    wait_received(c1, client2, 1, stall, style.service_wait, ctx)?;
    let first = client2.shared.first_ns.load(Ordering::SeqCst);
    out.put(style.first_delivery, secs(first.saturating_sub(t_warm)));
    // From here on the link carries only the timed messages (and their ACKs).
    (ctx.mark_stable)();
    let start = monotonic_ns();
    let mut last_progress = ((0u64, 0u64), Instant::now());
    for i in 0..plan.count {
        loop {
            let got = client2.received();
            if i + 1 < got.saturating_add(window) && c1.may_send() {
                break;
            }
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            client2.check()?;
            let mark = (got, c1.unacked());
            if mark != last_progress.0 {
                last_progress = (mark, Instant::now());
            } else if last_progress.1.elapsed() > stall {
                return Err(WorkloadError::Stalled {
                    secs: stall.as_secs(),
                    during: "waiting for client2 to receive the stream",
                });
            }
            c1.recv(Instant::now() + Duration::from_millis(2))?;
        }
        let tag = if style.tagged {
            format!("s{i}")
        } else {
            String::new()
        };
        c1.send(&C::body(&mut rng, plan.payload), &tag)?;
        if i % 64 == 0 {
            (ctx.progress)(i, plan.count);
        }
    }
    wait_received(c1, client2, plan.count + 1, stall, style.service_wait, ctx)?;
    tcpinfo::record(out, sampler);
    let last = client2.shared.last_ns.load(Ordering::SeqCst);
    let tally = if style.tagged {
        let mut t = client2
            .shared
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        t.finish(plan.count);
        t
    } else {
        let mut t = Tally::new();
        t.counts.received = client2.received() - 1;
        t.counts.corrupt = client2.shared.corrupt.load(Ordering::SeqCst);
        t
    };
    push_counts(out, plan.count, &tally);
    if last <= start {
        return Ok(false);
    }
    let t = secs(last - start);
    out.put(THROUGHPUT_DURATION, t);
    out.put(
        THROUGHPUT_BITS_PER_S,
        (plan.count * plan.payload as u64 * 8) as f64 / t,
    );
    out.put(THROUGHPUT_MESSAGES_PER_S, plan.count as f64 / t);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_protocol::seeded::xorshift;

    #[test]
    fn the_generators_are_reproducible_and_distinct() {
        let (mut a, mut b) = (seed_a(7), seed_a(7));
        let x: Vec<u64> = (0..8).map(|_| xorshift(&mut a)).collect();
        assert_eq!(x, (0..8).map(|_| xorshift(&mut b)).collect::<Vec<_>>());
        assert_ne!(xorshift(&mut seed_a(7)), xorshift(&mut seed_b(7)));
        assert_eq!(seed_a(8) & 1, 1, "xorshift needs a non-zero state");
    }

    #[test]
    fn stream_tags_carry_their_sequence_number() {
        assert_eq!(stream_seq("s42"), Some(42));
        assert_eq!(stream_seq("warm-up"), None);
        assert_eq!(stream_seq("rp1"), None);
    }
}
