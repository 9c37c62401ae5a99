//! `--protocol coap` end to end through the binary, in the lab: our client in the client
//! host, our server and libcoap's in the server host, across a 300 ms one-way link. With
//! ACK_TIMEOUT (200 ms) below the 600 ms round trip every request is sent again though
//! its first copy arrived (coap.spurious > 0); tuned above it (1 s, RFC 7252 §4.8.1) none
//! is. The UDP flow is counted on the wire. Needs root and libcoap3-bin.
//! `wirebench serve --also coap=ADDR` serves third-party clients over UDP (loopback only).

use crate::common;
use common::{Serve, lab_run_ok, m, records};

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

/// A Confirmable POST to `echo` (RFC 7252 §3: version 1, no token, Uri-Path option 11)
/// is answered by a piggybacked 2.05 with the same Message ID and payload; the server
/// binds the UDP port `--also` names, 0 for any, and says which.
#[test]
fn serve_also_coap_answers_over_udp() {
    let serve = Serve::start(
        ["--listen", "127.0.0.1:0", "--also", "coap=127.0.0.1:0"],
        "coap on udp",
    );
    let log = serve.log();
    let port: u16 = log
        .split("coap on udp 127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no port in {log}"));
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut request = vec![0x40, 0x02, 0x12, 0x34, 0xB4];
    request.extend_from_slice(b"echo");
    request.push(0xFF);
    request.extend_from_slice(b"ping over udp");
    socket.send_to(&request, ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 1500];
    let n = socket.recv(&mut buf).unwrap();
    let reply = &buf[..n];
    // ACK (type 2), code 2.05 Content, the request's Message ID.
    assert_eq!(&reply[..4], &[0x60, 0x45, 0x12, 0x34], "{reply:?}");
    let payload = reply
        .iter()
        .position(|b| *b == 0xFF)
        .map(|i| &reply[i + 1..]);
    assert_eq!(payload, Some(&b"ping over udp"[..]), "{reply:?}");
}
