//! The connect workload's parameters. Every protocol with a connect workload (`direct`,
//! the proxies) lists these same specs among its own.

use wirebench_model::Kind;
use wirebench_protocol::params::ParamSpec;

pub const CONNECTS: ParamSpec = ParamSpec {
    name: "connects",
    kind: Kind::Count,
    default: "200",
    workloads: &["connect"],
    help: "fresh connections per case, each set up, sent one message of `payload` bytes and timed to the first byte of its echo (study S3 opened 30000)",
    words: "connections",
};

pub const CONCURRENCY: ParamSpec = ParamSpec {
    name: "concurrency",
    kind: Kind::Count,
    // No default in the grid: unset, it is 1 in the closed loop and does not bound the
    // open loop (`rate`), which a filled-in 1 would silently serialize.
    default: "",
    workloads: &["connect"],
    help: "connections being set up at once, each starting the next when its echo is back (default 1); with rate, the most in flight (default: as many as the schedule needs, up to 10000)",
    words: "concurrency",
};

pub const TFO: ParamSpec = ParamSpec {
    name: "tfo",
    kind: Kind::Choice(&["off", "on"]),
    default: "off",
    workloads: &["connect"],
    help: "TCP Fast Open (RFC 7413) on the first hop (the origin for direct, the converter for convert): the message rides in the SYN once the first connection has fetched a cookie, saving a round trip (needs net.ipv4.tcp_fastopen=3, which a lab sets in its own hosts)",
    words: "TCP Fast Open",
};

pub const MPTCP: ParamSpec = ParamSpec {
    name: "mptcp",
    kind: Kind::Choice(&["off", "on"]),
    default: "off",
    workloads: &["connect"],
    help: "Multipath TCP (RFC 8684) on the first hop (the origin for direct, the converter for convert): with a second path (link2) each connection may join a subflow over it; counted in connects.mptcp and mptcp.subflows",
    words: "Multipath TCP",
};
