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
use wirebench_net::threads::ServerThread;
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Hosts, WorkloadError};
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
    wirebench_net::threads::per_core(case.count(&THREADS).unwrap_or(0) as usize)
}

/// A proxy running on its threads; dropping it stops them (their connections are cut),
/// waits for them and sets each one's counters' `cpu_ns`.
pub struct Proxy {
    pub addr: SocketAddr,
    /// Each thread's counters; its `cpu_ns` is set once it has stopped.
    pub counters: Vec<Arc<Counters>>,
    threads: Vec<ServerThread>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // All asked at once, then each waited for.
        for t in &mut self.threads {
            t.signal();
        }
        for (t, c) in self.threads.drain(..).zip(&self.counters) {
            c.cpu_ns.store(t.stop(), Ordering::Relaxed);
        }
    }
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
        threads: Vec::new(),
    };
    // The first thread takes a free port; the others listen on the same one.
    for i in 0..threads.max(1) {
        let counters = Arc::new(Counters::default());
        let (c, serve, want) = (counters.clone(), serve.clone(), proxy.addr);
        let open = wirebench_rpc::server::open_in_lab(
            lab,
            move || wirebench_net::threads::reuseport_listener(want, mptcp),
            want.to_string(),
        );
        let t =
            wirebench_net::threads::spawn(format!("{what}-proxy-{i}"), open, move |l| serve(l, c))
                .map_err(|e| WorkloadError::Environment(format!("{what} proxy: {e}")))?;
        proxy.addr = t.addr;
        proxy.threads.push(t);
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
