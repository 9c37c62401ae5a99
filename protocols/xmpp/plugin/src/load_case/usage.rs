//! What a load case's processes use, sampled beside the run at the end of each interval
//! ([`UsageSampler`]): the generator's and the server's memory and CPU for the time
//! series, the kernel's TCP sockets, and each side's user and kernel CPU clocks, from
//! which [`Usage::login_cpu`] takes the CPU one login costs on each side.
//!
//! Each side is read by its own CPU clocks (`utime` and `stime` of every one of its
//! processes, or of its threads when it runs inside wirebench), so one side's cost is not
//! blamed on the other, and a side's start-up (the server building its accounts, a
//! generator its schedule) is left out: the first reading is at the schedule's start.

use super::metrics::LOAD_LOGIN_PHASE;
use super::metrics::{
    GENERATOR_CPU_SYS_PER_LOGIN, GENERATOR_CPU_USER_PER_LOGIN, SERVER_CPU_SYS_PER_LOGIN,
    SERVER_CPU_USER_PER_LOGIN,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wirebench_load::Series;
use wirebench_peer::usage as process_usage;
use wirebench_protocol::Outcome;
use wirebench_xmpp_load::open_loop::monotonic_ns;

/// The built-in server's worker threads when it runs inside wirebench (`wb-xmpp-w<N>`).
const SERVER_THREADS: &str = "wb-xmpp-w";

/// CPU seconds so far of one side of the case, in user mode and in the kernel.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Cpu {
    pub user: f64,
    pub sys: f64,
}

impl Cpu {
    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            user: (self.user - before.user).max(0.0),
            sys: (self.sys - before.sys).max(0.0),
        }
    }
}

/// Samples the case's processes until [`UsageSampler::finish`].
pub(crate) struct UsageSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Usage>,
}

#[derive(Default)]
pub(crate) struct Usage {
    /// By interval index.
    pub rows: std::collections::BTreeMap<u64, UsageRow>,
    /// Each side's CPU at the schedule's start (`t0`).
    start: Reading,
}

#[derive(Default, Clone, Copy)]
pub(crate) struct UsageRow {
    gen_rss_kib: u64,
    gen_cpu_pct: f64,
    /// The server's memory (KiB) and CPU (%): worker processes or a real server.
    pub server: Option<(u64, f64)>,
    tcp_sockets: u64,
    tcp_mem_kib: u64,
    /// Each side's CPU so far.
    cpu: Reading,
}

/// Each side's CPU clocks at one moment; `None` where a side could not be read whole (a
/// generator process gone, no server of ours).
#[derive(Default, Clone, Copy)]
struct Reading {
    generator: Option<Cpu>,
    server: Option<Cpu>,
}

/// TCP sockets in use and the pages of buffer memory the kernel holds for TCP, KiB.
fn sockstat() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/net/sockstat").unwrap_or_default();
    let Some(tcp) = text.lines().find_map(|l| l.strip_prefix("TCP:")) else {
        return (0, 0);
    };
    let words: Vec<&str> = tcp.split_whitespace().collect();
    let field = |k: &str| {
        words
            .iter()
            .position(|w| *w == k)
            .and_then(|i| words.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    (field("inuse"), field("mem") * page / 1024)
}

/// Where the sampler reads the server's memory and CPU: the built-in server's worker
/// processes' reports, its threads inside wirebench, or a real server's process.
pub(crate) enum ServerProbe {
    Builtin(Arc<wirebench_xmpp_server::ServerStats>),
    Threads,
    Pid(u32),
}

/// What the sampler reads: the generator's processes (or wirebench itself), the server.
struct Probes {
    gen_pids: Arc<Mutex<Vec<u32>>>,
    in_process: bool,
    server: Option<ServerProbe>,
}

impl Probes {
    /// The generator's memory and CPU: wirebench's own when it is a thread inside it
    /// (less the server's threads beside it, for the CPU clocks), else its processes'
    /// summed (`None` in `whole` if one could not be read).
    fn generator(&self) -> (wirebench_peer::Usage, Option<Cpu>) {
        if self.in_process {
            let me = process_usage(std::process::id()).unwrap_or_default();
            let (su, ss) = wirebench_peer::threads_cpu(SERVER_THREADS);
            let cpu = Cpu {
                user: (me.user_s - su).max(0.0),
                sys: (me.sys_s - ss).max(0.0),
            };
            return (me, Some(cpu));
        }
        let pids = self
            .gen_pids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let each: Vec<_> = pids.iter().map(|p| process_usage(*p)).collect();
        let whole = !each.is_empty() && each.iter().all(Option::is_some);
        let sum = each.into_iter().flatten().reduce(|a, b| a + b);
        let sum = sum.unwrap_or_default();
        let cpu = whole.then_some(Cpu {
            user: sum.user_s,
            sys: sum.sys_s,
        });
        (sum, cpu)
    }

    /// The server's memory (KiB) and CPU seconds for the series (not for one inside
    /// wirebench, whose memory is wirebench's), and its CPU clocks.
    fn server(&self) -> (Option<(u64, f64)>, Option<Cpu>) {
        match &self.server {
            Some(ServerProbe::Builtin(s)) => {
                let ms = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed) as f64 / 1e3;
                let cpu = Cpu {
                    user: ms(&s.cpu_user_ms),
                    sys: ms(&s.cpu_sys_ms),
                };
                let series = (s.rss_kib.load(Ordering::Relaxed), ms(&s.cpu_ms));
                (Some(series), Some(cpu))
            }
            Some(ServerProbe::Threads) => {
                let (user, sys) = wirebench_peer::threads_cpu(SERVER_THREADS);
                (None, Some(Cpu { user, sys }))
            }
            Some(ServerProbe::Pid(p)) => match process_usage(*p) {
                Some(u) => (
                    Some((u.rss_bytes / 1024, u.cpu_s)),
                    Some(Cpu {
                        user: u.user_s,
                        sys: u.sys_s,
                    }),
                ),
                None => (None, None),
            },
            None => (None, None),
        }
    }
}

impl UsageSampler {
    /// Samples at `t0` (each side's CPU before the first session) and at the end of
    /// every interval of `width` after it.
    pub(crate) fn start(
        t0: u64,
        width: Duration,
        gen_pids: Arc<Mutex<Vec<u32>>>,
        in_process: bool,
        server: Option<ServerProbe>,
    ) -> UsageSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let probes = Probes {
            gen_pids,
            in_process,
            server,
        };
        let thread = std::thread::spawn(move || {
            let w = width.as_nanos() as u64;
            let mut usage = Usage::default();
            let (mut gen_cpu, mut server_cpu) = (0.0, 0.0);
            // Waits for `due`; false when told to stop first.
            let wait = |due: u64| {
                while monotonic_ns() < due {
                    if flag.load(Ordering::Relaxed) {
                        return false;
                    }
                    let left = due.saturating_sub(monotonic_ns());
                    std::thread::sleep(Duration::from_nanos(left.min(50_000_000)));
                }
                true
            };
            if !wait(t0) {
                return usage;
            }
            usage.start = Reading {
                generator: probes.generator().1,
                server: probes.server().1,
            };
            for index in 0u64.. {
                if !wait(t0 + (index + 1) * w) {
                    return usage;
                }
                let (generator, gen_clocks) = probes.generator();
                let (server, server_clocks) = probes.server();
                let pct = |now: f64, before: &mut f64| {
                    let p = (now - *before).max(0.0) / width.as_secs_f64() * 100.0;
                    *before = now;
                    p
                };
                let server = server.map(|(rss, cpu)| (rss, pct(cpu, &mut server_cpu)));
                let (tcp_sockets, tcp_mem_kib) = sockstat();
                usage.rows.insert(
                    index,
                    UsageRow {
                        gen_rss_kib: generator.rss_bytes / 1024,
                        gen_cpu_pct: pct(generator.cpu_s, &mut gen_cpu),
                        server,
                        tcp_sockets,
                        tcp_mem_kib,
                        cpu: Reading {
                            generator: gen_clocks,
                            server: server_clocks,
                        },
                    },
                );
            }
            usage
        });
        UsageSampler { stop, thread }
    }

    pub(crate) fn finish(self) -> Usage {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// The CPU each side spent on the logins, per login.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LoginCpu {
    /// From the schedule's start to the end of the last interval with a login, seconds.
    pub phase_s: f64,
    pub logins: u64,
    pub generator: Option<Cpu>,
    pub server: Option<Cpu>,
}

impl Usage {
    /// Each side's CPU per login over the login phase: from the schedule's start to one
    /// interval after the last interval with a login (so that work trailing the last
    /// login, and the half-second reports of the server's worker processes, are in),
    /// divided by the logins. `None` without a login or a reading at the start.
    pub(crate) fn login_cpu(&self, series: &Series, width: Duration) -> Option<LoginCpu> {
        let last = series
            .intervals()
            .filter(|i| i.counts.logged_in > 0)
            .map(|i| i.index)
            .max()?;
        let logins = series.counts().logged_in;
        // The latest reading of a side at most one interval after the last login, and
        // not before it.
        let at_end = |side: fn(&Reading) -> Option<Cpu>| {
            self.rows
                .range(last..=last + 1)
                .rev()
                .find_map(|(_, r)| side(&r.cpu))
        };
        let per = |side: fn(&Reading) -> Option<Cpu>| {
            let used = at_end(side)?.since(side(&self.start)?);
            Some(Cpu {
                user: used.user / logins as f64,
                sys: used.sys / logins as f64,
            })
        };
        Some(LoginCpu {
            phase_s: (last + 1) as f64 * width.as_secs_f64(),
            logins,
            generator: per(|r| r.generator),
            server: per(|r| r.server),
        })
    }

    /// The load series' CSV with the samples as more columns, matched by interval.
    pub(crate) fn append_to(&self, csv: &str, width: Duration, in_process: bool) -> String {
        let mut out = String::with_capacity(csv.len() + csv.len() / 2);
        let mut lines = csv.lines();
        if let Some(head) = lines.next() {
            out.push_str(head);
            out.push_str(if in_process {
                ",wirebench_rss_mib,wirebench_cpu_pct,server_rss_mib,server_cpu_pct,tcp_sockets,tcp_mem_mib\n"
            } else {
                ",generator_rss_mib,generator_cpu_pct,server_rss_mib,server_cpu_pct,tcp_sockets,tcp_mem_mib\n"
            });
        }
        let w = width.as_secs_f64();
        for line in lines {
            out.push_str(line);
            let end: f64 = line
                .split(',')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            let index = ((end / w).round() as u64).saturating_sub(1);
            match self.rows.get(&index) {
                Some(r) => {
                    let mib = |k: u64| format!("{:.1}", k as f64 / 1024.0);
                    let (srss, scpu) = match r.server {
                        Some((rss, cpu)) => (mib(rss), format!("{cpu:.1}")),
                        None => (String::new(), String::new()),
                    };
                    out.push_str(&format!(
                        ",{},{:.1},{srss},{scpu},{},{}\n",
                        mib(r.gen_rss_kib),
                        r.gen_cpu_pct,
                        r.tcp_sockets,
                        mib(r.tcp_mem_kib)
                    ));
                }
                None => out.push_str(",,,,,,\n"),
            }
        }
        out
    }
}

/// Records each side's CPU per login, split into user and kernel time
/// (`generator.cpu_user_per_login`, `.cpu_sys_per_login`, the same for `server.`), and
/// the login phase they were read over (`load.login_phase`).
pub(crate) fn push_login_cpu(out: &mut Outcome, l: &LoginCpu) {
    out.put(LOAD_LOGIN_PHASE, l.phase_s);
    for (cpu, user, sys) in [
        (
            l.generator,
            GENERATOR_CPU_USER_PER_LOGIN,
            GENERATOR_CPU_SYS_PER_LOGIN,
        ),
        (
            l.server,
            SERVER_CPU_USER_PER_LOGIN,
            SERVER_CPU_SYS_PER_LOGIN,
        ),
    ] {
        if let Some(c) = cpu {
            out.put(user, c.user);
            out.put(sys, c.sys);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_load::Interval;

    fn row(generator: Cpu, server: Option<Cpu>) -> UsageRow {
        UsageRow {
            cpu: Reading {
                generator: Some(generator),
                server,
            },
            ..UsageRow::default()
        }
    }

    fn cpu(user: f64, sys: f64) -> Cpu {
        Cpu { user, sys }
    }

    /// The window ends one interval after the last login, the start's reading is taken
    /// off, and a side that cannot be read there is left out.
    #[test]
    fn login_cpu_is_read_over_the_login_phase() {
        let mut series = Series::new();
        for (index, logins) in [(0, 100), (1, 100), (2, 0), (3, 0)] {
            let mut i = Interval::new(index);
            i.counts.logged_in = logins;
            series.add(&i);
        }
        let mut usage = Usage {
            start: Reading {
                generator: Some(cpu(1.0, 2.0)),
                server: Some(cpu(0.5, 0.5)),
            },
            ..Usage::default()
        };
        usage.rows.insert(0, row(cpu(1.1, 2.2), None));
        usage.rows.insert(1, row(cpu(1.2, 2.4), None));
        usage.rows.insert(2, row(cpu(1.4, 2.8), None));
        // Idle time after the phase is not counted.
        usage
            .rows
            .insert(3, row(cpu(9.0, 9.0), Some(cpu(9.0, 9.0))));
        let l = usage.login_cpu(&series, Duration::from_secs(1)).unwrap();
        assert_eq!(l.logins, 200);
        assert_eq!(l.phase_s, 2.0);
        let g = l.generator.unwrap();
        assert!((g.user - 0.4 / 200.0).abs() < 1e-12, "{g:?}");
        assert!((g.sys - 0.8 / 200.0).abs() < 1e-12, "{g:?}");
        assert_eq!(l.server, None);
        assert_eq!(
            Usage::default().login_cpu(&Series::new(), Duration::from_secs(1)),
            None
        );
    }
}
