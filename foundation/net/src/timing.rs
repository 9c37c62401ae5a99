//! Waiting for a precise instant: sleep most of the way, spin the rest.
//!
//! `thread::sleep` overshoots by 50-100 µs of timer slack and wake-up latency, which would
//! show up directly in think-time-corrected round trips, so the last stretch is spun.

use std::time::Duration;
use wirebench_model::clock::monotonic_ns;

/// Spin this long before the deadline rather than trust the scheduler.
const SPIN_NS: u64 = 200_000;

/// Returns at or just after `deadline_ns` (CLOCK_MONOTONIC).
pub fn sleep_until_ns(deadline_ns: u64) {
    loop {
        let now = monotonic_ns();
        if now >= deadline_ns {
            return;
        }
        let left = deadline_ns - now;
        if left > SPIN_NS {
            std::thread::sleep(Duration::from_nanos(left - SPIN_NS));
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn never_early() {
        let start = super::monotonic_ns();
        let target = start + 3_000_000;
        super::sleep_until_ns(target);
        assert!(super::monotonic_ns() >= target);
    }
}
