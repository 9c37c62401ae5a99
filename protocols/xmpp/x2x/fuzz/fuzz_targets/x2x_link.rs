//! The x2x gateway engine on arbitrary bytes from the peer gateway (XEP-0361 link):
//! first byte picks the compression mode, the rest arrives in two pieces. Errors close
//! the link; a panic or unbounded growth is a bug. Also the outbound side: the same bytes
//! as a stanza from the local server.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wirebench_x2x::{Compression, Engine, EngineConfig};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut cfg = EngineConfig::new(&["a.test"], &["b.test"], 1);
    cfg.compression = match mode % 3 {
        0 => Compression::None,
        1 => Compression::Zlib,
        _ => Compression::ZlibDict,
    };
    cfg.max_stanza = 4096;
    let mut e = Engine::new(cfg);
    e.link_up(0);
    let split = rest.first().map_or(0, |&b| b as usize).min(rest.len());
    let (a, b) = rest.split_at(split);
    let _ = e.handle_link_bytes(1, a);
    let _ = e.handle_link_bytes(2, b);
    let _ = e.enqueue_outbound(rest);
    e.handle_timeout(10_000_000_000);
    while e.poll_link_transmit().is_some() {}
    while e.poll_event().is_some() {}
    while e.poll_delivery_any().is_some() {}
});
