//! MQTT 5.0 properties (5.0 §2.2.2): a Property Length (Variable Byte Integer) and a
//! list of (identifier, value). The receiver checks each identifier against the packet
//! it arrived in (§2.2.2.2's table: anything else is malformed), refuses a repeated one
//! (only User Property, and Subscription Identifier in PUBLISH, may repeat) and values
//! the specification forbids (a 0 Receive Maximum, a Maximum QoS of 2, a byte flag that
//! is neither 0 nor 1, ...). MQTT 3.1.1 packets have no properties.

use crate::error::{EncodeError, WireError};
use crate::wire::{
    PacketType, Reader, put_binary, put_string, put_u16, put_u32, put_varint, varint_len,
};

/// One property with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Property {
    PayloadFormatIndicator(u8),
    MessageExpiryInterval(u32),
    ContentType(String),
    ResponseTopic(String),
    CorrelationData(Vec<u8>),
    SubscriptionIdentifier(u32),
    SessionExpiryInterval(u32),
    AssignedClientIdentifier(String),
    ServerKeepAlive(u16),
    AuthenticationMethod(String),
    AuthenticationData(Vec<u8>),
    RequestProblemInformation(u8),
    WillDelayInterval(u32),
    RequestResponseInformation(u8),
    ResponseInformation(String),
    ServerReference(String),
    ReasonString(String),
    ReceiveMaximum(u16),
    TopicAliasMaximum(u16),
    TopicAlias(u16),
    MaximumQos(u8),
    RetainAvailable(u8),
    UserProperty(String, String),
    MaximumPacketSize(u32),
    WildcardSubscriptionAvailable(u8),
    SubscriptionIdentifierAvailable(u8),
    SharedSubscriptionAvailable(u8),
}

/// Where a property list sits: a packet's variable header, or CONNECT's Will Properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Packet(PacketType),
    Will,
}

impl Place {
    fn name(self) -> &'static str {
        match self {
            Place::Packet(p) => p.name(),
            Place::Will => "CONNECT (Will Properties)",
        }
    }
}

const SECTION: &str = "5.0 §2.2.2.2";

impl Property {
    /// The identifier (5.0 §2.2.2.2, Table 2-4).
    pub fn id(&self) -> u8 {
        use Property::*;
        match self {
            PayloadFormatIndicator(_) => 0x01,
            MessageExpiryInterval(_) => 0x02,
            ContentType(_) => 0x03,
            ResponseTopic(_) => 0x08,
            CorrelationData(_) => 0x09,
            SubscriptionIdentifier(_) => 0x0B,
            SessionExpiryInterval(_) => 0x11,
            AssignedClientIdentifier(_) => 0x12,
            ServerKeepAlive(_) => 0x13,
            AuthenticationMethod(_) => 0x15,
            AuthenticationData(_) => 0x16,
            RequestProblemInformation(_) => 0x17,
            WillDelayInterval(_) => 0x18,
            RequestResponseInformation(_) => 0x19,
            ResponseInformation(_) => 0x1A,
            ServerReference(_) => 0x1C,
            ReasonString(_) => 0x1F,
            ReceiveMaximum(_) => 0x21,
            TopicAliasMaximum(_) => 0x22,
            TopicAlias(_) => 0x23,
            MaximumQos(_) => 0x24,
            RetainAvailable(_) => 0x25,
            UserProperty(..) => 0x26,
            MaximumPacketSize(_) => 0x27,
            WildcardSubscriptionAvailable(_) => 0x28,
            SubscriptionIdentifierAvailable(_) => 0x29,
            SharedSubscriptionAvailable(_) => 0x2A,
        }
    }
}

/// The property's name, for errors.
fn id_name(id: u32) -> &'static str {
    match id {
        0x01 => "Payload Format Indicator",
        0x02 => "Message Expiry Interval",
        0x03 => "Content Type",
        0x08 => "Response Topic",
        0x09 => "Correlation Data",
        0x0B => "Subscription Identifier",
        0x11 => "Session Expiry Interval",
        0x12 => "Assigned Client Identifier",
        0x13 => "Server Keep Alive",
        0x15 => "Authentication Method",
        0x16 => "Authentication Data",
        0x17 => "Request Problem Information",
        0x18 => "Will Delay Interval",
        0x19 => "Request Response Information",
        0x1A => "Response Information",
        0x1C => "Server Reference",
        0x1F => "Reason String",
        0x21 => "Receive Maximum",
        0x22 => "Topic Alias Maximum",
        0x23 => "Topic Alias",
        0x24 => "Maximum QoS",
        0x25 => "Retain Available",
        0x26 => "User Property",
        0x27 => "Maximum Packet Size",
        0x28 => "Wildcard Subscription Available",
        0x29 => "Subscription Identifier Available",
        0x2A => "Shared Subscription Available",
        _ => "unknown property",
    }
}

/// Whether property `id` may appear in `place` (5.0 §2.2.2.2, Table 2-4).
pub fn allowed(id: u32, place: Place) -> bool {
    use PacketType::*;
    let p = match place {
        Place::Will => return matches!(id, 0x01 | 0x02 | 0x03 | 0x08 | 0x09 | 0x18 | 0x26),
        Place::Packet(p) => p,
    };
    match id {
        0x01 | 0x02 | 0x03 | 0x08 | 0x09 | 0x23 => p == Publish,
        0x0B => matches!(p, Publish | Subscribe),
        0x11 => matches!(p, Connect | ConnAck | Disconnect),
        0x12 | 0x13 | 0x1A | 0x24 | 0x25 | 0x28 | 0x29 | 0x2A => p == ConnAck,
        0x15 | 0x16 => matches!(p, Connect | ConnAck | Auth),
        0x17 | 0x19 => p == Connect,
        0x1C => matches!(p, ConnAck | Disconnect),
        0x1F => !matches!(
            p,
            Connect | Publish | Subscribe | Unsubscribe | PingReq | PingResp
        ),
        0x21 | 0x22 | 0x27 => matches!(p, Connect | ConnAck),
        0x26 => !matches!(p, PingReq | PingResp),
        _ => false,
    }
}

/// A property list in wire order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties(pub Vec<Property>);

impl Properties {
    pub fn new() -> Properties {
        Properties::default()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Property> {
        self.0.iter()
    }

    /// The first property for which `f` gives a value.
    pub fn find<T>(&self, f: impl Fn(&Property) -> Option<T>) -> Option<T> {
        self.0.iter().find_map(f)
    }

    pub fn reason_string(&self) -> Option<String> {
        self.find(|p| match p {
            Property::ReasonString(s) => Some(s.clone()),
            _ => None,
        })
    }

    /// The bytes of the list without its Property Length.
    fn body(&self, packet: &'static str) -> Result<Vec<u8>, EncodeError> {
        use Property::*;
        let mut b = Vec::new();
        for p in &self.0 {
            b.push(p.id());
            let what = id_name(u32::from(p.id()));
            match p {
                PayloadFormatIndicator(v)
                | RequestProblemInformation(v)
                | RequestResponseInformation(v)
                | MaximumQos(v)
                | RetainAvailable(v)
                | WildcardSubscriptionAvailable(v)
                | SubscriptionIdentifierAvailable(v)
                | SharedSubscriptionAvailable(v) => b.push(*v),
                ServerKeepAlive(v) | ReceiveMaximum(v) | TopicAliasMaximum(v) | TopicAlias(v) => {
                    put_u16(&mut b, *v)
                }
                MessageExpiryInterval(v)
                | SessionExpiryInterval(v)
                | WillDelayInterval(v)
                | MaximumPacketSize(v) => put_u32(&mut b, *v),
                SubscriptionIdentifier(v) => {
                    if *v == 0 || *v > crate::wire::MAX_REMAINING {
                        return Err(EncodeError {
                            packet,
                            why: format!("Subscription Identifier {v} is outside 1..=268,435,455"),
                        });
                    }
                    put_varint(&mut b, *v)
                }
                ContentType(s)
                | ResponseTopic(s)
                | AssignedClientIdentifier(s)
                | AuthenticationMethod(s)
                | ResponseInformation(s)
                | ServerReference(s)
                | ReasonString(s) => put_string(&mut b, s, packet, what)?,
                CorrelationData(d) | AuthenticationData(d) => put_binary(&mut b, d, packet, what)?,
                UserProperty(k, v) => {
                    put_string(&mut b, k, packet, what)?;
                    put_string(&mut b, v, packet, what)?;
                }
            }
        }
        Ok(b)
    }

    /// Bytes [`Properties::encode`] writes, Property Length included.
    pub fn encoded_len(&self, packet: &'static str) -> Result<usize, EncodeError> {
        let n = self.body(packet)?.len();
        Ok(varint_len(n as u32) + n)
    }

    /// Appends the Property Length and the list.
    pub fn encode(&self, out: &mut Vec<u8>, packet: &'static str) -> Result<(), EncodeError> {
        let b = self.body(packet)?;
        let n = u32::try_from(b.len())
            .ok()
            .filter(|n| *n <= crate::wire::MAX_REMAINING)
            .ok_or_else(|| EncodeError {
                packet,
                why: "its properties are over 268,435,455 bytes".into(),
            })?;
        put_varint(out, n);
        out.extend_from_slice(&b);
        Ok(())
    }

    /// Reads a Property Length and the list it covers, checked for `place`.
    pub fn decode(r: &mut Reader<'_>, place: Place) -> Result<Properties, WireError> {
        let len = r.varint("Property Length")? as usize;
        let body = r.bytes(len, "the property list")?;
        let mut pr = Reader::new(body, r.packet());
        let mut list: Vec<Property> = Vec::new();
        while !pr.is_empty() {
            let id = pr.varint("a Property Identifier")?;
            let bad = |why: String| WireError::malformed(r.packet(), SECTION, why);
            if !allowed(id, place) {
                return Err(bad(format!(
                    "property {id:#04x} ({}) is not allowed in {}",
                    id_name(id),
                    place.name()
                )));
            }
            let repeatable =
                id == 0x26 || (id == 0x0B && place == Place::Packet(PacketType::Publish));
            if !repeatable && list.iter().any(|p| u32::from(p.id()) == id) {
                return Err(bad(format!("{} appears more than once", id_name(id))));
            }
            let p = read_value(&mut pr, id)?;
            check_value(&p).map_err(|why| bad(format!("{}: {why}", id_name(id))))?;
            list.push(p);
        }
        Ok(Properties(list))
    }
}

fn read_value(r: &mut Reader<'_>, id: u32) -> Result<Property, WireError> {
    use Property::*;
    let what = id_name(id);
    let s = |r: &mut Reader<'_>| r.string(what).map(str::to_string);
    Ok(match id {
        0x01 => PayloadFormatIndicator(r.u8(what)?),
        0x02 => MessageExpiryInterval(r.u32(what)?),
        0x03 => ContentType(s(r)?),
        0x08 => ResponseTopic(s(r)?),
        0x09 => CorrelationData(r.binary(what)?.to_vec()),
        0x0B => SubscriptionIdentifier(r.varint(what)?),
        0x11 => SessionExpiryInterval(r.u32(what)?),
        0x12 => AssignedClientIdentifier(s(r)?),
        0x13 => ServerKeepAlive(r.u16(what)?),
        0x15 => AuthenticationMethod(s(r)?),
        0x16 => AuthenticationData(r.binary(what)?.to_vec()),
        0x17 => RequestProblemInformation(r.u8(what)?),
        0x18 => WillDelayInterval(r.u32(what)?),
        0x19 => RequestResponseInformation(r.u8(what)?),
        0x1A => ResponseInformation(s(r)?),
        0x1C => ServerReference(s(r)?),
        0x1F => ReasonString(s(r)?),
        0x21 => ReceiveMaximum(r.u16(what)?),
        0x22 => TopicAliasMaximum(r.u16(what)?),
        0x23 => TopicAlias(r.u16(what)?),
        0x24 => MaximumQos(r.u8(what)?),
        0x25 => RetainAvailable(r.u8(what)?),
        0x26 => {
            let k = s(r)?;
            UserProperty(k, s(r)?)
        }
        0x27 => MaximumPacketSize(r.u32(what)?),
        0x28 => WildcardSubscriptionAvailable(r.u8(what)?),
        0x29 => SubscriptionIdentifierAvailable(r.u8(what)?),
        0x2A => SharedSubscriptionAvailable(r.u8(what)?),
        // `allowed` let only the identifiers above through.
        _ => {
            return Err(WireError::malformed(
                r.packet(),
                SECTION,
                format!("unknown property {id:#x}"),
            ));
        }
    })
}

/// Values the specification rules out (5.0 §3.1.2.11, §3.2.2.3, §3.3.2.3, §3.8.2.1.2).
fn check_value(p: &Property) -> Result<(), &'static str> {
    use Property::*;
    match p {
        PayloadFormatIndicator(v)
        | RequestProblemInformation(v)
        | RequestResponseInformation(v)
        | RetainAvailable(v)
        | WildcardSubscriptionAvailable(v)
        | SubscriptionIdentifierAvailable(v)
        | SharedSubscriptionAvailable(v)
            if *v > 1 =>
        {
            Err("must be 0 or 1")
        }
        MaximumQos(v) if *v > 1 => Err("must be 0 or 1"),
        ReceiveMaximum(0) => Err("must not be 0"),
        MaximumPacketSize(0) => Err("must not be 0"),
        TopicAlias(0) => Err("must not be 0"),
        SubscriptionIdentifier(0) => Err("must not be 0"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8], place: Place) -> Result<Properties, WireError> {
        let mut r = Reader::new(bytes, "TEST");
        Properties::decode(&mut r, place)
    }

    #[test]
    fn section_2_2_2_round_trip_and_checks() {
        let connack = Place::Packet(PacketType::ConnAck);
        let props = Properties(vec![
            Property::ReceiveMaximum(20),
            Property::TopicAliasMaximum(10),
            Property::AssignedClientIdentifier("auto-1".into()),
            Property::UserProperty("a".into(), "b".into()),
            Property::UserProperty("a".into(), "c".into()),
        ]);
        let mut out = Vec::new();
        props.encode(&mut out, "CONNACK").unwrap();
        assert_eq!(out.len(), props.encoded_len("CONNACK").unwrap());
        assert_eq!(decode(&out, connack).unwrap(), props);
        // Not allowed in CONNACK: Topic Alias (PUBLISH only).
        assert!(decode(&[3, 0x23, 0, 1], connack).is_err());
        // Twice: Receive Maximum.
        assert!(decode(&[6, 0x21, 0, 1, 0x21, 0, 2], connack).is_err());
        // Values: Receive Maximum 0, Maximum QoS 2, Retain Available 2.
        assert!(decode(&[3, 0x21, 0, 0], connack).is_err());
        assert!(decode(&[2, 0x24, 2], connack).is_err());
        assert!(decode(&[2, 0x25, 2], connack).is_err());
        // A length past the bytes.
        assert!(decode(&[5, 0x21, 0, 1], connack).is_err());
        // Subscription Identifier repeats in PUBLISH only.
        let publish = Place::Packet(PacketType::Publish);
        assert!(decode(&[4, 0x0B, 1, 0x0B, 2], publish).is_ok());
        assert!(decode(&[4, 0x0B, 1, 0x0B, 2], Place::Packet(PacketType::Subscribe)).is_err());
        // Will Properties take Will Delay Interval; CONNECT itself does not.
        assert!(decode(&[5, 0x18, 0, 0, 0, 5], Place::Will).is_ok());
        assert!(decode(&[5, 0x18, 0, 0, 0, 5], Place::Packet(PacketType::Connect)).is_err());
    }
}
