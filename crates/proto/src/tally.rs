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
    next: u64,
    gaps: BTreeSet<u64>,
}

impl Tally {
    pub fn new() -> Tally {
        Tally::default()
    }

    pub fn observe(&mut self, seq: u64, corrupt: bool) {
        let c = &mut self.counts;
        if seq == self.next {
            self.next += 1;
        } else if seq > self.next {
            let skipped = seq - self.next;
            c.lost += skipped;
            // Remember at most MAX_GAPS of the skipped numbers, the most recent ones.
            let from = seq.saturating_sub(MAX_GAPS as u64).max(self.next);
            self.gaps.extend(from..seq);
            while self.gaps.len() > MAX_GAPS {
                self.gaps.pop_first();
            }
            self.next = seq + 1;
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
        if sent > self.next {
            self.counts.lost += sent - self.next;
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
