//! Memory stays within a small multiple of the input, valid or hostile.
//!
//! A counting global allocator records the peak of live heap bytes; this file is its own
//! test binary and holds a single test, so no other thread allocates meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(live, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Peak extra heap while running `f`.
fn peak(f: impl FnOnce()) -> usize {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    f();
    PEAK.load(Relaxed) - base
}

#[test]
fn peak_memory_is_a_small_multiple_of_the_input() {
    let env = r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:wb="urn:wirebench:bench">"#;
    let payload: Vec<u8> = (0..3_000_000u32).map(|i| i as u8).collect();
    let valid = wirebench_soap::encode_request(Some(1), true, &payload).to_vec();
    let response = wirebench_soap::encode_response(&wirebench_soap::Response::Echo(
        bytes::Bytes::from(payload),
    ))
    .to_vec();
    // Base64 with a line break after every character: the stripped copy is half the input.
    let wrapped = {
        let s = std::str::from_utf8(&valid).unwrap();
        let (a, rest) = s.split_once("<wb:data>").unwrap();
        let (b64, z) = rest.split_once("</wb:data>").unwrap();
        let spread: String = b64.chars().flat_map(|c| [c, '\n']).collect();
        format!("{a}<wb:data>{spread}</wb:data>{z}").into_bytes()
    };
    let fault = format!(
        "{env}<soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>{}</faultstring></soap:Fault></soap:Body></soap:Envelope>",
        "&amp;".repeat(1_000_000)
    )
    .into_bytes();
    let hostile: Vec<(&str, Vec<u8>)> = vec![
        ("deep", format!("{env}{}", "<a>".repeat(1_000_000)).into_bytes()),
        (
            "namespaces",
            format!(
                "{env}{}",
                (0..100_000).map(|i| format!("<a xmlns:p{i}=\"urn:x\">")).collect::<String>()
            )
            .into_bytes(),
        ),
        (
            "attributes",
            format!(
                "{env}<soap:Header><h {}/></soap:Header>",
                (0..200_000).map(|i| format!("a{i}=\"v\" ")).collect::<String>()
            )
            .into_bytes(),
        ),
        (
            "char refs",
            format!(
                "{env}<soap:Body><wb:Echo><wb:data>{}</wb:data></wb:Echo></soap:Body></soap:Envelope>",
                "&#65;".repeat(1_000_000)
            )
            .into_bytes(),
        ),
        (
            "siblings",
            format!(
                "{env}<soap:Header>{}</soap:Header>",
                "<x:h xmlns:x=\"urn:x\"/>".repeat(200_000)
            )
            .into_bytes(),
        ),
        ("text", vec![b'x'; 4_000_000]),
    ];
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("valid", valid),
        ("response", response),
        ("wrapped", wrapped),
        ("fault", fault),
    ];
    cases.extend(hostile);
    for (name, input) in &cases {
        let used = peak(|| {
            let _ = std::hint::black_box(wirebench_soap::parse_request(input));
            let _ = std::hint::black_box(wirebench_soap::parse_response(input));
        });
        let limit = 2 * input.len() + 64 * 1024;
        assert!(
            used <= limit,
            "{name}: {used} bytes for {} bytes of input (limit {limit})",
            input.len()
        );
        eprintln!("{name}: input {} bytes, peak {used} bytes", input.len());
    }
}
