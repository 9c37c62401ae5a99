//! The parameters a scenario can set, their types, defaults and which workloads use them.
//! `docs/scenarios.md` documents the same list for users.

use wirebench_model::Kind;

pub const WORKLOADS: &[&str] = &["pingpong", "stream"];
pub const PROTOCOLS: &[&str] = wirebench_net::PROTOCOLS;
pub const MODES: &[&str] = &["oneway", "echo"];
pub const ON_OFF: &[&str] = &["on", "off"];

#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    /// Workloads this parameter affects; a case of another workload ignores it.
    pub workloads: &'static [&'static str],
    pub help: &'static str,
}

pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "protocol",
        kind: Kind::Choice(PROTOCOLS),
        default: "raw",
        workloads: WORKLOADS,
        help: "wire protocol between client and server",
    },
    ParamSpec {
        name: "workload",
        kind: Kind::Choice(WORKLOADS),
        default: "pingpong",
        workloads: WORKLOADS,
        help: "pingpong (latency, one message in flight) or stream (throughput)",
    },
    ParamSpec {
        name: "mode",
        kind: Kind::Choice(MODES),
        default: "oneway",
        workloads: &["stream"],
        help: "stream direction: oneway (server counts) or echo (server returns every message)",
    },
    ParamSpec {
        name: "payload",
        kind: Kind::Bytes,
        default: "64",
        workloads: WORKLOADS,
        help: "payload bytes per message, after the 21-byte raw header",
    },
    ParamSpec {
        name: "rounds",
        kind: Kind::Count,
        default: "1000",
        workloads: &["pingpong"],
        help: "ping-pong round trips per case",
    },
    ParamSpec {
        name: "think",
        kind: Kind::Duration,
        default: "0",
        workloads: &["pingpong"],
        help: "responder's wait before answering (excluded from the RTT)",
    },
    ParamSpec {
        name: "nodelay",
        kind: Kind::Choice(ON_OFF),
        default: "on",
        workloads: WORKLOADS,
        help: "TCP_NODELAY on both ends: on sends each message at once; off lets Nagle coalesce",
    },
    ParamSpec {
        name: "count",
        kind: Kind::Count,
        default: "100k",
        workloads: &["stream"],
        help: "messages per stream case",
    },
];

pub fn spec(name: &str) -> Option<&'static ParamSpec> {
    PARAMS.iter().find(|p| p.name == name)
}

/// Whether `param` matters to `workload`.
pub fn applies(param: &str, workload: &str) -> bool {
    spec(param).is_none_or(|s| s.workloads.contains(&workload))
}

pub fn names() -> Vec<&'static str> {
    PARAMS.iter().map(|p| p.name).collect()
}
