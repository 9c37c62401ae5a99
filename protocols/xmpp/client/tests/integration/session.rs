//! The blocking XMPP driver against misbehaving servers on loopback: every case ends the
//! session with an error that names the server and the problem, never a panic or a hang.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;
use wirebench_xmpp::{ClientConfig, TlsMode};
use wirebench_xmpp_client::session::XmppSession;

/// A one-shot server that reads the client's stream header and answers `reply`, then
/// closes (or lingers, with `close = false`).
fn login_against(reply: &'static [u8], close: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        let _ = s.write_all(reply);
        if !close {
            std::thread::sleep(Duration::from_secs(3));
        }
    });
    let mut cfg = ClientConfig::new("alice@a.test", "secret");
    cfg.tls = TlsMode::Never;
    let err = match XmppSession::login(addr, cfg, 1, Duration::from_secs(2)) {
        Ok(_) => panic!("login against a broken server succeeded"),
        Err(e) => e.to_string(),
    };
    server.join().unwrap();
    assert!(
        err.contains(&addr.to_string()),
        "error must name the server: {err}"
    );
    err
}

const HEADER: &str = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' id='x' from='a.test' version='1.0'>";

#[test]
fn truncated_xml_then_close() {
    let reply: &'static [u8] = Box::leak(
        format!("{HEADER}<stream:features><mechanisms xmlns='urn:ietf:par")
            .into_bytes()
            .into_boxed_slice(),
    );
    let err = login_against(reply, true);
    assert!(err.contains("closed"), "{err}");
}

#[test]
fn garbage_instead_of_xml() {
    let err = login_against(b"HTTP/1.1 400 Bad Request\r\n\r\n", true);
    assert!(!err.is_empty());
}

#[test]
fn bad_sasl_is_an_auth_error() {
    let reply: &'static [u8] = Box::leak(
        format!(
            "{HEADER}<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>PLAIN</mechanism></mechanisms></stream:features>\
             <failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/></failure>"
        )
        .into_bytes()
        .into_boxed_slice(),
    );
    let err = login_against(reply, false);
    assert!(err.contains("not-authorized"), "{err}");
}

#[test]
fn oversize_stanza_is_refused_with_its_limit() {
    let mut big = format!("{HEADER}<message><body>");
    big.push_str(&"x".repeat(300 * 1024));
    let reply: &'static [u8] = Box::leak(big.into_bytes().into_boxed_slice());
    let err = login_against(reply, false);
    assert!(err.contains("limit") || err.contains("262144"), "{err}");
}

#[test]
fn silent_server_times_out() {
    let err = login_against(b"", false);
    assert!(err.contains("no session establishment"), "{err}");
}
