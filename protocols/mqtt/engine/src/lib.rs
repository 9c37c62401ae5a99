//! Sans-IO MQTT client engine for benchmarking: MQTT 3.1.1 (OASIS Standard, 29 October
//! 2014) and MQTT 5.0 (OASIS Standard, 7 March 2019), enough to drive Mosquitto and other
//! brokers in wirebench's `mqtt` protocol.
//!
//! Layers, bottom up:
//!
//! - [`wire`]: data representation (3.1.1 §1.5, 5.0 §1.5) and the fixed header (3.1.1
//!   §2.2, 5.0 §2.1): the checked view that tells an incomplete packet from an invalid one
//!   and refuses one over the receiver's limit from its header on;
//! - [`property`]: 5.0 properties (§2.2.2), checked per packet;
//! - [`reason`]: 5.0 reason codes (§2.4) and 3.1.1 return codes (§3.2.2.3, §3.9.3);
//! - [`packet`]: every control packet (chapter 3 of both), encoded and decoded;
//! - [`client`]: the session state machine ([`Client`]): CONNECT/CONNACK, PUBLISH at
//!   QoS 0 and 1, SUBSCRIBE, keep-alive, DISCONNECT.
//!
//! The engine never blocks, reads a clock or touches a socket: a driver writes what
//! [`Client::poll_transmit`] returns, passes what it reads to [`Client::handle_input`]
//! with the time it read it, calls [`Client::handle_timeout`] at
//! [`Client::poll_timeout`], and reacts to [`Client::poll_event`].

pub mod client;
pub mod error;
pub mod packet;
pub mod property;
pub mod reason;
pub mod wire;

pub use client::{Client, Config, Connected, Event, Message, State};
pub use error::{EncodeError, MqttError, WireError};
pub use packet::{Packet, decode};
pub use property::{Properties, Property};
pub use wire::{MAX_PACKET, QoS, Version};

/// Feeds arbitrary bytes to the decoder and to a client, for a cargo-fuzz target. The
/// first byte picks the version (bit 0: 5.0) and the client's state (bit 1: connected,
/// after a canned CONNACK). Every packet the decoder accepts is encoded again and must
/// decode to itself; the client takes the rest in two reads split at the second byte's
/// position, to exercise resumption, then its end of file and a keep-alive timeout.
/// Errors are expected; a panic, a failed round trip or unbounded growth is a bug.
pub fn fuzz_input(bytes: &[u8]) {
    use wirebench_engine::Engine as _;
    let Some((&mode, rest)) = bytes.split_first() else {
        return;
    };
    let version = if mode & 1 == 1 {
        Version::V5
    } else {
        Version::V311
    };
    let max = 64 * 1024;
    let mut at = 0;
    while let Ok(Some((p, n))) = decode(&rest[at..], version, max) {
        let again = p
            .to_bytes(version)
            .unwrap_or_else(|e| panic!("{p:?} decoded but does not encode: {e}"));
        match decode(&again, version, max) {
            Ok(Some((q, m))) if q == p && m == again.len() => {}
            other => panic!("{p:?} -> {again:?} -> {other:?}"),
        }
        at += n;
    }
    let mut cfg = Config::new(version, "fuzz");
    cfg.max_packet_size = max;
    let Ok(mut c) = Client::new(cfg, 0) else {
        return;
    };
    let _ = c.subscribe(&[("t", QoS::AtLeastOnce)]);
    let connack: &[u8] = match version {
        Version::V311 => &[0x20, 0x02, 0x00, 0x00],
        Version::V5 => &[0x20, 0x03, 0x00, 0x00, 0x00],
    };
    if mode & 2 == 2 && c.handle_input(1, connack).is_err() {
        return;
    }
    let _ = c.publish("t", rest, QoS::AtLeastOnce, false);
    let split = rest.first().map_or(0, |&b| b as usize).min(rest.len());
    let (a, b) = rest.split_at(split);
    let _ = c.handle_input(2, a).and_then(|()| c.handle_input(3, b));
    let _ = c.handle_timeout(u64::MAX / 2);
    let _ = c.handle_eof();
    while c.poll_event().is_some() {}
    let _ = c.poll_transmit(4, &mut Vec::new());
}
