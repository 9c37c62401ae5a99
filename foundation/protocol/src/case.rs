//! A case (one grid point) and its workload's typed parameters, read once, so a protocol's
//! drivers build themselves from a case without looking parameters up by name.

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

    /// Its protocol's name; empty for a case that has none (a planned case always has
    /// one: the runner makes the registry's first protocol the default).
    pub fn protocol(&self) -> &str {
        self.word("protocol").unwrap_or_default()
    }

    pub fn workload(&self) -> &str {
        self.word("workload").unwrap_or("pingpong")
    }

    /// Payload bytes per message.
    pub fn payload(&self) -> u64 {
        self.get("payload").and_then(Value::as_bytes).unwrap_or(0)
    }

    /// The workload and its parameters.
    pub fn workload_params(&self) -> Workload {
        match self.workload() {
            "load" => Workload::Load,
            "connect" => Workload::Connect,
            "stream" => Workload::Stream {
                count: self.get("count").and_then(Value::as_count),
                duration: self.get("duration").and_then(Value::as_duration),
            },
            _ => Workload::PingPong {
                rounds: self.get("rounds").and_then(Value::as_count).unwrap_or(0),
                think: self
                    .get("think")
                    .and_then(Value::as_duration)
                    .unwrap_or_default(),
            },
        }
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
