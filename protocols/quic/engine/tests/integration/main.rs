//! A client [`Endpoint`] against the [`Service`] over the link model in virtual time
//! (`wirebench_engine::harness`): the handshake's round trips (RFC 9001 §4.1), an echo
//! on one bidirectional stream (RFC 9000 §2), the sink's count, and a lost first
//! Initial recovered by the probe timeout of RFC 9002 §6.2 at the initial RTT, and an
//! HTTP/3 `GET /N` (RFC 9114) answered with N bytes of the generator.
//!
//! The links have a delay and no rate, so that every time below is exact: TLS's
//! randomness changes a signature's length by a byte or two, which a rate would turn
//! into serialization time (see the crate docs).

use std::net::SocketAddr;
use std::time::{Duration, Instant};
use wirebench_engine::harness::{Datagrams, Pair};
use wirebench_engine::{DatagramEngine, Received, Transmit};
use wirebench_link::{LinkParams, Outage};
use wirebench_quic_engine::h3::{self, Body, FrameReader, Part};
use wirebench_quic_engine::proto::{ConnectionHandle, Dir, StreamEvent, StreamId};
use wirebench_quic_engine::{
    ALPN_ECHO, ALPN_H3, ALPN_SINK, Endpoint, Event, Identity, Service, Transport,
};

mod resumption;

const MS: u64 = 1_000_000;

fn server_addr() -> SocketAddr {
    "10.0.0.2:4433".parse().unwrap()
}

fn client_addr() -> SocketAddr {
    "10.0.0.1:40000".parse().unwrap()
}

fn link(one_way_ms: u64) -> LinkParams {
    LinkParams {
        delay_ns: one_way_ms * MS,
        ..LinkParams::default()
    }
}

/// The client side of a test: one connection, one stream, what came back.
struct Client {
    ep: Endpoint,
    h: ConnectionHandle,
    stream: Option<StreamId>,
    got: Vec<u8>,
    got_at: Option<u64>,
    ended: bool,
    /// Written when the handshake completes: a stream cannot open before the server's
    /// transport parameters grant one (RFC 9000 §4.6).
    pending: Option<Vec<u8>>,
}

impl Client {
    fn new(id: &Identity, alpn: &[u8], epoch: Instant) -> Client {
        let mut ep = Endpoint::client(Transport::default(), epoch, 1).unwrap();
        let h = ep
            .connect(0, server_addr(), &id.name, &id.cert, alpn, None)
            .unwrap();
        Client {
            ep,
            h,
            stream: None,
            got: Vec::new(),
            got_at: None,
            ended: false,
            pending: None,
        }
    }

    /// Queues `data` for a stream of its own, finished after it.
    fn send(&mut self, data: &[u8]) {
        self.pending = Some(data.to_vec());
    }

    fn write(&mut self, data: &[u8]) {
        let c = self.ep.connection(self.h).unwrap();
        let id = c.streams().open(Dir::Bi).unwrap();
        assert_eq!(c.send_stream(id).write(data).unwrap(), data.len());
        c.send_stream(id).finish().unwrap();
        self.stream = Some(id);
    }

    /// Handles the endpoint's events at `now`, reading the stream.
    fn pump(&mut self, now: u64) {
        while let Some(e) = self.ep.poll_event() {
            if let Event::Conn(_, wirebench_quic_engine::proto::Event::Connected) = e {
                if let Some(d) = self.pending.take() {
                    self.write(&d);
                }
            }
            // Only our own stream: an HTTP/3 server opens its control stream too.
            if let Event::Conn(
                _,
                wirebench_quic_engine::proto::Event::Stream(StreamEvent::Readable { id }),
            ) = e
                && self.stream == Some(id)
            {
                let c = self.ep.connection(self.h).unwrap();
                let mut recv = c.recv_stream(id);
                let mut chunks = recv.read(true).unwrap();
                loop {
                    match chunks.next(usize::MAX) {
                        Ok(Some(ch)) => {
                            self.got.extend_from_slice(&ch.bytes);
                            self.got_at = Some(now);
                        }
                        Ok(None) => {
                            self.ended = true;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let _ = chunks.finalize();
            }
        }
    }
}

/// The endpoint is the engine; the test reads its events in [`Client::pump`].
impl DatagramEngine for Client {
    type Event = Event;
    type Error = std::convert::Infallible;

    fn handle_datagram(&mut self, now: u64, d: Received<'_>) -> Result<(), Self::Error> {
        self.ep.handle_datagram(now, d)
    }

    fn poll_transmit(&mut self, now: u64, max: usize, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.ep.poll_transmit(now, max, buf)
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.ep.poll_timeout()
    }

    fn handle_timeout(&mut self, now: u64) -> Result<(), Self::Error> {
        self.ep.handle_timeout(now)
    }

    fn poll_event(&mut self) -> Option<Event> {
        None
    }
}

fn service(id: &Identity, epoch: Instant) -> Datagrams<Service> {
    let mut ep = Endpoint::server(
        Transport::default(),
        id,
        &[ALPN_ECHO, ALPN_SINK, ALPN_H3],
        epoch,
        2,
    )
    .unwrap();
    ep.assume_peer(client_addr());
    Datagrams(Service::new(ep))
}

#[test]
fn a_handshake_takes_one_round_trip_and_the_echo_one_more() {
    let id = Identity::generate("quic.test").unwrap();
    let epoch = Instant::now();
    let mut client = Client::new(&id, ALPN_ECHO, epoch);
    client.send(b"hello, quic");
    let mut p = Pair::new(Datagrams(client), service(&id, epoch), link(50), link(50));
    p.run_until(|now, c, _| {
        c.pump(now);
        c.ended
    });
    let hs = p.a.ep.conn(p.a.h).unwrap().handshake;
    // Initial out at 0, the server's Initial and Handshake back at 100 ms: complete
    // (§4.1.1); the server completes on the client's Finished at 150 ms and its
    // HANDSHAKE_DONE confirms the client's handshake at 200 ms (§4.1.2).
    assert_eq!(hs.started, 0);
    assert_eq!(hs.completed, Some(100 * MS));
    assert_eq!(hs.confirmed, Some(200 * MS));
    // The stream rode with the client's Finished: echoed back with HANDSHAKE_DONE.
    assert_eq!(p.a.got, b"hello, quic");
    assert_eq!(p.a.got_at, Some(200 * MS));
    let s = p.b.stats();
    assert_eq!(
        (s.connections, s.streams, s.bytes_in, s.bytes_out),
        (1, 1, 11, 11)
    );
    let path = p.a.ep.conn(p.a.h).unwrap().conn.stats().path;
    assert_eq!(path.lost_packets, 0);
    assert_eq!(path.rtt, Duration::from_millis(100), "{path:?}");
}

#[test]
fn the_sink_answers_with_the_count_of_a_large_stream() {
    let id = Identity::generate("quic.test").unwrap();
    let epoch = Instant::now();
    let mut client = Client::new(&id, ALPN_SINK, epoch);
    let data = vec![7u8; 1 << 20];
    client.send(&data);
    let mut p = Pair::new(Datagrams(client), service(&id, epoch), link(10), link(10));
    p.run_until(|now, c, _| {
        c.pump(now);
        c.ended
    });
    assert_eq!(p.a.got, (1u64 << 20).to_be_bytes());
    let s = p.b.stats();
    assert_eq!((s.bytes_in, s.bytes_out), (1 << 20, 8));
    // A MiB from an initial window of ten datagrams (RFC 9002 §7.2) takes slow start's
    // round trips: more than 5, far fewer than 1 MiB / 12 kB.
    let at = p.a.got_at.unwrap();
    assert!((5 * 20 * MS..40 * 20 * MS).contains(&at), "{at}");
}

#[test]
fn a_lost_first_initial_is_sent_again_at_the_probe_timeout() {
    let id = Identity::generate("quic.test").unwrap();
    let epoch = Instant::now();
    let mut client = Client::new(&id, ALPN_ECHO, epoch);
    client.send(b"again");
    let mut up = link(50);
    up.outages = vec![Outage {
        start_ns: 0,
        duration_ns: MS,
        every_ns: None,
    }];
    let mut p = Pair::new(Datagrams(client), service(&id, epoch), up, link(50));
    p.run_until(|now, c, _| {
        c.pump(now);
        c.ended
    });
    assert_eq!(p.up_stats().dropped_outage.packets, 1);
    // The probe timeout before any sample (RFC 9002 §6.2.2, §A.8): the initial RTT
    // plus four times half of it, 333 + 666 ms, then the round trip as before.
    let pto = 999 * MS;
    let hs = p.a.ep.conn(p.a.h).unwrap().handshake;
    assert_eq!(hs.completed, Some(pto + 100 * MS), "{hs:?}");
    assert_eq!(hs.confirmed, Some(pto + 200 * MS), "{hs:?}");
    assert_eq!(p.a.got, b"again");
    // The first Initial is declared lost when the second's ACK arrives (RFC 9002 §6.1.2:
    // older than 9/8 of the RTT), and the loss starts a recovery period (§7.3.2).
    let path = p.a.ep.conn(p.a.h).unwrap().conn.stats().path;
    assert_eq!((path.lost_packets, path.lost_bytes), (1, 1200), "{path:?}");
    assert_eq!(path.congestion_events, 1, "{path:?}");
}

/// The status, body length and whether the body is the generator's, of a response.
fn response(bytes: &[u8]) -> (Vec<u8>, u64, bool) {
    let (mut status, mut n, mut body) = (Vec::new(), 0u64, Body::lehmer());
    let mut intact = true;
    let mut r = FrameReader::default();
    r.push(bytes, &mut |p| {
        match p {
            Part::Headers(f) => status = h3::field(&f, ":status").unwrap().to_vec(),
            Part::Data(d) => {
                n += d.len() as u64;
                intact &= body.check(d);
            }
        }
        Ok(())
    })
    .unwrap();
    r.finish().unwrap();
    (status, n, intact)
}

#[test]
fn an_http3_get_is_answered_with_n_bytes_of_the_generator() {
    let id = Identity::generate("quic.test").unwrap();
    let epoch = Instant::now();
    let mut client = Client::new(&id, ALPN_H3, epoch);
    client.send(&h3::request("quic.test", "/300000"));
    let mut p = Pair::new(Datagrams(client), service(&id, epoch), link(10), link(10));
    p.run_until(|now, c, _| {
        c.pump(now);
        c.ended
    });
    assert_eq!(response(&p.a.got), (b"200".to_vec(), 300_000, true));
    let s = p.b.stats();
    assert_eq!((s.requests, s.bad_requests), (1, 0));
}

#[test]
fn an_http3_get_of_no_number_is_refused() {
    let id = Identity::generate("quic.test").unwrap();
    let epoch = Instant::now();
    let mut client = Client::new(&id, ALPN_H3, epoch);
    client.send(&h3::request("quic.test", "/a-file"));
    let mut p = Pair::new(Datagrams(client), service(&id, epoch), link(10), link(10));
    p.run_until(|now, c, _| {
        c.pump(now);
        c.ended
    });
    assert_eq!(response(&p.a.got), (b"400".to_vec(), 0, true));
    assert_eq!(p.b.stats().bad_requests, 1);
}
