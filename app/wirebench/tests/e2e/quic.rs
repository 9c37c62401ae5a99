//! `--protocol quic` end to end through the binary: our client against our server on
//! loopback (every stream mode and controller runs, messages come back whole, the qlog
//! is written), and in the lab across a 20 ms one-way link, where the first round
//! carries the handshake's round trip (RFC 9001 §4.1) and the later ones do not. The
//! UDP flow is counted on the wire. The lab test needs root.

use crate::common;
use common::{lab_run_ok, m, records, run_ok};

#[test]
fn quic_pingpong_on_loopback_echoes_every_message() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--workload",
        "pingpong",
        "--payload",
        "100",
        "--rounds",
        "20",
        "--quic-streams",
        "one,per-message",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "messages.received"), 20.0, "{r}");
        assert_eq!(m(r, "messages.corrupt"), 0.0, "{r}");
        assert_eq!(m(r, "quic.lost_packets"), 0.0, "{r}");
        let hs = m(r, "quic.handshake");
        assert!(hs > 0.0 && hs >= m(r, "quic.handshake_complete"), "{r}");
        // The first round waited for the handshake; loopback's are short anyway.
        assert!(m(r, "rtt.first") >= m(r, "quic.handshake_complete"), "{r}");
        assert!(m(r, "rtt.stable") < 0.5, "{r}");
    }
    let qlog = std::fs::read_dir(out.join("peers"))
        .unwrap()
        .map(|d| d.unwrap().path().join("client.sqlog"))
        .next()
        .unwrap();
    let text = std::fs::read_to_string(&qlog).unwrap();
    assert!(text.contains("packet_sent"), "{}", qlog.display());
}

#[test]
fn quic_stream_reaches_the_sink_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--workload",
        "stream",
        "--payload",
        "16KiB",
        "--count",
        "256",
        "--quic-cc",
        "cubic,bbr",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "messages.received"), 256.0, "{r}");
        // 4 MiB on loopback: well above a megabit even on a busy machine.
        assert!(m(r, "throughput.bits_per_s") > 1e6, "{r}");
    }
}

#[test]
fn quic_first_round_over_a_link_carries_the_handshake() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    lab_run_ok(&[
        "run",
        "--protocol",
        "quic",
        "--workload",
        "pingpong",
        "--payload",
        "64",
        "--rounds",
        "5",
        "--link",
        "10Mbit/20ms",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(m(r, "messages.received"), 5.0, "{r}");
    // One round trip is 40 ms; the handshake completes after one and is confirmed
    // after two; the first echo comes a round trip after the handshake completed.
    let (first, stable) = (m(r, "rtt.first"), m(r, "rtt.stable"));
    assert!(m(r, "quic.handshake_complete") >= 0.039, "{r}");
    assert!(m(r, "quic.handshake") >= 0.079, "{r}");
    assert!(first >= 0.079, "{r}");
    assert!((0.039..0.5).contains(&stable), "{r}");
    assert!(first >= stable + 0.035, "{r}");
    assert!(m(r, "quic.path_rtt") >= 0.039, "{r}");
    assert!(m(r, "wire.bytes") > 0.0, "{r}");
    // The padded Initial alone is 1200 bytes (RFC 9000 §14.1).
    assert!(m(r, "wire.bytes") > 1200.0, "{r}");
}
