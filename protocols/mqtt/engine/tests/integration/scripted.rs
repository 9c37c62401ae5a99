//! The client engine against scripted broker bytes, one test per section of the
//! specifications (MQTT 3.1.1, OASIS 2014; MQTT 5.0, OASIS 2019): the exact bytes it
//! sends, what it makes of each answer, and the errors that name the broker's fault.

use wirebench_engine::Engine as _;
use wirebench_mqtt::packet::{Ack, ConnAck, Publish, SubAck};
use wirebench_mqtt::{
    Client, Config, Event, MqttError, Packet, Properties, Property, QoS, State, Version, WireError,
};

const S: u64 = 1_000_000_000;

fn out(c: &mut Client, now: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    c.poll_transmit(now, &mut buf);
    buf
}

fn events(c: &mut Client) -> Vec<Event> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

fn connack(v: Version, props: Vec<Property>) -> Vec<u8> {
    Packet::ConnAck(ConnAck {
        session_present: false,
        code: 0,
        properties: Properties(props),
    })
    .to_bytes(v)
    .unwrap()
}

/// The reason code of a 5.0 DISCONNECT.
fn disconnect_code(b: &[u8]) -> u8 {
    match wirebench_mqtt::decode(b, Version::V5, 1 << 20) {
        Ok(Some((Packet::Disconnect(d), _))) => d.code,
        other => panic!("not a DISCONNECT: {other:?}"),
    }
}

/// A session that has sent CONNECT and read a plain CONNACK at t = 0.
fn connected(v: Version) -> Client {
    let mut c = Client::new(Config::new(v, "c1"), 0).unwrap();
    out(&mut c, 0);
    c.handle_input(0, &connack(v, vec![])).unwrap();
    assert!(matches!(events(&mut c)[..], [Event::Connected(_)]));
    c
}

#[test]
fn connect_3_1_1_section_3_1_and_5_0_section_3_1() {
    let mut c = Client::new(Config::new(Version::V311, "c1"), 0).unwrap();
    assert_eq!(
        out(&mut c, 0),
        [
            0x10, 14, 0, 4, b'M', b'Q', b'T', b'T', 4, 0b10, 0, 60, 0, 2, b'c', b'1'
        ]
    );
    assert_eq!(c.state(), State::Connecting);
    // 5.0: level 5, and the properties: Maximum Packet Size (1 MiB).
    let mut c = Client::new(Config::new(Version::V5, "c1"), 0).unwrap();
    assert_eq!(
        out(&mut c, 0),
        [
            0x10, 20, 0, 4, b'M', b'Q', b'T', b'T', 5, 0b10, 0, 60, 5, 0x27, 0, 0x10, 0, 0, 0, 2,
            b'c', b'1'
        ]
    );
    // User name and password flags (§3.1.2.8-9) and their fields, in that order.
    let mut cfg = Config::new(Version::V311, "c1");
    cfg.username = Some("u".into());
    cfg.password = Some(b"p".to_vec());
    let b = out(&mut Client::new(cfg, 0).unwrap(), 0);
    assert_eq!(b[9], 0b1100_0010);
    assert_eq!(&b[b.len() - 6..], [0, 1, b'u', 0, 1, b'p']);
    // 3.1.1 has no password without a user name (§3.1.2.9): refused before sending.
    let mut cfg = Config::new(Version::V311, "c1");
    cfg.password = Some(b"p".to_vec());
    assert!(matches!(Client::new(cfg, 0), Err(MqttError::Config(_))));
}

#[test]
fn connack_refusals_3_1_1_section_3_2_2_3_and_5_0_section_3_2_2_2() {
    let mut c = Client::new(Config::new(Version::V311, "c1"), 0).unwrap();
    let e = c.handle_input(1, &[0x20, 2, 0, 5]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the broker refused the connection: 0x05 Connection Refused, not authorized"
    );
    assert_eq!(c.state(), State::Closed);
    assert!(matches!(events(&mut c)[..], [Event::Closed { .. }]));
    assert_eq!(c.handle_input(2, &[]), Err(MqttError::Closed));
    // 5.0: a reason code and a Reason String.
    let mut c = Client::new(Config::new(Version::V5, "c1"), 0).unwrap();
    let refusal = Packet::ConnAck(ConnAck {
        session_present: false,
        code: 0x86,
        properties: Properties(vec![Property::ReasonString("no".into())]),
    })
    .to_bytes(Version::V5)
    .unwrap();
    let e = c.handle_input(1, &refusal).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the broker refused the connection: 0x86 Bad User Name or Password (no)"
    );
    // A 3.1.1 return code of 6 is reserved: malformed, not a refusal.
    let mut c = Client::new(Config::new(Version::V311, "c1"), 0).unwrap();
    assert!(matches!(
        c.handle_input(1, &[0x20, 2, 0, 6]),
        Err(MqttError::Malformed(_))
    ));
}

#[test]
fn connack_5_0_limits_section_3_2_2_3() {
    let mut c = Client::new(Config::new(Version::V5, "c1"), 0).unwrap();
    out(&mut c, 0);
    c.handle_input(
        1,
        &connack(
            Version::V5,
            vec![
                Property::ReceiveMaximum(2),
                Property::RetainAvailable(0),
                Property::MaximumPacketSize(64),
                Property::ServerKeepAlive(10),
            ],
        ),
    )
    .unwrap();
    let Some(Event::Connected(k)) = c.poll_event() else {
        panic!("no Connected event");
    };
    assert_eq!(
        (k.receive_maximum, k.keep_alive_s, k.max_packet_size),
        (2, 10, Some(64))
    );
    assert!(!k.retain_available);
    // Server Keep Alive replaces ours: the next PINGREQ is due 10 s after the last send.
    assert_eq!(c.poll_timeout(), Some(10 * S));
    assert!(matches!(
        c.publish("t", b"x", QoS::AtMostOnce, true),
        Err(MqttError::Usage(_))
    ));
    assert!(matches!(
        c.publish("t", &[0; 64], QoS::AtMostOnce, false),
        Err(MqttError::Usage(_))
    ));
    assert_eq!(c.publish("t", b"x", QoS::AtLeastOnce, false), Ok(Some(1)));
    assert_eq!(c.publish("t", b"x", QoS::AtLeastOnce, false), Ok(Some(2)));
    assert_eq!(c.send_quota(), 0);
    let e = c.publish("t", b"x", QoS::AtLeastOnce, false).unwrap_err();
    assert!(e.to_string().contains("Receive Maximum"), "{e}");
    // Nothing of the refused ones was queued.
    let b = out(&mut c, 2);
    assert_eq!(b.len(), 2 * (2 + 3 + 2 + 1 + 1));
    // Maximum QoS 0: QoS 1 is refused.
    let mut c = Client::new(Config::new(Version::V5, "c1"), 0).unwrap();
    c.handle_input(1, &connack(Version::V5, vec![Property::MaximumQos(0)]))
        .unwrap();
    assert!(matches!(
        c.publish("t", b"x", QoS::AtLeastOnce, false),
        Err(MqttError::Usage(_))
    ));
}

#[test]
fn publish_and_puback_3_1_1_sections_3_3_3_4() {
    let mut c = connected(Version::V311);
    assert_eq!(c.publish("a/b", b"hi", QoS::AtMostOnce, false), Ok(None));
    assert_eq!(
        out(&mut c, 1),
        [0x30, 7, 0, 3, b'a', b'/', b'b', b'h', b'i']
    );
    assert_eq!(c.publish("a/b", b"hi", QoS::AtLeastOnce, true), Ok(Some(1)));
    assert_eq!(
        out(&mut c, 1),
        [0x33, 9, 0, 3, b'a', b'/', b'b', 0, 1, b'h', b'i']
    );
    assert_eq!(c.in_flight(), 1);
    c.handle_input(2, &[0x40, 2, 0, 1]).unwrap();
    assert_eq!(
        events(&mut c),
        [Event::Published {
            packet_id: 1,
            code: 0
        }]
    );
    assert_eq!(c.in_flight(), 0);
    // A PUBACK for nothing in flight is the broker's error.
    let e = c.handle_input(3, &[0x40, 2, 0, 1]).unwrap_err();
    assert!(matches!(e, MqttError::Protocol { .. }), "{e}");
    assert!(e.is_peer_fault());
    // Wildcards belong to filters only (§4.7.1).
    let mut c = connected(Version::V311);
    assert!(matches!(
        c.publish("a/+", b"", QoS::AtMostOnce, false),
        Err(MqttError::Usage(_))
    ));
}

#[test]
fn publish_and_puback_5_0_sections_3_3_3_4() {
    let mut c = connected(Version::V5);
    c.publish("t", b"hi", QoS::AtMostOnce, false).unwrap();
    // The Property Length (0) sits after the topic name.
    assert_eq!(out(&mut c, 1), [0x30, 6, 0, 1, b't', 0, b'h', b'i']);
    c.publish("t", b"", QoS::AtLeastOnce, false).unwrap();
    assert_eq!(out(&mut c, 1), [0x32, 6, 0, 1, b't', 0, 1, 0]);
    // PUBACK with a reason code and no properties (§3.4.2.1): "No matching subscribers".
    c.handle_input(2, &[0x40, 3, 0, 1, 0x10]).unwrap();
    assert_eq!(
        events(&mut c),
        [Event::Published {
            packet_id: 1,
            code: 0x10
        }]
    );
    // A reason code PUBACK cannot carry (0x8E belongs to DISCONNECT).
    c.publish("t", b"", QoS::AtLeastOnce, false).unwrap();
    assert!(matches!(
        c.handle_input(3, &[0x40, 3, 0, 2, 0x8E]),
        Err(MqttError::Malformed(_))
    ));
}

#[test]
fn incoming_messages_and_their_puback_section_4_3() {
    for v in [Version::V311, Version::V5] {
        let mut c = connected(v);
        let m = Packet::Publish(Publish {
            dup: false,
            qos: QoS::AtLeastOnce,
            retain: false,
            topic: "x".into(),
            packet_id: Some(7),
            properties: Properties::new(),
            payload: b"abc".to_vec(),
        });
        let b = m.to_bytes(v).unwrap();
        c.handle_input(1, &b).unwrap();
        // The PUBACK is queued as the message is read (5.0: its short form).
        assert_eq!(out(&mut c, 1), [0x40, 2, 0, 7]);
        match &events(&mut c)[..] {
            [Event::Message(m)] => {
                assert_eq!(
                    (m.topic.as_str(), &m.payload[..], m.qos),
                    ("x", &b"abc"[..], QoS::AtLeastOnce)
                );
            }
            e => panic!("{e:?}"),
        }
        // QoS 0: no answer.
        let m0 = Packet::Publish(Publish {
            dup: false,
            qos: QoS::AtMostOnce,
            retain: false,
            topic: "x".into(),
            packet_id: None,
            properties: Properties::new(),
            payload: b"!".to_vec(),
        });
        c.handle_input(2, &m0.to_bytes(v).unwrap()).unwrap();
        assert!(out(&mut c, 2).is_empty());
        assert_eq!(events(&mut c).len(), 1);
    }
}

#[test]
fn messages_in_any_read_sizes_section_2_2_3() {
    // Three messages in one read, then one byte at a time: the same events.
    let v = Version::V311;
    let mut bytes = Vec::new();
    for p in [b"one".as_slice(), b"", b"three"] {
        Packet::Publish(Publish {
            dup: false,
            qos: QoS::AtMostOnce,
            retain: false,
            topic: "t".into(),
            packet_id: None,
            properties: Properties::new(),
            payload: p.to_vec(),
        })
        .encode(v, &mut bytes)
        .unwrap();
    }
    let mut a = connected(v);
    a.handle_input(1, &bytes).unwrap();
    let mut b = connected(v);
    for byte in &bytes {
        b.handle_input(1, std::slice::from_ref(byte)).unwrap();
    }
    let ea = events(&mut a);
    assert_eq!(ea.len(), 3);
    assert_eq!(ea, events(&mut b));
}

#[test]
fn subscribe_and_suback_sections_3_8_3_9() {
    let mut c = connected(Version::V311);
    let id = c
        .subscribe(&[("a/#", QoS::AtLeastOnce), ("b", QoS::AtMostOnce)])
        .unwrap();
    assert_eq!(
        out(&mut c, 1),
        [0x82, 12, 0, 1, 0, 3, b'a', b'/', b'#', 1, 0, 1, b'b', 0]
    );
    c.handle_input(2, &[0x90, 4, 0, 1, 0x01, 0x80]).unwrap();
    assert_eq!(
        events(&mut c),
        [Event::Subscribed {
            packet_id: id,
            codes: vec![1, 0x80]
        }]
    );
    // One code for two filters is the broker's error.
    let id = c
        .subscribe(&[("a", QoS::AtMostOnce), ("b", QoS::AtMostOnce)])
        .unwrap();
    let b = Packet::SubAck(SubAck {
        packet_id: id,
        properties: Properties::new(),
        codes: vec![0],
    })
    .to_bytes(Version::V311)
    .unwrap();
    let e = c.handle_input(3, &b).unwrap_err();
    assert!(e.to_string().contains("1 codes for 2 topic filters"), "{e}");
    // 5.0 SUBACK carries properties; its codes come from 5.0's table (0x97 Quota exceeded).
    let mut c = connected(Version::V5);
    c.subscribe(&[("a", QoS::AtLeastOnce)]).unwrap();
    assert_eq!(out(&mut c, 1), [0x82, 7, 0, 1, 0, 0, 1, b'a', 1]);
    c.handle_input(2, &[0x90, 4, 0, 1, 0, 0x97]).unwrap();
    assert_eq!(
        events(&mut c),
        [Event::Subscribed {
            packet_id: 1,
            codes: vec![0x97]
        }]
    );
    // A bad filter is refused before sending (§4.7.1).
    assert!(c.subscribe(&[("a/#/b", QoS::AtMostOnce)]).is_err());
}

#[test]
fn unsubscribe_and_unsuback_sections_3_10_3_11() {
    let mut c = connected(Version::V311);
    c.unsubscribe(&["a"]).unwrap();
    assert_eq!(out(&mut c, 1), [0xa2, 5, 0, 1, 0, 1, b'a']);
    c.handle_input(2, &[0xb0, 2, 0, 1]).unwrap();
    assert_eq!(
        events(&mut c),
        [Event::Unsubscribed {
            packet_id: 1,
            codes: vec![]
        }]
    );
    let mut c = connected(Version::V5);
    c.unsubscribe(&["a"]).unwrap();
    out(&mut c, 1);
    c.handle_input(2, &[0xb0, 4, 0, 1, 0, 0x11]).unwrap();
    assert_eq!(
        events(&mut c),
        [Event::Unsubscribed {
            packet_id: 1,
            codes: vec![0x11]
        }]
    );
}

#[test]
fn keep_alive_section_3_1_2_10() {
    let mut c = connected(Version::V311);
    // Due 60 s after the last packet sent (CONNECT at 0).
    assert_eq!(c.poll_timeout(), Some(60 * S));
    c.publish("t", b"", QoS::AtMostOnce, false).unwrap();
    out(&mut c, 30 * S);
    assert_eq!(c.poll_timeout(), Some(90 * S));
    c.handle_timeout(89 * S).unwrap();
    assert!(out(&mut c, 89 * S).is_empty());
    c.handle_timeout(90 * S).unwrap();
    assert_eq!(out(&mut c, 90 * S), [0xc0, 0]);
    // The PINGRESP may take the keep-alive interval.
    assert_eq!(c.poll_timeout(), Some(150 * S));
    c.handle_input(91 * S, &[0xd0, 0]).unwrap();
    assert_eq!(events(&mut c), [Event::Pong]);
    assert_eq!(c.poll_timeout(), Some(150 * S));
    // Unanswered: the session fails.
    c.handle_timeout(150 * S).unwrap();
    out(&mut c, 150 * S);
    let e = c.handle_timeout(210 * S).unwrap_err();
    assert_eq!(e, MqttError::KeepAliveTimeout { ms: 60_000 });
    assert_eq!(c.state(), State::Closed);
    // An unsolicited PINGRESP breaks the protocol.
    let mut c = connected(Version::V311);
    assert!(matches!(
        c.handle_input(1, &[0xd0, 0]),
        Err(MqttError::Protocol { .. })
    ));
    // Keep-alive 0 turns it off.
    let mut cfg = Config::new(Version::V311, "c");
    cfg.keep_alive_s = 0;
    let mut c = Client::new(cfg, 0).unwrap();
    c.handle_input(0, &[0x20, 2, 0, 0]).unwrap();
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn connack_deadline_and_order_section_3_2() {
    let mut c = Client::new(Config::new(Version::V311, "c1"), 5).unwrap();
    assert_eq!(c.poll_timeout(), Some(30 * S + 5));
    let e = c.handle_timeout(30 * S + 5).unwrap_err();
    assert_eq!(e, MqttError::ConnectTimeout { ms: 30_000 });
    // CONNACK must come first, and once.
    let mut c = Client::new(Config::new(Version::V311, "c1"), 0).unwrap();
    let e = c.handle_input(1, &[0xd0, 0]).unwrap_err();
    assert!(e.to_string().contains("PINGRESP before CONNACK"), "{e}");
    let mut c = connected(Version::V311);
    assert!(c.handle_input(1, &[0x20, 2, 0, 0]).is_err());
}

#[test]
fn packets_may_follow_connect_before_connack_section_3_1_4() {
    let mut c = Client::new(Config::new(Version::V311, "c1"), 0).unwrap();
    c.subscribe(&[("t", QoS::AtMostOnce)]).unwrap();
    c.publish("t", b"x", QoS::AtMostOnce, false).unwrap();
    let b = out(&mut c, 0);
    assert_eq!((b[0], b[16], b[24]), (0x10, 0x82, 0x30));
}

#[test]
fn disconnect_section_3_14() {
    // Ours: E0 00, then the broker closes; end of file is then no error.
    let mut c = connected(Version::V5);
    c.disconnect().unwrap();
    assert_eq!(out(&mut c, 1), [0xe0, 0]);
    assert_eq!(c.state(), State::Disconnecting);
    assert_eq!(
        c.publish("t", b"", QoS::AtMostOnce, false),
        Err(MqttError::Closed)
    );
    c.handle_eof().unwrap();
    assert_eq!(c.state(), State::Closed);
    // The broker's (5.0) ends the session with its reason.
    let mut c = connected(Version::V5);
    let e = c.handle_input(1, &[0xe0, 1, 0x8e]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the broker disconnected the session: 0x8e Session taken over"
    );
    // 3.1.1 has no DISCONNECT from the server.
    let mut c = connected(Version::V311);
    assert!(matches!(
        c.handle_input(1, &[0xe0, 0]),
        Err(MqttError::Protocol { .. })
    ));
    // End of file while the session is open is an error that says so.
    let mut c = connected(Version::V311);
    let e = c.handle_eof().unwrap_err();
    assert!(e.to_string().contains("while the session was open"), "{e}");
    let mut c = connected(Version::V311);
    c.handle_input(1, &[0x30, 9, 0]).unwrap();
    let e = c.handle_eof().unwrap_err();
    assert!(
        e.to_string().contains("in the middle of a packet (3 bytes"),
        "{e}"
    );
}

#[test]
fn errors_5_0_section_4_13_say_why_in_a_disconnect() {
    // QoS 3 is malformed (§3.3.1.2): 5.0 answers DISCONNECT 0x81 with a Reason String.
    let mut c = connected(Version::V5);
    let e = c.handle_input(1, &[0x36, 3, 0, 1, b't']).unwrap_err();
    assert!(matches!(e, MqttError::Malformed(_)), "{e}");
    let b = out(&mut c, 1);
    assert_eq!((b[0], b[2]), (0xe0, 0x81));
    let Ok(Some((Packet::Disconnect(d), _))) = wirebench_mqtt::decode(&b, Version::V5, 1 << 20)
    else {
        panic!("not a DISCONNECT: {b:?}");
    };
    assert!(d.properties.reason_string().unwrap().contains("QoS 3"));
    // A QoS 2 message although we asked for QoS 1 at most: Protocol Error (0x82).
    let mut c = connected(Version::V5);
    assert!(c.handle_input(1, &[0x34, 6, 0, 1, b't', 0, 1, 0]).is_err());
    assert_eq!(disconnect_code(&out(&mut c, 1)), 0x82);
    // 3.1.1 just closes (§4.8): nothing to send.
    let mut c = connected(Version::V311);
    assert!(c.handle_input(1, &[0x36, 3, 0, 1, b't']).is_err());
    assert!(out(&mut c, 1).is_empty());
    // A Topic Alias we never allowed (5.0 §3.3.2.3.4).
    let mut c = connected(Version::V5);
    let e = c
        .handle_input(1, &[0x30, 7, 0, 1, b't', 3, 0x23, 0, 1])
        .unwrap_err();
    assert!(e.to_string().contains("Topic Alias"), "{e}");
}

#[test]
fn packet_size_limit_applies_from_the_header_section_3_1_2_11_4() {
    let mut cfg = Config::new(Version::V5, "c1");
    cfg.max_packet_size = 100;
    let mut c = Client::new(cfg, 0).unwrap();
    c.handle_input(0, &connack(Version::V5, vec![])).unwrap();
    out(&mut c, 0);
    // The header of a 16 kB PUBLISH is enough to refuse it.
    let e = c.handle_input(1, &[0x30, 0xff, 0x7f]).unwrap_err();
    assert!(
        matches!(
            e,
            MqttError::Malformed(WireError::TooLarge {
                size: 16_386,
                max: 100,
                ..
            })
        ),
        "{e}"
    );
    assert_eq!(disconnect_code(&out(&mut c, 1)), 0x95);
    // A fifth length byte is malformed however long the buffer.
    let mut c = connected(Version::V311);
    assert!(matches!(
        c.handle_input(1, &[0x30, 0x80, 0x80, 0x80, 0x80]),
        Err(MqttError::Malformed(WireError::LengthOverflow))
    ));
}

#[test]
fn acks_for_the_wrong_packet_are_refused_section_2_2_1() {
    let mut c = connected(Version::V311);
    c.subscribe(&[("t", QoS::AtMostOnce)]).unwrap();
    let b = Packet::PubAck(Ack {
        packet_id: 1,
        code: 0,
        properties: Properties::new(),
    })
    .to_bytes(Version::V311)
    .unwrap();
    let e = c.handle_input(1, &b).unwrap_err();
    assert!(e.to_string().contains("belongs to a Subscribe"), "{e}");
    // QoS 2's packets never belong to this client.
    let mut c = connected(Version::V311);
    assert!(c.handle_input(1, &[0x50, 2, 0, 1]).is_err());
}
