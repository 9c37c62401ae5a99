//! Properties of the AEAD stream: whatever is sealed opens to the same bytes however the
//! wire is split into reads; arbitrary bytes never panic the decoder, never make it hold
//! more than one chunk, and any single altered byte is refused; an address encodes and
//! parses back.

use proptest::collection::vec;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};
use wirebench_shadowsocks::*;

fn cipher() -> impl Strategy<Value = Cipher> {
    prop_oneof![
        Just(Cipher::Chacha20IetfPoly1305),
        Just(Cipher::Aes256Gcm),
        Just(Cipher::Aes128Gcm),
    ]
}

fn key() -> impl Strategy<Value = Key> {
    (cipher(), vec(any::<u8>(), 0..40)).prop_map(|(c, p)| Key::from_password(c, &p))
}

fn target() -> impl Strategy<Value = Target> {
    let host = prop_oneof![
        any::<[u8; 4]>().prop_map(|a| Host::V4(Ipv4Addr::from(a))),
        any::<[u8; 16]>().prop_map(|a| Host::V6(Ipv6Addr::from(a))),
        "[a-z0-9.-]{1,255}".prop_map(Host::Domain),
    ];
    (host, any::<u16>()).prop_map(|(host, port)| Target { host, port })
}

/// Cuts `wire` at the given fractions (sorted, deduplicated) into reads.
fn split<'a>(wire: &'a [u8], cuts: &[f64]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|f| ((wire.len() as f64) * f) as usize)
        .collect();
    at.push(0);
    at.push(wire.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| &wire[w[0]..w[1]]).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn round_trip_any_split(
        key in key(),
        salt_byte in any::<u8>(),
        writes in vec(vec(any::<u8>(), 0..20_000), 1..4),
        cuts in vec(0.0f64..1.0, 0..12),
    ) {
        let salt = vec![salt_byte; key.cipher().salt_len()];
        let mut e = Encryptor::new(&key, &salt).unwrap();
        let mut wire = Vec::new();
        for w in &writes {
            e.seal(w, &mut wire);
        }
        let mut d = Decryptor::new(&key);
        let mut out = Vec::new();
        for part in split(&wire, &cuts) {
            let mut input = part;
            while let Some(chunk) = d.next_chunk(&mut input).unwrap() {
                prop_assert!(chunk.len() <= MAX_PAYLOAD);
                out.extend_from_slice(chunk);
            }
            prop_assert!(input.is_empty());
        }
        d.finish().unwrap();
        prop_assert_eq!(out, writes.concat());
    }

    #[test]
    fn request_round_trip(key in key(), t in target(), data in vec(any::<u8>(), 0..3000)) {
        let salt = vec![1u8; key.cipher().salt_len()];
        let mut e = Encryptor::new(&key, &salt).unwrap();
        let mut wire = Vec::new();
        e.seal_request(&t, &data, &mut wire).unwrap();
        // A server that takes every cipher finds this one.
        let keys: Vec<Key> = Cipher::ALL
            .iter()
            .map(|c| if *c == key.cipher() { key.clone() } else { Key::from_password(*c, b"other") })
            .collect();
        let mut d = Decryptor::any(&keys);
        let mut plain = Vec::new();
        d.feed(&wire, &mut plain).unwrap();
        prop_assert_eq!(d.cipher(), Some(key.cipher()));
        let (got, n) = parse_address(&plain).unwrap().unwrap();
        prop_assert_eq!(got, t);
        prop_assert_eq!(&plain[n..], &data[..]);
    }

    #[test]
    fn any_altered_byte_is_refused(
        key in key(),
        data in vec(any::<u8>(), 1..200),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let salt = vec![5u8; key.cipher().salt_len()];
        let mut e = Encryptor::new(&key, &salt).unwrap();
        let mut wire = Vec::new();
        e.seal(&data, &mut wire);
        let i = at.index(wire.len());
        wire[i] ^= flip;
        let mut d = Decryptor::new(&key);
        let mut out = Vec::new();
        prop_assert!(d.feed(&wire, &mut out).is_err());
        prop_assert!(out.is_empty());
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        keys in vec(key(), 1..4),
        reads in vec(vec(any::<u8>(), 0..3000), 0..8),
    ) {
        let mut d = Decryptor::any(&keys);
        for r in &reads {
            let mut input = &r[..];
            loop {
                match d.next_chunk(&mut input) {
                    Ok(Some(c)) => prop_assert!(c.len() <= MAX_PAYLOAD),
                    Ok(None) => break,
                    Err(_) => break,
                }
            }
            // The decoder holds at most one chunk: what it still wants fits one.
            prop_assert!(d.wants() <= MAX_PAYLOAD + TAG_LEN);
        }
        let _ = d.finish();
    }

    #[test]
    fn parse_address_never_panics(buf in vec(any::<u8>(), 0..300)) {
        if let Ok(Some((t, n))) = parse_address(&buf) {
            prop_assert!(n <= buf.len());
            prop_assert_eq!(encode_address(&t).unwrap(), buf[..n].to_vec());
        }
    }
}
