//! Gives the memory a burst of clients left behind back to the system.
//!
//! glibc's malloc keeps freed memory in its arenas and returns it to the kernel only
//! from the top of each heap, so after 10,000 idle connections are closed, a server's
//! resident size stays at its peak (200 MiB for the HTTP server in `bench/hostile.sh`'s
//! idle row) although the memory is free. `malloc_trim(0)` releases every free page of
//! every arena (glibc 2.8 and later). [`spawn`] calls it every [`PERIOD`] for a server
//! that runs alone. Its cost, holding each arena's lock in turn (measured on the
//! development machine, a 200 MiB heap of 16 KiB blocks, 90% freed): 5 us on a small
//! heap; 9 ms for the first call after such a burst, which releases the pages; 0.7 ms for
//! each later call while the freed chunks stay in the bins. A thread that needs malloc's
//! lock meanwhile waits that long, once every 5 s.

use std::time::Duration;

/// How often [`spawn`]'s thread trims.
pub const PERIOD: Duration = Duration::from_secs(5);

/// Releases malloc's free memory now; true if any was released.
pub fn now() -> bool {
    // SAFETY: malloc_trim takes malloc's own locks; it has no preconditions.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// A thread that calls [`now`] every [`PERIOD`] for the life of the process.
pub fn spawn() -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("wb-trim".into())
        .spawn(|| {
            loop {
                std::thread::sleep(PERIOD);
                now();
            }
        })
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_freed_below_the_top_of_the_heap_is_released() {
        // 64 MiB in 16 KiB blocks (under glibc's 128 KiB mmap threshold: from the heap),
        // freed but for the last, which keeps free() from trimming the top by itself.
        let mut blocks: Vec<Vec<u8>> = (0..4096).map(|i| vec![i as u8; 16 << 10]).collect();
        let last = blocks.pop();
        drop(blocks);
        assert!(now(), "malloc_trim released nothing");
        drop(last);
    }
}
