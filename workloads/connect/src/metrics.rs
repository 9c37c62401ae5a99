//! The metrics of the connect workload (study S3: fresh connections, each timed from its
//! connect to its first byte), shared by `direct` and every proxy's plugin; the runner
//! joins them with the shared and the plugins' own. docs/results.md defines them.

use wirebench_model::MetricSpec;
use wirebench_model::results::STATS;

const TTFB_STATS: &[&str] = &["min", "mean", "p50", "p85", "p90", "p95", "p99", "max"];

pub static METRICS: &[MetricSpec] = &[
    MetricSpec::new(
        "connects.ok",
        "count",
        "connections that got their whole echo back",
    ),
    MetricSpec::new(
        "connects.per_s",
        "count",
        "of those, per second of the case",
    ),
    MetricSpec::new(
        "connects.tfo",
        "count",
        "connections whose SYN carried the message and was accepted",
    ),
    MetricSpec::new(
        "connects.mptcp",
        "count",
        "connections that spoke Multipath TCP",
    ),
    MetricSpec::new(
        "origin.cpu_per_connection",
        "s",
        "the echo origin's CPU time per connection",
    ),
    MetricSpec::new(
        "proxy.cpu_per_connection",
        "s",
        "the proxy's CPU time per connection: ours, all its threads' CPU clocks; microsocks and Dante, their process's",
    ),
    MetricSpec::new(
        "proxy.threads",
        "count",
        "threads our proxy ran on (proxy.threads)",
    ),
    MetricSpec::new(
        "proxy.busiest_thread_cpu_per_connection",
        "s",
        "the CPU time of our proxy's busiest thread per connection (all the case's connections)",
    ),
    MetricSpec::dist(
        "mptcp.subflows",
        &["mean", "max"],
        "count",
        "subflows per connection",
    ),
    MetricSpec::new(
        "mptcp.joined",
        "count",
        "connections that had joined a subflow when their echo was back",
    ),
    MetricSpec::dist("connect.tcp", STATS, "s", "each connection's TCP handshake"),
    MetricSpec::dist(
        "connect.proxy",
        STATS,
        "s",
        "the proxy's handshake after it",
    ),
    MetricSpec::dist(
        "ttfb",
        TTFB_STATS,
        "s",
        "from the start of the TCP connect to the answer's first byte",
    ),
    MetricSpec::dist(
        "path.rtt",
        STATS,
        "s",
        "each connection's round trip on the emulated link without queueing",
    ),
    MetricSpec::dist(
        "ttfb.round_trips",
        STATS,
        "count",
        "time to first byte over the path's round trip",
    ),
    MetricSpec::dist(
        "connect.tcp.round_trips",
        STATS,
        "count",
        "TCP handshake over the path's round trip",
    ),
    MetricSpec::dist(
        "connect.proxy.round_trips",
        STATS,
        "count",
        "proxy handshake over the path's round trip",
    ),
];
