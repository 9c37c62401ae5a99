//! The workloads of request/response and message protocols, shared by their plugins:
//!
//! - ping-pong, closed loop: one request in flight per connection, `rounds` in all,
//!   spread over `connections`; every round trip is kept (think time excluded);
//! - ping-pong, open loop (`rate`): request k is due at `k / rate` after the start and is
//!   timed from that moment, not from when it left, so a slow reply that delays the next
//!   sends shows in the latencies instead of hiding (no coordinated omission, as wrk2 and
//!   oha do); the time from the actual send is recorded beside it (`rtt.uncorrected.*`);
//! - stream: payloads back to back for `duration` or `count`, one-way (empty replies) or
//!   echoed. Call-only protocols send the next when the last is answered; protocols with
//!   message streams send without waiting, and the server's [`Summary`] closes the count.

use crate::client::{Call, Connect, Connected, Incoming, MsgRx, MsgTx, Streams};
use crate::server::{Behaviour, Summary};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::time::Duration;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::BYTES_PAYLOAD;
use wirebench_model::metric::CONNECT_HANDSHAKE;
use wirebench_model::metric::MESSAGES_CORRUPT;
use wirebench_model::metric::RATE_ACHIEVED;
use wirebench_model::metric::RATE_OFFERED;
use wirebench_model::metric::RATE_SEND_LAG;
use wirebench_model::metric::RTT_UNCORRECTED;
use wirebench_model::metric::THROUGHPUT_BITS_PER_S;
use wirebench_model::metric::THROUGHPUT_DURATION;
use wirebench_model::metric::THROUGHPUT_MESSAGES_PER_S;
use wirebench_model::metric::THROUGHPUT_REQUESTS_PER_S;
use wirebench_payload::Pattern;
use wirebench_payload::tally::Tally;
use wirebench_protocol::Fault;
use wirebench_protocol::params::{Mode, NODELAY};
use wirebench_protocol::stats::{
    histogram, interrupted, mean, percentile, push_counts, push_load_rtts, push_rtts, secs,
};
use wirebench_protocol::{Case, Ctx, Outcome, TICK, Workload, WorkloadError};

/// Requests one connection keeps in flight at most in open-loop mode (HTTP/2, gRPC):
/// beyond it, due requests wait (and their wait counts in their latency).
const MAX_IN_FLIGHT: usize = crate::server::CASE_MAX_STREAMS as usize;

/// A case's workload for a request/response protocol.
#[derive(Debug, Clone)]
pub struct Plan {
    pub payload: usize,
    pub seed: u64,
    pub think: Duration,
    pub nodelay: bool,
    pub what: What,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum What {
    PingPong {
        rounds: u64,
        connections: u32,
    },
    Rate {
        requests: u64,
        per_s: f64,
        connections: u32,
    },
    Stream {
        echo: bool,
        count: Option<u64>,
        duration: Option<Duration>,
    },
}

impl Plan {
    pub fn from_case(case: &Case, seed: u64) -> Result<Plan, WorkloadError> {
        let payload = usize::try_from(case.payload())
            .map_err(|_| WorkloadError::Input("payload too large".into()))?;
        // The spec has a default, so the count is always there.
        let connections = case.count(&crate::params::CONNECTIONS).unwrap_or_default();
        let connections = u32::try_from(connections)
            .ok()
            .filter(|c| (1..=10_000).contains(c))
            .ok_or_else(|| {
                WorkloadError::Input(format!(
                    "connections={connections}: use 1 to 10000 connections"
                ))
            })?;
        let what = match case.workload_params() {
            Workload::PingPong { rounds, .. } => match case.text(&crate::params::RATE) {
                Some(r) => What::Rate {
                    requests: rounds,
                    per_s: crate::params::parse_rate(r).map_err(WorkloadError::Input)?,
                    connections,
                },
                None => What::PingPong {
                    rounds,
                    connections,
                },
            },
            Workload::Stream { count, duration } => What::Stream {
                echo: Mode::of(case).is_echo(),
                count,
                duration,
            },
            Workload::Load | Workload::Connect => {
                return Err(WorkloadError::Input(format!(
                    "{} has no {} workload",
                    case.protocol(),
                    case.workload()
                )));
            }
        };
        if let What::Rate { connections, .. } | What::PingPong { connections, .. } = what
            && u64::from(connections) > case.workload_params().messages()
        {
            return Err(WorkloadError::Input(format!(
                "connections={connections} is more than rounds={}: every connection needs a round",
                case.workload_params().messages()
            )));
        }
        Ok(Plan {
            payload,
            seed,
            think: case.workload_params().think(),
            nodelay: case.is_on(&NODELAY),
            what,
        })
    }

    /// The server's behaviour for this plan.
    pub fn behaviour(&self) -> Behaviour {
        Behaviour::new(self.seed, self.payload, self.think, self.nodelay)
    }
}

/// Runs `plan` against a server through `c` (and `s` for streams, when the protocol has
/// message streams) on a single-threaded runtime of this thread, until done, stalled or
/// interrupted. `overhead` is what each message adds above TCP, about, for link budgets.
pub fn run<C: Connect, S: Streams>(
    plan: &Plan,
    c: &C,
    s: Option<&S>,
    overhead: u64,
    ctx: &Ctx,
) -> Result<Outcome, WorkloadError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| WorkloadError::because(Fault::Environment, "cannot start a runtime", e))?;
    let pattern = Pattern::new(plan.seed, plan.payload);
    let rounds: RefCell<Vec<u64>> = RefCell::new(Vec::new());
    let watch = async {
        loop {
            tokio::time::sleep(TICK).await;
            if ctx.shutdown.load(Ordering::Relaxed) {
                return;
            }
        }
    };
    let work = async {
        match plan.what {
            What::PingPong {
                rounds: n,
                connections,
            } => pingpong(plan, &pattern, c, n, connections, &rounds, ctx).await,
            What::Rate {
                requests,
                per_s,
                connections,
            } => rate(plan, &pattern, c, requests, per_s, connections, ctx).await,
            What::Stream {
                echo,
                count,
                duration,
            } => {
                let budget = duration
                    .and_then(|d| (ctx.link_budget)(plan.payload as u64 + overhead, echo, d))
                    .filter(|b| count.is_none_or(|c| *b < c));
                let count = budget.or(count);
                let mut out = match s {
                    Some(s) => stream_messages(plan, &pattern, s, echo, count, duration, ctx).await,
                    None => stream_calls(plan, &pattern, c, echo, count, duration, ctx).await,
                }?;
                if let (Some(b), Some(d)) = (budget, duration) {
                    out.notes.push(format!(
                        "the link's rate carries about {b} messages in {}: the stream sent at most that many",
                        wirebench_model::format_duration(d)
                    ));
                }
                Ok(out)
            }
        }
    };
    let r = rt.block_on(async {
        tokio::select! {
            r = work => r,
            _ = watch => Err(WorkloadError::Interrupted),
        }
    });
    match r {
        Err(WorkloadError::Interrupted) => {
            let done: Vec<u64> = rounds
                .into_inner()
                .into_iter()
                .take_while(|r| *r != u64::MAX)
                .collect();
            let planned = match plan.what {
                What::PingPong { rounds, .. } => rounds,
                _ => 0,
            };
            let mut tally = Tally::new();
            for k in 0..done.len() as u64 {
                tally.observe(k, false);
            }
            Err(interrupted(done, planned, tally))
        }
        r => r,
    }
}

/// A ping-pong's first figures once every one of its `n` requests was answered
/// (`corrupt` of them not with the pattern): the handshake and the counts.
fn all_answered(local_port: Option<u16>, handshake: u64, n: u64, corrupt: u64) -> Outcome {
    let mut out = Outcome {
        local_port,
        ..Default::default()
    };
    out.put(CONNECT_HANDSHAKE, secs(handshake));
    let mut tally = Tally::new();
    for k in 0..n {
        tally.observe(k, false);
    }
    tally.counts.corrupt = corrupt;
    push_counts(&mut out, n, &tally);
    out
}

/// `f`, failing as a stall when it takes longer than `limit`.
pub async fn within<T>(
    limit: Duration,
    during: &'static str,
    f: impl std::future::Future<Output = Result<T, WorkloadError>>,
) -> Result<T, WorkloadError> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(WorkloadError::Stalled {
            secs: limit.as_secs(),
            during,
        }),
    }
}

async fn connect_all<C: Connect>(
    c: &C,
    n: u32,
    ctx: &Ctx<'_>,
) -> Result<Vec<Connected<C::Conn>>, WorkloadError> {
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        v.push(within(ctx.connect_timeout, "connecting", c.connect()).await?);
    }
    Ok(v)
}

/// Reports `done` of `total` every tick until dropped.
async fn report(done: &Cell<u64>, total: u64, ctx: &Ctx<'_>) {
    loop {
        (ctx.progress)(done.get(), total);
        tokio::time::sleep(TICK).await;
    }
}

fn body(pattern: &Pattern, seq: u64, len: usize) -> Bytes {
    Bytes::copy_from_slice(pattern.payload(seq, len))
}

async fn pingpong<C: Connect>(
    plan: &Plan,
    pattern: &Pattern,
    c: &C,
    n: u64,
    connections: u32,
    rtts: &RefCell<Vec<u64>>,
    ctx: &Ctx<'_>,
) -> Result<Outcome, WorkloadError> {
    let conns = connect_all(c, connections, ctx).await?;
    let handshake = conns[0].handshake_ns;
    let local_port = conns[0].local_port;
    *rtts.borrow_mut() = vec![u64::MAX; n as usize];
    let think_ns = plan.think.as_nanos() as u64;
    let stall = ctx.stall_timeout + plan.think;
    let done = Cell::new(0u64);
    let corrupt = Cell::new(0u64);
    let lanes = conns.into_iter().enumerate().map(|(i, conn)| {
        let (done, corrupt) = (&done, &corrupt);
        async move {
            let mut conn = conn.conn;
            let mut seq = i as u64;
            while seq < n {
                if seq == 2 {
                    (ctx.mark_stable)();
                }
                let b = body(pattern, seq, plan.payload);
                let t = monotonic_ns();
                let reply = within(
                    stall,
                    "waiting for a reply",
                    conn.call(seq, b.clone(), true),
                )
                .await?;
                let rtt = (monotonic_ns() - t).saturating_sub(think_ns);
                if reply != b {
                    corrupt.set(corrupt.get() + 1);
                }
                rtts.borrow_mut()[seq as usize] = rtt;
                done.set(done.get() + 1);
                seq += u64::from(connections);
            }
            Ok::<(), WorkloadError>(())
        }
    });
    let t0 = monotonic_ns();
    let all = futures_util::future::try_join_all(lanes);
    tokio::select! {
        r = all => { r?; }
        _ = report(&done, n, ctx) => unreachable!("reporting never ends"),
    }
    let elapsed = monotonic_ns() - t0;
    (ctx.progress)(n, n);
    let mut out = all_answered(local_port, handshake, n, corrupt.get());
    push_rtts(&mut out, std::mem::take(&mut *rtts.borrow_mut()));
    out.put_in(THROUGHPUT_REQUESTS_PER_S, n as f64 / secs(elapsed), "req/s");
    if think_ns > 0 {
        out.notes.push(format!(
            "rtt.* exclude the responder's think time of {} per round",
            wirebench_model::format_seconds(plan.think.as_secs_f64())
        ));
    }
    if connections > 1 {
        out.notes.push(format!(
            "{n} rounds over {connections} connections, one request in flight on each"
        ));
    }
    Ok(out)
}

/// Waits until the monotonic clock reads `t`: a timer for all but the last millisecond
/// (tokio's timers tick in milliseconds), then yields until due, so requests leave on
/// time to within microseconds rather than a millisecond late.
async fn until(t: u64) {
    let now = monotonic_ns();
    if t > now + 2_000_000 {
        tokio::time::sleep(Duration::from_nanos(t - now - 1_000_000)).await;
    }
    while monotonic_ns() < t {
        tokio::task::yield_now().await;
    }
}

/// One request's times: (seq, intended, sent, answered), ns.
type Timed = (u64, u64, u64, u64);

async fn rate<C: Connect>(
    plan: &Plan,
    pattern: &Pattern,
    c: &C,
    n: u64,
    per_s: f64,
    connections: u32,
    ctx: &Ctx<'_>,
) -> Result<Outcome, WorkloadError> {
    let conns = connect_all(c, connections, ctx).await?;
    let handshake = conns[0].handshake_ns;
    let local_port = conns[0].local_port;
    let multiplexed = conns[0].conn.share().is_some();
    let think_ns = plan.think.as_nanos() as u64;
    let stall = ctx.stall_timeout + plan.think;
    let done = Cell::new(0u64);
    let corrupt = Cell::new(0u64);
    let times: RefCell<Vec<Timed>> = RefCell::new(Vec::with_capacity(n as usize));
    let interval = 1e9 / per_s;
    // Connections are open; the schedule starts now.
    let t0 = monotonic_ns() + 1_000_000;
    let due = |k: u64| t0 + (k as f64 * interval) as u64;
    let lanes = conns.into_iter().enumerate().map(|(i, conn)| {
        let (done, corrupt, times) = (&done, &corrupt, &times);
        let finish = move |seq: u64, intended: u64, sent: u64, r: Result<(Bytes, Bytes), WorkloadError>| {
            let (sent_body, reply) = r?;
            if reply != sent_body {
                corrupt.set(corrupt.get() + 1);
            }
            times.borrow_mut().push((seq, intended, sent, monotonic_ns()));
            done.set(done.get() + 1);
            Ok::<(), WorkloadError>(())
        };
        async move {
            let mut conn = conn.conn;
            let mut in_flight = FuturesUnordered::new();
            let mut seq = i as u64;
            while seq < n {
                let intended = due(seq);
                // Answers that arrive while waiting are taken as they come.
                loop {
                    tokio::select! {
                        biased;
                        Some((s, it, st, r)) = in_flight.next(), if !in_flight.is_empty() => finish(s, it, st, r)?,
                        _ = until(intended) => break,
                    }
                }
                while in_flight.len() >= MAX_IN_FLIGHT {
                    if let Some((s, it, st, r)) = in_flight.next().await {
                        finish(s, it, st, r)?;
                    }
                }
                let b = body(pattern, seq, plan.payload);
                match conn.share() {
                    Some(mut h) if multiplexed => {
                        in_flight.push(async move {
                            let sent = monotonic_ns();
                            let r = within(stall, "waiting for a reply", h.call(seq, b.clone(), true))
                                .await
                                .map(|reply| (b, reply));
                            (seq, intended, sent, r)
                        });
                    }
                    _ => {
                        let sent = monotonic_ns();
                        let r = within(stall, "waiting for a reply", conn.call(seq, b.clone(), true))
                            .await
                            .map(|reply| (b, reply));
                        finish(seq, intended, sent, r)?;
                    }
                }
                seq += u64::from(connections);
            }
            while let Some((s, it, st, r)) = in_flight.next().await {
                finish(s, it, st, r)?;
            }
            Ok::<(), WorkloadError>(())
        }
    });
    (ctx.mark_stable)();
    let all = futures_util::future::try_join_all(lanes);
    tokio::select! {
        r = all => { r?; }
        _ = report(&done, n, ctx) => unreachable!("reporting never ends"),
    }
    let end = monotonic_ns();
    (ctx.progress)(n, n);
    let mut times = times.into_inner();
    times.sort_unstable_by_key(|t| t.0);
    let corrected: Vec<u64> = times
        .iter()
        .map(|(_, i, _, d)| d.saturating_sub(*i).saturating_sub(think_ns))
        .collect();
    let mut uncorrected: Vec<u64> = times
        .iter()
        .map(|(_, _, s, d)| d.saturating_sub(*s).saturating_sub(think_ns))
        .collect();
    let mut lag: Vec<u64> = times
        .iter()
        .map(|(_, i, s, _)| s.saturating_sub(*i))
        .collect();
    let mut out = all_answered(local_port, handshake, n, corrupt.get());
    push_rtts(&mut out, corrected);
    uncorrected.sort_unstable();
    lag.sort_unstable();
    for (name, q) in [("p50", 50.0), ("p99", 99.0), ("p999", 99.9), ("max", 100.0)] {
        if let Some(v) = percentile(&uncorrected, q) {
            out.put(RTT_UNCORRECTED.at(name), secs(v));
        }
    }
    if let Some(m) = mean(&uncorrected) {
        out.put(RTT_UNCORRECTED.at("mean"), m / 1e9);
    }
    out.histograms
        .push((RTT_UNCORRECTED.name.into(), histogram(&uncorrected)));
    for (name, q) in [("p50", 50.0), ("p99", 99.0), ("max", 100.0)] {
        if let Some(v) = percentile(&lag, q) {
            out.put(RATE_SEND_LAG.at(name), secs(v));
        }
    }
    out.put_in(RATE_OFFERED, per_s, "req/s");
    out.put_in(
        RATE_ACHIEVED,
        n as f64 / secs(end.saturating_sub(t0)),
        "req/s",
    );
    out.notes.push(format!(
        "open loop at {per_s:.0} requests/s over {connections} connection(s){}: rtt.* are timed from each request's intended send time, rtt.uncorrected.* from its actual send, rate.send_lag.* is the difference",
        if multiplexed { ", requests multiplexed on each" } else { ", one request in flight on each" }
    ));
    Ok(out)
}

/// How a stream ended, for its metrics.
struct Streamed {
    sent: u64,
    delivered: u64,
    payload_bytes: u64,
    corrupt: u64,
    start: u64,
    end: u64,
    rtts: Vec<u64>,
    handshake: u64,
    local_port: Option<u16>,
}

fn sending(sent: u64, count: Option<u64>, stop_at: Option<u64>) -> bool {
    count.is_none_or(|c| sent < c) && stop_at.is_none_or(|t| monotonic_ns() < t)
}

async fn stream_calls<C: Connect>(
    plan: &Plan,
    pattern: &Pattern,
    c: &C,
    echo: bool,
    count: Option<u64>,
    duration: Option<Duration>,
    ctx: &Ctx<'_>,
) -> Result<Outcome, WorkloadError> {
    let Connected {
        mut conn,
        handshake_ns,
        local_port,
    } = within(ctx.connect_timeout, "connecting", c.connect()).await?;
    let done = Cell::new(0u64);
    let total = count.unwrap_or(0);
    let mut rtts = Vec::new();
    let mut corrupt = 0u64;
    let start = monotonic_ns();
    let stop_at = duration.map(|d| start + d.as_nanos() as u64);
    let mut end = start;
    let work = async {
        let mut seq = 0u64;
        while sending(seq, count, stop_at) {
            let b = body(pattern, seq, plan.payload);
            let t = monotonic_ns();
            let reply = within(
                ctx.stall_timeout,
                "waiting for a reply",
                conn.call(seq, b.clone(), echo),
            )
            .await?;
            end = monotonic_ns();
            if echo {
                rtts.push(end - t);
                if reply != b {
                    corrupt += 1;
                }
            } else if !reply.is_empty() {
                corrupt += 1;
            }
            seq += 1;
            done.set(seq);
        }
        Ok::<u64, WorkloadError>(seq)
    };
    let sent = tokio::select! {
        r = work => r?,
        _ = report(&done, total, ctx) => unreachable!("reporting never ends"),
    };
    stream_outcome(
        Streamed {
            sent,
            delivered: sent,
            payload_bytes: sent * plan.payload as u64,
            corrupt,
            start,
            end,
            rtts,
            handshake: handshake_ns,
            local_port,
        },
        echo,
        duration,
        count,
        "each message was sent when the last was answered (one request in flight)",
    )
}

async fn stream_messages<S: Streams>(
    plan: &Plan,
    pattern: &Pattern,
    s: &S,
    echo: bool,
    count: Option<u64>,
    duration: Option<Duration>,
    ctx: &Ctx<'_>,
) -> Result<Outcome, WorkloadError> {
    let crate::client::Opened {
        mut tx,
        mut rx,
        handshake_ns: handshake,
        local_port,
    } = within(ctx.connect_timeout, "opening the stream", s.open(echo)).await?;
    let sent = Cell::new(0u64);
    let finished = Cell::new(false);
    let send_times: RefCell<Vec<u64>> = RefCell::new(Vec::new());
    let start = monotonic_ns();
    let stop_at = duration.map(|d| start + d.as_nanos() as u64);
    let sender = async {
        let mut seq = 0u64;
        while sending(seq, count, stop_at) {
            let b = body(pattern, seq, plan.payload);
            if echo {
                send_times.borrow_mut().push(monotonic_ns());
            }
            within(ctx.stall_timeout, "sending", tx.send(b)).await?;
            seq += 1;
            sent.set(seq);
        }
        finished.set(true);
        within(ctx.stall_timeout, "ending the stream", tx.finish()).await?;
        Ok::<(), WorkloadError>(())
    };
    let receiver = async {
        let mut k = 0u64;
        let mut corrupt = 0u64;
        let mut rtts = Vec::new();
        let mut end = start;
        loop {
            let next = within(ctx.stall_timeout, "waiting for the server", rx.recv()).await?;
            match next {
                Some(Incoming::Echo(b)) => {
                    end = monotonic_ns();
                    if let Some(t) = send_times.borrow().get(k as usize) {
                        rtts.push(end - t);
                    }
                    if b.len() != plan.payload || pattern.payload(k, plan.payload) != b {
                        corrupt += 1;
                    }
                    k += 1;
                }
                Some(Incoming::Summary(s)) => {
                    let end = if echo { end } else { monotonic_ns() };
                    return Ok((s, k, corrupt, rtts, end));
                }
                None if echo && finished.get() && k == sent.get() => {
                    let s = Summary {
                        messages: k,
                        payload_bytes: k * plan.payload as u64,
                        corrupt: 0,
                    };
                    return Ok((s, k, corrupt, rtts, end));
                }
                None => {
                    return Err(WorkloadError::Closed {
                        during: "the stream",
                    });
                }
            }
        }
    };
    let progress = async {
        loop {
            (ctx.progress)(sent.get(), count.unwrap_or(0));
            tokio::time::sleep(TICK).await;
        }
    };
    let (r_send, r_recv) = tokio::select! {
        r = async { tokio::join!(sender, receiver) } => r,
        _ = progress => unreachable!("reporting never ends"),
    };
    r_send?;
    let (summary, echoed, corrupt_echoes, rtts, end) = r_recv?;
    let sent = sent.get();
    let (delivered, corrupt) = if echo {
        (echoed, corrupt_echoes + summary.corrupt)
    } else {
        (summary.messages, summary.corrupt)
    };
    stream_outcome(
        Streamed {
            sent,
            delivered,
            payload_bytes: delivered * plan.payload as u64,
            corrupt,
            start,
            end,
            rtts,
            handshake,
            local_port,
        },
        echo,
        duration,
        count,
        if echo {
            "messages were sent without waiting; the stream ended with the last echo"
        } else {
            "messages were sent without waiting; the stream ended when the server's count arrived"
        },
    )
}

fn stream_outcome(
    s: Streamed,
    echo: bool,
    duration: Option<Duration>,
    count: Option<u64>,
    how: &str,
) -> Result<Outcome, WorkloadError> {
    let mut out = Outcome {
        local_port: s.local_port,
        ..Default::default()
    };
    out.put(CONNECT_HANDSHAKE, secs(s.handshake));
    let mut tally = Tally::new();
    tally.counts.received = s.delivered;
    tally.counts.lost = s.sent.saturating_sub(s.delivered);
    tally.counts.corrupt = s.corrupt;
    push_counts(&mut out, s.sent, &tally);
    let elapsed = s.end.saturating_sub(s.start);
    if elapsed > 0 && s.delivered > 0 {
        let t = secs(elapsed);
        out.put(THROUGHPUT_DURATION, t);
        out.put(THROUGHPUT_BITS_PER_S, s.payload_bytes as f64 * 8.0 / t);
        out.put(THROUGHPUT_MESSAGES_PER_S, s.delivered as f64 / t);
    }
    out.put(BYTES_PAYLOAD, s.payload_bytes as f64);
    if echo {
        push_load_rtts(&mut out, &s.rtts);
    }
    out.notes.push(format!("stream: {how}"));
    if let (Some(d), true) = (duration, count.is_none_or(|c| s.sent < c)) {
        out.notes.push(format!(
            "the stream sent for {} ({} messages)",
            wirebench_model::format_duration(d),
            s.sent
        ));
    }
    Ok(out)
}

/// What [`run_case`] refuses at a case's start, for the plugins' `Protocol::check`: the
/// plan's own limits, and a server started apart (`target=IP:PORT`) where the case cannot
/// reach it or it cannot do what the case asks.
pub fn check(case: &Case, at: &wirebench_protocol::Placement) -> Result<(), WorkloadError> {
    let plan = Plan::from_case(case, 0)?;
    let Some(addr) = crate::params::target(case).map_err(WorkloadError::Input)? else {
        return Ok(());
    };
    // A lab run's cases all run in the lab's client host, whose loopback is its own: the
    // server at `addr` on this machine's loopback is out of reach, and the lab's link
    // stands between two hosts of its own, not in front of a server outside them.
    if at.lab {
        return Err(WorkloadError::Input(format!(
            "target={addr} in a run with an emulated link: the link joins the lab's own two \
             hosts and cannot be put in front of a server running outside them; drop the link \
             parameters to measure {addr} on loopback, or set target=builtin (--target \
             builtin) to measure the case's own server behind the link"
        )));
    }
    if !plan.think.is_zero() {
        return Err(WorkloadError::Input(format!(
            "target={addr} with think time: a server started apart (wirebench serve) does not \
             think; set think=0 or target=builtin"
        )));
    }
    Ok(())
}

/// A whole case of a plugin whose server is ours: places `serve` for the case (in the
/// lab's server host, or on loopback), builds the client for its address, runs the
/// workload, stops the server, and adds what the server saw (one-way corruption,
/// refused requests) to the outcome. `overhead`: bytes each message adds above TCP,
/// about, for link budgets.
pub fn run_case<F, Fut, C, S>(
    env: &wirebench_protocol::Env,
    case: &Case,
    ctx: &Ctx,
    what: &str,
    serve: F,
    client: impl FnOnce(std::net::SocketAddr, &Plan) -> (C, Option<S>),
    overhead: u64,
) -> Result<Outcome, WorkloadError>
where
    F: FnOnce(tokio::net::TcpListener, std::sync::Arc<crate::Counters>, Behaviour) -> Fut
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
    C: Connect,
    S: Streams,
{
    let target = crate::params::target(case).map_err(WorkloadError::Input)?;
    if let Some(addr) = target {
        return run_against(env, case, ctx, addr, client, overhead);
    }
    let plan = Plan::from_case(case, env.seed)?;
    let b = plan.behaviour();
    let placed = crate::place(env.lab, what, move |l, c| serve(l, c, b))?;
    let (c, s) = client(placed.addr, &plan);
    let r = run(&plan, &c, s.as_ref(), overhead, ctx);
    let counters = placed.counters.clone();
    drop(placed);
    let mut out = r?;
    let seen = counters.snapshot();
    if let What::Stream { echo: false, .. } = plan.what
        && seen.corrupt > 0
    {
        for (name, m) in &mut out.metrics {
            if MESSAGES_CORRUPT.key().is(name) {
                m.value = m.value.max(seen.corrupt as f64);
            }
        }
    }
    let rejected = counters.rejected.load(Ordering::Relaxed);
    if rejected > 0 {
        let first = counters
            .first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_default();
        out.notes.push(format!(
            "the server closed or refused {rejected} connection(s) or request(s); the first: {first}"
        ));
    }
    Ok(out)
}

/// A case against a server already running (`target=IP:PORT`), e.g. `wirebench serve
/// --also`, which verifies payloads against the seed-0 pattern and has no think time:
/// the client uses seed 0 too, and a case that needs more of its server is refused.
fn run_against<C: Connect, S: Streams>(
    env: &wirebench_protocol::Env,
    case: &Case,
    ctx: &Ctx,
    addr: std::net::SocketAddr,
    client: impl FnOnce(std::net::SocketAddr, &Plan) -> (C, Option<S>),
    overhead: u64,
) -> Result<Outcome, WorkloadError> {
    check(
        case,
        &wirebench_protocol::Placement {
            lab: env.lab.is_some(),
            shard: env.shard.map(|s| (s.index, s.count)),
        },
    )?;
    let plan = Plan::from_case(case, 0)?;
    let (c, s) = client(addr, &plan);
    let mut out = run(&plan, &c, s.as_ref(), overhead, ctx)?;
    out.notes.push(format!(
        "against the server at {addr} (not started for the case); its own counts are not in the results"
    ));
    Ok(out)
}
