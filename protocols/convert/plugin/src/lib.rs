//! `convert`: the connect workload through an RFC 8803 Transport Converter (the 0-RTT
//! TCP Convert Protocol), study S3's answer to SOCKS5's round trips
//! (docs/protocols/proxies.md). Our converter ([`converter`]) is started per case beside
//! the origin, in the lab's server host; the client puts its Convert message (a Connect
//! TLV naming the origin) and its first data in one write, which with `tfo=on` rides in
//! the SYN:
//!
//! - `tfo=on`: one round trip to the first byte, as direct TCP with Fast Open (plus the
//!   converter's own leg to the server, here inside one host);
//! - `tfo=off`: two, as direct TCP: the request costs no round trip of its own either way.
//!
//! The codec is `wirebench-convert` (protocols/convert/engine).

pub mod commands;
pub mod converter;
pub mod local;

use std::net::SocketAddr;
use std::sync::Arc;
use wirebench_connect::params::{CONCURRENCY, CONNECTS, MPTCP, TFO};
use wirebench_connect::{ConnectProtocol, Dial, Dialed, plugin};
use wirebench_convert as cv;
use wirebench_model::MetricSpec;
use wirebench_protocol::Fault;
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Case, Ctx, Env, Outcome, Protocol, WorkloadError};

/// `wirebench converter-client`: runs `serve` on `listener` in this
/// thread (a single-threaded runtime with a `LocalSet`) until `stop` is set, which it
/// checks every 100 ms.
fn run_standalone<F, Fut>(
    listener: std::net::TcpListener,
    stop: Arc<std::sync::atomic::AtomicBool>,
    serve: F,
) -> Result<(), String>
where
    F: FnOnce(tokio::net::TcpListener, Arc<wirebench_rpc::Counters>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let l = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
        let stopped = async {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        };
        tokio::select! {
            _ = serve(l, Arc::new(wirebench_rpc::Counters::default())) => {}
            _ = stopped => {}
        }
        Ok(())
    })
}

const PARAMS: &[ParamSpec] = &[
    TFO,
    MPTCP,
    CONNECTS,
    CONCURRENCY,
    wirebench_rpc::params::RATE,
    wirebench_connect::proxy::THREADS,
];

/// The client side: connects to the converter; its request travels with the first data.
pub struct ConvertDial {
    pub converter: SocketAddr,
    pub tfo: bool,
    /// Multipath TCP to the converter: the client-to-converter leg of study S3's set-up.
    pub mptcp: bool,
}

/// The converter's answer off the front of the stream: its length once complete, its
/// Error TLV as a refusal.
fn read_reply(buf: &[u8]) -> Result<Option<usize>, WorkloadError> {
    match cv::parse(buf) {
        Ok(None) => Ok(None),
        Ok(Some((tlvs, n))) => match tlvs.iter().find_map(|t| match t {
            cv::Tlv::Error { code, .. } => Some(*code),
            _ => None,
        }) {
            Some(code) => Err(WorkloadError::Peer(format!(
                "the converter refused: {code}"
            ))),
            None => Ok(Some(n)),
        },
        Err(e) => Err(WorkloadError::because(
            Fault::Peer,
            "the converter's answer is not a Convert message",
            e,
        )),
    }
}

impl Dial for ConvertDial {
    async fn dial(&self, origin: SocketAddr) -> Result<Dialed, WorkloadError> {
        let (stream, tcp_ns) =
            wirebench_connect::open(self.converter, self.tfo, self.mptcp).await?;
        Ok(Dialed {
            stream: Box::new(stream),
            tcp_ns,
            proxy_ns: 0,
            prefix: cv::connect_request(origin),
            reply: Some(read_reply),
        })
    }
}

/// The metrics only convert's cases record (docs/results.md).
pub const CONVERT_ONWARD_TFO: MetricSpec = MetricSpec::new(
    "convert.onward_tfo",
    "count",
    "connections onwards whose SYN carried the client's data and were accepted",
);
pub const CONVERT_LEG: MetricSpec = MetricSpec::dist(
    "convert.leg",
    wirebench_model::metric::STATS,
    "s",
    "the converter's own connection onwards, from its start to the server's accept",
);

static METRICS: &[MetricSpec] = &[CONVERT_ONWARD_TFO, CONVERT_LEG];

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &ConnectProtocol {
    name: "convert",
    summary: "connections through an RFC 8803 0-RTT Transport Converter of ours to an echo server (workload connect: time to first byte)",
    params: PARAMS,
    metrics: METRICS,
    commands: commands::COMMANDS,
    servers: |_| "a Transport Converter and an echo server of ours started per case",
    prerequisites: plugin::none_needed,
    round_trips: wirebench_connect::tcp_round_trips,
    serves: "(an RFC 8803 converter to loopback destinations)",
    serve_alone,
    check: plugin::no_check,
    run,
};

fn serve_alone(
    listener: std::net::TcpListener,
    limits: &wirebench_protocol::AloneLimits,
) -> Result<(), String> {
    let cfg = Arc::new(converter::Config {
        allow: converter::Allow::loopback(),
        tfo: true,
        log: limits.log,
        legs: None,
        cap: Some(limits.connections.clone()),
    });
    wirebench_rpc::server::serve_alone(listener, "convert", limits, move |l, c, _| {
        converter::serve(l, c, cfg)
    })
}

fn run(env: &Env, case: &Case, _repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let tfo = case.is_on(&wirebench_connect::params::TFO);
    let mptcp = case.is_on(&wirebench_connect::params::MPTCP);
    let lab = env.lab;
    let threads = wirebench_connect::proxy::threads(case);
    let legs = Arc::new(converter::Legs::default());
    let kept = legs.clone();
    let r = wirebench_connect::run_case(env, case, ctx, |origin| {
        let cfg = Arc::new(converter::Config {
            allow: converter::Allow::Only(vec![origin]),
            tfo,
            log: false,
            legs: Some(kept),
            cap: None,
        });
        let placed = wirebench_connect::place_proxy(lab, "convert", mptcp, threads, {
            move |l, c| converter::serve(l, c, cfg.clone())
        })?;
        let d = ConvertDial {
            converter: placed.addr,
            tfo,
            mptcp,
        };
        Ok((d, vec![placed]))
    });
    // The legs go with partial results too: an interrupted case keeps what it has.
    let add = |out: &mut Outcome| {
        let times = legs.take();
        if !times.is_empty() {
            wirebench_connect::push_distribution(out, CONVERT_LEG, &times);
        }
        if tfo {
            out.put(CONVERT_ONWARD_TFO, legs.syn_data() as f64);
        }
        out.notes.push(
            "Convert (RFC 8803): the Connect TLV and the first message share one write (the SYN with tfo=on; the converter's SYN onwards carries the message too); connect.proxy is the converter's answer, from that write; convert.leg is the converter's own connection onwards, from its start to the origin's first byte; convert.onward_tfo counts those whose SYN carried the client's data".into(),
        );
    };
    match r {
        Ok(mut out) => {
            add(&mut out);
            Ok(out)
        }
        Err(WorkloadError::InterruptedAfter(mut out)) => {
            add(&mut out);
            Err(WorkloadError::InterruptedAfter(out))
        }
        Err(e) => Err(e),
    }
}
