//! `raw`: wirebench's own length-prefixed frames over TCP against its reference server
//! (`docs/protocols/raw.md`). The wire format and the sans-IO engines are in
//! `protocols/raw/engine` (`wirebench-raw`); the server side is the reference server
//! (`protocols/raw/server`: this plugin starts it for a run on loopback or in the lab's
//! server host, or `wirebench serve` runs it anywhere). This crate holds the client
//! drivers and the plugin:
//!
//! - [`pingpong`]: study S1's latency test. One message in flight; the responder answers
//!   (optionally after a think time); every round's RTT is kept.
//! - [`stream`]: a flood of messages, one way (the server counts) or echoed, timed until
//!   the receiver holds the last byte.

mod conn;
pub mod pingpong;
pub mod stream;

use pingpong::PingPong;
use std::sync::Mutex;
use std::time::Duration;
use stream::{Mode, Stream};
use wirebench_protocol::params::{MODE, NODELAY, ParamSpec, TCP_INFO};
use wirebench_protocol::{
    Case, CaseLink, Ctx, Env, Fault, Outcome, Protocol, RunEnv, RunService, Workload, WorkloadError,
};
use wirebench_raw::raw::FrameError;
use wirebench_raw_server::{ControlClient, Server, ServerConfig, ServerHandle};

pub const MODES: &[&str] = &["oneway", "echo"];

const PARAMS: &[ParamSpec] = &[MODE, NODELAY, TCP_INFO];

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
            wirebench_raw_server::ServerConfig::default().max_payload,
        ))
    }

    fn serve_main(
        &self,
        listen: &str,
        max_payload: &str,
        log: bool,
    ) -> Option<anyhow::Result<Box<dyn wirebench_protocol::MainServer>>> {
        Some(reference_server(listen, max_payload, log))
    }

    fn start_run(&self, run: &RunEnv) -> Result<Option<RunService>, WorkloadError> {
        let (embedded, addr) = match (run.server, run.lab) {
            (Some(a), _) => (None, a.to_string()),
            (None, lab) => {
                let h = start_embedded(lab)?;
                let a = h.addr().to_string();
                (Some(h), a)
            }
        };
        // Connected now so a run that cannot reach its server fails before writing
        // anything.
        let control = ControlClient::connect(&addr, run.connect_timeout)?;
        let against = Some(format!("the reference server at {addr}"));
        let state = RawRun {
            _embedded: embedded,
            addr,
            control: Mutex::new(Some(control)),
        };
        Ok(Some(RunService {
            state: Box::new(state),
            against,
        }))
    }

    fn stream_echoes(&self, case: &Case) -> bool {
        wirebench_protocol::params::Mode::of(case).is_echo()
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
        let run = env
            .service
            .and_then(|s| s.downcast_ref::<RawRun>())
            .ok_or_else(|| {
                WorkloadError::Environment("raw: the run started no reference server".into())
            })?;
        let mut slot = run.control.lock().unwrap_or_else(|p| p.into_inner());
        let mut ctl = match slot.take() {
            Some(c) if c.is_open() => c,
            // A failed case may have left the control connection unusable, and the
            // server closes one idle for long (other protocols' cases ran meanwhile).
            _ => ControlClient::connect(&run.addr, ctx.connect_timeout)?,
        };
        let r = run_case(&mut ctl, case, env.seed, ctx);
        if r.is_ok() {
            *slot = Some(ctl);
        }
        r
    }
}

/// What a run of raw cases keeps: the embedded server (dropping it stops it), and the
/// control connection kept between cases (`None` after a failure: the next case
/// reconnects).
struct RawRun {
    _embedded: Option<ServerHandle>,
    addr: String,
    control: Mutex<Option<ControlClient>>,
}

/// The reference server for this run: in the lab's server host (its threads and sockets
/// stay in that namespace) at the lab's fixed address, or on a free loopback port.
fn start_embedded(lab: Option<wirebench_protocol::Hosts>) -> Result<ServerHandle, WorkloadError> {
    let embedded = |e: std::io::Error| {
        WorkloadError::because(Fault::Environment, "cannot start the embedded server", e)
    };
    let Some(lab) = lab else {
        return Server::bind("127.0.0.1:0", ServerConfig::default())
            .and_then(|s| s.spawn())
            .map_err(embedded);
    };
    std::thread::scope(|s| {
        s.spawn(|| -> Result<ServerHandle, WorkloadError> {
            lab.server()
                .enter()
                .map_err(|e| WorkloadError::caused(Fault::Environment, e))?;
            Server::bind(
                (wirebench_protocol::hosts::SERVER_ADDR, 7420),
                ServerConfig::default(),
            )
            .and_then(|s| s.spawn())
            .map_err(embedded)
        })
        .join()
        .unwrap_or_else(|_| {
            Err(WorkloadError::Environment(
                "server start-up panicked".into(),
            ))
        })
    })
}

/// `wirebench serve`'s reference server: `--max-payload` checked, bound to `listen`.
fn reference_server(
    listen: &str,
    max_payload: &str,
    log: bool,
) -> anyhow::Result<Box<dyn wirebench_protocol::MainServer>> {
    use anyhow::Context;
    let max = wirebench_model::Bytes::parse(max_payload).context("--max-payload")?;
    let max_payload = u32::try_from(max.0)
        .ok()
        .filter(|m| *m > 0)
        .ok_or_else(|| {
            anyhow::anyhow!("--max-payload {max_payload}: must be from 1B to below 4GiB")
        })?;
    let cfg = ServerConfig {
        max_payload,
        log,
        ..Default::default()
    };
    let server = Server::bind(listen, cfg).with_context(|| format!("cannot listen on {listen}"))?;
    Ok(Box::new(Reference(server)))
}

struct Reference(Server);

impl wirebench_protocol::MainServer for Reference {
    fn local_addr(&self) -> std::net::SocketAddr {
        self.0.local_addr()
    }

    fn run_until(self: Box<Self>, wait: Box<dyn FnOnce() + '_>) -> anyhow::Result<()> {
        use anyhow::Context;
        self.0
            .run_until(wait)
            .context("cannot start the server thread")
    }
}

/// A frame the server sent that the decoder refused: the server broke the protocol.
pub(crate) fn invalid_frame(e: FrameError) -> WorkloadError {
    WorkloadError::caused(Fault::Peer, InvalidFrame(e))
}

#[derive(Debug, thiserror::Error)]
#[error("the server sent an invalid frame: {0}")]
struct InvalidFrame(FrameError);

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
    case.is_on(&NODELAY)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shared_payload_limit_is_what_a_raw_frame_carries() {
        let covered = wirebench_raw::raw::HEADER_LEN as u64 - 4;
        assert_eq!(
            wirebench_protocol::params::MAX_PAYLOAD,
            u64::from(u32::MAX) - covered
        );
    }
}
