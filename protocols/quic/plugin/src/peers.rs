//! The server of a case (`quic.server`), started per case on loopback or in the lab's
//! server host:
//!
//! - `builtin`: our engine's service ([`crate::server`]): echo and sink by their ALPNs,
//!   and HTTP/3 `GET /N`.
//! - `quic-go`: quic-go 0.65.0's example server (`example`, built by
//!   scripts/install-quic-go.sh), `-bind IP:PORT -cert -key` with the case's certificate.
//!   HTTP/3 only; `GET /N` is answered with N bytes of a Lehmer generator (its
//!   `generatePRData`). It has no flags for its transport: quinn's knobs apply to our
//!   client alone. It also serves Go's pprof on TCP localhost:6060 (of its host), which
//!   it gives up quietly when the port is taken. `QLOGDIR` makes it write a qlog per
//!   connection into the case's peer directory.
//! - `ngtcp2`: Debian's ngtcp2-server 0.12.1, `gtlsserver` (GnuTLS), HTTP/3 through
//!   nghttp3; `GET /N` is answered with N zero bytes ("dynamic content", up to
//!   `--max-dyn-length`). Its congestion controller, initial RTT, datagram size (path MTU
//!   discovery off) and idle timeout are set from the case's `quic.*`.
//!
//! A real peer is ready once our client completes a QUIC handshake with it (ALPN h3,
//! the case's certificate verified), asked from inside its host: UDP has no accept to
//! wait for, and a bound port alone does not show the server reads it. It is stopped by
//! its PID when dropped ([`PeerProcess`]), after a case, a failed one, an interrupt or a
//! panic; its parent-death signal covers wirebench being killed.

use crate::client::Conn;
use crate::server::Server;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use wirebench_peer::{self as peer, PeerProcess, command_in, tail_lines};
use wirebench_protocol::{Install, Lookup, Requirement, WorkloadError};
use wirebench_quic_engine::h3::Body;
use wirebench_quic_engine::{ALPN_H3, Identity, ServiceStats, Transport};

/// The quic-go release scripts/install-quic-go.sh pins.
pub const QUIC_GO_VERSION: &str = "0.65.0";

/// quic-go's example server, in this checkout's target/peers.
pub const QUIC_GO: Requirement = Requirement {
    name: "quic-go 0.65.0 example server (Go module, built by a script)",
    lookup: Lookup::Find(find_quic_go_server),
    // No Debian package: bookworm's golang-go is 1.19, too old to fetch the 1.26
    // toolchain the module asks for; the script names what to install instead.
    install: Install::Script {
        path: "scripts/install-quic-go.sh",
        needs: &[],
    },
};

/// quic-go's example client, for the interop check of our server.
pub const QUIC_GO_CLIENT: Requirement = Requirement {
    name: "quic-go 0.65.0 example client (Go module, built by a script)",
    lookup: Lookup::Find(find_quic_go_client),
    // No Debian package: bookworm's golang-go is 1.19, too old to fetch the 1.26
    // toolchain the module asks for; the script names what to install instead.
    install: Install::Script {
        path: "scripts/install-quic-go.sh",
        needs: &[],
    },
};

/// ngtcp2's example HTTP/3 server on GnuTLS.
pub const NGTCP2: Requirement = Requirement {
    name: "gtlsserver (ngtcp2 0.12 example server)",
    lookup: Lookup::Program("gtlsserver"),
    install: Install::Debian("ngtcp2-server"),
};

/// ngtcp2's example HTTP/3 client on GnuTLS, for the interop check of our server.
pub const NGTCP2_CLIENT: Requirement = Requirement {
    name: "gtlsclient (ngtcp2 0.12 example client)",
    lookup: Lookup::Program("gtlsclient"),
    install: Install::Debian("ngtcp2-client"),
};

fn quic_go_bin(name: &str) -> Result<PathBuf, String> {
    peer::built_peer(&format!("quic-go-{QUIC_GO_VERSION}/bin/{name}"))
}

fn find_quic_go_server() -> Result<PathBuf, String> {
    quic_go_bin("quic-go-server")
}

fn find_quic_go_client() -> Result<PathBuf, String> {
    quic_go_bin("quic-go-client")
}

/// Which server a case talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Builtin,
    QuicGo,
    Ngtcp2,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Builtin, Kind::QuicGo, Kind::Ngtcp2];

    pub fn from_word(word: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == word)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Builtin => "builtin",
            Kind::QuicGo => "quic-go",
            Kind::Ngtcp2 => "ngtcp2",
        }
    }

    pub fn requirement(self) -> Option<Requirement> {
        match self {
            Kind::Builtin => None,
            Kind::QuicGo => Some(QUIC_GO),
            Kind::Ngtcp2 => Some(NGTCP2),
        }
    }

    /// The bytes its `GET /N` answers with.
    pub fn body(self) -> Body {
        match self {
            Kind::Builtin | Kind::QuicGo => Body::lehmer(),
            Kind::Ngtcp2 => Body::Zeros,
        }
    }
}

/// Where and how a case's server starts.
#[derive(Clone, Copy)]
pub struct Setup<'a> {
    /// The server host's network namespace; `None`: here (loopback).
    pub netns: Option<&'a str>,
    /// The case's peer directory: certificate, output, qlogs.
    pub dir: &'a Path,
    pub ip: IpAddr,
    pub identity: &'a Identity,
    pub transport: &'a Transport,
    pub qlog: bool,
    /// `quic.retry=on`: ngtcp2 sends a Retry first (RFC 9000 §8.1.2).
    pub retry: bool,
    pub seed: u64,
}

/// A running server; stopped when dropped.
pub struct Peer {
    pub kind: Kind,
    pub addr: SocketAddr,
    /// From the start to its socket bound (builtin) or its first handshake (real peer).
    pub start_time: Duration,
    log: PathBuf,
    running: Running,
}

enum Running {
    Builtin(Server),
    Process(PeerProcess),
}

fn environment(what: String) -> impl FnOnce(std::io::Error) -> WorkloadError {
    move |e| WorkloadError::Environment(format!("{what}: {e}"))
}

impl Peer {
    /// Starts `kind` as `at` says and waits until it completes a handshake.
    pub fn start(kind: Kind, at: &Setup<'_>) -> Result<Peer, WorkloadError> {
        let Setup {
            netns,
            dir,
            ip,
            identity,
            transport,
            qlog,
            retry,
            seed,
        } = *at;
        if kind == Kind::Builtin {
            let server =
                crate::server::start(netns, SocketAddr::new(ip, 0), identity, transport, seed)?;
            return Ok(Peer {
                kind,
                addr: SocketAddr::new(ip, server.addr.port()),
                start_time: server.start_time,
                log: PathBuf::new(),
                running: Running::Builtin(server),
            });
        }
        std::fs::create_dir_all(dir).map_err(environment(format!("creating {}", dir.display())))?;
        let dir = dir
            .canonicalize()
            .map_err(environment(format!("resolving {}", dir.display())))?;
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert, &identity.cert_pem)
            .and_then(|()| std::fs::write(&key, &identity.key_pem))
            .map_err(environment(format!(
                "writing the certificate into {}",
                dir.display()
            )))?;
        let port = free_udp_port(netns, ip)?;
        let addr = SocketAddr::new(ip, port);
        let mut cmd = match kind {
            Kind::QuicGo => {
                let program = QUIC_GO.require()?;
                let mut c = command_in(netns, &program.to_string_lossy());
                c.arg("-bind").arg(addr.to_string());
                c.arg("-cert").arg(&cert).arg("-key").arg(&key);
                if qlog {
                    c.env("QLOGDIR", &dir);
                }
                c
            }
            _ => {
                let program = NGTCP2.require()?;
                let mut c = command_in(netns, &program.to_string_lossy());
                ngtcp2_args(&mut c, transport, &dir, qlog);
                if retry {
                    // --validate-addr: every new connection's first Initial gets a Retry.
                    c.arg("-V");
                }
                c.arg(ip.to_string())
                    .arg(port.to_string())
                    .arg(&key)
                    .arg(&cert);
                c
            }
        };
        let log = dir.join(format!("{}.out", kind.name()));
        let out = std::fs::File::create(&log)
            .map_err(environment(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(environment("duplicating a file".into()))?;
        // Its working directory is the peer directory: ngtcp2 serves files from there,
        // and none is named by digits, so `GET /N` is its dynamic content.
        cmd.current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        let t = Instant::now();
        let child = cmd
            .spawn()
            .map_err(environment(format!("starting {}", kind.name())))?;
        let mut process = PeerProcess::new(child, Duration::from_secs(2));
        if let Err(e) = wait_handshake(&mut process, kind.name(), addr, netns, identity, &log) {
            process.stop();
            return Err(e);
        }
        Ok(Peer {
            kind,
            addr,
            start_time: t.elapsed(),
            log,
            running: Running::Process(process),
        })
    }

    /// Whether it has exited (and how): a real peer only.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        match &mut self.running {
            Running::Process(p) => p.exited(),
            Running::Builtin(_) => None,
        }
    }

    pub fn usage(&self) -> Option<peer::Usage> {
        match &self.running {
            Running::Process(p) => p.usage(),
            Running::Builtin(_) => None,
        }
    }

    /// The builtin server's counts, once stopped (`None` for a real peer).
    pub fn finish(self) -> Option<ServiceStats> {
        match self.running {
            Running::Builtin(s) => s.finish(),
            Running::Process(_) => None,
        }
    }

    /// A peer's failure, with its output's tail when it died.
    pub fn with_log(&mut self, e: WorkloadError) -> WorkloadError {
        match (e, self.exited()) {
            (WorkloadError::Peer(m), Some(status)) => WorkloadError::Peer(format!(
                "{m}\n{} exited ({status}):\n{}",
                self.kind.name(),
                tail_lines(std::slice::from_ref(&self.log), 10)
            )),
            (e, _) => e,
        }
    }
}

/// gtlsserver's options for the case's transport: both endpoints then run the same
/// controller, initial RTT, datagram size and idle timeout.
fn ngtcp2_args(c: &mut std::process::Command, t: &Transport, dir: &Path, qlog: bool) {
    let cc = match t.cc {
        wirebench_quic_engine::Cc::Cubic => "cubic",
        wirebench_quic_engine::Cc::NewReno => "reno",
        wirebench_quic_engine::Cc::Bbr => "bbr",
    };
    c.args(["-q", "--no-quic-dump", "--no-http-dump", "--no-pmtud"]);
    c.arg(format!("--cc={cc}"));
    c.arg(format!("--initial-rtt={}us", t.initial_rtt.as_micros()));
    c.arg(format!("--max-udp-payload-size={}", t.max_datagram));
    c.arg(format!(
        "--max-dyn-length={}",
        wirebench_quic_engine::h3::MAX_BODY
    ));
    // 0 would not mean "none" to it: an hour stands in.
    let idle = t.idle_timeout.unwrap_or(Duration::from_secs(3600));
    c.arg(format!("--timeout={}ms", idle.as_millis().max(1)));
    // Its own handshake timeout (10 s by default) would end every handshake over a slow
    // link (4 s a 1200-byte Initial at 2400 bit/s): the idle timeout bounds it instead.
    c.arg(format!("--handshake-timeout={}ms", idle.as_millis().max(1)));
    c.arg("-d").arg(dir);
    if qlog {
        c.arg("--qlog-dir").arg(dir);
    }
}

/// A free UDP port on `ip` inside `netns` (bound and released: the server binds it next).
fn free_udp_port(netns: Option<&str>, ip: IpAddr) -> Result<u16, WorkloadError> {
    peer::in_netns(netns, || {
        UdpSocket::bind((ip, 0)).and_then(|s| s.local_addr().map(|a| a.port()))
    })
    .and_then(Result::ok)
    .ok_or_else(|| WorkloadError::Environment(format!("no free UDP port on {ip}")))
}

/// Tries a QUIC handshake (ALPN h3) every 200 ms from inside `netns` until one
/// completes, the process exits, or 15 s pass.
fn wait_handshake(
    process: &mut PeerProcess,
    what: &str,
    addr: SocketAddr,
    netns: Option<&str>,
    identity: &Identity,
    log: &Path,
) -> Result<(), WorkloadError> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut last = String::new();
    loop {
        if let Some(status) = process.exited() {
            return Err(WorkloadError::Environment(format!(
                "{what} exited ({status}) before completing a QUIC handshake:\n{}",
                tail_lines(&[log.to_path_buf()], 20)
            )));
        }
        if Instant::now() > deadline {
            return Err(WorkloadError::Environment(format!(
                "{what} did not complete a QUIC handshake at {addr} within 15 s ({last}):\n{}",
                tail_lines(&[log.to_path_buf()], 20)
            )));
        }
        match peer::in_netns(netns, || {
            handshake(addr, identity, Duration::from_millis(200))
        }) {
            Some(Ok(())) => return Ok(()),
            Some(Err(e)) => last = e,
            None => last = "cannot enter the server's host".into(),
        }
    }
}

/// One QUIC handshake with `addr` within `limit`, closed at once with H3_NO_ERROR.
pub fn handshake(addr: SocketAddr, identity: &Identity, limit: Duration) -> Result<(), String> {
    let t = Instant::now();
    let mut conn = Conn::open(Transport::default(), identity, ALPN_H3, addr, 0, None)
        .map_err(|e| e.to_string())?;
    let until = t + limit;
    let r = loop {
        if conn.handshake().completed.is_some() {
            break Ok(());
        }
        if Instant::now() > until {
            break Err("no handshake yet".to_string());
        }
        if let Err(e) = conn.poll(until) {
            break Err(e.to_string());
        }
    };
    conn.close_h3();
    r
}
