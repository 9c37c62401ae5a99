//! The broker of a case (`mqtt.broker`), started per case on loopback or inside the lab's
//! server host, ready when its port accepts connections, stopped by its PID when dropped
//! (on every path: a failed case, an interrupt, a panic):
//!
//! - `mosquitto`: Debian's Mosquitto 2.0 in C, one thread ([`crate::mosquitto`] says
//!   why each line of its configuration is there);
//! - `mochi`: mochi-mqtt 2.7.9 in Go, a goroutine per connection, MQTT 3.1.1 and 5.0 on
//!   one listener, every client allowed (`scripts/install-mochi.sh` builds a minimal
//!   program of ours around the library); Go's sockets have Nagle off by default;
//! - `rumqttd`: rumqttd 0.20.0 in Rust on tokio, a listener per MQTT version (`[v4.1]`
//!   for 3.1.1, `[v5.1]` for 5.0; its MQTT 5 support is partial, as its README says),
//!   configured below (`scripts/install-rumqttd.sh`).
//!
//! All three keep nothing on disk and ask for no credentials: the broker is private to
//! the case and reachable only from the lab or loopback.

use crate::mosquitto::{MOSQUITTO, MosquittoConfig};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use wirebench_peer::{self as peer, PeerError, PeerProcess, command_in, tail_lines};
use wirebench_protocol::{Install, Lookup, Requirement};

/// The mochi-mqtt release scripts/install-mochi.sh pins.
pub const MOCHI_VERSION: &str = "2.7.9";
/// The rumqttd release scripts/install-rumqttd.sh pins.
pub const RUMQTTD_VERSION: &str = "0.20.0";

pub const MOCHI: Requirement = Requirement {
    name: "mochi-mqtt 2.7.9 (Go module, built by a script)",
    lookup: Lookup::Find(find_mochi),
    install: Install::Script {
        path: "scripts/install-mochi.sh",
        needs: &[],
    },
};

pub const RUMQTTD: Requirement = Requirement {
    name: "rumqttd 0.20.0 (crate, built by a script)",
    lookup: Lookup::Find(find_rumqttd),
    install: Install::Script {
        path: "scripts/install-rumqttd.sh",
        needs: &[],
    },
};

fn find_mochi() -> Result<PathBuf, String> {
    peer::built_peer(&format!("mochi-mqtt-{MOCHI_VERSION}/bin/mochi-mqtt"))
}

fn find_rumqttd() -> Result<PathBuf, String> {
    peer::built_peer(&format!("rumqttd-{RUMQTTD_VERSION}/bin/rumqttd"))
}

/// Which broker a case starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerKind {
    Mosquitto,
    Mochi,
    Rumqttd,
}

impl BrokerKind {
    pub const ALL: [BrokerKind; 3] = [
        BrokerKind::Mosquitto,
        BrokerKind::Mochi,
        BrokerKind::Rumqttd,
    ];

    /// The parameter's word for it.
    pub fn name(self) -> &'static str {
        match self {
            BrokerKind::Mosquitto => "mosquitto",
            BrokerKind::Mochi => "mochi",
            BrokerKind::Rumqttd => "rumqttd",
        }
    }

    pub fn from_word(word: &str) -> Option<BrokerKind> {
        Self::ALL.into_iter().find(|k| k.name() == word)
    }

    /// How notes and errors name it.
    pub fn words(self) -> &'static str {
        match self {
            BrokerKind::Mosquitto => "Mosquitto",
            BrokerKind::Mochi => "mochi-mqtt",
            BrokerKind::Rumqttd => "rumqttd",
        }
    }

    /// The most connections a second it accepts, where that is below what the load
    /// generator offers: rumqttd 0.20's accept loop sleeps `next_connection_delay_ms`
    /// after every connection (src/server/broker.rs), and tokio's timer rounds even a
    /// zero sleep up to its next 1 ms tick (measured here: 988/s offered 1,000, 882-947
    /// offered 2,000-20,000).
    pub fn accepts_per_s(self) -> Option<f64> {
        match self {
            BrokerKind::Rumqttd => Some(900.0),
            _ => None,
        }
    }

    pub fn requirement(self) -> Requirement {
        match self {
            BrokerKind::Mosquitto => MOSQUITTO,
            BrokerKind::Mochi => MOCHI,
            BrokerKind::Rumqttd => RUMQTTD,
        }
    }
}

/// What a broker is started for.
#[derive(Debug, Clone, Copy)]
pub struct BrokerOptions {
    /// The broker's sockets without Nagle, where it can be told (Mosquitto).
    pub nodelay: bool,
    /// Set up for a load: a quiet log, no connection throttle, room for every session.
    pub load: bool,
    /// MQTT 5.0 (rumqttd listens for one version per port).
    pub v5: bool,
}

/// A running broker; stopped (SIGTERM, then SIGKILL) when dropped.
///
/// The parent-death signal is tied to the *thread* that called [`Broker::start`]: keep
/// that thread alive as long as the broker should run.
pub struct Broker {
    process: PeerProcess,
    pub kind: BrokerKind,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    /// From spawning to the port accepting connections.
    pub start_time: Duration,
    /// Its output and log files, for errors.
    files: Vec<PathBuf>,
}

/// The rumqttd configuration for one listener at `addr`.
pub fn rumqttd_config(addr: SocketAddr, o: BrokerOptions) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Generated by wirebench for one case; see protocols/mqtt/plugin/src/broker.rs."
    );
    let _ = writeln!(s, "id = 0\n\n[router]\nid = 0");
    // Its router refuses connections beyond this; a load's sessions all fit.
    let _ = writeln!(
        s,
        "max_connections = {}",
        if o.load { 2_000_000 } else { 10_010 }
    );
    let _ = writeln!(s, "max_outgoing_packet_count = 200");
    let _ = writeln!(s, "max_segment_size = 104857600\nmax_segment_count = 10\n");
    let (section, name) = if o.v5 {
        ("v5.1", "v5-1")
    } else {
        ("v4.1", "v4-1")
    };
    let _ = writeln!(s, "[{section}]\nname = \"{name}\"\nlisten = \"{addr}\"");
    // Its default example waits 1 ms between accepted connections: 1,000 connects/s.
    let _ = writeln!(s, "next_connection_delay_ms = 0");
    let _ = writeln!(s, "    [{section}.connections]");
    let _ = writeln!(s, "    connection_timeout_ms = 60000");
    // Its example's 20 KiB would refuse the payload sweeps' larger messages.
    let _ = writeln!(s, "    max_payload_size = 268435455");
    let _ = writeln!(s, "    max_inflight_count = 100");
    if !o.v5 {
        let _ = writeln!(s, "    dynamic_filters = true");
    }
    s
}

impl Broker {
    /// Writes the configuration into `dir`, starts the broker on `ip` in network
    /// namespace `netns` (or here) and waits until its port accepts connections.
    pub fn start(
        kind: BrokerKind,
        netns: Option<&str>,
        dir: &Path,
        ip: IpAddr,
        o: BrokerOptions,
    ) -> Result<Broker, PeerError> {
        let program = kind.requirement().require()?;
        let io = |what: String| move |error| PeerError::Io { what, error };
        std::fs::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
        let dir = dir
            .canonicalize()
            .map_err(io(format!("cannot resolve {}", dir.display())))?;
        let port = peer::free_port(netns, ip).ok_or_else(|| PeerError::Failed {
            what: format!("no free port on {ip} for {}", kind.words()),
            detail: String::new(),
        })?;
        let addr = SocketAddr::new(ip, port);
        let out_file = dir.join(format!("{}.out", kind.name()));
        let mut files = vec![out_file.clone()];
        let args: Vec<OsString> = match kind {
            BrokerKind::Mosquitto => {
                let conf = dir.join("mosquitto.conf");
                let log = dir.join("mosquitto.log");
                // SAFETY: geteuid has no preconditions.
                let as_root = unsafe { libc::geteuid() } == 0;
                let cfg = MosquittoConfig {
                    addr: ip,
                    port,
                    nodelay: o.nodelay,
                    load: o.load,
                };
                std::fs::write(&conf, cfg.render(&log, as_root))
                    .map_err(io(format!("cannot write {}", conf.display())))?;
                files.push(log);
                vec!["-c".into(), conf.into()]
            }
            BrokerKind::Mochi => vec!["-addr".into(), addr.to_string().into()],
            BrokerKind::Rumqttd => {
                let conf = dir.join("rumqttd.toml");
                std::fs::write(&conf, rumqttd_config(addr, o))
                    .map_err(io(format!("cannot write {}", conf.display())))?;
                // -q: no banner in its output, which errors quote.
                vec!["-q".into(), "-c".into(), conf.into()]
            }
        };
        let out = std::fs::File::create(&out_file)
            .map_err(io(format!("cannot create {}", out_file.display())))?;
        let err = out
            .try_clone()
            .map_err(io(format!("cannot create {}", out_file.display())))?;
        let mut cmd = command_in(netns, &program.to_string_lossy());
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        if kind == BrokerKind::Rumqttd {
            // Its log at `info` writes a line per connection: errors only.
            cmd.env("RUST_LOG", "error");
        }
        let t = Instant::now();
        let child = cmd
            .spawn()
            .map_err(io(format!("cannot start {}", program.display())))?;
        let process = PeerProcess::ready(
            child,
            Duration::from_secs(2),
            kind.name(),
            ip,
            &[port],
            netns,
            Duration::from_secs(10),
            || tail_lines(&files, 20),
        )?;
        Ok(Broker {
            process,
            kind,
            addr,
            dir,
            start_time: t.elapsed(),
            files,
        })
    }

    /// Its PID: it runs until dropped, so there always is one.
    pub fn pid(&self) -> u32 {
        self.process.pid().unwrap_or_default()
    }

    /// Its log (Mosquitto's own file, the others' output).
    pub fn log(&self) -> PathBuf {
        self.files.last().cloned().unwrap_or_default()
    }

    /// Its memory and CPU time so far, while it runs.
    pub fn usage(&self) -> Option<wirebench_peer::Usage> {
        self.process.usage()
    }

    /// Whether it has exited (and how).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.process.exited()
    }

    /// The log's last lines, for errors.
    pub fn log_tail(&self, n: usize) -> String {
        tail_lines(&self.files, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rumqttd_listens_on_the_case_address_for_the_case_version_without_a_throttle() {
        let addr: SocketAddr = "198.18.0.2:1883".parse().unwrap();
        let o = BrokerOptions {
            nodelay: true,
            load: false,
            v5: false,
        };
        let v4 = rumqttd_config(addr, o);
        let parsed: toml::Table = v4.parse().unwrap();
        // `[v4.1]` is TOML's table `v4` holding `1`, as rumqttd reads it.
        assert_eq!(
            parsed["v4"]["1"]["listen"].as_str(),
            Some("198.18.0.2:1883")
        );
        assert_eq!(
            parsed["v4"]["1"]["next_connection_delay_ms"].as_integer(),
            Some(0)
        );
        assert!(parsed.get("v5").is_none());
        let v5: toml::Table = rumqttd_config(
            addr,
            BrokerOptions {
                v5: true,
                load: true,
                ..o
            },
        )
        .parse()
        .unwrap();
        assert_eq!(v5["v5"]["1"]["listen"].as_str(), Some("198.18.0.2:1883"));
        assert_eq!(
            v5["router"]["max_connections"].as_integer(),
            Some(2_000_000)
        );
        assert_eq!(
            BrokerKind::ALL.map(|k| BrokerKind::from_word(k.name())),
            BrokerKind::ALL.map(Some)
        );
    }
}
