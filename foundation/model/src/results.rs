//! The results record: one per case, the single source of truth from which CSV tables,
//! terminal summaries and charts are derived. Field meanings are documented in
//! `docs/results.md`; `schema` is bumped on any incompatible change.

use serde::{Deserialize, Serialize};
use serde_json::Map;

pub const SCHEMA: u32 = 1;

/// The statistics suffixes of a distribution's metrics (`connect.tcp.p50`...).
pub const STATS: &[&str] = &["min", "mean", "p50", "p90", "p99", "max"];

/// How `wirebench merge` combines one metric of a sharded load case's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Made again from the shards' added interval series or start reports (the load
    /// figures, `case.duration`, `shards.*`), never from the shards' values.
    Rebuilt,
    /// Describes one shard only (`shard.*`): left out of the merged record.
    OneShard,
    /// The shards' values added up (memory, presences: each shard holds its own).
    Sum,
    /// Each shard's value weighted by its own value of that metric, over the merged one:
    /// a figure per session logged in is weighted by `load.logged_in`.
    WeightedBy(&'static str),
    /// Kept when every shard has the same value; otherwise left out, with a note.
    Agree,
}

/// A metric a case can record: its name, unit, meaning (docs/results.md says more) and
/// how shards merge it. The shared ones are [`SHARED`]; each protocol declares its own
/// through its plugin, and the runner joins them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricSpec {
    /// The name, or a distribution's stem when `stats` is not empty.
    pub name: &'static str,
    /// Statistics suffixes: the metrics are `name.STAT` for each.
    pub stats: &'static [&'static str],
    /// `s`, `B`, `bit/s`, `msg/s`, `count`, `ratio`...
    pub unit: &'static str,
    pub meaning: &'static str,
    pub merge: Merge,
    /// Its name in words when a report charts it as a headline delay, after the shared
    /// round trips and connection set-up (a protocol's first delivery); `None`: charted
    /// only when a scenario asks.
    pub chart: Option<&'static str>,
}

impl MetricSpec {
    /// One metric, kept on merge when the shards agree.
    pub const fn new(name: &'static str, unit: &'static str, meaning: &'static str) -> Self {
        MetricSpec {
            name,
            stats: &[],
            unit,
            meaning,
            merge: Merge::Agree,
            chart: None,
        }
    }
    /// A distribution: `name.STAT` for each of `stats`.
    pub const fn dist(
        name: &'static str,
        stats: &'static [&'static str],
        unit: &'static str,
        meaning: &'static str,
    ) -> Self {
        MetricSpec {
            name,
            stats,
            unit,
            meaning,
            merge: Merge::Agree,
            chart: None,
        }
    }
    pub const fn merged(self, merge: Merge) -> Self {
        MetricSpec { merge, ..self }
    }
    /// Charted as a headline delay, `words` its name on the chart ([`MetricSpec::chart`]).
    pub const fn charted(self, words: &'static str) -> Self {
        MetricSpec {
            chart: Some(words),
            ..self
        }
    }
    /// The metric names it declares.
    pub fn names(&self) -> Vec<String> {
        if self.stats.is_empty() {
            vec![self.name.to_string()]
        } else {
            self.stats
                .iter()
                .map(|s| format!("{}.{s}", self.name))
                .collect()
        }
    }
    /// Whether it declares `metric`.
    pub fn declares(&self, metric: &str) -> bool {
        match metric.strip_prefix(self.name) {
            Some("") => self.stats.is_empty(),
            Some(rest) => rest
                .strip_prefix('.')
                .is_some_and(|s| self.stats.contains(&s)),
            None => false,
        }
    }
}

/// Short for [`MetricSpec::new`] in the list below.
const fn m(name: &'static str, unit: &'static str, meaning: &'static str) -> MetricSpec {
    MetricSpec::new(name, unit, meaning)
}
const RTT_STATS: &[&str] = &["min", "mean", "max", "p50", "p90", "p99", "p999"];
const LOAD_STATS: &[&str] = &["p50", "p99", "max", "mean"];

/// The metrics of the shared workloads and tiers (the case loop, ping-pong and stream,
/// the link, the lab's servers and load generators, sharded runs); protocols declare
/// theirs through their plugins. docs/results.md defines each.
pub static SHARED: &[MetricSpec] = &[
    m(
        "case.duration",
        "s",
        "wall time of the case, set-up included",
    )
    .merged(Merge::Rebuilt),
    m("connect.handshake", "s", "start of connect() to its return"),
    m(
        "connect.time",
        "s",
        "start of connect() to the server's first byte",
    ),
    m(
        "rtt.first",
        "s",
        "round trip of the first message, minus think time",
    ),
    m("rtt.second", "s", "the second round trip"),
    m(
        "rtt.stable",
        "s",
        "median of the rounds after the first two",
    ),
    MetricSpec::dist(
        "rtt",
        RTT_STATS,
        "s",
        "round trips over all rounds or messages",
    ),
    m(
        "rtt.model",
        "s",
        "the link model's round trip for this payload",
    ),
    m(
        "rtt.theory_payload",
        "s",
        "the payload's serialisation time on the link",
    ),
    m("throughput.duration", "s", "the stream's timed interval"),
    m(
        "throughput.bits_per_s",
        "bit/s",
        "payload bits delivered per second",
    ),
    m(
        "throughput.frame_bits_per_s",
        "bit/s",
        "payload and frame bits delivered per second",
    ),
    m(
        "throughput.messages_per_s",
        "msg/s",
        "messages delivered per second",
    ),
    m(
        "throughput.requests_per_s",
        "msg/s",
        "requests answered per second of the ping-pong",
    ),
    m("bytes.payload", "B", "payload bytes delivered"),
    m(
        "bytes.sent",
        "B",
        "bytes the client wrote on the data connection",
    ),
    m(
        "bytes.received",
        "B",
        "bytes the client read on the data connection",
    ),
    m("messages.sent", "count", "messages the client sent"),
    m(
        "messages.received",
        "count",
        "distinct messages that arrived",
    ),
    m("messages.lost", "count", "sent but never received"),
    m(
        "messages.duplicated",
        "count",
        "repeats of a message already received",
    ),
    m(
        "messages.reordered",
        "count",
        "messages that arrived after a later one",
    ),
    m(
        "messages.corrupt",
        "count",
        "messages whose payload differed from what was sent",
    ),
    m(
        "link.utilization",
        "ratio",
        "share of the link's capacity used",
    ),
    m("link.emulator_cpu", "s", "the link emulator's CPU time"),
    m(
        "link.dropped.queue",
        "count",
        "packets dropped by the full queue",
    ),
    m(
        "link.dropped.loss",
        "count",
        "packets dropped by the loss model",
    ),
    m(
        "link.dropped.mtu",
        "count",
        "packets dropped for exceeding the MTU",
    ),
    m(
        "link.dropped.outage",
        "count",
        "packets dropped during an outage",
    ),
    m(
        "link.dropped.other",
        "count",
        "packets dropped for other reasons",
    ),
    m(
        "link.dropped.tun",
        "count",
        "packets the TUN device dropped",
    ),
    MetricSpec::dist(
        "link.release_error",
        &["p50", "p99", "max"],
        "s",
        "how late the emulator released packets against their schedule",
    ),
    m(
        "link2.packets",
        "count",
        "packets the second path delivered",
    ),
    m("link2.bytes", "B", "IP bytes the second path delivered"),
    m(
        "wire.packets",
        "count",
        "packets on the link, both directions",
    ),
    m("wire.bytes", "B", "IP bytes on the link, both directions"),
    m("wire.up.packets", "count", "packets on the uplink"),
    m("wire.up.bytes", "B", "IP bytes on the uplink"),
    m("wire.down.packets", "count", "packets on the downlink"),
    m("wire.down.bytes", "B", "IP bytes on the downlink"),
    m("wire.bytes_per_message", "B", "link bytes per message"),
    m(
        "wire.overhead_per_message",
        "B",
        "link bytes per message beyond its payload",
    ),
    m(
        "wire.stable.bytes_per_message",
        "B",
        "link bytes per message after set-up",
    ),
    m(
        "wire.stable.overhead_per_message",
        "B",
        "link bytes per message beyond its payload after set-up",
    ),
    m("server.rss", "B", "the placed servers' resident memory"),
    m("server.cpu", "s", "the placed servers' CPU time"),
    m("server.routed", "count", "messages the servers routed"),
    m("server.sessions", "count", "sessions the servers held"),
    m("server.rss_per_session", "B", "server memory per session"),
    m("server.cpu_per_session", "s", "server CPU time per session"),
    m(
        "kernel.tcp_mem",
        "B",
        "the kernel's TCP buffer memory while the sessions are up",
    )
    .merged(Merge::Sum),
    m("load.sessions", "count", "sessions the phases scheduled").merged(Merge::Rebuilt),
    m(
        "load.logged_in",
        "count",
        "sessions that completed their login",
    )
    .merged(Merge::Rebuilt),
    m("load.failed", "count", "sessions that failed, any cause").merged(Merge::Rebuilt),
    MetricSpec::dist(
        "load.failed",
        &[
            "refused",
            "timeout",
            "auth",
            "stream_error",
            "reset",
            "other",
        ],
        "count",
        "failures by cause",
    )
    .merged(Merge::Rebuilt),
    m(
        "load.peak_active",
        "count",
        "most sessions logged in at an interval's end",
    )
    .merged(Merge::Rebuilt),
    m(
        "load.logins_per_s.max",
        "count",
        "logins in the busiest interval, per second",
    )
    .merged(Merge::Rebuilt),
    MetricSpec::dist("load.connect", LOAD_STATS, "s", "open-loop connect latency")
        .merged(Merge::Rebuilt),
    MetricSpec::dist("load.login", LOAD_STATS, "s", "open-loop login latency")
        .merged(Merge::Rebuilt),
    MetricSpec::dist("load.message", LOAD_STATS, "s", "open-loop message latency")
        .merged(Merge::Rebuilt),
    m("shard.index", "count", "which slice this run generated").merged(Merge::OneShard),
    m("shard.count", "count", "how many slices the run has").merged(Merge::OneShard),
    m(
        "shard.start_margin",
        "s",
        "how long before the agreed start the shard was ready",
    )
    .merged(Merge::OneShard),
    m("shard.clock_offset", "s", "this clock minus shard 0's").merged(Merge::OneShard),
    m("shard.clock_error", "s", "the bound of shard.clock_offset").merged(Merge::OneShard),
    m("shards.count", "count", "shards merged").merged(Merge::Rebuilt),
    m(
        "shards.start_margin.min",
        "s",
        "the latest shard's margin before the start",
    )
    .merged(Merge::Rebuilt),
    m(
        "shards.clock_offset.max",
        "s",
        "the largest clock offset from shard 0",
    )
    .merged(Merge::Rebuilt),
    m(
        "shards.clock_error.max",
        "s",
        "the largest clock error bound",
    )
    .merged(Merge::Rebuilt),
    MetricSpec::dist(
        "rtt.uncorrected",
        &["p50", "p99", "p999", "max", "mean"],
        "s",
        "requests timed from their actual send",
    ),
    MetricSpec::dist(
        "rate.send_lag",
        &["p50", "p99", "max"],
        "s",
        "how late requests left against their schedule",
    ),
    m("rate.offered", "msg/s", "the scheduled rate"),
    m(
        "rate.achieved",
        "msg/s",
        "requests answered (connections done) per second",
    ),
];

/// Checks one `--columns` pattern (a metric name, or a prefix ending in `*`) against
/// `known`, every declared metric's name; the error suggests the closest name and lists
/// the families.
pub fn check_column(pattern: &str, known: &[String]) -> Result<(), String> {
    let matches = |m: &&String| match pattern.strip_suffix('*') {
        Some(prefix) => m.starts_with(prefix),
        None => *m == pattern,
    };
    if known.iter().any(|m| matches(&m)) {
        return Ok(());
    }
    let mut families: Vec<String> = Vec::new();
    for m in known {
        let f = format!("{}.*", m.split('.').next().unwrap_or(m));
        if !families.contains(&f) {
            families.push(f);
        }
    }
    // Compare like with like: a prefix pattern with the families, a name with the names.
    let candidates: &[String] = if pattern.ends_with('*') {
        &families
    } else {
        known
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
    /// What the kernel reported about the data connection's transport, beside what was
    /// asked in `params`: `tcp.cc` (the congestion control), `tcp.cc.from` (`socket`:
    /// read back from the connection with `TCP_CONGESTION`; `client host default`: the
    /// default of the network namespace the client ran in, where the workload does not
    /// hold the socket).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub transport: Map<String, serde_json::Value>,
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

    fn known() -> Vec<String> {
        SHARED.iter().flat_map(MetricSpec::names).collect()
    }

    #[test]
    fn columns_must_match_a_known_metric() {
        let known = known();
        for ok in ["rtt.*", "rtt.p50", "throughput.*", "*", "link.dropped.*"] {
            assert_eq!(check_column(ok, &known), Ok(()), "{ok}");
        }
        let e = check_column("nosuch.*", &known).unwrap_err();
        assert!(
            e.starts_with("\"nosuch.*\" matches no metric; metrics: case.*, connect.*, rtt.*"),
            "{e}"
        );
        let e = check_column("rt.*", &known).unwrap_err();
        assert!(e.contains("(did you mean `rtt.*`?)"), "{e}");
        let e = check_column("rtt.p5", &known).unwrap_err();
        assert!(e.contains("(did you mean `rtt.p50`?)"), "{e}");
    }

    #[test]
    fn a_distribution_declares_its_statistics_only() {
        let d = MetricSpec::dist("convert.leg", STATS, "s", "");
        assert!(d.declares("convert.leg.p99"));
        assert!(!d.declares("convert.leg"));
        assert!(!d.declares("convert.leg.p999"));
        assert!(!d.declares("convert.legs.p99"));
        assert!(m("a.b", "s", "").declares("a.b"));
        assert!(!m("a.b", "s", "").declares("a.b.c"));
        assert_eq!(d.names().len(), 6);
    }

    #[test]
    fn shared_names_are_declared_once() {
        let mut names = known();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "a shared metric is declared twice");
    }
}
