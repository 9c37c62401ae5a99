//! Workloads: what a case does on a data connection and which metrics it yields.
//!
//! - [`pingpong`]: seed 000's latency test. One message in flight; the responder answers
//!   (optionally after a think time); every round's RTT is kept.
//! - [`stream`]: a flood of messages, one way (the server counts) or echoed, timed until
//!   the receiver holds the last byte.
//!
//! Workloads run on a dedicated thread with blocking system calls; they poll a shutdown
//! flag at least every [`TICK`] so Ctrl-C ends a case promptly.

mod conn;
pub mod irc;
pub mod params;
pub mod pingpong;
pub mod stats;
pub mod stream;
pub mod xmpp;

pub use params::{PARAMS, ParamSpec, WORKLOADS};

use hdrhistogram::Histogram;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wirebench_model::Metric;
use wirebench_net::NetError;

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
}

/// A workload's results.
#[derive(Debug, Default)]
pub struct Outcome {
    pub metrics: Vec<(String, Metric)>,
    /// Latency histograms in nanoseconds, by family name (`rtt`).
    pub histograms: Vec<(String, Histogram<u64>)>,
    /// Per-round RTTs in nanoseconds (ping-pong), in round order.
    pub rounds: Option<Vec<u64>>,
    /// Remarks a reader needs to interpret the numbers.
    pub notes: Vec<String>,
    /// Local port of the data connection, to find its packets in link counters.
    pub local_port: Option<u16>,
}

impl Outcome {
    pub fn push(&mut self, name: &str, value: f64, unit: &str) {
        self.metrics
            .push((name.to_string(), Metric::new(value, unit)));
    }
}

// Causes are part of the messages, not `source`s, so a chain printed with `{:#}` does not
// repeat them.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error(transparent)]
    Net(#[from] NetError),
    #[error("cannot open the data connection to {addr}: {error}")]
    Connect { addr: String, error: std::io::Error },
    #[error("interrupted")]
    Interrupted,
    /// Interrupted after some rounds finished: their metrics, so a long case that is
    /// stopped keeps what it measured.
    #[error("interrupted after {} round(s)", .0.rounds.as_ref().map_or(0, Vec::len))]
    InterruptedAfter(Box<Outcome>),
    #[error("no progress for {secs}s while {during} (on a slow link, raise --timeout)")]
    Stalled { secs: u64, during: &'static str },
    #[error("the server closed the data connection while {during}")]
    Closed { during: &'static str },
    #[error("data connection failed while {during}: {error}")]
    Io {
        during: &'static str,
        error: std::io::Error,
    },
    #[error("the server sent an invalid frame: {0}")]
    Invalid(wirebench_proto::raw::FrameError),
    #[error("the server reported a failed session: {0}")]
    Server(String),
}

impl From<wirebench_proto::raw::FrameError> for WorkloadError {
    fn from(e: wirebench_proto::raw::FrameError) -> Self {
        WorkloadError::Invalid(e)
    }
}
