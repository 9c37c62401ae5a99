//! Commands on this machine and in its network namespaces: one program lookup
//! ([`crate::program`]), a non-zero exit turned into an error that carries its stderr,
//! root checked before anything is made, and a thread moved into a namespace with
//! `setns(2)` (a socket keeps the namespace of the thread that opened it, for life).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

// Causes are part of the messages, not `source`s, so a chain printed with `{:#}` does not
// repeat them.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
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
pub fn run(program: &str, args: &[&str]) -> Result<String, HostError> {
    let command = format!("{program} {}", args.join(" "));
    // Its own process group: a Ctrl-C at the terminal is for wirebench, which then
    // tears the lab down in order; an `ip` killed half-way would leave it half-built.
    let out = Command::new(crate::program::program_path(program))
        .args(args)
        .process_group(0)
        .output()
        .map_err(|e| HostError::Command {
            command: command.clone(),
            detail: match crate::program::on_path(program) {
                Err(looked) if e.kind() == io::ErrorKind::NotFound => looked,
                _ => e.to_string(),
            },
        })?;
    if !out.status.success() {
        return Err(HostError::Command {
            command,
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `program` with `args` in namespace `ns` (`ip netns exec NS PROGRAM ...`), the
/// program the one lookup finds ([`crate::program`]) rather than whatever `ip` would find
/// by name; a non-zero exit is an error carrying its stderr.
pub fn run_in(ns: &str, program: &str, args: &[&str]) -> Result<String, HostError> {
    if let Err(looked) = crate::program::on_path(program) {
        return Err(HostError::Command {
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
pub fn check_privileges() -> Result<(), HostError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(HostError::NotRoot);
    }
    Ok(())
}

/// Moves the calling thread into the named namespace.
pub fn enter(name: &str) -> Result<(), HostError> {
    let path = format!("/run/netns/{name}");
    let f = File::open(&path).map_err(|error| HostError::Io {
        what: format!("cannot open {path}"),
        error,
    })?;
    // SAFETY: f is an open namespace file; setns affects only the calling thread.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(HostError::Io {
            what: format!("setns into {name}"),
            error: io::Error::last_os_error(),
        });
    }
    Ok(())
}
