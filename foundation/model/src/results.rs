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
    "load.roster_items",
    "load.presences",
    "shard.index",
    "shard.count",
    "shard.start_margin",
    "shard.clock_offset",
    "shard.clock_error",
    "shards.count",
    "shards.start_margin.min",
    "shards.clock_offset.max",
    "shards.clock_error.max",
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
    "convert.onward_tfo",
    "convert.leg.min",
    "convert.leg.mean",
    "convert.leg.p50",
    "convert.leg.p90",
    "convert.leg.p99",
    "convert.leg.max",
    "origin.cpu_per_connection",
    "proxy.cpu_per_connection",
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

    /// Metric names written as literals where a workload records them
    /// (`out.push("convert.onward_tfo", ...)`, `rec.set_metric("shards.count", ...)`,
    /// `push_distribution(out, "convert.leg", ...)` and its siblings, which add the
    /// statistics' suffixes), outside tests. Names built with `format!` elsewhere are
    /// not seen; the recorded runs' names are checked by the runner's estimate test.
    fn recorded_literals(text: &str) -> Vec<String> {
        const STATS: &[&str] = &["mean", "min", "p50", "p90", "p99", "max"];
        let text = text.split("#[cfg(test)]").next().unwrap_or(text);
        let mut out = Vec::new();
        for (call, suffixes) in [
            ("push(", &[][..]),
            ("set_metric(", &[]),
            ("per_conn(", &[]),
            ("push_distribution(", STATS),
            ("push_ratios(", STATS),
        ] {
            for (at, _) in text.match_indices(call) {
                // Arguments up to the call's end: metric names hold no parentheses.
                let args = &text[at + call.len()..];
                if args.trim_start().starts_with('(') {
                    continue; // a tuple: a histogram's name, not a metric
                }
                let args = &args[..args.find(')').unwrap_or(args.len())];
                let Some(name) = args.split('"').skip(1).step_by(2).find(|n| {
                    n.starts_with(|c: char| c.is_ascii_lowercase())
                        && n.contains('.')
                        && n.chars().all(|c| {
                            c.is_ascii_lowercase() || c.is_ascii_digit() || "._".contains(c)
                        })
                }) else {
                    continue;
                };
                if suffixes.is_empty() {
                    out.push(name.to_string());
                }
                out.extend(suffixes.iter().map(|s| format!("{name}.{s}")));
            }
        }
        out
    }

    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if !["tests", "target", "fuzz", "node_modules"]
                    .contains(&name.to_str().unwrap_or(""))
                {
                    sources(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_metric_a_workload_records_is_listed() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in ["crates", "protocols"] {
            sources(&root.join(dir), &mut files);
        }
        let mut missing = Vec::new();
        let mut seen = 0;
        for f in &files {
            for name in recorded_literals(&std::fs::read_to_string(f).unwrap()) {
                seen += 1;
                if !METRICS.contains(&name.as_str()) {
                    missing.push(format!("{name} ({})", f.display()));
                }
            }
        }
        // The scan itself must find the workloads' calls, or it would pass on nothing.
        assert!(
            seen > 50,
            "only {seen} metric names found under {}",
            root.display()
        );
        assert!(
            missing.is_empty(),
            "recorded but not in METRICS (so --columns refuses them): {missing:?}"
        );
        assert_eq!(
            recorded_literals(
                "out.push(\n    \"a.b\", 1.0, \"s\"); v.push(\"127.0.0.1\"); \
                 push_ratios(o, \"c.d\", v, \"round trips\")"
            ),
            [
                "a.b", "c.d.mean", "c.d.min", "c.d.p50", "c.d.p90", "c.d.p99", "c.d.max"
            ]
        );
    }
}
