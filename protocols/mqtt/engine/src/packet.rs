//! Every MQTT control packet of 3.1.1 (chapter 3) and 5.0 (chapter 3), both directions:
//! [`Packet::encode`] writes one, [`decode`] reads one from the front of a byte stream.
//! The client engine sends CONNECT, PUBLISH, PUBACK, SUBSCRIBE, UNSUBSCRIBE, PINGREQ and
//! DISCONNECT and reads the broker's packets; the rest (CONNACK, SUBACK, ...) are here
//! so that a test broker can speak, and so that the round trip encode -> decode can be
//! checked on every packet.
//!
//! Decoding is a checked view (incomplete input is told apart from invalid input): a short
//! field, a reserved flag, a QoS of 3, a Packet Identifier of 0, a topic name with a
//! wildcard, a reason code outside its packet's table, a property not allowed in its
//! packet: each is a [`WireError`] naming the packet and the section, never a panic.
//! Encoding refuses what a receiver would refuse ([`EncodeError`]), so whatever encodes
//! decodes to the same packet.

use crate::error::{EncodeError, WireError};
use crate::property::{Place, Properties, Property};
use crate::reason;
use crate::wire::{
    FixedHeader, PacketType, QoS, Reader, Version, frame, put_binary, put_header, put_string,
    put_u16,
};

/// CONNECT's Will (3.1.1 §3.1.2.5-3.1.2.7, §3.1.3.2-3.1.3.3; 5.0 §3.1.2.5-3.1.2.7,
/// §3.1.3.2-3.1.3.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Will {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: QoS,
    pub retain: bool,
    /// 5.0 Will Properties; empty in 3.1.1.
    pub properties: Properties,
}

/// CONNECT (3.1.1 §3.1, 5.0 §3.1). Its own `version` decides its encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    pub version: Version,
    pub client_id: String,
    /// Clean Session (3.1.1) / Clean Start (5.0).
    pub clean_start: bool,
    /// Seconds; 0 turns the mechanism off.
    pub keep_alive: u16,
    pub properties: Properties,
    pub will: Option<Will>,
    pub username: Option<String>,
    pub password: Option<Vec<u8>>,
}

/// CONNACK (3.1.1 §3.2, 5.0 §3.2). `code`: 3.1.1's return code or 5.0's reason code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnAck {
    pub session_present: bool,
    pub code: u8,
    pub properties: Properties,
}

/// PUBLISH (3.1.1 §3.3, 5.0 §3.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publish {
    pub dup: bool,
    pub qos: QoS,
    pub retain: bool,
    pub topic: String,
    /// Present exactly when `qos` is 1 or 2.
    pub packet_id: Option<u16>,
    pub properties: Properties,
    pub payload: Vec<u8>,
}

/// PUBACK, PUBREC, PUBREL, PUBCOMP (3.1.1 §3.4-3.7, 5.0 §3.4-3.7): a Packet Identifier
/// and, in 5.0, a reason code and properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    pub packet_id: u16,
    pub code: u8,
    pub properties: Properties,
}

/// Subscription Options (3.1.1 §3.8.3.1: the requested QoS only; 5.0 §3.8.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubOptions {
    pub qos: QoS,
    pub no_local: bool,
    pub retain_as_published: bool,
    /// 0, 1 or 2.
    pub retain_handling: u8,
}

impl SubOptions {
    pub fn qos(qos: QoS) -> SubOptions {
        SubOptions {
            qos,
            no_local: false,
            retain_as_published: false,
            retain_handling: 0,
        }
    }
}

/// SUBSCRIBE (3.1.1 §3.8, 5.0 §3.8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribe {
    pub packet_id: u16,
    pub properties: Properties,
    /// At least one.
    pub filters: Vec<(String, SubOptions)>,
}

/// SUBACK (3.1.1 §3.9, 5.0 §3.9): one code per filter subscribed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubAck {
    pub packet_id: u16,
    pub properties: Properties,
    pub codes: Vec<u8>,
}

/// UNSUBSCRIBE (3.1.1 §3.10, 5.0 §3.10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsubscribe {
    pub packet_id: u16,
    pub properties: Properties,
    pub filters: Vec<String>,
}

/// UNSUBACK (3.1.1 §3.11: the Packet Identifier only; 5.0 §3.11: one code per filter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsubAck {
    pub packet_id: u16,
    pub properties: Properties,
    pub codes: Vec<u8>,
}

/// DISCONNECT (3.1.1 §3.14: no body; 5.0 §3.14) and AUTH (5.0 §3.15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub code: u8,
    pub properties: Properties,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    Connect(Connect),
    ConnAck(ConnAck),
    Publish(Publish),
    PubAck(Ack),
    PubRec(Ack),
    PubRel(Ack),
    PubComp(Ack),
    Subscribe(Subscribe),
    SubAck(SubAck),
    Unsubscribe(Unsubscribe),
    UnsubAck(UnsubAck),
    PingReq,
    PingResp,
    Disconnect(Reason),
    Auth(Reason),
}

/// A topic name a PUBLISH may carry (3.1.1 §4.7, 5.0 §4.7): at least one character (5.0
/// allows an empty one with a Topic Alias, checked by the caller), no wildcard.
pub fn check_topic_name(t: &str) -> Result<(), String> {
    if t.contains(['+', '#']) {
        return Err(format!(
            "topic name {t:?} contains a wildcard (3.1.1 §4.7.1, 5.0 §4.7.1: only filters may)"
        ));
    }
    if t.contains('\0') {
        return Err(format!("topic name {t:?} contains U+0000"));
    }
    Ok(())
}

/// A topic filter a SUBSCRIBE may carry (3.1.1 §4.7.1, 5.0 §4.7.1): non-empty, `#` alone
/// in the last level, `+` alone in its level.
pub fn check_topic_filter(f: &str) -> Result<(), String> {
    if f.is_empty() {
        return Err("an empty topic filter (3.1.1 §4.7.3, 5.0 §4.7.3)".into());
    }
    if f.contains('\0') {
        return Err(format!("topic filter {f:?} contains U+0000"));
    }
    let levels: Vec<&str> = f.split('/').collect();
    for (i, l) in levels.iter().enumerate() {
        let bad_hash = l.contains('#') && (*l != "#" || i + 1 != levels.len());
        let bad_plus = l.contains('+') && *l != "+";
        if bad_hash || bad_plus {
            return Err(format!(
                "topic filter {f:?}: a wildcard must fill its level, and # must be last (3.1.1 §4.7.1, 5.0 §4.7.1)"
            ));
        }
    }
    Ok(())
}

/// A PUBLISH by reference, so a client sends its payload without building a [`Publish`].
#[derive(Debug, Clone, Copy)]
pub struct PublishRef<'a> {
    pub dup: bool,
    pub qos: QoS,
    pub retain: bool,
    pub topic: &'a str,
    pub packet_id: Option<u16>,
    pub properties: &'a Properties,
    pub payload: &'a [u8],
}

fn enc(packet: &'static str, why: impl Into<String>) -> EncodeError {
    EncodeError {
        packet,
        why: why.into(),
    }
}

fn props_len(version: Version, p: &Properties, packet: &'static str) -> Result<usize, EncodeError> {
    match version {
        Version::V5 => p.encoded_len(packet),
        Version::V311 if p.is_empty() => Ok(0),
        Version::V311 => Err(enc(packet, "MQTT 3.1.1 packets have no properties")),
    }
}

fn put_props(
    out: &mut Vec<u8>,
    version: Version,
    p: &Properties,
    packet: &'static str,
) -> Result<(), EncodeError> {
    match version {
        Version::V5 => p.encode(out, packet),
        Version::V311 => props_len(version, p, packet).map(|_| ()),
    }
}

/// Appends one PUBLISH.
pub fn put_publish(
    out: &mut Vec<u8>,
    version: Version,
    p: &PublishRef<'_>,
) -> Result<(), EncodeError> {
    const P: &str = "PUBLISH";
    check_topic_name(p.topic).map_err(|e| enc(P, e))?;
    let alias = p
        .properties
        .iter()
        .any(|x| matches!(x, Property::TopicAlias(_)));
    if p.topic.is_empty() && !(version == Version::V5 && alias) {
        return Err(enc(P, "an empty topic name (5.0: only with a Topic Alias)"));
    }
    match (p.qos, p.packet_id) {
        (QoS::AtMostOnce, None) if !p.dup => {}
        (QoS::AtMostOnce, _) => {
            return Err(enc(
                P,
                "QoS 0 has no Packet Identifier and no DUP (3.1.1 §3.3.1.1)",
            ));
        }
        (_, Some(id)) if id != 0 => {}
        _ => {
            return Err(enc(
                P,
                "QoS 1 and 2 need a non-zero Packet Identifier (3.1.1 §2.3.1)",
            ));
        }
    }
    if p.topic.len() > usize::from(u16::MAX) {
        return Err(enc(
            P,
            format!(
                "the topic name is {} bytes; at most 65,535 fit",
                p.topic.len()
            ),
        ));
    }
    let remaining = 2
        + p.topic.len()
        + if p.packet_id.is_some() { 2 } else { 0 }
        + props_len(version, p.properties, P)?
        + p.payload.len();
    let flags = (u8::from(p.dup) << 3) | (p.qos.bits() << 1) | u8::from(p.retain);
    put_header(out, PacketType::Publish, flags, remaining)?;
    put_string(out, p.topic, P, "the topic name")?;
    if let Some(id) = p.packet_id {
        put_u16(out, id);
    }
    put_props(out, version, p.properties, P)?;
    out.extend_from_slice(p.payload);
    Ok(())
}

fn check_code(code: u8, kind: PacketType, version: Version) -> Result<(), EncodeError> {
    if reason::allowed(code, kind, version) {
        Ok(())
    } else {
        Err(enc(
            kind.name(),
            format!(
                "code {code:#04x} is not one of its codes in MQTT {}",
                version.name()
            ),
        ))
    }
}

fn nonzero(id: u16, packet: &'static str) -> Result<(), EncodeError> {
    if id == 0 {
        Err(enc(
            packet,
            "Packet Identifier 0 (3.1.1 §2.3.1: must be non-zero)",
        ))
    } else {
        Ok(())
    }
}

impl Packet {
    pub fn kind(&self) -> PacketType {
        use PacketType as T;
        match self {
            Packet::Connect(_) => T::Connect,
            Packet::ConnAck(_) => T::ConnAck,
            Packet::Publish(_) => T::Publish,
            Packet::PubAck(_) => T::PubAck,
            Packet::PubRec(_) => T::PubRec,
            Packet::PubRel(_) => T::PubRel,
            Packet::PubComp(_) => T::PubComp,
            Packet::Subscribe(_) => T::Subscribe,
            Packet::SubAck(_) => T::SubAck,
            Packet::Unsubscribe(_) => T::Unsubscribe,
            Packet::UnsubAck(_) => T::UnsubAck,
            Packet::PingReq => T::PingReq,
            Packet::PingResp => T::PingResp,
            Packet::Disconnect(_) => T::Disconnect,
            Packet::Auth(_) => T::Auth,
        }
    }

    /// The packet's bytes in `version` (CONNECT in its own).
    pub fn to_bytes(&self, version: Version) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.encode(version, &mut out)?;
        Ok(out)
    }

    /// Appends the packet in `version` (CONNECT in its own); on error nothing is appended.
    pub fn encode(&self, version: Version, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let kind = self.kind();
        if let Packet::Publish(p) = self {
            let r = PublishRef {
                dup: p.dup,
                qos: p.qos,
                retain: p.retain,
                topic: &p.topic,
                packet_id: p.packet_id,
                properties: &p.properties,
                payload: &p.payload,
            };
            let mut b = Vec::new();
            put_publish(&mut b, version, &r)?;
            out.extend_from_slice(&b);
            return Ok(());
        }
        let body = self.body(version)?;
        put_header(out, kind, kind.fixed_flags().unwrap_or(0), body.len())?;
        out.extend_from_slice(&body);
        Ok(())
    }

    fn body(&self, version: Version) -> Result<Vec<u8>, EncodeError> {
        let kind = self.kind();
        let name = kind.name();
        let mut b = Vec::new();
        match self {
            Packet::Connect(c) => return encode_connect(c),
            Packet::ConnAck(c) => {
                check_code(c.code, kind, version)?;
                if c.session_present && c.code != 0 {
                    return Err(enc(
                        name,
                        "Session Present with a failure code (3.1.1 §3.2.2.2)",
                    ));
                }
                b.push(u8::from(c.session_present));
                b.push(c.code);
                put_props(&mut b, version, &c.properties, name)?;
            }
            Packet::Publish(_) => unreachable!("encoded by put_publish"),
            Packet::PubAck(a) | Packet::PubRec(a) | Packet::PubRel(a) | Packet::PubComp(a) => {
                nonzero(a.packet_id, name)?;
                check_code(a.code, kind, version)?;
                put_u16(&mut b, a.packet_id);
                put_reason(&mut b, version, a.code, &a.properties, name)?;
            }
            Packet::Subscribe(s) => {
                nonzero(s.packet_id, name)?;
                if s.filters.is_empty() {
                    return Err(enc(name, "no topic filter (3.1.1 §3.8.3)"));
                }
                put_u16(&mut b, s.packet_id);
                put_props(&mut b, version, &s.properties, name)?;
                for (f, o) in &s.filters {
                    check_topic_filter(f).map_err(|e| enc(name, e))?;
                    put_string(&mut b, f, name, "a topic filter")?;
                    b.push(options_byte(o, version)?);
                }
            }
            Packet::SubAck(s) => {
                nonzero(s.packet_id, name)?;
                if s.codes.is_empty() {
                    return Err(enc(name, "no return code"));
                }
                put_u16(&mut b, s.packet_id);
                put_props(&mut b, version, &s.properties, name)?;
                for c in &s.codes {
                    check_code(*c, kind, version)?;
                    b.push(*c);
                }
            }
            Packet::Unsubscribe(u) => {
                nonzero(u.packet_id, name)?;
                if u.filters.is_empty() {
                    return Err(enc(name, "no topic filter (3.1.1 §3.10.3)"));
                }
                put_u16(&mut b, u.packet_id);
                put_props(&mut b, version, &u.properties, name)?;
                for f in &u.filters {
                    check_topic_filter(f).map_err(|e| enc(name, e))?;
                    put_string(&mut b, f, name, "a topic filter")?;
                }
            }
            Packet::UnsubAck(u) => {
                nonzero(u.packet_id, name)?;
                put_u16(&mut b, u.packet_id);
                match version {
                    Version::V311 if u.codes.is_empty() => {
                        put_props(&mut b, version, &u.properties, name)?
                    }
                    Version::V311 => return Err(enc(name, "MQTT 3.1.1's UNSUBACK has no codes")),
                    Version::V5 if u.codes.is_empty() => return Err(enc(name, "no reason code")),
                    Version::V5 => {
                        put_props(&mut b, version, &u.properties, name)?;
                        for c in &u.codes {
                            check_code(*c, kind, version)?;
                            b.push(*c);
                        }
                    }
                }
            }
            Packet::PingReq | Packet::PingResp => {}
            Packet::Disconnect(r) | Packet::Auth(r) => {
                if version == Version::V311 && kind == PacketType::Auth {
                    return Err(enc(name, "AUTH does not exist in MQTT 3.1.1"));
                }
                check_code(r.code, kind, version)?;
                put_reason(&mut b, version, r.code, &r.properties, name)?;
            }
        }
        Ok(b)
    }
}

/// A 5.0 reason code and properties in their shortest form (§3.4.2.1, §3.14.2.1: both
/// may be left out when the code is 0 and there are no properties; the property length
/// when there are none); nothing in 3.1.1.
fn put_reason(
    b: &mut Vec<u8>,
    version: Version,
    code: u8,
    props: &Properties,
    name: &'static str,
) -> Result<(), EncodeError> {
    match version {
        Version::V311 => props_len(version, props, name).map(|_| ()),
        Version::V5 => {
            if code != 0 || !props.is_empty() {
                b.push(code);
            }
            if !props.is_empty() {
                props.encode(b, name)?;
            }
            Ok(())
        }
    }
}

fn options_byte(o: &SubOptions, version: Version) -> Result<u8, EncodeError> {
    let name = "SUBSCRIBE";
    match version {
        Version::V311 if o.no_local || o.retain_as_published || o.retain_handling != 0 => Err(enc(
            name,
            "MQTT 3.1.1's subscription options are the QoS only",
        )),
        _ if o.retain_handling > 2 => Err(enc(name, "Retain Handling over 2 (5.0 §3.8.3.1)")),
        _ => Ok(o.qos.bits()
            | (u8::from(o.no_local) << 2)
            | (u8::from(o.retain_as_published) << 3)
            | (o.retain_handling << 4)),
    }
}

fn encode_connect(c: &Connect) -> Result<Vec<u8>, EncodeError> {
    const N: &str = "CONNECT";
    let v = c.version;
    let mut b = Vec::new();
    put_string(&mut b, "MQTT", N, "the protocol name")?;
    b.push(v.level());
    if v == Version::V311 && c.password.is_some() && c.username.is_none() {
        return Err(enc(N, "a password without a user name (3.1.1 §3.1.2.9)"));
    }
    let mut flags = u8::from(c.clean_start) << 1;
    if let Some(w) = &c.will {
        flags |= 0b100 | (w.qos.bits() << 3) | (u8::from(w.retain) << 5);
    }
    flags |= u8::from(c.password.is_some()) << 6;
    flags |= u8::from(c.username.is_some()) << 7;
    b.push(flags);
    put_u16(&mut b, c.keep_alive);
    put_props(&mut b, v, &c.properties, N)?;
    put_string(&mut b, &c.client_id, N, "the client identifier")?;
    if let Some(w) = &c.will {
        if v == Version::V5 {
            w.properties.encode(&mut b, N)?;
        } else if !w.properties.is_empty() {
            return Err(enc(N, "MQTT 3.1.1 has no Will Properties"));
        }
        check_topic_name(&w.topic).map_err(|e| enc(N, e))?;
        if w.topic.is_empty() {
            return Err(enc(N, "an empty Will Topic"));
        }
        put_string(&mut b, &w.topic, N, "the Will Topic")?;
        put_binary(&mut b, &w.payload, N, "the Will Payload")?;
    }
    if let Some(u) = &c.username {
        put_string(&mut b, u, N, "the user name")?;
    }
    if let Some(p) = &c.password {
        put_binary(&mut b, p, N, "the password")?;
    }
    Ok(b)
}

/// The next packet at the front of `buf` in `version` and the bytes it took; `Ok(None)`
/// until all of it has arrived. A packet over `max_packet` bytes is refused from its
/// header on. CONNECT is read in the version it states.
pub fn decode(
    buf: &[u8],
    version: Version,
    max_packet: u32,
) -> Result<Option<(Packet, usize)>, WireError> {
    let Some((h, body)) = frame(buf, version, max_packet)? else {
        return Ok(None);
    };
    let p = decode_body(&h, body, version)?;
    Ok(Some((p, h.total_len())))
}

fn bad(packet: &'static str, section: &'static str, why: impl Into<String>) -> WireError {
    WireError::malformed(packet, section, why)
}

fn props(r: &mut Reader<'_>, version: Version, kind: PacketType) -> Result<Properties, WireError> {
    match version {
        Version::V5 => Properties::decode(r, Place::Packet(kind)),
        Version::V311 => Ok(Properties::new()),
    }
}

fn packet_id(r: &mut Reader<'_>) -> Result<u16, WireError> {
    let id = r.u16("the Packet Identifier")?;
    if id == 0 {
        return Err(bad(
            r.packet(),
            "3.1.1 §2.3.1, 5.0 §2.2.1",
            "Packet Identifier 0",
        ));
    }
    Ok(id)
}

fn code(r: &mut Reader<'_>, kind: PacketType, version: Version) -> Result<u8, WireError> {
    let c = r.u8("the reason code")?;
    if !reason::allowed(c, kind, version) {
        return Err(bad(
            kind.name(),
            "3.1.1 §3.2.2.3, §3.9.3; 5.0 §2.4",
            format!(
                "code {c:#04x} is not one of its codes in MQTT {}",
                version.name()
            ),
        ));
    }
    Ok(c)
}

/// 5.0's optional reason code and properties (§3.4.2.1, §3.14.2.1, §3.15.2.1).
fn reason_tail(
    r: &mut Reader<'_>,
    kind: PacketType,
    version: Version,
) -> Result<(u8, Properties), WireError> {
    if version == Version::V311 || r.is_empty() {
        return Ok((0, Properties::new()));
    }
    let c = code(r, kind, version)?;
    let p = if r.is_empty() {
        Properties::new()
    } else {
        props(r, version, kind)?
    };
    Ok((c, p))
}

fn decode_body(h: &FixedHeader, body: &[u8], version: Version) -> Result<Packet, WireError> {
    use PacketType as T;
    let kind = h.kind;
    let name = kind.name();
    let mut r = Reader::new(body, name);
    let p = match kind {
        T::Connect => Packet::Connect(decode_connect(&mut r)?),
        T::ConnAck => {
            let flags = r.u8("the acknowledge flags")?;
            if flags & 0xfe != 0 {
                return Err(bad(
                    name,
                    "3.1.1 §3.2.2.1, 5.0 §3.2.2.1",
                    "reserved acknowledge flags set",
                ));
            }
            let c = code(&mut r, kind, version)?;
            if flags == 1 && c != 0 {
                return Err(bad(
                    name,
                    "3.1.1 §3.2.2.2, 5.0 §3.2.2.1.1",
                    "Session Present with a failure code",
                ));
            }
            Packet::ConnAck(ConnAck {
                session_present: flags == 1,
                code: c,
                properties: props(&mut r, version, kind)?,
            })
        }
        T::Publish => Packet::Publish(decode_publish(h.flags, &mut r, version)?),
        T::PubAck | T::PubRec | T::PubRel | T::PubComp => {
            let packet_id = packet_id(&mut r)?;
            let (code, properties) = reason_tail(&mut r, kind, version)?;
            let a = Ack {
                packet_id,
                code,
                properties,
            };
            match kind {
                T::PubAck => Packet::PubAck(a),
                T::PubRec => Packet::PubRec(a),
                T::PubRel => Packet::PubRel(a),
                _ => Packet::PubComp(a),
            }
        }
        T::Subscribe => {
            let packet_id = packet_id(&mut r)?;
            let properties = props(&mut r, version, kind)?;
            let mut filters = Vec::new();
            while !r.is_empty() {
                let f = r.string("a topic filter")?.to_string();
                check_topic_filter(&f).map_err(|e| bad(name, "3.1.1 §4.7.1, 5.0 §4.7.1", e))?;
                let o = decode_options(r.u8("the subscription options")?, version)?;
                filters.push((f, o));
            }
            if filters.is_empty() {
                return Err(bad(name, "3.1.1 §3.8.3, 5.0 §3.8.3", "no topic filter"));
            }
            Packet::Subscribe(Subscribe {
                packet_id,
                properties,
                filters,
            })
        }
        T::SubAck => {
            let packet_id = packet_id(&mut r)?;
            let properties = props(&mut r, version, kind)?;
            let mut codes = Vec::new();
            while !r.is_empty() {
                codes.push(code(&mut r, kind, version)?);
            }
            if codes.is_empty() {
                return Err(bad(name, "3.1.1 §3.9.3, 5.0 §3.9.3", "no return code"));
            }
            Packet::SubAck(SubAck {
                packet_id,
                properties,
                codes,
            })
        }
        T::Unsubscribe => {
            let packet_id = packet_id(&mut r)?;
            let properties = props(&mut r, version, kind)?;
            let mut filters = Vec::new();
            while !r.is_empty() {
                let f = r.string("a topic filter")?.to_string();
                check_topic_filter(&f).map_err(|e| bad(name, "3.1.1 §4.7.1, 5.0 §4.7.1", e))?;
                filters.push(f);
            }
            if filters.is_empty() {
                return Err(bad(name, "3.1.1 §3.10.3, 5.0 §3.10.3", "no topic filter"));
            }
            Packet::Unsubscribe(Unsubscribe {
                packet_id,
                properties,
                filters,
            })
        }
        T::UnsubAck => {
            let packet_id = packet_id(&mut r)?;
            let properties = props(&mut r, version, kind)?;
            let mut codes = Vec::new();
            while version == Version::V5 && !r.is_empty() {
                codes.push(code(&mut r, kind, version)?);
            }
            if version == Version::V5 && codes.is_empty() {
                return Err(bad(name, "5.0 §3.11.3", "no reason code"));
            }
            Packet::UnsubAck(UnsubAck {
                packet_id,
                properties,
                codes,
            })
        }
        T::PingReq => Packet::PingReq,
        T::PingResp => Packet::PingResp,
        T::Disconnect | T::Auth => {
            let (code, properties) = reason_tail(&mut r, kind, version)?;
            let x = Reason { code, properties };
            if kind == T::Auth {
                Packet::Auth(x)
            } else {
                Packet::Disconnect(x)
            }
        }
    };
    r.end()?;
    Ok(p)
}

fn decode_options(b: u8, version: Version) -> Result<SubOptions, WireError> {
    let name = "SUBSCRIBE";
    let reserved = match version {
        Version::V311 => 0xfc,
        Version::V5 => 0xc0,
    };
    if b & reserved != 0 {
        return Err(bad(
            name,
            "3.1.1 §3.8.3.1, 5.0 §3.8.3.1",
            "reserved subscription option bits set",
        ));
    }
    let qos =
        QoS::from_bits(b & 3).ok_or_else(|| bad(name, "3.1.1 §3.8.3.1, 5.0 §3.8.3.1", "QoS 3"))?;
    let retain_handling = (b >> 4) & 3;
    if retain_handling == 3 {
        return Err(bad(name, "5.0 §3.8.3.1", "Retain Handling 3"));
    }
    Ok(SubOptions {
        qos,
        no_local: b & 4 != 0,
        retain_as_published: b & 8 != 0,
        retain_handling,
    })
}

fn decode_publish(flags: u8, r: &mut Reader<'_>, version: Version) -> Result<Publish, WireError> {
    let name = "PUBLISH";
    let qos = QoS::from_bits((flags >> 1) & 3)
        .ok_or_else(|| bad(name, "3.1.1 §3.3.1.2, 5.0 §3.3.1.2", "QoS 3"))?;
    let dup = flags & 8 != 0;
    if dup && qos == QoS::AtMostOnce {
        return Err(bad(
            name,
            "3.1.1 §3.3.1.1, 5.0 §3.3.1.1",
            "DUP set on a QoS 0 message",
        ));
    }
    let topic = r.string("the topic name")?.to_string();
    check_topic_name(&topic).map_err(|e| bad(name, "3.1.1 §3.3.2.1, 5.0 §3.3.2.1", e))?;
    let packet_id = if qos == QoS::AtMostOnce {
        None
    } else {
        Some(packet_id(r)?)
    };
    let properties = props(r, version, PacketType::Publish)?;
    let alias = properties
        .iter()
        .any(|p| matches!(p, Property::TopicAlias(_)));
    if topic.is_empty() && !alias {
        return Err(bad(
            name,
            "3.1.1 §4.7.3, 5.0 §3.3.2.1",
            "an empty topic name (5.0 allows one only with a Topic Alias)",
        ));
    }
    Ok(Publish {
        dup,
        qos,
        retain: flags & 1 != 0,
        topic,
        packet_id,
        properties,
        payload: r.rest().to_vec(),
    })
}

fn decode_connect(r: &mut Reader<'_>) -> Result<Connect, WireError> {
    let name = "CONNECT";
    let proto = r.string("the protocol name")?;
    let level = r.u8("the protocol level")?;
    if proto != "MQTT" {
        return Err(bad(
            name,
            "3.1.1 §3.1.2.1, 5.0 §3.1.2.1",
            format!(
                "protocol name {proto:?} (level {level}), not \"MQTT\": only MQTT 3.1.1 and 5.0 are spoken"
            ),
        ));
    }
    let version = Version::from_level(level).ok_or_else(|| {
        bad(
            name,
            "3.1.1 §3.1.2.2, 5.0 §3.1.2.2",
            format!("protocol level {level}, not 4 (3.1.1) or 5 (5.0)"),
        )
    })?;
    let flags = r.u8("the connect flags")?;
    if flags & 1 != 0 {
        return Err(bad(
            name,
            "3.1.1 §3.1.2.3, 5.0 §3.1.2.3",
            "the reserved connect flag is set",
        ));
    }
    let will_flag = flags & 0b100 != 0;
    let will_qos = QoS::from_bits((flags >> 3) & 3)
        .ok_or_else(|| bad(name, "3.1.1 §3.1.2.6, 5.0 §3.1.2.6", "Will QoS 3"))?;
    let will_retain = flags & 0b10_0000 != 0;
    if !will_flag && (will_qos != QoS::AtMostOnce || will_retain) {
        return Err(bad(
            name,
            "3.1.1 §3.1.2.6-7, 5.0 §3.1.2.6-7",
            "Will QoS or Retain set without a Will",
        ));
    }
    let has_password = flags & 0b100_0000 != 0;
    let has_username = flags & 0b1000_0000 != 0;
    if version == Version::V311 && has_password && !has_username {
        return Err(bad(
            name,
            "3.1.1 §3.1.2.9",
            "a password without a user name",
        ));
    }
    let keep_alive = r.u16("the keep alive")?;
    let properties = props(r, version, PacketType::Connect)?;
    let client_id = r.string("the client identifier")?.to_string();
    let will = if will_flag {
        let properties = match version {
            Version::V5 => Properties::decode(r, Place::Will)?,
            Version::V311 => Properties::new(),
        };
        let topic = r.string("the Will Topic")?.to_string();
        check_topic_name(&topic).map_err(|e| bad(name, "3.1.1 §3.1.3.2, 5.0 §3.1.3.3", e))?;
        if topic.is_empty() {
            return Err(bad(name, "3.1.1 §4.7.3, 5.0 §4.7.3", "an empty Will Topic"));
        }
        let payload = r.binary("the Will Payload")?.to_vec();
        Some(Will {
            topic,
            payload,
            qos: will_qos,
            retain: will_retain,
            properties,
        })
    } else {
        None
    };
    let username = if has_username {
        Some(r.string("the user name")?.to_string())
    } else {
        None
    };
    let password = if has_password {
        Some(r.binary("the password")?.to_vec())
    } else {
        None
    };
    Ok(Connect {
        version,
        client_id,
        clean_start: flags & 0b10 != 0,
        keep_alive,
        properties,
        will,
        username,
        password,
    })
}
