//! The metrics of XMPP's session load (docs/load.md, docs/results.md), with how `wirebench
//! merge` combines a sharded load case's; the plugin declares them with its own.

use wirebench_model::metric::LOAD_LOGGED_IN;
pub use wirebench_model::metric::{
    GENERATOR_CPU, GENERATOR_CPU_PER_SESSION, GENERATOR_RSS, GENERATOR_RSS_PER_SESSION,
};
use wirebench_model::{Merge, MetricSpec};

/// A figure per session logged in, weighted by each shard's sessions.
const LOGGED_IN: Merge = Merge::WeightedBy(LOAD_LOGGED_IN.name);

pub const LOAD_ROSTER_ITEMS: MetricSpec =
    MetricSpec::new("load.roster_items", "count", "items per session's roster").merged(LOGGED_IN);
pub const LOAD_PRESENCES: MetricSpec = MetricSpec::new(
    "load.presences",
    "count",
    "available presences from contacts, as the clients saw them",
)
.merged(Merge::Sum);
pub const LOAD_LOGIN_PHASE: MetricSpec = MetricSpec::new(
        "load.login_phase",
        "s",
        "the login phase the CPU per login is read over: the schedule's start to the end of the last interval with a login",
    )
    .merged(Merge::OneShard);
pub const GENERATOR_CPU_USER_PER_LOGIN: MetricSpec = MetricSpec::new(
    "generator.cpu_user_per_login",
    "s",
    "generator CPU time in user mode per login, over the login phase",
)
.merged(LOGGED_IN);
pub const GENERATOR_CPU_SYS_PER_LOGIN: MetricSpec = MetricSpec::new(
    "generator.cpu_sys_per_login",
    "s",
    "generator CPU time in the kernel per login, over the login phase",
)
.merged(LOGGED_IN);
pub const SERVER_CPU_USER_PER_LOGIN: MetricSpec = MetricSpec::new(
    "server.cpu_user_per_login",
    "s",
    "server CPU time in user mode per login, over the login phase",
)
.merged(LOGGED_IN);
pub const SERVER_CPU_SYS_PER_LOGIN: MetricSpec = MetricSpec::new(
    "server.cpu_sys_per_login",
    "s",
    "server CPU time in the kernel per login, over the login phase",
)
.merged(LOGGED_IN);
