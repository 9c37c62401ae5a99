//! MQTT cases: two clients through one broker started per case (Mosquitto, mochi-mqtt or
//! rumqttd: [`broker`]), or a session load against one ([`load`]).
//!
//! ```text
//!   loopback:   client1 ── mosquitto (127.0.0.1) ── client2
//!   with link:  client host (198.18.0.1)           server host (198.18.0.2)
//!               client1 ═════════link═════════ mosquitto ── client2
//! ```
//!
//! Without link parameters everything runs on loopback (no root needed). With them the
//! broker and client2 run in the lab's server host and client1 in the client host, so
//! each message crosses the link once: a round trip crosses it twice, as in study S1's
//! XMPP and IRC rows (whose clients each sit beside their own server, only the servers'
//! link crossing). This is the satcom deployment MQTT is used for: a remote device
//! publishing to a broker on the ground, a backend subscribed beside the broker.
//!
//! The folder: the sans-IO client engine in `protocols/mqtt/engine` (`wirebench-mqtt`);
//! here the brokers ([`broker`], [`mosquitto`]), the blocking driver ([`conn`]), the workloads
//! ([`workload`]), the session load on a mio event loop ([`load`]) and the plugin.

pub mod broker;
pub mod conn;
pub mod load;
pub mod mosquitto;
pub mod workload;

use broker::{Broker, BrokerKind, BrokerOptions};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use wirebench_link::{LinkSpec, Transport, serialization_ns};
use wirebench_model::metric::RTT_MODEL;
use wirebench_model::{Kind, Merge, MetricSpec};
use wirebench_mqtt::QoS;
use wirebench_protocol::hosts::SERVER_ADDR;
use wirebench_protocol::params::{PEER_STREAM_COUNT, ParamSpec};
use wirebench_protocol::{Case, CaseLink, Ctx, Env, Outcome, PeerModel, Protocol, WorkloadError};
use workload::{MqttRun, Topology};

const WORKLOADS: &[&str] = &["pingpong", "stream", "load"];

pub const VERSION: ParamSpec = ParamSpec {
    name: "mqtt.version",
    kind: Kind::Choice(&["3.1.1", "5"]),
    default: "3.1.1",
    workloads: WORKLOADS,
    help: "MQTT version: 3.1.1 (OASIS 2014) or 5 (OASIS 2019: properties and reason codes, a byte more per PUBLISH)",
    words: "MQTT version",
};

/// QoS 0 by default: S1's XMPP and IRC messages rely on TCP alone, with no
/// acknowledgement of their own, and QoS 0 is MQTT's same promise, so the rows compare.
pub const QOS: ParamSpec = ParamSpec {
    name: "mqtt.qos",
    kind: Kind::Choice(&["0", "1"]),
    default: "0",
    workloads: WORKLOADS,
    help: "QoS of every message and subscription: 0 (at most once: TCP's delivery only, as S1's XMPP and IRC messages) or 1 (at least once: a PUBACK per message on each hop)",
    words: "QoS",
};

pub const BROKER: ParamSpec = ParamSpec {
    name: "mqtt.broker",
    kind: Kind::Choice(&["mosquitto", "mochi", "rumqttd"]),
    default: "mosquitto",
    workloads: WORKLOADS,
    help: "the broker started per case: mosquitto (Debian's, C, one thread), mochi (mochi-mqtt 2.7.9, Go; bash scripts/install-mochi.sh) or rumqttd (0.20.0, Rust on tokio; bash scripts/install-rumqttd.sh)",
    words: "broker",
};

/// The case's `mqtt.broker`.
pub fn broker_of(case: &Case) -> BrokerKind {
    BrokerKind::from_word(case.choice(&BROKER)).unwrap_or(BrokerKind::Mosquitto)
}

/// The plugin's parameters: broker, version and QoS, then the load workload's.
static ALL_PARAMS: std::sync::LazyLock<Vec<ParamSpec>> = std::sync::LazyLock::new(|| {
    [BROKER, VERSION, QOS, wirebench_protocol::params::TCP_INFO]
        .iter()
        .chain(load::PARAMS)
        .copied()
        .collect()
});

/// Bytes of IPv4 and TCP headers (with timestamps) per segment: the link crate's figure.
const TCP_IP: u64 = Transport::Tcp.ipv4_overhead();

/// Mosquitto starts in ~20 ms; client1 then opens TCP (one round trip), CONNECT/CONNACK
/// (one) and SUBSCRIBE/SUBACK (one), about 300 bytes with headers; a QoS 0 message is
/// 8 bytes of MQTT (fixed header, topic) beyond its payload plus TCP/IP's headers.
const MQTT_QOS0: PeerModel = PeerModel {
    start_s: 0.3,
    start_delays: 0.0,
    setup_bytes: 300.0,
    setup_delays: 6.0,
    per_message: 8.0 + TCP_IP as f64,
    // A loopback round trip through Mosquitto is ~34 µs and a stream moves 50-90k
    // messages a second (docs/protocols/mqtt.md): 50 µs holds both within 2x.
    processing_s: 0.00005,
};

/// QoS 1 adds the Packet Identifier and a PUBACK segment (4 bytes and its headers) each
/// way.
const MQTT_QOS1: PeerModel = PeerModel {
    per_message: MQTT_QOS0.per_message + 2.0 + 4.0 + TCP_IP as f64,
    ..MQTT_QOS0
};

pub struct Mqtt;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Mqtt;

/// The metrics only its cases record (docs/results.md).
pub const MQTT_BROKER_START: MetricSpec =
    MetricSpec::new("mqtt.broker_start", "s", "the brokers' start");
pub const MQTT_CONNECT: MetricSpec =
    MetricSpec::new("mqtt.connect", "s", "client1's CONNECT to CONNACK");
pub const MQTT_SUBSCRIBE: MetricSpec =
    MetricSpec::new("mqtt.subscribe", "s", "SUBSCRIBE to SUBACK");
pub const MQTT_PUBLISH_BYTES: MetricSpec =
    MetricSpec::new("mqtt.publish_bytes", "B", "bytes of one PUBLISH packet");
pub const MQTT_FIRST_DELIVERY: MetricSpec = MetricSpec::new(
    "mqtt.first_delivery",
    "s",
    "the first message's trip between the clients",
);
pub const MQTT_DRAIN_WAIT: MetricSpec = MetricSpec::new(
    "mqtt.drain_wait",
    "s",
    "waiting for the link to drain before the case",
);

pub const MQTT_LOAD_CONNECTS_PER_S_MAX: MetricSpec = MetricSpec::new(
    "mqtt.load.connects_per_s.max",
    "1/s",
    "CONNACKs in a load's busiest interval, per second",
);
pub const MQTT_LOAD_EXPECTED: MetricSpec = MetricSpec::new(
    "mqtt.load.expected",
    "count",
    "load messages published while their subscriber was subscribed",
)
.merged(Merge::Sum);
pub const MQTT_LOAD_DELIVERED: MetricSpec = MetricSpec::new(
    "mqtt.load.delivered",
    "count",
    "expected load messages that reached their subscriber (once)",
)
.merged(Merge::Sum);
pub const MQTT_LOAD_MISSING: MetricSpec = MetricSpec::new(
    "mqtt.load.missing",
    "count",
    "expected load messages that never arrived",
)
.merged(Merge::Sum);
pub const MQTT_LOAD_DUPLICATES: MetricSpec = MetricSpec::new(
    "mqtt.load.duplicates",
    "count",
    "load messages that arrived again or out of order",
)
.merged(Merge::Sum);
pub const MQTT_LOAD_ACKED: MetricSpec = MetricSpec::new(
    "mqtt.load.acked",
    "count",
    "PUBACKs for the load's QoS 1 messages",
)
.merged(Merge::Sum);
pub const MQTT_LOAD_UNSENT: MetricSpec = MetricSpec::new(
    "mqtt.load.unsent",
    "count",
    "load messages the client could not send (a broker limit reached)",
)
.merged(Merge::Sum);

static METRICS: &[MetricSpec] = &[
    MQTT_BROKER_START,
    MQTT_CONNECT,
    MQTT_SUBSCRIBE,
    MQTT_PUBLISH_BYTES,
    MQTT_FIRST_DELIVERY,
    MQTT_DRAIN_WAIT,
    MQTT_LOAD_CONNECTS_PER_S_MAX,
    MQTT_LOAD_EXPECTED,
    MQTT_LOAD_DELIVERED,
    MQTT_LOAD_MISSING,
    MQTT_LOAD_DUPLICATES,
    MQTT_LOAD_ACKED,
    MQTT_LOAD_UNSENT,
];

impl Protocol for Mqtt {
    fn metrics(&self) -> &'static [MetricSpec] {
        METRICS
    }
    fn name(&self) -> &'static str {
        "mqtt"
    }

    fn summary(&self) -> &'static str {
        "MQTT 3.1.1 / 5.0 between two clients through a broker started per case (Mosquitto, mochi-mqtt or rumqttd; loopback, or with a link the broker and client2 in the lab's server host), or thousands of sessions against it (load)"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &ALL_PARAMS
    }

    fn workloads(&self) -> &'static [&'static str] {
        WORKLOADS
    }

    /// A load session is up at its SUBACK (docs/load.md): subscribed, not logged in.
    fn session_words(&self) -> wirebench_model::session_words::SessionWords {
        wirebench_model::session_words::SessionWords {
            up: "subscribed",
            events: "subscriptions",
            event: "subscription",
        }
    }

    fn estimate_secs(&self, case: &Case) -> Option<f64> {
        (case.workload() == "load")
            .then(|| load::estimate_secs(case))
            .flatten()
    }

    fn check(&self, case: &Case, at: &wirebench_protocol::Placement) -> Result<(), WorkloadError> {
        if case.workload() == "load" {
            return load::check(case, at);
        }
        Ok(())
    }

    fn prerequisites(&self, case: &Case) -> Vec<wirebench_protocol::Prerequisite> {
        let kind = broker_of(case);
        let why = match kind {
            BrokerKind::Mosquitto => "protocol=mqtt",
            BrokerKind::Mochi => "mqtt.broker=mochi",
            BrokerKind::Rumqttd => "mqtt.broker=rumqttd",
        };
        vec![kind.requirement().because(why)]
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        Some(match broker_of(case) {
            BrokerKind::Mosquitto => "a Mosquitto broker started per case",
            BrokerKind::Mochi => "a mochi-mqtt broker started per case",
            BrokerKind::Rumqttd => "a rumqttd broker started per case",
        })
    }

    fn stream_count(&self) -> Option<u64> {
        Some(PEER_STREAM_COUNT)
    }

    fn peer_model(&self, case: &Case) -> Option<PeerModel> {
        Some(match workload::qos_of(case) {
            QoS::AtMostOnce => MQTT_QOS0,
            _ => MQTT_QOS1,
        })
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        if case.workload() == "load" {
            return load::run(env, case, repeat, ctx);
        }
        run_case(env, case, repeat, link, ctx)
    }
}

fn run_case(
    env: &Env,
    case: &Case,
    repeat: u32,
    link: Option<&CaseLink>,
    ctx: &Ctx,
) -> Result<Outcome, WorkloadError> {
    let drained = match env.lab {
        Some(lab) => Some(lab.wait_quiet(Duration::from_secs(120), ctx)?),
        None => None,
    };
    let netns = env.lab.map(|l| l.server().name().to_string());
    let ip: IpAddr = match env.lab {
        Some(_) => SERVER_ADDR.into(),
        None => Ipv4Addr::LOCALHOST.into(),
    };
    let opts = BrokerOptions {
        nodelay: true,
        load: false,
        v5: workload::version_of(case) == wirebench_mqtt::Version::V5,
    };
    let kind = broker_of(case);
    let mut broker = Broker::start(
        kind,
        netns.as_deref(),
        &env.peer_dir(case, repeat),
        ip,
        opts,
    )?;
    let mut run = MqttRun::from_case(
        case,
        Topology {
            broker: broker.addr,
            client2_netns: netns,
        },
        env.seed,
    );
    if let Some(w) = link.and_then(window_bytes) {
        run.window_bytes = w;
    }
    let mut out = Outcome::default();
    out.put(MQTT_BROKER_START, broker.start_time.as_secs_f64());
    if let Err(e) = workload::run(&run, ctx, &mut out) {
        return Err(with_log(e, &mut broker));
    }
    wirebench_peer::record_usage(&mut out, broker.usage());
    wirebench_peer::record_sessions(&mut out, 2);
    wirebench_peer::record_kernel_tcp(&mut out);
    if let Some(d) = drained.filter(|d| *d > Duration::from_millis(250)) {
        out.put(MQTT_DRAIN_WAIT, d.as_secs_f64());
        out.notes.push(format!(
            "waited {:.1} s before starting the broker for packets of earlier connections to \
             leave the link; they count in this case's wire.* totals (not in wire.stable.*)",
            d.as_secs_f64()
        ));
    }
    if let (Some(link), false) = (link, run.stream) {
        push_model(&mut out, link, run.qos);
    }
    out.notes.push(format!(
        "MQTT {} at QoS {} through {} at {} ({}); client1 publishes on `{}`, client2 \
         answers on `{}`; TCP_NODELAY on the clients{}",
        run.version.name(),
        run.qos.bits(),
        kind.words(),
        broker.addr,
        if env.lab.is_some() {
            "the broker and client2 in the lab's server host, client1 across the link: each message crosses it once"
        } else {
            "loopback"
        },
        workload::PING,
        workload::PONG,
        match kind {
            BrokerKind::Mosquitto => " and the broker (set_tcp_nodelay)",
            BrokerKind::Mochi => " and the broker (Go's default)",
            BrokerKind::Rumqttd => "",
        },
    ));
    Ok(out)
}

/// Names the broker's log in a failed case's error (and its last lines if it died).
fn with_log(e: WorkloadError, broker: &mut Broker) -> WorkloadError {
    let log = broker.log();
    let name = broker.kind.name();
    match e {
        WorkloadError::Peer(m) => WorkloadError::Peer(match broker.exited() {
            Some(status) => format!("{m}\n{name} exited ({status}):\n{}", broker.log_tail(10)),
            None => format!("{m} (the broker's log: {})", log.display()),
        }),
        WorkloadError::Link(m) => {
            WorkloadError::Link(format!("{m} (the broker's log: {})", log.display()))
        }
        WorkloadError::Stalled { .. } if dropped(&log) => WorkloadError::Peer(format!(
            "{e}: mosquitto dropped messages for client2 (\"Outgoing messages are being \
             dropped\" in its log, {})",
            log.display()
        )),
        e => e,
    }
}

/// Whether mosquitto's log says it dropped messages for a subscriber whose queue was full.
fn dropped(log: &std::path::Path) -> bool {
    std::fs::read_to_string(log).is_ok_and(|t| t.contains("Outgoing messages are being dropped"))
}

/// A stream's window on a rate-limited link: what the uplink carries in a round trip and
/// a second, enough to keep it busy and little enough to stop soon after the last message.
fn window_bytes(link: &CaseLink) -> Option<u64> {
    let rate = link.up.rate_bps?;
    let rtt_ns = link.up.delay_ns + link.down.delay_ns + 1_000_000_000;
    Some((u128::from(rate) * u128::from(rtt_ns) / 8 / 1_000_000_000) as u64)
}

/// One segment of `frame` bytes across `spec`: its bytes with TCP/IP headers, serialized,
/// plus the delay.
fn one_way_ns(frame: u64, spec: &LinkSpec) -> u64 {
    let (_, bytes) = Transport::Tcp.ipv4_packets(frame, u64::from(spec.mtu));
    spec.rate_bps.map_or(0, |r| serialization_ns(bytes, r)) + spec.delay_ns
}

/// `rtt.model` for a ping-pong: the PUBLISH's segment each way (the broker forwards the
/// same bytes: same topic length, payload and QoS) and, at QoS 1, the PUBACK segment
/// ahead of it each way (the broker's for the ping before the pong; client1's for the
/// previous pong before the next ping, from round 2 on). Not with a trace, per-connection
/// paths or jitter, which no closed form covers.
fn push_model(out: &mut Outcome, link: &CaseLink, qos: QoS) {
    let size = out.value(MQTT_PUBLISH_BYTES).map(|v| v as u64);
    let (Some(size), None, None) = (size, &link.trace, &link.paths) else {
        return;
    };
    if link.up.jitter_ns > 0 || link.down.jitter_ns > 0 {
        return;
    }
    let mut model = one_way_ns(size, &link.up) + one_way_ns(size, &link.down);
    if qos == QoS::AtLeastOnce {
        let ack = |s: &LinkSpec| s.rate_bps.map_or(0, |r| serialization_ns(4 + TCP_IP, r));
        model += ack(&link.up) + ack(&link.down);
    }
    out.put(RTT_MODEL, model as f64 / 1e9);
    out.notes.push(format!(
        "rtt.model: the {size}-byte PUBLISH in one segment each way (+{TCP_IP} bytes of \
         TCP/IP){}, serialized, plus the delays",
        if qos == QoS::AtLeastOnce {
            ", behind a 4-byte PUBACK segment each way (QoS 1)"
        } else {
            ""
        }
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_segment_across_satcom() {
        let spec = LinkSpec {
            rate_bps: Some(2400),
            delay_ns: 500_000_000,
            ..Default::default()
        };
        // 18 + 52 bytes at 2400 bit/s: 233.3 ms, plus 500 ms.
        assert_eq!(
            one_way_ns(18, &spec),
            500_000_000 + serialization_ns(70, 2400)
        );
        // Two segments past the MSS.
        assert_eq!(
            one_way_ns(1500, &spec),
            500_000_000 + serialization_ns(1500 + 104, 2400)
        );
    }
}
