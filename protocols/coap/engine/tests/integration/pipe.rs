//! Two endpoints over an emulated datagram link in virtual time: a one-way delay, a bit
//! rate that serializes datagrams one after another (with 28 bytes of IPv4 and UDP
//! header each), and loss, random from a seed or of chosen datagrams. One transmit is
//! one datagram, delivered or lost whole.

use std::net::SocketAddr;

use wirebench_coap_engine::{Client, Rng, Server, Transmit};

pub const MS: u64 = 1_000_000;
pub const SECOND: u64 = 1_000 * MS;
/// IPv4 (20) and UDP (8) headers.
const OVERHEAD: u64 = 28;

pub fn client_addr() -> SocketAddr {
    "10.0.0.1:40000".parse().unwrap()
}

pub fn server_addr() -> SocketAddr {
    "10.0.0.2:5683".parse().unwrap()
}

/// A direction of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Up,
    Down,
}

pub struct Pipe {
    pub now: u64,
    one_way_ns: u64,
    bits_per_s: u64,
    loss_per_million: u64,
    rng: Rng,
    /// Datagrams to drop: (direction, index of the datagram in that direction).
    pub drop: Vec<(Dir, u64)>,
    busy_until: [u64; 2],
    in_flight: Vec<(u64, u64, Dir, Vec<u8>)>,
    seq: u64,
    /// Datagrams sent and lost, by direction.
    pub sent: [u64; 2],
    pub lost: [u64; 2],
    /// Send times of the client's datagrams.
    pub up_times: Vec<u64>,
}

fn ix(d: Dir) -> usize {
    match d {
        Dir::Up => 0,
        Dir::Down => 1,
    }
}

impl Pipe {
    /// A link of `one_way_ns` delay at `bits_per_s` (0: no serialization) losing
    /// `loss_per_million` of the datagrams each way, drawn from `seed`.
    pub fn new(one_way_ns: u64, bits_per_s: u64, loss_per_million: u64, seed: u64) -> Pipe {
        Pipe {
            now: 0,
            one_way_ns,
            bits_per_s,
            loss_per_million,
            rng: Rng::new(seed),
            drop: Vec::new(),
            busy_until: [0; 2],
            in_flight: Vec::new(),
            seq: 0,
            sent: [0; 2],
            lost: [0; 2],
            up_times: Vec::new(),
        }
    }

    /// The round trip of a request of `up` bytes and a response of `down` bytes.
    pub fn round_trip_ns(&self, up: u64, down: u64) -> u64 {
        2 * self.one_way_ns + self.serialization_ns(up) + self.serialization_ns(down)
    }

    fn serialization_ns(&self, bytes: u64) -> u64 {
        if self.bits_per_s == 0 {
            return 0;
        }
        (bytes + OVERHEAD) * 8 * SECOND / self.bits_per_s
    }

    fn send(&mut self, dir: Dir, t: Transmit) {
        let i = ix(dir);
        let index = self.sent[i];
        self.sent[i] += 1;
        if dir == Dir::Up {
            self.up_times.push(self.now);
        }
        let random_loss = self.rng.below(1_000_000) < self.loss_per_million;
        // The datagram takes the link's time whether or not it is lost after it.
        let start = self.now.max(self.busy_until[i]);
        self.busy_until[i] = start + self.serialization_ns(t.datagram.len() as u64);
        if random_loss || self.drop.contains(&(dir, index)) {
            self.lost[i] += 1;
            return;
        }
        self.seq += 1;
        let at = self.busy_until[i] + self.one_way_ns;
        self.in_flight.push((at, self.seq, dir, t.datagram));
    }

    /// Runs both endpoints until `done(client)` or nothing is left to happen, or
    /// `limit_ns` of virtual time passed; returns whether `done` held.
    pub fn run(
        &mut self,
        client: &mut Client,
        server: &mut Server,
        limit_ns: u64,
        mut done: impl FnMut(&mut Client) -> bool,
    ) -> bool {
        loop {
            while let Some(t) = client.poll_transmit(self.now) {
                assert_eq!(t.destination, server_addr());
                self.send(Dir::Up, t);
            }
            while let Some(t) = server.poll_transmit(self.now) {
                assert_eq!(t.destination, client_addr());
                self.send(Dir::Down, t);
            }
            if done(client) {
                return true;
            }
            let next_delivery = self.in_flight.iter().map(|(at, ..)| *at).min();
            let next = match (client.poll_timeout(), next_delivery) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(n) => n,
                    None => return false,
                },
            };
            if next > limit_ns {
                return false;
            }
            self.now = self.now.max(next);
            self.deliver(client, server);
            if client.poll_timeout().is_some_and(|t| t <= self.now) {
                client.handle_timeout(self.now);
            }
        }
    }

    fn deliver(&mut self, client: &mut Client, server: &mut Server) {
        self.in_flight.sort_by_key(|(at, seq, ..)| (*at, *seq));
        while self
            .in_flight
            .first()
            .is_some_and(|(at, ..)| *at <= self.now)
        {
            let (_, _, dir, datagram) = self.in_flight.remove(0);
            let now = self.now;
            match dir {
                Dir::Up => server
                    .handle_datagram(now, client_addr(), &datagram)
                    .unwrap(),
                Dir::Down => {
                    // A duplicate or late ACK is counted, not an error; an unexpected
                    // datagram is returned as one, which these tests do not expect
                    // except where they say so.
                    client
                        .handle_datagram(now, server_addr(), &datagram)
                        .unwrap()
                }
            }
        }
    }

    /// Runs until nothing is in flight or scheduled (late ACKs delivered), or `limit_ns`.
    pub fn drain(&mut self, client: &mut Client, server: &mut Server, limit_ns: u64) {
        self.run(client, server, limit_ns, |_| false);
    }
}
