//! The client engine: registration (RFC 2812 §3.1: `PASS`, `NICK`, `USER`, up to
//! RPL_WELCOME), PING/PONG (§3.7.2-3), channels (`JOIN` §3.2.1), messages (`PRIVMSG`
//! §3.3.1), `QUIT` (§3.1.7) and the server's `ERROR` (§3.7.4).
//!
//! Sans-IO in the quinn-proto style, through the one engine trait
//! ([`wirebench_engine::Engine`], the only way in): bytes in through
//! [`Client::handle_input`], bytes out through [`Client::poll_transmit`], what happened
//! through [`Client::poll_event`]; no socket, no clock (times are arguments in
//! nanoseconds), no thread.
//!
//! Registration details that matter with real servers:
//! - A server may send `PING :cookie` before RPL_WELCOME and register the client only
//!   once the matching `PONG` arrives (ngircd's `RequireAuthPing`): every PING, before
//!   or after registration, is answered at once with its parameter.
//! - 433 ERR_NICKNAMEINUSE (or 437 ERR_UNAVAILRESOURCE) during registration: the engine
//!   retries with `<nick>_<n>` (n = 1, 2, ...), at most [`Config::nick_retries`] times,
//!   then fails with [`IrcError::NickInUse`]. 432 ERR_ERRONEUSNICKNAME is final.
//! - RPL_WELCOME's first parameter is the nickname the server registered, and ngircd
//!   ends its text with the full `nick!user@host` mask, which [`Client::split_payload`]
//!   uses to size message pieces (see [`crate::split`]).

use std::collections::VecDeque;

use crate::error::IrcError;
use crate::limits::MAX_LINE;
use crate::line::{LineBuffer, Message, build, split_mask};
use crate::split;

/// One session's identity.
#[derive(Debug, Clone)]
pub struct Config {
    pub nick: String,
    /// User name for `USER` (servers prefix it with `~` without ident).
    pub user: String,
    pub realname: String,
    /// Connection password (`PASS`), sent first when set.
    pub password: Option<String>,
    /// How many other nicknames to try after 433 during registration.
    pub nick_retries: u32,
    /// Give up if RPL_WELCOME has not arrived this long after [`Client::new`]
    /// (see [`Client::poll_timeout`]); `None` = wait forever.
    pub register_timeout_ns: Option<u64>,
}

impl Config {
    /// User and real name = nickname, no password, 5 nickname retries, 30 s to register.
    pub fn new(nick: &str) -> Config {
        Config {
            nick: nick.to_string(),
            user: nick.to_string(),
            realname: nick.to_string(),
            password: None,
            nick_retries: 5,
            register_timeout_ns: Some(30_000_000_000),
        }
    }
}

/// Coarse session state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// `NICK`/`USER` sent, no RPL_WELCOME yet.
    Registering,
    Registered,
    Closed,
}

/// What happened, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// RPL_WELCOME: `nick` is the registered nickname (after any 433 retries), `mask` our
    /// `nick!user@host` if the server said it.
    Registered { nick: String, mask: Option<String> },
    /// The server confirmed our own `JOIN`.
    Joined { channel: String },
    /// A `PRIVMSG`: `from` is the sender's nickname, `target` our nick or a channel.
    Message {
        from: String,
        target: String,
        text: String,
    },
    /// A `NOTICE` (from a user or the server).
    Notice {
        from: String,
        target: String,
        text: String,
    },
    /// The answer to [`Client::ping`].
    Pong { token: String },
    /// A 4xx/5xx error reply: `params` without our nickname, `text` the trailing text.
    NumericError {
        code: u16,
        params: Vec<String>,
        text: String,
    },
    /// Any other numeric reply (`params` without our nickname): 002-005, LUSERS, LINKS,
    /// NAMES, MOTD...
    Reply { code: u16, params: Vec<String> },
    /// Anything else (others' JOIN/PART/QUIT, MODE, NICK, ...).
    Other(Message),
    /// The session ended: the server's `ERROR` text, or the engine's error.
    Closed { reason: String },
}

/// A sans-IO IRC client session.
#[derive(Debug)]
pub struct Client {
    cfg: Config,
    config_error: Option<String>,
    /// The nickname last sent in `NICK` (the registered one once registered).
    nick: String,
    tried: Vec<String>,
    mask: Option<String>,
    server: Option<String>,
    lines: LineBuffer,
    out: Vec<u8>,
    events: VecDeque<Event>,
    state: State,
    quit_sent: bool,
    started_ns: u64,
    /// Totals on this session.
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub lines_in: u64,
    pub lines_out: u64,
}

fn check_word(what: &str, v: &str) -> Result<(), String> {
    if v.is_empty() || v.contains([' ', '\r', '\n', '\0']) || v.starts_with(':') {
        Err(format!(
            "Config::{what} {v:?} must be non-empty, without spaces, CR, LF or NUL, and not \
             start with ':'"
        ))
    } else {
        Ok(())
    }
}

impl Client {
    /// A session that has queued its registration (`PASS`, `NICK`, `USER`). An invalid
    /// configuration surfaces as [`IrcError::Config`] from the first input.
    pub fn new(cfg: Config, now_ns: u64) -> Client {
        let config_error = check_word("nick", &cfg.nick)
            .and_then(|()| check_word("user", &cfg.user))
            .and_then(|()| match &cfg.password {
                Some(p) => check_word("password", p),
                None => Ok(()),
            })
            .and_then(|()| {
                if cfg.realname.contains(['\r', '\n', '\0']) {
                    Err("Config::realname must not contain CR, LF or NUL".into())
                } else {
                    Ok(())
                }
            })
            .err();
        let mut c = Client {
            nick: cfg.nick.clone(),
            tried: vec![cfg.nick.clone()],
            cfg,
            config_error,
            mask: None,
            server: None,
            lines: LineBuffer::new(),
            out: Vec::new(),
            events: VecDeque::new(),
            state: State::Registering,
            quit_sent: false,
            started_ns: now_ns,
            bytes_in: 0,
            bytes_out: 0,
            lines_in: 0,
            lines_out: 0,
        };
        if c.config_error.is_none() {
            if let Some(p) = c.cfg.password.clone() {
                c.send_built(build("PASS", &[&p], None));
            }
            let nick = c.nick.clone();
            c.send_built(build("NICK", &[&nick], None));
            let (user, real) = (c.cfg.user.clone(), c.cfg.realname.clone());
            c.send_built(build("USER", &[&user, "0", "*"], Some(&real)));
        }
        c
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// The current nickname (the registered one once [`Event::Registered`] was emitted).
    pub fn nick(&self) -> &str {
        &self.nick
    }

    /// Our `nick!user@host` as RPL_WELCOME gave it.
    pub fn mask(&self) -> Option<&str> {
        self.mask.as_deref()
    }

    /// The server's name (prefix of RPL_WELCOME).
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    // ---- commands ----

    fn require_registered(&self, what: &str) -> Result<(), IrcError> {
        match self.state {
            State::Registered => Ok(()),
            State::Closed => Err(IrcError::Closed),
            State::Registering => Err(IrcError::Usage(format!(
                "{what} before registration: wait for Event::Registered"
            ))),
        }
    }

    /// `JOIN channel`; [`Event::Joined`] follows when the server confirms.
    pub fn join(&mut self, channel: &str) -> Result<(), IrcError> {
        self.require_registered("JOIN")?;
        if channel.contains([',', '\x07']) {
            return Err(IrcError::Usage(format!(
                "channel name {channel:?} must not contain ',' or BEL"
            )));
        }
        let l = build("JOIN", &[channel], None)?;
        self.push_line(l);
        Ok(())
    }

    /// `PRIVMSG target :text`. The text must be non-empty, free of CR/LF/NUL and fit the
    /// line *as the server relays it* with our prefix (otherwise ngircd cuts it and
    /// appends `[CUT]`): use [`Client::split_payload`] for longer texts.
    pub fn privmsg(&mut self, target: &str, text: &str) -> Result<(), IrcError> {
        self.require_registered("PRIVMSG")?;
        if text.is_empty() {
            return Err(IrcError::Usage(
                "PRIVMSG with an empty text (the server answers 412 ERR_NOTEXTTOSEND)".into(),
            ));
        }
        let room = self.text_room(target);
        if text.len() > room {
            return Err(IrcError::Usage(format!(
                "PRIVMSG text of {} bytes to {target:?}: only {room} fit once the server adds \
                 our {}-byte prefix (RFC 2812 §2.3: 512 bytes per line); use split_payload",
                text.len(),
                self.mask_len()
            )));
        }
        let l = build("PRIVMSG", &[target], Some(text))?;
        self.push_line(l);
        Ok(())
    }

    /// `PING :token`; the server's `PONG` gives [`Event::Pong`].
    pub fn ping(&mut self, token: &str) -> Result<(), IrcError> {
        if self.state == State::Closed {
            return Err(IrcError::Closed);
        }
        let l = build("PING", &[], Some(token))?;
        self.push_line(l);
        Ok(())
    }

    /// Any command line (without CR LF), checked for length and forbidden bytes: `LINKS`,
    /// `LUSERS`, `MODE`...
    pub fn send_raw(&mut self, line: &str) -> Result<(), IrcError> {
        if self.state == State::Closed {
            return Err(IrcError::Closed);
        }
        if line.contains(['\r', '\n', '\0']) || line.len() + 2 > MAX_LINE {
            return Err(IrcError::Usage(format!(
                "raw line must be at most {} bytes without CR, LF or NUL",
                MAX_LINE - 2
            )));
        }
        self.push_line(format!("{line}\r\n"));
        Ok(())
    }

    /// `QUIT :message`; the server answers `ERROR` and closes ([`Event::Closed`]).
    pub fn quit(&mut self, message: &str) -> Result<(), IrcError> {
        if self.state == State::Closed {
            return Err(IrcError::Closed);
        }
        if !self.quit_sent {
            let l = build("QUIT", &[], Some(message))?;
            self.push_line(l);
            self.quit_sent = true;
        }
        Ok(())
    }

    /// Length of our mask as the servers relay it: the one RPL_WELCOME gave, or the
    /// worst case (see [`crate::split`]).
    pub fn mask_len(&self) -> usize {
        match &self.mask {
            Some(m) => m.len(),
            None => split::worst_case_mask_len(&self.nick, &self.cfg.user),
        }
    }

    /// Room for one `PRIVMSG` text to `target`.
    pub fn text_room(&self, target: &str) -> usize {
        split::text_room(self.mask_len(), target)
    }

    /// Splits a workload payload into framed texts that each fit (see [`crate::split`]).
    pub fn split_payload(&self, target: &str, payload: &str) -> Result<Vec<String>, IrcError> {
        split::split_payload(self.mask_len(), target, payload)
    }

    /// Splits and queues a payload as `PRIVMSG`s; returns how many lines it took.
    pub fn send_payload(&mut self, target: &str, payload: &str) -> Result<usize, IrcError> {
        self.require_registered("PRIVMSG")?;
        let parts = self.split_payload(target, payload)?;
        for p in &parts {
            self.privmsg(target, p)?;
        }
        Ok(parts.len())
    }

    // ---- output ----

    fn push_line(&mut self, l: String) {
        self.bytes_out += l.len() as u64;
        self.lines_out += 1;
        self.out.extend_from_slice(l.as_bytes());
    }

    /// Lines built from checked configuration cannot fail; a failure would be an engine
    /// bug, reported rather than sent.
    fn send_built(&mut self, l: Result<String, IrcError>) {
        match l {
            Ok(l) => self.push_line(l),
            Err(e) => {
                if self.config_error.is_none() {
                    self.config_error = Some(e.to_string());
                }
            }
        }
    }

    fn fail(&mut self, e: &IrcError) {
        if self.state == State::Closed {
            return;
        }
        // Nothing was sent with a bad configuration: no QUIT either.
        if !self.quit_sent && !matches!(e, IrcError::Config(_)) {
            let mut reason = format!("wirebench: {e}");
            reason.retain(|c| !matches!(c, '\r' | '\n' | '\0'));
            let mut cut = reason.len().min(400);
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            reason.truncate(cut);
            let l = build("QUIT", &[], Some(&reason));
            self.send_built(l);
            self.quit_sent = true;
        }
        self.state = State::Closed;
        self.events.push_back(Event::Closed {
            reason: e.to_string(),
        });
    }

    // ---- input ----

    fn input(&mut self, bytes: &[u8]) -> Result<(), IrcError> {
        self.lines.push(bytes);
        while let Some(r) = self.lines.next_line()? {
            self.lines_in += 1;
            let Some(m) = Message::parse(&self.lines.buf()[r])? else {
                continue;
            };
            self.on_message(m)?;
            if self.state == State::Closed {
                break;
            }
        }
        Ok(())
    }

    fn param(m: &Message, i: usize) -> Result<&str, IrcError> {
        m.params
            .get(i)
            .map(|s| s.as_str())
            .ok_or_else(|| IrcError::Malformed {
                why: format!("{} needs at least {} parameters", m.command, i + 1),
                line: m.to_line().trim_end().to_string(),
            })
    }

    fn on_message(&mut self, m: Message) -> Result<(), IrcError> {
        if let Some(code) = m.numeric() {
            return self.on_numeric(code, m);
        }
        match m.command.as_str() {
            "PING" => {
                // Echo the token (a cookie before registration with ngircd's
                // RequireAuthPing); RFC 2812 §3.7.2 allows a PING without parameters.
                let token = m.params.first().map_or("", |s| s.as_str());
                let l = build("PONG", &[], Some(token))?;
                self.push_line(l);
            }
            "PONG" => self.events.push_back(Event::Pong {
                token: m.trailing().to_string(),
            }),
            "ERROR" => {
                self.state = State::Closed;
                self.events.push_back(Event::Closed {
                    reason: m.trailing().to_string(),
                });
            }
            "PRIVMSG" | "NOTICE" => {
                let target = Self::param(&m, 0)?.to_string();
                let text = Self::param(&m, 1)?.to_string();
                let from = m.source_nick().unwrap_or("").to_string();
                self.events.push_back(if m.command == "PRIVMSG" {
                    Event::Message { from, target, text }
                } else {
                    Event::Notice { from, target, text }
                });
            }
            "JOIN"
                if m.source_nick()
                    .is_some_and(|n| n.eq_ignore_ascii_case(&self.nick)) =>
            {
                let channel = Self::param(&m, 0)?.to_string();
                self.events.push_back(Event::Joined { channel });
            }
            _ => self.events.push_back(Event::Other(m)),
        }
        Ok(())
    }

    fn on_numeric(&mut self, code: u16, mut m: Message) -> Result<(), IrcError> {
        // The first parameter of a numeric is the target (our nick, or `*` early on).
        let to = if m.params.is_empty() {
            String::new()
        } else {
            m.params.remove(0)
        };
        let registering = self.state == State::Registering;
        match code {
            1 => {
                if !registering {
                    return Ok(());
                }
                // The target is the nickname the server registered.
                if !to.is_empty() && to != "*" {
                    self.nick = to;
                }
                let nick = self.nick.clone();
                // RFC 2812 §5.1: "Welcome to the Internet Relay Network <nick>!<user>@<host>".
                self.mask = m
                    .trailing()
                    .rsplit(' ')
                    .next()
                    .filter(|w| {
                        let (n, u, h) = split_mask(w);
                        u.is_some() && h.is_some() && n.eq_ignore_ascii_case(&nick)
                    })
                    .map(str::to_string);
                self.server = m.prefix.clone();
                self.state = State::Registered;
                self.events.push_back(Event::Registered {
                    nick,
                    mask: self.mask.clone(),
                });
            }
            433 | 437 if registering => {
                if self.tried.len() as u64 > u64::from(self.cfg.nick_retries) {
                    return Err(IrcError::NickInUse {
                        tried: self.tried.clone(),
                    });
                }
                let next = format!("{}_{}", self.cfg.nick, self.tried.len());
                self.tried.push(next.clone());
                self.nick = next.clone();
                let l = build("NICK", &[&next], None)?;
                self.push_line(l);
            }
            432 if registering => {
                return Err(IrcError::NickRejected {
                    nick: self.nick.clone(),
                    code,
                    text: m.trailing().to_string(),
                });
            }
            400..=599 => {
                let text = m.trailing().to_string();
                self.events.push_back(Event::NumericError {
                    code,
                    params: m.params,
                    text,
                });
            }
            _ => self.events.push_back(Event::Reply {
                code,
                params: m.params,
            }),
        }
        Ok(())
    }
}

/// The one engine shape (`wirebench-engine`). IRC has no clock of its own beyond the
/// registration deadline, so `now` only matters to the timer.
impl wirebench_engine::Engine for Client {
    type Event = Event;
    type Error = IrcError;

    /// Feeds bytes received from the transport. An error ends the session: the engine
    /// queues a `QUIT`, emits [`Event::Closed`] and refuses further input with
    /// [`IrcError::Closed`]. The server's `ERROR` also ends it, without an error.
    fn handle_input(&mut self, _now: u64, bytes: &[u8]) -> Result<(), IrcError> {
        if self.state == State::Closed {
            return Err(IrcError::Closed);
        }
        self.bytes_in += bytes.len() as u64;
        let r = match self.config_error.take() {
            Some(e) => Err(IrcError::Config(e)),
            None => self.input(bytes),
        };
        if let Err(e) = &r {
            self.fail(e);
        }
        r
    }

    /// The transport reached end of file. `Ok` if the session had ended (ERROR seen or
    /// QUIT sent); otherwise an error saying what was cut off.
    fn handle_eof(&mut self) -> Result<(), IrcError> {
        if self.state == State::Closed {
            return Ok(());
        }
        if self.quit_sent && self.lines.buffered() == 0 {
            self.state = State::Closed;
            self.events.push_back(Event::Closed {
                reason: "connection closed after QUIT".into(),
            });
            return Ok(());
        }
        let held = self.lines.buffered();
        let e = IrcError::Malformed {
            why: if held > 0 {
                format!("connection closed in the middle of a line ({held} bytes unfinished)")
            } else {
                "connection closed by the server without ERROR".into()
            },
            line: String::new(),
        };
        self.fail(&e);
        Err(e)
    }

    /// When [`Client::handle_timeout`] wants to be called: the registration deadline
    /// while registering.
    fn poll_timeout(&self) -> Option<u64> {
        match (self.state, self.cfg.register_timeout_ns) {
            (State::Registering, Some(t)) => Some(self.started_ns.saturating_add(t)),
            _ => None,
        }
    }

    /// Fails the session if registration has not finished by its deadline.
    fn handle_timeout(&mut self, now_ns: u64) -> Result<(), IrcError> {
        if self.poll_timeout().is_some_and(|t| now_ns >= t) {
            let e = IrcError::Usage(format!(
                "no RPL_WELCOME within {} ms of connecting (Config::register_timeout_ns)",
                (now_ns - self.started_ns) / 1_000_000
            ));
            self.fail(&e);
            return Err(e);
        }
        Ok(())
    }

    /// Appends everything queued since the last call to `buf`.
    fn poll_transmit(&mut self, _now: u64, buf: &mut Vec<u8>) -> usize {
        let n = self.out.len();
        buf.append(&mut self.out);
        n
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
