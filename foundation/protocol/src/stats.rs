//! The metrics every protocol's drivers compute the same way: exact order statistics
//! over the kept samples (HdrHistogram files are written too, but their 3-digit buckets
//! are for merging and plotting, not for the headline numbers), the one RTT-metrics
//! function [`push_rtts`], message accounting, partial results on interrupt.

use crate::{Outcome, WorkloadError};
use hdrhistogram::Histogram;
use wirebench_model::metric::MESSAGES_CORRUPT;
use wirebench_model::metric::MESSAGES_DUPLICATED;
use wirebench_model::metric::MESSAGES_LOST;
use wirebench_model::metric::MESSAGES_RECEIVED;
use wirebench_model::metric::MESSAGES_REORDERED;
use wirebench_model::metric::MESSAGES_SENT;
use wirebench_model::metric::RTT;
use wirebench_model::metric::RTT_FIRST;
use wirebench_model::metric::RTT_SECOND;
use wirebench_model::metric::RTT_STABLE;
use wirebench_payload::tally::Tally;

/// Nearest-rank percentile of sorted samples, `q` in 0..=100.
pub fn percentile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Median; the mean of the two middle values for even counts.
pub fn median(sorted: &[u64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2] as f64),
        _ => Some((sorted[n / 2 - 1] as f64 + sorted[n / 2] as f64) / 2.0),
    }
}

pub fn mean(v: &[u64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64)
}

pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

pub fn push_counts(out: &mut Outcome, sent: u64, tally: &Tally) {
    let c = &tally.counts;
    out.put(MESSAGES_SENT, sent as f64);
    out.put(MESSAGES_RECEIVED, c.received as f64);
    out.put(MESSAGES_LOST, c.lost as f64);
    out.put(MESSAGES_DUPLICATED, c.duplicated as f64);
    out.put(MESSAGES_REORDERED, c.reordered as f64);
    out.put(MESSAGES_CORRUPT, c.corrupt as f64);
}

/// HdrHistogram of nanosecond samples, 3 significant digits, auto-resizing.
pub fn histogram(samples: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(3).unwrap_or_else(|_| unreachable!("3 digits is valid"));
    for s in samples {
        // `record` resizes the histogram; `saturating_record` would clamp to its range.
        let _ = h.record((*s).max(1));
    }
    h
}

/// The round-trip metrics of every ping-pong (raw, XMPP, IRC) from its per-round times
/// (ns): first, second, stable (median from round 3 on), min, mean, percentiles, max,
/// the histogram and the rounds themselves.
pub fn push_rtts(out: &mut Outcome, rtts: Vec<u64>) {
    if let Some(first) = rtts.first() {
        out.put(RTT_FIRST, secs(*first));
    }
    if let Some(second) = rtts.get(1) {
        out.put(RTT_SECOND, secs(*second));
    }
    if rtts.len() > 2 {
        let mut stable = rtts[2..].to_vec();
        stable.sort_unstable();
        if let Some(m) = median(&stable) {
            out.put(RTT_STABLE, m / 1e9);
        }
    }
    let mut sorted = rtts.clone();
    sorted.sort_unstable();
    if let (Some(min), Some(max), Some(avg)) = (sorted.first(), sorted.last(), mean(&sorted)) {
        out.put(RTT.at("min"), secs(*min));
        out.put(RTT.at("mean"), avg / 1e9);
        for (name, q) in [
            (RTT.at("p50"), 50.0),
            (RTT.at("p90"), 90.0),
            (RTT.at("p99"), 99.0),
            (RTT.at("p999"), 99.9),
        ] {
            if let Some(v) = percentile(&sorted, q) {
                out.put(name, secs(v));
            }
        }
        out.put(RTT.at("max"), secs(*max));
    }
    out.histograms.push(("rtt".into(), histogram(&rtts)));
    out.rounds = Some(rtts);
}

/// Round trips of messages under load (an echo stream's): mean, p50, p90, p99, max and
/// the histogram, without ping-pong's first/second/stable or the per-round list.
pub fn push_load_rtts(out: &mut Outcome, rtts: &[u64]) {
    if rtts.is_empty() {
        return;
    }
    let mut sorted = rtts.to_vec();
    sorted.sort_unstable();
    if let Some(m) = mean(&sorted) {
        out.put(RTT.at("mean"), m / 1e9);
    }
    for (name, q) in [
        (RTT.at("p50"), 50.0),
        (RTT.at("p90"), 90.0),
        (RTT.at("p99"), 99.0),
        (RTT.at("max"), 100.0),
    ] {
        if let Some(v) = percentile(&sorted, q) {
            out.put(name, secs(v));
        }
    }
    out.histograms.push(("rtt".into(), histogram(rtts)));
}

/// What a ping-pong interrupted after `rtts.len()` of `planned` rounds keeps: the
/// finished rounds' metrics, as an [`WorkloadError::InterruptedAfter`] (or a plain
/// interrupt when no round finished).
pub fn interrupted(rtts: Vec<u64>, planned: u64, mut tally: Tally) -> WorkloadError {
    if rtts.is_empty() {
        return WorkloadError::Interrupted;
    }
    let done = rtts.len() as u64;
    tally.finish(done);
    let mut out = Outcome::default();
    push_counts(&mut out, done, &tally);
    push_rtts(&mut out, rtts);
    out.notes.push(format!(
        "interrupted after {done} of {planned} rounds: the metrics cover the finished rounds"
    ));
    WorkloadError::InterruptedAfter(Box::new(out))
}

/// Real-peer streams (XMPP, IRC): waits until client2 has received `n` messages (the
/// counter its thread bumps), reporting progress, failing after `stall` without any, and
/// calling `service` between looks to keep client1's session alive (server pings, acks)
/// and to surface client2's errors.
pub fn wait_received(
    received: &std::sync::atomic::AtomicU64,
    n: u64,
    stall: std::time::Duration,
    ctx: &crate::Ctx,
    mut service: impl FnMut() -> Result<(), WorkloadError>,
) -> Result<(), WorkloadError> {
    use std::sync::atomic::Ordering;
    let mut last_progress = (u64::MAX, std::time::Instant::now());
    loop {
        let got = received.load(Ordering::SeqCst);
        if got >= n {
            return Ok(());
        }
        if ctx.shutdown.load(Ordering::Relaxed) {
            return Err(WorkloadError::Interrupted);
        }
        (ctx.progress)(got.saturating_sub(1), n.saturating_sub(1));
        if got != last_progress.0 {
            last_progress = (got, std::time::Instant::now());
        } else if last_progress.1.elapsed() > stall {
            return Err(WorkloadError::Stalled {
                secs: stall.as_secs(),
                during: "waiting for client2 to receive the stream",
            });
        }
        service()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7], 99.9), Some(7));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[1, 2, 3]), Some(2.0));
        assert_eq!(median(&[1, 2, 3, 10]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(mean(&[1, 2, 3, 10]), Some(4.0));
    }
}
