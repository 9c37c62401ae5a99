//! The `wirebench` command: parses arguments into a scenario, hands it to the runner, and
//! renders what comes back. No measurement logic lives here.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirebench_model::{Bytes, Record, Status, parse_duration};
use wirebench_net::{Server, ServerConfig};
use wirebench_report::summary::human;
use wirebench_runner::{BUILTIN, Case, Observer, RunOptions, Scenario};

/// Default control port of `wirebench serve`.
const DEFAULT_PORT: u16 = 7420;

const RUN_EXAMPLES: &str = "Examples:\n  \
    wirebench run                                  # the built-in default scenario\n  \
    wirebench run --workload pingpong --payload 2,100,1500 --rounds 10k\n  \
    wirebench run --workload stream --mode oneway,echo --payload 100,10KiB,1MiB --repeat 3\n  \
    wirebench run payload-sweep --tables mode --columns 'throughput.*'\n  \
    wirebench run my.toml --part latency --out results/today\n  \
    wirebench run --server 127.0.0.1:7420          # against a running `wirebench serve`\n  \
    wirebench run --link 2400bit/500ms --workload pingpong --payload 2 --rounds 10  # needs root\n\n\
    A comma-separated list makes the parameter a grid axis: the cases are every combination.\n\
    Scenario files: docs/scenarios.md; metrics (for --columns): docs/results.md.";

#[derive(Parser)]
#[command(
    name = "wirebench",
    version,
    about = "A lab for messaging and transport protocols: latency, throughput and set-up, measured.",
    long_about = "A lab for messaging and transport protocols: latency, throughput and set-up, measured.\n\n\
        `wirebench run` with no arguments runs the built-in default scenario (raw TCP ping-pong and \
        stream at three payload sizes) against an embedded reference server on loopback and writes \
        results.jsonl, results.csv and HdrHistogram logs to a fresh directory under wirebench-runs/.",
    after_help = "Examples:\n  \
        wirebench run\n  \
        wirebench run --workload pingpong --payload 2,100,1500 --rounds 10k\n  \
        wirebench run --workload stream --mode oneway,echo --payload 100,10KiB,1MiB --repeat 3\n  \
        wirebench run payload-sweep --tables mode --columns 'throughput.*'\n  \
        wirebench serve --listen 127.0.0.1:7420   # then: wirebench run --server 127.0.0.1:7420\n\n\
        Docs: docs/scenarios.md (scenario files), docs/results.md (metrics), docs/protocols/."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (a file, a built-in name, or the default) and record the results.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Run the reference server: a control port that opens data listeners on request.
    #[command(after_help = "Examples:\n  \
        wirebench serve                                    # on 127.0.0.1:7420\n  \
        wirebench serve --listen 0.0.0.0 --max-payload 64MiB\n  \
        wirebench serve --listen [::1]:9000 --quiet\n\n\
        Then, from another terminal or host: wirebench run --server HOST[:PORT]")]
    Serve(ServeArgs),
    /// List the built-in scenarios.
    Scenarios,
    /// List the protocols, with the workloads and parameters each one uses.
    Protocols,
    /// Run any command in a host whose traffic to this machine crosses an emulated link
    /// (needs root).
    ///
    /// The command runs in a fresh network namespace as 198.18.0.2; this machine's root
    /// namespace is reachable from it as 198.18.0.1, through the link. Nothing else is
    /// reachable. Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN): it creates network
    /// namespaces and a TUN device.
    #[command(after_help = "Examples:\n  \
        wirebench shell --link 2400bit/500ms -- curl http://198.18.0.1:8080/\n  \
        wirebench shell --uplink 1Mbit/300ms --downlink 10Mbit/300ms --pcap sat.pcap -- bash\n  \
        wirebench shell --link rate=19200bit,delay=250ms,loss=1% -- ping -c 3 198.18.0.1")]
    Shell(ShellArgs),
    /// Write DIR/report.html (charts, tables, published figures) from a results directory.
    ///
    /// `wirebench run` does this at the end of every run unless --no-report; use this to
    /// rebuild it, e.g. after an interrupted run. Charts are also saved as SVG and PNG
    /// under DIR/charts/.
    #[command(after_help = "Example:\n  wirebench report wirebench-runs/20261121-110000-default")]
    Report {
        /// A results directory written by `wirebench run`.
        dir: PathBuf,
    },
    /// Compare two results directories: each metric of the cases both ran, as a ratio B/A.
    ///
    /// Cases are matched by their parameters (1KiB and 1024 are the same payload).
    /// Ratios that differ from 1 by more than --threshold are flagged; the exit code is 1
    /// when any is and --fail-on-change is given (for CI regression checks).
    #[command(after_help = "Examples:\n  \
        wirebench compare wirebench-runs/before wirebench-runs/after\n  \
        wirebench compare before after --threshold 10% --fail-on-change   # in CI\n  \
        wirebench compare before after --all --html comparison.html")]
    Compare(CompareArgs),
    /// Run a zero-handshake XMPP server link gateway (XEP-0361) until Ctrl-C.
    ///
    /// The gateway attaches to the local XMPP server as the XEP-0114 component of the
    /// remote domain(s) and carries their stanzas to the peer gateway over one TCP
    /// connection: no stream negotiation, zlib with a preset dictionary, TCP Fast Open,
    /// and nothing lost across link outages (acknowledged, resent in order). The file
    /// format, with every key explained: crates/x2x/example.toml; docs/x2x.md.
    X2x {
        /// Gateway configuration (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Manage lab leftovers.
    #[command(after_help = "Examples:\n  \
        wirebench lab list          # namespaces of wirebench runs, alive or gone\n  \
        wirebench lab clean         # delete those of runs that were killed (needs root)\n  \
        wirebench lab clean --all   # also those of runs still alive")]
    Lab {
        #[command(subcommand)]
        command: LabCommand,
    },
}

#[derive(Subcommand)]
enum LabCommand {
    /// Delete network namespaces (wb-<pid>-*) left by runs that were killed.
    Clean {
        /// Also delete those of runs still alive.
        #[arg(long)]
        all: bool,
    },
    /// List lab namespaces.
    List,
}

#[derive(Args)]
struct CompareArgs {
    /// The baseline results directory.
    a: PathBuf,
    /// The results directory compared with it.
    b: PathBuf,
    /// Smallest change of a mean that is flagged, e.g. 5% or 0.05; it must also be beyond
    /// the runs' spread (Welch's t-test, p < 0.01), so both runs need --repeat.
    #[arg(long, default_value = "5%", value_name = "CHANGE")]
    threshold: String,
    /// Show every metric, not only the flagged ones.
    #[arg(long)]
    all: bool,
    /// Also write the comparison as an HTML page here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Exit with code 1 when any metric changed beyond noise. Metrics measured once in A
    /// or B (no --repeat) never fail.
    #[arg(long)]
    fail_on_change: bool,
}

#[derive(Args)]
struct ShellArgs {
    /// Link, both directions: RATE/DELAY (2400bit/500ms) or rate=..,delay=..,loss=..
    #[arg(long, value_name = "SPEC")]
    link: Option<String>,
    /// The host's uplink (host to this machine), replacing --link for that direction.
    #[arg(long, value_name = "SPEC")]
    uplink: Option<String>,
    /// The host's downlink, replacing --link for that direction.
    #[arg(long, value_name = "SPEC")]
    downlink: Option<String>,
    /// Capture what crosses the link.
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// Seed for loss and jitter.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The command and its arguments (after --).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
    /// The capture stops (and says so) when the file reaches this size.
    #[arg(long, value_name = "SIZE", default_value = "200MiB")]
    pcap_limit: String,
    /// Keep at most this many bytes of each packet in the capture (e.g. 128: headers only).
    #[arg(long, value_name = "BYTES")]
    pcap_snaplen: Option<String>,
}

#[derive(Args)]
// A flag given twice takes its last value, so a command can be extended by appending to
// it (the docs test shrinks documented commands that way).
#[command(args_override_self = true)]
struct RunArgs {
    /// Scenario file (TOML) or built-in scenario name; default: the built-in `default`.
    /// Parameter flags below override the scenario's values; a parameter's default
    /// applies when neither sets it.
    scenario: Option<String>,

    /// Wire protocol: raw (built-in server), xmpp (two real Prosody servers in lab hosts) or
    /// irc (two linked ngircd servers in lab hosts); xmpp and irc need root.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    protocol: Option<String>,
    /// pingpong (latency, one message in flight) or stream (throughput).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    workload: Option<String>,
    /// Stream direction: oneway (server counts) or echo (server returns every message).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    mode: Option<String>,
    /// Payload per message after the 21-byte header, e.g. 2,100,1500,10KiB,1MiB.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    payload: Option<String>,
    /// Ping-pong round trips per case, e.g. 1000 or 10k.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    rounds: Option<String>,
    /// Responder's wait before each answer, excluded from the RTT, e.g. 0,5s,10s.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    think: Option<String>,
    /// Messages per stream case, e.g. 100k.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    count: Option<String>,
    /// TCP_NODELAY on both ends: on, or off (let Nagle coalesce small writes).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    nodelay: Option<String>,
    /// XMPP server link: standard (Prosody s2s, dialback), x2x (zero-handshake XEP-0361
    /// gateways with zlib + dictionary) or x2x-tfo (the same with TCP Fast Open).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    s2s: Option<String>,

    /// Link, both directions: RATE/DELAY (2400bit/500ms) or rate=..,delay=..,jitter=..,loss=..,queue=..,mtu=..,outage=30s+10s
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    link: Option<String>,
    /// Client-to-server direction, replacing --link for that direction.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    uplink: Option<String>,
    /// Server-to-client direction, replacing --link for that direction.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    downlink: Option<String>,
    /// Link rate (both directions), e.g. 2400bit,19.2kbit.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    link_rate: Option<String>,
    /// One-way delay (both directions), e.g. 0,500ms,1s.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    link_delay: Option<String>,
    /// Extra delay per packet, uniform in [0, JITTER].
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    link_jitter: Option<String>,
    /// Random loss: 1%, 0.01, or Gilbert-Elliott ge:P_GB/P_BG/LOSS_GOOD/LOSS_BAD.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    link_loss: Option<String>,
    /// Drop-tail queue bound in bytes [default: 1000 packets].
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    link_queue: Option<String>,
    /// Link MTU in bytes [default: 1500].
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    link_mtu: Option<String>,
    /// Mahimahi trace file: one 1500-byte delivery opportunity per line (ms); replaces the rate.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    link_trace: Option<String>,
    /// Write every packet that crosses the link to this pcap file (tshark/Wireshark).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pcap: Option<PathBuf>,

    /// Run only these `[[part]]`s of the scenario, e.g. `--part latency,payload`.
    #[arg(long, value_name = "NAMES")]
    part: Option<String>,
    /// Run every case N times (CSV shows mean, min and max).
    #[arg(long, value_name = "N")]
    repeat: Option<u32>,
    /// Seed for payload patterns and anything random; recorded in the results.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Fail a case after this long without progress.
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,
    /// Use a running `wirebench serve` at HOST[:PORT] instead of the embedded server.
    #[arg(long, value_name = "HOST[:PORT]")]
    server: Option<String>,
    /// Results directory (default: wirebench-runs/<timestamp>-<scenario>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Parameters that split results.csv into tables (empty: one table).
    #[arg(long, value_name = "P1,P2")]
    tables: Option<String>,
    /// Metrics kept in results.csv; `rtt.*` matches a prefix.
    #[arg(long, value_name = "M1,M2")]
    columns: Option<String>,
    /// Print each case's record as a JSON line on stdout instead of the summary table.
    #[arg(long)]
    json: bool,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
    /// Do not write report.html and charts/ at the end (`wirebench report DIR` later).
    #[arg(long)]
    no_report: bool,

    /// How long a raw stream sends, e.g. 1s,5s (default 2s unless --count is given; with
    /// --count, whichever ends first).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    duration: Option<String>,
    /// Warn before the run about every case estimated to take longer than this.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    max_case_time: String,
    /// Start even if the run is estimated to take more than 2 hours.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Print the cases' count and estimated time (and capture size), then exit.
    #[arg(long)]
    dry_run: bool,
    /// Refuse a capture estimated above this size; stop writing it there at run time.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "200MiB",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pcap_limit: String,
    /// Keep at most this many bytes of each captured packet (e.g. 128: the headers).
    #[arg(
        long,
        value_name = "BYTES",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pcap_snaplen: Option<String>,
}

#[derive(Args)]
struct ServeArgs {
    /// Control address to listen on. Data listeners open on the same IP, ephemeral ports.
    #[arg(long, default_value_t = format!("127.0.0.1:{DEFAULT_PORT}"), value_name = "ADDR")]
    listen: String,
    /// Largest payload a client may ask for.
    #[arg(long, default_value = "16MiB", value_name = "SIZE")]
    max_payload: String,
    /// Do not log connections and errors.
    #[arg(long, short)]
    quiet: bool,
}

/// The command line's definition, with each parameter's default (from the registry the
/// runner uses) appended to its flag's help: the flags themselves have no clap default,
/// since a flag given overrides the scenario and one not given must not.
fn command() -> clap::Command {
    // `mut_subcommands`, not `mut_subcommand`: the latter moves `run` to the end of the list.
    Cli::command().mut_subcommands(|mut run| {
        if run.get_name() != "run" {
            return run;
        }
        let params = wirebench_runner::params::params()
            .iter()
            .chain(wirebench_runner::params::LINK_PARAMS);
        for p in params.filter(|p| !p.default.is_empty()) {
            let id = p.name.replace('.', "_");
            if run.get_arguments().any(|a| a.get_id() == id.as_str()) {
                run = run.mut_arg(id, |a| {
                    let help = a.get_help().map(ToString::to_string).unwrap_or_default();
                    a.help(format!("{help} [default: {}]", p.default))
                });
            }
        }
        run
    })
}

/// Parses the command line; an unknown subcommand gets a suggestion (clap's own misses
/// short typos such as `rn`), any other mistake clap's message. Exits on error or help.
fn parse_cli() -> Cli {
    let err = match command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => return cli,
        Err(e) => e,
    };
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() == ErrorKind::InvalidSubcommand {
        if let Some(ContextValue::String(word)) = err.get(ContextKind::InvalidSubcommand) {
            // Suggest among the subcommands of the command the word was given to.
            let mut cmd = command();
            for arg in std::env::args().skip(1) {
                if &arg == word {
                    break;
                }
                if let Some(sub) = cmd.find_subcommand(&arg).cloned() {
                    cmd = sub;
                }
            }
            let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
            eprintln!("wirebench: {}", unknown_command(word, &names));
            std::process::exit(2);
        }
    }
    err.exit()
}

/// `unknown command 'rn'; did you mean 'run'?`, or the list of commands.
fn unknown_command(word: &str, names: &[&str]) -> String {
    match wirebench_model::hint::closest(word, names.iter().copied()) {
        Some(n) => format!("unknown command '{word}'; did you mean '{n}'?"),
        None => format!("unknown command '{word}'; commands: {}", names.join(", ")),
    }
}

fn main() -> ExitCode {
    let cli = parse_cli();
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Serve(args) => serve(args),
        Command::Shell(args) => shell(args),
        Command::Lab { command } => lab(command),
        Command::Report { dir } => report(&dir),
        Command::X2x { config } => x2x(&config),
        Command::Compare(args) => compare(args),
        Command::Scenarios => scenarios(),
        Command::Protocols => protocols(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wirebench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn load_scenario(arg: Option<&str>) -> Result<Scenario> {
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
    bail!(
        "no scenario file or built-in scenario named {arg:?}; built-in scenarios: {}",
        names.join(", ")
    )
}

/// Reads `HOST`, `HOST:PORT`, `[IPV6]`, `[IPV6]:PORT` or a bare IPv6 address given to
/// `flag`, as `host:port` text for the resolver; the port defaults to 7420. Port 0 (any
/// free port) only makes sense when listening.
fn parse_addr(flag: &str, text: &str, listen: bool) -> Result<String> {
    let t = text.trim();
    let bad = |why: &str| {
        anyhow!(
            "{flag} {text:?}: {why}; expected HOST, HOST:PORT or [IPV6]:PORT, e.g. 127.0.0.1:{DEFAULT_PORT}"
        )
    };
    let (host, port) = if let Some(rest) = t.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("no ] after the IPv6 address"))?;
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad(&format!("{host:?} is not an IPv6 address")));
        }
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| bad("expected :PORT after ]"))?,
                ),
            ),
        }
    } else if t.parse::<std::net::Ipv6Addr>().is_ok() {
        (t, None)
    } else {
        match t.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err(bad(
                    "an IPv6 address with a port goes in brackets, e.g. [::1]:7420",
                ));
            }
            Some((h, p)) => (h, Some(p)),
            None => (t, None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let lowest = if listen { 0 } else { 1 };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => match p.parse::<u64>() {
            Ok(n) if (lowest..=65535).contains(&n) => n as u16,
            Ok(n) => bail!(
                "{flag} {text:?}: port {n} is out of range ({lowest} to 65535{})",
                if listen { "; 0 picks a free port" } else { "" }
            ),
            Err(_) => return Err(bad(&format!("port {p:?} is not a number"))),
        },
    };
    Ok(if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

/// Refuses, before anything runs, a raw case whose payload the embedded server would
/// refuse (a server given with --server says its own limit per case).
fn check_embedded_payloads(scenario: &Scenario, origin: &str) -> Result<()> {
    let limit = u64::from(ServerConfig::default().max_payload);
    for case in wirebench_runner::plan(scenario) {
        let Some((_, p)) = case.point.iter().find(|(n, _)| n == "payload") else {
            continue;
        };
        let served = wirebench_runner::registry::of(&case).uses_reference_server();
        if served && p.value.as_bytes().is_some_and(|b| b > limit) {
            bail!(
                "{origin} {p}: above the embedded server's limit of {}; for larger payloads \
                 run `wirebench serve --max-payload SIZE` and pass its address with --server",
                Bytes(limit)
            );
        }
    }
    Ok(())
}

fn run(args: RunArgs) -> Result<ExitCode> {
    let mut scenario = load_scenario(args.scenario.as_deref())?;
    let overrides = [
        ("protocol", &args.protocol),
        ("workload", &args.workload),
        ("mode", &args.mode),
        ("payload", &args.payload),
        ("rounds", &args.rounds),
        ("think", &args.think),
        ("count", &args.count),
        ("duration", &args.duration),
        ("nodelay", &args.nodelay),
        ("s2s", &args.s2s),
        ("link", &args.link),
        ("uplink", &args.uplink),
        ("downlink", &args.downlink),
        ("link.rate", &args.link_rate),
        ("link.delay", &args.link_delay),
        ("link.jitter", &args.link_jitter),
        ("link.loss", &args.link_loss),
        ("link.queue", &args.link_queue),
        ("link.mtu", &args.link_mtu),
        ("link.trace", &args.link_trace),
    ];
    for (name, value) in overrides {
        if let Some(v) = value {
            scenario.set_param(name, v)?;
        }
    }
    scenario.stream_length_from_command_line(args.count.is_some(), args.duration.is_some());
    if let Some(names) = &args.part {
        let names: Vec<String> = names
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect();
        scenario
            .select_parts(&names)
            .map_err(|e| anyhow::anyhow!("--part: {e}"))?;
    }
    if let Some(r) = args.repeat {
        if r == 0 {
            bail!("--repeat 0: must be at least 1");
        }
        scenario.repeat = r;
    }
    if let Some(s) = args.seed {
        scenario.seed = s;
    }
    if let Some(t) = &args.timeout {
        scenario.stall_timeout = parse_duration(t).context("--timeout")?;
        if scenario.stall_timeout.is_zero() {
            bail!("--timeout {t}: must be longer than 0 (every case would fail at once)");
        }
    }
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    if let Some(t) = &args.tables {
        let tables = list(t);
        for p in &tables {
            if wirebench_runner::params::spec(p).is_none() {
                bail!(
                    "--tables: {p:?} is not a parameter; parameters: {}",
                    wirebench_runner::params::names().join(", ")
                );
            }
        }
        scenario.tables = Some(tables);
    }
    if let Some(c) = &args.columns {
        let columns = list(c);
        for c in &columns {
            wirebench_model::results::check_column(c).map_err(|e| anyhow!("--columns: {e}"))?;
        }
        scenario.columns = Some(columns);
    }
    let server = args
        .server
        .as_deref()
        .map(|s| parse_addr("--server", s, false))
        .transpose()?;
    if server.is_none() {
        let origin = match (&args.payload, &args.scenario) {
            (Some(_), _) => "--payload".to_string(),
            (None, Some(file)) => format!("{file}: params.payload"),
            (None, None) => "payload".to_string(),
        };
        check_embedded_payloads(&scenario, &origin)?;
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| wirebench_runner::default_out_dir(&scenario.name));
    let opts = RunOptions {
        server,
        out: out.clone(),
        connect_timeout: Duration::from_secs(5),
        command: std::env::args().collect(),
        pcap: pcap_options(args.pcap.as_deref(), &args.pcap_limit, &args.pcap_snaplen)?,
    };
    preflight(&scenario, &args, opts.pcap.as_ref())?;
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
    let show_bars = !args.quiet && std::io::stderr().is_terminal();
    let observer = Terminal::new(&scenario, show_bars, args.json);
    let summary = wirebench_runner::run(&scenario, &opts, &shutdown, &observer)?;

    if !args.json {
        let width = wirebench_report::summary::terminal_width();
        println!(
            "{}",
            wirebench_report::summary_table(&summary.records, width)
        );
        print!(
            "{}",
            wirebench_report::summary::comparisons(&summary.records, width)
        );
    }
    let failed: Vec<&Record> = summary
        .records
        .iter()
        .filter(|r| r.status == Status::Failed)
        .collect();
    for r in &failed {
        eprintln!(
            "wirebench: case {} failed: {}",
            r.case,
            r.error.as_deref().unwrap_or("?")
        );
    }
    if !args.no_report && !summary.records.is_empty() {
        match wirebench_report::write_report(&out) {
            Ok(w) => eprintln!("report: {} ({} charts)", w.html.display(), w.charts),
            // The results are safe; a report problem must not turn a good run red.
            Err(e) => eprintln!("wirebench: warning: no report: {e} (results are kept)"),
        }
    }
    eprintln!("results: {}", out.display());
    Ok(if summary.interrupted {
        ExitCode::from(130)
    } else if summary.all_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Progress bars on a terminal, one line per finished case otherwise.
struct Terminal {
    bar: Mutex<Option<ProgressBar>>,
    show_bars: bool,
    json: bool,
    total: AtomicUsize,
    repeat: AtomicUsize,
    varying: Vec<String>,
}

impl Terminal {
    fn new(scenario: &Scenario, show_bars: bool, json: bool) -> Terminal {
        let mut varying = wirebench_runner::varying(&wirebench_runner::plan(scenario));
        if !varying.iter().any(|v| v == "workload") {
            varying.insert(0, "workload".into());
        }
        Terminal {
            bar: Mutex::new(None),
            show_bars,
            json,
            total: AtomicUsize::new(0),
            repeat: AtomicUsize::new(1),
            varying,
        }
    }

    fn title(&self, case: &Case, repeat: u32) -> String {
        let only: Vec<&str> = self.varying.iter().map(String::as_str).collect();
        let reps = self.repeat.load(Ordering::Relaxed);
        let rep = if reps > 1 {
            format!(" (run {repeat}/{reps})")
        } else {
            String::new()
        };
        format!(
            "[{}/{}] {}{rep}",
            case.index,
            self.total.load(Ordering::Relaxed),
            case.describe(&only)
        )
    }
}

impl Observer for Terminal {
    fn run_started(&self, cases: usize, repeat: u32, against: &str) {
        self.total.store(cases, Ordering::Relaxed);
        self.repeat.store(repeat as usize, Ordering::Relaxed);
        // The case count and estimate are already on the line above.
        eprintln!("wirebench: running against {against}");
    }

    fn case_started(&self, case: &Case, repeat: u32) {
        if !self.show_bars {
            return;
        }
        let bar = ProgressBar::new(1);
        bar.set_style(
            ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(self.title(case, repeat));
        *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(bar);
    }

    fn progress(&self, done: u64, total: u64) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            bar.set_length(total);
            bar.set_position(done);
        }
    }

    fn case_finished(&self, case: &Case, record: &Record) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            bar.finish_and_clear();
        }
        let headline = match (
            record.metric("rtt.stable").or(record.metric("rtt.p50")),
            record.metric("throughput.bits_per_s"),
        ) {
            (_, Some(t)) => human(t.value, &t.unit),
            (Some(r), None) => format!("RTT {}", human(r.value, &r.unit)),
            _ => String::new(),
        };
        let status = match record.status {
            Status::Ok => "ok".to_string(),
            Status::Failed => format!("FAILED: {}", record.error.as_deref().unwrap_or("")),
            Status::Interrupted => "interrupted".to_string(),
        };
        eprintln!("{}  {status}  {headline}", self.title(case, record.repeat));
        if self.json {
            if let Ok(line) = serde_json::to_string(record) {
                println!("{line}");
            }
        }
    }
}

fn serve(args: ServeArgs) -> Result<ExitCode> {
    let max = Bytes::parse(&args.max_payload).context("--max-payload")?;
    let max_payload = u32::try_from(max.0)
        .ok()
        .filter(|m| *m > 0)
        .ok_or_else(|| {
            anyhow!(
                "--max-payload {}: must be from 1B to below 4GiB",
                args.max_payload
            )
        })?;
    let cfg = ServerConfig {
        max_payload,
        log: !args.quiet,
        ..Default::default()
    };
    let listen = parse_addr("--listen", &args.listen, true)?;
    let server =
        Server::bind(listen.as_str(), cfg).with_context(|| format!("cannot listen on {listen}"))?;
    eprintln!(
        "wirebench serve: listening on {} (Ctrl-C to stop)",
        server.local_addr()
    );
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
    let mut handle = server.spawn().context("cannot start the server thread")?;
    let _ = rx.recv();
    eprintln!("wirebench serve: stopping");
    handle.stop();
    Ok(ExitCode::SUCCESS)
}

fn lab(cmd: LabCommand) -> Result<ExitCode> {
    match cmd {
        LabCommand::List => {
            let found = wirebench_lab::netns::list();
            if found.is_empty() {
                eprintln!("no lab namespaces");
            }
            for (name, pid) in found {
                let state = match pid {
                    Some(p) if Path::new(&format!("/proc/{p}")).exists() => {
                        format!("run {p} alive")
                    }
                    Some(p) => format!("run {p} gone"),
                    None => "unknown owner".into(),
                };
                println!("{name}  ({state})");
            }
        }
        LabCommand::Clean { all } => {
            let deleted = wirebench_lab::netns::clean(all)?;
            if deleted.is_empty() {
                eprintln!("nothing to clean");
            }
            for n in deleted {
                println!("deleted {n}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn shell(args: ShellArgs) -> Result<ExitCode> {
    use wirebench_link::LinkSpec;
    let parse = |flag: &str, s: &Option<String>| -> Result<Option<LinkSpec>> {
        s.as_deref()
            .map(|t| LinkSpec::parse(t).with_context(|| format!("--{flag}")))
            .transpose()
    };
    let both = parse("link", &args.link)?;
    let up = parse("uplink", &args.uplink)?.or_else(|| both.clone());
    let down = parse("downlink", &args.downlink)?.or(both);
    let (Some(up), Some(down)) = (up, down) else {
        bail!(
            "describe the link with --link (or both --uplink and --downlink), e.g. --link 2400bit/500ms"
        );
    };
    let pcap = pcap_options(args.pcap.as_deref(), &args.pcap_limit, &args.pcap_snaplen)?;
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
        |host| {
            eprintln!(
                "wirebench shell: {} in {host} (198.18.0.2); this machine is 198.18.0.1; uplink {up}, downlink {down}",
                args.command[0]
            )
        },
    )?;
    let c = &outcome.counters;
    eprintln!(
        "wirebench shell: uplink {} packets / {} B (dropped {}), downlink {} packets / {} B (dropped {})",
        c.up.delivered_packets,
        c.up.delivered_bytes,
        c.up.dropped(),
        c.down.delivered_packets,
        c.down.delivered_bytes,
        c.down.dropped()
    );
    if let (Some(p), Some(st)) = (&pcap, &outcome.pcap) {
        let why = st
            .stopped
            .as_ref()
            .map(|w| format!("; stopped early: {w}"))
            .unwrap_or_default();
        eprintln!(
            "wirebench shell: capture {} ({} packets, {}){why}",
            p.path.display(),
            st.packets,
            wirebench_runner::estimate::format_size(st.bytes)
        );
    }
    let status = outcome.status;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(c.clamp(1, 255) as u8),
        None => ExitCode::from(128 + 2),
    })
}

fn report(dir: &Path) -> Result<ExitCode> {
    // Directories from before run.json existed: take the built-in scenario of that name
    // (for its chart choices), or none, and today's parameter registry.
    if dir.join("results.jsonl").exists() && !dir.join(wirebench_report::info::FILE).exists() {
        let records = wirebench_report::html::read_records(dir)?;
        let name = records
            .first()
            .map(|r| r.scenario.clone())
            .unwrap_or_default();
        let scenario = Scenario::builtin(&name).unwrap_or_else(|| Scenario::empty(&name));
        wirebench_runner::run_info(&scenario)
            .write(dir)
            .with_context(|| format!("cannot write run.json into {}", dir.display()))?;
    }
    let w = wirebench_report::write_report(dir)?;
    println!(
        "{} ({} charts; SVG and PNG in {})",
        w.html.display(),
        w.charts,
        dir.join("charts").display()
    );
    Ok(ExitCode::SUCCESS)
}

fn parse_change(text: &str) -> Result<f64> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| anyhow::anyhow!("--threshold {text:?}: expected a change such as 5% or 0.05"))?;
    if !(v.is_finite() && v >= 0.0) {
        bail!("--threshold {text:?}: must be zero or more");
    }
    Ok(v)
}

fn compare(args: CompareArgs) -> Result<ExitCode> {
    let threshold = parse_change(&args.threshold)?;
    let c = wirebench_report::compare::load_and_compare(&args.a, &args.b, threshold)?;
    if c.rows.is_empty() {
        bail!(
            "no case of {} matches a case of {} (same parameters); nothing to compare",
            args.a.display(),
            args.b.display()
        );
    }
    print!(
        "{}",
        wirebench_report::compare::table(&c, args.all, wirebench_report::summary::terminal_width())
    );
    if let Some(path) = &args.html {
        wirebench_report::atomic_write(
            path,
            wirebench_report::compare::html(&c, &args.a, &args.b).as_bytes(),
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

/// A run estimated above this needs `--yes`: long enough for every built-in scenario,
/// short enough to stop a grid that would take days (the README's once did).
const CONFIRM_ABOVE_S: f64 = 2.0 * 3600.0;

/// Before anything runs: the case count and estimated time, a warning for each case
/// estimated above `--max-case-time` (with the flag that shortens it), the capture's
/// estimated size, and a refusal for a run above [`CONFIRM_ABOVE_S`] without `--yes`.
fn preflight(
    scenario: &Scenario,
    args: &RunArgs,
    pcap: Option<&wirebench_lab::pcap::PcapOptions>,
) -> Result<()> {
    use wirebench_runner::estimate::{format_estimate, format_size};
    let limit = parse_duration(&args.max_case_time)
        .context("--max-case-time")?
        .as_secs_f64();
    let est = wirebench_runner::estimate::estimate(scenario)?;
    let cases = wirebench_runner::plan(scenario);
    let total = est.total_secs();
    let n = est.cases.len();
    eprintln!(
        "wirebench: {n} case{} x {}, estimated {}",
        if n == 1 { "" } else { "s" },
        est.repeat,
        format_estimate(total)
    );
    for note in &est.notes {
        eprintln!("wirebench: note: {note}");
    }
    let mut long = 0;
    for (e, case) in est.cases.iter().zip(&cases) {
        if e.secs <= limit {
            continue;
        }
        long += 1;
        let advice = e.advice(limit);
        eprintln!(
            "wirebench: warning: case {} ({}) is estimated at {}{}{}",
            e.index,
            case_words(scenario, case),
            format_estimate(e.secs),
            if args.repeat.unwrap_or(scenario.repeat) > 1 {
                " per run"
            } else {
                ""
            },
            if advice.is_empty() {
                String::new()
            } else {
                format!("; {advice}")
            }
        );
    }
    if let Some(p) = pcap {
        eprintln!(
            "wirebench: capture {}, estimated {} (limit {})",
            p.path.display(),
            format_size(est.capture_bytes(p.snaplen)),
            format_size(p.limit)
        );
    }
    if total > CONFIRM_ABOVE_S && !args.yes && !args.dry_run {
        bail!(
            "this run is estimated at {} ({}); shorten it (see the warnings above) or pass \
             --yes to start it anyway",
            format_estimate(total),
            if long > 0 {
                format!("{long} case(s) above {}", format_estimate(limit))
            } else {
                format!("{n} cases")
            }
        );
    }
    Ok(())
}

/// The parameters that tell a case apart and set its length: `link.rate=2400bit
/// payload=64KiB rounds=1000`.
fn case_words(scenario: &Scenario, case: &Case) -> String {
    let grids = scenario.grids();
    let varying: Vec<&str> = grids
        .iter()
        .flat_map(|g| g.varying())
        .chain(["payload", "rounds", "count", "duration", "think"])
        .collect();
    let shown: Vec<&str> = case
        .point
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| {
            varying.contains(n)
                && !(*n == "think"
                    && case.get(n).and_then(|v| v.as_duration()) == Some(Duration::ZERO))
        })
        .collect();
    case.describe(&shown)
}

/// `--pcap FILE` with its limit and snap length.
fn pcap_options(
    path: Option<&Path>,
    limit: &str,
    snaplen: &Option<String>,
) -> Result<Option<wirebench_lab::pcap::PcapOptions>> {
    use wirebench_lab::pcap::{MAX_SNAPLEN, PcapOptions};
    let limit = Bytes::parse(limit).context("--pcap-limit")?.0;
    let snaplen = match snaplen {
        Some(s) => {
            let b = Bytes::parse(s).context("--pcap-snaplen")?.0;
            if !(20..=MAX_SNAPLEN as u64).contains(&b) {
                bail!(
                    "--pcap-snaplen {s}: must be from 20 (an IPv4 header) to {MAX_SNAPLEN} bytes"
                );
            }
            b as u32
        }
        None => MAX_SNAPLEN,
    };
    // Relative to where the user is now, whichever namespace the run enters later.
    path.map(|p| {
        let path = std::path::absolute(p).with_context(|| format!("--pcap {}", p.display()))?;
        Ok(PcapOptions {
            path,
            snaplen,
            limit,
        })
    })
    .transpose()
}

/// `wirebench scenarios`: each built-in scenario with its case count and estimated time.
/// `wirebench protocols`: the registry, as a user needs it to write `--protocol`.
fn protocols() -> Result<ExitCode> {
    use wirebench_runner::params::{WORKLOADS, applies, params};
    for p in wirebench_runner::registry::REGISTRY {
        println!("{}  {}", p.name(), p.summary());
        for w in WORKLOADS {
            let params: Vec<&str> = params()
                .iter()
                .map(|s| s.name)
                .filter(|n| !matches!(*n, "protocol" | "workload") && applies(n, p.name(), w))
                .collect();
            println!("    {w:<9} {}", params.join(", "));
        }
        println!();
    }
    println!(
        "Link parameters (link, link.rate, ...) apply to every protocol; `wirebench run --help` \
         explains each parameter."
    );
    Ok(ExitCode::SUCCESS)
}

fn scenarios() -> Result<ExitCode> {
    use wirebench_runner::estimate::format_estimate;
    println!(
        "{:<16} {:>6}  {:>8}  description",
        "scenario", "cases", "time"
    );
    for (name, _) in BUILTIN {
        let Some(s) = Scenario::builtin(name) else {
            continue;
        };
        let (cases, time) = match wirebench_runner::estimate::estimate(&s) {
            Ok(e) if e.repeat > 1 => (
                format!("{} x {}", e.cases.len(), e.repeat),
                format!("~{}", format_estimate(e.total_secs())),
            ),
            Ok(e) => (
                e.cases.len().to_string(),
                format!("~{}", format_estimate(e.total_secs())),
            ),
            Err(_) => ("?".into(), "?".into()),
        };
        println!("{name:<16} {cases:>6}  {time:>8}  {}", s.description);
    }
    println!("\nTimes are estimates from the link model (docs/scenarios.md, \"Estimates\").");
    Ok(ExitCode::SUCCESS)
}
