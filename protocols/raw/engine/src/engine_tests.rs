//! The engines against each other: in memory, and over the link model in virtual time
//! (the netsim idea of smoltcp), where round trips must match the link's arithmetic to
//! the nanosecond.

use super::*;
use crate::raw::{HEADER_LEN, Pattern};
use proptest::prelude::*;
use wirebench_engine::harness::Pair;
use wirebench_link::{LinkParams, serialization_ns};

/// Largest chunk put on the link as one packet (a TCP segment's payload at MTU 1500).
const MSS: usize = 1448;

fn open(behaviour: Behaviour, payload: u32, think_ns: u64) -> Open {
    Open {
        protocol: "raw".into(),
        behaviour,
        max_payload: payload,
        think_ns,
        seed: 7,
        verify: behaviour == Behaviour::Sink,
        nodelay: true,
    }
}

/// Runs a client and a responder over two links (up: client to server) in virtual time,
/// in TCP-segment-sized packets, until the client is done; returns the virtual time it
/// took.
fn run<C: Engine<Error = FrameError>>(
    client: &mut C,
    server: &mut Responder<'_>,
    done: impl Fn(&C) -> bool,
    up: LinkParams,
    down: LinkParams,
) -> u64 {
    Pair::new(client, server, up, down)
        .with_mss(MSS)
        .run_until(|_, c, _| done(c))
}

fn rate_delay(rate_bps: u64, delay_ns: u64) -> LinkParams {
    LinkParams {
        rate_bps: Some(rate_bps),
        delay_ns,
        queue_packets: None,
        ..Default::default()
    }
}

#[test]
fn ping_pong_over_a_satcom_link_matches_the_link_arithmetic() {
    // 2400 bit/s, 500 ms each way, 2-byte payloads: every round is two delays plus the
    // 23-byte frame serialized once each way.
    let payload = 2;
    let pattern = Pattern::new(7, payload as usize);
    let mut server = Responder::new(&open(Behaviour::Echo, payload, 0), None, 0);
    let mut client = PingPong::new(&pattern, payload, 5, 0);
    let link = rate_delay(2400, 500_000_000);
    run(
        &mut client,
        &mut server,
        |c| c.is_done(),
        link.clone(),
        link,
    );
    let frame = (HEADER_LEN as u64) + u64::from(payload);
    let want = 2 * 500_000_000 + 2 * serialization_ns(frame, 2400);
    assert_eq!(client.rtts(), &[want; 5]);
    // HELLO crossed the downlink once.
    assert_eq!(
        client.hello_at(),
        Some(500_000_000 + serialization_ns(HEADER_LEN as u64, 2400))
    );
    let t = client.tally();
    assert_eq!(
        (t.counts.received, t.counts.lost, t.counts.corrupt),
        (5, 0, 0)
    );
    assert_eq!(server.report().counts.received, 5);
}

#[test]
fn think_time_is_waited_by_the_server_and_excluded_by_the_client() {
    let payload = 100;
    let pattern = Pattern::new(7, payload as usize);
    let think = 2_000_000_000;
    let mut server = Responder::new(&open(Behaviour::Echo, payload, think), None, 0);
    let mut client = PingPong::new(&pattern, payload, 3, think);
    let link = rate_delay(1_000_000, 10_000_000);
    let took = run(
        &mut client,
        &mut server,
        |c| c.is_done(),
        link.clone(),
        link,
    );
    let frame = (HEADER_LEN as u64) + u64::from(payload);
    let want = 2 * 10_000_000 + 2 * serialization_ns(frame, 1_000_000);
    assert_eq!(client.rtts(), &[want; 3]);
    assert!(took >= 3 * think, "{took}");
}

#[test]
fn multi_segment_frames_pipeline_across_the_link() {
    // 10 KiB frames are 8 packets; the echo starts before the frame is complete, so a
    // round is one frame's serialization plus one full packet's (the short last packet
    // waits on the way back behind the full one before it), not two frames'.
    let payload = 10 * 1024;
    let pattern = Pattern::new(7, payload as usize);
    let mut server = Responder::new(&open(Behaviour::Echo, payload, 0), None, 0);
    let mut client = PingPong::new(&pattern, payload, 2, 0);
    let link = rate_delay(10_000_000, 5_000_000);
    run(
        &mut client,
        &mut server,
        |c| c.is_done(),
        link.clone(),
        link,
    );
    let frame = HEADER_LEN as u64 + u64::from(payload);
    let one_way = serialization_ns(frame, 10_000_000);
    let want = 2 * 5_000_000 + one_way + serialization_ns(MSS as u64, 10_000_000);
    for rtt in client.rtts() {
        // Per-packet rounding of the serialization: within a nanosecond per packet.
        assert!(rtt.abs_diff(want) <= 16, "{rtt} vs {want}");
    }
}

#[test]
fn one_way_stream_is_counted_and_verified_by_the_sink() {
    let payload = 1500;
    let pattern = Pattern::new(7, payload as usize);
    let mut server = Responder::new(&open(Behaviour::Sink, payload, 0), Some(&pattern), 0);
    let mut client = Stream::new(&pattern, payload, 200, false);
    let link = rate_delay(100_000_000, 1_000_000);
    run(
        &mut client,
        &mut server,
        |c| c.is_done(),
        link.clone(),
        link,
    );
    let r = server.report();
    assert_eq!(r.counts.received, 200);
    assert_eq!(r.counts.corrupt, 0);
    assert_eq!(r.payload_bytes, 200 * 1500);
    assert_eq!(r.bytes, 200 * (1500 + HEADER_LEN as u64));
    assert!(r.last_rx_ns > r.first_rx_ns);
}

#[test]
fn echo_stream_gets_every_frame_back_and_a_stopped_stream_ends() {
    let payload = 64;
    let pattern = Pattern::new(7, payload as usize);
    let mut server = Responder::new(&open(Behaviour::Echo, payload, 0), None, 0);
    let mut client = Stream::new(&pattern, payload, 1000, true);
    run(
        &mut client,
        &mut server,
        |c| c.is_done(),
        LinkParams::default(),
        LinkParams::default(),
    );
    assert_eq!(client.received(), 1000);
    assert_eq!(client.tally().counts.lost, 0);
    assert_eq!(client.rtts().len(), 1000);

    let mut stream = Stream::new(&pattern, payload, u64::MAX, false);
    stream
        .handle_input(
            0,
            Responder::new(&open(Behaviour::Sink, payload, 0), None, 0).poll_transmit(0),
        )
        .unwrap();
    assert!(stream.poll_transmit(1).is_some());
    stream.stop();
    assert!(stream.poll_transmit(2).is_none());
    assert!(stream.is_done());
    assert_eq!(stream.sent(), 1);
}

#[test]
fn nothing_is_sent_before_hello_and_an_unanswered_round_counts_as_lost() {
    let pattern = Pattern::new(7, 10);
    let mut client = PingPong::new(&pattern, 10, 3, 0);
    assert!(client.poll_transmit(0).is_none(), "sent before HELLO");
    let hello = Responder::new(&open(Behaviour::Echo, 10, 0), None, 0)
        .poll_transmit(0)
        .to_vec();
    client.handle_input(5, &hello).unwrap();
    assert_eq!(client.hello_at(), Some(5));
    assert!(client.poll_transmit(6).is_some());
    // Only one in flight.
    assert!(client.poll_transmit(7).is_none());
    // Interrupted now: the frame in flight is lost, nothing was received.
    let t = client.tally();
    assert_eq!((t.counts.received, t.counts.lost), (0, 1));
}

#[test]
fn protocol_violations_are_errors_and_a_torn_frame_at_eof_is_reported() {
    let mut server = Responder::new(&open(Behaviour::Sink, 16, 0), None, 0);
    let mut short = [0u8; HEADER_LEN];
    short[3] = 1;
    assert!(matches!(
        server.handle_input(1, &short),
        Err(FrameError::Short(1))
    ));
    let mut server = Responder::new(&open(Behaviour::Sink, 16, 0), None, 0);
    let big = Header {
        kind: Kind::Data,
        seq: 0,
        sent_ns: 0,
        payload_len: 17,
    };
    assert!(matches!(
        server.handle_input(1, &big.encode()),
        Err(FrameError::TooLarge { len: 17, max: 16 })
    ));
    let mut server = Responder::new(&open(Behaviour::Sink, 16, 0), None, 0);
    server.handle_input(1, &[0, 0, 0]).unwrap();
    assert!(server.handle_eof().is_err());
}

#[test]
fn a_client_that_does_not_read_meets_backpressure() {
    let payload = 60_000;
    let pattern = Pattern::new(7, payload as usize);
    let mut server = Responder::new(&open(Behaviour::Echo, payload, 0), None, 0);
    let mut fed = 0usize;
    let mut seq = 0;
    while server.wants_input() {
        let t = data_frame(&pattern, seq, payload, 0);
        server.handle_input(1, &t.to_vec()).unwrap();
        fed += t.len();
        seq += 1;
        assert!(fed < 2 * MAX_BUFFERED, "never asked to stop reading");
    }
    assert!(fed >= MAX_BUFFERED);
    let n = server.poll_transmit(2).len();
    server.transmitted(n);
    assert!(server.wants_input());
}

proptest! {
    /// However the byte stream is cut into reads, the server counts the same and a
    /// no-think echo returns exactly the bytes it received.
    #[test]
    fn reads_split_anywhere_give_the_same_result(
        cuts in proptest::collection::vec(1usize..700, 1..40),
        payloads in proptest::collection::vec(0u32..500, 1..12),
    ) {
        let pattern = Pattern::new(3, 500);
        let mut stream = Vec::new();
        for (seq, p) in payloads.iter().enumerate() {
            stream.extend(data_frame(&pattern, seq as u64, *p, 9).to_vec());
        }
        let mut echo = Responder::new(&open(Behaviour::Echo, 500, 0), None, 0);
        let mut sink = Responder::new(&open(Behaviour::Sink, 500, 0), Some(&pattern), 0);
        let hello = echo.poll_transmit(0).len();
        echo.transmitted(hello);
        let mut rest = &stream[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = cuts[i % cuts.len()].min(rest.len());
            echo.handle_input(1, &rest[..n]).unwrap();
            sink.handle_input(1, &rest[..n]).unwrap();
            rest = &rest[n..];
            i += 1;
        }
        prop_assert_eq!(echo.poll_transmit(2), &stream[..]);
        let r = sink.report();
        prop_assert_eq!(r.counts.received, payloads.len() as u64);
        prop_assert_eq!(r.counts.corrupt, 0);
        prop_assert!(sink.handle_eof().is_ok());
    }
}
