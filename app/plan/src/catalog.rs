//! What there is to run: the built-in scenarios with their size and estimated time
//! (`wirebench scenarios`), and the protocols with the parameters each workload of
//! theirs reads (`wirebench protocols`).

use crate::params::{WORKLOADS, applies, params};
use crate::{BUILTIN, Scenario, estimate, registry};

/// A protocol as a user needs it to write `--protocol`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Each workload with the parameters it reads under this protocol (beyond
    /// `protocol` and `workload`), in the registry's order.
    pub workloads: Vec<(&'static str, Vec<&'static str>)>,
}

/// Every protocol of the registry. A parameter that belongs to one protocol is listed
/// under that protocol only.
pub fn protocols() -> Vec<ProtocolInfo> {
    registry::REGISTRY
        .iter()
        .map(|p| ProtocolInfo {
            name: p.name(),
            summary: p.summary(),
            workloads: WORKLOADS
                .iter()
                .filter(|w| p.workloads().contains(w))
                .map(|w| {
                    let params = params()
                        .iter()
                        .map(|s| s.name)
                        .filter(|n| {
                            !matches!(*n, "protocol" | "workload") && applies(n, p.name(), w)
                        })
                        .collect();
                    (*w, params)
                })
                .collect(),
        })
        .collect()
}

/// A built-in scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioInfo {
    pub name: &'static str,
    pub description: String,
    /// `None` when it cannot be estimated.
    pub estimate: Option<ScenarioEstimate>,
}

/// A scenario's size and estimated time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScenarioEstimate {
    pub cases: usize,
    /// Runs of each case, `None` when some are run more often than others.
    pub repeat: Option<u32>,
    /// Runs of all cases together.
    pub runs: u64,
    /// The whole run, seconds.
    pub secs: f64,
}

/// Every built-in scenario, in the order of [`BUILTIN`].
pub fn scenarios() -> Vec<ScenarioInfo> {
    BUILTIN
        .iter()
        .filter_map(|(name, _)| {
            let s = Scenario::builtin(name)?;
            let estimate = estimate::estimate(&s).ok().map(|e| ScenarioEstimate {
                cases: e.cases.len(),
                repeat: e.repeat(),
                runs: e.runs(),
                secs: e.total_secs(),
            });
            Some(ScenarioInfo {
                name,
                description: s.description,
                estimate,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_lists_the_workloads_it_offers() {
        let ps = protocols();
        assert_eq!(ps.len(), registry::REGISTRY.len());
        for (p, r) in ps.iter().zip(registry::REGISTRY) {
            let names: Vec<&str> = p.workloads.iter().map(|(w, _)| *w).collect();
            assert_eq!(names, r.workloads(), "{}", p.name);
            assert!(names.iter().all(|w| WORKLOADS.contains(w)), "{}", p.name);
            for (_, params) in &p.workloads {
                assert!(!params.contains(&"protocol") && !params.contains(&"workload"));
            }
        }
    }

    #[test]
    fn every_builtin_scenario_has_an_estimate() {
        let ss = scenarios();
        assert_eq!(ss.len(), BUILTIN.len());
        for s in &ss {
            let e = s.estimate.expect(s.name);
            assert!(e.cases > 0 && e.secs > 0.0, "{s:?}");
        }
    }
}
