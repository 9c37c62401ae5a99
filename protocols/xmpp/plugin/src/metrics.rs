//! The metrics only XMPP cases record (docs/results.md defines them), with how `wirebench
//! merge` combines a sharded load case's.

use wirebench_model::{Merge, MetricSpec};

const LOGGED_IN: Merge = Merge::WeightedBy("load.logged_in");

pub static METRICS: &[MetricSpec] = &[
    MetricSpec::new(
        "xmpp.login",
        "s",
        "client1's login, connect to bound resource",
    ),
    MetricSpec::new(
        "xmpp.first_delivery",
        "s",
        "the first message's trip between the servers' clients",
    )
    .charted("First delivery (incl. server-to-server set-up)"),
    MetricSpec::new("s2.total", "s", "study S2's test: login and pings"),
    MetricSpec::new("s2.login", "s", "study S2's login"),
    MetricSpec::new("s2.pings", "s", "study S2's pings after the login"),
    MetricSpec::new("s2.browser_start", "s", "headless Chromium's start"),
    MetricSpec::new("transport.sessions", "count", "web gateway sessions opened"),
    MetricSpec::new("transport.requests", "count", "web gateway requests made"),
    MetricSpec::new("x2x.link_bytes", "B", "bytes the gateways sent each other"),
    MetricSpec::new("x2x.stanzas", "count", "stanzas the gateways carried"),
    MetricSpec::new(
        "x2x.connections",
        "count",
        "connections between the gateways",
    ),
    MetricSpec::new(
        "x2x.tfo_used",
        "count",
        "gateway connections opened with TCP Fast Open",
    ),
    MetricSpec::new(
        "x2x.timestamps_used",
        "count",
        "gateway connections with TCP timestamps",
    ),
    MetricSpec::new("x2x.bytes_per_stanza", "B", "gateway link bytes per stanza"),
    MetricSpec::new(
        "x2x.overhead_per_stanza",
        "B",
        "gateway link bytes per stanza beyond its payload",
    ),
    MetricSpec::new("x2x.resent", "count", "stanzas resent after a link outage"),
    MetricSpec::new("load.roster_items", "count", "items per session's roster").merged(LOGGED_IN),
    MetricSpec::new(
        "load.presences",
        "count",
        "available presences from contacts, as the clients saw them",
    )
    .merged(Merge::Sum),
    MetricSpec::new(
        "generator.rss",
        "B",
        "the generator processes' peak resident memory, summed",
    )
    .merged(Merge::Sum),
    MetricSpec::new("generator.cpu", "s", "the generator processes' CPU time").merged(Merge::Sum),
    MetricSpec::new(
        "generator.rss_per_session",
        "B",
        "generator memory per peak session",
    )
    .merged(Merge::WeightedBy("load.peak_active")),
    MetricSpec::new(
        "generator.cpu_per_session",
        "s",
        "generator CPU time per session logged in",
    )
    .merged(LOGGED_IN),
    MetricSpec::new(
        "load.login_phase",
        "s",
        "the login phase the CPU per login is read over: the schedule's start to the end of the last interval with a login",
    )
    .merged(Merge::OneShard),
    MetricSpec::new(
        "generator.cpu_user_per_login",
        "s",
        "generator CPU time in user mode per login, over the login phase",
    )
    .merged(LOGGED_IN),
    MetricSpec::new(
        "generator.cpu_sys_per_login",
        "s",
        "generator CPU time in the kernel per login, over the login phase",
    )
    .merged(LOGGED_IN),
    MetricSpec::new(
        "server.cpu_user_per_login",
        "s",
        "server CPU time in user mode per login, over the login phase",
    )
    .merged(LOGGED_IN),
    MetricSpec::new(
        "server.cpu_sys_per_login",
        "s",
        "server CPU time in the kernel per login, over the login phase",
    )
    .merged(LOGGED_IN),
];
