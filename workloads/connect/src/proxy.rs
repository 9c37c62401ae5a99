//! Our proxies (SOCKS5, the Convert converter, Shadowsocks) placed for a connect case on
//! several threads ([`place_proxy`]): each thread its own listener on the same port
//! (`SO_REUSEPORT`, so the kernel spreads new connections over them), its own
//! current-thread runtime and its own counters, as the built-in XMPP server runs a
//! worker per core. One thread cannot use a second core; a connection stays on the thread
//! that accepted it, so the threads share nothing.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use wirebench_model::Kind;
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Fault, Hosts, WorkloadError};
use wirebench_rpc::Counters;

pub const THREADS: ParamSpec = ParamSpec {
    name: "proxy.threads",
    kind: Kind::Count,
    default: "0",
    workloads: &["connect"],
    help: "threads of our proxy (socks5.server=ours, convert, shadowsocks.server=ours), each with its own SO_REUSEPORT listener on the proxy's port and its own current-thread runtime (0: one per core)",
    words: "proxy threads",
};

/// `proxy.threads` of a case: as given, or one per core for 0.
pub fn threads(case: &wirebench_protocol::Case) -> usize {
    match case.count(&THREADS).unwrap_or(0) {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n as usize,
    }
}

/// A proxy running on its threads; dropping it stops them (their connections are cut)
/// and waits for them.
pub struct Proxy {
    pub addr: SocketAddr,
    /// Each thread's counters; its `cpu_ns` is set once it has stopped.
    pub counters: Vec<Arc<Counters>>,
    stops: Vec<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        for s in self.stops.drain(..) {
            let _ = s.send(());
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A listener with `SO_REUSEPORT` (the threads share `addr`'s port) and the backlog
/// of 4096 the single-thread servers have.
fn listen(addr: SocketAddr, mptcp: bool) -> std::io::Result<std::net::TcpListener> {
    let s = wirebench_net::sock::stream_socket(addr, mptcp)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    s.listen(4096)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// Starts `serve` on `threads` threads (at least one), each on a listener of its own on
/// one port of the case's server address (the lab's server host, or loopback; with
/// Multipath TCP when `mptcp`), until the returned [`Proxy`] is dropped.
pub fn place_proxy<F, Fut>(
    lab: Option<Hosts>,
    what: &str,
    mptcp: bool,
    threads: usize,
    serve: F,
) -> Result<Proxy, WorkloadError>
where
    F: Fn(tokio::net::TcpListener, Arc<Counters>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let serve = Arc::new(serve);
    let mut proxy = Proxy {
        addr: SocketAddr::new(wirebench_rpc::server::server_ip(lab), 0),
        counters: Vec::new(),
        stops: Vec::new(),
        threads: Vec::new(),
    };
    // The first thread takes a free port; the others listen on the same one.
    for i in 0..threads.max(1) {
        let netns = lab.map(|l| l.server().name().to_string());
        let counters = Arc::new(Counters::default());
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<SocketAddr, String>>();
        let (c, serve, want) = (counters.clone(), serve.clone(), proxy.addr);
        let name = format!("{what}-proxy-{i}");
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                let started = (|| -> Result<_, String> {
                    if let Some(ns) = &netns {
                        wirebench_protocol::hosts::enter(ns).map_err(|e| e.to_string())?;
                    }
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| format!("cannot start {name}'s runtime: {e}"))?;
                    let std_l =
                        listen(want, mptcp).map_err(|e| format!("cannot listen on {want}: {e}"))?;
                    let addr = std_l.local_addr().map_err(|e| e.to_string())?;
                    let _g = rt.enter();
                    let l = tokio::net::TcpListener::from_std(std_l).map_err(|e| e.to_string())?;
                    Ok((rt, l, addr))
                })();
                let (rt, l, addr) = match started {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(addr));
                // A LocalSet: connection tasks need not be Send, and stay on this thread.
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, async {
                    tokio::select! {
                        _ = serve(l, c.clone()) => {}
                        _ = stop_rx => {}
                    }
                });
                c.cpu_ns
                    .store(wirebench_model::clock::thread_cpu_ns(), Ordering::Relaxed);
            })
            .map_err(|e| WorkloadError::because(Fault::Environment, "cannot start a thread", e))?;
        proxy.threads.push(thread);
        proxy.stops.push(stop_tx);
        match ready_rx.recv() {
            Ok(Ok(addr)) => proxy.addr = addr,
            Ok(Err(e)) => return Err(WorkloadError::Environment(format!("{what} proxy: {e}"))),
            Err(_) => {
                return Err(WorkloadError::Environment(format!(
                    "{what} proxy: its thread ended before it listened"
                )));
            }
        }
        proxy.counters.push(counters);
    }
    Ok(proxy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use tokio::io::AsyncReadExt;

    /// Every thread listens on the one port, and connections reach more than one of
    /// them; dropping the proxy stops them all and leaves each one's CPU time.
    #[test]
    fn threads_share_one_port() {
        let hits: Arc<Vec<AtomicU64>> = Arc::new((0..2).map(|_| AtomicU64::new(0)).collect());
        let next = Arc::new(AtomicU64::new(0));
        let (h, n) = (hits.clone(), next.clone());
        let proxy = place_proxy(None, "test", false, 2, move |l, _c| {
            // Each thread learns its index from the order they start in.
            let me = n.fetch_add(1, Ordering::SeqCst) as usize;
            let h = h.clone();
            async move {
                loop {
                    let Ok((mut s, _)) = l.accept().await else {
                        continue;
                    };
                    h[me].fetch_add(1, Ordering::SeqCst);
                    tokio::task::spawn_local(async move {
                        let mut b = [0u8; 1];
                        let _ = s.read(&mut b).await;
                    });
                }
            }
        })
        .unwrap();
        assert_eq!(proxy.counters.len(), 2);
        assert_ne!(proxy.addr.port(), 0);
        // SO_REUSEPORT hashes each connection's addresses and ports: 200 source ports
        // reach both listeners but with a chance of 2^-199.
        let conns: Vec<_> = (0..200)
            .map(|_| std::net::TcpStream::connect(proxy.addr).unwrap())
            .collect();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let total = || hits.iter().map(|h| h.load(Ordering::SeqCst)).sum::<u64>();
        while total() < 200 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(total(), 200);
        assert!(
            hits.iter().all(|h| h.load(Ordering::SeqCst) > 0),
            "{hits:?}"
        );
        drop(conns);
        let counters = proxy.counters.clone();
        drop(proxy);
        assert!(counters.iter().all(|c| c.cpu_ns.load(Ordering::SeqCst) > 0));
    }
}
