//! `--workload connect` in QUIC (study S3's question: the time to the first byte of a
//! fresh connection): `connects` connections, by `concurrency` clients at once (a thread
//! and an endpoint each, every connection from a client port of its own) taking the
//! next when their last is done, or when it is due in the open loop (`rate`). Each sends
//! one message of `payload` bytes to our echo server on a stream of its own and is timed
//! from its first Initial to the first byte of the echo, or in HTTP/3 (RFC 9114, any
//! server) one `GET /payload` timed to the response's end (its FIN: a small body comes
//! in the packet that starts it), then closed (RFC 9000 §10.2).
//!
//! 1-RTT: the message can only go once the handshake completes (RFC 9000 §4.6), with
//! the client's Finished, so the first byte comes after two round trips. With
//! `quic.0rtt=on` a connection resumes from a session ticket the server gave an earlier
//! one (RFC 8446 §2.2; the clients share one store, as a browser's connections do) and
//! sends the message as 0-RTT data with its first Initial (RFC 9001 §4.6): one round
//! trip. Only the connections that start before any ticket came have none.
//! Each connection's smoothed RTT (RFC 9002 §5.3; an idle path's round trip) gives its
//! times in round trips too (`ttfb.round_trips`), as the TCP connect workload reads them.

use crate::client::{Conn, Source};
use crate::download::{H3, get, status_ok};
use crate::workload::Qlog;
use crate::workload::{QuicRun, Watch, read_echo, step, write_all};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;
use wirebench_connect::metrics::{CONNECTS_OK, CONNECTS_PER_S, PATH_RTT, TTFB_ROUND_TRIPS};
use wirebench_connect::push_distribution;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::{RATE_ACHIEVED, RATE_OFFERED, RATE_SEND_LAG};
use wirebench_protocol::seeded::random_bytes;
use wirebench_protocol::stats::percentile;
use wirebench_protocol::stats::secs;
use wirebench_protocol::{Ctx, Outcome, TICK, WorkloadError};
use wirebench_quic_engine::proto::{Dir, StreamId};
use wirebench_quic_engine::{ALPN_ECHO, ALPN_H3, ClientTls};

/// One connection's figures, ns.
struct Timed {
    ttfb: u64,
    /// The connection's smoothed RTT at its end.
    path_rtt: u64,
    early: bool,
}

/// What the clients share: the next connection to open, the finished ones, the word
/// to stop.
struct Shared<'a> {
    ctx: &'a Ctx<'a>,
    connects: u64,
    /// Open loop: connection k is due at `t0 + k / rate`.
    rate: Option<f64>,
    t0: u64,
    next: AtomicU64,
    done: AtomicU64,
    /// Set by a client that failed, so that the others stop at their next connection.
    failed: AtomicBool,
    /// The clients' one TLS configuration: every client keeps its session tickets in
    /// it, and resumes from any.
    tls: ClientTls,
    /// Connection 0's qlog, taken by the client that opens it.
    qlog: std::sync::Mutex<Option<Qlog>>,
}

impl Shared<'_> {
    /// The next connection's index, or `None` when all are taken.
    fn take(&self) -> Option<u64> {
        let k = self.next.fetch_add(1, Relaxed);
        (k < self.connects).then_some(k)
    }

    /// Open loop: sleeps until connection `k` is due; how late it then is, ns.
    fn wait_due(&self, k: u64) -> Result<u64, WorkloadError> {
        let Some(rate) = self.rate else {
            return Ok(0);
        };
        let due = self.t0 + (k as f64 / rate * 1e9) as u64;
        loop {
            if self.ctx.shutdown.load(Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            let now = monotonic_ns();
            if now >= due {
                return Ok(now - due);
            }
            std::thread::sleep(Duration::from_nanos(due - now).min(TICK));
        }
    }
}

/// One client's connections, how late each started (open loop), and (client 0) its
/// last connection's engine statistics.
#[derive(Default)]
struct Share {
    timed: Vec<Timed>,
    lag: Vec<u64>,
    stats: Outcome,
}

/// Runs the connections: `clients` client threads, each an endpoint of its own (one
/// TLS configuration, so one store of session tickets, shared by all) taking the next
/// connection when its last is done (closed loop) or when the next is due (open loop,
/// `rate`: at most `clients` in flight). Connection 0 writes the qlog, if asked for;
/// the last connection of client 0 gives the engine's statistics. The case thread's
/// network namespace is the clients' too (a thread starts in its parent's).
pub fn run(
    run: &QuicRun,
    connects: u64,
    ctx: &Ctx,
    qlog: Option<Qlog>,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let clients = run.concurrency.clamp(1, connects);
    let alpn = if run.h3 { ALPN_H3 } else { ALPN_ECHO };
    let tls = ClientTls::new(&run.identity.cert, alpn, run.transport.zero_rtt)
        .map_err(|e| WorkloadError::Input(format!("QUIC client: {e}")))?;
    let shared = Shared {
        ctx,
        connects,
        rate: run.rate,
        t0: monotonic_ns(),
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        failed: AtomicBool::new(false),
        tls,
        qlog: std::sync::Mutex::new(qlog),
    };
    let results: Vec<(Share, Result<(), WorkloadError>)> = std::thread::scope(|s| {
        let shared = &shared;
        let others: Vec<_> = (1..clients)
            .map(|w| {
                s.spawn(move || {
                    let mut share = Share::default();
                    let r = client(run, shared, w, &mut share);
                    (share, r)
                })
            })
            .collect();
        let mut share = Share::default();
        let first = client(run, shared, 0, &mut share);
        std::iter::once((share, first))
            .chain(others.into_iter().map(|h| {
                h.join().unwrap_or_else(|_| {
                    let panicked = "a QUIC connect client panicked".to_string();
                    (Share::default(), Err(WorkloadError::Environment(panicked)))
                })
            }))
            .collect()
    });
    let elapsed = monotonic_ns() - shared.t0;
    let mut all = Share::default();
    let mut error = None;
    for (share, r) in results {
        all.timed.extend(share.timed);
        all.lag.extend(share.lag);
        out.metrics.extend(share.stats.metrics);
        match r {
            Ok(()) => {}
            // A client's own failure says more than the others' stopping after it.
            Err(WorkloadError::Interrupted) => {
                error.get_or_insert(WorkloadError::Interrupted);
            }
            Err(e) => {
                if matches!(error, None | Some(WorkloadError::Interrupted)) {
                    error = Some(e);
                }
            }
        }
    }
    match error {
        None => {
            record(run, &all, clients, elapsed, out);
            Ok(())
        }
        Some(WorkloadError::Interrupted)
            if !all.timed.is_empty() && !shared.failed.load(Relaxed) =>
        {
            let mut partial = Outcome::default();
            record(run, &all, clients, elapsed, &mut partial);
            partial.notes.push(format!(
                "interrupted after {} of {connects} connections: the metrics cover the finished ones",
                all.timed.len()
            ));
            Err(WorkloadError::InterruptedAfter(Box::new(partial)))
        }
        Some(e) => Err(e),
    }
}

/// One client's connections on one endpoint, opened at its first, each resuming from a
/// ticket of an earlier connection of any client when one has come. Over per-connection
/// paths connection k leaves from TCP's port for k, and so crosses the path TCP's
/// connection k of another case crosses.
fn client(run: &QuicRun, shared: &Shared, w: u64, share: &mut Share) -> Result<(), WorkloadError> {
    let ctx = shared.ctx;
    let alpn = if run.h3 { ALPN_H3 } else { ALPN_ECHO };
    let mut rng = (run.seed ^ w) | 1;
    let mut conn: Option<Conn> = None;
    while let Some(k) = shared.take() {
        if shared.failed.load(Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        let lag = shared.wait_due(k)?;
        if shared.rate.is_some() {
            share.lag.push(lag);
        }
        let port = if run.common_paths {
            wirebench_connect::source_port(k)
        } else {
            0
        };
        let (conn, early) = match &mut conn {
            Some(c) => {
                let early = c.reconnect(&run.identity, alpn, run.server, port)?;
                (c, early)
            }
            slot @ None => {
                let qlog = if k == 0 {
                    shared.qlog.lock().ok().and_then(|mut q| q.take())
                } else {
                    None
                };
                let from = Source {
                    port,
                    tls: Some(shared.tls.clone()),
                };
                let seed = run.seed ^ w.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let c = Conn::open_from(
                    run.transport.clone(),
                    &run.identity,
                    alpn,
                    run.server,
                    seed,
                    qlog,
                    from,
                )?;
                let c = slot.insert(c);
                let early = c.quic()?.has_0rtt();
                (c, early)
            }
        };
        let body = random_bytes(&mut rng, run.payload);
        let t = if run.h3 {
            one_h3(run, ctx, conn, early)
        } else {
            one(run, ctx, conn, &body, early)
        };
        if w == 0 {
            share.stats = Outcome::default();
            crate::workload::push_stats(conn, &mut share.stats);
        }
        if run.h3 {
            conn.close_h3();
        } else {
            conn.close();
        }
        match t {
            Ok(t) => share.timed.push(t),
            Err(e) => {
                if !matches!(e, WorkloadError::Interrupted) {
                    shared.failed.store(true, Relaxed);
                }
                return Err(e);
            }
        }
        let done = shared.done.fetch_add(1, Relaxed) + 1;
        if done == 1 {
            // Later connections may resume: the set-up traffic before is the first's.
            (ctx.mark_stable)();
        }
        if done % 64 == 0 || done == shared.connects {
            (ctx.progress)(done, shared.connects);
        }
    }
    Ok(())
}

/// The connections' figures into the record.
fn record(run: &QuicRun, all: &Share, clients: u64, elapsed: u64, out: &mut Outcome) {
    let timed = &all.timed;
    let n = timed.len() as u64;
    out.put(CONNECTS_OK, n as f64);
    if elapsed > 0 {
        out.put(CONNECTS_PER_S, n as f64 / secs(elapsed));
    }
    let ttfb: Vec<u64> = timed.iter().map(|t| t.ttfb).collect();
    wirebench_connect::push_ttfb(out, &ttfb);
    if timed.iter().all(|t| t.path_rtt > 0) {
        let paths: Vec<u64> = timed.iter().map(|t| t.path_rtt).collect();
        push_distribution(out, PATH_RTT, &paths);
        let trips: Vec<f64> = timed
            .iter()
            .map(|t| t.ttfb as f64 / t.path_rtt as f64)
            .collect();
        wirebench_connect::push_ratios(out, TTFB_ROUND_TRIPS, trips);
    }
    if let Some(rate) = run.rate {
        out.put_in(RATE_OFFERED, rate, "conn/s");
        if elapsed > 0 {
            out.put_in(RATE_ACHIEVED, n as f64 / secs(elapsed), "conn/s");
        }
        let mut lag = all.lag.clone();
        lag.sort_unstable();
        for (q_name, q) in [("p50", 50.0), ("p99", 99.0), ("max", 100.0)] {
            if let Some(v) = percentile(&lag, q) {
                out.put(RATE_SEND_LAG.at(q_name), secs(v));
            }
        }
        out.notes.push(format!(
            "open loop: a connection every {:.3} ms, at most {clients} in flight (a client each)",
            1e3 / rate
        ));
    }
    let accepted = timed.iter().filter(|t| t.early).count();
    out.put(crate::ZERO_RTT_ACCEPTED, accepted as f64);
    out.notes.push(if run.transport.zero_rtt {
        format!("0-RTT: {accepted} of {n} connections sent their message with the first Initial and the server accepted it (those started before any ticket came had none)")
    } else {
        format!("{n} connections, each 1-RTT: the message after the handshake")
    });
    out.rounds = Some(ttfb);
}

/// One connection: the message (at once in 0-RTT, or once the handshake completes), the
/// first byte of its echo, the rest checked.
fn one(
    run: &QuicRun,
    ctx: &Ctx,
    conn: &mut Conn,
    body: &[u8],
    early: bool,
) -> Result<Timed, WorkloadError> {
    let mut watch = Watch::new(ctx, &run.transport);
    let t0 = conn.handshake().started;
    if !early {
        crate::workload::wait_handshake(conn, ctx, &mut watch)?;
    }
    let mut id = send(conn, body, ctx, &mut watch)?;
    if early {
        // The echo is 1-RTT data, readable only once the handshake completes, which is
        // also when the client learns whether the server took its 0-RTT data. A server
        // may refuse it (an unknown or used ticket, RFC 9001 §4.6.2), and quinn-proto then
        // drops the streams it carried: the message goes again, as a client's must.
        crate::workload::wait_handshake(conn, ctx, &mut watch)?;
        if !conn.quic()?.accepted_0rtt() {
            id = send(conn, body, ctx, &mut watch)?;
        }
    }
    let (first, first_at) = read_echo(conn, id, 1, false, ctx, &mut watch)?;
    let (rest, _) = read_echo(
        conn,
        id,
        body.len().saturating_sub(first.len()),
        true,
        ctx,
        &mut watch,
    )?;
    if first.iter().chain(&rest).ne(body.iter()) {
        return Err(WorkloadError::Peer(
            "the echo differs from the message".into(),
        ));
    }
    finish(conn, ctx, &mut watch, t0, first_at, early)
}

/// Opens a stream and writes `body` on it, finished.
fn send(
    conn: &mut Conn,
    body: &[u8],
    ctx: &Ctx,
    watch: &mut Watch,
) -> Result<StreamId, WorkloadError> {
    let id = conn
        .quic()?
        .streams()
        .open(Dir::Bi)
        .ok_or_else(|| WorkloadError::Peer("the server allows no stream".into()))?;
    write_all(conn, id, body, ctx, watch)?;
    conn.quic()?
        .send_stream(id)
        .finish()
        .map_err(|e| WorkloadError::Peer(format!("finishing the stream: {e}")))?;
    Ok(id)
}

/// The connection's figures once its handshake is confirmed (RFC 9001 §4.1.2): the server
/// sends its session tickets when it has the client's Finished, and HANDSHAKE_DONE with
/// them. A 0-RTT connection's answer comes a round trip earlier, and closing then would
/// leave it without a ticket to give the next connection (two in three would resume).
fn finish(
    conn: &mut Conn,
    ctx: &Ctx,
    watch: &mut Watch,
    t0: u64,
    first_at: u64,
    early: bool,
) -> Result<Timed, WorkloadError> {
    while conn.handshake().confirmed.is_none() {
        step(conn, ctx, watch, "the QUIC handshake")?;
    }
    let accepted = early && conn.quic()?.accepted_0rtt();
    let path_rtt = conn
        .stats()
        .map(|s| s.path.rtt.as_nanos() as u64)
        .unwrap_or(0);
    Ok(Timed {
        ttfb: first_at.saturating_sub(t0),
        path_rtt,
        early: accepted,
    })
}

/// One connection in HTTP/3: the control stream and the request (at once in 0-RTT, or
/// once the handshake completes), the response read whole and checked.
fn one_h3(run: &QuicRun, ctx: &Ctx, conn: &mut Conn, early: bool) -> Result<Timed, WorkloadError> {
    let mut watch = Watch::new(ctx, &run.transport);
    let t0 = conn.handshake().started;
    if !early {
        crate::workload::wait_handshake(conn, ctx, &mut watch)?;
    }
    let path = format!("/{}", run.payload);
    let mut h3c = H3::open(conn)?;
    let mut r = get(
        conn,
        &mut h3c,
        &path,
        run.kind.body(),
        ctx,
        &mut watch,
        &mut |_| {},
    );
    if early && r.is_err() && conn.handshake().completed.is_some() && !conn.quic()?.accepted_0rtt()
    {
        // The server refused the 0-RTT data and quinn-proto dropped its streams (see
        // `one`): the control stream and the request go again in 1-RTT.
        h3c = H3::open(conn)?;
        r = get(
            conn,
            &mut h3c,
            &path,
            run.kind.body(),
            ctx,
            &mut watch,
            &mut |_| {},
        );
    }
    let r = r?;
    status_ok(&r, &path, run.kind)?;
    if r.bytes != run.payload as u64 || !r.intact {
        return Err(WorkloadError::Peer(format!(
            "{} answered GET {path} with {} bytes{}",
            run.kind.name(),
            r.bytes,
            if r.intact { "" } else { " not its generator's" }
        )));
    }
    finish(conn, ctx, &mut watch, t0, r.at, early)
}
