//! Ping-pong (seed 000's latency test): send one message, wait for its echo, repeat.
//!
//! Metrics: `connect.handshake`, `connect.time` (connect to first byte), `rtt.first`,
//! `rtt.second`, `rtt.stable` (median of rounds after the first two), `rtt.min`,
//! `rtt.mean`, `rtt.p50/p90/p99/p999`, `rtt.max`, and message accounting. The server's
//! think time is subtracted from every round, so all `rtt.*` exclude it.

use crate::conn::{Conn, Wait};
use crate::{Ctx, Outcome, WorkloadError};
use hdrhistogram::Histogram;
use std::cell::RefCell;
use std::time::Duration;
use wirebench_model::clock::monotonic_ns;
use wirebench_net::ControlClient;
use wirebench_proto::control::{Behaviour, Open};
use wirebench_proto::engine;
use wirebench_proto::raw::Pattern;
use wirebench_proto::tally::Tally;

#[derive(Debug, Clone)]
pub struct PingPong {
    pub protocol: String,
    pub payload: u32,
    pub rounds: u64,
    pub think: Duration,
    pub seed: u64,
    pub nodelay: bool,
}

pub fn run(ctl: &mut ControlClient, p: &PingPong, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let (session, port) = ctl.open(Open {
        protocol: p.protocol.clone(),
        behaviour: Behaviour::Echo,
        max_payload: p.payload,
        think_ns: p.think.as_nanos() as u64,
        seed: p.seed,
        verify: false,
        nodelay: p.nodelay,
    })?;
    let pattern = Pattern::new(p.seed, p.payload as usize);
    // A think time longer than the stall limit is not a stall.
    let stall = ctx.stall_timeout + p.think;
    let think_ns = p.think.as_nanos() as u64;
    // The protocol is the engine's; this function only moves its bytes. A RefCell because
    // the socket's read callback and the loop below both reach the engine.
    let engine = RefCell::new(engine::PingPong::new(
        &pattern, p.payload, p.rounds, think_ns,
    ));
    let mut feed = |now: u64, data: &[u8]| -> Result<(), WorkloadError> {
        Ok(engine.borrow_mut().handle_input(now, data)?)
    };
    let (mut conn, setup) = Conn::open(
        ctl.peer_ip()?,
        port,
        p.nodelay,
        ctx,
        stall,
        &mut feed,
        &|| engine.borrow().hello_at(),
    )?;

    // The loop runs in a closure so an interrupt, wherever it lands, still leaves the
    // finished rounds in the engine for a partial result.
    let looped = (|| -> Result<(), WorkloadError> {
        let mut round = 0u64;
        loop {
            if round == 2 {
                (ctx.mark_stable)();
            }
            // The engine stamps the frame with the time it is given: read the clock
            // right before the write.
            let Some(t) = engine.borrow_mut().poll_transmit(monotonic_ns()) else {
                return Ok(());
            };
            conn.send(&t, true, &mut feed)?;
            while engine.borrow().rtts().len() as u64 == round {
                if !conn.recv(Wait::Block, "waiting for a reply", &mut feed)? {
                    return Err(WorkloadError::Closed {
                        during: "waiting for a reply",
                    });
                }
            }
            if round % 64 == 0 {
                (ctx.progress)(round + 1, p.rounds);
            }
            round += 1;
        }
    })();
    let engine = engine.into_inner();
    match looped {
        Ok(()) => {}
        Err(WorkloadError::Interrupted) => {
            let answers = engine.answers().clone();
            return Err(interrupted(engine.into_rtts(), p.rounds, answers));
        }
        Err(e) => return Err(e),
    }
    (ctx.progress)(p.rounds, p.rounds);
    conn.finish_sending()?;
    let server = ctl.result(session)?;
    if let Some(e) = server.error {
        return Err(WorkloadError::Server(e));
    }
    let tally = engine.tally();

    let mut out = Outcome {
        local_port: conn.stream.local_addr().ok().map(|a| a.port()),
        ..Default::default()
    };
    out.push("connect.handshake", secs(setup.handshake_ns), "s");
    out.push("connect.time", secs(setup.first_byte_ns), "s");
    push_rtts(&mut out, engine.into_rtts());
    push_counts(&mut out, p.rounds, &tally);
    out.push("bytes.sent", conn.bytes_out as f64, "B");
    out.push("bytes.received", conn.bytes_in as f64, "B");
    if think_ns > 0 {
        out.notes.push(format!(
            "rtt.* exclude the responder's think time of {} per round",
            wirebench_model::format_seconds(p.think.as_secs_f64())
        ));
    }
    Ok(out)
}

pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

pub(crate) fn push_counts(out: &mut Outcome, sent: u64, tally: &Tally) {
    let c = &tally.counts;
    out.push("messages.sent", sent as f64, "count");
    out.push("messages.received", c.received as f64, "count");
    out.push("messages.lost", c.lost as f64, "count");
    out.push("messages.duplicated", c.duplicated as f64, "count");
    out.push("messages.reordered", c.reordered as f64, "count");
    out.push("messages.corrupt", c.corrupt as f64, "count");
}

/// HdrHistogram of nanosecond samples, 3 significant digits, auto-resizing.
pub(crate) fn histogram(samples: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(3).unwrap_or_else(|_| unreachable!("3 digits is valid"));
    for s in samples {
        // `record` resizes the histogram; `saturating_record` would clamp to its range.
        let _ = h.record((*s).max(1));
    }
    h
}

/// The round-trip metrics of every ping-pong (raw, XMPP, IRC) from its per-round times
/// (ns): first, second, stable (median from round 3 on), min, mean, percentiles, max,
/// the histogram and the rounds themselves.
pub(crate) fn push_rtts(out: &mut Outcome, rtts: Vec<u64>) {
    use crate::stats::{mean, median, percentile};
    if let Some(first) = rtts.first() {
        out.push("rtt.first", secs(*first), "s");
    }
    if let Some(second) = rtts.get(1) {
        out.push("rtt.second", secs(*second), "s");
    }
    if rtts.len() > 2 {
        let mut stable = rtts[2..].to_vec();
        stable.sort_unstable();
        if let Some(m) = median(&stable) {
            out.push("rtt.stable", m / 1e9, "s");
        }
    }
    let mut sorted = rtts.clone();
    sorted.sort_unstable();
    if let (Some(min), Some(max), Some(avg)) = (sorted.first(), sorted.last(), mean(&sorted)) {
        out.push("rtt.min", secs(*min), "s");
        out.push("rtt.mean", avg / 1e9, "s");
        for (name, q) in [
            ("rtt.p50", 50.0),
            ("rtt.p90", 90.0),
            ("rtt.p99", 99.0),
            ("rtt.p999", 99.9),
        ] {
            if let Some(v) = percentile(&sorted, q) {
                out.push(name, secs(v), "s");
            }
        }
        out.push("rtt.max", secs(*max), "s");
    }
    out.histograms.push(("rtt".into(), histogram(&rtts)));
    out.rounds = Some(rtts);
}

/// What a ping-pong interrupted after `rtts.len()` of `planned` rounds keeps: the
/// finished rounds' metrics, as an [`WorkloadError::InterruptedAfter`] (or a plain
/// interrupt when no round finished).
pub(crate) fn interrupted(rtts: Vec<u64>, planned: u64, mut tally: Tally) -> WorkloadError {
    if rtts.is_empty() {
        return WorkloadError::Interrupted;
    }
    let done = rtts.len() as u64;
    tally.finish(done);
    let mut out = Outcome::default();
    push_counts(&mut out, done, &tally);
    push_rtts(&mut out, rtts);
    out.notes.push(format!(
        "interrupted after {done} of {planned} rounds: the metrics cover the finished rounds"
    ));
    WorkloadError::InterruptedAfter(Box::new(out))
}

/// Real-peer streams (XMPP, IRC): waits until client2 has received `n` messages (the
/// counter its thread bumps), reporting progress, failing after `stall` without any, and
/// calling `service` between looks to keep client1's session alive (server pings, acks)
/// and to surface client2's errors.
pub(crate) fn wait_received(
    received: &std::sync::atomic::AtomicU64,
    n: u64,
    stall: std::time::Duration,
    ctx: &crate::Ctx,
    mut service: impl FnMut() -> Result<(), WorkloadError>,
) -> Result<(), WorkloadError> {
    use std::sync::atomic::Ordering;
    let mut last_progress = (u64::MAX, std::time::Instant::now());
    loop {
        let got = received.load(Ordering::SeqCst);
        if got >= n {
            return Ok(());
        }
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        (ctx.progress)(got.saturating_sub(1), n.saturating_sub(1));
        if got != last_progress.0 {
            last_progress = (got, std::time::Instant::now());
        } else if last_progress.1.elapsed() > stall {
            return Err(WorkloadError::Stalled {
                secs: stall.as_secs(),
                during: "waiting for client2 to receive the stream",
            });
        }
        service()?;
    }
}
