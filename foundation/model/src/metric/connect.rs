//! The metrics of the connect workload (study S3: fresh connections, each timed from its
//! connect to its first byte), shared by `direct` and every proxy's plugin, and read by
//! the report's S3 tables; the runner joins them with the shared and the plugins' own.
//! docs/results.md defines them.

use super::STATS;
use crate::MetricSpec;

const TTFB_STATS: &[&str] = &["min", "mean", "p50", "p85", "p90", "p95", "p99", "max"];

pub const CONNECTS_OK: MetricSpec = MetricSpec::new(
    "connects.ok",
    "count",
    "connections that got their whole echo back",
);
pub const CONNECTS_PER_S: MetricSpec = MetricSpec::new(
    "connects.per_s",
    "conn/s",
    "of those, per second of the case",
);
pub const CONNECTS_TFO: MetricSpec = MetricSpec::new(
    "connects.tfo",
    "count",
    "connections whose SYN carried the message and was accepted",
);
pub const CONNECTS_MPTCP: MetricSpec = MetricSpec::new(
    "connects.mptcp",
    "count",
    "connections that spoke Multipath TCP",
);
pub const ORIGIN_CPU_PER_CONNECTION: MetricSpec = MetricSpec::new(
    "origin.cpu_per_connection",
    "s",
    "the echo origin's CPU time per connection",
);
pub const PROXY_CPU_PER_CONNECTION: MetricSpec = MetricSpec::new(
    "proxy.cpu_per_connection",
    "s",
    "the proxy's CPU time per connection: ours, all its threads' CPU clocks; microsocks and Dante, their process's",
);
pub const PROXY_THREADS: MetricSpec = MetricSpec::new(
    "proxy.threads",
    "count",
    "threads our proxy ran on (proxy.threads)",
);
pub const PROXY_BUSIEST_THREAD_CPU_PER_CONNECTION: MetricSpec = MetricSpec::new(
    "proxy.busiest_thread_cpu_per_connection",
    "s",
    "the CPU time of our proxy's busiest thread per connection (all the case's connections)",
);
pub const MPTCP_SUBFLOWS: MetricSpec = MetricSpec::dist(
    "mptcp.subflows",
    &["mean", "max"],
    "count",
    "subflows per connection",
);
pub const MPTCP_JOINED: MetricSpec = MetricSpec::new(
    "mptcp.joined",
    "count",
    "connections that had joined a subflow when their echo was back",
);
pub const CONNECT_TCP: MetricSpec =
    MetricSpec::dist("connect.tcp", STATS, "s", "each connection's TCP handshake");
pub const CONNECT_PROXY: MetricSpec = MetricSpec::dist(
    "connect.proxy",
    STATS,
    "s",
    "the proxy's handshake after it",
);
pub const TTFB: MetricSpec = MetricSpec::dist(
    "ttfb",
    TTFB_STATS,
    "s",
    "from the start of the TCP connect to the answer's first byte",
);
pub const PATH_RTT: MetricSpec = MetricSpec::dist(
    "path.rtt",
    STATS,
    "s",
    "each connection's round trip on the emulated link without queueing",
);
pub const TTFB_ROUND_TRIPS: MetricSpec = MetricSpec::dist(
    "ttfb.round_trips",
    STATS,
    "round trips",
    "time to first byte over the path's round trip",
);
pub const CONNECT_TCP_ROUND_TRIPS: MetricSpec = MetricSpec::dist(
    "connect.tcp.round_trips",
    STATS,
    "round trips",
    "TCP handshake over the path's round trip",
);
pub const CONNECT_PROXY_ROUND_TRIPS: MetricSpec = MetricSpec::dist(
    "connect.proxy.round_trips",
    STATS,
    "round trips",
    "proxy handshake over the path's round trip",
);

pub static METRICS: &[MetricSpec] = &[
    CONNECTS_OK,
    CONNECTS_PER_S,
    CONNECTS_TFO,
    CONNECTS_MPTCP,
    ORIGIN_CPU_PER_CONNECTION,
    PROXY_CPU_PER_CONNECTION,
    PROXY_THREADS,
    PROXY_BUSIEST_THREAD_CPU_PER_CONNECTION,
    MPTCP_SUBFLOWS,
    MPTCP_JOINED,
    CONNECT_TCP,
    CONNECT_PROXY,
    TTFB,
    PATH_RTT,
    TTFB_ROUND_TRIPS,
    CONNECT_TCP_ROUND_TRIPS,
    CONNECT_PROXY_ROUND_TRIPS,
];
