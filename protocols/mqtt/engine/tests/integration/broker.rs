//! Two client engines through a minimal broker in virtual time, in the plugin's topology:
//! client1 behind an emulated link (`wirebench_link`, both directions), client2 beside the
//! broker. A ping-pong's round trip must equal the link arithmetic to the nanosecond
//! (each message's packet bytes serialized once each way plus two delays), QoS 1's
//! PUBACKs must show up as the bytes they add, and a QoS 1 stream must respect the
//! broker's Receive Maximum (5.0 §4.9). The broker knows exact topic names only.

use wirebench_engine::Engine;
use wirebench_engine::harness::Pair;
use wirebench_link::{LinkParams, serialization_ns};
use wirebench_mqtt::packet::{Ack, ConnAck, Publish, SubAck};
use wirebench_mqtt::{
    Client, Config, Event, MqttError, Packet, Properties, Property, QoS, Version, decode,
};

/// One client's session on the broker.
#[derive(Default)]
struct Session {
    version: Option<Version>,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    subs: Vec<(String, QoS)>,
    next_id: u16,
}

/// A broker good for these tests: CONNACK (5.0: Receive Maximum `receive_max`), SUBACK
/// granting what was asked, PUBACK, routing by exact topic at the lower QoS, PINGRESP.
struct Broker {
    sessions: Vec<Session>,
    receive_max: u16,
}

impl Broker {
    fn new(clients: usize, receive_max: u16) -> Broker {
        Broker {
            sessions: (0..clients).map(|_| Session::default()).collect(),
            receive_max,
        }
    }

    fn send(&mut self, who: usize, p: Packet) {
        let s = &mut self.sessions[who];
        let v = s.version.expect("CONNECT first");
        p.encode(v, &mut s.out).unwrap();
    }

    fn input(&mut self, who: usize, bytes: &[u8]) {
        self.sessions[who].inbuf.extend_from_slice(bytes);
        loop {
            let s = &mut self.sessions[who];
            let v = s.version.unwrap_or(Version::V5);
            let Some((p, n)) = decode(&s.inbuf, v, 1 << 20).unwrap() else {
                return;
            };
            s.inbuf.drain(..n);
            self.on_packet(who, p);
        }
    }

    fn on_packet(&mut self, who: usize, p: Packet) {
        match p {
            Packet::Connect(c) => {
                self.sessions[who].version = Some(c.version);
                let properties = match c.version {
                    Version::V5 => Properties(vec![Property::ReceiveMaximum(self.receive_max)]),
                    Version::V311 => Properties::new(),
                };
                self.send(
                    who,
                    Packet::ConnAck(ConnAck {
                        session_present: false,
                        code: 0,
                        properties,
                    }),
                );
            }
            Packet::Subscribe(s) => {
                let codes = s.filters.iter().map(|(_, o)| o.qos.bits()).collect();
                self.sessions[who]
                    .subs
                    .extend(s.filters.iter().map(|(f, o)| (f.clone(), o.qos)));
                self.send(
                    who,
                    Packet::SubAck(SubAck {
                        packet_id: s.packet_id,
                        properties: Properties::new(),
                        codes,
                    }),
                );
            }
            Packet::Publish(m) => {
                if let Some(id) = m.packet_id {
                    self.send(
                        who,
                        Packet::PubAck(Ack {
                            packet_id: id,
                            code: 0,
                            properties: Properties::new(),
                        }),
                    );
                }
                for to in 0..self.sessions.len() {
                    let Some(q) = self.sessions[to]
                        .subs
                        .iter()
                        .find(|(f, _)| *f == m.topic)
                        .map(|(_, q)| *q)
                    else {
                        continue;
                    };
                    let qos = q.min(m.qos);
                    let s = &mut self.sessions[to];
                    s.next_id = s.next_id.wrapping_add(1).max(1);
                    let packet_id = (qos != QoS::AtMostOnce).then_some(s.next_id);
                    let p = Publish {
                        dup: false,
                        qos,
                        retain: false,
                        topic: m.topic.clone(),
                        packet_id,
                        properties: Properties::new(),
                        payload: m.payload.clone(),
                    };
                    self.send(to, Packet::Publish(p));
                }
            }
            Packet::PingReq => self.send(who, Packet::PingResp),
            Packet::PubAck(_) | Packet::Disconnect(_) => {}
            other => panic!("the test broker got {other:?}"),
        }
    }
}

/// The broker with client2 beside it: the far end of client1's link. Whatever reaches
/// the broker moves between it and client2 at once (no link between them); client2's
/// events are left for the script.
struct BrokerSide<'a> {
    broker: &'a mut Broker,
    c2: &'a mut Client,
}

impl BrokerSide<'_> {
    fn pump(&mut self, now: u64) {
        loop {
            let mut moved = false;
            let mut b = Vec::new();
            if self.c2.poll_transmit(now, &mut b) > 0 {
                self.broker.input(1, &b);
                moved = true;
            }
            let b = std::mem::take(&mut self.broker.sessions[1].out);
            if !b.is_empty() {
                self.c2.handle_input(now, &b).unwrap();
                moved = true;
            }
            if !moved {
                return;
            }
        }
    }
}

impl Engine for BrokerSide<'_> {
    type Event = std::convert::Infallible;
    type Error = MqttError;

    fn handle_input(&mut self, now: u64, data: &[u8]) -> Result<(), MqttError> {
        self.broker.input(0, data);
        self.pump(now);
        Ok(())
    }

    fn poll_transmit(&mut self, now: u64, buf: &mut Vec<u8>) -> usize {
        self.pump(now);
        let out = &mut self.broker.sessions[0].out;
        let n = out.len();
        buf.append(out);
        n
    }

    fn poll_timeout(&self) -> Option<u64> {
        Engine::poll_timeout(&*self.c2)
    }

    fn handle_timeout(&mut self, now: u64) -> Result<(), MqttError> {
        Engine::handle_timeout(self.c2, now)
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        None
    }
}

/// What the test does with the two clients at each step; true when it is done.
type Script<'a> = dyn FnMut(u64, &mut Client, &mut Client) -> bool + 'a;

/// Runs both clients and the broker on the shared harness until `script` is done;
/// client1's traffic crosses `link` each way, one packet per transmit (no segmentation:
/// the test's packets are small). Returns the virtual time.
fn run(
    c1: &mut Client,
    c2: &mut Client,
    broker: &mut Broker,
    link: LinkParams,
    script: &mut Script<'_>,
) -> u64 {
    let side = BrokerSide { broker, c2 };
    Pair::new(c1, side, link.clone(), link).run_until(|now, c1, side| script(now, c1, side.c2))
}

fn satcom(delay_ns: u64) -> LinkParams {
    LinkParams {
        rate_bps: Some(2400),
        delay_ns,
        queue_packets: None,
        ..Default::default()
    }
}

/// Ping-pong of `rounds` in the plugin's shape: client1 publishes on `ping`, client2
/// answers on `pong`. Returns the round trips (ns).
fn ping_pong(v: Version, qos: QoS, payload: usize, rounds: usize, link: LinkParams) -> Vec<u64> {
    let mut c1 = Client::new(Config::new(v, "c1"), 0).unwrap();
    let mut c2 = Client::new(Config::new(v, "c2"), 0).unwrap();
    let mut broker = Broker::new(2, 20);
    c1.subscribe(&[("pong", qos)]).unwrap();
    c2.subscribe(&[("ping", qos)]).unwrap();
    let (mut ready, mut sent_at, mut rtts) = (0, None::<u64>, Vec::new());
    let body = vec![0x5a; payload];
    run(&mut c1, &mut c2, &mut broker, link, &mut |now, c1, c2| {
        while let Some(e) = c2.poll_event() {
            match e {
                Event::Subscribed { .. } => ready += 1,
                Event::Message(m) if m.topic == "ping" => {
                    c2.publish("pong", &m.payload, qos, false).unwrap();
                }
                _ => {}
            }
        }
        while let Some(e) = c1.poll_event() {
            match e {
                Event::Subscribed { .. } => ready += 1,
                Event::Message(m) if m.topic == "pong" => {
                    assert_eq!(m.payload, body);
                    rtts.push(now - sent_at.take().unwrap());
                }
                _ => {}
            }
        }
        if ready == 2 && sent_at.is_none() && rtts.len() < rounds {
            c1.publish("ping", &body, qos, false).unwrap();
            sent_at = Some(now);
        }
        rtts.len() == rounds
    });
    rtts
}

#[test]
fn qos0_ping_pong_over_satcom_matches_the_link_arithmetic() {
    // 2400 bit/s, 500 ms each way, 10-byte payloads: a QoS 0 PUBLISH on a 4-letter topic
    // is 2 + 2 + 4 + 10 = 18 bytes (5.0: 19, with its Property Length), serialized once
    // each way.
    for (v, len) in [(Version::V311, 18), (Version::V5, 19)] {
        let rtts = ping_pong(v, QoS::AtMostOnce, 10, 5, satcom(500_000_000));
        let want = 2 * 500_000_000 + 2 * serialization_ns(len, 2400);
        assert_eq!(rtts, vec![want; 5], "{v:?}");
    }
}

#[test]
fn qos1_pubacks_share_the_link_with_the_messages() {
    // QoS 1 adds the Packet Identifier (2 bytes) to each PUBLISH, and a 4-byte PUBACK each
    // way: the broker's for the ping goes down before the pong, and from round 2 on
    // client1's PUBACK for the last pong goes up with the next ping.
    let rtts = ping_pong(Version::V311, QoS::AtLeastOnce, 10, 4, satcom(500_000_000));
    let ser = |n| serialization_ns(n, 2400);
    let first = 2 * 500_000_000 + ser(20) + ser(4 + 20);
    let later = 2 * 500_000_000 + 2 * ser(4 + 20);
    assert_eq!(rtts, vec![first, later, later, later]);
}

#[test]
fn a_qos1_stream_keeps_within_the_brokers_receive_maximum() {
    let link = satcom(100_000_000);
    let mut c1 = Client::new(Config::new(Version::V5, "c1"), 0).unwrap();
    let mut c2 = Client::new(Config::new(Version::V5, "c2"), 0).unwrap();
    let mut broker = Broker::new(2, 3);
    c2.subscribe(&[("s", QoS::AtLeastOnce)]).unwrap();
    let (mut sent, mut got, mut acked, mut most) = (0u8, Vec::new(), 0, 0);
    let mut connected = false;
    let t = run(&mut c1, &mut c2, &mut broker, link, &mut |_, c1, c2| {
        while let Some(e) = c1.poll_event() {
            match e {
                Event::Connected(k) => {
                    assert_eq!(k.receive_maximum, 3);
                    connected = true;
                }
                Event::Published { code: 0, .. } => acked += 1,
                e => panic!("{e:?}"),
            }
        }
        while let Some(e) = c2.poll_event() {
            if let Event::Message(m) = e {
                got.push(m.payload[0]);
            }
        }
        while connected && sent < 20 && c1.send_quota() > 0 {
            c1.publish("s", &[sent; 50], QoS::AtLeastOnce, false)
                .unwrap();
            sent += 1;
        }
        most = most.max(c1.in_flight());
        got.len() == 20 && acked == 20
    });
    assert_eq!(got, (0..20).collect::<Vec<u8>>());
    assert_eq!(most, 3);
    // Three 57-byte PUBLISHes per 200 ms round trip at most: the window, not the link's
    // 2400 bit/s, sets the pace.
    assert!(t > 6 * 200_000_000, "{t}");
}

#[test]
fn keep_alive_pings_cross_the_link_and_are_answered() {
    // Nothing to send for 3 keep-alive intervals: client1 pings, the broker answers.
    let mut cfg = Config::new(Version::V311, "c1");
    cfg.keep_alive_s = 2;
    let mut c1 = Client::new(cfg, 0).unwrap();
    let mut c2 = Client::new(Config::new(Version::V311, "c2"), 0).unwrap();
    let mut broker = Broker::new(2, 20);
    let mut pongs = 0;
    run(
        &mut c1,
        &mut c2,
        &mut broker,
        satcom(300_000_000),
        &mut |_, c1, _| {
            while let Some(e) = c1.poll_event() {
                if e == Event::Pong {
                    pongs += 1;
                }
            }
            pongs == 3
        },
    );
    assert_eq!(c1.packets_out, 4, "CONNECT and 3 PINGREQs");
}
