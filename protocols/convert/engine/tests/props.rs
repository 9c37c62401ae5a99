//! Properties of every Convert message: encode→parse gives the TLVs back and consumes
//! exactly the encoding, leaving the application's data after it alone; every strict
//! prefix is "incomplete" (never an error); and arbitrary bytes never panic the parser or
//! make it claim more bytes than it was given.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use proptest::collection::vec;
use proptest::prelude::*;
use wirebench_convert::*;

/// Addresses as they come back from the wire: IPv4 as V4, IPv6 without flow info or
/// scope id and never IPv4-mapped (which comes back as V4).
fn addr() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>())
            .prop_map(|(a, p)| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(a), p))),
        (any::<[u8; 16]>(), any::<u16>())
            .prop_filter("IPv4-mapped parses as V4", |(a, _)| {
                Ipv6Addr::from(*a).to_ipv4_mapped().is_none()
            })
            .prop_map(|(a, p)| SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(a), p, 0, 0))),
    ]
}

/// A list of TCP options as the Connect TLV allows: kind 2 to 255, a length byte, value.
fn tcp_options() -> impl Strategy<Value = Vec<u8>> {
    vec((2u8..=255, vec(any::<u8>(), 0..8)), 0..5).prop_map(|opts| {
        let mut out = Vec::new();
        for (kind, value) in opts {
            out.push(kind);
            out.push(2 + value.len() as u8);
            out.extend_from_slice(&value);
        }
        out
    })
}

/// `n` whole 32-bit words of arbitrary bytes.
fn words(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<[u8; 4]>(), n).prop_map(|w| w.concat())
}

/// `head` bytes short of whole words, e.g. an error's value after type, length and code.
fn after(head: usize) -> impl Strategy<Value = Vec<u8>> {
    (words(0..6), vec(any::<u8>(), 4 - head)).prop_map(|(w, tail)| [w, tail].concat())
}

fn tlv() -> impl Strategy<Value = Tlv> {
    prop_oneof![
        Just(Tlv::Info),
        (addr(), tcp_options()).prop_map(|(addr, options)| Tlv::Connect { addr, options }),
        words(0..10).prop_map(Tlv::ExtendedTcpHeader),
        vec(3u8..=255, 0..12).prop_map(Tlv::SupportedTcpExtensions),
        words(0..8).prop_map(Tlv::Cookie),
        (any::<u8>(), after(3)).prop_map(|(c, value)| Tlv::Error {
            code: ErrorCode::from_code(c),
            value
        }),
        (any::<u8>(), after(2))
            .prop_filter("a defined type has its own variant", |(k, _)| {
                ![
                    INFO,
                    CONNECT,
                    EXTENDED_TCP_HEADER,
                    SUPPORTED_TCP_EXTENSIONS,
                    COOKIE,
                    ERROR,
                ]
                .contains(k)
            })
            .prop_map(|(kind, value)| Tlv::Unknown { kind, value }),
    ]
}

/// Consumed counts within the input, whatever the parser returned.
fn within(r: Parsed<Vec<Tlv>>, len: usize) -> Result<(), TestCaseError> {
    if let Ok(Some((tlvs, n))) = r {
        prop_assert!(n <= len, "consumed {n} of {len}");
        prop_assert!(tlvs.len() <= 255);
    }
    Ok(())
}

proptest! {
    #[test]
    fn tlvs_round_trip(tlvs in vec(tlv(), 0..8), data in vec(any::<u8>(), 0..64)) {
        let bytes = encode(&tlvs).unwrap();
        prop_assert!(bytes.len() <= MAX_MESSAGE);
        prop_assert_eq!(bytes.len() % 4, 0);
        prop_assert_eq!(usize::from(bytes[1]) * 4, bytes.len());
        for i in 0..bytes.len() {
            let got = parse(&bytes[..i]);
            prop_assert!(matches!(got, Ok(None)), "prefix {i}: {got:?}");
        }
        // The application's data follows the message in the same SYN and is not consumed.
        let mut syn = bytes.clone();
        syn.extend_from_slice(&data);
        let (got, n) = parse(&syn)
            .map_err(|e| TestCaseError::fail(e.to_string()))?
            .ok_or_else(|| TestCaseError::fail("complete message reported incomplete"))?;
        prop_assert_eq!(&got, &tlvs);
        prop_assert_eq!(n, bytes.len());
        prop_assert_eq!(&syn[n..], &data[..]);
        prop_assert_eq!(connect_target(&got), connect_target(&tlvs));
    }

    #[test]
    fn connect_request_round_trips(a in addr(), data in vec(any::<u8>(), 0..64)) {
        let mut syn = connect_request(a);
        prop_assert_eq!(syn.len(), 24);
        syn.extend_from_slice(&data);
        let (tlvs, n) = parse(&syn).unwrap().unwrap();
        prop_assert_eq!(n, 24);
        prop_assert_eq!(connect_target(&tlvs), Some(a));
    }

    #[test]
    fn error_reply_round_trips(c in any::<u8>()) {
        let code = ErrorCode::from_code(c);
        let reply = error_reply(code);
        prop_assert_eq!(
            parse(&reply),
            Ok(Some((vec![Tlv::Error { code, value: vec![0] }], 8)))
        );
        prop_assert_eq!(code.code(), c);
    }

    #[test]
    fn arbitrary_bytes_never_panic(buf in vec(any::<u8>(), 0..1100)) {
        within(parse(&buf), buf.len())?;
    }

    /// Random bytes rarely get past the version and magic number, so also try them behind
    /// a valid header of every Total Length, where the TLV parsing is.
    #[test]
    fn arbitrary_bodies_never_panic(words in 1u8..=255, body in vec(any::<u8>(), 0..1100)) {
        let mut msg = vec![VERSION, words];
        msg.extend_from_slice(&MAGIC.to_be_bytes());
        msg.extend_from_slice(&body);
        let len = msg.len();
        let r = parse(&msg);
        if len >= usize::from(words) * 4 {
            prop_assert!(!matches!(r, Ok(None)), "whole message reported incomplete");
        }
        within(r, len)?;
    }

    /// Bodies built from plausible TLV headers reach the per-type checks far more often
    /// than random bytes do; whatever parses must re-encode to the same TLVs and bytes.
    #[test]
    fn tlv_shaped_bodies_reencode(
        parts in vec((prop::sample::select(vec![1u8, 10, 20, 21, 22, 30, 99]), 1u8..8, vec(any::<u8>(), 0..30)), 1..5),
    ) {
        let mut body = Vec::new();
        for (kind, words, fill) in parts {
            let len = usize::from(words) * 4;
            let mut t = vec![kind, words];
            t.extend(fill.iter().copied().chain(std::iter::repeat(0)).take(len - 2));
            body.extend_from_slice(&t);
        }
        let mut msg = vec![VERSION, (1 + body.len() / 4) as u8];
        msg.extend_from_slice(&MAGIC.to_be_bytes());
        msg.extend_from_slice(&body);
        if let Ok(Some((tlvs, n))) = parse(&msg) {
            prop_assert_eq!(n, msg.len());
            let again = encode(&tlvs).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(again.len(), n);
            // Byte for byte the same but for the Unassigned bits a receiver ignores.
            let mut at = HEADER_LEN;
            while at < n {
                let end = at + usize::from(msg[at + 1]) * 4;
                let skip = matches!(msg[at], EXTENDED_TCP_HEADER | SUPPORTED_TCP_EXTENSIONS);
                for i in at..end {
                    if !(skip && (i == at + 2 || i == at + 3)) {
                        prop_assert_eq!(msg[i], again[i], "byte {}", i);
                    }
                }
                at = end;
            }
            prop_assert_eq!(parse(&again), Ok(Some((tlvs, n))));
        }
    }
}
