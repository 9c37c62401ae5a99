//! The metrics only XMPP cases record (docs/results.md defines them), with how `wirebench
//! merge` combines a sharded load case's.

pub use crate::load_case::metrics::*;
use wirebench_model::MetricSpec;
pub use wirebench_xmpp_browser::{S2_BROWSER_START, S2_LOGIN, S2_PINGS, S2_TOTAL};
pub use wirebench_xmpp_peers::x2x::{
    X2X_BYTES_PER_STANZA, X2X_CONNECTIONS, X2X_LINK_BYTES, X2X_OVERHEAD_PER_STANZA, X2X_RESENT,
    X2X_STANZAS, X2X_TFO_USED, X2X_TIMESTAMPS_USED,
};

pub const XMPP_LOGIN: MetricSpec = MetricSpec::new(
    "xmpp.login",
    "s",
    "client1's login, connect to bound resource",
);
pub const XMPP_FIRST_DELIVERY: MetricSpec = MetricSpec::new(
    "xmpp.first_delivery",
    "s",
    "the first message's trip between the servers' clients",
)
.charted("First delivery (incl. server-to-server set-up)");
pub const TRANSPORT_SESSIONS: MetricSpec =
    MetricSpec::new("transport.sessions", "count", "web gateway sessions opened");
pub const TRANSPORT_REQUESTS: MetricSpec =
    MetricSpec::new("transport.requests", "count", "web gateway requests made");
pub static METRICS: &[MetricSpec] = &[
    XMPP_LOGIN,
    XMPP_FIRST_DELIVERY,
    S2_TOTAL,
    S2_LOGIN,
    S2_PINGS,
    S2_BROWSER_START,
    TRANSPORT_SESSIONS,
    TRANSPORT_REQUESTS,
    X2X_LINK_BYTES,
    X2X_STANZAS,
    X2X_CONNECTIONS,
    X2X_TFO_USED,
    X2X_TIMESTAMPS_USED,
    X2X_BYTES_PER_STANZA,
    X2X_OVERHEAD_PER_STANZA,
    X2X_RESENT,
    LOAD_ROSTER_ITEMS,
    LOAD_PRESENCES,
    LOAD_LOGIN_PHASE,
    GENERATOR_CPU_USER_PER_LOGIN,
    GENERATOR_CPU_SYS_PER_LOGIN,
    SERVER_CPU_USER_PER_LOGIN,
    SERVER_CPU_SYS_PER_LOGIN,
];
