//! What an endpoint counts ([`WebStats`]), whichever browser transport it serves.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one endpoint, for `wirebench serve`'s totals and the tests.
#[derive(Debug, Default)]
pub struct WebStats {
    /// Sessions opened (WebSocket connections upgraded, BOSH sessions created).
    pub sessions: AtomicU64,
    /// Sessions open now.
    pub open: AtomicU64,
    /// HTTP requests (BOSH) or messages (WebSocket) from clients.
    pub requests: AtomicU64,
    /// Clients refused or cut off for bad input (each logged once with its reason).
    pub refused: AtomicU64,
}

impl WebStats {
    pub fn line(&self) -> String {
        format!(
            "{} sessions ({} open), {} requests, {} refused",
            self.sessions.load(Ordering::Relaxed),
            self.open.load(Ordering::Relaxed),
            self.requests.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed)
        )
    }
}
