//! The one accept loop of the tokio servers: accept until told to stop, hand each
//! connection to a task of its own, and ride out failed accepts (out of descriptors, a
//! connection reset before it was accepted) by waiting a moment and going on, so that one
//! bad moment never ends a server, optionally holding at most a [`ConnCap`]'s connections,
//! and keeping banned sources out ([`crate::ban`]).
//! And the gentle close a server does after refusing a
//! client ([`close_gently`]).

use crate::cap::{ConnCap, Permit};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long to wait after a failed accept before the next: enough for descriptors to be
/// freed, short enough that clients hardly notice.
const RETRY: Duration = Duration::from_millis(10);

/// Accepts on `l` until `stop` resolves (e.g. `Shutdown::triggered()`, or
/// `std::future::pending()` where dropping the server's future is how it stops), spawning
/// `conn(stream, peer)` with `tokio::task::spawn_local` for each connection, so it needs
/// a `LocalSet` and its future need not be `Send`. `nodelay` sets `TCP_NODELAY` on each
/// accepted stream (`None`: left as accepted). A connection's failure is the handler's
/// business: it closes only that connection.
pub async fn accept_local<F, Fut>(
    l: &TcpListener,
    stop: impl Future<Output = ()>,
    nodelay: Option<bool>,
    conn: F,
) where
    F: FnMut(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    accept_local_capped(l, stop, nodelay, None, conn).await
}

/// [`accept_local`] holding at most `cap`'s connections open (`None`: no cap): over it a
/// new connection is closed as soon as it is accepted, before `conn` sees it.
pub async fn accept_local_capped<F, Fut>(
    l: &TcpListener,
    stop: impl Future<Output = ()>,
    nodelay: Option<bool>,
    cap: Option<&Arc<ConnCap>>,
    mut conn: F,
) where
    F: FnMut(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    accept_until(l, stop, nodelay, cap, move |s, peer, permit| {
        let served = conn(s, peer);
        tokio::task::spawn_local(async move {
            served.await;
            drop(permit);
        });
    })
    .await
}

/// [`accept_local`] for `Send` handlers, spawned with `tokio::spawn` (any runtime, no
/// `LocalSet` needed).
pub async fn accept_spawn<F, Fut>(
    l: &TcpListener,
    stop: impl Future<Output = ()>,
    nodelay: Option<bool>,
    mut conn: F,
) where
    F: FnMut(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    accept_until(l, stop, nodelay, None, move |s, peer, _| {
        tokio::spawn(conn(s, peer));
    })
    .await
}

async fn accept_until(
    l: &TcpListener,
    stop: impl Future<Output = ()>,
    nodelay: Option<bool>,
    cap: Option<&Arc<ConnCap>>,
    mut spawn: impl FnMut(TcpStream, SocketAddr, Option<Permit>),
) {
    let _bans = crate::ban::guard(l);
    let accepting = async {
        loop {
            let (s, peer) = match l.accept().await {
                Ok(a) => a,
                Err(_) => {
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            };
            if crate::ban::banned(peer.ip()) {
                // Queued before its source was banned: closed unread.
                continue;
            }
            let permit = match cap.map(|c| c.admit()) {
                // Dropped unread: the client sees its connection closed at once.
                Some(None) => continue,
                Some(p) => p,
                None => None,
            };
            if let Some(on) = nodelay {
                let _ = s.set_nodelay(on);
            }
            spawn(s, peer, permit);
            tokio::task::yield_now().await;
        }
    };
    tokio::select! {
        () = accepting => {}
        () = stop => {}
    }
}

/// After a refusal: a FIN, then what the client still sends is read and dropped (at most
/// 64 KiB, for at most a second), so the kernel does not answer unread data with a reset
/// that could destroy the refusal before the client has read it.
pub async fn close_gently(s: &mut TcpStream) {
    let _ = s.shutdown().await;
    let drain = async {
        let mut chunk = [0u8; 4096];
        let mut left = 64 * 1024usize;
        while left > 0 {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn serves_each_connection_and_stops_when_told() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let served = Arc::new(AtomicUsize::new(0));
            let stop = wirebench_model::Shutdown::new();
            let (s2, stop2) = (served.clone(), stop.clone());
            let server = tokio::task::spawn_local(async move {
                accept_local(&l, stop2.triggered(), Some(true), move |s, _| {
                    let served = s2.clone();
                    async move {
                        assert!(s.nodelay().unwrap());
                        served.fetch_add(1, Ordering::SeqCst);
                    }
                })
                .await
            });
            for _ in 0..3 {
                let _c = TcpStream::connect(addr).await.unwrap();
            }
            while served.load(Ordering::SeqCst) < 3 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            stop.trigger();
            tokio::time::timeout(Duration::from_secs(5), server)
                .await
                .expect("the loop ends once stopped")
                .unwrap();
            assert_eq!(served.load(Ordering::SeqCst), 3);
        });
    }
}
