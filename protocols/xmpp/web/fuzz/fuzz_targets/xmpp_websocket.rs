//! RFC 7395 framing (`wirebench_xmpp_web::framing`) on arbitrary bytes, both ways: as a
//! WebSocket message from a peer and as RFC 6120 stream bytes from the local side. Errors
//! are expected; a panic or a buffer beyond the element limit is a bug.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_xmpp_web::fuzz_framing(data);
});
