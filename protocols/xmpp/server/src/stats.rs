//! The server's counters: [`ServerStats`] (atomics the workers update) and
//! [`StatsSnapshot`] (the same as plain numbers, what worker processes report), and the
//! CPU time of the worker threads.

use std::sync::atomic::{AtomicU64, Ordering};

/// Declares the counters once: [`ServerStats`] (atomics, updated by the workers) and
/// [`StatsSnapshot`] (plain numbers, what worker processes report to their parent).
macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Counters, readable while the server runs.
        #[derive(Debug, Default)]
        pub struct ServerStats {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        /// The counters at one moment.
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        pub struct StatsSnapshot {
            $($(#[$doc])* #[serde(default)] pub $name: u64,)*
        }

        impl ServerStats {
            pub fn snapshot(&self) -> StatsSnapshot {
                StatsSnapshot { $($name: self.$name.load(Ordering::Relaxed),)* }
            }

            pub(crate) fn store(&self, s: &StatsSnapshot) {
                $(self.$name.store(s.$name, Ordering::Relaxed);)*
            }
        }

        impl std::ops::Add for StatsSnapshot {
            type Output = StatsSnapshot;
            fn add(self, o: StatsSnapshot) -> StatsSnapshot {
                StatsSnapshot { $($name: self.$name + o.$name,)* }
            }
        }
    };
}

counters! {
    accepted,
    bound,
    /// Connections open now.
    open,
    /// Stanzas addressed to a user (messages, iq, directed presence) and delivered.
    routed,
    /// Of those, the ones whose recipient was on another worker.
    routed_across,
    /// Stanzas for a user with no session (any more).
    unroutable,
    closed_timeout,
    closed_slow,
    closed_error,
    /// Connections closed at accept: the process held all the sessions it can.
    refused_full,
    /// Stanzas handed from one worker to another (presence broadcasts and probes too).
    cross_worker,
    /// Stanzas dropped because the link to their worker was backed up.
    dropped_link,
    /// Times a worker stopped reading its clients because a link to another worker was
    /// behind (`fabric::PAUSE_READS_AT`).
    read_pauses,
    /// The longest backlog seen on a link to another worker, bytes, when over
    /// `fabric::RESUME_READS_AT` (0 below it); with worker processes, summed over them.
    link_backlog_peak,
    /// Worker processes only (0 with threads): resident memory now and at its highest
    /// (VmRSS, VmHWM), KiB, and CPU time, ms, with its user and kernel parts; summed over
    /// the workers.
    rss_kib,
    rss_peak_kib,
    cpu_ms,
    cpu_user_ms,
    cpu_sys_ms,
}

/// CPU seconds of this process's built-in server worker threads (named `wb-xmpp-w<N>`),
/// from /proc: nanoseconds on CPU from each thread's `schedstat` (a short case uses less
/// than one 10 ms tick of `stat`'s counters); 0 if there are none.
pub fn worker_cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut ns = 0u64;
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("wb-xmpp-w") {
            continue;
        }
        let sched = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        ns += sched
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    ns as f64 / 1e9
}
