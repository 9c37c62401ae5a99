//! `run.json`: what a results directory needs besides its records to be reported on
//! later (`wirebench report DIR`): the scenario's name and description, the CSV pivot
//! it asked for, its chart overrides, and each parameter's unit and name in words.
//! Written once when the run starts, so a crashed run can still be reported.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

pub const FILE: &str = "run.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub scenario: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tables: Option<Vec<String>>,
    #[serde(default)]
    pub columns: Option<Vec<String>>,
    /// Charts the scenario asked for (`[[chart]]`); empty: chosen from the grid's shape.
    #[serde(default)]
    pub charts: Vec<ChartSpec>,
    /// Per parameter: its unit and a name for legends.
    #[serde(default)]
    pub params: BTreeMap<String, ParamInfo>,
    /// What the protocols declare about charts, from the runner when it reports; not kept
    /// in run.json, so an older results directory is reported as a new one is.
    #[serde(skip)]
    pub declared: Declared,
}

/// What the protocols' plugins declare about how a report treats their metrics and
/// parameters (the runner gathers it from its registry).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Declared {
    /// Metrics charted as headline delays after the shared round trips and connection
    /// set-up, with their names in words (`MetricSpec::chart`), in declaration order.
    pub delays: Vec<(String, String)>,
    /// Parameters whose value alone names a series, as `protocol`'s does.
    pub legend_by_value: Vec<String>,
    /// The protocols' metrics with names in words for a study's lead figures and tables
    /// (`MetricSpec::words`), charted only when a scenario asks.
    pub words: Vec<(String, String)>,
    /// Per protocol with a load workload, what its sessions' being up is called.
    pub session_words: BTreeMap<String, wirebench_model::session_words::SessionWords>,
}

impl Declared {
    /// What the load sessions of `records` call being up: their protocols' words
    /// ([`Declared::session_words`]) if they agree, neutral ones if not.
    pub fn session_words_of<'a>(
        &self,
        records: impl IntoIterator<Item = &'a wirebench_model::Record>,
    ) -> wirebench_model::session_words::SessionWords {
        wirebench_model::session_words::SessionWords::common(
            records
                .into_iter()
                .filter(|r| r.params.get("workload").and_then(|w| w.as_str()) == Some("load"))
                .map(|r| {
                    r.params
                        .get("protocol")
                        .and_then(|p| p.as_str())
                        .and_then(|p| self.session_words.get(p).copied())
                        .unwrap_or_default()
                }),
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParamInfo {
    /// Unit of the canonical value in records: `B`, `s`, `bit/s`, `count`, or empty for
    /// words (choices) and other non-numeric values.
    pub unit: String,
    /// Short name for legends and axis titles ("one-way delay").
    pub words: String,
}

/// One chart a scenario asks for (`[[chart]]` in the scenario file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChartSpec {
    /// Metric on the y axis (`rtt.stable`).
    pub metric: String,
    /// Kind: `lines` (metric against `x`), `bars` (metric per category), `rounds` (value
    /// per round of each case), `cdf` (distribution of the per-round values), `load` (a
    /// column of the load series) or `tradeoff` (metric against `x_metric`, a marker per
    /// run and the mean of each series: Pantheon's throughput against delay).
    #[serde(default)]
    pub kind: Option<String>,
    /// Parameter on the x axis (lines); categories for bars are the other parameters.
    #[serde(default)]
    pub x: Option<String>,
    /// Parameters that make the series; default: every other parameter that varies.
    #[serde(default)]
    pub series: Option<Vec<String>>,
    #[serde(default)]
    pub log_x: Option<bool>,
    #[serde(default)]
    pub log_y: Option<bool>,
    #[serde(default)]
    pub title: Option<String>,
    /// Only cases whose parameters have these values (as typed: `{ workload = "stream" }`);
    /// a case without one of these parameters (not read by its protocol) is kept.
    #[serde(default)]
    pub filter: BTreeMap<String, String>,
    /// The study's own figure: drawn first, before the published figures and every other
    /// chart, and its metric heads the terminal summary (a report reads like its paper).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lead: bool,
    /// A CDF's marked quantiles, as fractions (`[0.85, 0.95]`: the percentiles the study
    /// reads); default p50, p90 and p99.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantiles: Option<Vec<f64>>,
    /// A `load` chart's column of the per-interval series (`active`: sessions logged in;
    /// `logins`: logins per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// A study's claims on a CDF, stated against a baseline case: each becomes a published
    /// marker at the baseline's quantile plus the claimed amount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Claim>,
    /// A `tradeoff` chart's x axis: a metric (`link.one_way.p95`); a delay or any
    /// other "less is better" metric in seconds runs from right to left, so that better
    /// is up and right.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_metric: Option<String>,
}

/// "For the slowest 15% of paths SOCKS5 adds at least 150 ms" (S3): at quantile 0.85 of
/// the case matching `base` (`{ protocol = "direct" }`), plus `add` seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub quantile: f64,
    pub base: BTreeMap<String, String>,
    /// Seconds.
    pub add: f64,
    pub label: String,
}

impl RunInfo {
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let text = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        crate::files::atomic_write(&dir.join(FILE), &text)
    }

    /// Reads `run.json`; a directory from before it existed gets defaults.
    pub fn read(dir: &Path) -> io::Result<RunInfo> {
        match std::fs::read(dir.join(FILE)) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {e}", dir.join(FILE).display()),
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(RunInfo::default()),
            Err(e) => Err(e),
        }
    }

    /// The legend name of a parameter.
    pub fn words<'a>(&'a self, param: &'a str) -> &'a str {
        self.params
            .get(param)
            .map(|p| p.words.as_str())
            .filter(|w| !w.is_empty())
            .unwrap_or(param)
    }

    pub fn unit(&self, param: &str) -> &str {
        self.params.get(param).map_or("", |p| p.unit.as_str())
    }
}
