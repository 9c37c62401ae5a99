//! IRC workloads in study S1's topology (Isode 2010, the IRC row; docs/studies.md): client1
//! (`alice`, in the client host, on server A) and client2 (`bob`, in the server host, on
//! server B); the servers are linked across the emulated link and only their
//! server-to-server traffic crosses it. The runner starts the servers and waits for their
//! link (`lib.rs`); this module drives the two clients.
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
//! The loops are the shared chat workloads' (`wirebench-chat`); this module brings IRC's
//! session (`crate::conn`, the one blocking driver under the sans-IO engine) and figures.

use crate::IRC_FIRST_DELIVERY;
use crate::IRC_LINES_PER_MESSAGE;
use crate::IRC_LINK_SETUP;
use crate::IRC_LOGIN;
use crate::IRC_NICK_KNOWN;
use crate::conn::{IrcConn, err, lines_for};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use wirebench_chat::{self as chat, Chat, Client2, Incoming, Plan, Style};
use wirebench_irc::{Config, Event, Reassembler};
use wirebench_protocol::Fault;
use wirebench_protocol::seeded::xorshift;
use wirebench_protocol::{Case, Ctx, Outcome, WorkloadError};

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
        .map(|_| char::from(b'!' + (xorshift(state) % 94) as u8))
        .collect()
}

impl IrcRun {
    fn plan(&self) -> Plan {
        Plan {
            payload: self.payload,
            count: self.count,
            think: self.think,
            seed: self.seed,
            stream: self.stream,
            tcp_info: None,
        }
    }
}

/// What differs in IRC's chat: client1 is served every 5 ms while client2 reads.
const STYLE: Style = Style {
    first_delivery: IRC_FIRST_DELIVERY,
    answer_grace: Duration::ZERO,
    service_wait: Duration::from_millis(5),
    send_metric: None,
    tagged: false,
};

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
            .map_err(|e| WorkloadError::because(Fault::Peer, format!("from {from}"), e))
    } else {
        Ok(Some((text.to_string(), 1)))
    }
}

/// A client's session as the chat workloads use it: payloads to and from `peer`, framed
/// ones reassembled.
struct IrcChat {
    conn: IrcConn,
    peer: String,
    reassembler: Reassembler,
}

impl IrcChat {
    fn new(conn: IrcConn, peer: &str) -> IrcChat {
        IrcChat {
            conn,
            peer: peer.to_string(),
            reassembler: Reassembler::new(),
        }
    }
}

impl Chat for IrcChat {
    type Body = String;

    fn body(state: &mut u64, len: usize) -> String {
        random_text(state, len)
    }

    /// Returns the lines the payload took.
    fn send(&mut self, body: &String, _tag: &str) -> Result<u64, WorkloadError> {
        Ok(self.conn.send_payload(&self.peer, body)? as u64)
    }

    fn recv(&mut self, deadline: Instant) -> Result<Option<Incoming<String>>, WorkloadError> {
        let Some((at, Event::Message { from, target, text })) = self.conn.poll_event(deadline)?
        else {
            return Ok(None);
        };
        if !from.eq_ignore_ascii_case(&self.peer) {
            return Ok(None);
        }
        Ok(
            receive(&mut self.reassembler, &from, &target, &text)?.map(|(body, _)| Incoming {
                at,
                body,
                tag: None,
            }),
        )
    }

    fn close(self) {
        self.conn.quit();
    }
}

pub fn run(run: &IrcRun, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let t = &run.topology;
    // Registration is local (client and server in one host) but be patient on a busy
    // machine.
    let timeout = ctx.connect_timeout.max(Duration::from_secs(30));
    let (mut alice, login) = register(t.a_server, &t.a_nick, timeout, ctx.shutdown)?;
    let plan = run.plan();
    let stall = ctx.stall_timeout;
    let (b_server, b_nick, a_nick) = (t.b_server, t.b_nick.clone(), t.a_nick.clone());
    let client2 = Client2::start(
        "wb-irc-client2",
        Some(t.b_netns.clone()),
        &plan,
        move |stop| {
            let (mut bob, _) = register(b_server, &b_nick, timeout, stop)?;
            bob.wait_known(&a_nick, stall, stop, &|| None)?;
            Ok(IrcChat::new(bob, &a_nick))
        },
        // Registration is local; waiting for alice's nickname crosses the link.
        timeout + stall + Duration::from_secs(5),
        ctx,
    )?;
    let mut out = Outcome::default();
    if let Some(s) = run.link_setup {
        out.put(IRC_LINK_SETUP, s.as_secs_f64());
    }
    out.put(IRC_LOGIN, login.as_secs_f64());
    // bob registered on B: wait until A knows him (his NICK crossed the link).
    let t_known = Instant::now();
    alice.wait_known(&t.b_nick, ctx.stall_timeout, ctx.shutdown, &|| {
        client2.failed()
    })?;
    out.put(IRC_NICK_KNOWN, t_known.elapsed().as_secs_f64());

    let lines = lines_for(&alice.client, &t.b_nick, &random_text(&mut 1, run.payload));
    out.put(IRC_LINES_PER_MESSAGE, lines as f64);
    let mut alice = IrcChat::new(alice, &t.b_nick);
    if run.stream {
        let window = (STREAM_WINDOW_BYTES / (run.payload + 64)).max(1) as u64;
        if chat::stream(&plan, &STYLE, window, ctx, &mut alice, &client2, &mut out)? {
            out.notes.push(format!(
                "IRC stream: timed from the first send to client2's last reassembled \
                 message, after a warm-up message (irc.first_delivery); at most {window} \
                 messages in flight"
            ));
        }
    } else {
        chat::ping_pong(&plan, &STYLE, ctx, &mut alice, &client2, &mut out)?;
    }
    let back = client2.answer_sent();
    client2.finish()?;
    alice.close();
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

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_engine::Engine as _;

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
        c.handle_input(
            0,
            b":a.irc.test 001 alice :Welcome alice!~alice@198.18.0.1\r\n",
        )
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
