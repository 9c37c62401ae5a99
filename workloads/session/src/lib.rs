//! The session-load workload family (studies S4 and issue #51, docs/load.md): many
//! sessions of one protocol arriving in Tsung-style phases, each staying a while and
//! messaging a partner, with the latencies recorded per interval.
//!
//! What every protocol's `load` workload reads the same way lives here, declared once:
//! the schedule (`load.phases`, `load.arrivals`), the session's script in time
//! (`load.stay`, `load.think`, `load.every`), the series' interval and the login timeout.
//! The parameter table holds one spec per name, so a protocol that declared its own
//! `load.phases` would have to match this one in every field; importing it cannot drift.
//! The protocol's own parameters (XMPP's rosters, MQTT's topology) stay with it.

use wirebench_load::{Arrivals, Dist, Schedule};
use wirebench_model::Kind;
use wirebench_protocol::params::ParamSpec;

/// The workload these parameters belong to.
pub const LOAD: &[&str] = &["load"];

fn check_phases(s: &str) -> Result<(), String> {
    let phases = wirebench_load::parse_phases(s)?;
    Schedule::new(&phases, Arrivals::Uniform, 0)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn check_dist(s: &str) -> Result<(), String> {
    Dist::parse(s).map(|_| ())
}

pub const PHASES: ParamSpec = ParamSpec {
    name: "load.phases",
    kind: Kind::Custom {
        what: "arrival phases",
        check: check_phases,
    },
    default: "5s@200/s",
    workloads: LOAD,
    help: "arrival phases, DURATION@RATE[:max=N] joined by +, e.g. 30s@1000/s+10m@0 (Tsung's arrivalphase: sessions per second, at most N; rate 0 holds)",
    words: "arrival phases",
};

pub const ARRIVALS: ParamSpec = ParamSpec {
    name: "load.arrivals",
    kind: Kind::Choice(&["poisson", "uniform"]),
    default: "poisson",
    workloads: LOAD,
    help: "gaps between arrivals: poisson (exponential, as Tsung) or uniform",
    words: "arrivals",
};

pub const STAY: ParamSpec = ParamSpec {
    name: "load.stay",
    kind: Kind::Custom {
        what: "duration or distribution",
        check: check_dist,
    },
    default: "10s",
    workloads: LOAD,
    help: "how long each session stays, from its intended start, before it leaves: a duration, exp:MEAN (exponential, Tsung's random thinktime) or uniform:MIN..MAX, drawn per session",
    words: "session stay",
};

pub const EVERY: ParamSpec = ParamSpec {
    name: "load.every",
    kind: Kind::Custom {
        what: "duration or distribution",
        check: check_dist,
    },
    default: "1s",
    workloads: LOAD,
    help: "each session sends its partner (user 2k-1 <-> 2k) a message this often until it leaves (0: no messages); a duration, exp:MEAN or uniform:MIN..MAX drawn for each gap",
    words: "message interval",
};

pub const THINK: ParamSpec = ParamSpec {
    name: "load.think",
    kind: Kind::Custom {
        what: "duration or distribution",
        check: check_dist,
    },
    default: "2s",
    workloads: LOAD,
    help: "think time before the first message: it is meant this long after the session's intended start (a duration, exp:MEAN or uniform:MIN..MAX, drawn per session)",
    words: "first message",
};

pub const INTERVAL: ParamSpec = ParamSpec {
    name: "load.interval",
    kind: Kind::Duration,
    default: "1s",
    workloads: LOAD,
    help: "width of the time series' intervals (the .load.csv file)",
    words: "interval",
};

pub const TIMEOUT: ParamSpec = ParamSpec {
    name: "load.timeout",
    kind: Kind::Duration,
    default: "30s",
    workloads: LOAD,
    help: "a session not logged in this long after its intended start fails (timeout)",
    words: "login timeout",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_pass_their_own_checks() {
        for spec in [PHASES, STAY, EVERY, THINK] {
            let Kind::Custom { check, .. } = spec.kind else {
                panic!("{} is not a custom kind", spec.name);
            };
            assert_eq!(check(spec.default), Ok(()), "{}", spec.name);
        }
    }

    #[test]
    fn a_malformed_schedule_or_distribution_is_refused() {
        let Kind::Custom { check, .. } = PHASES.kind else {
            unreachable!()
        };
        assert!(check("5s@").is_err());
        let Kind::Custom { check, .. } = STAY.kind else {
            unreachable!()
        };
        assert!(check("exp:").is_err());
    }
}
