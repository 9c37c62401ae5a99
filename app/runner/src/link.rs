//! From a case's link parameters to the two directions' link specs, and from the
//! emulator's counters to the case's wire metrics and the model's expectations.
//!
//! Precedence: `link` sets both directions; `uplink` / `downlink` replace one direction;
//! `link.rate`, `link.delay`, ... then override that field in both directions, so a grid
//! axis over `link.delay` varies the delay of whatever link was described.

use crate::Case;
use wirebench_lab::{CLIENT_ADDR, Counters, DirCounters};
use wirebench_link::{LinkSpec, Loss, PathRtts, Trace, serialization_ns};
use wirebench_model::Metric;
use wirebench_protocol::Outcome;
use wirebench_protocol::params::{self, ParamSpec, is_link};

pub use wirebench_protocol::CaseLink;

/// IPv4 (20) + TCP (20) + timestamp option (12): what Linux puts in front of every data
/// segment of a connection between two Linux hosts.
pub const TCP_IPV4_OVERHEAD: u64 = 52;

#[derive(Debug, thiserror::Error)]
#[error("case {case}: {msg}")]
pub struct CaseLinkError {
    case: usize,
    msg: String,
}

/// The link of a case, or `None` if it has no link parameter (plain loopback).
pub fn case_link(case: &Case) -> Result<Option<CaseLink>, CaseLinkError> {
    if !case.point.iter().any(|(n, _)| is_link(n)) {
        return Ok(None);
    }
    let err = |msg: String| CaseLinkError {
        case: case.index,
        msg,
    };
    let spec = |p: &ParamSpec| -> Result<Option<LinkSpec>, CaseLinkError> {
        match case.text(p) {
            Some(text) => LinkSpec::parse(text)
                .map(Some)
                .map_err(|e| err(format!("{}: {e}", p.name))),
            None => Ok(None),
        }
    };
    let both = spec(&params::LINK)?.unwrap_or_default();
    let mut up = spec(&params::UPLINK)?.unwrap_or_else(|| both.clone());
    let mut down = spec(&params::DOWNLINK)?.unwrap_or(both);
    // The link fields one at a time, over the whole-link specs, in both directions.
    for dir in [&mut up, &mut down] {
        if let Some(r) = case.rate(&params::LINK_RATE) {
            dir.rate_bps = Some(r.round() as u64);
        }
        if let Some(d) = case.duration(&params::LINK_DELAY) {
            dir.delay_ns = d.as_nanos() as u64;
        }
        if let Some(d) = case.duration(&params::LINK_JITTER) {
            dir.jitter_ns = d.as_nanos() as u64;
        }
        if let Some(b) = case.bytes(&params::LINK_QUEUE) {
            dir.queue_bytes = Some(b);
        }
        if let Some(m) = case.count(&params::LINK_MTU) {
            dir.mtu = u32::try_from(m)
                .map_err(|_| err(format!("{} {m} is too large", params::LINK_MTU.name)))?;
        }
        if let Some(w) = case.text(&params::LINK_LOSS) {
            dir.loss = LinkSpec::parse(&format!("loss={w}"))
                .map_err(|e| err(format!("{}: {e}", params::LINK_LOSS.name)))?
                .loss;
        }
        match case.text(&params::LINK_OUTAGE) {
            Some("none") => dir.outages.clear(),
            Some(w) => {
                dir.outages = LinkSpec::parse(&format!("outage={w}"))
                    .map_err(|e| err(format!("{}: {e}", params::LINK_OUTAGE.name)))?
                    .outages
            }
            None => {}
        }
    }
    // Validate the combination (e.g. an MTU out of range) before any lab is built.
    for (which, dir) in [("uplink", &up), ("downlink", &down)] {
        LinkSpec::parse(&dir.to_string()).map_err(|e| err(format!("{which} {dir}: {e}")))?;
    }
    let trace_name = params::LINK_TRACE.name;
    let trace = match case.text(&params::LINK_TRACE) {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| err(format!("{trace_name}: cannot read {path}: {e}")))?;
            Some(std::sync::Arc::new(
                Trace::parse(&text).map_err(|e| err(format!("{trace_name}: {path}: {e}")))?,
            ))
        }
        None => None,
    };
    let paths = match case.text(&params::LINK_PATHS) {
        Some(text) => Some(std::sync::Arc::new(
            PathRtts::parse(text).map_err(|e| err(e.to_string()))?,
        )),
        None => None,
    };
    Ok(Some(CaseLink {
        up,
        down,
        trace,
        paths,
        second: spec(&params::LINK2)?,
    }))
}

/// The data connection's packets in one direction (its flow in the emulator's counters).
fn flow(dir: &DirCounters, local_port: u16, outgoing: bool) -> (u64, u64) {
    let client = CLIENT_ADDR.octets();
    dir.flows
        .iter()
        .filter(|(k, _)| {
            k.proto == 6
                && if outgoing {
                    k.src == client && k.sport == local_port
                } else {
                    k.dst == client && k.dport == local_port
                }
        })
        .fold((0, 0), |acc, (_, v)| (acc.0 + v.0, acc.1 + v.1))
}

/// One-way time of a message of `frame` bytes over `spec`: serialization of its
/// segments (pipelined: the last bit leaves after all bytes) plus propagation.
fn one_way_ns(frame: u64, spec: &LinkSpec) -> u64 {
    let mss = (spec.mtu as u64).saturating_sub(TCP_IPV4_OVERHEAD).max(1);
    let segments = frame.div_ceil(mss).max(1);
    let bytes = frame + segments * TCP_IPV4_OVERHEAD;
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
    let sent = metric_value(out, "messages.sent").unwrap_or(0.0);
    let workload = case.workload();
    let echoed = workload == "pingpong" || crate::registry::of(case).stream_echoes(case);
    let crossings = if echoed { 2.0 * sent } else { sent };
    let payload = case.payload();
    match out.local_port {
        // No data connection of ours crosses the link (XMPP: the servers' s2s traffic
        // does): count everything the link carried during the case.
        None => {
            let up = after.up.since(&before.up);
            let down = after.down.since(&before.down);
            m.push(metric(
                "wire.up.packets",
                up.delivered_packets as f64,
                "count",
            ));
            m.push(metric("wire.up.bytes", up.delivered_bytes as f64, "B"));
            m.push(metric(
                "wire.down.packets",
                down.delivered_packets as f64,
                "count",
            ));
            m.push(metric("wire.down.bytes", down.delivered_bytes as f64, "B"));
            let bytes = up.delivered_bytes + down.delivered_bytes;
            m.push(metric("wire.bytes", bytes as f64, "B"));
            per_message(&mut m, "wire", bytes, crossings, payload);
            m.extend(utilization(out, link, payload, sent));
        }
        Some(port) => {
            let (up_p, up_b) = flow(&after.up, port, true);
            let (down_p, down_b) = flow(&after.down, port, false);
            m.push(metric("wire.up.packets", up_p as f64, "count"));
            m.push(metric("wire.up.bytes", up_b as f64, "B"));
            m.push(metric("wire.down.packets", down_p as f64, "count"));
            m.push(metric("wire.down.bytes", down_b as f64, "B"));
            m.push(metric("wire.bytes", (up_b + down_b) as f64, "B"));
            m.push(metric("wire.packets", (up_p + down_p) as f64, "count"));
            per_message(&mut m, "wire", up_b + down_b, crossings, payload);
        }
    }
    if let Some(mark) = stable {
        stable_metrics(&mut m, case, out.local_port, mark, after, payload);
    }
    drop_metrics(&mut m, before, after);
    rtt_model(out, &mut m, case, link, payload);
    out.metrics.extend(m);
}

fn metric(name: &str, value: f64, unit: &str) -> (String, Metric) {
    (name.to_string(), Metric::new(value, unit))
}

/// The value of the workload's own metric `name`, if it recorded one.
fn metric_value(out: &Outcome, name: &str) -> Option<f64> {
    out.metrics
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.value)
}

/// `PREFIX.bytes_per_message` and `PREFIX.overhead_per_message` (beyond the payload),
/// when any message crossed.
fn per_message(
    m: &mut Vec<(String, Metric)>,
    prefix: &str,
    bytes: u64,
    crossings: f64,
    payload: u64,
) {
    if crossings > 0.0 {
        let per = bytes as f64 / crossings;
        m.push(metric(&format!("{prefix}.bytes_per_message"), per, "B"));
        m.push(metric(
            &format!("{prefix}.overhead_per_message"),
            per - payload as f64,
            "B",
        ));
    }
}

/// `link.utilization`: payload bits delivered in the timed interval over what the
/// uplink's rate could carry in it.
fn utilization(
    out: &Outcome,
    link: &CaseLink,
    payload: u64,
    sent: f64,
) -> Option<(String, Metric)> {
    let t = metric_value(out, "throughput.duration")?;
    let rate = link.up.rate_bps?;
    // Messages delivered in the timed interval.
    let timed = metric_value(out, "throughput.messages_per_s").map(|v| v * t);
    let bits = payload as f64 * 8.0 * timed.unwrap_or(sent);
    Some(metric(
        "link.utilization",
        bits / (rate as f64 * t),
        "ratio",
    ))
}

/// Steady state: from the stable mark (ping-pong: round 3; XMPP stream: after the
/// warm-up stanza) to the end, so set-up traffic (handshakes, server-to-server
/// negotiation) is left out. Both directions count: the reverse one carries the ACKs.
fn stable_metrics(
    m: &mut Vec<(String, Metric)>,
    case: &Case,
    local_port: Option<u16>,
    mark: &Counters,
    after: &Counters,
    payload: u64,
) {
    let crossings = if case.workload() == "pingpong" {
        2.0 * case.rounds().saturating_sub(2) as f64
    } else {
        case.count(&params::COUNT).unwrap_or(0) as f64
    };
    let bytes = match local_port {
        Some(port) => {
            let now = flow(&after.up, port, true).1 + flow(&after.down, port, false).1;
            let then = flow(&mark.up, port, true).1 + flow(&mark.down, port, false).1;
            now - then
        }
        None => {
            (after.up.delivered_bytes - mark.up.delivered_bytes)
                + (after.down.delivered_bytes - mark.down.delivered_bytes)
        }
    };
    per_message(m, "wire.stable", bytes, crossings, payload);
}

/// What the link dropped during the case, by reason, and how late it released packets.
fn drop_metrics(m: &mut Vec<(String, Metric)>, before: &Counters, after: &Counters) {
    let up = after.up.since(&before.up);
    let down = after.down.since(&before.down);
    m.push(metric(
        "link.dropped.queue",
        (up.dropped_queue + down.dropped_queue) as f64,
        "count",
    ));
    m.push(metric(
        "link.dropped.loss",
        (up.dropped_loss + down.dropped_loss) as f64,
        "count",
    ));
    m.push(metric(
        "link.dropped.mtu",
        (up.dropped_mtu + down.dropped_mtu) as f64,
        "count",
    ));
    m.push(metric(
        "link.dropped.outage",
        (up.dropped_outage + down.dropped_outage) as f64,
        "count",
    ));
    m.push(metric(
        "link.dropped.other",
        (up.dropped_tx + up.dropped_reset + down.dropped_tx + down.dropped_reset) as f64,
        "count",
    ));
    if let Some(h) = &after.release_error {
        if !h.is_empty() {
            m.push(metric(
                "link.release_error.p50",
                h.value_at_quantile(0.5) as f64 / 1e9,
                "s",
            ));
            m.push(metric(
                "link.release_error.p99",
                h.value_at_quantile(0.99) as f64 / 1e9,
                "s",
            ));
            m.push(metric("link.release_error.max", h.max() as f64 / 1e9, "s"));
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
    let model = one_way_ns(frame, &link.up) + one_way_ns(frame, &link.down);
    m.push(metric("rtt.model", model as f64 / 1e9, "s"));
    if let (Some(ru), Some(rd)) = (link.up.rate_bps, link.down.rate_bps) {
        let theory = serialization_ns(payload, ru) + serialization_ns(payload, rd);
        m.push(metric("rtt.theory_payload", theory as f64 / 1e9, "s"));
    }
    if !matches!(link.up.loss, Loss::None) || link.up.jitter_ns > 0 {
        out.notes
            .push("rtt.model assumes no loss and no jitter".into());
    }
    if !link.up.outages.is_empty() || !link.down.outages.is_empty() {
        // The closed form holds between outages only: a round that meets one waits
        // for the link to come back and then for TCP's backed-off retransmission
        // timer (RFC 6298 §5.5), which no fixed formula predicts.
        out.notes.push(
            "rtt.model is the round trip while the link is up: rounds that meet an \
             outage also wait for it to end and for TCP's retransmission back-off \
             (see link.dropped.outage)"
                .into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Scenario, plan};

    fn link_of(args: &[(&str, &str)]) -> CaseLink {
        let mut s = Scenario::empty("t");
        for (k, v) in args {
            s.set_param(k, v).unwrap();
        }
        case_link(&plan(&s)[0]).unwrap().unwrap()
    }

    #[test]
    fn no_link_parameters_no_lab() {
        let s = Scenario::empty("t");
        assert_eq!(case_link(&plan(&s)[0]).unwrap(), None);
    }

    #[test]
    fn precedence_link_then_direction_then_fields() {
        let l = link_of(&[
            ("link", "2400bit/500ms"),
            ("downlink", "19.2kbit/1s"),
            ("link.delay", "250ms"),
        ]);
        assert_eq!(l.up.rate_bps, Some(2400));
        assert_eq!(l.down.rate_bps, Some(19200));
        assert_eq!(l.up.delay_ns, 250_000_000);
        assert_eq!(l.down.delay_ns, 250_000_000);
        let l = link_of(&[("link.rate", "1Gbit"), ("link.loss", "1%")]);
        assert_eq!(l.up.rate_bps, Some(1_000_000_000));
        assert!(matches!(l.down.loss, Loss::Bernoulli { .. }));
    }

    #[test]
    fn link_outage_replaces_the_links_outages_and_is_a_grid_axis() {
        use wirebench_link::Outage;
        const S: u64 = 1_000_000_000;
        let l = link_of(&[
            ("link", "rate=9600bit,outage=1s+1s,outage=3s+1s"),
            ("link.outage", "5s+6s"),
        ]);
        assert_eq!(l.up.outages, [Outage::once(5 * S, 6 * S)]);
        assert_eq!(l.down.outages, l.up.outages);
        let l = link_of(&[
            ("link", "rate=9600bit,outage=1s+1s"),
            ("link.outage", "none"),
        ]);
        assert!(l.up.outages.is_empty() && l.down.outages.is_empty());
        let l = link_of(&[("link.outage", "every 60s for 10s")]);
        assert_eq!(l.up.outages, [Outage::periodic(60 * S, 10 * S, 60 * S)]);
        // A list is an axis: one case per outage.
        let mut s = Scenario::empty("t");
        s.set_param("link.rate", "9600bit").unwrap();
        s.set_param("link.outage", "none,5s+6s,every 60s for 10s")
            .unwrap();
        let cases = plan(&s);
        assert_eq!(cases.len(), 3);
        let outages: Vec<usize> = cases
            .iter()
            .map(|c| case_link(c).unwrap().unwrap().up.outages.len())
            .collect();
        assert_eq!(outages, [0, 1, 1]);
        let e = Scenario::empty("t")
            .set_param("link.outage", "5s")
            .unwrap_err()
            .to_string();
        assert!(e.contains("START+DURATION"), "{e}");
    }

    #[test]
    fn trace_files_are_loaded_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.trace");
        std::fs::write(&good, "0\n5\n10\n").unwrap();
        let l = link_of(&[("link.trace", good.to_str().unwrap())]);
        assert_eq!(l.up_params().trace.unwrap().len(), 3);
        let bad = dir.path().join("bad.trace");
        std::fs::write(&bad, "0\n5\nfast\n").unwrap();
        let mut s = Scenario::empty("t");
        let e = s
            .set_param("link.trace", bad.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--link-trace") && e.contains("line 3"), "{e}");
    }

    #[test]
    fn model_rtt_at_2400_bits() {
        // 2-byte payload: 23-byte frame + 52 bytes of headers = 75 B = 250 ms per way.
        let spec = LinkSpec::parse("2400bit/500ms").unwrap();
        assert_eq!(one_way_ns(23, &spec), 250_000_000 + 500_000_000);
        // A frame larger than one MSS pays the headers of every segment.
        let spec = LinkSpec::parse("rate=8kbit,mtu=552").unwrap();
        assert_eq!(
            one_way_ns(1000, &spec),
            serialization_ns(1000 + 2 * 52, 8000)
        );
    }
}
