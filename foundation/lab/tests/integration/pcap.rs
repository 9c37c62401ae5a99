//! Captures through the real lab: the size limit holds while the link keeps carrying
//! traffic, and the snap length cuts packets. Needs root.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use wirebench_lab::pcap::{PcapOptions, RECORD_HEADER};
use wirebench_lab::{Lab, SERVER_ADDR};
use wirebench_link::LinkSpec;

/// One lab per process at a time: namespace names carry the process id.
static LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Sends `bytes` from the client host to the server host; returns what arrived.
fn transfer(lab: &Lab, bytes: usize) -> usize {
    let listener = std::thread::scope(|s| {
        s.spawn(|| {
            lab.server().enter().unwrap();
            TcpListener::bind((SERVER_ADDR, 0)).unwrap()
        })
        .join()
        .unwrap()
    });
    let port = listener.local_addr().unwrap().port();
    std::thread::scope(|s| {
        let rx = s.spawn(|| {
            let (mut c, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            c.read_to_end(&mut got).unwrap();
            got.len()
        });
        s.spawn(|| {
            lab.client().enter().unwrap();
            let mut c = TcpStream::connect((SERVER_ADDR, port)).unwrap();
            c.write_all(&vec![7u8; bytes]).unwrap();
        })
        .join()
        .unwrap();
        rx.join().unwrap()
    })
}

/// The capture's records: (caplen, original length).
fn records(file: &[u8]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= file.len() {
        let cap = u32::from_le_bytes(file[at + 8..at + 12].try_into().unwrap());
        let orig = u32::from_le_bytes(file[at + 12..at + 16].try_into().unwrap());
        out.push((cap, orig));
        at += 16 + cap as usize;
    }
    assert_eq!(at, file.len(), "the file ends with a whole record");
    out
}

#[test]
fn capture_stops_at_its_limit_and_the_link_carries_on() {
    let _one = LAB.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let opts = PcapOptions {
        path: dir.path().join("cap.pcap"),
        snaplen: 65_535,
        limit: 20_000,
    };
    let params = LinkSpec::parse("100Mbit/1ms").unwrap().to_params();
    let lab = Lab::create(params.clone(), params, 1, Some(&opts)).expect("lab (needs root)");
    // 1 MB is ~700 full-size packets: far beyond 20 kB of capture.
    assert_eq!(
        transfer(&lab, 1_000_000),
        1_000_000,
        "the link kept working"
    );
    let c = lab.counters();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let stats = lab.pcap_stats().expect("a capture");
    assert!(
        stats
            .stopped
            .as_deref()
            .is_some_and(|s| s.contains("limit")),
        "{stats:?}"
    );
    assert!(c.up.delivered_packets > 500, "{}", c.up.delivered_packets);
    drop(lab);
    let file = std::fs::read(&opts.path).unwrap();
    assert!(file.len() as u64 <= opts.limit, "{} bytes", file.len());
    assert_eq!(file.len() as u64, stats.bytes);
    let recs = records(&file);
    assert_eq!(recs.len() as u64, stats.packets);
    // Nearly full: the next full-size packet would not have fitted.
    assert!(file.len() as u64 + RECORD_HEADER + 1500 > opts.limit);
}

#[test]
fn snaplen_is_in_the_header_and_cuts_every_packet() {
    let _one = LAB.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let opts = PcapOptions {
        path: dir.path().join("snap.pcap"),
        snaplen: 64,
        limit: 50 << 20,
    };
    let params = LinkSpec::parse("100Mbit/1ms").unwrap().to_params();
    let lab = Lab::create(params.clone(), params, 1, Some(&opts)).expect("lab (needs root)");
    assert_eq!(transfer(&lab, 200_000), 200_000);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let stats = lab.pcap_stats().unwrap();
    assert_eq!(stats.stopped, None);
    drop(lab);
    let file = std::fs::read(&opts.path).unwrap();
    assert_eq!(u32::from_le_bytes(file[16..20].try_into().unwrap()), 64);
    let recs = records(&file);
    assert!(recs.len() > 100, "{} packets", recs.len());
    assert!(recs.iter().all(|(cap, orig)| *cap == (*orig).min(64)));
    assert!(
        recs.iter().any(|(_, orig)| *orig > 1000),
        "full-size packets were cut"
    );
}
