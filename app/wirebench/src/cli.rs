//! The command line: clap's definitions, help with the registry's defaults, a
//! did-you-mean for unknown commands, and each command's flags turned into what its
//! library takes. Nothing here runs anything.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use wirebench_link::LinkSpec;
use wirebench_model::Bytes;
use wirebench_net::DEFAULT_PORT;
use wirebench_raw_server::ServerConfig;
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
    /// One worker process of `serve --xmpp` (started by it, not by hand).
    #[command(hide = true, name = "xmpp-worker")]
    XmppWorker {
        #[arg(long)]
        index: usize,
    },
    /// One generator process of an XMPP load case (started by `run`, not by hand).
    #[command(hide = true, name = "xmpp-load-worker")]
    XmppLoadWorker,
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
    /// Run a zero-handshake XMPP server link gateway (XEP-0361) until Ctrl-C.
    ///
    /// The gateway attaches to the local XMPP server as the XEP-0114 component of the
    /// remote domain(s) and carries their stanzas to the peer gateway over one TCP
    /// connection: no stream negotiation, zlib with a preset dictionary, TCP Fast Open,
    /// and nothing lost across link outages (acknowledged, resent in order). The file
    /// format, with every key explained: protocols/xmpp/x2x/example.toml; docs/x2x.md.
    X2x {
        /// Gateway configuration (TOML).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Run an RFC 8803 Transport Converter (the 0-RTT TCP Convert Protocol) until Ctrl-C.
    ///
    /// A client's SYN carries (with TCP Fast Open) a Connect TLV naming its server and its
    /// first data; the converter connects onwards, answers once the server has accepted,
    /// forwards the data and relays both ways. It connects only to the networks --allow
    /// names and answers others with the RFC's "Not Authorized" error. RFC 8803 forbids
    /// loopback destinations: name them in --allow only to test on one machine. With Fast
    /// Open the client's data rides in the converter's SYN to the server too. Clients need
    /// net.ipv4.tcp_fastopen with bit 1, this host both bits (3). The client
    /// side is in the connect workload (--protocol convert) and, for any program,
    /// `wirebench converter-client`; docs/protocols/proxies.md.
    #[command(after_help = "Examples:\n  \
        wirebench converter --listen 0.0.0.0:5124 --allow 198.51.100.0/24,2001:db8::/32\n  \
        wirebench converter --listen 127.0.0.1:5124 --allow 127.0.0.1   # a test on this machine")]
    Converter {
        /// Address and port to listen on.
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// Destinations the converter may connect to: addresses and networks, comma-separated.
        #[arg(long, value_name = "NETWORKS")]
        allow: String,
        /// Do not use TCP Fast Open, neither towards clients nor onwards to servers (each
        /// then pays a round trip for its handshake).
        #[arg(long)]
        no_tfo: bool,
    },
    /// Run the client side of RFC 8803 for any program: a local SOCKS5 proxy that sends
    /// each connection through a Transport Converter, until Ctrl-C.
    ///
    /// Each CONNECT (to an IPv4 or IPv6 address; the Convert protocol carries no names)
    /// becomes one connection to --via whose first write is the Connect TLV and the
    /// program's first data, in the SYN with TCP Fast Open (this host needs bit 1 of
    /// net.ipv4.tcp_fastopen). The CONNECT is answered at once so that the program sends
    /// that data; a converter's refusal then closes the connection and is logged here.
    /// docs/protocols/proxies.md.
    #[command(after_help = "Examples:\n  \
        wirebench converter-client --listen 127.0.0.1:1080 --via 192.0.2.10:5124\n  \
        curl --socks5 127.0.0.1:1080 http://198.51.100.7/   # --socks5 resolves names here")]
    ConverterClient {
        /// Local address for programs' SOCKS5 connections (keep it on loopback: the
        /// front has no authentication).
        #[arg(long, value_name = "ADDR")]
        listen: String,
        /// The Transport Converter, ADDR:PORT.
        #[arg(long, value_name = "ADDR")]
        via: String,
        /// Do not use TCP Fast Open towards the converter (a round trip more).
        #[arg(long)]
        no_tfo: bool,
        /// How long to wait for a program's first data before connecting without it
        /// (programs whose server speaks first, such as SMTP, wait this long).
        #[arg(long, value_name = "DURATION", default_value = "50ms")]
        first_data_wait: String,
    },
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

    /// Wire protocol: raw, xmpp, irc, mqtt, http, websocket, grpc, soap, rmi, direct,
    /// socks5, convert or shadowsocks. `wirebench protocols` says what each runs against and what
    /// needs root (raw and xmpp run on loopback against wirebench's own servers).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub protocol: Option<String>,
    /// pingpong (latency, one message in flight) or stream (throughput).
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub workload: Option<String>,
    /// Payload per message after the 21-byte header, e.g. 2,100,1500,10KiB,1MiB.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub payload: Option<String>,
    /// Ping-pong round trips per case, e.g. 1000 or 10k.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub rounds: Option<String>,
    /// Responder's wait before each answer, excluded from the RTT, e.g. 0,5s,10s.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Parameters (comma-separated lists become grid axes)"
    )]
    pub think: Option<String>,
    /// Messages per stream case, e.g. 100k.
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

    /// Link, both directions: RATE/DELAY (2400bit/500ms) or rate=..,delay=..,jitter=..,loss=..,queue=..,mtu=..,outage=30s+10s
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link: Option<String>,
    /// Client-to-server direction, replacing --link for that direction.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub uplink: Option<String>,
    /// Server-to-client direction, replacing --link for that direction.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub downlink: Option<String>,
    /// A second path between the two hosts (both directions), e.g. 10Mbit/40ms: Multipath
    /// TCP connections (--mptcp on) join a subflow over it.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link2: Option<String>,
    /// Link rate (both directions), e.g. 2400bit,19.2kbit.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_rate: Option<String>,
    /// One-way delay (both directions), e.g. 0,500ms,1s.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_delay: Option<String>,
    /// Extra delay per packet, uniform in [0, JITTER].
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_jitter: Option<String>,
    /// Random loss: 1%, 0.01, or Gilbert-Elliott ge:P_GB/P_BG/LOSS_GOOD/LOSS_BAD.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_loss: Option<String>,
    /// Drop-tail queue bound in bytes; given alone it is the only bound (add
    /// queue_packets=N in --link to keep a packet bound too) [default: 1000 packets].
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_queue: Option<String>,
    /// Link MTU in bytes [default: 1500].
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_mtu: Option<String>,
    /// Scheduled outage (both directions), replacing any in --link: START+DURATION
    /// (30s+10s: down 30 s after the link is set up, for 10 s), 'every PERIOD for
    /// DURATION [from START]', or none; e.g. none,30s+10s,30s+60s.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_outage: Option<String>,
    /// Mahimahi trace file: one 1500-byte delivery opportunity per line (ms); replaces the rate.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_trace: Option<String>,
    /// A round trip per connection, added to the link's delay: s3 (study S3's
    /// population), lognormal:p50=20ms,p95=200ms, uniform:10ms..300ms, fixed:50ms or
    /// cdf:FILE (lines RTT,FRACTION).
    #[arg(
        long,
        value_name = "DIST",
        help_heading = "Emulated link (any of these runs the case between two network namespaces; needs root)"
    )]
    pub link_paths: Option<String>,
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

    /// How long a raw stream sends, e.g. 1s,5s (default 2s unless --count is given; with
    /// --count, whichever ends first).
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
    #[arg(long, default_value_t = format!("127.0.0.1:{DEFAULT_PORT}"), value_name = "ADDR")]
    pub listen: String,
    /// Largest payload a client may ask for.
    #[arg(long, default_value = "16MiB", value_name = "SIZE")]
    pub max_payload: String,
    /// Do not log connections and errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also serve another protocol's server alone, NAME=ADDR (repeatable): http
    /// (HTTP/1.1 and h2c: POST /echo, /sink), soap (POST /soap), grpc
    /// (wirebench.Bench, protocols/grpc/plugin/proto/wirebench.proto), websocket
    /// (ws://ADDR/echo, /sink). For third-party clients: wrk, h2load, ghz, browsers.
    #[arg(long, value_name = "NAME=ADDR")]
    pub also: Vec<String>,
    /// Also serve XMPP client-to-server on this address, e.g. 127.0.0.1:5222 (the built-in
    /// server: SCRAM or PLAIN, STARTTLS with --xmpp-tls). Users user1..userN, passwords
    /// pass1..passN.
    #[arg(long, value_name = "ADDR")]
    pub xmpp: Option<String>,
    /// The XMPP domain served (clients log in as user1@DOMAIN).
    #[arg(long, default_value = "wirebench.test", value_name = "DOMAIN")]
    pub xmpp_domain: String,
    /// XMPP accounts: user1..userN, passwords pass1..passN (Tsung's convention).
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub xmpp_users: u64,
    /// Roster size of each numbered XMPP user: the N/2 users before and after it.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub xmpp_contacts: u64,
    /// XMPP accounts from a file instead: one `NAME PASSWORD` per line (# comments).
    #[arg(long, value_name = "FILE")]
    pub xmpp_users_file: Option<PathBuf>,
    /// XMPP rosters from a file: one `NAME: CONTACT CONTACT ...` per line, a contact
    /// being a user name or a bare JID.
    #[arg(long, value_name = "FILE")]
    pub xmpp_roster_file: Option<PathBuf>,
    /// XMPP sessions to be able to hold at once. Above what one process may open (its
    /// open-file limit, 20,000 here), the XMPP workers are processes.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub xmpp_sessions: usize,
    /// XMPP workers (event loops) sharing the port through SO_REUSEPORT; default: one per
    /// core, or more when --xmpp-sessions needs more processes.
    #[arg(long, value_name = "N")]
    pub xmpp_workers: Option<usize>,
    /// Run the XMPP workers as processes even when one process would hold the sessions.
    #[arg(long)]
    pub xmpp_processes: bool,
    /// Give each XMPP worker its own port (PORT, PORT+1, ...) instead of one shared port,
    /// so a client chooses its worker.
    #[arg(long)]
    pub xmpp_port_per_worker: bool,
    /// Offer STARTTLS on the XMPP port, with a self-signed certificate for the domain
    /// made at start (clients must trust it or skip verification).
    #[arg(long)]
    pub xmpp_tls: bool,
    /// Close an XMPP connection that has not bound a resource this long after connecting
    /// (a client that connects and stalls holds a socket until then).
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub xmpp_handshake_timeout: String,
    /// Largest XMPP stanza a client may send; a larger one gets a policy-violation stream
    /// error and the connection is closed.
    #[arg(long, default_value = "64KiB", value_name = "SIZE")]
    pub xmpp_max_stanza: String,
    /// Unsent bytes an XMPP session may queue (a client that stops reading) before it is
    /// closed.
    #[arg(long, default_value = "4MiB", value_name = "SIZE")]
    pub xmpp_max_queued: String,
    /// Also serve XMPP over WebSocket (RFC 7395, subprotocol xmpp, any path, e.g.
    /// ws://127.0.0.1:5280/xmpp-websocket) on this address, in front of --xmpp (or
    /// --xmpp-upstream).
    #[arg(long, value_name = "ADDR")]
    pub xmpp_websocket: Option<String>,
    /// Also serve XMPP over BOSH (XEP-0124/0206, POST to any path, e.g.
    /// http://127.0.0.1:5281/http-bind) on this address, in front of --xmpp (or
    /// --xmpp-upstream).
    #[arg(long, value_name = "ADDR")]
    pub xmpp_bosh: Option<String>,
    /// Also serve XMPP over SockJS 0.3.3 (every transport: websocket, xhr-streaming,
    /// xhr-polling, jsonp-polling, eventsource, htmlfile; any prefix, e.g.
    /// http://127.0.0.1:5282/xmpp) on this address, in front of --xmpp (or --xmpp-upstream).
    #[arg(long, value_name = "ADDR")]
    pub xmpp_sockjs: Option<String>,
    /// SockJS's JSESSIONID option: /info says cookie_needed and session requests set the
    /// JSESSIONID cookie (for load balancers with sticky sessions).
    #[arg(long)]
    pub xmpp_sockjs_cookie: bool,
    /// The XMPP server the WebSocket and BOSH endpoints open their sessions' TCP
    /// connections to, if not the built-in one of --xmpp (e.g. Prosody's port 5222).
    #[arg(long, value_name = "ADDR")]
    pub xmpp_upstream: Option<String>,
    /// A BOSH session with no request held for this long ends (XEP-0124 inactivity).
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub xmpp_bosh_inactivity: String,
    /// Longest BOSH `wait` granted: an idle held request is answered empty after it.
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub xmpp_bosh_wait: String,
    /// Largest BOSH request body; a larger one ends its session with policy-violation.
    #[arg(long, default_value = "128KiB", value_name = "SIZE")]
    pub xmpp_bosh_max_body: String,
}

/// The command line's definition, with each parameter's default (from the registry the
/// runner uses) appended to its flag's help: the flags themselves have no clap default,
/// since a flag given overrides the scenario and one not given must not.
fn command() -> clap::Command {
    // `mut_subcommands`, not `mut_subcommand`: the latter moves `run` to the end of the list.
    Cli::command().mut_subcommands(|mut run| {
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

/// Parses the command line; an unknown subcommand gets a suggestion (clap's own misses
/// short typos such as `rn`), any other mistake clap's message. Exits on error or help.
pub fn parse() -> Cli {
    let err = match command().try_get_matches().and_then(|m| {
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
        Ok(cli)
    }) {
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
        let target = match (&self.target, self.with_server) {
            (Some(t), _) => {
                k8s::check_target(t)?;
                Some(t.clone())
            }
            (None, true) => Some(k8s::server_target(&name)),
            (None, false) => None,
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
            server: self.with_server.then_some(k8s::ServerSpec {
                users: self.server_users,
                sessions: self.server_sessions,
                contacts: self.server_contacts,
            }),
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
    /// The WebSocket and BOSH endpoints asked for: (kind, listen address), checked
    /// before anything listens. The upstream is resolved by the caller.
    pub fn web_endpoints(&self) -> Result<Vec<(wirebench_plugin_xmpp::web::Kind, String)>> {
        let mut v = Vec::new();
        if self.xmpp_websocket.is_none() && self.xmpp_bosh.is_none() && self.xmpp_sockjs.is_none() {
            return Ok(v);
        }
        if self.xmpp.is_none() && self.xmpp_upstream.is_none() {
            anyhow::bail!(
                "--xmpp-websocket, --xmpp-bosh and --xmpp-sockjs front an XMPP server: give --xmpp ADDR (the \
                 built-in one) or --xmpp-upstream ADDR (another)"
            );
        }
        let size = |flag: &str, v: &str| -> Result<usize> {
            Ok(wirebench_model::Bytes::parse(v)
                .with_context(|| flag.to_string())?
                .0 as usize)
        };
        let secs = |flag: &str, v: &str| -> Result<u64> {
            let d = wirebench_model::parse_duration(v).with_context(|| flag.to_string())?;
            if d.as_secs() == 0 {
                anyhow::bail!("{flag} must be at least 1s (BOSH counts whole seconds)");
            }
            Ok(d.as_secs())
        };
        let max_stanza = size("--xmpp-max-stanza", &self.xmpp_max_stanza)?;
        if let Some(a) = &self.xmpp_websocket {
            v.push((
                wirebench_plugin_xmpp::web::Kind::WebSocket { max_stanza },
                a.clone(),
            ));
        }
        if let Some(a) = &self.xmpp_bosh {
            let cfg = wirebench_plugin_xmpp::web::BoshConfig {
                max_wait: secs("--xmpp-bosh-wait", &self.xmpp_bosh_wait)?,
                inactivity: secs("--xmpp-bosh-inactivity", &self.xmpp_bosh_inactivity)?,
                max_body: size("--xmpp-bosh-max-body", &self.xmpp_bosh_max_body)?,
                max_stanza,
                ..Default::default()
            };
            v.push((wirebench_plugin_xmpp::web::Kind::Bosh(cfg), a.clone()));
        }
        if let Some(a) = &self.xmpp_sockjs {
            let o = wirebench_plugin_xmpp::web::sockjs::SockJsOptions {
                max_stanza,
                jsessionid: self.xmpp_sockjs_cookie,
                ..Default::default()
            };
            v.push((wirebench_plugin_xmpp::web::Kind::SockJs(o), a.clone()));
        }
        Ok(v)
    }

    /// The built-in XMPP server's configuration, if `--xmpp` was given: its address,
    /// accounts (files read and checked here) and layout wishes.
    pub fn xmpp_config(&self) -> Result<Option<wirebench_plugin_xmpp::serve::XmppServerConfig>> {
        let Some(addr) = &self.xmpp else {
            return Ok(None);
        };
        let at: std::net::SocketAddr = addr
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("--xmpp {addr}: expected IP:PORT, e.g. 127.0.0.1:5222"))?;
        let mut cfg = wirebench_plugin_xmpp::serve::XmppServerConfig::new(
            at,
            &self.xmpp_domain,
            self.xmpp_users,
        );
        cfg.workers = self.xmpp_workers.unwrap_or(0);
        cfg.sessions = self.xmpp_sessions;
        cfg.processes = self.xmpp_processes;
        cfg.port_per_worker = self.xmpp_port_per_worker;
        cfg.accounts.numbered.contacts = self.xmpp_contacts;
        cfg.handshake_timeout = wirebench_model::parse_duration(&self.xmpp_handshake_timeout)
            .context("--xmpp-handshake-timeout")?;
        if cfg.handshake_timeout.is_zero() {
            anyhow::bail!("--xmpp-handshake-timeout must be more than 0 (every login needs time)");
        }
        let size = |flag: &str, text: &str| -> Result<usize> {
            let b = Bytes::parse(text).with_context(|| flag.to_string())?;
            match usize::try_from(b.0) {
                Ok(n) if n >= 1024 => Ok(n),
                _ => anyhow::bail!("{flag} {text}: give at least 1KiB"),
            }
        };
        cfg.max_stanza = size("--xmpp-max-stanza", &self.xmpp_max_stanza)?;
        cfg.max_queued = size("--xmpp-max-queued", &self.xmpp_max_queued)?;
        if let Some(f) = &self.xmpp_users_file {
            cfg.accounts
                .load_users(f)
                .map_err(|e| anyhow::anyhow!("--xmpp-users-file {e}"))?;
        }
        if let Some(f) = &self.xmpp_roster_file {
            cfg.accounts
                .load_rosters(f)
                .map_err(|e| anyhow::anyhow!("--xmpp-roster-file {e}"))?;
        }
        if self.xmpp_tls {
            cfg.tls = Some(
                wirebench_plugin_xmpp::serve::self_signed(&self.xmpp_domain)
                    .map_err(|e| anyhow::anyhow!("--xmpp-tls: {e}"))?,
            );
        }
        Ok(Some(cfg))
    }

    /// The address to listen on (`host:port` for the resolver) and the server's limits.
    pub fn config(&self) -> Result<(String, ServerConfig)> {
        let max = Bytes::parse(&self.max_payload).context("--max-payload")?;
        let max_payload = u32::try_from(max.0)
            .ok()
            .filter(|m| *m > 0)
            .ok_or_else(|| {
                anyhow!(
                    "--max-payload {}: must be from 1B to below 4GiB",
                    self.max_payload
                )
            })?;
        let cfg = ServerConfig {
            max_payload,
            log: !self.quiet,
            ..Default::default()
        };
        let listen =
            wirebench_net::parse_addr(&self.listen, true).map_err(|e| anyhow!("--listen {e}"))?;
        Ok((listen, cfg))
    }
}

impl ShellArgs {
    /// The host's uplink and downlink: `--link` for both, `--uplink` / `--downlink`
    /// replacing one direction.
    pub fn links(&self) -> Result<(LinkSpec, LinkSpec)> {
        let parse = |flag: &str, s: &Option<String>| -> Result<Option<LinkSpec>> {
            s.as_deref()
                .map(|t| LinkSpec::parse(t).with_context(|| format!("--{flag}")))
                .transpose()
        };
        let both = parse("link", &self.link)?;
        let up = parse("uplink", &self.uplink)?.or_else(|| both.clone());
        let down = parse("downlink", &self.downlink)?.or(both);
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
    use clap::CommandFactory;

    /// `run --help` names every registered protocol (it once described 3 of 12, and
    /// described xmpp as needing Prosody and root when it no longer did).
    #[test]
    fn protocol_help_names_every_registered_protocol() {
        let cmd = Cli::command();
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
}
