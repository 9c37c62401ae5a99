//! MQTT's data representation and fixed header, shared by 3.1.1 and 5.0:
//!
//! - integers big-endian (3.1.1 §1.5.2, 5.0 §1.5.2-1.5.3), Variable Byte Integers of at
//!   most 4 bytes and 268,435,455 (3.1.1 §2.2.3 "Remaining Length", 5.0 §1.5.5), in the
//!   fewest bytes (5.0 §1.5.5: a longer encoding is malformed);
//! - UTF-8 strings and binary data with a 2-byte length (3.1.1 §1.5.3, 5.0 §1.5.4,
//!   §1.5.6): well-formed UTF-8 without U+0000 (checked on receipt);
//! - the fixed header (3.1.1 §2.2, 5.0 §2.1): type, flags, Remaining Length.
//!
//! [`frame`] is the checked view of the byte stream: `Ok(None)` while a packet is
//! incomplete, an error as soon as the bytes cannot be a packet (a reserved type, a
//! length past 4 bytes, a packet larger than the receiver's limit) — before the body
//! arrives, so a receiver never buffers more than its limit. [`Reader`] reads a complete
//! body field by field and fails on a short one instead of panicking.

use crate::error::{EncodeError, WireError};

/// Largest Remaining Length (4 bytes of 7 bits).
pub const MAX_REMAINING: u32 = 268_435_455;
/// Largest packet: a 5-byte fixed header and the largest Remaining Length.
pub const MAX_PACKET: u32 = MAX_REMAINING + 5;

/// The protocol level of CONNECT (3.1.1 §3.1.2.2, 5.0 §3.1.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// MQTT 3.1.1 (OASIS Standard, 29 October 2014), protocol level 4.
    V311,
    /// MQTT 5.0 (OASIS Standard, 7 March 2019), protocol level 5.
    V5,
}

impl Version {
    pub fn level(self) -> u8 {
        match self {
            Version::V311 => 4,
            Version::V5 => 5,
        }
    }

    pub fn from_level(level: u8) -> Option<Version> {
        match level {
            4 => Some(Version::V311),
            5 => Some(Version::V5),
            _ => None,
        }
    }

    /// As the specifications name themselves: `3.1.1`, `5.0`.
    pub fn name(self) -> &'static str {
        match self {
            Version::V311 => "3.1.1",
            Version::V5 => "5.0",
        }
    }
}

/// Quality of service (3.1.1 §4.3, 5.0 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QoS {
    AtMostOnce = 0,
    AtLeastOnce = 1,
    ExactlyOnce = 2,
}

impl QoS {
    pub fn from_bits(b: u8) -> Option<QoS> {
        match b {
            0 => Some(QoS::AtMostOnce),
            1 => Some(QoS::AtLeastOnce),
            2 => Some(QoS::ExactlyOnce),
            _ => None,
        }
    }

    pub fn bits(self) -> u8 {
        self as u8
    }
}

/// Control packet types (3.1.1 §2.2.1, 5.0 §2.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    Connect = 1,
    ConnAck = 2,
    Publish = 3,
    PubAck = 4,
    PubRec = 5,
    PubRel = 6,
    PubComp = 7,
    Subscribe = 8,
    SubAck = 9,
    Unsubscribe = 10,
    UnsubAck = 11,
    PingReq = 12,
    PingResp = 13,
    Disconnect = 14,
    /// MQTT 5.0 only.
    Auth = 15,
}

impl PacketType {
    pub fn from_nibble(n: u8, version: Version) -> Option<PacketType> {
        use PacketType::*;
        Some(match n {
            1 => Connect,
            2 => ConnAck,
            3 => Publish,
            4 => PubAck,
            5 => PubRec,
            6 => PubRel,
            7 => PubComp,
            8 => Subscribe,
            9 => SubAck,
            10 => Unsubscribe,
            11 => UnsubAck,
            12 => PingReq,
            13 => PingResp,
            14 => Disconnect,
            15 if version == Version::V5 => Auth,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use PacketType::*;
        match self {
            Connect => "CONNECT",
            ConnAck => "CONNACK",
            Publish => "PUBLISH",
            PubAck => "PUBACK",
            PubRec => "PUBREC",
            PubRel => "PUBREL",
            PubComp => "PUBCOMP",
            Subscribe => "SUBSCRIBE",
            SubAck => "SUBACK",
            Unsubscribe => "UNSUBSCRIBE",
            UnsubAck => "UNSUBACK",
            PingReq => "PINGREQ",
            PingResp => "PINGRESP",
            Disconnect => "DISCONNECT",
            Auth => "AUTH",
        }
    }

    /// The flags every packet but PUBLISH must carry (3.1.1 §2.2.2, 5.0 §2.1.3).
    pub fn fixed_flags(self) -> Option<u8> {
        use PacketType::*;
        match self {
            Publish => None,
            PubRel | Subscribe | Unsubscribe => Some(0b0010),
            _ => Some(0),
        }
    }
}

/// Appends `v` (at most [`MAX_REMAINING`]) as a Variable Byte Integer.
pub fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    debug_assert!(v <= MAX_REMAINING);
    loop {
        let mut b = (v % 128) as u8;
        v /= 128;
        if v > 0 {
            b |= 0x80;
        }
        out.push(b);
        if v == 0 {
            break;
        }
    }
}

/// Bytes [`put_varint`] writes for `v`.
pub fn varint_len(v: u32) -> usize {
    match v {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        _ => 4,
    }
}

/// A Variable Byte Integer at the start of `buf` and its length; `Ok(None)` if `buf` ends
/// inside it.
pub fn get_varint(buf: &[u8]) -> Result<Option<(u32, usize)>, WireError> {
    let mut v: u32 = 0;
    for (i, &b) in buf.iter().enumerate() {
        if i == 4 {
            return Err(WireError::LengthOverflow);
        }
        v |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            let n = i + 1;
            if n > varint_len(v) {
                return Err(WireError::NonMinimalLength { value: v });
            }
            return Ok(Some((v, n)));
        }
    }
    if buf.len() >= 4 {
        return Err(WireError::LengthOverflow);
    }
    Ok(None)
}

/// A packet's fixed header (3.1.1 §2.2, 5.0 §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedHeader {
    pub kind: PacketType,
    /// The low nibble of the first byte.
    pub flags: u8,
    pub remaining: u32,
    /// 2 to 5 bytes.
    pub header_len: usize,
}

impl FixedHeader {
    pub fn total_len(&self) -> usize {
        self.header_len + self.remaining as usize
    }
}

/// The next packet of `buf`: its header and body, `Ok(None)` until all of it is there.
/// Refuses a packet over `max_packet` bytes as soon as its header says so.
pub fn frame(
    buf: &[u8],
    version: Version,
    max_packet: u32,
) -> Result<Option<(FixedHeader, &[u8])>, WireError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let Some(kind) = PacketType::from_nibble(first >> 4, version) else {
        return Err(WireError::ReservedType {
            kind: first >> 4,
            version: version.name(),
        });
    };
    let Some((remaining, n)) = get_varint(&buf[1..])? else {
        return Ok(None);
    };
    let h = FixedHeader {
        kind,
        flags: first & 0x0f,
        remaining,
        header_len: 1 + n,
    };
    let size = h.total_len() as u64;
    if size > u64::from(max_packet) {
        return Err(WireError::TooLarge {
            packet: kind.name(),
            size,
            max: max_packet,
        });
    }
    if let Some(f) = kind.fixed_flags() {
        if h.flags != f {
            return Err(WireError::malformed(
                kind.name(),
                "3.1.1 §2.2.2, 5.0 §2.1.3",
                format!("fixed-header flags {:#06b}, must be {f:#06b}", h.flags),
            ));
        }
    }
    match buf.get(h.header_len..h.total_len()) {
        Some(body) => Ok(Some((h, body))),
        None => Ok(None),
    }
}

/// Reads one packet body field by field; every read checks what is left.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    packet: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], packet: &'static str) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            packet,
        }
    }

    pub fn packet(&self) -> &'static str {
        self.packet
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    fn short(&self, what: &str, need: usize) -> WireError {
        WireError::malformed(
            self.packet,
            "3.1.1 §2.2.3, 5.0 §2.1.4",
            format!(
                "{what} needs {need} bytes but the Remaining Length leaves {}",
                self.remaining()
            ),
        )
    }

    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], WireError> {
        let s = self
            .buf
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or_else(|| self.short(what, n))?;
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, WireError> {
        Ok(self.bytes(1, what)?[0])
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, WireError> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, WireError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn varint(&mut self, what: &str) -> Result<u32, WireError> {
        match get_varint(&self.buf[self.pos..])? {
            Some((v, n)) => {
                self.pos += n;
                Ok(v)
            }
            None => Err(self.short(what, self.remaining() + 1)),
        }
    }

    /// Binary Data: a 2-byte length and that many bytes (5.0 §1.5.6; 3.1.1's password).
    pub fn binary(&mut self, what: &str) -> Result<&'a [u8], WireError> {
        let n = self.u16(what)? as usize;
        self.bytes(n, what)
    }

    /// A UTF-8 Encoded String (3.1.1 §1.5.3, 5.0 §1.5.4): well-formed UTF-8 (so no
    /// surrogates) and no U+0000, which a receiver must treat as malformed.
    pub fn string(&mut self, what: &str) -> Result<&'a str, WireError> {
        let b = self.binary(what)?;
        let s = std::str::from_utf8(b).map_err(|e| {
            WireError::malformed(
                self.packet,
                "3.1.1 §1.5.3, 5.0 §1.5.4",
                format!("{what} is not well-formed UTF-8 ({e})"),
            )
        })?;
        if s.contains('\0') {
            return Err(WireError::malformed(
                self.packet,
                "3.1.1 §1.5.3, 5.0 §1.5.4",
                format!("{what} contains U+0000"),
            ));
        }
        Ok(s)
    }

    /// Everything left (a PUBLISH payload).
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    /// Fails if bytes are left that the packet has no field for.
    pub fn end(&self) -> Result<(), WireError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(WireError::malformed(
                self.packet,
                "3.1.1 §2.2.3, 5.0 §2.1.4",
                format!(
                    "{} bytes after the last field, inside the Remaining Length",
                    self.remaining()
                ),
            ))
        }
    }
}

pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Binary Data: fails over 65,535 bytes.
pub fn put_binary(
    out: &mut Vec<u8>,
    b: &[u8],
    packet: &'static str,
    what: &str,
) -> Result<(), EncodeError> {
    let n = u16::try_from(b.len()).map_err(|_| EncodeError {
        packet,
        why: format!("{what} is {} bytes; at most 65,535 fit", b.len()),
    })?;
    put_u16(out, n);
    out.extend_from_slice(b);
    Ok(())
}

/// A UTF-8 Encoded String: fails over 65,535 bytes or with U+0000, which no receiver
/// accepts.
pub fn put_string(
    out: &mut Vec<u8>,
    s: &str,
    packet: &'static str,
    what: &str,
) -> Result<(), EncodeError> {
    if s.contains('\0') {
        return Err(EncodeError {
            packet,
            why: format!("{what} contains U+0000 (3.1.1 §1.5.3, 5.0 §1.5.4)"),
        });
    }
    put_binary(out, s.as_bytes(), packet, what)
}

/// Appends a fixed header for a body of `remaining` bytes.
pub fn put_header(
    out: &mut Vec<u8>,
    kind: PacketType,
    flags: u8,
    remaining: usize,
) -> Result<(), EncodeError> {
    let r = u32::try_from(remaining)
        .ok()
        .filter(|r| *r <= MAX_REMAINING)
        .ok_or_else(|| EncodeError {
            packet: kind.name(),
            why: format!("its body is {remaining} bytes; at most {MAX_REMAINING} fit"),
        })?;
    out.push(((kind as u8) << 4) | (flags & 0x0f));
    put_varint(out, r);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_byte_integers_3_1_1_section_2_2_3_and_5_0_section_1_5_5() {
        // The boundaries of the spec's table.
        for (v, bytes) in [
            (0u32, &[0x00][..]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (16_383, &[0xff, 0x7f]),
            (16_384, &[0x80, 0x80, 0x01]),
            (2_097_151, &[0xff, 0xff, 0x7f]),
            (2_097_152, &[0x80, 0x80, 0x80, 0x01]),
            (268_435_455, &[0xff, 0xff, 0xff, 0x7f]),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, bytes, "{v}");
            assert_eq!(varint_len(v), bytes.len());
            assert_eq!(get_varint(bytes), Ok(Some((v, bytes.len()))));
            // Every strict prefix is incomplete, not wrong.
            assert_eq!(get_varint(&bytes[..bytes.len() - 1]), Ok(None));
        }
        assert_eq!(
            get_varint(&[0xff, 0xff, 0xff, 0xff, 0x01]),
            Err(WireError::LengthOverflow)
        );
        assert_eq!(
            get_varint(&[0x80, 0x80, 0x80, 0x80]),
            Err(WireError::LengthOverflow)
        );
        assert_eq!(
            get_varint(&[0x80, 0x00]),
            Err(WireError::NonMinimalLength { value: 0 })
        );
        assert_eq!(
            get_varint(&[0xff, 0x80, 0x00]),
            Err(WireError::NonMinimalLength { value: 127 })
        );
    }

    #[test]
    fn frames_are_incomplete_until_whole_and_refused_over_the_limit() {
        let p = [0x30, 0x03, 0x00, 0x01, b'a'];
        for n in 0..p.len() {
            assert_eq!(frame(&p[..n], Version::V311, 100), Ok(None), "{n}");
        }
        let (h, body) = frame(&p, Version::V311, 100).unwrap().unwrap();
        assert_eq!(
            (h.kind, h.remaining, h.header_len),
            (PacketType::Publish, 3, 2)
        );
        assert_eq!(body, &p[2..]);
        // The limit applies from the header on, before the body arrives.
        assert!(matches!(
            frame(&[0x30, 0xff, 0x7f], Version::V311, 1000),
            Err(WireError::TooLarge { size: 16_386, .. })
        ));
        // Reserved types: 0 always, 15 before 5.0.
        assert!(frame(&[0x00, 0x00], Version::V5, 100).is_err());
        assert!(frame(&[0xf0, 0x00], Version::V311, 100).is_err());
        assert!(frame(&[0xf0, 0x00], Version::V5, 100).unwrap().is_some());
        // SUBSCRIBE's flags are 0010 (3.1.1 §3.8.1).
        assert!(frame(&[0x80, 0x00], Version::V311, 100).is_err());
    }

    #[test]
    fn strings_3_1_1_section_1_5_3() {
        let mut r = Reader::new(&[0x00, 0x02, 0xc3, 0xa9, 0x00, 0x01], "TEST");
        assert_eq!(r.string("s").unwrap(), "é");
        assert!(r.string("s").is_err(), "1 byte announced, none left");
        let mut r = Reader::new(&[0x00, 0x01, 0x00], "TEST");
        assert!(r.string("s").is_err(), "U+0000");
        // An encoded surrogate (U+D800) is not well-formed UTF-8.
        let mut r = Reader::new(&[0x00, 0x03, 0xed, 0xa0, 0x80], "TEST");
        assert!(r.string("s").is_err());
        let mut out = Vec::new();
        assert!(put_string(&mut out, &"x".repeat(65_536), "TEST", "s").is_err());
        assert!(put_string(&mut out, "a\0", "TEST", "s").is_err());
    }
}
