//! The TCP knobs a case sets on every route of both lab hosts, so that every connection
//! across the link gets them, real peers' included: `tcp.cc` (`ip route ... congctl
//! NAME`), `tcp.initcwnd` and `tcp.initrwnd` (`initcwnd N`, `initrwnd N`, RFC 6928's
//! initial window and its receive side); and as each lab host's own sysctls,
//! `tcp.rmem` and `tcp.wmem` (the largest buffers a connection may grow to); and what
//! each record says the data connection used.
//!
//! Why routes rather than `net.ipv4.tcp_congestion_control`: that default is per network
//! namespace, but outside the initial one the kernel lets it name only the algorithms in
//! `net.ipv4.tcp_allowed_congestion_control` (here reno and bbr: cubic is refused with
//! EPERM), a list for the whole machine that a benchmark must not widen. A route's
//! `congctl` has no such limit, and the kernel applies it to both ends: to a connection
//! when it is opened and to one a listener accepts (even a listener made before the route
//! changed, such as raw's run-long reference server).
//!
//! Only in a lab: on loopback there are no lab routes, and the machine's own default must
//! not change.

use crate::RunError;
use wirebench_lab::Lab;
use wirebench_model::Record;
use wirebench_protocol::Case;
use wirebench_protocol::params::{
    BUFFER_MIN, INIT_WINDOW_MAX, TCP_CC, TCP_INITCWND, TCP_INITRWND, TCP_RMEM, TCP_WMEM,
};

const SYSCTL: &str = "net.ipv4.tcp_congestion_control";

/// The congestion control a case asks for, if any.
pub(crate) fn asked(case: &Case) -> Option<&str> {
    case.text(&TCP_CC)
}

/// What a route carries of the knobs: each `None` where the kernel's default applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Knobs {
    pub cc: Option<String>,
    pub initcwnd: Option<u64>,
    pub initrwnd: Option<u64>,
}

impl Knobs {
    /// The knobs a case asks for.
    pub(crate) fn of(case: &Case) -> Knobs {
        Knobs {
            cc: asked(case).map(str::to_string),
            initcwnd: case.count(&TCP_INITCWND),
            initrwnd: case.count(&TCP_INITRWND),
        }
    }

    /// As `ip route replace` arguments.
    fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(cc) = &self.cc {
            a.extend(["congctl".to_string(), cc.clone()]);
        }
        for (word, n) in [("initcwnd", self.initcwnd), ("initrwnd", self.initrwnd)] {
            if let Some(n) = n {
                a.extend([word.to_string(), n.to_string()]);
            }
        }
        a
    }

    /// The initial windows for the record's `transport`, as the routes carry them.
    pub(crate) fn record_windows(&self, record: &mut Record) {
        for (name, n) in [
            (TCP_INITCWND.name, self.initcwnd),
            (TCP_INITRWND.name, self.initrwnd),
        ] {
            if let Some(n) = n {
                record.transport.insert(name.into(), n.into());
            }
        }
    }
}

/// The largest buffers a case asks of both lab hosts, in bytes (`None`: the machine's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Buffers {
    pub rmem: Option<u64>,
    pub wmem: Option<u64>,
}

/// A buffer sysctl's three values: min, default and max (tcp(7)).
type Triple = [u64; 3];

impl Buffers {
    pub(crate) fn of(case: &Case) -> Buffers {
        Buffers {
            rmem: case.bytes(&TCP_RMEM),
            wmem: case.bytes(&TCP_WMEM),
        }
    }

    /// Each knob with its sysctl.
    fn each(&self) -> [(&'static str, &'static str, Option<u64>); 2] {
        [
            (TCP_RMEM.name, "net.ipv4.tcp_rmem", self.rmem),
            (TCP_WMEM.name, "net.ipv4.tcp_wmem", self.wmem),
        ]
    }

    /// The buffers for the record's `transport`, as both lab hosts' sysctls were read
    /// back with them.
    pub(crate) fn record(&self, record: &mut Record) {
        for (name, _, max) in self.each() {
            if let Some(max) = max {
                record.transport.insert(name.into(), max.into());
            }
        }
    }
}

/// A buffer sysctl as the kernel prints it (`4096\t131072\t6291456`).
fn parse_triple(text: &str) -> Option<Triple> {
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    v.try_into().ok()
}

/// What a lab host's sysctl should hold: this machine's own (`machine`, which a new
/// network namespace starts from), or its min with `max` as max and the default lowered
/// to it when above.
fn wanted(machine: Triple, max: Option<u64>) -> Triple {
    match max {
        Some(max) => [machine[0].min(max), machine[1].min(max), max],
        None => machine,
    }
}

/// Puts `want` in both lab hosts' `net.ipv4.tcp_rmem` and `tcp_wmem` (none: this
/// machine's values, which the runner's own network namespace holds), and reads them
/// back: a value that did not take is an error.
pub(crate) fn set_buffers(lab: &Lab, want: &Buffers) -> Result<(), RunError> {
    for (_, sysctl, max) in want.each() {
        let path = format!("/proc/sys/{}", sysctl.replace('.', "/"));
        let machine = std::fs::read_to_string(&path)
            .ok()
            .as_deref()
            .and_then(parse_triple)
            .ok_or_else(|| RunError::Usage(format!("cannot read {path}")))?;
        let want = wanted(machine, max);
        let text = |t: Triple| format!("{} {} {}", t[0], t[1], t[2]);
        for ns in [lab.client().name(), lab.server().name()] {
            let read = || -> Result<Option<Triple>, RunError> {
                let out = wirebench_lab::netns::run_in(ns, "sysctl", &["-n", sysctl])?;
                Ok(parse_triple(&out))
            };
            if read()? == Some(want) {
                continue;
            }
            let arg = format!("{sysctl}={}", text(want));
            wirebench_lab::netns::run_in(ns, "sysctl", &["-q", "-w", &arg])?;
            let got = read()?;
            if got != Some(want) {
                return Err(RunError::Usage(format!(
                    "lab host {ns}'s {sysctl} is {} after setting {}",
                    got.map_or("unreadable".to_string(), text),
                    text(want)
                )));
            }
        }
    }
    Ok(())
}

/// Refuses a buffer on loopback (the machine's own sysctls) or below the kernel's page.
fn check_buffers(case: &Case, lab: bool) -> Result<(), RunError> {
    for spec in [&TCP_RMEM, &TCP_WMEM] {
        let Some(n) = case.bytes(spec) else { continue };
        let flag = format!("--{}", spec.name.replace('.', "-"));
        if !lab {
            return Err(RunError::Usage(format!(
                "case {}: {flag} {n} needs an emulated link (add --link ..., e.g. --link \
                 20Mbit/300ms): it is set in the lab's two hosts, and on loopback that would \
                 change this machine's own net.ipv4 buffers",
                case.index
            )));
        }
        if n < BUFFER_MIN {
            return Err(RunError::Usage(format!(
                "case {}: {flag} {n}: give at least {BUFFER_MIN} bytes (one page, the kernel's \
                 own minimum)",
                case.index
            )));
        }
    }
    Ok(())
}

/// Refuses an initial window on loopback (no lab routes to carry it) or out of range.
fn check_windows(case: &Case, lab: bool) -> Result<(), RunError> {
    for spec in [&TCP_INITCWND, &TCP_INITRWND] {
        let Some(n) = case.count(spec) else { continue };
        let flag = format!("--{}", spec.name.replace('.', "-"));
        if !lab {
            return Err(RunError::Usage(format!(
                "case {}: {flag} {n} needs an emulated link (add --link ..., e.g. --link \
                 10Mbit/50ms): it is set on the routes of the lab's two hosts, and on loopback \
                 that would change this machine's own",
                case.index
            )));
        }
        if !(1..=INIT_WINDOW_MAX).contains(&n) {
            return Err(RunError::Usage(format!(
                "case {}: {flag} {n}: give 1 to {INIT_WINDOW_MAX} segments (unset it for the \
                 kernel's own)",
                case.index
            )));
        }
    }
    Ok(())
}

/// Refuses, before anything starts, a `tcp.cc` that cannot be had: on loopback, or an
/// algorithm the kernel neither has nor can load (`available`: the kernel's list;
/// `loadable`: whether `tcp_NAME` can be loaded).
pub(crate) fn check<'a>(
    cases: impl Iterator<Item = &'a Case>,
    lab: bool,
    available: &[String],
    loadable: &dyn Fn(&str) -> bool,
) -> Result<(), RunError> {
    let mut seen: Vec<&str> = Vec::new();
    for c in cases {
        check_windows(c, lab)?;
        check_buffers(c, lab)?;
        let Some(want) = asked(c) else { continue };
        if !lab {
            return Err(RunError::Usage(format!(
                "case {}: --tcp-cc {want} needs an emulated link (add --link ..., e.g. \
                 --link 10Mbit/5ms): it is set as the default of the lab's two hosts, and on \
                 loopback that would change this machine's own default",
                c.index
            )));
        }
        if seen.contains(&want) {
            continue;
        }
        seen.push(want);
        if !available.iter().any(|a| a == want) && !loadable(want) {
            return Err(RunError::Usage(format!(
                "case {}: --tcp-cc {want}: this kernel has no such congestion control and no \
                 module tcp_{want} to load; net.ipv4.tcp_available_congestion_control: {}",
                c.index,
                available.join(" ")
            )));
        }
    }
    Ok(())
}

/// Whether `modprobe` finds module `tcp_NAME` (a dry run: nothing is loaded).
pub(crate) fn loadable(name: &str) -> bool {
    std::process::Command::new("modprobe")
        .args(["-n", "-q", &format!("tcp_{name}")])
        .status()
        .is_ok_and(|s| s.success())
}

/// Words `ip route show` prints that `ip route replace` does not take.
const SHOWN_ONLY: &[&str] = &["linkdown", "dead"];

/// A route as `ip route replace` arguments without the knobs, and the knobs it carries.
type Route = (Vec<String>, Knobs);

/// The main table's routes of a lab host.
fn routes(ns: &str) -> Result<Vec<Route>, RunError> {
    let out = wirebench_lab::netns::run("ip", &["-n", ns, "route", "show"])?;
    Ok(out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(parse_route)
        .collect())
}

fn parse_route(line: &str) -> Route {
    let mut args = Vec::new();
    let mut knobs = Knobs::default();
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        match w {
            "congctl" | "initcwnd" | "initrwnd" => {
                // `congctl [lock] NAME`, `initcwnd [lock] N`
                let mut v = words.next();
                if v == Some("lock") {
                    v = words.next();
                }
                match w {
                    "congctl" => knobs.cc = v.map(str::to_string),
                    "initcwnd" => knobs.initcwnd = v.and_then(|n| n.parse().ok()),
                    _ => knobs.initrwnd = v.and_then(|n| n.parse().ok()),
                }
            }
            w if SHOWN_ONLY.contains(&w) => {}
            w => args.push(w.to_string()),
        }
    }
    (args, knobs)
}

/// The congestion control the client host gives a new connection across the link: its
/// routes' (`tcp.cc` set), else its namespace's default, with which of the two it is.
pub(crate) fn client_effective(lab: &Lab) -> Result<(String, &'static str), RunError> {
    let ns = lab.client().name();
    if let Some(cc) = routes(ns)?.into_iter().find_map(|(_, k)| k.cc) {
        return Ok((cc, "client host route"));
    }
    let out = wirebench_lab::netns::run_in(ns, "sysctl", &["-n", SYSCTL])?;
    Ok((out.trim().to_string(), "client host default"))
}

/// Puts `want` on every route of both lab hosts (a knob it leaves unset: their routes
/// lose it, and the kernel's default applies again), loading a congestion control's
/// module first when the kernel lacks it, and reads the routes back: a value that did
/// not take is an error.
pub(crate) fn set(lab: &Lab, want: &Knobs) -> Result<(), RunError> {
    if let Some(w) = &want.cc {
        if !wirebench_net::sock::congestion_available()
            .iter()
            .any(|a| a == w)
        {
            wirebench_lab::netns::run("modprobe", &[&format!("tcp_{w}")])?;
        }
    }
    let extra = want.args();
    for ns in [lab.client().name(), lab.server().name()] {
        for (args, knobs) in routes(ns)? {
            if &knobs == want {
                continue;
            }
            let mut all: Vec<&str> = vec!["-n", ns, "route", "replace"];
            all.extend(args.iter().chain(&extra).map(String::as_str));
            wirebench_lab::netns::run("ip", &all)?;
        }
        for (args, knobs) in routes(ns)? {
            if &knobs != want {
                return Err(RunError::Usage(format!(
                    "lab host {ns}'s route `{}` carries {:?} after setting {:?}",
                    args.join(" "),
                    knobs.args().join(" "),
                    extra.join(" ")
                )));
            }
        }
    }
    Ok(())
}

/// What the record says about the data connection's congestion control: the socket's
/// own answer when the workload read it, else what the client host gives new connections
/// (`client`: the congestion control and where it comes from). An answer that
/// differs from what was asked fails the case (returned as its error).
pub(crate) fn record(
    record: &mut Record,
    asked: Option<&str>,
    socket: Option<&str>,
    client: Option<(&str, &str)>,
) -> Result<(), String> {
    let (cc, from) = match (socket, client) {
        (Some(s), _) => (s, "socket"),
        (None, Some(c)) => c,
        (None, None) => return Ok(()),
    };
    record.transport.insert("tcp.cc".into(), cc.into());
    record.transport.insert("tcp.cc.from".into(), from.into());
    match asked {
        Some(a) if a != cc => Err(format!(
            "asked for congestion control {a}, but the data connection reports {cc} ({from})"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_protocol::params::WORKLOAD;

    fn case(index: usize, cc: Option<&str>) -> Case {
        let mut point = vec![("workload".to_string(), WORKLOAD.parse("stream").unwrap())];
        if let Some(cc) = cc {
            point.push(("tcp.cc".to_string(), TCP_CC.parse(cc).unwrap()));
        }
        Case {
            index,
            point,
            ignored: Vec::new(),
            runs: 1,
        }
    }

    #[test]
    fn refusals_name_the_way_out() {
        let have = vec!["reno".to_string(), "cubic".to_string()];
        let none = |_: &str| false;
        let cases = [
            case(1, None),
            case(2, Some("cubic")),
            case(3, Some("nosuch")),
        ];
        assert_eq!(asked(&cases[1]), Some("cubic"));
        assert_eq!(asked(&cases[0]), None);
        // No tcp.cc: nothing to refuse, lab or not.
        check(cases[..1].iter(), false, &have, &none).unwrap();
        let e = check(cases[1..2].iter(), false, &have, &none).unwrap_err();
        assert!(e.to_string().contains("needs an emulated link"), "{e}");
        check(cases[1..2].iter(), true, &have, &none).unwrap();
        let e = check(cases.iter(), true, &have, &none).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("case 3") && e.contains("reno cubic"), "{e}");
        // A module that can be loaded is as good as one loaded.
        check(cases.iter(), true, &have, &|n| n == "nosuch").unwrap();
    }

    fn blank() -> Record {
        serde_json::from_value(serde_json::json!({
            "schema": 1, "scenario": "t", "case": 1, "repeat": 1, "status": "ok",
            "params": {}, "labels": {}, "metrics": {},
            "seed": 1, "started": "", "wirebench": "0", "command": [],
            "host": {"hostname": "", "os": "", "kernel": "", "cpu": "", "cpus": 1,
                     "memory_bytes": 0}
        }))
        .unwrap()
    }

    #[test]
    fn buffers_keep_the_machines_min_and_lower_its_default() {
        let machine = parse_triple("4096\t131072\t33554432\n").unwrap();
        assert_eq!(machine, [4096, 131072, 33554432]);
        assert_eq!(wanted(machine, None), machine);
        assert_eq!(wanted(machine, Some(65536)), [4096, 65536, 65536]);
        assert_eq!(wanted(machine, Some(1 << 22)), [4096, 131072, 1 << 22]);
        assert_eq!(parse_triple("4096 131072"), None);
    }

    #[test]
    fn routes_parse_to_replace_arguments() {
        let (args, k) = parse_route(
            "198.18.0.0/24 dev wbtun0 proto kernel scope link src 198.18.0.1 linkdown initcwnd 4 initrwnd lock 40 congctl lock cubic",
        );
        assert_eq!(
            args.join(" "),
            "198.18.0.0/24 dev wbtun0 proto kernel scope link src 198.18.0.1"
        );
        let want = Knobs {
            cc: Some("cubic".into()),
            initcwnd: Some(4),
            initrwnd: Some(40),
        };
        assert_eq!(k, want);
        assert_eq!(
            want.args().join(" "),
            "congctl cubic initcwnd 4 initrwnd 40"
        );
        let (_, k) = parse_route("198.18.1.0/24 dev wbtun1 scope link");
        assert_eq!(k, Knobs::default());
        assert!(k.args().is_empty());
    }

    #[test]
    fn records_say_where_the_answer_came_from() {
        let mut r = blank();
        record(&mut r, Some("cubic"), Some("cubic"), Some(("bbr", "x"))).unwrap();
        assert_eq!(r.transport["tcp.cc"], "cubic");
        assert_eq!(r.transport["tcp.cc.from"], "socket");
        let mut r = blank();
        record(&mut r, None, None, Some(("bbr", "client host default"))).unwrap();
        assert_eq!(r.transport["tcp.cc.from"], "client host default");
        let mut r = blank();
        let e = record(&mut r, Some("reno"), Some("cubic"), None).unwrap_err();
        assert!(e.contains("reno") && e.contains("cubic"), "{e}");
        let mut r = blank();
        record(&mut r, None, None, None).unwrap();
        assert!(r.transport.is_empty());
    }
}
