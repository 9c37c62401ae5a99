//! The client engine against a scripted fake server (a small sans-IO IRC server written
//! here: registration with optional PASS and PING cookie, taken nicknames, PING/PONG,
//! JOIN, PRIVMSG relayed between its clients with the sender's full prefix, QUIT), plus
//! malformed input and property tests. Everything is deterministic: no sockets, no time.

use proptest::prelude::*;
use std::collections::HashSet;
use wirebench_engine::Engine as _;
use wirebench_irc::line::{LineBuffer, Message};
use wirebench_irc::split::{self, Reassembler};
use wirebench_irc::{Client, Config, Event, IrcError, MAX_LINE, State};

/// What the client has queued to send, if anything.
fn take(c: &mut Client) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    (c.poll_transmit(0, &mut buf) > 0).then_some(buf)
}

const SERVER: &str = "irc.test";

/// One connection's state on the fake server.
#[derive(Default)]
struct Conn {
    lines: LineBuffer,
    out: Vec<u8>,
    pass: Option<String>,
    nick: Option<String>,
    user: Option<String>,
    cookie: Option<String>,
    cookie_ok: bool,
    registered: bool,
    channels: HashSet<String>,
    closed: bool,
}

/// A scripted server: what it does is fixed by its fields, what it received is kept.
struct FakeServer {
    conns: Vec<Conn>,
    /// Nicknames already taken by someone not modelled here.
    taken: HashSet<String>,
    password: Option<String>,
    /// Send `PING :cookie` before welcoming and wait for the matching PONG.
    ping_cookie: bool,
    /// Host part of every client's mask.
    host: String,
    /// Every line received from clients, per connection.
    received: Vec<Vec<String>>,
    /// Every line sent to clients, per connection (to check the 512-byte limit).
    sent: Vec<Vec<String>>,
}

impl FakeServer {
    fn new() -> FakeServer {
        FakeServer {
            conns: Vec::new(),
            taken: HashSet::new(),
            password: None,
            ping_cookie: false,
            host: "198.18.0.1".into(),
            received: Vec::new(),
            sent: Vec::new(),
        }
    }

    fn accept(&mut self) -> usize {
        self.conns.push(Conn::default());
        self.received.push(Vec::new());
        self.sent.push(Vec::new());
        self.conns.len() - 1
    }

    fn mask(&self, i: usize) -> String {
        let c = &self.conns[i];
        format!(
            "{}!~{}@{}",
            c.nick.as_deref().unwrap_or("*"),
            c.user.as_deref().unwrap_or("*"),
            self.host
        )
    }

    fn send(&mut self, i: usize, line: String) {
        assert!(
            line.len() <= MAX_LINE,
            "the fake server would send {} bytes: {line:?}",
            line.len()
        );
        self.sent[i].push(line.clone());
        self.conns[i].out.extend_from_slice(line.as_bytes());
    }

    fn reply(&mut self, i: usize, code: &str, params: &[&str]) {
        let nick = self.conns[i].nick.clone().unwrap_or_else(|| "*".into());
        let mut all = vec![nick.as_str()];
        all.extend_from_slice(params);
        let l = Message::new(code, &all).with_prefix(SERVER).to_line();
        self.send(i, l);
    }

    fn take_out(&mut self, i: usize) -> Vec<u8> {
        std::mem::take(&mut self.conns[i].out)
    }

    fn input(&mut self, i: usize, bytes: &[u8]) {
        self.conns[i].lines.push(bytes);
        loop {
            let r = self.conns[i]
                .lines
                .next_line()
                .expect("client line too long");
            let Some(r) = r else { break };
            let raw = self.conns[i].lines.buf()[r].to_vec();
            self.received[i].push(String::from_utf8(raw.clone()).unwrap());
            assert!(raw.len() + 2 <= MAX_LINE, "client sent an oversize line");
            if let Some(m) = Message::parse(&raw).expect("client sent a malformed line") {
                self.on_message(i, m);
            }
        }
    }

    fn nick_in_use(&self, i: usize, nick: &str) -> bool {
        self.taken.contains(nick)
            || self
                .conns
                .iter()
                .enumerate()
                .any(|(j, c)| j != i && c.nick.as_deref() == Some(nick))
    }

    fn try_register(&mut self, i: usize) {
        let c = &self.conns[i];
        if c.registered || c.nick.is_none() || c.user.is_none() {
            return;
        }
        if self.ping_cookie && !c.cookie_ok {
            if c.cookie.is_none() {
                self.conns[i].cookie = Some("3589209494".into());
                self.send(i, "PING :3589209494\r\n".into());
            }
            return;
        }
        if let Some(p) = &self.password {
            if c.pass.as_ref() != Some(p) {
                self.reply(i, "464", &["Password mismatch"]);
                self.send(i, "ERROR :Access denied: Bad password?\r\n".into());
                self.conns[i].closed = true;
                return;
            }
        }
        self.conns[i].registered = true;
        let welcome = format!("Welcome to the Internet Relay Network {}", self.mask(i));
        self.reply(i, "001", &[&welcome]);
        self.reply(i, "002", &["Your host is irc.test"]);
        self.reply(i, "005", &["NICKLEN=30", "are supported on this server"]);
        self.reply(i, "422", &["MOTD file is missing"]);
    }

    fn on_message(&mut self, i: usize, m: Message) {
        let p = |k: usize| m.params.get(k).cloned().unwrap_or_default();
        match m.command.as_str() {
            "PASS" => self.conns[i].pass = Some(p(0)),
            "NICK" => {
                let n = p(0);
                if n.len() > 30 || n.contains('#') {
                    self.reply(i, "432", &[&n, "Erroneous nickname"]);
                } else if self.nick_in_use(i, &n) {
                    self.reply(i, "433", &[&n, "Nickname already in use"]);
                } else {
                    self.conns[i].nick = Some(n);
                    self.try_register(i);
                }
            }
            "USER" => {
                self.conns[i].user = Some(p(0));
                self.try_register(i);
            }
            "PONG" => {
                if self.conns[i].cookie.as_deref() == Some(m.trailing()) {
                    self.conns[i].cookie_ok = true;
                    self.try_register(i);
                }
            }
            "PING" => {
                let l = format!(":{SERVER} PONG {SERVER} :{}\r\n", p(0));
                self.send(i, l);
            }
            "JOIN" => {
                let ch = p(0);
                self.conns[i].channels.insert(ch.clone());
                let l = format!(":{} JOIN :{ch}\r\n", self.mask(i));
                for j in 0..self.conns.len() {
                    if self.conns[j].channels.contains(&ch) {
                        self.send(j, l.clone());
                    }
                }
            }
            "PRIVMSG" => {
                let (target, text) = (p(0), p(1));
                let relayed = Message::new("PRIVMSG", &[&target, &text])
                    .with_prefix(&self.mask(i))
                    .to_line();
                let to: Vec<usize> = (0..self.conns.len())
                    .filter(|&j| {
                        j != i
                            && (self.conns[j].nick.as_deref() == Some(&target)
                                || self.conns[j].channels.contains(&target))
                    })
                    .collect();
                if to.is_empty() {
                    self.reply(i, "401", &[&target, "No such nick or channel name"]);
                }
                for j in to {
                    self.send(j, relayed.clone());
                }
            }
            "QUIT" => {
                let l = format!("ERROR :Closing connection: {}\r\n", m.trailing());
                self.send(i, l);
                self.conns[i].closed = true;
            }
            _ => {
                let cmd = m.command.clone();
                self.reply(i, "421", &[&cmd, "Unknown command"]);
            }
        }
    }
}

/// Clients wired to the fake server; bytes move only in [`Net::pump`].
struct Net {
    server: FakeServer,
    clients: Vec<Client>,
    events: Vec<Vec<Event>>,
    errors: Vec<Vec<IrcError>>,
}

impl Net {
    fn new(server: FakeServer) -> Net {
        Net {
            server,
            clients: Vec::new(),
            events: Vec::new(),
            errors: Vec::new(),
        }
    }

    fn connect(&mut self, cfg: Config) -> usize {
        let i = self.server.accept();
        self.clients.push(Client::new(cfg, 0));
        self.events.push(Vec::new());
        self.errors.push(Vec::new());
        i
    }

    /// Moves bytes both ways until nothing moves.
    fn pump(&mut self) {
        loop {
            let mut moved = false;
            for i in 0..self.clients.len() {
                if let Some(b) = take(&mut self.clients[i]) {
                    moved = true;
                    if !self.server.conns[i].closed {
                        self.server.input(i, &b);
                    }
                }
                let b = self.server.take_out(i);
                // A closed client's connection is gone: late server bytes are dropped.
                if !b.is_empty() && self.clients[i].state() != State::Closed {
                    moved = true;
                    if let Err(e) = self.clients[i].handle_input(0, &b) {
                        self.errors[i].push(e);
                    }
                }
                while let Some(e) = self.clients[i].poll_event() {
                    self.events[i].push(e);
                }
            }
            if !moved {
                return;
            }
        }
    }

    fn messages(&self, i: usize) -> Vec<(String, String, String)> {
        self.events[i]
            .iter()
            .filter_map(|e| match e {
                Event::Message { from, target, text } => {
                    Some((from.clone(), target.clone(), text.clone()))
                }
                _ => None,
            })
            .collect()
    }
}

fn cfg(nick: &str) -> Config {
    let mut c = Config::new(nick);
    c.realname = format!("{nick} the tester");
    c
}

#[test]
fn registration_sends_nick_user_and_reports_welcome() {
    let mut net = Net::new(FakeServer::new());
    let a = net.connect(cfg("alice"));
    net.pump();
    assert_eq!(
        net.server.received[a],
        ["NICK alice", "USER alice 0 * :alice the tester"]
    );
    assert_eq!(net.clients[a].state(), State::Registered);
    assert_eq!(
        net.events[a][0],
        Event::Registered {
            nick: "alice".into(),
            mask: Some("alice!~alice@198.18.0.1".into())
        }
    );
    assert_eq!(net.clients[a].server(), Some(SERVER));
    // 002/005 come as replies, 422 (no MOTD) as a numeric error with its text.
    assert!(net.events[a].contains(&Event::Reply {
        code: 5,
        params: vec!["NICKLEN=30".into(), "are supported on this server".into()]
    }));
    assert!(net.events[a].contains(&Event::NumericError {
        code: 422,
        params: vec!["MOTD file is missing".into()],
        text: "MOTD file is missing".into()
    }));
    assert!(net.errors[a].is_empty());
}

#[test]
fn password_and_ping_cookie_before_welcome() {
    let mut s = FakeServer::new();
    s.password = Some("s3cret".into());
    s.ping_cookie = true;
    let mut net = Net::new(s);
    let mut c = cfg("alice");
    c.password = Some("s3cret".into());
    let a = net.connect(c);
    net.pump();
    assert_eq!(
        net.server.received[a],
        [
            "PASS s3cret",
            "NICK alice",
            "USER alice 0 * :alice the tester",
            "PONG :3589209494"
        ]
    );
    assert!(matches!(net.events[a][0], Event::Registered { .. }));
}

#[test]
fn wrong_password_ends_with_the_servers_error() {
    let mut s = FakeServer::new();
    s.password = Some("right".into());
    let mut net = Net::new(s);
    let mut c = cfg("alice");
    c.password = Some("wrong".into());
    let a = net.connect(c);
    net.pump();
    assert_eq!(net.clients[a].state(), State::Closed);
    assert!(matches!(
        &net.events[a][0],
        Event::NumericError { code: 464, text, .. } if text == "Password mismatch"
    ));
    assert_eq!(
        net.events[a][1],
        Event::Closed {
            reason: "Access denied: Bad password?".into()
        }
    );
    assert!(net.errors[a].is_empty(), "ERROR is a clean end");
}

#[test]
fn nick_collision_retries_with_a_suffix() {
    let mut s = FakeServer::new();
    s.taken.insert("alice".into());
    s.taken.insert("alice_1".into());
    let mut net = Net::new(s);
    let a = net.connect(cfg("alice"));
    net.pump();
    assert_eq!(
        net.server.received[a],
        [
            "NICK alice",
            "USER alice 0 * :alice the tester",
            "NICK alice_1",
            "NICK alice_2"
        ]
    );
    assert_eq!(net.clients[a].nick(), "alice_2");
    assert!(matches!(
        &net.events[a][0],
        Event::Registered { nick, mask: Some(m) } if nick == "alice_2" && m.starts_with("alice_2!")
    ));
}

#[test]
fn nick_collision_is_bounded() {
    let mut s = FakeServer::new();
    for n in ["bob", "bob_1", "bob_2", "bob_3"] {
        s.taken.insert(n.into());
    }
    let mut net = Net::new(s);
    let mut c = cfg("bob");
    c.nick_retries = 2;
    let b = net.connect(c);
    net.pump();
    assert_eq!(
        net.errors[b],
        [IrcError::NickInUse {
            tried: vec!["bob".into(), "bob_1".into(), "bob_2".into()]
        }]
    );
    assert_eq!(net.clients[b].state(), State::Closed);
    let last = net.server.received[b].last().unwrap();
    assert!(
        last.starts_with("QUIT :wirebench: nickname in use"),
        "{last}"
    );
    assert!(matches!(net.events[b].last(), Some(Event::Closed { .. })));
}

#[test]
fn erroneous_nick_is_final() {
    let mut net = Net::new(FakeServer::new());
    let a = net.connect(cfg("bad#nick"));
    net.pump();
    assert!(matches!(
        &net.errors[a][..],
        [IrcError::NickRejected { code: 432, nick, .. }] if nick == "bad#nick"
    ));
}

#[test]
fn privmsg_both_ways_and_in_a_channel() {
    let mut net = Net::new(FakeServer::new());
    let a = net.connect(cfg("alice"));
    let b = net.connect(cfg("bob"));
    net.pump();
    net.clients[a].privmsg("bob", "hello bob: 1 2 3").unwrap();
    net.pump();
    assert_eq!(
        net.messages(b),
        [("alice".into(), "bob".into(), "hello bob: 1 2 3".into())]
    );
    net.clients[b].privmsg("alice", ":-) back").unwrap();
    net.pump();
    assert_eq!(
        net.messages(a),
        [("bob".into(), "alice".into(), ":-) back".into())]
    );
    assert_eq!(
        net.server.received[b].last().unwrap(),
        "PRIVMSG alice ::-) back"
    );

    net.clients[a].join("#bench").unwrap();
    net.clients[b].join("#bench").unwrap();
    net.pump();
    assert!(net.events[a].contains(&Event::Joined {
        channel: "#bench".into()
    }));
    // Bob's join reaches Alice as someone else's JOIN.
    assert!(net.events[a].iter().any(
        |e| matches!(e, Event::Other(m) if m.command == "JOIN" && m.source_nick() == Some("bob"))
    ));
    net.clients[a].privmsg("#bench", "to all").unwrap();
    net.pump();
    assert_eq!(
        net.messages(b).last().unwrap(),
        &("alice".into(), "#bench".into(), "to all".into())
    );
    assert!(net.errors.iter().all(|e| e.is_empty()));
}

#[test]
fn pings_both_ways_and_numeric_errors() {
    let mut net = Net::new(FakeServer::new());
    let a = net.connect(cfg("alice"));
    net.pump();
    // Server PING after registration: answered at once.
    net.clients[a]
        .handle_input(0, b"PING :irc.test\r\n")
        .unwrap();
    assert_eq!(take(&mut net.clients[a]).unwrap(), b"PONG :irc.test\r\n");
    net.clients[a].ping("t42").unwrap();
    net.pump();
    assert!(net.events[a].contains(&Event::Pong {
        token: "t42".into()
    }));
    net.clients[a].privmsg("nobody", "x").unwrap();
    net.clients[a].send_raw("FROB").unwrap();
    net.pump();
    assert!(net.events[a].contains(&Event::NumericError {
        code: 401,
        params: vec!["nobody".into(), "No such nick or channel name".into()],
        text: "No such nick or channel name".into()
    }));
    assert!(
        net.events[a]
            .iter()
            .any(|e| matches!(e, Event::NumericError { code: 421, .. }))
    );
}

#[test]
fn quit_then_error_then_eof_is_clean() {
    let mut net = Net::new(FakeServer::new());
    let a = net.connect(cfg("alice"));
    net.pump();
    net.clients[a].quit("done").unwrap();
    net.pump();
    assert_eq!(net.server.received[a].last().unwrap(), "QUIT :done");
    assert_eq!(
        net.events[a].last().unwrap(),
        &Event::Closed {
            reason: "Closing connection: done".into()
        }
    );
    assert_eq!(net.clients[a].handle_eof(), Ok(()));
    assert_eq!(net.clients[a].privmsg("x", "y"), Err(IrcError::Closed));
    assert_eq!(
        net.clients[a].handle_input(0, b"x\r\n"),
        Err(IrcError::Closed)
    );
}

#[test]
fn long_payload_is_split_to_fit_the_relayed_line_and_reassembled() {
    let mut s = FakeServer::new();
    // A long host makes the relayed prefix long: the split must account for it.
    s.host = "h".repeat(60);
    let mut net = Net::new(s);
    let a = net.connect(cfg("alice"));
    let b = net.connect(cfg("bob"));
    net.pump();
    let payload: String = (0..1500)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    // One PRIVMSG with the whole payload is refused, naming split_payload.
    let e = net.clients[a].privmsg("bob", &payload).unwrap_err();
    assert!(e.to_string().contains("split_payload"), "{e}");
    // A text that fits from the client but not once relayed is refused too.
    let room = net.clients[a].text_room("bob");
    assert!(
        net.clients[a]
            .privmsg("bob", &"x".repeat(room + 1))
            .is_err()
    );
    net.clients[a].privmsg("bob", &"x".repeat(room)).unwrap();
    let n = net.clients[a].send_payload("bob", &payload).unwrap();
    assert_eq!(n, 4);
    net.pump();
    // The fake server asserted every relayed line <= 512; the fullest ones are exactly 512.
    assert!(net.server.sent[b].iter().any(|l| l.len() == MAX_LINE));
    let mut r = Reassembler::new();
    let mut out = Vec::new();
    for (from, target, text) in net.messages(b).into_iter().skip(1) {
        if let Some(m) = r.push(&from, &target, &text).unwrap() {
            out.push(m);
        }
    }
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].payload, payload);
    assert_eq!(out[0].pieces, 4);
    assert!(out[0].was_split());
}

#[test]
fn split_before_welcome_assumes_the_worst_case_host() {
    let c = Client::new(cfg("alice"), 0);
    assert_eq!(c.mask_len(), "alice!~alice@".len() + split::MAX_HOST);
}

#[test]
fn line_without_end_within_512_bytes_closes_the_session() {
    let mut net = Net::new(FakeServer::new());
    let a = net.connect(cfg("alice"));
    net.pump();
    let c = &mut net.clients[a];
    let mut long = b":irc.test NOTICE alice :".to_vec();
    long.resize(511, b'x');
    assert_eq!(c.handle_input(0, &long), Ok(()), "not over the limit yet");
    assert_eq!(
        c.handle_input(0, b"x"),
        Err(IrcError::LineTooLong { tagged: false })
    );
    assert_eq!(c.state(), State::Closed);
    let out = String::from_utf8(take(c).unwrap()).unwrap();
    assert!(
        out.starts_with("QUIT :wirebench: the server sent a line longer than 512"),
        "{out}"
    );
    assert!(out.len() <= MAX_LINE);
    let mut ev = Vec::new();
    while let Some(e) = c.poll_event() {
        ev.push(e);
    }
    assert!(matches!(ev.last(), Some(Event::Closed { reason }) if reason.contains("512")));
    assert_eq!(c.handle_input(0, b"\r\n"), Err(IrcError::Closed));
    // IRCv3 tags may extend a line beyond 512 bytes; the rest must still fit.
    let mut c = Client::new(cfg("alice"), 0);
    let tagged = format!("@{} :irc.test NOTICE * :hi\r\n", "k=v;".repeat(200));
    assert_eq!(c.handle_input(0, tagged.as_bytes()), Ok(()));
    assert!(matches!(c.poll_event(), Some(Event::Notice { text, .. }) if text == "hi"));
}

#[test]
fn malformed_lines_are_clear_errors() {
    let cases: [(&[u8], &str); 6] = [
        (
            b":irc.test 99x alice :bad numeric\r\n",
            "neither a word nor a 3-digit",
        ),
        (
            b":irc.test 0012 alice :x\r\n",
            "neither a word nor a 3-digit",
        ),
        (b":irc.test NOTICE alice :a\0b\r\n", "NUL"),
        (b":irc.test\r\n", "prefix without a command"),
        (b"PRIVMSG alice\r\n", "PRIVMSG needs at least 2 parameters"),
        (b"NOTICE a :x\ry\r\n", "CR inside a line"),
    ];
    for (bytes, needle) in cases {
        let mut c = Client::new(cfg("alice"), 0);
        let e = c.handle_input(0, bytes).unwrap_err();
        assert!(e.to_string().contains(needle), "{e} / {needle}");
        assert_eq!(c.state(), State::Closed);
    }
}

#[test]
fn empty_lines_are_ignored_and_input_may_arrive_byte_by_byte() {
    let mut c = Client::new(cfg("alice"), 0);
    let _ = take(&mut c);
    let input = b"\r\n\n   \r\nPING :a b\r\n:irc.test 001 alice :Welcome alice!~alice@h\n";
    for b in input {
        c.handle_input(0, std::slice::from_ref(b)).unwrap();
    }
    assert_eq!(take(&mut c).unwrap(), b"PONG :a b\r\n");
    assert!(matches!(c.poll_event(), Some(Event::Registered { .. })));
    assert_eq!(c.poll_event(), None);
    // EOF in the middle of a line is reported.
    c.handle_input(0, b":irc.test NOTICE").unwrap();
    assert!(
        c.handle_eof()
            .unwrap_err()
            .to_string()
            .contains("middle of a line")
    );
}

#[test]
fn usage_errors() {
    let mut c = Client::new(cfg("alice"), 0);
    assert!(matches!(c.privmsg("bob", "x"), Err(IrcError::Usage(_))));
    assert!(matches!(c.join("#c"), Err(IrcError::Usage(_))));
    c.handle_input(0, b":s 001 alice :Welcome alice!~alice@h\r\n")
        .unwrap();
    assert!(c.privmsg("bob", "").is_err());
    assert!(c.privmsg("bob", "a\r\nQUIT").is_err());
    assert!(c.privmsg("two words", "x").is_err());
    assert!(c.join("#a,#b").is_err());
    assert!(c.send_raw(&"x".repeat(511)).is_err());
    assert!(c.send_payload("bob", "a\nb").is_err());
    let mut bad = Client::new(Config::new("has space"), 0);
    assert_eq!(take(&mut bad), None);
    assert!(matches!(bad.handle_input(0, b""), Err(IrcError::Config(_))));
}

#[test]
fn registration_timeout() {
    let mut c = Client::new(cfg("alice"), 1_000);
    let t = c.poll_timeout().unwrap();
    assert_eq!(t, 1_000 + 30_000_000_000);
    assert_eq!(c.handle_timeout(t - 1), Ok(()));
    assert!(c.handle_timeout(t).is_err());
    assert_eq!(c.state(), State::Closed);
    let mut c = Client::new(cfg("alice"), 0);
    c.handle_input(0, b":s 001 alice :hi\r\n").unwrap();
    assert_eq!(c.poll_timeout(), None);
    assert_eq!(c.mask(), None, "001 without a mask");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        cut in any::<usize>(),
        registered in any::<bool>(),
    ) {
        let mut c = Client::new(cfg("alice"), 0);
        if registered {
            c.handle_input(0, b":s 001 alice :Welcome alice!~alice@h\r\n").unwrap();
        }
        let cut = cut % (bytes.len() + 1);
        let _ = c.handle_input(0, &bytes[..cut]).and_then(|()| c.handle_input(0, &bytes[cut..]));
        let _ = c.handle_eof();
        while c.poll_event().is_some() {}
        if let Some(out) = take(&mut c) {
            // Whatever the input, what the engine sends is well-formed lines <= 512.
            let mut lb = LineBuffer::new();
            lb.push(&out);
            while let Some(r) = lb.next_line().unwrap() {
                prop_assert!(r.len() + 2 <= MAX_LINE);
                prop_assert!(Message::parse(&lb.buf()[r]).is_ok());
            }
        }
        let mut fuzz = vec![u8::from(registered)];
        fuzz.extend_from_slice(&bytes);
        wirebench_irc::fuzz_input(&fuzz);
    }

    #[test]
    fn ircish_lines_never_panic(
        lines in proptest::collection::vec(
            "(@[a-z=;]{0,8} )?(:[a-z!@.~]{0,12} )?([A-Z]{1,7}|[0-9]{3}|[0-9a-z]{1,4})( [^ \r\n\0]{0,10}){0,4}( :[^\r\n\0]{0,30})?",
            0..20),
    ) {
        let mut c = Client::new(cfg("alice"), 0);
        for l in lines {
            if c.handle_input(0, format!("{l}\r\n").as_bytes()).is_err() {
                break;
            }
        }
        while c.poll_event().is_some() {}
    }

    #[test]
    fn split_and_reassemble_round_trip(
        payload in "[^\r\n\0]{0,3000}",
        target in "[#a-z]{1,40}",
        mask_len in 5usize..200,
    ) {
        let parts = split::split_payload(mask_len, &target, &payload).unwrap();
        let room = split::text_room(mask_len, &target);
        let mut r = Reassembler::new();
        let mut done = None;
        for (i, p) in parts.iter().enumerate() {
            prop_assert!(p.len() <= room, "{} > {}", p.len(), room);
            prop_assert!(!p.is_empty());
            let out = r.push("alice", &target, p).unwrap();
            prop_assert_eq!(out.is_some(), i + 1 == parts.len());
            done = done.or(out);
        }
        let done = done.unwrap();
        prop_assert_eq!(&done.payload, &payload);
        prop_assert_eq!(done.pieces, parts.len());
        prop_assert_eq!(done.was_split(), parts.len() > 1);
        prop_assert_eq!(r.pending(), 0);
    }

    #[test]
    fn parse_and_build_round_trip(
        prefix in proptest::option::of("[a-z]{1,8}![a-z~]{1,8}@[a-z.]{1,12}"),
        command in "[A-Z]{1,8}|[0-9]{3}",
        middle in proptest::collection::vec("[^ :\r\n\0][^ \r\n\0]{0,10}", 0..5),
        trailing in proptest::option::of("[^\r\n\0]{0,40}"),
    ) {
        let mut params: Vec<&str> = middle.iter().map(|s| s.as_str()).collect();
        if let Some(t) = &trailing {
            params.push(t);
        }
        let mut m = Message::new(&command, &params);
        m.prefix = prefix.clone();
        let line = m.to_line();
        let parsed = Message::parse(line.trim_end_matches("\r\n").as_bytes()).unwrap().unwrap();
        prop_assert_eq!(parsed, m);
    }
}

#[test]
fn split_counts_are_exact_at_the_boundary() {
    // A payload that exactly fills one piece stays one line; one byte more makes two.
    let mask = "alice!~alice@198.18.0.1".len();
    let room = split::text_room(mask, "bob") - "1/1 ".len();
    let one = "x".repeat(room);
    assert_eq!(split::split_payload(mask, "bob", &one).unwrap().len(), 1);
    let two = "x".repeat(room + 1);
    assert_eq!(split::split_payload(mask, "bob", &two).unwrap().len(), 2);
}
