//! Properties: requests round-trip, and no input makes a parser panic.

use bytes::Bytes;
use proptest::prelude::*;
use wirebench_soap::{
    Request, Response, encode_request, encode_response, parse_request, parse_response,
};

/// A valid envelope of either kind, to mutate.
fn envelope() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<Option<u64>>(),
        any::<bool>(),
        prop::collection::vec(any::<u8>(), 0..64),
        0..4u8,
    )
        .prop_map(|(seq, echo, data, kind)| {
            match kind {
                0 => encode_request(seq, echo, &data),
                1 => encode_response(&Response::Echo(Bytes::from(data))),
                2 => encode_response(&Response::Sink),
                _ => encode_response(&Response::Fault {
                    code: "soap:Client".into(),
                    text: String::from_utf8_lossy(&data).into_owned(),
                }),
            }
            .to_vec()
        })
}

/// One edit: overwrite, insert or delete a byte, or splice in an XML fragment.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Splice(usize, &'static str),
}

fn edit() -> impl Strategy<Value = Edit> {
    let frag = prop::sample::select(vec![
        "<",
        ">",
        "/",
        "&",
        "&amp;",
        "&#0;",
        "&#x110000;",
        "<!DOCTYPE x>",
        "<![CDATA[",
        "]]>",
        "<!--",
        "-->",
        "<?pi?>",
        "xmlns:wb=\"urn:x\"",
        " xmlns=\"urn:wirebench:bench\"",
        "<wb:seq>1</wb:seq>",
        "<wb:data>AA==</wb:data>",
        "</wb:data>",
        "<soap:Body>",
        "</soap:Body>",
        "<soap:Header>",
        "=",
        "\"",
        "'",
        "\u{feff}",
        "\0",
        "\u{ffff}",
    ]);
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), frag).prop_map(|(i, f)| Edit::Splice(i, f)),
    ]
}

fn apply(mut v: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = v.len();
        match *e {
            Edit::Set(i, b) if n > 0 => v[i % n] = b,
            Edit::Insert(i, b) => v.insert(i % (n + 1), b),
            Edit::Delete(i) if n > 0 => {
                v.remove(i % n);
            }
            Edit::Splice(i, f) => {
                let at = i % (n + 1);
                v.splice(at..at, f.bytes());
            }
            _ => {}
        }
    }
    v
}

/// Parses both ways; whatever parses as a request re-encodes to the same request.
fn check(input: &[u8]) {
    let _ = parse_response(input);
    if let Ok(req) = parse_request(input) {
        let again = encode_request(req.seq, req.echo, &req.data);
        assert_eq!(parse_request(&again).as_ref(), Ok(&req));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn request_round_trips(
        seq in any::<Option<u64>>(),
        echo in any::<bool>(),
        data in prop::collection::vec(any::<u8>(), 0..=4096),
    ) {
        let xml = encode_request(seq, echo, &data);
        prop_assert!(xml.len() <= wirebench_soap::max_envelope(data.len()));
        prop_assert_eq!(
            parse_request(&xml),
            Ok(Request { seq, echo, data: Bytes::from(data) })
        );
    }

    #[test]
    fn response_round_trips(
        data in prop::collection::vec(any::<u8>(), 0..=4096),
        code in "[a-zA-Z:]{1,20}",
        text in any::<String>(),
    ) {
        let r = Response::Echo(Bytes::from(data));
        prop_assert_eq!(parse_response(&encode_response(&r)), Ok(r));
        // Text survives exactly, apart from characters XML 1.0 cannot carry.
        let clean: String = text
            .chars()
            .map(|c| match c {
                '\t' | '\n' | '\r' => c,
                '\0'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => '\u{fffd}',
                _ => c,
            })
            .collect();
        let r = Response::Fault { code: code.clone(), text };
        let parsed = parse_response(&encode_response(&r)).unwrap();
        // Only `soap:` is bound in our envelopes, and it is kept; other prefixes are kept as
        // written, so the code survives exactly.
        prop_assert_eq!(parsed, Response::Fault { code, text: clean });
    }

    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..2048)) {
        check(&input);
    }

    #[test]
    fn arbitrary_text_never_panics(input in "(<|>|/|=|\"|&|;|:|[a-z]|soap|wb|Envelope|Body|Echo|data| |xmlns)*") {
        check(input.as_bytes());
    }

    #[test]
    fn mutated_envelopes_never_panic(
        base in envelope(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        check(&apply(base, &edits));
    }
}
