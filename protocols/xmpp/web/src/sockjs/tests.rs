use super::*;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

fn drain(s: &mut Server) -> Vec<Output> {
    std::iter::from_fn(|| s.poll_output()).collect()
}

fn data(outs: &[Output], id: RecvId) -> String {
    outs.iter()
        .filter_map(|o| match o {
            Output::Data { recv, bytes } if *recv == id => {
                Some(String::from_utf8(bytes.clone()).unwrap())
            }
            _ => None,
        })
        .collect()
}

fn ended(outs: &[Output], id: RecvId) -> bool {
    outs.contains(&Output::End { recv: id })
}

#[test]
fn polling_open_then_messages_then_close() {
    let mut s = Server::new(SockJsConfig::default());
    let r = s.receive(0, "x", Wire::XhrPolling);
    let o = drain(&mut s);
    assert_eq!(o[0], Output::Open { sid: "x".into() });
    assert_eq!(data(&o, r), "o\n");
    assert!(ended(&o, r));
    // A poll waits; a message answers it at once.
    let r = s.receive(1, "x", Wire::XhrPolling);
    assert!(drain(&mut s).is_empty());
    s.send(2, "x", "<a/>".into());
    let o = drain(&mut s);
    assert_eq!(data(&o, r), "a[\"<a/>\"]\n");
    assert!(ended(&o, r));
    // Queued while nobody polls: delivered together.
    s.send(3, "x", "1".into());
    s.send(3, "x", "2".into());
    let r = s.receive(4, "x", Wire::XhrPolling);
    assert_eq!(data(&drain(&mut s), r), "a[\"1\",\"2\"]\n");
    s.close(5, "x", 3000, "Go away!");
    let r = s.receive(6, "x", Wire::XhrPolling);
    let o = drain(&mut s);
    assert_eq!(data(&o, r), "c[3000,\"Go away!\"]\n");
    assert!(ended(&o, r));
}

#[test]
fn second_receiver_gets_2010_first_keeps_going() {
    let mut s = Server::new(SockJsConfig::default());
    s.receive(0, "x", Wire::XhrPolling);
    let a = s.receive(1, "x", Wire::XhrPolling);
    drain(&mut s);
    let b = s.receive(2, "x", Wire::XhrPolling);
    let o = drain(&mut s);
    assert_eq!(data(&o, b), "c[2010,\"Another connection still open\"]\n");
    assert!(ended(&o, b) && !ended(&o, a));
    s.send(3, "x", "m".into());
    assert_eq!(data(&drain(&mut s), a), "a[\"m\"]\n");
}

#[test]
fn streaming_prelude_limit_and_heartbeat() {
    let cfg = SockJsConfig {
        response_limit: 4096,
        ..SockJsConfig::default()
    };
    let mut s = Server::new(cfg);
    let r = s.receive(0, "x", Wire::XhrStreaming);
    let o = drain(&mut s);
    let d = data(&o, r);
    assert_eq!(&d[..2048], "h".repeat(2048));
    assert_eq!(&d[2048..], "\no\n");
    assert!(!ended(&o, r));
    assert_eq!(s.poll_timeout(), Some(25 * S));
    s.handle_timeout(25 * S);
    assert_eq!(data(&drain(&mut s), r), "h\n");
    s.send(26 * S, "x", "y".repeat(5000));
    let o = drain(&mut s);
    assert!(ended(&o, r), "over the response limit: the response ends");
    // The next streaming request carries on with the same session.
    let r2 = s.receive(27 * S, "x", Wire::XhrStreaming);
    s.send(27 * S, "x", "z".into());
    assert!(data(&drain(&mut s), r2).ends_with("a[\"z\"]\n"));
}

#[test]
fn disconnect_delay_forgets_the_session() {
    let mut s = Server::new(SockJsConfig::default());
    s.receive(0, "x", Wire::XhrPolling);
    drain(&mut s);
    assert_eq!(s.poll_timeout(), Some(5 * S));
    s.handle_timeout(5 * S - 1);
    assert!(drain(&mut s).is_empty());
    s.handle_timeout(5 * S);
    assert_eq!(drain(&mut s), vec![Output::Close { sid: "x".into() }]);
    assert!(s.is_empty());
    assert_eq!(
        s.client_data("x", b"[\"a\"]"),
        Err(SendError::UnknownSession)
    );
    // A streaming receiver that goes away starts the delay too.
    let r = s.receive(10 * S, "y", Wire::EventSource);
    s.gone(11 * S, r);
    drain(&mut s);
    s.handle_timeout(16 * S);
    assert_eq!(drain(&mut s), vec![Output::Close { sid: "y".into() }]);
}

#[test]
fn an_aborted_receiver_interrupts_the_session() {
    let mut s = Server::new(SockJsConfig::default());
    s.receive(0, "x", Wire::XhrPolling);
    drain(&mut s);
    let r = s.receive(S, "x", Wire::XhrStreaming);
    let r2 = s.receive(S, "x", Wire::XhrPolling);
    let o = drain(&mut s);
    assert_eq!(data(&o, r2), "c[2010,\"Another connection still open\"]\n");
    // A request that was refused is not the session's receiver: its end changes nothing.
    s.gone(2 * S, r2);
    assert_eq!(s.client_data("x", b"[\"a\"]"), Ok(vec!["a".into()]));
    s.gone(2 * S, r);
    assert_eq!(
        s.client_data("x", b"[\"a\"]"),
        Err(SendError::UnknownSession)
    );
    let r3 = s.receive(3 * S, "x", Wire::XhrPolling);
    let o = drain(&mut s);
    assert_eq!(data(&o, r3), "c[1002,\"Connection interrupted\"]\n");
    assert!(ended(&o, r3));
}

#[test]
fn client_data_rules() {
    let mut s = Server::new(SockJsConfig {
        max_body: 16,
        ..SockJsConfig::default()
    });
    s.receive(0, "x", Wire::XhrPolling);
    assert_eq!(
        s.client_data("x", b"[\"a\",\"b\"]"),
        Ok(vec!["a".into(), "b".into()])
    );
    assert_eq!(s.client_data("x", b"\"a\""), Ok(vec!["a".into()]));
    assert_eq!(s.client_data("x", b"[]"), Ok(vec![]));
    assert_eq!(s.client_data("x", b""), Err(SendError::Empty));
    assert_eq!(s.client_data("x", b"[\"a"), Err(SendError::BrokenJson));
    assert_eq!(s.client_data("x", b"[1]"), Err(SendError::BrokenJson));
    assert_eq!(s.client_data("x", &[b'x'; 17]), Err(SendError::TooLarge));
    assert_eq!(s.client_data("y", b"[]"), Err(SendError::UnknownSession));
}

#[test]
fn wires_encode_and_read_back() {
    for w in [
        Wire::XhrStreaming,
        Wire::XhrPolling,
        Wire::EventSource,
        Wire::Jsonp("cb".into()),
        Wire::HtmlFile("cb".into()),
    ] {
        let msgs = vec!["<iq type='get'/>".to_string(), "a\"\\\n\u{2028}é".into()];
        let mut b = w.prelude();
        b.extend(w.encode("o"));
        b.extend(w.encode(&array_frame(&msgs)));
        b.extend(w.encode(&close_frame(3000, "Go away!")));
        let mut rd = StreamReader::new(w.clone(), 1 << 16);
        let mut got = Vec::new();
        for chunk in b.chunks(7) {
            got.extend(rd.push(chunk).unwrap_or_else(|| panic!("{w:?}")));
        }
        got.retain(|f| *f != Frame::Heartbeat);
        assert_eq!(
            got,
            vec![
                Frame::Open,
                Frame::Messages(msgs),
                Frame::Close(3000, "Go away!".into())
            ],
            "{w:?}"
        );
    }
}

#[test]
fn escaping() {
    assert_eq!(quote("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
    assert_eq!(
        quote("\u{2028}\u{200c}\u{fff0}\u{ffff}"),
        "\"\\u2028\\u200c\\ufff0\\uffff\""
    );
    assert_eq!(quote("é<>&'"), "\"é<>&'\"");
    assert_eq!(
        decode_messages(br#"["\ud83d\ude00","\ud800x"]"#),
        Some(vec!["😀".into(), "\u{fffd}x".into()])
    );
    assert_eq!(
        parse_frame("c[2010,\"Another connection still open\"]"),
        Some(Frame::Close(2010, "Another connection still open".into()))
    );
    assert_eq!(
        parse_frame("m\"x\""),
        Some(Frame::Messages(vec!["x".into()]))
    );
    assert_eq!(parse_frame("a"), None);
    assert_eq!(parse_frame("x"), None);
}

proptest! {
    #[test]
    fn quote_round_trips(s in any::<String>()) {
        let q = quote(&s);
        prop_assert!(q.chars().all(|c| !json::escapable(c) || c == '"'));
        prop_assert_eq!(decode_messages(q.as_bytes()), Some(vec![s]));
    }

    #[test]
    fn frames_round_trip(msgs in proptest::collection::vec(any::<String>(), 0..5), code in any::<u16>(), reason in any::<String>()) {
        prop_assert_eq!(parse_frame(&array_frame(&msgs)), Some(Frame::Messages(msgs)));
        prop_assert_eq!(parse_frame(&close_frame(code, &reason)), Some(Frame::Close(code, reason)));
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        fuzz(&b);
        let _ = decode_messages(&b);
    }

    #[test]
    fn one_receiver_at_most(ops in proptest::collection::vec((0u8..5, 0u64..10), 0..60)) {
        let mut s = Server::new(SockJsConfig::default());
        let mut now = 0;
        let mut open: std::collections::HashSet<RecvId> = Default::default();
        let mut ids = Vec::new();
        for (op, arg) in ops {
            now += arg * S;
            match op {
                0 => ids.push(s.receive(now, "x", if arg % 2 == 0 { Wire::XhrPolling } else { Wire::XhrStreaming })),
                1 => s.send(now, "x", format!("m{arg}")),
                2 => if let Some(&r) = ids.get(arg as usize) { s.gone(now, r); open.remove(&r); },
                3 => s.handle_timeout(now),
                _ => s.close(now, "x", 3000, "Go away!"),
            }
            for o in std::iter::from_fn(|| s.poll_output()) {
                match o {
                    Output::Data { recv, .. } => { open.insert(recv); }
                    Output::End { recv } => { open.remove(&recv); }
                    _ => {}
                }
            }
            // Every open response is the session's one receiver.
            prop_assert!(open.len() <= 1, "{open:?}");
        }
    }
}

#[test]
fn messages_queued_before_a_close_still_go_out_first() {
    let mut s = Server::new(SockJsConfig::default());
    s.receive(0, "x", Wire::XhrPolling);
    s.send(1, "x", "err".into());
    s.close(1, "x", 3000, "Go away!");
    drain(&mut s);
    let r = s.receive(2, "x", Wire::XhrPolling);
    assert_eq!(data(&drain(&mut s), r), "a[\"err\"]\n");
    let r = s.receive(3, "x", Wire::XhrPolling);
    assert_eq!(data(&drain(&mut s), r), "c[3000,\"Go away!\"]\n");
}

#[test]
fn a_session_over_the_cap_is_refused_until_an_abandoned_one_is_forgotten() {
    let mut s = Server::new(SockJsConfig {
        max_sessions: 1,
        ..SockJsConfig::default()
    });
    let a = s.receive(0, "a", Wire::XhrPolling);
    assert_eq!(data(&drain(&mut s), a), "o\n");
    let b = s.receive(0, "b", Wire::XhrPolling);
    let o = drain(&mut s);
    assert_eq!(
        data(&o, b),
        "c[1013,\"Too many sessions, try again later\"]\n"
    );
    assert!(ended(&o, b) && !o.contains(&Output::Open { sid: "b".into() }));
    assert_eq!((s.len(), s.refused()), (1, 1));
    // "a" never polls again: forgotten after the disconnect delay, making room.
    s.handle_timeout(6 * S);
    drain(&mut s);
    assert!(s.is_empty());
    let b = s.receive(6 * S, "b", Wire::XhrPolling);
    assert_eq!(data(&drain(&mut s), b), "o\n");
}
