//! The QUIC workloads in our own ALPNs, our client against the builtin server (in
//! HTTP/3, against every server: [`crate::download`]):
//!
//! - ping-pong (ALPN `wirebench-echo`): `rounds` messages of exactly `payload` seeded
//!   random bytes, each echoed by the server, checked against what was sent
//!   (`messages.corrupt`). `quic.streams=one`: all on one bidirectional stream (RFC 9000
//!   §2.1), a round ending when `payload` bytes came back; `per-message`: a new stream
//!   per message, finished (FIN) after it, a round ending at the echo's FIN. Round 1 is
//!   timed from the connection's start, its first Initial (RFC 9000 §17.2.2), with the
//!   first message written as soon as the handshake completes (no stream may open
//!   before the server's transport parameters allow it, §4.6): it leaves with the
//!   client's Finished, so round 1 is the handshake's round trip and the echo's, what a
//!   client that connects to send sees. The other rounds are timed from their write.
//! - stream (ALPN `wirebench-sink`): after the handshake, `count` messages of `payload`
//!   bytes on one stream, then FIN; timed from the first write to the server's answer
//!   (the byte count it read), so the duration includes the answer's one-way trip, as
//!   CoAP's stream includes its last response.
//!
//! Every event is stamped with the time its datagram was read (see [`crate::client`]).
//! After the last round the engine's statistics go into the record (RFC 9002's loss,
//! congestion and RTT state) and the connection is closed with CONNECTION_CLOSE.

use crate::client::Conn;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::THROUGHPUT_BITS_PER_S;
use wirebench_model::metric::THROUGHPUT_DURATION;
use wirebench_model::metric::THROUGHPUT_MESSAGES_PER_S;
use wirebench_protocol::seeded::random_bytes;
use wirebench_protocol::stats::{interrupted, push_counts, push_rtts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::{Ctx, Outcome, TICK, Transport, WorkloadError};
use wirebench_quic_engine::proto::{Dir, ReadError, StreamId, WriteError};
use wirebench_quic_engine::{ALPN_ECHO, ALPN_H3, ALPN_SINK, Identity};

/// What a case runs.
#[derive(Debug, Clone)]
pub struct QuicRun {
    pub transport: wirebench_quic_engine::Transport,
    pub identity: Identity,
    pub server: SocketAddr,
    pub payload: usize,
    /// Ping-pong rounds, or stream messages.
    pub count: u64,
    pub think: Duration,
    pub stream: bool,
    /// `quic.streams=per-message`.
    pub per_message: bool,
    pub seed: u64,
    /// Where the client's qlog goes, if anywhere.
    pub qlog: Option<PathBuf>,
    /// The server, whose generated bodies an HTTP/3 response is checked against.
    pub kind: crate::peers::Kind,
    /// `quic.app=h3`: the workload in HTTP/3 ([`crate::download`]).
    pub h3: bool,
    /// `--workload connect`: this many fresh connections ([`crate::connect`]).
    pub connects: Option<u64>,
    /// Connect: the clients opening them at once.
    pub concurrency: u64,
    /// Connect, open loop: connections started per second.
    pub rate: Option<f64>,
    /// Connect over per-connection paths (`link.paths`): connection k leaves from the
    /// port TCP's connection k does, to cross the same path.
    pub common_paths: bool,
}

/// Where a connection's qlog goes.
pub type Qlog = Box<dyn std::io::Write + Send + Sync>;

/// Tracks progress so that a connection that stops moving fails the case.
pub(crate) struct Watch {
    last: Instant,
    seen: u64,
    stall: Duration,
}

impl Watch {
    pub(crate) fn new(ctx: &Ctx, transport: &wirebench_quic_engine::Transport) -> Watch {
        // The idle timeout is quinn's own end: give it the chance to say so first.
        let idle = transport.idle_timeout.unwrap_or_default();
        Watch {
            last: Instant::now(),
            seen: 0,
            stall: ctx.stall_timeout.max(idle) + Duration::from_secs(1),
        }
    }

    fn check(&mut self, conn: &Conn, during: &'static str) -> Result<(), WorkloadError> {
        let now = conn.driver.datagrams_in;
        if now != self.seen {
            self.seen = now;
            self.last = Instant::now();
        } else if self.last.elapsed() > self.stall {
            return Err(WorkloadError::Stalled {
                secs: self.stall.as_secs(),
                during,
            });
        }
        Ok(())
    }
}

/// One poll of the connection, with the stall and shutdown checks.
pub(crate) fn step(
    conn: &mut Conn,
    ctx: &Ctx,
    watch: &mut Watch,
    during: &'static str,
) -> Result<(), WorkloadError> {
    if ctx.shutdown.load(Ordering::Relaxed) {
        return Err(WorkloadError::Interrupted);
    }
    conn.poll(Instant::now() + TICK)?;
    watch.check(conn, during)
}

/// Writes all of `data` on `id`, serving the connection while flow or congestion
/// control holds it back.
pub(crate) fn write_all(
    conn: &mut Conn,
    id: StreamId,
    data: &[u8],
    ctx: &Ctx,
    watch: &mut Watch,
) -> Result<(), WorkloadError> {
    let mut off = 0;
    while off < data.len() {
        match conn.quic()?.send_stream(id).write(&data[off..]) {
            Ok(n) => off += n,
            Err(WriteError::Blocked) => step(conn, ctx, watch, "writing to the QUIC stream")?,
            Err(e) => {
                return Err(WorkloadError::Peer(format!(
                    "the server refused the stream: {e}"
                )));
            }
        }
    }
    Ok(())
}

/// Appends what `id` has to `into`; true once its FIN was read.
fn read_some(conn: &mut Conn, id: StreamId, into: &mut Vec<u8>) -> Result<bool, WorkloadError> {
    let mut recv = conn.quic()?.recv_stream(id);
    let Ok(mut chunks) = recv.read(true) else {
        return Ok(true);
    };
    let mut ended = false;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(c)) => into.extend_from_slice(&c.bytes),
            Ok(None) => {
                ended = true;
                break;
            }
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(code)) => {
                let _ = chunks.finalize();
                return Err(WorkloadError::Peer(format!(
                    "the server reset the stream (code {code})"
                )));
            }
        }
    }
    let _ = chunks.finalize();
    Ok(ended)
}

/// Reads `id` until `want` bytes came back (and its FIN, if `fin`); returns the bytes
/// and the time the datagram that completed them was read.
pub(crate) fn read_echo(
    conn: &mut Conn,
    id: StreamId,
    want: usize,
    fin: bool,
    ctx: &Ctx,
    watch: &mut Watch,
) -> Result<(Vec<u8>, u64), WorkloadError> {
    let mut got = Vec::with_capacity(want);
    let mut ended = false;
    loop {
        ended |= read_some(conn, id, &mut got)?;
        if got.len() >= want && (ended || !fin) {
            return Ok((got, conn.driver.read_ns()));
        }
        if ended {
            return Err(WorkloadError::Peer(format!(
                "the echo ended after {} of {want} bytes",
                got.len()
            )));
        }
        step(conn, ctx, watch, "waiting for the QUIC echo")?;
    }
}

pub(crate) fn wait_handshake(
    conn: &mut Conn,
    ctx: &Ctx,
    watch: &mut Watch,
) -> Result<(), WorkloadError> {
    while conn.handshake().completed.is_none() {
        step(conn, ctx, watch, "the QUIC handshake")?;
    }
    Ok(())
}

/// Runs one case's workload against the server at `run.server`.
pub fn run(run: &QuicRun, ctx: &Ctx, out: &mut Outcome) -> Result<(), WorkloadError> {
    let qlog: Option<Qlog> = match &run.qlog {
        Some(path) => Some(Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|error| WorkloadError::Io {
                during: "creating the qlog file",
                error,
            })?,
        ))),
        None => None,
    };
    let alpn = match (run.h3, run.stream) {
        (true, _) => ALPN_H3,
        (false, true) => ALPN_SINK,
        (false, false) => ALPN_ECHO,
    };
    out.transport = Transport::Udp;
    if let Some(n) = run.connects {
        // Many connections, each from a port of its own: the link's traffic is theirs
        // alone, so the wire figures count all of it (no `local_port`).
        return crate::connect::run(run, n, ctx, qlog, out);
    }
    let mut conn = Conn::open(
        run.transport.clone(),
        &run.identity,
        alpn,
        run.server,
        run.seed,
        qlog,
    )?;
    out.local_port = Some(conn.local_port);
    let r = if run.h3 {
        crate::download::run(run, ctx, &mut conn, out)
    } else if run.stream {
        stream(run, ctx, &mut conn, out)
    } else {
        ping_pong(run, ctx, &mut conn, out)
    };
    push_stats(&conn, out);
    if run.h3 {
        conn.close_h3();
    } else {
        conn.close();
    }
    r
}

fn ping_pong(
    run: &QuicRun,
    ctx: &Ctx,
    conn: &mut Conn,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let mut watch = Watch::new(ctx, &run.transport);
    let mut rng = run.seed | 1;
    let mut rtts = Vec::with_capacity(run.count as usize);
    let mut tally = Tally::new();
    let mut one: Option<StreamId> = None;
    // No stream opens before the server's transport parameters grant one (RFC 9000
    // §4.6), which arrive with its handshake flight.
    wait_handshake(conn, ctx, &mut watch)?;
    for i in 0..run.count {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(interrupted(rtts, run.count, tally));
        }
        if i == 2 {
            (ctx.mark_stable)();
        }
        let body = random_bytes(&mut rng, run.payload);
        let t0 = if i == 0 {
            conn.handshake().started
        } else {
            monotonic_ns()
        };
        let id = match one {
            Some(id) if !run.per_message => id,
            _ => {
                let id = conn.quic()?.streams().open(Dir::Bi).ok_or_else(|| {
                    WorkloadError::Peer("the server allows no more streams".into())
                })?;
                one = Some(id);
                id
            }
        };
        let round = write_all(conn, id, &body, ctx, &mut watch).and_then(|()| {
            if run.per_message {
                conn.quic()?
                    .send_stream(id)
                    .finish()
                    .map_err(|e| WorkloadError::Peer(format!("cannot finish the stream: {e}")))?;
            }
            read_echo(conn, id, body.len(), run.per_message, ctx, &mut watch)
        });
        match round {
            Ok((back, at)) => {
                tally.observe(i, back != body);
                rtts.push(at.saturating_sub(t0));
            }
            Err(WorkloadError::Interrupted) => return Err(interrupted(rtts, run.count, tally)),
            Err(e) => return Err(e),
        }
        end_round(conn, out, run, ctx, i)?;
    }
    end_rounds(out, run.count, tally, rtts);
    Ok(())
}

/// What follows each ping-pong round, over either application: the handshake's figures
/// after the first, progress, then the think time, during which the connection keeps
/// answering its peer (ACKs, PINGs) rather than sleeping.
pub(crate) fn end_round(
    conn: &mut Conn,
    out: &mut Outcome,
    run: &QuicRun,
    ctx: &Ctx,
    i: u64,
) -> Result<(), WorkloadError> {
    if i == 0 {
        push_handshake(conn, out);
    }
    (ctx.progress)(i + 1, run.count);
    if !run.think.is_zero() {
        let until = Instant::now() + run.think;
        while Instant::now() < until {
            conn.poll(until.min(Instant::now() + TICK))?;
        }
    }
    Ok(())
}

/// The rounds' counts and round trips, once all `count` are done.
pub(crate) fn end_rounds(out: &mut Outcome, count: u64, mut tally: Tally, rtts: Vec<u64>) {
    tally.finish(count);
    push_counts(out, count, &tally);
    push_rtts(out, rtts);
}

fn stream(
    run: &QuicRun,
    ctx: &Ctx,
    conn: &mut Conn,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let mut watch = Watch::new(ctx, &run.transport);
    wait_handshake(conn, ctx, &mut watch)?;
    (ctx.mark_stable)();
    let mut rng = run.seed | 1;
    // The sink counts, it does not check: one body serves every message.
    let body = random_bytes(&mut rng, run.payload);
    let id = conn
        .quic()?
        .streams()
        .open(Dir::Bi)
        .ok_or_else(|| WorkloadError::Peer("the server allows no streams".into()))?;
    let start = monotonic_ns();
    for i in 0..run.count {
        write_all(conn, id, &body, ctx, &mut watch)?;
        (ctx.progress)(i + 1, run.count);
    }
    conn.quic()?
        .send_stream(id)
        .finish()
        .map_err(|e| WorkloadError::Peer(format!("cannot finish the stream: {e}")))?;
    let (answer, at) = read_echo(conn, id, 8, true, ctx, &mut watch)?;
    push_handshake(conn, out);
    let counted = answer
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_be_bytes);
    let sent = run.count * run.payload as u64;
    let mut tally = Tally::new();
    // The stream is reliable: a short count is messages lost, which cannot happen
    // unless the server broke.
    let whole = counted.checked_div(run.payload as u64).unwrap_or(run.count);
    for i in 0..whole.min(run.count) {
        tally.observe(i, false);
    }
    tally.finish(run.count);
    push_counts(out, run.count, &tally);
    if counted != sent {
        return Err(WorkloadError::Peer(format!(
            "the server counted {counted} of the {sent} bytes sent"
        )));
    }
    if at > start {
        let t = secs(at - start);
        out.put(THROUGHPUT_DURATION, t);
        out.put(THROUGHPUT_BITS_PER_S, (sent * 8) as f64 / t);
        out.put(THROUGHPUT_MESSAGES_PER_S, run.count as f64 / t);
    }
    Ok(())
}

pub(crate) fn push_handshake(conn: &Conn, out: &mut Outcome) {
    let hs = conn.handshake();
    if let Some(t) = hs.completed {
        out.push(
            crate::HANDSHAKE_COMPLETE.name,
            secs(t.saturating_sub(hs.started)),
            "s",
        );
    }
    if let Some(t) = hs.confirmed {
        out.push(
            crate::HANDSHAKE.name,
            secs(t.saturating_sub(hs.started)),
            "s",
        );
    }
}

pub(crate) fn push_stats(conn: &Conn, out: &mut Outcome) {
    out.push(
        crate::DATAGRAMS.name,
        (conn.driver.datagrams_out + conn.driver.datagrams_in) as f64,
        "count",
    );
    let Some(s) = conn.stats() else {
        return;
    };
    let p = s.path;
    out.push(crate::SENT_PACKETS.name, p.sent_packets as f64, "count");
    out.push(crate::LOST_PACKETS.name, p.lost_packets as f64, "count");
    out.push(crate::LOST_BYTES.name, p.lost_bytes as f64, "B");
    out.push(
        crate::CONGESTION_EVENTS.name,
        p.congestion_events as f64,
        "count",
    );
    out.push(crate::CWND.name, p.cwnd as f64, "B");
    out.push(crate::PATH_RTT.name, p.rtt.as_secs_f64(), "s");
    out.push(crate::MIN_RTT.name, p.min_rtt.as_secs_f64(), "s");
}
