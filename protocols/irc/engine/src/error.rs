//! Errors of the IRC client engine. Each variant says who is at fault: the server (bytes
//! that break RFC 1459 / RFC 2812 framing or syntax), the server's decision (nickname
//! refused), the local configuration, or the caller.

use crate::limits::{MAX_LINE, MAX_TAGS};

/// Why the engine stopped or refused a command. After any error from
/// [`crate::Client::handle_input`] the session is over: the engine is in
/// [`crate::State::Closed`], has queued a `QUIT` for the server and emitted
/// [`crate::Event::Closed`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IrcError {
    /// The server sent more than 512 bytes (RFC 2812 §2.3, CR LF included) without ending
    /// the line; with IRCv3 tags the tag section may add up to 8191 bytes.
    #[error(
        "the server sent a line longer than {MAX_LINE} bytes (CR LF included, RFC 2812 §2.3) \
         without ending it{}", if *.tagged { format!(" (after up to {MAX_TAGS} bytes of IRCv3 tags)") } else { String::new() }
    )]
    LineTooLong { tagged: bool },
    /// The server sent a NUL byte, which RFC 2812 §2.3.1 forbids anywhere in a message.
    #[error("the server sent a NUL byte in a line (RFC 2812 §2.3.1 forbids it): {line:?}")]
    Nul { line: String },
    /// The server sent a line that is not `[:prefix] command params`.
    #[error("malformed line from the server ({why}): {line:?}")]
    Malformed { why: String, line: String },
    /// Every nickname tried during registration was in use (433) or unavailable (437).
    #[error(
        "nickname in use: tried {tried:?} (433 ERR_NICKNAMEINUSE each time); \
         raise Config::nick_retries or pick another nickname"
    )]
    NickInUse { tried: Vec<String> },
    /// The server refused the nickname itself (432 ERR_ERRONEUSNICKNAME: bad characters,
    /// too long for the server's NICKLEN) during registration.
    #[error("the server refused nickname {nick:?} ({code}): {text}")]
    NickRejected {
        nick: String,
        code: u16,
        text: String,
    },
    /// The configuration cannot produce valid commands (spaces in a nickname, CR LF in the
    /// real name, ...).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The caller asked for something the current state or RFC 2812 does not allow (a
    /// message before registration, CR LF in a text, a line over 512 bytes, ...).
    #[error("not possible: {0}")]
    Usage(String),
    /// A reassembled workload message was inconsistent (see [`crate::split`]).
    #[error("reassembly failed: {0}")]
    Reassembly(String),
    /// The session is over; the first error (or close) was reported before.
    #[error("the IRC session is closed")]
    Closed,
}
