//! BOSH (XEP-0124/0206): arbitrary bytes as request bodies to a connection manager (to a
//! fresh one and inside an established session), as the XMPP server's stream behind it,
//! and as a response body to a client. Errors are expected; a panic is a bug.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_xmpp_web::fuzz_bosh(data);
});
