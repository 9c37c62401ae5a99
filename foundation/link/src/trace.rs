//! Mahimahi packet-delivery traces: time-varying link capacity.
//!
//! # Format
//!
//! One unsigned integer per line: a time in milliseconds since the start of the trace.
//! Each line is one *delivery opportunity* of [`OPPORTUNITY_BYTES`] bytes; several lines
//! with the same time are several opportunities at that instant, so a constant 12 Mbit/s
//! link is the line `1` repeated once per 1500-byte packet per millisecond. Times must be
//! non-decreasing, the file must hold at least one line, and the last time, which is the
//! trace's period, must not be 0: the trace repeats forever, cycle `c` adding
//! `c * period` to every time (so a trace starting at `0` has two opportunities at each
//! period boundary, exactly as in Mahimahi). A final newline and `\r\n` line ends are
//! accepted; blank lines are not, as in Mahimahi.
//!
//! # How packets consume opportunities
//!
//! This follows `LinkQueue::rationalize` of Mahimahi's `mm-link`
//! (`src/frontend/link_queue.cc`) byte for byte:
//!
//! * The packets wait in one FIFO queue. An opportunity at time `t` carries a budget of
//!   1500 bytes; it is offered to the queue's head, and only packets that arrived
//!   *strictly before* `t` are in the queue (Mahimahi burns every opportunity due at or
//!   before `now` before it enqueues a packet arriving at `now`).
//! * The head packet takes as much of the budget as it needs. If the budget covers the
//!   rest of the packet, the packet departs at `t` and the surplus goes to the next
//!   queued packet, so several small packets can leave in one opportunity. If not, the
//!   packet keeps its remaining bytes and continues in the next opportunity, so a packet
//!   larger than 1500 bytes spans several opportunities and departs at the last one.
//! * Budget unused because the queue is empty is lost; it does not accumulate.
//!
//! Mahimahi counts 1504 bytes per opportunity because its TUN frames carry a 4-byte
//! packet-information header before the IP packet; wirebench's packets are bare IP
//! packets, so 1500 bytes is the same capacity: one full-size packet per line.
//!
//! Time zero of the trace is the link's origin ([`Link::with_origin`], 0 by default),
//! where Mahimahi uses the moment the shell started.
//!
//! [`Link::with_origin`]: crate::Link::with_origin

use std::fmt;

/// Bytes delivered by one trace line (see the module docs for why not 1504).
pub const OPPORTUNITY_BYTES: u64 = 1500;

const NS_PER_MS: u64 = 1_000_000;

/// A parsed delivery trace. Share it between links with an `Arc`.
#[derive(Clone, PartialEq, Eq)]
pub struct Trace {
    /// Opportunity times within one period, in nanoseconds, non-decreasing.
    times_ns: Vec<u64>,
    period_ns: u64,
}

/// Why a trace was rejected. Line numbers count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    #[error(
        "trace is empty: it needs one millisecond timestamp per line (example: \"1\\n1\\n2\\n\")"
    )]
    Empty,
    #[error(
        "trace line {line} is blank; every line must hold one millisecond timestamp (example: \"12\")"
    )]
    BlankLine { line: usize },
    #[error("trace line {line}: {text:?} is not a whole number of milliseconds (example: \"12\")")]
    NotANumber { line: usize, text: String },
    #[error("trace line {line}: {text} ms is too large (at most {max} ms)")]
    TooLarge { line: usize, text: String, max: u64 },
    #[error(
        "trace line {line}: timestamp {ms} ms is earlier than line {}'s {previous} ms; timestamps must never decrease",
        line - 1
    )]
    NonMonotonic { line: usize, ms: u64, previous: u64 },
    #[error(
        "trace line {line}: the last timestamp is the trace's period and must not be 0 (a trace must last a nonzero time, e.g. end with \"1\")"
    )]
    ZeroPeriod { line: usize },
}

impl Trace {
    /// Parses Mahimahi's trace format (see the module docs).
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        // Keeps trace times, and `cycle * period`, far from u64 nanosecond overflow.
        const MAX_MS: u64 = u64::MAX / NS_PER_MS / 4;
        let mut times_ns = Vec::new();
        let mut previous: Option<u64> = None;
        // A final newline is not a blank line (Mahimahi's getline loop agrees).
        let body = text.strip_suffix('\n').unwrap_or(text);
        let body = body.strip_suffix('\r').unwrap_or(body);
        if body.is_empty() {
            return Err(TraceError::Empty);
        }
        let mut last_line = 0;
        for (i, raw) in body.split('\n').enumerate() {
            let line = i + 1;
            last_line = line;
            let text = raw.strip_suffix('\r').unwrap_or(raw).trim();
            if text.is_empty() {
                return Err(TraceError::BlankLine { line });
            }
            if !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(TraceError::NotANumber {
                    line,
                    text: text.to_string(),
                });
            }
            let too_large = || TraceError::TooLarge {
                line,
                text: text.to_string(),
                max: MAX_MS,
            };
            let ms: u64 = text.parse().map_err(|_| too_large())?;
            if ms > MAX_MS {
                return Err(too_large());
            }
            if let Some(previous) = previous
                && ms < previous
            {
                return Err(TraceError::NonMonotonic { line, ms, previous });
            }
            previous = Some(ms);
            times_ns.push(ms * NS_PER_MS);
        }
        let period_ns = times_ns.last().copied().unwrap_or(0);
        if period_ns == 0 {
            return Err(TraceError::ZeroPeriod { line: last_line });
        }
        Ok(Trace {
            times_ns,
            period_ns,
        })
    }

    /// Builds a trace from millisecond timestamps, with the same checks as
    /// [`Trace::parse`] (line numbers are 1-based positions in `ms`).
    pub fn from_millis(ms: &[u64]) -> Result<Trace, TraceError> {
        let text: String = ms.iter().map(|m| format!("{m}\n")).collect();
        Trace::parse(&text)
    }

    /// Number of delivery opportunities per period.
    pub fn len(&self) -> usize {
        self.times_ns.len()
    }

    /// Always false: a parsed trace has at least one opportunity.
    pub fn is_empty(&self) -> bool {
        self.times_ns.is_empty()
    }

    /// The period after which the trace repeats, in nanoseconds.
    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    /// Opportunity times within one period, in milliseconds.
    pub fn millis(&self) -> impl Iterator<Item = u64> + '_ {
        self.times_ns.iter().map(|t| t / NS_PER_MS)
    }

    /// The long-run capacity: `len * 1500 * 8` bits per period.
    pub fn mean_rate_bps(&self) -> f64 {
        self.len() as f64 * (OPPORTUNITY_BYTES * 8) as f64 / (self.period_ns as f64 * 1e-9)
    }

    /// The time of an opportunity, `origin + cycle * period + times[index]`, saturating
    /// at `u64::MAX` rather than wrapping in the far future.
    pub(crate) fn time_of(&self, origin_ns: u64, at: Opportunity) -> u64 {
        let t = u128::from(origin_ns)
            + u128::from(at.cycle) * u128::from(self.period_ns)
            + u128::from(
                self.times_ns
                    .get(at.index)
                    .copied()
                    .unwrap_or(self.period_ns),
            );
        u64::try_from(t).unwrap_or(u64::MAX)
    }

    /// The first opportunity strictly after `now`.
    pub(crate) fn first_after(&self, origin_ns: u64, now_ns: u64) -> Opportunity {
        let Some(since) = now_ns.checked_sub(origin_ns) else {
            return Opportunity { cycle: 0, index: 0 };
        };
        let cycle = since / self.period_ns;
        let within = since % self.period_ns;
        // Every opportunity of earlier cycles is at or before `cycle * period <= since`.
        let index = self.times_ns.partition_point(|&t| t <= within);
        if index == self.times_ns.len() {
            Opportunity {
                cycle: cycle.saturating_add(1),
                index: 0,
            }
        } else {
            Opportunity { cycle, index }
        }
    }

    /// The opportunity `k` after `at`.
    pub(crate) fn advance(&self, at: Opportunity, k: u64) -> Opportunity {
        let n = self.times_ns.len().max(1) as u128;
        let total = at.index as u128 + u128::from(k);
        let cycles = u64::try_from(total / n).unwrap_or(u64::MAX);
        Opportunity {
            cycle: at.cycle.saturating_add(cycles),
            // `total % n < n`, which came from a usize.
            index: (total % n) as usize,
        }
    }
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("opportunities", &self.len())
            .field("period_ns", &self.period_ns)
            .finish()
    }
}

/// The `index`-th line of the trace in its `cycle`-th repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Opportunity {
    pub(crate) cycle: u64,
    pub(crate) index: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mahimahi_traces() {
        let t = Trace::parse("1\n1\n3\n5\n").unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.period_ns(), 5_000_000);
        assert_eq!(t.millis().collect::<Vec<_>>(), [1, 1, 3, 5]);
        assert_eq!(Trace::parse("1\r\n2\r\n").unwrap().len(), 2);
        assert_eq!(Trace::parse("7").unwrap().len(), 1);
        // One 1500-byte packet per ms is 12 Mbit/s.
        assert_eq!(Trace::parse("1\n").unwrap().mean_rate_bps(), 12e6);
    }

    #[test]
    fn rejects_bad_traces_naming_the_line() {
        assert_eq!(Trace::parse(""), Err(TraceError::Empty));
        assert_eq!(Trace::parse("\n"), Err(TraceError::Empty));
        assert_eq!(
            Trace::parse("1\n\n2\n"),
            Err(TraceError::BlankLine { line: 2 })
        );
        assert_eq!(
            Trace::parse("1\n5\n3\n"),
            Err(TraceError::NonMonotonic {
                line: 3,
                ms: 3,
                previous: 5
            })
        );
        let e = Trace::parse("1\n5\n3\n").unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("line 2"), "{e}");
        assert_eq!(
            Trace::parse("0\n0\n"),
            Err(TraceError::ZeroPeriod { line: 2 })
        );
        assert!(
            Trace::parse("0\n")
                .unwrap_err()
                .to_string()
                .contains("line 1")
        );
        assert_eq!(
            Trace::parse("1\n2ms\n"),
            Err(TraceError::NotANumber {
                line: 2,
                text: "2ms".into()
            })
        );
        assert!(matches!(
            Trace::parse("-1\n"),
            Err(TraceError::NotANumber { line: 1, .. })
        ));
        assert!(matches!(
            Trace::parse("99999999999999999999999\n"),
            Err(TraceError::TooLarge { line: 1, .. })
        ));
    }

    #[test]
    fn opportunities_repeat_with_the_period() {
        let t = Trace::from_millis(&[0, 2, 5]).unwrap();
        let at = |cycle, index| Opportunity { cycle, index };
        // A trace starting at 0 has two opportunities at each period boundary.
        assert_eq!(t.time_of(0, at(0, 2)), 5_000_000);
        assert_eq!(t.time_of(0, at(1, 0)), 5_000_000);
        assert_eq!(t.time_of(100, at(2, 1)), 100 + 12_000_000);
        assert_eq!(t.first_after(0, 0), at(0, 1));
        assert_eq!(t.first_after(0, 4_999_999), at(0, 2));
        assert_eq!(t.first_after(0, 5_000_000), at(1, 1));
        assert_eq!(t.first_after(10, 5), at(0, 0));
        assert_eq!(t.advance(at(0, 2), 4), at(2, 0));
        assert_eq!(t.time_of(0, at(u64::MAX, 0)), u64::MAX);
    }
}
