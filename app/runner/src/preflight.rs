//! Before anything runs: the plan's size and estimated time, the cases estimated above a
//! limit (with the flags that would shorten them), a capture's estimated size, and
//! whether the run is long enough to need the user's go-ahead, and what the cases need
//! on this machine ([`crate::prereq`]).

use std::path::PathBuf;
use std::time::Duration;
use wirebench_model::parse_duration;
use wirebench_protocol::params::{COUNT, DURATION, PAYLOAD, ROUNDS, THINK};

use crate::estimate::{self, format_estimate};
use crate::prereq::Need;
use crate::{Case, RunError, RunOptions, Scenario};

/// A run estimated above this needs `--yes`: long enough for every built-in scenario,
/// short enough to stop a grid that would take days (1000 rounds of 64 KiB at 2400 bit/s
/// would).
pub const CONFIRM_ABOVE_S: f64 = 2.0 * 3600.0;

/// What a user should know before a run starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Preflight {
    /// Planned cases.
    pub cases: usize,
    /// Runs of each case, `None` when a part repeats its cases more often than others.
    pub repeat: Option<u32>,
    /// Runs of all cases together.
    pub runs: u64,
    /// Estimated wall time of the whole run, seconds.
    pub total_secs: f64,
    /// The estimate's notes (a parameter that will be ignored, ...).
    pub notes: Vec<String>,
    /// `--max-case-time`, seconds.
    pub limit_secs: f64,
    /// The cases estimated above `limit_secs`, in plan order.
    pub long: Vec<LongCase>,
    /// The capture's estimated size, when there is one.
    pub capture: Option<CaptureEstimate>,
    /// What the cases need on this machine, found or not.
    pub prerequisites: Prerequisites,
}

/// The planned cases' prerequisites and the command that installs the missing ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prerequisites {
    pub needs: Vec<Need>,
    /// `bash scripts/install-peers.sh` with the run's selection.
    pub install: String,
    /// Planned cases (each run `repeat` times).
    pub cases: usize,
}

impl Prerequisites {
    pub fn missing(&self) -> Vec<&Need> {
        self.needs.iter().filter(|n| !n.present()).collect()
    }

    /// The cases that need something missing, each once.
    pub fn blocked_cases(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = self
            .missing()
            .iter()
            .flat_map(|n| n.cases.iter().map(|c| c.index))
            .collect();
        idx.sort_unstable();
        idx.dedup();
        idx
    }

    /// Whether installing can fix what is missing: not when root alone is.
    pub fn installable(&self) -> bool {
        crate::prereq::install_plan(&self.needs)
            .iter()
            .any(|s| !matches!(s, crate::prereq::Step::Manual(_)))
    }

    /// Refuses a run with a case whose prerequisites are missing, unless `skip` (the user
    /// asked to skip such cases, or a dry run that starts nothing); even then, refuses one
    /// that would skip every case.
    pub fn require(&self, skip: bool, dry_run: bool) -> Result<(), RunError> {
        let blocked = self.blocked_cases().len();
        if blocked == 0 || dry_run {
            return Ok(());
        }
        let what = format!(
            "{} of {} case{} cannot start here (see above)",
            blocked,
            self.cases,
            if self.cases == 1 { "" } else { "s" },
        );
        let fix = if self.installable() {
            "install what is missing with the command above"
        } else {
            "the table above says what to do"
        };
        if blocked == self.cases {
            return Err(RunError::Usage(format!("{what}: nothing to run; {fix}")));
        }
        if skip {
            return Ok(());
        }
        let rest = self.cases - blocked;
        Err(RunError::Usage(format!(
            "{what}; {fix}, or pass --skip-missing to run the other {rest} case{}",
            if rest == 1 { "" } else { "s" }
        )))
    }
}

/// A case estimated above the limit.
#[derive(Debug, Clone, PartialEq)]
pub struct LongCase {
    pub index: usize,
    /// The parameters that tell it apart and set its length: `payload=64 rounds=1000`.
    pub words: String,
    /// Estimated time of one run of it, seconds.
    pub secs: f64,
    /// How to shorten it, naming flags (`use --rounds 10`); may be empty.
    pub advice: String,
}

/// A capture's estimated size against its limit.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureEstimate {
    pub path: PathBuf,
    pub bytes: u64,
    pub limit: u64,
}

/// Estimates `scenario` (as the command line left it) against `max_case_time` (a
/// duration as typed, from `--max-case-time`), after every check the run would make of
/// its plan where `opts` place it ([`crate::check_plan`], the capture's size).
pub fn check(
    scenario: &Scenario,
    max_case_time: &str,
    opts: &RunOptions,
) -> Result<Preflight, RunError> {
    let limit_secs = parse_duration(max_case_time)
        .map_err(|e| RunError::Usage(format!("--max-case-time: {e}")))?
        .as_secs_f64();
    let cases = crate::plan(scenario);
    let links = crate::case_links(&cases)?;
    let needs = crate::prereq::collect(&scenario.name, &cases, &links);
    let skipped = if opts.skip_missing {
        crate::prereq::skip_reasons(&needs, &cases)
    } else {
        vec![None; cases.len()]
    };
    crate::check_given(scenario, &cases)?;
    crate::check_plan(&cases, &links, &skipped, opts)?;
    let prerequisites = Prerequisites {
        needs,
        install: String::new(),
        cases: cases.len(),
    };
    let est = estimate::estimate(scenario)?;
    if let Some(p) = &opts.pcap {
        crate::check_capture(&est, p)?;
    }
    let pcap = opts.pcap.as_ref();
    let long = est
        .cases
        .iter()
        .zip(&cases)
        .filter(|(e, _)| e.secs > limit_secs)
        .map(|(e, case)| LongCase {
            index: e.index,
            words: case_words(scenario, case),
            secs: e.secs,
            advice: e.advice(limit_secs),
        })
        .collect();
    Ok(Preflight {
        cases: est.cases.len(),
        repeat: est.repeat(),
        runs: est.runs(),
        total_secs: est.total_secs(),
        notes: est.notes.clone(),
        limit_secs,
        long,
        capture: pcap.map(|p| CaptureEstimate {
            path: p.path.clone(),
            bytes: est.capture_bytes(p.snaplen),
            limit: p.limit,
        }),
        prerequisites,
    })
}

impl Preflight {
    /// The run is estimated above [`CONFIRM_ABOVE_S`].
    pub fn needs_confirmation(&self) -> bool {
        self.total_secs > CONFIRM_ABOVE_S
    }

    /// Refuses a run that needs the user's go-ahead without it (`confirmed`: `--yes`,
    /// or a dry run that starts nothing).
    pub fn confirm(&self, confirmed: bool) -> Result<(), RunError> {
        if !self.needs_confirmation() || confirmed {
            return Ok(());
        }
        Err(RunError::Usage(format!(
            "this run is estimated at {} ({}); shorten it (see the warnings above) or pass \
             --yes to start it anyway",
            format_estimate(self.total_secs),
            if self.long.is_empty() {
                format!("{} cases", self.cases)
            } else {
                format!(
                    "{} case(s) above {}",
                    self.long.len(),
                    format_estimate(self.limit_secs)
                )
            }
        )))
    }
}

/// The parameters that tell a case apart and set its length: `link.rate=2400bit
/// payload=64KiB rounds=1000`.
fn case_words(scenario: &Scenario, case: &Case) -> String {
    let grids = scenario.grids();
    let varying: Vec<&str> = grids
        .iter()
        .flat_map(|g| g.varying())
        .chain([PAYLOAD, ROUNDS, COUNT, DURATION, THINK].map(|p| p.name))
        .collect();
    let shown: Vec<&str> = case
        .point
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| {
            varying.contains(n)
                && !(*n == THINK.name && case.duration(&THINK) == Some(Duration::ZERO))
        })
        .collect();
    case.describe(&shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run with no option that places it: no server, capture or shard.
    fn loopback() -> RunOptions {
        RunOptions {
            server: None,
            out: "never-written".into(),
            connect_timeout: Duration::from_secs(5),
            command: Vec::new(),
            pcap: None,
            shard: None,
            skip_missing: false,
        }
    }

    fn scenario(params: &[(&str, &str)]) -> Scenario {
        let mut s = Scenario::builtin("default").unwrap();
        for (n, v) in params {
            s.set_param(n, v).unwrap();
        }
        s
    }

    #[test]
    fn long_cases_are_named_with_advice() {
        let s = scenario(&[
            ("link", "2400bit/0ms"),
            ("payload", "64"),
            ("rounds", "1000"),
        ]);
        let p = check(&s, "10m", &loopback()).unwrap();
        assert!(!p.long.is_empty());
        let first = &p.long[0];
        assert!(first.words.contains("payload=64 rounds=1000"), "{first:?}");
        assert!(first.advice.contains("--rounds"), "{first:?}");
        assert!(!p.needs_confirmation());
        assert!(check(&s, "x", &loopback()).is_err());
    }

    #[test]
    fn a_run_of_days_needs_confirmation() {
        let s = scenario(&[
            ("link", "2400bit/500ms"),
            ("payload", "64"),
            ("rounds", "100000"),
        ]);
        let p = check(&s, "10m", &loopback()).unwrap();
        assert!(p.needs_confirmation());
        assert!(p.confirm(true).is_ok());
        let msg = p.confirm(false).unwrap_err().to_string();
        assert!(
            msg.starts_with("this run is estimated at ")
                && msg.contains("case(s) above 10m")
                && msg.ends_with("pass --yes to start it anyway"),
            "{msg}"
        );
    }
}
