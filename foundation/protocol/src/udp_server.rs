//! A server of ours on a UDP socket, on a thread of its own, in a lab host or here: what
//! the datagram protocols' built-in servers (CoAP's, QUIC's) share. The socket is bound
//! on that thread (so it belongs to the host the thread entered) before
//! [`UdpServerThread::spawn`] returns, which then knows the address or why there is
//! none; the server runs until [`UdpServerThread::finish`] or a drop stops it, and
//! whatever it counted comes back from the thread.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long [`UdpServerThread::spawn`] waits for the thread to bind.
const BIND_WAIT: Duration = Duration::from_secs(10);

/// A running server thread; `T` is what its loop returns when stopped (its counts).
pub struct UdpServerThread<T> {
    /// Where it listens (the bound address: port 0 asked becomes the port given).
    pub addr: SocketAddr,
    /// From the thread's spawn to its socket bound.
    pub start_time: Duration,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<T>>,
}

impl<T: Default + Send + 'static> UdpServerThread<T> {
    /// Starts thread `name`, in the host whose namespace is `netns` if given, binds `at`
    /// there and runs `serve` on the socket until the flag it is given is set. The error
    /// says what failed: the thread, entering the host or binding.
    pub fn spawn(
        name: &str,
        netns: Option<&str>,
        at: SocketAddr,
        serve: impl FnOnce(UdpSocket, &AtomicBool) -> T + Send + 'static,
    ) -> Result<UdpServerThread<T>, String> {
        let t = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let netns = netns.map(str::to_owned);
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let socket = netns
                    .as_deref()
                    .map_or(Ok(()), |ns| {
                        crate::hosts::enter(ns).map_err(|e| e.to_string())
                    })
                    .and_then(|()| UdpSocket::bind(at).map_err(|e| e.to_string()));
                match socket {
                    Ok(s) => {
                        let _ = tx.send(s.local_addr().map_err(|e| e.to_string()));
                        serve(s, &stop2)
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        T::default()
                    }
                }
            })
            .map_err(|e| format!("cannot start the {name} thread: {e}"))?;
        let addr = rx
            .recv_timeout(BIND_WAIT)
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(|e| {
                // A thread that binds after the wait stops at once instead of serving
                // for nobody until the process ends.
                stop.store(true, Ordering::Relaxed);
                format!("could not bind {at}: {e}")
            })?;
        Ok(UdpServerThread {
            addr,
            start_time: t.elapsed(),
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the loop and returns what it counted (`None` if it panicked).
    pub fn finish(mut self) -> Option<T> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take()?.join().ok()
    }
}

impl<T> Drop for UdpServerThread<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_answers_where_it_says_and_hands_back_its_counts_when_stopped() {
        let s = UdpServerThread::spawn(
            "wb-test-udp",
            None,
            "127.0.0.1:0".parse().unwrap(),
            |s, stop| {
                let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
                let (mut n, mut buf) = (0u32, [0u8; 64]);
                while !stop.load(Ordering::Relaxed) {
                    if let Ok((k, from)) = s.recv_from(&mut buf) {
                        let _ = s.send_to(&buf[..k], from);
                        n += 1;
                    }
                }
                n
            },
        )
        .unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.send_to(b"ping", s.addr).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(c.recv(&mut buf).unwrap(), 4);
        assert_eq!(s.finish(), Some(1));
    }

    #[test]
    fn an_address_it_cannot_bind_is_the_error() {
        let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
        let at = taken.local_addr().unwrap();
        let e = UdpServerThread::spawn("wb-test-udp", None, at, |_, _| 0u32)
            .err()
            .unwrap();
        assert!(e.starts_with(&format!("could not bind {at}:")), "{e}");
    }
}
