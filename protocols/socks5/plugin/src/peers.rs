//! Third-party SOCKS5 proxies started per case beside the origin, in the lab's server
//! host (or on loopback), for `socks5.server=microsocks` and `socks5.server=dante`:
//! Debian's microsocks 1.0.3 and Dante 1.4.2 (`danted`). Each listens only on the case's
//! server address and, for Dante, relays only to the origin (its `socks pass` rule), so
//! neither is an open relay beyond the lab.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use wirebench_peer::{self as peer, command_in, start_listening};
use wirebench_protocol::Fault;
use wirebench_protocol::Hosts;
use wirebench_protocol::{Install, Lookup, Requirement, WorkloadError};

/// A proxy of ours to stop (by its PID) when the case ends.
pub use wirebench_peer::ListeningPeer as External;

/// A free port on `ip` inside `netns` (bound and released: the proxy binds it next).
fn free_port(netns: Option<&str>, ip: IpAddr) -> Result<u16, WorkloadError> {
    peer::free_port(netns, ip)
        .ok_or_else(|| WorkloadError::Environment(format!("no free port on {ip}")))
}

/// Which third-party proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Microsocks,
    Dante,
}

/// microsocks, as cases check for it and `wirebench doctor` lists it.
pub const MICROSOCKS: Requirement = Requirement {
    name: "microsocks",
    lookup: Lookup::Program(Kind::Microsocks.program()),
    install: Install::Debian("microsocks"),
};

/// Dante's server.
pub const DANTE: Requirement = Requirement {
    name: "danted",
    lookup: Lookup::Program(Kind::Dante.program()),
    install: Install::Debian("dante-server"),
};

impl Kind {
    pub fn requirement(self) -> &'static Requirement {
        match self {
            Kind::Microsocks => &MICROSOCKS,
            Kind::Dante => &DANTE,
        }
    }

    /// The program started: the one its requirement looks for.
    const fn program(self) -> &'static str {
        match self {
            Kind::Microsocks => "microsocks",
            Kind::Dante => "danted",
        }
    }
}

/// Refuses what `kind` cannot be started for: Dante with credentials.
pub fn check(kind: Kind, userpass: bool) -> Result<(), WorkloadError> {
    if kind == Kind::Dante && userpass {
        return Err(WorkloadError::Input(
            "socks5.server=dante with socks5.auth=userpass: Dante checks passwords against the system's accounts, which a case does not create; use microsocks or ours".into(),
        ));
    }
    Ok(())
}

/// Starts `kind` for `origin` with optional credentials, its configuration and log in
/// `dir`.
pub fn start(
    kind: Kind,
    lab: Option<Hosts>,
    dir: &Path,
    origin: SocketAddr,
    userpass: Option<(&[u8], &[u8])>,
) -> Result<External, WorkloadError> {
    let program = kind.program();
    kind.requirement().require().map_err(WorkloadError::from)?;
    std::fs::create_dir_all(dir).map_err(|e| {
        WorkloadError::because(
            Fault::Environment,
            format!("cannot create {}", dir.display()),
            e,
        )
    })?;
    let netns = lab.map(|l| l.server().name().to_string());
    let ip = wirebench_rpc::server::server_ip(lab);
    let port = free_port(netns.as_deref(), ip)?;
    let log = dir.join(format!("{program}.log"));
    let mut cmd = command_in(netns.as_deref(), program);
    match kind {
        Kind::Microsocks => {
            cmd.args(["-i", &ip.to_string(), "-p", &port.to_string()]);
            if let Some((u, p)) = userpass {
                cmd.args([
                    "-u",
                    &String::from_utf8_lossy(u),
                    "-P",
                    &String::from_utf8_lossy(p),
                ]);
            }
        }
        Kind::Dante => {
            check(kind, userpass.is_some())?;
            let conf = dir.join("sockd.conf");
            std::fs::write(&conf, dante_conf(ip, port, origin, &log)).map_err(|e| {
                WorkloadError::because(
                    Fault::Environment,
                    format!("cannot write {}", conf.display()),
                    e,
                )
            })?;
            cmd.args(["-f", &conf.to_string_lossy(), "-N", "1"]);
        }
    }
    start_listening(cmd, program, dir, (ip, port), netns.as_deref(), &[log])
}

/// Dante's configuration: listen on the case's address, no authentication, CONNECT to the
/// origin only. `-N 1` (one process) and no `child.maxidle` keep it to one worker, as our
/// proxy and microsocks are.
fn dante_conf(ip: IpAddr, port: u16, origin: SocketAddr, log: &Path) -> String {
    format!(
        "logoutput: {log}\n\
         internal: {ip} port = {port}\n\
         external: {ip}\n\
         clientmethod: none\n\
         socksmethod: none\n\
         user.privileged: root\n\
         user.unprivileged: nobody\n\
         client pass {{\n  from: 0.0.0.0/0 to: 0.0.0.0/0\n  log: error\n}}\n\
         socks pass {{\n  from: 0.0.0.0/0 to: {oip}/32 port = {oport}\n  command: connect\n  log: error\n}}\n\
         socks block {{\n  from: 0.0.0.0/0 to: 0.0.0.0/0\n  log: connect error\n}}\n",
        log = log.display(),
        oip = origin.ip(),
        oport = origin.port(),
    )
}
