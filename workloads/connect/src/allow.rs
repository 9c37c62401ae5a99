//! Which destinations a proxy of ours (the Shadowsocks server, the Transport Converter)
//! connects to: a case's origin, or networks. None of them is an open relay.

use std::net::{IpAddr, SocketAddr};

/// Which destinations a proxy connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// Exactly these addresses (a case's origin).
    Only(Vec<SocketAddr>),
    /// Any port of these networks (address, prefix length).
    Networks(Vec<(IpAddr, u8)>),
}

impl Allow {
    pub fn admits(&self, a: SocketAddr) -> bool {
        match self {
            Allow::Only(v) => v.contains(&a),
            Allow::Networks(nets) => nets.iter().any(|(net, bits)| within(a.ip(), *net, *bits)),
        }
    }

    /// The addresses a client's destination name may lead to, decided without asking a
    /// resolver: `localhost` and names under `.localhost` are this machine's loopback
    /// addresses (RFC 6761 §6.3), any other name is refused before it is looked up,
    /// since the query would go to the system's resolver and leave the machine (the
    /// studies' origins are addresses). Of the loopback addresses, those the list admits.
    pub fn name(&self, name: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        if name != "localhost" && !name.ends_with(".localhost") {
            return Err(format!(
                "{name}:{port}: names other than localhost are not resolved (the query would leave this machine); connect to an address"
            ));
        }
        let admitted: Vec<SocketAddr> = [
            IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
            IpAddr::from(std::net::Ipv4Addr::LOCALHOST),
        ]
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .filter(|a| self.admits(*a))
        .collect();
        if admitted.is_empty() {
            return Err(format!("{name}:{port} is not an allowed destination"));
        }
        Ok(admitted)
    }

    /// Loopback only (`wirebench serve --also`).
    pub fn loopback() -> Allow {
        Allow::Networks(vec![
            (std::net::Ipv4Addr::LOCALHOST.into(), 8),
            (std::net::Ipv6Addr::LOCALHOST.into(), 128),
        ])
    }

    /// `127.0.0.0/8,::1/128,10.1.2.3`: networks, a bare address being its own /32 or /128.
    pub fn parse(text: &str) -> Result<Allow, String> {
        let mut nets = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (ip, bits) = match part.split_once('/') {
                Some((ip, bits)) => (ip, Some(bits)),
                None => (part, None),
            };
            let ip: IpAddr = ip
                .parse()
                .map_err(|_| format!("{part:?} is not an address or network (e.g. 127.0.0.0/8)"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                Some(b) => b
                    .parse::<u8>()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("{part:?}: the prefix length must be 0 to {max}"))?,
                None => max,
            };
            nets.push((ip, bits));
        }
        if nets.is_empty() {
            return Err("no destination allowed: name at least one network".into());
        }
        Ok(Allow::Networks(nets))
    }
}

fn within(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_lists() {
        let a = Allow::parse("127.0.0.0/8, 10.1.2.3, ::1/128").unwrap();
        assert!(a.admits("127.9.9.9:80".parse().unwrap()));
        assert!(a.admits("10.1.2.3:1".parse().unwrap()));
        assert!(!a.admits("10.1.2.4:1".parse().unwrap()));
        assert!(a.admits("[::1]:5".parse().unwrap()));
        assert!(!a.admits("192.0.2.1:80".parse().unwrap()));
        assert!(
            Allow::parse("0.0.0.0/0")
                .unwrap()
                .admits("192.0.2.1:80".parse().unwrap())
        );
        assert!(Allow::parse("").is_err());
        assert!(Allow::parse("10.0.0.0/33").unwrap_err().contains("0 to 32"));
        assert!(
            Allow::parse("example.org")
                .unwrap_err()
                .contains("not an address")
        );
    }

    #[test]
    fn names_other_than_localhost_are_refused_unresolved() {
        let lo = Allow::loopback();
        let both: Vec<SocketAddr> =
            vec!["[::1]:80".parse().unwrap(), "127.0.0.1:80".parse().unwrap()];
        assert_eq!(lo.name("localhost", 80).unwrap(), both);
        assert_eq!(lo.name("LocalHost.", 80).unwrap(), both);
        assert_eq!(lo.name("db.localhost", 80).unwrap(), both);
        let e = lo.name("example.com", 80).unwrap_err();
        assert!(e.contains("not resolved"), "{e}");
        assert!(lo.name("localhost.example.com", 80).is_err());
        let v4 = Allow::parse("127.0.0.0/8").unwrap();
        assert_eq!(
            v4.name("localhost", 7).unwrap(),
            vec!["127.0.0.1:7".parse().unwrap()]
        );
        let only = Allow::Only(vec!["127.0.0.1:9".parse().unwrap()]);
        assert!(
            only.name("localhost", 80)
                .unwrap_err()
                .contains("not an allowed")
        );
        assert_eq!(
            only.name("localhost", 9).unwrap(),
            vec!["127.0.0.1:9".parse().unwrap()]
        );
    }
}
