//! Sans-IO CoAP endpoints for benchmarking: the Constrained Application Protocol (RFC
//! 7252) over UDP, with block-wise transfer (RFC 7959), enough to drive libcoap and
//! aiocoap peers in wirebench's `coap` protocol and to serve as a peer itself.
//!
//! Layers, bottom up:
//!
//! - [`message`]: the message format (RFC 7252 §3: header, token, options in delta/length
//!   encoding §3.1, payload marker), option numbers (§5.10, §12.2) and codes (§12.1);
//!   every format error (§3, §4.1) refused, never a panic;
//! - [`block`]: the Block1/Block2 option values (RFC 7959 §2.2);
//! - [`params`]: the transmission parameters (RFC 7252 §4.8, tunable per §4.8.1), their
//!   derived times (§4.8.2), and the seeded generator behind timeouts, Message IDs and
//!   tokens, so that a run repeats exactly;
//! - [`client`]: the client endpoint ([`Client`]): Confirmable and Non-confirmable
//!   requests (§4.2, §4.3), retransmission with exponential back-off (§4.2), NSTART
//!   (§4.7), piggybacked and separate responses (§5.2), RST (§4.2), deduplication
//!   (§4.5), Block1 uploads and Block2 downloads with block size negotiation (RFC 7959
//!   §2.3-§2.5), and the counts a report needs ([`Stats`], including spurious
//!   retransmissions, defined in [`client`]);
//! - [`server`]: a minimal server endpoint ([`Server`]): piggybacked responses, the
//!   deduplication cache of §4.5, and `echo`, `blob` (Block2) and `upload` (Block1).
//!
//! # The datagram shape
//!
//! The endpoints never block, read a clock or touch a socket. A driver sends each
//! [`Transmit`] that `poll_transmit(now)` returns as one UDP datagram to its
//! `destination` (CoAP needs the boundary: one datagram is one message, §3), passes every
//! datagram it receives to `handle_datagram(now, from, bytes)`, calls
//! `handle_timeout(now)` once `now` reaches `poll_timeout()`, and reacts to
//! `poll_event()`. Times are nanoseconds on any monotonic clock (virtual time works);
//! the endpoints only compare and subtract them.
//!
//! This is the shape of quinn-proto's `Transmit { destination, .. }`. The project's
//! byte-stream `wirebench_engine::Engine` maps onto it for one peer: its
//! `poll_transmit(now, buf) -> usize` is [`Client::poll_transmit`] with the datagram
//! appended to `buf` and the destination dropped, and `handle_input(now, data)` is
//! [`Client::handle_datagram`] with the one peer as `from` — correct only if the driver
//! keeps each call's bytes as one datagram, which a stream driver does not; a datagram
//! transmit in that trait carries both.

pub mod block;
pub mod client;
pub mod message;
pub mod params;
mod recent;
pub mod server;

use std::net::SocketAddr;

pub use block::{Block, BlockError, Szx};
pub use client::{
    Client, ClientConfig, DatagramError, Event, Failure, Request, RequestError, RequestId,
    Response, Stats,
};
pub use message::{Code, DecodeError, EncodeError, Message, Type};
pub use params::{ParamsError, Rng, TransmissionParams};
pub use server::{Server, ServerConfig, ServerEvent, ServerStats};

/// The largest UDP payload over IPv4 (65,535 less 20 bytes of IP and 8 of UDP header);
/// a request that needs more must go in blocks.
pub const MAX_DATAGRAM: usize = 65_507;

/// The CoAP port (RFC 7252 §6.1, §12.7).
pub const DEFAULT_PORT: u16 = 5683;

/// One datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub destination: SocketAddr,
    /// The whole datagram: one CoAP message.
    pub datagram: Vec<u8>,
}

/// The Message ID to reject with RST when a malformed datagram is Confirmable (RFC 7252
/// §4.2: a Confirmable message with a format error is rejected); `None` when it is not
/// Confirmable, too short to carry a Message ID, or of another version (§3: ignored).
pub(crate) fn reject_malformed(datagram: &[u8], error: &DecodeError) -> Option<u16> {
    if matches!(
        error,
        DecodeError::TooShort(_) | DecodeError::UnknownVersion(_)
    ) {
        return None;
    }
    let confirmable = (datagram.first()? >> 4) & 3 == 0;
    confirmable.then(|| u16::from_be_bytes([datagram[2], datagram[3]]))
}

/// Feeds arbitrary bytes to the codec and to both endpoints, for a cargo-fuzz target.
/// Every datagram the decoder accepts must encode to the same bytes. Then the input is
/// cut into datagrams (a length byte, a mode byte, the bytes); bit 0 of the mode patches
/// in the Message ID, bit 1 the token, of the client's last request, so that the fuzzer
/// reaches the matching logic; bit 2 advances time to the client's next timeout. Each
/// datagram goes to the server and to the client, the server's answers to the client,
/// the client's requests to the server. Errors are expected; a panic, a failed round
/// trip or unbounded state is a bug.
pub fn fuzz_input(bytes: &[u8]) {
    if let Ok(m) = Message::decode(bytes) {
        let again = m.encode().expect("a decoded message encodes");
        assert_eq!(again, bytes, "{m:?}");
    }
    let server_addr: SocketAddr = "192.0.2.1:5683".parse().expect("literal");
    let client_addr: SocketAddr = "192.0.2.2:40000".parse().expect("literal");
    let mut client = Client::new(ClientConfig::default(), 1).expect("defaults are valid");
    let mut server = Server::new(
        ServerConfig {
            blob: vec![7; 100],
            block_size: Szx::MIN,
            max_upload: 4096,
            dedup_capacity: 64,
            max_uploads: 2,
            ..ServerConfig::default()
        },
        2,
    );
    let mut upload = Request::get(server_addr, "upload", true);
    upload.method = Code::PUT;
    upload.payload = vec![1; 40];
    upload.block_size = Some(Szx::MIN);
    let mut download = Request::get(server_addr, "blob", false);
    download.block_size = Some(Szx::new(1).expect("1 is valid"));
    for r in [Request::get(server_addr, "echo", true), upload, download] {
        client.request(r).expect("valid request");
    }
    let mut now = 0u64;
    let mut last: Option<Message> = None;
    let mut rest = bytes;
    while let [len, mode, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let mut datagram = tail[..n].to_vec();
        rest = &tail[n..];
        patch(&mut datagram, *mode, last.as_ref());
        if mode & 4 != 0 {
            now = client.poll_timeout().unwrap_or(now).max(now);
            client.handle_timeout(now);
        }
        // Bits 3-4 pick one of four source ports, so that uploads from several clients
        // meet the server's bound on them.
        let from = SocketAddr::new(client_addr.ip(), 40000 + u16::from((mode >> 3) & 3));
        let _ = server.handle_datagram(now, from, &datagram);
        let _ = client.handle_datagram(now, server_addr, &datagram);
        while let Some(t) = client.poll_transmit(now) {
            let _ = server.handle_datagram(now, client_addr, &t.datagram);
            last = Message::decode(&t.datagram)
                .ok()
                .filter(|m| m.code.is_request())
                .or(last);
        }
        while let Some(t) = server.poll_transmit(now) {
            let _ = client.handle_datagram(now, server_addr, &t.datagram);
        }
        while client.poll_event().is_some() {}
        while server.poll_event().is_some() {}
        assert!(client.pending() <= 3);
        assert!(client.acked_len() <= 1024 && server.cached_len() <= 64);
        assert!(server.uploads_held() <= 2);
    }
}

/// Overwrites `datagram`'s Message ID and token with `last`'s, as `mode` says.
fn patch(datagram: &mut [u8], mode: u8, last: Option<&Message>) {
    let Some(last) = last else { return };
    if mode & 1 != 0 && datagram.len() >= 4 {
        datagram[2..4].copy_from_slice(&last.message_id.to_be_bytes());
    }
    if mode & 2 != 0 && datagram.len() >= 4 + last.token.len() {
        datagram[0] = (datagram[0] & 0xF0) | last.token.len() as u8;
        datagram[4..4 + last.token.len()].copy_from_slice(&last.token);
    }
}
