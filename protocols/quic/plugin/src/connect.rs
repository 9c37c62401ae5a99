//! `--workload connect` in QUIC (study S3's question: the time to the first byte of a
//! fresh connection): `connects` connections one after another from one client
//! endpoint to our echo server, each sending one message of `payload` bytes on a stream
//! of its own and timed from its first Initial to the first byte of the echo, then
//! closed (RFC 9000 §10.2).
//!
//! 1-RTT: the message can only go once the handshake completes (RFC 9000 §4.6), with
//! the client's Finished, so the first byte comes after two round trips. With
//! `quic.0rtt=on` every connection after the first resumes from a session ticket the
//! server gave an earlier one (RFC 8446 §2.2) and sends the message as 0-RTT data with
//! its first Initial (RFC 9001 §4.6): one round trip.
//! Each connection's smoothed RTT (RFC 9002 §5.3; an idle path's round trip) gives its
//! times in round trips too (`ttfb.round_trips`), as the TCP connect workload reads them.

use crate::client::Conn;
use crate::workload::{QuicRun, Watch, read_echo, step, write_all};
use wirebench_connect::metrics::{CONNECTS_OK, CONNECTS_PER_S, PATH_RTT, TTFB, TTFB_ROUND_TRIPS};
use wirebench_connect::push_distribution;
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::seeded::random_bytes;
use wirebench_protocol::stats::secs;
use wirebench_protocol::{Ctx, Outcome, WorkloadError};
use wirebench_quic_engine::ALPN_ECHO;
use wirebench_quic_engine::proto::Dir;

/// One connection's figures, ns.
struct Timed {
    ttfb: u64,
    /// The connection's smoothed RTT at its end.
    path_rtt: u64,
    early: bool,
}

/// Runs the connections; the first uses `conn` as opened.
pub fn run(
    run: &QuicRun,
    connects: u64,
    ctx: &Ctx,
    conn: &mut Conn,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let mut rng = run.seed | 1;
    let started = monotonic_ns();
    let mut all = Vec::with_capacity(connects as usize);
    let mut early = conn.quic()?.has_0rtt();
    for i in 0..connects {
        if i > 0 {
            early = conn.reconnect(&run.identity, ALPN_ECHO, run.server)?;
        }
        if i == 1 {
            (ctx.mark_stable)();
        }
        let body = random_bytes(&mut rng, run.payload);
        let t = one(run, ctx, conn, &body, early)?;
        conn.close();
        all.push(t);
    }
    let elapsed = monotonic_ns() - started;
    let n = all.len() as u64;
    out.put(CONNECTS_OK, n as f64);
    if elapsed > 0 {
        out.put(CONNECTS_PER_S, n as f64 / secs(elapsed));
    }
    let ttfb: Vec<u64> = all.iter().map(|t| t.ttfb).collect();
    push_distribution(out, TTFB, &ttfb);
    if all.iter().all(|t| t.path_rtt > 0) {
        let paths: Vec<u64> = all.iter().map(|t| t.path_rtt).collect();
        push_distribution(out, PATH_RTT, &paths);
        let trips: Vec<f64> = all
            .iter()
            .map(|t| t.ttfb as f64 / t.path_rtt as f64)
            .collect();
        wirebench_connect::push_ratios(out, TTFB_ROUND_TRIPS, trips);
    }
    let accepted = all.iter().filter(|t| t.early).count();
    out.put(crate::ZERO_RTT_ACCEPTED, accepted as f64);
    out.notes.push(if run.transport.zero_rtt {
        format!("0-RTT: {accepted} of {n} connections sent their message with the first Initial and the server accepted it (the first has no ticket yet)")
    } else {
        format!("{n} connections, each 1-RTT: the message after the handshake")
    });
    out.rounds = Some(ttfb);
    Ok(())
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
    let id = conn
        .quic()?
        .streams()
        .open(Dir::Bi)
        .ok_or_else(|| WorkloadError::Peer("the server allows no stream".into()))?;
    write_all(conn, id, body, ctx, &mut watch)?;
    conn.quic()?
        .send_stream(id)
        .finish()
        .map_err(|e| WorkloadError::Peer(format!("finishing the stream: {e}")))?;
    let (first, first_at) = read_echo(conn, id, 1, false, ctx, &mut watch)?;
    let (rest, _) = read_echo(conn, id, body.len() - first.len(), true, ctx, &mut watch)?;
    if first.iter().chain(&rest).ne(body.iter()) {
        return Err(WorkloadError::Peer(
            "the echo differs from the message".into(),
        ));
    }
    // Closed only once the handshake is confirmed (RFC 9001 §4.1.2): the server sends
    // its session tickets when it has the client's Finished, and HANDSHAKE_DONE with
    // them. A 0-RTT connection's echo comes a round trip earlier, and closing then would
    // leave it without a ticket to give the next connection (two in three would resume).
    while conn.handshake().confirmed.is_none() {
        step(conn, ctx, &mut watch, "the QUIC handshake")?;
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
