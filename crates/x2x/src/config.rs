//! Gateway configuration: a [`Config`] built in code ([`Config::new`] plus field
//! assignments) or read from TOML ([`Config::from_toml_str`], [`Config::from_file`]).
//!
//! XEP-0361 §4 puts everything a handshake would negotiate into a priori configuration,
//! so both gateways of a link must agree on: the two domain lists (crossed), the
//! compression mode, who dials, and each other's addresses. `crates/x2x/example.toml`
//! documents every key.
//!
//! Errors name the file, line and key (`gw.toml:7: link.peer: ...`), like scenario files
//! (`crates/runner/src/scenario.rs`), and an unknown key lists the valid ones.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use toml_edit::{Document, Item, Table};

use crate::codec::Compression;

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
                reconnect_min: Duration::from_millis(100),
                reconnect_max: Duration::from_secs(10),
                connect_timeout: Duration::from_secs(30),
                user_timeout: Duration::from_secs(120),
            },
            log: LogLevel::Info,
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
        let cx = Ctx { origin: path, text };
        let doc = Document::parse(text).map_err(|e| {
            cx.err(
                e.span(),
                "",
                format!("not valid TOML: {}", e.message().trim()),
            )
        })?;
        let root = doc.as_table();
        let mut local = None;
        let mut remote = None;
        let mut name = None;
        let mut log = LogLevel::Info;
        let mut link = None;
        let mut component = None;
        let mut limits_t = None;
        let mut timing_t = None;
        for (key, item) in root.iter() {
            match key {
                "name" => name = Some(string(&cx, item, key)?),
                "local_domains" => local = Some(strings(&cx, item, key)?),
                "remote_domains" => remote = Some(strings(&cx, item, key)?),
                "log" => {
                    log = match string(&cx, item, key)?.as_str() {
                        "info" => LogLevel::Info,
                        "warn" => LogLevel::Warn,
                        "off" => LogLevel::Off,
                        other => {
                            return Err(cx.err(
                                item.span(),
                                key,
                                format!("{other:?} is not one of \"info\", \"warn\", \"off\""),
                            ));
                        }
                    }
                }
                "link" => link = Some(table(&cx, item, key)?),
                "component" => component = Some(table(&cx, item, key)?),
                "limits" => limits_t = Some(table(&cx, item, key)?),
                "timing" => timing_t = Some(table(&cx, item, key)?),
                other => {
                    return Err(unknown(
                        &cx,
                        item,
                        other,
                        &[
                            "name",
                            "local_domains",
                            "remote_domains",
                            "log",
                            "link",
                            "component",
                            "limits",
                            "timing",
                        ],
                    ));
                }
            }
        }
        let missing = |key: &str| cx.err(None, key, "missing (required)");
        let local = local.ok_or_else(|| missing("local_domains"))?;
        let remote = remote.ok_or_else(|| missing("remote_domains"))?;
        let link_t = link.ok_or_else(|| missing("link"))?;
        let comp_t = component.ok_or_else(|| missing("component"))?;

        // [component]
        let mut address = None;
        let mut secret = None;
        for (key, item) in comp_t.iter() {
            let full = format!("component.{key}");
            match key {
                "address" => address = Some(sockaddr(&cx, item, &full)?),
                "secret" => secret = Some(string(&cx, item, &full)?),
                other => {
                    return Err(unknown(
                        &cx,
                        item,
                        &format!("component.{other}"),
                        &["address", "secret"],
                    ));
                }
            }
        }
        let address = address.ok_or_else(|| missing("component.address"))?;
        let secret = secret.ok_or_else(|| missing("component.secret"))?;

        // [link]: `peer` first, since defaults derive from it.
        let peer_item = link_t.get("peer").ok_or_else(|| missing("link.peer"))?;
        let peer = sockaddr(&cx, peer_item, "link.peer")?;
        let l: Vec<&str> = local.iter().map(String::as_str).collect();
        let r: Vec<&str> = remote.iter().map(String::as_str).collect();
        let mut c = Config::new(&l, &r, peer, address, &secret);
        if let Some(n) = name {
            c.name = n;
        }
        c.log = log;
        let mut listen_given = false;
        for (key, item) in link_t.iter() {
            let full = format!("link.{key}");
            match key {
                "peer" => {}
                "listen" => {
                    c.link.listen = Some(sockaddr(&cx, item, &full)?);
                    listen_given = true;
                }
                "dial" => {
                    c.link.dial = match string(&cx, item, &full)?.as_str() {
                        "local" => Dial::Local,
                        "peer" => Dial::Peer,
                        "both" => Dial::Both,
                        other => {
                            return Err(cx.err(
                                item.span(),
                                &full,
                                format!(
                                    "{other:?} is not one of \"local\" (this gateway dials), \
                                     \"peer\" (the peer dials), \"both\""
                                ),
                            ));
                        }
                    }
                }
                "peer_source" => c.link.peer_source = Some(ipaddr(&cx, item, &full)?),
                "dial_from" => c.link.dial_from = Some(ipaddr(&cx, item, &full)?),
                "compression" => {
                    let s = string(&cx, item, &full)?;
                    c.link.compression = Compression::from_name(&s).ok_or_else(|| {
                        cx.err(
                            item.span(),
                            &full,
                            format!("{s:?} is not one of \"none\", \"zlib\", \"zlib-dict\""),
                        )
                    })?;
                }
                "tfo" => c.link.tfo = boolean(&cx, item, &full)?,
                "connect" => {
                    let s = string(&cx, item, &full)?;
                    c.link.on_demand = match s.as_str() {
                        "eager" => false,
                        "on-demand" => true,
                        _ => {
                            return Err(cx.err(
                                item.span(),
                                &full,
                                format!("{s:?} is not one of \"eager\", \"on-demand\""),
                            ));
                        }
                    };
                }
                other => {
                    return Err(unknown(
                        &cx,
                        item,
                        &format!("link.{other}"),
                        &[
                            "peer",
                            "listen",
                            "dial",
                            "peer_source",
                            "dial_from",
                            "compression",
                            "tfo",
                            "connect",
                        ],
                    ));
                }
            }
        }
        if c.link.dial == Dial::Local && !listen_given {
            c.link.listen = None;
        }
        if let Some(t) = limits_t {
            for (key, item) in t.iter() {
                let full = format!("limits.{key}");
                let v = int(&cx, item, &full)?;
                let v = usize::try_from(v).unwrap_or(usize::MAX);
                match key {
                    "max_stanza" => c.limits.max_stanza = v,
                    "queue_stanzas" => c.limits.queue_stanzas = v,
                    "queue_bytes" => c.limits.queue_bytes = v,
                    other => {
                        return Err(unknown(
                            &cx,
                            item,
                            &format!("limits.{other}"),
                            &["max_stanza", "queue_stanzas", "queue_bytes"],
                        ));
                    }
                }
            }
        }
        if let Some(t) = timing_t {
            for (key, item) in t.iter() {
                let full = format!("timing.{key}");
                let v = int(&cx, item, &full)?;
                let ms = Duration::from_millis(v);
                match key {
                    "ack_every" => c.timing.ack_every = v,
                    "ack_delay_ms" => c.timing.ack_delay = ms,
                    "reconnect_min_ms" => c.timing.reconnect_min = ms,
                    "reconnect_max_ms" => c.timing.reconnect_max = ms,
                    "connect_timeout_ms" => c.timing.connect_timeout = ms,
                    "user_timeout_ms" => c.timing.user_timeout = ms,
                    other => {
                        return Err(unknown(
                            &cx,
                            item,
                            &format!("timing.{other}"),
                            &[
                                "ack_every",
                                "ack_delay_ms",
                                "reconnect_min_ms",
                                "reconnect_max_ms",
                                "connect_timeout_ms",
                                "user_timeout_ms",
                            ],
                        ));
                    }
                }
            }
        }
        c.validate(path).map_err(|mut e| {
            // Point at the offending key when the file has it.
            if let Some(k) = &e.key {
                e.line = cx.line_of(lookup(root, k));
            }
            e
        })?;
        Ok(c)
    }
}

/// A configuration mistake, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// File name (or whatever the caller named the text).
    pub origin: String,
    pub line: Option<usize>,
    /// Dotted key (`link.peer`), if the problem belongs to one.
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": {k}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

struct Ctx<'a> {
    origin: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn line_of(&self, span: Option<std::ops::Range<usize>>) -> Option<usize> {
        span.map(|s| {
            self.text[..s.start.min(self.text.len())]
                .matches('\n')
                .count()
                + 1
        })
    }

    fn err(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        msg: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            origin: self.origin.to_string(),
            line: self.line_of(span),
            key: (!key.is_empty()).then(|| key.to_string()),
            message: msg.into(),
        }
    }
}

fn span(item: &Item) -> Option<std::ops::Range<usize>> {
    item.span()
        .or_else(|| item.as_table().and_then(|t| t.span()))
}

/// The span of a dotted key's value in the document, if present (else its table's).
fn lookup(root: &Table, dotted: &str) -> Option<std::ops::Range<usize>> {
    match dotted.split_once('.') {
        None => root.get(dotted).and_then(span),
        Some((t, k)) => {
            let t = root.get(t)?.as_table()?;
            t.get(k).and_then(span).or_else(|| t.span())
        }
    }
}

fn unknown(cx: &Ctx, item: &Item, key: &str, valid: &[&str]) -> ConfigError {
    let word = key.rsplit('.').next().unwrap_or(key);
    let hint = wirebench_model::hint::closest(word, valid.iter().copied())
        .map(|v| format!(" (did you mean `{v}`?)"))
        .unwrap_or_default();
    cx.err(
        span(item),
        key,
        format!("unknown key{hint}; valid keys: {}", valid.join(", ")),
    )
}

fn table<'a>(cx: &Ctx, item: &'a Item, key: &str) -> Result<&'a Table, ConfigError> {
    item.as_table()
        .ok_or_else(|| cx.err(span(item), key, "expected a table (`[section]`)"))
}

fn string(cx: &Ctx, item: &Item, key: &str) -> Result<String, ConfigError> {
    item.as_str()
        .map(str::to_string)
        .ok_or_else(|| cx.err(span(item), key, "expected a string"))
}

fn strings(cx: &Ctx, item: &Item, key: &str) -> Result<Vec<String>, ConfigError> {
    let arr = item
        .as_array()
        .ok_or_else(|| cx.err(span(item), key, "expected an array of strings"))?;
    arr.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| cx.err(v.span(), key, "expected an array of strings"))
        })
        .collect()
}

fn int(cx: &Ctx, item: &Item, key: &str) -> Result<u64, ConfigError> {
    item.as_integer()
        .and_then(|i| u64::try_from(i).ok())
        .ok_or_else(|| cx.err(span(item), key, "expected a non-negative integer"))
}

fn boolean(cx: &Ctx, item: &Item, key: &str) -> Result<bool, ConfigError> {
    item.as_bool()
        .ok_or_else(|| cx.err(span(item), key, "expected true or false"))
}

fn sockaddr(cx: &Ctx, item: &Item, key: &str) -> Result<SocketAddr, ConfigError> {
    let s = string(cx, item, key)?;
    s.parse().map_err(|_| {
        cx.err(
            span(item),
            key,
            format!("{s:?} is not an address with port (like \"10.0.0.2:5270\" or \"[::1]:5270\")"),
        )
    })
}

fn ipaddr(cx: &Ctx, item: &Item, key: &str) -> Result<IpAddr, ConfigError> {
    let s = string(cx, item, key)?;
    s.parse()
        .map_err(|_| cx.err(span(item), key, format!("{s:?} is not an IP address")))
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
        assert!(e.starts_with("gw.toml: component.address: missing"), "{e}");
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
