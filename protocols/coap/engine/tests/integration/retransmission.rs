//! Confirmable retransmission (RFC 7252 §4.2) over long and lossy links: the spurious
//! retransmissions of the default ACK_TIMEOUT at a 1 s one-way delay, the tuned
//! parameters (§4.8.1) that remove them, recovery from loss, and giving up.

use wirebench_coap_engine::{
    Client, ClientConfig, Code, Event, Failure, Request, Server, ServerConfig, Stats,
    TransmissionParams,
};

use crate::pipe::{Dir, MS, Pipe, SECOND, server_addr};

/// `n` echo requests of 10 bytes, queued at once (NSTART 1 sends them one at a time).
fn echo_requests(client: &mut Client, n: usize, confirmable: bool) {
    for i in 0..n {
        let mut r = Request::get(server_addr(), "echo", confirmable);
        r.method = Code::POST;
        r.payload = format!("ping {i:05}").into_bytes();
        client.request(r).unwrap();
    }
}

/// Runs the requests to their end, then on until the last late ACK arrived.
fn run_all(pipe: &mut Pipe, client: &mut Client, server: &mut Server, n: usize) -> Vec<Event> {
    let mut events = Vec::new();
    let done = pipe.run(client, server, 3_600 * SECOND, |c| {
        events.extend(std::iter::from_fn(|| c.poll_event()));
        events.len() == n
    });
    assert!(done, "{} of {n} requests ended", events.len());
    pipe.drain(client, server, 3_600 * SECOND);
    events
}

fn responses(events: &[Event]) -> Vec<&wirebench_coap_engine::Response> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Response(r) => Some(r),
            Event::Failed { .. } => None,
        })
        .collect()
}

/// 2400 bit/s with 1 s each way: a 24-byte request and 19-byte response take 173 ms and
/// 157 ms on the wire, so the round trip is 2.33 s, inside the default first timeout's
/// range of 2 to 3 s.
fn satcom(loss_per_million: u64, seed: u64) -> Pipe {
    Pipe::new(SECOND, 2400, loss_per_million, seed)
}

fn pingpong(params: TransmissionParams, mut pipe: Pipe, n: usize) -> (Stats, u64, Vec<Event>) {
    let mut client = Client::new(ClientConfig::new(params), 7).unwrap();
    let mut server = Server::new(ServerConfig::default(), 8);
    echo_requests(&mut client, n, true);
    let events = run_all(&mut pipe, &mut client, &mut server, n);
    // Every request processed once however often it was sent (§4.5).
    assert_eq!(server.stats().requests, n as u64);
    (client.stats().clone(), server.stats().duplicates, events)
}

#[test]
fn default_ack_timeout_retransmits_spuriously_at_one_second_delay() {
    let pipe = satcom(0, 1);
    let rtt = pipe.round_trip_ns(24, 19);
    assert!((2 * SECOND..3 * SECOND).contains(&rtt), "{rtt}");
    let (stats, server_duplicates, events) = pingpong(TransmissionParams::default(), pipe, 40);
    eprintln!("defaults, 1 s one-way at 2400 bit/s, 40 CON: {stats:?}");
    assert_eq!(responses(&events).len(), 40);
    assert_eq!(stats.timeouts, 0);
    // A first timeout drawn below the round trip fires before the ACK can arrive: about
    // a third of 40 exchanges.
    assert!(stats.retransmissions >= 5, "{stats:?}");
    // Nothing was lost, so every retransmission was spurious, the client saw each one's
    // extra ACK, and the server each extra copy.
    assert_eq!(
        stats.spurious_retransmissions, stats.retransmissions,
        "{stats:?}"
    );
    assert_eq!(stats.duplicate_acks, stats.retransmissions);
    assert_eq!(server_duplicates, stats.retransmissions);
    // The original's ACK completed each exchange: no round trip is longer than the
    // link's plus the queueing behind one retransmitted copy.
    for r in responses(&events) {
        assert!(r.round_trip_ns < rtt + 200 * MS, "{r:?}");
    }
}

#[test]
fn ack_timeout_above_the_round_trip_removes_them() {
    let pipe = satcom(0, 1);
    let params = TransmissionParams::for_round_trip(pipe.round_trip_ns(24, 19));
    assert!(params.ack_timeout_ns > 2 * SECOND);
    let (stats, server_duplicates, events) = pingpong(params, pipe, 40);
    assert_eq!(responses(&events).len(), 40);
    assert_eq!(
        (
            stats.retransmissions,
            stats.spurious_retransmissions,
            server_duplicates
        ),
        (0, 0, 0),
        "{stats:?}"
    );
    assert_eq!(stats.round_trips, 40);
}

#[test]
fn a_lost_request_is_retransmitted_and_not_spurious() {
    let mut pipe = satcom(0, 1);
    pipe.drop.push((Dir::Up, 0));
    let rtt = pipe.round_trip_ns(24, 19);
    let params = TransmissionParams::for_round_trip(rtt);
    let (stats, server_duplicates, events) = pingpong(params, pipe, 1);
    let r = responses(&events)[0];
    assert_eq!((r.retransmissions, r.exchanges), (1, 1));
    assert_eq!(
        (stats.retransmissions, stats.spurious_retransmissions),
        (1, 0)
    );
    assert_eq!(server_duplicates, 0);
    // Waited the first timeout (3 to 4.5 s here), then one round trip; the exchange's
    // round trip counts from its first copy.
    assert!(r.elapsed_ns >= 3 * SECOND + rtt, "{r:?}");
    assert_eq!(r.round_trip_ns, r.elapsed_ns);
}

#[test]
fn a_lost_ack_makes_a_needed_retransmission() {
    let mut pipe = satcom(0, 1);
    pipe.drop.push((Dir::Down, 0));
    let params = TransmissionParams::for_round_trip(pipe.round_trip_ns(24, 19));
    let (stats, server_duplicates, _) = pingpong(params, pipe, 1);
    // The server got both copies (one duplicate), but the client needed the second:
    // only one ACK reached it, so nothing is counted spurious.
    assert_eq!(
        (stats.retransmissions, stats.spurious_retransmissions),
        (1, 0)
    );
    assert_eq!(server_duplicates, 1);
}

#[test]
fn retransmissions_recover_from_ten_percent_loss() {
    let pipe = satcom(100_000, 3);
    let params = TransmissionParams::for_round_trip(pipe.round_trip_ns(24, 19));
    let (stats, _, events) = pingpong(params, pipe, 60);
    assert_eq!(responses(&events).len(), 60, "{events:?}");
    assert!(stats.retransmissions >= 6, "{stats:?}");
    assert!(stats.spurious_retransmissions <= stats.retransmissions);
    assert_eq!(stats.timeouts, 0);
}

#[test]
fn gives_up_after_max_retransmit_within_max_transmit_wait() {
    let params = TransmissionParams::default();
    let mut pipe = Pipe::new(100 * MS, 0, 1_000_000, 1);
    let mut client = Client::new(ClientConfig::new(params), 11).unwrap();
    let mut server = Server::new(ServerConfig::default(), 8);
    echo_requests(&mut client, 1, true);
    let events = run_all(&mut pipe, &mut client, &mut server, 1);
    let Event::Failed {
        failure,
        elapsed_ns,
        ..
    } = events[0]
    else {
        panic!("{events:?}")
    };
    assert_eq!(failure, Failure::Timeout);
    // 1 + MAX_RETRANSMIT transmissions, the gaps doubling from a first timeout T0 in
    // [2 s, 3 s]; giving up after 31 T0, at most MAX_TRANSMIT_WAIT (93 s).
    let t = &pipe.up_times;
    assert_eq!(t.len(), 5);
    let t0 = t[1] - t[0];
    assert!((2 * SECOND..=3 * SECOND).contains(&t0), "{t:?}");
    for w in t.windows(3) {
        assert_eq!(w[2] - w[1], 2 * (w[1] - w[0]), "{t:?}");
    }
    assert_eq!(elapsed_ns, 31 * t0);
    assert!(elapsed_ns <= params.max_transmit_wait_ns());
    let s = client.stats();
    assert_eq!(
        (s.retransmissions, s.timeouts, s.spurious_retransmissions),
        (4, 1, 0)
    );
}

#[test]
fn non_confirmable_requests_are_sent_once() {
    let mut pipe = satcom(0, 1);
    let mut client = Client::new(ClientConfig::default(), 7).unwrap();
    let mut server = Server::new(ServerConfig::default(), 8);
    echo_requests(&mut client, 5, false);
    let events = run_all(&mut pipe, &mut client, &mut server, 5);
    assert_eq!(responses(&events).len(), 5);
    let s = client.stats();
    assert_eq!(
        (s.requests_sent, s.confirmable_sent, s.retransmissions),
        (5, 0, 0)
    );
    assert_eq!(pipe.sent, [5, 5]);
    for r in responses(&events) {
        assert_eq!(r.round_trip_ns, pipe.round_trip_ns(24, 19));
    }
}

#[test]
fn a_lost_non_confirmable_request_times_out() {
    let mut pipe = satcom(0, 1);
    pipe.drop.push((Dir::Up, 0));
    let config = ClientConfig {
        response_timeout_ns: 10 * SECOND,
        ..ClientConfig::default()
    };
    let mut client = Client::new(config, 7).unwrap();
    let mut server = Server::new(ServerConfig::default(), 8);
    echo_requests(&mut client, 2, false);
    let events = run_all(&mut pipe, &mut client, &mut server, 2);
    assert!(matches!(
        events[0],
        Event::Failed {
            failure: Failure::Timeout,
            elapsed_ns: 10_000_000_000,
            ..
        }
    ));
    assert!(matches!(events[1], Event::Response(_)));
    assert_eq!(client.stats().timeouts, 1);
}
