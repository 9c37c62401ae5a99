//! The raw frame decoder on arbitrary bytes, split at an arbitrary point: must never
//! panic, and a stream it accepted must end at a frame boundary or say it did not.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_raw::raw::{Decoder, Pattern};

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let split = data[0] as usize % data.len();
    let pattern = Pattern::new(1, 4096);
    let mut d = Decoder::new(4096, Some(&pattern));
    let mut frames = 0u64;
    for chunk in [&data[1..split.max(1)], &data[split.max(1)..]] {
        if d.feed(chunk, |_| frames += 1).is_err() {
            return;
        }
    }
    let _ = d.at_boundary();
});
