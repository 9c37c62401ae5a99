//! Metric declarations. Every metric a case can record is a constant [`MetricSpec`]: the
//! shared ones here (listed in [`SHARED`]), each protocol's in its plugin. Code records and
//! reads a metric through its constant ([`Key`] names one statistic of a distribution),
//! never by a name written out: a test finds any metric name written as a literal outside
//! its declaration. docs/results.md defines each metric.

use std::borrow::Cow;

pub mod connect;

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
    /// Its name in words for a study's lead figures and tables, where it is not charted
    /// as a headline; `None`: its name.
    pub words: Option<&'static str>,
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
            words: None,
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
            words: None,
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
    /// Named `words` in a study's figures and tables ([`MetricSpec::words`]).
    pub const fn named(self, words: &'static str) -> Self {
        MetricSpec {
            words: Some(words),
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

/// One metric as code records and reads it: a declared metric, or one statistic of a
/// declared distribution ([`MetricSpec::at`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    pub spec: MetricSpec,
    pub stat: Option<&'static str>,
}

impl Key {
    /// Its name in the record (`rtt.stable`, `rtt.p50`).
    pub fn name(&self) -> Cow<'static, str> {
        match self.stat {
            None => Cow::Borrowed(self.spec.name),
            Some(stat) => Cow::Owned(format!("{}.{stat}", self.spec.name)),
        }
    }
    /// Whether `name` is this metric's name (without building it).
    pub fn is(&self, name: &str) -> bool {
        match self.stat {
            None => name == self.spec.name,
            Some(stat) => name
                .strip_prefix(self.spec.name)
                .and_then(|r| r.strip_prefix('.'))
                .is_some_and(|r| r == stat),
        }
    }
    pub fn unit(&self) -> &'static str {
        self.spec.unit
    }
}

/// A table of metrics with words of its own (a column title, a chart's name) as the
/// names a record holds.
pub fn named<T: Copy>(list: &[(Key, T)]) -> Vec<(String, T)> {
    list.iter()
        .map(|(k, t)| (k.name().into_owned(), *t))
        .collect()
}

impl From<MetricSpec> for Key {
    fn from(spec: MetricSpec) -> Key {
        spec.key()
    }
}

impl From<&MetricSpec> for Key {
    fn from(spec: &MetricSpec) -> Key {
        spec.key()
    }
}

/// The histogram of a ping-pong's per-round times in a record's `histograms` (a file of
/// the rounds in order, beside the `rtt` family's).
pub const ROUNDS_HISTOGRAM: &str = "rtt.rounds";

/// Whether two strings are equal, in a constant context.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl MetricSpec {
    /// The metric itself; a distribution has no value of its own, only statistics
    /// ([`MetricSpec::at`]), so asking for one is a bug found when the constant is built.
    pub const fn key(self) -> Key {
        assert!(
            self.stats.is_empty(),
            "a distribution is recorded by its statistics: use at()"
        );
        Key {
            spec: self,
            stat: None,
        }
    }
    /// One statistic of a distribution (`RTT.at("p50")` is `rtt.p50`); a statistic it does
    /// not declare is a bug, found at compile time in a constant.
    pub const fn at(self, stat: &'static str) -> Key {
        let mut i = 0;
        while i < self.stats.len() {
            if same(self.stats[i], stat) {
                return Key {
                    spec: self,
                    stat: Some(stat),
                };
            }
            i += 1;
        }
        panic!("the distribution does not declare this statistic")
    }
}

pub const CASE_DURATION: MetricSpec = m(
    "case.duration",
    "s",
    "wall time of the case, set-up included",
)
.merged(Merge::Rebuilt);
pub const CONNECT_HANDSHAKE: MetricSpec =
    m("connect.handshake", "s", "start of connect() to its return");
pub const CONNECT_TIME: MetricSpec = m(
    "connect.time",
    "s",
    "start of connect() to the server's first byte",
);
pub const RTT_FIRST: MetricSpec = m(
    "rtt.first",
    "s",
    "round trip of the first message, minus think time",
);
pub const RTT_SECOND: MetricSpec = m("rtt.second", "s", "the second round trip");
pub const RTT_STABLE: MetricSpec = m(
    "rtt.stable",
    "s",
    "median of the rounds after the first two",
);
pub const RTT: MetricSpec = MetricSpec::dist(
    "rtt",
    RTT_STATS,
    "s",
    "round trips over all rounds or messages",
);
pub const RTT_MODEL: MetricSpec = m(
    "rtt.model",
    "s",
    "the link model's round trip for this payload",
);
pub const RTT_THEORY_PAYLOAD: MetricSpec = m(
    "rtt.theory_payload",
    "s",
    "the payload's serialisation time on the link",
);
pub const THROUGHPUT_DURATION: MetricSpec =
    m("throughput.duration", "s", "the stream's timed interval");
pub const THROUGHPUT_BITS_PER_S: MetricSpec = m(
    "throughput.bits_per_s",
    "bit/s",
    "payload bits delivered per second",
);
pub const THROUGHPUT_FRAME_BITS_PER_S: MetricSpec = m(
    "throughput.frame_bits_per_s",
    "bit/s",
    "payload and frame bits delivered per second",
);
pub const THROUGHPUT_MESSAGES_PER_S: MetricSpec = m(
    "throughput.messages_per_s",
    "msg/s",
    "messages delivered per second",
);
pub const THROUGHPUT_REQUESTS_PER_S: MetricSpec = m(
    "throughput.requests_per_s",
    "msg/s",
    "requests answered per second of the ping-pong",
);
pub const BYTES_PAYLOAD: MetricSpec = m("bytes.payload", "B", "payload bytes delivered");
pub const BYTES_SENT: MetricSpec = m(
    "bytes.sent",
    "B",
    "bytes the client wrote on the data connection",
);
pub const BYTES_RECEIVED: MetricSpec = m(
    "bytes.received",
    "B",
    "bytes the client read on the data connection",
);
pub const MESSAGES_SENT: MetricSpec = m("messages.sent", "count", "messages the client sent");
pub const MESSAGES_RECEIVED: MetricSpec = m(
    "messages.received",
    "count",
    "distinct messages that arrived",
);
pub const MESSAGES_LOST: MetricSpec = m("messages.lost", "count", "sent but never received");
pub const MESSAGES_DUPLICATED: MetricSpec = m(
    "messages.duplicated",
    "count",
    "repeats of a message already received",
);
pub const MESSAGES_REORDERED: MetricSpec = m(
    "messages.reordered",
    "count",
    "messages that arrived after a later one",
);
pub const MESSAGES_CORRUPT: MetricSpec = m(
    "messages.corrupt",
    "count",
    "messages whose payload differed from what was sent",
);
pub const LINK_UTILIZATION: MetricSpec = m(
    "link.utilization",
    "ratio",
    "share of the link's capacity used",
);
pub const LINK_EMULATOR_CPU: MetricSpec = m(
    "link.emulator_cpu",
    "cores",
    "the link emulator's CPU time over the case's",
);
pub const LINK_DROPPED_QUEUE: MetricSpec = m(
    "link.dropped.queue",
    "count",
    "packets dropped by the full queue",
);
pub const LINK_DROPPED_LOSS: MetricSpec = m(
    "link.dropped.loss",
    "count",
    "packets dropped by the loss model",
);
pub const LINK_DROPPED_MTU: MetricSpec = m(
    "link.dropped.mtu",
    "count",
    "packets dropped for exceeding the MTU",
);
pub const LINK_DROPPED_OUTAGE: MetricSpec = m(
    "link.dropped.outage",
    "count",
    "packets dropped during an outage",
);
pub const LINK_DROPPED_OTHER: MetricSpec = m(
    "link.dropped.other",
    "count",
    "packets dropped for other reasons",
);
pub const LINK_DROPPED_TUN: MetricSpec = m(
    "link.dropped.tun",
    "count",
    "packets the TUN device dropped",
);
pub const LINK_RELEASE_ERROR: MetricSpec = MetricSpec::dist(
    "link.release_error",
    &["p50", "p99", "max"],
    "s",
    "how late the emulator released packets against their schedule",
);
/// Quantiles of the per-packet one-way delays ([`LINK_ONE_WAY`]).
const ONE_WAY_STATS: &[&str] = &["mean", "p50", "p95", "p99", "max"];
pub const LINK_ONE_WAY: MetricSpec = MetricSpec::dist(
    "link.one_way",
    ONE_WAY_STATS,
    "s",
    "one-way delay of the packets delivered in the data's direction (the one that carried more bytes), queueing included, from the emulator's own timestamps (Pantheon's delay)",
);
pub const LINK_ONE_WAY_UP: MetricSpec = MetricSpec::dist(
    "link.one_way.up",
    ONE_WAY_STATS,
    "s",
    "one-way delay of the packets delivered client to server, queueing included",
);
pub const LINK_ONE_WAY_DOWN: MetricSpec = MetricSpec::dist(
    "link.one_way.down",
    ONE_WAY_STATS,
    "s",
    "one-way delay of the packets delivered server to client, queueing included",
);
pub const LINK2_PACKETS: MetricSpec = m(
    "link2.packets",
    "count",
    "packets the second path delivered",
);
pub const LINK2_BYTES: MetricSpec = m("link2.bytes", "B", "IP bytes the second path delivered");
pub const WIRE_PACKETS: MetricSpec = m(
    "wire.packets",
    "count",
    "packets on the link, both directions",
);
pub const WIRE_BYTES: MetricSpec = m("wire.bytes", "B", "IP bytes on the link, both directions");
pub const WIRE_UP_PACKETS: MetricSpec = m("wire.up.packets", "count", "packets on the uplink");
pub const WIRE_UP_BYTES: MetricSpec = m("wire.up.bytes", "B", "IP bytes on the uplink");
pub const WIRE_DOWN_PACKETS: MetricSpec =
    m("wire.down.packets", "count", "packets on the downlink");
pub const WIRE_DOWN_BYTES: MetricSpec = m("wire.down.bytes", "B", "IP bytes on the downlink");
pub const WIRE_BYTES_PER_MESSAGE: MetricSpec =
    m("wire.bytes_per_message", "B", "link bytes per message");
pub const WIRE_OVERHEAD_PER_MESSAGE: MetricSpec = m(
    "wire.overhead_per_message",
    "B",
    "link bytes per message beyond its payload",
);
pub const WIRE_STABLE_BYTES_PER_MESSAGE: MetricSpec = m(
    "wire.stable.bytes_per_message",
    "B",
    "link bytes per message after set-up",
);
pub const WIRE_STABLE_OVERHEAD_PER_MESSAGE: MetricSpec = m(
    "wire.stable.overhead_per_message",
    "B",
    "link bytes per message beyond its payload after set-up",
);
pub const TCP_CWND_MAX: MetricSpec = m(
    "tcp.cwnd_max",
    "count",
    "the data connection's largest congestion window sampled (tcp.info), in segments",
);
pub const TCP_CWND_FIRST: MetricSpec = m(
    "tcp.cwnd_first",
    "count",
    "the data connection's initial congestion window, in segments: its first TCP_INFO sample's (tcp.info), when taken before any of its data was acknowledged (absent otherwise)",
);
pub const TCP_RETRANSMITS: MetricSpec = m(
    "tcp.retransmits",
    "count",
    "segments the data connection retransmitted (TCP_INFO total_retrans at its end)",
);
pub const SERVER_RSS: MetricSpec = m("server.rss", "B", "the placed servers' resident memory");
pub const SERVER_CPU: MetricSpec = m("server.cpu", "s", "the placed servers' CPU time");
pub const SERVER_ROUTED: MetricSpec = m("server.routed", "count", "messages the servers routed");
pub const SERVER_SESSIONS: MetricSpec = m("server.sessions", "count", "sessions the servers held");
pub const SERVER_RSS_PER_SESSION: MetricSpec =
    m("server.rss_per_session", "B", "server memory per session");
pub const SERVER_CPU_PER_SESSION: MetricSpec =
    m("server.cpu_per_session", "s", "server CPU time per session");
pub const KERNEL_TCP_MEM: MetricSpec = m(
    "kernel.tcp_mem",
    "B",
    "the kernel's TCP buffer memory while the sessions are up",
)
.merged(Merge::Sum);
pub const LOAD_SESSIONS: MetricSpec =
    m("load.sessions", "count", "sessions the phases scheduled").merged(Merge::Rebuilt);
pub const LOAD_LOGGED_IN: MetricSpec = m(
    "load.logged_in",
    "count",
    "sessions that completed their login",
)
.merged(Merge::Rebuilt);
pub const LOAD_FAILED: MetricSpec =
    m("load.failed", "count", "sessions that failed, any cause").merged(Merge::Rebuilt);
pub const LOAD_FAILED_BY_CAUSE: MetricSpec = MetricSpec::dist(
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
.merged(Merge::Rebuilt);
pub const LOAD_PEAK_ACTIVE: MetricSpec = m(
    "load.peak_active",
    "count",
    "most sessions logged in at an interval's end",
)
.merged(Merge::Rebuilt);
pub const LOAD_LOGINS_PER_S_MAX: MetricSpec = m(
    "load.logins_per_s.max",
    "1/s",
    "logins in the busiest interval, per second",
)
.merged(Merge::Rebuilt);
pub const LOAD_CONNECT: MetricSpec =
    MetricSpec::dist("load.connect", LOAD_STATS, "s", "open-loop connect latency")
        .merged(Merge::Rebuilt);
pub const LOAD_LOGIN: MetricSpec =
    MetricSpec::dist("load.login", LOAD_STATS, "s", "open-loop login latency")
        .merged(Merge::Rebuilt);
pub const LOAD_MESSAGE: MetricSpec =
    MetricSpec::dist("load.message", LOAD_STATS, "s", "open-loop message latency")
        .merged(Merge::Rebuilt);
pub const GENERATOR_RSS: MetricSpec = m(
    "generator.rss",
    "B",
    "the generator processes' peak resident memory, summed",
)
.merged(Merge::Sum);
pub const GENERATOR_CPU: MetricSpec =
    m("generator.cpu", "s", "the generator processes' CPU time").merged(Merge::Sum);
pub const GENERATOR_RSS_PER_SESSION: MetricSpec = m(
    "generator.rss_per_session",
    "B",
    "generator memory per peak session",
)
.merged(Merge::WeightedBy(LOAD_PEAK_ACTIVE.name));
pub const GENERATOR_CPU_PER_SESSION: MetricSpec = m(
    "generator.cpu_per_session",
    "s",
    "generator CPU time per session logged in",
)
.merged(Merge::WeightedBy(LOAD_LOGGED_IN.name));
pub const SHARD_INDEX: MetricSpec =
    m("shard.index", "count", "which slice this run generated").merged(Merge::OneShard);
pub const SHARD_COUNT: MetricSpec =
    m("shard.count", "count", "how many slices the run has").merged(Merge::OneShard);
pub const SHARD_START_MARGIN: MetricSpec = m(
    "shard.start_margin",
    "s",
    "how long before the agreed start the shard was ready",
)
.merged(Merge::OneShard);
pub const SHARD_CLOCK_OFFSET: MetricSpec =
    m("shard.clock_offset", "s", "this clock minus shard 0's").merged(Merge::OneShard);
pub const SHARD_CLOCK_ERROR: MetricSpec =
    m("shard.clock_error", "s", "the bound of shard.clock_offset").merged(Merge::OneShard);
pub const SHARDS_COUNT: MetricSpec =
    m("shards.count", "count", "shards merged").merged(Merge::Rebuilt);
pub const SHARDS_START_MARGIN_MIN: MetricSpec = m(
    "shards.start_margin.min",
    "s",
    "the latest shard's margin before the start",
)
.merged(Merge::Rebuilt);
pub const SHARDS_CLOCK_OFFSET_MAX: MetricSpec = m(
    "shards.clock_offset.max",
    "s",
    "the largest clock offset from shard 0",
)
.merged(Merge::Rebuilt);
pub const SHARDS_CLOCK_ERROR_MAX: MetricSpec = m(
    "shards.clock_error.max",
    "s",
    "the largest clock error bound",
)
.merged(Merge::Rebuilt);
pub const RTT_UNCORRECTED: MetricSpec = MetricSpec::dist(
    "rtt.uncorrected",
    &["p50", "p99", "p999", "max", "mean"],
    "s",
    "requests timed from their actual send",
);
pub const RATE_SEND_LAG: MetricSpec = MetricSpec::dist(
    "rate.send_lag",
    &["p50", "p99", "max"],
    "s",
    "how late requests left against their schedule",
);
pub const RATE_OFFERED: MetricSpec = m("rate.offered", "msg/s", "the scheduled rate");
pub const RATE_ACHIEVED: MetricSpec = m(
    "rate.achieved",
    "msg/s",
    "requests answered (connections done) per second",
);

/// The metrics of the shared workloads and tiers (the case loop, ping-pong and stream,
/// the link, the lab's servers and load generators, sharded runs); protocols declare
/// theirs through their plugins. docs/results.md defines each.
pub static SHARED: &[MetricSpec] = &[
    CASE_DURATION,
    CONNECT_HANDSHAKE,
    CONNECT_TIME,
    RTT_FIRST,
    RTT_SECOND,
    RTT_STABLE,
    RTT,
    RTT_MODEL,
    RTT_THEORY_PAYLOAD,
    THROUGHPUT_DURATION,
    THROUGHPUT_BITS_PER_S,
    THROUGHPUT_FRAME_BITS_PER_S,
    THROUGHPUT_MESSAGES_PER_S,
    THROUGHPUT_REQUESTS_PER_S,
    BYTES_PAYLOAD,
    BYTES_SENT,
    BYTES_RECEIVED,
    MESSAGES_SENT,
    MESSAGES_RECEIVED,
    MESSAGES_LOST,
    MESSAGES_DUPLICATED,
    MESSAGES_REORDERED,
    MESSAGES_CORRUPT,
    LINK_UTILIZATION,
    LINK_EMULATOR_CPU,
    LINK_DROPPED_QUEUE,
    LINK_DROPPED_LOSS,
    LINK_DROPPED_MTU,
    LINK_DROPPED_OUTAGE,
    LINK_DROPPED_OTHER,
    LINK_DROPPED_TUN,
    LINK_RELEASE_ERROR,
    LINK_ONE_WAY,
    LINK_ONE_WAY_UP,
    LINK_ONE_WAY_DOWN,
    LINK2_PACKETS,
    LINK2_BYTES,
    WIRE_PACKETS,
    WIRE_BYTES,
    WIRE_UP_PACKETS,
    WIRE_UP_BYTES,
    WIRE_DOWN_PACKETS,
    WIRE_DOWN_BYTES,
    WIRE_BYTES_PER_MESSAGE,
    WIRE_OVERHEAD_PER_MESSAGE,
    WIRE_STABLE_BYTES_PER_MESSAGE,
    WIRE_STABLE_OVERHEAD_PER_MESSAGE,
    TCP_CWND_MAX,
    TCP_CWND_FIRST,
    TCP_RETRANSMITS,
    SERVER_RSS,
    SERVER_CPU,
    SERVER_ROUTED,
    SERVER_SESSIONS,
    SERVER_RSS_PER_SESSION,
    SERVER_CPU_PER_SESSION,
    KERNEL_TCP_MEM,
    LOAD_SESSIONS,
    LOAD_LOGGED_IN,
    LOAD_FAILED,
    LOAD_FAILED_BY_CAUSE,
    LOAD_PEAK_ACTIVE,
    LOAD_LOGINS_PER_S_MAX,
    LOAD_CONNECT,
    LOAD_LOGIN,
    LOAD_MESSAGE,
    GENERATOR_RSS,
    GENERATOR_CPU,
    GENERATOR_RSS_PER_SESSION,
    GENERATOR_CPU_PER_SESSION,
    SHARD_INDEX,
    SHARD_COUNT,
    SHARD_START_MARGIN,
    SHARD_CLOCK_OFFSET,
    SHARD_CLOCK_ERROR,
    SHARDS_COUNT,
    SHARDS_START_MARGIN_MIN,
    SHARDS_CLOCK_OFFSET_MAX,
    SHARDS_CLOCK_ERROR_MAX,
    RTT_UNCORRECTED,
    RATE_SEND_LAG,
    RATE_OFFERED,
    RATE_ACHIEVED,
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
    fn a_key_names_one_metric_or_one_statistic() {
        assert_eq!(RTT_STABLE.key().name(), "rtt.stable");
        assert_eq!(RTT.at("p50").name(), "rtt.p50");
        assert!(RTT.at("p50").is("rtt.p50"));
        assert!(!RTT.at("p50").is("rtt.p5"));
        assert!(!RTT.at("p50").is("rtt.p50.x"));
        assert!(!RTT_STABLE.key().is("rtt.stable.p50"));
        assert_eq!(Key::from(RTT_STABLE).unit(), "s");
    }

    #[test]
    #[should_panic(expected = "does not declare")]
    fn a_statistic_the_distribution_lacks_is_refused() {
        let _ = RTT.at(std::hint::black_box("p12"));
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
