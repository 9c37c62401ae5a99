//! A case (one grid point) and its workload's typed parameters, read once, so a protocol's
//! drivers build themselves from a case without looking parameters up by name.
//!
//! A parameter is read through its [`ParamSpec`] ([`Case::choice`], [`Case::count`], ...),
//! never by a name typed again: the name lives once, in the spec, and a value the case
//! lacks falls back to the spec's default (the planner fills defaults in, but a case a
//! test builds by hand need not).

use crate::params::{self, ParamSpec};
use std::time::Duration;
use wirebench_link::{LinkParams, LinkSpec, PathRtts, Trace};
use wirebench_model::{Point, Value};

/// One point of the grid, with only the parameters its protocol and workload use.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// 1-based, in grid order.
    pub index: usize,
    pub point: Point,
    /// Parameters the scenario set to a non-default value that this case's protocol does
    /// not read (though the workload would), dropped by the planner: `duration` for a
    /// count-bound protocol, `s2s` for raw. For notes that say so.
    pub ignored: Vec<String>,
    /// How many times the case is run: its `[[part]]`'s `repeat`, else the scenario's.
    pub runs: u32,
}

/// What a case's workload does, with its parameters typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Workload {
    /// One message in flight, `rounds` times; the responder waits `think` before answering.
    PingPong { rounds: u64, think: Duration },
    /// A flood of messages: `count` of them, or for `duration`, whichever ends first. The
    /// planner gives every stream case at least one of the two.
    Stream {
        count: Option<u64>,
        duration: Option<Duration>,
    },
    /// Many sessions arriving open-loop in phases, each running a script; the protocol
    /// reads the phases and the script from its own parameters (`load.*`).
    Load,
    /// Fresh connections, each set up (through a proxy, for the proxies), sent one
    /// message and timed to the first byte of the answer; the protocol reads how many
    /// and how many at once from its own parameters (`connects`, `concurrency`).
    Connect,
}

impl Workload {
    /// The message count: ping-pong rounds, or the stream's count (0 if unbounded).
    pub fn messages(&self) -> u64 {
        match self {
            Workload::PingPong { rounds, .. } => *rounds,
            Workload::Stream { count, .. } => count.unwrap_or(0),
            Workload::Load | Workload::Connect => 0,
        }
    }

    pub fn is_stream(&self) -> bool {
        matches!(self, Workload::Stream { .. })
    }

    /// The ping-pong think time; zero for streams.
    pub fn think(&self) -> Duration {
        match self {
            Workload::PingPong { think, .. } => *think,
            Workload::Stream { .. } | Workload::Load | Workload::Connect => Duration::ZERO,
        }
    }
}

impl Case {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.point
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| &v.value)
    }

    /// A word parameter (`mode`, `s2s`, ...), if the case has it.
    pub fn word(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_word)
    }

    /// The value of `spec`: the case's, else its default parsed; `None` if it has neither.
    fn value(&self, spec: &ParamSpec) -> Option<Value> {
        match self.get(spec.name) {
            Some(v) => Some(v.clone()),
            None if spec.default.is_empty() => None,
            // Every default parses: the runner parses them all to complete each grid.
            None => spec.kind.parse(spec.default).ok(),
        }
    }

    /// A word parameter (a choice, or text a custom kind checked): the case's, else the
    /// spec's default; `None` if the case lacks it and the spec has no default.
    pub fn text(&self, spec: &ParamSpec) -> Option<&str> {
        match self.get(spec.name) {
            Some(v) => v.as_word(),
            None => Some(spec.default).filter(|d| !d.is_empty()),
        }
    }

    /// A choice parameter's word (`socks5.auth` -> `none`): the case's, else the spec's
    /// default ("" for a spec without one the case lacks).
    pub fn choice(&self, spec: &ParamSpec) -> &str {
        self.text(spec).unwrap_or("")
    }

    /// Whether an on/off parameter is `on`.
    pub fn is_on(&self, spec: &ParamSpec) -> bool {
        self.choice(spec) == "on"
    }

    /// Whether the case sets `spec` at all (for parameters without a default, whose
    /// absence means something: `s2s`, `xmpp.server`).
    pub fn has(&self, spec: &ParamSpec) -> bool {
        self.get(spec.name).is_some()
    }

    /// A count parameter: the case's, else the spec's default.
    pub fn count(&self, spec: &ParamSpec) -> Option<u64> {
        self.value(spec).as_ref().and_then(Value::as_count)
    }

    /// A duration parameter: the case's, else the spec's default.
    pub fn duration(&self, spec: &ParamSpec) -> Option<Duration> {
        self.value(spec).as_ref().and_then(Value::as_duration)
    }

    /// A size parameter in bytes: the case's, else the spec's default.
    pub fn bytes(&self, spec: &ParamSpec) -> Option<u64> {
        self.value(spec).as_ref().and_then(Value::as_bytes)
    }

    /// A rate parameter in bit/s: the case's, else the spec's default.
    pub fn rate(&self, spec: &ParamSpec) -> Option<f64> {
        match self.value(spec)? {
            Value::Rate(r) => Some(r.0),
            _ => None,
        }
    }

    /// Its protocol's name; empty for a case that has none (a planned case always has
    /// one: the runner makes the registry's first protocol the default).
    pub fn protocol(&self) -> &str {
        self.choice(&params::PROTOCOL)
    }

    pub fn workload(&self) -> &str {
        self.choice(&params::WORKLOAD)
    }

    /// Payload bytes per message (0 in a case without one, which only tests build).
    pub fn payload(&self) -> u64 {
        self.given(&params::PAYLOAD, Value::as_bytes).unwrap_or(0)
    }

    /// Ping-pong round trips (0 in a case without `rounds`, which only tests build, or of
    /// another workload).
    pub fn rounds(&self) -> u64 {
        self.given(&params::ROUNDS, Value::as_count).unwrap_or(0)
    }

    /// The workload and its parameters.
    pub fn workload_params(&self) -> Workload {
        match self.workload() {
            "load" => Workload::Load,
            "connect" => Workload::Connect,
            "stream" => Workload::Stream {
                count: self.count(&params::COUNT),
                duration: self.duration(&params::DURATION),
            },
            _ => Workload::PingPong {
                rounds: self.rounds(),
                think: self.duration(&params::THINK).unwrap_or_default(),
            },
        }
    }

    /// The case's own value of `spec`, typed by `as_`, ignoring the default.
    fn given<T>(&self, spec: &ParamSpec, as_: fn(&Value) -> Option<T>) -> Option<T> {
        self.get(spec.name).and_then(as_)
    }

    /// `workload=pingpong payload=64` for progress lines.
    pub fn describe(&self, only: &[&str]) -> String {
        self.point
            .iter()
            .filter(|(n, _)| only.contains(&n.as_str()))
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The emulated link of a case, both directions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseLink {
    pub up: LinkSpec,
    pub down: LinkSpec,
    /// A Mahimahi trace replacing the rate in both directions.
    pub trace: Option<std::sync::Arc<Trace>>,
    /// Per-connection path round trips (`link.paths`), both directions.
    pub paths: Option<std::sync::Arc<PathRtts>>,
    /// A second path between the hosts (`link2`), both directions, for Multipath TCP.
    pub second: Option<LinkSpec>,
}

impl CaseLink {
    /// The second path's models (up, down), if the case has one.
    pub fn second_params(&self) -> Option<(LinkParams, LinkParams)> {
        self.second.as_ref().map(|s| (s.to_params(), s.to_params()))
    }

    pub fn up_params(&self) -> LinkParams {
        LinkParams {
            trace: self.trace.clone(),
            paths: self.paths.clone(),
            ..self.up.to_params()
        }
    }
    pub fn down_params(&self) -> LinkParams {
        LinkParams {
            trace: self.trace.clone(),
            paths: self.paths.clone(),
            ..self.down.to_params()
        }
    }
}
