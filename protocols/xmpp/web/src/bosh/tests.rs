use super::*;
use crate::bosh_client::{BoshClient, BoshClientConfig};
use crate::testkit::{accounts, client, engine, events, server, transmit};
use proptest::prelude::*;
use wirebench_engine::Engine as _;
use wirebench_xmpp::{Event, Mechanism};

const S: u64 = NS;

fn outputs(m: &mut Manager) -> Vec<Output> {
    std::iter::from_fn(|| m.poll_output()).collect()
}

fn responses(out: &[Output]) -> Vec<(ReqId, String)> {
    out.iter()
        .filter_map(|o| match o {
            Output::Respond { req, body } => {
                Some((*req, String::from_utf8_lossy(body).into_owned()))
            }
            _ => None,
        })
        .collect()
}

/// A manager with one session whose server has sent its header; returns the sid and
/// the last rid used.
fn session(m: &mut Manager) -> (String, u64) {
    m.handle_request(
        0,
        1,
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='100' to='example.com' \
          wait='30' hold='5' xmpp:version='1.0' xmlns:xmpp='urn:xmpp:xbosh'/>",
    );
    let out = outputs(m);
    let Some(Output::Open { sid }) = out.first().cloned() else {
        panic!("{out:?}");
    };
    assert!(
        matches!(&out[1], Output::ToServer { bytes, .. } if bytes.starts_with(b"<stream:stream"))
    );
    m.handle_server_bytes(
        0,
        &sid,
        b"<?xml version='1.0'?><stream:stream xmlns='jabber:client' \
          xmlns:stream='http://etherx.jabber.org/streams' id='abc' from='example.com' \
          version='1.0'><stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>\
          <mechanism>PLAIN</mechanism></mechanisms></stream:features>",
    );
    let r = responses(&outputs(m));
    assert_eq!(r.len(), 1);
    let body = &r[0].1;
    // Negotiated: wait as asked (under the cap), hold capped at 1, requests = hold + 1.
    for want in [
        "wait='30'",
        "hold='1'",
        "requests='2'",
        "authid='abc'",
        "from='example.com'",
        "<stream:features",
        &format!("sid='{sid}'"),
    ] {
        assert!(body.contains(want), "{want} in {body}");
    }
    (sid, 100)
}

fn req(sid: &str, rid: u64, inner: &str) -> Vec<u8> {
    if inner.is_empty() {
        format!("<body xmlns='http://jabber.org/protocol/httpbind' rid='{rid}' sid='{sid}'/>")
    } else {
        format!("<body xmlns='http://jabber.org/protocol/httpbind' rid='{rid}' sid='{sid}'>{inner}</body>")
    }
    .into_bytes()
}

#[test]
fn a_client_logs_in_and_pings_over_bosh() {
    for mech in [Mechanism::Plain, Mechanism::ScramSha1] {
        let mut c = client(mech);
        let mut s = server();
        let mut m = Manager::new(BoshConfig::default(), 9);
        let mut b = BoshClient::new(BoshClientConfig::new("example.com"), 5);
        let dir = accounts();
        let mut seen = Vec::new();
        // Open HTTP requests: (request id, still to be answered).
        let mut open: Vec<ReqId> = Vec::new();
        let mut next_req = 1;
        let requests = std::cell::Cell::new(0u64);
        let mut pump = |c: &mut wirebench_xmpp::Client,
                        s: &mut wirebench_xmpp::ServerSession,
                        m: &mut Manager,
                        b: &mut BoshClient,
                        seen: &mut Vec<Event>| {
            for _ in 0..1000 {
                let mut moved = false;
                while let Some(x) = transmit(c) {
                    b.send(&x).unwrap();
                }
                while let Some(body) = b.poll_request() {
                    moved = true;
                    requests.set(requests.get() + 1);
                    open.push(next_req);
                    m.handle_request(0, next_req, &body);
                    next_req += 1;
                }
                while let Some(o) = m.poll_output() {
                    moved = true;
                    match o {
                        Output::Respond { req, body } => {
                            open.retain(|&r| r != req);
                            b.handle_response(&body).unwrap();
                            let st = b.take_stream();
                            c.handle_input(0, &st).unwrap();
                        }
                        Output::ToServer { bytes, .. } => {
                            let Ok(()) = engine(s, &dir).handle_input(0, &bytes);
                        }
                        Output::Open { .. } | Output::Close { .. } => {}
                    }
                }
                while let Some(x) = transmit(&mut engine(s, &dir)) {
                    moved = true;
                    let sid = b
                        .sid()
                        .map(str::to_string)
                        .unwrap_or_else(|| m.sessions.keys().next().cloned().unwrap());
                    m.handle_server_bytes(0, &sid, &x);
                }
                while engine(s, &dir).poll_event().is_some() {}
                events(c, seen);
                if !moved {
                    return;
                }
            }
            panic!("no quiescence");
        };
        pump(&mut c, &mut s, &mut m, &mut b, &mut seen);
        assert!(
            seen.contains(&Event::SessionEstablished),
            "{mech:?} {seen:?}"
        );
        // Idle: exactly one request held by the manager, none pending in the client.
        assert_eq!(b.in_flight(), 1);
        for i in 0..5 {
            let before = requests.get();
            let id = format!("p{i}");
            c.send_ping("example.com", &id);
            pump(&mut c, &mut s, &mut m, &mut b, &mut seen);
            assert!(seen.contains(&Event::IqResult { id }), "{seen:?}");
            // A ping costs one new request (the held one comes back, empty, at once);
            // then one is held again.
            assert!(requests.get() - before <= 2, "{}", requests.get() - before);
            assert_eq!(b.in_flight(), 1);
        }
        c.close();
        pump(&mut c, &mut s, &mut m, &mut b, &mut seen);
        assert!(seen.contains(&Event::Closed), "{seen:?}");
        assert_eq!(m.sessions(), 0);
        assert!(b.is_closed());
    }
}

#[test]
fn a_held_request_is_answered_the_moment_the_server_speaks() {
    let mut m = Manager::new(BoshConfig::default(), 1);
    let (sid, rid) = session(&mut m);
    m.handle_request(5 * S, 2, &req(&sid, rid + 1, ""));
    assert!(responses(&outputs(&mut m)).is_empty(), "held");
    m.handle_server_bytes(
        5 * S,
        &sid,
        b"<message from='a' to='b'><body>x</body></message>",
    );
    let r = responses(&outputs(&mut m));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].0, 2);
    assert!(
        r[0].1.contains("<message xmlns='jabber:client' from='a'"),
        "{}",
        r[0].1
    );
    // A second request releases the held one (hold=1), empty.
    m.handle_request(6 * S, 3, &req(&sid, rid + 2, ""));
    m.handle_request(6 * S, 4, &req(&sid, rid + 3, "<iq type='get' id='1'/>"));
    let out = outputs(&mut m);
    let r = responses(&out);
    assert_eq!(
        r,
        vec![(
            3,
            "<body xmlns='http://jabber.org/protocol/httpbind'/>".into()
        )]
    );
    assert!(out.iter().any(
        |o| matches!(o, Output::ToServer { bytes, .. } if bytes == b"<iq type='get' id='1'/>")
    ));
}

#[test]
fn unknown_sid_bad_rid_and_replays() {
    let mut m = Manager::new(BoshConfig::default(), 1);
    let (sid, rid) = session(&mut m);
    m.handle_request(0, 2, &req("nosuchsid", 5, ""));
    let r = responses(&outputs(&mut m));
    assert!(
        r[0].1
            .contains("type='terminate' condition='item-not-found'")
    );
    assert_eq!(
        m.sessions(),
        1,
        "another session's error does not touch this one"
    );

    // Out of order within the window: kept until the gap fills, then both processed.
    m.handle_request(0, 3, &req(&sid, rid + 2, "<b/>"));
    assert!(outputs(&mut m).is_empty());
    m.handle_request(0, 4, &req(&sid, rid + 1, "<a/>"));
    let out = outputs(&mut m);
    let sent: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            Output::ToServer { bytes, .. } => Some(bytes.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sent, vec![b"<a/>".to_vec(), b"<b/>".to_vec()]);
    // rid+1 released empty by rid+2 (hold=1); a replay of rid+1 gets the same answer.
    let r = responses(&out);
    assert_eq!(r.len(), 1);
    m.handle_request(0, 5, &req(&sid, rid + 1, "<a/>"));
    assert_eq!(responses(&outputs(&mut m)), vec![(5, r[0].1.clone())]);

    // Beyond the window: the session ends.
    m.handle_request(0, 6, &req(&sid, rid + 10, ""));
    let r = responses(&outputs(&mut m));
    assert!(
        r.iter()
            .all(|(_, b)| b.contains("condition='item-not-found'")),
        "{r:?}"
    );
    assert!(r.iter().any(|(q, _)| *q == 6) && r.iter().any(|(q, _)| *q == 3));
    assert_eq!(m.sessions(), 0);

    // A replay far behind the window ends a session too.
    let (sid, rid) = session(&mut m);
    // (A second apart: faster empty requests would be overactive, §12.)
    for k in 1..=4 {
        m.handle_request(k * S, 10 + k, &req(&sid, rid + k, ""));
    }
    let _ = outputs(&mut m);
    assert_eq!(m.sessions(), 1);
    m.handle_request(5 * S, 20, &req(&sid, rid + 1, ""));
    let r = responses(&outputs(&mut m));
    assert!(
        r.iter()
            .any(|(q, b)| *q == 20 && b.contains("item-not-found")),
        "{r:?}"
    );
    assert_eq!(m.sessions(), 0);
}

/// XEP-0124 §9: with `ack='1'` at creation, answers say which request they answer when
/// it is not the newest, and the client's own `ack` frees the answers kept for replay.
#[test]
fn acknowledgements_when_the_client_asks_for_them() {
    let mut m = Manager::new(BoshConfig::default(), 7);
    m.handle_request(
        0,
        1,
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='500' to='example.com' \
          wait='30' hold='1' ack='1' xmpp:version='1.0' xmlns:xmpp='urn:xmpp:xbosh'/>",
    );
    let Some(Output::Open { sid }) = outputs(&mut m).first().cloned() else {
        panic!("no session");
    };
    m.handle_server_bytes(
        0,
        &sid,
        b"<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' \
          id='x' from='example.com' version='1.0'><stream:features/>",
    );
    let r = responses(&outputs(&mut m));
    assert!(r[0].1.contains("ack='500'"), "{}", r[0].1);
    // 501 is held; 502 (with a stanza) releases it: that answer acknowledges 502.
    m.handle_request(S, 2, &req(&sid, 501, ""));
    assert!(responses(&outputs(&mut m)).is_empty());
    m.handle_request(S, 3, &req(&sid, 502, "<a/>"));
    let r = responses(&outputs(&mut m));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].0, 2);
    assert!(r[0].1.contains("ack='502'"), "{}", r[0].1);
    // The server speaks: 502, the newest, is answered without an ack.
    m.handle_server_bytes(2 * S, &sid, b"<message/>");
    let r = responses(&outputs(&mut m));
    assert_eq!(r[0].0, 3);
    assert!(!r[0].1.contains("ack="), "{}", r[0].1);
    // Without ack='1' nothing of the kind is added.
    let mut plain = Manager::new(BoshConfig::default(), 8);
    let (psid, prid) = session(&mut plain);
    plain.handle_request(S, 2, &req(&psid, prid + 1, ""));
    plain.handle_request(S, 3, &req(&psid, prid + 2, "<a/>"));
    let r = responses(&outputs(&mut plain));
    assert!(!r[0].1.contains("ack="), "{}", r[0].1);

    // Replays work until the client acknowledges; an acknowledged rid is not kept.
    m.handle_request(3 * S, 4, &req(&sid, 502, "<a/>"));
    assert_eq!(
        responses(&outputs(&mut m)).len(),
        1,
        "replay before the ack"
    );
    let acked = format!(
        "<body xmlns='http://jabber.org/protocol/httpbind' rid='503' sid='{sid}' ack='502'><b/></body>"
    );
    m.handle_request(4 * S, 5, acked.as_bytes());
    let _ = outputs(&mut m);
    m.handle_request(5 * S, 6, &req(&sid, 502, "<a/>"));
    let r = responses(&outputs(&mut m));
    assert!(
        r.iter()
            .any(|(q, b)| *q == 6 && b.contains("item-not-found")),
        "{r:?}"
    );
}

/// §12: a client may hold `hold` requests and add one carrying stanzas at any time, or
/// poll once a second; an empty request on top of a held one, sooner, is overactive.
#[test]
fn an_overactive_poller_is_cut_off_and_others_are_not() {
    let mut m = Manager::new(BoshConfig::default(), 9);
    let (sid, rid) = session(&mut m);
    let (other, orid) = session(&mut m);
    // Stanzas on top of a held request, at once: fine.
    m.handle_request(S, 2, &req(&sid, rid + 1, ""));
    m.handle_request(S, 3, &req(&sid, rid + 2, "<a/>"));
    // An empty request on top of a held one a second later: fine (a poll).
    m.handle_request(2 * S, 4, &req(&sid, rid + 3, ""));
    let _ = outputs(&mut m);
    assert_eq!(m.sessions(), 2);
    // An empty one on top of the held one within the second: policy-violation.
    m.handle_request(2 * S + S / 10, 5, &req(&sid, rid + 4, ""));
    let r = responses(&outputs(&mut m));
    assert!(
        r.iter()
            .any(|(q, b)| *q == 5 && b.contains("condition='policy-violation'")),
        "{r:?}"
    );
    assert!(
        r.iter()
            .any(|(q, b)| *q == 4 && b.contains("condition='policy-violation'")),
        "the held request ends too: {r:?}"
    );
    assert_eq!(m.sessions(), 1, "only the spinning session ends");
    // The other session was never affected, and a terminate or restart is never
    // overactive.
    m.handle_request(3 * S, 6, &req(&other, orid + 1, ""));
    let restart = format!(
        "<body xmlns='http://jabber.org/protocol/httpbind' rid='{}' sid='{other}' \
         xmlns:xmpp='urn:xmpp:xbosh' xmpp:restart='true' to='example.com'/>",
        orid + 2
    );
    m.handle_request(3 * S, 7, restart.as_bytes());
    let r = responses(&outputs(&mut m));
    assert!(r.iter().all(|(_, b)| !b.contains("terminate")), "{r:?}");
    assert_eq!(m.sessions(), 1);
}

#[test]
fn bad_bodies_and_oversized_bodies() {
    let mut m = Manager::new(
        BoshConfig {
            max_body: 1000,
            ..BoshConfig::default()
        },
        1,
    );
    for bad in [
        &b""[..],
        b"garbage",
        b"<body/>",
        b"<body xmlns='http://jabber.org/protocol/httpbind'/>",
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='x'/>",
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='99999999999999999'/>",
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='1'><a>",
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='1'><a/></body><x/>",
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='1'>text</body>",
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='1'><!DOCTYPE x></body>",
    ] {
        m.handle_request(0, 1, bad);
        let r = responses(&outputs(&mut m));
        assert_eq!(r.len(), 1, "{}", String::from_utf8_lossy(bad));
        assert!(r[0].1.contains("type='terminate'"), "{}", r[0].1);
        assert_eq!(m.sessions(), 0);
    }
    m.handle_request(
        0,
        1,
        b"<body xmlns='http://jabber.org/protocol/httpbind' rid='1'/>",
    );
    assert!(
        responses(&outputs(&mut m))[0]
            .1
            .contains("improper-addressing")
    );

    let (sid, rid) = session(&mut m);
    let big = req(
        &sid,
        rid + 1,
        &format!("<message><body>{}</body></message>", "x".repeat(2000)),
    );
    m.handle_request(0, 7, &big[..1001]);
    let out = outputs(&mut m);
    let r = responses(&out);
    assert!(r[0].1.contains("condition='policy-violation'"), "{r:?}");
    assert!(out.contains(&Output::Close { sid: sid.clone() }));
    assert_eq!(m.sessions(), 0);
}

#[test]
fn a_body_announced_too_large_ends_the_session_its_first_bytes_name() {
    let mut m = Manager::new(
        BoshConfig {
            max_body: 1000,
            ..BoshConfig::default()
        },
        1,
    );
    let (sid, rid) = session(&mut m);
    let (other, _) = session(&mut m);
    let big = req(&sid, rid + 1, &"x".repeat(2000));
    // Only the start tag and a little more were read.
    m.handle_too_large(7, &big[..200]);
    let out = outputs(&mut m);
    let r = responses(&out);
    assert!(r[0].1.contains("condition='policy-violation'"), "{r:?}");
    assert!(out.contains(&Output::Close { sid: sid.clone() }));
    assert_eq!(m.sessions(), 1);
    // A head too short to name a session ends none.
    m.handle_too_large(8, &req(&other, 1, "")[..10]);
    assert!(
        responses(&outputs(&mut m))[0]
            .1
            .contains("policy-violation")
    );
    assert_eq!(m.sessions(), 1);
}

#[test]
fn idle_sessions_meet_wait_and_inactivity_and_others_are_unaffected() {
    let cfg = BoshConfig {
        inactivity: 10,
        ..BoshConfig::default()
    };
    let mut m = Manager::new(cfg, 1);
    let (deaf, _) = session(&mut m);
    let (live, mut rid) = session(&mut m);
    assert_ne!(deaf, live);
    // The live one polls; its held request comes back empty after wait (30 s).
    rid += 1;
    m.handle_request(S, 2, &req(&live, rid, ""));
    assert_eq!(
        m.poll_timeout(),
        Some(10 * S),
        "the deaf session's inactivity comes first"
    );
    m.handle_timeout(10 * S);
    let out = outputs(&mut m);
    assert!(
        out.contains(&Output::Close { sid: deaf.clone() }),
        "{out:?}"
    );
    assert!(out.contains(&Output::ToServer {
        sid: deaf.clone(),
        bytes: b"</stream:stream>".to_vec()
    }));
    assert_eq!(m.sessions(), 1);
    assert!(
        responses(&out).is_empty(),
        "the live one's request is still held"
    );
    assert_eq!(m.poll_timeout(), Some(31 * S));
    m.handle_timeout(31 * S);
    let r = responses(&outputs(&mut m));
    assert_eq!(
        r,
        vec![(
            2,
            "<body xmlns='http://jabber.org/protocol/httpbind'/>".into()
        )]
    );
    // It polls again and lives on; the deaf one's sid is now unknown.
    rid += 1;
    m.handle_request(32 * S, 3, &req(&live, rid, ""));
    m.handle_server_bytes(32 * S, &live, b"<message/>");
    assert_eq!(responses(&outputs(&mut m)).len(), 1);
    m.handle_request(33 * S, 4, &req(&deaf, 101, ""));
    assert!(responses(&outputs(&mut m))[0].1.contains("item-not-found"));
    assert_eq!(m.sessions(), 1);
}

#[test]
fn a_client_that_never_polls_has_its_queue_bounded() {
    let mut m = Manager::new(
        BoshConfig {
            max_queued: 10_000,
            ..BoshConfig::default()
        },
        1,
    );
    let (sid, _) = session(&mut m);
    for _ in 0..100 {
        m.handle_server_bytes(
            0,
            &sid,
            format!("<message><body>{}</body></message>", "y".repeat(200)).as_bytes(),
        );
    }
    let out = outputs(&mut m);
    assert!(out.contains(&Output::Close { sid }), "{out:?}");
    assert_eq!(m.sessions(), 0);
}

#[test]
fn the_servers_stream_end_and_errors_terminate_the_session() {
    let mut m = Manager::new(BoshConfig::default(), 1);
    let (sid, rid) = session(&mut m);
    m.handle_request(0, 2, &req(&sid, rid + 1, ""));
    m.handle_server_bytes(
        0,
        &sid,
        b"<stream:error><conflict xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error></stream:stream>",
    );
    let out = outputs(&mut m);
    let r = responses(&out);
    assert!(
        r[0].1
            .contains("type='terminate' condition='remote-stream-error'"),
        "{r:?}"
    );
    assert!(r[0].1.contains("<stream:error"));
    assert!(out.contains(&Output::Close { sid }));
    // Restart: the server's second header is swallowed, its features delivered.
    let (sid, rid) = session(&mut m);
    m.handle_request(
        0,
        3,
        format!("<body xmlns='http://jabber.org/protocol/httpbind' rid='{}' sid='{sid}' xmpp:restart='true' xmlns:xmpp='urn:xmpp:xbosh'/>", rid + 1).as_bytes(),
    );
    let out = outputs(&mut m);
    assert!(
        out.iter().any(
            |o| matches!(o, Output::ToServer { bytes, .. } if bytes.starts_with(b"<stream:stream"))
        ),
        "{out:?}"
    );
    m.handle_server_bytes(0, &sid, b"<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' id='x2'><stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></stream:features>");
    let r = responses(&outputs(&mut m));
    assert_eq!(r.len(), 1);
    assert!(
        !r[0].1.contains("stream:stream") && r[0].1.contains("<stream:features"),
        "{}",
        r[0].1
    );
}

proptest! {
    #[test]
    fn arbitrary_requests_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..800)) {
        crate::fuzz_bosh(&bytes);
    }

    /// Any sequence of rids keeps at most `requests` requests open per session.
    #[test]
    fn open_requests_stay_bounded(steps in proptest::collection::vec((0u64..6, any::<bool>()), 1..40)) {
        let mut m = Manager::new(BoshConfig::default(), 1);
        let (sid, rid) = session(&mut m);
        let mut open = std::collections::HashSet::new();
        for (i, (d, data)) in steps.into_iter().enumerate() {
            let q = 100 + i as u64;
            open.insert(q);
            m.handle_request(0, q, &req(&sid, rid + d, ""));
            if data {
                m.handle_server_bytes(0, &sid, b"<message/>");
            }
            for o in outputs(&mut m) {
                if let Output::Respond { req, .. } = o {
                    prop_assert!(open.remove(&req), "answered twice: {}", req);
                }
            }
            prop_assert!(open.len() <= 2, "{} open", open.len());
            if m.sessions() == 0 {
                prop_assert!(open.is_empty());
                break;
            }
        }
    }
}

#[test]
fn a_session_over_the_cap_is_refused_until_an_abandoned_one_ends() {
    let cfg = BoshConfig {
        max_sessions: 1,
        inactivity: 10,
        ..BoshConfig::default()
    };
    let mut m = Manager::new(cfg, 1);
    let (first, _) = session(&mut m);
    let create = b"<body xmlns='http://jabber.org/protocol/httpbind' rid='500' to='example.com' \
                   wait='30' hold='1'/>";
    m.handle_request(S, 7, create);
    let r = responses(&outputs(&mut m));
    assert_eq!(r.len(), 1);
    assert!(
        r[0].1.contains("type='terminate'") && r[0].1.contains("condition='undefined-condition'"),
        "{r:?}"
    );
    assert_eq!((m.sessions(), m.refused_sessions()), (1, 1));
    // The first never polls again: gone after its inactivity, making room (XEP-0124 §8).
    m.handle_timeout(10 * S);
    assert!(outputs(&mut m).contains(&Output::Close { sid: first }));
    m.handle_request(11 * S, 8, create);
    assert!(matches!(outputs(&mut m).first(), Some(Output::Open { .. })));
}
