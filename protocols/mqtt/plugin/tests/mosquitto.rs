//! The MQTT workloads against a real Mosquitto on loopback, as `wirebench run --protocol
//! mqtt` places it without a link: ping-pong and stream for both versions and QoS 0 and
//! 1, every message checked, the broker stopped by its PID afterwards. Skipped, with the
//! reason printed, when mosquitto is not installed (`apt-get install mosquitto`;
//! `bash scripts/test.sh` installs it).

use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wirebench_mqtt::{QoS, Version};
use wirebench_plugin_mqtt::broker::{Broker, BrokerKind, BrokerOptions};
use wirebench_plugin_mqtt::conn::MqttConn;
use wirebench_plugin_mqtt::mosquitto::MOSQUITTO;

const OPTS: BrokerOptions = BrokerOptions {
    nodelay: true,
    load: false,
    v5: false,
};
use wirebench_plugin_mqtt::workload::{self, MqttRun, STREAM_WINDOW_BYTES, Topology};
use wirebench_protocol::{Ctx, Outcome, WorkloadError};

fn have_mosquitto() -> bool {
    match MOSQUITTO.find() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e} (apt-get install mosquitto)");
            false
        }
    }
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

fn metric(o: &Outcome, name: &str) -> f64 {
    o.metrics
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, m)| m.value)
        .unwrap_or_else(|| panic!("no {name} in {:?}", o.metrics))
}

fn run(
    broker: &Broker,
    version: Version,
    qos: QoS,
    stream: bool,
    count: u64,
    payload: usize,
) -> Outcome {
    let run = MqttRun {
        topology: Topology {
            broker: broker.addr,
            client2_netns: None,
        },
        version,
        qos,
        payload,
        count,
        think: Duration::ZERO,
        seed: 7,
        stream,
        window_bytes: STREAM_WINDOW_BYTES,
        tcp_info: Some(Duration::from_millis(5)),
    };
    let flag = AtomicBool::new(false);
    let mut out = Outcome::default();
    workload::run(&run, &ctx(&flag), &mut out).unwrap_or_else(|e| {
        panic!(
            "{version:?} QoS {} stream={stream}: {e}\n{}",
            qos.bits(),
            broker.log_tail(20)
        )
    });
    out
}

#[test]
fn ping_pong_and_stream_through_mosquitto_on_loopback() {
    if !have_mosquitto() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(
        BrokerKind::Mosquitto,
        None,
        dir.path(),
        Ipv4Addr::LOCALHOST.into(),
        OPTS,
    )
    .unwrap();
    for version in [Version::V311, Version::V5] {
        for qos in [QoS::AtMostOnce, QoS::AtLeastOnce] {
            let o = run(&broker, version, qos, false, 50, 100);
            assert_eq!(metric(&o, "messages.received"), 50.0);
            assert_eq!(metric(&o, "messages.corrupt"), 0.0);
            let rtt = metric(&o, "rtt.stable");
            assert!(rtt > 0.0 && rtt < 0.5, "{rtt}");
            // Fixed header, topic, payload; 5.0 adds the Property Length, QoS 1 the
            // Packet Identifier.
            let want = 2 + 2 + 4 + 100 + u8::from(version == Version::V5) + 2 * qos.bits();
            assert_eq!(metric(&o, "mqtt.publish_bytes"), f64::from(want));
            let o = run(&broker, version, qos, true, 2000, 64);
            assert_eq!(metric(&o, "messages.received"), 2000.0);
            assert_eq!(metric(&o, "messages.corrupt"), 0.0);
            assert!(metric(&o, "throughput.messages_per_s") > 100.0);
            // client1's connection to the broker, sampled every 5 ms: what the broker
            // acknowledged only grows, and it is most of the stream (the broker's
            // delayed ACK may still hold the last segment, 64 KiB on loopback).
            let (name, csv) = &o.series[0];
            assert_eq!(name, "tcp_info");
            let acked: Vec<f64> = csv
                .lines()
                .skip(1)
                .map(|l| l.split(',').nth(10).unwrap().parse().unwrap())
                .collect();
            assert!(acked.len() >= 2, "{csv}");
            assert!(acked.windows(2).all(|w| w[0] <= w[1]), "{csv}");
            assert!(acked[acked.len() - 1] >= 2000.0 * 72.0 - 65536.0, "{csv}");
            assert!(metric(&o, "tcp.cwnd_max") >= 10.0);
        }
    }
    // Every session said goodbye: the broker logged each DISCONNECT.
    let log = std::fs::read_to_string(broker.log()).unwrap();
    assert_eq!(log.matches("New client connected").count(), 16, "{log}");
    assert_eq!(log.matches(" disconnected.").count(), 16, "{log}");
    let pid = broker.pid();
    drop(broker);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "mosquitto {pid} still runs"
    );
}

#[test]
fn bad_filters_and_a_stopped_broker_fail_with_their_fault() {
    if !have_mosquitto() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(
        BrokerKind::Mosquitto,
        None,
        dir.path(),
        Ipv4Addr::LOCALHOST.into(),
        OPTS,
    )
    .unwrap();
    // A subscription with a wildcard where a level may not hold one is refused before
    // sending; a well-formed filter gets its SUBACK.
    let flag = AtomicBool::new(false);
    let mut c = MqttConn::connect(
        broker.addr,
        wirebench_mqtt::Config::new(Version::V5, "t"),
        "client1",
        Duration::from_secs(5),
        &flag,
    )
    .unwrap();
    let e = c
        .subscribe("a/#/b", QoS::AtMostOnce, Duration::from_secs(5))
        .unwrap_err();
    assert!(matches!(e, WorkloadError::Input(_)), "{e}");
    c.subscribe("a/+/b", QoS::AtLeastOnce, Duration::from_secs(5))
        .unwrap();
    c.close();
    // Nothing listens after the broker stopped: refused, which is the broker's fault.
    let addr = broker.addr;
    drop(broker);
    let e = MqttConn::connect(
        addr,
        wirebench_mqtt::Config::new(Version::V311, "t"),
        "client1",
        Duration::from_secs(2),
        &flag,
    )
    .err()
    .unwrap();
    assert_eq!(e.fault(), Some(wirebench_protocol::Fault::Peer), "{e}");
}
