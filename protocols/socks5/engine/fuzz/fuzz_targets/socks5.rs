//! Every SOCKS5 (RFC 1928) and username/password (RFC 1929) parser, client and server
//! side, on arbitrary bytes: never a panic, never more consumed than given, and whatever
//! one accepts re-encodes to a message that parses to the same value. Where the parse is
//! strict enough to be canonical, the re-encoding is also byte for byte what was consumed,
//! and each of its strict prefixes is "incomplete", never an error.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_socks5 as s5;

/// Checks one parser's result on `data`; `encode` rebuilds the message from the value.
/// `canonical` says the consumed bytes must equal the re-encoding (false only where
/// several wire values mean the same thing).
fn check<T: PartialEq + std::fmt::Debug>(
    data: &[u8],
    parse: impl Fn(&[u8]) -> Result<Option<(T, usize)>, s5::Error>,
    encode: impl Fn(&T) -> Vec<u8>,
    canonical: bool,
) {
    let Ok(Some((value, n))) = parse(data) else {
        return;
    };
    assert!(n <= data.len(), "consumed {n} of {}", data.len());
    let again = encode(&value);
    let (value2, n2) = parse(&again)
        .expect("our own encoding parses")
        .expect("our own encoding is complete");
    assert_eq!(value2, value);
    assert_eq!(n2, again.len());
    if canonical {
        assert_eq!(&data[..n], &again[..]);
        for i in 0..n {
            assert!(matches!(parse(&data[..i]), Ok(None)), "prefix of {i} bytes");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // Server side: what a client sends.
    check(data, s5::parse_greeting, |m| s5::greeting(m), true);
    check(
        data,
        s5::parse_userpass_request,
        |(u, p)| s5::userpass_request(u, p).expect("parsed fields are 1 to 255 bytes"),
        true,
    );
    check(
        data,
        s5::parse_request,
        |(cmd, t)| s5::request(*cmd, t).expect("a parsed target encodes"),
        true,
    );
    if let Err(e) = s5::parse_request(data) {
        // A server answers every bad request; the code must be one a client understands.
        assert!(e.reply_code().code() <= 0x08);
    }

    // Client side: what a server sends.
    check(
        data,
        s5::parse_method_choice,
        |m| s5::method_choice(*m).to_vec(),
        true,
    );
    // Any nonzero STATUS is failure, so only 0 and 1 come back out as written.
    check(
        data,
        s5::parse_userpass_reply,
        |ok| s5::userpass_reply(*ok).to_vec(),
        false,
    );
    check(data, s5::parse_reply, |(code, t)| s5::reply(*code, t), true);
});
