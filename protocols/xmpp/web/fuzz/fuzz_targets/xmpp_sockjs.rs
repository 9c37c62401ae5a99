//! SockJS 0.3.3: arbitrary bytes as client data (xhr_send / jsonp_send / websocket) to a
//! session, as messages and close reasons from the application, and as response bodies to
//! the client's frame readers of every receiving transport. Errors are expected; a panic
//! is a bug.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    wirebench_xmpp_web::sockjs::fuzz(data);
});
