//! `tcp.cc`: the TCP congestion control of a case, set on every route of both lab hosts
//! (`ip route ... congctl NAME`), so every connection across the link gets it, real
//! peers' included; and what each record says the data connection used.
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
use wirebench_protocol::params::TCP_CC;

const SYSCTL: &str = "net.ipv4.tcp_congestion_control";

/// The congestion control a case asks for, if any.
pub(crate) fn asked(case: &Case) -> Option<&str> {
    case.text(&TCP_CC)
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

/// A route as `ip route replace` arguments without any `congctl`, and the congestion
/// control it names, if any.
type Route = (Vec<String>, Option<String>);

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
    let mut cc = None;
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        match w {
            "congctl" => {
                // `congctl [lock] NAME`
                let mut n = words.next();
                if n == Some("lock") {
                    n = words.next();
                }
                cc = n.map(str::to_string);
            }
            w if SHOWN_ONLY.contains(&w) => {}
            w => args.push(w.to_string()),
        }
    }
    (args, cc)
}

/// The congestion control the client host gives a new connection across the link: its
/// routes' (`tcp.cc` set), else its namespace's default, with which of the two it is.
pub(crate) fn client_effective(lab: &Lab) -> Result<(String, &'static str), RunError> {
    let ns = lab.client().name();
    if let Some(cc) = routes(ns)?.into_iter().find_map(|(_, cc)| cc) {
        return Ok((cc, "client host route"));
    }
    let out = wirebench_lab::netns::run_in(ns, "sysctl", &["-n", SYSCTL])?;
    Ok((out.trim().to_string(), "client host default"))
}

/// Puts `want` on every route of both lab hosts (none: their routes lose it, and the
/// hosts' default applies again), loading its module first when the kernel lacks it, and
/// reads the routes back: a value that did not take is an error.
pub(crate) fn set(lab: &Lab, want: Option<&str>) -> Result<(), RunError> {
    if let Some(w) = want {
        if !wirebench_net::sock::congestion_available()
            .iter()
            .any(|a| a == w)
        {
            wirebench_lab::netns::run("modprobe", &[&format!("tcp_{w}")])?;
        }
    }
    for ns in [lab.client().name(), lab.server().name()] {
        for (args, cc) in routes(ns)? {
            if cc.as_deref() == want {
                continue;
            }
            let mut all: Vec<&str> = vec!["-n", ns, "route", "replace"];
            all.extend(args.iter().map(String::as_str));
            if let Some(w) = want {
                all.extend(["congctl", w]);
            }
            wirebench_lab::netns::run("ip", &all)?;
        }
        for (args, cc) in routes(ns)? {
            if cc.as_deref() != want {
                return Err(RunError::Usage(format!(
                    "--tcp-cc {}: lab host {ns}'s route `{}` has congctl {} after setting it",
                    want.unwrap_or("(none)"),
                    args.join(" "),
                    cc.as_deref().unwrap_or("(none)")
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
    fn routes_parse_to_replace_arguments() {
        let (args, cc) = parse_route(
            "198.18.0.0/24 dev wbtun0 proto kernel scope link src 198.18.0.1 linkdown congctl lock cubic",
        );
        assert_eq!(
            args.join(" "),
            "198.18.0.0/24 dev wbtun0 proto kernel scope link src 198.18.0.1"
        );
        assert_eq!(cc.as_deref(), Some("cubic"));
        let (_, cc) = parse_route("198.18.1.0/24 dev wbtun1 scope link");
        assert_eq!(cc, None);
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
