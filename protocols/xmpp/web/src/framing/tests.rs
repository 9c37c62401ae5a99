use super::*;
use crate::testkit::{accounts, client, engine, events, server, transmit};
use proptest::prelude::*;
use wirebench_engine::Engine as _;
use wirebench_xmpp::{Client, Event, Mechanism, ServerSession};

/// Client engine -> client framing -> messages -> gateway framing -> server session, and
/// back; returns every message that crossed, each way.
struct Pair {
    c: Client,
    s: ServerSession,
    cf: Framing,
    gf: Framing,
    up: Vec<String>,
    down: Vec<String>,
    seen: Vec<Event>,
}

impl Pair {
    fn new(mech: Mechanism) -> Pair {
        Pair {
            c: client(mech),
            s: server(),
            cf: Framing::new(65536),
            gf: Framing::new(65536),
            up: Vec::new(),
            down: Vec::new(),
            seen: Vec::new(),
        }
    }

    fn run(&mut self) {
        let dir = accounts();
        loop {
            let mut moved = false;
            while let Some(b) = transmit(&mut self.c) {
                moved = true;
                for m in self.cf.stream_to_messages(&b).unwrap() {
                    let bytes = self.gf.message_to_stream(m.as_bytes()).unwrap();
                    self.up.push(m);
                    let Ok(()) = engine(&mut self.s, &dir).handle_input(0, &bytes);
                }
            }
            while let Some(b) = transmit(&mut engine(&mut self.s, &dir)) {
                moved = true;
                for m in self.gf.stream_to_messages(&b).unwrap() {
                    let bytes = self.cf.message_to_stream(m.as_bytes()).unwrap();
                    self.down.push(m);
                    self.c.handle_input(0, &bytes).unwrap();
                }
            }
            while engine(&mut self.s, &dir).poll_event().is_some() {}
            events(&mut self.c, &mut self.seen);
            if !moved {
                break;
            }
        }
    }
}

#[test]
fn a_client_logs_in_and_pings_over_rfc7395_framing() {
    for mech in [Mechanism::Plain, Mechanism::ScramSha256] {
        let mut p = Pair::new(mech);
        p.run();
        assert!(
            p.seen.contains(&Event::SessionEstablished),
            "{mech:?}: {:?}",
            p.seen
        );
        // Every message is one element; the first each way is <open/>, and there are two
        // of each (one after SASL success).
        assert!(p.up[0].starts_with("<open xmlns='urn:ietf:params:xml:ns:xmpp-framing'"));
        assert!(p.up[0].contains("to='example.com'") && p.up[0].contains("version='1.0'"));
        assert!(p.down[0].starts_with("<open ") && p.down[0].contains("from='example.com'"));
        assert_eq!(p.up.iter().filter(|m| m.starts_with("<open ")).count(), 2);
        assert_eq!(p.down.iter().filter(|m| m.starts_with("<open ")).count(), 2);
        for m in p.up.iter().chain(&p.down) {
            assert!(
                crate::xml::one_element(m.as_bytes(), 65536)
                    .unwrap()
                    .is_some(),
                "{m}"
            );
            assert!(!m.contains("stream:stream"), "{m}");
        }
        // Stream features are fully qualified (RFC 7395 §3.3.3), stanzas too.
        let features = p
            .down
            .iter()
            .find(|m| m.starts_with("<stream:features"))
            .unwrap();
        assert!(features.contains("xmlns:stream='http://etherx.jabber.org/streams'"));
        let iq = p.down.iter().find(|m| m.starts_with("<iq")).unwrap();
        assert!(iq.contains("xmlns='jabber:client'"), "{iq}");

        p.c.send_ping("example.com", "ping1");
        p.run();
        assert!(
            p.seen.contains(&Event::IqResult { id: "ping1".into() }),
            "{:?}",
            p.seen
        );

        p.c.close();
        p.run();
        assert!(p.up.last().unwrap().starts_with("<close "));
        assert!(p.down.last().unwrap().starts_with("<close "));
        assert!(p.cf.is_closed() && p.gf.is_closed());
        assert!(p.seen.contains(&Event::Closed), "{:?}", p.seen);
    }
}

#[test]
fn bad_messages_get_clear_errors() {
    let open = b"<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='x' version='1.0'/>";
    let mut f = Framing::new(1024);
    // Nothing before <open/>.
    let e = f
        .message_to_stream(b"<message xmlns='jabber:client'/>")
        .unwrap_err();
    assert!(e.to_string().contains("before <open/>"), "{e}");
    f.message_to_stream(open).unwrap();
    for (msg, want) in [
        (&b"<a/><b/>"[..], "more than one element"),
        (b"<message><body>x</message>", "malformed"),
        (b"<message>", "one complete element"),
        (b"</stream:stream>", "malformed"),
        (b"<!-- c --><a/>", "malformed"),
        (b"<a>\x00", "one complete element"),
        (
            b"<stream:stream xmlns:stream='http://etherx.jabber.org/streams'>",
            "complete element",
        ),
    ] {
        let e = f.message_to_stream(msg).unwrap_err().to_string();
        assert!(e.contains(want), "{:?}: {e}", String::from_utf8_lossy(msg));
    }
    let big = format!("<message>{}</message>", "x".repeat(2000));
    assert!(matches!(
        f.message_to_stream(big.as_bytes()),
        Err(WebError::TooLarge { limit: 1024 })
    ));
    // Whitespace is harmless and yields nothing.
    assert_eq!(f.message_to_stream(b"  \n").unwrap(), b"");
    assert_eq!(
        f.message_to_stream(b"<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>")
            .unwrap(),
        b"</stream:stream>"
    );
    assert!(f.message_to_stream(open).is_err());
    // An <open> with content is not RFC 7395's.
    let mut g = Framing::new(1024);
    assert!(
        g.message_to_stream(b"<open xmlns='urn:ietf:params:xml:ns:xmpp-framing'><x/></open>")
            .is_err()
    );
}

#[test]
fn the_stream_side_keeps_partial_elements_and_refuses_garbage() {
    let mut f = Framing::new(1024);
    let h = b"<?xml version='1.0'?><stream:stream xmlns='jabber:client' \
              xmlns:stream='http://etherx.jabber.org/streams' id='i' from='d' version='1.0'>";
    let all = [
        &h[..],
        b"<message to='a'><body>hi</body></message></stream:stream>",
    ]
    .concat();
    let mut msgs = Vec::new();
    for b in all.chunks(3) {
        msgs.extend(f.stream_to_messages(b).unwrap());
    }
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    assert_eq!(
        msgs[0],
        "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' from='d' id='i' version='1.0'/>"
    );
    assert_eq!(
        msgs[1],
        "<message xmlns='jabber:client' to='a'><body>hi</body></message>"
    );
    assert!(msgs[2].starts_with("<close "));
    assert!(f.stream_to_messages(b"<x/>").is_err());
    let mut g = Framing::new(1024);
    assert!(g.stream_to_messages(b"<a><b></a>").is_err() || g.stream_to_messages(b"").is_ok());
    let mut k = Framing::new(64);
    let mut big = h.to_vec();
    big.extend(format!("<message>{}</message>", "x".repeat(100)).as_bytes());
    assert!(matches!(
        Framing::new(1024).stream_to_messages(&big).map(|m| m.len()),
        Ok(2)
    ));
    assert!(k.stream_to_messages(&big).is_err());
}

proptest! {
    /// Any bytes: no panic, and nothing held beyond the limit.
    #[test]
    fn arbitrary_input_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600), split in 0usize..600) {
        crate::fuzz_framing(&bytes);
        let mut f = Framing::new(256);
        let at = split.min(bytes.len());
        let _ = f.stream_to_messages(&bytes[..at]);
        let _ = f.stream_to_messages(&bytes[at..]);
        prop_assert!(f.out.buffered() <= 256 + bytes.len());
    }

    /// Stanzas of any text survive the trip through messages and back.
    #[test]
    fn text_round_trips(body in "[ -~]{0,200}") {
        let mut esc = String::new();
        wirebench_xmpp::stanza::escape_into(&mut esc, &body);
        let stanza = format!("<message to='b@x'><body>{esc}</body></message>");
        let mut a = Framing::new(4096);
        let mut b = Framing::new(4096);
        let h = "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='x' version='1.0'>";
        let msgs = a.stream_to_messages(format!("{h}{stanza}").as_bytes()).unwrap();
        prop_assert_eq!(msgs.len(), 2);
        b.message_to_stream(msgs[0].as_bytes()).unwrap();
        let back = b.message_to_stream(msgs[1].as_bytes()).unwrap();
        let back = String::from_utf8(back).unwrap();
        prop_assert_eq!(back.replacen(" xmlns='jabber:client'", "", 1), stanza);
    }
}
