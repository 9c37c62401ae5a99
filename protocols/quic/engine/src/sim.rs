//! A connection's first two exchanges, our client against our [`Service`], over the link
//! model in virtual time (`wirebench_engine::harness`): what the handshake (RFC 9001
//! §4.1) really costs on a given link, for the run's estimates.
//!
//! Bytes and round trips do not say it on a slow link. A client's first Initial is padded
//! to 1200 bytes (RFC 9000 §14.1), 4 s at 2400 bit/s, while the probe timeout before any
//! RTT sample is three times the initial RTT (RFC 9002 §6.2.2): probes (§6.2.4) queue
//! behind the packets still being serialized, and the handshake carries several times
//! its own bytes. Running the engines themselves over the link gives that queue exactly,
//! as far as our server stands for the case's (a real peer's probes differ a little).

use crate::h3;
use crate::{ALPN_ECHO, ALPN_H3, Endpoint, Event, Identity, Service, Transport};
use quinn_proto::{ConnectionHandle, Dir, StreamEvent, StreamId};
use std::net::SocketAddr;
use std::time::Instant;
use wirebench_engine::DatagramEngine;
use wirebench_engine::harness::{Datagrams, Pair, Stopped};
use wirebench_link::LinkParams;

/// What the streams carry in a simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum App {
    /// Our echo ALPN: `payload` bytes up, the same back.
    Echo,
    /// HTTP/3: `GET /payload`, `payload` bytes back.
    H3,
}

/// Times of a simulated connection, in ns from the client's first Initial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstExchanges {
    /// The handshake completed at the client (RFC 9001 §4.1.1).
    pub completed_ns: u64,
    /// The first exchange's answer ended: its message went out as the handshake
    /// completed, so this is the handshake and one exchange.
    pub first_ns: u64,
    /// The second exchange on its own, from its write to its answer's end.
    pub second_ns: u64,
    /// Bytes the link carried each way by then.
    pub up_bytes: u64,
    pub down_bytes: u64,
}

impl FirstExchanges {
    /// What the connection's set-up adds to its first exchange, ns.
    pub fn setup_ns(&self) -> u64 {
        self.first_ns.saturating_sub(self.second_ns)
    }
}

/// Why a simulation gave no times.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("the endpoints: {0}")]
    Setup(String),
    #[error(transparent)]
    Stopped(#[from] Stopped),
}

const NAME: &str = "quic.wirebench.test";

/// Two exchanges of `payload` bytes over `up` (client to server) and `down`, both
/// endpoints with `transport`, stopped at `deadline_ns` of virtual time.
pub fn first_exchanges(
    transport: &Transport,
    app: App,
    payload: usize,
    up: LinkParams,
    down: LinkParams,
    deadline_ns: u64,
) -> Result<FirstExchanges, SimError> {
    let setup = |e: &dyn std::fmt::Display| SimError::Setup(e.to_string());
    let id = Identity::generate(NAME).map_err(|e| setup(&e))?;
    let epoch = Instant::now();
    let server_addr: SocketAddr = ([10, 0, 0, 2], 4433).into();
    let alpn = match app {
        App::Echo => ALPN_ECHO,
        App::H3 => ALPN_H3,
    };
    let mut ep = Endpoint::client(transport.clone(), epoch, 1).map_err(|e| setup(&e))?;
    let h = ep
        .connect(0, server_addr, NAME, &id.cert, alpn, None)
        .map_err(|e| setup(&e))?;
    let mut server = Endpoint::server(transport.clone(), &id, &[ALPN_ECHO, ALPN_H3], epoch, 2)
        .map_err(|e| setup(&e))?;
    server.assume_peer(([10, 0, 0, 1], 40000).into());
    let message = match app {
        // AEAD makes every body the same on the wire: only its length counts.
        App::Echo => vec![0x5a; payload],
        App::H3 => h3::request(NAME, &format!("/{payload}")),
    };
    let mut c = Client {
        h,
        message,
        stream: None,
        written_at: 0,
        ended: Vec::new(),
    };
    let mut pair = Pair::new(Datagrams(ep), Datagrams(Service::new(server)), up, down);
    pair.try_run_until(deadline_ns, false, |now, ep, _| {
        c.pump(ep, now);
        c.ended.len() >= 2
    })?;
    let completed_ns = (pair.a)
        .conn(c.h)
        .and_then(|k| k.handshake.completed)
        .unwrap_or(c.ended[0].1);
    Ok(FirstExchanges {
        completed_ns,
        first_ns: c.ended[0].1,
        second_ns: c.ended[1].1 - c.ended[1].0,
        up_bytes: pair.up_stats().delivered.bytes,
        down_bytes: pair.down_stats().delivered.bytes,
    })
}

/// The simulated client's script over its endpoint: one stream at a time, each finished
/// after its message; the next opens when the answer has ended.
struct Client {
    h: ConnectionHandle,
    message: Vec<u8>,
    stream: Option<StreamId>,
    written_at: u64,
    /// (written, ended) of each exchange.
    ended: Vec<(u64, u64)>,
}

impl Client {
    fn write(&mut self, ep: &mut Endpoint, now: u64) {
        let Some(c) = ep.connection(self.h) else {
            return;
        };
        let Some(id) = c.streams().open(Dir::Bi) else {
            return;
        };
        let mut send = c.send_stream(id);
        // A message larger than the stream's first window is written as it opens; the
        // estimate needs its first bytes' timing, not the rest.
        let _ = send.write(&self.message);
        let _ = send.finish();
        self.stream = Some(id);
        self.written_at = now;
    }

    fn pump(&mut self, ep: &mut Endpoint, now: u64) {
        while let Some(e) = ep.poll_event() {
            let Event::Conn(_, e) = e else { continue };
            match e {
                quinn_proto::Event::Connected => self.write(ep, now),
                // Reading happens in the guard: a stream not yet ended is read all the same.
                quinn_proto::Event::Stream(StreamEvent::Readable { id })
                    if self.stream == Some(id) && self.read_to_end(ep, id) =>
                {
                    self.ended.push((self.written_at, now));
                    self.stream = None;
                    if self.ended.len() < 2 {
                        self.write(ep, now);
                    }
                }
                _ => {}
            }
        }
    }

    /// Reads what `id` has; true once its FIN came.
    fn read_to_end(&self, ep: &mut Endpoint, id: StreamId) -> bool {
        let Some(c) = ep.connection(self.h) else {
            return false;
        };
        let mut recv = c.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return false;
        };
        let mut end = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    end = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let _ = chunks.finalize();
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const S: u64 = 1_000_000_000;

    fn satcom() -> LinkParams {
        LinkParams {
            rate_bps: Some(2400),
            delay_ns: S / 2,
            ..LinkParams::default()
        }
    }

    fn over_satcom(initial_rtt: Duration) -> FirstExchanges {
        let t = Transport {
            initial_rtt,
            ..Transport::default()
        };
        first_exchanges(&t, App::H3, 100, satcom(), satcom(), 600 * S).unwrap()
    }

    /// S1's link: the default initial RTT's probe timeouts (999 ms, then doubling) fire
    /// while the first Initial is still being serialized, and each probe queues behind
    /// it; an initial RTT above the real first round trip sends none (RFC 9002 §6.2.2).
    #[test]
    fn probe_timeouts_multiply_a_slow_links_handshake() {
        let default = over_satcom(Duration::from_millis(333));
        let tuned = over_satcom(Duration::from_secs(20));
        // Either way the handshake completes when a 1200-byte datagram has crossed each
        // way, 4 s each at 2400 bit/s, plus the two delays.
        for r in [&default, &tuned] {
            assert!((9 * S..9 * S + S / 2).contains(&r.completed_ns), "{r:?}");
            // A later exchange is the link's: ~150 bytes each way plus 1 s of delay.
            assert!((S + S / 2..2 * S + S / 2).contains(&r.second_ns), "{r:?}");
        }
        assert!(
            default.setup_ns() > 2 * tuned.setup_ns(),
            "{default:?} {tuned:?}"
        );
        assert!(
            default.up_bytes > 3 * tuned.up_bytes,
            "{default:?} {tuned:?}"
        );
        assert!(
            default.down_bytes > 3 * tuned.down_bytes,
            "{default:?} {tuned:?}"
        );
    }

    #[test]
    fn a_connection_that_cannot_finish_in_time_is_an_error_not_a_hang() {
        let t = Transport::default();
        let r = first_exchanges(&t, App::Echo, 100, satcom(), satcom(), S);
        assert!(
            matches!(r, Err(SimError::Stopped(Stopped::Deadline(_)))),
            "{r:?}"
        );
    }
}
