//! Scenario files: any text must give a scenario or a located error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_plan::Scenario;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(s) = Scenario::parse(text, "fuzz.toml") {
            let _ = wirebench_plan::plan(&s);
        }
    }
});
