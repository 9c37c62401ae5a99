//! The Shadowsocks AEAD decoder (SIP004) and the address parser on arbitrary bytes, split
//! into reads at arbitrary points: never a panic, never a chunk over 0x3FFF bytes, never
//! more than one chunk held; a decoder that failed stays failed; and bytes sealed by the
//! encoder open to what was sealed however they are split.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_shadowsocks as ss;

fuzz_target!(|data: &[u8]| {
    let Some((&control, data)) = data.split_first() else {
        return;
    };
    let keys: Vec<ss::Key> = ss::Cipher::ALL
        .iter()
        .map(|c| ss::Key::from_password(*c, b"fuzz"))
        .collect();
    // One key or all three (the trial-opening path), chosen by the first byte.
    let keys = if control & 1 == 0 {
        keys[usize::from(control >> 1) % 3..][..1].to_vec()
    } else {
        keys
    };
    // Read sizes from the control byte: 1 to 256 bytes at a time.
    let step = usize::from(control).max(1);

    let mut d = ss::Decryptor::any(&keys);
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
        assert!(d.wants() <= ss::MAX_PAYLOAD + ss::TAG_LEN);
    }
    if failed {
        assert!(d.finish().is_err());
        assert!(matches!(
            d.next_chunk(&mut &b"x"[..]),
            Err(ss::Error::Failed(_))
        ));
    }

    if let Ok(Some((t, n))) = ss::parse_address(data) {
        assert!(n <= data.len());
        assert_eq!(
            ss::encode_address(&t).expect("a parsed address encodes"),
            &data[..n]
        );
    }

    // The fuzz input as plaintext: sealed, then opened in reads of `step` bytes.
    let key = &keys[0];
    let salt = vec![control; key.cipher().salt_len()];
    let mut e = ss::Encryptor::new(key, &salt).expect("salt of the right length");
    let mut wire = Vec::new();
    e.seal(data, &mut wire);
    let mut d = ss::Decryptor::new(key);
    let mut out = Vec::new();
    for read in wire.chunks(step) {
        d.feed(read, &mut out).expect("our own sealing opens");
    }
    d.finish().expect("ends between chunks");
    assert_eq!(out, data);
});
