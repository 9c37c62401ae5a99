//! A client endpoint's second connection to the same server, in virtual time: with 0-RTT
//! on both ends (RFC 9001 §4.6) it resumes from the first one's session ticket (RFC 8446
//! §2.2, §4.2.10) and sends its echo with the first Initial, back after one round trip
//! instead of two; without, it waits for its handshake as the first did.

use super::{MS, client_addr, link, server_addr};
use std::time::Instant;
use wirebench_engine::harness::{Datagrams, Pair};
use wirebench_engine::{DatagramEngine, Received, Transmit};
use wirebench_quic_engine::proto::{ConnectionHandle, Dir, Event as QuicEvent, StreamEvent};
use wirebench_quic_engine::{ALPN_ECHO, Endpoint, Event, Identity, Service, Transport};

/// Two connections one after the other, each one echo on a stream of its own.
struct Twice {
    ep: Endpoint,
    id: Identity,
    /// The connection now, its start, when its echo came back whole.
    now: Option<(ConnectionHandle, u64)>,
    ended: Vec<(u64, u64)>,
    /// Whether the second connection wrote before its handshake (0-RTT).
    early: bool,
    /// When the first echo ended: the second connection starts a round trip later, once
    /// the session ticket (sent after the handshake, RFC 8446 §4.6.1) has surely come.
    first_ended: Option<u64>,
}

const MESSAGE: &[u8] = b"again, sooner";

impl Twice {
    fn start(&mut self, now: u64) {
        let h = self
            .ep
            .connect(
                now,
                server_addr(),
                &self.id.name,
                &self.id.cert,
                ALPN_ECHO,
                None,
            )
            .unwrap();
        self.now = Some((h, now));
        // With a ticket that allows it, the stream may open before the handshake
        // completes and its bytes go in 0-RTT packets.
        if self.ep.connection(h).unwrap().has_0rtt() {
            self.early = true;
            self.write(h);
        }
    }

    fn write(&mut self, h: ConnectionHandle) {
        let c = self.ep.connection(h).unwrap();
        let id = c.streams().open(Dir::Bi).unwrap();
        c.send_stream(id).write(MESSAGE).unwrap();
        c.send_stream(id).finish().unwrap();
    }

    fn pump(&mut self, now: u64) {
        if let Some(t) = self.first_ended
            && now >= t + 100 * MS
        {
            self.first_ended = None;
            self.start(now);
        }
        while let Some(e) = self.ep.poll_event() {
            let Event::Conn(h, e) = e else { continue };
            match e {
                QuicEvent::Connected if !self.early || self.ended.is_empty() => self.write(h),
                QuicEvent::Stream(StreamEvent::Readable { id }) => {
                    let c = self.ep.connection(h).unwrap();
                    let mut recv = c.recv_stream(id);
                    let mut chunks = recv.read(true).unwrap();
                    let mut end = false;
                    while let Ok(Some(_)) = chunks.next(usize::MAX) {}
                    if let Ok(None) = chunks.next(usize::MAX) {
                        end = true;
                    }
                    let _ = chunks.finalize();
                    if end && let Some((_, started)) = self.now.take() {
                        self.ended.push((started, now));
                        if self.ended.len() == 1 {
                            self.first_ended = Some(now);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

impl DatagramEngine for Twice {
    type Event = ();
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

    fn poll_event(&mut self) -> Option<()> {
        None
    }
}

/// What a run of two connections showed.
struct Shown {
    /// Each echo's time from its connection's start.
    echo_ns: [u64; 2],
    /// The second connection sent 0-RTT data and the server accepted it.
    early: bool,
}

fn twice(zero_rtt: bool) -> Shown {
    let id = Identity::generate("quic.test").unwrap();
    let epoch = Instant::now();
    let t = Transport {
        zero_rtt,
        ..Transport::default()
    };
    let mut server = Endpoint::server(t.clone(), &id, &[ALPN_ECHO], epoch, 2).unwrap();
    server.assume_peer(client_addr());
    let mut client = Twice {
        ep: Endpoint::client(t, epoch, 1).unwrap(),
        id,
        now: None,
        ended: Vec::new(),
        early: false,
        first_ended: None,
    };
    client.start(0);
    let mut p = Pair::new(
        Datagrams(client),
        Datagrams(Service::new(server)),
        link(50),
        link(50),
    );
    p.run_until(|now, c, _| {
        c.pump(now);
        c.ended.len() == 2
    });
    let [(s1, e1), (s2, e2)] = [p.a.ended[0], p.a.ended[1]];
    let h = p.a.ep.handles().last().unwrap();
    let accepted = p.a.ep.conn(h).unwrap().conn.accepted_0rtt();
    Shown {
        echo_ns: [e1 - s1, e2 - s2],
        early: p.a.early && accepted,
    }
}

#[test]
fn a_second_connection_with_0rtt_echoes_after_one_round_trip() {
    let s = twice(true);
    // The first: the handshake's round trip, then the echo's (riding with the Finished).
    assert_eq!(s.echo_ns[0], 200 * MS);
    // The second: the message went with the first Initial as 0-RTT data, and the echo
    // came back with the server's first flight.
    assert!(s.early, "the server did not accept 0-RTT");
    assert_eq!(s.echo_ns[1], 100 * MS);
}

#[test]
fn without_0rtt_a_second_connection_waits_for_its_handshake() {
    let s = twice(false);
    assert_eq!(s.echo_ns, [200 * MS, 200 * MS]);
    assert!(!s.early);
}
