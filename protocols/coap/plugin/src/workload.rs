//! The CoAP workloads, our client against the case's server:
//!
//! - ping-pong: `rounds` times, a POST (PUT for libcoap, whose echoing resource takes
//!   PUT) of exactly `payload` seeded random bytes to the server's echo resource, timed
//!   from the request's first transmission to the datagram that completes its response
//!   (RFC 7252 §5.2.1: piggybacked in the ACK); the body that comes back is checked
//!   against the one sent (`messages.corrupt`). Confirmable or Non-confirmable
//!   (`coap.type`, §4.2, §4.3). A request that times out (MAX_RETRANSMIT unanswered,
//!   §4.2) is a lost message, counted in `coap.timeouts`, and the rounds go on.
//! - stream: `count` block-wise uploads (RFC 7959 §2.5, Block1 in `coap.block`-byte
//!   blocks) of `payload` bytes each to the server's upload resource, one after the other
//!   (NSTART 1, §4.7: one block in flight), timed from the first block's transmission to
//!   the last upload's final response.
//!
//! After the last request the client keeps reading for a round trip more (at most 5 s)
//! when some retransmission is not yet shown spurious: the ACK of a retransmitted copy
//! arrives a round trip after the original's, and only an ACK read counts (see the
//! engine's `client` module on counting spurious retransmissions).

use crate::client::Conn;
use crate::peers::Kind;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wirebench_coap_engine::{
    ClientConfig, Code, Event, Failure, Request, RequestId, Response, Szx, TransmissionParams,
};
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::THROUGHPUT_BITS_PER_S;
use wirebench_model::metric::THROUGHPUT_DURATION;
use wirebench_model::metric::THROUGHPUT_MESSAGES_PER_S;
use wirebench_protocol::seeded::random_bytes;
use wirebench_protocol::stats::{interrupted, push_counts, push_rtts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::{Ctx, Outcome, TICK, Transport, WorkloadError};

/// The largest ping-pong payload sent whole and echoed: one block. RFC 7252 §4.6 asks a
/// message to fit one IP packet (1152 bytes of message is its estimate), and above that
/// RFC 7959's blocks are CoAP's way: a larger ping-pong payload goes as a Block1 upload
/// in `coap.block`-byte blocks, timed to its final response, and is not echoed.
pub const ECHO_MAX: usize = 1024;

/// What a case runs.
#[derive(Debug, Clone)]
pub struct CoapRun {
    pub kind: Kind,
    pub server: SocketAddr,
    pub confirmable: bool,
    pub params: TransmissionParams,
    pub payload: usize,
    /// Ping-pong rounds, or stream uploads.
    pub count: u64,
    pub think: Duration,
    pub stream: bool,
    /// The stream's Block1 size (RFC 7959 §2.2: 16 to 1024 bytes).
    pub block: Szx,
    pub seed: u64,
}

impl CoapRun {
    fn request(&self, body: Vec<u8>) -> Request {
        let mut r = Request::get(self.server, self.kind.echo_path(), self.confirmable);
        r.method = match self.kind {
            Kind::Libcoap => Code::PUT,
            Kind::Builtin | Kind::Aiocoap => Code::POST,
        };
        r.payload = body;
        if !self.echoes() {
            r.path = self.kind.upload_path().into();
            r.method = Code::PUT;
            r.block_size = Some(self.block);
        }
        r
    }

    /// Whether a request is echoed: a ping-pong's of at most [`ECHO_MAX`] bytes. Larger
    /// ones, and a stream's, go block-wise to the upload resource.
    pub fn echoes(&self) -> bool {
        !self.stream && self.payload <= ECHO_MAX
    }

    /// The method and resource of the requests, in words.
    pub fn target(&self) -> String {
        let r = self.request(Vec::new());
        format!(
            "{} /{}",
            if r.method == Code::PUT { "PUT" } else { "POST" },
            r.path
        )
    }

    /// The longest a request may take before the engine gives up on it itself
    /// (MAX_TRANSMIT_WAIT, §4.8.2), per exchange, plus the case's stall timeout.
    fn stall(&self, ctx: &Ctx) -> Duration {
        ctx.stall_timeout
            .max(Duration::from_nanos(self.params.max_transmit_wait_ns()))
            + Duration::from_secs(1)
    }
}

/// What one request came to.
enum Done {
    Response(u64, Response),
    Timeout,
}

/// Serves `conn` until request `id` completes.
fn wait_for(
    conn: &mut Conn,
    id: RequestId,
    stall: Duration,
    ctx: &Ctx,
) -> Result<Done, WorkloadError> {
    let mut last = (conn.engine.client.stats().clone(), Instant::now());
    loop {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        match conn.poll(Instant::now() + TICK)? {
            Some((at, Event::Response(r))) if r.id == id => return Ok(Done::Response(at, r)),
            Some((_, Event::Failed { id: f, failure, .. })) if f == id => {
                return match failure {
                    Failure::Timeout => Ok(Done::Timeout),
                    Failure::Reset => Err(WorkloadError::Peer(
                        "the server answered the request with a Reset (RFC 7252 §4.2)".into(),
                    )),
                    Failure::BadBlock => Err(WorkloadError::Peer(
                        "the server sent a block out of order or a body over the limit (RFC 7959 §2.4)"
                            .into(),
                    )),
                };
            }
            Some(_) => {}
            None => {}
        }
        // Any exchange finished or datagram read is progress; a block-wise upload of
        // many blocks may take long in all.
        let stats = conn.engine.client.stats();
        if *stats != last.0 {
            last = (stats.clone(), Instant::now());
        } else if last.1.elapsed() > stall {
            return Err(WorkloadError::Stalled {
                secs: stall.as_secs(),
                during: "waiting for the CoAP server's response",
            });
        }
    }
}

/// A response's code must be a success (2.xx): any other is the server refusing us.
fn check_code(run: &CoapRun, r: &Response) -> Result<(), WorkloadError> {
    if r.code.class() == 2 {
        return Ok(());
    }
    Err(WorkloadError::Peer(format!(
        "{} answered {} to {}",
        run.kind.name(),
        r.code,
        run.target()
    )))
}

/// Runs one case's workload against the server at `run.server`.
pub fn run(run: &CoapRun, ctx: &Ctx, out: &mut Outcome) -> Result<(), WorkloadError> {
    let mut config = ClientConfig::new(run.params);
    config.max_body = run.payload.max(1 << 20);
    let mut conn = Conn::open(config, run.seed, run.server)?;
    out.local_port = Some(conn.local_port);
    out.transport = Transport::Udp;
    if run.stream {
        stream(run, ctx, &mut conn, out)?;
    } else {
        ping_pong(run, ctx, &mut conn, out)?;
    }
    linger(&mut conn, ctx)?;
    push_stats(&conn, out);
    Ok(())
}

fn ping_pong(
    run: &CoapRun,
    ctx: &Ctx,
    conn: &mut Conn,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let stall = run.stall(ctx);
    let mut rng = run.seed | 1;
    let mut rtts = Vec::with_capacity(run.count as usize);
    let mut tally = Tally::new();
    for i in 0..run.count {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(interrupted(rtts, run.count, tally));
        }
        if i == 2 {
            (ctx.mark_stable)();
        }
        let body = random_bytes(&mut rng, run.payload);
        let t0 = monotonic_ns();
        let id = conn
            .engine
            .client
            .request(run.request(body.clone()))
            .map_err(|e| WorkloadError::Input(format!("CoAP request: {e}")))?;
        if i == 0 {
            // The request's datagram: what the link carries beyond UDP/IP each way.
            out.push(
                crate::REQUEST_BYTES.name,
                request_bytes(run, &body) as f64,
                "B",
            );
        }
        match wait_for(conn, id, stall, ctx) {
            Ok(Done::Response(at, r)) => {
                check_code(run, &r)?;
                tally.observe(i, run.echoes() && r.payload != body);
                rtts.push(at.saturating_sub(t0));
            }
            // Lost: no round trip, counted in messages.lost and coap.timeouts.
            Ok(Done::Timeout) => {}
            Err(WorkloadError::Interrupted) => return Err(interrupted(rtts, run.count, tally)),
            Err(e) => return Err(e),
        }
        (ctx.progress)(i + 1, run.count);
        if !run.think.is_zero() {
            // Reading on: a late ACK between rounds is still counted.
            let until = Instant::now() + run.think;
            while Instant::now() < until {
                conn.poll(until.min(Instant::now() + TICK))?;
            }
        }
    }
    tally.finish(run.count);
    push_counts(out, run.count, &tally);
    push_rtts(out, rtts);
    Ok(())
}

/// The first request's datagram size: the header (4), the token, the options and the
/// payload marker; encoded as the engine encodes it.
fn request_bytes(run: &CoapRun, body: &[u8]) -> usize {
    let mut m = wirebench_coap_engine::Message::new(
        if run.confirmable {
            wirebench_coap_engine::Type::Confirmable
        } else {
            wirebench_coap_engine::Type::NonConfirmable
        },
        run.request(Vec::new()).method,
        0,
    );
    m.token = vec![0; ClientConfig::default().token_len];
    m.set_path(&run.request(Vec::new()).path);
    m.payload = body.to_vec();
    m.encode().map_or(0, |d| d.len())
}

fn stream(
    run: &CoapRun,
    ctx: &Ctx,
    conn: &mut Conn,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let stall = run.stall(ctx);
    let mut rng = run.seed | 1;
    let mut tally = Tally::new();
    (ctx.mark_stable)();
    let start = monotonic_ns();
    let mut last = start;
    let mut exchanges = 0u64;
    for i in 0..run.count {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        let body = random_bytes(&mut rng, run.payload);
        let id = conn
            .engine
            .client
            .request(run.request(body))
            .map_err(|e| WorkloadError::Input(format!("CoAP request: {e}")))?;
        match wait_for(conn, id, stall, ctx)? {
            Done::Response(at, r) => {
                check_code(run, &r)?;
                tally.observe(i, false);
                exchanges += u64::from(r.exchanges);
                last = at;
            }
            Done::Timeout => {}
        }
        (ctx.progress)(i + 1, run.count);
    }
    tally.finish(run.count);
    push_counts(out, run.count, &tally);
    out.push(crate::EXCHANGES.name, exchanges as f64, "count");
    if last > start {
        let t = secs(last - start);
        out.put(THROUGHPUT_DURATION, t);
        out.put(
            THROUGHPUT_BITS_PER_S,
            (tally.counts.received * run.payload as u64 * 8) as f64 / t,
        );
        out.put(THROUGHPUT_MESSAGES_PER_S, tally.counts.received as f64 / t);
    }
    Ok(())
}

/// Reads on for a round trip (the longest seen, at most 5 s) while retransmissions are
/// not all shown spurious, so the extra ACKs of the last request count.
fn linger(conn: &mut Conn, ctx: &Ctx) -> Result<(), WorkloadError> {
    let s = conn.engine.client.stats();
    if s.retransmissions == s.spurious_retransmissions {
        return Ok(());
    }
    let wait = Duration::from_nanos(s.round_trip_max_ns).min(Duration::from_secs(5));
    let until = Instant::now() + wait;
    while Instant::now() < until && !ctx.shutdown.load(Ordering::Relaxed) {
        conn.poll(until.min(Instant::now() + TICK))?;
        let s = conn.engine.client.stats();
        if s.retransmissions == s.spurious_retransmissions {
            break;
        }
    }
    Ok(())
}

fn push_stats(conn: &Conn, out: &mut Outcome) {
    let s = conn.engine.client.stats();
    out.push(
        crate::RETRANSMISSIONS.name,
        s.retransmissions as f64,
        "count",
    );
    out.push(
        crate::SPURIOUS.name,
        s.spurious_retransmissions as f64,
        "count",
    );
    out.push(crate::TIMEOUTS.name, s.timeouts as f64, "count");
    out.push(
        crate::DATAGRAMS.name,
        (conn.driver.datagrams_out + conn.driver.datagrams_in) as f64,
        "count",
    );
}
