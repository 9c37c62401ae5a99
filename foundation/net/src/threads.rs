//! Servers on threads of their own, the start-up the per-case servers (rpc's `place`),
//! our proxies per case (connect's `place_proxy`) and the proxies run alone (`serve
//! --also socks5`, `wirebench converter`) share: a thread with a current-thread tokio
//! runtime and a `LocalSet` (connection tasks need not be `Send` and stay on the thread
//! that accepted them), its listener opened on that thread (inside a lab host's network
//! namespace when the caller enters one first), serving until stopped. Several such
//! threads on one port, each with its own `SO_REUSEPORT` listener ([`reuseport_listener`]),
//! let the kernel spread new connections over them, as the built-in XMPP server spreads
//! them over its workers: one thread cannot use a second core.

use std::future::Future;
use std::net::{SocketAddr, TcpListener};

/// Threads to run for "one per core" (a flag's 0).
pub fn per_core(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// A listener with `SO_REUSEPORT` (other threads' listeners may share its port), the
/// [`crate::sock::LISTEN_BACKLOG`]-deep accept queue, [`crate::sock::defer_accept`] (not
/// with Multipath TCP), [`crate::sock::limit_unsent`] and non-blocking, with Multipath
/// TCP when `mptcp`.
pub fn reuseport_listener(addr: SocketAddr, mptcp: bool) -> std::io::Result<TcpListener> {
    let s = crate::sock::stream_socket(addr, mptcp)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    if !mptcp {
        // Not with Multipath TCP: a second path's join carries no data of its own, and a
        // deferred accept kept it from joining (tests/e2e/proxies.rs, multipath).
        crate::sock::defer_accept(&s);
    }
    crate::sock::limit_unsent(&s);
    s.listen(crate::sock::LISTEN_BACKLOG)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// `threads` [`reuseport_listener`]s on one port of `addr` (port 0: the first picks a
/// free one). A port another socket holds is refused first: `SO_REUSEPORT` would
/// otherwise let a second server started by mistake join it silently and take part of
/// its connections (std's bind, without `SO_REUSEPORT`, fails wherever anyone listens).
pub fn reuseport_listeners(addr: SocketAddr, threads: usize) -> std::io::Result<Vec<TcpListener>> {
    if addr.port() != 0 {
        drop(TcpListener::bind(addr)?);
    }
    let first = reuseport_listener(addr, false)?;
    let at = first.local_addr()?;
    let mut all = vec![first];
    for _ in 1..threads.max(1) {
        all.push(reuseport_listener(at, false)?);
    }
    Ok(all)
}

/// A server running on a thread of its own ([`spawn`]); dropping it stops it (its
/// connections are cut) and waits for the thread.
pub struct ServerThread {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl ServerThread {
    /// Asks the thread to stop without waiting for it (to stop several at once).
    pub fn signal(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Stops the thread, waits for it and returns the CPU time it used, ns.
    pub fn stop(mut self) -> u64 {
        self.signal();
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or(0)
    }

    /// Lets the thread serve until the process ends.
    pub fn detach(mut self) {
        // Dropping the sender would stop the thread: it goes with the process instead.
        std::mem::forget(self.stop.take());
        self.thread.take();
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.signal();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts a thread called `name` that opens its listener with `open` (on that thread,
/// so a network namespace it enters first holds the socket; the listener must be
/// non-blocking) and runs `serve` on it until the returned [`ServerThread`] is stopped.
/// Returns once the thread listens, or with the reason it could not.
pub fn spawn<O, F, Fut>(name: String, open: O, serve: F) -> Result<ServerThread, String>
where
    O: FnOnce() -> Result<TcpListener, String> + Send + 'static,
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<SocketAddr, String>>();
    let what = name.clone();
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let started = (|| -> Result<_, String> {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start {what}'s runtime: {e}"))?;
                let std_l = open()?;
                let addr = std_l.local_addr().map_err(|e| e.to_string())?;
                let _g = rt.enter();
                let l = tokio::net::TcpListener::from_std(std_l).map_err(|e| e.to_string())?;
                Ok((rt, l, addr))
            })();
            let (rt, l, addr) = match started {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return 0;
                }
            };
            let _ = ready_tx.send(Ok(addr));
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                tokio::select! {
                    _ = serve(l) => {}
                    _ = stop_rx => {}
                }
            });
            // Dropping the runtime after this cancels every connection task it holds.
            wirebench_model::clock::thread_cpu_ns()
        })
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    let mut t = ServerThread {
        addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        stop: Some(stop_tx),
        thread: Some(thread),
    };
    match ready_rx.recv() {
        Ok(Ok(addr)) => {
            t.addr = addr;
            Ok(t)
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err("its thread ended before it listened".into()),
    }
}

/// Serves `serve` on each of `listeners` (from [`reuseport_listeners`]), a thread each
/// called `name-N`, until the returned threads are stopped or detached.
pub fn spawn_each<F, Fut>(
    name: &str,
    listeners: Vec<TcpListener>,
    serve: F,
) -> Result<Vec<ServerThread>, String>
where
    F: Fn(tokio::net::TcpListener) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let serve = std::sync::Arc::new(serve);
    let mut out = Vec::new();
    for (i, l) in listeners.into_iter().enumerate() {
        let serve = serve.clone();
        out.push(spawn(
            format!("{name}-{i}"),
            move || Ok(l),
            move |l| serve(l),
        )?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// N listeners on one port, a taken port refused, and a thread that served a
    /// connection stops and leaves its CPU time.
    #[test]
    fn listeners_share_a_port_and_threads_stop() {
        let ls = reuseport_listeners("127.0.0.1:0".parse().unwrap(), 3).unwrap();
        let at = ls[0].local_addr().unwrap();
        assert_eq!(ls.len(), 3);
        assert!(ls.iter().all(|l| l.local_addr().unwrap() == at));
        let err = reuseport_listeners(at, 1).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
        let served = Arc::new(AtomicU64::new(0));
        let s2 = served.clone();
        let mut threads = spawn_each("test", ls, move |l| {
            let s2 = s2.clone();
            async move {
                while let Ok(_conn) = l.accept().await {
                    s2.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
        .unwrap();
        assert_eq!(threads.len(), 3);
        let _c = std::net::TcpStream::connect(at).unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while served.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(served.load(Ordering::SeqCst), 1);
        assert!(threads.pop().unwrap().stop() > 0);
    }
}
