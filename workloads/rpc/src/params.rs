//! Parameters every request/response protocol reads: the open-loop request rate, the
//! number of connections and the server to target. Each plugin lists these same specs among its own, so a raw or
//! XMPP case drops them (with a note) instead of silently running closed-loop.

use wirebench_model::Kind;
use wirebench_protocol::params::ParamSpec;

pub const RATE: ParamSpec = ParamSpec {
    name: "rate",
    kind: Kind::Custom {
        what: "request rate",
        check: check_rate,
    },
    default: "",
    workloads: &["pingpong", "connect"],
    help: "open loop: send the ping-pong's requests (connect: start the connections) on a fixed schedule at this rate (10k/s, 500/s, 60/min), each timed from its intended send (connect: from its start, with rate.send_lag); unset: closed loop",
    words: "request rate",
};

pub const CONNECTIONS: ParamSpec = ParamSpec {
    name: "connections",
    kind: Kind::Count,
    default: "1",
    workloads: &["pingpong"],
    help: "connections the ping-pong's requests are spread over (wrk's -c); HTTP/2 and gRPC also multiplex requests on each",
    words: "connections",
};

pub const TARGET: ParamSpec = ParamSpec {
    name: "target",
    kind: Kind::Custom {
        what: "server address",
        check: check_target,
    },
    default: "builtin",
    workloads: &["pingpong", "stream"],
    help: "the server: builtin (started for each case, in the lab's server host when there is a link), or IP:PORT of one already running on loopback, e.g. `wirebench serve --also http=127.0.0.1:8080`, so other clients (wrk, h2load, ghz) can be measured against the same server",
    words: "server address",
};

/// Whether `case` targets a server already running rather than one of its own.
pub fn has_target(case: &wirebench_protocol::Case) -> bool {
    case.text(&TARGET).is_some_and(|t| t != "builtin")
}

/// The server `case` targets: `None` for the one started for the case.
pub fn target(case: &wirebench_protocol::Case) -> Result<Option<std::net::SocketAddr>, String> {
    parse_target(case.text(&TARGET).unwrap_or("builtin"))
}

fn check_target(text: &str) -> Result<(), String> {
    parse_target(text).map(|_| ())
}

/// The server a case targets: `None` for the one started for the case. Loopback only:
/// load is never sent off this machine.
pub fn parse_target(text: &str) -> Result<Option<std::net::SocketAddr>, String> {
    if text == "builtin" {
        return Ok(None);
    }
    let addr: std::net::SocketAddr = text.parse().map_err(|_| {
        format!(
            "{text:?}: expected builtin or IP:PORT of a server on this machine, e.g. 127.0.0.1:8080"
        )
    })?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "{} is not a loopback address: requests are only sent to this machine (127.0.0.0/8, ::1)",
            addr.ip()
        ));
    }
    Ok(Some(addr))
}

fn check_rate(text: &str) -> Result<(), String> {
    parse_rate(text).map(|_| ())
}

/// Requests per second from `10k/s`, `2500/s`, `600/min`, `1M/h` or a bare number (per
/// second). Suffixes k and M multiply by 1e3 and 1e6.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, per) = match t.split_once('/') {
        Some((n, u)) => (n.trim(), u.trim()),
        None => (t, "s"),
    };
    let per_s = match per {
        "s" | "sec" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        u => {
            return Err(format!(
                "unknown rate unit /{u} (use /s, /min or /h, e.g. 10k/s)"
            ));
        }
    };
    let (digits, mult) = match num.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1e3),
        None => match num.strip_suffix('M') {
            Some(d) => (d, 1e6),
            None => (num, 1.0),
        },
    };
    let v: f64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a request rate (examples: 10k/s, 500/s, 60/min)"))?;
    let r = v * mult / per_s;
    if !r.is_finite() || r <= 0.0 {
        return Err(format!("{text:?}: the rate must be above zero"));
    }
    if r > 10e6 {
        return Err(format!(
            "{text:?}: more than 10M requests/s is beyond any one machine; lower the rate"
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::{parse_rate, parse_target};

    #[test]
    fn targets() {
        assert_eq!(parse_target("builtin"), Ok(None));
        assert_eq!(
            parse_target("127.0.0.1:8080"),
            Ok(Some("127.0.0.1:8080".parse().unwrap()))
        );
        assert!(parse_target("[::1]:80").unwrap().is_some());
        assert!(
            parse_target("10.0.0.1:80")
                .unwrap_err()
                .contains("loopback")
        );
        assert!(
            parse_target("localhost:80")
                .unwrap_err()
                .contains("IP:PORT")
        );
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10k/s"), Ok(10_000.0));
        assert_eq!(parse_rate("2500"), Ok(2500.0));
        assert_eq!(parse_rate("600/min"), Ok(10.0));
        assert_eq!(parse_rate("0.5/s"), Ok(0.5));
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("-3/s").is_err());
        assert!(parse_rate("fast").unwrap_err().contains("examples"));
        assert!(parse_rate("10/day").unwrap_err().contains("unit"));
        assert!(parse_rate("100M/s").is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".{0,20}") {
            let _ = parse_rate(&s);
        }
    }
}
