//! The one blocking driver for the sans-IO IRC engine (`wirebench-irc`, RFC 1459/2812):
//! a TCP connection opened here or from inside a lab host, every event stamped with the
//! CLOCK_MONOTONIC time its bytes were read. The workloads measure with it; the plugin's
//! readiness check (`LINKS`) and the ngircd tests use it too. The reading, writing and
//! timer service are the one blocking driver's (`wirebench_engine::blocking`).

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_engine::blocking::{DriveError, Driver, Tcp, Wait, wait_for};
use wirebench_irc::{Client, Config, Event};
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::{TICK, WorkloadError};

pub(crate) fn err(addr: SocketAddr, what: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::Peer(format!("IRC session with {addr}: {what}"))
}

/// One client connection: the engine on a blocking socket.
pub struct IrcConn {
    driver: Driver<Tcp>,
    pub client: Client,
    addr: SocketAddr,
    /// From the start of `connect()` to RPL_WELCOME.
    pub registration: Duration,
}

/// Runs `f` on a thread inside network namespace `netns` (or here): sockets it opens stay
/// in that namespace.
fn in_netns<T: Send>(
    netns: Option<&str>,
    f: impl FnOnce() -> std::io::Result<T> + Send,
) -> std::io::Result<T> {
    let Some(ns) = netns else {
        return f();
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            wirebench_protocol::hosts::enter(ns)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("namespace thread panicked")))
    })
}

impl IrcConn {
    /// Connects (from inside `netns`, or here) and registers with `cfg`; returns once
    /// registered, failing after `timeout`.
    pub fn connect(
        netns: Option<&str>,
        addr: SocketAddr,
        cfg: Config,
        timeout: Duration,
    ) -> Result<IrcConn, WorkloadError> {
        Self::connect_until(netns, addr, cfg, timeout, &AtomicBool::new(false))
    }

    /// [`IrcConn::connect`] that gives up when `shutdown` is set.
    pub fn connect_until(
        netns: Option<&str>,
        addr: SocketAddr,
        mut cfg: Config,
        timeout: Duration,
        shutdown: &AtomicBool,
    ) -> Result<IrcConn, WorkloadError> {
        let t = Instant::now();
        let stream = in_netns(netns, || {
            let s = TcpStream::connect_timeout(&addr, timeout)?;
            s.set_nodelay(true)?;
            Ok(s)
        })
        .map_err(|error| WorkloadError::Connect {
            addr: addr.to_string(),
            error,
        })?;
        cfg.register_timeout_ns = Some(timeout.as_nanos() as u64);
        let mut c = IrcConn {
            driver: Driver::new(Tcp::new(stream), 16 * 1024),
            client: Client::new(cfg, monotonic_ns()),
            addr,
            registration: Duration::ZERO,
        };
        c.flush()?;
        let registered = wait_for(Some(t + timeout), shutdown, |d| {
            Ok::<_, WorkloadError>(match c.poll_event(d)? {
                Some((_, Event::Registered { .. })) => Some(()),
                _ => None,
            })
        })?;
        match registered {
            Wait::Got(()) => {
                c.registration = t.elapsed();
                Ok(c)
            }
            Wait::Stopped => Err(WorkloadError::Interrupted),
            Wait::Deadline => Err(err(
                addr,
                format!("no RPL_WELCOME within {}s", timeout.as_secs()),
            )),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Writes what the engine has queued.
    pub fn flush(&mut self) -> Result<(), WorkloadError> {
        self.driver
            .flush(&mut self.client)
            .map_err(|error| WorkloadError::Io {
                during: "writing to the IRC server",
                error,
            })
    }

    /// The next event with the time its bytes were read, or `None` at `deadline`. The
    /// server closing the session is an error.
    pub fn poll_event(&mut self, deadline: Instant) -> Result<Option<(u64, Event)>, WorkloadError> {
        let addr = self.addr;
        match self.driver.poll_event(&mut self.client, deadline) {
            Ok(Some((_, Event::Closed { reason }))) => {
                Err(err(addr, format!("session closed: {reason}")))
            }
            Ok(e) => Ok(e),
            Err(DriveError::Engine(e)) => Err(err(addr, e)),
            Err(DriveError::Eof(r)) => Err(err(
                addr,
                match r {
                    Err(e) => e.to_string(),
                    Ok(()) => "the server closed the connection".into(),
                },
            )),
            Err(DriveError::Io { write, error }) => Err(WorkloadError::Io {
                during: if write {
                    "writing to the IRC server"
                } else {
                    "reading from the IRC server"
                },
                error,
            }),
        }
    }

    /// The next event, failing at `deadline`; `what` names what is awaited, for the error.
    pub fn next_event(&mut self, deadline: Instant, what: &str) -> Result<Event, WorkloadError> {
        match self.poll_event(deadline)? {
            Some((_, e)) => Ok(e),
            None => Err(err(self.addr, format!("no {what} before the deadline"))),
        }
    }

    /// The next `PRIVMSG` as (from, target, text), skipping other events.
    pub fn next_message(
        &mut self,
        deadline: Instant,
    ) -> Result<(String, String, String), WorkloadError> {
        loop {
            if let Event::Message { from, target, text } = self.next_event(deadline, "a PRIVMSG")? {
                return Ok((from, target, text));
            }
        }
    }

    /// `LINKS`: the server names listed (364 RPL_LINKS) up to 365 RPL_ENDOFLINKS.
    pub fn links(&mut self, deadline: Instant) -> Result<Vec<String>, WorkloadError> {
        self.client
            .send_raw("LINKS")
            .map_err(|e| err(self.addr, e))?;
        let mut servers = Vec::new();
        loop {
            match self.next_event(deadline, "the LINKS reply")? {
                Event::Reply { code: 364, params } => {
                    if let Some(s) = params.first() {
                        servers.push(s.clone());
                    }
                }
                Event::Reply { code: 365, .. } => return Ok(servers),
                _ => {}
            }
        }
    }

    /// Queues and writes a payload: one `PRIVMSG` if it fits a line, else framed pieces.
    /// Returns the number of lines.
    pub fn send_payload(&mut self, target: &str, payload: &str) -> Result<usize, WorkloadError> {
        let lines = lines_for(&self.client, target, payload);
        let r = if lines == 1 && !payload.is_empty() {
            self.client.privmsg(target, payload).map(|()| 1)
        } else {
            self.client.send_payload(target, payload)
        };
        let n = r.map_err(|e| err(self.addr, e))?;
        self.flush()?;
        Ok(n)
    }

    /// Waits until this client's server knows `nick` (ISON), i.e. the nickname has crossed
    /// the server link. `failed` reports another party's failure (client2's thread).
    pub fn wait_known(
        &mut self,
        nick: &str,
        stall: Duration,
        shutdown: &AtomicBool,
        failed: &dyn Fn() -> Option<String>,
    ) -> Result<(), WorkloadError> {
        let deadline = Instant::now() + stall;
        loop {
            self.client
                .send_raw(&format!("ISON {nick}"))
                .map_err(|e| err(self.addr, e))?;
            loop {
                if shutdown.load(Ordering::Relaxed) {
                    return Err(WorkloadError::Interrupted);
                }
                if let Some(e) = failed() {
                    return Err(WorkloadError::Peer(e));
                }
                if Instant::now() >= deadline {
                    return Err(WorkloadError::Stalled {
                        secs: stall.as_secs(),
                        during: "waiting for the other client's nickname to cross the server link",
                    });
                }
                match self.poll_event(Instant::now() + TICK)? {
                    Some((_, Event::Reply { code: 303, params })) => {
                        if params
                            .last()
                            .is_some_and(|p| p.split(' ').any(|n| n.eq_ignore_ascii_case(nick)))
                        {
                            return Ok(());
                        }
                        break;
                    }
                    Some((_, Event::NumericError { code, text, .. })) => {
                        return Err(err(self.addr, format!("ISON refused ({code}): {text}")));
                    }
                    _ => {}
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends `QUIT` and waits briefly (1 s at most) for the server to close.
    pub fn quit(mut self) {
        let _ = self.client.quit("done");
        let deadline = Instant::now() + Duration::from_secs(1);
        while let Ok(Some(_)) = self.poll_event(deadline) {}
    }
}

/// Lines a payload takes from `client` to `target`.
pub(crate) fn lines_for(client: &Client, target: &str, payload: &str) -> usize {
    if !payload.is_empty() && payload.len() <= client.text_room(target) {
        1
    } else {
        client
            .split_payload(target, payload)
            .map(|p| p.len())
            .unwrap_or(0)
    }
}
