//! The zero-handshake server link (XEP-0361, crate `wirebench-x2x-gateway`) in study S1's
//! topology: a gateway beside each Prosody, attached to it as the XEP-0114 component of
//! the other domain, the two gateways joined by one TCP connection across the emulated
//! link. Prosody's own server-to-server module is off, so nothing can bypass them.

use std::net::{IpAddr, SocketAddr};
use wirebench_model::MetricSpec;
use wirebench_protocol::Fault;
use wirebench_protocol::Hosts;
use wirebench_protocol::WorkloadError;
use wirebench_protocol::hosts::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_x2x_gateway::{Compression, Config, Gateway, LogLevel, Stats};

/// The gateways' metrics (docs/x2x.md), declared with XMPP's by its plugin.
pub const X2X_CONNECTIONS: MetricSpec = MetricSpec::new(
    "x2x.connections",
    "count",
    "connections between the gateways",
);
pub const X2X_TFO_USED: MetricSpec = MetricSpec::new(
    "x2x.tfo_used",
    "count",
    "gateway connections opened with TCP Fast Open",
);
pub const X2X_TIMESTAMPS_USED: MetricSpec = MetricSpec::new(
    "x2x.timestamps_used",
    "count",
    "gateway connections with TCP timestamps",
);
pub const X2X_OVERHEAD_PER_STANZA: MetricSpec = MetricSpec::new(
    "x2x.overhead_per_stanza",
    "B",
    "gateway link bytes per stanza beyond its payload",
);

pub const X2X_LINK_BYTES: MetricSpec =
    MetricSpec::new("x2x.link_bytes", "B", "bytes the gateways sent each other");
pub const X2X_STANZAS: MetricSpec =
    MetricSpec::new("x2x.stanzas", "count", "stanzas the gateways carried");
pub const X2X_BYTES_PER_STANZA: MetricSpec =
    MetricSpec::new("x2x.bytes_per_stanza", "B", "gateway link bytes per stanza");
pub const X2X_RESENT: MetricSpec =
    MetricSpec::new("x2x.resent", "count", "stanzas resent after a link outage");

pub const SECRET: &str = "wirebench-x2x";
const PORT: u16 = 5270;
/// Prosody's component port, reached on loopback inside each host.
pub const COMPONENT_PORT: u16 = 5347;

/// How a case's servers are linked (`--s2s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum S2s {
    Standard,
    X2x { tfo: bool },
}

impl S2s {
    pub fn from_word(w: Option<&str>) -> S2s {
        match w {
            Some("x2x") => S2s::X2x { tfo: false },
            Some("x2x-tfo") => S2s::X2x { tfo: true },
            _ => S2s::Standard,
        }
    }
}

/// What a case sets on its gateways.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub tfo: bool,
    /// TCP_USER_TIMEOUT of the link connections (`x2x.user_timeout`); the gateway's
    /// default (120 s) when `None`.
    pub user_timeout: Option<std::time::Duration>,
    /// TCP timestamps off on the link connection (`x2x.tcp_timestamps=off`): 40 instead
    /// of 52 bytes of TCP/IP header per segment.
    pub timestamps_off: bool,
    /// The case's peer directory: each gateway logs to `a/x2x.log` or `b/x2x.log`
    /// there, beside its Prosody's logs.
    pub log_dir: Option<std::path::PathBuf>,
}

/// Two running gateways; stopped (and their counters read) with [`Pair::stop`].
pub struct Pair {
    a: Gateway,
    b: Gateway,
    _timestamps: Option<TimestampsOff>,
}

/// `net.ipv4.tcp_timestamps=0` in the gateway hosts while a case runs. The lab's hosts
/// outlive the case, so the kernel default (1) comes back when this is dropped, or the
/// next case (standard S2S, or x2x with timestamps on) would inherit the setting.
struct TimestampsOff {
    hosts: Vec<String>,
}

fn set_timestamps(host: &str, on: bool) -> Result<(), String> {
    let value = format!("net.ipv4.tcp_timestamps={}", u8::from(on));
    wirebench_protocol::hosts::run_in(host, "sysctl", &["-qw", &value])
        .map(drop)
        .map_err(|e| e.to_string())
}

impl TimestampsOff {
    /// Both hosts, though one end's SYN without the option is enough to leave it off:
    /// a deployment would configure both gateway machines alike, whichever dials.
    fn set(hosts: &[&str]) -> Result<TimestampsOff, WorkloadError> {
        let mut guard = TimestampsOff { hosts: Vec::new() };
        for h in hosts {
            set_timestamps(h, false).map_err(|e| {
                WorkloadError::Environment(format!("turning TCP timestamps off: {e}"))
            })?;
            guard.hosts.push(h.to_string());
        }
        Ok(guard)
    }
}

impl Drop for TimestampsOff {
    fn drop(&mut self) {
        for h in &self.hosts {
            let _ = set_timestamps(h, true);
        }
    }
}

fn config(local: &str, remote: &str, me: IpAddr, peer: IpAddr, o: &Options) -> Config {
    let mut c = Config::new(
        &[local],
        &[remote],
        SocketAddr::new(peer, PORT),
        SocketAddr::from(([127, 0, 0, 1], COMPONENT_PORT)),
        SECRET,
    );
    c.link.listen = Some(SocketAddr::new(me, PORT));
    c.link.dial_from = Some(me);
    c.link.compression = Compression::ZlibDict;
    c.link.tfo = o.tfo;
    // As standard S2S does: the link is opened by the first stanza that needs it, so
    // the first round trip pays for the connection, as in the study.
    c.link.on_demand = true;
    // A lone ack costs a segment (~0.3 s at 2400 bit/s) that the next message waits
    // behind; with a long delay acks ride on replies (half-way) or go every 8 stanzas.
    // A due ack waits for an expected answer up to reply_wait (default 30 s), which
    // covers S1's typing delays of 5-15 s.
    c.timing.ack_delay = std::time::Duration::from_secs(10);
    if let Some(t) = o.user_timeout {
        c.timing.user_timeout = t;
    }
    match &o.log_dir {
        // A file per gateway: everything, since it does not reach the terminal.
        Some(dir) => {
            let side = if local == "a.test" { "a" } else { "b" };
            c.log_file = Some(dir.join(side).join("x2x.log"));
            c.log = LogLevel::Info;
        }
        // Warnings only: the progress display owns the terminal.
        None => c.log = LogLevel::Warn,
    }
    c
}

/// Starts one gateway inside a lab host (its threads inherit the host's namespace).
fn start_in(ns: &str, cfg: Config) -> Result<Gateway, WorkloadError> {
    let ns = ns.to_string();
    std::thread::spawn(move || -> Result<Gateway, WorkloadError> {
        wirebench_protocol::hosts::enter(&ns)
            .map_err(|e| WorkloadError::Environment(e.to_string()))?;
        Gateway::start(cfg)
            .map_err(|e| WorkloadError::because(Fault::Environment, "x2x gateway", e))
    })
    .join()
    .map_err(|_| WorkloadError::Environment("x2x gateway start-up panicked".into()))?
}

impl Pair {
    pub fn start(lab: Hosts, o: &Options) -> Result<Pair, WorkloadError> {
        if o.tfo {
            // Client and server Fast Open (RFC 7413), per network namespace.
            for host in [lab.client(), lab.server()] {
                host.run("sysctl", &["-qw", "net.ipv4.tcp_fastopen=3"])
                    .map_err(|e| {
                        WorkloadError::because(Fault::Environment, "enabling TCP Fast Open", e)
                    })?;
            }
        }
        // Before the gateways start: the TFO cookie's connection and every link
        // connection read the setting when they send their SYN.
        let timestamps = o
            .timestamps_off
            .then(|| TimestampsOff::set(&[lab.client().name(), lab.server().name()]))
            .transpose()?;
        let (a_ip, b_ip) = (IpAddr::V4(CLIENT_ADDR), IpAddr::V4(SERVER_ADDR));
        // B first: A may prime its TFO cookie against B's listener at start.
        // B only accepts: in S1 client1 (behind A) speaks first, so A opens the link and
        // primes the TFO cookie; B answers on A's connection.
        let mut cb = config("b.test", "a.test", b_ip, a_ip, o);
        cb.link.dial = wirebench_x2x_gateway::Dial::Peer;
        let b = start_in(lab.server().name(), cb)?;
        let a = start_in(
            lab.client().name(),
            config("a.test", "b.test", a_ip, b_ip, o),
        )?;
        // Both must be Prosody's components before a client sends anything, or Prosody
        // bounces the stanza (`remote-server-timeout`).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while a.components_ready() < 1 || b.components_ready() < 1 {
            if std::time::Instant::now() > deadline {
                let (_, _) = (a.stop(), b.stop());
                return Err(WorkloadError::Peer(
                    "x2x gateways did not attach to their servers as components within 15 s \
                     (see the server and x2x.log files under peers/)"
                        .into(),
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Ok(Pair {
            a,
            b,
            _timestamps: timestamps,
        })
    }

    pub fn stop(self) -> (Stats, Stats) {
        // The gateways first, then the sysctl (when `_timestamps` drops).
        (self.a.stop(), self.b.stop())
    }
}

/// The gateways' own counters beside the workload's metrics: what crossed the link
/// (compressed), how many connections it took and whether their SYNs carried data.
pub fn record(out: &mut wirebench_protocol::Outcome, a: &Stats, b: &Stats, payload: Option<usize>) {
    out.put(X2X_LINK_BYTES, (a.link_bytes_out + b.link_bytes_out) as f64);
    out.put(X2X_STANZAS, (a.stanzas_out + b.stanzas_out) as f64);
    out.put(
        X2X_CONNECTIONS,
        (a.link_connections + b.link_connections) as f64,
    );
    out.put(X2X_TFO_USED, (a.tfo_used + b.tfo_used) as f64);
    out.put(
        X2X_TIMESTAMPS_USED,
        (a.timestamps_used + b.timestamps_used) as f64,
    );
    let stanzas = a.stanzas_out + b.stanzas_out;
    if stanzas > 0 {
        // Compressed XMPP bytes per stanza, markers, acks and the cold start of the
        // compressor included (TCP/IP headers are not: see wire.*).
        let per = (a.link_bytes_out + b.link_bytes_out) as f64 / stanzas as f64;
        out.put(X2X_BYTES_PER_STANZA, per);
        if let Some(p) = payload {
            out.put(X2X_OVERHEAD_PER_STANZA, per - p as f64);
        }
    }
    out.put(X2X_RESENT, (a.resent + b.resent) as f64);
    out.notes.push(
        "XMPP server link: wirebench x2x gateways (XEP-0361 zero handshake, zlib with preset \
         dictionary, connection opened on demand by the first stanza; Prosody s2s off)"
            .into(),
    );
}

/// Waits until nothing has crossed the link for `quiet` (at most `limit`): the previous
/// case's connections closing, or the TFO cookie being fetched, must not share the link
/// with the first measured message.
pub fn wait_quiet(
    lab: Hosts,
    quiet: std::time::Duration,
    limit: std::time::Duration,
    shutdown: &std::sync::atomic::AtomicBool,
) {
    let total = |lab: Hosts| {
        let c = lab.counters();
        c.up.offered_packets
            + c.down.offered_packets
            + c.up.delivered_packets
            + c.down.delivered_packets
    };
    let end = std::time::Instant::now() + limit;
    let mut last = total(lab);
    let mut since = std::time::Instant::now();
    while std::time::Instant::now() < end && !shutdown.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let now = total(lab);
        if now != last {
            last = now;
            since = std::time::Instant::now();
        } else if since.elapsed() >= quiet {
            return;
        }
    }
}
