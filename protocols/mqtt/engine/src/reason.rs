//! Reason and return codes: MQTT 5.0's Reason Codes (5.0 §2.4, with each packet's own
//! table in §3.2.2.2, §3.4.2.1, §3.9.3, §3.11.3, §3.14.2.1, §3.15.2.1) and MQTT 3.1.1's
//! CONNACK return codes (3.1.1 §3.2.2.3) and SUBACK return codes (3.1.1 §3.9.3). A
//! receiver checks a code against its packet's table: anything else is malformed.

use crate::wire::{PacketType, Version};

/// The name of an MQTT 5.0 reason code, as the specification's table gives it (the
/// packet decides between the meanings of 0x00).
pub fn name(code: u8, packet: PacketType) -> &'static str {
    use PacketType::*;
    match code {
        0x00 => match packet {
            Disconnect => "Normal disconnection",
            SubAck => "Granted QoS 0",
            _ => "Success",
        },
        0x01 => "Granted QoS 1",
        0x02 => "Granted QoS 2",
        0x04 => "Disconnect with Will Message",
        0x10 => "No matching subscribers",
        0x11 => "No subscription existed",
        0x18 => "Continue authentication",
        0x19 => "Re-authenticate",
        0x80 => "Unspecified error",
        0x81 => "Malformed Packet",
        0x82 => "Protocol Error",
        0x83 => "Implementation specific error",
        0x84 => "Unsupported Protocol Version",
        0x85 => "Client Identifier not valid",
        0x86 => "Bad User Name or Password",
        0x87 => "Not authorized",
        0x88 => "Server unavailable",
        0x89 => "Server busy",
        0x8A => "Banned",
        0x8B => "Server shutting down",
        0x8C => "Bad authentication method",
        0x8D => "Keep Alive timeout",
        0x8E => "Session taken over",
        0x8F => "Topic Filter invalid",
        0x90 => "Topic Name invalid",
        0x91 => "Packet Identifier in use",
        0x92 => "Packet Identifier not found",
        0x93 => "Receive Maximum exceeded",
        0x94 => "Topic Alias invalid",
        0x95 => "Packet too large",
        0x96 => "Message rate too high",
        0x97 => "Quota exceeded",
        0x98 => "Administrative action",
        0x99 => "Payload format invalid",
        0x9A => "Retain not supported",
        0x9B => "QoS not supported",
        0x9C => "Use another server",
        0x9D => "Server moved",
        0x9E => "Shared Subscriptions not supported",
        0x9F => "Connection rate exceeded",
        0xA0 => "Maximum connect time",
        0xA1 => "Subscription Identifiers not supported",
        0xA2 => "Wildcard Subscriptions not supported",
        _ => "unknown reason code",
    }
}

/// The name of an MQTT 3.1.1 CONNACK return code (3.1.1 §3.2.2.3, Table 3.1).
pub fn connack_311_name(code: u8) -> &'static str {
    match code {
        0 => "Connection Accepted",
        1 => "Connection Refused, unacceptable protocol version",
        2 => "Connection Refused, identifier rejected",
        3 => "Connection Refused, Server unavailable",
        4 => "Connection Refused, bad user name or password",
        5 => "Connection Refused, not authorized",
        _ => "reserved return code",
    }
}

/// A code's name in `version` for `packet`.
pub fn describe(code: u8, packet: PacketType, version: Version) -> &'static str {
    match (version, packet) {
        (Version::V311, PacketType::ConnAck) => connack_311_name(code),
        (Version::V311, PacketType::SubAck) => match code {
            0 => "Success - Maximum QoS 0",
            1 => "Success - Maximum QoS 1",
            2 => "Success - Maximum QoS 2",
            0x80 => "Failure",
            _ => "reserved return code",
        },
        _ => name(code, packet),
    }
}

/// Whether `code` may appear in `packet` under `version`.
pub fn allowed(code: u8, packet: PacketType, version: Version) -> bool {
    use PacketType::*;
    if version == Version::V311 {
        return match packet {
            ConnAck => code <= 5,
            SubAck => matches!(code, 0 | 1 | 2 | 0x80),
            _ => code == 0,
        };
    }
    let list: &[u8] = match packet {
        ConnAck => &[
            0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8C, 0x90,
            0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F,
        ],
        PubAck | PubRec => &[0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99],
        PubRel | PubComp => &[0x00, 0x92],
        SubAck => &[
            0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2,
        ],
        UnsubAck => &[0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91],
        Disconnect => &[
            0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8C, 0x8D, 0x8E, 0x8F, 0x90,
            0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0,
            0xA1, 0xA2,
        ],
        Auth => &[0x00, 0x18, 0x19],
        _ => &[0x00],
    };
    list.contains(&code)
}

/// Whether a reason code reports a failure (5.0 §2.4: 0x80 and above).
pub fn is_failure(code: u8) -> bool {
    code >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_5_0_section_2_4() {
        assert!(allowed(0x10, PacketType::PubAck, Version::V5));
        assert!(!allowed(0x10, PacketType::SubAck, Version::V5));
        assert!(allowed(0x8E, PacketType::Disconnect, Version::V5));
        assert!(!allowed(0x8E, PacketType::ConnAck, Version::V5));
        assert!(allowed(5, PacketType::ConnAck, Version::V311));
        assert!(!allowed(6, PacketType::ConnAck, Version::V311));
        assert!(!allowed(0x83, PacketType::SubAck, Version::V311));
        assert_eq!(name(0, PacketType::Disconnect), "Normal disconnection");
        assert_eq!(
            describe(4, PacketType::ConnAck, Version::V311),
            "Connection Refused, bad user name or password"
        );
        assert!(is_failure(0x80) && !is_failure(0x10));
    }
}
