//! From the emulator's counters to the case's wire metrics and the link model's
//! expectations (the link itself is read from the case's parameters by
//! `wirebench_plan::link`).

use crate::{Case, CaseLink};
use wirebench_lab::{CLIENT_ADDR, Counters, DirCounters};
use wirebench_link::{LinkSpec, Loss, Transport, serialization_ns};
use wirebench_model::metric::LINK_DROPPED_LOSS;
use wirebench_model::metric::LINK_DROPPED_MTU;
use wirebench_model::metric::LINK_DROPPED_OTHER;
use wirebench_model::metric::LINK_DROPPED_OUTAGE;
use wirebench_model::metric::LINK_DROPPED_QUEUE;
use wirebench_model::metric::LINK_RELEASE_ERROR;
use wirebench_model::metric::LINK_UTILIZATION;
use wirebench_model::metric::RTT_MODEL;
use wirebench_model::metric::RTT_THEORY_PAYLOAD;
use wirebench_model::metric::WIRE_BYTES;
use wirebench_model::metric::WIRE_DOWN_BYTES;
use wirebench_model::metric::WIRE_DOWN_PACKETS;
use wirebench_model::metric::WIRE_PACKETS;
use wirebench_model::metric::WIRE_UP_BYTES;
use wirebench_model::metric::WIRE_UP_PACKETS;
use wirebench_model::metric::{
    MESSAGES_SENT, THROUGHPUT_DURATION, THROUGHPUT_MESSAGES_PER_S, WIRE_BYTES_PER_MESSAGE,
    WIRE_OVERHEAD_PER_MESSAGE, WIRE_STABLE_BYTES_PER_MESSAGE, WIRE_STABLE_OVERHEAD_PER_MESSAGE,
};
use wirebench_model::{Key, Metric, MetricSpec};
use wirebench_protocol::Outcome;
use wirebench_protocol::params;

const WIRE_PER_MESSAGE: (MetricSpec, MetricSpec) =
    (WIRE_BYTES_PER_MESSAGE, WIRE_OVERHEAD_PER_MESSAGE);
const STABLE_PER_MESSAGE: (MetricSpec, MetricSpec) = (
    WIRE_STABLE_BYTES_PER_MESSAGE,
    WIRE_STABLE_OVERHEAD_PER_MESSAGE,
);

/// The data connection's packets and bytes in one direction: its flow in the emulator's
/// counters, the client's `local_port` over `transport`.
fn flow(dir: &DirCounters, local_port: u16, transport: Transport, outgoing: bool) -> (u64, u64) {
    let client = CLIENT_ADDR.octets();
    dir.flows
        .iter()
        .filter(|(k, _)| {
            k.proto == transport.ip_proto()
                && if outgoing {
                    k.src == client && k.sport == local_port
                } else {
                    k.dst == client && k.dport == local_port
                }
        })
        .fold((0, 0), |acc, (_, v)| (acc.0 + v.0, acc.1 + v.1))
}

/// One-way time of a message of `frame` bytes over `spec`: serialization of its
/// packets (pipelined: the last bit leaves after all bytes) plus propagation.
fn one_way_ns(frame: u64, spec: &LinkSpec, transport: Transport) -> u64 {
    let (_, bytes) = transport.ipv4_packets(frame, spec.mtu as u64);
    spec.rate_bps
        .map(|r| serialization_ns(bytes, r))
        .unwrap_or(0)
        + spec.delay_ns
}

pub fn add_wire_metrics(
    out: &mut Outcome,
    case: &Case,
    link: &CaseLink,
    before: &Counters,
    stable: Option<&Counters>,
    after: &Counters,
) {
    let mut m = Vec::new();
    let sent = out.value(MESSAGES_SENT).unwrap_or(0.0);
    let workload = case.workload();
    let protocol = crate::registry::of(case);
    let echoed = workload == "pingpong" || protocol.stream_echoes(case);
    // The direction a stream's payload crosses: the client's uplink, or a download's
    // downlink.
    let rate = if protocol.stream_downloads(case) {
        link.down.rate_bps
    } else {
        link.up.rate_bps
    };
    let crossings = if echoed { 2.0 * sent } else { sent };
    let payload = case.payload();
    match out.local_port {
        // No data connection of ours crosses the link (XMPP: the servers' s2s traffic
        // does): count everything the link carried during the case.
        None => {
            let up = after.up.since(&before.up);
            let down = after.down.since(&before.down);
            m.push(metric(WIRE_UP_PACKETS, up.delivered_packets as f64));
            m.push(metric(WIRE_UP_BYTES, up.delivered_bytes as f64));
            m.push(metric(WIRE_DOWN_PACKETS, down.delivered_packets as f64));
            m.push(metric(WIRE_DOWN_BYTES, down.delivered_bytes as f64));
            let bytes = up.delivered_bytes + down.delivered_bytes;
            m.push(metric(WIRE_BYTES, bytes as f64));
            per_message(&mut m, WIRE_PER_MESSAGE, bytes, crossings, payload);
            m.extend(utilization(out, rate, payload, sent));
        }
        Some(port) => {
            let bytes = flow_metrics(&mut m, after, port, out.transport);
            per_message(&mut m, WIRE_PER_MESSAGE, bytes, crossings, payload);
            m.extend(utilization(out, rate, payload, sent));
        }
    }
    if let Some(mark) = stable {
        let conn = out.local_port.map(|p| (p, out.transport));
        stable_metrics(&mut m, case, conn, mark, after, payload);
    }
    drop_metrics(&mut m, before, after);
    rtt_model(out, &mut m, case, link, payload);
    out.metrics.extend(m);
}

/// `wire.*` of the data connection's flow (its `local_port` over `transport`); returns
/// the bytes of both directions.
fn flow_metrics(
    m: &mut Vec<(String, Metric)>,
    after: &Counters,
    port: u16,
    transport: Transport,
) -> u64 {
    let (up_p, up_b) = flow(&after.up, port, transport, true);
    let (down_p, down_b) = flow(&after.down, port, transport, false);
    m.push(metric(WIRE_UP_PACKETS, up_p as f64));
    m.push(metric(WIRE_UP_BYTES, up_b as f64));
    m.push(metric(WIRE_DOWN_PACKETS, down_p as f64));
    m.push(metric(WIRE_DOWN_BYTES, down_b as f64));
    m.push(metric(WIRE_BYTES, (up_b + down_b) as f64));
    m.push(metric(WIRE_PACKETS, (up_p + down_p) as f64));
    up_b + down_b
}

/// A declared metric's entry in its declared unit.
fn metric(key: impl Into<Key>, value: f64) -> (String, Metric) {
    let key = key.into();
    (key.name().into_owned(), Metric::new(value, key.unit()))
}

/// Link bytes per message and, beyond the payload, overhead per message (`wire.*` or
/// `wire.stable.*`: `names`), when any message crossed.
fn per_message(
    m: &mut Vec<(String, Metric)>,
    names: (MetricSpec, MetricSpec),
    bytes: u64,
    crossings: f64,
    payload: u64,
) {
    if crossings > 0.0 {
        let per = bytes as f64 / crossings;
        m.push(metric(names.0, per));
        m.push(metric(names.1, per - payload as f64));
    }
}

/// `link.utilization`: payload bits delivered in the timed interval over what `rate` (the
/// payload's direction) could carry in it: a download's efficiency, goodput over the
/// link's rate.
fn utilization(
    out: &Outcome,
    rate: Option<u64>,
    payload: u64,
    sent: f64,
) -> Option<(String, Metric)> {
    let t = out.value(THROUGHPUT_DURATION)?;
    let rate = rate?;
    // Messages delivered in the timed interval.
    let timed = out.value(THROUGHPUT_MESSAGES_PER_S).map(|v| v * t);
    let bits = payload as f64 * 8.0 * timed.unwrap_or(sent);
    Some(metric(LINK_UTILIZATION, bits / (rate as f64 * t)))
}

/// Steady state: from the stable mark (ping-pong: round 3; XMPP stream: after the
/// warm-up stanza) to the end, so set-up traffic (handshakes, server-to-server
/// negotiation) is left out. Both directions count: the reverse one carries the ACKs.
fn stable_metrics(
    m: &mut Vec<(String, Metric)>,
    case: &Case,
    conn: Option<(u16, Transport)>,
    mark: &Counters,
    after: &Counters,
    payload: u64,
) {
    let crossings = if case.workload() == "pingpong" {
        2.0 * case.rounds().saturating_sub(2) as f64
    } else {
        case.count(&params::COUNT).unwrap_or(0) as f64
    };
    let bytes = match conn {
        Some((port, t)) => {
            let now = flow(&after.up, port, t, true).1 + flow(&after.down, port, t, false).1;
            let then = flow(&mark.up, port, t, true).1 + flow(&mark.down, port, t, false).1;
            now - then
        }
        None => {
            (after.up.delivered_bytes - mark.up.delivered_bytes)
                + (after.down.delivered_bytes - mark.down.delivered_bytes)
        }
    };
    per_message(m, STABLE_PER_MESSAGE, bytes, crossings, payload);
}

/// What the link dropped during the case, by reason, and how late it released packets.
fn drop_metrics(m: &mut Vec<(String, Metric)>, before: &Counters, after: &Counters) {
    let up = after.up.since(&before.up);
    let down = after.down.since(&before.down);
    m.push(metric(
        LINK_DROPPED_QUEUE,
        (up.dropped_queue + down.dropped_queue) as f64,
    ));
    m.push(metric(
        LINK_DROPPED_LOSS,
        (up.dropped_loss + down.dropped_loss) as f64,
    ));
    m.push(metric(
        LINK_DROPPED_MTU,
        (up.dropped_mtu + down.dropped_mtu) as f64,
    ));
    m.push(metric(
        LINK_DROPPED_OUTAGE,
        (up.dropped_outage + down.dropped_outage) as f64,
    ));
    m.push(metric(
        LINK_DROPPED_OTHER,
        (up.dropped_tx + up.dropped_reset + down.dropped_tx + down.dropped_reset) as f64,
    ));
    if let Some(h) = &after.release_error {
        if !h.is_empty() {
            m.push(metric(
                LINK_RELEASE_ERROR.at("p50"),
                h.value_at_quantile(0.5) as f64 / 1e9,
            ));
            m.push(metric(
                LINK_RELEASE_ERROR.at("p99"),
                h.value_at_quantile(0.99) as f64 / 1e9,
            ));
            m.push(metric(LINK_RELEASE_ERROR.at("max"), h.max() as f64 / 1e9));
        }
    }
}

/// A ping-pong's round trip in closed form (`rtt.model`, `rtt.theory_payload`), with
/// notes on what it leaves out.
fn rtt_model(
    out: &mut Outcome,
    m: &mut Vec<(String, Metric)>,
    case: &Case,
    link: &CaseLink,
    payload: u64,
) {
    // With a trace the rate varies in time, and with per-connection paths the delay is
    // the connection's: the closed form below does not apply.
    let overhead = crate::registry::of(case).message_overhead();
    let (true, Some(overhead), None, None) = (
        case.workload() == "pingpong",
        overhead,
        &link.trace,
        &link.paths,
    ) else {
        return;
    };
    let frame = payload + overhead;
    let t = out.transport;
    let model = one_way_ns(frame, &link.up, t) + one_way_ns(frame, &link.down, t);
    m.push(metric(RTT_MODEL, model as f64 / 1e9));
    if let (Some(ru), Some(rd)) = (link.up.rate_bps, link.down.rate_bps) {
        let theory = serialization_ns(payload, ru) + serialization_ns(payload, rd);
        m.push(metric(RTT_THEORY_PAYLOAD, theory as f64 / 1e9));
    }
    if !matches!(link.up.loss, Loss::None) || link.up.jitter_ns > 0 {
        out.notes
            .push("rtt.model assumes no loss and no jitter".into());
    }
    if !link.up.outages.is_empty() || !link.down.outages.is_empty() {
        // The closed form holds between outages only: a round that meets one waits
        // for the link to come back and then for a retransmission timer, TCP's
        // backed-off one (RFC 6298 §5.5) or the datagram protocol's own, which no fixed
        // formula predicts.
        out.notes.push(match t {
            Transport::Tcp => {
                "rtt.model is the round trip while the link is up: rounds that meet an \
                 outage also wait for it to end and for TCP's retransmission back-off \
                 (see link.dropped.outage)"
                    .into()
            }
            Transport::Udp => {
                "rtt.model is the round trip while the link is up: rounds that meet an \
                 outage also wait for it to end and for the protocol's own retransmission \
                 (see link.dropped.outage)"
                    .into()
            }
        });
    }
}

/// The series' name in the record (`series.link`: `<case>.link.csv`).
pub const LINK_SERIES: &str = "link";

/// The case's per-packet one-way delays (`link.one_way*`) and its queue series
/// (docs/links.md, "What a case records of the link").
pub fn add_link_times(out: &mut Outcome, times: &wirebench_lab::LinkTimes) {
    use wirebench_model::metric::{LINK_ONE_WAY, LINK_ONE_WAY_DOWN, LINK_ONE_WAY_UP};
    let data = times.data_direction();
    for (spec, dir) in [
        (LINK_ONE_WAY, data),
        (LINK_ONE_WAY_UP, 0),
        (LINK_ONE_WAY_DOWN, 1),
    ] {
        let Some(h) = times.one_way[dir].as_ref().filter(|h| !h.is_empty()) else {
            continue;
        };
        out.put(spec.at("mean"), h.mean() / 1e9);
        for (stat, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)] {
            out.put(spec.at(stat), h.value_at_quantile(q) as f64 / 1e9);
        }
        out.put(spec.at("max"), h.max() as f64 / 1e9);
    }
    if times.truncated {
        out.notes.push(format!(
            "link series: it stops after {} samples ({} s)",
            wirebench_lab::times::MAX_SAMPLES,
            wirebench_lab::times::MAX_SAMPLES as u64 * wirebench_lab::times::SAMPLE_NS
                / 1_000_000_000
        ));
    }
    if !times.samples.is_empty() {
        out.series.push((LINK_SERIES.into(), times.csv()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_rtt_at_2400_bits() {
        // 2-byte payload: 23-byte frame + 52 bytes of headers = 75 B = 250 ms per way.
        let spec = LinkSpec::parse("2400bit/500ms").unwrap();
        assert_eq!(
            one_way_ns(23, &spec, Transport::Tcp),
            250_000_000 + 500_000_000
        );
        // Over UDP: 23 + 28 bytes = 51 B = 170 ms per way.
        assert_eq!(
            one_way_ns(23, &spec, Transport::Udp),
            170_000_000 + 500_000_000
        );
        // A frame larger than one MSS pays the headers of every segment.
        let spec = LinkSpec::parse("rate=8kbit,mtu=552").unwrap();
        assert_eq!(
            one_way_ns(1000, &spec, Transport::Tcp),
            serialization_ns(1000 + 2 * 52, 8000)
        );
        // A datagram larger than the MTU pays an IPv4 header per fragment, UDP's once.
        assert_eq!(
            one_way_ns(1000, &spec, Transport::Udp),
            serialization_ns(1000 + 8 + 2 * 20, 8000)
        );
    }

    /// Counters with one TCP and one UDP flow of the client's port 40000, and another
    /// host's UDP flow on the same port, which is not the client's.
    fn two_flows() -> Counters {
        use wirebench_lab::emulator::FlowKey;
        let client = CLIENT_ADDR.octets();
        let server = wirebench_lab::SERVER_ADDR.octets();
        let key = |proto, src, sport, dst, dport| FlowKey {
            proto,
            src,
            sport,
            dst,
            dport,
        };
        let mut c = Counters::default();
        c.up.flows
            .insert(key(6, client, 40000, server, 7), (10, 1000));
        c.up.flows
            .insert(key(17, client, 40000, server, 5683), (3, 150));
        c.up.flows
            .insert(key(17, server, 40000, client, 5683), (99, 9900));
        c.down
            .flows
            .insert(key(6, server, 7, client, 40000), (8, 800));
        c.down
            .flows
            .insert(key(17, server, 5683, client, 40000), (2, 90));
        c
    }

    fn value(m: &[(String, Metric)], name: &str) -> f64 {
        m.iter().find(|(n, _)| n == name).unwrap().1.value
    }

    #[test]
    fn wire_metrics_count_the_data_connections_flow_by_transport() {
        let c = two_flows();
        let mut m = Vec::new();
        assert_eq!(flow_metrics(&mut m, &c, 40000, Transport::Udp), 240);
        assert_eq!(value(&m, "wire.up.packets"), 3.0);
        assert_eq!(value(&m, "wire.up.bytes"), 150.0);
        assert_eq!(value(&m, "wire.down.packets"), 2.0);
        assert_eq!(value(&m, "wire.packets"), 5.0);
        let mut m = Vec::new();
        assert_eq!(flow_metrics(&mut m, &c, 40000, Transport::Tcp), 1800);
        assert_eq!(value(&m, "wire.up.packets"), 10.0);
        assert_eq!(value(&m, "wire.down.bytes"), 800.0);
        assert_eq!(flow(&c.up, 40001, Transport::Udp, true), (0, 0));
    }
}
