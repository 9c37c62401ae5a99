//! Exact order statistics over the kept samples (HdrHistogram files are written too, but
//! their 3-digit buckets are for merging and plotting, not for the headline numbers).

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
