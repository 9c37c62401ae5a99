//! `wirebench shell`: any program in a fresh host whose only way to this machine crosses
//! an emulated link. The host is 198.18.0.2 and this machine's root namespace 198.18.0.1
//! for the first shell; shells running beside it get a /24 each (198.18.16.0/24 on), and
//! the command finds its pair in `WIREBENCH_HOST_ADDR` and `WIREBENCH_ROOT_ADDR`.

use crate::emulator::Counters;
use crate::pcap::{PcapOptions, PcapStats};
use crate::{Lab, LabError, ShellAddrs};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use wirebench_link::LinkParams;

/// The command's pid while it runs (0 otherwise), for a signal handler that passes
/// SIGTERM on: a handler can read a static, not a value on this stack.
pub static CHILD: AtomicI32 = AtomicI32::new(0);

/// What a shell session did.
#[derive(Debug)]
pub struct ShellOutcome {
    pub status: ExitStatus,
    pub counters: Counters,
    /// What the capture wrote, when there was one.
    pub pcap: Option<PcapStats>,
}

impl ShellOutcome {
    /// The exit code `wirebench shell` passes on: the command's own (0 to 255), or 130
    /// when a signal ended it.
    pub fn exit_code(&self) -> u8 {
        match self.status.code() {
            Some(0) => 0,
            Some(c) => c.clamp(1, 255) as u8,
            None => 128 + 2,
        }
    }
}

/// Builds the link, runs `command` in the host (through `ip netns exec`, in this process
/// group so a terminal's Ctrl-C reaches it directly), waits for it and tears the link
/// down. `started(host_name, addresses)` is called once the command is running.
pub fn run(
    up: LinkParams,
    down: LinkParams,
    seed: u64,
    pcap: Option<&PcapOptions>,
    command: &[String],
    started: impl FnOnce(&str, ShellAddrs),
) -> Result<ShellOutcome, LabError> {
    let lab = Lab::shell(up, down, seed, pcap)?;
    let addrs = lab.shell_addrs().expect("a shell lab has its addresses");
    // Left by an earlier shell on the same addresses that was killed before it could do
    // this itself.
    close_root_sockets(addrs.host);
    let mut child = Command::new("ip")
        .args(["netns", "exec", lab.client().name()])
        .args(command)
        .env("WIREBENCH_HOST_ADDR", addrs.host.to_string())
        .env("WIREBENCH_ROOT_ADDR", addrs.root.to_string())
        .spawn()
        .map_err(|error| LabError::Io {
            what: "cannot run the command (ip netns exec)".into(),
            error,
        })?;
    CHILD.store(child.id() as i32, Ordering::SeqCst);
    started(lab.client().name(), addrs);
    let status = child.wait().map_err(|error| LabError::Io {
        what: "waiting for the command".into(),
        error,
    });
    CHILD.store(0, Ordering::SeqCst);
    close_root_sockets(addrs.host);
    let status = status?;
    Ok(ShellOutcome {
        status,
        counters: lab.counters(),
        pcap: lab.pcap_stats(),
    })
}

/// Destroys this machine's root-namespace TCP sockets whose peer is the shell host
/// `host`: they belonged to the shell's command (a server here that it talked to), and
/// once the host is gone they would go on retransmitting for minutes; the next shell on
/// the same addresses would then carry their segments over its own link (issue #19: a
/// stray 1380-byte segment once delayed a 2400 bit/s sample to 4.7 s). `ss -K`
/// (iproute2) asks the kernel to abort them (SOCK_DESTROY, CONFIG_INET_DIAG_DESTROY).
/// While a shell runs its addresses are its own ([`Lab::shell`]), so every such socket
/// is ours. Returns how many it closed.
pub fn close_root_sockets(host: std::net::Ipv4Addr) -> usize {
    let host = host.to_string();
    let out = Command::new("ss")
        .args(["-K", "-H", "-t", "-n", "dst", &host])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    // ss lists what it destroyed; a listener in the list is not ours (no peer), and the
    // filter never matches one.
    out.map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0)
}

/// Passes SIGTERM to the running command, if any (for a signal handler).
pub fn terminate_child() {
    let pid = CHILD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: signalling the child this module started, by its pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn exit_codes_pass_through_and_signals_are_130() {
        let code = |raw| {
            ShellOutcome {
                status: ExitStatus::from_raw(raw),
                counters: Counters::default(),
                pcap: None,
            }
            .exit_code()
        };
        assert_eq!(code(0), 0);
        assert_eq!(code(3 << 8), 3);
        assert_eq!(code(255 << 8), 255);
        assert_eq!(code(libc::SIGKILL), 130);
    }
}
