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
mod config;
pub mod fabric;
mod layout;
pub mod procs;
mod stats;
mod worker;

pub use accounts::Accounts;
pub use config::{TlsIdentity, XmppServerConfig, self_signed};
pub use layout::{Layout, open_file_limit, plan};
pub use stats::{ServerStats, StatsSnapshot, worker_cpu_seconds};

use fabric::WorkerLink;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A listener with `SO_REUSEPORT`, so every worker can have one on the same port, and
/// [`wirebench_net::sock::defer_accept`] (a client speaks first).
fn reuseport_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    wirebench_net::sock::defer_accept(&s);
    s.listen(wirebench_net::sock::LISTEN_BACKLOG)?;
    Ok(s.into())
}

/// Refuses a port another socket holds. `SO_REUSEPORT` would otherwise let a second
/// server (a second `wirebench serve` started by mistake) join the port silently and take
/// half its connections; a probe bound without it fails where anyone listens.
fn refuse_if_taken(addr: SocketAddr) -> std::io::Result<()> {
    use socket2::{Domain, Socket, Type};
    if addr.port() == 0 {
        return Ok(());
    }
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    // TIME_WAIT leftovers of an earlier server are no reason to refuse.
    s.set_reuse_address(true)?;
    s.bind(&addr.into()).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            std::io::Error::new(
                e.kind(),
                format!("{addr} is in use: another server listens there"),
            )
        } else {
            e
        }
    })
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
        refuse_if_taken(cfg.listen)?;
        let first = reuseport_listener(cfg.listen)?;
        let mut addr = first.local_addr()?;
        let mut listeners = vec![first];
        for _ in 1..workers {
            if cfg.port_per_worker && cfg.listen.port() == 0 {
                // Any free port for each worker: PORT+i would need a run of free ports,
                // which a busy machine's outgoing connections may not leave.
                listeners.push(reuseport_listener(cfg.listen)?);
                continue;
            }
            if cfg.port_per_worker {
                addr.set_port(addr.port().checked_add(1).ok_or_else(|| {
                    std::io::Error::other("no port left above the listening port")
                })?);
                refuse_if_taken(addr)?;
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
            return procs::run(
                &self.cfg,
                &self.layout,
                self.listeners,
                &self.stats,
                shutdown,
            );
        }
        let scfg = self.cfg.session_config().map_err(std::io::Error::other)?;
        let workers = self.layout.workers;
        let mut links: Vec<Vec<Option<WorkerLink>>> = fabric::mesh(workers)?
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|e| e.map(fabric::link_of).transpose())
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
                            let r = worker::mio_listener(listener)
                                .and_then(|l| worker::run(ctx, l, my_links));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_server_on_a_taken_port_is_refused() {
        let lo: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let first = XmppServer::bind(XmppServerConfig::new(lo, "a.test", 1)).unwrap();
        let taken = first.local_addr().unwrap();
        let e = XmppServer::bind(XmppServerConfig::new(taken, "a.test", 1))
            .err()
            .expect("a second server joined a taken port");
        assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
        assert!(
            e.to_string().contains("another server listens there"),
            "{e}"
        );
        // Once the first is gone the port is free again.
        drop(first);
        XmppServer::bind(XmppServerConfig::new(taken, "a.test", 1)).unwrap();
    }

    #[test]
    fn a_port_per_worker_on_port_0_gives_each_worker_its_own_free_port() {
        let mut cfg = XmppServerConfig::new("127.0.0.1:0".parse().unwrap(), "a.test", 1);
        cfg.workers = 4;
        cfg.port_per_worker = true;
        let s = XmppServer::bind(cfg).unwrap();
        let mut ports: Vec<u16> = s.layout().addrs.iter().map(|a| a.port()).collect();
        assert_eq!(ports.len(), 4, "{}", s.layout());
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 4, "two workers share a port: {}", s.layout());
        assert!(ports.iter().all(|&p| p != 0));
    }
}
