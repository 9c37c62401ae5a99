//! Network namespaces: the lab's hosts.
//!
//! Namespaces are created and deleted with iproute2 (`ip netns add/del`), which also
//! bind-mounts them under `/run/netns/NAME` so they outlive their creator and can be
//! entered by any thread with `setns(2)`. A thread that has entered a namespace opens
//! sockets there; a socket keeps its namespace for life, whatever thread uses it later.
//!
//! Every name starts with `wb-<pid>-` so leftovers of a killed run are easy to find and
//! [`clean`] can tell a live run's namespaces from a dead one's.

use std::sync::Mutex;
/// Why making, entering or running in a namespace failed.
pub use wirebench_host::HostError as LabError;
pub use wirebench_host::command::{check_privileges, enter, run, run_in};

/// Prefix of every namespace wirebench creates.
pub const PREFIX: &str = "wb-";

/// Namespaces created by this process and not yet deleted: an emergency exit (second
/// Ctrl-C) deletes them through [`cleanup_registered`].
static REGISTERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

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
