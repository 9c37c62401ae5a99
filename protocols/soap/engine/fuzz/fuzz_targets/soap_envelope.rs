//! The SOAP 1.1 envelope parsers on arbitrary bytes (a client's request, a server's
//! response): never a panic, and whatever parses re-encodes to an envelope that parses
//! back to the same value (faults: to some fault, since characters XML cannot carry are
//! replaced when encoding).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_soap::{Response, encode_request, encode_response, parse_request, parse_response};

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = parse_request(data) {
        let again = encode_request(req.seq, req.echo, &req.data);
        assert_eq!(parse_request(&again), Ok(req));
    }
    if let Ok(resp) = parse_response(data) {
        let again = parse_response(&encode_response(&resp));
        match resp {
            Response::Fault { .. } => assert!(matches!(again, Ok(Response::Fault { .. }))),
            _ => assert_eq!(again, Ok(resp)),
        }
    }
});
