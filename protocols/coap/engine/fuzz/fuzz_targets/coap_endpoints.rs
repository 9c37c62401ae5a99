//! The CoAP codec and both endpoints on arbitrary datagrams (RFC 7252, RFC 7959): never
//! a panic, every datagram the decoder accepts encodes back to its own bytes, the
//! endpoints' state bounded.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_coap_engine::fuzz_input(data);
});
