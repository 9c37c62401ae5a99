//! The link spec: how a user writes a link, e.g. `2400bit/500ms` or
//! `rate=1Gbit,delay=10ms,loss=0.1%`.
//!
//! A spec describes one direction; a lab applies it to each direction of a symmetric
//! link (each direction gets its own [`Link`](crate::Link) and seed). `delay` is one-way,
//! so `2400bit/500ms` has a round-trip time of 1 s plus serialization.
//!
//! # Grammar
//!
//! A spec is a comma-separated list. Its first item may be the short form:
//!
//! * `RATE/DELAY`, e.g. `2400bit/500ms` or `1Gbit/s/10ms`;
//! * `RATE` alone, e.g. `2400bit` (no delay);
//! * `DELAY` alone, e.g. `500ms`: a bare duration can only be a delay (a rate always
//!   has a bit unit), so it means that delay on an unlimited-rate link.
//!
//! Every other item is `field=value`:
//!
//! | field | value | default |
//! |---|---|---|
//! | `rate` | bit rate (`2400bit`, `19.2kbit`, `1Gbit/s`) or `unlimited` | `unlimited` |
//! | `delay` | one-way duration (`500ms`) | `0` |
//! | `jitter` | duration; each packet gets an extra delay uniform in `[0, jitter]` | `0` |
//! | `loss` | `1%`, `0.01`, `ge:P_GB/P_BG/LOSS_GOOD/LOSS_BAD`, or `none` | `none` |
//! | `queue` (or `queue_bytes`) | bytes (`64KiB`) or `unlimited` | `unlimited` |
//! | `queue_packets` | count (`1000`, `10k`) or `unlimited` | `1000`; `unlimited` when `queue` gives a byte bound alone |
//! | `mtu` | bytes, 68 to 65535 | `1500` |
//! | `reorder` | `on`/`off` (also `true`/`false`, `yes`/`no`, `1`/`0`) | `off` |
//! | `outage` | `START+DURATION` or `every PERIOD for DURATION [from START]`; repeatable | none |
//!
//! # Outages
//!
//! `outage=30s+10s` takes the link down 30 s after it was configured (its origin), for
//! 10 s: down on `[30 s, 40 s)`. `outage=every 60s for 10s` is down on `[60 s, 70 s)`,
//! `[120 s, 130 s)`, ...; `from START` moves the first window (`every 60s for 10s from
//! 0` starts down). `outage` is the one field that may be given several times, e.g.
//! `outage=30s+10s,outage=60s+5s`; the link is down whenever any of them says so. Each
//! item holds one outage, so a spec stays one comma-separated list (the command line and
//! scenario files join `key=value` items to the spec before them, and `;` separates
//! specs). The duration must be positive and shorter than the period. See
//! [`Outage`] and the crate docs for what an outage does to packets.
//!
//! # Default queue
//!
//! 1000 packets and no byte bound: netem's default `limit`. A byte bound given alone
//! (`queue=4MiB`) replaces it: the queue is then bounded in bytes only, as the spec
//! says; give both (`queue=4MiB,queue_packets=1000`) to keep both. Mahimahi's default is an
//! unbounded drop-tail queue; wirebench bounds it so that a sender cannot make the
//! emulator hold unbounded memory, and 1000 packets is far more than the
//! bandwidth-delay product of the slow links studied (only a fast, long link such as
//! 10 Gbit/s with 10 ms needs `queue_packets=unlimited` or a larger bound to avoid
//! drops a deep real buffer would not make). Unlike netem's `limit`, the bound counts
//! only packets waiting for or in serialization, not those in propagation.
//!
//! # Ranges
//!
//! Rates are whole bits per second up to 1000 Gbit/s; durations at most one day, with
//! nanosecond resolution; queue bounds at most 1 TiB. Within these, `Display` writes a spec that parses back to the
//! same value.

use std::fmt;
use std::str::FromStr;

use wirebench_model::units::UnitError;
use wirebench_model::{Bytes, Rate, parse_count, parse_duration};

use crate::link::{DEFAULT_MTU, DEFAULT_QUEUE_PACKETS, LinkParams, Loss};
use crate::outage::Outage;

/// Examples of whole specs, shown in errors.
pub const EXAMPLES: &str = "2400bit/500ms, 1Gbit/10ms, 500ms, \
                            rate=2400bit,delay=500ms,jitter=10ms,loss=1%,queue=64KiB";

const MAX_RATE_BPS: u64 = 1_000_000_000_000;
const MAX_DURATION_NS: u64 = 86_400 * 1_000_000_000;
const MAX_QUEUE_BYTES: u64 = 1 << 40;
const MIN_MTU: u32 = 68;
const MAX_MTU: u32 = 65_535;

/// The user's description of a link direction; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    /// `None` is unlimited.
    pub rate_bps: Option<u64>,
    pub delay_ns: u64,
    pub jitter_ns: u64,
    pub reorder: bool,
    pub loss: Loss,
    /// `None` is unbounded.
    pub queue_bytes: Option<u64>,
    /// `None` is unbounded.
    pub queue_packets: Option<usize>,
    pub mtu: u32,
    /// Scheduled outages, in the order given.
    pub outages: Vec<Outage>,
}

impl Default for LinkSpec {
    fn default() -> Self {
        LinkSpec {
            rate_bps: None,
            delay_ns: 0,
            jitter_ns: 0,
            reorder: false,
            loss: Loss::None,
            queue_bytes: None,
            queue_packets: Some(DEFAULT_QUEUE_PACKETS),
            mtu: DEFAULT_MTU,
            outages: Vec::new(),
        }
    }
}

/// Why a spec was rejected. Every message names the field and shows an example.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("empty link spec (examples: {EXAMPLES})")]
    Empty,
    #[error("link {field}: {error}")]
    Unit {
        field: &'static str,
        error: UnitError,
    },
    #[error("link {field}={value:?}: {reason} (example: {field}={example})")]
    Invalid {
        field: &'static str,
        value: String,
        reason: String,
        example: &'static str,
    },
    #[error(
        "unknown link field {key:?}; the fields are rate, delay, jitter, loss, queue, \
         queue_packets, mtu, reorder, outage (example: rate=2400bit,delay=500ms,loss=1%)"
    )]
    UnknownField { key: String },
    #[error("link {field} is given twice (example: rate=2400bit,delay=500ms)")]
    Duplicate { field: &'static str },
    #[error(
        "link {part:?} is neither RATE/DELAY, a rate nor a delay (examples: 2400bit/500ms, \
         1Gbit, 10ms)"
    )]
    Shape { part: String },
    #[error(
        "link item {part:?} needs the form field=value; only the first item may be the short \
         form RATE/DELAY (example: 2400bit/500ms,loss=1%)"
    )]
    NotAField { part: String },
    #[error("unknown named link {name:?}; the names are {names} (wirebench links describes each)")]
    UnknownName { name: String, names: String },
}

#[derive(Clone, Copy)]
enum Field {
    Rate,
    Delay,
    Jitter,
    Loss,
    Queue,
    QueuePackets,
    Mtu,
    Reorder,
    Outage,
}

impl Field {
    const ALL: [Field; 9] = [
        Field::Rate,
        Field::Delay,
        Field::Jitter,
        Field::Loss,
        Field::Queue,
        Field::QueuePackets,
        Field::Mtu,
        Field::Reorder,
        Field::Outage,
    ];

    fn from_key(key: &str) -> Option<Field> {
        Some(match key {
            "rate" => Field::Rate,
            "delay" => Field::Delay,
            "jitter" => Field::Jitter,
            "loss" => Field::Loss,
            "queue" | "queue_bytes" => Field::Queue,
            "queue_packets" => Field::QueuePackets,
            "mtu" => Field::Mtu,
            "reorder" => Field::Reorder,
            "outage" => Field::Outage,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Field::Rate => "rate",
            Field::Delay => "delay",
            Field::Jitter => "jitter",
            Field::Loss => "loss",
            Field::Queue => "queue",
            Field::QueuePackets => "queue_packets",
            Field::Mtu => "mtu",
            Field::Reorder => "reorder",
            Field::Outage => "outage",
        }
    }

    fn example(self) -> &'static str {
        match self {
            Field::Rate => "2400bit",
            Field::Delay => "500ms",
            Field::Jitter => "10ms",
            Field::Loss => "1%, loss=0.01 or loss=ge:0.01/0.3/0/0.5",
            Field::Queue => "64KiB",
            Field::QueuePackets => "1000",
            Field::Mtu => "1500",
            Field::Reorder => "on",
            Field::Outage => "30s+10s or outage=every 60s for 10s",
        }
    }

    fn invalid(self, value: &str, reason: impl Into<String>) -> SpecError {
        SpecError::Invalid {
            field: self.name(),
            value: value.to_string(),
            reason: reason.into(),
            example: self.example(),
        }
    }

    fn unit(self, error: UnitError) -> SpecError {
        SpecError::Unit {
            field: self.name(),
            error,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

fn is_unlimited(v: &str) -> bool {
    matches!(v, "unlimited" | "inf" | "none")
}

fn parse_rate(f: Field, v: &str) -> Result<Option<u64>, SpecError> {
    if is_unlimited(v) {
        return Ok(None);
    }
    let bps = Rate::parse(v).map_err(|e| f.unit(e))?.0;
    // `Rate` is a float; the model needs whole bits per second.
    let whole = bps.round();
    if (bps - whole).abs() > 1e-3 {
        return Err(f.invalid(v, "not a whole number of bits per second"));
    }
    if whole > MAX_RATE_BPS as f64 {
        return Err(f.invalid(v, "above the largest rate, 1000Gbit"));
    }
    if whole < 1.0 {
        return Err(f.invalid(v, "below 1 bit/s"));
    }
    Ok(Some(whole as u64))
}

fn parse_ns(f: Field, v: &str) -> Result<u64, SpecError> {
    let d = parse_duration(v).map_err(|e| f.unit(e))?;
    match u64::try_from(d.as_nanos()) {
        Ok(ns) if ns <= MAX_DURATION_NS => Ok(ns),
        _ => Err(f.invalid(v, "longer than one day")),
    }
}

fn parse_probability(f: Field, v: &str) -> Result<f64, SpecError> {
    let (number, scale) = match v.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (v, 1.0),
    };
    let p = number
        .parse::<f64>()
        .map_err(|_| f.invalid(v, "not a probability"))?
        / scale;
    if !(0.0..=1.0).contains(&p) {
        return Err(f.invalid(v, "a probability must be between 0 and 1 (0% and 100%)"));
    }
    Ok(p)
}

fn parse_loss(v: &str) -> Result<Loss, SpecError> {
    let f = Field::Loss;
    if matches!(v, "none" | "off") {
        return Ok(Loss::None);
    }
    let Some(ge) = v.strip_prefix("ge:") else {
        return Ok(Loss::Bernoulli {
            p: parse_probability(f, v)?,
        });
    };
    let parts: Vec<&str> = ge.split('/').map(str::trim).collect();
    let [p_gb, p_bg, loss_good, loss_bad] = parts.as_slice() else {
        return Err(f.invalid(
            v,
            "Gilbert-Elliott needs four probabilities P_GB/P_BG/LOSS_GOOD/LOSS_BAD",
        ));
    };
    Ok(Loss::GilbertElliott {
        p_gb: parse_probability(f, p_gb)?,
        p_bg: parse_probability(f, p_bg)?,
        loss_good: parse_probability(f, loss_good)?,
        loss_bad: parse_probability(f, loss_bad)?,
    })
}

fn parse_queue_bytes(v: &str) -> Result<Option<u64>, SpecError> {
    let f = Field::Queue;
    if is_unlimited(v) {
        return Ok(None);
    }
    match Bytes::parse(v).map_err(|e| f.unit(e))?.0 {
        0 => Err(f.invalid(
            v,
            "a zero queue drops every packet; use unlimited for no bound",
        )),
        b if b > MAX_QUEUE_BYTES => Err(f.invalid(v, "above the largest bound, 1TiB")),
        b => Ok(Some(b)),
    }
}

fn parse_queue_packets(v: &str) -> Result<Option<usize>, SpecError> {
    let f = Field::QueuePackets;
    if is_unlimited(v) {
        return Ok(None);
    }
    match parse_count(v).map_err(|e| f.unit(e))? {
        0 => Err(f.invalid(
            v,
            "a zero queue drops every packet; use unlimited for no bound",
        )),
        n => usize::try_from(n)
            .map(Some)
            .map_err(|_| f.invalid(v, "too large")),
    }
}

fn parse_mtu(v: &str) -> Result<u32, SpecError> {
    let f = Field::Mtu;
    let b = Bytes::parse(v).map_err(|e| f.unit(e))?.0;
    match u32::try_from(b) {
        Ok(m) if (MIN_MTU..=MAX_MTU).contains(&m) => Ok(m),
        _ => Err(f.invalid(v, format!("must be from {MIN_MTU} to {MAX_MTU} bytes"))),
    }
}

fn parse_switch(v: &str) -> Result<bool, SpecError> {
    match v {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(Field::Reorder.invalid(v, "expected on or off")),
    }
}

/// `START+DURATION` or `every PERIOD for DURATION [from START]`.
fn parse_outage(v: &str) -> Result<Outage, SpecError> {
    let f = Field::Outage;
    // A duration that does not parse: the whole value in the error, then why.
    let ns = |part: &str| -> Result<u64, SpecError> {
        match parse_ns(f, part) {
            Ok(ns) => Ok(ns),
            Err(SpecError::Unit { error, .. }) => Err(f.invalid(v, error.to_string())),
            Err(SpecError::Invalid { reason, .. }) => {
                Err(f.invalid(v, format!("{part:?} is {reason}")))
            }
            Err(e) => Err(e),
        }
    };
    let words: Vec<&str> = v.split_whitespace().collect();
    let outage = match words.as_slice() {
        ["every", period, "for", duration] => {
            let period = ns(period)?;
            Outage::periodic(period, ns(duration)?, period)
        }
        ["every", period, "for", duration, "from", start] => {
            Outage::periodic(ns(period)?, ns(duration)?, ns(start)?)
        }
        _ => match v.split_once('+') {
            Some((start, duration)) if !v.starts_with("every") => {
                Outage::once(ns(start.trim())?, ns(duration.trim())?)
            }
            _ => {
                return Err(f.invalid(
                    v,
                    "expected START+DURATION (down from START after the link is set up, \
                     for DURATION) or every PERIOD for DURATION [from START]",
                ));
            }
        },
    };
    match outage.problem() {
        Some(reason) => Err(f.invalid(v, reason)),
        None => Ok(outage),
    }
}

fn format_outage(o: &Outage) -> String {
    match o.every_ns {
        None => format!("{}+{}", format_ns(o.start_ns), format_ns(o.duration_ns)),
        Some(p) => {
            let mut s = format!("every {} for {}", format_ns(p), format_ns(o.duration_ns));
            if o.start_ns != p {
                s.push_str(&format!(" from {}", format_ns(o.start_ns)));
            }
            s
        }
    }
}

impl LinkSpec {
    /// Parses a spec; see the module docs for the grammar.
    pub fn parse(s: &str) -> Result<LinkSpec, SpecError> {
        LinkSpec::parse_items(LinkSpec::default(), s, true)
    }

    /// The `field=value` items of `s` over `base`: each field given replaces base's
    /// (an outage adds to them). What follows a named link
    /// ([`LinkSpec::parse_direction`]).
    pub(crate) fn parse_onto(base: LinkSpec, s: &str) -> Result<LinkSpec, SpecError> {
        LinkSpec::parse_items(base, s, false)
    }

    fn parse_items(base: LinkSpec, s: &str, short_first: bool) -> Result<LinkSpec, SpecError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SpecError::Empty);
        }
        let mut spec = base;
        let mut seen = [false; Field::ALL.len()];
        let mut set = |f: Field| {
            if std::mem::replace(&mut seen[f.index()], true) {
                Err(SpecError::Duplicate { field: f.name() })
            } else {
                Ok(())
            }
        };
        for (i, item) in s.split(',').map(str::trim).enumerate() {
            let Some((key, value)) = item.split_once('=') else {
                if i > 0 || !short_first {
                    return Err(SpecError::NotAField {
                        part: item.to_string(),
                    });
                }
                let (rate, delay) = parse_short(item)?;
                if let Some(rate) = rate {
                    set(Field::Rate)?;
                    spec.rate_bps = rate;
                }
                if let Some(delay) = delay {
                    set(Field::Delay)?;
                    spec.delay_ns = delay;
                }
                continue;
            };
            let (key, v) = (key.trim(), value.trim());
            let f = Field::from_key(key).ok_or_else(|| SpecError::UnknownField {
                key: key.to_string(),
            })?;
            if !matches!(f, Field::Outage) {
                set(f)?;
            }
            match f {
                Field::Rate => spec.rate_bps = parse_rate(f, v)?,
                Field::Delay => spec.delay_ns = parse_ns(f, v)?,
                Field::Jitter => spec.jitter_ns = parse_ns(f, v)?,
                Field::Loss => spec.loss = parse_loss(v)?,
                Field::Queue => spec.queue_bytes = parse_queue_bytes(v)?,
                Field::QueuePackets => spec.queue_packets = parse_queue_packets(v)?,
                Field::Mtu => spec.mtu = parse_mtu(v)?,
                Field::Reorder => spec.reorder = parse_switch(v)?,
                Field::Outage => spec.outages.push(parse_outage(v)?),
            }
        }
        // A byte bound given alone is the only bound: keeping the default packet bound
        // beside it silently capped `queue=4MiB` at 1000 packets (~1.5 MB) on a fast link
        // (issue #19).
        if seen[Field::Queue.index()]
            && !seen[Field::QueuePackets.index()]
            && spec.queue_bytes.is_some()
        {
            spec.queue_packets = None;
        }
        if let Some(q) = spec.queue_bytes
            && q < u64::from(spec.mtu)
        {
            return Err(Field::Queue.invalid(
                &Bytes(q).to_string(),
                format!(
                    "smaller than the mtu ({}B), so every full-size packet would be dropped",
                    spec.mtu
                ),
            ));
        }
        Ok(spec)
    }

    /// The model's parameters for this spec, without a trace (load one with
    /// [`Trace::parse`](crate::Trace::parse) and set `trace`).
    pub fn to_params(&self) -> LinkParams {
        LinkParams {
            rate_bps: self.rate_bps,
            delay_ns: self.delay_ns,
            jitter_ns: self.jitter_ns,
            reorder: self.reorder,
            loss: self.loss,
            queue_bytes: self.queue_bytes,
            queue_packets: self.queue_packets,
            mtu: self.mtu,
            trace: None,
            outages: self.outages.clone(),
            paths: None,
        }
    }
}

/// `RATE/DELAY`, `RATE` or `DELAY`; `None` for what is absent.
type Short = (Option<Option<u64>>, Option<u64>);

fn parse_short(item: &str) -> Result<Short, SpecError> {
    // Whole item first: `1Gbit/s` is a rate, not `1Gbit` with delay `s`. A value whose
    // unit was understood but is out of range reports that, not the shape.
    match parse_rate(Field::Rate, item) {
        Ok(rate) => return Ok((Some(rate), None)),
        Err(e @ SpecError::Invalid { .. }) => return Err(e),
        Err(_) => {}
    }
    match parse_ns(Field::Delay, item) {
        Ok(delay) => return Ok((None, Some(delay))),
        Err(e @ SpecError::Invalid { .. }) => return Err(e),
        Err(_) => {}
    }
    match item.rsplit_once('/') {
        Some((rate, delay)) => Ok((
            Some(parse_rate(Field::Rate, rate.trim())?),
            Some(parse_ns(Field::Delay, delay.trim())?),
        )),
        None => Err(SpecError::Shape {
            part: item.to_string(),
        }),
    }
}

impl FromStr for LinkSpec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        LinkSpec::parse(s)
    }
}

/// `value / div` as an exact decimal, e.g. `(2400, 1000)` -> `2.4`.
fn decimal(value: u64, div: u64) -> String {
    let (int, frac) = (value / div, value % div);
    if frac == 0 {
        return int.to_string();
    }
    let width = div.ilog10() as usize;
    let frac = format!("{frac:0width$}");
    format!("{int}.{}", frac.trim_end_matches('0'))
}

/// The shortest exact form with a prefix (`2.4kbit`), checked to parse back, else bits.
fn format_rate(bps: u64) -> String {
    for (div, unit) in [
        (1_000_000_000, "Gbit"),
        (1_000_000, "Mbit"),
        (1_000, "kbit"),
    ] {
        if bps >= div {
            let s = format!("{}{unit}", decimal(bps, div));
            if parse_rate(Field::Rate, &s) == Ok(Some(bps)) {
                return s;
            }
            break;
        }
    }
    format!("{bps}bit")
}

/// The largest unit that keeps a digit before the point (`1.5s`, `500ms`), checked to
/// parse back, else nanoseconds.
fn format_ns(ns: u64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    for (div, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns >= div {
            let s = format!("{}{unit}", decimal(ns, div));
            if parse_ns(Field::Delay, &s) == Ok(ns) {
                return s;
            }
            break;
        }
    }
    format!("{ns}ns")
}

/// A percentage when it parses back exactly (`1%`), else the fraction (`0.0123`).
fn format_probability(p: f64) -> String {
    let pct = format!("{}%", p * 100.0);
    if parse_probability(Field::Loss, &pct) == Ok(p) {
        pct
    } else {
        p.to_string()
    }
}

impl fmt::Display for LinkSpec {
    /// The canonical form: `RATE/DELAY`, then the fields that differ from the defaults,
    /// e.g. `2.4kbit/500ms,loss=1%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = LinkSpec::default();
        match self.rate_bps {
            Some(r) => write!(f, "{}", format_rate(r))?,
            None => f.write_str("unlimited")?,
        }
        write!(f, "/{}", format_ns(self.delay_ns))?;
        if self.jitter_ns != d.jitter_ns {
            write!(f, ",jitter={}", format_ns(self.jitter_ns))?;
        }
        match self.loss {
            Loss::None => {}
            Loss::Bernoulli { p } => write!(f, ",loss={}", format_probability(p))?,
            Loss::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => write!(f, ",loss=ge:{p_gb}/{p_bg}/{loss_good}/{loss_bad}")?,
        }
        if self.queue_bytes != d.queue_bytes {
            match self.queue_bytes {
                Some(b) => write!(f, ",queue={}", Bytes(b))?,
                None => f.write_str(",queue=unlimited")?,
            }
        }
        // With a byte bound, a packet bound is written whenever there is one (alone, the
        // byte bound would parse back without it); without one, only if not the default.
        let packets_differ = if self.queue_bytes.is_some() {
            self.queue_packets.is_some()
        } else {
            self.queue_packets != d.queue_packets
        };
        if packets_differ {
            match self.queue_packets {
                Some(n) => write!(f, ",queue_packets={n}")?,
                None => f.write_str(",queue_packets=unlimited")?,
            }
        }
        if self.mtu != d.mtu {
            write!(f, ",mtu={}", self.mtu)?;
        }
        if self.reorder != d.reorder {
            f.write_str(",reorder=on")?;
        }
        for o in &self.outages {
            write!(f, ",outage={}", format_outage(o))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const MS: u64 = 1_000_000;

    fn p(s: &str) -> LinkSpec {
        match LinkSpec::parse(s) {
            Ok(spec) => spec,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    fn err(s: &str) -> String {
        match LinkSpec::parse(s) {
            Ok(spec) => panic!("{s:?} parsed as {spec:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn short_forms() {
        let s = p("2400bit/500ms");
        assert_eq!((s.rate_bps, s.delay_ns), (Some(2400), 500 * MS));
        assert_eq!(
            LinkSpec {
                rate_bps: Some(2400),
                delay_ns: 500 * MS,
                ..LinkSpec::default()
            },
            s
        );
        let s = p("2400bit");
        assert_eq!((s.rate_bps, s.delay_ns), (Some(2400), 0));
        // A bare duration is a delay on an unlimited link.
        let s = p("500ms");
        assert_eq!((s.rate_bps, s.delay_ns), (None, 500 * MS));
        assert_eq!(p("0").delay_ns, 0);
        // `/s` belongs to the rate.
        assert_eq!(p("1Gbit/s").rate_bps, Some(1_000_000_000));
        let s = p("1Gbit/s/10ms");
        assert_eq!((s.rate_bps, s.delay_ns), (Some(1_000_000_000), 10 * MS));
        assert_eq!(p("19.2kbit/1s").rate_bps, Some(19_200));
        assert_eq!(p("unlimited/10ms").rate_bps, None);
        assert_eq!(p(" 10Mbps / 5ms ").rate_bps, Some(10_000_000));
        // The short form may be followed by fields.
        let s = p("2400bit/500ms,loss=1%");
        assert_eq!(s.loss, Loss::Bernoulli { p: 0.01 });
    }

    #[test]
    fn explicit_form() {
        let s = p("rate=2400bit,delay=500ms,jitter=10ms,loss=1%,queue=64KiB,\
                   queue_packets=1000,mtu=1500,reorder=on");
        assert_eq!(
            s,
            LinkSpec {
                rate_bps: Some(2400),
                delay_ns: 500 * MS,
                jitter_ns: 10 * MS,
                reorder: true,
                loss: Loss::Bernoulli { p: 0.01 },
                queue_bytes: Some(65_536),
                queue_packets: Some(1000),
                mtu: 1500,
                outages: vec![],
            }
        );
        assert_eq!(p("loss=0.01").loss, Loss::Bernoulli { p: 0.01 });
        assert_eq!(p("loss=none").loss, Loss::None);
        assert_eq!(
            p("loss=ge:0.01/0.3/0/0.5").loss,
            Loss::GilbertElliott {
                p_gb: 0.01,
                p_bg: 0.3,
                loss_good: 0.0,
                loss_bad: 0.5
            }
        );
        assert_eq!(p("rate=unlimited").rate_bps, None);
        assert_eq!(p("queue=unlimited").queue_bytes, None);
        assert_eq!(p("queue_bytes=2KiB").queue_bytes, Some(2048));
        assert_eq!(p("queue_packets=unlimited").queue_packets, None);
        assert_eq!(p("queue_packets=10k").queue_packets, Some(10_000));
        assert!(!p("reorder=off").reorder);
        assert_eq!(p(" rate = 1Mbit , delay = 1ms ").rate_bps, Some(1_000_000));
    }

    #[test]
    fn defaults() {
        let d = LinkSpec::default();
        assert_eq!(
            (d.rate_bps, d.delay_ns, d.jitter_ns, d.loss),
            (None, 0, 0, Loss::None)
        );
        assert_eq!((d.queue_bytes, d.queue_packets), (None, Some(1000)));
        assert_eq!((d.mtu, d.reorder), (1500, false));
        let params = p("2400bit/500ms").to_params();
        assert_eq!(params.mtu, 1500);
        assert_eq!(params.queue_packets, Some(1000));
        assert!(params.trace.is_none());
    }

    #[test]
    fn errors_name_the_field_and_show_an_example() {
        let cases = [
            ("rate=fast", ["link rate", "2400bit"]),
            ("rate=2400", ["link rate", "needs a unit"]),
            ("rate=0bit", ["link rate", "positive"]),
            ("rate=2400.5bit", ["rate=", "whole number"]),
            ("rate=2000Gbit", ["rate=", "1000Gbit"]),
            ("delay=5", ["link delay", "needs a unit"]),
            ("delay=2d", ["link delay", "500ms"]),
            ("delay=48h", ["delay=", "one day"]),
            ("jitter=x", ["link jitter", "500ms"]),
            ("loss=2", ["loss=", "between 0 and 1"]),
            ("loss=150%", ["loss=", "1%"]),
            ("loss=lots", ["loss=", "ge:0.01/0.3/0/0.5"]),
            ("loss=ge:0.1/0.2", ["loss=", "four probabilities"]),
            ("loss=ge:0.1/0.2/0/2", ["loss=", "between 0 and 1"]),
            ("queue=64XB", ["link queue", "64kB"]),
            ("queue=0", ["queue=", "unlimited"]),
            ("queue=1KiB", ["queue=", "mtu"]),
            ("queue_packets=0", ["queue_packets=", "1000"]),
            ("queue_packets=1.5", ["link queue_packets", "10k"]),
            ("mtu=70000", ["mtu=", "65535"]),
            ("mtu=10", ["mtu=", "1500"]),
            ("reorder=maybe", ["reorder=", "on"]),
            ("speed=1Gbit", ["speed", "rate=2400bit"]),
            ("rate=1Gbit,rate=2Gbit", ["rate", "twice"]),
            ("1Gbit/10ms,delay=5ms", ["delay", "twice"]),
            ("2400bit/500ms,1ms", ["field=value", "2400bit/500ms"]),
            ("fast", ["\"fast\"", "2400bit/500ms"]),
            ("2400bit/5", ["link delay", "needs a unit"]),
            ("24OObit/5ms", ["link rate", "2400bit"]),
            ("", ["empty", "2400bit/500ms"]),
            ("   ", ["empty", "2400bit/500ms"]),
        ];
        for (input, needles) in cases {
            let e = err(input);
            for n in needles {
                assert!(e.contains(n), "{input:?}: {e:?} lacks {n:?}");
            }
        }
    }

    #[test]
    fn outages() {
        const S: u64 = 1_000_000_000;
        let s = p("rate=2400bit,delay=0,outage=30s+10s");
        assert_eq!(s.outages, [Outage::once(30 * S, 10 * S)]);
        assert_eq!(s.to_params().outages, s.outages);
        // Repeatable, in the order given, after the short form too.
        let s = p("2400bit/500ms,outage=30s+10s,loss=1%,outage = 60s + 5s");
        assert_eq!(
            s.outages,
            [Outage::once(30 * S, 10 * S), Outage::once(60 * S, 5 * S)]
        );
        assert_eq!(p("outage=0+1.5s").outages, [Outage::once(0, 1500 * MS)]);
        assert_eq!(
            p("outage=every 60s for 10s").outages,
            [Outage::periodic(60 * S, 10 * S, 60 * S)]
        );
        assert_eq!(
            p("outage= every  1m for 500ms  from 0 ").outages,
            [Outage::periodic(60 * S, 500 * MS, 0)]
        );
        assert!(p("1Gbit").outages.is_empty());
        assert_eq!(
            p("rate=2400bit,delay=0,outage=30s+10s").to_string(),
            "2.4kbit/0s,outage=30s+10s"
        );
        assert_eq!(
            p("outage=1m+10s,outage=every 60s for 10s,outage=every 1h for 1s from 90s").to_string(),
            "unlimited/0s,outage=60s+10s,outage=every 60s for 10s,\
             outage=every 3600s for 1s from 90s"
        );
        assert_eq!(
            p("outage=0+100us").to_string(),
            "unlimited/0s,outage=0s+100us"
        );
    }

    #[test]
    fn outage_errors_name_the_value() {
        let cases: &[(&str, &[&str])] = &[
            ("outage=30s", &["outage=\"30s\"", "START+DURATION"]),
            ("outage=30s-10s", &["outage=\"30s-10s\"", "START+DURATION"]),
            (
                "outage=30x+10s",
                &["outage=\"30x+10s\"", "\"30x\"", "unknown unit"],
            ),
            (
                "outage=30s+10",
                &["outage=\"30s+10\"", "\"10\"", "needs a unit"],
            ),
            ("outage=30s+", &["outage=\"30s+\"", "expected a number"]),
            ("outage=30s+0s", &["outage=\"30s+0s\"", "duration 0"]),
            (
                "outage=48h+1s",
                &["outage=\"48h+1s\"", "\"48h\" is longer than one day"],
            ),
            (
                "outage=every 10s for 10s",
                &["every 10s for 10s", "never comes back"],
            ),
            (
                "outage=every 0 for 1s",
                &["every 0 for 1s", "never comes back"],
            ),
            (
                "outage=every 10s",
                &["outage=\"every 10s\"", "every PERIOD for DURATION"],
            ),
            (
                "outage=every 10s+1s",
                &["every 10s+1s", "every PERIOD for DURATION"],
            ),
            ("outage=every 60s for 10s from", &["from\"", "every PERIOD"]),
            ("outage=every 6x for 1s", &["\"6x\"", "unknown unit"]),
            ("outage=", &["outage=\"\"", "START+DURATION"]),
        ];
        for &(input, needles) in cases {
            let e = err(input);
            for n in needles {
                assert!(e.contains(n), "{input:?}: {e:?} lacks {n:?}");
            }
            assert!(e.contains("30s+10s"), "{input:?}: {e:?} shows no example");
        }
        let e = err("outages=30s+10s");
        assert!(e.contains("\"outages\"") && e.contains("outage ("), "{e}");
    }

    #[test]
    fn a_byte_bound_alone_is_the_only_bound() {
        let alone = p("1Gbit/10ms,queue=4MiB");
        assert_eq!(alone.queue_bytes, Some(4 << 20));
        assert_eq!(
            alone.queue_packets, None,
            "the default 1000 packets must not stay"
        );
        let both = p("1Gbit/10ms,queue=4MiB,queue_packets=1000");
        assert_eq!(both.queue_packets, Some(1000));
        assert_eq!(p(&both.to_string()), both, "{both}");
        assert_eq!(p(&alone.to_string()), alone, "{alone}");
        // Without a byte bound the default packet bound stays.
        assert_eq!(p("1Gbit/10ms").queue_packets, Some(DEFAULT_QUEUE_PACKETS));
        assert_eq!(
            p("queue=unlimited").queue_packets,
            Some(DEFAULT_QUEUE_PACKETS)
        );
    }

    #[test]
    fn display_is_canonical() {
        assert_eq!(p("2400bit/500ms").to_string(), "2.4kbit/500ms");
        assert_eq!(p("500ms").to_string(), "unlimited/500ms");
        assert_eq!(p("1Gbit").to_string(), "1Gbit/0s");
        assert_eq!(
            p("rate=2400bit,delay=1.5s,jitter=10ms,loss=1%,queue=64KiB,\
               queue_packets=unlimited,mtu=9000,reorder=on")
            .to_string(),
            "2.4kbit/1.5s,jitter=10ms,loss=1%,queue=64KiB,mtu=9000,reorder=on"
        );
        assert_eq!(
            p("loss=ge:0.01/0.3/0/0.5").to_string(),
            "unlimited/0s,loss=ge:0.01/0.3/0/0.5"
        );
        assert_eq!(format_rate(1_234_567), "1.234567Mbit");
        assert_eq!(format_ns(1_000_001), "1.000001ms");
        assert_eq!(format_ns(999), "999ns");
    }

    fn probability() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(1.0),
            (0u32..=100).prop_map(|p| f64::from(p) / 100.0),
            0.0..=1.0f64,
        ]
    }

    fn outage_strategy() -> impl Strategy<Value = Outage> {
        let positive = prop_oneof![1u64..=MAX_DURATION_NS, (1u64..=1000).prop_map(|s| s * MS)];
        prop_oneof![
            (0u64..=MAX_DURATION_NS, positive.clone()).prop_map(|(s, d)| Outage::once(s, d)),
            (
                positive,
                1u64..=MAX_DURATION_NS,
                prop::option::of(0u64..=MAX_DURATION_NS)
            )
                .prop_filter_map("period > duration", |(d, p, from)| {
                    (p > d).then(|| Outage::periodic(p, d, from.unwrap_or(p)))
                }),
        ]
    }

    fn spec_strategy() -> impl Strategy<Value = LinkSpec> {
        let loss = prop_oneof![
            Just(Loss::None),
            probability().prop_map(|p| Loss::Bernoulli { p }),
            (probability(), probability(), probability(), probability()).prop_map(
                |(p_gb, p_bg, loss_good, loss_bad)| Loss::GilbertElliott {
                    p_gb,
                    p_bg,
                    loss_good,
                    loss_bad
                }
            ),
        ];
        let rate = prop_oneof![
            1u64..=MAX_RATE_BPS,
            (1u64..=1000).prop_map(|r| r * 1000),
            Just(2400),
            Just(MAX_RATE_BPS),
        ];
        let duration = prop_oneof![
            0u64..=MAX_DURATION_NS,
            (0u64..=1000).prop_map(|ms| ms * MS),
            0u64..=10_000,
        ];
        (
            prop::option::of(rate),
            duration.clone(),
            duration,
            any::<bool>(),
            loss,
            MIN_MTU..=MAX_MTU,
            prop::option::of(0u64..=MAX_QUEUE_BYTES),
            prop::option::of(1usize..=1_000_000),
            prop::collection::vec(outage_strategy(), 0..3),
        )
            .prop_map(
                |(
                    rate_bps,
                    delay_ns,
                    jitter_ns,
                    reorder,
                    loss,
                    mtu,
                    queue,
                    queue_packets,
                    outages,
                )| {
                    LinkSpec {
                        rate_bps,
                        delay_ns,
                        jitter_ns,
                        reorder,
                        loss,
                        queue_bytes: queue.map(|q| q.max(u64::from(mtu))),
                        queue_packets,
                        mtu,
                        outages,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn display_round_trips_through_parse(spec in spec_strategy()) {
            let text = spec.to_string();
            prop_assert_eq!(LinkSpec::parse(&text), Ok(spec), "{}", text);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = LinkSpec::parse(&s);
        }

        #[test]
        fn parse_never_panics_on_near_misses(
            s in "(rate|delay|loss|queue|mtu|jitter|reorder|outage|x)=[0-9.%a-zA-Z:/+ ]{0,12}(,[a-z_]{1,8}=[0-9.a-z%/:+ ]{0,8}){0,3}"
        ) {
            if let Ok(spec) = LinkSpec::parse(&s) {
                prop_assert_eq!(LinkSpec::parse(&spec.to_string()), Ok(spec));
            }
        }
    }
}
