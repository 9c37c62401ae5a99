//! Properties of the codec and the client over generated input: every packet of both
//! versions survives encode -> decode, every strict prefix of one is incomplete (never
//! invalid), arbitrary bytes never panic (the fuzz target's body), and a client reads a
//! broker's byte stream the same however it is split.

use proptest::prelude::*;
use wirebench_engine::Engine as _;
use wirebench_mqtt::packet::{
    Ack, ConnAck, Connect, Publish, Reason, SubAck, SubOptions, Subscribe, UnsubAck, Unsubscribe,
    Will,
};
use wirebench_mqtt::property::{Place, allowed};
use wirebench_mqtt::wire::PacketType;
use wirebench_mqtt::{
    Client, Config, Event, Packet, Properties, Property, QoS, Version, decode, reason,
};

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,8}"
}

fn topic() -> impl Strategy<Value = String> {
    "[a-z0-9/]{1,12}"
}

fn filter() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop_oneof!["[a-z]{1,4}", Just("+".to_string())], 1..4),
        any::<bool>(),
    )
        .prop_map(|(levels, hash)| {
            let mut f = levels.join("/");
            if hash {
                f.push_str("/#");
            }
            f
        })
}

fn flag() -> impl Strategy<Value = u8> {
    0u8..=1
}

fn property() -> impl Strategy<Value = Property> {
    use Property::*;
    prop_oneof![
        flag().prop_map(PayloadFormatIndicator),
        any::<u32>().prop_map(MessageExpiryInterval),
        text().prop_map(ContentType),
        topic().prop_map(ResponseTopic),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(CorrelationData),
        (1u32..=268_435_455).prop_map(SubscriptionIdentifier),
        any::<u32>().prop_map(SessionExpiryInterval),
        text().prop_map(AssignedClientIdentifier),
        any::<u16>().prop_map(ServerKeepAlive),
        text().prop_map(AuthenticationMethod),
        prop::collection::vec(any::<u8>(), 0..8).prop_map(AuthenticationData),
        flag().prop_map(RequestProblemInformation),
        any::<u32>().prop_map(WillDelayInterval),
        flag().prop_map(RequestResponseInformation),
        text().prop_map(ResponseInformation),
        text().prop_map(ServerReference),
        text().prop_map(ReasonString),
        (1u16..).prop_map(ReceiveMaximum),
        any::<u16>().prop_map(TopicAliasMaximum),
        (1u16..).prop_map(TopicAlias),
        flag().prop_map(MaximumQos),
        flag().prop_map(RetainAvailable),
        (text(), text()).prop_map(|(k, v)| UserProperty(k, v)),
        (1u32..).prop_map(MaximumPacketSize),
        flag().prop_map(WildcardSubscriptionAvailable),
        flag().prop_map(SubscriptionIdentifierAvailable),
        flag().prop_map(SharedSubscriptionAvailable),
    ]
}

/// Properties valid in `place` under `v` (none in 3.1.1): the disallowed dropped, the
/// non-repeatable kept once.
fn props(v: Version, place: Place) -> BoxedStrategy<Properties> {
    if v == Version::V311 {
        return Just(Properties::new()).boxed();
    }
    prop::collection::vec(property(), 0..5)
        .prop_map(move |all| {
            let mut keep: Vec<Property> = Vec::new();
            for p in all {
                let id = u32::from(p.id());
                let repeatable =
                    id == 0x26 || (id == 0x0B && place == Place::Packet(PacketType::Publish));
                if allowed(id, place) && (repeatable || !keep.iter().any(|q| q.id() == p.id())) {
                    keep.push(p);
                }
            }
            Properties(keep)
        })
        .boxed()
}

fn code(kind: PacketType, v: Version) -> impl Strategy<Value = u8> {
    let codes: Vec<u8> = (0..=255).filter(|c| reason::allowed(*c, kind, v)).collect();
    prop::sample::select(codes)
}

fn qos() -> impl Strategy<Value = QoS> {
    prop_oneof![
        Just(QoS::AtMostOnce),
        Just(QoS::AtLeastOnce),
        Just(QoS::ExactlyOnce)
    ]
}

fn connect(v: Version) -> impl Strategy<Value = Packet> {
    let will = (
        topic(),
        prop::collection::vec(any::<u8>(), 0..8),
        qos(),
        any::<bool>(),
        props(v, Place::Will),
    )
        .prop_map(|(topic, payload, qos, retain, properties)| Will {
            topic,
            payload,
            qos,
            retain,
            properties,
        });
    (
        text(),
        any::<bool>(),
        any::<u16>(),
        props(v, Place::Packet(PacketType::Connect)),
        prop::option::of(will),
        prop::option::of(text()),
        prop::option::of(prop::collection::vec(any::<u8>(), 0..8)),
    )
        .prop_map(
            move |(client_id, clean_start, keep_alive, properties, will, username, password)| {
                // 3.1.1 sends a password only with a user name.
                let password = password.filter(|_| v == Version::V5 || username.is_some());
                Packet::Connect(Connect {
                    version: v,
                    client_id,
                    clean_start,
                    keep_alive,
                    properties,
                    will,
                    username,
                    password,
                })
            },
        )
}

fn ack(kind: PacketType, v: Version) -> impl Strategy<Value = Ack> {
    (1u16.., code(kind, v), props(v, Place::Packet(kind))).prop_map(
        |(packet_id, code, properties)| Ack {
            packet_id,
            code,
            properties,
        },
    )
}

fn options(v: Version) -> impl Strategy<Value = SubOptions> {
    (qos(), any::<bool>(), any::<bool>(), 0u8..=2).prop_map(move |(qos, nl, rap, rh)| match v {
        Version::V311 => SubOptions::qos(qos),
        Version::V5 => SubOptions {
            qos,
            no_local: nl,
            retain_as_published: rap,
            retain_handling: rh,
        },
    })
}

fn packet(v: Version) -> BoxedStrategy<Packet> {
    use PacketType as T;
    let p = |k| Place::Packet(k);
    let publish = (
        qos(),
        any::<bool>(),
        any::<bool>(),
        topic(),
        1u16..,
        props(v, p(T::Publish)),
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(qos, dup, retain, topic, id, properties, payload)| {
            let q0 = qos == QoS::AtMostOnce;
            Packet::Publish(Publish {
                dup: dup && !q0,
                qos,
                retain,
                topic,
                packet_id: (!q0).then_some(id),
                properties,
                payload,
            })
        });
    let connack = (any::<bool>(), code(T::ConnAck, v), props(v, p(T::ConnAck))).prop_map(
        |(sp, code, properties)| {
            Packet::ConnAck(ConnAck {
                session_present: sp && code == 0,
                code,
                properties,
            })
        },
    );
    let subscribe = (
        1u16..,
        props(v, p(T::Subscribe)),
        prop::collection::vec((filter(), options(v)), 1..4),
    )
        .prop_map(|(packet_id, properties, filters)| {
            Packet::Subscribe(Subscribe {
                packet_id,
                properties,
                filters,
            })
        });
    let suback = (
        1u16..,
        props(v, p(T::SubAck)),
        prop::collection::vec(code(T::SubAck, v), 1..4),
    )
        .prop_map(|(packet_id, properties, codes)| {
            Packet::SubAck(SubAck {
                packet_id,
                properties,
                codes,
            })
        });
    let unsubscribe = (
        1u16..,
        props(v, p(T::Unsubscribe)),
        prop::collection::vec(filter(), 1..4),
    )
        .prop_map(|(packet_id, properties, filters)| {
            Packet::Unsubscribe(Unsubscribe {
                packet_id,
                properties,
                filters,
            })
        });
    let unsuback = (
        1u16..,
        props(v, p(T::UnsubAck)),
        prop::collection::vec(code(T::UnsubAck, v), 1..4),
    )
        .prop_map(move |(packet_id, properties, codes)| {
            let codes = if v == Version::V5 { codes } else { Vec::new() };
            Packet::UnsubAck(UnsubAck {
                packet_id,
                properties,
                codes,
            })
        });
    let disconnect = (code(T::Disconnect, v), props(v, p(T::Disconnect)))
        .prop_map(|(code, properties)| Packet::Disconnect(Reason { code, properties }));
    let auth = (code(T::Auth, Version::V5), props(Version::V5, p(T::Auth)))
        .prop_map(|(code, properties)| Packet::Auth(Reason { code, properties }));
    let mut all = vec![
        connect(v).boxed(),
        connack.boxed(),
        publish.boxed(),
        ack(T::PubAck, v).prop_map(Packet::PubAck).boxed(),
        ack(T::PubRec, v).prop_map(Packet::PubRec).boxed(),
        ack(T::PubRel, v).prop_map(Packet::PubRel).boxed(),
        ack(T::PubComp, v).prop_map(Packet::PubComp).boxed(),
        subscribe.boxed(),
        suback.boxed(),
        unsubscribe.boxed(),
        unsuback.boxed(),
        Just(Packet::PingReq).boxed(),
        Just(Packet::PingResp).boxed(),
        disconnect.boxed(),
    ];
    if v == Version::V5 {
        all.push(auth.boxed());
    }
    prop::strategy::Union::new(all).boxed()
}

fn version() -> impl Strategy<Value = Version> {
    prop_oneof![Just(Version::V311), Just(Version::V5)]
}

proptest! {
    #[test]
    fn every_packet_round_trips_and_its_prefixes_are_incomplete(
        (v, p) in version().prop_flat_map(|v| (Just(v), packet(v)))
    ) {
        let b = p.to_bytes(v).unwrap();
        prop_assert_eq!(decode(&b, v, u32::MAX).unwrap(), Some((p.clone(), b.len())));
        for n in 0..b.len() {
            prop_assert_eq!(decode(&b[..n], v, u32::MAX).unwrap(), None, "prefix of {}", n);
        }
        // The size limit counts the whole packet.
        let too_small = u32::try_from(b.len() - 1).unwrap();
        prop_assert!(decode(&b, v, too_small).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        wirebench_mqtt::fuzz_input(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_header_never_panic(
        first in any::<u8>(),
        body in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        // A plausible fixed header makes the body reach the per-packet decoders.
        let mut b = vec![first, body.len() as u8];
        b.extend_from_slice(&body);
        for v in [Version::V311, Version::V5] {
            if let Ok(Some((p, n))) = decode(&b, v, 1 << 20) {
                prop_assert_eq!(n, b.len());
                let again = p.to_bytes(v).unwrap();
                prop_assert_eq!(decode(&again, v, 1 << 20).unwrap(), Some((p, again.len())));
            }
        }
    }

    #[test]
    fn a_broker_stream_reads_the_same_however_it_is_split(
        v in version(),
        messages in prop::collection::vec((topic(), prop::collection::vec(any::<u8>(), 0..300), any::<bool>()), 1..8),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut stream = Packet::ConnAck(ConnAck { session_present: false, code: 0, properties: Properties::new() })
            .to_bytes(v).unwrap();
        for (i, (topic, payload, q1)) in messages.iter().enumerate() {
            Packet::Publish(Publish {
                dup: false,
                qos: if *q1 { QoS::AtLeastOnce } else { QoS::AtMostOnce },
                retain: false,
                topic: topic.clone(),
                packet_id: q1.then_some(i as u16 + 1),
                properties: Properties::new(),
                payload: payload.clone(),
            }).encode(v, &mut stream).unwrap();
        }
        let run = |cuts: &[usize]| {
            let mut c = Client::new(Config::new(v, "c"), 0).unwrap();
            let mut at = 0;
            for &cut in cuts.iter().chain([stream.len()].iter()) {
                c.handle_input(1, &stream[at..cut.max(at)]).unwrap();
                at = cut.max(at);
            }
            let events: Vec<Event> = std::iter::from_fn(|| c.poll_event()).collect();
            let mut out = Vec::new();
            c.poll_transmit(2, &mut out);
            (events, out)
        };
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(stream.len() + 1)).collect();
        points.sort_unstable();
        let whole = run(&[]);
        prop_assert_eq!(whole.0.len(), messages.len() + 1);
        prop_assert_eq!(run(&points), whole);
    }
}
