//! Gateway configuration: a [`Config`] built in code ([`Config::new`] plus field
//! assignments) or read from TOML ([`Config::from_toml_str`], [`Config::from_file`]).
//!
//! XEP-0361 §4 puts everything a handshake would negotiate into a priori configuration,
//! so both gateways of a link must agree on: the two domain lists (crossed), the
//! compression mode, who dials, and each other's addresses. `protocols/xmpp/x2x-gateway/example.toml`
//! documents every key.
//!
//! The file is read with serde into types that declare its keys (`deny_unknown_fields`).
//! Errors name the file, line and key (`gw.toml:7: link.peer: ...`), like scenario files
//! (`app/plan/src/scenario.rs`), and an unknown key lists the valid ones with a
//! did-you-mean ([`wirebench_model::located`]).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use wirebench_model::located;

use wirebench_x2x::Compression;

/// Which gateway opens the TCP connection (XEP-0361 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dial {
    /// This gateway dials; it does not listen.
    Local,
    /// The peer dials; this gateway only listens.
    Peer,
    /// Both dial and listen. When both connections open at once, the one dialled by the
    /// gateway with the lower `listen` address survives (both sides compute the same).
    Both,
}

impl Dial {
    pub fn name(self) -> &'static str {
        match self {
            Dial::Local => "local",
            Dial::Peer => "peer",
            Dial::Both => "both",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Off,
    Warn,
    Info,
}

/// The link to the peer gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkConfig {
    /// Where this gateway accepts the peer's connections (required unless `dial` is
    /// [`Dial::Local`]). Port 0 picks a free port (tests).
    pub listen: Option<SocketAddr>,
    /// The peer gateway's listen address (dialled unless `dial` is [`Dial::Peer`]).
    pub peer: SocketAddr,
    pub dial: Dial,
    /// The only source address accepted for incoming connections (XEP-0361 §4.2
    /// identification by source IP); defaults to `peer`'s IP.
    pub peer_source: Option<IpAddr>,
    /// Local address to dial from (so that the peer sees the address it expects).
    pub dial_from: Option<IpAddr>,
    pub compression: Compression,
    /// TCP Fast Open (RFC 7413) on dialled and accepted connections.
    pub tfo: bool,
    /// Dial only when a stanza waits for the peer (`connect = "on-demand"`), as a server
    /// opens server-to-server links; otherwise (`"eager"`) keep the link up from the
    /// start. On demand, the set-up cost shows in the first stanza's round trip.
    pub on_demand: bool,
}

/// The XEP-0114 connection(s) to the local XMPP server: one per remote domain, each
/// registering as the component of that domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentConfig {
    pub address: SocketAddr,
    pub secret: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest stanza accepted from the peer or the local server (bytes). A larger one
    /// closes the connection it came on.
    pub max_stanza: usize,
    /// Bound of the outbound queue (unsent + unacknowledged) and of the inbound queue
    /// towards the local server, in stanzas and in bytes.
    pub queue_stanzas: usize,
    pub queue_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Acknowledge after this many delivered stanzas ...
    pub ack_every: u64,
    /// ... or this long after the first unacknowledged one.
    pub ack_delay: Duration,
    /// ... or, when an answer to the last delivered stanza is expected, up to this long
    /// for the ack to ride on the answer (see [`wirebench_x2x::EngineConfig::reply_wait_ns`]).
    pub reply_wait: Duration,
    /// Reconnection backoff (link and component), doubling from min to max.
    pub reconnect_min: Duration,
    pub reconnect_max: Duration,
    pub connect_timeout: Duration,
    /// TCP_USER_TIMEOUT on link connections: how long sent data may stay unacknowledged
    /// before the kernel gives up on the connection (0 = kernel default).
    pub user_timeout: Duration,
}

/// Everything one gateway needs. Build with [`Config::new`] and adjust fields, or read
/// from TOML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Log prefix (defaults to the first local domain).
    pub name: String,
    /// Domains of the local XMPP server.
    pub local_domains: Vec<String>,
    /// Domains of the peer's XMPP server; the gateway is the local server's component
    /// for each of them.
    pub remote_domains: Vec<String>,
    pub link: LinkConfig,
    pub component: ComponentConfig,
    pub limits: Limits,
    pub timing: Timing,
    pub log: LogLevel,
    /// Where log lines go (appended, each with the seconds since start); stderr if
    /// `None`. A run records a case's gateway logs beside its servers' this way, so they
    /// do not interleave with the progress display.
    pub log_file: Option<std::path::PathBuf>,
}

impl Config {
    /// A configuration with defaults: dial = both, compression = zlib-dict, TFO on,
    /// listen on `peer`'s port on all addresses.
    pub fn new(
        local_domains: &[&str],
        remote_domains: &[&str],
        peer: SocketAddr,
        component: SocketAddr,
        secret: &str,
    ) -> Config {
        let any: IpAddr = if peer.is_ipv4() {
            IpAddr::from([0, 0, 0, 0])
        } else {
            IpAddr::from([0u16; 8])
        };
        Config {
            name: local_domains.first().unwrap_or(&"x2x").to_string(),
            local_domains: local_domains.iter().map(|s| s.to_string()).collect(),
            remote_domains: remote_domains.iter().map(|s| s.to_string()).collect(),
            link: LinkConfig {
                listen: Some(SocketAddr::new(any, peer.port())),
                peer,
                dial: Dial::Both,
                peer_source: None,
                dial_from: None,
                compression: Compression::ZlibDict,
                tfo: true,
                on_demand: false,
            },
            component: ComponentConfig {
                address: component,
                secret: secret.to_string(),
            },
            limits: Limits {
                max_stanza: 256 * 1024,
                queue_stanzas: 1024,
                queue_bytes: 4 * 1024 * 1024,
            },
            timing: Timing {
                ack_every: 8,
                ack_delay: Duration::from_secs(1),
                reply_wait: Duration::from_secs(30),
                reconnect_min: Duration::from_millis(100),
                reconnect_max: Duration::from_secs(10),
                connect_timeout: Duration::from_secs(30),
                user_timeout: Duration::from_secs(120),
            },
            log: LogLevel::Info,
            log_file: None,
        }
    }

    /// The accepted source address of incoming link connections.
    pub fn peer_source(&self) -> IpAddr {
        self.link.peer_source.unwrap_or(self.link.peer.ip())
    }

    /// Checks what the types cannot. `origin` names the configuration in errors.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let e = |key: &str, msg: String| ConfigError {
            origin: origin.to_string(),
            line: None,
            key: Some(key.to_string()),
            message: msg,
        };
        if self.local_domains.is_empty() {
            return Err(e("local_domains", "at least one domain is needed".into()));
        }
        if self.remote_domains.is_empty() {
            return Err(e("remote_domains", "at least one domain is needed".into()));
        }
        for (key, list) in [
            ("local_domains", &self.local_domains),
            ("remote_domains", &self.remote_domains),
        ] {
            for d in list {
                if d.is_empty() || d.contains(['@', '/', ' ', '\'', '"', '<', '>', '&']) {
                    return Err(e(key, format!("{d:?} is not a domain name")));
                }
            }
        }
        let lower =
            |v: &Vec<String>| -> Vec<String> { v.iter().map(|d| d.to_ascii_lowercase()).collect() };
        if let Some(d) = lower(&self.local_domains)
            .iter()
            .find(|d| lower(&self.remote_domains).contains(d))
        {
            return Err(e(
                "remote_domains",
                format!("{d} is both a local and a remote domain"),
            ));
        }
        if self.link.dial != Dial::Local && self.link.listen.is_none() {
            return Err(e(
                "link.listen",
                format!(
                    "needed when dial = \"{}\" (the peer connects to it)",
                    self.link.dial.name()
                ),
            ));
        }
        if self.component.secret.is_empty() {
            return Err(e(
                "component.secret",
                "must not be empty (XEP-0114 handshake)".into(),
            ));
        }
        let l = &self.limits;
        if l.max_stanza < 512 {
            return Err(e(
                "limits.max_stanza",
                "must be at least 512 bytes (a stream header must fit)".into(),
            ));
        }
        if l.queue_stanzas == 0 {
            return Err(e("limits.queue_stanzas", "must be at least 1".into()));
        }
        if l.queue_bytes < l.max_stanza {
            return Err(e(
                "limits.queue_bytes",
                format!(
                    "{} is less than max_stanza ({}): a largest stanza could never be queued",
                    l.queue_bytes, l.max_stanza
                ),
            ));
        }
        let t = &self.timing;
        if t.ack_every == 0 {
            return Err(e("timing.ack_every", "must be at least 1".into()));
        }
        if t.reconnect_min.is_zero() || t.reconnect_min > t.reconnect_max {
            return Err(e(
                "timing.reconnect_min_ms",
                "must be positive and at most reconnect_max_ms".into(),
            ));
        }
        if t.connect_timeout.is_zero() {
            return Err(e("timing.connect_timeout_ms", "must be positive".into()));
        }
        Ok(())
    }

    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            line: None,
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        Config::from_toml_str(&text, &origin)
    }

    /// Parses TOML text; `path` names it in errors.
    pub fn from_toml_str(text: &str, path: &str) -> Result<Config, ConfigError> {
        let at_key = |key: &str, message: String| ConfigError {
            origin: path.to_string(),
            line: located::line_of_key(text, key),
            key: Some(key.to_string()),
            message,
        };
        let f: File = toml::from_str(text).map_err(|e| {
            let l = located::toml_error(text, &e);
            ConfigError {
                origin: path.to_string(),
                line: l.line,
                message: l.message(),
                key: l.key,
            }
        })?;

        let address = sockaddr(&f.component.address).map_err(|m| at_key("component.address", m))?;
        // `peer` first, since defaults derive from it.
        let peer = sockaddr(&f.link.peer).map_err(|m| at_key("link.peer", m))?;
        let l: Vec<&str> = f.local_domains.iter().map(String::as_str).collect();
        let r: Vec<&str> = f.remote_domains.iter().map(String::as_str).collect();
        let mut c = Config::new(&l, &r, peer, address, &f.component.secret);
        if let Some(n) = f.name {
            c.name = n;
        }
        if let Some(s) = f.log {
            c.log = choose(
                &s,
                &[
                    ("info", LogLevel::Info),
                    ("warn", LogLevel::Warn),
                    ("off", LogLevel::Off),
                ],
            )
            .map_err(|m| at_key("log", m))?;
        }
        c.log_file = f.log_file.map(std::path::PathBuf::from);

        let link = f.link;
        if let Some(s) = link.dial {
            c.link.dial = match s.as_str() {
                "local" => Dial::Local,
                "peer" => Dial::Peer,
                "both" => Dial::Both,
                other => {
                    return Err(at_key(
                        "link.dial",
                        format!(
                            "{other:?} is not one of \"local\" (this gateway dials), \
                             \"peer\" (the peer dials), \"both\""
                        ),
                    ));
                }
            }
        }
        match link.listen {
            Some(s) => c.link.listen = Some(sockaddr(&s).map_err(|m| at_key("link.listen", m))?),
            None if c.link.dial == Dial::Local => c.link.listen = None,
            None => {}
        }
        if let Some(s) = link.peer_source {
            c.link.peer_source = Some(ipaddr(&s).map_err(|m| at_key("link.peer_source", m))?);
        }
        if let Some(s) = link.dial_from {
            c.link.dial_from = Some(ipaddr(&s).map_err(|m| at_key("link.dial_from", m))?);
        }
        if let Some(s) = link.compression {
            c.link.compression = Compression::from_name(&s).ok_or_else(|| {
                at_key(
                    "link.compression",
                    format!("{s:?} is not one of \"none\", \"zlib\", \"zlib-dict\""),
                )
            })?;
        }
        if let Some(b) = link.tfo {
            c.link.tfo = b;
        }
        if let Some(s) = link.connect {
            c.link.on_demand = choose(&s, &[("eager", false), ("on-demand", true)])
                .map_err(|m| at_key("link.connect", m))?;
        }

        let size = |v: Option<u64>, default: usize| {
            v.map_or(default, |v| usize::try_from(v).unwrap_or(usize::MAX))
        };
        let l = f.limits;
        c.limits.max_stanza = size(l.max_stanza, c.limits.max_stanza);
        c.limits.queue_stanzas = size(l.queue_stanzas, c.limits.queue_stanzas);
        c.limits.queue_bytes = size(l.queue_bytes, c.limits.queue_bytes);

        let ms = |v: Option<u64>, default: Duration| v.map_or(default, Duration::from_millis);
        let t = f.timing;
        c.timing.ack_every = t.ack_every.unwrap_or(c.timing.ack_every);
        c.timing.ack_delay = ms(t.ack_delay_ms, c.timing.ack_delay);
        c.timing.reply_wait = ms(t.reply_wait_ms, c.timing.reply_wait);
        c.timing.reconnect_min = ms(t.reconnect_min_ms, c.timing.reconnect_min);
        c.timing.reconnect_max = ms(t.reconnect_max_ms, c.timing.reconnect_max);
        c.timing.connect_timeout = ms(t.connect_timeout_ms, c.timing.connect_timeout);
        c.timing.user_timeout = ms(t.user_timeout_ms, c.timing.user_timeout);

        c.validate(path).map_err(|mut e| {
            // Point at the offending key when the file has it (else at its table).
            if let Some(k) = &e.key {
                e.line = located::line_of_key(text, k);
            }
            e
        })?;
        Ok(c)
    }
}

/// The file as written. serde checks its structure (unknown keys, missing ones, types);
/// [`Config::from_toml_str`] checks the values a type cannot, and
/// [`Config::validate`] how they fit together.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    local_domains: Vec<String>,
    remote_domains: Vec<String>,
    log: Option<String>,
    log_file: Option<String>,
    link: LinkFile,
    component: ComponentFile,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    timing: TimingFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkFile {
    peer: String,
    listen: Option<String>,
    dial: Option<String>,
    peer_source: Option<String>,
    dial_from: Option<String>,
    compression: Option<String>,
    tfo: Option<bool>,
    connect: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ComponentFile {
    address: String,
    secret: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    max_stanza: Option<u64>,
    queue_stanzas: Option<u64>,
    queue_bytes: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TimingFile {
    ack_every: Option<u64>,
    ack_delay_ms: Option<u64>,
    reply_wait_ms: Option<u64>,
    reconnect_min_ms: Option<u64>,
    reconnect_max_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    user_timeout_ms: Option<u64>,
}

/// A configuration mistake, located (file, line, dotted key such as `link.peer`).
pub type ConfigError = wirebench_model::located::FileError;

/// One of the words in `choices`, or a message listing them.
fn choose<T: Copy>(s: &str, choices: &[(&str, T)]) -> Result<T, String> {
    choices
        .iter()
        .find(|(w, _)| *w == s)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let words: Vec<String> = choices.iter().map(|(w, _)| format!("{w:?}")).collect();
            format!("{s:?} is not one of {}", words.join(", "))
        })
}

fn sockaddr(s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| {
        format!("{s:?} is not an address with port (like \"10.0.0.2:5270\" or \"[::1]:5270\")")
    })
}

fn ipaddr(s: &str) -> Result<IpAddr, String> {
    s.parse().map_err(|_| format!("{s:?} is not an IP address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
local_domains = ["a.test"]
remote_domains = ["b.test", "muc.b.test"]

[link]
listen = "10.0.0.1:5270"
peer = "10.0.0.2:5270"
dial = "both"
compression = "zlib"
tfo = false

[component]
address = "127.0.0.1:5347"
secret = "s3cret"

[limits]
queue_stanzas = 10

[timing]
ack_delay_ms = 50
"#;

    fn err(text: &str) -> String {
        Config::from_toml_str(text, "gw.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_and_fills_defaults() {
        let c = Config::from_toml_str(GOOD, "gw.toml").unwrap();
        assert_eq!(c.name, "a.test");
        assert_eq!(c.remote_domains, ["b.test", "muc.b.test"]);
        assert_eq!(c.link.compression, Compression::Zlib);
        assert!(!c.link.tfo);
        assert_eq!(c.peer_source(), "10.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(c.limits.queue_stanzas, 10);
        assert_eq!(c.limits.max_stanza, 256 * 1024);
        assert_eq!(c.timing.ack_delay, Duration::from_millis(50));
        assert_eq!(c.component.secret, "s3cret");
    }

    #[test]
    fn the_example_file_is_valid() {
        let text = include_str!("../example.toml");
        let c = Config::from_toml_str(text, "example.toml").unwrap();
        assert_eq!(c.local_domains, ["a.test"]);
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = err(&GOOD.replace("peer = \"10.0.0.2:5270\"", "peer = \"10.0.0.2\""));
        assert!(
            e.starts_with("gw.toml:7: link.peer: \"10.0.0.2\" is not an address"),
            "{e}"
        );
        let e = err(&GOOD.replace("tfo = false", "tfo = 1"));
        assert!(
            e.starts_with("gw.toml:10: link.tfo: expected true or false"),
            "{e}"
        );
        let e = err(&GOOD.replace("dial = \"both\"", "dail = \"both\""));
        assert!(
            e.starts_with("gw.toml:8: link.dail: unknown key (did you mean `dial`?)"),
            "{e}"
        );
        let e = err(&GOOD.replace("compression = \"zlib\"", "compression = \"gzip\""));
        assert!(
            e.contains("link.compression: \"gzip\" is not one of"),
            "{e}"
        );
        let e = err(&GOOD.replace("secret = \"s3cret\"", "secret = \"\""));
        assert!(
            e.starts_with("gw.toml:14: component.secret: must not be empty"),
            "{e}"
        );
        let e = err(&GOOD.replace("queue_stanzas = 10", "queue_stanzas = 0"));
        assert!(e.starts_with("gw.toml:17: limits.queue_stanzas:"), "{e}");
        let e = err(&GOOD.replace("[\"b.test\", \"muc.b.test\"]", "[\"a.test\"]"));
        assert!(
            e.starts_with("gw.toml:3: remote_domains: a.test is both"),
            "{e}"
        );
        let e = err("local_domains = [\"a.test\"\n");
        assert!(
            e.starts_with("gw.toml:1: not valid TOML")
                || e.starts_with("gw.toml:2: not valid TOML"),
            "{e}"
        );
        let e = err(&GOOD.replace(
            "[component]\naddress = \"127.0.0.1:5347\"\n",
            "[component]\n",
        ));
        // A missing key points at its table.
        assert_eq!(e, "gw.toml:12: component.address: missing (required)");
        let e = err("remote_domains = [\"b.test\"]\n");
        assert_eq!(e, "gw.toml: local_domains: missing (required)");
    }

    #[test]
    fn structure_errors_come_from_the_types() {
        let e = err(&GOOD.replace("[timing]\n", "[timing]\nack_evry = 3\n"));
        assert_eq!(
            e,
            "gw.toml:20: timing.ack_evry: unknown key (did you mean `ack_every`?); valid keys: \
             ack_every, ack_delay_ms, reply_wait_ms, reconnect_min_ms, reconnect_max_ms, \
             connect_timeout_ms, user_timeout_ms"
        );
        let e = err(&format!("colour = \"red\"\n{GOOD}"));
        assert!(
            e.starts_with("gw.toml:1: colour: unknown key; valid keys: name, local_domains,"),
            "{e}"
        );
        let e = err(&GOOD.replace("queue_stanzas = 10", "queue_stanzas = -1"));
        assert_eq!(
            e,
            "gw.toml:17: limits.queue_stanzas: expected a whole number >= 0, found integer `-1`"
        );
        let e = err(&GOOD.replace(
            "remote_domains = [\"b.test\", \"muc.b.test\"]",
            "remote_domains = \"b.test\"",
        ));
        assert_eq!(
            e,
            "gw.toml:3: remote_domains: expected a list, found string \"b.test\""
        );
        let e = err(&GOOD.replace("peer = \"10.0.0.2:5270\"\n", ""));
        assert_eq!(e, "gw.toml:5: link.peer: missing (required)");
        let e = err(&GOOD.replace("tfo = false", "tfo = false\nconnect = \"lazy\""));
        assert_eq!(
            e,
            "gw.toml:11: link.connect: \"lazy\" is not one of \"eager\", \"on-demand\""
        );
        let e = err(&format!("log = \"debug\"\n{GOOD}"));
        assert!(
            e.starts_with("gw.toml:1: log: \"debug\" is not one of \"info\", \"warn\", \"off\""),
            "{e}"
        );
        let e = err(&GOOD.replace(
            "peer = \"10.0.0.2:5270\"",
            "peer = \"10.0.0.2:5270\"\ndial_from = \"x\"",
        ));
        assert_eq!(e, "gw.toml:8: link.dial_from: \"x\" is not an IP address");
        // A check on a key the file leaves out points at the key's table.
        let e = err(&GOOD.replace("[limits]\n", "[limits]\nmax_stanza = 8388608\n"));
        assert!(
            e.starts_with("gw.toml:16: limits.queue_bytes: 4194304 is less"),
            "{e}"
        );
    }

    proptest::proptest! {
        /// Without any one of its lines, the good file still reads, or fails naming a
        /// line of the file; never a panic.
        #[test]
        fn any_line_left_out_is_located(n in 0usize..24) {
            let lines: Vec<&str> = GOOD.lines().collect();
            let text: String = lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != n % lines.len())
                .map(|(_, l)| format!("{l}\n"))
                .collect();
            if let Err(e) = Config::from_toml_str(&text, "gw.toml") {
                proptest::prop_assert!(e.line.is_none_or(|l| l >= 1 && l <= lines.len()), "{e}");
                proptest::prop_assert!(e.key.is_some(), "{e}");
            }
        }

        #[test]
        fn any_text_gives_a_config_or_an_error(text in "[a-z_\\[\\]=\"{},.\\n 0-9:-]{0,120}") {
            let _ = Config::from_toml_str(&text, "gw.toml");
        }
    }

    #[test]
    fn dial_local_needs_no_listen_address() {
        let text = GOOD
            .replace("listen = \"10.0.0.1:5270\"\n", "")
            .replace("dial = \"both\"", "dial = \"local\"");
        let c = Config::from_toml_str(&text, "gw.toml").unwrap();
        assert_eq!(c.link.listen, None);
        let text = GOOD
            .replace("listen = \"10.0.0.1:5270\"\n", "")
            .replace("dial = \"both\"", "dial = \"peer\"");
        // Config::new's default listen (any address, peer's port) applies.
        let c = Config::from_toml_str(&text, "gw.toml").unwrap();
        assert_eq!(c.link.listen, Some("0.0.0.0:5270".parse().unwrap()));
    }
}
