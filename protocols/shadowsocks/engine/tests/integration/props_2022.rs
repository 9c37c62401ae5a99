//! Properties of the Shadowsocks 2022 (SIP022) stream: a request and a response open to
//! what was sealed however the wire is split into reads; any single altered byte is
//! refused before any plaintext comes out of the altered chunk; a stream cut anywhere
//! inside a unit is reported as truncated; arbitrary bytes never panic the decoder nor
//! make it hold more than one chunk.

use proptest::collection::vec;
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};
use wirebench_shadowsocks::v2022::*;
use wirebench_shadowsocks::{Cipher, Host, TAG_LEN, Target};

fn psk() -> impl Strategy<Value = Psk> {
    (
        prop_oneof![
            Just(Cipher::Chacha20IetfPoly1305),
            Just(Cipher::Aes256Gcm),
            Just(Cipher::Aes128Gcm),
        ],
        any::<[u8; 32]>(),
    )
        .prop_map(|(c, k)| Psk::from_bytes(c, &k[..c.key_len()]).unwrap())
}

fn target() -> impl Strategy<Value = Target> {
    let host = prop_oneof![
        any::<[u8; 4]>().prop_map(|a| Host::V4(Ipv4Addr::from(a))),
        any::<[u8; 16]>().prop_map(|a| Host::V6(Ipv6Addr::from(a))),
        "[a-z0-9.-]{1,255}".prop_map(Host::Domain),
    ];
    (host, any::<u16>()).prop_map(|(host, port)| Target { host, port })
}

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

fn open_all(d: &mut Decryptor, wire: &[u8], cuts: &[f64]) -> Result<Vec<u8>, TestCaseError> {
    let mut out = Vec::new();
    for part in split(wire, cuts) {
        let mut input = part;
        while let Some(chunk) = d.next_chunk(&mut input).unwrap() {
            prop_assert!(chunk.len() <= MAX_PAYLOAD);
            out.extend_from_slice(chunk);
        }
        prop_assert!(input.is_empty());
    }
    d.finish().unwrap();
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn request_round_trip_any_split(
        psk in psk(),
        t in target(),
        padding in 0usize..1200,
        now in any::<u64>(),
        writes in vec(vec(any::<u8>(), 0..70_000), 1..3),
        cuts in vec(0.0f64..1.0, 0..12),
    ) {
        let salt = vec![3u8; psk.salt_len()];
        let mut e = Encryptor::client(&psk, &salt, &t, padding).unwrap();
        let mut wire = Vec::new();
        for w in &writes {
            e.seal(w, now, &mut wire);
        }
        let mut d = Decryptor::request(&psk);
        let out = open_all(&mut d, &wire, &cuts)?;
        prop_assert_eq!(out, writes.concat());
        let h = d.head().unwrap();
        prop_assert_eq!(&h.salt, &salt);
        prop_assert_eq!(h.timestamp, now);
        prop_assert_eq!(h.target.as_ref(), Some(&t));
        prop_assert_eq!(h.padding, padding.min(MAX_PADDING));
    }

    #[test]
    fn response_round_trip_any_split(
        psk in psk(),
        now in any::<u64>(),
        writes in vec(vec(any::<u8>(), 0..70_000), 1..3),
        cuts in vec(0.0f64..1.0, 0..12),
    ) {
        let request_salt = vec![4u8; psk.salt_len()];
        let mut e = Encryptor::server(&psk, &vec![5u8; psk.salt_len()], &request_salt).unwrap();
        let mut wire = Vec::new();
        for w in &writes {
            e.seal(w, now, &mut wire);
        }
        let mut d = Decryptor::response(&psk, &request_salt);
        let out = open_all(&mut d, &wire, &cuts)?;
        prop_assert_eq!(out, writes.concat());
        prop_assert_eq!(d.head().unwrap().timestamp, now);
    }

    #[test]
    fn any_altered_byte_is_refused(
        psk in psk(),
        t in target(),
        data in vec(any::<u8>(), 0..200),
        more in vec(any::<u8>(), 1..200),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let salt = vec![6u8; psk.salt_len()];
        let mut e = Encryptor::client(&psk, &salt, &t, 0).unwrap();
        let mut wire = Vec::new();
        e.seal(&data, 1, &mut wire);
        e.seal(&more, 1, &mut wire);
        let i = at.index(wire.len());
        wire[i] ^= flip;
        let mut d = Decryptor::request(&psk);
        let mut out = Vec::new();
        prop_assert!(d.feed(&wire, &mut out).is_err());
        // Only data from chunks before the altered one came out.
        prop_assert!(out.len() <= data.len());
        prop_assert!(d.finish().is_err());
    }

    #[test]
    fn a_cut_stream_is_truncated(
        psk in psk(),
        t in target(),
        data in vec(any::<u8>(), 1..500),
        at in any::<prop::sample::Index>(),
    ) {
        let salt = vec![7u8; psk.salt_len()];
        let mut e = Encryptor::client(&psk, &salt, &t, 3).unwrap();
        let mut wire = Vec::new();
        e.seal(&data, 1, &mut wire);
        e.seal(&data, 1, &mut wire);
        // Cut anywhere but at 0 (nothing sent) and at a unit boundary.
        let first = wire.len() - (2 + TAG_LEN) - (data.len() + TAG_LEN);
        let cut = 1 + at.index(wire.len() - 1);
        prop_assume!(cut != first && cut != first + 2 + TAG_LEN);
        let mut d = Decryptor::request(&psk);
        let mut out = Vec::new();
        d.feed(&wire[..cut], &mut out).unwrap();
        prop_assert!(d.finish().is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        psk in psk(),
        response in any::<bool>(),
        reads in vec(vec(any::<u8>(), 0..3000), 0..8),
    ) {
        let mut d = if response {
            Decryptor::response(&psk, &vec![0; psk.salt_len()])
        } else {
            Decryptor::request(&psk)
        };
        for r in &reads {
            let mut input = &r[..];
            while let Ok(Some(c)) = d.next_chunk(&mut input) {
                prop_assert!(c.len() <= MAX_PAYLOAD);
            }
            prop_assert!(d.wants() <= MAX_PAYLOAD + TAG_LEN);
        }
        let _ = d.finish();
    }
}
