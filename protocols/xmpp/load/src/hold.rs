//! Many XMPP client sessions from one process: logs them all in, optionally has every
//! pair exchange a message, holds them, and reports. One mio event loop drives every
//! session's sans-IO client engine, `KEEP` logins at most in flight. The client side of
//! `bench/xmpp-sessions.sh` (server memory per idle session, logins per second) and of
//! the cross-worker delivery test; the `hold_sessions` example is its command line.
//!
//! Users are `user<FIRST>..` with passwords `pass<N>` (the built-in server's and Tsung's
//! convention). Loopback or lab addresses only: this is a load tool, and [`hold`] refuses
//! others.

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use wirebench_engine::Engine as _;
use wirebench_engine::edge;
use wirebench_xmpp::{Client, ClientConfig, Event, Mechanism, TlsMode};

/// Logins in progress at once: enough to keep both cores busy, few enough that the
/// server's accept queue never overflows.
const KEEP: usize = 512;

struct Session {
    stream: TcpStream,
    client: Client,
    pending: Vec<u8>,
    done: bool,
}

/// What to open and do.
#[derive(Debug, Clone)]
pub struct HoldOpts {
    pub addrs: Vec<SocketAddr>,
    pub domain: String,
    /// Sessions.
    pub n: usize,

    /// The first user's number (users first..first+n-1).
    pub first: usize,
    /// Seconds to hold the sessions after logging in (and the messages).
    pub hold: u64,
    /// Ends the hold early when set (a signal handler's flag): the sessions are then
    /// closed as usual.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    pub mechanism: Mechanism,
    /// User 2k-1 sends user 2k a message, which answers (`first` odd, `n` even).
    pub messages: bool,
    /// With two sessions: this many message round trips, user `first` to `first + 1` and
    /// back, one at a time (the relay-hop latency bench).
    pub pingpong: usize,
    /// Source address; its ports 10000-32767 are used, so at most 22,768 sessions each.
    pub from: Option<IpAddr>,
}

/// What [`hold`] saw.
#[derive(Debug, Clone, Default)]
pub struct HoldReport {
    pub established: usize,
    pub failed: usize,
    pub login_secs: f64,
    /// Why the first failed session failed.
    pub first_error: Option<String>,
    /// Sent, received, from the wrong sender, seconds.
    pub messages: Option<(usize, usize, usize, f64)>,
    /// Round-trip times of the ping-pong, in nanoseconds, in the order measured.
    pub rtt_ns: Vec<u64>,
}

impl HoldReport {
    /// Every login and (if asked) every message went through.
    pub fn ok(&self) -> bool {
        self.failed == 0
            && self
                .messages
                .is_none_or(|(_, received, wrong, _)| received == self.established && wrong == 0)
    }
}

/// Whether `ip` is one this tool may load: loopback or the lab's 198.18.0.0/15.
pub fn lab_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback() || (v4.octets()[0] == 198 && v4.octets()[1] & 0xfe == 18)
        }
        IpAddr::V6(v6) => v6.is_loopback(),
    }
}

/// The environment variable that lets load go to any address: set by the Kubernetes Job
/// `wirebench k8s` writes, where the server under test is elsewhere in the cluster
/// (docs/cluster.md). Without it load stays on this machine.
pub const ALLOW_ANY_TARGET: &str = "WIREBENCH_ALLOW_ANY_TARGET";

/// Whether sessions may be opened to `ip`: loopback and the lab always; anything else
/// only with [`ALLOW_ANY_TARGET`]`=1`.
pub fn target_allowed(ip: IpAddr) -> bool {
    lab_address(ip) || std::env::var(ALLOW_ANY_TARGET).is_ok_and(|v| v == "1")
}

/// Opens `o.n` sessions, logs them in, exchanges messages if asked, tells `ready`, holds
/// them `o.hold` seconds, closes them.
pub fn hold(o: &HoldOpts, ready: impl FnOnce(&HoldReport)) -> std::io::Result<HoldReport> {
    check_opts(o)?;
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 * 1024];
    let t0 = Instant::now();
    let (mut sessions, logins) = log_in_all(o, &mut poll, &mut events, &mut buf)?;
    let failed = logins.failed;
    let mut report = HoldReport {
        established: logins.established,
        failed,
        login_secs: t0.elapsed().as_secs_f64(),
        first_error: logins.first_error,
        messages: None,
        rtt_ns: Vec::new(),
    };
    if o.pingpong > 0 && failed == 0 {
        report.rtt_ns = pingpong(&mut sessions, &mut poll, &mut events, &mut buf, o)?;
    }
    if o.messages && failed == 0 {
        report.messages = Some(exchange(
            &mut sessions,
            &mut poll,
            &mut events,
            &mut buf,
            o.first,
            &o.domain,
        ));
    }
    ready(&report);
    let until = Instant::now() + Duration::from_secs(o.hold);
    while Instant::now() < until
        && !o
            .stop
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    {
        std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
    }
    close_all(&mut sessions, &mut poll, &mut events, &mut buf);
    Ok(report)
}

/// What [`hold`] refuses: addresses outside the lab, a ping-pong not between two, messages
/// without pairs.
fn check_opts(o: &HoldOpts) -> std::io::Result<()> {
    if !o.addrs.iter().all(|a| lab_address(a.ip())) || !o.from.is_none_or(lab_address) {
        return Err(std::io::Error::other(
            "only loopback or lab (198.18.0.0/15) addresses",
        ));
    }
    if o.pingpong > 0 && o.n != 2 {
        return Err(std::io::Error::other(
            "a ping-pong is between exactly two sessions",
        ));
    }
    if o.messages && (o.first % 2 == 0 || o.n % 2 == 1) {
        return Err(std::io::Error::other(
            "messages pair user 2k-1 with 2k: the first user must be odd and the count even",
        ));
    }
    Ok(())
}

/// How the logins went.
struct Logins {
    established: usize,
    failed: usize,
    first_error: Option<String>,
}

/// Opens every session, `KEEP` logins at most in flight, until each is established or
/// has failed. Session `i` is at index `i` (`None`: it could not connect).
fn log_in_all(
    o: &HoldOpts,
    poll: &mut Poll,
    events: &mut Events,
    buf: &mut [u8],
) -> std::io::Result<(Vec<Option<Session>>, Logins)> {
    let n = o.n;
    let mut sessions: Vec<Option<Session>> = Vec::with_capacity(n);
    let mut next = 0usize;
    let mut in_flight = 0usize;
    let mut l = Logins {
        established: 0,
        failed: 0,
        first_error: None,
    };
    while l.established + l.failed < n {
        while in_flight < KEEP && next < n {
            match open_session(o, next, poll) {
                Ok(s) => {
                    in_flight += 1;
                    sessions.push(Some(s));
                }
                Err(e) => {
                    l.failed += 1;
                    l.first_error.get_or_insert(e);
                    sessions.push(None);
                }
            }
            next += 1;
        }
        match poll.poll(events, Some(Duration::from_millis(100))) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in events.iter() {
            let Some(s) = sessions[ev.token().0].as_mut() else {
                continue;
            };
            for e in pump(
                s,
                buf,
                ev.is_readable(),
                ev.is_read_closed() || ev.is_error(),
            ) {
                match e {
                    Event::SessionEstablished if !s.done => {
                        s.done = true;
                        l.established += 1;
                        in_flight -= 1;
                    }
                    Event::Closed if !s.done => {
                        s.done = true;
                        l.failed += 1;
                        l.first_error.get_or_insert_with(|| {
                            format!(
                                "closed before the session was established (user {})",
                                o.first + ev.token().0
                            )
                        });
                        in_flight -= 1;
                    }
                    _ => {}
                }
            }
        }
    }
    Ok((sessions, l))
}

/// Connects session `i` and registers it with `poll` under token `i`.
fn open_session(o: &HoldOpts, i: usize, poll: &Poll) -> Result<Session, String> {
    let mut stream =
        connect(o.addrs[i % o.addrs.len()], o.from, i).map_err(|e| format!("connect: {e}"))?;
    poll.registry()
        .register(
            &mut stream,
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        )
        .map_err(|e| format!("register: {e}"))?;
    let user = o.first + i;
    let mut cfg = ClientConfig::new(&format!("user{user}@{}", o.domain), &format!("pass{user}"));
    cfg.tls = TlsMode::Never;
    cfg.mechanisms = vec![o.mechanism];
    cfg.roster = false;
    cfg.max_stanza = 16 * 1024;
    Ok(Session {
        stream,
        client: Client::new(cfg, None, user as u64),
        pending: Vec::new(),
        done: false,
    })
}

/// Closes every stream, then waits (5 s at most) for the server to close each stream and
/// its connection (RFC 6120 section 4.4) before closing ours, so the TIME_WAIT state
/// stays on the server's side: on ours it would hold the source port, which the next run
/// binds again.
fn close_all(
    sessions: &mut [Option<Session>],
    poll: &mut Poll,
    events: &mut Events,
    buf: &mut [u8],
) {
    for s in sessions.iter_mut().flatten() {
        s.client.close();
        flush(s);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut open = sessions.iter().flatten().count();
    while open > 0 && Instant::now() < deadline {
        if poll.poll(events, Some(Duration::from_millis(100))).is_err() {
            continue;
        }
        for ev in events.iter() {
            let Some(s) = sessions[ev.token().0].as_mut() else {
                continue;
            };
            let mut eof = ev.is_read_closed();
            loop {
                match s.stream.read(buf) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        eof = true;
                        break;
                    }
                }
            }
            if eof {
                sessions[ev.token().0] = None;
                open -= 1;
            }
        }
    }
}

/// First source port tried when a source address is given: above the ports servers in
/// this lab listen on, below the kernel's ephemeral range (32768-60999).
const FIRST_SOURCE_PORT: u16 = 10_000;

/// Connects session `i` to `addr`, from `from` if given. With a source address the source
/// port is chosen here (`FIRST_SOURCE_PORT + i`, wrapping around within
/// FIRST_SOURCE_PORT..32767), not by the kernel: its search for a free ephemeral port
/// grows with the connections already open to the same server, and took a fifth of all
/// CPU at 16k sessions (`__inet_hash_connect`, perf).
///
/// `SO_REUSEADDR` lets the bind take a port whose last connection is in TIME_WAIT here
/// (sessions closed from this side, or by an earlier run): without it every bind walked
/// past thousands of such ports and a load spent nine tenths of its CPU in `bind()`. The
/// kernel still refuses a connect that would repeat a live connection's addresses
/// (EADDRNOTAVAIL), and then the next port is tried.
pub(crate) fn connect(
    addr: SocketAddr,
    from: Option<IpAddr>,
    i: usize,
) -> std::io::Result<TcpStream> {
    let Some(ip) = from else {
        return TcpStream::connect(addr);
    };
    use socket2::{Domain, Socket, Type};
    let range = 32_768 - FIRST_SOURCE_PORT as usize;
    // A few ports at most: a port is only busy if a session that used it is still open.
    for k in 0..64 {
        let p = FIRST_SOURCE_PORT + ((i + k) % range) as u16;
        // Non-blocking from socket(2) on: two fcntl calls fewer per login.
        let s = Socket::new(Domain::for_address(addr), Type::STREAM.nonblocking(), None)?;
        s.set_reuse_address(true)?;
        match s.bind(&SocketAddr::new(ip, p).into()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(e) => return Err(e),
        }
        match s.connect(&addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => continue,
            Err(e) => return Err(e),
        }
        return Ok(TcpStream::from_std(s.into()));
    }
    Err(std::io::Error::other(format!(
        "no free source port on {ip} near {} (64 tried)",
        FIRST_SOURCE_PORT as usize + i % range
    )))
}

/// Reads what arrived for session `s` and writes what it has to say; returns its events.
/// A short read ends the reading unless the server closed (`drain`), as in open_loop.
fn pump(s: &mut Session, buf: &mut [u8], readable: bool, drain: bool) -> Vec<Event> {
    if readable {
        // What ended a session shows in its events (Closed); nothing else is counted here.
        let _ = edge::read_ready(&mut s.stream, &mut s.client, buf, drain, 0);
    }
    flush(s);
    std::iter::from_fn(|| s.client.poll_event()).collect()
}

/// Writes what the session has queued. `pending` is the session's one output buffer: the
/// engine swaps its queue into it when it is empty (no copy) and takes back its capacity.
fn flush(s: &mut Session) {
    edge::flush(&mut s.stream, &mut s.client, &mut s.pending, 0);
}

/// `o.pingpong` round trips between the two sessions: session 0 sends, session 1 echoes
/// the body back, session 0 times the pair and sends the next.
fn pingpong(
    sessions: &mut [Option<Session>],
    poll: &mut Poll,
    events: &mut Events,
    buf: &mut [u8],
    o: &HoldOpts,
) -> std::io::Result<Vec<u64>> {
    let a_jid = format!("user{}@{}", o.first, o.domain);
    let b_jid = format!("user{}@{}", o.first + 1, o.domain);
    let mut rtts = Vec::with_capacity(o.pingpong);
    let send = |s: &mut Session, to: &str, body: &str| -> std::io::Result<()> {
        s.client
            .send_message(to, body, "p")
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        flush(s);
        Ok(())
    };
    let mut sent_at = Instant::now();
    if let Some(a) = sessions[0].as_mut() {
        send(a, &b_jid, "0")?;
    }
    let deadline = Instant::now() + Duration::from_secs(60 + o.pingpong as u64 / 1000);
    while rtts.len() < o.pingpong {
        if Instant::now() > deadline {
            return Err(std::io::Error::other(format!(
                "ping-pong stalled after {} of {} round trips",
                rtts.len(),
                o.pingpong
            )));
        }
        match poll.poll(events, Some(Duration::from_millis(100))) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in events.iter() {
            let i = ev.token().0;
            let Some(s) = sessions[i].as_mut() else {
                continue;
            };
            for e in pump(
                s,
                buf,
                ev.is_readable(),
                ev.is_read_closed() || ev.is_error(),
            ) {
                let Event::Message { body, .. } = e else {
                    continue;
                };
                if i == 1 {
                    send(s, &a_jid, &body)?;
                } else {
                    rtts.push(sent_at.elapsed().as_nanos() as u64);
                    if rtts.len() < o.pingpong {
                        sent_at = Instant::now();
                        send(s, &b_jid, &rtts.len().to_string())?;
                    }
                }
            }
        }
    }
    Ok(rtts)
}

/// Every user 2k-1 sends user 2k a message naming itself, and user 2k answers; true if
/// every message arrived, from the right sender, within 60 s.
fn exchange(
    sessions: &mut [Option<Session>],
    poll: &mut Poll,
    events: &mut Events,
    buf: &mut [u8],
    first: usize,
    domain: &str,
) -> (usize, usize, usize, f64) {
    let t0 = Instant::now();
    let jid = |i: usize, domain: &str| format!("user{}@{domain}", first + i);
    let mut sent = 0usize;
    for i in (0..sessions.len()).step_by(2) {
        let to = jid(i + 1, domain);
        if let Some(s) = sessions[i].as_mut()
            && s.client
                .send_message(&to, &format!("hi from {i}"), "m")
                .is_ok()
        {
            flush(s);
            sent += 1;
        }
    }
    let expected = sessions.len();
    let mut received = 0usize;
    let mut wrong = 0usize;
    let deadline = t0 + Duration::from_secs(60);
    while received + wrong < expected && Instant::now() < deadline {
        if poll.poll(events, Some(Duration::from_millis(100))).is_err() {
            continue;
        }
        for ev in events.iter() {
            let i = ev.token().0;
            let Some(s) = sessions[i].as_mut() else {
                continue;
            };
            for e in pump(
                s,
                buf,
                ev.is_readable(),
                ev.is_read_closed() || ev.is_error(),
            ) {
                let Event::Message { from, body, .. } = e else {
                    continue;
                };
                let partner = i ^ 1;
                if !from.starts_with(&format!("{}/", jid(partner, domain))) {
                    wrong += 1;
                    continue;
                }
                received += 1;
                if i % 2 == 1 && body == format!("hi from {partner}") {
                    let _ = s.client.send_message(&from, &format!("back from {i}"), "r");
                    flush(s);
                    sent += 1;
                }
            }
        }
    }
    (sent, received, wrong, t0.elapsed().as_secs_f64())
}
