//! Sans-IO IRC client engine for benchmarking: RFC 1459 / RFC 2812 client protocol
//! (registration, PING/PONG, JOIN, PRIVMSG, QUIT, numerics), enough to drive ngircd and
//! other servers in study S1's IRC row.
//!
//! Layers, bottom up:
//!
//! - [`line`]: CR LF framing within 512 bytes per line ([`limits`]), message parsing and
//!   building.
//! - [`split`]: payloads longer than one line, split so that each piece survives the
//!   server's relaying (prefix included), with a `SEQ/TOTAL ` header per piece, and
//!   reassembled on the other side.
//! - [`client`]: the state machine ([`Client`]).
//!
//! The engine never blocks, reads a clock or touches a socket: a driver writes what
//! [`Client::poll_transmit`] returns, passes what it reads to [`Client::handle_input`]
//! and reacts to [`Client::poll_event`].

pub mod client;
pub mod error;
pub mod limits;
pub mod line;
pub mod split;

pub use client::{Client, Config, Event, State};
pub use error::IrcError;
pub use limits::MAX_LINE;
pub use line::{LineBuffer, Message};
pub use split::{Reassembled, Reassembler, split_payload, text_room};

/// Feeds arbitrary bytes to a fresh client, for a cargo-fuzz target. The first byte picks
/// the state the bytes arrive in: even = registering, odd = registered (after a canned
/// RPL_WELCOME). The rest is fed in two pieces split at the second byte's position, to
/// exercise resumption; every message text then goes through a [`Reassembler`], and a
/// `send_payload` of the input exercises the splitter. Errors are expected; a panic or
/// unbounded growth is a bug.
pub fn fuzz_input(bytes: &[u8]) {
    use wirebench_engine::Engine as _;
    let Some((&mode, rest)) = bytes.split_first() else {
        return;
    };
    let mut c = Client::new(Config::new("fuzz"), 0);
    if mode % 2 == 1
        && c.handle_input(
            0,
            b":srv 001 fuzz :Welcome to the Internet Relay Network fuzz!~fuzz@h\r\n",
        )
        .is_err()
    {
        return;
    }
    let split = rest.first().map_or(0, |&b| b as usize).min(rest.len());
    let (a, b) = rest.split_at(split);
    let _ = c.handle_input(0, a).and_then(|()| c.handle_input(0, b));
    let _ = c.handle_eof();
    let mut r = Reassembler::new();
    while let Some(e) = c.poll_event() {
        if let Event::Message { from, target, text } = e {
            let _ = r.push(&from, &target, &text);
        }
    }
    let mut c = Client::new(Config::new("fuzz"), 0);
    let _ = c.handle_input(0, b":srv 001 fuzz :Welcome fuzz!~fuzz@h\r\n");
    let _ = c.send_payload("#t", &String::from_utf8_lossy(rest));
    let _ = c.poll_transmit(0, &mut Vec::new());
}
