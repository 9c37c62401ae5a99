//! Property tests: every message encodes and decodes back to itself, every accepted
//! datagram re-encodes to its own bytes, and no input makes the decoder or an endpoint
//! panic.

use proptest::prelude::*;
use wirebench_coap_engine::{
    Block, Client, ClientConfig, Code, Message, Request, Server, ServerConfig, Szx, Type,
};

use crate::pipe::{client_addr, server_addr};

fn kind() -> impl Strategy<Value = Type> {
    prop_oneof![
        Just(Type::Confirmable),
        Just(Type::NonConfirmable),
        Just(Type::Acknowledgement),
        Just(Type::Reset),
    ]
}

/// Valid messages: Empty ones bare, Reset only Empty, Non-confirmable never Empty.
fn message() -> impl Strategy<Value = Message> {
    let option = (
        prop_oneof![0u16..30, 250u16..300, any::<u16>()],
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..16),
            proptest::collection::vec(any::<u8>(), 0..400),
        ],
    );
    (
        kind(),
        1u8..=255,
        any::<u16>(),
        proptest::collection::vec(any::<u8>(), 0..=8),
        proptest::collection::vec(option, 0..6),
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(kind, code, message_id, token, options, payload)| {
            if kind == Type::Reset {
                return Message::empty(kind, message_id);
            }
            let mut m = Message::new(kind, Code(code), message_id);
            m.token = token;
            for (n, v) in options {
                m.add_option(n, v);
            }
            m.payload = payload;
            m
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn encode_decode_round_trip(m in message()) {
        let bytes = m.encode().unwrap();
        prop_assert_eq!(Message::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn decode_never_panics_and_accepted_bytes_reencode(
        bytes in proptest::collection::vec(any::<u8>(), 0..300)
    ) {
        if let Ok(m) = Message::decode(&bytes) {
            prop_assert_eq!(m.encode().unwrap(), bytes);
        }
    }

    /// Mostly valid headers, so that the option parser is reached.
    #[test]
    fn decode_after_a_valid_header(
        head in (0u8..4, 0u8..=8, any::<u8>()),
        rest in proptest::collection::vec(any::<u8>(), 0..200)
    ) {
        let mut bytes = vec![0x40 | (head.0 << 4) | head.1, head.2, 0, 1];
        bytes.extend_from_slice(&rest);
        if let Ok(m) = Message::decode(&bytes) {
            prop_assert_eq!(m.encode().unwrap(), bytes);
        }
    }

    #[test]
    fn block_round_trip(num in 0u32..(1 << 20), more: bool, szx in 0u8..7) {
        let b = Block { num, more, szx: Szx::new(szx).unwrap() };
        let v = b.encode().unwrap();
        prop_assert!(v.len() <= 3);
        prop_assert_eq!(Block::decode(&v).unwrap(), b);
    }

    #[test]
    fn endpoints_take_any_datagram(
        datagrams in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..64), 0..20)
    ) {
        let mut client = Client::new(ClientConfig::default(), 1).unwrap();
        let mut server = Server::new(ServerConfig::default(), 2);
        client.request(Request::get(server_addr(), "echo", true)).unwrap();
        let first = client.poll_transmit(0).unwrap();
        server.handle_datagram(0, client_addr(), &first.datagram).unwrap();
        for (i, d) in datagrams.iter().enumerate() {
            let now = i as u64 * 1_000_000;
            let _ = client.handle_datagram(now, server_addr(), d);
            let _ = server.handle_datagram(now, client_addr(), d);
            client.handle_timeout(now);
            while client.poll_transmit(now).is_some() {}
            while server.poll_transmit(now).is_some() {}
        }
        prop_assert!(client.pending() <= 1);
    }
}
