//! Workload payloads over IRC lines: splitting a payload into `PRIVMSG` texts that each
//! survive relaying intact, and putting them back together on the other side.
//!
//! # How much fits
//!
//! RFC 2812 §2.3 limits every line to 512 bytes with its CR LF, and that includes the
//! line the recipient's server writes, which carries the sender's full prefix:
//!
//! ```text
//! :nick!user@host PRIVMSG target :text\r\n      <= 512 bytes
//! ```
//!
//! So the room for `text` is `512 - 2 - len(":" + mask + " PRIVMSG " + target + " :")`,
//! computed by [`text_room`]. ngircd truncates a longer relayed line to 512 bytes and
//! marks it with `[CUT]`; it does not refuse it, so the sender would never know.
//!
//! The mask is the sender's `nick!user@host` *as the servers know it*. The engine learns
//! it from RPL_WELCOME (ngircd ends 001 with it, e.g. `alice!~alice@198.18.0.1`: a `~`
//! before the user name when there was no ident answer, the address when DNS is off).
//! Until then, or when a server's 001 lacks it, the engine assumes the worst case of
//! [`worst_case_mask_len`]: `~` + user name and a 63-byte host name (RFC 1123 label /
//! ngircd's longest host). Assumption: the servers do not rewrite the mask on the way
//! (no cloaking, no server-to-server host change) — true for the lab's ngircd configs.
//!
//! # Framing
//!
//! Each piece starts with a header `SEQ/TOTAL ` (decimal, 1-based, one space), then up
//! to the room left of the payload, split on UTF-8 character boundaries:
//!
//! ```text
//! PRIVMSG bob :1/3 <first bytes>
//! PRIVMSG bob :2/3 <next bytes>
//! PRIVMSG bob :3/3 <last bytes>
//! ```
//!
//! A payload that fits in one line is still framed (`1/1 `, 4 bytes): the receiver never
//! has to guess, and an empty payload is a valid (non-empty) text. The header's digits
//! are sized for the total, so every piece's line fits. [`Reassembler`] expects the
//! pieces of one (sender, target) pair in order, which a single IRC route guarantees
//! (one TCP connection per hop); [`Reassembled::pieces`] says whether a message was
//! split. Payloads must not contain NUL, CR or LF (IRC text cannot carry them).

use crate::error::IrcError;
use crate::limits::MAX_LINE;
use std::collections::HashMap;

/// Longest host name assumed for a prefix the server has not revealed.
pub const MAX_HOST: usize = 63;

/// Room for the text of a `PRIVMSG` to `target` from a sender whose mask
/// (`nick!user@host`) is `mask_len` bytes, once relayed with that prefix.
pub fn text_room(mask_len: usize, target: &str) -> usize {
    let fixed = 1 + mask_len + " PRIVMSG ".len() + target.len() + " :".len() + 2;
    MAX_LINE.saturating_sub(fixed)
}

/// `nick!~user@` + [`MAX_HOST`] bytes: the longest mask a server can give this sender.
pub fn worst_case_mask_len(nick: &str, user: &str) -> usize {
    nick.len() + 2 + user.len() + 1 + MAX_HOST
}

fn digits(n: usize) -> usize {
    n.to_string().len()
}

/// Splits `payload` into texts (framing header included) whose relayed line fits:
/// see the module documentation. Fails if the payload holds NUL, CR or LF, or if the
/// target and mask leave no room for even one character.
pub fn split_payload(
    mask_len: usize,
    target: &str,
    payload: &str,
) -> Result<Vec<String>, IrcError> {
    if payload.contains(['\0', '\r', '\n']) {
        return Err(IrcError::Usage(
            "an IRC payload cannot contain NUL, CR or LF (RFC 2812 §2.3.1)".into(),
        ));
    }
    let room = text_room(mask_len, target);
    // The header is `SEQ/TOTAL `: for a total of d digits at most 2d + 2 bytes.
    let mut d = 1;
    loop {
        let chunk = room.saturating_sub(2 * d + 2);
        if chunk < 4 {
            return Err(IrcError::Usage(format!(
                "target {target:?} and a {mask_len}-byte sender mask leave {room} bytes per \
                 line: too little to carry a payload"
            )));
        }
        let pieces = cut(payload, chunk);
        if digits(pieces.len()) <= d {
            let total = pieces.len();
            return Ok(pieces
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{}/{total} {p}", i + 1))
                .collect());
        }
        d += 1;
    }
}

/// Cuts `s` into pieces of at most `max` bytes (max >= 4) on character boundaries; an
/// empty string gives one empty piece.
fn cut(s: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        let mut end = (start + max).min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        out.push(&s[start..end]);
        start = end;
        if start >= s.len() {
            return out;
        }
    }
}

/// `SEQ/TOTAL rest` into its parts.
pub fn parse_header(text: &str) -> Option<(usize, usize, &str)> {
    let (head, rest) = text.split_once(' ')?;
    let (seq, total) = head.split_once('/')?;
    let ok = |s: &str| !s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit());
    if !ok(seq) || !ok(total) {
        return None;
    }
    Some((seq.parse().ok()?, total.parse().ok()?, rest))
}

/// A payload put back together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassembled {
    pub from: String,
    pub target: String,
    pub payload: String,
    /// How many lines carried it: more than 1 means the payload was split.
    pub pieces: usize,
}

impl Reassembled {
    pub fn was_split(&self) -> bool {
        self.pieces > 1
    }
}

#[derive(Debug)]
struct Partial {
    total: usize,
    next: usize,
    buf: String,
}

/// Collects framed pieces per (sender, target) pair.
#[derive(Debug)]
pub struct Reassembler {
    partial: HashMap<(String, String), Partial>,
    /// Largest payload accepted, in bytes (bounds memory against a bad peer).
    pub max_payload: usize,
}

impl Default for Reassembler {
    fn default() -> Self {
        Reassembler::new()
    }
}

impl Reassembler {
    /// Accepts payloads up to 16 MiB.
    pub fn new() -> Reassembler {
        Reassembler {
            partial: HashMap::new(),
            max_payload: 16 << 20,
        }
    }

    /// Feeds the text of one received message. Returns the payload once its last piece
    /// arrived. An error (no header, a piece out of order, a total that changed, a payload
    /// over `max_payload`) drops what was collected for this pair.
    pub fn push(
        &mut self,
        from: &str,
        target: &str,
        text: &str,
    ) -> Result<Option<Reassembled>, IrcError> {
        let key = (from.to_string(), target.to_string());
        let r = self.step(&key, text);
        if r.is_err() {
            self.partial.remove(&key);
        }
        r
    }

    fn step(
        &mut self,
        key: &(String, String),
        text: &str,
    ) -> Result<Option<Reassembled>, IrcError> {
        let Some((seq, total, body)) = parse_header(text) else {
            return Err(IrcError::Reassembly(format!(
                "text from {} has no SEQ/TOTAL header: {:?}",
                key.0,
                text.chars().take(40).collect::<String>()
            )));
        };
        if total == 0 || seq == 0 || seq > total {
            return Err(IrcError::Reassembly(format!(
                "piece {seq}/{total} from {}: out of range",
                key.0
            )));
        }
        let p = self.partial.entry(key.clone()).or_insert(Partial {
            total,
            next: 1,
            buf: String::new(),
        });
        if p.total != total || p.next != seq {
            return Err(IrcError::Reassembly(format!(
                "piece {seq}/{total} from {} where {}/{} was expected",
                key.0, p.next, p.total
            )));
        }
        if p.buf.len() + body.len() > self.max_payload {
            return Err(IrcError::Reassembly(format!(
                "payload from {} exceeds {} bytes",
                key.0, self.max_payload
            )));
        }
        p.buf.push_str(body);
        p.next += 1;
        if seq < total {
            return Ok(None);
        }
        let p = self.partial.remove(key).expect("entry exists");
        Ok(Some(Reassembled {
            from: key.0.clone(),
            target: key.1.clone(),
            payload: p.buf,
            pieces: total,
        }))
    }

    /// Payloads started and not finished.
    pub fn pending(&self) -> usize {
        self.partial.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_matches_the_relayed_line() {
        let mask = "alice!~alice@198.18.0.1";
        let room = text_room(mask.len(), "bob");
        let line = format!(":{mask} PRIVMSG bob :{}\r\n", "x".repeat(room));
        assert_eq!(line.len(), MAX_LINE);
    }

    #[test]
    fn small_and_large_payloads() {
        let mask = 23;
        assert_eq!(split_payload(mask, "bob", "hi").unwrap(), ["1/1 hi"]);
        assert_eq!(split_payload(mask, "bob", "").unwrap(), ["1/1 "]);
        let big = "é".repeat(3000);
        let parts = split_payload(mask, "bob", &big).unwrap();
        assert!(parts.len() > 10);
        let mut r = Reassembler::new();
        let mut got = None;
        for (i, p) in parts.iter().enumerate() {
            assert!(p.len() <= text_room(mask, "bob"), "{}", p.len());
            let out = r.push("alice", "bob", p).unwrap();
            assert_eq!(out.is_some(), i + 1 == parts.len());
            got = got.or(out);
        }
        let got = got.unwrap();
        assert_eq!(got.payload, big);
        assert!(got.was_split());
        assert!(split_payload(mask, "bob", "a\r\nb").is_err());
        assert!(split_payload(495, "bob", "x").is_err());
    }

    #[test]
    fn reassembly_errors() {
        let mut r = Reassembler::new();
        assert!(r.push("a", "b", "no header").is_err());
        assert!(r.push("a", "b", "0/1 x").is_err());
        assert!(r.push("a", "b", "3/2 x").is_err());
        assert_eq!(r.push("a", "b", "1/2 x").unwrap(), None);
        assert!(r.push("a", "b", "1/2 x").is_err());
        assert_eq!(r.pending(), 0);
        r.max_payload = 3;
        assert!(r.push("a", "b", "1/1 xxxx").is_err());
    }
}
