//! The XMPP server session engine on arbitrary client bytes, with and without a valid
//! stream header and a login first: never a panic, never unbounded memory.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_xmpp::server::fuzz_input(data);
});
