//! The line layer of RFC 1459 §2.3 / RFC 2812 §2.3: CR LF terminated lines of at most
//! 512 bytes (terminator included), each `[:prefix SP] command [params] [SP :trailing]`.
//!
//! - [`LineBuffer`] cuts the received byte stream into lines, resumably, and refuses a
//!   line that has not ended within 512 bytes (so the buffer never holds more than one
//!   maximum line plus what the last read brought). A bare LF also ends a line, as most
//!   servers and clients accept.
//! - [`Message::parse`] parses one line; [`Message::to_line`] writes one. Bytes that are
//!   not UTF-8 are replaced (U+FFFD): RFC 2812 does not fix a charset, ngircd announces
//!   `CHARSET=UTF-8`.
//! - IRCv3 message tags (`@k=v;... `, ircv3.net/specs/extensions/message-tags) are
//!   tolerated and skipped: the tag section may add up to [`MAX_TAGS`] bytes in front of
//!   the 512. ngircd never sends them.

use crate::error::IrcError;
use crate::limits::{MAX_LINE, MAX_TAGS};
use std::ops::Range;

/// Cuts a byte stream into lines (without their CR LF).
#[derive(Debug, Default)]
pub struct LineBuffer {
    buf: Vec<u8>,
    /// Start of the first byte not yet returned.
    start: usize,
}

impl LineBuffer {
    pub fn new() -> LineBuffer {
        LineBuffer::default()
    }

    /// Appends received bytes. Ranges returned before are invalid afterwards.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && (self.start == self.buf.len() || self.start >= 4096) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete line as a range of [`LineBuffer::buf`] (CR LF or LF stripped),
    /// `None` if no complete line is buffered, or [`IrcError::LineTooLong`] if the line
    /// has gone past its limit without ending (the stream cannot be resynchronized).
    pub fn next_line(&mut self) -> Result<Option<Range<usize>>, IrcError> {
        let rest = &self.buf[self.start..];
        if rest.is_empty() {
            return Ok(None);
        }
        let tagged = rest[0] == b'@';
        let limit = if tagged {
            MAX_TAGS + MAX_LINE
        } else {
            MAX_LINE
        };
        let window = &rest[..rest.len().min(limit)];
        match window.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let mut end = self.start + i;
                if end > self.start && self.buf[end - 1] == b'\r' {
                    end -= 1;
                }
                let r = self.start..end;
                self.start += i + 1;
                Ok(Some(r))
            }
            None if rest.len() >= limit => Err(IrcError::LineTooLong { tagged }),
            None => Ok(None),
        }
    }

    pub fn buf(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes of an unfinished line.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }
}

/// One parsed IRC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `nick!user@host` or a server name, without the `:`.
    pub prefix: Option<String>,
    /// Upper-cased command word, or a 3-digit numeric.
    pub command: String,
    /// Middle parameters then the trailing one (its `:` removed).
    pub params: Vec<String>,
}

fn malformed(why: &str, line: &str) -> IrcError {
    IrcError::Malformed {
        why: why.to_string(),
        line: line.to_string(),
    }
}

impl Message {
    pub fn new(command: &str, params: &[&str]) -> Message {
        Message {
            prefix: None,
            command: command.to_string(),
            params: params.iter().map(|p| p.to_string()).collect(),
        }
    }

    pub fn with_prefix(mut self, prefix: &str) -> Message {
        self.prefix = Some(prefix.to_string());
        self
    }

    /// Parses one line without its terminator. Empty (or all-space) lines are `Ok(None)`:
    /// RFC 2812 §2.3.1 says they are silently ignored.
    pub fn parse(line: &[u8]) -> Result<Option<Message>, IrcError> {
        let text = String::from_utf8_lossy(line);
        if line.contains(&0) {
            return Err(IrcError::Nul {
                line: text.into_owned(),
            });
        }
        if line.contains(&b'\r') {
            return Err(malformed("CR inside a line", &text));
        }
        let mut s: &str = &text;
        if let Some(tagged) = s.strip_prefix('@') {
            let Some((_, rest)) = tagged.split_once(' ') else {
                return Err(malformed("IRCv3 tags without a command", &text));
            };
            s = rest.trim_start_matches(' ');
            if s.len() + 2 > MAX_LINE {
                return Err(IrcError::LineTooLong { tagged: true });
            }
        }
        s = s.trim_start_matches(' ');
        if s.is_empty() {
            return Ok(None);
        }
        let mut prefix = None;
        if let Some(p) = s.strip_prefix(':') {
            let (p, rest) = p.split_once(' ').unwrap_or((p, ""));
            if p.is_empty() {
                return Err(malformed("empty prefix", &text));
            }
            prefix = Some(p.to_string());
            s = rest.trim_start_matches(' ');
            if s.is_empty() {
                return Err(malformed("prefix without a command", &text));
            }
        }
        let (cmd, mut rest) = s.split_once(' ').unwrap_or((s, ""));
        let word = cmd.bytes().all(|b| b.is_ascii_alphabetic());
        let numeric = cmd.len() == 3 && cmd.bytes().all(|b| b.is_ascii_digit());
        if !(word || numeric) {
            return Err(malformed(
                "command is neither a word nor a 3-digit numeric",
                &text,
            ));
        }
        let mut params = Vec::new();
        loop {
            rest = rest.trim_start_matches(' ');
            if rest.is_empty() {
                break;
            }
            if let Some(t) = rest.strip_prefix(':') {
                params.push(t.to_string());
                break;
            }
            let (p, r) = rest.split_once(' ').unwrap_or((rest, ""));
            params.push(p.to_string());
            rest = r;
        }
        Ok(Some(Message {
            prefix,
            command: cmd.to_ascii_uppercase(),
            params,
        }))
    }

    /// The numeric (`001`..`999`), if the command is one.
    pub fn numeric(&self) -> Option<u16> {
        if self.command.len() == 3 {
            self.command.parse().ok()
        } else {
            None
        }
    }

    /// The nickname part of the prefix (`nick` of `nick!user@host`), or the server name.
    pub fn source_nick(&self) -> Option<&str> {
        self.prefix.as_deref().map(|p| split_mask(p).0)
    }

    /// The last parameter (usually the trailing text), or `""`.
    pub fn trailing(&self) -> &str {
        self.params.last().map_or("", |s| s.as_str())
    }

    /// The line as sent on the wire, CR LF included. The last parameter is written as
    /// trailing (`:`) when it must be (empty, has a space or starts with `:`). No
    /// validation: see [`build`] for checked output.
    pub fn to_line(&self) -> String {
        let mut s = String::new();
        if let Some(p) = &self.prefix {
            s.push(':');
            s.push_str(p);
            s.push(' ');
        }
        s.push_str(&self.command);
        for (i, p) in self.params.iter().enumerate() {
            s.push(' ');
            let last = i + 1 == self.params.len();
            if last && (p.is_empty() || p.contains(' ') || p.starts_with(':')) {
                s.push(':');
            }
            s.push_str(p);
        }
        s.push_str("\r\n");
        s
    }
}

/// `nick!user@host` into its parts; a name without `!` is all nick (or a server).
pub fn split_mask(mask: &str) -> (&str, Option<&str>, Option<&str>) {
    let (front, host) = match mask.split_once('@') {
        Some((f, h)) => (f, Some(h)),
        None => (mask, None),
    };
    match front.split_once('!') {
        Some((n, u)) => (n, Some(u), host),
        None => (front, None, host),
    }
}

/// Builds a checked client line: `COMMAND middle... [:trailing]\r\n`. Middle parameters
/// must be non-empty, space-free and not start with `:`; nothing may hold CR, LF or NUL;
/// the line must fit in [`MAX_LINE`] bytes with its CR LF.
pub fn build(command: &str, middle: &[&str], trailing: Option<&str>) -> Result<String, IrcError> {
    let bad = |s: &str| s.contains(['\r', '\n', '\0']);
    for m in middle {
        if m.is_empty() || m.contains(' ') || m.starts_with(':') || bad(m) {
            return Err(IrcError::Usage(format!(
                "{command} parameter {m:?} must be non-empty, without spaces, CR, LF or NUL \
                 and not start with ':'"
            )));
        }
    }
    let mut s = String::from(command);
    for m in middle {
        s.push(' ');
        s.push_str(m);
    }
    if let Some(t) = trailing {
        if bad(t) {
            return Err(IrcError::Usage(format!(
                "{command} text must not contain CR, LF or NUL (RFC 2812 §2.3.1)"
            )));
        }
        s.push_str(" :");
        s.push_str(t);
    }
    s.push_str("\r\n");
    if s.len() > MAX_LINE {
        return Err(IrcError::Usage(format!(
            "{command} line of {} bytes exceeds the {MAX_LINE} bytes RFC 2812 §2.3 allows \
             (CR LF included); split long texts with split_payload",
            s.len()
        )));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Message {
        Message::parse(s.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn parses_the_rfc_forms() {
        let m = p(":nick!~u@h PRIVMSG #c :hello world");
        assert_eq!(m.prefix.as_deref(), Some("nick!~u@h"));
        assert_eq!(m.command, "PRIVMSG");
        assert_eq!(m.params, ["#c", "hello world"]);
        assert_eq!(m.source_nick(), Some("nick"));
        let m = p("PING :12345");
        assert_eq!((m.prefix, m.params), (None, vec!["12345".to_string()]));
        let m = p(":srv 001 me :Welcome");
        assert_eq!(m.numeric(), Some(1));
        let m = p(":srv 005 me A=1 B :are supported");
        assert_eq!(m.params, ["me", "A=1", "B", "are supported"]);
        let m = p("@time=2024;x=y :a!b@c PRIVMSG me :hi");
        assert_eq!(m.command, "PRIVMSG");
        assert_eq!(m.trailing(), "hi");
        let m = p("privmsg  me   x  :");
        assert_eq!(m.command, "PRIVMSG");
        assert_eq!(m.params, ["me", "x", ""]);
        assert_eq!(Message::parse(b"").unwrap(), None);
        assert_eq!(Message::parse(b"   ").unwrap(), None);
    }

    #[test]
    fn rejects_what_is_not_a_message() {
        for bad in [
            &b":srv 99x me :x"[..],
            b":srv 0001 me",
            b"PRIV-MSG a b",
            b":",
            b": PING",
            b":srv",
            b"@tags-only",
            b"PING a\rb",
        ] {
            assert!(
                matches!(Message::parse(bad), Err(IrcError::Malformed { .. })),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(matches!(
            Message::parse(b"PRIVMSG a :b\0c"),
            Err(IrcError::Nul { .. })
        ));
    }

    #[test]
    fn line_buffer_limits_and_terminators() {
        let mut b = LineBuffer::new();
        b.push(b"A\r\nB\nC");
        let r = b.next_line().unwrap().unwrap();
        assert_eq!(&b.buf()[r], b"A");
        let r = b.next_line().unwrap().unwrap();
        assert_eq!(&b.buf()[r], b"B");
        assert_eq!(b.next_line().unwrap(), None);
        b.push(b"\r\n");
        let r = b.next_line().unwrap().unwrap();
        assert_eq!(&b.buf()[r], b"C");
        // 510 bytes + CR LF = 512: fine; 511 + CR LF: too long.
        let mut ok = vec![b'x'; 510];
        ok.extend_from_slice(b"\r\n");
        b.push(&ok);
        assert_eq!(b.next_line().unwrap().unwrap().len(), 510);
        let mut long = vec![b'x'; 511];
        long.extend_from_slice(b"\r\n");
        b.push(&long);
        assert_eq!(b.next_line(), Err(IrcError::LineTooLong { tagged: false }));
        // An unfinished line is only refused once it has reached the limit.
        let mut b = LineBuffer::new();
        b.push(&[b'y'; 511]);
        assert_eq!(b.next_line(), Ok(None));
        b.push(b"y");
        assert!(b.next_line().is_err());
    }

    #[test]
    fn build_checks_and_round_trips() {
        let l = build("PRIVMSG", &["#c"], Some(":-) hi")).unwrap();
        assert_eq!(l, "PRIVMSG #c ::-) hi\r\n");
        let m = p(l.trim_end());
        assert_eq!(m.params, ["#c", ":-) hi"]);
        assert!(build("PRIVMSG", &["a b"], Some("x")).is_err());
        assert!(build("PRIVMSG", &["a"], Some("x\ny")).is_err());
        assert!(build("PRIVMSG", &["a"], Some(&"x".repeat(500))).is_err());
        let m = Message::new("PRIVMSG", &["#c", "two words"]).with_prefix("n!u@h");
        assert_eq!(m.to_line(), ":n!u@h PRIVMSG #c :two words\r\n");
        assert_eq!(split_mask("n!u@h"), ("n", Some("u"), Some("h")));
        assert_eq!(split_mask("srv.test"), ("srv.test", None, None));
    }
}
