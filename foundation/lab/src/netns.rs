//! Network namespaces: the lab's hosts.
//!
//! Namespaces are created and deleted with iproute2 (`ip netns add/del`), which also
//! bind-mounts them under `/run/netns/NAME` so they outlive their creator and can be
//! entered by any thread with `setns(2)`. A thread that has entered a namespace opens
//! sockets there; a socket keeps its namespace for life, whatever thread uses it later.
//!
//! Every name starts with `wb-<pid>-` so leftovers of a killed run are easy to find and
//! [`clean`] can tell a live run's namespaces from a dead one's.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Mutex;

/// Prefix of every namespace wirebench creates.
pub const PREFIX: &str = "wb-";

/// Namespaces created by this process and not yet deleted: an emergency exit (second
/// Ctrl-C) deletes them through [`cleanup_registered`].
static REGISTERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

// Causes are part of the messages, not `source`s, so a chain printed with `{:#}` does not
// repeat them.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(
        "network namespaces need root (or CAP_NET_ADMIN and CAP_SYS_ADMIN); \
         run as root, or drop the link parameters to measure on loopback"
    )]
    NotRoot,
    #[error("`{command}` failed: {detail}")]
    Command { command: String, detail: String },
    #[error("{what}: {error}")]
    Io { what: String, error: io::Error },
    #[error("{0}")]
    Busy(String),
}

/// Runs a command, turning a non-zero exit into an error carrying its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, LabError> {
    let command = format!("{program} {}", args.join(" "));
    // Its own process group: a Ctrl-C at the terminal is for wirebench, which then
    // tears the lab down in order; an `ip` killed half-way would leave it half-built.
    let out = Command::new(crate::program::program_path(program))
        .args(args)
        .process_group(0)
        .output()
        .map_err(|e| LabError::Command {
            command: command.clone(),
            detail: match crate::program::on_path(program) {
                Err(looked) if e.kind() == io::ErrorKind::NotFound => looked,
                _ => e.to_string(),
            },
        })?;
    if !out.status.success() {
        return Err(LabError::Command {
            command,
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `program` with `args` in namespace `ns` (`ip netns exec NS PROGRAM ...`), the
/// program the one lookup finds ([`crate::program`]) rather than whatever `ip` would find
/// by name; a non-zero exit is an error carrying its stderr.
pub fn run_in(ns: &str, program: &str, args: &[&str]) -> Result<String, LabError> {
    if let Err(looked) = crate::program::on_path(program) {
        return Err(LabError::Command {
            command: format!("ip netns exec {ns} {program} {}", args.join(" ")),
            detail: looked,
        });
    }
    let path = crate::program::program_path(program);
    let path = path.to_string_lossy();
    let mut all = vec!["netns", "exec", ns, &path];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// Fails early, with a message a user can act on, when namespaces cannot be made.
pub fn check_privileges() -> Result<(), LabError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(LabError::NotRoot);
    }
    Ok(())
}

/// A network namespace that is deleted when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `wb-<pid>-<role>`.
    pub fn create(role: &str) -> Result<Netns, LabError> {
        check_privileges()?;
        let name = format!("{PREFIX}{}-{role}", std::process::id());
        // A namespace of ours with this name can only be a leftover of this very
        // process (same pid): replace it.
        if exists(&name) {
            let _ = run("ip", &["netns", "del", &name]);
        }
        run("ip", &["netns", "add", &name])?;
        REGISTERED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.clone());
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        // IPv6 autoconfiguration would send router solicitations and MLD reports over
        // the link at random times: at 2400 bit/s each costs 160 ms of airtime. The lab
        // speaks IPv4 only.
        run_in(
            &ns.name,
            "sysctl",
            &[
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ],
        )?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NAME ARGS...`
    pub fn ip(&self, args: &[&str]) -> Result<String, LabError> {
        let mut full = vec!["-n", self.name.as_str()];
        full.extend_from_slice(args);
        run("ip", &full)
    }

    /// Writes `/etc/netns/<name>/hosts`, which `ip netns exec` bind-mounts over
    /// `/etc/hosts` for programs started in this host (e.g. servers that must find
    /// their peers by name). Removed with the namespace.
    pub fn set_hosts(&self, entries: &[(std::net::IpAddr, &str)]) -> Result<(), LabError> {
        let dir = format!("/etc/netns/{}", self.name);
        let mut text = String::from("127.0.0.1 localhost\n");
        for (ip, name) in entries {
            text.push_str(&format!("{ip} {name}\n"));
        }
        std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(format!("{dir}/hosts"), text))
            .map_err(|error| LabError::Io {
                what: format!("cannot write {dir}/hosts"),
                error,
            })
    }

    /// Moves the calling thread into this namespace (for the rest of its life).
    pub fn enter(&self) -> Result<(), LabError> {
        enter(&self.name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run("ip", &["netns", "del", &self.name]);
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{}", self.name));
        REGISTERED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|n| n != &self.name);
    }
}

/// Moves the calling thread into the named namespace.
pub fn enter(name: &str) -> Result<(), LabError> {
    let path = format!("/run/netns/{name}");
    let f = File::open(&path).map_err(|error| LabError::Io {
        what: format!("cannot open {path}"),
        error,
    })?;
    // SAFETY: f is an open namespace file; setns affects only the calling thread.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(LabError::Io {
            what: format!("setns into {name}"),
            error: io::Error::last_os_error(),
        });
    }
    Ok(())
}

fn exists(name: &str) -> bool {
    std::path::Path::new(&format!("/run/netns/{name}")).exists()
}

/// The namespaces that look like ours: `wb-<pid>-<role>`, with the pid.
pub fn list() -> Vec<(String, Option<u32>)> {
    let names: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names
        .into_iter()
        .filter(|n| n.starts_with(PREFIX))
        .map(|n| {
            let pid = n[PREFIX.len()..]
                .split('-')
                .next()
                .and_then(|p| p.parse().ok());
            (n, pid)
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Who made a lab namespace, as far as its name and `/proc` tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The run with this pid is still alive.
    Alive(u32),
    /// The run with this pid is gone (killed): its namespaces are leftovers.
    Gone(u32),
    /// The name carries no pid.
    Unknown,
}

/// [`list`] with each namespace's owner: what `wirebench lab list` shows.
pub fn list_owners() -> Vec<(String, Owner)> {
    list()
        .into_iter()
        .map(|(name, pid)| {
            let owner = match pid {
                Some(p) if alive(p) => Owner::Alive(p),
                Some(p) => Owner::Gone(p),
                None => Owner::Unknown,
            };
            (name, owner)
        })
        .collect()
}

/// Deletes lab namespaces whose creating process is gone (or all of them with `all`).
/// Returns the names deleted.
pub fn clean(all: bool) -> Result<Vec<String>, LabError> {
    check_privileges()?;
    let mut deleted = Vec::new();
    for (name, pid) in list() {
        let orphan = match pid {
            Some(p) => !alive(p) || p == std::process::id(),
            None => true,
        };
        if all || orphan {
            // Processes a killed run left inside its hosts (servers it started) go first:
            // `ip netns pids` lists exactly those, so nothing else is touched.
            if let Ok(pids) = run("ip", &["netns", "pids", &name]) {
                for pid in pids
                    .split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok())
                {
                    // SAFETY: signalling a process that lives in our lab namespace.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            run("ip", &["netns", "del", &name])?;
            let _ = std::fs::remove_dir_all(format!("/etc/netns/{name}"));
            deleted.push(name);
        }
    }
    Ok(deleted)
}

/// Deletes every namespace this process created. For emergency exits, where `Drop`
/// will not run.
pub fn cleanup_registered() {
    let names = std::mem::take(&mut *REGISTERED.lock().unwrap_or_else(|p| p.into_inner()));
    for n in names {
        let _ = run("ip", &["netns", "del", &n]);
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{n}"));
    }
}
