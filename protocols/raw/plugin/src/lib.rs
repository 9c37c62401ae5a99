//! `raw`: wirebench's own length-prefixed frames over TCP against its reference server
//! (`docs/protocols/raw.md`). The wire format and the sans-IO engines are in
//! `protocols/raw/engine` (`wirebench-raw`); the server side is the reference server
//! (`wirebench-net`, which the runner places on loopback or in the lab's server host, or
//! `wirebench serve` anywhere). This crate holds the client drivers and the plugin:
//!
//! - [`pingpong`]: seed 000's latency test. One message in flight; the responder answers
//!   (optionally after a think time); every round's RTT is kept.
//! - [`stream`]: a flood of messages, one way (the server counts) or echoed, timed until
//!   the receiver holds the last byte.

mod conn;
pub mod pingpong;
pub mod stream;

use pingpong::PingPong;
use std::time::Duration;
use stream::{Mode, Stream};
use wirebench_net::ControlClient;
use wirebench_protocol::params::{MODE, NODELAY, ParamSpec};
use wirebench_protocol::{Case, CaseLink, Ctx, Env, Outcome, Protocol, Workload, WorkloadError};

pub const MODES: &[&str] = &["oneway", "echo"];

const PARAMS: &[ParamSpec] = &[MODE, NODELAY];

/// The plugin.
pub struct Raw;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Raw;

impl Protocol for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }

    fn summary(&self) -> &'static str {
        "wirebench's length-prefixed frames over TCP against its reference server (loopback, \
         a lab host, or `wirebench serve` anywhere)"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn uses_reference_server(&self) -> bool {
        true
    }

    /// The embedded reference server's limit (a server given with `--server` states its
    /// own per case).
    fn max_payload(&self) -> Option<u64> {
        Some(u64::from(
            wirebench_net::ServerConfig::default().max_payload,
        ))
    }

    fn stream_echoes(&self, case: &Case) -> bool {
        case.word("mode") == Some("echo")
    }

    fn message_overhead(&self) -> Option<u64> {
        Some(wirebench_raw::raw::HEADER_LEN as u64)
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        _repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        let mut slot = env.control.lock().unwrap_or_else(|p| p.into_inner());
        let mut ctl = match slot.take() {
            Some(c) => c,
            // A failed case may have left the control connection unusable.
            None => ControlClient::connect(env.server_addr, ctx.connect_timeout)?,
        };
        let r = run_case(&mut ctl, case, env.seed, ctx);
        if r.is_ok() {
            *slot = Some(ctl);
        }
        r
    }
}

fn run_case(
    ctl: &mut ControlClient,
    case: &Case,
    seed: u64,
    ctx: &Ctx,
) -> Result<Outcome, WorkloadError> {
    match case.workload_params() {
        Workload::Stream { count, duration } => {
            let s = Stream::from_case(case, seed)?;
            // On a rate-limited link the sockets and the link's queue hold far more than
            // the link carries in a short duration; stop at what it can carry instead.
            let frame = u64::from(s.payload) + wirebench_raw::raw::HEADER_LEN as u64;
            let budget = duration
                .and_then(|d| (ctx.link_budget)(frame, s.mode == Mode::Echo, d))
                .filter(|b| count.is_none_or(|c| *b < c));
            let s = Stream {
                count: budget.or(count),
                ..s
            };
            let mut out = stream::run(ctl, &s, ctx)?;
            if let (Some(b), Some(d)) = (budget, duration) {
                out.notes.push(budget_note(b, d));
            }
            Ok(out)
        }
        Workload::PingPong { .. } => pingpong::run(ctl, &PingPong::from_case(case, seed)?, ctx),
        // Refused by the runner before the run starts (raw offers no sessions).
        Workload::Load | Workload::Connect => Err(WorkloadError::Environment(format!(
            "raw has no {} workload",
            case.workload()
        ))),
    }
}

fn budget_note(b: u64, d: Duration) -> String {
    format!(
        "the link's rate carries about {b} messages in {}: the stream sent at most that many",
        wirebench_model::format_duration(d)
    )
}

/// The payload as a frame length field carries it.
fn payload_of(case: &Case) -> Result<u32, WorkloadError> {
    let payload = case.payload();
    u32::try_from(payload)
        .map_err(|_| WorkloadError::Input(format!("payload of {payload} bytes is too large")))
}

fn nodelay_of(case: &Case) -> bool {
    case.word("nodelay") != Some("off")
}
