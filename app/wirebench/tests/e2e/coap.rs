//! `--protocol coap` end to end through the binary, in the lab: our client in the client
//! host, our server and libcoap's in the server host, across a 300 ms one-way link. With
//! ACK_TIMEOUT (200 ms) below the 600 ms round trip every request is sent again though
//! its first copy arrived (coap.spurious > 0); tuned above it (1 s, RFC 7252 §4.8.1) none
//! is. The UDP flow is counted on the wire. Needs root and libcoap3-bin.

use crate::common;
use common::{lab_run_ok, m, records};

#[test]
fn coap_spurious_retransmissions_with_a_short_ack_timeout_and_none_tuned() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    lab_run_ok(&[
        "run",
        "--protocol",
        "coap",
        "--workload",
        "pingpong",
        "--payload",
        "64",
        "--rounds",
        "4",
        "--link",
        "300ms",
        "--quiet",
        "--coap-server",
        "builtin,libcoap",
        "--coap-ack-timeout",
        "200ms,1s",
        "--out",
        out.to_str().unwrap(),
    ]);

    let recs = records(&out);
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "messages.received"), 4.0, "{r}");
        assert_eq!(m(r, "messages.corrupt"), 0.0, "{r}");
        // Both crossings of the link: at least 600 ms.
        assert!(m(r, "rtt.stable") >= 0.6, "{r}");
        // The UDP flow at the client's port is what the wire counts.
        assert!(m(r, "wire.bytes") > 0.0, "{r}");
        let (re, sp) = (m(r, "coap.retransmissions"), m(r, "coap.spurious"));
        if r["params"]["coap.ack-timeout"].as_f64() == Some(0.2) {
            assert!(sp >= 4.0 && sp <= re, "short ACK_TIMEOUT: {r}");
        } else {
            assert_eq!((re, sp), (0.0, 0.0), "tuned ACK_TIMEOUT: {r}");
        }
    }
}
