//! The sans-IO XMPP engine (`wirebench-xmpp`) on the one blocking driver
//! (`wirebench_engine::blocking`): one connection (TCP, or WebSocket, BOSH or SockJS
//! through [`crate::transport`]), one thread, events timestamped with the CLOCK_MONOTONIC
//! time their bytes were read.

use crate::transport::{Conn, Transport};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirebench_engine::blocking::{DriveError, Driver};
use wirebench_xmpp::{Client, ClientConfig, Event, XmppError, rustls};

#[derive(Debug, thiserror::Error)]
pub enum XmppDriveError {
    #[error("cannot connect to the XMPP server at {addr}: {error}")]
    Connect { addr: SocketAddr, error: io::Error },
    #[error("XMPP connection to {addr} failed: {error}")]
    Io { addr: SocketAddr, error: io::Error },
    #[error("XMPP session with {addr}: {error}")]
    Protocol { addr: SocketAddr, error: XmppError },
    #[error("XMPP session with {addr}: no {what} before the deadline")]
    Timeout { addr: SocketAddr, what: String },
    #[error("XMPP session with {addr}: the server closed the connection while waiting for {what}")]
    Closed { addr: SocketAddr, what: String },
}

/// What a failed session means to the case that ran it: a refused connection or a
/// broken session is the server's fault, I/O errors and timeouts the link's.
impl From<XmppDriveError> for wirebench_protocol::WorkloadError {
    fn from(e: XmppDriveError) -> Self {
        use wirebench_protocol::WorkloadError;
        let msg = e.to_string();
        match e {
            XmppDriveError::Connect { error, .. }
                if error.kind() == std::io::ErrorKind::ConnectionRefused =>
            {
                WorkloadError::Peer(msg)
            }
            XmppDriveError::Connect { .. }
            | XmppDriveError::Io { .. }
            | XmppDriveError::Timeout { .. } => WorkloadError::Link(msg),
            XmppDriveError::Protocol { .. } | XmppDriveError::Closed { .. } => {
                WorkloadError::Peer(msg)
            }
        }
    }
}

pub struct XmppSession {
    driver: Driver<Conn>,
    pub client: Client,
    addr: SocketAddr,
}

/// Events with their arrival time (CLOCK_MONOTONIC ns).
pub type Timed = (u64, Event);

impl XmppSession {
    /// Connects, logs in, and returns once the session is established, with every event
    /// seen on the way (their times show where set-up time went).
    pub fn login(
        addr: SocketAddr,
        cfg: ClientConfig,
        seed: u64,
        timeout: Duration,
    ) -> Result<(XmppSession, Vec<Timed>), XmppDriveError> {
        XmppSession::login_tls(addr, cfg, None, seed, timeout)
    }

    /// [`XmppSession::login`] with a rustls configuration for STARTTLS (used when the
    /// server offers or requires it, per `cfg.tls`).
    pub fn login_tls(
        addr: SocketAddr,
        cfg: ClientConfig,
        tls: Option<Arc<rustls::ClientConfig>>,
        seed: u64,
        timeout: Duration,
    ) -> Result<(XmppSession, Vec<Timed>), XmppDriveError> {
        XmppSession::login_via(&Transport::Tcp, addr, cfg, tls, seed, timeout)
    }

    /// [`XmppSession::login_tls`] over any transport; `addr` is the endpoint's (the
    /// WebSocket or BOSH gateway's for those).
    pub fn login_via(
        transport: &Transport,
        addr: SocketAddr,
        cfg: ClientConfig,
        tls: Option<Arc<rustls::ClientConfig>>,
        seed: u64,
        timeout: Duration,
    ) -> Result<(XmppSession, Vec<Timed>), XmppDriveError> {
        let domain = cfg
            .host
            .clone()
            .unwrap_or_else(|| cfg.jid.rsplit('@').next().unwrap_or_default().to_string());
        let conn = Conn::connect(transport, addr, &domain, cfg.max_stanza, seed, timeout)
            .map_err(|error| XmppDriveError::Connect { addr, error })?;
        let mut s = XmppSession {
            driver: Driver::new(conn, 64 * 1024),
            client: Client::new(cfg, tls, seed),
            addr,
        };
        s.flush()?;
        let mut seen = Vec::new();
        let deadline = Instant::now() + timeout;
        loop {
            let (t, ev) = s.next_event(deadline, "session establishment")?;
            let done = matches!(ev, Event::SessionEstablished);
            seen.push((t, ev));
            if done {
                return Ok((s, seen));
            }
        }
    }

    /// Writes whatever the engine has queued.
    pub fn flush(&mut self) -> Result<(), XmppDriveError> {
        let addr = self.addr;
        self.driver
            .flush(&mut self.client)
            .map_err(|error| XmppDriveError::Io { addr, error })
    }

    /// The next event, reading as needed until `deadline`.
    pub fn next_event(&mut self, deadline: Instant, what: &str) -> Result<Timed, XmppDriveError> {
        let addr = self.addr;
        match self.driver.poll_event(&mut self.client, deadline) {
            Ok(Some(ev)) => Ok(ev),
            Ok(None) => Err(XmppDriveError::Timeout {
                addr,
                what: what.into(),
            }),
            Err(DriveError::Eof(_)) => Err(XmppDriveError::Closed {
                addr,
                what: what.into(),
            }),
            Err(DriveError::Engine(error)) => Err(XmppDriveError::Protocol { addr, error }),
            Err(DriveError::Io { error, .. }) => Err(XmppDriveError::Io { addr, error }),
        }
    }

    pub fn send_message(&mut self, to: &str, body: &str, id: &str) -> Result<(), XmppDriveError> {
        let addr = self.addr;
        self.client
            .send_message(to, body, id)
            .map_err(|error| XmppDriveError::Protocol { addr, error })?;
        self.flush()
    }

    /// Closes the stream and waits briefly for the server's close.
    pub fn close(mut self) {
        self.client.close();
        let _ = self.flush();
        let deadline = Instant::now() + Duration::from_secs(2);
        while self
            .next_event(deadline, "stream close")
            .is_ok_and(|(_, e)| !matches!(e, Event::Closed))
        {}
    }
}
