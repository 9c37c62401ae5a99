//! gRPC's keepalive enforcement, the server's side (gRFC A8 "Client-side Keepalive";
//! grpc-core's `GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS` and
//! `GRPC_ARG_HTTP2_MAX_PING_STRIKES`, grpc-go's `keepalive.EnforcementPolicy`): a client
//! that sends HTTP/2 PINGs (RFC 9113 §6.7) more often than the server permits loses its
//! connection, where grpc-core and grpc-go send `GOAWAY` `ENHANCE_YOUR_CALM`
//! "too_many_pings" first. A PING costs the server a read and an answer and a client
//! asks for it with 17 bytes; 50 connections pinging every 5 ms took the CPU a
//! well-behaved client's calls needed (bench/hostile.sh grpc halfopen).
//!
//! hyper answers PINGs inside its HTTP/2 layer and does not count them, so [`PingWatch`]
//! wraps the connection's socket and reads the frame headers (RFC 9113 §4.1) as the bytes
//! pass on to hyper, copying nothing. At the third strike its reads fail, which ends the
//! connection; hyper then closes it without a GOAWAY (it offers no way to send one with
//! a reason of ours), and the refusal is logged and counted as the client's doing.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A PING sooner than this after the last one, with no request in between, is a strike:
/// grpc-core's default (5 minutes) for connections without data.
pub const MIN_PING_INTERVAL: Duration = Duration::from_secs(300);
/// Strikes allowed; the next one ends the connection (grpc-core's default, 2).
pub const MAX_PING_STRIKES: u32 = 2;

/// The client's connection preface (RFC 9113 §3.4), which precedes its first frame.
const PREFACE_LEN: usize = 24;
const FRAME_HEADER: usize = 9;
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PING: u8 = 0x6;
const ACK: u8 = 0x1;

/// Follows the client's frames and keeps the ping policy.
#[derive(Debug)]
pub struct Pings {
    /// Preface bytes still to pass.
    preface: usize,
    header: [u8; FRAME_HEADER],
    /// Bytes of `header` filled.
    filled: usize,
    /// Payload bytes of the current frame still to pass.
    payload: u64,
    last_ping: Option<Instant>,
    strikes: u32,
}

impl Default for Pings {
    fn default() -> Pings {
        Pings {
            preface: PREFACE_LEN,
            header: [0; FRAME_HEADER],
            filled: 0,
            payload: 0,
            last_ping: None,
            strikes: 0,
        }
    }
}

impl Pings {
    /// Follows `bytes`, the next the client sent; false once it has pinged too often.
    pub fn feed(&mut self, mut bytes: &[u8], now: Instant) -> bool {
        while !bytes.is_empty() {
            if self.preface > 0 {
                let n = self.preface.min(bytes.len());
                self.preface -= n;
                bytes = &bytes[n..];
            } else if self.payload > 0 {
                let n = (self.payload.min(bytes.len() as u64)) as usize;
                self.payload -= n as u64;
                bytes = &bytes[n..];
            } else {
                let n = (FRAME_HEADER - self.filled).min(bytes.len());
                self.header[self.filled..self.filled + n].copy_from_slice(&bytes[..n]);
                self.filled += n;
                bytes = &bytes[n..];
                if self.filled == FRAME_HEADER {
                    self.filled = 0;
                    let h = self.header;
                    self.payload = u64::from(u32::from_be_bytes([0, h[0], h[1], h[2]]));
                    if !self.frame(h[3], h[4], now) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// A frame header of `kind` with `flags`: false at the strike over the limit.
    fn frame(&mut self, kind: u8, flags: u8, now: Instant) -> bool {
        match kind {
            // A request, or its body: the connection is in use, pings are welcome again.
            DATA | HEADERS => {
                self.strikes = 0;
                self.last_ping = None;
            }
            PING if flags & ACK == 0 => {
                if self
                    .last_ping
                    .is_some_and(|t| now.duration_since(t) < MIN_PING_INTERVAL)
                {
                    self.strikes += 1;
                }
                self.last_ping = Some(now);
            }
            _ => {}
        }
        self.strikes <= MAX_PING_STRIKES
    }
}

/// A socket whose reads [`Pings`] follows; reads fail once it says so, and
/// [`PingWatch::refused`] then says why.
pub struct PingWatch<S> {
    inner: S,
    /// `None`: the policy is off (a case's own server, which only our client reaches).
    pings: Option<Pings>,
    refused: Arc<AtomicBool>,
}

impl<S> PingWatch<S> {
    pub fn new(inner: S, enforce: bool) -> PingWatch<S> {
        PingWatch {
            inner,
            pings: enforce.then(Pings::default),
            refused: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Set when the connection ended for too many PINGs (read it after the connection).
    pub fn refused(&self) -> Arc<AtomicBool> {
        self.refused.clone()
    }
}

/// What a connection closed for too many PINGs is logged with.
pub const TOO_MANY_PINGS: &str = "too many PINGs without a request in between (gRPC \
    keepalive enforcement, gRFC A8: ENHANCE_YOUR_CALM too_many_pings)";

impl<S: AsyncRead + Unpin> AsyncRead for PingWatch<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.refused.load(Ordering::Relaxed) {
            return Poll::Ready(Err(io::Error::other(TOO_MANY_PINGS)));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let Some(pings) = this.pings.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        if !pings.feed(&buf.filled()[before..], Instant::now()) {
            this.refused.store(true, Ordering::Relaxed);
            return Poll::Ready(Err(io::Error::other(TOO_MANY_PINGS)));
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for PingWatch<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let n = payload.len() as u32;
        let mut f = n.to_be_bytes()[1..].to_vec();
        f.extend([kind, flags, 0, 0, 0, 0]);
        f.extend(payload);
        f
    }

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    #[test]
    fn a_third_strike_ends_the_connection_however_the_bytes_are_cut() {
        let settings = frame(4, 0, &[0; 6]);
        let ping = frame(PING, 0, b"12345678");
        let mut stream = PREFACE.to_vec();
        stream.extend(&settings);
        for _ in 0..3 {
            stream.extend(&ping);
        }
        let now = Instant::now();
        for cut in 1..stream.len() {
            let mut p = Pings::default();
            let ok = stream.chunks(cut).all(|c| p.feed(c, now));
            assert!(ok, "three pings are the first and two strikes (cut {cut})");
            assert!(!p.feed(&ping, now), "the fourth is refused (cut {cut})");
        }
    }

    #[test]
    fn requests_between_pings_and_slow_pings_are_never_refused() {
        let ping = frame(PING, 0, b"12345678");
        let ack = frame(PING, ACK, b"12345678");
        let headers = frame(HEADERS, 4, &[0x82; 5]);
        let data = frame(DATA, 1, &[0, 0, 0, 0, 2, b'h', b'i']);
        let mut p = Pings::default();
        let t = Instant::now();
        assert!(p.feed(PREFACE, t));
        for _ in 0..1000 {
            assert!(p.feed(&ping, t) && p.feed(&ack, t) && p.feed(&ping, t));
            assert!(p.feed(&headers, t) && p.feed(&data, t));
        }
        let mut p = Pings::default();
        assert!(p.feed(PREFACE, t));
        for i in 0..100 {
            assert!(p.feed(&ping, t + MIN_PING_INTERVAL * i));
        }
        // A payload holding PING-like bytes is skipped, not read as frames.
        let mut p = Pings::default();
        assert!(p.feed(PREFACE, t));
        let inner: Vec<u8> = (0..10).flat_map(|_| ping.clone()).collect();
        assert!(p.feed(&frame(DATA, 0, &inner), t));
    }
}
