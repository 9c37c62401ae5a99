//! CoAP cases (RFC 7252, block-wise transfer RFC 7959): our client against a server
//! started per case, ours (`builtin`), libcoap's or aiocoap's.
//!
//! ```text
//!   loopback:   client ── server (127.0.0.1)
//!   with link:  client host (198.18.0.1)          server host (198.18.0.2)
//!               client ═════════link═════════ server
//! ```
//!
//! Without link parameters both run on loopback (no root needed). With them the server
//! runs in the lab's server host and the client in the client host: a request and its
//! piggybacked response (§5.2.1) cross the link once each, as a constrained device's
//! request to a server on the ground does over satellite.
//!
//! What the cases are for: a Confirmable request is retransmitted when its ACK has not
//! come within a timeout drawn from [ACK_TIMEOUT, ACK_TIMEOUT × ACK_RANDOM_FACTOR]
//! (§4.2), 2 to 3 s with the defaults of §4.8. A round trip over 2400 bit/s with 1 s of
//! one-way delay is longer than that, so every request is sent twice though nothing was
//! lost; §4.8.1 allows tuning ACK_TIMEOUT to the path, and `coap.ack-timeout` does.
//! `coap.spurious` counts the retransmissions shown unnecessary by a second ACK (the
//! engine's `client` module explains the count).
//!
//! The folder: the sans-IO endpoints in `protocols/coap/engine`
//! (`wirebench-coap-engine`); here the servers of a case ([`peers`]), the client on the
//! blocking datagram driver ([`client`]), the workloads ([`workload`]) and the plugin.

pub mod client;
pub mod peers;
pub mod workload;

use peers::{Kind, Peer};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use wirebench_coap_engine::{Szx, TransmissionParams};
use wirebench_model::{Kind as ParamKind, MetricSpec};
use wirebench_protocol::hosts::SERVER_ADDR;
use wirebench_protocol::params::{PEER_STREAM_COUNT, ParamSpec};
use wirebench_protocol::{
    Case, CaseLink, Ctx, Env, Outcome, PeerModel, Placement, Protocol, Transport, WorkloadError,
};
use workload::CoapRun;

const WORKLOADS: &[&str] = &["pingpong", "stream"];

pub const SERVER: ParamSpec = ParamSpec {
    name: "coap.server",
    kind: ParamKind::Choice(&["builtin", "libcoap", "aiocoap"]),
    default: "builtin",
    workloads: WORKLOADS,
    help: "the server started per case: builtin (our engine's), libcoap (coap-server-notls, Debian libcoap3-bin) or aiocoap (PyPI, in a venv)",
    words: "CoAP server",
};

pub const TYPE: ParamSpec = ParamSpec {
    name: "coap.type",
    kind: ParamKind::Choice(&["con", "non"]),
    default: "con",
    workloads: WORKLOADS,
    help: "request type: con (Confirmable: ACKed, retransmitted per RFC 7252 §4.2) or non (Non-confirmable: sent once, §4.3)",
    words: "CoAP message type",
};

pub const ACK_TIMEOUT: ParamSpec = ParamSpec {
    name: "coap.ack-timeout",
    kind: ParamKind::Duration,
    default: "2s",
    workloads: WORKLOADS,
    help: "ACK_TIMEOUT of our client (RFC 7252 §4.8, default 2s): the first retransmission comes 1 to 1.5 times this after the request; tune above the round trip (§4.8.1)",
    words: "ACK_TIMEOUT",
};

pub const MAX_RETRANSMIT: ParamSpec = ParamSpec {
    name: "coap.max-retransmit",
    kind: ParamKind::Count,
    default: "4",
    workloads: WORKLOADS,
    help: "MAX_RETRANSMIT of our client (RFC 7252 §4.8, default 4, at most 20): retransmissions before a request times out",
    words: "MAX_RETRANSMIT",
};

pub const BLOCK: ParamSpec = ParamSpec {
    name: "coap.block",
    kind: ParamKind::Bytes,
    default: "1024",
    workloads: WORKLOADS,
    help: "block size of Block1 uploads (a stream's, and a ping-pong's above 1024 bytes, which goes block-wise unechoed) (RFC 7959 §2.2): a power of two from 16 to 1024 bytes",
    words: "block size",
};

const PARAMS: &[ParamSpec] = &[SERVER, TYPE, ACK_TIMEOUT, MAX_RETRANSMIT, BLOCK];

pub const SERVER_START: MetricSpec = MetricSpec::new(
    "coap.server_start",
    "s",
    "the server's start to its first answer",
);
pub const RETRANSMISSIONS: MetricSpec = MetricSpec::new(
    "coap.retransmissions",
    "count",
    "retransmissions of Confirmable requests (RFC 7252 §4.2)",
);
pub const SPURIOUS: MetricSpec = MetricSpec::new(
    "coap.spurious",
    "count",
    "retransmissions shown unnecessary by a second ACK (the copy before had arrived)",
);
pub const TIMEOUTS: MetricSpec = MetricSpec::new(
    "coap.timeouts",
    "count",
    "requests given up after MAX_RETRANSMIT, or with no response in time",
);
pub const REQUEST_BYTES: MetricSpec = MetricSpec::new(
    "coap.request_bytes",
    "B",
    "bytes of one request datagram above UDP",
);
pub const EXCHANGES: MetricSpec = MetricSpec::new(
    "coap.exchanges",
    "count",
    "request/response exchanges of a stream (one per block, RFC 7959 §2.5)",
);
pub const DATAGRAMS: MetricSpec = MetricSpec::new(
    "coap.datagrams",
    "count",
    "datagrams our client sent and received",
);

static METRICS: &[MetricSpec] = &[
    SERVER_START,
    RETRANSMISSIONS,
    SPURIOUS,
    TIMEOUTS,
    REQUEST_BYTES,
    EXCHANGES,
    DATAGRAMS,
];

/// Bytes a request adds to its payload on the wire: IPv4 and UDP's headers, 4 of CoAP
/// header, a 4-byte token, the Uri-Path option (~13) and the payload marker; the
/// piggybacked response is a little shorter (no Uri-Path), which the model ignores.
const PER_MESSAGE: f64 = Transport::Udp.ipv4_overhead() as f64 + 4.0 + 4.0 + 13.0 + 1.0;

pub struct Coap;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Coap;

/// `coap.server` as a kind of server.
pub fn kind_of(case: &Case) -> Kind {
    Kind::from_word(case.choice(&SERVER)).unwrap_or(Kind::Builtin)
}

/// Our client's transmission parameters: the defaults of RFC 7252 §4.8 but for
/// `coap.ack-timeout` and `coap.max-retransmit`.
pub fn params_of(case: &Case) -> TransmissionParams {
    let mut p = TransmissionParams::default();
    if let Some(t) = case.duration(&ACK_TIMEOUT) {
        p.ack_timeout_ns = t.as_nanos().min(u128::from(u64::MAX)) as u64;
    }
    if let Some(n) = case.count(&MAX_RETRANSMIT) {
        p.max_retransmit = n.min(u64::from(u32::MAX)) as u32;
    }
    p
}

/// A block size RFC 7959 allows: 2^(SZX+4) for SZX 0 to 6.
fn block_of(case: &Case) -> Result<Szx, WorkloadError> {
    let b = case.bytes(&BLOCK).unwrap_or(1024);
    let szx = Szx::at_most(b as usize);
    if szx.size() as u64 != b {
        return Err(WorkloadError::Input(format!(
            "coap.block={b}: a block is a power of two from 16 to 1024 bytes (RFC 7959 §2.2)"
        )));
    }
    Ok(szx)
}

impl Protocol for Coap {
    fn name(&self) -> &'static str {
        "coap"
    }

    fn summary(&self) -> &'static str {
        "CoAP (RFC 7252, block-wise RFC 7959) over UDP: our client against a server started per case, ours, libcoap or aiocoap (loopback; with a link: the server in the lab's server host)"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn metrics(&self) -> &'static [MetricSpec] {
        METRICS
    }

    fn legend_by_value(&self) -> &'static [&'static str] {
        &["coap.server"]
    }

    fn prerequisites(&self, case: &Case) -> Vec<wirebench_protocol::Prerequisite> {
        let kind = kind_of(case);
        kind.requirement()
            .map(|r| r.because(format!("coap.server={}", kind.name())))
            .into_iter()
            .collect()
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        Some(match kind_of(case) {
            Kind::Builtin => "our CoAP server started per case",
            Kind::Libcoap => "a libcoap coap-server started per case",
            Kind::Aiocoap => "an aiocoap server started per case",
        })
    }

    fn transport(&self) -> Transport {
        Transport::Udp
    }

    fn serve_alone_help(&self) -> Option<&'static str> {
        Some("(UDP: /echo answers with the payload, /upload takes Block1 uploads)")
    }

    fn serve_alone_udp(
        &self,
        socket: std::net::UdpSocket,
        limits: &wirebench_protocol::AloneLimits,
    ) -> Option<Result<(), String>> {
        // The server stops with the process: nothing ever sets the flag.
        static NEVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let max_upload = limits.max_payload;
        let started = std::thread::Builder::new()
            .name("wb-coap-alone".into())
            .spawn(move || peers::serve(&socket, max_upload, &NEVER));
        Some(
            started
                .map(drop)
                .map_err(|e| format!("cannot start its thread: {e}")),
        )
    }

    fn stream_count(&self) -> Option<u64> {
        Some(PEER_STREAM_COUNT)
    }

    fn peer_model(&self, case: &Case) -> Option<PeerModel> {
        let payload = case.payload() as f64;
        let stream = case.workload() == "stream";
        // A stream's upload is one exchange per block, each a round trip (NSTART 1),
        // which the shared model cannot see: its bytes are counted here, its round
        // trips in `processing_s` on loopback only.
        let blocks = if stream || case.payload() > workload::ECHO_MAX as u64 {
            let b = block_of(case).map_or(1024, |s| s.size()) as f64;
            (payload / b).ceil().max(1.0)
        } else {
            1.0
        };
        Some(PeerModel {
            // Measured on loopback: our server's thread starts at once, libcoap's
            // in ~10 ms, aiocoap's Python imports for ~0.5 s.
            start_s: match kind_of(case) {
                Kind::Builtin => 0.01,
                Kind::Libcoap => 0.05,
                Kind::Aiocoap => 0.8,
            },
            start_delays: 0.0,
            // No handshake: the first request is the first datagram.
            setup_bytes: 0.0,
            setup_delays: 0.0,
            per_message: PER_MESSAGE * blocks,
            processing_s: 0.0001 * blocks,
        })
    }

    fn check(&self, case: &Case, _at: &Placement) -> Result<(), WorkloadError> {
        params_of(case)
            .validate()
            .map_err(|e| WorkloadError::Input(format!("coap transmission parameters: {e}")))?;
        block_of(case)?;
        Ok(())
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        self.check(case, &Placement::default())?;
        run_case(env, case, repeat, ctx)
    }
}

fn run_case(env: &Env, case: &Case, repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    // Datagrams of an earlier case still queued on a 2400 bit/s link would delay this
    // one's first round.
    if let Some(lab) = env.lab {
        lab.wait_quiet(Duration::from_secs(120), ctx)?;
    }
    let netns = env.lab.map(|l| l.server().name().to_string());
    let ip: IpAddr = match env.lab {
        Some(_) => SERVER_ADDR.into(),
        None => Ipv4Addr::LOCALHOST.into(),
    };
    let kind = kind_of(case);
    let w = case.workload_params();
    let run = CoapRun {
        kind,
        server: std::net::SocketAddr::new(ip, 0),
        confirmable: case.choice(&TYPE) != "non",
        params: params_of(case),
        payload: case.payload() as usize,
        count: if w.is_stream() {
            w.messages().max(1)
        } else {
            w.messages()
        },
        think: w.think(),
        stream: w.is_stream(),
        block: block_of(case)?,
        seed: env.seed,
    };
    let mut peer = Peer::start(
        kind,
        netns.as_deref(),
        &env.peer_dir(case, repeat),
        ip,
        run.payload.max(1024),
    )?;
    let run = CoapRun {
        server: peer.addr,
        ..run
    };
    let mut out = Outcome::default();
    out.push(SERVER_START.name, peer.start_time.as_secs_f64(), "s");
    if let Err(e) = workload::run(&run, ctx, &mut out) {
        return Err(peers::with_log(e, &mut peer));
    }
    wirebench_peer::record_usage(&mut out, peer.usage());
    let p = run.params;
    out.notes.push(format!(
        "CoAP {} {} to {} at {} ({}); ACK_TIMEOUT {:.3} s, ACK_RANDOM_FACTOR {}, \
         MAX_RETRANSMIT {}, NSTART {} (RFC 7252 §4.8){}",
        if run.confirmable { "CON" } else { "NON" },
        run.target(),
        kind.name(),
        peer.addr,
        if env.lab.is_some() {
            "in the lab's server host, the client across the link"
        } else {
            "loopback"
        },
        p.ack_timeout_ns as f64 / 1e9,
        p.ack_random_factor,
        p.max_retransmit,
        p.nstart,
        if !run.echoes() {
            format!(
                "; {} uploads of {} B in {}-byte Block1 blocks (RFC 7959 §2.5), not echoed",
                run.count,
                run.payload,
                run.block.size()
            )
        } else {
            String::new()
        }
    ));
    if let Some(stats) = peer.finish() {
        // On a lossless path these equal coap.spurious: a check on the client's count.
        out.notes.push(format!(
            "the builtin server saw {} requests and {} duplicates (retransmitted copies that arrived after one before)",
            stats.requests, stats.duplicates
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specs and the enums cannot drift: a choice added to a spec needs a variant.
    #[test]
    fn every_server_choice_parses() {
        for w in SERVER.choices() {
            assert_eq!(Kind::from_word(w).map(Kind::name), Some(*w));
        }
    }

    #[test]
    fn block_sizes_are_powers_of_two() {
        for (b, ok) in [
            (16, true),
            (1024, true),
            (100, false),
            (2048, false),
            (8, false),
        ] {
            assert_eq!(Szx::at_most(b).size() == b, ok, "{b}");
        }
    }
}
