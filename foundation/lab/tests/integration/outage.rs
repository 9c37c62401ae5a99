//! A scheduled outage through the real lab: kernel TCP between two network namespaces
//! across a 10 Mbit/s, 10 ms link that goes down from 1 s to 3 s. Needs root.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use wirebench_lab::{Lab, SERVER_ADDR};
use wirebench_link::LinkSpec;
use wirebench_model::clock::monotonic_ns;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
/// Messages written, one every 100 ms: 0 .. 6 s after the link is configured (Linux's
/// retransmission timer backs off during the outage; the first retransmission after it
/// comes about 4.3 s in).
const MESSAGES: u64 = 60;

/// `RetransSegs` of the TCP stack in namespace `ns`.
fn retransmitted(ns: &str) -> u64 {
    let snmp = wirebench_lab::netns::run("ip", &["netns", "exec", ns, "cat", "/proc/net/snmp"])
        .expect("read /proc/net/snmp");
    let tcp: Vec<Vec<&str>> = snmp
        .lines()
        .filter(|l| l.starts_with("Tcp:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let col = tcp[0].iter().position(|h| *h == "RetransSegs").unwrap();
    tcp[1][col].parse().unwrap()
}

#[test]
fn tcp_stalls_during_an_outage_and_recovers_after_it() {
    let spec = LinkSpec::parse("10Mbit/10ms,outage=1s+2s").unwrap();
    assert_eq!(spec.to_string(), "10Mbit/10ms,outage=1s+2s");
    let params = spec.to_params();
    let lab = Lab::create(params.clone(), params.clone(), 7, None).expect("lab (needs root)");

    let listener = std::thread::scope(|s| {
        s.spawn(|| {
            lab.server().enter().unwrap();
            TcpListener::bind((SERVER_ADDR, 0)).unwrap()
        })
        .join()
        .unwrap()
    });
    let port = listener.local_addr().unwrap().port();

    // Time zero of the outage schedule: when the emulator takes the new models, which
    // is between these two readings.
    let before = monotonic_ns();
    lab.configure(params.clone(), params, 7).unwrap();
    let after = monotonic_ns();
    assert!(
        after - before < 50 * MS,
        "configure took {} ms",
        (after - before) / MS
    );

    let (arrivals, sent_at) = std::thread::scope(|s| {
        let server = s.spawn(|| {
            let (mut conn, _) = listener.accept().unwrap();
            let mut arrivals = Vec::new();
            let mut buf = [0u8; 8];
            loop {
                match conn.read_exact(&mut buf) {
                    Ok(()) => arrivals.push((u64::from_be_bytes(buf), monotonic_ns())),
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
            arrivals
        });
        let client = s.spawn(|| {
            lab.client().enter().unwrap();
            let mut conn =
                TcpStream::connect_timeout(&(SERVER_ADDR, port).into(), Duration::from_secs(1))
                    .unwrap();
            conn.set_nodelay(true).unwrap();
            let mut sent_at = Vec::new();
            for i in 0..MESSAGES {
                let due = after + i * 100 * MS;
                if let Some(wait) = due.checked_sub(monotonic_ns()) {
                    std::thread::sleep(Duration::from_nanos(wait));
                }
                sent_at.push(monotonic_ns());
                conn.write_all(&i.to_be_bytes()).unwrap();
            }
            sent_at
            // Dropping the stream sends FIN once the kernel has delivered everything.
        });
        (server.join().unwrap(), client.join().unwrap())
    });
    let ended = monotonic_ns();

    // Everything arrived, once and in order: TCP repaired the outage.
    let counters: Vec<u64> = arrivals.iter().map(|a| a.0).collect();
    assert_eq!(counters, (0..MESSAGES).collect::<Vec<_>>());

    // The link is down on [origin + 1 s, origin + 3 s), origin in [before, after]: nothing
    // crosses it then (a packet delivered just before 1 s may be read a little later).
    let (down_from, down_until) = (after + S + 50 * MS, before + 3 * S);
    for &(i, at) in &arrivals {
        assert!(
            !(down_from..down_until).contains(&at),
            "message {i} arrived {} ms after configuration, during the outage",
            (at - before) / MS
        );
    }
    // Messages written before the outage crossed in about one delay; those written
    // during it waited for it to end.
    for (&(i, at), &sent) in arrivals.iter().zip(&sent_at) {
        if sent + 200 * MS < before + S {
            assert!(
                at - sent < 200 * MS,
                "message {i} took {} ms",
                (at - sent) / MS
            );
        }
        if (after + S..before + 3 * S).contains(&sent) {
            assert!(
                at >= before + 3 * S,
                "message {i} crossed during the outage"
            );
        }
    }
    // And after it, traffic flows again: the last messages cross in about one delay.
    let (last, last_at) = arrivals[arrivals.len() - 1];
    assert!(
        last_at - sent_at[last as usize] < 300 * MS,
        "the last message took {} ms",
        (last_at - sent_at[last as usize]) / MS
    );
    assert!(ended - before < 8 * S);
    if let Some(&(i, at)) = arrivals.iter().find(|a| a.1 >= down_until) {
        eprintln!(
            "first arrival after the outage: message {i} at {} ms",
            (at - before) / MS
        );
    }

    // Let the closing handshake's last packets land before reading the counters.
    std::thread::sleep(Duration::from_millis(200));

    // The kernel retransmitted, and the emulator counted what the outage took.
    assert!(retransmitted(lab.client().name()) > 0);
    let c = lab.counters();
    assert!(c.up.dropped_outage > 0, "{:?}", c.up);
    assert_eq!(c.up.dropped_queue + c.up.dropped_loss + c.up.dropped_mtu, 0);
    assert_eq!(c.up.dropped_tx + c.up.dropped_reset, 0);
    assert_eq!(
        c.up.offered_packets,
        c.up.delivered_packets + c.up.dropped_outage,
        "{:?}",
        c.up
    );
    assert_eq!(
        c.down.offered_packets,
        c.down.delivered_packets + c.down.dropped_outage,
        "{:?}",
        c.down
    );
}
