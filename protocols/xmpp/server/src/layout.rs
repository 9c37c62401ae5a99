//! How the server's workers are laid out ([`plan`], [`Layout`]): threads of this process,
//! or worker processes when the session target exceeds one process's open-file limit.

use std::net::SocketAddr;

/// Open files a worker process keeps for itself: stdio, the epoll fd, its listener, the
/// links to other workers, and what the allocator or a log may open. The rest hold
/// sessions.
const FD_RESERVE: u64 = 256;

/// How the server's workers are laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub workers: usize,
    /// Workers are processes (else threads of this one).
    pub processes: bool,
    /// Sessions one process may hold: its open-file limit less `FD_RESERVE`.
    pub per_process: usize,
    pub fd_limit: u64,
    /// Each worker's listening address (all the same port unless `port_per_worker`).
    pub addrs: Vec<SocketAddr>,
}

impl Layout {
    pub fn capacity(&self) -> usize {
        if self.processes {
            self.per_process * self.workers
        } else {
            self.per_process
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.processes {
            "worker processes (one event loop each)"
        } else {
            "worker threads in one process"
        };
        let same_port = self.addrs.windows(2).all(|w| w[0] == w[1]);
        let at = if same_port {
            format!("{} (SO_REUSEPORT)", self.addrs[0])
        } else {
            let ports: Vec<u16> = self.addrs.iter().map(|a| a.port()).collect();
            let (first, last) = (ports[0], ports[ports.len() - 1]);
            if ports.windows(2).all(|w| w[1] == w[0].wrapping_add(1)) {
                format!("{} ports {first}-{last}", self.addrs[0].ip())
            } else if ports.len() > 8 {
                format!(
                    "{} ports {first}, ... {last} ({} ports)",
                    self.addrs[0].ip(),
                    ports.len()
                )
            } else {
                let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                format!("{} ports {}", self.addrs[0].ip(), ports.join(","))
            }
        };
        write!(
            f,
            "{} {kind} on {at}; up to {} sessions (open-file limit {} per process); \
             stanzas between workers over Unix socket pairs",
            self.workers,
            self.capacity(),
            self.fd_limit
        )
    }
}

/// Chooses workers and threads-or-processes for `sessions` (0: what one process holds):
/// processes when one process's `fd_limit` cannot hold them (or when `force_processes`),
/// `workers` (0: at least one per core, and one process per `fd_limit - reserve`
/// sessions).
pub fn plan(
    sessions: usize,
    workers: usize,
    force_processes: bool,
    cores: usize,
    fd_limit: u64,
) -> Result<(usize, bool, usize), String> {
    let per_process = fd_limit.saturating_sub(FD_RESERVE).max(1) as usize;
    let need = sessions.div_ceil(per_process).max(1);
    let processes = need > 1 || force_processes;
    let workers = match workers {
        0 => cores.max(need).max(1),
        w if processes && w < need => {
            return Err(format!(
                "{w} worker(s) cannot hold {sessions} sessions: a process holds at most \
                 {per_process} (its open-file limit is {fd_limit}); use at least {need} \
                 workers, or leave the count out"
            ));
        }
        w => w,
    };
    Ok((workers, processes, per_process))
}

/// The soft open-file limit after raising it to the hard one.
pub fn open_file_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => {
            if setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
                hard
            } else {
                soft
            }
        }
        Ok((soft, _)) => soft,
        Err(_) => 1024,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_targets_get_threads_large_ones_processes() {
        // One process holds 20,000 - 256 sessions.
        assert_eq!(plan(0, 0, false, 2, 20_000), Ok((2, false, 19_744)));
        assert_eq!(plan(19_744, 0, false, 2, 20_000), Ok((2, false, 19_744)));
        assert_eq!(plan(19_745, 0, false, 2, 20_000), Ok((2, true, 19_744)));
        assert_eq!(plan(100_000, 0, false, 2, 20_000), Ok((6, true, 19_744)));
        assert_eq!(plan(100_000, 8, false, 2, 20_000), Ok((8, true, 19_744)));
        assert_eq!(plan(10, 3, true, 2, 20_000), Ok((3, true, 19_744)));
        assert_eq!(plan(10, 0, false, 1, 20_000), Ok((1, false, 19_744)));
    }

    #[test]
    fn too_few_workers_for_the_target_is_an_error_naming_the_minimum() {
        let e = plan(100_000, 2, false, 2, 20_000).unwrap_err();
        assert!(e.contains("at least 6 workers"), "{e}");
    }

    #[test]
    fn the_layout_says_what_runs_where() {
        let l = Layout {
            workers: 6,
            processes: true,
            per_process: 19_744,
            fd_limit: 20_000,
            addrs: vec!["127.0.0.1:5222".parse().unwrap(); 6],
        };
        assert_eq!(
            l.to_string(),
            "6 worker processes (one event loop each) on 127.0.0.1:5222 (SO_REUSEPORT); up \
             to 118464 sessions (open-file limit 20000 per process); stanzas between \
             workers over Unix socket pairs"
        );
    }
}
