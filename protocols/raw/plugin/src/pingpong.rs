//! Ping-pong (study S1's latency test, Isode 2010; docs/studies.md): send one message, wait
//! for its echo, repeat.
//!
//! Metrics: `connect.handshake`, `connect.time` (connect to first byte), `rtt.first`,
//! `rtt.second`, `rtt.stable` (median of rounds after the first two), `rtt.min`,
//! `rtt.mean`, `rtt.p50/p90/p99/p999`, `rtt.max`, and message accounting. The server's
//! think time is subtracted from every round, so all `rtt.*` exclude it.

use crate::conn::{Conn, Wait};
use std::cell::RefCell;
use std::time::Duration;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::BYTES_RECEIVED;
use wirebench_model::metric::BYTES_SENT;
use wirebench_model::metric::CONNECT_HANDSHAKE;
use wirebench_model::metric::CONNECT_TIME;
use wirebench_protocol::stats::{interrupted, push_counts, push_rtts, secs};
use wirebench_protocol::{Ctx, Outcome, WorkloadError};
use wirebench_raw::control::{Behaviour, Open};
use wirebench_raw::engine;
use wirebench_raw::raw::Pattern;
use wirebench_raw_server::ControlClient;

#[derive(Debug, Clone)]
pub struct PingPong {
    pub protocol: String,
    pub payload: u32,
    pub rounds: u64,
    pub think: Duration,
    pub seed: u64,
    pub nodelay: bool,
}

impl PingPong {
    /// The ping-pong a case asks for.
    pub fn from_case(case: &wirebench_protocol::Case, seed: u64) -> Result<Self, WorkloadError> {
        let w = case.workload_params();
        Ok(PingPong {
            protocol: "raw".into(),
            payload: crate::payload_of(case)?,
            rounds: w.messages(),
            think: w.think(),
            seed,
            nodelay: crate::nodelay_of(case),
        })
    }
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
        engine
            .borrow_mut()
            .handle_input(now, data)
            .map_err(crate::invalid_frame)
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
                // On a fast path no receive ever times out, so the receive's own check
                // never runs: look here too, so Ctrl-C stops a case within 64 rounds.
                if ctx.shutdown.load(std::sync::atomic::Ordering::Relaxed) {
                    return Err(WorkloadError::Interrupted);
                }
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
        return Err(WorkloadError::Peer(format!(
            "the server reported a failed session: {e}"
        )));
    }
    let tally = engine.tally();

    let mut out = Outcome {
        local_port: conn.stream.local_addr().ok().map(|a| a.port()),
        congestion: wirebench_net::sock::congestion(&conn.stream),
        ..Default::default()
    };
    out.put(CONNECT_HANDSHAKE, secs(setup.handshake_ns));
    out.put(CONNECT_TIME, secs(setup.first_byte_ns));
    push_rtts(&mut out, engine.into_rtts());
    push_counts(&mut out, p.rounds, &tally);
    out.put(BYTES_SENT, conn.bytes_out as f64);
    out.put(BYTES_RECEIVED, conn.bytes_in as f64);
    if think_ns > 0 {
        out.notes.push(format!(
            "rtt.* exclude the responder's think time of {} per round",
            wirebench_model::format_seconds(p.think.as_secs_f64())
        ));
    }
    Ok(out)
}
