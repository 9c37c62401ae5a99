//! The x2x gateway engine on arbitrary bytes from the peer gateway (XEP-0361 link): the
//! body is `wirebench_x2x::fuzz_input` (first byte picks the compression mode, the rest
//! arrives in two pieces, then the same bytes go out as a stanza from the local server).
//! Errors close the link; a panic or unbounded growth is a bug.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_x2x::fuzz_input(data);
});
