//! Workloads against the reference server on loopback.

use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wirebench_plugin_raw::pingpong::{self, PingPong};
use wirebench_plugin_raw::stream::{self, Mode, Stream};
use wirebench_protocol::{Ctx, Outcome};
use wirebench_raw_server::{ControlClient, Server, ServerConfig};

fn metric(o: &Outcome, name: &str) -> f64 {
    o.metrics
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no metric {name}"))
        .1
        .value
}

fn ctx(flag: &AtomicBool) -> Ctx<'_> {
    Ctx {
        shutdown: flag,
        progress: &|_, _| {},
        stall_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(5),
        mark_stable: &|| {},
        link_budget: &Ctx::no_budget,
    }
}

#[test]
fn pingpong_counts_every_round_and_orders_statistics() {
    let server = Server::bind("127.0.0.1:0", ServerConfig::default())
        .unwrap()
        .spawn()
        .unwrap();
    let flag = AtomicBool::new(false);
    let mut ctl =
        ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5)).unwrap();
    assert!(ctl.shared_clock);
    for payload in [0u32, 2, 1500, 1 << 20] {
        let p = PingPong {
            protocol: "raw".into(),
            payload,
            rounds: 50,
            think: Duration::ZERO,
            seed: 7,
            nodelay: true,
        };
        let o = pingpong::run(&mut ctl, &p, &ctx(&flag)).unwrap();
        assert_eq!(metric(&o, "messages.received"), 50.0, "payload {payload}");
        assert_eq!(
            metric(&o, "messages.lost") + metric(&o, "messages.corrupt"),
            0.0
        );
        assert_eq!(o.rounds.as_ref().unwrap().len(), 50);
        let (min, p50, p99, max) = (
            metric(&o, "rtt.min"),
            metric(&o, "rtt.p50"),
            metric(&o, "rtt.p99"),
            metric(&o, "rtt.max"),
        );
        assert!(
            min > 0.0 && min <= p50 && p50 <= p99 && p99 <= max,
            "{min} {p50} {p99} {max}"
        );
        assert!(metric(&o, "connect.time") >= metric(&o, "connect.handshake"));
        // The histogram holds every round at 3 significant digits.
        let h = &o.histograms[0].1;
        assert_eq!(h.len(), 50);
        let hmax = h.max() as f64 / 1e9;
        assert!(
            (hmax - max).abs() <= max * 0.002,
            "histogram max {hmax} vs {max}"
        );
        // Generous sanity bound: loopback rounds are far below a second.
        assert!(p50 < 1.0);
    }
}

#[test]
fn think_time_is_waited_and_excluded() {
    let server = Server::bind("127.0.0.1:0", ServerConfig::default())
        .unwrap()
        .spawn()
        .unwrap();
    let flag = AtomicBool::new(false);
    let mut ctl =
        ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5)).unwrap();
    let p = PingPong {
        protocol: "raw".into(),
        payload: 10,
        rounds: 5,
        think: Duration::from_millis(50),
        seed: 1,
        nodelay: true,
    };
    let started = std::time::Instant::now();
    let o = pingpong::run(&mut ctl, &p, &ctx(&flag)).unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "the server must really wait"
    );
    // With think excluded, a loopback round is well under the 50 ms think time.
    assert!(metric(&o, "rtt.max") < 0.025, "{}", metric(&o, "rtt.max"));
}

#[test]
fn streams_deliver_everything_both_modes() {
    let server = Server::bind("127.0.0.1:0", ServerConfig::default())
        .unwrap()
        .spawn()
        .unwrap();
    let flag = AtomicBool::new(false);
    let mut ctl =
        ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5)).unwrap();
    for mode in [Mode::OneWay, Mode::Echo] {
        for (payload, count) in [(1u32, 5000u64), (100, 20000), (300_000, 40)] {
            let s = Stream {
                protocol: "raw".into(),
                mode,
                payload,
                count: Some(count),
                // Far longer than the counts take: the count ends these streams.
                duration: Some(Duration::from_secs(60)),
                seed: 3,
                nodelay: true,
                tcp_info: None,
            };
            let o = stream::run(&mut ctl, &s, &ctx(&flag)).unwrap();
            assert_eq!(
                metric(&o, "messages.received"),
                count as f64,
                "{mode:?} {payload}"
            );
            assert_eq!(metric(&o, "messages.corrupt"), 0.0);
            assert_eq!(metric(&o, "bytes.payload"), (payload as u64 * count) as f64);
            assert!(metric(&o, "throughput.bits_per_s") > 0.0);
        }
    }
}

#[test]
fn a_stream_with_a_duration_stops_sending_when_it_is_over() {
    let server = Server::bind("127.0.0.1:0", ServerConfig::default())
        .unwrap()
        .spawn()
        .unwrap();
    let flag = AtomicBool::new(false);
    let mut ctl =
        ControlClient::connect(&server.addr().to_string(), Duration::from_secs(5)).unwrap();
    for mode in [Mode::OneWay, Mode::Echo] {
        let s = Stream {
            protocol: "raw".into(),
            mode,
            payload: 100,
            count: None,
            duration: Some(Duration::from_millis(300)),
            seed: 3,
            nodelay: true,
            tcp_info: None,
        };
        let started = std::time::Instant::now();
        let o = stream::run(&mut ctl, &s, &ctx(&flag)).unwrap();
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(3),
            "{mode:?}: {took:?}"
        );
        let t = metric(&o, "throughput.duration");
        assert!(t > 0.29 && t < 1.0, "{mode:?}: timed {t} s");
        let sent = metric(&o, "messages.sent");
        assert!(sent > 1000.0, "{sent}");
        assert_eq!(metric(&o, "messages.received"), sent, "{mode:?}");
        assert_eq!(metric(&o, "messages.lost"), 0.0);
        assert!(
            o.notes.iter().any(|n| n.contains("sent for 300ms")),
            "{:?}",
            o.notes
        );
    }
    // A count that ends first wins.
    let s = Stream {
        protocol: "raw".into(),
        mode: Mode::OneWay,
        payload: 100,
        count: Some(50),
        duration: Some(Duration::from_secs(30)),
        seed: 3,
        nodelay: true,
        tcp_info: None,
    };
    let o = stream::run(&mut ctl, &s, &ctx(&flag)).unwrap();
    assert_eq!(metric(&o, "messages.sent"), 50.0);
}
