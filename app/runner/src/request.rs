//! From a command line's words to a run: the scenario with the flags' overrides, the run
//! options, and every check that refuses a run before anything starts. A front end
//! parses its flags into a [`RunRequest`] and hands it to [`prepare`]; what each flag
//! means is decided here. Messages name the flags (`--repeat 0: must be at least 1`).

use std::path::{Path, PathBuf};
use std::time::Duration;
use wirebench_lab::pcap::{MAX_SNAPLEN, PcapOptions};
use wirebench_model::{Bytes, parse_duration};

use crate::preflight::{self, Preflight};
use crate::{BUILTIN, RunError, RunOptions, Scenario};

/// Default of `--max-case-time`: cases estimated above it get a warning.
pub const MAX_CASE_TIME: &str = "10m";
/// Default of `--pcap-limit`: a capture estimated above it is refused, and stops there.
pub const PCAP_LIMIT: &str = "200MiB";

/// A run as a command line asks for it, every value as the user typed it.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Scenario file (TOML) or built-in scenario name; `None`: the built-in `default`.
    pub scenario: Option<String>,
    /// Parameters set on the command line, by their registry names (`link.rate`), each
    /// value as typed (a comma-separated list is a grid axis). They are applied in this
    /// order, so the first bad one is the one reported.
    pub params: Vec<(String, String)>,
    /// `--part`: comma-separated `[[part]]` names.
    pub parts: Option<String>,
    pub repeat: Option<u32>,
    pub seed: Option<u64>,
    /// `--timeout`: a case fails after this long without progress.
    pub timeout: Option<String>,
    /// `--server HOST[:PORT]`: a running `wirebench serve` instead of the embedded one.
    pub server: Option<String>,
    /// Results directory; `None`: a fresh one under `wirebench-runs/`.
    pub out: Option<PathBuf>,
    /// `--tables`: comma-separated parameters that split results.csv.
    pub tables: Option<String>,
    /// `--columns`: comma-separated metrics kept in results.csv.
    pub columns: Option<String>,
    /// Cases estimated above this get a warning ([`MAX_CASE_TIME`]).
    pub max_case_time: String,
    pub pcap: Option<PathBuf>,
    /// [`PCAP_LIMIT`] unless given.
    pub pcap_limit: String,
    pub pcap_snaplen: Option<String>,
    /// The command line, recorded with the results.
    pub command: Vec<String>,
    /// `--shard I/N`: this run is shard I of N (docs/cluster.md).
    pub shard: Option<String>,
    /// `--barrier HOST:PORT`: shard 0's address, where the shards meet before each case.
    pub barrier: Option<String>,
    /// `--start-at`: RFC 3339 time of the first case's start.
    pub start_at: Option<String>,
    /// `--barrier-timeout`: how long to wait for every shard.
    pub barrier_timeout: Option<String>,
    /// `--skip-missing`: run the cases whose prerequisites are present and record the
    /// others as skipped, instead of refusing the run.
    pub skip_missing: bool,
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            scenario: None,
            params: Vec::new(),
            parts: None,
            repeat: None,
            seed: None,
            timeout: None,
            server: None,
            out: None,
            tables: None,
            columns: None,
            max_case_time: MAX_CASE_TIME.to_string(),
            pcap: None,
            pcap_limit: PCAP_LIMIT.to_string(),
            pcap_snaplen: None,
            command: Vec::new(),
            shard: None,
            barrier: None,
            start_at: None,
            barrier_timeout: None,
            skip_missing: false,
        }
    }
}

/// A run ready to start: hand `scenario` and `options` to [`crate::run`] once the user
/// has seen the preflight (and [`Preflight::confirm`] let it through).
pub struct Prepared {
    pub scenario: Scenario,
    pub options: RunOptions,
    pub preflight: Preflight,
}

/// Builds the run a request describes and checks everything that can be checked before
/// it starts, in the order a user fixes them: the scenario and its parameters, the
/// other flags, the server's payload limit, the capture options, the estimate.
pub fn prepare(req: &RunRequest) -> Result<Prepared, RunError> {
    let mut scenario = load_scenario(req.scenario.as_deref())?;
    for (name, value) in &req.params {
        scenario.set_param(name, value)?;
    }
    let given = |name: &str| req.params.iter().any(|(n, _)| n == name);
    scenario.stream_length_from_command_line(given("count"), given("duration"));
    // The scenario's description names its own protocols and workloads; once the command
    // line replaces them (`run --protocol xmpp --workload load`), a report headed "Raw TCP
    // ping-pong ..." would say what was not run.
    if given("protocol") || given("workload") {
        let value = |name: &str| {
            req.params
                .iter()
                .rfind(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let what: Vec<String> = ["workload", "protocol"]
            .iter()
            .filter_map(|p| value(p).map(|v| format!("{p} {v}")))
            .collect();
        scenario.description = format!(
            "{} (from the command line, on the {} scenario's other settings)",
            what.join(", "),
            scenario.name
        );
    }
    if let Some(names) = &req.parts {
        scenario
            .select_parts(&list(names))
            .map_err(|e| usage(format!("--part: {e}")))?;
    }
    if let Some(r) = req.repeat {
        if r == 0 {
            return Err(usage("--repeat 0: must be at least 1"));
        }
        scenario.set_repeat(r);
    }
    if let Some(s) = req.seed {
        scenario.seed = s;
    }
    if let Some(t) = &req.timeout {
        scenario.stall_timeout = parse_duration(t).map_err(|e| usage(format!("--timeout: {e}")))?;
        if scenario.stall_timeout.is_zero() {
            return Err(usage(format!(
                "--timeout {t}: must be longer than 0 (every case would fail at once)"
            )));
        }
    }
    if let Some(t) = &req.tables {
        let tables = list(t);
        for p in &tables {
            if crate::params::spec(p).is_none() {
                return Err(usage(format!(
                    "--tables: {p:?} is not a parameter; parameters: {}",
                    crate::params::names().join(", ")
                )));
            }
        }
        scenario.tables = Some(tables);
    }
    if let Some(c) = &req.columns {
        let columns = list(c);
        for c in &columns {
            wirebench_model::metric::check_column(c, crate::metrics::names())
                .map_err(|e| usage(format!("--columns: {e}")))?;
        }
        scenario.columns = Some(columns);
    }
    let server = req
        .server
        .as_deref()
        .map(|s| wirebench_net::parse_addr(s, false).map_err(|e| usage(format!("--server {e}"))))
        .transpose()?;
    if server.is_none() {
        let origin = match (given("payload"), &req.scenario) {
            (true, _) => "--payload".to_string(),
            (false, Some(file)) => format!("{file}: params.payload"),
            (false, None) => "payload".to_string(),
        };
        check_embedded_payloads(&scenario, &origin)?;
    }
    let shard = shard_options(req)?;
    if shard.is_some() && req.skip_missing {
        // Shards meet before every case: one that skipped a case would leave the others
        // waiting for it.
        return Err(usage(
            "--skip-missing cannot be combined with --shard: every shard runs every case",
        ));
    }
    let out = req.out.clone().unwrap_or_else(|| match &shard {
        Some(s) => crate::default_out_dir(&format!("{}-shard-{}", scenario.name, s.index)),
        None => crate::default_out_dir(&scenario.name),
    });
    let options = RunOptions {
        server,
        out,
        connect_timeout: Duration::from_secs(5),
        command: req.command.clone(),
        pcap: pcap_options(
            req.pcap.as_deref(),
            &req.pcap_limit,
            req.pcap_snaplen.as_deref(),
        )?,
        shard,
        skip_missing: req.skip_missing,
    };
    let mut preflight = preflight::check(&scenario, &req.max_case_time, &options)?;
    preflight.prerequisites.install = crate::prereq::install_command(req);
    Ok(Prepared {
        scenario,
        options,
        preflight,
    })
}

/// `--shard`, `--barrier`, `--start-at` and `--barrier-timeout` read together.
fn shard_options(req: &RunRequest) -> Result<Option<crate::shard::ShardOptions>, RunError> {
    let Some(spec) = &req.shard else {
        if req.barrier.is_some() || req.start_at.is_some() {
            return Err(RunError::Usage(
                "--barrier and --start-at align shards: give --shard I/N too".into(),
            ));
        }
        return Ok(None);
    };
    let (index, count) = crate::shard::parse_shard(spec).map_err(RunError::Usage)?;
    let start_at = req
        .start_at
        .as_deref()
        .map(|t| {
            humantime::parse_rfc3339_weak(t).map_err(|e| {
                RunError::Usage(format!(
                    "--start-at {t}: {e}; expected an RFC 3339 time in UTC, e.g. 2026-11-26T10:00:00Z"
                ))
            })
        })
        .transpose()?;
    let barrier_timeout = match &req.barrier_timeout {
        Some(t) => humantime::parse_duration(t)
            .map_err(|e| RunError::Usage(format!("--barrier-timeout {t}: {e}")))?,
        None => Duration::from_secs(600),
    };
    let opts = crate::shard::ShardOptions {
        index,
        count,
        barrier: req.barrier.clone(),
        start_at,
        barrier_timeout,
    };
    opts.check()?;
    Ok(Some(opts))
}

/// A scenario file, else a built-in scenario of that name; `None`: the built-in
/// `default`.
pub fn load_scenario(arg: Option<&str>) -> Result<Scenario, RunError> {
    let Some(arg) = arg else {
        return Ok(Scenario::builtin("default").expect("built-in default exists"));
    };
    let path = Path::new(arg);
    if path.exists() {
        return Ok(Scenario::from_file(path)?);
    }
    if let Some(s) = Scenario::builtin(arg) {
        return Ok(s);
    }
    let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    Err(usage(format!(
        "no scenario file or built-in scenario named {arg:?}; built-in scenarios: {}",
        names.join(", ")
    )))
}

/// `--pcap FILE` with its `--pcap-limit` and `--pcap-snaplen`, as `wirebench run` and
/// `wirebench shell` take them. The path is made absolute now, relative to where the
/// user is, whichever network namespace the capture is written from later.
pub fn pcap_options(
    path: Option<&Path>,
    limit: &str,
    snaplen: Option<&str>,
) -> Result<Option<PcapOptions>, RunError> {
    let limit = Bytes::parse(limit)
        .map_err(|e| usage(format!("--pcap-limit: {e}")))?
        .0;
    let snaplen = match snaplen {
        Some(s) => {
            let b = Bytes::parse(s)
                .map_err(|e| usage(format!("--pcap-snaplen: {e}")))?
                .0;
            if !(20..=MAX_SNAPLEN as u64).contains(&b) {
                return Err(usage(format!(
                    "--pcap-snaplen {s}: must be from 20 (an IPv4 header) to {MAX_SNAPLEN} bytes"
                )));
            }
            b as u32
        }
        None => MAX_SNAPLEN,
    };
    path.map(|p| {
        let path =
            std::path::absolute(p).map_err(|e| usage(format!("--pcap {}: {e}", p.display())))?;
        Ok(PcapOptions {
            path,
            snaplen,
            limit,
        })
    })
    .transpose()
}

/// Refuses, before anything runs, a case whose payload the server its run starts would
/// refuse (the protocol states the limit: raw's is the embedded reference server's; a
/// server given with `--server` states its own limit per case). `origin` names where the
/// payload was set, for the message.
pub fn check_embedded_payloads(scenario: &Scenario, origin: &str) -> Result<(), RunError> {
    for case in crate::plan(scenario) {
        let Some((_, p)) = case.point.iter().find(|(n, _)| n == "payload") else {
            continue;
        };
        let Some(limit) = crate::registry::of(&case).max_payload() else {
            continue;
        };
        if p.value.as_bytes().is_some_and(|b| b > limit) {
            return Err(usage(format!(
                "{origin} {p}: above the embedded server's limit of {}; for larger payloads \
                 run `wirebench serve --max-payload SIZE` and pass its address with --server",
                Bytes(limit)
            )));
        }
    }
    Ok(())
}

/// `a, b,,c` as `[a, b, c]`.
fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

fn usage(msg: impl Into<String>) -> RunError {
    RunError::Usage(msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(req: RunRequest) -> String {
        match prepare(&req) {
            Ok(_) => panic!("{req:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    fn with(params: &[(&str, &str)]) -> RunRequest {
        RunRequest {
            params: params
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            out: Some("never-written".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_default_request_is_the_default_scenario() {
        let p = prepare(&with(&[])).unwrap();
        assert_eq!(p.scenario.name, "default");
        assert_eq!(p.options.server, None);
        assert_eq!(p.options.pcap, None);
        assert_eq!(p.preflight.cases, crate::plan(&p.scenario).len());
        assert!(!p.preflight.needs_confirmation());
    }

    #[test]
    fn a_command_line_protocol_or_workload_replaces_the_scenarios_description() {
        let own = prepare(&with(&[("payload", "64")])).unwrap();
        assert!(
            own.scenario.description.starts_with("Raw TCP"),
            "{}",
            own.scenario.description
        );
        let p = prepare(&with(&[("protocol", "xmpp"), ("workload", "pingpong")])).unwrap();
        assert_eq!(
            p.scenario.description,
            "workload pingpong, protocol xmpp (from the command line, on the default \
             scenario's other settings)"
        );
    }

    #[test]
    fn flags_are_refused_with_their_names() {
        let r = |f: fn(&mut RunRequest)| {
            let mut req = with(&[]);
            f(&mut req);
            refused(req)
        };
        assert_eq!(r(|q| q.repeat = Some(0)), "--repeat 0: must be at least 1");
        assert!(r(|q| q.timeout = Some("0".into())).starts_with("--timeout 0: must be longer"));
        assert!(r(|q| q.timeout = Some("x".into())).starts_with("--timeout: \"x\""));
        assert!(r(|q| q.tables = Some("bogus".into())).starts_with("--tables: \"bogus\""));
        assert!(r(|q| q.columns = Some("bogus".into())).starts_with("--columns: \"bogus\""));
        assert!(r(|q| q.parts = Some("x".into())).starts_with("--part: "));
        assert!(r(|q| q.server = Some("h:0".into())).starts_with("--server \"h:0\": port 0"));
        assert!(r(|q| q.max_case_time = "x".into()).starts_with("--max-case-time: \"x\""));
        assert!(r(|q| q.scenario = Some("nosuch".into())).contains("built-in scenarios: default"));
    }

    #[test]
    fn payloads_above_the_embedded_servers_limit_are_refused_unless_a_server_is_given() {
        let mut req = with(&[("payload", "1GiB")]);
        assert!(
            refused(req.clone())
                .starts_with("--payload 1GiB: above the embedded server's limit of 16MiB")
        );
        req.server = Some("127.0.0.1".into());
        let p = prepare(&req).unwrap();
        assert_eq!(p.options.server.as_deref(), Some("127.0.0.1:7420"));
    }

    #[test]
    fn pcap_options_check_limit_and_snaplen() {
        let p = pcap_options(Some(Path::new("x.pcap")), "1MiB", Some("128"))
            .unwrap()
            .unwrap();
        assert!(p.path.is_absolute());
        assert_eq!((p.limit, p.snaplen), (1 << 20, 128));
        assert_eq!(pcap_options(None, PCAP_LIMIT, None).unwrap(), None);
        let err = |limit: &str, snap: Option<&str>| {
            pcap_options(None, limit, snap).unwrap_err().to_string()
        };
        assert!(err("x", None).starts_with("--pcap-limit: \"x\""));
        assert_eq!(
            err(PCAP_LIMIT, Some("10")),
            format!("--pcap-snaplen 10: must be from 20 (an IPv4 header) to {MAX_SNAPLEN} bytes")
        );
    }
}
