//! The command line: clap's definitions, help with the registry's defaults, a
//! did-you-mean for unknown commands, and each command's flags turned into what its
//! library takes. Nothing here runs anything.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use wirebench_link::{Direction, LinkSpec};
use wirebench_net::DEFAULT_PORT;
use wirebench_runner::RunRequest;
use wirebench_runner::request::{MAX_CASE_TIME, PCAP_LIMIT};

const RUN_EXAMPLES: &str = "Examples:\n  \
    wirebench run                                  # the built-in default scenario\n  \
    wirebench run --workload pingpong --payload 2,100,1500 --rounds 10k\n  \
    wirebench run --workload stream --mode oneway,echo --payload 100,10KiB,1MiB --repeat 3\n  \
    wirebench run payload-sweep --tables mode --columns 'throughput.*'\n  \
    wirebench run my.toml --part latency --out results/today\n  \
    wirebench run --server 127.0.0.1:7420          # against a running `wirebench serve`\n  \
    wirebench run --link 2400bit/500ms --workload pingpong --payload 2 --rounds 10  # needs root\n  \
    wirebench run browser-transports --skip-missing   # run what this machine has the peers for\n\n\
    A comma-separated list makes the parameter a grid axis: the cases are every combination.\n\
    Before the first case, every case's prerequisites (peers, packages, root) are checked: a run\n\
    missing one lists it and refuses (exit 2) with the one command that installs it all\n\
    (bash scripts/install-peers.sh SCENARIO), unless --skip-missing; `wirebench doctor` lists them.\n\
    Scenario files: docs/scenarios.md; metrics (for --columns): docs/results.md.";

const DOCTOR_EXAMPLES: &str = "Examples:\n  \
    wirebench doctor                                # every built-in scenario\n  \
    wirebench doctor browser-transports             # one study's cases\n  \
    wirebench doctor browser-transports --part browser,real-browser\n  \
    wirebench doctor --protocol socks5 --socks5-server dante --link-delay 5ms\n  \
    wirebench doctor proxy-delays --install-plan    # what scripts/install-peers.sh reads\n  \
    bash scripts/install-peers.sh browser-transports   # install what is missing (Debian)\n\n\
    Exit status: 0 when everything is present, 1 when something is missing, 2 on bad input.";

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
        wirebench serve --listen 127.0.0.1:7420   # then: wirebench run --server 127.0.0.1:7420\n  \
        wirebench doctor browser-transports       # what a study needs on this machine\n\n\
        Docs: docs/scenarios.md (scenario files), docs/results.md (metrics), docs/protocols/."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a scenario (a file, a built-in name, or the default) and record the results.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Run the reference server: a control port that opens data listeners on request.
    #[command(after_help = "Examples:\n  \
        wirebench serve                                    # on 127.0.0.1:7420\n  \
        wirebench serve --listen 0.0.0.0 --max-payload 64MiB\n  \
        wirebench serve --listen [::1]:9000 --quiet\n\n\
        Then, from another terminal or host: wirebench run --server HOST[:PORT]")]
    Serve(Box<ServeArgs>),
    /// List the built-in scenarios.
    Scenarios,
    /// Check what a scenario's cases need on this machine (peers, packages, root).
    ///
    /// One line per prerequisite: present or missing, its version when Debian's package
    /// manager knows it, how it is installed, and which cases need it and why. The same
    /// check `wirebench run` makes before its first case. Without a scenario or parameter
    /// flags: every built-in scenario; with them, the cases `wirebench run` would plan
    /// (the same scenario, --part and parameter flags). `bash scripts/install-peers.sh
    /// [SCENARIO] [FLAGS]` installs what is missing.
    #[command(after_help = DOCTOR_EXAMPLES)]
    Doctor(Box<DoctorArgs>),
    /// List the protocols, with the workloads and parameters each one uses.
    Protocols,
    /// List the named links (`--link geo`): each direction's spec and where its figures
    /// come from.
    #[command(after_help = "Examples:\n  \
        wirebench links\n  \
        wirebench run --link geo --workload stream --payload 1KiB --duration 10s\n  \
        wirebench run --link geo,loss=2% --workload pingpong    # fields after a name override it\n  \
        wirebench run --link-delay 0,500ms,1s --link satcom     # so do the link.* parameters")]
    Links,
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
    #[command(after_help = "Examples:\n  \
        wirebench report wirebench-runs/20261121-110000-default\n  \
        wirebench report wirebench-runs/20261121-110000-proxy-ttfb --charts-from proxy-ttfb")]
    Report {
        /// A results directory written by `wirebench run`.
        dir: PathBuf,
        /// Take the charts (`[[chart]]`, the lead figure first) from this scenario file or
        /// built-in scenario instead of those recorded with the run, and record them in
        /// DIR/run.json: a run made before its scenario's charts changed gets today's.
        #[arg(long, value_name = "SCENARIO")]
        charts_from: Option<String>,
    },
    /// Compare two results directories: each metric of the cases both ran, as a ratio B/A.
    ///
    /// Cases are matched by their parameters (1KiB and 1024 are the same payload).
    /// Ratios that differ from 1 by more than --threshold are flagged; the exit code is 1
    /// when any is and --fail-on-change is given (for CI regression checks).
    ///
    /// With --by PARAM, cases are matched ignoring PARAM, so each row is the effect of
    /// changing it: two runs that differ only in --nodelay, or (one directory) the cases
    /// of one run that differ only in PARAM, paired with the first value in run order.
    #[command(after_help = "Examples:\n  \
        wirebench compare wirebench-runs/before wirebench-runs/after\n  \
        wirebench compare before after --threshold 10% --fail-on-change   # in CI\n  \
        wirebench compare before after --all --html comparison.html\n  \
        wirebench compare nodelay-on nodelay-off --by nodelay --all   # an A/B of one parameter\n  \
        wirebench compare one-run --by nodelay --all                  # run with --nodelay on,off")]
    Compare(CompareArgs),
    /// Write Kubernetes manifests that run a scenario as N shards of one run.
    ///
    /// The YAML (stdout, or --out) holds: a ConfigMap <name>-scenario with the scenario
    /// file; a headless Service <name>, so that shard 0's pod is <name>-0.<name>, the
    /// barrier where the shards agree on each case's start; a PersistentVolumeClaim
    /// <name>-results (ReadWriteMany; or --results-claim) for the results; and an Indexed
    /// Job <name> of N pods, pod I running shard I of N (`wirebench run` takes I from the
    /// pod's completion index) into /results/<name>/shard-I. A failed shard is not
    /// retried: the Job fails. With --with-server, also a Deployment + Service
    /// <name>-server running `wirebench serve --xmpp` as the load target.
    ///
    /// Then: `kubectl apply -f FILE`, `kubectl wait --for=condition=complete job/<name>`,
    /// copy /results/<name> off the claim to results/<name>, and `wirebench merge
    /// results/<name>/shard-* --out merged` for one results directory and report. Step by
    /// step: docs/cluster.md.
    #[command(after_help = "Examples:\n  \
        wirebench k8s s4-tigase --shards 10 --image registry.example/wirebench:1 --with-server \\\n      \
        --server-users 130000 --server-sessions 130000 --server-contacts 0 \\\n      \
        --out run.yaml -- --part empty\n  \
        wirebench k8s my.toml --shards 4 --image wb:1 --target xmpp.bench.svc:5222 --cpu 2 --memory 4Gi \\\n      \
        --out run.yaml -- --start-at 2026-11-26T10:00:00Z\n  \
        kubectl apply -f run.yaml\n  \
        kubectl wait --for=condition=complete job/wirebench-s4-tigase --timeout=2h\n  \
        wirebench merge results/wirebench-s4-tigase/shard-* --out merged    # copied off the claim")]
    K8s(Box<K8sArgs>),
    /// Merge a sharded run's results (one directory per shard) into one results directory.
    ///
    /// Exact: each load case's per-interval histograms and counters are added, so the
    /// merged percentiles, over the case and per interval, are those of every shard's
    /// samples together. The shards' start (how early each was ready, its clock offset from
    /// shard 0 and its bound) is reported per case. Shards of different runs (scenario,
    /// parameters, seed, shard count, wirebench version), a missing shard or one given
    /// twice are refused. docs/cluster.md.
    #[command(after_help = "Examples:\n  \
        wirebench merge results/shard-0 results/shard-1 results/shard-2 --out results/merged\n  \
        wirebench merge results/wirebench-s4/shard-*        # into wirebench-runs/<time>-<scenario>-merged")]
    Merge {
        /// The shards' results directories (each written by `wirebench run --shard I/N`).
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Where the merged results go (a new directory); default: a fresh one under
        /// wirebench-runs/.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Do not write report.html and charts/.
        #[arg(long)]
        no_report: bool,
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
pub enum LabCommand {
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
pub struct CompareArgs {
    /// The baseline results directory.
    pub a: PathBuf,
    /// The results directory compared with it; without it, --by compares A's cases with
    /// each other.
    pub b: Option<PathBuf>,
    /// Match cases ignoring these parameters (repeatable or a comma list, e.g. nodelay or
    /// link.delay) and show A's value against B's on each row.
    #[arg(long, value_name = "PARAM", value_delimiter = ',')]
    pub by: Vec<String>,
    /// Smallest change of a mean that is flagged, e.g. 5% or 0.05; it must also be beyond
    /// the runs' spread (Welch's t-test, p < 0.01), so both runs need --repeat.
    #[arg(long, default_value = "5%", value_name = "CHANGE")]
    pub threshold: String,
    /// Show every metric, not only the flagged ones.
    #[arg(long)]
    pub all: bool,
    /// Also write the comparison as an HTML page here.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Exit with code 1 when any metric changed beyond noise. Metrics measured once in A
    /// or B (no --repeat) never fail.
    #[arg(long)]
    pub fail_on_change: bool,
}

#[derive(Args)]
pub struct K8sArgs {
    /// Scenario file (TOML) or built-in scenario name; it goes into the ConfigMap whole.
    pub scenario: String,
    /// Shards: pods of the Indexed Job, each running its share of every case's sessions
    /// (1 to 1000).
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// Container image with wirebench at /usr/local/bin/wirebench (the repository's
    /// Dockerfile builds one).
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// Name of the Job, its Service and the prefix of the other objects: a DNS label of at
    /// most 52 characters [default: wirebench-<scenario name>].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Namespace of every object [default: kubectl's current one].
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// The server every shard loads, HOST:PORT (each shard's --load-target).
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "with_server")]
    pub target: Option<String>,
    /// Also run the built-in XMPP server (`wirebench serve --xmpp`) in a Deployment +
    /// Service <name>-server, and load it (--target <name>-server:5222).
    #[arg(long)]
    pub with_server: bool,
    /// With --with-server: its accounts, user1..userN (serve's --xmpp-users).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100_000,
        requires = "with_server"
    )]
    pub server_users: u64,
    /// With --with-server: sessions it holds at once (serve's --xmpp-sessions).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000,
        requires = "with_server"
    )]
    pub server_sessions: usize,
    /// With --with-server: each user's roster size (serve's --xmpp-contacts); match the
    /// scenario's load.contacts.
    #[arg(long, value_name = "N", default_value_t = 2, requires = "with_server")]
    pub server_contacts: u64,
    /// Write the results to this existing PersistentVolumeClaim instead of creating
    /// <name>-results (every shard mounts it at once: it must be ReadWriteMany).
    #[arg(long, value_name = "CLAIM")]
    pub results_claim: Option<String>,
    /// Size of the results claim created.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "1Gi",
        conflicts_with = "results_claim"
    )]
    pub storage: String,
    /// Storage class of the results claim created (one offering ReadWriteMany) [default:
    /// the cluster's].
    #[arg(long, value_name = "CLASS", conflicts_with = "results_claim")]
    pub storage_class: Option<String>,
    /// The Job's activeDeadlineSeconds: the whole run, pods waiting for nodes included.
    #[arg(long, value_name = "DURATION", default_value = "2h")]
    pub deadline: String,
    /// CPU of each shard's pod (request = limit), e.g. 2 or 1500m.
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<String>,
    /// Memory of each shard's pod (request = limit), e.g. 4Gi.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// Write the YAML to this file ('-': stdout).
    #[arg(long, value_name = "FILE", default_value = "-")]
    pub out: PathBuf,
    /// More `wirebench run` arguments for every shard, after --, e.g. -- --start-at
    /// 2026-11-26T10:00:00Z --load-phases 60s@5000/s.
    #[arg(last = true, value_name = "RUN ARGS")]
    pub extra: Vec<String>,
}

#[derive(Args)]
pub struct ShellArgs {
    /// Link, both directions: RATE/DELAY (2400bit/500ms) or rate=..,delay=..,loss=..
    #[arg(long, value_name = "SPEC")]
    pub link: Option<String>,
    /// The host's uplink (host to this machine), replacing --link for that direction.
    #[arg(long, value_name = "SPEC")]
    pub uplink: Option<String>,
    /// The host's downlink, replacing --link for that direction.
    #[arg(long, value_name = "SPEC")]
    pub downlink: Option<String>,
    /// Capture what crosses the link.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Seed for loss and jitter.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The command and its arguments (after --).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// The capture stops (and says so) when the file reaches this size.
    #[arg(long, value_name = "SIZE", default_value = PCAP_LIMIT)]
    pub pcap_limit: String,
    /// Keep at most this many bytes of each packet in the capture (e.g. 128: headers only).
    #[arg(long, value_name = "BYTES")]
    pub pcap_snaplen: Option<String>,
}

#[derive(Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Print the steps that install what is missing, one per line, and exit 0: `apt
    /// PACKAGE`, `script PATH` (a script of this repository, run after the packages) or
    /// `manual TEXT` (what no script can do, such as running as root).
    #[arg(long)]
    pub install_plan: bool,
    /// Print every Debian package any plugin may need (all protocols, all parameter
    /// values; the lab's iproute2), one per line, and exit 0: what scripts/test.sh
    /// installs. Hidden: for scripts, not for a study.
    #[arg(long, hide = true, conflicts_with = "install_plan")]
    pub packages: bool,
}

#[derive(Args)]
// A flag given twice takes its last value, so a command can be extended by appending to
// it (the docs test shrinks documented commands that way).
#[command(args_override_self = true)]
pub struct RunArgs {
    /// Scenario file (TOML) or built-in scenario name; default: the built-in `default`.
    /// Parameter flags below override the scenario's values; a parameter's default
    /// applies when neither sets it.
    pub scenario: Option<String>,

    /// Wire protocol: the registry's names ([`protocol_help`]).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub protocol: Option<String>,
    // The parameters' help below is the registry's ([`registry_help`]), set in [`command`]:
    // a scenario file's keys and these flags are described by one text.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub workload: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub payload: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub rounds: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub think: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub count: Option<String>,
    /// The protocols' own parameters (`--mode`, `--s2s`, ...): flags made from the
    /// registry when the command line is defined ([`command`]), as (name, value).
    #[arg(skip)]
    pub protocol_params: Vec<(String, String)>,

    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub uplink: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub downlink: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link2: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_rate: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_delay: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_jitter: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_loss: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_queue: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_mtu: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_outage: Option<String>,
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_trace: Option<String>,
    #[arg(
        long,
        value_name = "DIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_paths: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Transport (both lab hosts' kernel TCP; needs an emulated link)"
    )]
    pub tcp_cc: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Transport (both lab hosts' kernel TCP; needs an emulated link)"
    )]
    pub tcp_initcwnd: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Transport (both lab hosts' kernel TCP; needs an emulated link)"
    )]
    pub tcp_initrwnd: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Transport (both lab hosts' kernel TCP; needs an emulated link)"
    )]
    pub tcp_rmem: Option<String>,
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Transport (both lab hosts' kernel TCP; needs an emulated link)"
    )]
    pub tcp_wmem: Option<String>,
    /// Write every packet that crosses the link to this pcap file (tshark/Wireshark).
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub pcap: Option<PathBuf>,

    /// Run only these `[[part]]`s of the scenario, e.g. `--part latency,payload`.
    #[arg(long, value_name = "NAMES")]
    pub part: Option<String>,
    /// Run every case N times (CSV shows mean, min and max).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Seed for payload patterns and anything random; recorded in the results.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Fail a case after this long without progress.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Use a running `wirebench serve` at HOST[:PORT] instead of the embedded server.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub server: Option<String>,
    /// Results directory (default: wirebench-runs/<timestamp>-<scenario>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Parameters that split results.csv into tables (empty: one table).
    #[arg(long, value_name = "P1,P2")]
    pub tables: Option<String>,
    /// Metrics kept in results.csv; `rtt.*` matches a prefix.
    #[arg(long, value_name = "M1,M2")]
    pub columns: Option<String>,
    /// Print each case's record as a JSON line on stdout instead of the summary table.
    #[arg(long)]
    pub json: bool,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not write report.html and charts/ at the end (`wirebench report DIR` later).
    #[arg(long)]
    pub no_report: bool,

    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub duration: Option<String>,
    /// Warn before the run about every case estimated to take longer than this.
    #[arg(long, value_name = "DURATION", default_value = MAX_CASE_TIME)]
    pub max_case_time: String,
    /// Start even if the run is estimated to take more than 2 hours.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the cases' count and estimated time (and capture size, and any missing
    /// prerequisite), then exit 0.
    #[arg(long)]
    pub dry_run: bool,
    /// Run the cases whose prerequisites (peers, packages, root) are present and record
    /// the others as skipped, with what they lack, instead of refusing the run.
    #[arg(long)]
    pub skip_missing: bool,
    /// Run shard I of N of a load scenario (I from 0): every load case generates the
    /// sessions i with i mod N = I, against the one server in --load-target; `wirebench
    /// merge` adds the shards' results up. Without it, a Kubernetes Indexed Job's
    /// JOB_COMPLETION_INDEX with WIREBENCH_SHARDS=N sets it (docs/cluster.md).
    #[arg(long, value_name = "I/N", help_heading = "Sharded runs")]
    pub shard: Option<String>,
    /// Meet the other shards before each case at shard 0's HOST:PORT (shard 0 listens on
    /// PORT); they agree on the case's start there and measure their clocks' offsets.
    /// Also WIREBENCH_BARRIER.
    #[arg(long, value_name = "HOST:PORT", help_heading = "Sharded runs")]
    pub barrier: Option<String>,
    /// Start the first case at this time (RFC 3339, UTC: 2026-11-26T10:00:00Z), the same
    /// for every shard; without --barrier each later case starts a fixed slot after it
    /// (its estimate, a quarter more, and 10 s), the clocks trusted to NTP.
    #[arg(long, value_name = "TIME", help_heading = "Sharded runs")]
    pub start_at: Option<String>,
    /// How long shards wait for each other at the barrier (to join, and at each case);
    /// default 10m.
    #[arg(long, value_name = "DURATION", help_heading = "Sharded runs")]
    pub barrier_timeout: Option<String>,
    /// Refuse a capture estimated above this size; stop writing it there at run time.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = PCAP_LIMIT,
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub pcap_limit: String,
    /// Keep at most this many bytes of each captured packet (e.g. 128: the headers).
    #[arg(
        long,
        value_name = "BYTES",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub pcap_snaplen: Option<String>,
}

#[derive(Args)]
pub struct ServeArgs {
    /// Control address to listen on. Data listeners open on the same IP, ephemeral ports.
    /// At most 128 control connections: each must send its first request within 10s, and
    /// is closed after 5 min without a request while no session of its own runs; when all
    /// are taken, a new client takes the place of the oldest idle one.
    #[arg(long, default_value_t = format!("127.0.0.1:{DEFAULT_PORT}"), value_name = "ADDR")]
    pub listen: String,
    /// Largest payload a client may ask for.
    #[arg(long, default_value = "16MiB", value_name = "SIZE")]
    pub max_payload: String,
    /// Do not log connections and errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also serve another protocol's server alone, NAME=ADDR (repeatable): the list is
    /// the registry's ([`also_help`]).
    #[arg(long, value_name = "NAME=ADDR")]
    pub also: Vec<String>,
    /// Threads for each proxy given to --also (socks5, shadowsocks, convert), each with
    /// its own SO_REUSEPORT listener on the proxy's port and its own runtime, so that
    /// the kernel spreads connections over the cores (0: one per core).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub proxy_threads: usize,
    /// Close a connection to an --also server that has not sent its opening this long
    /// after connecting: a whole HTTP request head (HTTP/1.1) or the first request (h2c,
    /// gRPC), a WebSocket upgrade; an HTTP connection with no request open is closed
    /// within 1 to 2 times this long (a client that stalls, or sends its opening a byte a
    /// second, holds a socket until then). Request heads are capped at 64 KiB (HTTP) and
    /// 16 KiB (a WebSocket upgrade): over it, 431 and the connection closed.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub also_header_timeout: String,
    /// Connections each --also server holds open at most, over all its threads: over it
    /// a new connection is closed as soon as it is accepted, and a line says so at most
    /// once a second.
    #[arg(long, default_value_t = wirebench_net::cap::DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    pub also_max_connections: usize,
    /// HTTP/2 streams (gRPC calls, h2c requests) one connection to an --also server may
    /// have open at once, announced as SETTINGS_MAX_CONCURRENT_STREAMS: the calls over
    /// it are refused (REFUSED_STREAM), and a connection refused (or reset for broken
    /// requests) N times is closed with GOAWAY ENHANCE_YOUR_CALM. Each open stream holds
    /// its request and reply (about 10 KiB for a small gRPC call), so this bounds what a
    /// client that never reads its replies can make a connection hold and cost. 100 is
    /// RFC 9113's recommended minimum and grpc-swift's and nghttp2's default; a client
    /// that opens more streams before the server's SETTINGS reach it (a high rate over a
    /// long round trip) has the excess refused: raise it for such a client.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub also_max_streams: u32,
    /// Ban a source address after this many connections refused for what they sent
    /// within 10 s, on any of this process's ports (bytes that are not the protocol, a
    /// head, frame or stanza over its cap; never a timeout or a reset): its packets are
    /// dropped by a socket filter on every listener, as behind fail2ban, and one line
    /// says so. 0: never ban (e.g. while fuzzing a server on purpose).
    #[arg(long, default_value_t = wirebench_net::ban::DEFAULT_POLICY.strikes, value_name = "N")]
    pub ban_after: u32,
    /// How long a ban lasts.
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub ban_for: String,
}

/// The command line's definition, with each parameter's default (from the registry the
/// runner uses) appended to its flag's help: the flags themselves have no clap default,
/// since a flag given overrides the scenario and one not given must not.
/// The plugins' commands (from the runner's registry) are added after `k8s`, and their
/// `serve` flags to `serve`, each plugin's under its own heading.
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for c in wirebench_runner::registry::commands() {
        cmd = cmd.subcommand((c.command)());
    }
    // The order `wirebench --help` lists them in: the built-in commands as declared, the
    // plugins' after `k8s`.
    let mut order: Vec<String> = Vec::new();
    for sub in cmd.get_subcommands().map(|c| c.get_name().to_string()) {
        let plugin = wirebench_runner::registry::command(&sub).is_some();
        if !plugin {
            order.push(sub.clone());
        }
        if sub == "k8s" {
            order.extend(
                wirebench_runner::registry::commands()
                    .map(|c| (c.command)().get_name().to_string()),
            );
        }
    }
    cmd = cmd.mut_subcommands(|c| {
        let at = order
            .iter()
            .position(|n| n == c.get_name())
            .unwrap_or(order.len());
        c.display_order(at)
    });
    // `mut_subcommands`, not `mut_subcommand`: the latter moves `run` to the end of the list.
    cmd.mut_subcommands(|mut run| {
        if run.get_name() == "serve" {
            return serve_command(run);
        }
        let doctor = run.get_name() == "doctor";
        if run.get_name() != "run" && !doctor {
            return run;
        }
        // Doctor takes run's flags to plan the same cases; those that do not choose cases
        // stay out of its help.
        if doctor {
            for id in DOCTOR_HIDDEN {
                run = run.mut_arg(*id, |a| a.hide(true));
            }
            run = run.mut_arg("scenario", |a| {
                a.help(
                    "Scenario file (TOML) or built-in scenario name; default: every built-in \
                     scenario (with parameter flags: the built-in `default`, as for run)",
                )
            });
        }
        // Each protocol's own parameters get a flag of their own, so a new protocol's
        // parameters reach the command line without a change here.
        for p in protocol_params() {
            let mut help = format!("{} ({} only)", capitalized(p.help), owners(p.name));
            if !p.default.is_empty() {
                help.push_str(&format!(" [default: {}]", p.default));
            }
            run = run.arg(
                clap::Arg::new(flag_id(p.name))
                    .long(p.name.replace(['.', '_'], "-"))
                    .value_name("LIST")
                    .help(help)
                    .help_heading("Protocol parameters (comma-separated lists become grid axes)"),
            );
        }
        let params = wirebench_runner::params::params()
            .iter()
            .chain(wirebench_runner::params::LINK_PARAMS);
        for p in params {
            let id = p.name.replace('.', "_");
            if run.get_arguments().any(|a| a.get_id() == id.as_str()) {
                run = run.mut_arg(id, |a| a.help(registry_help(p)));
            }
        }
        run
    })
}

/// Examples of a shared parameter's values, which its flag's help adds to the registry's.
const EXAMPLES: &[(&str, &str)] = &[
    ("payload", "2,100,1500,10KiB,1MiB"),
    ("rounds", "1000 or 10k"),
    ("think", "0,5s,10s"),
    ("count", "100k"),
    ("duration", "1s,5s"),
    ("tcp.cc", "cubic,reno,bbr"),
    ("tcp.initcwnd", "4,10,40"),
    ("tcp.initrwnd", "10,100"),
    ("tcp.rmem", "64KiB,4MiB"),
    ("tcp.wmem", "64KiB,4MiB"),
    ("link.rate", "2400bit,19.2kbit"),
    ("link.delay", "0,500ms,1s"),
    ("link.outage", "none,30s+10s,30s+60s"),
];

/// A shared parameter's flag help: the registry's text, an example, its default.
fn registry_help(p: &wirebench_runner::params::ParamSpec) -> String {
    let mut help = match p.name {
        // The registry's names, with where to read more about each.
        "protocol" => protocol_help(),
        _ => capitalized(p.help),
    };
    if let Some((_, e)) = EXAMPLES.iter().find(|(n, _)| *n == p.name) {
        help.push_str(&format!(", e.g. {e}"));
    }
    if !p.default.is_empty() {
        help.push_str(&format!(" [default: {}]", p.default));
    }
    help
}

/// `--protocol`'s help, naming the registry's protocols.
fn protocol_help() -> String {
    let names = wirebench_runner::registry::names();
    let (last, rest) = names.split_last().expect("a registered protocol");
    format!(
        "Wire protocol: {} or {last}. `wirebench protocols` says what each runs against and \
         what needs root (raw and xmpp run on loopback against wirebench's own servers)",
        rest.join(", ")
    )
}

/// `serve` with `--also`'s help naming the protocols that can serve alone, and each
/// plugin's own flags.
fn serve_command(mut serve: clap::Command) -> clap::Command {
    let alone: Vec<String> = wirebench_runner::registry::REGISTRY
        .iter()
        .filter_map(|p| Some(format!("{} {}", p.name(), p.serve_alone_help()?)))
        .collect();
    let help = format!(
        "Also serve another protocol's server alone, NAME=ADDR (repeatable): {}. For \
         third-party clients: wrk, h2load, ghz, browsers",
        alone.join(", ")
    );
    // Each flag's help on the line below it, in every section, as when they were one.
    serve = serve.mut_arg("also", |a| a.help(help)).next_line_help(true);
    for p in wirebench_runner::registry::REGISTRY {
        serve = p.serve_flags(serve);
    }
    serve
}

/// Run's flags that `wirebench doctor` accepts (it flattens run's) but does not read.
const DOCTOR_HIDDEN: &[&str] = &[
    "repeat",
    "seed",
    "timeout",
    "server",
    "out",
    "tables",
    "columns",
    "json",
    "quiet",
    "no_report",
    "max_case_time",
    "yes",
    "dry_run",
    "skip_missing",
    "shard",
    "barrier",
    "start_at",
    "barrier_timeout",
    "pcap",
    "pcap_limit",
    "pcap_snaplen",
];

/// Parameters that belong to a protocol (not shared by all).
fn protocol_params() -> impl Iterator<Item = &'static wirebench_runner::params::ParamSpec> {
    wirebench_runner::params::params()
        .iter()
        .filter(|p| !wirebench_runner::params::owners(p.name).is_empty())
}

fn owners(name: &str) -> String {
    wirebench_runner::params::owners(name).join(", ")
}

fn flag_id(name: &str) -> String {
    format!("param_{}", name.replace(['.', '-'], "_"))
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// What the command line asks for: a built-in command (with `serve`'s flags as parsed,
/// which the plugins read their own from), or a plugin's command.
pub enum Invocation {
    Builtin(Box<Cli>, Option<clap::ArgMatches>),
    Plugin(
        &'static wirebench_runner::registry::PluginCommand,
        clap::ArgMatches,
    ),
}

/// Parses the command line; an unknown subcommand gets a suggestion (clap's own misses
/// short typos such as `rn`), any other mistake clap's message. Exits on error or help.
pub fn parse() -> Invocation {
    let err = match command().try_get_matches().and_then(|m| {
        if let Some((name, sub)) = m.subcommand() {
            if let Some(c) = wirebench_runner::registry::command(name) {
                return Ok(Invocation::Plugin(c, sub.clone()));
            }
        }
        let mut cli = Cli::from_arg_matches(&m)?;
        let (args, sub) = match &mut cli.command {
            Command::Run(args) => (Some(&mut **args), m.subcommand_matches("run")),
            Command::Doctor(d) => (Some(&mut d.run), m.subcommand_matches("doctor")),
            _ => (None, None),
        };
        if let (Some(args), Some(rm)) = (args, sub) {
            args.protocol_params = protocol_params()
                .filter_map(|p| {
                    let v = rm.get_one::<String>(&flag_id(p.name))?;
                    Some((p.name.to_string(), v.clone()))
                })
                .collect();
        }
        let serve = m.subcommand_matches("serve").cloned();
        Ok(Invocation::Builtin(Box::new(cli), serve))
    }) {
        Ok(i) => return i,
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
            let names: Vec<&str> = cmd
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name())
                .collect();
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

impl K8sArgs {
    /// What the manifests are made of; every flag is checked here, before anything is
    /// written.
    pub fn spec(&self) -> Result<crate::k8s::Spec> {
        use crate::k8s;
        if self.shards == 0 {
            bail!(
                "--shards 0: at least 1 (a run of one shard is a plain `wirebench run` in a pod)"
            );
        }
        if self.shards > k8s::MAX_SHARDS {
            bail!(
                "--shards {}: at most {}: shard 0 is the barrier every other shard meets \
                 before each case, one connection each; more load is better spread over \
                 fewer, larger pods (--cpu, --memory)",
                self.shards,
                k8s::MAX_SHARDS
            );
        }
        if self.image.trim().is_empty() || self.image.contains(char::is_whitespace) {
            bail!(
                "--image {:?}: give the image's reference, e.g. registry.example/wirebench:1",
                self.image
            );
        }
        let (scenario_text, stem) = k8s::scenario(&self.scenario)?;
        let name = match &self.name {
            Some(n) => {
                k8s::check_name(n, "--name")?;
                n.clone()
            }
            None => {
                let n = k8s::default_name(&stem);
                k8s::check_name(&n, "the default name")
                    .map_err(|e| anyhow!("{e}; give one with --name"))?;
                n
            }
        };
        if let Some(ns) = &self.namespace {
            if !k8s::is_label(ns) {
                bail!("--namespace {ns:?}: not a DNS label (lower-case letters, digits, '-')");
            }
        }
        for (flag, v) in [
            ("--results-claim", &self.results_claim),
            ("--storage-class", &self.storage_class),
        ] {
            if let Some(v) = v {
                if !k8s::is_subdomain(v) {
                    bail!(
                        "{flag} {v:?}: not a Kubernetes object name (lower-case letters, digits, '-', '.')"
                    );
                }
            }
        }
        k8s::check_quantity("--storage", &self.storage)?;
        if let Some(c) = &self.cpu {
            k8s::check_quantity("--cpu", c)?;
        }
        if let Some(m) = &self.memory {
            k8s::check_quantity("--memory", m)?;
        }
        let deadline = wirebench_model::parse_duration(&self.deadline)
            .map_err(|e| anyhow!("--deadline: {e}"))?;
        if deadline.as_secs() < 1 {
            bail!("--deadline {}: at least 1s", self.deadline);
        }
        let server = match self.with_server {
            true => Some(k8s::ServerSpec {
                endpoint: wirebench_runner::registry::load_server()
                    .ok_or_else(|| anyhow!("--with-server: no protocol declares a load server"))?,
                sizing: wirebench_runner::registry::LoadSizing {
                    users: self.server_users,
                    sessions: self.server_sessions,
                    contacts: self.server_contacts,
                },
            }),
            false => None,
        };
        let target = match (&self.target, &server) {
            (Some(t), _) => {
                k8s::check_target(t)?;
                Some(t.clone())
            }
            (None, Some(s)) => Some(k8s::server_target(&name, &s.endpoint)),
            (None, None) => None,
        };
        k8s::check_extra(&self.extra, target.is_some())?;
        Ok(k8s::Spec {
            name,
            namespace: self.namespace.clone(),
            shards: self.shards,
            image: self.image.clone(),
            scenario_text,
            target,
            results_claim: self.results_claim.clone(),
            storage: self.storage.clone(),
            storage_class: self.storage_class.clone(),
            deadline,
            cpu: self.cpu.clone(),
            memory: self.memory.clone(),
            extra: self.extra.clone(),
            server,
        })
    }
}

impl RunArgs {
    /// The run these flags ask for; the runner gives each its meaning.
    pub fn request(&self) -> RunRequest {
        // In this order, so the first bad value is the one reported.
        let shared = [
            ("protocol", &self.protocol),
            ("workload", &self.workload),
            ("payload", &self.payload),
            ("rounds", &self.rounds),
            ("think", &self.think),
            ("count", &self.count),
            ("duration", &self.duration),
            ("tcp.cc", &self.tcp_cc),
            ("tcp.initcwnd", &self.tcp_initcwnd),
            ("tcp.initrwnd", &self.tcp_initrwnd),
            ("tcp.rmem", &self.tcp_rmem),
            ("tcp.wmem", &self.tcp_wmem),
        ];
        let link = [
            ("link", &self.link),
            ("uplink", &self.uplink),
            ("downlink", &self.downlink),
            ("link2", &self.link2),
            ("link.rate", &self.link_rate),
            ("link.delay", &self.link_delay),
            ("link.jitter", &self.link_jitter),
            ("link.loss", &self.link_loss),
            ("link.queue", &self.link_queue),
            ("link.mtu", &self.link_mtu),
            ("link.outage", &self.link_outage),
            ("link.trace", &self.link_trace),
            ("link.paths", &self.link_paths),
        ];
        let given = |list: &[(&str, &Option<String>)]| -> Vec<(String, String)> {
            list.iter()
                .filter_map(|(name, value)| Some((name.to_string(), (*value).clone()?)))
                .collect()
        };
        let mut params = given(&shared);
        params.extend(self.protocol_params.iter().cloned());
        params.extend(given(&link));
        RunRequest {
            scenario: self.scenario.clone(),
            params,
            parts: self.part.clone(),
            repeat: self.repeat,
            seed: self.seed,
            timeout: self.timeout.clone(),
            server: self.server.clone(),
            out: self.out.clone(),
            tables: self.tables.clone(),
            columns: self.columns.clone(),
            max_case_time: self.max_case_time.clone(),
            pcap: self.pcap.clone(),
            pcap_limit: self.pcap_limit.clone(),
            pcap_snaplen: self.pcap_snaplen.clone(),
            command: std::env::args().collect(),
            // In a Kubernetes Indexed Job the pod's index is in JOB_COMPLETION_INDEX; the
            // count is not given to pods, so the Job sets WIREBENCH_SHARDS.
            shard: self.shard.clone().or_else(|| {
                let n = std::env::var("WIREBENCH_SHARDS").ok()?;
                let i = std::env::var("JOB_COMPLETION_INDEX")
                    .unwrap_or_else(|_| "(JOB_COMPLETION_INDEX is unset)".into());
                Some(format!("{i}/{n}"))
            }),
            skip_missing: self.skip_missing,
            barrier: self
                .barrier
                .clone()
                .or_else(|| std::env::var("WIREBENCH_BARRIER").ok()),
            start_at: self.start_at.clone(),
            barrier_timeout: self.barrier_timeout.clone(),
        }
    }
}

impl ServeArgs {
    /// The address to listen on, as `host:port` for the resolver.
    pub fn listen(&self) -> Result<String> {
        wirebench_net::parse_addr(&self.listen, true).map_err(|e| anyhow!("--listen {e}"))
    }
}

impl ShellArgs {
    /// The host's uplink and downlink: `--link` for both, `--uplink` / `--downlink`
    /// replacing one direction.
    pub fn links(&self) -> Result<(LinkSpec, LinkSpec)> {
        let parse = |flag: &str, s: &Option<String>, d| -> Result<Option<LinkSpec>> {
            s.as_deref()
                .map(|t| LinkSpec::parse_direction(t, d).with_context(|| format!("--{flag}")))
                .transpose()
        };
        let up = match parse("uplink", &self.uplink, Direction::Up)? {
            Some(up) => Some(up),
            None => parse("link", &self.link, Direction::Up)?,
        };
        let down = match parse("downlink", &self.downlink, Direction::Down)? {
            Some(down) => Some(down),
            None => parse("link", &self.link, Direction::Down)?,
        };
        let (Some(up), Some(down)) = (up, down) else {
            bail!(
                "describe the link with --link (or both --uplink and --downlink), e.g. --link 2400bit/500ms"
            );
        };
        Ok((up, down))
    }
}

impl CompareArgs {
    /// `--threshold` as a fraction: 5% or 0.05.
    pub fn threshold(&self) -> Result<f64> {
        let text = &self.threshold;
        let t = text.trim();
        let v = match t.strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
            None => t.parse::<f64>(),
        }
        .map_err(|_| anyhow!("--threshold {text:?}: expected a change such as 5% or 0.05"))?;
        if !(v.is_finite() && v >= 0.0) {
            bail!("--threshold {text:?}: must be zero or more");
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run --help` names every registered protocol, so its list cannot fall behind the
    /// registry.
    #[test]
    fn protocol_help_names_every_registered_protocol() {
        let cmd = command();
        let run = cmd.find_subcommand("run").expect("run");
        let arg = run
            .get_arguments()
            .find(|a| a.get_id() == "protocol")
            .expect("--protocol");
        let help = arg.get_help().expect("help").to_string();
        for name in wirebench_runner::registry::names() {
            assert!(
                help.split(|c: char| !c.is_alphanumeric())
                    .any(|w| w == name),
                "--protocol help lacks {name}: {help}"
            );
        }
    }

    /// Every shared parameter's flag is described by the registry's text (`--workload`'s
    /// once named two of its four workloads), for `run` and `doctor` alike.
    #[test]
    fn parameter_flags_are_described_by_the_registry() {
        let cmd = command();
        for sub in ["run", "doctor"] {
            let run = cmd.find_subcommand(sub).expect(sub);
            let params = wirebench_runner::params::params()
                .iter()
                .chain(wirebench_runner::params::LINK_PARAMS);
            for p in params.filter(|p| p.name != "protocol") {
                let long = p.name.replace(['.', '_'], "-");
                let arg = run
                    .get_arguments()
                    .find(|a| a.get_long() == Some(long.as_str()))
                    .unwrap_or_else(|| panic!("{sub} has no --{long}"));
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                assert!(
                    help.starts_with(&capitalized(p.help)),
                    "{sub} --{long}: {help:?} is not the registry's {:?}",
                    p.help
                );
            }
        }
    }

    /// The plugins' commands and serve flags reach the command line through the registry:
    /// every command once, after `k8s`, and XMPP's serve flags under their own heading.
    #[test]
    fn plugin_commands_and_serve_flags_come_from_the_registry() {
        let cmd = command();
        let listed: Vec<&str> = {
            let mut subs: Vec<&clap::Command> = cmd.get_subcommands().collect();
            subs.sort_by_key(|c| c.get_display_order());
            subs.iter().map(|c| c.get_name()).collect()
        };
        let plugin: Vec<String> = wirebench_runner::registry::commands()
            .map(|c| (c.command)().get_name().to_string())
            .collect();
        for name in [
            "x2x",
            "converter",
            "converter-client",
            "xmpp-worker",
            "xmpp-load-worker",
        ] {
            assert!(plugin.iter().any(|p| p == name), "{name} is no plugin's");
            assert_eq!(listed.iter().filter(|l| **l == name).count(), 1, "{name}");
        }
        let k8s = listed.iter().position(|n| *n == "k8s").unwrap();
        assert_eq!(listed[k8s + 1], "x2x", "{listed:?}");
        let serve = cmd.find_subcommand("serve").unwrap();
        let xmpp = serve
            .get_arguments()
            .find(|a| a.get_id() == "xmpp_bosh")
            .expect("--xmpp-bosh");
        assert!(
            xmpp.get_help_heading()
                .is_some_and(|h| h.starts_with("XMPP"))
        );
        let also = serve
            .get_arguments()
            .find(|a| a.get_id() == "also")
            .unwrap();
        let help = also.get_help().unwrap().to_string();
        for p in wirebench_runner::registry::REGISTRY {
            if p.serve_alone_help().is_some() {
                assert!(help.contains(&format!("{} (", p.name())), "{help}");
            }
        }
    }
}
