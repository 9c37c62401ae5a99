//! Deterministic two-peer harness for the engine: two [`Engine`]s joined by byte
//! buffers that the test cuts, splits and delays at will.

use proptest::prelude::*;

use crate::codec::Compression;
use crate::engine::{Delivery, Engine, EngineConfig, Enqueued, Event, LinkError, RejectReason};
use wirebench_engine::Engine as _;

const MS: u64 = 1_000_000;

fn cfg(local: &[&str], remote: &[&str], mode: Compression, instance: u64) -> EngineConfig {
    let mut c = EngineConfig::new(local, remote, instance);
    c.compression = mode;
    c
}

/// Side A serves a.test, side B serves b.test.
struct Pair {
    a: Engine,
    b: Engine,
    now: u64,
    /// Bytes in flight on the current connection.
    ab: Vec<u8>,
    ba: Vec<u8>,
    /// What each side handed to its component, in order.
    a_got: Vec<Vec<u8>>,
    b_got: Vec<Vec<u8>>,
    /// Confirm deliveries at once (else they wait in the engine).
    auto_deliver: bool,
    up: bool,
}

impl Pair {
    fn new(mode: Compression) -> Pair {
        Pair::with(
            cfg(&["a.test"], &["b.test"], mode, 0xA),
            cfg(&["b.test"], &["a.test"], mode, 0xB),
        )
    }

    fn with(a: EngineConfig, b: EngineConfig) -> Pair {
        Pair {
            a: Engine::new(a),
            b: Engine::new(b),
            now: 1,
            ab: Vec::new(),
            ba: Vec::new(),
            a_got: Vec::new(),
            b_got: Vec::new(),
            auto_deliver: true,
            up: false,
        }
    }

    fn up(&mut self) {
        self.a.link_up(self.now);
        self.b.link_up(self.now);
        self.up = true;
    }

    fn down(&mut self) {
        self.a.link_down(self.now);
        self.b.link_down(self.now);
        self.ab.clear();
        self.ba.clear();
        self.up = false;
    }

    /// Moves everything each side wants to send into the wire buffers.
    fn transmit(&mut self) {
        while let Some(t) = self.a.poll_link_transmit() {
            self.ab.extend_from_slice(&t);
        }
        while let Some(t) = self.b.poll_link_transmit() {
            self.ba.extend_from_slice(&t);
        }
    }

    /// Hands up to `n` bytes of each wire buffer to the other side, in chunks of `split`.
    fn carry(&mut self, n: usize, split: usize) -> Result<(), LinkError> {
        let split = split.max(1);
        let k = n.min(self.ab.len());
        let chunk: Vec<u8> = self.ab.drain(..k).collect();
        for c in chunk.chunks(split) {
            self.b.handle_link_bytes(self.now, c)?;
            self.drain_deliveries();
        }
        let k = n.min(self.ba.len());
        let chunk: Vec<u8> = self.ba.drain(..k).collect();
        for c in chunk.chunks(split) {
            self.a.handle_link_bytes(self.now, c)?;
            self.drain_deliveries();
        }
        Ok(())
    }

    fn drain_deliveries(&mut self) {
        if !self.auto_deliver {
            return;
        }
        while let Some(d) = self.a.poll_delivery_any() {
            self.a_got.push(d.bytes.clone());
            self.a.delivery_done(self.now, &d);
        }
        while let Some(d) = self.b.poll_delivery_any() {
            self.b_got.push(d.bytes.clone());
            self.b.delivery_done(self.now, &d);
        }
    }

    /// Runs the connection until nothing moves (timers fired as needed).
    fn settle(&mut self) {
        for _ in 0..1000 {
            self.drain_deliveries();
            self.transmit();
            if self.ab.is_empty() && self.ba.is_empty() {
                let next = [self.a.poll_timeout(), self.b.poll_timeout()]
                    .into_iter()
                    .flatten()
                    .min();
                match next {
                    Some(t) => {
                        self.now = self.now.max(t);
                        self.a.handle_timeout(self.now).unwrap();
                        self.b.handle_timeout(self.now).unwrap();
                        continue;
                    }
                    None => return,
                }
            }
            self.carry(usize::MAX, 1 << 20).expect("healthy link");
        }
        panic!("the link does not settle");
    }
}

fn msg(from: &str, to: &str, i: usize) -> Vec<u8> {
    format!("<message xmlns='jabber:component:accept' to='{to}' from='{from}' type='chat' id='p{i}'><body>{i}</body></message>")
        .into_bytes()
}

fn expect_link(i: usize) -> Vec<u8> {
    format!("<message from='alice@a.test/wb' to='bob@b.test/wb' type='chat' id='p{i}'><body>{i}</body></message>")
        .into_bytes()
}

fn a_msg(i: usize) -> Vec<u8> {
    msg("alice@a.test/wb", "bob@b.test/wb", i)
}

fn b_msg(i: usize) -> Vec<u8> {
    msg("bob@b.test/wb", "alice@a.test/wb", i)
}

fn queued(r: Enqueued) -> u64 {
    match r {
        Enqueued::Queued { seq } => seq,
        other => panic!("{other:?}"),
    }
}

fn events(e: &mut Engine) -> Vec<Event> {
    std::iter::from_fn(|| e.poll_event()).collect()
}

#[test]
fn xep0361_stanzas_cross_in_both_directions_in_every_mode() {
    for mode in Compression::ALL {
        let mut p = Pair::new(mode);
        p.up();
        for i in 0..3 {
            queued(p.a.enqueue_outbound(&a_msg(i)));
            queued(p.b.enqueue_outbound(&b_msg(i)));
        }
        queued(p.a.enqueue_outbound(b"<presence from='alice@a.test/wb' to='bob@b.test'/>"));
        queued(p.a.enqueue_outbound(
            b"<iq type='get' id='v1' from='alice@a.test/wb' to='b.test'>\
              <query xmlns='jabber:iq:version'/></iq>",
        ));
        p.settle();
        assert_eq!(p.b_got.len(), 5, "{mode:?}");
        assert_eq!(p.a_got.len(), 3, "{mode:?}");
        for i in 0..3 {
            assert_eq!(p.b_got[i], expect_link(i), "{mode:?}");
        }
        assert_eq!(
            p.b_got[3],
            b"<presence from='alice@a.test/wb' to='bob@b.test'/>"
        );
        assert!(p.b_got[4].starts_with(b"<iq from='alice@a.test/wb' to='b.test' type='get'"));
        // Everything acknowledged: nothing left to resend.
        assert_eq!((p.a.unacked(), p.b.unacked()), (0, 0), "{mode:?}");
        assert_eq!(p.a.stats().stanzas_out, 5);
        assert_eq!(p.b.stats().stanzas_in, 5);
    }
}

#[test]
fn xep0361_no_stream_header_the_first_bytes_are_the_marker() {
    let mut p = Pair::new(Compression::None);
    queued(p.a.enqueue_outbound(&a_msg(0)));
    p.up();
    let first = p.a.poll_link_transmit().unwrap();
    let text = String::from_utf8(first).unwrap();
    assert_eq!(
        text,
        format!(
            "<s xmlns='urn:wirebench:x2x:0' n='0' i='a'/>{}",
            String::from_utf8(expect_link(0)).unwrap()
        )
    );
    assert!(!text.contains("stream:stream"));
}

#[test]
fn xep0198_acks_come_after_n_stanzas_or_the_idle_delay() {
    // No extra wait for answers here (see a_due_ack_waits_for_the_expected_answer).
    let mut a = cfg(&["a.test"], &["b.test"], Compression::ZlibDict, 0xA);
    let mut b = cfg(&["b.test"], &["a.test"], Compression::ZlibDict, 0xB);
    a.reply_wait_ns = 0;
    b.reply_wait_ns = 0;
    let mut p = Pair::with(a, b);
    p.up();
    p.settle();
    let acks0 = p.b.stats().acks_sent;
    // One stanza: B acks only when the ack delay expires (after a half-way mark at
    // which an ack could ride on a stanza, but B has none to send).
    queued(p.a.enqueue_outbound(&a_msg(0)));
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    assert_eq!(p.b_got.len(), 1);
    assert_eq!(p.b.poll_link_transmit(), None, "no ack before the delay");
    let start = p.now;
    let half = p.b.poll_timeout().expect("ack timer");
    assert_eq!(half, start + 500 * MS);
    p.now = half;
    p.b.handle_timeout(p.now).unwrap();
    assert_eq!(p.b.poll_link_transmit(), None, "nothing to ride on");
    let due = p.b.poll_timeout().expect("ack timer");
    assert_eq!(due, start + 1000 * MS);
    p.now = due;
    p.b.handle_timeout(p.now).unwrap();
    p.settle();
    assert_eq!(p.b.stats().acks_sent, acks0 + 1);
    assert_eq!(p.a.unacked(), 0);
    // A burst of 8 (ack_every): acked without waiting.
    for i in 1..=8 {
        queued(p.a.enqueue_outbound(&a_msg(i)));
    }
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    assert!(p.b.poll_timeout().is_none(), "ack due now, no timer");
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    assert_eq!(p.a.unacked(), 0);
}

/// Issue 19 item 4: with a 10 s ack delay and a 10 s typing pause, an ack timer that
/// fired just before the answer would put a lone ack segment ahead of it on the link; a
/// due ack waits for the expected answer instead.
#[test]
fn a_due_ack_waits_for_the_expected_answer() {
    let mk = |local: &str, remote: &str, i| {
        let mut c = cfg(&[local], &[remote], Compression::None, i);
        c.ack_delay_ns = 10_000 * MS;
        c.reply_wait_ns = 30_000 * MS;
        c
    };
    let mut p = Pair::with(mk("a.test", "b.test", 0xA), mk("b.test", "a.test", 0xB));
    p.up();
    p.settle();
    let lone = |p: &mut Pair, at: u64| {
        p.now = at;
        p.b.handle_timeout(p.now).unwrap();
        p.b.poll_link_transmit()
            .map(|t| String::from_utf8(t).unwrap())
    };
    // A chat message invites an answer: at the ack delay nothing goes alone ...
    queued(p.a.enqueue_outbound(&a_msg(0)));
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    let start = p.now;
    assert_eq!(lone(&mut p, start + 5_000 * MS), None);
    assert_eq!(
        lone(&mut p, start + 10_000 * MS),
        None,
        "no lone ack at the delay"
    );
    assert_eq!(p.b.poll_timeout(), Some(start + 30_000 * MS));
    // ... and the answer typed 10 s later carries it.
    p.now = start + 10_010 * MS;
    queued(p.b.enqueue_outbound(&b_msg(0)));
    let t = String::from_utf8(p.b.poll_link_transmit().unwrap()).unwrap();
    assert!(t.ends_with("<a xmlns='urn:xmpp:sm:3' h='1'/>"), "{t}");
    // No answer ever: the ack goes alone once reply_wait has passed.
    queued(p.a.enqueue_outbound(&a_msg(1)));
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    let start = p.now;
    assert_eq!(lone(&mut p, start + 10_000 * MS), None);
    let t = lone(&mut p, start + 30_000 * MS).expect("lone ack at reply_wait");
    assert!(t.contains("h='2'"), "{t}");
    // A headline invites no answer: the ack goes alone at the ack delay.
    let headline = String::from_utf8(a_msg(2))
        .unwrap()
        .replace("'chat'", "'headline'");
    queued(p.a.enqueue_outbound(headline.as_bytes()));
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    let start = p.now;
    assert_eq!(lone(&mut p, start + 5_000 * MS), None);
    let t = lone(&mut p, start + 10_000 * MS).expect("lone ack at the delay");
    assert!(t.contains("h='3'"), "{t}");
}

#[test]
fn acks_ride_on_reply_stanzas() {
    let mut p = Pair::new(Compression::None);
    p.up();
    p.settle();
    // Half of ack_every (4) delivered: the ack rides on the reply.
    for i in 0..4 {
        queued(p.a.enqueue_outbound(&a_msg(i)));
    }
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    queued(p.b.enqueue_outbound(&b_msg(0)));
    let t = String::from_utf8(p.b.poll_link_transmit().unwrap()).unwrap();
    assert!(t.ends_with("<a xmlns='urn:xmpp:sm:3' h='4'/>"), "{t}");
    // One delivered: no ride until half the ack delay has passed.
    queued(p.a.enqueue_outbound(&a_msg(4)));
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    queued(p.b.enqueue_outbound(&b_msg(1)));
    let t = String::from_utf8(p.b.poll_link_transmit().unwrap()).unwrap();
    assert!(!t.contains("<a "), "{t}");
    p.now += 500 * MS;
    p.b.handle_timeout(p.now).unwrap();
    queued(p.b.enqueue_outbound(&b_msg(2)));
    let t = String::from_utf8(p.b.poll_link_transmit().unwrap()).unwrap();
    assert!(t.ends_with("<a xmlns='urn:xmpp:sm:3' h='5'/>"), "{t}");
}

#[test]
fn request_when_the_queue_is_half_full() {
    let mut a = cfg(&["a.test"], &["b.test"], Compression::None, 1);
    a.queue_stanzas = 8;
    let mut p = Pair::with(a, cfg(&["b.test"], &["a.test"], Compression::None, 2));
    p.up();
    p.settle();
    for i in 0..4 {
        queued(p.a.enqueue_outbound(&a_msg(i)));
    }
    let t = String::from_utf8(p.a.poll_link_transmit().unwrap()).unwrap();
    assert!(t.ends_with("<r xmlns='urn:xmpp:sm:3'/>"), "{t}");
    p.ab.extend_from_slice(t.as_bytes());
    p.carry(usize::MAX, 7).unwrap();
    // B answers the request at once, before its ack delay.
    let t = String::from_utf8(p.b.poll_link_transmit().unwrap()).unwrap();
    assert!(t.contains("h='4'"), "{t}");
}

/// A sends `n` stanzas; the connection breaks after `cut` bytes reached B (and B's
/// answers are lost too); a new connection must deliver every stanza exactly once.
fn cut_run(mode: Compression, n: usize, cut: usize, back_cut: usize) -> (Vec<Vec<u8>>, usize) {
    let mut p = Pair::new(mode);
    p.up();
    for i in 0..n {
        queued(p.a.enqueue_outbound(&a_msg(i)));
    }
    p.transmit();
    let total = p.ab.len();
    let bytes: Vec<u8> = p.ab.drain(..cut.min(total)).collect();
    // A prefix of a zlib stream can end mid-symbol: that is what a cut looks like.
    let _ = p.b.handle_link_bytes(p.now, &bytes);
    p.drain_deliveries();
    // Some of B's answer (marker, ack) reaches A before the break.
    while let Some(t) = p.b.poll_link_transmit() {
        p.ba.extend_from_slice(&t);
    }
    let back: Vec<u8> = p.ba.drain(..back_cut.min(p.ba.len())).collect();
    let _ = p.a.handle_link_bytes(p.now, &back);
    p.down();
    p.up();
    p.settle();
    (p.b_got, total)
}

#[test]
fn resend_after_a_break_at_every_byte_delivers_exactly_once() {
    for mode in Compression::ALL {
        let (_, total) = cut_run(mode, 5, usize::MAX, 0);
        for cut in 0..=total {
            for back in [0, 10, 1000] {
                let (got, _) = cut_run(mode, 5, cut, back);
                let want: Vec<Vec<u8>> = (0..5).map(expect_link).collect();
                assert_eq!(got, want, "{mode:?} cut at {cut} of {total}, back {back}");
            }
        }
    }
}

#[test]
fn queue_full_rejects_messages_with_an_error_and_drops_presence() {
    let mut a = cfg(&["a.test"], &["b.test"], Compression::ZlibDict, 1);
    a.queue_stanzas = 3;
    let mut e = Engine::new(a);
    for i in 0..3 {
        queued(e.enqueue_outbound(&a_msg(i)));
    }
    let r = e.enqueue_outbound(&a_msg(3));
    assert_eq!(
        r,
        Enqueued::Rejected {
            reason: RejectReason::QueueFull,
            bounced: true
        }
    );
    let d = e
        .poll_delivery("b.test")
        .expect("error reply for the local server");
    let s = String::from_utf8(d.bytes.clone()).unwrap();
    assert_eq!(
        s,
        "<message from='bob@b.test/wb' to='alice@a.test/wb' type='error' id='p3'>\
         <error type='wait'><resource-constraint xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>\
         <text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>x2x link queue is full; try again \
         later</text></error></message>"
    );
    e.delivery_done(1, &d);
    let r = e.enqueue_outbound(b"<presence from='alice@a.test/wb' to='bob@b.test'/>");
    assert_eq!(
        r,
        Enqueued::Rejected {
            reason: RejectReason::QueueFull,
            bounced: false
        }
    );
    // An error stanza never gets an error back.
    let r =
        e.enqueue_outbound(b"<message type='error' from='alice@a.test/wb' to='bob@b.test/wb'/>");
    assert!(matches!(r, Enqueued::Rejected { bounced: false, .. }));
    assert!(e.poll_delivery_any().is_none());
    let s = e.stats();
    assert_eq!((s.rejected_queue_full, s.presence_dropped), (2, 1));
    assert_eq!(events(&mut e).len(), 3);
    // Byte bound too.
    let mut a = cfg(&["a.test"], &["b.test"], Compression::ZlibDict, 1);
    a.queue_bytes = 150;
    let mut e = Engine::new(a);
    queued(e.enqueue_outbound(&a_msg(0)));
    assert!(matches!(
        e.enqueue_outbound(&a_msg(1)),
        Enqueued::Rejected {
            reason: RejectReason::QueueFull,
            ..
        }
    ));
}

#[test]
fn outbound_domains_are_validated() {
    let mut e = Engine::new(cfg(&["a.test"], &["b.test"], Compression::None, 1));
    let r = e.enqueue_outbound(&msg("eve@evil.test/x", "bob@b.test/wb", 1));
    assert_eq!(
        r,
        Enqueued::Rejected {
            reason: RejectReason::BadFrom,
            bounced: true
        }
    );
    let d = e.poll_delivery("b.test").unwrap();
    assert!(String::from_utf8_lossy(&d.bytes).contains("<not-allowed "));
    // 'to' outside the remote domains: no component could carry a reply from there.
    let r = e.enqueue_outbound(&msg("alice@a.test/x", "carol@c.test", 1));
    assert_eq!(
        r,
        Enqueued::Rejected {
            reason: RejectReason::BadTo,
            bounced: false
        }
    );
    for bad in [
        &b"<handshake/>"[..],
        b"<message from='alice@a.test' to='bob@b.test'><body></message>",
        b"<message to='bob@b.test'/>",
    ] {
        assert!(
            matches!(e.enqueue_outbound(bad), Enqueued::Rejected { .. }),
            "{bad:?}"
        );
    }
    assert_eq!(e.unacked(), 0);
}

#[test]
fn inbound_domains_are_validated_with_an_error_back_where_possible() {
    // A forges what B must refuse: its config allows more than B's.
    let a = cfg(
        &["a.test", "evil.test"],
        &["b.test", "c.test"],
        Compression::ZlibDict,
        1,
    );
    let b = cfg(&["b.test"], &["a.test"], Compression::ZlibDict, 2);
    let mut p = Pair::with(a, b);
    p.up();
    queued(p.a.enqueue_outbound(&msg("eve@evil.test/x", "bob@b.test/wb", 1)));
    queued(p.a.enqueue_outbound(&msg("alice@a.test/wb", "carol@c.test/x", 2)));
    queued(p.a.enqueue_outbound(&a_msg(3)));
    p.settle();
    assert_eq!(p.b_got, vec![expect_link(3)]);
    assert_eq!(p.b.stats().inbound_invalid, 2);
    let ev = events(&mut p.b);
    assert!(
        matches!(
            &ev[0],
            Event::InboundDropped {
                reason: RejectReason::BadFrom,
                bounced: false,
                ..
            }
        ),
        "{ev:?}"
    );
    assert!(
        matches!(
            &ev[1],
            Event::InboundDropped {
                reason: RejectReason::BadTo,
                bounced: true,
                ..
            }
        ),
        "{ev:?}"
    );
    // The error came back over the link to A's component.
    assert_eq!(p.a_got.len(), 1);
    let s = String::from_utf8(p.a_got[0].clone()).unwrap();
    assert!(
        s.starts_with("<message from='b.test' to='alice@a.test/wb' type='error' id='p2'>"),
        "{s}"
    );
    assert!(s.contains("item-not-found"));
    // Dropped stanzas still count as handled: A's queue is empty.
    assert_eq!(p.a.unacked(), 0);
}

#[test]
fn oversize_stanza_from_the_peer_closes_the_connection() {
    let a = cfg(&["a.test"], &["b.test"], Compression::ZlibDict, 1);
    let mut b = cfg(&["b.test"], &["a.test"], Compression::ZlibDict, 2);
    b.max_stanza = 300;
    let mut p = Pair::with(a, b);
    p.up();
    let big = format!(
        "<message from='alice@a.test/wb' to='bob@b.test'><body>{}</body></message>",
        "x".repeat(1000)
    );
    queued(p.a.enqueue_outbound(big.as_bytes()));
    p.transmit();
    let e = p.carry(usize::MAX, 1000).unwrap_err();
    assert_eq!(e, LinkError::TooLarge { limit: 300 });
    assert!(!p.b.can_accept_link_input());
    assert!(matches!(
        events(&mut p.b)[..],
        [Event::LinkFailed(LinkError::TooLarge { .. })]
    ));
    assert!(p.b_got.is_empty());
    // And from the local server: refused, not queued.
    let mut e = Engine::new({
        let mut c = cfg(&["a.test"], &["b.test"], Compression::None, 1);
        c.max_stanza = 300;
        c
    });
    assert!(matches!(
        e.enqueue_outbound(big.replace("alice@a", "x@a").as_bytes()),
        Enqueued::Rejected {
            reason: RejectReason::TooLarge,
            ..
        }
    ));
}

#[test]
fn garbage_and_protocol_violations_fail_the_connection() {
    let cases: Vec<(Compression, Vec<u8>)> = vec![
        (Compression::None, b"hello".to_vec()),
        (
            Compression::None,
            b"<stream:stream xmlns:stream='http://etherx.jabber.org/streams'></stream:stream>"
                .to_vec(),
        ),
        (
            Compression::None,
            b"<message from='bob@b.test' to='alice@a.test'/>".to_vec(),
        ),
        (
            Compression::None,
            b"<s xmlns='urn:wirebench:x2x:0' n='x' i='1'/>".to_vec(),
        ),
        (
            Compression::None,
            b"<s xmlns='urn:wirebench:x2x:0' n='0' i='1'/><a xmlns='urn:xmpp:sm:3' h='5'/>"
                .to_vec(),
        ),
        (
            Compression::None,
            b"<s xmlns='urn:wirebench:x2x:0' n='0' i='1'/><foo/>".to_vec(),
        ),
        (
            Compression::None,
            b"<s xmlns='urn:wirebench:x2x:0' n='0' i='1'/><message><body></message></x>".to_vec(),
        ),
        (Compression::Zlib, b"<message/>".to_vec()),
        (
            Compression::ZlibDict,
            vec![0x78, 0xda, 0xff, 0xff, 0xff, 0xff, 0xff],
        ),
    ];
    for (mode, bytes) in cases {
        let mut e = Engine::new(cfg(&["a.test"], &["b.test"], mode, 1));
        e.link_up(1);
        let r = e.handle_link_bytes(1, &bytes);
        assert!(r.is_err(), "{mode:?} {:?}", String::from_utf8_lossy(&bytes));
        assert!(matches!(e.poll_event(), Some(Event::LinkFailed(_))));
        assert_eq!(e.handle_link_bytes(1, b"<x/>"), Err(LinkError::NotUp));
        // A new connection starts clean.
        e.link_down(1);
        e.link_up(2);
        assert!(e.can_accept_link_input());
    }
}

#[test]
fn marker_that_skips_stanzas_is_refused() {
    let mut e = Engine::new(cfg(&["b.test"], &["a.test"], Compression::None, 1));
    e.link_up(1);
    e.handle_link_bytes(1, b"<s xmlns='urn:wirebench:x2x:0' n='0' i='7'/>")
        .unwrap();
    e.link_down(1);
    e.link_up(2);
    let r = e.handle_link_bytes(2, b"<s xmlns='urn:wirebench:x2x:0' n='5' i='7'/>");
    assert!(matches!(r, Err(LinkError::Protocol(m)) if m.contains("skips")));
}

#[test]
fn stream_close_is_exchanged_with_a_final_ack() {
    let mut p = Pair::new(Compression::None);
    p.up();
    p.settle();
    queued(p.b.enqueue_outbound(&b_msg(0)));
    p.transmit();
    p.carry(usize::MAX, 1000).unwrap();
    assert_eq!(
        p.b.unacked(),
        1,
        "one delivered stanza is not acknowledged yet"
    );
    p.a.close();
    let t = String::from_utf8(p.a.poll_link_transmit().unwrap()).unwrap();
    // A's marker rides first: A had sent nothing on this connection before.
    assert!(
        t.ends_with("<a xmlns='urn:xmpp:sm:3' h='1'/></stream:stream>"),
        "{t}"
    );
    p.ab.extend_from_slice(t.as_bytes());
    p.carry(usize::MAX, 3).unwrap();
    assert_eq!(p.b.unacked(), 0);
    assert!(events(&mut p.b).contains(&Event::PeerClosed));
    assert!(!p.b.can_accept_link_input());
    let mut p = Pair::new(Compression::ZlibDict);
    p.up();
    p.settle();
    p.a.close();
    p.transmit();
    p.carry(usize::MAX, 3).unwrap();
    assert!(events(&mut p.b).contains(&Event::PeerClosed));
    assert!(!p.b.can_accept_link_input());
}

#[test]
fn a_restarted_peer_is_counted_from_its_marker() {
    let mut p = Pair::new(Compression::ZlibDict);
    p.up();
    for i in 0..3 {
        queued(p.a.enqueue_outbound(&a_msg(i)));
    }
    p.settle();
    p.down();
    // A restarts: a new process with a new instance, numbering from 0 again.
    p.a = Engine::new(cfg(&["a.test"], &["b.test"], Compression::ZlibDict, 0xA2));
    queued(p.a.enqueue_outbound(&a_msg(10)));
    p.up();
    p.settle();
    assert_eq!(p.b_got.len(), 4);
    assert_eq!(p.b_got[3], expect_link(10));
    assert!(events(&mut p.b).contains(&Event::PeerRestarted {
        old: 0xA,
        new: 0xA2
    }));
}

#[test]
fn full_delivery_queue_stops_decoding_and_resumes() {
    let a = cfg(&["a.test"], &["b.test"], Compression::ZlibDict, 1);
    let mut b = cfg(&["b.test"], &["a.test"], Compression::ZlibDict, 2);
    b.queue_stanzas = 4;
    let mut p = Pair::with(a, b);
    p.auto_deliver = false;
    p.up();
    for i in 0..20 {
        queued(p.a.enqueue_outbound(&a_msg(i)));
    }
    p.transmit();
    p.carry(usize::MAX, 100_000).unwrap();
    assert_eq!(p.b.pending_deliveries(), 4);
    assert!(!p.b.can_accept_link_input());
    let mut got = Vec::new();
    let mut failed_once = false;
    for _ in 0..100 {
        let Some(d) = p.b.poll_delivery("a.test") else {
            break;
        };
        if !failed_once {
            // The component connection broke while writing: the stanza goes back.
            failed_once = true;
            p.b.delivery_failed(d);
            continue;
        }
        got.push(d.bytes.clone());
        p.b.delivery_done(p.now, &d);
    }
    let want: Vec<Vec<u8>> = (0..20).map(expect_link).collect();
    assert_eq!(got, want);
    assert!(p.b.can_accept_link_input());
}

#[test]
fn deliveries_route_by_the_remote_domain() {
    let a = cfg(&["a.test", "muc.a.test"], &["b.test"], Compression::None, 1);
    let b = cfg(&["b.test"], &["a.test", "muc.a.test"], Compression::None, 2);
    let mut p = Pair::with(a, b);
    p.auto_deliver = false;
    p.up();
    queued(p.a.enqueue_outbound(&msg("room@muc.a.test/nick", "bob@b.test", 1)));
    queued(p.a.enqueue_outbound(&a_msg(2)));
    p.transmit();
    p.carry(usize::MAX, 100).unwrap();
    let d: Delivery = p.b.poll_delivery("muc.a.test").unwrap();
    assert!(d.bytes.starts_with(b"<message from='room@muc.a.test/nick'"));
    assert!(p.b.has_delivery("a.test"));
    assert!(p.b.poll_delivery("muc.a.test").is_none());
}

// ----- the per-stanza overhead on the wire (study S1: ~28 bytes after compression) -----

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn payload(&mut self, n: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n)
            .map(|_| ALPHABET[(self.next() % ALPHABET.len() as u64) as usize] as char)
            .collect()
    }
}

/// Average link bytes per stanza, minus the payload, over stanzas 200..1000 of a ping-pong
/// exchange (A's message, B's reply carrying B's ack, and so on), each stanza in its own
/// write batch (its own flush), as the S1 latency test sends them. Counts both
/// directions' bytes, so acks are included.
fn pingpong_overhead(mode: Compression, payload: usize) -> f64 {
    let mut p = Pair::new(mode);
    p.up();
    p.settle();
    let mut rng = Rng(0x5eed);
    let (warm, total) = (200, 1000);
    let mut bytes = 0usize;
    for i in 0..total {
        let body_a = rng.payload(payload);
        let body_b = rng.payload(payload);
        let ma = format!(
            "<message to='bob@b.test/wb' from='alice@a.test/wb' type='chat' id='p{i}'>\
             <body>{body_a}</body></message>"
        );
        let mb = format!(
            "<message to='alice@a.test/wb' from='bob@b.test/wb' type='chat' id='rp{i}'>\
             <body>{body_b}</body></message>"
        );
        queued(p.a.enqueue_outbound(ma.as_bytes()));
        let ta = p.a.poll_link_transmit().unwrap();
        p.b.handle_link_bytes(p.now, &ta).unwrap();
        p.drain_deliveries();
        queued(p.b.enqueue_outbound(mb.as_bytes()));
        let tb = p.b.poll_link_transmit().unwrap();
        p.a.handle_link_bytes(p.now, &tb).unwrap();
        p.drain_deliveries();
        assert!(p.a.poll_link_transmit().is_none() && p.b.poll_link_transmit().is_none());
        if i >= warm {
            bytes += ta.len() + tb.len();
        }
    }
    assert_eq!(
        p.a.unacked(),
        0,
        "acks piggybacked on replies keep the queue empty"
    );
    let n = 2 * (total - warm);
    bytes as f64 / n as f64 - payload as f64
}

/// Same, for a one-way stream of stanzas from A (B only acks, every 16 stanzas).
fn stream_overhead(mode: Compression, payload: usize) -> f64 {
    let mut p = Pair::new(mode);
    p.up();
    p.settle();
    let mut rng = Rng(0xfeed);
    let (warm, total) = (200, 1000);
    let mut bytes = 0usize;
    for i in 0..total {
        let body = rng.payload(payload);
        let m = format!(
            "<message to='bob@b.test/wb' from='alice@a.test/wb' type='chat' id='s{i}'>\
             <body>{body}</body></message>"
        );
        queued(p.a.enqueue_outbound(m.as_bytes()));
        let ta = p.a.poll_link_transmit().unwrap();
        p.b.handle_link_bytes(p.now, &ta).unwrap();
        p.drain_deliveries();
        let mut back = 0;
        while let Some(tb) = p.b.poll_link_transmit() {
            back += tb.len();
            p.a.handle_link_bytes(p.now, &tb).unwrap();
        }
        if i >= warm {
            bytes += ta.len() + back;
        }
    }
    bytes as f64 / (total - warm) as f64 - payload as f64
}

#[test]
fn s1_per_stanza_overhead_on_the_wire() {
    let mut report = String::new();
    for mode in Compression::ALL {
        let pp = pingpong_overhead(mode, 2);
        let st = stream_overhead(mode, 2);
        let pp100 = pingpong_overhead(mode, 100);
        report.push_str(&format!(
            "{:>9}: ping-pong 2 B {pp:6.2} B/stanza, one-way stream 2 B {st:6.2} B/stanza, \
             ping-pong 100 B {pp100:6.2} B/stanza\n",
            mode.name()
        ));
        if mode == Compression::ZlibDict && std::env::var("X2X_NO_ASSERT").is_err() {
            assert!(pp <= 16.0, "zlib-dict ping-pong overhead {pp:.2} > 16 B");
            assert!(st <= 16.0, "zlib-dict stream overhead {st:.2} > 16 B");
        }
    }
    println!("x2x per-stanza overhead (link bytes minus payload, both directions):\n{report}");
}

#[test]
fn first_stanza_on_a_new_connection_is_small_with_the_dictionary() {
    let mut sizes = Vec::new();
    for mode in Compression::ALL {
        let mut e = Engine::new(cfg(&["a.test"], &["b.test"], mode, 0x1234_5678_9abc_def0));
        queued(e.enqueue_outbound(&a_msg(1)));
        e.link_up(1);
        sizes.push((mode, e.poll_link_transmit().unwrap().len()));
    }
    println!("first write (marker + first message) per mode: {sizes:?}");
    assert!(
        sizes[2].1 < sizes[1].1 && sizes[1].1 < sizes[0].1,
        "{sizes:?}"
    );
}

// ----- property test: random traffic, random breaks, random splits -----

#[derive(Debug, Clone)]
enum Op {
    /// Side A (true) or B sends this many stanzas.
    Send(bool, u8),
    /// Carry up to this many bytes each way, split into chunks of this size.
    Carry(u16, u8),
    /// Break the connection (in-flight bytes lost) and open a new one.
    Reconnect,
    /// Let time pass (ack timers).
    Wait(u16),
    /// Confirm (true) or hold deliveries.
    AutoDeliver(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<bool>(), 1u8..6).prop_map(|(a, n)| Op::Send(a, n)),
        4 => (1u16..400, 1u8..64).prop_map(|(n, s)| Op::Carry(n, s)),
        1 => Just(Op::Reconnect),
        1 => (1u16..500).prop_map(Op::Wait),
        1 => any::<bool>().prop_map(Op::AutoDeliver),
    ]
}

fn mode() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Zlib),
        Just(Compression::ZlibDict)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn every_stanza_exactly_once_in_order_despite_breaks(
        mode in mode(),
        ops in proptest::collection::vec(op(), 1..60),
        small_queue in any::<bool>(),
    ) {
        let mut a = cfg(&["a.test"], &["b.test"], mode, 0xA);
        let mut b = cfg(&["b.test"], &["a.test"], mode, 0xB);
        if small_queue {
            a.queue_stanzas = 6;
            b.queue_stanzas = 6;
            a.ack_every = 2;
            b.ack_every = 3;
        }
        let mut p = Pair::with(a, b);
        p.up();
        let (mut sent_a, mut sent_b) = (Vec::new(), Vec::new());
        let (mut na, mut nb) = (0usize, 0usize);
        for op in ops {
            match op {
                Op::Send(true, n) => for _ in 0..n {
                    if let Enqueued::Queued { .. } = p.a.enqueue_outbound(&a_msg(na)) {
                        sent_a.push(expect_link(na));
                    }
                    na += 1;
                },
                Op::Send(false, n) => for _ in 0..n {
                    if let Enqueued::Queued { .. } = p.b.enqueue_outbound(&b_msg(nb)) {
                        sent_b.push(nb);
                    }
                    nb += 1;
                },
                Op::Carry(n, split) => {
                    p.transmit();
                    p.carry(n as usize, split as usize).expect("no error on a healthy link");
                }
                Op::Reconnect => { p.down(); p.up(); }
                Op::Wait(ms) => {
                    p.now += ms as u64 * MS;
                    p.a.handle_timeout(p.now).unwrap();
                    p.b.handle_timeout(p.now).unwrap();
                }
                Op::AutoDeliver(on) => {
                    p.auto_deliver = on;
                    p.drain_deliveries();
                }
            }
        }
        p.auto_deliver = true;
        // Queue-full error replies go to the local component, not over the link.
        p.settle();
        let got_b: Vec<Vec<u8>> = p.b_got.iter()
            .filter(|m| !m.windows(12).any(|w| w == b"type='error'"))
            .cloned()
            .collect();
        prop_assert_eq!(got_b, sent_a);
        let got_a: Vec<usize> = p.a_got.iter()
            .filter(|m| !m.windows(12).any(|w| w == b"type='error'"))
            .map(|m| {
                let s = String::from_utf8_lossy(m);
                let id = s.split("id='p").nth(1).unwrap_or("").split('\'').next().unwrap_or("");
                id.parse::<usize>().unwrap_or(usize::MAX)
            })
            .collect();
        prop_assert_eq!(got_a, sent_b);
        prop_assert_eq!((p.a.unacked(), p.b.unacked()), (0, 0));
    }

    #[test]
    fn arbitrary_peer_bytes_never_panic(
        mode in mode(),
        prefix in any::<bool>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        split in 1usize..50,
    ) {
        let mut e = Engine::new(cfg(&["b.test"], &["a.test"], mode, 1));
        e.link_up(1);
        if prefix && mode == Compression::None {
            let _ = e.handle_link_bytes(1, b"<s xmlns='urn:wirebench:x2x:0' n='0' i='1'/>");
        }
        for c in bytes.chunks(split) {
            if e.handle_link_bytes(1, c).is_err() {
                break;
            }
        }
        while e.poll_event().is_some() {}
        while let Some(d) = e.poll_delivery_any() { e.delivery_done(2, &d); }
        let _ = e.poll_link_transmit();
    }
}
