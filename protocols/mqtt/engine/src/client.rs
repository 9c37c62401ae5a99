//! The client engine: CONNECT/CONNACK (3.1.1 §3.1-3.2, 5.0 §3.1-3.2), PUBLISH at QoS 0
//! and 1 with PUBACK both ways (§3.3-3.4, §4.3.1-4.3.2), SUBSCRIBE/SUBACK and
//! UNSUBSCRIBE/UNSUBACK (§3.8-3.11), keep-alive with PINGREQ/PINGRESP (§3.1.2.10,
//! §3.12-3.13) and DISCONNECT (§3.14), for MQTT 3.1.1 and 5.0.
//!
//! Sans-IO in quinn-proto's shape, through the one engine trait
//! ([`wirebench_engine::Engine`], the only way in): bytes in through
//! [`Client::handle_input`], bytes out
//! through [`Client::poll_transmit`], deadlines through [`Client::poll_timeout`] and
//! [`Client::handle_timeout`], what happened through [`Client::poll_event`]. Times are
//! arguments (nanoseconds on any monotonic clock); nothing here reads a clock, blocks or
//! touches a socket.
//!
//! Behaviour that matters against real brokers:
//! - Packets may follow CONNECT before CONNACK arrives (3.1.1 §3.1.4, 5.0 §3.1.4): a
//!   client on a slow link can save a round trip by subscribing at once. The broker's
//!   5.0 limits (Receive Maximum, Maximum QoS, Maximum Packet Size, Retain Available)
//!   apply from CONNACK on; commands beyond them fail with [`MqttError::Usage`] instead
//!   of being sent for the broker to refuse.
//! - Incoming QoS 1 messages are acknowledged (PUBACK) as they are read, before the
//!   caller sees them (3.1.1 §4.3.2 method B's order is free to the receiver).
//! - Keep-alive counts from the last packet *sent* (3.1.1 §3.1.2.10): a client that
//!   publishes often never pings. A 5.0 broker's Server Keep Alive replaces ours.
//! - On a broken packet from the broker a 5.0 client says why in a DISCONNECT (0x81
//!   Malformed Packet, 0x82 Protocol Error, 0x95 Packet too large, §4.13); a 3.1.1
//!   client just closes (§4.8).
//! - QoS 2 is not implemented: subscriptions ask for at most QoS 1, so a broker never
//!   sends QoS 2 (§3.8.4); one that does breaks the protocol.

use std::collections::{HashMap, VecDeque};

use crate::error::MqttError;
use crate::packet::{
    self, Ack, Connect, Packet, PublishRef, Reason, SubAck, SubOptions, Subscribe, UnsubAck,
    Unsubscribe, Will,
};
use crate::property::{Properties, Property};
use crate::reason;
use crate::wire::{MAX_PACKET, PacketType, QoS, Version};

/// One session's settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub version: Version,
    /// 3.1.1 §3.1.3.1: brokers must accept 1-23 of `0-9a-zA-Z`; empty asks the broker
    /// to assign one (3.1.1 only with a clean session).
    pub client_id: String,
    /// Clean Session (3.1.1) / Clean Start (5.0).
    pub clean_start: bool,
    /// Seconds; 0 turns keep-alive off.
    pub keep_alive_s: u16,
    pub username: Option<String>,
    pub password: Option<Vec<u8>>,
    pub will: Option<Will>,
    /// Largest packet accepted from the broker (bytes, fixed header included); a 5.0
    /// CONNECT tells the broker (Maximum Packet Size, §3.1.2.11.4).
    pub max_packet_size: u32,
    /// 5.0 Session Expiry Interval, seconds (0: the session ends with the connection).
    pub session_expiry_s: u32,
    /// Give up when CONNACK has not arrived this long after [`Client::new`].
    pub connect_timeout_ns: Option<u64>,
    /// How long a PINGREQ may wait for its PINGRESP; `None`: the keep-alive interval.
    pub pingresp_timeout_ns: Option<u64>,
}

impl Config {
    /// A clean session, 60 s keep-alive, no credentials, 1 MiB packets, 30 s to connect.
    pub fn new(version: Version, client_id: &str) -> Config {
        Config {
            version,
            client_id: client_id.to_string(),
            clean_start: true,
            keep_alive_s: 60,
            username: None,
            password: None,
            will: None,
            max_packet_size: 1 << 20,
            session_expiry_s: 0,
            connect_timeout_ns: Some(30_000_000_000),
            pingresp_timeout_ns: None,
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.version == Version::V311 && self.client_id.is_empty() && !self.clean_start {
            return Err("an empty client_id needs clean_start in MQTT 3.1.1 (§3.1.3.1)".into());
        }
        if self.version == Version::V311 && self.password.is_some() && self.username.is_none() {
            return Err("MQTT 3.1.1 sends a password only with a user name (§3.1.2.9)".into());
        }
        if self.max_packet_size < 16 {
            return Err(format!(
                "max_packet_size {} is too small for any broker packet (at least 16)",
                self.max_packet_size
            ));
        }
        Ok(())
    }

    fn connect_packet(&self) -> Connect {
        let mut properties = Properties::new();
        if self.version == Version::V5 {
            if self.session_expiry_s != 0 {
                properties
                    .0
                    .push(Property::SessionExpiryInterval(self.session_expiry_s));
            }
            if self.max_packet_size < MAX_PACKET {
                properties
                    .0
                    .push(Property::MaximumPacketSize(self.max_packet_size));
            }
        }
        Connect {
            version: self.version,
            client_id: self.client_id.clone(),
            clean_start: self.clean_start,
            keep_alive: self.keep_alive_s,
            properties,
            will: self.will.clone(),
            username: self.username.clone(),
            password: self.password.clone(),
        }
    }
}

/// Coarse session state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// CONNECT queued, no CONNACK yet.
    Connecting,
    Connected,
    /// DISCONNECT queued: nothing more is sent; input is still read.
    Disconnecting,
    Closed,
}

/// The broker's answer to CONNECT, with its 5.0 limits (defaults where it gave none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connected {
    pub session_present: bool,
    /// 5.0: the identifier the broker chose for an empty client_id.
    pub assigned_client_id: Option<String>,
    /// The keep-alive in force (5.0: the broker's Server Keep Alive if it sent one).
    pub keep_alive_s: u16,
    /// QoS 1 messages the broker takes unacknowledged (5.0 §3.2.2.3.3; 65,535 otherwise).
    pub receive_maximum: u16,
    pub maximum_qos: QoS,
    pub retain_available: bool,
    /// Largest packet the broker accepts (5.0 §3.2.2.3.6), if it said.
    pub max_packet_size: Option<u32>,
    pub properties: Properties,
}

/// An application message from the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: QoS,
    pub retain: bool,
    pub dup: bool,
    pub packet_id: Option<u16>,
    pub properties: Properties,
}

/// What happened, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Connected(Connected),
    /// SUBACK: one code per filter (granted QoS, or a failure at 0x80 and above).
    Subscribed {
        packet_id: u16,
        codes: Vec<u8>,
    },
    /// UNSUBACK: 5.0 codes per filter, empty in 3.1.1.
    Unsubscribed {
        packet_id: u16,
        codes: Vec<u8>,
    },
    Message(Message),
    /// PUBACK for one of our QoS 1 messages (5.0: `code` 0x80 and above is a failure).
    Published {
        packet_id: u16,
        code: u8,
    },
    /// PINGRESP.
    Pong,
    /// The session ended: why, in words.
    Closed {
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Publish,
    Subscribe(usize),
    Unsubscribe(usize),
}

/// The broker's limits, from CONNACK (5.0) or the protocol's defaults.
#[derive(Debug, Clone, Copy)]
struct Limits {
    receive_maximum: u16,
    maximum_qos: QoS,
    retain_available: bool,
    max_packet_size: Option<u32>,
}

/// A sans-IO MQTT client session.
#[derive(Debug)]
pub struct Client {
    cfg: Config,
    state: State,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    events: VecDeque<Event>,
    started_ns: u64,
    last_sent_ns: u64,
    /// The oldest unanswered PINGREQ.
    ping_sent_ns: Option<u64>,
    pings_out: u32,
    keep_alive_s: u16,
    next_id: u16,
    pending: HashMap<u16, Pending>,
    publishes_in_flight: u16,
    limits: Limits,
    /// Totals on this session.
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub packets_in: u64,
    pub packets_out: u64,
}

fn protocol(version: Version, section: &'static str, why: impl Into<String>) -> MqttError {
    MqttError::Protocol {
        version: version.name(),
        why: why.into(),
        section,
    }
}

impl Client {
    /// A session with its CONNECT queued, started at `now_ns`.
    pub fn new(cfg: Config, now_ns: u64) -> Result<Client, MqttError> {
        cfg.check().map_err(MqttError::Config)?;
        let connect = Packet::Connect(cfg.connect_packet()).to_bytes(cfg.version)?;
        let mut c = Client {
            keep_alive_s: cfg.keep_alive_s,
            cfg,
            state: State::Connecting,
            inbuf: Vec::new(),
            out: Vec::new(),
            events: VecDeque::new(),
            started_ns: now_ns,
            last_sent_ns: now_ns,
            ping_sent_ns: None,
            pings_out: 0,
            next_id: 1,
            pending: HashMap::new(),
            publishes_in_flight: 0,
            limits: Limits {
                receive_maximum: u16::MAX,
                maximum_qos: QoS::ExactlyOnce,
                retain_available: true,
                max_packet_size: None,
            },
            bytes_in: 0,
            bytes_out: 0,
            packets_in: 0,
            packets_out: 0,
        };
        c.push_bytes(&connect);
        Ok(c)
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn version(&self) -> Version {
        self.cfg.version
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// QoS 1 messages sent and not yet acknowledged.
    pub fn in_flight(&self) -> u16 {
        self.publishes_in_flight
    }

    /// QoS 1 messages that may be sent before a PUBACK comes back (5.0: the broker's
    /// Receive Maximum, §4.9; 3.1.1: the Packet Identifiers left).
    pub fn send_quota(&self) -> u16 {
        self.limits
            .receive_maximum
            .saturating_sub(self.publishes_in_flight)
            .min(u16::MAX - self.pending.len() as u16)
    }

    fn pingresp_timeout_ns(&self) -> u64 {
        self.cfg
            .pingresp_timeout_ns
            .unwrap_or(u64::from(self.keep_alive_s.max(1)) * 1_000_000_000)
    }

    // ---- commands ----

    fn require_open(&self) -> Result<(), MqttError> {
        match self.state {
            State::Connecting | State::Connected => Ok(()),
            State::Disconnecting | State::Closed => Err(MqttError::Closed),
        }
    }

    fn next_packet_id(&mut self) -> Result<u16, MqttError> {
        for _ in 0..u16::MAX {
            let id = self.next_id;
            self.next_id = if id == u16::MAX { 1 } else { id + 1 };
            if !self.pending.contains_key(&id) {
                return Ok(id);
            }
        }
        Err(MqttError::Usage(
            "all 65,535 Packet Identifiers await an answer (3.1.1 §2.3.1)".into(),
        ))
    }

    /// PUBLISH `payload` on `topic` at QoS 0 or 1; returns the Packet Identifier of a QoS
    /// 1 message, whose PUBACK gives [`Event::Published`].
    pub fn publish(
        &mut self,
        topic: &str,
        payload: &[u8],
        qos: QoS,
        retain: bool,
    ) -> Result<Option<u16>, MqttError> {
        self.require_open()?;
        let usage = |s: String| Err(MqttError::Usage(s));
        if qos == QoS::ExactlyOnce {
            return usage("QoS 2 is not implemented by this client".into());
        }
        if topic.is_empty() {
            return usage("PUBLISH needs a topic name (3.1.1 §4.7.3)".into());
        }
        if qos > self.limits.maximum_qos {
            return usage(format!(
                "QoS {} is above the broker's Maximum QoS {} (CONNACK, 5.0 §3.2.2.3.4)",
                qos.bits(),
                self.limits.maximum_qos.bits()
            ));
        }
        if retain && !self.limits.retain_available {
            return usage(
                "the broker does not support retained messages (CONNACK Retain Available 0)".into(),
            );
        }
        let packet_id = if qos == QoS::AtLeastOnce {
            if self.send_quota() == 0 {
                return usage(format!(
                    "{} QoS 1 messages await their PUBACK, the broker's Receive Maximum \
                     (5.0 §4.9): wait for Event::Published",
                    self.publishes_in_flight
                ));
            }
            Some(self.next_packet_id()?)
        } else {
            None
        };
        let start = self.out.len();
        let props = Properties::new();
        let p = PublishRef {
            dup: false,
            qos,
            retain,
            topic,
            packet_id,
            properties: &props,
            payload,
        };
        packet::put_publish(&mut self.out, self.cfg.version, &p)?;
        let size = self.out.len() - start;
        if let Some(max) = self
            .limits
            .max_packet_size
            .filter(|m| size as u64 > u64::from(*m))
        {
            self.out.truncate(start);
            return usage(format!(
                "a PUBLISH of {size} bytes is over the broker's Maximum Packet Size of {max} \
                 (CONNACK, 5.0 §3.2.2.3.6)"
            ));
        }
        self.bytes_out += size as u64;
        self.packets_out += 1;
        if let Some(id) = packet_id {
            self.pending.insert(id, Pending::Publish);
            self.publishes_in_flight += 1;
        }
        Ok(packet_id)
    }

    /// SUBSCRIBE to `filters`, each with the QoS asked for (0 or 1); [`Event::Subscribed`]
    /// follows with the codes the broker granted.
    pub fn subscribe(&mut self, filters: &[(&str, QoS)]) -> Result<u16, MqttError> {
        self.require_open()?;
        if filters.iter().any(|(_, q)| *q == QoS::ExactlyOnce) {
            return Err(MqttError::Usage(
                "QoS 2 is not implemented by this client".into(),
            ));
        }
        let packet_id = self.next_packet_id()?;
        let p = Packet::Subscribe(Subscribe {
            packet_id,
            properties: Properties::new(),
            filters: filters
                .iter()
                .map(|(f, q)| (f.to_string(), SubOptions::qos(*q)))
                .collect(),
        });
        self.send(&p)?;
        self.pending
            .insert(packet_id, Pending::Subscribe(filters.len()));
        Ok(packet_id)
    }

    /// UNSUBSCRIBE from `filters`; [`Event::Unsubscribed`] follows.
    pub fn unsubscribe(&mut self, filters: &[&str]) -> Result<u16, MqttError> {
        self.require_open()?;
        let packet_id = self.next_packet_id()?;
        let p = Packet::Unsubscribe(Unsubscribe {
            packet_id,
            properties: Properties::new(),
            filters: filters.iter().map(|f| f.to_string()).collect(),
        });
        self.send(&p)?;
        self.pending
            .insert(packet_id, Pending::Unsubscribe(filters.len()));
        Ok(packet_id)
    }

    /// PINGREQ; [`Event::Pong`] follows.
    pub fn ping(&mut self, now_ns: u64) -> Result<(), MqttError> {
        self.require_open()?;
        self.queue_ping(now_ns);
        Ok(())
    }

    /// DISCONNECT (5.0: Normal disconnection); the broker closes the connection, and
    /// [`Client::handle_eof`] then ends the session without an error.
    pub fn disconnect(&mut self) -> Result<(), MqttError> {
        match self.state {
            State::Closed => Err(MqttError::Closed),
            State::Disconnecting => Ok(()),
            State::Connecting | State::Connected => {
                self.send(&Packet::Disconnect(Reason {
                    code: 0,
                    properties: Properties::new(),
                }))?;
                self.state = State::Disconnecting;
                Ok(())
            }
        }
    }

    // ---- output ----

    fn send(&mut self, p: &Packet) -> Result<(), MqttError> {
        let b = p.to_bytes(self.cfg.version)?;
        self.push_bytes(&b);
        Ok(())
    }

    fn push_bytes(&mut self, b: &[u8]) {
        self.bytes_out += b.len() as u64;
        self.packets_out += 1;
        self.out.extend_from_slice(b);
    }

    fn queue_ping(&mut self, now_ns: u64) {
        if self.send(&Packet::PingReq).is_ok() {
            self.pings_out += 1;
            self.ping_sent_ns.get_or_insert(now_ns);
        }
    }

    fn fail(&mut self, e: &MqttError) {
        if self.state == State::Closed {
            return;
        }
        let code = match e {
            MqttError::Malformed(crate::WireError::TooLarge { .. }) => Some(0x95),
            MqttError::Malformed(_) => Some(0x81),
            MqttError::Protocol { .. } => Some(0x82),
            _ => None,
        };
        if let (Some(code), Version::V5, State::Connected) = (code, self.cfg.version, self.state) {
            let mut why = e.to_string();
            let mut cut = why.len().min(200);
            while !why.is_char_boundary(cut) {
                cut -= 1;
            }
            why.truncate(cut);
            let _ = self.send(&Packet::Disconnect(Reason {
                code,
                properties: Properties(vec![Property::ReasonString(why)]),
            }));
        }
        self.state = State::Closed;
        self.events.push_back(Event::Closed {
            reason: e.to_string(),
        });
    }

    // ---- input ----

    fn input(&mut self, now_ns: u64, bytes: &[u8]) -> Result<(), MqttError> {
        // Parse straight from the read buffer when nothing is pending, so a payload is
        // copied once (into its event), not twice.
        let owned;
        let buf: &[u8] = if self.inbuf.is_empty() {
            bytes
        } else {
            self.inbuf.extend_from_slice(bytes);
            owned = std::mem::take(&mut self.inbuf);
            &owned
        };
        let mut at = 0;
        let mut result = Ok(());
        while self.state != State::Closed {
            match packet::decode(&buf[at..], self.cfg.version, self.cfg.max_packet_size) {
                Ok(Some((p, n))) => {
                    at += n;
                    self.packets_in += 1;
                    if let Err(e) = self.on_packet(now_ns, p) {
                        result = Err(e);
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    result = Err(e.into());
                    break;
                }
            }
        }
        if result.is_ok() {
            self.inbuf = buf[at..].to_vec();
        }
        result
    }

    fn on_packet(&mut self, now_ns: u64, p: Packet) -> Result<(), MqttError> {
        let v = self.cfg.version;
        if self.state == State::Connecting {
            return match p {
                Packet::ConnAck(c) => self.on_connack(c),
                Packet::Disconnect(r) if v == Version::V5 => Err(disconnected(r)),
                other => Err(protocol(
                    v,
                    "3.1.1 §3.2, 5.0 §3.2",
                    format!(
                        "{} before CONNACK, which must come first",
                        other.kind().name()
                    ),
                )),
            };
        }
        match p {
            Packet::ConnAck(_) => Err(protocol(v, "3.1.1 §3.2, 5.0 §3.2", "a second CONNACK")),
            Packet::Publish(m) => self.on_publish(m),
            Packet::PubAck(a) => self.on_ack(a, PacketType::PubAck),
            Packet::SubAck(s) => self.on_suback(s),
            Packet::UnsubAck(u) => self.on_unsuback(u),
            Packet::PingResp => {
                if self.pings_out == 0 {
                    return Err(protocol(
                        v,
                        "3.1.1 §3.13, 5.0 §3.13",
                        "a PINGRESP without a PINGREQ",
                    ));
                }
                self.pings_out -= 1;
                self.ping_sent_ns = (self.pings_out > 0).then_some(now_ns);
                self.events.push_back(Event::Pong);
                Ok(())
            }
            Packet::Disconnect(r) if v == Version::V5 => Err(disconnected(r)),
            Packet::Disconnect(_) => Err(protocol(
                v,
                "3.1.1 §3.14",
                "a DISCONNECT from the server, which only clients send in 3.1.1",
            )),
            Packet::PubRec(_) | Packet::PubRel(_) | Packet::PubComp(_) => Err(protocol(
                v,
                "3.1.1 §4.3.3, 5.0 §4.3.3",
                format!(
                    "{} belongs to QoS 2, which this client never uses",
                    p.kind().name()
                ),
            )),
            Packet::Auth(_) => Err(protocol(
                v,
                "5.0 §4.12",
                "AUTH, but CONNECT named no Authentication Method",
            )),
            Packet::Connect(_)
            | Packet::Subscribe(_)
            | Packet::Unsubscribe(_)
            | Packet::PingReq => Err(protocol(
                v,
                "3.1.1 §2.2.1, 5.0 §2.1.2",
                format!("{}, a client-to-server packet", p.kind().name()),
            )),
        }
    }

    fn on_connack(&mut self, c: packet::ConnAck) -> Result<(), MqttError> {
        let v = self.cfg.version;
        if c.code != 0 {
            return Err(MqttError::Refused {
                code: c.code,
                name: reason::describe(c.code, PacketType::ConnAck, v),
                reason: c.properties.reason_string(),
            });
        }
        let p = &c.properties;
        if let Some(k) = p.find(|x| match x {
            Property::ServerKeepAlive(k) => Some(*k),
            _ => None,
        }) {
            self.keep_alive_s = k;
        }
        if let Some(r) = p.find(|x| match x {
            Property::ReceiveMaximum(r) => Some(*r),
            _ => None,
        }) {
            self.limits.receive_maximum = r;
        }
        if let Some(q) = p.find(|x| match x {
            Property::MaximumQos(q) => QoS::from_bits(*q),
            _ => None,
        }) {
            self.limits.maximum_qos = q;
        }
        if let Some(r) = p.find(|x| match x {
            Property::RetainAvailable(r) => Some(*r == 1),
            _ => None,
        }) {
            self.limits.retain_available = r;
        }
        self.limits.max_packet_size = p.find(|x| match x {
            Property::MaximumPacketSize(m) => Some(*m),
            _ => None,
        });
        let assigned = p.find(|x| match x {
            Property::AssignedClientIdentifier(s) => Some(s.clone()),
            _ => None,
        });
        if self.cfg.client_id.is_empty() && v == Version::V5 && assigned.is_none() {
            return Err(protocol(
                v,
                "5.0 §3.2.2.3.7",
                "no Assigned Client Identifier for our empty client identifier",
            ));
        }
        self.state = State::Connected;
        self.events.push_back(Event::Connected(Connected {
            session_present: c.session_present,
            assigned_client_id: assigned,
            keep_alive_s: self.keep_alive_s,
            receive_maximum: self.limits.receive_maximum,
            maximum_qos: self.limits.maximum_qos,
            retain_available: self.limits.retain_available,
            max_packet_size: self.limits.max_packet_size,
            properties: c.properties,
        }));
        Ok(())
    }

    fn on_publish(&mut self, m: packet::Publish) -> Result<(), MqttError> {
        let v = self.cfg.version;
        if m.qos == QoS::ExactlyOnce {
            return Err(protocol(
                v,
                "3.1.1 §3.8.4, 5.0 §3.8.4",
                "a QoS 2 message, but every subscription asked for QoS 1 at most",
            ));
        }
        if m.properties
            .iter()
            .any(|p| matches!(p, Property::TopicAlias(_)))
        {
            return Err(protocol(
                v,
                "5.0 §3.3.2.3.4",
                "a Topic Alias, but our CONNECT allowed none (Topic Alias Maximum 0)",
            ));
        }
        if let (Some(id), State::Connected) = (m.packet_id, self.state) {
            self.send(&Packet::PubAck(Ack {
                packet_id: id,
                code: 0,
                properties: Properties::new(),
            }))?;
        }
        self.events.push_back(Event::Message(Message {
            topic: m.topic,
            payload: m.payload,
            qos: m.qos,
            retain: m.retain,
            dup: m.dup,
            packet_id: m.packet_id,
            properties: m.properties,
        }));
        Ok(())
    }

    /// Takes the pending entry `id` if it is of the kind `want` names.
    fn take_pending(
        &mut self,
        id: u16,
        what: &str,
        want: fn(Pending) -> bool,
    ) -> Result<Pending, MqttError> {
        match self.pending.get(&id).copied() {
            Some(p) if want(p) => {
                self.pending.remove(&id);
                Ok(p)
            }
            other => Err(protocol(
                self.cfg.version,
                "3.1.1 §2.3.1, 5.0 §2.2.1",
                format!(
                    "{what} for Packet Identifier {id}, which {}",
                    match other {
                        None => "awaits no answer".to_string(),
                        Some(p) => format!("belongs to a {p:?}"),
                    }
                ),
            )),
        }
    }

    fn on_ack(&mut self, a: Ack, kind: PacketType) -> Result<(), MqttError> {
        self.take_pending(a.packet_id, kind.name(), |p| p == Pending::Publish)?;
        self.publishes_in_flight -= 1;
        self.events.push_back(Event::Published {
            packet_id: a.packet_id,
            code: a.code,
        });
        Ok(())
    }

    fn on_suback(&mut self, s: SubAck) -> Result<(), MqttError> {
        let p = self.take_pending(s.packet_id, "SUBACK", |p| {
            matches!(p, Pending::Subscribe(_))
        })?;
        if let Pending::Subscribe(n) = p {
            if n != s.codes.len() {
                return Err(protocol(
                    self.cfg.version,
                    "3.1.1 §3.9.3, 5.0 §3.9.3",
                    format!(
                        "a SUBACK with {} codes for {n} topic filters",
                        s.codes.len()
                    ),
                ));
            }
        }
        self.events.push_back(Event::Subscribed {
            packet_id: s.packet_id,
            codes: s.codes,
        });
        Ok(())
    }

    fn on_unsuback(&mut self, u: UnsubAck) -> Result<(), MqttError> {
        let p = self.take_pending(u.packet_id, "UNSUBACK", |p| {
            matches!(p, Pending::Unsubscribe(_))
        })?;
        if let (Pending::Unsubscribe(n), Version::V5) = (p, self.cfg.version) {
            if n != u.codes.len() {
                return Err(protocol(
                    self.cfg.version,
                    "5.0 §3.11.3",
                    format!(
                        "an UNSUBACK with {} codes for {n} topic filters",
                        u.codes.len()
                    ),
                ));
            }
        }
        self.events.push_back(Event::Unsubscribed {
            packet_id: u.packet_id,
            codes: u.codes,
        });
        Ok(())
    }
}

fn disconnected(r: Reason) -> MqttError {
    MqttError::Disconnected {
        code: r.code,
        name: reason::name(r.code, PacketType::Disconnect),
        reason: r.properties.reason_string(),
    }
}

/// The one engine shape (`wirebench-engine`), and the one way into the session.
impl wirebench_engine::Engine for Client {
    type Event = Event;
    type Error = MqttError;

    /// Feeds bytes read from the transport at `now_ns`. An error ends the session (see
    /// [`MqttError`]); later input is refused with [`MqttError::Closed`].
    fn handle_input(&mut self, now_ns: u64, bytes: &[u8]) -> Result<(), MqttError> {
        if self.state == State::Closed {
            return Err(MqttError::Closed);
        }
        self.bytes_in += bytes.len() as u64;
        let r = self.input(now_ns, bytes);
        if let Err(e) = &r {
            self.fail(e);
        }
        r
    }

    /// The transport reached end of file: `Ok` after our DISCONNECT, an error otherwise.
    fn handle_eof(&mut self) -> Result<(), MqttError> {
        match self.state {
            State::Closed => return Ok(()),
            State::Disconnecting => {
                self.state = State::Closed;
                self.events.push_back(Event::Closed {
                    reason: "connection closed after DISCONNECT".into(),
                });
                return Ok(());
            }
            _ => {}
        }
        let during = if !self.inbuf.is_empty() {
            format!(
                "in the middle of a packet ({} bytes of it read)",
                self.inbuf.len()
            )
        } else if self.state == State::Connecting {
            "before CONNACK (a broker refusing a CONNECT it cannot read closes without one)".into()
        } else {
            "while the session was open (an MQTT 3.1.1 broker closes without a word on errors: \
             its log says why)"
                .into()
        };
        let e = MqttError::Eof { during };
        self.fail(&e);
        Err(e)
    }

    /// Appends what is queued to `buf`; the keep-alive timer counts from `now_ns`.
    fn poll_transmit(&mut self, now_ns: u64, buf: &mut Vec<u8>) -> usize {
        let n = self.out.len();
        if n > 0 {
            self.last_sent_ns = now_ns;
            buf.append(&mut self.out);
        }
        n
    }

    /// When [`Client::handle_timeout`] wants to be called: the CONNACK deadline, the
    /// next keep-alive PINGREQ, or the deadline of an unanswered one.
    fn poll_timeout(&self) -> Option<u64> {
        match self.state {
            State::Connecting => self
                .cfg
                .connect_timeout_ns
                .map(|t| self.started_ns.saturating_add(t)),
            State::Connected => match self.ping_sent_ns {
                Some(t) => Some(t.saturating_add(self.pingresp_timeout_ns())),
                None if self.keep_alive_s > 0 => Some(
                    self.last_sent_ns
                        .saturating_add(u64::from(self.keep_alive_s) * 1_000_000_000),
                ),
                None => None,
            },
            State::Disconnecting | State::Closed => None,
        }
    }

    /// Acts on a deadline from [`Client::poll_timeout`] that has passed: queues the
    /// keep-alive PINGREQ, or fails the session.
    fn handle_timeout(&mut self, now_ns: u64) -> Result<(), MqttError> {
        let Some(t) = self.poll_timeout() else {
            return Ok(());
        };
        if now_ns < t {
            return Ok(());
        }
        let e = match (self.state, self.ping_sent_ns) {
            (State::Connecting, _) => MqttError::ConnectTimeout {
                ms: now_ns.saturating_sub(self.started_ns) / 1_000_000,
            },
            (_, Some(p)) => MqttError::KeepAliveTimeout {
                ms: now_ns.saturating_sub(p) / 1_000_000,
            },
            _ => {
                self.queue_ping(now_ns);
                return Ok(());
            }
        };
        self.fail(&e);
        Err(e)
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
