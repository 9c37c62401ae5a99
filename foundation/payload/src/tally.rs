//! Message accounting from sequence numbers.
//!
//! TCP should deliver everything once and in order, so on `raw` these counters prove the
//! harness (and catch bugs) more than they measure the network. Transports that can lose
//! or reorder (later: UDP, polling bridges, gateways across outages) reuse them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Gaps remembered so that a late arrival is recognised as reordered, not duplicated.
/// Bounded so a peer sending wild sequence numbers cannot grow memory.
const MAX_GAPS: usize = 65_536;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Distinct messages that arrived (corrupt ones included).
    pub received: u64,
    /// Sequence numbers skipped and never seen since.
    pub lost: u64,
    /// Messages seen more than once (the repeats only).
    pub duplicated: u64,
    /// Messages that arrived after a later one.
    pub reordered: u64,
    /// Messages whose payload was not what the sender sent.
    pub corrupt: u64,
}

/// Tracks the next expected sequence number and the gaps behind it.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub counts: Counts,
    /// Wider than a sequence number: after `u64::MAX` (a peer may send it) the next
    /// expected number is 2^64, which must not wrap to 0.
    next: u128,
    gaps: BTreeSet<u64>,
}

impl Tally {
    pub fn new() -> Tally {
        Tally::default()
    }

    pub fn observe(&mut self, seq: u64, corrupt: bool) {
        let c = &mut self.counts;
        let wide = u128::from(seq);
        if wide == self.next {
            self.next += 1;
        } else if wide > self.next {
            // At most u64::MAX: `next` is at least 0 and `seq` at most u64::MAX.
            let skipped = (wide - self.next) as u64;
            c.lost = c.lost.saturating_add(skipped);
            // Remember at most MAX_GAPS of the skipped numbers, the most recent ones.
            let next = self.next as u64;
            let from = seq.saturating_sub(MAX_GAPS as u64).max(next);
            self.gaps.extend(from..seq);
            while self.gaps.len() > MAX_GAPS {
                self.gaps.pop_first();
            }
            self.next = wide + 1;
        } else if self.gaps.remove(&seq) {
            c.lost -= 1;
            c.reordered += 1;
        } else {
            c.duplicated += 1;
            return;
        }
        c.received += 1;
        if corrupt {
            c.corrupt += 1;
        }
    }

    /// Messages the sender said it sent but that never showed up count as lost.
    pub fn finish(&mut self, sent: u64) {
        let sent = u128::from(sent);
        if sent > self.next {
            self.counts.lost = self.counts.lost.saturating_add((sent - self.next) as u64);
            self.next = sent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn in_order_is_clean() {
        let mut t = Tally::new();
        for s in 0..10 {
            t.observe(s, false);
        }
        t.finish(10);
        assert_eq!(
            t.counts,
            Counts {
                received: 10,
                ..Default::default()
            }
        );
    }

    #[test]
    fn gaps_dups_reorder_corrupt_and_tail_loss() {
        let mut t = Tally::new();
        for s in [0, 1, 3, 3, 2, 5, 6] {
            t.observe(s, s == 6);
        }
        t.finish(9);
        assert_eq!(
            t.counts,
            Counts {
                received: 6,
                lost: 1 + 2,
                duplicated: 1,
                reordered: 1,
                corrupt: 1
            }
        );
    }

    /// A peer may send any sequence number, the largest included: no overflow (it
    /// panicked in debug builds and wrapped `next` to 0 in release).
    #[test]
    fn the_largest_sequence_number_does_not_overflow() {
        let mut t = Tally::new();
        t.observe(0, false);
        t.observe(u64::MAX, false);
        t.observe(u64::MAX, false);
        t.observe(5, false);
        t.finish(u64::MAX);
        // 5 is too old to be remembered as a gap (only the last MAX_GAPS numbers are),
        // so it counts as a duplicate, like the repeated u64::MAX.
        assert_eq!(t.counts.received, 2);
        assert_eq!(t.counts.duplicated, 2);
        assert_eq!(t.counts.reordered, 0);
        assert_eq!(t.counts.lost, u64::MAX - 1);
    }

    proptest! {
        /// Whatever the delivery order, with no duplicates every sent message is either
        /// received or lost.
        #[test]
        fn conservation(perm in Just((0u64..200).collect::<Vec<_>>()).prop_shuffle(), keep in 0usize..200) {
            let mut t = Tally::new();
            for s in perm.iter().take(keep) { t.observe(*s, false); }
            t.finish(200);
            prop_assert_eq!(t.counts.received + t.counts.lost, 200);
            prop_assert_eq!(t.counts.received, keep as u64);
            prop_assert_eq!(t.counts.duplicated, 0);
        }
    }
}
