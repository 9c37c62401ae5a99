//! What the planned cases need on this machine (nothing starts that cannot finish): each case's
//! prerequisites, from its protocol's plugin plus the lab's own (root, `ip`) for a case
//! that runs in the lab, grouped by requirement, each looked up once. `wirebench run`
//! refuses to start while one is missing (or skips the cases that need it), `wirebench
//! doctor` lists them, and `scripts/install-peers.sh` installs what [`install_plan`] says.

use std::path::PathBuf;
use std::process::Command;
use wirebench_model::{Kind, ParamValue};
use wirebench_protocol::prereq::{IP, ROOT, SYSCTL, find_program};
use wirebench_protocol::{Install, Prerequisite, Protocol, Requirement};

use crate::{Case, CaseLink, RunRequest, registry};

/// One requirement with every case that needs it.
#[derive(Debug, Clone)]
pub struct Need {
    pub req: Requirement,
    /// Where it was found (empty for a privilege), or what was looked for.
    pub found: Result<PathBuf, String>,
    /// The cases that need it, in plan order.
    pub cases: Vec<CaseRef>,
}

/// A case that needs something, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRef {
    /// Its scenario's name (a doctor over several scenarios tells them apart by it).
    pub scenario: String,
    pub index: usize,
    /// The parameter values that call for it: `xmpp.server=ejabberd`.
    pub why: String,
}

/// By what is needed and where: a requirement's lookup is a function, which has no
/// meaningful equality.
impl PartialEq for Need {
    fn eq(&self, o: &Need) -> bool {
        self.req.name == o.req.name && self.found == o.found && self.cases == o.cases
    }
}

impl Need {
    pub fn present(&self) -> bool {
        self.found.is_ok()
    }

    /// Its reasons, each once, in order of first appearance.
    pub fn reasons(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in &self.cases {
            if !out.contains(&c.why.as_str()) {
                out.push(&c.why);
            }
        }
        out
    }

    /// Its reasons in one phrase: those made of `name=value` words merged per name
    /// (`link.delay=5ms,81ms`), since a grid repeats each value in many combinations;
    /// any other reason as it is.
    pub fn why(&self) -> String {
        let mut values: Vec<(&str, Vec<&str>)> = Vec::new();
        let mut other: Vec<&str> = Vec::new();
        for r in self.reasons() {
            let words: Vec<(&str, &str)> = r.split(' ').filter_map(|w| w.split_once('=')).collect();
            if words.len() != r.split(' ').count() {
                other.push(r);
                continue;
            }
            for (k, v) in words {
                match values.iter_mut().find(|(n, _)| *n == k) {
                    Some((_, vs)) if vs.contains(&v) => {}
                    Some((_, vs)) => vs.push(v),
                    None => values.push((k, vec![v])),
                }
            }
        }
        values
            .iter()
            .map(|(k, vs)| format!("{k}={}", vs.join(",")))
            .chain(other.iter().map(|o| o.to_string()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The cases as ranges (`3-5, 9`); `named`: each scenario's after its name
    /// (`browser-transports 3-5; s4-tigase 4`), for a list over several scenarios.
    pub fn case_list(&self, named: bool) -> String {
        let mut scenarios: Vec<&str> = Vec::new();
        for c in &self.cases {
            if !scenarios.contains(&c.scenario.as_str()) {
                scenarios.push(&c.scenario);
            }
        }
        let ranges = |s: &str| {
            let idx: Vec<usize> = self
                .cases
                .iter()
                .filter(|c| c.scenario == s)
                .map(|c| c.index)
                .collect();
            ranges(&idx)
        };
        match scenarios.as_slice() {
            [one] if !named => ranges(one),
            many => many
                .iter()
                .map(|s| format!("{s} {}", ranges(s)))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }

    /// The installed Debian package's version, when it is installed from one (a
    /// `dpkg-query`: cheap enough for `wirebench doctor`, not run before every run).
    pub fn version(&self) -> Option<String> {
        let Install::Debian(pkg) = self.req.install else {
            return None;
        };
        let out = Command::new("dpkg-query")
            .args(["-W", "-f=${db:Status-Abbrev}${Version}", pkg])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        // "ii " is installed; anything else (removed, half-installed) has no version.
        let v = text.strip_prefix("ii ")?.trim();
        (!v.is_empty()).then(|| v.to_string())
    }
}

/// `1, 2, 3, 5` as `1-3, 5`.
fn ranges(idx: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && idx[j + 1] == idx[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", idx[i], idx[j])
        } else {
            idx[i].to_string()
        });
        i = j + 1;
    }
    out.join(", ")
}

/// What one case needs: its protocol's prerequisites, then the lab's when it has a link.
pub fn of_case(case: &Case, link: Option<&CaseLink>) -> Vec<Prerequisite> {
    let mut out = registry::of(case).prerequisites(case);
    if link.is_some() {
        let words: Vec<String> = case
            .point
            .iter()
            .filter(|(n, _)| crate::params::is_link(n))
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        // Without link parameters the lab is the protocol's choice (servers that find
        // each other by name).
        let why = if words.is_empty() {
            format!("protocol={} (in the lab)", case.protocol())
        } else {
            words.join(" ")
        };
        out.push(ROOT.because(why.clone()));
        out.push(IP.because(why.clone()));
        out.push(SYSCTL.because(why));
    }
    out
}

/// Every prerequisite of `cases` (of scenario `scenario`), grouped by requirement in order
/// of first appearance, each looked up once.
pub fn collect(scenario: &str, cases: &[Case], links: &[Option<CaseLink>]) -> Vec<Need> {
    let mut needs: Vec<Need> = Vec::new();
    for (case, link) in cases.iter().zip(links) {
        for p in of_case(case, link.as_ref()) {
            let at = CaseRef {
                scenario: scenario.to_string(),
                index: case.index,
                why: p.why,
            };
            match needs.iter_mut().find(|n| n.req.name == p.need.name) {
                Some(n) if n.cases.last() == Some(&at) => {}
                Some(n) => n.cases.push(at),
                None => needs.push(Need {
                    req: p.need,
                    found: p.need.find(),
                    cases: vec![at],
                }),
            }
        }
    }
    needs
}

/// Adds `more` (another scenario's needs) to `into`.
pub fn merge(into: &mut Vec<Need>, more: Vec<Need>) {
    for m in more {
        match into.iter_mut().find(|n| n.req.name == m.req.name) {
            Some(n) => n.cases.extend(m.cases),
            None => into.push(m),
        }
    }
}

/// For each case, why it cannot run here (what it needs that is missing), or `None`.
pub fn skip_reasons(needs: &[Need], cases: &[Case]) -> Vec<Option<String>> {
    cases
        .iter()
        .map(|c| {
            let missing: Vec<String> = needs
                .iter()
                .filter(|n| !n.present() && n.cases.iter().any(|r| r.index == c.index))
                .map(|n| format!("{} ({})", n.req.name, n.req.install))
                .collect();
            (!missing.is_empty()).then(|| format!("needs {}", missing.join(", ")))
        })
        .collect()
}

/// One step of installing what is missing, as `scripts/install-peers.sh` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A Debian package.
    Apt(&'static str),
    /// A script of the repository, after the packages.
    Script(&'static str),
    /// Something no script does (root).
    Manual(&'static str),
}

impl std::fmt::Display for Step {
    /// One line: `apt NAME`, `script PATH` or `manual TEXT`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Apt(p) => write!(f, "apt {p}"),
            Step::Script(s) => write!(f, "script {s}"),
            Step::Manual(m) => write!(f, "manual {m}"),
        }
    }
}

/// What installs every missing requirement: Debian packages (a script's own tools among
/// them when they are not on PATH), then scripts, then what must be done by hand; each
/// once.
pub fn install_plan(needs: &[Need]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut add = |s: Step| {
        if !steps.contains(&s) {
            steps.push(s);
        }
    };
    for n in needs.iter().filter(|n| !n.present()) {
        match n.req.install {
            Install::Debian(p) => add(Step::Apt(p)),
            Install::Script { path, needs } => {
                for (program, package) in needs {
                    if find_program(program).is_none() {
                        add(Step::Apt(package));
                    }
                }
                add(Step::Script(path));
            }
            Install::Manual(m) => add(Step::Manual(m)),
        }
    }
    // Packages first: scripts may need them.
    steps.sort_by_key(|s| match s {
        Step::Apt(_) => 0,
        Step::Script(_) => 1,
        Step::Manual(_) => 2,
    });
    steps
}

/// The one command that installs what a run needs: `bash scripts/install-peers.sh` with the
/// run's scenario, `--part` and parameters, which it hands to `wirebench doctor`.
pub fn install_command(req: &RunRequest) -> String {
    let mut words = vec!["bash".to_string(), quote(&install_script())];
    words.extend(req.scenario.iter().map(|s| quote(s)));
    if let Some(p) = &req.parts {
        words.extend(["--part".to_string(), quote(p)]);
    }
    for (name, value) in &req.params {
        // The command line's flag for every parameter (app/wirebench/src/cli.rs).
        words.push(format!("--{}", name.replace(['.', '_'], "-")));
        words.push(quote(value));
    }
    words.join(" ")
}

/// Where `scripts/install-peers.sh` is for the user who reads the command: relative when
/// they stand in the repository, else the absolute path of the checkout this binary was
/// built in (`target/release/wirebench`: three levels up), so the command works as printed
/// from any directory.
fn install_script() -> String {
    const SCRIPT: &str = "scripts/install-peers.sh";
    if std::path::Path::new(SCRIPT).is_file() {
        return SCRIPT.to_string();
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(|repo| repo.join(SCRIPT)))
        .filter(|p| p.is_file())
        .map_or_else(|| SCRIPT.to_string(), |p| p.display().to_string())
}

/// What `wirebench doctor` checks: the cases `req` plans (as `wirebench run` would), or
/// with `None` those of every built-in scenario.
pub fn doctor(req: Option<&RunRequest>) -> Result<Vec<Need>, crate::RunError> {
    if let Some(r) = req {
        return Ok(crate::prepare(r)?.preflight.prerequisites.needs);
    }
    let mut all = Vec::new();
    for (name, _) in crate::BUILTIN {
        let r = RunRequest {
            scenario: Some(name.to_string()),
            ..Default::default()
        };
        merge(&mut all, crate::prepare(&r)?.preflight.prerequisites.needs);
    }
    Ok(all)
}

/// Every Debian package a case of any plugin may need, each once, in registry order:
/// each protocol's cases of every workload it offers, over every combination of the values
/// of its own choice parameters that apply to that workload, plus the lab's (iproute2,
/// procps). A
/// script's own tools count (npm for Strophe.js). `scripts/test.sh` installs these, so it
/// names no peer itself.
pub fn debian_packages() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for protocol in registry::REGISTRY {
        for workload in protocol.workloads() {
            for case in every_choice(*protocol, workload) {
                for need in protocol.prerequisites(&case) {
                    match need.need.install {
                        Install::Debian(p) => out.push(p),
                        Install::Script { needs, .. } => out.extend(needs.iter().map(|n| n.1)),
                        Install::Manual(_) => {}
                    }
                }
            }
        }
    }
    for lab in [IP, SYSCTL] {
        if let Install::Debian(p) = lab.install {
            out.push(p);
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(*p));
    out
}

/// A case of `protocol` and `workload` for every combination of the values of the
/// protocol's choice parameters that apply to the workload, the other parameters at their
/// defaults. Per workload: the load workload's own choices times the rest's would be
/// millions.
fn every_choice(protocol: &'static dyn Protocol, workload: &str) -> Vec<Case> {
    let name = protocol.name();
    let mut s = crate::Scenario::empty("packages");
    for (param, value) in [("protocol", name), ("workload", workload)] {
        s.set_param(param, value)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Each axis: a choice parameter that applies, its values (and absent, when it has no
    // default: `xmpp.server` unset is not any of its values).
    type Axis = (&'static str, Vec<Option<ParamValue>>);
    let axes: Vec<Axis> = protocol
        .params()
        .iter()
        .filter(|p| crate::params::applies(p.name, name, workload))
        .filter_map(|p| match p.kind {
            Kind::Choice(values) => {
                let absent = p.default.is_empty().then_some(None);
                let given = values.iter().map(|v| Some(p.parse(v).unwrap()));
                Some((p.name, absent.into_iter().chain(given).collect()))
            }
            _ => None,
        })
        .collect();
    let base: Vec<_> = s
        .complete_grid()
        .expand()
        .remove(0)
        .into_iter()
        .filter(|(n, _)| {
            crate::params::applies(n, name, workload) && !axes.iter().any(|a| a.0 == n)
        })
        .collect();
    let mut cases = Vec::new();
    // An odometer over the axes' values.
    let mut at = vec![0usize; axes.len()];
    loop {
        let mut point = base.clone();
        for ((param, values), &k) in axes.iter().zip(&at) {
            if let Some(v) = &values[k] {
                point.push((param.to_string(), v.clone()));
            }
        }
        cases.push(Case {
            index: cases.len() + 1,
            point,
            ignored: Vec::new(),
            runs: 1,
        });
        let Some(digit) = (0..axes.len()).find(|&d| at[d] + 1 < axes[d].1.len()) else {
            return cases;
        };
        at[digit] += 1;
        at[..digit].iter_mut().for_each(|d| *d = 0);
    }
}

/// `s` as one shell word.
fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,/:=@%+".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scenario;
    use wirebench_protocol::Lookup;

    fn needs_of(s: &Scenario) -> Vec<Need> {
        let cases = crate::plan(s);
        let links = crate::case_links(&cases).unwrap();
        collect(&s.name, &cases, &links)
    }

    #[test]
    fn cases_are_grouped_by_requirement_with_their_reasons() {
        let mut s = Scenario::builtin("browser-transports").unwrap();
        s.select_parts(&["browser".into(), "real-native".into()])
            .unwrap();
        let needs = needs_of(&s);
        let names: Vec<&str> = needs.iter().map(|n| n.req.name).collect();
        // The browser part's cases come first; real-native needs no lab (no link).
        assert_eq!(
            names,
            ["chromium", "Strophe.js 5.0.0", "prosody", "ejabberd"],
            "{needs:#?}"
        );
        let chromium = &needs[0];
        assert_eq!(chromium.cases.len(), 7);
        assert_eq!(chromium.reasons(), ["xmpp.client=browser"]);
        assert_eq!(chromium.case_list(false), "1-7");
        assert_eq!(chromium.case_list(true), "browser-transports 1-7");
        let ejabberd = &needs[3];
        assert_eq!(ejabberd.reasons(), ["xmpp.server=ejabberd"]);
        assert_eq!(ejabberd.cases.len(), 3);
        // A scenario with nothing to install needs nothing.
        assert!(needs_of(&Scenario::builtin("default").unwrap()).is_empty());
    }

    #[test]
    fn lab_cases_need_root_and_say_which_link() {
        let mut s = Scenario::builtin("proxy-delays").unwrap();
        s.select_parts(&["microsocks-and-dante".into()]).unwrap();
        let needs = needs_of(&s);
        let names: Vec<&str> = needs.iter().map(|n| n.req.name).collect();
        assert_eq!(
            names,
            [
                "microsocks",
                "root",
                "ip (iproute2)",
                "sysctl (procps)",
                "danted"
            ]
        );
        let root = &needs[1];
        assert_eq!(root.cases.len(), 8);
        assert!(root.reasons()[0].starts_with("link.delay=5ms"), "{root:?}");
        assert_eq!(root.why(), "link.delay=5ms,25ms,81ms,150ms");
        // IRC runs in the lab without link parameters: its own reason.
        let mut irc = Scenario::empty("t");
        irc.set_param("protocol", "irc").unwrap();
        let needs = needs_of(&irc);
        let root = needs.iter().find(|n| n.req.name == "root").unwrap();
        assert_eq!(root.why(), "protocol=irc (in the lab)");
    }

    fn fake(name: &'static str, lookup: Lookup, install: Install, cases: &[usize]) -> Need {
        let req = Requirement {
            name,
            lookup,
            install,
        };
        Need {
            req,
            found: req.find(),
            cases: cases
                .iter()
                .map(|&index| CaseRef {
                    scenario: "s".into(),
                    index,
                    why: "x=y".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_plan_installs_what_is_missing_packages_first() {
        let absent = Lookup::Program("wirebench-no-such-program");
        let needs = vec![
            fake(
                "script",
                absent,
                Install::Script {
                    path: "scripts/x.sh",
                    needs: &[("wirebench-no-such-npm", "npm"), ("sh", "dash")],
                },
                &[1],
            ),
            fake("a", absent, Install::Debian("a"), &[2, 3, 4, 7]),
            fake(
                "present",
                Lookup::Program("sh"),
                Install::Debian("dash"),
                &[2],
            ),
            fake("again", absent, Install::Debian("a"), &[5]),
            fake("root", absent, Install::Manual("be root"), &[5]),
        ];
        let plan: Vec<String> = install_plan(&needs).iter().map(|s| s.to_string()).collect();
        assert_eq!(
            plan,
            ["apt npm", "apt a", "script scripts/x.sh", "manual be root"]
        );
        assert_eq!(needs[1].case_list(false), "2-4, 7");
        let cases: Vec<Case> = (1..=6)
            .map(|index| Case {
                index,
                point: Vec::new(),
                ignored: Vec::new(),
                runs: 1,
            })
            .collect();
        let skip = skip_reasons(&needs, &cases);
        assert_eq!(skip[5], None);
        assert_eq!(
            skip[4].as_deref(),
            Some("needs again (apt-get install a), root (be root)")
        );
        // Present: nothing to do.
        assert!(install_plan(&needs[2..3]).is_empty());
    }

    #[test]
    fn a_run_is_refused_unless_it_skips_and_something_is_left() {
        use crate::preflight::Prerequisites;
        let absent = Lookup::Program("wirebench-no-such-program");
        let p = |needs: Vec<Need>| Prerequisites {
            needs,
            install: "bash scripts/install-peers.sh x".into(),
            cases: 4,
        };
        let some = p(vec![fake("a", absent, Install::Debian("a"), &[2, 3])]);
        assert_eq!(some.blocked_cases(), [2, 3]);
        let e = some.require(false, false).unwrap_err().to_string();
        assert_eq!(
            e,
            "2 of 4 cases cannot start here (see above); install what is missing with the \
             command above, or pass --skip-missing to run the other 2 cases"
        );
        assert!(some.require(true, false).is_ok());
        assert!(
            some.require(false, true).is_ok(),
            "a dry run starts nothing"
        );
        // Skipping every case leaves nothing to run; root cannot be installed.
        let all = p(vec![fake(
            "root",
            absent,
            Install::Manual("be root"),
            &[1, 2, 3, 4],
        )]);
        assert!(!all.installable());
        let e = all.require(true, false).unwrap_err().to_string();
        assert!(
            e.ends_with("nothing to run; the table above says what to do"),
            "{e}"
        );
        // Present: nothing blocked.
        let fine = p(vec![fake(
            "sh",
            Lookup::Program("sh"),
            Install::Debian("dash"),
            &[1],
        )]);
        assert!(fine.blocked_cases().is_empty() && fine.require(false, false).is_ok());
    }

    #[test]
    fn every_declared_package_is_listed_once() {
        let packages = debian_packages();
        // A value only some parameter's other values reach (ejabberd's luerl for a load,
        // Chromium for the browser client), a script's tool, and the lab's.
        for p in ["ngircd", "erlang-luerl", "chromium", "npm", "iproute2"] {
            assert!(packages.contains(&p), "{p} missing from {packages:?}");
        }
        let mut once = packages.clone();
        once.sort_unstable();
        once.dedup();
        assert_eq!(once.len(), packages.len(), "{packages:?}");
        // Whatever a built-in study needs is among them.
        for n in doctor(None).unwrap() {
            if let Install::Debian(p) = n.req.install {
                assert!(packages.contains(&p), "{p} missing from {packages:?}");
            }
        }
    }

    #[test]
    fn the_install_command_repeats_the_runs_selection() {
        let req = RunRequest {
            scenario: Some("browser-transports".into()),
            parts: Some("native,browser".into()),
            params: vec![
                ("xmpp.server".into(), "ejabberd".into()),
                ("load.phases".into(), "60s@10/s 10s@0/s".into()),
            ],
            ..Default::default()
        };
        assert_eq!(
            install_command(&req),
            "bash scripts/install-peers.sh browser-transports --part native,browser \
             --xmpp-server ejabberd --load-phases '60s@10/s 10s@0/s'"
        );
        assert_eq!(
            install_command(&RunRequest::default()),
            "bash scripts/install-peers.sh"
        );
    }
}
