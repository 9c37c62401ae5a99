//! The XMPP client engine on arbitrary server bytes, from several starting states:
//! never a panic, never unbounded memory (stanzas are capped).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_xmpp::fuzz_input(data);
});
