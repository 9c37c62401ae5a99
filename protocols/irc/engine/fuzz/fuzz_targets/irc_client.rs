//! The IRC client engine on arbitrary server bytes (RFC 1459/2812 lines): never a panic,
//! never a line buffer beyond the 512-byte limit.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_irc::fuzz_input(data);
});
