//! Parameter specs: the ones every protocol shares (workload, payload, rounds, the link,
//! ...) and the type protocols declare their own with ([`crate::Protocol::params`]). The
//! planner joins them into one table (`wirebench_plan::params`); `docs/scenarios.md`
//! documents the same list for users.

use std::time::Duration;
use wirebench_link::{Direction, LinkSpec};
/// Re-exported so that a crate declaring specs needs no other import.
pub use wirebench_model::Kind;
use wirebench_model::param::ValueError;
use wirebench_model::{ParamValue, Value};

/// Every workload; a protocol offers some of them ([`crate::Protocol::workloads`]).
pub const WORKLOADS: &[&str] = &["pingpong", "stream", "load", "connect"];
pub const ON_OFF: &[&str] = &["on", "off"];

/// `mode`: whether a stream's messages come back. Every protocol with one-way and echo
/// streams declares this same spec among its own.
pub const MODE: ParamSpec = ParamSpec {
    name: "mode",
    kind: Kind::Choice(&["oneway", "echo"]),
    default: "oneway",
    workloads: &["stream"],
    help: "stream direction: oneway (server counts) or echo (server returns every message)",
    words: "mode",
};

/// [`MODE`], typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    OneWay,
    Echo,
}

impl Mode {
    pub fn from_word(word: &str) -> Option<Mode> {
        match word {
            "oneway" => Some(Mode::OneWay),
            "echo" => Some(Mode::Echo),
            _ => None,
        }
    }

    /// A case's mode: one-way unless it says echo (a ping-pong case has no `mode`).
    pub fn of(case: &crate::Case) -> Mode {
        Mode::from_word(case.choice(&MODE)).unwrap_or(Mode::OneWay)
    }

    pub fn is_echo(self) -> bool {
        self == Mode::Echo
    }
}

/// `nodelay`: TCP_NODELAY on both ends, for protocols whose both ends are ours.
pub const NODELAY: ParamSpec = ParamSpec {
    name: "nodelay",
    kind: Kind::Choice(ON_OFF),
    default: "on",
    workloads: WORKLOADS,
    help: "TCP_NODELAY on both ends: on sends each message at once; off lets Nagle coalesce",
    words: "TCP_NODELAY",
};

/// `tcp.info`: how often a workload that holds its data connection's socket samples its
/// TCP_INFO into the case's `tcp_info` series (`wirebench_net::tcpinfo`).
pub const TCP_INFO: ParamSpec = ParamSpec {
    name: "tcp.info",
    kind: Kind::Duration,
    default: "10ms",
    workloads: &["stream"],
    help: "sample the data connection's TCP_INFO (cwnd, ssthresh, RTT, delivery and pacing rate, retransmits) this often into the case's <case>.tcp_info.csv; 0: off",
    words: "TCP_INFO interval",
};

/// A stream case with neither `count` nor `duration`, of a protocol without its own
/// [`crate::Protocol::stream_count`], sends for this long: long enough for repeats to
/// agree within a few percent on loopback (docs/performance.md, "Stream duration").
pub const STREAM_DURATION: Duration = Duration::from_secs(2);
/// Streams of protocols with real peers are count-based (they time the whole flood until
/// the receiving client has the last message); without `count` they send this many.
pub const PEER_STREAM_COUNT: u64 = 100;

#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: Kind,
    /// Empty: no default, the parameter is absent unless given.
    pub default: &'static str,
    /// Workloads this parameter affects; a case of another workload ignores it.
    pub workloads: &'static [&'static str],
    pub help: &'static str,
    /// The name in words, for legends and axis titles.
    pub words: &'static str,
}

/// Parameters every protocol reads. The choices of `protocol` are the registry's names
/// and its default the registry's first, which the runner fills in.
pub const PARAMS: &[ParamSpec] = &[
    PROTOCOL,
    WORKLOAD,
    PAYLOAD,
    ROUNDS,
    THINK,
    COUNT,
    DURATION,
    TCP_CC,
    TCP_INITCWND,
    TCP_INITRWND,
    TCP_RMEM,
    TCP_WMEM,
];

pub const PROTOCOL: ParamSpec = ParamSpec {
    name: "protocol",
    kind: Kind::Choice(&[]),
    default: "",
    workloads: WORKLOADS,
    help: "wire protocol (the runner's registry fills in the names; `wirebench protocols` lists them)",
    words: "protocol",
};

pub const WORKLOAD: ParamSpec = ParamSpec {
    name: "workload",
    kind: Kind::Choice(WORKLOADS),
    default: "pingpong",
    workloads: WORKLOADS,
    help: "pingpong (latency, one message in flight), stream (throughput), load (many sessions arriving open-loop in phases, as Tsung does: xmpp only) or connect (fresh connections, each timed to its first byte: direct and the proxies)",
    words: "workload",
};

pub const PAYLOAD: ParamSpec = ParamSpec {
    name: "payload",
    kind: Kind::Bytes,
    default: "64",
    workloads: WORKLOADS,
    help: "payload bytes per message, after the 21-byte raw header",
    words: "payload",
};

pub const ROUNDS: ParamSpec = ParamSpec {
    name: "rounds",
    kind: Kind::Count,
    default: "1000",
    workloads: &["pingpong"],
    help: "ping-pong round trips per case",
    words: "rounds",
};

pub const THINK: ParamSpec = ParamSpec {
    name: "think",
    kind: Kind::Duration,
    default: "0",
    workloads: &["pingpong"],
    help: "responder's wait before answering (excluded from the RTT)",
    words: "think time",
};

pub const COUNT: ParamSpec = ParamSpec {
    name: "count",
    kind: Kind::Count,
    default: "",
    workloads: &["stream"],
    help: "messages per stream case (raw and the request/response protocols: none, the stream lasts `duration`; XMPP, IRC and MQTT: 100)",
    words: "messages",
};

pub const DURATION: ParamSpec = ParamSpec {
    name: "duration",
    kind: Kind::Duration,
    default: "",
    workloads: &["stream"],
    help: "how long a stream of raw or a request/response protocol sends (2s unless count is given); with count, whichever ends first",
    words: "stream duration",
};

/// `tcp.cc`: the TCP congestion control of both lab hosts' routes. The kernel's list of
/// what it has is checked when the run is planned (the runner knows the machine); here,
/// only that the value can be an algorithm's name at all.
pub const TCP_CC: ParamSpec = ParamSpec {
    name: "tcp.cc",
    kind: Kind::Custom {
        what: "congestion control",
        check: check_cc_name,
    },
    default: "",
    workloads: WORKLOADS,
    help: "TCP congestion control of every connection across the link, both lab hosts (real peers too): any in net.ipv4.tcp_available_congestion_control or a tcp_NAME module the lab can load; needs an emulated link; unset: the machine's default",
    words: "congestion control",
};

/// `tcp.initcwnd`: the initial congestion window of both lab hosts' routes (RFC 6928's
/// 10 segments is Linux's default), in segments.
pub const TCP_INITCWND: ParamSpec = ParamSpec {
    name: "tcp.initcwnd",
    kind: Kind::Count,
    default: "",
    workloads: WORKLOADS,
    help: "initial congestion window, in segments, of every connection across the link, both lab hosts (real peers too); needs an emulated link; unset: the kernel's (10, RFC 6928)",
    words: "initial window",
};

/// `tcp.initrwnd`: the initial receive window both lab hosts' routes advertise, in
/// segments.
pub const TCP_INITRWND: ParamSpec = ParamSpec {
    name: "tcp.initrwnd",
    kind: Kind::Count,
    default: "",
    workloads: WORKLOADS,
    help: "initial receive window, in segments, that every connection across the link advertises, both lab hosts (real peers too); needs an emulated link; unset: the kernel's",
    words: "initial receive window",
};

/// `tcp.rmem`: the largest receive buffer a connection across the link may grow to, in
/// both lab hosts (`net.ipv4.tcp_rmem`'s max; its default lowered to it when above).
pub const TCP_RMEM: ParamSpec = ParamSpec {
    name: "tcp.rmem",
    kind: Kind::Bytes,
    default: "",
    workloads: WORKLOADS,
    help: "largest receive buffer (and so window) a connection across the link may grow to, both lab hosts (real peers too): net.ipv4.tcp_rmem's max in each; needs an emulated link; unset: this machine's",
    words: "receive buffer",
};

/// `tcp.wmem`: the largest send buffer, as [`TCP_RMEM`] (`net.ipv4.tcp_wmem`).
pub const TCP_WMEM: ParamSpec = ParamSpec {
    name: "tcp.wmem",
    kind: Kind::Bytes,
    default: "",
    workloads: WORKLOADS,
    help: "largest send buffer a connection across the link may grow to, both lab hosts (real peers too): net.ipv4.tcp_wmem's max in each; needs an emulated link; unset: this machine's",
    words: "send buffer",
};

/// The smallest `tcp.rmem` and `tcp.wmem`: the kernel's own minimum buffer (one page).
pub const BUFFER_MIN: u64 = 4096;

/// The largest initial window `tcp.initcwnd` and `tcp.initrwnd` take: a bound of
/// wirebench's own, far above what any deployment uses (RFC 6928 argues for 10), so that
/// a typo is refused before the run rather than handed to the kernel.
pub const INIT_WINDOW_MAX: u64 = 1000;

/// The longest name the kernel takes (`TCP_CA_NAME_MAX` is 16, with its NUL).
const CC_NAME_MAX: usize = 15;

/// A congestion control's name as the kernel spells them: lower case, digits and `_`,
/// at most 15 bytes. Anything else could never be had, and would reach a module name.
pub fn check_cc_name(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= CC_NAME_MAX
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "a congestion control's name is 1 to {CC_NAME_MAX} lower-case letters, digits or `_` (cubic, reno, bbr)"
        ))
    }
}

/// A spec, or a named link with fields after it, both directions.
fn check_link(s: &str) -> Result<(), String> {
    for d in [Direction::Up, Direction::Down] {
        LinkSpec::parse_direction(s, d).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn check_loss(s: &str) -> Result<(), String> {
    LinkSpec::parse(&format!("loss={s}"))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// One outage, or `none` (so a grid can compare with and without).
fn check_outage(s: &str) -> Result<(), String> {
    if s == "none" {
        return Ok(());
    }
    LinkSpec::parse(&format!("outage={s}"))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn check_paths(text: &str) -> Result<(), String> {
    wirebench_link::PathRtts::parse(text)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn check_trace(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    wirebench_link::Trace::parse(&text)
        .map(|_| ())
        .map_err(|e| format!("{path}: {e}"))
}

const LINK_KIND: Kind = Kind::Custom {
    what: "link spec",
    check: check_link,
};

/// Parameters of the emulated link; any of them puts the case in a lab.
pub const LINK_PARAMS: &[ParamSpec] = &[
    LINK,
    UPLINK,
    DOWNLINK,
    LINK2,
    LINK_RATE,
    LINK_DELAY,
    LINK_JITTER,
    LINK_LOSS,
    LINK_QUEUE,
    LINK_MTU,
    LINK_OUTAGE,
    LINK_TRACE,
    LINK_PATHS,
];

pub const LINK: ParamSpec = ParamSpec {
    name: "link",
    kind: LINK_KIND,
    default: "",
    workloads: WORKLOADS,
    help: "emulated link, both directions: a named link (geo, satcom: `wirebench links`), RATE/DELAY (2400bit/500ms) or rate=..,delay=..,jitter=..,loss=..,queue=..,mtu=..,outage=30s+10s",
    words: "link",
};

pub const UPLINK: ParamSpec = ParamSpec {
    name: "uplink",
    kind: LINK_KIND,
    default: "",
    workloads: WORKLOADS,
    help: "client-to-server direction (replaces link); a named link gives its uplink",
    words: "uplink",
};

pub const DOWNLINK: ParamSpec = ParamSpec {
    name: "downlink",
    kind: LINK_KIND,
    default: "",
    workloads: WORKLOADS,
    help: "server-to-client direction (replaces link); a named link gives its downlink",
    words: "downlink",
};

pub const LINK2: ParamSpec = ParamSpec {
    name: "link2",
    kind: LINK_KIND,
    default: "",
    workloads: WORKLOADS,
    help: "a second path between the hosts, both directions, for Multipath TCP (mptcp=on): 10Mbit/40ms",
    words: "second path",
};

pub const LINK_RATE: ParamSpec = ParamSpec {
    name: "link.rate",
    kind: Kind::Rate,
    default: "",
    workloads: WORKLOADS,
    help: "link rate, both directions",
    words: "link rate",
};

pub const LINK_DELAY: ParamSpec = ParamSpec {
    name: "link.delay",
    kind: Kind::Duration,
    default: "",
    workloads: WORKLOADS,
    help: "one-way delay, both directions",
    words: "one-way delay",
};

pub const LINK_JITTER: ParamSpec = ParamSpec {
    name: "link.jitter",
    kind: Kind::Duration,
    default: "",
    workloads: WORKLOADS,
    help: "extra delay per packet, drawn uniformly from [0, jitter]",
    words: "jitter",
};

pub const LINK_LOSS: ParamSpec = ParamSpec {
    name: "link.loss",
    kind: Kind::Custom {
        what: "loss",
        check: check_loss,
    },
    default: "",
    workloads: WORKLOADS,
    help: "random loss: 1%, 0.01, or Gilbert-Elliott ge:p_gb/p_bg/loss_good/loss_bad",
    words: "loss",
};

pub const LINK_QUEUE: ParamSpec = ParamSpec {
    name: "link.queue",
    kind: Kind::Bytes,
    default: "",
    workloads: WORKLOADS,
    help: "drop-tail queue bound in bytes; given alone it is the only bound (add queue_packets=N to link to keep a packet bound too); neither given: 1000 packets",
    words: "queue",
};

pub const LINK_MTU: ParamSpec = ParamSpec {
    name: "link.mtu",
    kind: Kind::Count,
    default: "",
    workloads: WORKLOADS,
    help: "link MTU in bytes (1500 unless given)",
    words: "MTU",
};

pub const LINK_OUTAGE: ParamSpec = ParamSpec {
    name: "link.outage",
    kind: Kind::Custom {
        what: "outage",
        check: check_outage,
    },
    default: "",
    workloads: WORKLOADS,
    help: "scheduled outage, both directions, replacing any given in link: START+DURATION (30s+10s: down from 30 s after the link is set up, for 10 s), every PERIOD for DURATION [from START], or none",
    words: "outage",
};

pub const LINK_TRACE: ParamSpec = ParamSpec {
    name: "link.trace",
    kind: Kind::Custom {
        what: "Mahimahi trace file",
        check: check_trace,
    },
    default: "",
    workloads: WORKLOADS,
    help: "Mahimahi trace file (one 1500-byte delivery opportunity per line, in ms); replaces the rate",
    words: "trace",
};

pub const LINK_PATHS: ParamSpec = ParamSpec {
    name: "link.paths",
    kind: Kind::Custom {
        what: "path round-trip distribution",
        check: check_paths,
    },
    default: "",
    workloads: WORKLOADS,
    help: "a round trip per connection, drawn from a distribution and added to the link's delay: s3, lognormal:p50=20ms,p95=200ms, uniform:10ms..300ms, fixed:50ms or cdf:FILE",
    words: "path round trips",
};

impl ParamSpec {
    /// The words of a choice parameter (empty for other kinds), for tests that check an
    /// enum has a variant for each.
    pub fn choices(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::Choice(words) => words,
            _ => &[],
        }
    }

    /// Parses a value as typed and checks it against what the parameter allows, so the
    /// command line and scenario files refuse the same values.
    pub fn parse(&self, text: &str) -> Result<ParamValue, ValueError> {
        let v = ParamValue::parse(self.kind, text)?;
        allowed(self.name, &v).map_err(|reason| ValueError::NotAllowed {
            input: v.label.clone(),
            reason,
        })?;
        Ok(v)
    }
}

/// Limits beyond what a value's type checks. Each reason says what is allowed.
fn allowed(name: &str, v: &ParamValue) -> Result<(), String> {
    let n = match &v.value {
        Value::Count(n) => *n,
        Value::Bytes(b) => b.0,
        _ => 0,
    };
    match name {
        "rounds" if n == 0 => Err("a ping-pong case needs at least 1 round trip".into()),
        "count" if n == 0 => Err("a stream case needs at least 1 message".into()),
        // An empty payload would make every throughput 0 bit/s, and IRC cannot send an
        // empty message; a header-only raw frame is not what anyone means by "payload".
        "payload" if n == 0 => Err("a message needs at least 1 byte of payload".into()),
        "payload" if n > MAX_PAYLOAD => Err(format!(
            "a raw frame carries at most {MAX_PAYLOAD} bytes of payload (its length is 32 bits)"
        )),
        // The link fields one at a time, by the link's own rules. The queue is checked
        // against the smallest MTU here; the case's link checks it against the real one.
        "link.rate" | "link.delay" | "link.jitter" | "link.mtu" | "link.queue" => {
            let field = &name["link.".len()..];
            let text = if field == "queue" {
                format!("mtu=68,queue={}", v.label)
            } else {
                format!("{field}={}", v.label)
            };
            LinkSpec::parse(&text).map(|_| ()).map_err(|e| match e {
                wirebench_link::SpecError::Invalid { reason, .. } => reason,
                other => other.to_string(),
            })
        }
        _ => Ok(()),
    }
}

/// The largest payload a raw frame can carry: its 32-bit length covers the 17 header
/// bytes after it too (raw's plugin tests that this matches its frame header).
pub const MAX_PAYLOAD: u64 = u32::MAX as u64 - 17;

/// Whether a parameter describes the emulated link.
pub fn is_link(name: &str) -> bool {
    LINK_PARAMS.iter().any(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Case;

    /// The spec and the enum cannot drift: a choice added to `mode` needs a variant.
    #[test]
    fn every_mode_parses() {
        for w in MODE.choices() {
            assert!(Mode::from_word(w).is_some(), "mode={w}");
        }
    }

    fn case(point: &[(&ParamSpec, &str)]) -> Case {
        Case {
            index: 1,
            point: point
                .iter()
                .map(|(s, v)| (s.name.to_string(), s.parse(v).unwrap()))
                .collect(),
            ignored: Vec::new(),
            runs: 1,
        }
    }

    #[test]
    fn congestion_control_names() {
        for ok in ["cubic", "reno", "bbr", "bbr2", "htcp", "dctcp", "a_b"] {
            assert!(TCP_CC.parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Cubic", "bbr,", "../x", "tcp cubic", "sixteen_letters_"] {
            assert!(check_cc_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn readers_fall_back_to_the_default() {
        let bare = case(&[]);
        assert_eq!(bare.choice(&MODE), "oneway");
        assert!(bare.is_on(&NODELAY));
        assert_eq!(bare.count(&ROUNDS), Some(1000));
        assert_eq!(bare.bytes(&PAYLOAD), Some(64));
        assert_eq!(bare.duration(&THINK), Some(Duration::ZERO));
        // No default: absent.
        assert_eq!(bare.count(&COUNT), None);
        assert_eq!(bare.text(&LINK), None);
        assert_eq!(bare.choice(&LINK), "");
        assert!(!bare.has(&MODE));
        assert_eq!(Mode::of(&bare), Mode::OneWay);

        let set = case(&[
            (&MODE, "echo"),
            (&NODELAY, "off"),
            (&ROUNDS, "7"),
            (&PAYLOAD, "1k"),
            (&THINK, "5ms"),
            (&COUNT, "3"),
        ]);
        assert!(set.has(&MODE));
        assert_eq!(Mode::of(&set), Mode::Echo);
        assert!(!set.is_on(&NODELAY));
        assert_eq!(set.count(&ROUNDS), Some(7));
        assert_eq!(set.bytes(&PAYLOAD), Some(1024));
        assert_eq!(set.duration(&THINK), Some(Duration::from_millis(5)));
        assert_eq!(set.count(&COUNT), Some(3));
        // A value of another type is not read as this one.
        assert_eq!(set.duration(&ROUNDS), None);
    }
}
