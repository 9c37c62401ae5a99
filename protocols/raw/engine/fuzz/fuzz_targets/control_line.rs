//! Control-channel line splitting and request parsing on arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_raw::control::{parse_request, LineBuffer};

fuzz_target!(|data: &[u8]| {
    let mut lb = LineBuffer::default();
    lb.push(data);
    while let Ok(Some(line)) = lb.next_line() {
        let _ = parse_request(&line);
    }
});
