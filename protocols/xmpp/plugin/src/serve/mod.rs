//! The built-in XMPP server (RFC 6120/6121 client-to-server): the sans-IO
//! [`ServerSession`](wirebench_xmpp::ServerSession) engine behind mio event loops, one per
//! worker, with workers spread over threads or processes.
//!
//! Why an event loop here when the measuring clients use blocking threads
//! (docs/architecture.md): a server holding tens of thousands of mostly idle sessions
//! cannot afford a thread (and its stack) per connection; one readiness loop costs a few
//! hundred bytes per session. mio is the thin, well-kept epoll wrapper under tokio; the
//! loop needs nothing tokio adds.
//!
//! Layout ([`plan`]): one process holds at most what its open-file limit allows (20,000
//! on these machines, a hard limit), so a session target above that takes several worker
//! *processes* (the `wirebench` binary re-run as `xmpp-worker`, see [`procs`]); below it,
//! worker threads of this process. Either way every worker has its own listener on the
//! same port (`SO_REUSEPORT`: the kernel spreads new connections over them) or on ports
//! of its own, and every pair of workers shares a Unix socket pair over which they announce
//! who is online and hand each other stanzas ([`fabric`]).

pub mod accounts;
pub mod fabric;
pub mod procs;
mod worker;

pub use accounts::Accounts;
use fabric::Link;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use wirebench_xmpp::{NumberedAccounts, ServerConfig};

/// Open files a worker process keeps for itself: stdio, the epoll fd, its listener, the
/// links to other workers, and what the allocator or a log may open. The rest hold
/// sessions.
const FD_RESERVE: u64 = 256;

/// How to run the built-in server.
#[derive(Debug, Clone)]
pub struct XmppServerConfig {
    pub listen: SocketAddr,
    pub domain: String,
    pub accounts: Accounts,
    /// Sessions the server should be able to hold at once; sizes the layout ([`plan`]).
    /// 0: as many as one process holds.
    pub sessions: usize,
    /// A session must have bound a resource this long after connecting.
    pub handshake_timeout: Duration,
    /// Unwritten bytes a session may queue before it is closed as a slow reader.
    pub max_queued: usize,
    pub max_stanza: usize,
    /// Event loops; 0: chosen by [`plan`] (one per core, more if the target needs them).
    pub workers: usize,
    /// Run the workers as processes even when one process would hold the target.
    pub processes: bool,
    /// Worker `i` listens on port `listen.port() + i` instead of all sharing one port;
    /// lets a client pick its worker (the cross-worker bench does).
    pub port_per_worker: bool,
    /// Offer STARTTLS with this certificate ([`self_signed`] makes one).
    pub tls: Option<TlsIdentity>,
}

impl XmppServerConfig {
    /// Users `user1..user<users>` with passwords `pass<N>`, two contacts each.
    pub fn new(listen: SocketAddr, domain: &str, users: u64) -> XmppServerConfig {
        XmppServerConfig {
            listen,
            domain: domain.to_string(),
            accounts: Accounts::numbered(NumberedAccounts {
                user_prefix: "user".into(),
                password_prefix: "pass".into(),
                users,
                contacts: 2,
                domain: domain.to_string(),
            }),
            sessions: 0,
            handshake_timeout: Duration::from_secs(30),
            max_queued: 4 << 20,
            max_stanza: 64 * 1024,
            workers: 0,
            processes: false,
            port_per_worker: false,
            tls: None,
        }
    }

    /// The engine's configuration for this server's sessions.
    fn session_config(&self) -> Result<Arc<ServerConfig>, String> {
        let tls = match &self.tls {
            Some(id) => Some(id.server_config()?),
            None => None,
        };
        Ok(Arc::new(ServerConfig {
            max_stanza: self.max_stanza,
            tls,
            ..ServerConfig::new(&self.domain)
        }))
    }
}

/// A certificate and its key (DER), which every worker (thread or process) turns into
/// the same rustls configuration.
#[derive(Clone)]
pub struct TlsIdentity {
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsIdentity({} byte certificate)", self.cert_der.len())
    }
}

impl TlsIdentity {
    /// The certificate, DER: what a client of ours trusts.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    pub fn server_config(&self) -> Result<Arc<wirebench_xmpp::rustls::ServerConfig>, String> {
        use wirebench_xmpp::rustls;
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.key_der.clone().into());
        let cert = rustls::pki_types::CertificateDer::from(self.cert_der.clone());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(cfg))
    }
}

/// A certificate for `domain` made on the spot (self-signed, rcgen): enough for STARTTLS
/// in a lab, where clients are told to trust it or not to verify. Not for anything
/// facing real users.
pub fn self_signed(domain: &str) -> Result<TlsIdentity, String> {
    let ck = rcgen::generate_simple_self_signed(vec![domain.to_string()])
        .map_err(|e| format!("cannot make a certificate for {domain}: {e}"))?;
    Ok(TlsIdentity {
        cert_der: ck.cert.der().to_vec(),
        key_der: ck.signing_key.serialize_der(),
    })
}

/// Declares the counters once: [`ServerStats`] (atomics, updated by the workers) and
/// [`StatsSnapshot`] (plain numbers, what worker processes report to their parent).
macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// Counters, readable while the server runs.
        #[derive(Debug, Default)]
        pub struct ServerStats {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        /// The counters at one moment.
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        pub struct StatsSnapshot {
            $($(#[$doc])* #[serde(default)] pub $name: u64,)*
        }

        impl ServerStats {
            pub fn snapshot(&self) -> StatsSnapshot {
                StatsSnapshot { $($name: self.$name.load(Ordering::Relaxed),)* }
            }

            fn store(&self, s: &StatsSnapshot) {
                $(self.$name.store(s.$name, Ordering::Relaxed);)*
            }
        }

        impl std::ops::Add for StatsSnapshot {
            type Output = StatsSnapshot;
            fn add(self, o: StatsSnapshot) -> StatsSnapshot {
                StatsSnapshot { $($name: self.$name + o.$name,)* }
            }
        }
    };
}

counters! {
    accepted,
    bound,
    /// Connections open now.
    open,
    /// Stanzas addressed to a user (messages, iq, directed presence) and delivered.
    routed,
    /// Of those, the ones whose recipient was on another worker.
    routed_across,
    /// Stanzas for a user with no session (any more).
    unroutable,
    closed_timeout,
    closed_slow,
    closed_error,
    /// Connections closed at accept: the process held all the sessions it can.
    refused_full,
    /// Stanzas handed from one worker to another (presence broadcasts and probes too).
    cross_worker,
    /// Stanzas dropped because the link to their worker was backed up.
    dropped_link,
    /// Worker processes only (0 with threads): resident memory now and at its highest
    /// (VmRSS, VmHWM), KiB, and CPU time, ms; summed over the workers.
    rss_kib,
    rss_peak_kib,
    cpu_ms,
}

/// How the server's workers are laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub workers: usize,
    /// Workers are processes (else threads of this one).
    pub processes: bool,
    /// Sessions one process may hold: its open-file limit less [`FD_RESERVE`].
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
            let ports: Vec<String> = self.addrs.iter().map(|a| a.port().to_string()).collect();
            format!("{} ports {}", self.addrs[0].ip(), ports.join(","))
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

/// A listener with `SO_REUSEPORT`, so every worker can have one on the same port.
fn reuseport_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    Ok(s.into())
}

/// A bound server; [`XmppServer::run`] serves until the flag is set.
pub struct XmppServer {
    cfg: XmppServerConfig,
    layout: Layout,
    listeners: Vec<TcpListener>,
    /// The whole server's counters (in a process layout, the sum of what the workers last
    /// reported, about twice a second).
    pub stats: Arc<ServerStats>,
}

impl XmppServer {
    /// Plans the layout and binds every worker's listener; port 0 picks one port.
    pub fn bind(cfg: XmppServerConfig) -> std::io::Result<XmppServer> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let fd_limit = open_file_limit();
        let (workers, processes, per_process) =
            plan(cfg.sessions, cfg.workers, cfg.processes, cores, fd_limit)
                .map_err(std::io::Error::other)?;
        let first = reuseport_listener(cfg.listen)?;
        let mut addr = first.local_addr()?;
        let mut listeners = vec![first];
        for _ in 1..workers {
            if cfg.port_per_worker {
                addr.set_port(addr.port().checked_add(1).ok_or_else(|| {
                    std::io::Error::other("no port left above the listening port")
                })?);
            }
            listeners.push(reuseport_listener(addr)?);
        }
        let addrs = listeners
            .iter()
            .map(|l| l.local_addr())
            .collect::<Result<_, _>>()?;
        Ok(XmppServer {
            cfg,
            layout: Layout {
                workers,
                processes,
                per_process,
                fd_limit,
                addrs,
            },
            listeners,
            stats: Arc::new(ServerStats::default()),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.layout.addrs[0])
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn workers(&self) -> usize {
        self.layout.workers
    }

    /// Runs the server on a new thread until `shutdown` is set.
    pub fn spawn(
        self,
        shutdown: Arc<AtomicBool>,
    ) -> std::io::Result<std::thread::JoinHandle<std::io::Result<()>>> {
        std::thread::Builder::new()
            .name("wb-xmpp-server".into())
            .spawn(move || {
                let r = self.run(&shutdown);
                if let Err(e) = &r {
                    eprintln!("wirebench: XMPP server stopped: {e}");
                }
                r
            })
    }

    /// Serves until `shutdown` is set; open sessions then get `system-shutdown`. A worker
    /// that fails stops the whole server, with its error.
    pub fn run(self, shutdown: &AtomicBool) -> std::io::Result<()> {
        if self.layout.processes {
            return procs::run(self, shutdown);
        }
        let scfg = self.cfg.session_config().map_err(std::io::Error::other)?;
        let workers = self.layout.workers;
        let mut links: Vec<Vec<Option<Link>>> = mesh(workers)?
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|e| e.map(link_of).transpose())
                    .collect()
            })
            .collect::<std::io::Result<_>>()?;
        let (cfg, stats, per_process) = (&self.cfg, &*self.stats, self.layout.per_process);
        // One worker failing stops the others too.
        let stop_all = AtomicBool::new(false);
        let any_stop = || shutdown.load(Ordering::Relaxed) || stop_all.load(Ordering::Relaxed);
        std::thread::scope(|sc| {
            let mut handles = Vec::new();
            for (id, listener) in self.listeners.into_iter().enumerate() {
                let my_links = std::mem::take(&mut links[id]);
                let scfg = scfg.clone();
                let (stop_all, any_stop) = (&stop_all, &any_stop);
                handles.push(
                    std::thread::Builder::new()
                        .name(format!("wb-xmpp-w{id}"))
                        .spawn_scoped(sc, move || {
                            let ctx = worker::WorkerCtx {
                                id,
                                workers,
                                cfg,
                                scfg,
                                stats,
                                max_sessions: per_process,
                                shutdown,
                                also_stop: any_stop,
                            };
                            let r =
                                mio_listener(listener).and_then(|l| worker::run(ctx, l, my_links));
                            if r.is_err() {
                                stop_all.store(true, Ordering::SeqCst);
                            }
                            r
                        }),
                );
            }
            let mut first_err = None;
            for h in handles {
                let r = match h {
                    Ok(h) => h.join().unwrap_or_else(|_| {
                        stop_all.store(true, Ordering::SeqCst);
                        Err(std::io::Error::other("an XMPP worker panicked"))
                    }),
                    Err(e) => Err(e),
                };
                if let Err(e) = r {
                    first_err.get_or_insert(e);
                }
            }
            first_err.map_or(Ok(()), Err)
        })
    }
}

/// CPU seconds of this process's built-in server worker threads (named `wb-xmpp-w<N>`),
/// from /proc: nanoseconds on CPU from each thread's `schedstat` (a short case uses less
/// than one 10 ms tick of `stat`'s counters); 0 if there are none.
pub fn worker_cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut ns = 0u64;
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("wb-xmpp-w") {
            continue;
        }
        let sched = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        ns += sched
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    ns as f64 / 1e9
}

fn mio_listener(l: TcpListener) -> std::io::Result<mio::net::TcpListener> {
    l.set_nonblocking(true)?;
    Ok(mio::net::TcpListener::from_std(l))
}

/// One Unix socket pair for every pair of workers: `mesh(n)[i][j]` is worker `i`'s end of
/// its link to `j` (`None` on the diagonal).
fn mesh(n: usize) -> std::io::Result<Vec<Vec<Option<std::os::unix::net::UnixStream>>>> {
    let mut ends: Vec<Vec<Option<_>>> = (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
    for (i, j) in (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))) {
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        ends[i][j] = Some(a);
        ends[j][i] = Some(b);
    }
    Ok(ends)
}

fn link_of(s: std::os::unix::net::UnixStream) -> std::io::Result<Link> {
    s.set_nonblocking(true)?;
    Ok(Link::new(mio::net::UnixStream::from_std(s)))
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
