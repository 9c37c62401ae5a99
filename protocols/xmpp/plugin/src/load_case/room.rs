//! Whether this machine can hold a load case's peak of sessions, checked before the
//! server or a generator starts: memory (the generator's, the built-in server's and the
//! kernel's per session, measured), open files system-wide and, when the kernel tracks
//! connections, its connection-tracking table. [`Needs`] says what the case needs per
//! session and in all, so a run that does not fit is refused with the figures and one
//! that fits says what it will use. The per-process caps that decide how many processes
//! the case starts are here too, since what a process holds is a question of its open
//! files.

/// Sessions one generator process holds at most (open files are capped at 20,000 per
/// process here; each session is one socket).
pub(crate) const PER_GENERATOR: usize = 15_000;

/// Up to this peak everything runs inside wirebench: the server's sessions and the
/// generator's share one process's open files.
pub(crate) const IN_PROCESS: usize = 8_000;

/// The generators a case with this peak starts: one thread inside wirebench up to
/// [`IN_PROCESS`] sessions, else a process per [`PER_GENERATOR`] sessions, and at least
/// two beside the built-in server (`builtin`) so that partners' messages cross between
/// generators. The case and its needs both count them here, so they cannot disagree.
pub(crate) fn generators(peak: usize, builtin: bool) -> usize {
    let processes = peak.div_ceil(PER_GENERATOR);
    if peak <= IN_PROCESS {
        1
    } else if builtin {
        processes.max(2)
    } else {
        processes.max(1)
    }
}

/// Resident memory per session, bytes, measured at a million sessions (issue #33,
/// 2026-11-27: 1,000,000 logged in, 9.3 GiB in all): the generator's 1.55 KiB, the
/// built-in server's 0.90 KiB, and the kernel's 3.3 KiB per loopback TCP socket (socket,
/// sock, file, dentry and inode objects; the rest of what the machine used).
pub(crate) const GENERATOR_PER_SESSION: u64 = 1587;
pub(crate) const SERVER_PER_SESSION: u64 = 922;
pub(crate) const KERNEL_PER_SOCKET: u64 = 3380;
/// What a generator or server worker process holds before its first session (its
/// runtime, buffers, the account table), rounded up.
const PER_PROCESS: u64 = 8 << 20;
/// Open files kept for everything else on the machine.
const FILES_SLACK: u64 = 10_000;
/// Memory the kernel and the rest of the machine keep beyond the case: a tenth of what
/// is available.
const MEMORY_HEADROOM: f64 = 0.9;

/// Where a case's sessions have their ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ends {
    /// Generator and the built-in server here: two sockets a session.
    BothOurs,
    /// Generator here, a server not ours here too (Prosody, ejabberd, one on loopback):
    /// two sockets, the server's own memory not counted.
    BothHere,
    /// Only the generator's end here (a server in the lab or a cluster).
    GeneratorOnly,
}

/// What a peak of sessions needs on this machine.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Needs {
    pub peak: u64,
    pub ends: Ends,
    /// Bytes per session: generator, server, kernel sockets.
    pub per_session: (u64, u64, u64),
    /// Generator and server processes (their fixed memory).
    pub processes: u64,
    pub memory: u64,
    pub files: u64,
    /// Entries in the kernel's connection-tracking table, if it tracks them.
    pub connections: u64,
}

/// What this machine has left, from /proc.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Machine {
    /// `MemAvailable`, bytes.
    pub memory: Option<u64>,
    /// `fs.file-max` less the files open now.
    pub files: Option<u64>,
    /// `nf_conntrack_max` less the entries now, when the kernel tracks connections here
    /// (it has entries); `None` when it does not.
    pub conntrack: Option<u64>,
}

impl Machine {
    pub(crate) fn read() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let first = |t: &str| {
            t.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        };
        let memory = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(first)
            .map(|kib| kib * 1024);
        let files = match (
            first(&read("/proc/sys/fs/file-max")),
            first(&read("/proc/sys/fs/file-nr")),
        ) {
            (Some(max), Some(used)) => Some(max.saturating_sub(used)),
            _ => None,
        };
        let conntrack = match (
            first(&read("/proc/sys/net/netfilter/nf_conntrack_max")),
            first(&read("/proc/sys/net/netfilter/nf_conntrack_count")),
        ) {
            (Some(max), Some(count)) if count > 0 => Some(max.saturating_sub(count)),
            _ => None,
        };
        Machine {
            memory,
            files,
            conntrack,
        }
    }
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

fn kib(b: u64) -> String {
    format!("{:.2} KiB", b as f64 / 1024.0)
}

impl Needs {
    /// What `peak` sessions need with their ends as `ends`; `server_workers` processes
    /// for the built-in server when it runs them.
    pub(crate) fn of(peak: usize, ends: Ends, server_workers: usize) -> Needs {
        let peak = peak as u64;
        let sockets = if ends == Ends::GeneratorOnly { 1 } else { 2 };
        let server = if ends == Ends::BothOurs {
            SERVER_PER_SESSION
        } else {
            0
        };
        let per_session = (GENERATOR_PER_SESSION, server, sockets * KERNEL_PER_SOCKET);
        let ours = ends == Ends::BothOurs;
        let mut processes = generators(peak as usize, ours) as u64;
        if ours && peak as usize > IN_PROCESS {
            processes += server_workers as u64;
        }
        Needs {
            peak,
            ends,
            per_session,
            processes,
            memory: peak * (per_session.0 + per_session.1 + per_session.2)
                + processes * PER_PROCESS,
            files: sockets * peak + FILES_SLACK,
            connections: peak,
        }
    }

    /// "2000000 sessions need about 19.2 GiB: per session generator 1.55 KiB, server
    /// 0.90 KiB, kernel 6.60 KiB (2 sockets), and 8 MiB for each of 240 processes; and
    /// 4010000 open files"
    pub(crate) fn describe(&self) -> String {
        let (g, s, k) = self.per_session;
        let sockets = if self.ends == Ends::GeneratorOnly {
            "1 socket"
        } else {
            "2 sockets"
        };
        let server = match self.ends {
            Ends::BothOurs => format!(", server {}", kib(s)),
            Ends::BothHere => ", the server's own not counted".into(),
            Ends::GeneratorOnly => String::new(),
        };
        format!(
            "a peak of {} sessions needs about {} of memory (per session: generator {}{server}, \
             kernel {} for {sockets}; and {} MiB for each of {} processes) and {} open files",
            self.peak,
            gib(self.memory),
            kib(g),
            kib(k),
            PER_PROCESS >> 20,
            self.processes,
            self.files
        )
    }

    /// Refuses what `m` cannot hold, with what is needed and what there is.
    pub(crate) fn check(&self, m: &Machine) -> Result<(), String> {
        if let Some(free) = m.files
            && self.files > free
        {
            return Err(format!(
                "{}; fs.file-max allows {free} more open files (raise it: sysctl -w \
                 fs.file-max=N)",
                self.describe()
            ));
        }
        if let Some(avail) = m.memory
            && self.memory as f64 > avail as f64 * MEMORY_HEADROOM
        {
            let fits = (avail as f64 * MEMORY_HEADROOM) as u64 * self.peak / self.memory.max(1);
            return Err(format!(
                "{}; {} is available (MemAvailable), and a tenth stays for the rest of the \
                 machine: about {fits} sessions fit",
                self.describe(),
                gib(avail)
            ));
        }
        if let Some(free) = m.conntrack
            && self.connections > free
        {
            return Err(format!(
                "{}; the kernel tracks connections here and its table has room for {free} \
                 more (raise net.netfilter.nf_conntrack_max, or unload nf_conntrack)",
                self.describe()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// Two million sessions, both ends ours: about 9 KiB a session, so they fit in this
    /// 24 GiB VM's 22 GiB available and not in 16 GiB; the refusal gives the figures.
    #[test]
    fn two_million_fit_in_22_gib_and_not_in_16() {
        let n = Needs::of(2_000_000, Ends::BothOurs, 100);
        assert_eq!(n.processes, 134 + 100);
        let per = n.per_session.0 + n.per_session.1 + n.per_session.2;
        assert!((9000..9400).contains(&per), "{per}");
        let roomy = Machine {
            memory: Some(22 * GIB),
            files: Some(10_000_000),
            conntrack: None,
        };
        assert_eq!(n.check(&roomy), Ok(()));
        let small = Machine {
            memory: Some(16 * GIB),
            ..roomy
        };
        let e = n.check(&small).unwrap_err();
        assert!(
            e.contains("generator 1.55 KiB") && e.contains("server 0.90 KiB"),
            "{e}"
        );
        assert!(e.contains("kernel 6.60 KiB for 2 sockets"), "{e}");
        assert!(e.contains("16.0 GiB is available"), "{e}");
        let few_files = Machine {
            files: Some(1_000_000),
            ..roomy
        };
        assert!(n.check(&few_files).unwrap_err().contains("fs.file-max"));
        let tracked = Machine {
            conntrack: Some(262_000),
            ..roomy
        };
        assert!(n.check(&tracked).unwrap_err().contains("nf_conntrack_max"));
    }

    /// One thread up to the in-process peak; beyond it a process per 15,000 sessions,
    /// two at least beside the built-in server, whose workers the needs add.
    #[test]
    fn generators_are_counted_as_the_case_starts_them() {
        assert_eq!(generators(IN_PROCESS, true), 1);
        assert_eq!(generators(IN_PROCESS + 1, true), 2);
        assert_eq!(generators(IN_PROCESS + 1, false), 1);
        assert_eq!(generators(100_000, true), 7);
        assert_eq!(Needs::of(IN_PROCESS, Ends::BothOurs, 3).processes, 1);
        assert_eq!(Needs::of(20_000, Ends::BothOurs, 3).processes, 2 + 3);
        assert_eq!(Needs::of(20_000, Ends::BothHere, 3).processes, 2);
    }

    /// Only the generator's end here: one socket a session, no server memory.
    #[test]
    fn a_server_elsewhere_costs_one_socket() {
        let n = Needs::of(100_000, Ends::GeneratorOnly, 4);
        assert_eq!(n.per_session, (GENERATOR_PER_SESSION, 0, KERNEL_PER_SOCKET));
        assert_eq!(n.files, 100_000 + FILES_SLACK);
        assert_eq!(n.processes, 7);
    }
}
