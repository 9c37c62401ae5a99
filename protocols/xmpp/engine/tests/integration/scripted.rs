//! Scripted-server tests of the client engine (RFC 6120 negotiation without TLS, RFC 6121
//! session set-up, runtime stanzas, failure cases): canned server bytes in, exact client
//! bytes and events out.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use proptest::prelude::*;
use wirebench_engine::Engine as _;
use wirebench_xmpp::{Client, ClientConfig, Event, Mechanism, State, TlsMode, XmppError};

const CLIENT_HEADER: &str = "<?xml version='1.0'?><stream:stream to='example.com' \
    version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>";
const SERVER_HEADER: &str = "<?xml version='1.0'?><stream:stream \
    xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' id='s1' \
    from='example.com' version='1.0'>";
const FEATURES_SASL: &str = "<stream:features><starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>\
    <mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism>\
    <mechanism>PLAIN</mechanism></mechanisms></stream:features>";
const FEATURES_BIND: &str = "<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/>\
    <session xmlns='urn:ietf:params:xml:ns:xmpp-session'/></stream:features>";
const NONCE: &str = "fyko+d2lbbFgONRv9qkxdawL";
const SERVER_FIRST: &str = "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096";
const CLIENT_FINAL: &str =
    "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=";
const SERVER_FINAL: &str = "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=";

fn config() -> ClientConfig {
    let mut c = ClientConfig::new("user@example.com", "pencil");
    c.tls = TlsMode::Never;
    c.mechanisms = vec![Mechanism::ScramSha1, Mechanism::Plain];
    c.resource = "bench".into();
    c
}

struct Run {
    c: Client,
    events: Vec<Event>,
}

impl Run {
    fn new(cfg: ClientConfig) -> Run {
        // One cache for all tests: PBKDF2 runs once, not per test case (debug builds).
        static CACHE: std::sync::OnceLock<wirebench_xmpp::ScramCache> = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(wirebench_xmpp::ScramCache::new).clone();
        let mut c = Client::new(cfg, None, 7).with_scram_cache(cache);
        c.set_client_nonce(NONCE);
        Run {
            c,
            events: Vec::new(),
        }
    }
    fn feed(&mut self, s: &str) -> Result<(), XmppError> {
        let r = self.c.handle_input(0, s.as_bytes());
        while let Some(e) = self.c.poll_event() {
            self.events.push(e);
        }
        r
    }
    fn sent(&mut self) -> String {
        let mut out = Vec::new();
        self.c.poll_transmit(0, &mut out);
        String::from_utf8(out).unwrap()
    }
}

fn sasl(name: &str, data: &str) -> String {
    format!(
        "<{name} xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>{}</{name}>",
        B64.encode(data)
    )
}

/// The server's side of a full SCRAM-SHA-1 login, in order, one entry per client turn.
fn login_script() -> Vec<String> {
    vec![
        format!("{SERVER_HEADER}{FEATURES_SASL}"),
        sasl("challenge", SERVER_FIRST),
        sasl("success", SERVER_FINAL),
        format!("{SERVER_HEADER}{FEATURES_BIND}"),
        "<iq type='result' id='wb-bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>\
         <jid>user@example.com/bench</jid></bind></iq>"
            .into(),
        "<iq type='result' id='wb-sess'/>".into(),
        "<iq type='result' id='wb-roster'><query xmlns='jabber:iq:roster'>\
         <item jid='a@example.com'/><item jid='b@example.com'><group>x</group></item>\
         </query></iq>"
            .into(),
    ]
}

fn logged_in() -> Run {
    let mut r = Run::new(config());
    r.sent();
    for s in login_script() {
        r.feed(&s).unwrap();
    }
    r.sent();
    r.events.clear();
    r
}

// RFC 6120 §6.4 + RFC 5802 §5: exact bytes of every client turn of a SCRAM-SHA-1 login.
#[test]
fn rfc6120_login_scram_sha1_rfc5802_vector_exact_bytes() {
    let mut r = Run::new(config());
    assert_eq!(r.sent(), CLIENT_HEADER);
    assert_eq!(r.c.state(), State::Connecting);
    let script = login_script();
    let expected_replies = [
        format!(
            "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='SCRAM-SHA-1'>{}</auth>",
            B64.encode(format!("n,,n=user,r={NONCE}"))
        ),
        format!(
            "<response xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>{}</response>",
            B64.encode(CLIENT_FINAL)
        ),
        CLIENT_HEADER.to_string(),
        "<iq type='set' id='wb-bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>\
         <resource>bench</resource></bind></iq>"
            .into(),
        "<iq type='set' id='wb-sess'><session xmlns='urn:ietf:params:xml:ns:xmpp-session'/></iq>"
            .into(),
        "<iq type='get' id='wb-roster'><query xmlns='jabber:iq:roster'/></iq>".into(),
        "<presence/>".into(),
    ];
    for (s, want) in script.iter().zip(&expected_replies) {
        r.feed(s).unwrap();
        assert_eq!(&r.sent(), want, "reply to {s}");
    }
    assert_eq!(
        r.events,
        [
            Event::StreamOpened { id: "s1".into() },
            Event::Authenticated {
                mechanism: Mechanism::ScramSha1
            },
            Event::StreamOpened { id: "s1".into() },
            Event::Bound {
                jid: "user@example.com/bench".into()
            },
            Event::Roster { items: 2 },
            Event::SessionEstablished,
        ]
    );
    assert_eq!(r.c.state(), State::Established);
}

// The whole server side in one read, and byte by byte: same bytes out, same events.
#[test]
fn rfc6120_login_pipelined_and_byte_by_byte_agree() {
    let all: String = login_script().concat();
    let mut one = Run::new(config());
    one.feed(&all).unwrap();
    let mut bytes = Run::new(config());
    for b in all.as_bytes() {
        bytes.c.handle_input(0, std::slice::from_ref(b)).unwrap();
    }
    while let Some(e) = bytes.c.poll_event() {
        bytes.events.push(e);
    }
    assert_eq!(one.events, bytes.events);
    assert_eq!(one.sent(), bytes.sent());
    assert_eq!(one.events.last(), Some(&Event::SessionEstablished));
}

// RFC 4616 PLAIN; optional session skipped (RFC 6121 App. E); no roster, no presence.
#[test]
fn rfc4616_plain_login_skips_optional_session() {
    let mut cfg = config();
    cfg.mechanisms = vec![Mechanism::Plain];
    cfg.roster = false;
    cfg.initial_presence = false;
    let mut r = Run::new(cfg);
    r.sent();
    r.feed(&format!("{SERVER_HEADER}{FEATURES_SASL}")).unwrap();
    assert_eq!(
        r.sent(),
        format!(
            "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{}</auth>",
            B64.encode("\0user\0pencil")
        )
    );
    r.feed("<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>")
        .unwrap();
    r.feed(&format!(
        "{SERVER_HEADER}<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/>\
         <session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session>\
         </stream:features>"
    ))
    .unwrap();
    r.sent();
    r.feed(
        "<iq type='result' id='wb-bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>\
         <jid>user@example.com/x</jid></bind></iq>",
    )
    .unwrap();
    assert_eq!(r.sent(), "");
    assert_eq!(r.events.last(), Some(&Event::SessionEstablished));
}

// RFC 6121 §5.2 messages both ways, with escaping and entity resolution.
#[test]
fn rfc6121_messages_both_ways() {
    let mut r = logged_in();
    r.c.send_message("bob@example.com", "a<b & 'c' \"d\"", "m1")
        .unwrap();
    assert_eq!(
        r.sent(),
        "<message type='chat' to='bob@example.com' id='m1'><body>a&lt;b &amp; \
         &apos;c&apos; &quot;d&quot;</body></message>"
    );
    r.feed(
        "<message from='bob@example.com/x' id='r1' type='chat'><body>1 &lt; 2 &amp;&#x263A;\
         </body><active xmlns='http://jabber.org/protocol/chatstates'/></message>\n \
         <message from='bob@example.com/x'><composing \
         xmlns='http://jabber.org/protocol/chatstates'/></message>",
    )
    .unwrap();
    assert_eq!(
        r.events,
        [Event::Message {
            from: "bob@example.com/x".into(),
            id: Some("r1".into()),
            body: "1 < 2 &\u{263A}".into()
        }]
    );
}

// XEP-0199 §4 pings answered; RFC 6120 §8.2.3 unknown iq get/set get service-unavailable;
// results and presence become events; whitespace keepalives are ignored.
#[test]
fn rfc6120_8_iq_handling_and_xep0199_ping() {
    let mut r = logged_in();
    r.feed(
        "<iq type='get' id='p1' from='example.com'><ping xmlns='urn:xmpp:ping'/></iq>   \
         <iq type='get' id='d1' from='x@example.com/y'><query \
         xmlns='http://jabber.org/protocol/disco#info'/></iq>\
         <iq type='set' id='rp' ><query xmlns='jabber:iq:roster'><item jid='c@d'/></query></iq>",
    )
    .unwrap();
    assert_eq!(
        r.sent(),
        "<iq type='result' id='p1' to='example.com'/>\
         <iq type='error' id='d1' to='x@example.com/y'><error type='cancel'>\
         <service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>\
         <iq type='result' id='rp'/>"
    );
    r.c.send_ping("example.com", "c1");
    assert_eq!(
        r.sent(),
        "<iq type='get' to='example.com' id='c1'><ping xmlns='urn:xmpp:ping'/></iq>"
    );
    r.feed(
        "<iq type='result' id='c1' from='example.com'/><presence from='b@e/x'/>\
         <presence from='b@e/x' type='unavailable'/><iq type='error' id='c2'><error \
         type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>",
    )
    .unwrap();
    assert_eq!(
        r.events,
        [
            Event::IqResult { id: "c1".into() },
            Event::Presence {
                from: "b@e/x".into(),
                kind: None
            },
            Event::Presence {
                from: "b@e/x".into(),
                kind: Some("unavailable".into())
            },
            Event::IqError {
                id: "c2".into(),
                condition: "item-not-found".into()
            },
        ]
    );
    r.c.send_whitespace_keepalive();
    assert_eq!(r.sent(), " ");
}

// RFC 6120 §4.4: client closes, server answers with its end tag.
#[test]
fn rfc6120_4_4_close() {
    let mut r = logged_in();
    r.c.close();
    assert_eq!(r.sent(), "</stream:stream>");
    r.feed("</stream:stream>").unwrap();
    assert_eq!(r.events, [Event::Closed]);
    assert_eq!(r.c.state(), State::Closed);
    assert_eq!(r.c.handle_eof(), Ok(()));
    assert_eq!(r.feed("<presence/>"), Err(XmppError::Closed));
}

#[test]
fn server_closes_stream_first() {
    let mut r = logged_in();
    r.feed("</stream:stream>").unwrap();
    assert_eq!(r.sent(), "</stream:stream>");
    assert_eq!(r.events, [Event::Closed]);
}

#[test]
fn keepalive_timer() {
    let mut cfg = config();
    cfg.keepalive_ns = Some(1_000);
    let mut r = Run::new(cfg);
    r.sent();
    for s in login_script() {
        r.c.handle_input(500, s.as_bytes()).unwrap();
    }
    r.sent();
    assert_eq!(r.c.poll_timeout(), Some(1_500));
    r.c.handle_timeout(1_499).unwrap();
    assert_eq!(r.sent(), "");
    r.c.handle_timeout(1_500).unwrap();
    assert_eq!(r.sent(), " ");
    assert_eq!(r.c.poll_timeout(), Some(2_500));
}

// ---- failures: each a clear error, Event::Closed, no panic ----

fn assert_fails(r: &mut Run, input: &str, check: impl Fn(&XmppError) -> bool) -> String {
    let e = r.feed(input).unwrap_err();
    assert!(check(&e), "unexpected error: {e}");
    assert_eq!(r.events.last(), Some(&Event::Closed), "{e}");
    assert_eq!(r.c.state(), State::Closed);
    e.to_string()
}

#[test]
fn rfc6120_6_5_sasl_failure_not_authorized() {
    let mut r = Run::new(config());
    r.feed(&format!("{SERVER_HEADER}{FEATURES_SASL}")).unwrap();
    r.sent();
    let msg = assert_fails(
        &mut r,
        "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/>\
         <text>Invalid username or password</text></failure>",
        |e| matches!(e, XmppError::Auth(_)),
    );
    assert!(
        msg.contains("not-authorized") && msg.contains("Invalid username"),
        "{msg}"
    );
    assert_eq!(r.sent(), "</stream:stream>");
}

#[test]
fn rfc5802_wrong_server_signature_is_auth_error() {
    let mut r = Run::new(config());
    r.feed(&format!("{SERVER_HEADER}{FEATURES_SASL}")).unwrap();
    r.feed(&sasl("challenge", SERVER_FIRST)).unwrap();
    let msg = assert_fails(
        &mut r,
        &sasl("success", "v=AAAApqV8S7suAoZWja4dJRkFsKQ="),
        |e| matches!(e, XmppError::Auth(_)),
    );
    assert!(msg.contains("server signature does not match"), "{msg}");
    // Server-final as a challenge is checked the same way.
    let mut r = Run::new(config());
    r.feed(&format!("{SERVER_HEADER}{FEATURES_SASL}")).unwrap();
    r.feed(&sasl("challenge", SERVER_FIRST)).unwrap();
    assert_fails(&mut r, &sasl("challenge", "v=bm9wZQ=="), |e| {
        matches!(e, XmppError::Auth(_))
    });
}

#[test]
fn sasl_success_without_proof_is_refused() {
    let mut r = Run::new(config());
    r.feed(&format!("{SERVER_HEADER}{FEATURES_SASL}")).unwrap();
    let msg = assert_fails(
        &mut r,
        "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>",
        |e| matches!(e, XmppError::Auth(_)),
    );
    assert!(msg.contains("before the client proved"), "{msg}");
}

#[test]
fn no_common_mechanism() {
    let mut cfg = config();
    cfg.mechanisms = vec![Mechanism::ScramSha256];
    let mut r = Run::new(cfg);
    let msg = assert_fails(&mut r, &format!("{SERVER_HEADER}{FEATURES_SASL}"), |e| {
        matches!(e, XmppError::Negotiation(_))
    });
    assert!(
        msg.contains("SCRAM-SHA-1") && msg.contains("ScramSha256"),
        "{msg}"
    );
}

#[test]
fn tls_required_but_not_offered_or_not_configured() {
    let mut cfg = config();
    cfg.tls = TlsMode::Required;
    let mut r = Run::new(cfg);
    let features = "<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>\
        <mechanism>PLAIN</mechanism></mechanisms></stream:features>";
    assert_fails(&mut r, &format!("{SERVER_HEADER}{features}"), |e| {
        matches!(e, XmppError::Negotiation(_))
    });
    let mut r = Run::new(config());
    let required = "<stream:features><starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'>\
        <required/></starttls></stream:features>";
    let msg = assert_fails(&mut r, &format!("{SERVER_HEADER}{required}"), |e| {
        matches!(e, XmppError::Negotiation(_))
    });
    assert!(msg.contains("requires STARTTLS"), "{msg}");
}

#[test]
fn rfc6120_4_9_stream_error() {
    let mut r = logged_in();
    let e = r
        .feed(
            "<stream:error><conflict xmlns='urn:ietf:params:xml:ns:xmpp-streams'/>\
             <text xmlns='urn:ietf:params:xml:ns:xmpp-streams'>Replaced by new connection</text>\
             </stream:error></stream:stream>",
        )
        .unwrap_err();
    assert_eq!(
        e,
        XmppError::Stream {
            condition: "conflict".into(),
            text: Some("Replaced by new connection".into())
        }
    );
    assert!(e.to_string().contains("<conflict/>: Replaced"), "{e}");
    assert_eq!(
        r.events,
        [
            Event::StreamError {
                condition: "conflict".into(),
                text: Some("Replaced by new connection".into())
            },
            Event::Closed
        ]
    );
}

#[test]
fn unknown_stanza_is_a_protocol_error_with_stream_error_sent() {
    let mut r = logged_in();
    let msg = assert_fails(&mut r, "<foo/>", |e| matches!(e, XmppError::Protocol(_)));
    assert!(msg.contains("<foo>"), "{msg}");
    assert_eq!(
        r.sent(),
        "<stream:error><unsupported-stanza-type \
         xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error></stream:stream>"
    );
}

#[test]
fn oversize_stanza_names_the_limit() {
    let mut r = logged_in();
    let big = format!("<message><body>{}</body></message>", "x".repeat(300 * 1024));
    let msg = assert_fails(&mut r, &big, |e| {
        *e == XmppError::StanzaTooLarge { limit: 256 * 1024 }
    });
    assert!(msg.contains("262144"), "{msg}");
    assert!(r.sent().contains("policy-violation"));
}

#[test]
fn malformed_xml_cases() {
    for bad in [
        "<message><body>x</bdy></message>",
        "<message><body>&bogus;</body></message>",
        "hello",
        "<message><!-- c --></message>",
        "<?pi x?>",
        "<message a='1' a='2'/>",
    ] {
        let mut r = logged_in();
        let msg = assert_fails(&mut r, bad, |e| matches!(e, XmppError::Malformed(_)));
        assert!(
            msg.starts_with("malformed XML from the server"),
            "{bad}: {msg}"
        );
    }
}

#[test]
fn truncated_xml_at_end_of_connection() {
    let mut r = logged_in();
    r.feed("<message><body>hal").unwrap();
    let e = r.c.handle_eof().unwrap_err();
    assert!(e.to_string().contains("middle of an element"), "{e}");
    let mut r = logged_in();
    let e = r.c.handle_eof().unwrap_err();
    assert!(e.to_string().contains("without closing the stream"), "{e}");
}

#[test]
fn bad_jid_is_a_usage_error() {
    let mut r = Run::new(ClientConfig::new("nodomain", "x"));
    let msg = assert_fails(&mut r, SERVER_HEADER, |e| matches!(e, XmppError::Usage(_)));
    assert!(msg.contains("user@domain"), "{msg}");
}

#[test]
fn send_before_established_is_refused() {
    let mut r = Run::new(config());
    assert!(matches!(
        r.c.send_message("a@b", "x", "1"),
        Err(XmppError::Usage(_))
    ));
}

#[test]
fn scram_cache_is_shared_across_sessions() {
    let cache = wirebench_xmpp::ScramCache::new();
    for _ in 0..3 {
        let mut c = Client::new(config(), None, 1).with_scram_cache(cache.clone());
        c.set_client_nonce(NONCE);
        for s in &login_script()[..2] {
            c.handle_input(0, s.as_bytes()).unwrap();
        }
    }
    assert_eq!(cache.len(), 1);
}

// ---- no panic on any input ----

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn fuzz_input_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        wirebench_xmpp::fuzz_input(&bytes);
    }

    // XML-ish noise reaches deeper than uniform bytes.
    #[test]
    fn xmlish_noise_never_panics(
        mode in 0u8..4,
        parts in proptest::collection::vec(prop_oneof![
            Just("<"), Just(">"), Just("/"), Just("'"), Just("\""), Just("&"), Just(";"),
            Just("<message>"), Just("</message>"), Just("<body>"), Just("</body>"),
            Just("<iq type='get' id='x'>"), Just("</iq>"), Just("<![CDATA["), Just("]]>"),
            Just("&#x10FFFF;"), Just("&#xD800;"), Just("&amp;"), Just("</stream:stream>"),
            Just("<stream:error>"), Just("x:y"), Just(" a='b'"), Just("\u{e9}"), Just("\0"),
        ], 0..40),
        split in any::<u8>(),
    ) {
        let mut input = vec![mode, split];
        input.extend(parts.concat().into_bytes());
        wirebench_xmpp::fuzz_input(&input);
    }

    // Any split of the login script into three reads gives the same events.
    #[test]
    fn login_any_split(a in 0usize..2000, b in 0usize..2000) {
        let all: String = login_script().concat();
        let n = all.len();
        let (a, b) = (a.min(n), b.min(n));
        let (a, b) = (a.min(b), a.max(b));
        let mut r = Run::new(config());
        for part in [&all.as_bytes()[..a], &all.as_bytes()[a..b], &all.as_bytes()[b..]] {
            r.c.handle_input(0, part).unwrap();
        }
        let mut last = None;
        while let Some(e) = r.c.poll_event() { last = Some(e); }
        prop_assert_eq!(last, Some(Event::SessionEstablished));
    }
}
