//! The Shadowsocks 2022 (SIP022) decoder, request and response side, on arbitrary bytes
//! split into reads at arbitrary points: never a panic, never a chunk over 0xFFFF bytes,
//! never more than one chunk held; a decoder that failed stays failed; and bytes sealed
//! by the encoder open to what was sealed however they are split.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_shadowsocks::v2022 as ss;
use wirebench_shadowsocks::{Cipher, Host, TAG_LEN, Target};

fuzz_target!(|data: &[u8]| {
    let Some((&control, data)) = data.split_first() else {
        return;
    };
    let cipher = Cipher::ALL[usize::from(control >> 1) % 3];
    let psk = ss::Psk::from_bytes(cipher, &vec![0x5a; cipher.key_len()]).expect("key length");
    let request_salt = vec![control; cipher.salt_len()];
    // The request side or the response side, chosen by the first byte.
    let mut d = if control & 1 == 0 {
        ss::Decryptor::request(&psk)
    } else {
        ss::Decryptor::response(&psk, &request_salt)
    };
    // Read sizes from the control byte: 1 to 256 bytes at a time.
    let step = usize::from(control).max(1);
    let mut failed = false;
    for read in data.chunks(step) {
        let mut input = read;
        loop {
            match d.next_chunk(&mut input) {
                Ok(Some(p)) => {
                    assert!(!failed);
                    assert!(p.len() <= ss::MAX_PAYLOAD);
                }
                Ok(None) => {
                    assert!(input.is_empty());
                    break;
                }
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        assert!(d.wants() <= ss::MAX_PAYLOAD + TAG_LEN);
    }
    if failed {
        assert!(d.finish().is_err());
        assert!(d.next_chunk(&mut &b"x"[..]).is_err());
    }

    // The fuzz input as a request's data and as a response, sealed, then opened in reads
    // of `step` bytes.
    let target = Target {
        host: Host::Domain("fuzz.example".into()),
        port: u16::from(control),
    };
    let salt = vec![control ^ 0xff; cipher.salt_len()];
    let mut e = ss::Encryptor::client(&psk, &salt, &target, usize::from(control) * 4)
        .expect("salt of the right length");
    let mut wire = Vec::new();
    e.seal(data, u64::from(control), &mut wire);
    let mut d = ss::Decryptor::request(&psk);
    let mut out = Vec::new();
    for read in wire.chunks(step) {
        d.feed(read, &mut out).expect("our own sealing opens");
    }
    d.finish().expect("ends between chunks");
    assert_eq!(out, data);
    assert_eq!(d.head().and_then(|h| h.target.as_ref()), Some(&target));

    let mut e = ss::Encryptor::server(&psk, &salt, &request_salt).expect("salt lengths");
    let mut wire = Vec::new();
    e.seal(data, 0, &mut wire);
    let mut d = ss::Decryptor::response(&psk, &request_salt);
    let mut out = Vec::new();
    for read in wire.chunks(step) {
        d.feed(read, &mut out).expect("our own sealing opens");
    }
    d.finish().expect("ends between chunks");
    assert_eq!(out, data);
});
