//! The results record: one per case, the single source of truth from which CSV tables,
//! terminal summaries and charts are derived. Field meanings are documented in
//! `docs/results.md`; `schema` is bumped on any incompatible change.

use crate::metric::Key;
use serde::{Deserialize, Serialize};
use serde_json::Map;

pub const SCHEMA: u32 = 1;

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
    /// Time series files beside results.jsonl, by name (`tcp_info`: the data
    /// connection's TCP_INFO over time, a CSV).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub series: Map<String, serde_json::Value>,
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
    /// A declared metric's value ([`crate::metric`]).
    pub fn get(&self, key: impl Into<Key>) -> Option<Metric> {
        self.metric(&key.into().name())
    }
    /// Its value, or `None` when absent or not a number.
    pub fn value(&self, key: impl Into<Key>) -> Option<f64> {
        self.get(key).map(|m| m.value)
    }
    /// Records a declared metric in its declared unit.
    pub fn set(&mut self, key: impl Into<Key>, value: f64) {
        let key = key.into();
        self.set_metric(&key.name(), Metric::new(value, key.unit()));
    }
}
