//! Protocols as plugins: what the runner needs to know about a protocol, and how one of
//! its cases runs. The case loop, planning and the CLI ask the [`REGISTRY`] instead of
//! matching protocol names, so a new protocol is an implementation of [`Protocol`] and
//! one line in the registry (and its name in `wirebench_workload::params::PROTOCOLS`,
//! which a test keeps equal to the registry).
//!
//! Today's three:
//! - `raw` (this file): wirebench's own frames against the reference server, over the
//!   control channel (`docs/protocols/raw.md`);
//! - `xmpp` (`xmpp.rs`): two Prosody servers, standard S2S or the x2x gateways, in the
//!   lab hosts (study S1's topology; RFC 6120/6121, XEP-0361);
//! - `irc` (`irc.rs`): two linked ngircd servers in the lab hosts (RFC 1459/2812).

use crate::estimate;
use crate::link::CaseLink;
use crate::{Case, Job};
use std::net::Ipv4Addr;
use wirebench_net::ControlClient;
use wirebench_workload::pingpong::{self, PingPong};
use wirebench_workload::stream::{self, Mode, Stream};
use wirebench_workload::{Ctx, Outcome, WorkloadError};

/// A protocol wirebench can measure.
pub trait Protocol: Sync {
    /// The value of the `protocol` parameter.
    fn name(&self) -> &'static str;
    /// One line for `wirebench protocols`.
    fn summary(&self) -> &'static str;
    /// Parameters only this protocol reads (beyond the workloads' own).
    fn params(&self) -> &'static [&'static str] {
        &[]
    }
    /// Real servers, placed per case, that find each other by name: every case of this
    /// protocol runs in the lab (over an unlimited link unless one is given), whose hosts
    /// get these hosts-file entries.
    fn lab_hosts(&self) -> Option<&'static [(Ipv4Addr, &'static str)]> {
        None
    }
    /// Whether its cases talk to wirebench's reference server (the control channel).
    fn uses_reference_server(&self) -> bool {
        false
    }
    /// A stream of this protocol is bounded by a message count, this one unless given,
    /// rather than by a duration.
    fn stream_count(&self) -> Option<u64> {
        None
    }
    /// How long its real peers take to start, link and carry a message, for estimates
    /// (`estimate.rs`); `None`: no real peers.
    fn peer_model(&self, _case: &Case) -> Option<&'static crate::estimate::PeerModel> {
        None
    }
    /// Bytes each message adds to its payload on the wire above TCP, when fixed: the
    /// runner then records the link model's round trip (`rtt.model`) beside the measured.
    fn message_overhead(&self) -> Option<u64> {
        None
    }
    /// Runs one case (repeat `repeat`) and returns its metrics.
    fn run(
        &self,
        job: &Job,
        case: &Case,
        repeat: u32,
        link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError>;
}

/// Every protocol, by name.
pub static REGISTRY: &[&dyn Protocol] = &[&Raw, &crate::xmpp::Xmpp, &crate::irc::Irc];

/// The protocol of that name (`raw` for a name the parameter check let through and no
/// plugin has, which the registry test rules out).
pub fn get(name: &str) -> &'static dyn Protocol {
    REGISTRY
        .iter()
        .copied()
        .find(|p| p.name() == name)
        .unwrap_or(&Raw)
}

/// A case's protocol.
pub fn of(case: &Case) -> &'static dyn Protocol {
    get(case.protocol())
}

/// wirebench's own frames against the reference server.
pub struct Raw;

impl Protocol for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }

    fn summary(&self) -> &'static str {
        "wirebench's length-prefixed frames over TCP against its reference server (loopback, \
         a lab host, or `wirebench serve` anywhere)"
    }

    fn uses_reference_server(&self) -> bool {
        true
    }

    fn message_overhead(&self) -> Option<u64> {
        Some(wirebench_proto::raw::HEADER_LEN as u64)
    }

    fn run(
        &self,
        job: &Job,
        case: &Case,
        _repeat: u32,
        link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        let mut slot = job.control.lock().unwrap_or_else(|p| p.into_inner());
        let mut ctl = match slot.take() {
            Some(c) => c,
            // A failed case may have left the control connection unusable.
            None => ControlClient::connect(job.addr, ctx.connect_timeout)?,
        };
        let r = run_raw(&mut ctl, case, link, job.scenario.seed, ctx);
        if r.is_ok() {
            *slot = Some(ctl);
        }
        r
    }
}

fn run_raw(
    ctl: &mut ControlClient,
    case: &Case,
    link: Option<&CaseLink>,
    seed: u64,
    ctx: &Ctx,
) -> Result<Outcome, WorkloadError> {
    let word = |n: &str| {
        case.get(n)
            .and_then(|v| v.as_word())
            .unwrap_or("")
            .to_string()
    };
    let payload = case.get("payload").and_then(|v| v.as_bytes()).unwrap_or(0);
    let payload = u32::try_from(payload)
        .map_err(|_| WorkloadError::Server(format!("payload of {payload} bytes is too large")))?;
    let nodelay = word("nodelay") != "off";
    match case.workload() {
        "stream" => {
            let mode = if word("mode") == "echo" {
                Mode::Echo
            } else {
                Mode::OneWay
            };
            let count = case.get("count").and_then(|v| v.as_count());
            let duration = case.get("duration").and_then(|v| v.as_duration());
            // On a rate-limited link the sockets and the link's queue hold far more than
            // the link carries in a short duration; stop at what it can carry instead.
            let budget = match (duration, link) {
                (Some(d), Some(l)) => {
                    estimate::stream_budget(payload as u64, mode == Mode::Echo, l, d)
                        .filter(|b| count.is_none_or(|c| *b < c))
                }
                _ => None,
            };
            let mut out = stream::run(
                ctl,
                &Stream {
                    protocol: word("protocol"),
                    mode,
                    payload,
                    count: budget.or(count),
                    duration,
                    seed,
                    nodelay,
                },
                ctx,
            )?;
            if let (Some(b), Some(d)) = (budget, duration) {
                out.notes.push(format!(
                    "the link's rate carries about {b} messages in {}: the stream sent at most \
                     that many",
                    wirebench_model::format_duration(d)
                ));
            }
            Ok(out)
        }
        _ => pingpong::run(
            ctl,
            &PingPong {
                protocol: word("protocol"),
                payload,
                rounds: case.get("rounds").and_then(|v| v.as_count()).unwrap_or(0),
                think: case
                    .get("think")
                    .and_then(|v| v.as_duration())
                    .unwrap_or_default(),
                seed,
                nodelay,
            },
            ctx,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_and_the_parameter_agree() {
        let names: Vec<&str> = REGISTRY.iter().map(|p| p.name()).collect();
        assert_eq!(names, wirebench_workload::params::PROTOCOLS);
        for p in REGISTRY {
            for param in p.params() {
                assert!(
                    wirebench_workload::params::spec(param).is_some(),
                    "{} reads unknown parameter {param}",
                    p.name()
                );
            }
        }
    }
}
