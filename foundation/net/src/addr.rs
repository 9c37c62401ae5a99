//! Addresses of the reference server as users write them: `HOST`, `HOST:PORT`, `[IPV6]`,
//! `[IPV6]:PORT` or a bare IPv6 address, the port defaulting to [`DEFAULT_PORT`].

use std::fmt;
use std::net::Ipv6Addr;

/// The control port of `wirebench serve` unless told otherwise.
pub const DEFAULT_PORT: u16 = 7420;

/// Why an address was refused: `"x:y": port "y" is not a number; expected ...`. A front
/// end puts the flag in front.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddrError {
    text: String,
    why: String,
}

impl fmt::Display for AddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.text, self.why)
    }
}

impl std::error::Error for AddrError {}

/// Reads `HOST`, `HOST:PORT`, `[IPV6]`, `[IPV6]:PORT` or a bare IPv6 address as
/// `host:port` text for the resolver; the port defaults to [`DEFAULT_PORT`]. Port 0 (any
/// free port) only makes sense when `listen`ing.
pub fn parse_addr(text: &str, listen: bool) -> Result<String, AddrError> {
    let t = text.trim();
    let refuse = |why: String| AddrError {
        text: text.to_string(),
        why,
    };
    let bad = |why: &str| {
        refuse(format!(
            "{why}; expected HOST, HOST:PORT or [IPV6]:PORT, e.g. 127.0.0.1:{DEFAULT_PORT}"
        ))
    };
    let (host, port) = if let Some(rest) = t.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("no ] after the IPv6 address"))?;
        if host.parse::<Ipv6Addr>().is_err() {
            return Err(bad(&format!("{host:?} is not an IPv6 address")));
        }
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| bad("expected :PORT after ]"))?,
                ),
            ),
        }
    } else if t.parse::<Ipv6Addr>().is_ok() {
        (t, None)
    } else {
        match t.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err(bad(
                    "an IPv6 address with a port goes in brackets, e.g. [::1]:7420",
                ));
            }
            Some((h, p)) => (h, Some(p)),
            None => (t, None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let lowest = if listen { 0 } else { 1 };
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => match p.parse::<u64>() {
            Ok(n) if (lowest..=65535).contains(&n) => n as u16,
            Ok(n) => {
                return Err(refuse(format!(
                    "port {n} is out of range ({lowest} to 65535{})",
                    if listen { "; 0 picks a free port" } else { "" }
                )));
            }
            Err(_) => return Err(bad(&format!("port {p:?} is not a number"))),
        },
    };
    Ok(if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ports_and_ipv6() {
        let ok = |t: &str, listen| parse_addr(t, listen).unwrap();
        assert_eq!(ok("localhost", false), "localhost:7420");
        assert_eq!(ok(" 10.0.0.1:9000 ", false), "10.0.0.1:9000");
        assert_eq!(ok("::1", false), "[::1]:7420");
        assert_eq!(ok("[::1]", false), "[::1]:7420");
        assert_eq!(ok("[fe80::1]:80", false), "[fe80::1]:80");
        assert_eq!(ok("127.0.0.1:0", true), "127.0.0.1:0");
    }

    #[test]
    fn refusals_say_why() {
        let err = |t: &str, listen| parse_addr(t, listen).unwrap_err().to_string();
        assert_eq!(
            err("127.0.0.1:0", false),
            "\"127.0.0.1:0\": port 0 is out of range (1 to 65535)"
        );
        assert!(err("h:70000", true).ends_with("(0 to 65535; 0 picks a free port)"));
        assert!(err("[::1", false).starts_with("\"[::1\": no ] after the IPv6 address; expected"));
        assert!(err("fe80::1:7420:x", false).contains("goes in brackets"));
        assert!(err(":80", false).contains("no host"));
        assert!(err("h:p", false).contains("port \"p\" is not a number"));
        assert!(err("[zz]", false).contains("\"zz\" is not an IPv6 address"));
        assert!(err("[::1]x", false).contains("expected :PORT after ]"));
    }
}
