//! What the link did to each packet's time, per case: the one-way delay of every packet
//! delivered, each direction, from the emulator's own timestamps (read from one TUN
//! device, written to the other: queueing, serialization, propagation and the
//! emulator's release error together), and the queue sampled on a fixed clock.
//!
//! Pantheon (Yan et al., USENIX ATC 2018) plots a scheme's throughput against the 95th
//! percentile of exactly this per-packet one-way delay; the queue series shows where
//! the delay came from (a standing queue, a burst, a drain).

use hdrhistogram::Histogram;
use std::fmt::Write;

/// The queue is sampled this often (while the link carries anything).
pub const SAMPLE_NS: u64 = 10_000_000;
/// At most this many samples a case (at 10 ms, 33 minutes of a busy link): the series
/// stops there and says so, so a long case cannot grow it without bound.
pub const MAX_SAMPLES: usize = 200_000;

/// One direction at one sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DirSample {
    /// Packets and bytes waiting for or in serialization (what a drop-tail queue bounds).
    pub queue_packets: u64,
    pub queue_bytes: u64,
    /// Since the previous sample: bytes delivered, packets dropped (any cause), and the
    /// delivered packets' one-way delays (sum, count and largest, ns).
    pub delivered_bytes: u64,
    pub dropped: u64,
    pub delay_sum_ns: u64,
    pub delay_count: u64,
    pub delay_max_ns: u64,
}

/// Both directions at one instant, `at_ns` after the case's link took over; the
/// interval's counts are of the `span_ns` before it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    pub at_ns: u64,
    pub span_ns: u64,
    pub dir: [DirSample; 2],
}

/// A case's packet times: per direction (0 up, client to server; 1 down) the one-way
/// delay histogram (ns) and the queue series.
#[derive(Debug, Clone)]
pub struct LinkTimes {
    pub one_way: [Option<Histogram<u64>>; 2],
    pub samples: Vec<Sample>,
    /// The series reached [`MAX_SAMPLES`] and stopped.
    pub truncated: bool,
    /// What has happened since the last sample, not yet in `samples`.
    open: [DirSample; 2],
    /// When the last interval closed, recorded or not.
    closed_ns: u64,
}

impl Default for LinkTimes {
    fn default() -> Self {
        LinkTimes {
            one_way: [new_hist(), new_hist()],
            samples: Vec::new(),
            truncated: false,
            open: [DirSample::default(); 2],
            closed_ns: 0,
        }
    }
}

fn new_hist() -> Option<Histogram<u64>> {
    Histogram::new(3).ok()
}

impl LinkTimes {
    /// A packet of `bytes` delivered in direction `dir` after `delay_ns` in the link.
    pub fn delivered(&mut self, dir: usize, bytes: u64, delay_ns: u64) {
        if let Some(h) = &mut self.one_way[dir] {
            let _ = h.record(delay_ns.max(1));
        }
        let o = &mut self.open[dir];
        o.delivered_bytes += bytes;
        o.delay_sum_ns += delay_ns;
        o.delay_count += 1;
        o.delay_max_ns = o.delay_max_ns.max(delay_ns);
    }

    /// A packet dropped in direction `dir` (for whatever reason).
    pub fn dropped(&mut self, dir: usize, packets: u64) {
        self.open[dir].dropped += packets;
    }

    /// Closes the interval at `at_ns` with the queues as they are now. An interval in
    /// which nothing happened and nothing waits is left out unless the previous one
    /// was busy (so the series returns to zero instead of ending on a full queue).
    pub fn sample(&mut self, at_ns: u64, queue: [(u64, u64); 2]) {
        if self.truncated {
            return;
        }
        let mut s = Sample {
            at_ns,
            span_ns: at_ns.saturating_sub(self.closed_ns),
            dir: self.open,
        };
        self.closed_ns = at_ns;
        for (d, (packets, bytes)) in s.dir.iter_mut().zip(queue) {
            d.queue_packets = packets;
            d.queue_bytes = bytes;
        }
        self.open = [DirSample::default(); 2];
        let idle = |s: &Sample| s.dir.iter().all(|d| *d == DirSample::default());
        let after_idle = self.samples.last().is_none_or(idle);
        if idle(&s) && after_idle {
            return;
        }
        if self.samples.len() >= MAX_SAMPLES {
            self.truncated = true;
            return;
        }
        self.samples.push(s);
    }

    /// The direction that delivered more bytes: a stream's data, not its ACKs.
    pub fn data_direction(&self) -> usize {
        let bytes = |d: usize| -> u64 {
            self.samples
                .iter()
                .map(|s| s.dir[d].delivered_bytes)
                .sum::<u64>()
                + self.open[d].delivered_bytes
        };
        usize::from(bytes(1) > bytes(0))
    }

    /// The series as CSV, one row a sample: time, then per direction the queue, the
    /// interval's delivery rate, drops and one-way delays (mean and largest; empty when
    /// nothing was delivered in it).
    pub fn csv(&self) -> String {
        let mut out = String::from("seconds");
        for d in ["up", "down"] {
            for c in [
                "queue_packets",
                "queue_bytes",
                "delivered_bits_per_s",
                "dropped",
                "one_way_mean_s",
                "one_way_max_s",
            ] {
                let _ = write!(out, ",{d}_{c}");
            }
        }
        out.push('\n');
        for s in &self.samples {
            let span = s.span_ns.max(1) as f64 / 1e9;
            let _ = write!(out, "{:.6}", s.at_ns as f64 / 1e9);
            for d in &s.dir {
                let _ = write!(
                    out,
                    ",{},{},{:.0},{}",
                    d.queue_packets,
                    d.queue_bytes,
                    d.delivered_bytes as f64 * 8.0 / span,
                    d.dropped
                );
                if d.delay_count > 0 {
                    let _ = write!(
                        out,
                        ",{:.6},{:.6}",
                        d.delay_sum_ns as f64 / d.delay_count as f64 / 1e9,
                        d.delay_max_ns as f64 / 1e9
                    );
                } else {
                    out.push_str(",,");
                }
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_carry_their_deliveries_and_idle_ones_are_left_out_after_the_first() {
        let mut t = LinkTimes::default();
        t.delivered(1, 1500, 30_000_000);
        t.delivered(1, 1500, 50_000_000);
        t.dropped(1, 1);
        t.sample(SAMPLE_NS, [(0, 0), (3, 4500)]);
        t.sample(2 * SAMPLE_NS, [(0, 0), (0, 0)]);
        t.sample(3 * SAMPLE_NS, [(0, 0), (0, 0)]);
        t.sample(4 * SAMPLE_NS, [(0, 0), (0, 0)]);
        assert_eq!(t.samples.len(), 2, "{:?}", t.samples);
        let d = t.samples[0].dir[1];
        assert_eq!(
            (d.delay_count, d.delay_max_ns, d.dropped),
            (2, 50_000_000, 1)
        );
        assert_eq!(t.data_direction(), 1);
        let h = t.one_way[1].as_ref().unwrap();
        assert_eq!(h.len(), 2);
        let csv = t.csv();
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 3);
        // 3000 bytes in 10 ms is 2.4 Mbit/s; mean delay 40 ms.
        assert_eq!(
            rows[1],
            "0.010000,0,0,0,0,,,3,4500,2400000,1,0.040000,0.050000"
        );
        assert!(rows[2].starts_with("0.020000,0,0,0,0,,,0,0,0,0,,"));
    }

    #[test]
    fn the_series_stops_at_its_bound_and_says_so() {
        let mut t = LinkTimes::default();
        for i in 0..=MAX_SAMPLES as u64 {
            t.delivered(0, 100, 1);
            t.sample(i * SAMPLE_NS, [(1, 100), (0, 0)]);
        }
        assert_eq!(t.samples.len(), MAX_SAMPLES);
        assert!(t.truncated);
    }
}
