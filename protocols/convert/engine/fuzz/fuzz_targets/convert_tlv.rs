//! The Convert (RFC 8803) message parser on arbitrary bytes: never a panic, never more
//! consumed than given, and whatever it accepts re-encodes to a message of the same
//! length that parses to the same TLVs. The re-encoding is byte for byte what was
//! consumed but for the "Unassigned" bits RFC 8803 makes a receiver ignore, and every
//! strict prefix of what was consumed is "incomplete", never an error.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_convert as convert;

/// Offsets of the Unassigned bits in `msg`, a message `parse` accepted: the 16 bits
/// after the length of each Extended TCP Header and Supported TCP Extensions TLV.
fn ignored_bytes(msg: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = convert::HEADER_LEN;
    while at < msg.len() {
        if matches!(
            msg[at],
            convert::EXTENDED_TCP_HEADER | convert::SUPPORTED_TCP_EXTENSIONS
        ) {
            out.extend([at + 2, at + 3]);
        }
        at += usize::from(msg[at + 1]) * 4;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let (tlvs, n) = match convert::parse(data) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return,
        Err(e) => {
            // A converter answers every bad message; the code must be one RFC 8803 names.
            assert!(!matches!(e.reply_code(), convert::ErrorCode::Unassigned(_)));
            return;
        }
    };
    assert!(n <= data.len(), "consumed {n} of {}", data.len());
    assert!(n <= convert::MAX_MESSAGE);
    let again = convert::encode(&tlvs).expect("parsed TLVs encode");
    assert_eq!(again.len(), n);
    let (tlvs2, n2) = convert::parse(&again)
        .expect("our own encoding parses")
        .expect("our own encoding is complete");
    assert_eq!(tlvs2, tlvs);
    assert_eq!(n2, n);
    let ignored = ignored_bytes(&again);
    for (i, (a, b)) in data[..n].iter().zip(&again).enumerate() {
        assert!(
            a == b || ignored.contains(&i),
            "byte {i}: {a:#04x} vs {b:#04x}"
        );
    }
    for i in 0..n {
        assert!(
            matches!(convert::parse(&data[..i]), Ok(None)),
            "prefix of {i} bytes"
        );
    }
    let _ = convert::connect_target(&tlvs);
});
