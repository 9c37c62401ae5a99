//! Stream: messages of `payload` bytes sent back to back, for `duration` or until `count`
//! have been sent, whichever comes first (at least one of them is given; neither means
//! `wirebench_protocol::params::STREAM_DURATION`). The duration bounds the sending; the case ends when the
//! receiver has the last message sent, so buffered data still drains after it.
//!
//! - `oneway`: the server counts and verifies; throughput is timed from our first send to
//!   the server's last received byte. On one kernel both read the same CLOCK_MONOTONIC, so
//!   the interval is exact; otherwise the server's first-to-last-byte interval is used and
//!   a note says so.
//! - `echo`: the server returns every message; throughput is timed from our first send to
//!   our receipt of the last echo, and each message's round trip under load is kept.
//!
//! `throughput.bits_per_s` counts payload bits delivered (each message once, also in
//! echo mode); `throughput.frame_bits_per_s` adds the 21-byte headers.

use crate::conn::{Conn, Wait};
use std::cell::RefCell;
use std::time::Duration;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::BYTES_PAYLOAD;
use wirebench_model::metric::BYTES_SENT;
use wirebench_model::metric::CONNECT_HANDSHAKE;
use wirebench_model::metric::CONNECT_TIME;
use wirebench_model::metric::RTT;
use wirebench_model::metric::THROUGHPUT_BITS_PER_S;
use wirebench_model::metric::THROUGHPUT_DURATION;
use wirebench_model::metric::THROUGHPUT_FRAME_BITS_PER_S;
use wirebench_model::metric::THROUGHPUT_MESSAGES_PER_S;
use wirebench_payload::tally::Tally;
use wirebench_protocol::stats::{histogram, mean, percentile, push_counts, secs};
use wirebench_protocol::{Ctx, Outcome, WorkloadError, tcpinfo};
use wirebench_raw::control::{Behaviour, Open, SessionReport};
use wirebench_raw::engine::Stream as StreamEngine;
use wirebench_raw::raw::{HEADER_LEN, Pattern};
use wirebench_raw_server::ControlClient;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    OneWay,
    Echo,
}

#[derive(Debug, Clone)]
pub struct Stream {
    pub protocol: String,
    pub mode: Mode,
    pub payload: u32,
    /// Messages to send; `None`: as many as `duration` allows.
    pub count: Option<u64>,
    /// How long to send; `None`: until `count` are sent.
    pub duration: Option<Duration>,
    pub seed: u64,
    pub nodelay: bool,
    /// How often the data connection's TCP_INFO is sampled (`tcp.info`); `None`: never.
    pub tcp_info: Option<Duration>,
}

impl Stream {
    /// The stream a case asks for.
    pub fn from_case(case: &wirebench_protocol::Case, seed: u64) -> Result<Self, WorkloadError> {
        let (count, duration) = match case.workload_params() {
            wirebench_protocol::Workload::Stream { count, duration } => (count, duration),
            wirebench_protocol::Workload::PingPong { .. }
            | wirebench_protocol::Workload::Load
            | wirebench_protocol::Workload::Connect => (None, None),
        };
        Ok(Stream {
            protocol: "raw".into(),
            mode: if wirebench_protocol::params::Mode::of(case).is_echo() {
                Mode::Echo
            } else {
                Mode::OneWay
            },
            payload: crate::payload_of(case)?,
            count,
            duration,
            seed,
            nodelay: crate::nodelay_of(case),
            tcp_info: tcpinfo::interval(case),
        })
    }
}

/// Messages between progress callbacks and shutdown checks on the send path.
const PROGRESS_EVERY: u64 = 4096;

pub fn run(ctl: &mut ControlClient, s: &Stream, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let (session, port) = ctl.open(Open {
        protocol: s.protocol.clone(),
        behaviour: if s.mode == Mode::Echo {
            Behaviour::Echo
        } else {
            Behaviour::Sink
        },
        max_payload: s.payload,
        think_ns: 0,
        seed: s.seed,
        verify: s.mode == Mode::OneWay,
        nodelay: s.nodelay,
    })?;
    let pattern = Pattern::new(s.seed, s.payload as usize);
    let echo = s.mode == Mode::Echo;
    let limit = s.count.unwrap_or(u64::MAX);
    // The protocol is the engine's; this function moves its bytes and keeps the time.
    let engine = RefCell::new(StreamEngine::new(&pattern, s.payload, limit, echo));
    let mut feed = |now: u64, data: &[u8]| -> Result<(), WorkloadError> {
        engine
            .borrow_mut()
            .handle_input(now, data)
            .map_err(crate::invalid_frame)
    };
    let (mut conn, setup) = Conn::open(
        ctl.peer_ip()?,
        port,
        s.nodelay,
        ctx,
        ctx.stall_timeout,
        &mut feed,
        &|| engine.borrow().hello_at(),
    )?;
    let sampler = tcpinfo::start(s.tcp_info, &conn.stream);

    let duration = match (s.count, s.duration) {
        (None, None) => Some(wirebench_protocol::params::STREAM_DURATION),
        (_, d) => d,
    };
    let duration_ns = duration.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let start_ns = monotonic_ns();
    let deadline = duration_ns.map(|d| start_ns.saturating_add(d));
    // Progress in messages when the count bounds the case, in milliseconds otherwise.
    let report = |seq: u64, now: u64| match duration_ns {
        Some(d) => (ctx.progress)((now - start_ns).min(d) / 1_000_000, d / 1_000_000),
        None => (ctx.progress)(seq, limit),
    };
    loop {
        // The frame's timestamp is read anyway; the deadline costs no extra clock read.
        let now = monotonic_ns();
        if deadline.is_some_and(|d| now >= d) {
            engine.borrow_mut().stop();
        }
        let Some(t) = engine.borrow_mut().poll_transmit(now) else {
            break;
        };
        conn.send(&t, echo, &mut feed)?;
        let seq = engine.borrow().sent() - 1;
        if seq % PROGRESS_EVERY == 0 {
            if ctx.shutdown.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            report(seq, now);
        }
    }
    let sent = engine.borrow().sent();
    if echo {
        while !engine.borrow().is_done() {
            if !conn.recv(Wait::Block, "waiting for echoes", &mut feed)? {
                return Err(WorkloadError::Closed {
                    during: "waiting for echoes",
                });
            }
        }
    }
    let engine = engine.into_inner();
    match duration_ns {
        Some(d) => (ctx.progress)(d / 1_000_000, d / 1_000_000),
        None => (ctx.progress)(sent, limit),
    }
    conn.finish_sending()?;
    let server = ctl.result(session)?;
    if let Some(e) = &server.error {
        return Err(WorkloadError::Peer(format!(
            "the server reported a failed session: {e}"
        )));
    }

    let mut out = Outcome {
        local_port: conn.stream.local_addr().ok().map(|a| a.port()),
        congestion: wirebench_net::sock::congestion(&conn.stream),
        ..Default::default()
    };
    tcpinfo::record(&mut out, sampler);
    out.put(CONNECT_HANDSHAKE, secs(setup.handshake_ns));
    out.put(CONNECT_TIME, secs(setup.first_byte_ns));
    let payload_bytes = push_throughput(
        &mut out,
        s,
        ctl.shared_clock,
        &server,
        &engine,
        start_ns,
        sent,
    );
    if let (Some(d), true) = (duration, sent < limit) {
        out.notes.push(format!(
            "the stream sent for {} ({sent} messages); the case ends when the last has arrived",
            wirebench_model::format_duration(d)
        ));
    }
    out.put(BYTES_PAYLOAD, payload_bytes as f64);
    out.put(BYTES_SENT, conn.bytes_out as f64);
    if echo {
        push_echo_rtts(&mut out, engine.rtts());
    }
    Ok(out)
}

/// Counts and throughput: from the echoes (echo), or from the server's report (one-way,
/// timed on the shared clock when there is one). Returns the payload bytes delivered.
fn push_throughput(
    out: &mut Outcome,
    s: &Stream,
    shared_clock: bool,
    server: &SessionReport,
    engine: &StreamEngine<'_>,
    start_ns: u64,
    sent: u64,
) -> u64 {
    let echo = s.mode == Mode::Echo;
    let (elapsed_ns, delivered, payload_bytes) = if echo {
        let tally = engine.tally();
        push_counts(out, sent, &tally);
        let n = tally.counts.received;
        (
            engine.last_arrival().saturating_sub(start_ns),
            n,
            n * s.payload as u64,
        )
    } else {
        let mut counts = Tally::new();
        counts.counts = server.counts.clone();
        counts.counts.lost = sent.saturating_sub(server.counts.received);
        push_counts(out, sent, &counts);
        let elapsed = if shared_clock && server.last_rx_ns > start_ns {
            server.last_rx_ns - start_ns
        } else {
            out.notes.push(
                "server and client do not share a clock: throughput is timed from the server's \
                 first to last received byte"
                    .into(),
            );
            server.last_rx_ns.saturating_sub(server.first_rx_ns)
        };
        (elapsed, server.counts.received, server.payload_bytes)
    };
    if elapsed_ns > 0 {
        let t = secs(elapsed_ns);
        out.put(THROUGHPUT_DURATION, t);
        out.put(THROUGHPUT_BITS_PER_S, payload_bytes as f64 * 8.0 / t);
        let frame_bytes = payload_bytes + delivered * HEADER_LEN as u64;
        out.put(THROUGHPUT_FRAME_BITS_PER_S, frame_bytes as f64 * 8.0 / t);
        out.put(THROUGHPUT_MESSAGES_PER_S, delivered as f64 / t);
    }
    payload_bytes
}

/// An echo stream's per-message round trips under load.
fn push_echo_rtts(out: &mut Outcome, rtts: &[u64]) {
    if rtts.is_empty() {
        return;
    }
    let mut sorted = rtts.to_vec();
    sorted.sort_unstable();
    if let Some(m) = mean(&sorted) {
        out.put(RTT.at("mean"), m / 1e9);
    }
    for (name, q) in [
        (RTT.at("p50"), 50.0),
        (RTT.at("p90"), 90.0),
        (RTT.at("p99"), 99.0),
        (RTT.at("max"), 100.0),
    ] {
        if let Some(v) = percentile(&sorted, q) {
            out.put(name, secs(v));
        }
    }
    out.histograms.push(("rtt".into(), histogram(rtts)));
    out.notes.push(
        "echo stream rtt.* are per-message round trips under full load (queueing included)".into(),
    );
}
