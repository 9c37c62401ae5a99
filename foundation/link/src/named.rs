//! Named links: the links the studies and the literature measure over, by name
//! (`--link geo`), each direction its own spec and each citing where its figures come
//! from. A name may be followed by fields that override it: `geo,loss=1%`, and the
//! `link.*` parameters override it as they override any spec. `wirebench links` lists
//! them; docs/links.md shows the same table.

use crate::spec::{LinkSpec, SpecError};

/// One direction of a link: `Up` is client to server, `Down` server to client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
}

/// A link by name.
#[derive(Debug, Clone, Copy)]
pub struct NamedLink {
    pub name: &'static str,
    /// One line for `wirebench links`.
    pub summary: &'static str,
    /// The client-to-server direction, as a spec.
    pub up: &'static str,
    /// The server-to-client direction.
    pub down: &'static str,
    /// Where the figures come from.
    pub source: &'static str,
}

impl NamedLink {
    /// The spec of one direction.
    pub fn spec(&self, direction: Direction) -> &'static str {
        match direction {
            Direction::Up => self.up,
            Direction::Down => self.down,
        }
    }
}

/// Every named link, in the order `wirebench links` shows them.
pub static NAMED_LINKS: &[NamedLink] = &[
    NamedLink {
        name: "satcom",
        summary: "S1's slowest satcom link: 2400 bit/s, 1 s one way",
        up: "2400bit/1s",
        down: "2400bit/1s",
        source: "study S1 (XMPP over a constrained satcom link): 2400 bit/s, one-way delay 0, 0.5 or 1 s",
    },
    NamedLink {
        name: "satcom-19200",
        summary: "S1's faster satcom link: 19200 bit/s, 1 s one way",
        up: "19200bit/1s",
        down: "19200bit/1s",
        source: "study S1: some runs at 19200 bit/s, one-way delay 0, 0.5 or 1 s",
    },
    NamedLink {
        name: "wan-162ms",
        summary: "S2's remote server: 162 ms round trip, no rate limit",
        up: "81ms",
        down: "81ms",
        source: "study S2 (browser transports for XMPP): a remote server at 162 ms RTT",
    },
    NamedLink {
        name: "geo",
        summary: "GEO satellite: 20 Mbit/s down, 2 Mbit/s up, 600 ms round trip, 25-packet queues",
        up: "2Mbit/300ms,queue_packets=25",
        down: "20Mbit/300ms,queue_packets=25",
        source: "Endres et al., Performance of QUIC Implementations Over Geostationary Satellite Links (2022), scenario sat",
    },
    NamedLink {
        name: "geo-loss",
        summary: "geo with 1% random loss in each direction",
        up: "2Mbit/300ms,queue_packets=25,loss=1%",
        down: "20Mbit/300ms,queue_packets=25,loss=1%",
        source: "Endres et al. (2022), scenario satloss: sat with 1% loss",
    },
    NamedLink {
        name: "sat-10-2",
        summary: "satellite access: 10 Mbit/s down, 2 Mbit/s up, 650 ms round trip",
        up: "2Mbit/325ms",
        down: "10Mbit/325ms",
        source: "draft-kuhn-quic-4-sat-06: 10/2 Mbit/s at 650 ms RTT (targets: 2 MB in 3 s, 10 MB in 10 s, 100 MB in 85 s)",
    },
    NamedLink {
        name: "sat-250-3",
        summary: "satellite access: 250 Mbit/s down, 3 Mbit/s up, 650 ms round trip",
        up: "3Mbit/325ms",
        down: "250Mbit/325ms",
        source: "draft-kuhn-quic-4-sat-06: 250/3 Mbit/s at 650 ms RTT (target: 100 MB in 8 s)",
    },
    NamedLink {
        name: "sat-250-3-loss",
        summary: "sat-250-3 with 1% random loss in each direction",
        up: "3Mbit/325ms,loss=1%",
        down: "250Mbit/325ms,loss=1%",
        source: "draft-kuhn-quic-4-sat-06: 250/3 Mbit/s at 650 ms RTT with 1% loss (target: 100 MB in 10 s)",
    },
    NamedLink {
        name: "pantheon-nepal",
        summary: "Nepal to AWS India: 13.38 Mbit/s, 32 ms one way, 0.3% uplink loss, 37-packet queue",
        up: "13.38Mbit/32ms,loss=0.3%,queue_packets=37",
        down: "13.38Mbit/32ms,queue_packets=37",
        source: "Yan et al., Pantheon: the training ground for Internet congestion-control research (USENIX ATC 2018), calibrated emulator",
    },
    NamedLink {
        name: "pantheon-china-cellular",
        summary: "China cellular to AWS Korea: 6.25 Mbit/s, 152 ms one way, 0.25% uplink loss, 362-packet queue",
        up: "6.25Mbit/152ms,loss=0.25%,queue_packets=362",
        down: "6.25Mbit/152ms,queue_packets=362",
        source: "Yan et al., Pantheon (USENIX ATC 2018), calibrated emulator",
    },
    NamedLink {
        name: "lossy-100ms",
        summary: "100 ms round trip with 1% random loss, at 100 Mbit/s",
        up: "100Mbit/50ms,loss=1%",
        down: "100Mbit/50ms,loss=1%",
        source: "BBR's netdev cover letter (100 ms RTT, 1% loss: CUBIC 3.27 Mbit/s, BBR 9,150 Mbit/s on 10 Gbit/s), at a rate this machine emulates",
    },
    NamedLink {
        name: "leo",
        summary: "LEO satellite access (Starlink): 116.77 Mbit/s down, 18.17 Mbit/s up, 47 ms round trip",
        up: "18.17Mbit/23500us",
        down: "116.77Mbit/23500us",
        source: "Ookla Speedtest medians of Starlink users in Maine, 1 Oct-15 Dec 2024 (Ookla, Above Maine, Starlink Twinkles, 2024-12-18): 116.77/18.17 Mbit/s, 47 ms latency; a fixed path, without a real constellation's hand-offs",
    },
    NamedLink {
        name: "interop-goodput",
        summary: "the QUIC interop runner's goodput case: 10 Mbit/s, 15 ms one way, 25-packet queues",
        up: "10Mbit/15ms,queue_packets=25",
        down: "10Mbit/15ms,queue_packets=25",
        source: "quic-interop-runner, test case goodput: ns-3 simple-p2p --delay=15ms --bandwidth=10Mbps --queue=25, a 10 MB download, 5 runs",
    },
    NamedLink {
        name: "lan",
        summary: "a gigabit LAN: 1 Gbit/s, 50 us one way",
        up: "1Gbit/50us",
        down: "1Gbit/50us",
        source: "no calibration: a switched gigabit Ethernet segment, for comparison",
    },
];

/// The named link called `name`.
pub fn named_link(name: &str) -> Option<&'static NamedLink> {
    NAMED_LINKS.iter().find(|l| l.name == name)
}

/// The names, for messages.
pub fn names() -> String {
    let names: Vec<&str> = NAMED_LINKS.iter().map(|l| l.name).collect();
    names.join(", ")
}

/// Whether a spec's first item looks like a name rather than a rate or a delay: words
/// and dashes with a letter first, no `=` (`geo`, `sat-10-2`; not `2400bit`, `500ms`).
fn looks_like_name(item: &str) -> bool {
    item.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && item.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !matches!(item, "unlimited" | "inf" | "none")
}

impl LinkSpec {
    /// One direction of a spec whose first item may be a named link (`geo`,
    /// `geo,loss=2%`): the named link's spec of that direction, with the fields after
    /// the name overriding it. Any other spec parses as [`LinkSpec::parse`] does, the
    /// same for both directions.
    pub fn parse_direction(s: &str, direction: Direction) -> Result<LinkSpec, SpecError> {
        let s = s.trim();
        let (first, rest) = match s.split_once(',') {
            Some((first, rest)) => (first.trim(), Some(rest)),
            None => (s, None),
        };
        if !looks_like_name(first) {
            return LinkSpec::parse(s);
        }
        let Some(link) = named_link(first) else {
            return Err(SpecError::UnknownName {
                name: first.to_string(),
                names: names(),
            });
        };
        let base = LinkSpec::parse(link.spec(direction))?;
        match rest {
            Some(rest) => LinkSpec::parse_onto(base, rest),
            None => Ok(base),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Loss;

    #[test]
    fn every_named_link_parses_both_ways_and_names_are_unique() {
        for l in NAMED_LINKS {
            for d in [Direction::Up, Direction::Down] {
                let spec = LinkSpec::parse_direction(l.name, d).unwrap();
                assert_eq!(spec, LinkSpec::parse(l.spec(d)).unwrap(), "{}", l.name);
            }
            assert!(looks_like_name(l.name), "{}", l.name);
            assert_eq!(
                NAMED_LINKS.iter().filter(|o| o.name == l.name).count(),
                1,
                "{}",
                l.name
            );
        }
    }

    #[test]
    fn fields_after_a_name_override_it_in_both_directions() {
        let up = LinkSpec::parse_direction("geo,loss=2%,queue_packets=100", Direction::Up).unwrap();
        let down =
            LinkSpec::parse_direction("geo, loss=2%, queue_packets=100", Direction::Down).unwrap();
        assert_eq!(up.rate_bps, Some(2_000_000));
        assert_eq!(down.rate_bps, Some(20_000_000));
        for d in [&up, &down] {
            assert_eq!(d.delay_ns, 300_000_000);
            assert_eq!(d.loss, Loss::Bernoulli { p: 0.02 });
            assert_eq!(d.queue_packets, Some(100));
        }
        // An outage after a name adds to none; the short form is for the first item only.
        let o = LinkSpec::parse_direction("satcom,outage=30s+10s", Direction::Up).unwrap();
        assert_eq!(o.outages.len(), 1);
        assert!(matches!(
            LinkSpec::parse_direction("satcom,2400bit/1s", Direction::Up),
            Err(SpecError::NotAField { .. })
        ));
        assert!(matches!(
            LinkSpec::parse_direction("satcom,loss=1%,loss=2%", Direction::Up),
            Err(SpecError::Duplicate { field: "loss" })
        ));
    }

    #[test]
    fn an_unknown_name_lists_the_names_and_specs_are_unchanged() {
        let e = LinkSpec::parse_direction("gep", Direction::Up)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"gep\"") && e.contains("geo") && e.contains("wirebench links"),
            "{e}"
        );
        for s in [
            "2400bit/500ms",
            "500ms",
            "rate=1Gbit,delay=10ms",
            "unlimited",
        ] {
            assert_eq!(
                LinkSpec::parse_direction(s, Direction::Down),
                LinkSpec::parse(s),
                "{s}"
            );
        }
    }

    /// docs/links.md's table is this one: a row per named link, in order, with its specs
    /// and source.
    #[test]
    fn the_docs_table_lists_every_named_link() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/links.md");
        let text = std::fs::read_to_string(path).unwrap();
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| `"))
            .filter(|l| {
                NAMED_LINKS
                    .iter()
                    .any(|n| l.starts_with(&format!("| `{}` |", n.name)))
            })
            .collect();
        let want: Vec<String> = NAMED_LINKS
            .iter()
            .map(|l| {
                format!(
                    "| `{}` | `{}` | `{}` | {} |",
                    l.name, l.up, l.down, l.source
                )
            })
            .collect();
        assert_eq!(rows, want, "docs/links.md, section Named links");
    }
}
