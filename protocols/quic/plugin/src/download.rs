//! The workloads in HTTP/3 (`quic.app=h3`, RFC 9114), the one language every server of
//! `quic.server` speaks: our client's `GET /N` on a new request stream (§4.1), the body
//! checked byte by byte against the generator the server uses ([`Kind::body`]).
//!
//! - ping-pong: `rounds` requests `GET /payload`, one after another, each on a stream of
//!   its own (HTTP/3 allows one request per stream); a round is timed from the request's
//!   write to the datagram that brought the response's FIN, round 1 from the
//!   connection's first Initial (as in [`crate::workload`]). A round's request is a
//!   HEADERS frame of ~30 bytes, its answer `payload` bytes plus ~10 of frames.
//! - stream: one `GET /N` with N = `count` × `payload`, timed from the request's write to
//!   the response's FIN: the goodput of a download, the interop runner's `transfer`.
//!   With `quic.streams=per-message`, `count` requests `GET /payload` at once instead,
//!   each on a stream of its own as the server's stream credit allows (RFC 9000 §4.6),
//!   timed to the last response's FIN: the interop runner's `multiplexing`.
//!
//! On the connection our client opens its control stream with SETTINGS (§6.2.1) once the
//! handshake completes, and reads and discards the server's control and QPACK streams.
//! A status other than 200 fails the case; a body of the wrong length or bytes counts as
//! corrupt (ping-pong) or fails the case (stream).

use crate::client::Conn;
use crate::peers::Kind;
use crate::workload::{QuicRun, Watch, end_round, end_rounds, step, wait_handshake};
use std::sync::atomic::Ordering;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::{
    THROUGHPUT_BITS_PER_S, THROUGHPUT_DURATION, THROUGHPUT_MESSAGES_PER_S,
};
use wirebench_protocol::stats::{interrupted, push_counts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::{Ctx, Outcome, WorkloadError};
use wirebench_quic_engine::h3::{self, Body, FrameReader, Part};
use wirebench_quic_engine::proto::{Dir, ReadError, StreamId};

/// A response as it was read.
pub(crate) struct Response {
    pub(crate) status: Option<u16>,
    pub(crate) bytes: u64,
    pub(crate) intact: bool,
    /// When the datagram with its FIN was read.
    pub(crate) at: u64,
}

/// The connection's HTTP/3 side: our control stream, the server's uni streams.
pub struct H3 {
    uni: Vec<StreamId>,
}

impl H3 {
    /// Opens our control stream; the handshake must have completed.
    pub fn open(conn: &mut Conn) -> Result<H3, WorkloadError> {
        let q = conn.quic()?;
        let id = q.streams().open(Dir::Uni).ok_or_else(|| {
            WorkloadError::Peer(
                "the server allows no unidirectional stream for HTTP/3's control stream".into(),
            )
        })?;
        q.send_stream(id)
            .write(&h3::control_stream())
            .map_err(|e| WorkloadError::Peer(format!("cannot write the control stream: {e}")))?;
        Ok(H3 { uni: Vec::new() })
    }

    /// Accepts and reads (discarding) the server's unidirectional streams.
    fn drain(&mut self, conn: &mut Conn) -> Result<(), WorkloadError> {
        let q = conn.quic()?;
        while let Some(id) = q.streams().accept(Dir::Uni) {
            self.uni.push(id);
        }
        self.uni.retain(|id| {
            let mut recv = q.recv_stream(*id);
            let Ok(mut chunks) = recv.read(true) else {
                return false;
            };
            let open = loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(_)) => {}
                    Ok(None) | Err(ReadError::Reset(_)) => break false,
                    Err(ReadError::Blocked) => break true,
                }
            };
            let _ = chunks.finalize();
            open
        });
        Ok(())
    }
}

/// One `GET path` on a new stream, read to its FIN; `progress` is told the body bytes.
pub(crate) fn get(
    conn: &mut Conn,
    h3c: &mut H3,
    path: &str,
    mut body: Body,
    ctx: &Ctx,
    watch: &mut Watch,
    progress: &mut dyn FnMut(u64),
) -> Result<Response, WorkloadError> {
    let id = request(conn, path)?
        .ok_or_else(|| WorkloadError::Peer("the server allows no more streams".into()))?;
    let mut reader = FrameReader::default();
    let mut r = Response {
        status: None,
        bytes: 0,
        intact: true,
        at: 0,
    };
    loop {
        if read(conn, id, &mut reader, &mut r, &mut body)? {
            reader
                .finish()
                .map_err(|e| WorkloadError::Peer(format!("the response to GET {path}: {e}")))?;
            r.at = conn.driver.read_ns();
            return Ok(r);
        }
        progress(r.bytes);
        step(conn, ctx, watch, "waiting for the HTTP/3 response")?;
        h3c.drain(conn)?;
    }
}

/// `GET path` on a new stream, finished; `None` while the server grants no stream
/// (RFC 9000 §4.6: its MAX_STREAMS lifts that).
fn request(conn: &mut Conn, path: &str) -> Result<Option<StreamId>, WorkloadError> {
    let q = conn.quic()?;
    let Some(id) = q.streams().open(Dir::Bi) else {
        return Ok(None);
    };
    // A request is ~30 bytes: a new stream's credit always takes it.
    q.send_stream(id)
        .write(&h3::request(crate::SERVER_NAME, path))
        .map_err(|e| WorkloadError::Peer(format!("the server refused the request: {e}")))?;
    q.send_stream(id)
        .finish()
        .map_err(|e| WorkloadError::Peer(format!("cannot finish the request: {e}")))?;
    Ok(Some(id))
}

/// One response being read.
struct Pending {
    id: StreamId,
    reader: FrameReader,
    body: Body,
    r: Response,
}

/// `run.count` requests `GET /payload` at once on one connection (the interop runner's
/// multiplexing), each on a stream of its own as the server's stream credit allows,
/// every response read whole; `progress` is told the responses complete.
fn get_many(
    conn: &mut Conn,
    h3c: &mut H3,
    run: &QuicRun,
    ctx: &Ctx,
    watch: &mut Watch,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<Response>, WorkloadError> {
    let (n, kind) = (run.count, run.kind);
    let path = &format!("/{}", run.payload);
    let mut sent = 0;
    let mut pending: Vec<Pending> = Vec::new();
    let mut done = Vec::with_capacity(n as usize);
    while (done.len() as u64) < n {
        while sent < n {
            let Some(id) = request(conn, path)? else {
                break;
            };
            sent += 1;
            pending.push(Pending {
                id,
                reader: FrameReader::default(),
                body: kind.body(),
                r: Response {
                    status: None,
                    bytes: 0,
                    intact: true,
                    at: 0,
                },
            });
        }
        let mut i = 0;
        while i < pending.len() {
            let p = &mut pending[i];
            if read(conn, p.id, &mut p.reader, &mut p.r, &mut p.body)? {
                let mut p = pending.swap_remove(i);
                p.reader
                    .finish()
                    .map_err(|e| WorkloadError::Peer(format!("the response to GET {path}: {e}")))?;
                p.r.at = conn.driver.read_ns();
                done.push(p.r);
                progress(done.len() as u64);
            } else {
                i += 1;
            }
        }
        if (done.len() as u64) < n {
            step(conn, ctx, watch, "waiting for the HTTP/3 responses")?;
            h3c.drain(conn)?;
        }
    }
    Ok(done)
}

/// Reads what the response stream has; true once its FIN was read.
fn read(
    conn: &mut Conn,
    id: StreamId,
    reader: &mut FrameReader,
    r: &mut Response,
    body: &mut Body,
) -> Result<bool, WorkloadError> {
    let mut recv = conn.quic()?.recv_stream(id);
    let Ok(mut chunks) = recv.read(true) else {
        return Err(WorkloadError::Peer("the response stream is gone".into()));
    };
    let mut ended = false;
    let mut error = None;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(c)) => {
                let pushed = reader.push(&c.bytes, &mut |p| {
                    match p {
                        Part::Headers(f) if r.status.is_none() => {
                            r.status = h3::field(&f, ":status")
                                .and_then(|s| std::str::from_utf8(s).ok())
                                .and_then(|s| s.parse().ok());
                        }
                        // Trailers (RFC 9114 §4.1) carry nothing we need.
                        Part::Headers(_) => {}
                        Part::Data(d) => {
                            r.bytes += d.len() as u64;
                            r.intact &= body.check(d);
                        }
                    }
                    Ok(())
                });
                if let Err(e) = pushed {
                    error = Some(WorkloadError::Peer(format!("the server's response: {e}")));
                    break;
                }
            }
            Ok(None) => {
                ended = true;
                break;
            }
            Err(ReadError::Blocked) => break,
            Err(ReadError::Reset(code)) => {
                error = Some(WorkloadError::Peer(format!(
                    "the server reset the response stream (code {:#x})",
                    code.into_inner()
                )));
                break;
            }
        }
    }
    let _ = chunks.finalize();
    error.map_or(Ok(ended), Err)
}

pub(crate) fn status_ok(r: &Response, path: &str, kind: Kind) -> Result<(), WorkloadError> {
    match r.status {
        Some(200) => Ok(()),
        Some(s) => Err(WorkloadError::Peer(format!(
            "{} answered GET {path} with status {s}",
            kind.name()
        ))),
        None => Err(WorkloadError::Peer(format!(
            "{}'s response to GET {path} had no :status",
            kind.name()
        ))),
    }
}

/// Runs one HTTP/3 case on an open connection.
pub fn run(
    run: &QuicRun,
    ctx: &Ctx,
    conn: &mut Conn,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let mut watch = Watch::new(ctx, &run.transport);
    wait_handshake(conn, ctx, &mut watch)?;
    let mut h3c = H3::open(conn)?;
    if run.stream && run.per_message {
        multiplexed(run, ctx, conn, &mut h3c, &mut watch, out)
    } else if run.stream {
        download(run, ctx, conn, &mut h3c, &mut watch, out)
    } else {
        requests(run, ctx, conn, &mut h3c, &mut watch, out)
    }
}

fn download(
    run: &QuicRun,
    ctx: &Ctx,
    conn: &mut Conn,
    h3c: &mut H3,
    watch: &mut Watch,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    (ctx.mark_stable)();
    let want = run.count * run.payload as u64;
    let path = format!("/{want}");
    let start = monotonic_ns();
    let per = run.payload.max(1) as u64;
    let r = get(conn, h3c, &path, run.kind.body(), ctx, watch, &mut |b| {
        (ctx.progress)((b / per).min(run.count), run.count)
    })?;
    crate::workload::push_handshake(conn, out);
    status_ok(&r, &path, run.kind)?;
    let mut tally = Tally::new();
    for i in 0..(r.bytes / per).min(run.count) {
        tally.observe(i, !r.intact);
    }
    tally.finish(run.count);
    push_counts(out, run.count, &tally);
    if r.bytes != want || !r.intact {
        return Err(WorkloadError::Peer(format!(
            "{} sent {} of the {want} bytes asked for{}",
            run.kind.name(),
            r.bytes,
            if r.intact {
                ""
            } else {
                ", not the bytes its generator makes"
            }
        )));
    }
    if r.at > start {
        let t = secs(r.at - start);
        out.put(THROUGHPUT_DURATION, t);
        out.put(THROUGHPUT_BITS_PER_S, (want * 8) as f64 / t);
        out.put(THROUGHPUT_MESSAGES_PER_S, run.count as f64 / t);
    }
    Ok(())
}

/// `count` downloads of `GET /payload` at once on the one connection, timed from the
/// first request's write to the last response's FIN.
fn multiplexed(
    run: &QuicRun,
    ctx: &Ctx,
    conn: &mut Conn,
    h3c: &mut H3,
    watch: &mut Watch,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    (ctx.mark_stable)();
    let path = format!("/{}", run.payload);
    let start = monotonic_ns();
    let all = get_many(conn, h3c, run, ctx, watch, &mut |k| {
        (ctx.progress)(k, run.count)
    })?;
    crate::workload::push_handshake(conn, out);
    let mut tally = Tally::new();
    for (i, r) in all.iter().enumerate() {
        status_ok(r, &path, run.kind)?;
        tally.observe(i as u64, r.bytes != run.payload as u64 || !r.intact);
    }
    tally.finish(run.count);
    push_counts(out, run.count, &tally);
    let last = all.iter().map(|r| r.at).max().unwrap_or(start);
    if last > start {
        let t = secs(last - start);
        out.put(THROUGHPUT_DURATION, t);
        out.put(
            THROUGHPUT_BITS_PER_S,
            (run.count * run.payload as u64 * 8) as f64 / t,
        );
        out.put(THROUGHPUT_MESSAGES_PER_S, run.count as f64 / t);
    }
    out.notes.push(format!(
        "{} requests GET {path} at once on one connection, a stream each as the server's stream credit allowed (RFC 9000 §4.6)",
        run.count
    ));
    Ok(())
}

fn requests(
    run: &QuicRun,
    ctx: &Ctx,
    conn: &mut Conn,
    h3c: &mut H3,
    watch: &mut Watch,
    out: &mut Outcome,
) -> Result<(), WorkloadError> {
    let path = format!("/{}", run.payload);
    let mut rtts = Vec::with_capacity(run.count as usize);
    let mut tally = Tally::new();
    for i in 0..run.count {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(interrupted(rtts, run.count, tally));
        }
        if i == 2 {
            (ctx.mark_stable)();
        }
        let t0 = if i == 0 {
            conn.handshake().started
        } else {
            monotonic_ns()
        };
        let r = match get(conn, h3c, &path, run.kind.body(), ctx, watch, &mut |_| {}) {
            Ok(r) => r,
            Err(WorkloadError::Interrupted) => return Err(interrupted(rtts, run.count, tally)),
            Err(e) => return Err(e),
        };
        status_ok(&r, &path, run.kind)?;
        tally.observe(i, r.bytes != run.payload as u64 || !r.intact);
        rtts.push(r.at.saturating_sub(t0));
        end_round(conn, out, run, ctx, i)?;
    }
    end_rounds(out, run.count, tally, rtts);
    Ok(())
}
