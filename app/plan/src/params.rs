//! The one parameter table: the parameters every protocol shares
//! (`wirebench_protocol::params`) followed by each registered protocol's own, with the
//! `protocol` parameter's choices and default filled in from the registry. Scenario
//! files, the command line, the planner and the reports all look parameters up here.

use crate::registry::{self, REGISTRY};
use std::sync::LazyLock;
use wirebench_model::Kind;
use wirebench_protocol::Transport;
pub use wirebench_protocol::params::{
    LINK_PARAMS, MAX_PAYLOAD, PEER_STREAM_COUNT, ParamSpec, STREAM_DURATION, WORKLOADS, is_link,
};

static ALL: LazyLock<Vec<ParamSpec>> = LazyLock::new(|| {
    let protocols: &'static [&'static str] = Box::leak(registry::names().into_boxed_slice());
    let mut all: Vec<ParamSpec> = wirebench_protocol::params::PARAMS
        .iter()
        .map(|p| match p.name {
            // Its choices, default and help name the registry's protocols.
            "protocol" => ParamSpec {
                kind: Kind::Choice(protocols),
                default: protocols[0],
                help: Box::leak(
                    format!(
                        "wire protocol: {} (`wirebench protocols` lists them)",
                        protocols.join(", ")
                    )
                    .into_boxed_str(),
                ),
                ..*p
            },
            _ => *p,
        })
        .collect();
    for proto in REGISTRY {
        for p in proto.params() {
            // Two protocols may share a parameter name (say, `nodelay`) only with the
            // same spec; the first one's is kept.
            if !all.iter().any(|q| q.name == p.name) {
                all.push(*p);
            }
        }
    }
    all
});

/// Every parameter but the link's, shared ones first.
pub fn params() -> &'static [ParamSpec] {
    &ALL
}

pub fn spec(name: &str) -> Option<&'static ParamSpec> {
    params().iter().chain(LINK_PARAMS).find(|p| p.name == name)
}

/// Which protocols declare `name` as their own; empty for a shared parameter.
pub fn owners(name: &str) -> Vec<&'static str> {
    REGISTRY
        .iter()
        .filter(|p| p.params().iter().any(|s| s.name == name))
        .map(|p| p.name())
        .collect()
}

/// Whether `param` matters to a case of `protocol` and `workload`: a protocol's own
/// parameter applies only to its cases, any parameter only to the workloads it names, and
/// `duration` not to protocols whose streams are bounded by a count
/// ([`wirebench_protocol::Protocol::stream_count`]).
pub fn applies(param: &str, protocol: &str, workload: &str) -> bool {
    let Some(s) = spec(param) else {
        return true;
    };
    s.workloads.contains(&workload) && read_by(param, protocol)
}

/// Whether cases of `protocol` read `param` in some workload: its own parameters, the
/// shared ones, `duration` only where streams are not bounded by a count, and the TCP
/// knobs (`tcp.*`) only where the connections are TCP.
pub fn read_by(param: &str, protocol: &str) -> bool {
    if param == "duration" && registry::get(protocol).is_some_and(|p| p.stream_count().is_some()) {
        return false;
    }
    if param.starts_with("tcp.")
        && registry::get(protocol).is_some_and(|p| p.transport() != Transport::Tcp)
    {
        return false;
    }
    let owners = owners(param);
    owners.is_empty() || owners.contains(&protocol)
}

pub fn names() -> Vec<&'static str> {
    params().iter().chain(LINK_PARAMS).map(|p| p.name).collect()
}

/// A parameter's name in words, for legends and axis titles.
pub fn words(name: &str) -> &'static str {
    spec(name).map_or("", |p| p.words)
}

/// The unit of a parameter's canonical value in result records (empty: a word).
pub fn unit(name: &str) -> &'static str {
    match spec(name).map(|p| p.kind) {
        Some(Kind::Bytes) => "B",
        Some(Kind::Duration) => "s",
        Some(Kind::Rate) => "bit/s",
        Some(Kind::Count) => "count",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_choices_are_the_registry() {
        match spec("protocol").map(|p| p.kind) {
            Some(Kind::Choice(c)) => assert_eq!(c, registry::names().as_slice()),
            other => panic!("protocol is {other:?}"),
        }
    }

    #[test]
    fn protocol_parameters_apply_to_their_protocol_only() {
        assert!(applies("s2s", "xmpp", "pingpong"));
        assert!(!applies("s2s", "raw", "pingpong"));
        assert!(applies("mode", "raw", "stream"));
        assert!(!applies("mode", "raw", "pingpong"));
        assert!(!applies("mode", "irc", "stream"));
        assert!(applies("payload", "irc", "stream"));
        assert!(applies("link.delay", "xmpp", "stream"));
        // The TCP knobs: every protocol over TCP, not CoAP's UDP.
        assert!(applies("tcp.cc", "raw", "pingpong"));
        assert!(applies("tcp.cc", "mqtt", "stream"));
        assert!(!applies("tcp.cc", "coap", "stream"));
        assert!(applies("duration", "raw", "stream"));
        assert!(!applies("duration", "irc", "stream"));
    }

    #[test]
    fn every_parameter_has_words_and_a_unique_name() {
        let names = names();
        for (i, n) in names.iter().enumerate() {
            assert!(!words(n).is_empty(), "{n} has no words");
            assert!(!names[..i].contains(n), "{n} twice");
        }
    }
}
