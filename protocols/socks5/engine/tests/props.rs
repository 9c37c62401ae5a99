//! Properties of every message: encode→parse gives the value back and consumes exactly
//! the encoding, every strict prefix is "incomplete" (never an error), and arbitrary bytes
//! never panic a parser or make it claim more bytes than it was given.

use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::collection::vec;
use proptest::prelude::*;
use wirebench_socks5::*;

fn host() -> impl Strategy<Value = Host> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|a| Host::V4(Ipv4Addr::from(a))),
        any::<[u8; 16]>().prop_map(|a| Host::V6(Ipv6Addr::from(a))),
        // Any ASCII, control bytes included: RFC 1928 fixes no syntax for the name.
        vec(0u8..0x80, 1..=255).prop_map(|b| Host::Domain(b.into_iter().map(char::from).collect())),
        // Multi-byte UTF-8, kept within the 255-byte limit.
        "\\PC{1,63}".prop_map(Host::Domain),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    (host(), any::<u16>()).prop_map(|(host, port)| Target { host, port })
}

fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        Just(Command::Connect),
        Just(Command::Bind),
        Just(Command::UdpAssociate),
    ]
}

fn field() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 1..=255)
}

/// The common shape of every check: the encoding parses to `want`, consuming exactly
/// itself even with more bytes after it, and every strict prefix is incomplete.
fn check<T: PartialEq + std::fmt::Debug>(
    bytes: &[u8],
    want: &T,
    trailing: &[u8],
    parse: impl Fn(&[u8]) -> Result<Option<(T, usize)>, Error>,
) -> Result<(), TestCaseError> {
    for i in 0..bytes.len() {
        let got = parse(&bytes[..i]);
        prop_assert!(matches!(got, Ok(None)), "prefix {i}: {got:?}");
    }
    let mut more = bytes.to_vec();
    more.extend_from_slice(trailing);
    let (got, n) = parse(&more)
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .ok_or_else(|| TestCaseError::fail("complete message reported incomplete"))?;
    prop_assert_eq!(&got, want);
    prop_assert_eq!(n, bytes.len());
    Ok(())
}

/// Consumed counts within the input, whatever the parser returned.
fn within<T>(r: Result<Option<(T, usize)>, Error>, len: usize) -> Result<(), TestCaseError> {
    if let Ok(Some((_, n))) = r {
        prop_assert!(n <= len, "consumed {n} of {len}");
    }
    Ok(())
}

proptest! {
    #[test]
    fn greeting_round_trips(methods in vec(any::<u8>(), 1..=255), extra in vec(any::<u8>(), 0..8)) {
        check(&greeting(&methods), &methods, &extra, parse_greeting)?;
    }

    #[test]
    fn method_choice_round_trips(m in any::<u8>(), extra in vec(any::<u8>(), 0..8)) {
        check(&method_choice(m), &m, &extra, parse_method_choice)?;
    }

    #[test]
    fn userpass_round_trips(user in field(), pass in field(), ok in any::<bool>(), extra in vec(any::<u8>(), 0..8)) {
        let req = userpass_request(&user, &pass).unwrap();
        prop_assert_eq!(req.len(), 3 + user.len() + pass.len());
        check(&req, &(user, pass), &extra, parse_userpass_request)?;
        check(&userpass_reply(ok), &ok, &extra, parse_userpass_reply)?;
    }

    #[test]
    fn request_round_trips(cmd in command(), t in target(), extra in vec(any::<u8>(), 0..8)) {
        let req = request(cmd, &t).unwrap();
        check(&req, &(cmd, t), &extra, parse_request)?;
    }

    #[test]
    fn reply_round_trips(code in any::<u8>(), t in target(), extra in vec(any::<u8>(), 0..8)) {
        let code = ReplyCode::from_code(code);
        check(&reply(code, &t), &(code, t), &extra, parse_reply)?;
    }

    #[test]
    fn pipelined_connect_is_two_messages(t in target()) {
        let bytes = pipelined_connect(&t).unwrap();
        let (methods, n) = parse_greeting(&bytes).unwrap().unwrap();
        prop_assert_eq!(methods, vec![NO_AUTH]);
        let rest = &bytes[n..];
        prop_assert_eq!(parse_request(rest), Ok(Some(((Command::Connect, t), rest.len()))));
    }

    #[test]
    fn arbitrary_bytes_never_panic(buf in vec(any::<u8>(), 0..600)) {
        let len = buf.len();
        within(parse_greeting(&buf), len)?;
        within(parse_method_choice(&buf), len)?;
        within(parse_userpass_request(&buf), len)?;
        within(parse_userpass_reply(&buf), len)?;
        within(parse_request(&buf), len)?;
        within(parse_reply(&buf), len)?;
    }

    /// Random bytes rarely get past the version byte, so also try them behind each valid
    /// header, where the length and address parsing is.
    #[test]
    fn arbitrary_bodies_never_panic(buf in vec(any::<u8>(), 0..600)) {
        for head in [&[5u8][..], &[1], &[5, 1, 0], &[5, 0, 0]] {
            let mut msg = head.to_vec();
            msg.extend_from_slice(&buf);
            let len = msg.len();
            within(parse_greeting(&msg), len)?;
            within(parse_method_choice(&msg), len)?;
            within(parse_userpass_request(&msg), len)?;
            within(parse_userpass_reply(&msg), len)?;
            within(parse_request(&msg), len)?;
            within(parse_reply(&msg), len)?;
        }
    }
}
