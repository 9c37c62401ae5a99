//! A run's part of a sharded run (issue #18; docs/cluster.md): which slice of each load
//! case it generates, and how its cases start at the same moment as the other shards'.
//!
//! Shard `I` of `N` takes the sessions `i` with `i mod N == I` of every load case's
//! schedule; the schedule itself (arrivals, draws, user numbers) comes from the run's seed,
//! the same in every shard, so the N slices together are exactly the unsharded run.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// This run's shard.
pub struct Shard<'a> {
    pub index: u32,
    pub count: u32,
    /// Where the shards agree on each case's start.
    pub align: &'a (dyn Align + Sync),
}

impl Shard<'_> {
    /// Generator `g` of `generators` in this shard, as one of all the shards' generators:
    /// it runs sessions `worker, worker + workers, ...` of the schedule.
    pub fn worker(&self, g: usize, generators: usize) -> (usize, usize) {
        let n = self.count as usize;
        (self.index as usize + g * n, n * generators)
    }
}

/// How the shards of a run start each case together.
pub trait Align {
    /// Blocks until every shard is ready for `case` (repeat `repeat`), then returns the
    /// agreed start on this machine's `CLOCK_MONOTONIC`, at least `lead` from now (the
    /// time the case needs to get its generators going).
    fn start(
        &self,
        case: usize,
        repeat: u32,
        lead: Duration,
        shutdown: &AtomicBool,
    ) -> Result<Start, String>;
}

/// An agreed start, and what this shard knows about how well it kept it.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Start {
    /// The start on this machine's `CLOCK_MONOTONIC`, ns.
    #[serde(skip)]
    pub t0_mono_ns: u64,
    /// The start on this machine's wall clock (Unix time, ns).
    pub unix_ns: i64,
    /// How the start was agreed: `barrier` or `start-at`.
    pub method: String,
    /// How long before the start this shard was ready, seconds (negative: it was late,
    /// and its first sessions start late by that much, which their latencies show).
    pub margin_s: f64,
    /// This machine's clock minus shard 0's, seconds, as the barrier measured it
    /// (Cristian's method: the probe with the shortest round trip), and the most it can
    /// be off (half that round trip). With `start-at`, `None`: the clocks are trusted to
    /// NTP, and `error_s` is the kernel's own estimate of its clock error (adjtimex).
    pub offset_s: Option<f64>,
    pub error_s: Option<f64>,
    /// The kernel says the clock is not synchronised (adjtimex `TIME_ERROR`).
    #[serde(default)]
    pub unsynchronised: bool,
}
