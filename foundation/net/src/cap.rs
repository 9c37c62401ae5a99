//! Bounds on what anyone who can reach a server's port may make it hold: its concurrent
//! connections ([`ConnCap`], shared by the threads that each accept on a listener of the
//! port) and the lines it writes about the clients it closes ([`LogLimit`]), so that a
//! flood of connections can neither exhaust descriptors and memory nor fill the
//! operator's terminal.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use wirebench_model::clock::monotonic_ns;

/// Connections a server run by hand holds at most, by default: the built-in XMPP
/// server's and the BOSH manager's 10,000 too.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// The most an HTTP/1 server of ours buffers while it waits for a request head to end
/// (hyper's `max_buf_size`; hyper's own default is 408 KiB): over it the client gets 431
/// and its connection is closed. hyper looks for the head's end in the whole buffer after
/// every read, so a head that never ends costs its square: at 408 KiB that scan held the
/// one thread of `serve --also http` for long enough to make a well-behaved client's p99
/// ten times its usual (bench/hostile.sh, oversized). nginx allows 32 KiB by default.
pub const MAX_HTTP_HEAD: usize = 64 * 1024;

const SECOND_NS: u64 = 1_000_000_000;

/// At most one line a second: the first event is written at once, and the ones within
/// the following second are counted into the next line written.
#[derive(Debug)]
pub struct LogLimit {
    /// When the last line was written (monotonic ns; 0: never).
    last_ns: AtomicU64,
    /// Events since the last line, this one not included.
    unwritten: AtomicU64,
}

impl Default for LogLimit {
    fn default() -> Self {
        LogLimit::new()
    }
}

impl LogLimit {
    pub const fn new() -> LogLimit {
        LogLimit {
            last_ns: AtomicU64::new(0),
            unwritten: AtomicU64::new(0),
        }
    }

    /// An event happened: `Some(n)` when a line is to be written for it now, where `n`
    /// counts the events since the last line that were not written (this one excluded);
    /// `None` when it is only counted.
    pub fn event(&self) -> Option<u64> {
        let now = monotonic_ns().max(1);
        let last = self.last_ns.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= SECOND_NS)
            && self
                .last_ns
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.unwritten.swap(0, Ordering::Relaxed));
        }
        self.unwritten.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Writes `line` on stderr when [`LogLimit::event`] says so, followed by the count of
    /// the lines held back since the last one.
    pub fn eprint(&self, line: impl FnOnce() -> String) {
        if let Some(n) = self.event() {
            match n {
                0 => eprintln!("{}", line()),
                n => eprintln!("{} ({n} more like it since the last line)", line()),
            }
        }
    }
}

/// A cap on a server's open connections, shared by all its accepting threads. Over it, a
/// new connection is accepted and closed at once (so the kernel's accept queue never
/// fills and the clients already in get served), and a line says so at most once a
/// second when logging.
#[derive(Debug)]
pub struct ConnCap {
    /// What the log lines name ("wirebench serve: socks5 127.0.0.1:1080").
    what: String,
    max: usize,
    open: AtomicUsize,
    refused: AtomicU64,
    log: Option<LogLimit>,
}

impl ConnCap {
    /// A cap of `max` open connections (0: none accepted) for the server `what`,
    /// logging its refusals on stderr when `log`.
    pub fn new(what: impl Into<String>, max: usize, log: bool) -> Arc<ConnCap> {
        Arc::new(ConnCap {
            what: what.into(),
            max,
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            log: log.then(LogLimit::new),
        })
    }

    /// The server its lines name.
    pub fn what(&self) -> &str {
        &self.what
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// A permit for one more connection, held as long as it is open; `None` at the cap
    /// (the refusal counted and, at most once a second, logged).
    pub fn admit(self: &Arc<Self>) -> Option<Permit> {
        let took = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| {
                (n < self.max).then_some(n + 1)
            });
        if took.is_ok() {
            return Some(Permit(self.clone()));
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(l) = &self.log {
            l.eprint(|| {
                format!(
                    "{}: {} connections open, the cap; closed a new one",
                    self.what, self.max
                )
            });
        }
        None
    }
}

/// One open connection of a [`ConnCap`]; dropping it makes room for another.
#[derive(Debug)]
pub struct Permit(Arc<ConnCap>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_cap_and_again_once_one_closes() {
        let cap = ConnCap::new("test", 2, false);
        let a = cap.admit().unwrap();
        let _b = cap.admit().unwrap();
        assert!(cap.admit().is_none());
        assert_eq!((cap.open(), cap.refused()), (2, 1));
        drop(a);
        assert!(cap.admit().is_some());
        assert_eq!(cap.open(), 1, "a dropped permit frees its place");
    }

    #[test]
    fn logs_at_most_once_a_second_with_the_count_held_back() {
        let l = LogLimit::new();
        assert_eq!(l.event(), Some(0));
        assert_eq!(l.event(), None);
        assert_eq!(l.event(), None);
        l.last_ns.store(
            monotonic_ns().saturating_sub(2 * SECOND_NS).max(1),
            Ordering::Relaxed,
        );
        assert_eq!(l.event(), Some(2));
        assert_eq!(l.event(), None);
    }
}
