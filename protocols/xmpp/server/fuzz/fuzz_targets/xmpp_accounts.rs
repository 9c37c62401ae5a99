//! The built-in XMPP server's users and roster file parsers on arbitrary text: an error
//! names the file and line, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_xmpp_server::accounts::{parse_rosters, parse_users};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = parse_users(&text, "f") {
        assert!(e.starts_with("f:"), "{e}");
    }
    if let Err(e) = parse_rosters(&text, "f", "a.test") {
        assert!(e.starts_with("f:"), "{e}");
    }
});
