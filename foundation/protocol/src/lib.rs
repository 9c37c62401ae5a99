//! The protocol plugin interface: everything a protocol's folder (`protocols/<name>/`)
//! needs from wirebench, and everything the runner needs from a protocol.
//!
//! - [`Protocol`] (plugin.rs): what a protocol tells the runner (its name, parameters,
//!   lab placement, estimator model) and how one of its cases runs;
//! - [`Case`] and [`Workload`]: a grid point, and its workload's typed parameters;
//! - [`Env`]: what the run gives a case (the lab's [`Hosts`], results directory, seed,
//!   the reference server's control connection);
//! - [`Prerequisite`] (prereq.rs): what a case needs on this machine, checked before a
//!   run starts;
//! - [`Ctx`], [`Outcome`], [`WorkloadError`]: a running case's shutdown flag and progress
//!   callbacks, its metrics, and its errors typed by who is at fault ([`Fault`]);
//! - [`surface`]: a protocol's own commands and `wirebench serve` endpoints;
//! - [`stats`] (the one RTT-metrics function), [`params`] (parameter specs);
//! - [`udp_server`]: a datagram protocol's own server on a thread of its own, in a host;
//!   starting and stopping third-party servers is the process toolkit's
//!   (`foundation/peer`), for the plugins that start them.
//!
//! Workloads run on a dedicated thread with blocking system calls; they poll a shutdown
//! flag at least every [`TICK`] so Ctrl-C ends a case promptly.

pub mod case;
pub mod hosts;
pub mod params;
pub mod plugin;
pub mod prereq;
mod quiet;
pub mod shard;
pub mod stats;
pub mod surface;
pub mod tcpinfo;
pub mod udp_server;

pub use case::{Case, CaseLink, Workload};
pub use hosts::{Host, Hosts};
pub use params::{ParamSpec, WORKLOADS};
pub use plugin::{AloneLimits, Env, PeerModel, Placement, Protocol, RunEnv, RunService, StartUp};
pub use prereq::{Install, Lookup, Prerequisite, Requirement};
pub use shard::{Align, Shard, Start};
pub use surface::{LoadServer, LoadSizing, MainServer, PluginCommand, ServePlan, Serving};
/// The transport of a workload's data connection ([`Outcome::transport`]).
pub use wirebench_link::Transport;
/// Message accounting by sequence number (lost, duplicated, reordered), shared by every
/// protocol's drivers; it lives with raw's engine, whose frames carry the sequence.
pub use wirebench_payload::seeded;
pub use wirebench_payload::tally;

use hdrhistogram::Histogram;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wirebench_model::{Key, Metric};

/// How often blocked calls wake up to look at the shutdown flag.
pub const TICK: Duration = Duration::from_millis(100);

/// What a workload needs from its runner besides its parameters.
pub struct Ctx<'a> {
    pub shutdown: &'a AtomicBool,
    /// Called with (done, total) now and then.
    pub progress: &'a (dyn Fn(u64, u64) + Sync),
    /// A case with no progress for this long fails.
    pub stall_timeout: Duration,
    pub connect_timeout: Duration,
    /// Called once when the stable phase begins (ping-pong: before round 3), so the
    /// runner can separate set-up traffic from steady-state traffic on the link.
    pub mark_stable: &'a (dyn Fn() + Sync),
    /// `(bytes per message above TCP, echoed, duration)`: how many messages the case's
    /// emulated link can carry in that duration (at least one), or `None` on an unlimited
    /// link or loopback. A duration-bound stream stops there, so that data queued in the
    /// sockets and the link (minutes of it at 2400 bit/s) does not outlast the duration.
    pub link_budget: &'a (dyn Fn(u64, bool, Duration) -> Option<u64> + Sync),
}

impl Ctx<'_> {
    /// No link budget: loopback, or a test.
    pub fn no_budget(_: u64, _: bool, _: Duration) -> Option<u64> {
        None
    }
}

/// A workload's results.
#[derive(Debug, Default)]
pub struct Outcome {
    pub metrics: Vec<(String, Metric)>,
    /// Latency histograms in nanoseconds, by family name (`rtt`).
    pub histograms: Vec<(String, Histogram<u64>)>,
    /// Per-round RTTs in nanoseconds (ping-pong), in round order.
    pub rounds: Option<Vec<u64>>,
    /// Time series the case sampled, by name, as CSV text (header first): `tcp_info`,
    /// the data connection's TCP_INFO over time. Written beside the record.
    pub series: Vec<(String, String)>,
    /// Remarks a reader needs to interpret the numbers.
    pub notes: Vec<String>,
    /// Local port of the data connection, to find its packets in link counters.
    pub local_port: Option<u16>,
    /// The data connection's transport (TCP unless the workload says otherwise): which
    /// flow at `local_port` is its, and what headers its packets carry.
    pub transport: Transport,
    /// The data connection's congestion control as its socket reports it
    /// (`TCP_CONGESTION`), where the workload holds that socket; `None` leaves the
    /// record to the client namespace's default.
    pub congestion: Option<String>,
}

impl Outcome {
    /// Records a declared metric ([`wirebench_model::metric`]) in its declared unit.
    pub fn put(&mut self, key: impl Into<Key>, value: f64) {
        let key = key.into();
        self.metrics
            .push((key.name().into_owned(), Metric::new(value, key.unit())));
    }
    /// Records a declared metric in a unit of the workload's own: a rate of the shared
    /// `rate.*` family in `conn/s` or `req/s`, where the declaration says `msg/s`.
    pub fn put_in(&mut self, key: impl Into<Key>, value: f64, unit: &str) {
        self.push(&key.into().name(), value, unit);
    }
    /// Records a metric by a name built at run time; [`Outcome::put`] is for the declared.
    pub fn push(&mut self, name: &str, value: f64, unit: &str) {
        self.metrics
            .push((name.to_string(), Metric::new(value, unit)));
    }
    /// A value recorded so far.
    pub fn value(&self, key: impl Into<Key>) -> Option<f64> {
        let key = key.into();
        self.metrics
            .iter()
            .find(|(n, _)| key.is(n))
            .map(|(_, m)| m.value)
    }
}

/// Who a failed case's error points at; recorded as the record's `fault`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A parameter value this protocol cannot run: change the scenario.
    Input,
    /// Something missing or refused on this machine (the lab, a program, a directory,
    /// a permission): fix the machine.
    Environment,
    /// A server, gateway or the other client failed, refused or broke the protocol.
    Peer,
    /// The connection stalled, broke or could not be opened across the network.
    Link,
}

impl Fault {
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::Input => "input",
            Fault::Environment => "environment",
            Fault::Peer => "peer",
            Fault::Link => "link",
        }
    }
}

// Causes are part of the messages, not `source`s, so a chain printed with `{:#}` does not
// repeat them.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// Another layer's error (a protocol's client, a codec) kept whole, with who is at
    /// fault: the interface need not know every protocol's error types.
    #[error(transparent)]
    Caused(Caused),
    #[error("cannot open the data connection to {addr}: {error}")]
    Connect { addr: String, error: std::io::Error },
    #[error("interrupted")]
    Interrupted,
    /// Interrupted after some rounds finished: their metrics, so a long case that is
    /// stopped keeps what it measured.
    #[error("interrupted after {} round(s)", .0.rounds.as_ref().map_or(0, Vec::len))]
    InterruptedAfter(Box<Outcome>),
    /// Failed after measuring something (a load target that died mid-run): the figures
    /// and files so far are kept with the failure, whose cause is `error`.
    #[error("{error}")]
    FailedAfter {
        outcome: Box<Outcome>,
        error: Box<WorkloadError>,
    },
    #[error("no progress for {secs}s while {during} (on a slow link, raise --timeout)")]
    Stalled { secs: u64, during: &'static str },
    #[error("the server closed the data connection while {during}")]
    Closed { during: &'static str },
    #[error("data connection failed while {during}: {error}")]
    Io {
        during: &'static str,
        error: std::io::Error,
    },
    /// A parameter value the protocol cannot run.
    #[error("{0}")]
    Input(String),
    /// This machine lacks what the case needs.
    #[error("{0}")]
    Environment(String),
    /// A peer (server, gateway, the other client) failed or broke the protocol.
    #[error("{0}")]
    Peer(String),
    /// A connection across the network broke, stalled or could not be opened.
    #[error("{0}")]
    Link(String),
}

impl WorkloadError {
    /// Who is at fault; `None` for interrupts, which are nobody's.
    pub fn fault(&self) -> Option<Fault> {
        use std::io::ErrorKind;
        Some(match self {
            WorkloadError::Interrupted | WorkloadError::InterruptedAfter(_) => return None,
            WorkloadError::FailedAfter { error, .. } => return error.fault(),
            WorkloadError::Input(_) => Fault::Input,
            WorkloadError::Environment(_) => Fault::Environment,
            WorkloadError::Peer(_) | WorkloadError::Closed { .. } => Fault::Peer,
            WorkloadError::Link(_) => Fault::Link,
            WorkloadError::Caused(c) => c.fault,
            WorkloadError::Connect { error, .. }
                if error.kind() == ErrorKind::ConnectionRefused =>
            {
                Fault::Peer
            }
            WorkloadError::Connect { .. }
            | WorkloadError::Stalled { .. }
            | WorkloadError::Io { .. } => Fault::Link,
        })
    }
}

impl WorkloadError {
    /// `error`, shown as it is, with `fault` as who is to blame.
    pub fn caused(fault: Fault, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        WorkloadError::Caused(Caused {
            fault,
            context: None,
            error: Box::new(error),
        })
    }

    /// What failed (`context`), because of `error`, with `fault` as who is to blame:
    /// shown as `context: error`, with the error kept whole rather than as text.
    pub fn because(
        fault: Fault,
        context: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        WorkloadError::Caused(Caused {
            fault,
            context: Some(context.into()),
            error: Box::new(error),
        })
    }
}

/// The error of [`WorkloadError::Caused`]: shown as `context: error` (or the error
/// alone), the error's own causes reachable through `source`. The error is not itself
/// the source, so a chain printed with `{:#}` does not repeat it.
#[derive(Debug)]
pub struct Caused {
    pub fault: Fault,
    pub context: Option<String>,
    pub error: Box<dyn std::error::Error + Send + Sync>,
}

impl std::fmt::Display for Caused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(c) = &self.context {
            write!(f, "{c}: ")?;
        }
        self.error.fmt(f)
    }
}

impl std::error::Error for Caused {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// A third-party peer's failures (the process toolkit, `wirebench-peer`, starts them; a
/// [`Requirement`] finds them missing).
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{program} is not installed; install it with: {install}")]
    Missing { program: String, install: String },
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error("{what}\n{detail}")]
    Failed { what: String, detail: String },
}

impl From<PeerError> for WorkloadError {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::Missing { .. } | PeerError::Io { .. } => {
                WorkloadError::Environment(e.to_string())
            }
            PeerError::Failed { .. } => WorkloadError::Peer(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_names_who_is_at_fault() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let timed_out = std::io::Error::from(std::io::ErrorKind::TimedOut);
        let cases = [
            (WorkloadError::Input("x".into()), Some(Fault::Input)),
            (
                WorkloadError::Environment("x".into()),
                Some(Fault::Environment),
            ),
            (WorkloadError::Peer("x".into()), Some(Fault::Peer)),
            (
                WorkloadError::Connect {
                    addr: "a".into(),
                    error: refused,
                },
                Some(Fault::Peer),
            ),
            (
                WorkloadError::Connect {
                    addr: "a".into(),
                    error: timed_out,
                },
                Some(Fault::Link),
            ),
            (
                WorkloadError::Stalled {
                    secs: 1,
                    during: "x",
                },
                Some(Fault::Link),
            ),
            (WorkloadError::Interrupted, None),
            (
                WorkloadError::caused(Fault::Link, std::io::Error::other("cut")),
                Some(Fault::Link),
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.fault(), want, "{e}");
        }
        // A caused error reads as its cause, so a record's error text does not change.
        let e = WorkloadError::caused(Fault::Peer, std::io::Error::other("the peer hung up"));
        assert_eq!(e.to_string(), "the peer hung up");
        let io = std::io::Error::other("broken pipe");
        let e = WorkloadError::because(Fault::Link, "cannot write to prosody", io);
        assert_eq!(e.to_string(), "cannot write to prosody: broken pipe");
        assert_eq!(e.fault(), Some(Fault::Link));
        let WorkloadError::Caused(c) = &e else {
            panic!("{e:?}")
        };
        assert!(c.error.downcast_ref::<std::io::Error>().is_some());
        let missing = PeerError::Missing {
            program: "prosody".into(),
            install: "apt-get install prosody".into(),
        };
        assert_eq!(
            WorkloadError::from(missing).fault(),
            Some(Fault::Environment)
        );
    }
}
