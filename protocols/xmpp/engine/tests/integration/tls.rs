//! RFC 6120 §5 STARTTLS against an in-memory rustls server (self-signed certificate from
//! rcgen), then SASL PLAIN, binding and a message each way inside TLS.

use std::io::{Read, Write};

use wirebench_engine::Engine as _;
use wirebench_xmpp::{Client, ClientConfig, Event, Mechanism, State, TlsMode, XmppError};

const SERVER_HEADER: &str = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' \
    xmlns:stream='http://etherx.jabber.org/streams' id='t1' from='example.com' version='1.0'>";

use crate::common;
use common::{pki, transmit};

fn config(tls: TlsMode) -> ClientConfig {
    let mut c = ClientConfig::new("user@example.com", "pencil");
    c.tls = tls;
    c.mechanisms = vec![Mechanism::Plain];
    c.roster = false;
    c.initial_presence = false;
    c
}

/// The scripted server: answers each client turn once the marker text has arrived.
struct Server {
    tls: rustls::ServerConnection,
    seen: String,
    step: usize,
}

const STEPS: &[(&str, &str)] = &[
    (
        "<stream:stream",
        "<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>\
         <mechanism>PLAIN</mechanism></mechanisms></stream:features>",
    ),
    (
        "</auth>",
        "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>",
    ),
    (
        "<stream:stream",
        "<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></stream:features>",
    ),
    (
        "</bind></iq>",
        "<iq type='result' id='wb-bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>\
         <jid>user@example.com/wirebench</jid></bind></iq>",
    ),
    (
        "</message>",
        "<message from='bob@example.com/x' type='chat'><body>pong &amp; more</body></message>",
    ),
];

impl Server {
    fn on_plaintext(&mut self, text: &str) {
        self.seen.push_str(text);
        while let Some((marker, reply)) = STEPS.get(self.step) {
            let Some(at) = self.seen.find(marker) else {
                break;
            };
            self.seen.drain(..at + marker.len());
            let header = if *marker == "<stream:stream" {
                SERVER_HEADER
            } else {
                ""
            };
            self.tls
                .writer()
                .write_all(format!("{header}{reply}").as_bytes())
                .unwrap();
            self.step += 1;
        }
    }
}

/// Moves bytes both ways until neither side has anything to say.
fn pump(client: &mut Client, server: &mut Server) -> Result<(), XmppError> {
    for _ in 0..100 {
        let mut moved = false;
        if let Some(bytes) = transmit(client) {
            moved = true;
            let mut rd = &bytes[..];
            while !rd.is_empty() {
                server.tls.read_tls(&mut rd).unwrap();
                let st = server.tls.process_new_packets().unwrap();
                let mut buf = vec![0; st.plaintext_bytes_to_read()];
                server.tls.reader().read_exact(&mut buf).unwrap();
                server.on_plaintext(std::str::from_utf8(&buf).unwrap());
            }
        }
        let mut out = Vec::new();
        while server.tls.wants_write() {
            server.tls.write_tls(&mut out).unwrap();
        }
        if !out.is_empty() {
            moved = true;
            client.handle_input(0, &out)?;
        }
        if !moved {
            return Ok(());
        }
    }
    panic!("no quiescence after 100 rounds");
}

// RFC 6120 §5.4: STARTTLS, TLS handshake, stream restart, then a session inside TLS.
#[test]
fn rfc6120_5_starttls_then_session_and_messages_inside_tls() {
    let pki = pki("example.com");
    let mut c = Client::new(config(TlsMode::Required), Some(pki.client.clone()), 3);
    // The plaintext phase: header, features with STARTTLS, <proceed/>.
    let hello = String::from_utf8(transmit(&mut c).unwrap()).unwrap();
    assert!(hello.contains("<stream:stream to='example.com'"));
    c.handle_input(
        0,
        format!(
            "{SERVER_HEADER}<stream:features><starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'>\
             <required/></starttls></stream:features>"
        )
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(
        transmit(&mut c).unwrap(),
        b"<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>"
    );
    assert_eq!(c.state(), State::Tls);
    c.handle_input(0, b"<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
        .unwrap();
    assert_eq!(c.state(), State::Tls);
    let mut server = Server {
        tls: rustls::ServerConnection::new(pki.server.clone()).unwrap(),
        seen: String::new(),
        step: 0,
    };
    pump(&mut c, &mut server).unwrap();
    let mut events = Vec::new();
    while let Some(e) = c.poll_event() {
        events.push(e);
    }
    assert_eq!(
        events,
        [
            Event::StreamOpened { id: "t1".into() },
            Event::TlsEstablished,
            Event::StreamOpened { id: "t1".into() },
            Event::Authenticated {
                mechanism: Mechanism::Plain
            },
            Event::StreamOpened { id: "t1".into() },
            Event::Bound {
                jid: "user@example.com/wirebench".into()
            },
            Event::SessionEstablished,
        ]
    );
    c.send_message("bob@example.com", "ping", "m1").unwrap();
    pump(&mut c, &mut server).unwrap();
    assert_eq!(
        c.poll_event(),
        Some(Event::Message {
            from: "bob@example.com/x".into(),
            id: None,
            body: "pong & more".into()
        })
    );
}

// A certificate for another name fails the handshake with a TLS error, not a panic.
#[test]
fn rfc6120_5_wrong_certificate_name_is_a_tls_error() {
    let good = pki("example.com");
    let other = pki("evil.example");
    let mut c = Client::new(config(TlsMode::IfOffered), Some(good.client.clone()), 3);
    transmit(&mut c);
    c.handle_input(
        0,
        format!(
            "{SERVER_HEADER}<stream:features><starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>\
             </stream:features><proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>"
        )
        .as_bytes(),
    )
    .unwrap();
    let mut server = Server {
        tls: rustls::ServerConnection::new(other.server.clone()).unwrap(),
        seen: String::new(),
        step: 0,
    };
    // One transmit holds the plaintext <starttls/> and, after it, the ClientHello.
    let out = transmit(&mut c).unwrap();
    let starttls = b"<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>";
    assert!(out.starts_with(starttls));
    server.tls.read_tls(&mut &out[starttls.len()..]).unwrap();
    server.tls.process_new_packets().unwrap();
    let e = pump(&mut c, &mut server).unwrap_err();
    assert!(matches!(e, XmppError::Tls(_)), "{e}");
    assert_eq!(c.state(), State::Closed);
}
