//! From a case's link parameters to the two directions' link specs, checked before any
//! lab is built.
//!
//! Precedence: `link` sets both directions; `uplink` / `downlink` replace one direction;
//! `link.rate`, `link.delay`, ... then override that field in both directions, so a grid
//! axis over `link.delay` varies the delay of whatever link was described.

use crate::{Case, CaseLink};
use wirebench_link::{Direction, LinkSpec, PathRtts, Trace};
use wirebench_protocol::params::{self, ParamSpec, is_link};

#[derive(Debug, thiserror::Error)]
#[error("case {case}: {msg}")]
pub struct CaseLinkError {
    case: usize,
    msg: String,
}

/// The link of a case, or `None` if it has no link parameter (plain loopback).
pub fn case_link(case: &Case) -> Result<Option<CaseLink>, CaseLinkError> {
    if !case.point.iter().any(|(n, _)| is_link(n)) {
        return Ok(None);
    }
    let err = |msg: String| CaseLinkError {
        case: case.index,
        msg,
    };
    // A named link (`geo`) gives each direction its own spec.
    let spec = |p: &ParamSpec, d: Direction| -> Result<Option<LinkSpec>, CaseLinkError> {
        match case.text(p) {
            Some(text) => LinkSpec::parse_direction(text, d)
                .map(Some)
                .map_err(|e| err(format!("{}: {e}", p.name))),
            None => Ok(None),
        }
    };
    let mut up = match spec(&params::UPLINK, Direction::Up)? {
        Some(up) => up,
        None => spec(&params::LINK, Direction::Up)?.unwrap_or_default(),
    };
    let mut down = match spec(&params::DOWNLINK, Direction::Down)? {
        Some(down) => down,
        None => spec(&params::LINK, Direction::Down)?.unwrap_or_default(),
    };
    // The link fields one at a time, over the whole-link specs, in both directions.
    for dir in [&mut up, &mut down] {
        if let Some(r) = case.rate(&params::LINK_RATE) {
            dir.rate_bps = Some(r.round() as u64);
        }
        if let Some(d) = case.duration(&params::LINK_DELAY) {
            dir.delay_ns = d.as_nanos() as u64;
        }
        if let Some(d) = case.duration(&params::LINK_JITTER) {
            dir.jitter_ns = d.as_nanos() as u64;
        }
        if let Some(b) = case.bytes(&params::LINK_QUEUE) {
            dir.queue_bytes = Some(b);
        }
        if let Some(m) = case.count(&params::LINK_MTU) {
            dir.mtu = u32::try_from(m)
                .map_err(|_| err(format!("{} {m} is too large", params::LINK_MTU.name)))?;
        }
        if let Some(w) = case.text(&params::LINK_LOSS) {
            dir.loss = LinkSpec::parse(&format!("loss={w}"))
                .map_err(|e| err(format!("{}: {e}", params::LINK_LOSS.name)))?
                .loss;
        }
        match case.text(&params::LINK_OUTAGE) {
            Some("none") => dir.outages.clear(),
            Some(w) => {
                dir.outages = LinkSpec::parse(&format!("outage={w}"))
                    .map_err(|e| err(format!("{}: {e}", params::LINK_OUTAGE.name)))?
                    .outages
            }
            None => {}
        }
    }
    // Validate the combination (e.g. an MTU out of range) before any lab is built.
    for (which, dir) in [("uplink", &up), ("downlink", &down)] {
        LinkSpec::parse(&dir.to_string()).map_err(|e| err(format!("{which} {dir}: {e}")))?;
    }
    let trace_name = params::LINK_TRACE.name;
    let trace = match case.text(&params::LINK_TRACE) {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| err(format!("{trace_name}: cannot read {path}: {e}")))?;
            Some(std::sync::Arc::new(
                Trace::parse(&text).map_err(|e| err(format!("{trace_name}: {path}: {e}")))?,
            ))
        }
        None => None,
    };
    let paths = match case.text(&params::LINK_PATHS) {
        Some(text) => Some(std::sync::Arc::new(
            PathRtts::parse(text).map_err(|e| err(e.to_string()))?,
        )),
        None => None,
    };
    Ok(Some(CaseLink {
        up,
        down,
        trace,
        paths,
        second: second_path(case, &spec)?,
    }))
}

/// A link parameter's spec of one direction, if the case sets it.
type SpecOf<'a> = dyn Fn(&ParamSpec, Direction) -> Result<Option<LinkSpec>, CaseLinkError> + 'a;

/// `link2`: one spec for both directions, so a named link whose directions differ is
/// refused rather than halved.
fn second_path(case: &Case, spec: &SpecOf) -> Result<Option<LinkSpec>, CaseLinkError> {
    let up = spec(&params::LINK2, Direction::Up)?;
    if up != spec(&params::LINK2, Direction::Down)? {
        return Err(CaseLinkError {
            case: case.index,
            msg: format!(
                "{}: one spec serves both directions of the second path, and this named \
                 link's directions differ; give its uplink or downlink spec (wirebench links)",
                params::LINK2.name
            ),
        });
    }
    Ok(up)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Scenario, plan};
    use wirebench_link::Loss;

    fn link_of(args: &[(&str, &str)]) -> CaseLink {
        let mut s = Scenario::empty("t");
        for (k, v) in args {
            s.set_param(k, v).unwrap();
        }
        case_link(&plan(&s)[0]).unwrap().unwrap()
    }

    #[test]
    fn no_link_parameters_no_lab() {
        let s = Scenario::empty("t");
        assert_eq!(case_link(&plan(&s)[0]).unwrap(), None);
    }

    #[test]
    fn precedence_link_then_direction_then_fields() {
        let l = link_of(&[
            ("link", "2400bit/500ms"),
            ("downlink", "19.2kbit/1s"),
            ("link.delay", "250ms"),
        ]);
        assert_eq!(l.up.rate_bps, Some(2400));
        assert_eq!(l.down.rate_bps, Some(19200));
        assert_eq!(l.up.delay_ns, 250_000_000);
        assert_eq!(l.down.delay_ns, 250_000_000);
        let l = link_of(&[("link.rate", "1Gbit"), ("link.loss", "1%")]);
        assert_eq!(l.up.rate_bps, Some(1_000_000_000));
        assert!(matches!(l.down.loss, Loss::Bernoulli { .. }));
    }

    #[test]
    fn link_outage_replaces_the_links_outages_and_is_a_grid_axis() {
        use wirebench_link::Outage;
        const S: u64 = 1_000_000_000;
        let l = link_of(&[
            ("link", "rate=9600bit,outage=1s+1s,outage=3s+1s"),
            ("link.outage", "5s+6s"),
        ]);
        assert_eq!(l.up.outages, [Outage::once(5 * S, 6 * S)]);
        assert_eq!(l.down.outages, l.up.outages);
        let l = link_of(&[
            ("link", "rate=9600bit,outage=1s+1s"),
            ("link.outage", "none"),
        ]);
        assert!(l.up.outages.is_empty() && l.down.outages.is_empty());
        let l = link_of(&[("link.outage", "every 60s for 10s")]);
        assert_eq!(l.up.outages, [Outage::periodic(60 * S, 10 * S, 60 * S)]);
        // A list is an axis: one case per outage.
        let mut s = Scenario::empty("t");
        s.set_param("link.rate", "9600bit").unwrap();
        s.set_param("link.outage", "none,5s+6s,every 60s for 10s")
            .unwrap();
        let cases = plan(&s);
        assert_eq!(cases.len(), 3);
        let outages: Vec<usize> = cases
            .iter()
            .map(|c| case_link(c).unwrap().unwrap().up.outages.len())
            .collect();
        assert_eq!(outages, [0, 1, 1]);
        let e = Scenario::empty("t")
            .set_param("link.outage", "5s")
            .unwrap_err()
            .to_string();
        assert!(e.contains("START+DURATION"), "{e}");
    }

    #[test]
    fn trace_files_are_loaded_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.trace");
        std::fs::write(&good, "0\n5\n10\n").unwrap();
        let l = link_of(&[("link.trace", good.to_str().unwrap())]);
        assert_eq!(l.up_params().trace.unwrap().len(), 3);
        let bad = dir.path().join("bad.trace");
        std::fs::write(&bad, "0\n5\nfast\n").unwrap();
        let mut s = Scenario::empty("t");
        let e = s
            .set_param("link.trace", bad.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--link-trace") && e.contains("line 3"), "{e}");
    }
}
