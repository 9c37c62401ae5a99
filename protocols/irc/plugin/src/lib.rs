//! IRC cases (study S1's IRC row): two linked ngircd servers, A (`a.irc.test`) in the
//! client host and B (`b.irc.test`) in the server host, so only their server link crosses
//! the emulated link; the clients are driven by [`workload`].
//!
//! Every case starts both servers fresh. Unlike XMPP, IRC servers link at start-up, not
//! at the first message: the runner starts the passive side (B) first, then A, which
//! connects to B about 1 s after its start (ngircd retries only every 5 s, so B must be
//! listening by then), and measures the link's set-up (`irc.link_setup`) by asking each
//! server for `LINKS` every 20 ms until it lists the other.
//!
//! The folder: the sans-IO client engine in `protocols/irc/engine` (`wirebench-irc`);
//! here the ngircd peer ([`ngircd`]), the S1 workloads ([`workload`]) and the plugin.

pub mod conn;
pub mod ngircd;
pub mod workload;

use ngircd::{Ngircd, NgircdConfig};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;
use wirebench_model::MetricSpec;
use wirebench_protocol::Fault;
use wirebench_protocol::hosts::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_protocol::params::PEER_STREAM_COUNT;
use wirebench_protocol::{Case, CaseLink, Ctx, Env, Outcome, PeerModel, Protocol, WorkloadError};
use workload::{IrcRun, Topology};

/// Server names, also in the lab hosts' hosts files (A reaches B by name).
pub const A_NAME: &str = "a.irc.test";
pub const B_NAME: &str = "b.irc.test";

/// ngircd: up to 2 s before the first link attempt, PASS/SERVER/greetings (~1.1 kB),
/// nicknames crossing; a line is 10-20 bytes of zlib beyond its text + 52 of TCP/IP.
const IRC_MODEL: PeerModel = PeerModel {
    start_s: 3.0,
    start_delays: 2.0,
    setup_bytes: 1300.0,
    setup_delays: 8.0,
    per_message: 80.0,
    processing_s: 0.003,
};

pub struct Irc;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Irc;

/// The metrics only its cases record (docs/results.md).
pub const IRC_LOGIN: MetricSpec =
    MetricSpec::new("irc.login", "s", "client1's registration with its server");
pub const IRC_LINK_SETUP: MetricSpec =
    MetricSpec::new("irc.link_setup", "s", "the servers' link set-up");
pub const IRC_NICK_KNOWN: MetricSpec = MetricSpec::new(
    "irc.nick_known",
    "s",
    "until client2's nick was known across the link",
);
pub const IRC_FIRST_DELIVERY: MetricSpec = MetricSpec::new(
    "irc.first_delivery",
    "s",
    "the first message's trip between the clients",
);
pub const IRC_LINES_PER_MESSAGE: MetricSpec =
    MetricSpec::new("irc.lines_per_message", "count", "IRC lines per message");
pub const IRC_DRAIN_WAIT: MetricSpec = MetricSpec::new(
    "irc.drain_wait",
    "s",
    "waiting for the link to drain before the case",
);

static METRICS: &[MetricSpec] = &[
    IRC_LOGIN,
    IRC_LINK_SETUP,
    IRC_NICK_KNOWN,
    IRC_FIRST_DELIVERY,
    IRC_LINES_PER_MESSAGE,
    IRC_DRAIN_WAIT,
];

impl Protocol for Irc {
    fn metrics(&self) -> &'static [MetricSpec] {
        METRICS
    }
    fn name(&self) -> &'static str {
        "irc"
    }

    fn summary(&self) -> &'static str {
        "IRC between two linked ngircd servers in lab hosts (study S1's IRC row; needs root)"
    }

    fn lab_hosts(&self, _case: &Case) -> Option<&'static [(Ipv4Addr, &'static str)]> {
        Some(&[(CLIENT_ADDR, A_NAME), (SERVER_ADDR, B_NAME)])
    }

    fn servers(&self, _case: &Case) -> Option<&'static str> {
        Some("two ngircd servers started in the lab")
    }

    fn prerequisites(&self, _case: &Case) -> Vec<wirebench_protocol::Prerequisite> {
        vec![
            ngircd::NGIRCD.because("protocol=irc"),
            // ngircd runs as user irc, set by setpriv.
            ngircd::SETPRIV.because("protocol=irc"),
        ]
    }

    fn stream_count(&self) -> Option<u64> {
        Some(PEER_STREAM_COUNT)
    }

    fn peer_model(&self, _case: &Case) -> Option<PeerModel> {
        Some(IRC_MODEL)
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        run_case(env, case, repeat, ctx)
    }
}

/// The servers' private directories. ngircd runs as user `irc`, which must be able to
/// reach them, and a results directory may sit below a directory only root can enter
/// (`/root/...`): they live under the temporary directory, and their configuration and
/// log are copied into `<results>/peers/case-NNNN-rK/{a,b}/` when the case ends.
struct ServerDirs {
    work: PathBuf,
    keep: PathBuf,
}

impl ServerDirs {
    fn new(keep: PathBuf, tag: &str) -> Result<ServerDirs, WorkloadError> {
        use std::os::unix::fs::PermissionsExt;
        let work = std::env::temp_dir().join(format!("wb-ngircd-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work)
            .and_then(|()| std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755)))
            .map_err(|e| {
                WorkloadError::because(
                    Fault::Environment,
                    format!("cannot create {}", work.display()),
                    e,
                )
            })?;
        Ok(ServerDirs { work, keep })
    }

    fn side(&self, s: &str) -> PathBuf {
        self.work.join(s)
    }
}

impl Drop for ServerDirs {
    fn drop(&mut self) {
        for side in ["a", "b"] {
            let to = self.keep.join(side);
            if std::fs::create_dir_all(&to).is_ok() {
                for f in ["ngircd.conf", "ngircd.log"] {
                    let _ = std::fs::copy(self.work.join(side).join(f), to.join(f));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

/// An IRC case in study S1's topology: fresh ngircd servers linked across the emulated
/// link, client1 here (client host), client2 in the server host.
fn run_case(env: &Env, case: &Case, repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let lab = env.need_lab("IRC")?;
    let drained = lab.wait_quiet(Duration::from_secs(120), ctx)?;
    let dirs = ServerDirs::new(
        env.peer_dir(case, repeat),
        &format!("{:04}-r{repeat}", case.index),
    )?;
    let mut ca = NgircdConfig::new(A_NAME, CLIENT_ADDR.into());
    let mut cb = NgircdConfig::new(B_NAME, SERVER_ADDR.into());
    // A stream can queue many seconds of data on a slow link ahead of a server PING's
    // answer; ngircd's 20 s would drop the link in the middle of a measurement.
    for c in [&mut ca, &mut cb] {
        c.pong_timeout_s = 300;
    }
    ngircd::link(&mut ca, &mut cb, B_NAME);
    // Passive side first: A tries once ~1 s after its start, then every 5 s.
    let mut b = Ngircd::start(Some(lab.server().name()), &dirs.side("b"), cb)?;
    let mut a = Ngircd::start(Some(lab.client().name()), &dirs.side("a"), ca)?;
    let limit = ctx.stall_timeout.max(Duration::from_secs(60));
    let link_a = a.wait_linked("wblinka", B_NAME, limit, ctx.shutdown)?;
    let link_b = b.wait_linked("wblinkb", A_NAME, limit, ctx.shutdown)?;
    // B's figure counts from B's start, which came first.
    let offset = a.started.saturating_duration_since(b.started);
    let link_setup = link_a.max(link_b.saturating_sub(offset));

    let run = IrcRun::from_case(
        case,
        Topology {
            a_nick: "alice".into(),
            b_nick: "bob".into(),
            a_server: a.addr(),
            b_server: b.addr(),
            b_netns: lab.server().name().to_string(),
            a_name: A_NAME.into(),
            b_name: B_NAME.into(),
        },
        env.seed,
        Some(link_setup),
    );
    let mut r = workload::run(&run, ctx);
    if let Ok(o) = &mut r {
        let both = a.usage().zip(b.usage()).map(|(x, y)| x + y);
        wirebench_peer::record_usage(o, both);
        // One client on each server.
        wirebench_peer::record_sessions(o, 2);
        wirebench_peer::record_kernel_tcp(o);
    }
    if let Ok(out) = &mut r {
        // Quiet means at least 100 ms of checks; more means something was in flight.
        if drained > Duration::from_millis(250) {
            out.put(IRC_DRAIN_WAIT, drained.as_secs_f64());
            out.notes.push(format!(
                "waited {:.1} s before starting the servers for packets of earlier \
                     connections to leave the link; they count in this case's wire.* totals \
                     (not in wire.stable.*)",
                drained.as_secs_f64()
            ));
        }
    }
    // Stop the servers before their logs are copied.
    drop((a, b));
    drop(dirs);
    r
}
