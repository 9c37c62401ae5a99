//! The zero-handshake server link (x2x, XEP-0361) end to end through the binary: real
//! Prosody servers in two lab hosts, the gateways between them over the emulated link.
//! Needs root and Prosody (`bash scripts/test.sh` installs it).

mod common;
use common::{m, records, wirebench};

fn run(args: &[&str], out: &std::path::Path) -> serde_json::Value {
    let o = wirebench()
        .args(["run", "--protocol", "xmpp", "-q", "--no-report", "--out"])
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "wirebench {args:?}: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    records(out).remove(0)
}

/// Root-needing tests fail, never pass silently, without it (CI runs as root).
fn need_root() {
    wirebench_lab::netns::check_privileges().expect(
        "this test builds network namespaces: run the suite as root (bash scripts/test.sh)",
    );
}

#[test]
fn ping_pong_over_x2x_with_fast_open() {
    need_root();
    let tmp = tempfile::tempdir().unwrap();
    let r = run(
        &[
            "--s2s",
            "x2x-tfo",
            "--link",
            "64kbit/20ms",
            "--workload",
            "pingpong",
            "--rounds",
            "5",
            "--payload",
            "10",
        ],
        &tmp.path().join("run"),
    );
    assert!(m(&r, "rtt.first") > 0.04, "two crossings of 20 ms at least");
    assert!(m(&r, "rtt.stable") < m(&r, "rtt.first") + 1.0);
    assert_eq!(m(&r, "messages.lost"), 0.0);
    // The first connection made on demand carried its stanza in the SYN, and the
    // server accepted it (TCP_INFO), thanks to the cookie fetched at start-up.
    assert!(m(&r, "x2x.tfo_used") >= 1.0, "{}", r["metrics"]);
    // Compressed with the preset dictionary: far below the ~115 B of plain XML.
    assert!(m(&r, "x2x.bytes_per_stanza") < 60.0, "{}", r["metrics"]);
}

#[test]
fn a_thousand_stanzas_cross_two_link_outages_exactly_once_in_order() {
    need_root();
    let tmp = tempfile::tempdir().unwrap();
    let r = run(
        &[
            "--s2s",
            "x2x-tfo",
            "--workload",
            "stream",
            "--count",
            "1000",
            "--payload",
            "10",
            "--link",
            "rate=9600bit,delay=50ms,outage=6s+2s,outage=12s+2s",
            "--timeout",
            "60s",
        ],
        &tmp.path().join("run"),
    );
    assert_eq!(m(&r, "messages.received"), 1000.0);
    assert_eq!(m(&r, "messages.lost"), 0.0);
    assert_eq!(m(&r, "messages.duplicated"), 0.0);
    assert_eq!(m(&r, "messages.reordered"), 0.0);
    assert!(
        m(&r, "link.dropped.outage") >= 1.0,
        "the outages must have hit the flood: {}",
        r["metrics"]
    );
}
