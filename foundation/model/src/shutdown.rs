//! The one way a run, a server or a worker learns that it must stop.
//!
//! The binary installs one signal handler and triggers one [`Shutdown`]; everything below
//! receives a clone. Blocking code polls [`Shutdown::is_triggered`] at its ticks or sleeps
//! in [`Shutdown::sleep`], which wakes at once when triggered; async code awaits
//! [`Shutdown::triggered`]. No runtime is needed for either, so every tier can use it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// A stop request shared by clones: once triggered, it stays triggered.
#[derive(Clone, Default)]
pub struct Shutdown(Arc<Inner>);

#[derive(Default)]
struct Inner {
    flag: AtomicBool,
    // Sleepers wait on the condvar; async waiters leave their wakers.
    waiters: Mutex<Vec<Waker>>,
    cv: Condvar,
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Shutdown")
            .field(&self.is_triggered())
            .finish()
    }
}

impl Shutdown {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every holder to stop; wakes sleepers and async waiters. Safe in a signal
    /// handler thread (ctrlc runs handlers on a thread of their own).
    pub fn trigger(&self) {
        self.0.flag.store(true, Ordering::SeqCst);
        let wakers = std::mem::take(
            &mut *self
                .0
                .waiters
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.0.cv.notify_all();
        for w in wakers {
            w.wake();
        }
    }

    pub fn is_triggered(&self) -> bool {
        self.0.flag.load(Ordering::SeqCst)
    }

    /// The flag itself, for loops that poll an `&AtomicBool` at their ticks.
    pub fn flag(&self) -> &AtomicBool {
        &self.0.flag
    }

    /// Sleeps for `d` or until triggered, whichever is first; true when triggered.
    pub fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        let mut guard = self
            .0
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.is_triggered() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            guard = self
                .0
                .cv
                .wait_timeout(guard, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Blocks until triggered.
    pub fn wait(&self) {
        while !self.sleep(Duration::from_secs(3600)) {}
    }

    /// Resolves once triggered (any executor).
    pub fn triggered(&self) -> Triggered {
        Triggered(self.clone())
    }
}

/// The future of [`Shutdown::triggered`].
pub struct Triggered(Shutdown);

impl Future for Triggered {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let inner = &self.0.0;
        if inner.flag.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        let mut waiters = inner.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        // Checked again under the lock: `trigger` takes the wakers under it.
        if inner.flag.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_wakes_when_triggered_from_another_thread() {
        let s = Shutdown::new();
        let t = s.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            t.trigger();
        });
        let start = Instant::now();
        assert!(s.sleep(Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(5));
        h.join().unwrap();
        assert!(s.is_triggered());
    }

    #[test]
    fn sleep_times_out_when_not_triggered() {
        let s = Shutdown::new();
        assert!(!s.sleep(Duration::from_millis(5)));
        assert!(!s.flag().load(Ordering::SeqCst));
    }

    #[test]
    fn future_resolves_after_trigger() {
        struct Flag(AtomicBool);
        impl std::task::Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let s = Shutdown::new();
        let woken = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(s.triggered());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        s.trigger();
        assert!(woken.0.load(Ordering::SeqCst));
        assert!(fut.as_mut().poll(&mut cx).is_ready());
    }
}
