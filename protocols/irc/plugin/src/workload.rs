//! IRC workloads in study S1's topology (seed 000, the IRC row): client1 (`alice`, in the
//! client host, on server A) and client2 (`bob`, in the server host, on server B); the
//! servers are linked across the emulated link and only their server-to-server traffic
//! crosses it. The runner starts the servers and waits for their link
//! (`lib.rs`); this module drives the two clients.
//!
//! - ping-pong: alice sends a `PRIVMSG bob` whose payload is exactly `payload` random
//!   printable characters (no spaces: they compress poorly); bob answers with a payload of
//!   the same size after `think`. Both clients register and wait until each server knows
//!   the other's nickname before round 1, so `rtt.first` is the first message on the
//!   established server link (IRC links at server start, not at the first message: the
//!   link's set-up is `irc.link_setup`, measured by the runner).
//! - stream: a warm-up message, then `count` messages back to back; throughput is timed
//!   from the first send until bob has reassembled the last one.
//!
//! A payload that fits one line goes as the whole text of one `PRIVMSG`. A longer one is
//! split into lines with `wirebench-irc`'s `SEQ/TOTAL ` framing and reassembled by the
//! receiver; its round trip ends when the whole message is back together. The payload has
//! no spaces and a framed piece always has one, so the receiver tells them apart.
//! Every payload is checked against the sender's (both sides derive it from the seed);
//! a mismatch counts in `messages.corrupt`.
//!
//! The driver here is a blocking one for the sans-IO engine, stamping events with
//! CLOCK_MONOTONIC when their bytes are read.

use crate::conn::{IrcConn, err, lines_for};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wirebench_irc::{Config, Event, Reassembler};
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::stats::{interrupted, push_counts, push_rtts, secs};
use wirebench_protocol::tally::Tally;
use wirebench_protocol::{Case, Ctx, Outcome, TICK, WorkloadError};

/// Where the two clients register.
#[derive(Debug, Clone)]
pub struct Topology {
    pub a_nick: String,
    pub b_nick: String,
    /// Server A (client1's, in the calling thread's network namespace).
    pub a_server: SocketAddr,
    /// Server B (client2's).
    pub b_server: SocketAddr,
    /// Network namespace of client2.
    pub b_netns: String,
    /// Server names, for notes.
    pub a_name: String,
    pub b_name: String,
}

#[derive(Debug, Clone)]
pub struct IrcRun {
    pub topology: Topology,
    pub payload: usize,
    /// Ping-pong rounds, or stream messages.
    pub count: u64,
    pub think: Duration,
    pub seed: u64,
    pub stream: bool,
    /// Time from server A's start until both servers list each other (`irc.link_setup`).
    pub link_setup: Option<Duration>,
}

impl IrcRun {
    /// The run a case asks for, between the clients of `topology`.
    pub fn from_case(
        case: &Case,
        topology: Topology,
        seed: u64,
        link_setup: Option<Duration>,
    ) -> IrcRun {
        let w = case.workload_params();
        IrcRun {
            topology,
            payload: case.payload() as usize,
            count: w.messages(),
            think: w.think(),
            seed,
            stream: w.is_stream(),
            link_setup,
        }
    }
}

/// Most payload bytes (plus line overhead) a stream keeps in flight: the servers buffer
/// what the link has not carried yet, and ngircd drops a server link whose write buffer
/// passes 64 KiB (`WRITEBUFFER_SLINK_LEN`).
pub const STREAM_WINDOW_BYTES: usize = 32 * 1024;

/// Printable ASCII without the space (`!` to `~`, 94 characters, ~6.55 bits each) from a
/// seeded xorshift generator: safe in an IRC text (no CR, LF, NUL or space) and as little
/// compressible as IRC text can be.
pub fn random_text(state: &mut u64, len: usize) -> String {
    (0..len)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            char::from(b'!' + (*state % 94) as u8)
        })
        .collect()
}

fn seed_a(seed: u64) -> u64 {
    seed | 1
}

fn seed_b(seed: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// Connects from this thread's namespace and registers as exactly `nick` (no retries: the
/// lab's servers are fresh); returns the session and its registration time.
fn register(
    addr: SocketAddr,
    nick: &str,
    timeout: Duration,
    shutdown: &AtomicBool,
) -> Result<(IrcConn, Duration), WorkloadError> {
    let mut cfg = Config::new(nick);
    cfg.nick_retries = 0;
    let c = IrcConn::connect_until(None, addr, cfg, timeout, shutdown)?;
    if c.client.nick() != nick {
        return Err(err(
            addr,
            format!("registered as {:?}, not {nick:?}", c.client.nick()),
        ));
    }
    let took = c.registration;
    Ok((c, took))
}

/// Collects payloads from `PRIVMSG` texts: a text without a space is a whole payload, one
/// with a space a framed piece.
fn receive(
    r: &mut Reassembler,
    from: &str,
    target: &str,
    text: &str,
) -> Result<Option<(String, usize)>, WorkloadError> {
    if text.contains(' ') {
        r.push(from, target, text)
            .map(|m| m.map(|m| (m.payload, m.pieces)))
            .map_err(|e| WorkloadError::Peer(format!("from {from}: {e}")))
    } else {
        Ok(Some((text.to_string(), 1)))
    }
}

/// Client2: answers (ping-pong) or counts (stream) until told to stop.
struct Responder {
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    corrupt: Arc<AtomicU64>,
    /// CLOCK_MONOTONIC of the first and last message received.
    first_ns: Arc<AtomicU64>,
    last_ns: Arc<AtomicU64>,
    /// Lines per answer (bob -> alice).
    lines: Arc<AtomicU64>,
    error: Arc<Mutex<Option<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Responder {
    fn start(run: &IrcRun, timeout: Duration, ctx: &Ctx) -> Result<Responder, WorkloadError> {
        let stop = Arc::new(AtomicBool::new(false));
        let received = Arc::new(AtomicU64::new(0));
        let corrupt = Arc::new(AtomicU64::new(0));
        let first_ns = Arc::new(AtomicU64::new(0));
        let last_ns = Arc::new(AtomicU64::new(0));
        let lines = Arc::new(AtomicU64::new(0));
        let error = Arc::new(Mutex::new(None));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (r, st, rc, co, fl, ln, li, er) = (
            run.clone(),
            stop.clone(),
            received.clone(),
            corrupt.clone(),
            first_ns.clone(),
            last_ns.clone(),
            lines.clone(),
            error.clone(),
        );
        let stall = ctx.stall_timeout;
        let thread = std::thread::Builder::new()
            .name("wb-irc-client2".into())
            .spawn(move || {
                let t = &r.topology;
                let setup = (|| {
                    wirebench_lab::netns::enter(&t.b_netns)
                        .map_err(|e| WorkloadError::Environment(e.to_string()))?;
                    let (mut bob, _) = register(t.b_server, &t.b_nick, timeout, &st)?;
                    bob.wait_known(&t.a_nick, stall, &st, &|| None)?;
                    Ok::<_, WorkloadError>(bob)
                })();
                let mut bob = match setup {
                    Ok(b) => {
                        let _ = ready_tx.send(Ok(()));
                        b
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let mut expect = seed_a(r.seed);
                let mut answer = seed_b(r.seed);
                let mut reassembler = Reassembler::new();
                let result = (|| -> Result<(), WorkloadError> {
                    while !st.load(Ordering::Relaxed) {
                        let Some((at, e)) = bob.poll_event(Instant::now() + TICK)? else {
                            continue;
                        };
                        let Event::Message { from, target, text } = e else {
                            continue;
                        };
                        if !from.eq_ignore_ascii_case(&t.a_nick) {
                            continue;
                        }
                        let Some((payload, _)) = receive(&mut reassembler, &from, &target, &text)?
                        else {
                            continue;
                        };
                        if payload != random_text(&mut expect, r.payload) {
                            co.fetch_add(1, Ordering::SeqCst);
                        }
                        if rc.load(Ordering::SeqCst) == 0 {
                            fl.store(at, Ordering::SeqCst);
                        }
                        ln.store(at, Ordering::SeqCst);
                        rc.fetch_add(1, Ordering::SeqCst);
                        if !r.stream {
                            std::thread::sleep(r.think);
                            let body = random_text(&mut answer, r.payload);
                            let n = bob.send_payload(&t.a_nick, &body)?;
                            li.store(n as u64, Ordering::SeqCst);
                        }
                    }
                    Ok(())
                })();
                if let Err(e) = result {
                    *er.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                }
                bob.quit();
            })
            .map_err(|e| WorkloadError::Environment(format!("cannot start client2: {e}")))?;
        let mut responder = Responder {
            stop,
            received,
            corrupt,
            first_ns,
            last_ns,
            lines,
            error,
            thread: Some(thread),
        };
        // Registration is local; waiting for alice's nickname crosses the link.
        let limit = timeout + stall + Duration::from_secs(5);
        let t = Instant::now();
        loop {
            if ctx.shutdown.load(Ordering::Relaxed) {
                responder.stop.store(true, Ordering::SeqCst);
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
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if t.elapsed() > limit => {
                    return Err(WorkloadError::Peer(
                        "client2 did not get ready in time".into(),
                    ));
                }
                Err(_) => {}
            }
        }
    }

    fn failed(&self) -> Option<String> {
        if let Some(e) = self.error.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return Some(format!("client2: {e}"));
        }
        if self.thread.as_ref().is_some_and(|t| t.is_finished())
            && !self.stop.load(Ordering::SeqCst)
        {
            return Some("client2 stopped unexpectedly".into());
        }
        None
    }

    fn finish(mut self) -> Result<(), WorkloadError> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                return Err(WorkloadError::Environment("client2 panicked".into()));
            }
        }
        match self.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(WorkloadError::Peer(format!("client2: {e}"))),
            None => Ok(()),
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Services client1's session until client2 has received `n` messages.
fn wait_received(
    alice: &mut IrcConn,
    responder: &Responder,
    n: u64,
    stall: Duration,
    ctx: &Ctx,
) -> Result<(), WorkloadError> {
    wirebench_protocol::stats::wait_received(&responder.received, n, stall, ctx, || {
        if let Some(e) = responder.failed() {
            return Err(WorkloadError::Peer(e));
        }
        // Keep client1's session serviced (server PINGs) while waiting.
        alice.poll_event(Instant::now() + Duration::from_millis(5))?;
        Ok(())
    })
}

pub fn run(run: &IrcRun, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let t = &run.topology;
    // Registration is local (client and server in one host) but be patient on a busy
    // machine.
    let timeout = ctx.connect_timeout.max(Duration::from_secs(30));
    let (mut alice, login) = register(t.a_server, &t.a_nick, timeout, ctx.shutdown)?;
    let responder = Responder::start(run, timeout, ctx)?;
    let mut out = Outcome::default();
    if let Some(s) = run.link_setup {
        out.push("irc.link_setup", s.as_secs_f64(), "s");
    }
    out.push("irc.login", login.as_secs_f64(), "s");
    // bob registered on B: wait until A knows him (his NICK crossed the link).
    let t_known = Instant::now();
    alice.wait_known(&t.b_nick, ctx.stall_timeout, ctx.shutdown, &|| {
        responder.failed()
    })?;
    out.push("irc.nick_known", t_known.elapsed().as_secs_f64(), "s");

    let mut rng_a = seed_a(run.seed);
    let mut rng_b = seed_b(run.seed);
    let lines = lines_for(&alice.client, &t.b_nick, &random_text(&mut 1, run.payload));
    out.push("irc.lines_per_message", lines as f64, "count");
    if run.stream {
        stream(run, ctx, &mut alice, &responder, &mut out, &mut rng_a)?;
    } else {
        ping_pong(
            run,
            ctx,
            &mut alice,
            &responder,
            &mut out,
            (&mut rng_a, &mut rng_b),
        )?;
    }
    let back = responder.lines.load(Ordering::SeqCst);
    responder.finish()?;
    alice.quit();
    if lines > 1 || back > 1 {
        out.notes.push(format!(
            "a {}-byte payload does not fit one 512-byte IRC line: each message was split \
             into {lines} lines {} -> {}{} (SEQ/TOTAL framing), and timed until reassembled",
            run.payload,
            t.a_nick,
            t.b_nick,
            if back > 0 && back as usize != lines {
                format!(" and {back} lines back")
            } else {
                String::new()
            }
        ));
    }
    out.notes.push(format!(
        "IRC over two linked ngircd servers ({} <-> {}), client {} on {}, client {} on {}; \
         a payload that fits one line is the whole PRIVMSG text",
        t.a_name, t.b_name, t.a_nick, t.a_name, t.b_nick, t.b_name
    ));
    out.notes.push(
        "ngircd's server link always compresses (zlib, no option to turn it off) and \
         ngircd sets no TCP_NODELAY on it (Nagle on). With a flush per write, a lone \
         message's payload is not compressed (fixed Huffman codes: 8 bits per printable \
         character) but its IRC prefix shrinks to a back-reference; messages written \
         together share a block and do compress. With Nagle, a small write waits while an \
         earlier one is unacknowledged: on a new link the second small write stalls ~40 ms \
         on the peer's delayed ACK (a round trip on a link with delay)"
            .into(),
    );
    if run.link_setup.is_some() {
        out.notes.push(
            "irc.link_setup: from server A's start (the active side; passive B started \
             first) until each server lists the other in LINKS; ngircd's first connection \
             attempt comes up to ~2 s after its start (a 1 s start-up delay on a clock of \
             whole seconds). rtt.first is the first message on that established link"
                .into(),
        );
    }
    Ok(out)
}

/// The stream: a warm-up message, then `count` messages within the window.
fn stream(
    run: &IrcRun,
    ctx: &Ctx,
    alice: &mut IrcConn,
    responder: &Responder,
    out: &mut Outcome,
    rng_a: &mut u64,
) -> Result<(), WorkloadError> {
    let t = &run.topology;
    let stall = ctx.stall_timeout + run.think;
    // A warm-up message first, like XMPP's: the link is already up, but the first
    // messages on a new connection meet Nagle and delayed ACKs (see the note).
    let t_warm = monotonic_ns();
    alice.send_payload(&t.b_nick, &random_text(rng_a, run.payload))?;
    wait_received(alice, responder, 1, stall, ctx)?;
    out.push(
        "irc.first_delivery",
        secs(
            responder
                .first_ns
                .load(Ordering::SeqCst)
                .saturating_sub(t_warm),
        ),
        "s",
    );
    // From here on the link carries only the timed messages (and their ACKs).
    (ctx.mark_stable)();
    let window = (STREAM_WINDOW_BYTES / (run.payload + 64)).max(1) as u64;
    let start = monotonic_ns();
    let mut last_progress = (0, Instant::now());
    for i in 0..run.count {
        // Keep at most `window` messages between alice and bob.
        loop {
            let got = responder.received.load(Ordering::SeqCst);
            if i + 1 < got + window {
                break;
            }
            if ctx.shutdown.load(Ordering::Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            if let Some(e) = responder.failed() {
                return Err(WorkloadError::Peer(e));
            }
            if got != last_progress.0 {
                last_progress = (got, Instant::now());
            } else if last_progress.1.elapsed() > stall {
                return Err(WorkloadError::Stalled {
                    secs: stall.as_secs(),
                    during: "waiting for client2 to receive the stream",
                });
            }
            alice.poll_event(Instant::now() + Duration::from_millis(2))?;
        }
        alice.send_payload(&t.b_nick, &random_text(rng_a, run.payload))?;
        if i % 64 == 0 {
            (ctx.progress)(i, run.count);
        }
    }
    wait_received(alice, responder, run.count + 1, stall, ctx)?;
    let last = responder.last_ns.load(Ordering::SeqCst);
    let mut tally = Tally::new();
    tally.counts.received = responder.received.load(Ordering::SeqCst) - 1;
    tally.counts.corrupt = responder.corrupt.load(Ordering::SeqCst);
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
            "IRC stream: timed from the first send to client2's last reassembled \
             message, after a warm-up message (irc.first_delivery); at most {window} \
             messages in flight"
        ));
    }
    Ok(())
}

/// Ping-pong: each round trip from alice's write to the read that completes bob's answer.
fn ping_pong(
    run: &IrcRun,
    ctx: &Ctx,
    alice: &mut IrcConn,
    responder: &Responder,
    out: &mut Outcome,
    (rng_a, rng_b): (&mut u64, &mut u64),
) -> Result<(), WorkloadError> {
    let t = &run.topology;
    let stall = ctx.stall_timeout + run.think;
    let mut rtts = Vec::with_capacity(run.count as usize);
    let mut tally = Tally::new();
    let mut reassembler = Reassembler::new();
    let think_ns = run.think.as_nanos() as u64;
    for i in 0..run.count {
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(interrupted(rtts, run.count, tally));
        }
        if i == 2 {
            (ctx.mark_stable)();
        }
        let body = random_text(rng_a, run.payload);
        let want = random_text(rng_b, run.payload);
        let t0 = monotonic_ns();
        alice.send_payload(&t.b_nick, &body)?;
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
            if let Some((at, Event::Message { from, target, text })) =
                alice.poll_event(Instant::now() + TICK)?
            {
                if from.eq_ignore_ascii_case(&t.b_nick) {
                    if let Some((payload, _)) = receive(&mut reassembler, &from, &target, &text)? {
                        break (at, payload != want);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_text_is_reproducible_and_safe_for_irc() {
        let (mut a, mut b) = (7u64, 7u64);
        let x = random_text(&mut a, 1000);
        assert_eq!(x, random_text(&mut b, 1000));
        assert_eq!(x.len(), 1000);
        assert!(x.bytes().all(|c| c.is_ascii_graphic()));
        assert_ne!(x, random_text(&mut a, 1000));
    }

    #[test]
    fn whole_and_framed_payloads_are_told_apart() {
        let mut c = wirebench_irc::Client::new(Config::new("alice"), 0);
        c.handle_input(b":a.irc.test 001 alice :Welcome alice!~alice@198.18.0.1\r\n")
            .unwrap();
        let mut r = Reassembler::new();
        let mut s = 3;
        let small = random_text(&mut s, 100);
        assert_eq!(lines_for(&c, "bob", &small), 1);
        assert_eq!(
            receive(&mut r, "alice", "bob", &small).unwrap(),
            Some((small.clone(), 1))
        );
        let big = random_text(&mut s, 1500);
        let parts = c.split_payload("bob", &big).unwrap();
        assert_eq!(lines_for(&c, "bob", &big), parts.len());
        assert_eq!(parts.len(), 4);
        let mut got = None;
        for p in &parts {
            got = receive(&mut r, "alice", "bob", p).unwrap();
        }
        assert_eq!(got, Some((big, 4)));
        // An empty payload still needs a (framed, non-empty) text.
        assert_eq!(lines_for(&c, "bob", ""), 1);
        assert_eq!(
            receive(&mut r, "alice", "bob", "1/1 ").unwrap(),
            Some((String::new(), 1))
        );
    }
}
