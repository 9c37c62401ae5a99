//! ngircd 26 as a lab peer: two (or more) linked IRC servers, each in its own lab host.
//! Configuration, start, readiness, waiting for the server link, stop.
//!
//! Each server gets a private directory (config, pid file, log, an empty include dir)
//! and runs in the foreground (`ngircd -n -f FILE`) inside a lab host via
//! `ip netns exec`. The facts behind the choices (ngircd 26 on Debian, tried in the lab):
//!
//! - ngircd refuses to run as root and switches to `ServerUID`. Switching user clears the
//!   parent-death signal (Linux resets `PR_SET_PDEATHSIG` on a credential change), so a
//!   server started as root and left to drop privileges itself outlives a killed
//!   wirebench. It is therefore started as `irc` already, by `setpriv --reuid irc
//!   --regid irc --clear-groups --pdeathsig TERM` (util-linux) between `ip netns exec`
//!   and ngircd: every step execs in place, so the child's PID is ngircd's, and the death
//!   signal is set after the switch. `ServerUID`/`ServerGID` = `irc` then match and
//!   ngircd changes nothing.
//! - The `irc` user must reach the directory (every ancestor searchable), read the
//!   config and own the pid-file directory; [`Ngircd::start`] checks and says which
//!   directory is in the way.
//! - Flood penalties off (`MaxPenaltyTime = 0`), no connection caps, no PAM/DNS/ident
//!   lookups (each would add waits to registration), `MaxJoins = 0`.
//! - `IncludeDir` points at an empty directory of ours: Debian's default
//!   `/etc/ngircd/ngircd.conf.d` would otherwise leak the machine's snippets into runs.
//! - `MotdPhrase` instead of a MOTD file (no file to read; registration stays short).
//! - Server links always use zlib compression (no option to turn it off): count it when
//!   reading bytes on the link. One side must be `Passive`; the active side tries at
//!   start-up (about 1 s after) and then every `ConnectRetry` seconds (minimum 5), so
//!   start the passive side first.
//! - A line relayed to a client longer than 512 bytes is cut to 512 and marked `[CUT]`;
//!   a client line over 512 bytes gets `ERROR :Request too long` and the connection
//!   closed. See `wirebench_irc::split`.
//!
//! The link is checked with `LINKS` over the crate's one IRC driver ([`crate::conn`]).

use crate::conn::IrcConn;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_irc::Config;
use wirebench_peer::{PeerError, PeerProcess, tail_lines};
use wirebench_protocol::WorkloadError;
use wirebench_protocol::{Install, Lookup, Requirement};

/// ngircd, as cases check for it and `wirebench doctor` lists it.
pub const NGIRCD: Requirement = Requirement {
    name: "ngircd",
    lookup: Lookup::Program("ngircd"),
    install: Install::Debian("ngircd"),
};

/// setpriv, with which ngircd is started as [`RUN_AS`].
pub const SETPRIV: Requirement = Requirement {
    name: "setpriv",
    lookup: Lookup::Program("setpriv"),
    install: Install::Debian("util-linux"),
};

/// The user ngircd runs as (Debian's `irc`, from base-passwd).
pub const RUN_AS: &str = "irc";

/// One `[Server]` block: a peer server this one links with.
#[derive(Debug, Clone)]
pub struct NgircdPeer {
    /// The peer's `[Global] Name`.
    pub name: String,
    /// Where to connect: an address, or a name from the lab host's hosts file.
    pub host: String,
    pub port: u16,
    /// Sent to the peer; the peer's `PeerPassword`.
    pub my_password: String,
    /// Expected from the peer; the peer's `MyPassword`.
    pub peer_password: String,
    /// Wait for the peer to connect instead of connecting.
    pub passive: bool,
}

/// One ngircd server's settings.
#[derive(Debug, Clone)]
pub struct NgircdConfig {
    /// Server name, with at least one dot (`a.irc.test`).
    pub name: String,
    pub info: String,
    /// Address it listens on inside its host.
    pub addr: IpAddr,
    pub port: u16,
    pub peers: Vec<NgircdPeer>,
    /// Longest nickname; every server of a network must agree. RFC 2812 says 9.
    pub max_nick_length: u32,
    /// Send `PING :cookie` to each new client and register it only after the `PONG`.
    pub require_auth_ping: bool,
    /// Seconds between attempts to (re)connect a link (ngircd's minimum: 5).
    pub connect_retry_s: u32,
    /// Idle seconds before the server PINGs a client or peer, and seconds it then waits.
    pub ping_timeout_s: u32,
    pub pong_timeout_s: u32,
    /// Connection password every client must send (`PASS`).
    pub password: Option<String>,
}

impl NgircdConfig {
    /// Port 6667, 30-character nicknames, no auth ping, retry links every 5 s, ngircd's
    /// default ping timers (120 s / 20 s), no client password, no peers yet.
    pub fn new(name: &str, addr: IpAddr) -> NgircdConfig {
        NgircdConfig {
            name: name.to_string(),
            info: format!("wirebench lab server {name}"),
            addr,
            port: 6667,
            peers: Vec::new(),
            max_nick_length: 30,
            require_auth_ping: false,
            connect_retry_s: 5,
            ping_timeout_s: 120,
            pong_timeout_s: 20,
            password: None,
        }
    }

    /// The ngircd.conf for a server whose private directory is `dir`.
    pub fn render(&self, dir: &Path) -> String {
        let d = dir.display();
        let yn = |b: bool| if b { "yes" } else { "no" };
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Generated by wirebench for a lab run; see protocols/irc/plugin/src/ngircd.rs."
        );
        let _ = writeln!(s, "[Global]");
        let _ = writeln!(s, "\tName = {}", self.name);
        let _ = writeln!(s, "\tInfo = {}", self.info);
        // RFC 2812 wants ADMIN information; ngircd warns at every start without it.
        let _ = writeln!(s, "\tAdminInfo1 = wirebench lab");
        let _ = writeln!(s, "\tAdminInfo2 = lab host");
        let _ = writeln!(s, "\tAdminEMail = root@localhost");
        let _ = writeln!(s, "\tListen = {}", self.addr);
        let _ = writeln!(s, "\tPorts = {}", self.port);
        let _ = writeln!(s, "\tPidFile = {d}/run/ngircd.pid");
        let _ = writeln!(s, "\tServerUID = {RUN_AS}");
        let _ = writeln!(s, "\tServerGID = {RUN_AS}");
        let _ = writeln!(s, "\tMotdFile = ");
        let _ = writeln!(s, "\tMotdPhrase = wirebench");
        if let Some(p) = &self.password {
            let _ = writeln!(s, "\tPassword = {p}");
        }
        let _ = writeln!(s, "[Limits]");
        let _ = writeln!(s, "\tConnectRetry = {}", self.connect_retry_s.max(5));
        let _ = writeln!(s, "\tMaxConnections = 0");
        let _ = writeln!(s, "\tMaxConnectionsIP = 0");
        let _ = writeln!(s, "\tMaxJoins = 0");
        let _ = writeln!(s, "\tMaxNickLength = {}", self.max_nick_length);
        // Flood penalties off: they would be measured (ngircd warns; that is expected).
        let _ = writeln!(s, "\tMaxPenaltyTime = 0");
        let _ = writeln!(s, "\tPingTimeout = {}", self.ping_timeout_s);
        let _ = writeln!(s, "\tPongTimeout = {}", self.pong_timeout_s);
        let _ = writeln!(s, "[Options]");
        let _ = writeln!(s, "\tPAM = no");
        let _ = writeln!(s, "\tDNS = no");
        let _ = writeln!(s, "\tIdent = no");
        let _ = writeln!(s, "\tConnectIPv6 = no");
        let _ = writeln!(s, "\tConnectIPv4 = yes");
        let _ = writeln!(s, "\tIncludeDir = {d}/conf.d");
        let _ = writeln!(s, "\tRequireAuthPing = {}", yn(self.require_auth_ping));
        for p in &self.peers {
            let _ = writeln!(s, "[Server]");
            let _ = writeln!(s, "\tName = {}", p.name);
            let _ = writeln!(s, "\tHost = {}", p.host);
            let _ = writeln!(s, "\tPort = {}", p.port);
            let _ = writeln!(s, "\tMyPassword = {}", p.my_password);
            let _ = writeln!(s, "\tPeerPassword = {}", p.peer_password);
            let _ = writeln!(s, "\tPassive = {}", yn(p.passive));
        }
        s
    }
}

/// Adds crossed `[Server]` blocks to both configs: `active` connects to `passive`
/// (reached at `passive_host`, an address or a hosts-file name), `passive` waits. Start
/// the passive server first: the active one tries once at start-up, then only every
/// `connect_retry_s`.
pub fn link(active: &mut NgircdConfig, passive: &mut NgircdConfig, passive_host: &str) {
    let to_passive = format!("wb-{}-{}", active.name, passive.name);
    let to_active = format!("wb-{}-{}", passive.name, active.name);
    active.peers.push(NgircdPeer {
        name: passive.name.clone(),
        host: passive_host.to_string(),
        port: passive.port,
        my_password: to_passive.clone(),
        peer_password: to_active.clone(),
        passive: false,
    });
    passive.peers.push(NgircdPeer {
        name: active.name.clone(),
        host: active.addr.to_string(),
        port: active.port,
        my_password: to_active,
        peer_password: to_passive,
        passive: true,
    });
}

/// The `irc` user's uid and gid.
fn run_as_ids() -> Result<(u32, u32), PeerError> {
    let name = std::ffi::CString::new(RUN_AS).expect("no NUL");
    // SAFETY: getpwnam returns NULL or a pointer to static storage, read at once; no
    // other thread of ours calls getpw* concurrently in a way that matters here.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(PeerError::Failed {
            what: format!("user {RUN_AS} does not exist"),
            detail: "ngircd refuses to run as root and runs as that user \
                     (Debian's base-passwd creates it)"
                .into(),
        });
    }
    // SAFETY: pw is non-null and points at a valid passwd entry.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// Checks that `uid`/`gid` can search every directory from `/` down to `dir`.
fn check_reachable(dir: &Path, uid: u32, gid: u32) -> Result<(), PeerError> {
    let dir = dir.canonicalize().map_err(|error| PeerError::Io {
        what: format!("cannot resolve {}", dir.display()),
        error,
    })?;
    for a in dir.ancestors() {
        let Ok(m) = std::fs::metadata(a) else {
            continue;
        };
        let mode = m.mode();
        let ok = if m.uid() == uid {
            mode & 0o100 != 0
        } else if m.gid() == gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !ok {
            return Err(PeerError::Failed {
                what: format!(
                    "ngircd runs as user {RUN_AS}, which cannot reach {}",
                    dir.display()
                ),
                detail: format!(
                    "{} has mode {:o}; use a directory {RUN_AS} can search \
                     (e.g. chmod o+x {})",
                    a.display(),
                    mode & 0o7777,
                    a.display()
                ),
            });
        }
    }
    Ok(())
}

/// Runs `f` on a thread inside network namespace `netns` (or here): sockets it opens stay
/// in that namespace.
fn in_netns<T: Send>(
    netns: Option<&str>,
    f: impl FnOnce() -> std::io::Result<T> + Send,
) -> std::io::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(ns) = netns {
                wirebench_protocol::hosts::enter(ns)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("namespace thread panicked")))
    })
}

/// A running ngircd; stopped (SIGTERM, then SIGKILL) when dropped.
///
/// The parent-death signal is tied to the *thread* that called [`Ngircd::start`]: keep
/// that thread alive as long as the server should run.
pub struct Ngircd {
    process: PeerProcess,
    pub cfg: NgircdConfig,
    pub dir: PathBuf,
    pub netns: Option<String>,
    /// When the process was spawned.
    pub started: Instant,
}

impl Ngircd {
    /// Writes the configuration into `dir`, starts the server in network namespace
    /// `netns` (or here, if `None`) and waits until its port accepts connections (checked
    /// from inside that namespace). The log is `dir/ngircd.log`.
    pub fn start(netns: Option<&str>, dir: &Path, cfg: NgircdConfig) -> Result<Ngircd, PeerError> {
        let ngircd = NGIRCD.require()?;
        let setpriv = SETPRIV.require()?;
        let (uid, gid) = run_as_ids()?;
        let io = |what: String| move |error| PeerError::Io { what, error };
        for sub in ["run", "conf.d"] {
            std::fs::create_dir_all(dir.join(sub))
                .map_err(io(format!("cannot create {}", dir.display())))?;
        }
        let run = dir.join("run");
        let _ = std::fs::remove_file(run.join("ngircd.pid"));
        std::os::unix::fs::chown(&run, Some(uid), Some(gid))
            .map_err(io(format!("cannot give {} to {RUN_AS}", run.display())))?;
        for d in [dir, &dir.join("conf.d")] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
                .map_err(io(format!("cannot chmod {}", d.display())))?;
        }
        check_reachable(dir, uid, gid)?;
        let conf = dir.join("ngircd.conf");
        std::fs::write(&conf, cfg.render(dir))
            .and_then(|()| std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644)))
            .map_err(io(format!("cannot write {}", conf.display())))?;
        let log = std::fs::File::create(dir.join("ngircd.log"))
            .map_err(io("cannot create ngircd.log".into()))?;
        let log2 = log
            .try_clone()
            .map_err(io("cannot create ngircd.log".into()))?;
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new(wirebench_protocol::prereq::program_path("ip"));
                c.args(["netns", "exec", ns]).arg(&setpriv);
                c
            }
            None => Command::new(&setpriv),
        };
        // Its own process group: a Ctrl-C at the terminal is for wirebench, which
        // records the interrupted case and then stops the server itself.
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        cmd.args([
            "--reuid",
            RUN_AS,
            "--regid",
            RUN_AS,
            "--clear-groups",
            "--pdeathsig",
            "TERM",
        ])
        .arg(&ngircd)
        .arg("-n")
        .arg("-f")
        .arg(&conf);
        // Until setpriv sets it again after the user switch, the death signal set here
        // covers `ip netns exec` and setpriv themselves.
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let started = Instant::now();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(io("cannot start ngircd".into()))?;
        let mut n = Ngircd {
            // SIGTERM, then SIGKILL after 5 s when stopped.
            process: PeerProcess::new(child, Duration::from_secs(5)),
            cfg,
            dir: dir.to_path_buf(),
            netns: netns.map(str::to_string),
            started,
        };
        n.wait_ready(Duration::from_secs(10))?;
        Ok(n)
    }

    /// ngircd's PID (the spawned process itself: everything before it exec'd in place).
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.cfg.addr, self.cfg.port)
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.process.exited()
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), PeerError> {
        let addr = self.addr();
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.exited() {
                return Err(PeerError::Failed {
                    what: format!("ngircd {} exited ({status}) during start-up", self.cfg.name),
                    detail: self.log_tail(),
                });
            }
            let up = in_netns(self.netns.as_deref(), || {
                TcpStream::connect_timeout(&addr, Duration::from_millis(200))
            })
            .is_ok();
            if up {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(PeerError::Failed {
                    what: format!(
                        "ngircd {} did not open {addr} within {}s",
                        self.cfg.name,
                        limit.as_secs()
                    ),
                    detail: self.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `LINKS` on this server lists `peer` (a server name), asking every
    /// 20 ms over one client session registered as `nick`, at most `limit`. Returns the
    /// time since this server was spawned.
    pub fn wait_linked(
        &mut self,
        nick: &str,
        peer: &str,
        limit: Duration,
        shutdown: &AtomicBool,
    ) -> Result<Duration, WorkloadError> {
        let deadline = Instant::now() + limit;
        let (name, log) = (self.cfg.name.clone(), self.dir.join("ngircd.log"));
        let failed = |what: String| {
            WorkloadError::Peer(format!(
                "ngircd {name} {what}:\n{}",
                tail_lines(std::slice::from_ref(&log), 8)
            ))
        };
        let mut cfg = Config::new(nick);
        cfg.password = self.cfg.password.clone();
        let mut c =
            IrcConn::connect_until(self.netns.as_deref(), self.addr(), cfg, limit, shutdown)
                .map_err(|e| match e {
                    WorkloadError::Interrupted => e,
                    e => failed(e.to_string()),
                })?;
        loop {
            if shutdown.load(Ordering::Relaxed) {
                return Err(WorkloadError::Interrupted);
            }
            let servers = c.links(deadline).map_err(|e| failed(e.to_string()))?;
            if servers.iter().any(|s| s.eq_ignore_ascii_case(peer)) {
                let up = self.started.elapsed();
                c.quit();
                return Ok(up);
            }
            if let Some(status) = self.exited() {
                return Err(failed(format!("exited ({status})")));
            }
            if Instant::now() >= deadline {
                return Err(failed(format!(
                    "did not link with {peer} within {}s (LINKS lists {servers:?}; on a slow \
                     link raise --timeout)",
                    limit.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last lines of the server's log, for error messages.
    pub fn log_tail(&self) -> String {
        tail_lines(&[self.dir.join("ngircd.log")], 8)
    }

    /// What the server uses now (`None` once stopped).
    pub fn usage(&self) -> Option<wirebench_peer::Usage> {
        self.process.usage()
    }

    /// Stops the server: SIGTERM, then SIGKILL after 5 s. Only this PID is signalled.
    /// Dropping it does the same.
    pub fn stop(&mut self) {
        self.process.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_has_the_options_that_matter() {
        let mut a = NgircdConfig::new("a.irc.test", "198.18.0.1".parse().unwrap());
        let mut b = NgircdConfig::new("b.irc.test", "198.18.0.2".parse().unwrap());
        b.require_auth_ping = true;
        link(&mut a, &mut b, "b.irc.test");
        let ta = a.render(Path::new("/tmp/wb/a"));
        let tb = b.render(Path::new("/tmp/wb/b"));
        for needle in [
            "Name = a.irc.test",
            "Listen = 198.18.0.1",
            "Ports = 6667",
            "PidFile = /tmp/wb/a/run/ngircd.pid",
            "ServerUID = irc",
            "MaxConnectionsIP = 0",
            "MaxPenaltyTime = 0",
            "MaxConnections = 0",
            "PAM = no",
            "DNS = no",
            "Ident = no",
            "IncludeDir = /tmp/wb/a/conf.d",
            "Host = b.irc.test",
            "MyPassword = wb-a.irc.test-b.irc.test",
            "PeerPassword = wb-b.irc.test-a.irc.test",
            "Passive = no",
        ] {
            assert!(ta.contains(needle), "missing {needle}:\n{ta}");
        }
        for needle in [
            "Name = a.irc.test",
            "Host = 198.18.0.1",
            "MyPassword = wb-b.irc.test-a.irc.test",
            "PeerPassword = wb-a.irc.test-b.irc.test",
            "Passive = yes",
            "RequireAuthPing = yes",
        ] {
            assert!(tb.contains(needle), "missing {needle}:\n{tb}");
        }
    }

    #[test]
    fn missing_binary_names_the_package() {
        let e = NGIRCD.missing().to_string();
        assert!(
            e.contains("ngircd is not installed") && e.contains("apt-get install ngircd"),
            "{e}"
        );
    }

    #[test]
    fn unreachable_directory_is_named() {
        let tmp = std::env::temp_dir().join(format!("wb-ngircd-unit-{}", std::process::id()));
        let inner = tmp.join("x");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o700)).unwrap();
        // uid/gid that own nothing here.
        let e = check_reachable(&inner, 65_000, 65_000);
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_reachable(&inner, 65_000, 65_000).is_ok());
        let _ = std::fs::remove_dir_all(&tmp);
        let e = e.unwrap_err().to_string();
        assert!(e.contains("chmod o+x"), "{e}");
    }
}
