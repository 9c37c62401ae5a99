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

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`, ns); 0 if the clock
/// cannot be read.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the kernel to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
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

    #[test]
    fn thread_cpu_counts_work_not_sleep() {
        let a = super::thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = super::thread_cpu_ns();
        // Spin until the thread clock shows 5 ms of work, within 5 s of wall time: on a
        // busy machine the scheduler may give a spinning thread a fraction of a core.
        let mut x = 0u64;
        let t = super::monotonic_ns();
        while super::thread_cpu_ns() - b < 5_000_000 && super::monotonic_ns() - t < 5_000_000_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let c = super::thread_cpu_ns();
        assert!(b - a < 10_000_000, "sleeping used {} ns of CPU", b - a);
        assert!(
            c - b >= 5_000_000,
            "spinning for 5 s of wall time used {} ns of CPU",
            c - b
        );
    }
}
