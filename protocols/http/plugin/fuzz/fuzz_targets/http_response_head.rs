//! The HTTP/1.1 client's response-head reader (`protocols/http/plugin/src/h1.rs`) on
//! arbitrary server bytes: never a panic, a complete head lies inside the input and its
//! body length never exceeds the limit it was given.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limit = 1000;
    if let Ok(Some(h)) = wirebench_plugin_http::h1::parse_head(data, limit) {
        assert!(h.len <= data.len());
        assert!(h.body_len <= limit);
        assert!((200..1000).contains(&h.status));
    }
});
