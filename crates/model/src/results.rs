//! The results record: one per case, the single source of truth from which CSV tables,
//! terminal summaries and charts are derived. Field meanings are documented in
//! `docs/results.md`; `schema` is bumped on any incompatible change.

use serde::{Deserialize, Serialize};
use serde_json::Map;

pub const SCHEMA: u32 = 1;

/// Every metric a case can record (docs/results.md defines them), so a `--columns`
/// pattern that matches none of them is refused instead of giving an empty CSV.
pub const METRICS: &[&str] = &[
    "case.duration",
    "connect.handshake",
    "connect.time",
    "rtt.first",
    "rtt.second",
    "rtt.stable",
    "rtt.min",
    "rtt.mean",
    "rtt.max",
    "rtt.p50",
    "rtt.p90",
    "rtt.p99",
    "rtt.p999",
    "rtt.model",
    "rtt.theory_payload",
    "throughput.duration",
    "throughput.bits_per_s",
    "throughput.frame_bits_per_s",
    "throughput.messages_per_s",
    "bytes.payload",
    "bytes.sent",
    "bytes.received",
    "messages.sent",
    "messages.received",
    "messages.lost",
    "messages.duplicated",
    "messages.reordered",
    "messages.corrupt",
    "link.utilization",
    "link.emulator_cpu",
    "link.dropped.queue",
    "link.dropped.loss",
    "link.dropped.mtu",
    "link.dropped.outage",
    "link.dropped.other",
    "link.dropped.tun",
    "link.release_error.p50",
    "link.release_error.p99",
    "link.release_error.max",
    "wire.packets",
    "wire.bytes",
    "wire.up.packets",
    "wire.up.bytes",
    "wire.down.packets",
    "wire.down.bytes",
    "wire.bytes_per_message",
    "wire.overhead_per_message",
    "wire.stable.bytes_per_message",
    "wire.stable.overhead_per_message",
    "xmpp.login",
    "xmpp.first_delivery",
    "s2.total",
    "s2.login",
    "s2.pings",
    "s2.browser_start",
    "transport.sessions",
    "transport.requests",
    "irc.login",
    "irc.link_setup",
    "irc.nick_known",
    "irc.first_delivery",
    "irc.lines_per_message",
    "irc.drain_wait",
    "mqtt.broker_start",
    "mqtt.connect",
    "mqtt.subscribe",
    "mqtt.publish_bytes",
    "mqtt.first_delivery",
    "mqtt.drain_wait",
    "x2x.link_bytes",
    "x2x.stanzas",
    "x2x.connections",
    "x2x.tfo_used",
    "x2x.timestamps_used",
    "x2x.bytes_per_stanza",
    "x2x.overhead_per_stanza",
    "x2x.resent",
    "server.rss",
    "server.cpu",
    "server.routed",
    "server.sessions",
    "server.rss_per_session",
    "server.cpu_per_session",
    "kernel.tcp_mem",
    "load.sessions",
    "load.logged_in",
    "load.failed",
    "load.failed.refused",
    "load.failed.timeout",
    "load.failed.auth",
    "load.failed.stream_error",
    "load.failed.reset",
    "load.failed.other",
    "load.peak_active",
    "load.logins_per_s.max",
    "load.connect.p50",
    "load.connect.p99",
    "load.connect.max",
    "load.connect.mean",
    "load.login.p50",
    "load.login.p99",
    "load.login.max",
    "load.login.mean",
    "load.message.p50",
    "load.message.p99",
    "load.message.max",
    "load.message.mean",
    "generator.rss",
    "generator.cpu",
    "generator.rss_per_session",
    "generator.cpu_per_session",
    "throughput.requests_per_s",
    "rtt.uncorrected.p50",
    "rtt.uncorrected.p99",
    "rtt.uncorrected.p999",
    "rtt.uncorrected.max",
    "rtt.uncorrected.mean",
    "rate.send_lag.p50",
    "rate.send_lag.p99",
    "rate.send_lag.max",
    "rate.offered",
    "rate.achieved",
    "connects.ok",
    "connects.per_s",
    "connects.tfo",
    "connects.mptcp",
    "mptcp.subflows.mean",
    "mptcp.subflows.max",
    "mptcp.joined",
    "link2.packets",
    "link2.bytes",
    "connect.tcp.min",
    "connect.tcp.mean",
    "connect.tcp.p50",
    "connect.tcp.p90",
    "connect.tcp.p99",
    "connect.tcp.max",
    "connect.proxy.min",
    "connect.proxy.mean",
    "connect.proxy.p50",
    "connect.proxy.p90",
    "connect.proxy.p99",
    "connect.proxy.max",
    "ttfb.min",
    "ttfb.mean",
    "ttfb.p50",
    "ttfb.p85",
    "ttfb.p90",
    "ttfb.p95",
    "ttfb.p99",
    "ttfb.max",
    "path.rtt.min",
    "path.rtt.mean",
    "path.rtt.p50",
    "path.rtt.p90",
    "path.rtt.p99",
    "path.rtt.max",
    "ttfb.round_trips.min",
    "ttfb.round_trips.mean",
    "ttfb.round_trips.p50",
    "ttfb.round_trips.p90",
    "ttfb.round_trips.p99",
    "ttfb.round_trips.max",
    "connect.tcp.round_trips.min",
    "connect.tcp.round_trips.mean",
    "connect.tcp.round_trips.p50",
    "connect.tcp.round_trips.p90",
    "connect.tcp.round_trips.p99",
    "connect.tcp.round_trips.max",
    "connect.proxy.round_trips.min",
    "connect.proxy.round_trips.mean",
    "connect.proxy.round_trips.p50",
    "connect.proxy.round_trips.p90",
    "connect.proxy.round_trips.p99",
    "connect.proxy.round_trips.max",
];

/// Checks one `--columns` pattern (a metric name, or a prefix ending in `*`) against
/// [`METRICS`]; the error suggests the closest name and lists the families.
pub fn check_column(pattern: &str) -> Result<(), String> {
    let matches = |m: &&str| match pattern.strip_suffix('*') {
        Some(prefix) => m.starts_with(prefix),
        None => *m == pattern,
    };
    if METRICS.iter().any(matches) {
        return Ok(());
    }
    let mut families: Vec<String> = Vec::new();
    for m in METRICS {
        let f = format!("{}.*", m.split('.').next().unwrap_or(m));
        if !families.contains(&f) {
            families.push(f);
        }
    }
    // Compare like with like: a prefix pattern with the families, a name with the names.
    let candidates: Vec<String> = if pattern.ends_with('*') {
        families.clone()
    } else {
        METRICS.iter().map(|m| m.to_string()).collect()
    };
    let hint = crate::hint::closest(pattern, candidates.iter().map(String::as_str))
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    Err(format!(
        "{pattern:?} matches no metric{hint}; metrics: {} (docs/results.md lists them all)",
        families.join(", ")
    ))
}

/// A measured value with its unit (`s`, `B`, `bit/s`, `msg/s`, `count`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub value: f64,
    pub unit: String,
}

impl Metric {
    pub fn new(value: f64, unit: &str) -> Metric {
        Metric {
            value,
            unit: unit.to_string(),
        }
    }
}

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
    Interrupted,
    /// Not run: something it needs is missing on this machine (`wirebench run
    /// --skip-missing`); `error` says what.
    Skipped,
}

/// Facts about the machine a run was made on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub cpu: String,
    pub cpus: usize,
    pub memory_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub schema: u32,
    pub scenario: String,
    /// 1-based case number in grid order.
    pub case: usize,
    /// 1-based repetition of this case.
    pub repeat: u32,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Who a failed case's error points at: `input` (a parameter value), `environment`
    /// (this machine), `peer` (a server, gateway or the other client) or `link` (the
    /// network between them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// Canonical values (bytes, seconds, bit/s, counts, words), in grid order.
    pub params: Map<String, serde_json::Value>,
    /// The values as the user typed them, for tables and legends.
    pub labels: Map<String, serde_json::Value>,
    pub metrics: Map<String, serde_json::Value>,
    /// Histogram files beside results.jsonl, by metric family (e.g. `rtt`).
    #[serde(default)]
    pub histograms: Map<String, serde_json::Value>,
    /// Published figures for this case's parameters, by metric:
    /// `{"rtt.stable": {"value": 1.2, "source": "S1 ..."}}`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub references: Map<String, serde_json::Value>,
    /// Remarks needed to read the numbers right (e.g. how a throughput was timed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub seed: u64,
    /// RFC 3339 UTC start time of the case.
    pub started: String,
    pub wirebench: String,
    pub command: Vec<String>,
    pub host: HostFacts,
}

impl Record {
    pub fn metric(&self, name: &str) -> Option<Metric> {
        self.metrics
            .get(name)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
    pub fn set_metric(&mut self, name: &str, m: Metric) {
        self.metrics.insert(
            name.to_string(),
            serde_json::to_value(m).unwrap_or_default(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_must_match_a_known_metric() {
        for ok in [
            "rtt.*",
            "rtt.p50",
            "throughput.*",
            "*",
            "link.dropped.*",
            "x2x.resent",
        ] {
            assert_eq!(check_column(ok), Ok(()), "{ok}");
        }
        let e = check_column("nosuch.*").unwrap_err();
        assert!(
            e.starts_with("\"nosuch.*\" matches no metric; metrics: case.*, connect.*, rtt.*"),
            "{e}"
        );
        let e = check_column("rt.*").unwrap_err();
        assert!(e.contains("(did you mean `rtt.*`?)"), "{e}");
        let e = check_column("rtt.p5").unwrap_err();
        assert!(e.contains("(did you mean `rtt.p50`?)"), "{e}");
    }
}
