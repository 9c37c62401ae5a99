//! Time as an input.
//!
//! Real runs read `CLOCK_MONOTONIC`, which every process and network namespace on one
//! kernel shares; that is what lets a receiver compute one-way latency and throughput
//! from a sender's timestamp when both run on this machine.

/// A source of nanosecond timestamps.
pub trait Clock: Send + Sync {
    fn now_ns(&self) -> u64;
}

/// The kernel's monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct Monotonic;

impl Clock for Monotonic {
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds (vDSO call, ~20 ns).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always supported.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_advances() {
        let a = super::monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = super::monotonic_ns();
        assert!(b >= a + 1_000_000, "{a} {b}");
    }
}
