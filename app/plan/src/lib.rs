//! What a run would be, before anything runs: the protocol registry (every plugin, from
//! this crate's Cargo.toml), the parameter and metric tables it fills in, scenarios
//! (built-in and from files) and the cases and emulated links they expand to, and what
//! each case is estimated to take. `wirebench-runner` runs what this crate plans; the
//! `wirebench protocols` and `wirebench scenarios` listings are made here ([`catalog`]).

pub mod catalog;
pub mod estimate;
pub mod link;
pub mod metrics;
pub mod params;
pub mod registry;
pub mod scenario;

pub use scenario::{BUILTIN, Scenario, ScenarioError};
pub use wirebench_protocol::{Case, CaseLink};

use wirebench_model::Point;

/// Why a scenario cannot be planned as asked.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A case asks for what its protocol does not offer.
    #[error("{0}")]
    Usage(String),
    /// A case's link parameters do not make a link (a trace file that cannot be read, ...).
    #[error(transparent)]
    Link(#[from] link::CaseLinkError),
}

/// Expands the grid; parameters that do not apply to a case's workload are dropped, and
/// the duplicates that leaves (e.g. `rounds` varying under `stream`) are run once.
/// A stream case given neither `count` nor `duration` gets the default that applies to
/// it, so its record says how long it was: raw streams a duration, XMPP and IRC streams
/// (count-based) a count.
pub fn plan(scenario: &Scenario) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let points = scenario
        .grids_with_runs()
        .into_iter()
        .flat_map(|(g, runs)| g.expand().into_iter().map(move |p| (p, runs)));
    for (point, runs) in points {
        let word = |name: &str, default: &str| {
            point
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v.value.as_word())
                .unwrap_or(default)
                .to_string()
        };
        let (protocol, workload) = (word("protocol", "raw"), word("workload", "pingpong"));
        let ignored: Vec<String> = point
            .iter()
            .filter(|(n, v)| {
                !params::applies(n, &protocol, &workload)
                    && params::spec(n).is_some_and(|s| {
                        s.workloads.contains(&workload.as_str()) && v.label != s.default
                    })
            })
            .map(|(n, _)| n.clone())
            .collect();
        let mut kept: Point = point
            .into_iter()
            .filter(|(n, _)| params::applies(n, &protocol, &workload))
            .collect();
        if workload == "stream" {
            stream_defaults(&mut kept);
        }
        // A case two parts plan is run as often as the one that asks for more.
        match cases.iter_mut().find(|c| c.point == kept) {
            Some(c) => c.runs = c.runs.max(runs),
            None => cases.push(Case {
                index: cases.len() + 1,
                point: kept,
                ignored,
                runs,
            }),
        }
    }
    cases
}

/// Refuses a plan with a case whose protocol does not offer its workload (raw has no
/// `load`), naming the protocols that do.
pub fn check_workloads(cases: &[Case]) -> Result<(), PlanError> {
    for c in cases {
        let p = registry::of(c);
        let w = c.workload();
        if !p.workloads().contains(&w) {
            let offer: Vec<&str> = registry::REGISTRY
                .iter()
                .filter(|q| q.workloads().contains(&w))
                .map(|q| q.name())
                .collect();
            return Err(PlanError::Usage(format!(
                "case {}: protocol {} has no {w} workload (it offers {}); {w} is offered by {}",
                c.index,
                p.name(),
                p.workloads().join(", "),
                if offer.is_empty() {
                    "no protocol yet".to_string()
                } else {
                    offer.join(", ")
                }
            )));
        }
    }
    Ok(())
}

/// Refuses a parameter given on the command line that no planned case reads because no
/// case's protocol reads it (`--connections 4 --protocol mqtt`): the run would measure
/// something else than asked, so the user must drop it or choose a protocol it applies to.
/// Not refused: one some case reads (the others get a note), one no case reads for its
/// workload alone (a note: a grid may mix workloads), and one given at its default (the
/// run does what it says anyway).
pub fn check_given(scenario: &Scenario, cases: &[Case]) -> Result<(), PlanError> {
    for name in &scenario.given {
        let Some(spec) = params::spec(name) else {
            continue;
        };
        let read = cases.iter().any(|c| c.get(name).is_some());
        // Read by some case's protocol, only not in its workload: the note's business.
        let some_protocol = cases.iter().any(|c| params::read_by(name, c.protocol()));
        if cases.is_empty() || read || some_protocol || given_as_default(scenario, spec) {
            continue;
        }
        let mut planned: Vec<&str> = Vec::new();
        for c in cases {
            if !planned.contains(&c.protocol()) {
                planned.push(c.protocol());
            }
        }
        let readers: Vec<&dyn registry::Protocol> = registry::REGISTRY
            .iter()
            .copied()
            .filter(|p| {
                params::read_by(name, p.name())
                    && p.workloads().iter().any(|w| spec.workloads.contains(w))
            })
            .collect();
        // The workloads it applies to, unless that is every one its readers offer.
        let mut offered: Vec<&str> = readers
            .iter()
            .flat_map(|p| p.workloads())
            .copied()
            .collect();
        offered.dedup();
        let workloads: Vec<&str> = params::WORKLOADS
            .iter()
            .copied()
            .filter(|w| spec.workloads.contains(w) && offered.contains(w))
            .collect();
        let cases_of = if params::WORKLOADS
            .iter()
            .all(|w| offered.contains(w) == workloads.contains(w))
        {
            "cases".to_string()
        } else {
            format!("{} cases", or_list(&workloads))
        };
        let readers: Vec<&str> = readers.iter().map(|p| p.name()).collect();
        let flag = format!("--{}", name.replace('.', "-"));
        let counted = planned
            .iter()
            .filter_map(|p| registry::get(p)?.stream_count())
            .next();
        let why = match counted {
            Some(n) if *name == "duration" => format!(
                " (their streams send `count` messages, {n} unless given: use --count to set \
                 their length)"
            ),
            _ => String::new(),
        };
        return Err(PlanError::Usage(format!(
            "{flag} does not apply to {}: it applies only to {cases_of} of {}{why}; drop \
             {flag}, or run one of those protocols",
            planned.join(" and "),
            readers.join(", "),
        )));
    }
    Ok(())
}

/// `a, b or c`.
fn or_list(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// Whether every value the command line gave `spec` is its default: what a case that does
/// not read it does anyway.
fn given_as_default(scenario: &Scenario, spec: &params::ParamSpec) -> bool {
    let Ok(default) = spec.parse(spec.default) else {
        return false;
    };
    scenario
        .grid
        .get(spec.name)
        .is_some_and(|a| a.values.iter().all(|v| v.value == default.value))
}

/// The parameters whose value differs between the planned cases, in order of first
/// appearance: what a progress line must show to tell the cases apart, also when
/// `[[part]]`s or link parameters make them differ. Absent counts as a value, except
/// where the case's protocol or workload does not use the parameter (`rounds` in a stream
/// case, `s2s` in a raw one).
pub fn varying(cases: &[Case]) -> Vec<String> {
    let mut names: Vec<&str> = Vec::new();
    for c in cases {
        for (n, _) in &c.point {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    names
        .into_iter()
        .filter(|n| {
            let mut values = cases
                .iter()
                .filter(|c| params::applies(n, c.protocol(), c.workload()))
                .map(|c| c.get(n));
            let first = values.next();
            values.any(|v| Some(v) != first)
        })
        .map(str::to_string)
        .collect()
}

fn stream_defaults(point: &mut Point) {
    use params::STREAM_DURATION;
    use wirebench_model::{Kind, ParamValue};
    let has = |p: &Point, name: &str| p.iter().any(|(n, _)| n == name);
    let name = point
        .iter()
        .find(|(n, _)| n == "protocol")
        .and_then(|(_, v)| v.value.as_word())
        .unwrap_or("raw");
    let default = if let Some(n) = registry::get(name).and_then(|p| p.stream_count()) {
        (!has(point, "count")).then(|| {
            ParamValue::parse(Kind::Count, &n.to_string()).map(|v| ("count".to_string(), v))
        })
    } else {
        (!has(point, "count") && !has(point, "duration")).then(|| {
            ParamValue::parse(Kind::Duration, &format!("{}s", STREAM_DURATION.as_secs()))
                .map(|v| ("duration".to_string(), v))
        })
    };
    if let Some(Ok(v)) = default {
        point.push(v);
    }
}

/// Each case's emulated link, `None` for loopback. XMPP and IRC servers find each other
/// by name in lab hosts, so their cases always get a link (unlimited unless given).
pub fn case_links(cases: &[Case]) -> Result<Vec<Option<CaseLink>>, PlanError> {
    cases
        .iter()
        .map(|c| {
            let l = link::case_link(c)?;
            let named = registry::of(c).lab_hosts(c).is_some();
            Ok(l.or_else(|| named.then(CaseLink::default)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn plan_drops_irrelevant_parameters_and_duplicates() {
        let mut s = Scenario::empty("t");
        s.set_param("workload", "pingpong,stream").unwrap();
        s.set_param("rounds", "10,20").unwrap();
        s.set_param("payload", "1,2").unwrap();
        let cases = plan(&s);
        // pingpong: 2 rounds x 2 payloads; stream: rounds irrelevant -> 2 payloads.
        assert_eq!(cases.len(), 6);
        let stream: Vec<_> = cases.iter().filter(|c| c.workload() == "stream").collect();
        assert_eq!(stream.len(), 2);
        // Neither count nor duration given: raw streams last the default duration.
        assert!(stream.iter().all(|c| c.get("rounds").is_none()
            && c.get("count").is_none()
            && c.get("duration")
                == Some(&wirebench_model::Value::Duration(Duration::from_secs(2)))));
        let idx: Vec<usize> = cases.iter().map(|c| c.index).collect();
        assert_eq!(idx, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn stream_length_defaults_and_command_line_overrides() {
        let mut s = Scenario::empty("t");
        s.set_param("workload", "stream").unwrap();
        s.set_param("count", "5000").unwrap();
        let c = &plan(&s)[0];
        assert_eq!(c.get("count").and_then(|v| v.as_count()), Some(5000));
        assert_eq!(c.get("duration"), None, "a count alone bounds the stream");
        // XMPP and IRC streams are count-based: they get the peers' default count.
        let mut s = Scenario::empty("t");
        s.set_param("workload", "stream").unwrap();
        s.set_param("protocol", "irc").unwrap();
        let c = &plan(&s)[0];
        assert_eq!(c.get("count").and_then(|v| v.as_count()), Some(100));
        // `--count` on the command line replaces a scenario's duration, and the reverse.
        let mut s = Scenario::builtin("default").unwrap();
        assert!(s.grid.get("duration").is_some());
        s.set_param("count", "10").unwrap();
        s.stream_length_from_command_line(true, false);
        let stream = plan(&s)
            .into_iter()
            .find(|c| c.workload() == "stream")
            .unwrap();
        assert_eq!(stream.get("duration"), None);
        let mut s =
            Scenario::parse("[params]\nworkload = \"stream\"\ncount = 8\n", "x.toml").unwrap();
        s.set_param("duration", "3s").unwrap();
        s.stream_length_from_command_line(false, true);
        let c = &plan(&s)[0];
        assert_eq!(c.get("count"), None);
        // Both given: both apply.
        let mut s = Scenario::empty("t");
        s.set_param("workload", "stream").unwrap();
        s.set_param("count", "10").unwrap();
        s.set_param("duration", "3s").unwrap();
        s.stream_length_from_command_line(true, true);
        let c = &plan(&s)[0];
        assert!(c.get("count").is_some() && c.get("duration").is_some());
    }

    #[test]
    fn varying_names_what_tells_cases_apart() {
        // satcom-irc's cases differ in link parameters set by its parts, not in its grid.
        let s = Scenario::builtin("satcom-irc").unwrap();
        let v = varying(&plan(&s));
        assert!(v.iter().any(|n| n == "link.delay"), "{v:?}");
        let mut s = Scenario::empty("t");
        s.set_param("workload", "pingpong,stream").unwrap();
        s.set_param("payload", "1,2").unwrap();
        // `rounds` is constant where its workload uses it: it does not vary.
        assert_eq!(varying(&plan(&s)), ["workload", "payload"]);
        s.set_param("workload", "pingpong").unwrap();
        assert_eq!(varying(&plan(&s)), ["payload"]);
        // A link in one part only: its absence from the other part's cases counts.
        let with_link = Scenario::parse(
            "[params]\npayload = [1, 2]\n[[part]]\nname = \"a\"\nparams = { rounds = 5 }\n\
             [[part]]\nname = \"b\"\nparams = { \"link.delay\" = \"1s\" }\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(
            varying(&plan(&with_link)),
            ["payload", "rounds", "link.delay"]
        );
    }

    #[test]
    fn a_command_line_parameter_no_protocol_of_the_run_reads_is_refused() {
        let refusal = |args: &[(&str, &str)]| {
            let mut s = Scenario::empty("t");
            for (n, v) in args {
                s.set_param(n, v).unwrap();
            }
            check_given(&s, &plan(&s)).err().map(|e| e.to_string())
        };
        let e = refusal(&[("protocol", "mqtt"), ("connections", "4")]).unwrap();
        assert!(
            e.starts_with(
                "--connections does not apply to mqtt: it applies only to pingpong cases of http"
            ) && e.ends_with("drop --connections, or run one of those protocols"),
            "{e}"
        );
        // A stream's workload, not its protocol, would drop it: still the protocol's.
        let e = refusal(&[
            ("protocol", "mqtt"),
            ("workload", "stream"),
            ("target", "127.0.0.1:9"),
        ]);
        assert!(e.unwrap().starts_with("--target does not apply to mqtt"));
        let e = refusal(&[
            ("protocol", "xmpp"),
            ("workload", "stream"),
            ("duration", "1s"),
        ]);
        assert!(e.unwrap().contains("use --count"));
        // At its default the run does what it says; read by some case, a note for the rest;
        // dropped for the workload alone, a note too.
        assert_eq!(refusal(&[("protocol", "mqtt"), ("connections", "1")]), None);
        assert_eq!(
            refusal(&[("protocol", "mqtt"), ("target", "builtin")]),
            None
        );
        assert_eq!(
            refusal(&[("protocol", "mqtt,http"), ("connections", "4")]),
            None
        );
        assert_eq!(
            refusal(&[
                ("protocol", "http"),
                ("workload", "stream"),
                ("connections", "4")
            ]),
            None
        );
    }

    #[test]
    fn default_scenario_plan() {
        let s = Scenario::builtin("default").unwrap();
        let cases = plan(&s);
        assert_eq!(cases.len(), 6);
        assert_eq!(
            cases[0].describe(&["workload", "payload"]),
            "workload=pingpong payload=64"
        );
    }
}
