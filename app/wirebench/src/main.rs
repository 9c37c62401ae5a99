//! The `wirebench` command: parses arguments ([`cli`]), calls the library that owns each
//! command (the runner for `run`, `wirebench_net` for `serve`, `wirebench_lab` for
//! `shell` and `lab`, [`k8s`] for `k8s`, a plugin for its own commands and `serve`
//! endpoints, reached through the runner's registry), and renders what comes back
//! ([`render`]). No measurement logic lives here; signal handling does, since it is the
//! process's: one handler ([`on_signal`]) triggers the one [`Shutdown`] every command
//! receives.

mod cli;
mod k8s;
mod render;

use anyhow::{Context, Result, bail};
use cli::{Command, CompareArgs, K8sArgs, LabCommand, RunArgs, ServeArgs, ShellArgs};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use wirebench_model::{Shutdown, Status};

fn main() -> ExitCode {
    let (cli, serve_flags) = match cli::parse() {
        cli::Invocation::Builtin(cli, serve) => (cli, serve),
        cli::Invocation::Plugin(command, flags) => return exit(plugin_command(command, &flags)),
    };
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Serve(args) => serve(*args, &serve_flags.unwrap_or_default()),
        Command::Shell(args) => shell(args),
        Command::Lab { command } => lab(command),
        Command::Report { dir, charts_from } => report(&dir, charts_from.as_deref()),
        Command::Compare(args) => compare(args),
        Command::Merge {
            dirs,
            out,
            no_report,
        } => merge(&dirs, out, no_report),
        Command::K8s(args) => k8s_manifests(&args),
        Command::Doctor(args) => doctor(*args),
        Command::Scenarios => {
            render::scenarios(&wirebench_runner::catalog::scenarios());
            Ok(ExitCode::SUCCESS)
        }
        Command::Protocols => {
            render::protocols(&wirebench_runner::catalog::protocols());
            Ok(ExitCode::SUCCESS)
        }
        Command::Links => {
            render::links(wirebench_link::NAMED_LINKS);
            Ok(ExitCode::SUCCESS)
        }
    };
    exit(result)
}

fn exit(result: Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wirebench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// What Ctrl-C (SIGINT) and SIGTERM do while a command runs.
#[derive(Clone, Copy, PartialEq)]
enum OnSignal {
    /// `run`: the first says so and stops gracefully (finished cases are kept); the
    /// second removes the lab's namespaces (Drop will not run) and exits 130.
    Run,
    /// `serve`: the first stops it gracefully; the second exits 130.
    Serve,
    /// A plugin's command (a gateway, a worker process): each stops it gracefully.
    Stop,
    /// `shell`: Ctrl-C reaches the command directly (same process group); SIGTERM sent to
    /// us is passed on. Either way the lab waits for the command, then tears the link down.
    Shell,
}

/// Installs the process's one signal handler: it triggers `shutdown` as `on` says.
fn on_signal(shutdown: &Shutdown, on: OnSignal) -> Result<()> {
    let shutdown = shutdown.clone();
    let presses = AtomicUsize::new(0);
    ctrlc::set_handler(move || {
        let first = presses.fetch_add(1, Ordering::SeqCst) == 0;
        match on {
            OnSignal::Shell => wirebench_lab::shell::terminate_child(),
            OnSignal::Stop => shutdown.trigger(),
            OnSignal::Run | OnSignal::Serve if first => {
                if on == OnSignal::Run {
                    eprintln!(
                        "\nwirebench: stopping; finished cases are kept (Ctrl-C again to quit at once)"
                    );
                }
                shutdown.trigger();
            }
            OnSignal::Run => {
                wirebench_lab::netns::cleanup_registered();
                std::process::exit(130);
            }
            OnSignal::Serve => std::process::exit(130),
        }
    })
    .context("cannot install the Ctrl-C handler")
}

/// A plugin's own command, until done or stopped.
fn plugin_command(
    command: &wirebench_runner::registry::PluginCommand,
    flags: &clap::ArgMatches,
) -> Result<ExitCode> {
    let shutdown = Shutdown::new();
    on_signal(&shutdown, OnSignal::Stop)?;
    Ok(ExitCode::from((command.run)(flags, &shutdown)?))
}

fn run(args: RunArgs) -> Result<ExitCode> {
    let prepared = wirebench_runner::prepare(&args.request())?;
    render::preflight(&prepared.preflight);
    // Before the time check: nothing is worth waiting for that cannot start.
    prepared
        .preflight
        .prerequisites
        .require(args.skip_missing, args.dry_run)?;
    prepared.preflight.confirm(args.yes || args.dry_run)?;
    if args.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    let shutdown = Shutdown::new();
    on_signal(&shutdown, OnSignal::Run)?;
    let (scenario, opts) = (&prepared.scenario, &prepared.options);
    let show_bars = !args.quiet && std::io::stderr().is_terminal();
    let observer = render::Terminal::new(scenario, show_bars, args.json);
    let summary = wirebench_runner::run(scenario, opts, shutdown.flag(), &observer)?;
    render::run_summary(&summary, args.json, &render::study_metrics(scenario));
    render::skipped(&summary, &prepared.preflight.prerequisites);
    if !args.no_report && !summary.records.is_empty() {
        match wirebench_report::write_report(&opts.out, &wirebench_runner::report_declared()) {
            Ok(w) => eprintln!("report: {} ({} charts)", w.html.display(), w.charts),
            // The results are safe; a report problem must not turn a good run red.
            Err(e) => eprintln!("wirebench: warning: no report: {e} (results are kept)"),
        }
    }
    eprintln!("results: {}", opts.out.display());
    Ok(ExitCode::from(summary.exit_code()))
}

/// `wirebench doctor`: every prerequisite of the planned cases (or of every built-in
/// scenario's), or the steps that install the missing ones.
fn doctor(args: cli::DoctorArgs) -> Result<ExitCode> {
    if args.packages {
        for p in wirebench_runner::prereq::debian_packages() {
            println!("{p}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut req = args.run.request();
    // A pod's shard variables choose a slice of the cases, not what they need.
    (req.shard, req.barrier, req.start_at) = (None, None, None);
    let all = req.scenario.is_none() && req.parts.is_none() && req.params.is_empty();
    let needs = wirebench_runner::prereq::doctor((!all).then_some(&req))?;
    if args.install_plan {
        for step in wirebench_runner::prereq::install_plan(&needs) {
            println!("{step}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let scope = match &req.scenario {
        _ if all => "every built-in scenario".to_string(),
        Some(s) => s.clone(),
        None => "the default scenario".to_string(),
    };
    let install = wirebench_runner::prereq::install_command(&req);
    render::doctor(&needs, &scope, all, &install);
    Ok(if needs.iter().all(|n| n.present()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `wirebench k8s`: the manifests to stdout or a file; what to do next to stderr.
fn k8s_manifests(args: &K8sArgs) -> Result<ExitCode> {
    let spec = args.spec()?;
    let yaml = k8s::manifests(&spec)?;
    let file = if args.out.as_os_str() == "-" {
        print!("{yaml}");
        "FILE".to_string()
    } else {
        std::fs::write(&args.out, &yaml)
            .with_context(|| format!("cannot write {}", args.out.display()))?;
        eprintln!("wirebench k8s: wrote {}", args.out.display());
        args.out.display().to_string()
    };
    eprintln!(
        "wirebench k8s: {} shards of {}{}; next: kubectl apply -f {file} (docs/cluster.md)",
        spec.shards,
        spec.name,
        match &spec.target {
            Some(t) => format!(" loading {t}"),
            None => String::new(),
        },
    );
    Ok(ExitCode::SUCCESS)
}

fn serve(args: ServeArgs, flags: &clap::ArgMatches) -> Result<ExitCode> {
    let ban_for = wirebench_model::parse_duration(&args.ban_for).context("--ban-for")?;
    if ban_for.is_zero() && args.ban_after > 0 {
        anyhow::bail!("--ban-for must be more than 0 (or turn bans off with --ban-after 0)");
    }
    wirebench_net::ban::configure(wirebench_net::ban::Policy {
        strikes: args.ban_after,
        lifetime: ban_for,
        ..wirebench_net::ban::DEFAULT_POLICY
    });
    // Ctrl-C or SIGTERM: stop accepting, let every session see the flag at its next
    // tick and close, then exit 0 (a second signal exits at once). Installed before
    // anything listens: a signal that arrives while the servers start (a script that
    // stops serve once it has printed its address) is a stop like any other, not the
    // default action's exit 143.
    let shutdown = Shutdown::new();
    on_signal(&shutdown, OnSignal::Serve)?;
    // Every argument is checked before anything listens: the plugins' first.
    let mut plans = Vec::new();
    for p in wirebench_runner::registry::REGISTRY {
        if let Some(plan) = p.serve_plan(flags, args.quiet)? {
            plans.push(plan);
        }
    }
    let listen = args.listen()?;
    let server = wirebench_runner::registry::REGISTRY
        .iter()
        .find_map(|p| p.serve_main(&listen, &args.max_payload, !args.quiet))
        .ok_or_else(|| anyhow::anyhow!("no protocol provides the reference server"))??;
    eprintln!(
        "wirebench serve: listening on {} (Ctrl-C to stop)",
        server.local_addr()
    );
    let max_payload = wirebench_model::Bytes::parse(&args.max_payload)
        .context("--max-payload")?
        .0;
    let header_timeout = wirebench_model::parse_duration(&args.also_header_timeout)
        .context("--also-header-timeout")?;
    if header_timeout.is_zero() {
        anyhow::bail!("--also-header-timeout must be more than 0 (every request needs time)");
    }
    if args.also_max_connections == 0 {
        anyhow::bail!("--also-max-connections must be at least 1");
    }
    if args.also_max_streams == 0 {
        anyhow::bail!("--also-max-streams must be at least 1 (a call is a stream)");
    }
    for also in &args.also {
        let limits = |what: String| wirebench_protocol::AloneLimits {
            max_payload: max_payload as usize,
            header_timeout,
            connections: wirebench_net::cap::ConnCap::new(
                what,
                args.also_max_connections,
                !args.quiet,
            ),
            max_streams: args.also_max_streams,
            log: !args.quiet,
        };
        serve_alone(also, limits, args.proxy_threads)?;
    }
    // What a burst of clients left behind goes back to the system (see trim.rs).
    wirebench_net::trim::spawn().context("starting the memory trimmer thread")?;
    let mut running = Vec::new();
    for plan in plans {
        running.push(plan.start(&shutdown)?);
    }
    server.run_until(Box::new(|| {
        shutdown.wait();
        eprintln!("wirebench serve: stopping");
    }))?;
    for r in running {
        r.stop()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `serve --also NAME=ADDR`: that protocol's own server, alone; a proxy on `threads`
/// threads (0: one per core), each with its own listener on the port; `limits` for the
/// server's name and address.
fn serve_alone(
    also: &str,
    limits: impl FnOnce(String) -> wirebench_protocol::AloneLimits,
    threads: usize,
) -> Result<()> {
    let Some((name, addr)) = also.split_once('=') else {
        anyhow::bail!("--also {also:?}: write NAME=ADDR, e.g. --also http=127.0.0.1:8080");
    };
    let Some(p) = wirebench_runner::registry::get(name) else {
        anyhow::bail!(
            "--also {also:?}: no protocol {name:?}; protocols: {}",
            wirebench_runner::registry::names().join(", ")
        );
    };
    let at: std::net::SocketAddr = addr.trim().parse().map_err(|_| {
        anyhow::anyhow!("--also {also}: expected NAME=IP:PORT, e.g. http=127.0.0.1:8080")
    })?;
    let no_server = || {
        anyhow::anyhow!(
            "--also {also}: {name} has no server of its own to run alone (its cases use the reference server or third-party servers)"
        )
    };
    if p.transport() == wirebench_protocol::Transport::Udp {
        let socket = std::net::UdpSocket::bind(at)
            .with_context(|| format!("--also {also}: cannot bind UDP {addr}"))?;
        let at = socket.local_addr()?;
        let limits = limits(format!("wirebench serve: {name} udp {at}"));
        match p.serve_alone_udp(socket, &limits) {
            Some(Ok(())) => eprintln!("wirebench serve: {name} on udp {at}"),
            Some(Err(e)) => anyhow::bail!("--also {also}: {e}"),
            None => return Err(no_server()),
        }
        return Ok(());
    }
    let listeners = if p.serve_alone_per_core() {
        let n = wirebench_net::threads::per_core(threads);
        wirebench_net::threads::reuseport_listeners(at, n)
    } else {
        wirebench_net::sock::listener(at).map(|l| vec![l])
    }
    .with_context(|| format!("--also {also}: cannot listen on {addr}"))?;
    let at = listeners[0].local_addr()?;
    let limits = limits(format!("wirebench serve: {name} {at}"));
    for l in listeners {
        match p.serve_alone_limited(l, &limits) {
            Some(Ok(())) => {}
            Some(Err(e)) => anyhow::bail!("--also {also}: {e}"),
            None => return Err(no_server()),
        }
    }
    eprintln!("wirebench serve: {name} on {at}");
    Ok(())
}

fn shell(args: ShellArgs) -> Result<ExitCode> {
    let (up, down) = args.links()?;
    let pcap = wirebench_runner::request::pcap_options(
        args.pcap.as_deref(),
        &args.pcap_limit,
        args.pcap_snaplen.as_deref(),
    )?;
    on_signal(&Shutdown::new(), OnSignal::Shell)?;
    let outcome = wirebench_lab::shell::run(
        up.to_params(),
        down.to_params(),
        args.seed,
        pcap.as_ref(),
        &args.command,
        |host, addrs| render::shell_started(&args.command[0], host, addrs, &up, &down),
    )?;
    render::shell_finished(&outcome, pcap.as_ref());
    Ok(ExitCode::from(outcome.exit_code()))
}

fn lab(cmd: LabCommand) -> Result<ExitCode> {
    match cmd {
        LabCommand::List => render::lab_list(&wirebench_lab::netns::list_owners()),
        LabCommand::Clean { all } => render::lab_cleaned(&wirebench_lab::netns::clean(all)?),
    }
    Ok(ExitCode::SUCCESS)
}

fn report(dir: &Path, charts_from: Option<&str>) -> Result<ExitCode> {
    if let Some(arg) = charts_from {
        let scenario = wirebench_runner::request::load_scenario(Some(arg))?;
        let mut info = wirebench_report::RunInfo::read(dir)
            .with_context(|| format!("reading {}", dir.join("run.json").display()))?;
        info.charts = scenario.charts.clone();
        info.write(dir)
            .with_context(|| format!("writing {}", dir.join("run.json").display()))?;
    }
    let w = wirebench_runner::write_report(dir)?;
    println!(
        "{} ({} charts; SVG and PNG in {})",
        w.html.display(),
        w.charts,
        dir.join("charts").display()
    );
    Ok(ExitCode::SUCCESS)
}

fn merge(dirs: &[PathBuf], out: Option<PathBuf>, no_report: bool) -> Result<ExitCode> {
    let out = match out {
        Some(o) => o,
        None => {
            let name = std::fs::read_to_string(dirs[0].join(wirebench_runner::shard::FILE))
                .ok()
                .and_then(|t| serde_json::from_str::<wirebench_runner::shard::ShardFile>(&t).ok())
                .map_or("sharded".to_string(), |f| f.scenario);
            wirebench_runner::default_out_dir(&format!("{name}-merged"))
        }
    };
    let merged = wirebench_runner::merge::merge(dirs, &out)?;
    render::merged(&merged);
    if !no_report && !merged.records.is_empty() {
        match wirebench_report::write_report(&out, &wirebench_runner::report_declared()) {
            Ok(w) => eprintln!("report: {} ({} charts)", w.html.display(), w.charts),
            Err(e) => eprintln!("wirebench: warning: no report: {e} (results are kept)"),
        }
    }
    eprintln!("results: {}", out.display());
    let ok = merged.records.iter().all(|r| r.status == Status::Ok);
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--by` names as the records have them: `link-delay` is `link.delay`; a name no case
/// has is refused with the parameters there are.
fn compare_by_names(given: &[String], runs: &[&[wirebench_model::Record]]) -> Result<Vec<String>> {
    let have = wirebench_compare::parameters(runs);
    let mut out = Vec::new();
    for g in given.iter().map(|g| g.trim()).filter(|g| !g.is_empty()) {
        let name = g.trim_start_matches("--");
        let dotted = name.replace('-', ".");
        let found = [name, dotted.as_str()]
            .into_iter()
            .find(|n| have.iter().any(|h| h == n));
        let Some(found) = found else {
            let hint = wirebench_model::hint::closest(&dotted, have.iter().map(String::as_str))
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            bail!(
                "--by {g}: no case has this parameter{hint}; parameters: {}",
                have.join(", ")
            );
        };
        if !out.iter().any(|o| o == found) {
            out.push(found.to_string());
        }
    }
    Ok(out)
}

fn compare(args: CompareArgs) -> Result<ExitCode> {
    let threshold = args.threshold()?;
    let a = wirebench_report::html::read_records(&args.a)?;
    let b = args
        .b
        .as_ref()
        .map(|b| wirebench_report::html::read_records(b))
        .transpose()?;
    let by = compare_by_names(&args.by, &[&a, b.as_deref().unwrap_or_default()])?;
    if b.is_none() && by.is_empty() {
        bail!(
            "give a second results directory, or --by PARAM to compare the cases of {} that \
             differ only in PARAM",
            args.a.display()
        );
    }
    let c = wirebench_compare::compare_by(&a, b.as_deref(), &by, threshold);
    if c.rows.is_empty() {
        let Some(b_records) = &b else {
            bail!(
                "no two cases of {} differ only in {}; nothing to compare",
                args.a.display(),
                by.join(", ")
            );
        };
        let differ = wirebench_compare::differing(&a, b_records);
        let hint = match differ.as_slice() {
            [] => String::new(),
            d => format!(
                "; the runs differ in {}: `--by {}` matches cases ignoring it",
                d.join(", "),
                d.join(",")
            ),
        };
        bail!(
            "no case of {} matches a case of {} (same parameters{}); nothing to compare{hint}",
            args.a.display(),
            args.b.as_deref().unwrap_or(&args.a).display(),
            if by.is_empty() {
                String::new()
            } else {
                format!(" but {}", by.join(", "))
            }
        );
    }
    print!(
        "{}",
        wirebench_compare::table(&c, args.all, wirebench_report::summary::terminal_width())
    );
    if let Some(path) = &args.html {
        wirebench_report::atomic_write(
            path,
            wirebench_compare::html(&c, &args.a, args.b.as_deref().unwrap_or(&args.a)).as_bytes(),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("comparison: {}", path.display());
    }
    if args.fail_on_change && !c.repeated() {
        eprintln!(
            "--fail-on-change: cases run once cannot fail; run both with --repeat 5 to check them"
        );
    }
    Ok(if args.fail_on_change && c.flagged() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
