//! MQTT workloads between two clients through one broker. client1 runs on the case's
//! thread (the lab's client host, or here on loopback); client2 runs on a thread of its
//! own beside the broker (in the lab's server host). With a link, each message crosses it
//! once, as in study S1's XMPP and IRC rows (only their server-to-server link crosses).
//!
//! - ping-pong: client1 publishes exactly `payload` random bytes on `ping`; client2,
//!   subscribed to `ping`, answers with as many on `pong` after `think`; client1,
//!   subscribed to `pong`, times the round trip from its write to the read that completes
//!   the answer (think time excluded). Both clients are connected and subscribed before
//!   round 1, so `rtt.first` is the first message through the established broker (the
//!   set-up is `mqtt.connect` and `mqtt.subscribe`).
//! - stream: a warm-up message (`mqtt.first_delivery`), then `count` messages back to
//!   back on `ping`, timed from the first write until client2 has read the last one; at
//!   most [`MqttRun::window_bytes`] ahead of client2 (and, at QoS 1, within the broker's
//!   Receive Maximum).
//!
//! Every payload is checked against the sender's (both sides derive it from the seed); a
//! mismatch counts in `messages.corrupt`. Each client's QoS is `mqtt.qos`, for its
//! messages and its subscription.

use crate::conn::MqttConn;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wirebench_model::clock::monotonic_ns;
use wirebench_mqtt::{Config, Event, QoS, Version};
use wirebench_protocol::stats::{interrupted, push_counts, push_rtts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::{Case, Ctx, Outcome, TICK, WorkloadError};

/// client1 publishes here and client2 subscribes (short: every byte crosses a 2400 bit/s
/// link in every message).
pub const PING: &str = "ping";
/// client2 answers here.
pub const PONG: &str = "pong";

/// Most bytes (payload and 64 of overhead per message) a stream keeps ahead of client2
/// without a rate limit: enough for loopback's pipe at any payload. On a rate-limited
/// link the plugin sets a window of a round trip and a second of the link's bytes, so a
/// stream stops within seconds of its last message ([`MqttRun::window_bytes`]).
pub const STREAM_WINDOW_BYTES: u64 = 1 << 20;

/// Most messages a stream keeps ahead of client2, whatever their size: Mosquitto holds
/// 20 in flight to a subscriber and queues 1,000 more (`max_inflight_messages`,
/// `max_queued_messages`), then drops what comes ("Outgoing messages are being dropped"
/// in its log; tried: a QoS 1 stream of 200,000 64-byte messages on loopback lost some).
pub const MAX_AHEAD: u64 = 1000;

/// Where the clients connect.
#[derive(Debug, Clone)]
pub struct Topology {
    pub broker: SocketAddr,
    /// client2's network namespace (the lab's server host), or `None`: here.
    pub client2_netns: Option<String>,
}

#[derive(Debug, Clone)]
pub struct MqttRun {
    pub topology: Topology,
    pub version: Version,
    pub qos: QoS,
    pub payload: usize,
    /// Ping-pong rounds, or stream messages.
    pub count: u64,
    pub think: Duration,
    pub seed: u64,
    pub stream: bool,
    /// Bytes a stream keeps ahead of client2 (at least two messages).
    pub window_bytes: u64,
}

/// `mqtt.version` as the engine's version.
pub fn version_of(case: &Case) -> Version {
    match case.word("mqtt.version") {
        Some("5") => Version::V5,
        _ => Version::V311,
    }
}

/// `mqtt.qos` as the engine's QoS.
pub fn qos_of(case: &Case) -> QoS {
    match case.word("mqtt.qos") {
        Some("1") => QoS::AtLeastOnce,
        _ => QoS::AtMostOnce,
    }
}

impl MqttRun {
    /// The run a case asks for, between the clients of `topology`.
    pub fn from_case(case: &Case, topology: Topology, seed: u64) -> MqttRun {
        let w = case.workload_params();
        MqttRun {
            topology,
            version: version_of(case),
            qos: qos_of(case),
            payload: case.payload() as usize,
            count: w.messages(),
            think: w.think(),
            seed,
            stream: w.is_stream(),
            window_bytes: STREAM_WINDOW_BYTES,
        }
    }

    fn config(&self, client_id: &str) -> Config {
        let mut cfg = Config::new(self.version, client_id);
        // Room for the payload with any header and properties, so the broker's packets
        // are never refused as too large.
        cfg.max_packet_size = (self.payload as u64 + 1024)
            .clamp(64 * 1024, u64::from(wirebench_mqtt::MAX_PACKET))
            as u32;
        // client2 sends nothing while it waits `think`; the broker closes a session
        // silent for 1.5 keep-alive intervals (3.1.1 §3.1.2.10).
        cfg.keep_alive_s = (2 * self.think.as_secs()).clamp(60, u64::from(u16::MAX)) as u16;
        cfg
    }
}

/// Random bytes from a seeded xorshift generator: both ends derive the same sequence.
pub fn random_bytes(state: &mut u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            (*state >> 24) as u8
        })
        .collect()
}

fn seed_a(seed: u64) -> u64 {
    seed | 1
}

fn seed_b(seed: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// What client2's thread shares with client1's.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    received: AtomicU64,
    corrupt: AtomicU64,
    /// CLOCK_MONOTONIC of the first and last message read.
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    error: Mutex<Option<String>>,
}

/// Client2: answers (ping-pong) or counts (stream) until told to stop.
struct Responder {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Responder {
    /// Starts client2 and returns once it is connected and subscribed.
    fn start(run: &MqttRun, timeout: Duration, ctx: &Ctx) -> Result<Responder, WorkloadError> {
        let shared = Arc::new(Shared::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (r, sh) = (run.clone(), shared.clone());
        let thread = std::thread::Builder::new()
            .name("wb-mqtt-client2".into())
            .spawn(move || {
                let setup = (|| {
                    if let Some(ns) = &r.topology.client2_netns {
                        wirebench_lab::netns::enter(ns)
                            .map_err(|e| WorkloadError::Environment(e.to_string()))?;
                    }
                    let mut c = MqttConn::connect(
                        r.topology.broker,
                        r.config("wirebench-2"),
                        "client2",
                        timeout,
                        &sh.stop,
                    )?;
                    c.subscribe(PING, r.qos, timeout)?;
                    Ok::<_, WorkloadError>(c)
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
                if let Err(e) = respond(&mut c, &r, &sh) {
                    *sh.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                }
                c.close();
            })
            .map_err(|e| WorkloadError::Environment(format!("cannot start client2: {e}")))?;
        let mut responder = Responder {
            shared,
            thread: Some(thread),
        };
        let limit = 2 * timeout + Duration::from_secs(5);
        let t = Instant::now();
        loop {
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            match ready_rx.recv_timeout(TICK) {
                Ok(Ok(())) => return Ok(responder),
                Ok(Err(e)) => {
                    responder.thread.take().map(|t| t.join());
                    return Err(WorkloadError::Peer(format!("client2: {e}")));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(WorkloadError::Environment("client2 panicked".into()));
                }
                Err(_) if t.elapsed() > limit => {
                    return Err(WorkloadError::Peer(
                        "client2 did not get ready in time".into(),
                    ));
                }
                Err(_) => {}
            }
        }
    }

    fn failed(&self) -> Option<String> {
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

    fn received(&self) -> u64 {
        self.shared.received.load(Ordering::SeqCst)
    }

    fn finish(mut self) -> Result<(), WorkloadError> {
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
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// client2's loop: every message on `ping` is checked, counted and (ping-pong) answered.
fn respond(c: &mut MqttConn, r: &MqttRun, sh: &Shared) -> Result<(), WorkloadError> {
    let mut expect = seed_a(r.seed);
    let mut answer = seed_b(r.seed);
    while !sh.stop.load(Ordering::Relaxed) {
        let Some((at, Event::Message(m))) = c.poll_event(Instant::now() + TICK)? else {
            continue;
        };
        if m.topic != PING {
            continue;
        }
        if m.payload != random_bytes(&mut expect, r.payload) {
            sh.corrupt.fetch_add(1, Ordering::SeqCst);
        }
        if sh.received.load(Ordering::SeqCst) == 0 {
            sh.first_ns.store(at, Ordering::SeqCst);
        }
        sh.last_ns.store(at, Ordering::SeqCst);
        sh.received.fetch_add(1, Ordering::SeqCst);
        if !r.stream {
            std::thread::sleep(r.think);
            c.publish(PONG, &random_bytes(&mut answer, r.payload), r.qos)?;
        }
    }
    Ok(())
}

/// Runs one case's workload; `out` already holds the broker's figures.
pub fn run(run: &MqttRun, ctx: &Ctx, out: &mut Outcome) -> Result<(), WorkloadError> {
    // Connecting is a few round trips, on a 2400 bit/s link with delay seconds each.
    let timeout = ctx.connect_timeout.max(Duration::from_secs(60));
    let responder = Responder::start(run, timeout, ctx)?;
    let mut c1 = MqttConn::connect(
        run.topology.broker,
        run.config("wirebench-1"),
        "client1",
        timeout,
        ctx.shutdown,
    )?;
    out.push("mqtt.connect", c1.connect_time.as_secs_f64(), "s");
    if !run.stream {
        let t = c1.subscribe(PONG, run.qos, timeout)?;
        out.push("mqtt.subscribe", t.as_secs_f64(), "s");
    }
    let r = if run.stream {
        stream(run, ctx, &mut c1, &responder, out)
    } else {
        ping_pong(run, ctx, &mut c1, &responder, out)
    };
    // A failure of client2 explains client1's.
    if let (Err(_), Some(e)) = (&r, responder.failed()) {
        return Err(WorkloadError::Peer(e));
    }
    r?;
    if run.qos == QoS::AtLeastOnce {
        c1.drain_acks(ctx.stall_timeout)?;
    }
    responder.finish()?;
    c1.close();
    Ok(())
}

fn ping_pong(
    run: &MqttRun,
    ctx: &Ctx,
    c1: &mut MqttConn,
    responder: &Responder,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let stall = ctx.stall_timeout + run.think;
    let mut rng_a = seed_a(run.seed);
    let mut rng_b = seed_b(run.seed);
    let mut rtts = Vec::with_capacity(run.count as usize);
    let mut tally = Tally::new();
    let think_ns = run.think.as_nanos() as u64;
    for i in 0..run.count {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(interrupted(rtts, run.count, tally));
        }
        if i == 2 {
            (ctx.mark_stable)();
        }
        let body = random_bytes(&mut rng_a, run.payload);
        let want = random_bytes(&mut rng_b, run.payload);
        let t0 = monotonic_ns();
        let size = c1.publish(PING, &body, run.qos)?;
        if i == 0 {
            out.push("mqtt.publish_bytes", size as f64, "B");
        }
        let deadline = Instant::now() + stall;
        let (at, corrupt) = loop {
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(interrupted(rtts, run.count, tally));
            }
            if let Some(e) = responder.failed() {
                return Err(WorkloadError::Peer(e));
            }
            if Instant::now() >= deadline {
                return Err(WorkloadError::Stalled {
                    secs: stall.as_secs(),
                    during: "waiting for client2's answer",
                });
            }
            if let Some((at, Event::Message(m))) = c1.poll_event(Instant::now() + TICK)? {
                if m.topic == PONG {
                    break (at, m.payload != want);
                }
            }
        };
        tally.observe(i, corrupt);
        rtts.push(at.saturating_sub(t0).saturating_sub(think_ns));
        (ctx.progress)(i + 1, run.count);
    }
    tally.finish(run.count);
    push_counts(out, run.count, &tally);
    push_rtts(out, rtts);
    Ok(())
}

/// Services client1's session (PUBACKs, keep-alive) until client2 has read `n` messages.
fn wait_received(
    c1: &mut MqttConn,
    responder: &Responder,
    n: u64,
    stall: Duration,
    ctx: &Ctx,
) -> Result<(), WorkloadError> {
    wirebench_protocol::stats::wait_received(&responder.shared.received, n, stall, ctx, || {
        if let Some(e) = responder.failed() {
            return Err(WorkloadError::Peer(e));
        }
        c1.poll_event(Instant::now() + Duration::from_millis(2))?;
        Ok(())
    })
}

fn stream(
    run: &MqttRun,
    ctx: &Ctx,
    c1: &mut MqttConn,
    responder: &Responder,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let stall = ctx.stall_timeout;
    let mut rng = seed_a(run.seed);
    // A warm-up message first, like IRC's and XMPP's: the first messages on a new
    // connection meet delayed ACKs, which a flood's figure should not carry.
    let t_warm = monotonic_ns();
    let size = c1.publish(PING, &random_bytes(&mut rng, run.payload), run.qos)?;
    out.push("mqtt.publish_bytes", size as f64, "B");
    wait_received(c1, responder, 1, stall, ctx)?;
    let first = responder.shared.first_ns.load(Ordering::SeqCst);
    out.push(
        "mqtt.first_delivery",
        secs(first.saturating_sub(t_warm)),
        "s",
    );
    (ctx.mark_stable)();
    let window = (run.window_bytes / (run.payload as u64 + 64)).clamp(2, MAX_AHEAD);
    let start = monotonic_ns();
    let mut last_progress = ((0u64, 0u64), Instant::now());
    for i in 0..run.count {
        loop {
            let got = responder.received();
            let quota = run.qos == QoS::AtMostOnce || c1.client.send_quota() > 0;
            if i + 1 < got + window && quota {
                break;
            }
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            if let Some(e) = responder.failed() {
                return Err(WorkloadError::Peer(e));
            }
            let acked = u64::from(c1.client.in_flight());
            if (got, acked) != last_progress.0 {
                last_progress = ((got, acked), Instant::now());
            } else if last_progress.1.elapsed() > stall {
                return Err(WorkloadError::Stalled {
                    secs: stall.as_secs(),
                    during: "waiting for client2 to receive the stream",
                });
            }
            c1.poll_event(Instant::now() + Duration::from_millis(2))?;
        }
        c1.publish(PING, &random_bytes(&mut rng, run.payload), run.qos)?;
        if i % 64 == 0 {
            (ctx.progress)(i, run.count);
        }
    }
    wait_received(c1, responder, run.count + 1, stall, ctx)?;
    let last = responder.shared.last_ns.load(Ordering::SeqCst);
    let mut tally = Tally::new();
    tally.counts.received = responder.received() - 1;
    tally.counts.corrupt = responder.shared.corrupt.load(Ordering::SeqCst);
    push_counts(out, run.count, &tally);
    if last > start {
        let t = secs(last - start);
        out.push("throughput.duration", t, "s");
        out.push(
            "throughput.bits_per_s",
            (run.count * run.payload as u64 * 8) as f64 / t,
            "bit/s",
        );
        out.push("throughput.messages_per_s", run.count as f64 / t, "msg/s");
        out.notes.push(format!(
            "MQTT stream: timed from the first PUBLISH to client2's last read, after a warm-up \
             message (mqtt.first_delivery); at most {window} messages ahead of client2"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_reproducible() {
        let (mut a, mut b) = (seed_a(7), seed_a(7));
        let x = random_bytes(&mut a, 1000);
        assert_eq!(x, random_bytes(&mut b, 1000));
        assert_ne!(x, random_bytes(&mut a, 1000));
        assert_ne!(
            random_bytes(&mut seed_a(7), 8),
            random_bytes(&mut seed_b(7), 8)
        );
    }
}
