//! The server of a case, started per case on loopback or in the lab's server host:
//!
//! - `builtin`: this folder's [`Server`] endpoint (`wirebench-coap-engine`) on a thread of
//!   its own, on a plain UDP socket: its `echo` and `upload` resources.
//! - `libcoap`: Debian's `libcoap3-bin` 4.3.1, `coap-server-notls -A ADDR -p PORT -e`
//!   (the package ships only suffixed binaries; `-notls` is enough for plain UDP). `-e`
//!   makes a PUT to `/example_data` answer with the body it stored (the ping-pong's echo);
//!   the same resource takes a Block1 upload (the stream). No flag sets its transmission
//!   parameters, which matter only for separate responses: it answers piggybacked.
//! - `aiocoap`: aiocoap 0.4.17 from PyPI, in the venv of `install-aiocoap.sh`, running
//!   `aiocoap_server.py` (an `echo` and an `upload` resource).
//!
//! A real peer is ready when it answers a CoAP ping (an Empty Confirmable message, RFC
//! 7252 §4.3) with a Reset, asked from inside its host: UDP has no connection to accept,
//! and a bound port alone does not show the server reads it. It is stopped by its PID
//! when dropped ([`PeerProcess`]): after a case, a failed one, an interrupt or a panic;
//! its parent-death signal covers wirebench being killed.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_coap_engine::{Message, Server, ServerConfig, ServerStats, Szx, Type};
use wirebench_model::clock::monotonic_ns;
use wirebench_peer::{self as peer, PeerError, PeerProcess, command_in, tail_lines};
use wirebench_protocol::udp_server::UdpServerThread;
use wirebench_protocol::{Install, Lookup, Requirement, WorkloadError};

/// libcoap's server, as cases check for it and `wirebench doctor` lists it.
pub const LIBCOAP: Requirement = Requirement {
    name: "coap-server-notls (libcoap 4.3)",
    lookup: Lookup::Program("coap-server-notls"),
    install: Install::Debian("libcoap3-bin"),
};

/// The aiocoap release the install script pins.
pub const AIOCOAP_VERSION: &str = "0.4.17";

/// aiocoap's Python, in this checkout's target/peers.
pub const AIOCOAP: Requirement = Requirement {
    name: "aiocoap 0.4.17 (PyPI, in a venv)",
    lookup: Lookup::Find(find_aiocoap),
    install: Install::Script {
        path: "protocols/coap/plugin/install-aiocoap.sh",
        needs: &[("python3", "python3-venv")],
    },
};

/// The echo server run by aiocoap's Python, written into the case's peer directory.
const AIOCOAP_SERVER: &str = include_str!("../aiocoap_server.py");

fn find_aiocoap() -> Result<PathBuf, String> {
    wirebench_peer::built_peer(&format!("aiocoap-{AIOCOAP_VERSION}/bin/python"))
}

/// Which server a case talks to (`coap.server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Builtin,
    Libcoap,
    Aiocoap,
}

impl Kind {
    pub fn from_word(word: &str) -> Option<Kind> {
        match word {
            "builtin" => Some(Kind::Builtin),
            "libcoap" => Some(Kind::Libcoap),
            "aiocoap" => Some(Kind::Aiocoap),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Builtin => "builtin",
            Kind::Libcoap => "libcoap",
            Kind::Aiocoap => "aiocoap",
        }
    }

    /// The resource that answers a request with its payload (the ping-pong).
    pub fn echo_path(self) -> &'static str {
        match self {
            Kind::Libcoap => "example_data",
            Kind::Builtin | Kind::Aiocoap => "echo",
        }
    }

    /// The resource that takes a Block1 upload (the stream).
    pub fn upload_path(self) -> &'static str {
        match self {
            Kind::Libcoap => "example_data",
            Kind::Builtin | Kind::Aiocoap => "upload",
        }
    }

    /// What it needs installed.
    pub fn requirement(self) -> Option<Requirement> {
        match self {
            Kind::Builtin => None,
            Kind::Libcoap => Some(LIBCOAP),
            Kind::Aiocoap => Some(AIOCOAP),
        }
    }
}

/// A running server; stopped when dropped.
pub struct Peer {
    pub kind: Kind,
    pub addr: SocketAddr,
    /// From spawning to the first answer to a ping (or the socket bound, for builtin).
    pub start_time: Duration,
    dir: PathBuf,
    running: Running,
}

/// What stops it when dropped: the process toolkit's handle, or the thread's.
enum Running {
    Process(PeerProcess),
    Thread(UdpServerThread<ServerStats>),
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> PeerError {
    move |error| PeerError::Io { what, error }
}

impl Peer {
    /// Starts `kind` on `ip` in network namespace `netns` (or here), its files in `dir`,
    /// and waits until it answers.
    pub fn start(
        kind: Kind,
        netns: Option<&str>,
        dir: &Path,
        ip: IpAddr,
        max_upload: usize,
    ) -> Result<Peer, PeerError> {
        std::fs::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
        let dir = dir
            .canonicalize()
            .map_err(io(format!("cannot resolve {}", dir.display())))?;
        match kind {
            Kind::Builtin => builtin(netns, dir, ip, max_upload),
            Kind::Libcoap | Kind::Aiocoap => external(kind, netns, dir, ip),
        }
    }

    /// Its output file, named in a failed case's error.
    pub fn log(&self) -> PathBuf {
        self.dir.join(format!("{}.out", self.kind.name()))
    }

    /// Whether it has exited (and how): a real peer only.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        match &mut self.running {
            Running::Process(p) => p.exited(),
            Running::Thread(_) => None,
        }
    }

    /// Its memory and CPU time so far: a real peer only (builtin shares our process).
    pub fn usage(&self) -> Option<peer::Usage> {
        match &self.running {
            Running::Process(p) => p.usage(),
            Running::Thread(_) => None,
        }
    }

    /// The builtin server's counts, once stopped (`None` for a real peer).
    pub fn finish(self) -> Option<ServerStats> {
        match self.running {
            Running::Thread(server) => server.finish(),
            Running::Process(_) => None,
        }
    }

    /// The output's last lines, for errors.
    pub fn log_tail(&self, n: usize) -> String {
        tail_lines(&[self.log()], n)
    }
}

/// A free UDP port on `ip` inside `netns` (bound and released: the server binds it next).
fn free_udp_port(netns: Option<&str>, ip: IpAddr) -> Result<u16, PeerError> {
    peer::in_netns(netns, || {
        UdpSocket::bind((ip, 0)).and_then(|s| s.local_addr().map(|a| a.port()))
    })
    .and_then(Result::ok)
    .ok_or_else(|| PeerError::Failed {
        what: format!("no free UDP port on {ip}"),
        detail: String::new(),
    })
}

fn external(kind: Kind, netns: Option<&str>, dir: PathBuf, ip: IpAddr) -> Result<Peer, PeerError> {
    let port = free_udp_port(netns, ip)?;
    let mut cmd = match kind {
        Kind::Libcoap => {
            let program = LIBCOAP.require()?;
            let mut c = command_in(netns, &program.to_string_lossy());
            // -v 3: errors and warnings only; -e: a PUT's response carries its body.
            c.args([
                "-A",
                &ip.to_string(),
                "-p",
                &port.to_string(),
                "-e",
                "-v",
                "3",
            ]);
            c
        }
        _ => {
            let python = AIOCOAP.require()?;
            let script = dir.join("aiocoap_server.py");
            std::fs::write(&script, AIOCOAP_SERVER)
                .map_err(io(format!("cannot write {}", script.display())))?;
            let mut c = command_in(netns, &python.to_string_lossy());
            c.arg(&script).arg(ip.to_string()).arg(port.to_string());
            c
        }
    };
    let log = dir.join(format!("{}.out", kind.name()));
    let out =
        std::fs::File::create(&log).map_err(io(format!("cannot create {}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(io("cannot duplicate a file".into()))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    let t = Instant::now();
    let child = cmd
        .spawn()
        .map_err(io(format!("cannot start {}", kind.name())))?;
    let mut process = PeerProcess::new(child, Duration::from_secs(2));
    let addr = SocketAddr::new(ip, port);
    // aiocoap imports for a second or two on a busy machine.
    if let Err(e) = wait_ping(&mut process, kind.name(), addr, netns, &log) {
        process.stop();
        return Err(e);
    }
    Ok(Peer {
        kind,
        addr,
        start_time: t.elapsed(),
        dir,
        running: Running::Process(process),
    })
}

/// Pings `addr` from inside `netns` every 50 ms until a Reset comes back, the process
/// exits, or 15 s pass.
fn wait_ping(
    process: &mut PeerProcess,
    what: &str,
    addr: SocketAddr,
    netns: Option<&str>,
    log: &Path,
) -> Result<(), PeerError> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut message_id: u16 = 0x5eed;
    loop {
        if let Some(status) = process.exited() {
            return Err(PeerError::Failed {
                what: format!("{what} exited ({status}) before answering a CoAP ping"),
                detail: tail_lines(&[log.to_path_buf()], 20),
            });
        }
        if Instant::now() > deadline {
            return Err(PeerError::Failed {
                what: format!("{what} did not answer a CoAP ping at {addr} within 15 s"),
                detail: tail_lines(&[log.to_path_buf()], 20),
            });
        }
        message_id = message_id.wrapping_add(1);
        let id = message_id;
        if peer::in_netns(netns, || ping(addr, id)).unwrap_or(false) {
            return Ok(());
        }
    }
}

/// One CoAP ping (§4.3): whether a Reset with its Message ID came back within 50 ms.
pub fn ping(addr: SocketAddr, message_id: u16) -> bool {
    let Ok(ping) = Message::empty(Type::Confirmable, message_id).encode() else {
        return false;
    };
    let unspecified: IpAddr = match addr {
        SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    let Ok(s) = UdpSocket::bind((unspecified, 0)) else {
        return false;
    };
    if s.set_read_timeout(Some(Duration::from_millis(50))).is_err()
        || s.send_to(&ping, addr).is_err()
    {
        return false;
    }
    let mut buf = [0u8; 64];
    let until = Instant::now() + Duration::from_millis(50);
    while Instant::now() < until {
        match s.recv_from(&mut buf) {
            Ok((n, from)) if from == addr => {
                if let Ok(m) = Message::decode(&buf[..n]) {
                    if m.kind == Type::Reset && m.message_id == message_id {
                        return true;
                    }
                }
            }
            Ok(_) => {}
            // A refused port (ICMP) or the timeout: not yet.
            Err(_) => return false,
        }
    }
    false
}

fn builtin(
    netns: Option<&str>,
    dir: PathBuf,
    ip: IpAddr,
    max_upload: usize,
) -> Result<Peer, PeerError> {
    let server = UdpServerThread::spawn(
        "wb-coap-server",
        netns,
        SocketAddr::new(ip, 0),
        move |s, stop| serve(&s, max_upload, stop),
    )
    .map_err(|detail| PeerError::Failed {
        what: "the builtin CoAP server could not start".into(),
        detail,
    })?;
    Ok(Peer {
        kind: Kind::Builtin,
        addr: server.addr,
        start_time: server.start_time,
        dir,
        running: Running::Thread(server),
    })
}

/// The builtin server's loop: each datagram to the endpoint, its answers out, until
/// `stop`. Send errors are dropped as the network would drop the datagram: the client
/// retransmits or times out.
pub fn serve(socket: &UdpSocket, max_upload: usize, stop: &AtomicBool) -> ServerStats {
    let mut server = Server::new(
        ServerConfig {
            max_upload,
            block_size: Szx::MAX,
            ..ServerConfig::default()
        },
        0x5eed,
    );
    let _ = socket.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = vec![0u8; wirebench_coap_engine::MAX_DATAGRAM + 1];
    while !stop.load(Ordering::Relaxed) {
        if let Ok((n, from)) = socket.recv_from(&mut buf) {
            // A malformed datagram is counted by the endpoint and dropped (or reset).
            let _ = server.handle_datagram(monotonic_ns(), from, &buf[..n]);
            while let Some(t) = server.poll_transmit(monotonic_ns()) {
                let _ = socket.send_to(&t.datagram, t.destination);
            }
            while server.poll_event().is_some() {}
        }
        server.handle_timeout(monotonic_ns());
    }
    server.stats().clone()
}

/// A peer's failure, with its log's tail when it died.
pub fn with_log(e: WorkloadError, peer: &mut Peer) -> WorkloadError {
    match (e, peer.exited()) {
        (WorkloadError::Peer(m), Some(status)) => WorkloadError::Peer(format!(
            "{m}\n{} exited ({status}):\n{}",
            peer.kind.name(),
            peer.log_tail(10)
        )),
        (e, _) => e,
    }
}
