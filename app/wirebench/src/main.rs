//! The `wirebench` command: parses arguments ([`cli`]), calls the library that owns each
//! command (the runner for `run`, `wirebench_net` for `serve`, `wirebench_lab` for
//! `shell` and `lab`, `wirebench_x2x` for `x2x`, [`k8s`] for `k8s`), and renders what comes back
//! ([`render`]). No measurement logic lives here; signal handling does, since it is
//! the process's.

mod cli;
mod k8s;
mod render;

use anyhow::{Context, Result, bail};
use cli::{Command, CompareArgs, K8sArgs, LabCommand, RunArgs, ServeArgs, ShellArgs};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use wirebench_model::Status;
use wirebench_raw_server::Server;

fn main() -> ExitCode {
    let cli = cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Serve(args) => serve(*args),
        Command::XmppWorker { index } => xmpp_worker(index),
        Command::XmppLoadWorker => xmpp_load_worker(),
        Command::Shell(args) => shell(args),
        Command::Lab { command } => lab(command),
        Command::Report { dir, charts_from } => report(&dir, charts_from.as_deref()),
        Command::X2x { config } => x2x(&config),
        Command::Converter {
            listen,
            allow,
            no_tfo,
        } => converter(&listen, &allow, !no_tfo),
        Command::ConverterClient {
            listen,
            via,
            no_tfo,
            first_data_wait,
        } => converter_client(&listen, &via, !no_tfo, &first_data_wait),
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
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wirebench: error: {e:#}");
            ExitCode::from(2)
        }
    }
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
    let shutdown = Arc::new(AtomicBool::new(false));
    {
        let flag = shutdown.clone();
        let presses = AtomicUsize::new(0);
        ctrlc::set_handler(move || {
            if presses.fetch_add(1, Ordering::SeqCst) == 0 {
                eprintln!(
                    "\nwirebench: stopping; finished cases are kept (Ctrl-C again to quit at once)"
                );
                flag.store(true, Ordering::SeqCst);
            } else {
                // Drop will not run: remove the lab's namespaces here.
                wirebench_lab::netns::cleanup_registered();
                std::process::exit(130);
            }
        })
        .context("cannot install the Ctrl-C handler")?;
    }
    let (scenario, opts) = (&prepared.scenario, &prepared.options);
    let show_bars = !args.quiet && std::io::stderr().is_terminal();
    let observer = render::Terminal::new(scenario, show_bars, args.json);
    let summary = wirebench_runner::run(scenario, opts, &shutdown, &observer)?;
    render::run_summary(&summary, args.json, &render::study_metrics(scenario));
    render::skipped(&summary, &prepared.preflight.prerequisites);
    if !args.no_report && !summary.records.is_empty() {
        match wirebench_report::write_report(&opts.out) {
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

fn serve(args: ServeArgs) -> Result<ExitCode> {
    use wirebench_plugin_xmpp::serve::XmppServer;
    // Every argument is checked before anything listens.
    let xmpp_cfg = args.xmpp_config()?;
    let web = args.web_endpoints()?;
    let upstream_arg = match &args.xmpp_upstream {
        Some(a) => Some(
            a.parse::<std::net::SocketAddr>()
                .map_err(|_| anyhow::anyhow!("--xmpp-upstream {a}: expected IP:PORT"))?,
        ),
        None => None,
    };
    let (listen, cfg) = args.config()?;
    let server =
        Server::bind(listen.as_str(), cfg).with_context(|| format!("cannot listen on {listen}"))?;
    eprintln!(
        "wirebench serve: listening on {} (Ctrl-C to stop)",
        server.local_addr()
    );
    let max_payload = wirebench_model::Bytes::parse(&args.max_payload)
        .context("--max-payload")?
        .0;
    for also in &args.also {
        let Some((name, addr)) = also.split_once('=') else {
            anyhow::bail!("--also {also:?}: write NAME=ADDR, e.g. --also http=127.0.0.1:8080");
        };
        let Some(p) = wirebench_runner::registry::REGISTRY
            .iter()
            .find(|p| p.name() == name)
        else {
            anyhow::bail!(
                "--also {also:?}: no protocol {name:?}; protocols: {}",
                wirebench_runner::registry::names().join(", ")
            );
        };
        let l = std::net::TcpListener::bind(addr)
            .with_context(|| format!("--also {also}: cannot listen on {addr}"))?;
        let at = l.local_addr()?;
        match p.serve_alone(l, max_payload as usize) {
            Some(Ok(())) => eprintln!("wirebench serve: {name} on {at}"),
            Some(Err(e)) => anyhow::bail!("--also {also}: {e}"),
            None => anyhow::bail!(
                "--also {also}: {name} has no server of its own to run alone (its cases use the reference server or third-party servers)"
            ),
        }
    }
    let xmpp_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let xmpp = match xmpp_cfg {
        Some(cfg) => {
            let at = cfg.listen;
            let cfg_accounts = cfg.accounts.count();
            let xs = XmppServer::bind(cfg).with_context(|| format!("XMPP server on {at}"))?;
            let users = match &args.xmpp_users_file {
                Some(f) => format!("{} accounts from {}", cfg_accounts, f.display()),
                None => format!(
                    "users user1..user{n}, passwords pass1..pass{n}",
                    n = args.xmpp_users
                ),
            };
            eprintln!(
                "wirebench serve: XMPP for {} ({users}{})\n\
                 wirebench serve: XMPP layout: {}",
                args.xmpp_domain,
                if args.xmpp_tls {
                    ", STARTTLS with a self-signed certificate"
                } else {
                    ""
                },
                xs.layout(),
            );
            if !args.quiet {
                xmpp_progress(xs.stats.clone(), xmpp_stop.clone());
            }
            let stats = xs.stats.clone();
            let mut bound = xs.local_addr()?;
            if bound.ip().is_unspecified() {
                bound.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            Some((xs.spawn(xmpp_stop.clone())?, stats, bound))
        }
        None => None,
    };
    let mut endpoints = Vec::new();
    if let Some(upstream) = upstream_arg.or(xmpp.as_ref().map(|x| x.2)) {
        for (kind, addr) in web {
            let l = std::net::TcpListener::bind(addr.as_str())
                .with_context(|| format!("cannot listen on {addr}"))?;
            let what = match kind {
                wirebench_plugin_xmpp::web::Kind::WebSocket { .. } => {
                    "XMPP over WebSocket (RFC 7395)"
                }
                wirebench_plugin_xmpp::web::Kind::Bosh(_) => "XMPP over BOSH (XEP-0124/0206)",
                wirebench_plugin_xmpp::web::Kind::SockJs(_) => "XMPP over SockJS 0.3.3",
            };
            let e = wirebench_plugin_xmpp::web::spawn(l, upstream, kind, !args.quiet)?;
            let url = if what.contains("BOSH") {
                format!("http://{}/http-bind", e.addr)
            } else if what.contains("SockJS") {
                format!("http://{}/xmpp", e.addr)
            } else {
                format!("ws://{}/xmpp-websocket", e.addr)
            };
            let any = if what.contains("SockJS") {
                "any prefix"
            } else {
                "any path"
            };
            eprintln!("wirebench serve: {what} on {url} ({any}), in front of {upstream}");
            endpoints.push((what, e));
        }
    }
    // Ctrl-C or SIGTERM: stop accepting, let every session see the flag at its next
    // tick and close, then exit 0 (a second signal exits at once).
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let presses = AtomicUsize::new(0);
    ctrlc::set_handler(move || {
        if presses.fetch_add(1, Ordering::SeqCst) == 0 {
            let _ = tx.send(());
        } else {
            std::process::exit(130);
        }
    })
    .context("cannot install the Ctrl-C handler")?;
    server
        .run_until(|| {
            let _ = rx.recv();
            eprintln!("wirebench serve: stopping");
        })
        .context("cannot start the server thread")?;
    for (what, e) in endpoints {
        eprintln!("wirebench serve: {what} totals: {}", e.stats.line());
        e.stop();
    }
    xmpp_stop.store(true, Ordering::SeqCst);
    if let Some((t, stats, _)) = xmpp {
        let r = t.join();
        eprintln!(
            "wirebench serve: XMPP totals: {}",
            xmpp_totals(&stats.snapshot())
        );
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => bail!("the XMPP server failed: {e}"),
            Err(_) => bail!("the XMPP server panicked"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The counters a user of `serve --xmpp` watches, in one line.
fn xmpp_totals(s: &wirebench_plugin_xmpp::serve::StatsSnapshot) -> String {
    format!(
        "{} open, {} logged in, {} stanzas routed ({} to another worker), {} unroutable; \
         closed: {} on handshake timeout, {} slow readers, {} on stream errors, {} over \
         the session cap",
        s.open,
        s.bound,
        s.routed,
        s.routed_across,
        s.unroutable,
        s.closed_timeout,
        s.closed_slow,
        s.closed_error,
        s.refused_full
    )
}

/// Prints the XMPP counters every 5 s while they change, until `stop`.
fn xmpp_progress(stats: Arc<wirebench_plugin_xmpp::serve::ServerStats>, stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut last = stats.snapshot();
        let mut waited = 0;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            waited += 1;
            if waited < 50 {
                continue;
            }
            waited = 0;
            let now = stats.snapshot();
            if now != last {
                eprintln!("wirebench serve: XMPP: {}", xmpp_totals(&now));
                last = now;
            }
        }
    });
}

/// A generator process of an XMPP load case: runs its part until done or SIGTERM.
/// Asks the kernel to send this process SIGTERM when the process that started it ends,
/// however it ends (a second Ctrl-C, SIGKILL): a worker never outlives its wirebench.
fn die_with_parent() {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and changes nothing else.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    // The parent may have gone before the call: then this process is already orphaned.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } == 1 {
        // SAFETY: raising a signal at this process.
        unsafe { libc::raise(libc::SIGTERM) };
    }
}

fn xmpp_load_worker() -> Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // The parent sends SIGTERM (Ctrl-C reaches the whole group): close the sessions,
    // report what was measured, exit.
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst))
        .context("cannot install the signal handler")?;
    die_with_parent();
    wirebench_plugin_xmpp::load_case::worker_main(&stop).context("XMPP load generator")?;
    Ok(ExitCode::SUCCESS)
}

/// A worker process of `serve --xmpp`: serves until its parent stops it.
fn xmpp_worker(index: usize) -> Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // Ctrl-C reaches the whole process group; the parent sends SIGTERM. Both end here.
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst))
        .context("cannot install the signal handler")?;
    die_with_parent();
    wirebench_plugin_xmpp::serve::procs::worker_main(index, &stop)
        .with_context(|| format!("XMPP worker {index}"))?;
    Ok(ExitCode::SUCCESS)
}

fn shell(args: ShellArgs) -> Result<ExitCode> {
    let (up, down) = args.links()?;
    let pcap = wirebench_runner::request::pcap_options(
        args.pcap.as_deref(),
        &args.pcap_limit,
        args.pcap_snaplen.as_deref(),
    )?;
    // Ctrl-C reaches the command directly (same process group); SIGTERM sent to us is
    // passed on. Either way the lab waits for the command, then tears the link down.
    ctrlc::set_handler(wirebench_lab::shell::terminate_child)
        .context("cannot install the signal handler")?;
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
        match wirebench_report::write_report(&out) {
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
    let have = wirebench_report::compare::parameters(runs);
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
    use wirebench_report::compare;
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
    let c = compare::compare_by(&a, b.as_deref(), &by, threshold);
    if c.rows.is_empty() {
        let Some(b_records) = &b else {
            bail!(
                "no two cases of {} differ only in {}; nothing to compare",
                args.a.display(),
                by.join(", ")
            );
        };
        let differ = compare::differing(&a, b_records);
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
        wirebench_report::compare::table(&c, args.all, wirebench_report::summary::terminal_width())
    );
    if let Some(path) = &args.html {
        wirebench_report::atomic_write(
            path,
            wirebench_report::compare::html(&c, &args.a, args.b.as_deref().unwrap_or(&args.a))
                .as_bytes(),
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

fn converter_client(listen: &str, via: &str, tfo: bool, wait: &str) -> Result<ExitCode> {
    use wirebench_plugin_convert::local::{self, LocalConfig};
    let via: std::net::SocketAddr = via
        .parse()
        .map_err(|e| anyhow::anyhow!("--via {via:?}: {e} (an ADDR:PORT, e.g. 192.0.2.10:5124)"))?;
    let first_data_wait = wirebench_model::parse_duration(wait)
        .map_err(|e| anyhow::anyhow!("--first-data-wait: {e}"))?;
    let l = std::net::TcpListener::bind(listen)
        .with_context(|| format!("cannot listen on {listen}"))?;
    if tfo
        && let Some(p) =
            wirebench_net::sock::tfo_sysctl_problem(wirebench_net::sock::tfo_sysctl(), true, false)
    {
        eprintln!("wirebench converter-client: warning: {p}");
    }
    eprintln!(
        "wirebench converter-client: SOCKS5 on {}, through the converter {via}{} (Ctrl-C to stop)",
        l.local_addr()?,
        if tfo { " with TCP Fast Open" } else { "" }
    );
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("cannot install the Ctrl-C handler")?;
    }
    let cfg = LocalConfig {
        via,
        tfo,
        first_data_wait,
        log: true,
    };
    local::run_standalone(l, cfg, stop).map_err(|e| anyhow::anyhow!(e))?;
    eprintln!("wirebench converter-client: stopped");
    Ok(ExitCode::SUCCESS)
}

fn converter(listen: &str, allow: &str, tfo: bool) -> Result<ExitCode> {
    use wirebench_plugin_convert::converter::{self, Allow, Config};
    let allow_list = Allow::parse(allow).map_err(|e| anyhow::anyhow!("--allow: {e}"))?;
    let l = std::net::TcpListener::bind(listen)
        .with_context(|| format!("cannot listen on {listen}"))?;
    if tfo
        && let Some(p) =
            wirebench_net::sock::tfo_sysctl_problem(wirebench_net::sock::tfo_sysctl(), true, true)
    {
        eprintln!("wirebench converter: warning: {p}");
    }
    eprintln!(
        "wirebench converter: listening on {}, connecting to {allow} only{} (Ctrl-C to stop)",
        l.local_addr()?,
        if tfo { ", TCP Fast Open offered" } else { "" }
    );
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("cannot install the Ctrl-C handler")?;
    }
    let cfg = Config {
        allow: allow_list,
        tfo,
        log: true,
        legs: None,
    };
    converter::run_standalone(l, cfg, stop).map_err(|e| anyhow::anyhow!(e))?;
    eprintln!("wirebench converter: stopped");
    Ok(ExitCode::SUCCESS)
}

fn x2x(path: &Path) -> Result<ExitCode> {
    let cfg = wirebench_x2x::Config::from_file(path)?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("cannot install the Ctrl-C handler")?;
    }
    let stats = wirebench_x2x::run(cfg, stop)?;
    eprintln!("x2x: stopped; {stats:?}");
    Ok(ExitCode::SUCCESS)
}
