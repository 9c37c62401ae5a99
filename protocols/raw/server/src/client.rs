//! The client side of the control channel, and data connections.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};
use wirebench_model::clock::monotonic_ns;
use wirebench_protocol::{Fault, WorkloadError};
use wirebench_raw::control::{self, LineBuffer, Open, Reply, Request, SessionReport};

/// Failures talking to a server; each names the address involved.
// Causes are part of the messages, not `source`s, so a chain printed with `{:#}` does not
// repeat them.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("cannot resolve {addr}: {error}")]
    Resolve { addr: String, error: io::Error },
    #[error("cannot reach the wirebench server at {addr}: {error}")]
    Unreachable { addr: String, error: io::Error },
    #[error("the server at {addr} did not answer within {secs}s (is it a wirebench server?)")]
    NoAnswer { addr: String, secs: u64 },
    #[error("the server at {addr} closed the control connection")]
    Closed { addr: String },
    #[error("the server at {addr} sent something that is not a wirebench control reply: {detail}")]
    Garbled { addr: String, detail: String },
    #[error("the server at {addr} refused: {msg}")]
    Refused { addr: String, msg: String },
    #[error("control connection to {addr} failed: {error}")]
    Io { addr: String, error: io::Error },
}

/// Connects to the first address `addr` resolves to that answers within `timeout`.
pub fn connect(addr: &str, timeout: Duration) -> Result<TcpStream, NetError> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|error| NetError::Resolve {
            addr: addr.to_string(),
            error,
        })?
        .collect();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no addresses");
    for a in &addrs {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(NetError::Unreachable {
        addr: addr.to_string(),
        error: last,
    })
}

/// An open control connection after a successful hello.
pub struct ControlClient {
    stream: TcpStream,
    lines: LineBuffer,
    addr: String,
    timeout: Duration,
    /// Server name and version from its hello.
    pub server: String,
    /// True if the server's CLOCK_MONOTONIC is ours (same kernel): then timestamps taken
    /// on either side can be compared.
    pub shared_clock: bool,
}

impl ControlClient {
    /// Connects and says hello, failing within about `timeout` if nothing answers.
    pub fn connect(addr: &str, timeout: Duration) -> Result<ControlClient, NetError> {
        let stream = connect(addr, timeout)?;
        let io = |error| NetError::Io {
            addr: addr.to_string(),
            error,
        };
        stream.set_nodelay(true).map_err(io)?;
        stream.set_read_timeout(Some(timeout)).map_err(io)?;
        stream.set_write_timeout(Some(timeout)).map_err(io)?;
        let mut c = ControlClient {
            stream,
            lines: LineBuffer::default(),
            addr: addr.to_string(),
            timeout,
            server: String::new(),
            shared_clock: false,
        };
        let before = monotonic_ns();
        let reply = c.call(&Request::Hello {
            version: control::VERSION,
            client: format!("wirebench {}", env!("CARGO_PKG_VERSION")),
        })?;
        let after = monotonic_ns();
        c.server = reply.server.unwrap_or_else(|| "unknown".into());
        c.shared_clock = reply.clock_ns.is_some_and(|t| t >= before && t <= after);
        Ok(c)
    }

    /// The address the server was reached at (data connections go to the same host).
    pub fn peer_ip(&self) -> Result<IpAddr, NetError> {
        self.stream
            .peer_addr()
            .map(|a| a.ip())
            .map_err(|error| NetError::Io {
                addr: self.addr.clone(),
                error,
            })
    }

    /// False once the server has closed the connection (or sent something unasked): a
    /// connection kept between cases may have been closed as idle while other cases ran.
    pub fn is_open(&self) -> bool {
        // Nothing to read is the healthy state of a connection between requests.
        !wirebench_net::sock::wait_readable(&self.stream, Duration::ZERO).unwrap_or(true)
    }

    /// Asks for a data listener; returns (session, port).
    pub fn open(&mut self, open: Open) -> Result<(u64, u16), NetError> {
        let r = self.call(&Request::Open(open))?;
        match (r.session, r.port) {
            (Some(s), Some(p)) => Ok((s, p)),
            _ => Err(self.garbled("open reply without session and port")),
        }
    }

    /// Waits for the server's account of a session.
    pub fn result(&mut self, session: u64) -> Result<SessionReport, NetError> {
        // The server bounds its own wait; give it that long plus our usual margin.
        let wait = Duration::from_secs(60) + self.timeout;
        let io = |error| NetError::Io {
            addr: self.addr.clone(),
            error,
        };
        self.stream.set_read_timeout(Some(wait)).map_err(io)?;
        let r = self.call(&Request::Result { session });
        let io = |error| NetError::Io {
            addr: self.addr.clone(),
            error,
        };
        self.stream
            .set_read_timeout(Some(self.timeout))
            .map_err(io)?;
        r?.report
            .ok_or_else(|| self.garbled("result reply without a report"))
    }

    fn garbled(&self, detail: &str) -> NetError {
        NetError::Garbled {
            addr: self.addr.clone(),
            detail: detail.into(),
        }
    }

    fn call(&mut self, req: &Request) -> Result<Reply, NetError> {
        let addr = self.addr.clone();
        self.stream
            .write_all(&req.to_line())
            .map_err(|error| NetError::Io {
                addr: addr.clone(),
                error,
            })?;
        let started = Instant::now();
        let mut buf = [0u8; 4096];
        loop {
            match self.lines.next_line() {
                Ok(Some(line)) => {
                    let reply: Reply = serde_json::from_str(&line)
                        .map_err(|e| self.garbled(&format!("{e} in {:?}", truncate(&line))))?;
                    if !reply.ok {
                        let msg = reply.error.unwrap_or_else(|| "no reason given".into());
                        return Err(NetError::Refused { addr, msg });
                    }
                    return Ok(reply);
                }
                Ok(None) => {}
                Err(e) => return Err(self.garbled(&e.to_string())),
            }
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(NetError::Closed { addr }),
                Ok(n) => self.lines.push(&buf[..n]),
                Err(e) if wirebench_net::sock::would_block(&e) => {
                    return Err(NetError::NoAnswer {
                        addr,
                        secs: started.elapsed().as_secs().max(1),
                    });
                }
                Err(error) => return Err(NetError::Io { addr, error }),
            }
        }
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

impl NetError {
    /// Who is at fault: a name that does not resolve is the user's, a refused connection
    /// or a broken reply the server's, a connection that stalls or breaks the network's.
    pub fn fault(&self) -> Fault {
        match self {
            NetError::Resolve { .. } => Fault::Input,
            NetError::Unreachable { error, .. }
                if error.kind() == std::io::ErrorKind::ConnectionRefused =>
            {
                Fault::Peer
            }
            NetError::Unreachable { .. } | NetError::Io { .. } => Fault::Link,
            NetError::NoAnswer { .. }
            | NetError::Closed { .. }
            | NetError::Garbled { .. }
            | NetError::Refused { .. } => Fault::Peer,
        }
    }
}

impl From<NetError> for WorkloadError {
    fn from(e: NetError) -> Self {
        WorkloadError::caused(e.fault(), e)
    }
}
