//! QUIC cases (RFC 9000 transport, RFC 9001 TLS 1.3 handshake, RFC 9002 loss detection
//! and congestion control): our client on quinn-proto through `wirebench-quic-engine`
//! against a server started per case (`quic.server`): ours, quic-go's or ngtcp2's
//! example server ([`peers`]). In our own ALPNs (`quic.app=raw`, ours only) or in
//! HTTP/3 (`quic.app=h3`, RFC 9114: every server; [`download`]).
//!
//! ```text
//!   loopback:   client ── server (127.0.0.1)
//!   with link:  client host (198.18.0.1)          server host (198.18.0.2)
//!               client ═════════link═════════ server
//! ```
//!
//! Without link parameters both run on loopback (no root needed). With them the server
//! runs in the lab's server host and the client in the client host, one UDP flow
//! between them, counted by the runner as UDP (`Outcome::transport`).
//!
//! What the cases are for: a QUIC connection costs one round trip before the client's
//! first 1-RTT data (RFC 9001 §4.1) and two before its handshake is confirmed (the
//! server's HANDSHAKE_DONE, §4.1.2); the client's first datagram is padded to 1200 bytes
//! (RFC 9000 §14.1), and its probe timeout starts from an initial RTT of 333 ms (RFC
//! 9002 §6.2.2). On a slow, long link these collide: `quic.initial-rtt` tunes the
//! latter, and the record carries the engine's loss, congestion and RTT state to show
//! what happened.
//!
//! The folder: the sans-IO endpoint and our echo and sink services in
//! `protocols/quic/engine` (`wirebench-quic-engine`); here the client on the blocking
//! datagram driver ([`client`]), the server's thread ([`server`]), the workloads
//! ([`workload`], [`download`]), the servers of a case ([`peers`]) and the plugin.

pub mod client;
pub mod connect;
pub mod download;
pub mod peers;
pub mod serve;
pub mod server;
pub mod workload;

use peers::{Kind, Peer};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use wirebench_model::{Kind as ParamKind, MetricSpec};
use wirebench_protocol::hosts::SERVER_ADDR;
use wirebench_protocol::params::{ON_OFF, PEER_STREAM_COUNT, ParamSpec};
use wirebench_protocol::{
    Case, CaseLink, Ctx, Env, Outcome, PeerModel, Placement, Protocol, WorkloadError,
};
use wirebench_quic_engine::{Cc, Identity, Transport, sim};
use wirebench_rpc::params::RATE;
use workload::QuicRun;

const WORKLOADS: &[&str] = &["pingpong", "stream", "connect"];

pub const CC: ParamSpec = ParamSpec {
    name: "quic.cc",
    kind: ParamKind::Choice(&["cubic", "newreno", "bbr"]),
    default: "cubic",
    workloads: WORKLOADS,
    help: "congestion controller of both endpoints (quinn-proto's): cubic (RFC 9438), newreno (RFC 9002 §7) or bbr (BBRv1, experimental in quinn)",
    words: "QUIC congestion control",
};

pub const INITIAL_RTT: ParamSpec = ParamSpec {
    name: "quic.initial-rtt",
    kind: ParamKind::Duration,
    default: "333ms",
    workloads: WORKLOADS,
    help: "the RTT both endpoints assume before measuring one (RFC 9002 §6.2.2, kInitialRtt 333ms): the first probe timeout is three times it",
    words: "initial RTT",
};

pub const MAX_DATAGRAM: ParamSpec = ParamSpec {
    name: "quic.max-datagram",
    kind: ParamKind::Bytes,
    default: "1200",
    workloads: WORKLOADS,
    help: "UDP payload of every QUIC datagram, from 1200 (RFC 9000 §14, the default) to 65507 bytes; path MTU discovery is off, so this is the size on the wire",
    words: "QUIC datagram size",
};

pub const IDLE_TIMEOUT: ParamSpec = ParamSpec {
    name: "quic.idle-timeout",
    kind: ParamKind::Duration,
    default: "30s",
    workloads: WORKLOADS,
    help: "max_idle_timeout both endpoints advertise (RFC 9000 §10.1); 0s: none",
    words: "QUIC idle timeout",
};

pub const WINDOW: ParamSpec = ParamSpec {
    name: "quic.window",
    kind: ParamKind::Bytes,
    default: "",
    workloads: WORKLOADS,
    help: "flow-control window our endpoints grant each stream (RFC 9000 §4, initial_max_stream_data) and send unacknowledged, 1200 B to 1 GiB; unset: quinn's 1.25 MB, which holds a download to 1.25 MB per round trip (15 Mbit/s at 650 ms)",
    words: "QUIC flow-control window",
};

pub const ACK_THRESHOLD: ParamSpec = ParamSpec {
    name: "quic.ack-threshold",
    kind: ParamKind::Count,
    default: "",
    workloads: WORKLOADS,
    help: "ACK frequency (draft-ietf-quic-ack-frequency, builtin server and our client): each endpoint asks its peer to acknowledge after this many ack-eliciting packets (or its max_ack_delay), 0 to 10000; unset: not asked, every second packet (RFC 9000 §13.2.2). A slow return link carries fewer ACKs",
    words: "QUIC ACK threshold",
};

pub const STREAMS: ParamSpec = ParamSpec {
    name: "quic.streams",
    kind: ParamKind::Choice(&["one", "per-message"]),
    default: "one",
    workloads: &["pingpong", "stream"],
    help: "ping-pong: one (every message on one bidirectional stream) or per-message (a new stream per message, finished after it; RFC 9000 §2); stream in HTTP/3: one (one GET of count x payload) or per-message (count GETs of payload at once on one connection, the interop runner's multiplexing)",
    words: "QUIC streams",
};

pub const QLOG: ParamSpec = ParamSpec {
    name: "quic.qlog",
    kind: ParamKind::Choice(ON_OFF),
    default: "on",
    workloads: WORKLOADS,
    help: "write the client's qlog (JSON-SEQ, draft-ietf-quic-qlog; qvis reads it) to peers/case-NNNN-rK/client.sqlog",
    words: "qlog",
};

pub const ZERO_RTT: ParamSpec = ParamSpec {
    name: "quic.0rtt",
    kind: ParamKind::Choice(ON_OFF),
    default: "off",
    workloads: &["connect"],
    help: "connect: a connection started after a session ticket came (the clients share them) resumes from it and sends its message as 0-RTT data with its first Initial (RFC 9001 §4.6), one round trip to the first byte instead of two",
    words: "QUIC 0-RTT",
};

pub const SERVER: ParamSpec = ParamSpec {
    name: "quic.server",
    kind: ParamKind::Choice(&["builtin", "quic-go", "ngtcp2"]),
    default: "builtin",
    workloads: WORKLOADS,
    help: "the server started per case: builtin (our engine's), quic-go (0.65.0's example server, scripts/install-quic-go.sh) or ngtcp2 (gtlsserver, Debian ngtcp2-server); the real ones speak HTTP/3 only (quic.app=h3)",
    words: "QUIC server",
};

pub const APP: ParamSpec = ParamSpec {
    name: "quic.app",
    kind: ParamKind::Choice(&["raw", "h3"]),
    default: "raw",
    workloads: WORKLOADS,
    help: "what the streams carry: raw (our echo and sink ALPNs, builtin server only) or h3 (HTTP/3, RFC 9114: GET /N answered with N bytes; a request per round, or one download of count x payload)",
    words: "QUIC application",
};

pub const RETRY: ParamSpec = ParamSpec {
    name: "quic.retry",
    kind: ParamKind::Choice(ON_OFF),
    default: "off",
    workloads: WORKLOADS,
    help: "the server validates the client's address with a Retry packet before the handshake (RFC 9000 §8.1.2), one round trip more: our builtin server, or ngtcp2's (gtlsserver -V); quic-go's example server has no such option",
    words: "QUIC Retry",
};

const PARAMS: &[ParamSpec] = &[
    wirebench_connect::params::CONNECTS,
    wirebench_connect::params::CONCURRENCY,
    wirebench_rpc::params::RATE,
    ZERO_RTT,
    SERVER,
    APP,
    RETRY,
    CC,
    INITIAL_RTT,
    MAX_DATAGRAM,
    IDLE_TIMEOUT,
    WINDOW,
    ACK_THRESHOLD,
    STREAMS,
    QLOG,
];

pub const SERVER_START: MetricSpec = MetricSpec::new(
    "quic.server_start",
    "s",
    "the server's start to its socket bound (builtin) or to our first QUIC handshake with it (a real peer)",
);
pub const HANDSHAKE: MetricSpec = MetricSpec::new(
    "quic.handshake",
    "s",
    "the client's first Initial to its handshake confirmed by HANDSHAKE_DONE (RFC 9001 §4.1.2): two round trips on an idle path",
);
pub const HANDSHAKE_COMPLETE: MetricSpec = MetricSpec::new(
    "quic.handshake_complete",
    "s",
    "the client's first Initial to its handshake complete, when 1-RTT data may flow (RFC 9001 §4.1.1): one round trip on an idle path",
);
pub const SENT_PACKETS: MetricSpec = MetricSpec::new(
    "quic.sent_packets",
    "count",
    "QUIC packets our client sent (coalesced packets count each, RFC 9000 §12.2)",
);
pub const LOST_PACKETS: MetricSpec = MetricSpec::new(
    "quic.lost_packets",
    "count",
    "packets our client declared lost (RFC 9002 §6.1: packet or time threshold)",
);
pub const LOST_BYTES: MetricSpec = MetricSpec::new(
    "quic.lost_bytes",
    "B",
    "bytes of the packets our client declared lost (RFC 9002 §6.1)",
);
pub const CONGESTION_EVENTS: MetricSpec = MetricSpec::new(
    "quic.congestion_events",
    "count",
    "recovery periods our client's congestion controller entered (RFC 9002 §7.3.2)",
);
pub const CWND: MetricSpec = MetricSpec::new(
    "quic.cwnd",
    "B",
    "our client's congestion window at the end (RFC 9002 §7)",
);
pub const PATH_RTT: MetricSpec = MetricSpec::new(
    "quic.path_rtt",
    "s",
    "our client's smoothed RTT at the end (RFC 9002 §5.3)",
);
pub const MIN_RTT: MetricSpec = MetricSpec::new(
    "quic.min_rtt",
    "s",
    "our client's min_rtt, the smallest sample without ACK delay (RFC 9002 §5.2)",
);
pub const DATAGRAMS: MetricSpec = MetricSpec::new(
    "quic.datagrams",
    "count",
    "UDP datagrams our client sent and received",
);

pub const ZERO_RTT_ACCEPTED: MetricSpec = MetricSpec::new(
    "quic.0rtt_accepted",
    "count",
    "connect: connections whose message went as 0-RTT data and the server accepted it (RFC 9001 §4.6)",
);

static METRICS: &[MetricSpec] = &[
    ZERO_RTT_ACCEPTED,
    SERVER_START,
    HANDSHAKE,
    HANDSHAKE_COMPLETE,
    SENT_PACKETS,
    LOST_PACKETS,
    LOST_BYTES,
    CONGESTION_EVENTS,
    CWND,
    PATH_RTT,
    MIN_RTT,
    DATAGRAMS,
];

/// The name our per-case certificate is for, and the client verifies.
pub(crate) const SERVER_NAME: &str = "quic.wirebench.test";

/// Bytes a short-header packet adds to a message on the wire: IPv4 and UDP's headers, about
/// 1 + 8 + 2 of header (flags, our 8-byte connection ID, packet number), a STREAM frame's
/// 4 and the AEAD tag's 16 (RFC 9001 §5.3); the echo carries the ACK, a few bytes more.
const PER_MESSAGE: f64 =
    wirebench_protocol::Transport::Udp.ipv4_overhead() as f64 + 11.0 + 4.0 + 16.0 + 4.0;

/// The handshake's bytes in its larger direction: the server's Initial padded to 1200
/// bytes (RFC 9000 §14.1) and its Handshake packet with the self-signed certificate.
const HANDSHAKE_BYTES: f64 = 2_000.0;

pub struct Quic;

/// The largest first message a set-up estimate simulates: the handshake's cost does not
/// grow with the message beyond its first packets.
const SIMULATED_PAYLOAD: u64 = 16 * 1024;

/// Virtual time after which a set-up estimate gives up (and the model's bytes and round
/// trips stand instead).
const SIMULATED_LIMIT_NS: u64 = 3600 * 1_000_000_000;

/// The case's handshake over its link, run by our engines in virtual time
/// (`wirebench_quic_engine::sim`): seconds it adds to the first exchange. Each link and
/// transport is simulated once per process, as a run's estimates ask again.
fn simulated_setup(case: &Case, link: &CaseLink) -> Option<f64> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static DONE: OnceLock<Mutex<HashMap<String, Option<f64>>>> = OnceLock::new();
    let transport = transport_of(case).ok()?;
    let app = if case.choice(&APP) == "h3" {
        sim::App::H3
    } else {
        sim::App::Echo
    };
    let payload = case.payload().clamp(1, SIMULATED_PAYLOAD) as usize;
    let (up, down) = (link.up_params(), link.down_params());
    let key = format!("{transport:?} {app:?} {payload} {up:?} {down:?}");
    let done = DONE.get_or_init(Default::default);
    if let Some(s) = done.lock().ok()?.get(&key) {
        return *s;
    }
    let s = sim::first_exchanges(&transport, app, payload, up, down, SIMULATED_LIMIT_NS)
        .ok()
        .map(|r| r.setup_ns() as f64 / 1e9);
    done.lock().ok()?.insert(key, s);
    s
}

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Quic;

/// `quic.server` as a kind of server.
pub fn kind_of(case: &Case) -> Kind {
    Kind::from_word(case.choice(&SERVER)).unwrap_or(Kind::Builtin)
}

/// The transport settings of a case's `quic.*` parameters.
pub fn transport_of(case: &Case) -> Result<Transport, WorkloadError> {
    let mut t = Transport {
        cc: Cc::from_word(case.choice(&CC)).unwrap_or(Cc::Cubic),
        ..Transport::default()
    };
    if let Some(d) = case.duration(&INITIAL_RTT) {
        t.initial_rtt = d;
    }
    if let Some(b) = case.bytes(&MAX_DATAGRAM) {
        t.max_datagram = u16::try_from(b).unwrap_or(u16::MAX);
        if u64::from(t.max_datagram) != b {
            return Err(WorkloadError::Input(format!(
                "quic.max-datagram={b}: {}",
                wirebench_quic_engine::ConfigError::Datagram(b)
            )));
        }
    }
    if let Some(d) = case.duration(&IDLE_TIMEOUT) {
        t.idle_timeout = (!d.is_zero()).then_some(d);
    }
    t.window = case.bytes(&WINDOW);
    t.ack_threshold = case.count(&ACK_THRESHOLD);
    t.zero_rtt = case.workload() == "connect" && case.is_on(&ZERO_RTT);
    t.retry = case.is_on(&RETRY);
    t.validate()
        .map_err(|e| WorkloadError::Input(format!("quic transport parameters: {e}")))?;
    Ok(t)
}

impl Protocol for Quic {
    fn name(&self) -> &'static str {
        "quic"
    }

    fn summary(&self) -> &'static str {
        "QUIC (RFC 9000/9001/9002, quinn-proto) and HTTP/3 over UDP: our client against a server started per case, our echo and sink or quic-go's and ngtcp2's HTTP/3 servers (loopback; with a link: the server in the lab's server host)"
    }

    fn workloads(&self) -> &'static [&'static str] {
        WORKLOADS
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn metrics(&self) -> &'static [MetricSpec] {
        METRICS
    }

    fn legend_by_value(&self) -> &'static [&'static str] {
        &["quic.server", "quic.cc"]
    }

    fn serve_flags(&self, serve: clap::Command) -> clap::Command {
        serve::serve_flags(serve)
    }

    fn serve_plan(
        &self,
        flags: &clap::ArgMatches,
        quiet: bool,
    ) -> anyhow::Result<Option<Box<dyn wirebench_protocol::ServePlan>>> {
        serve::serve_plan(flags, quiet)
    }

    fn prerequisites(&self, case: &Case) -> Vec<wirebench_protocol::Prerequisite> {
        let kind = kind_of(case);
        kind.requirement()
            .map(|r| r.because(format!("quic.server={}", kind.name())))
            .into_iter()
            .collect()
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        Some(match kind_of(case) {
            Kind::Builtin => "our QUIC server (quinn-proto) started per case",
            Kind::QuicGo => "quic-go's example HTTP/3 server started per case",
            Kind::Ngtcp2 => "ngtcp2's example HTTP/3 server (gtlsserver) started per case",
        })
    }

    fn transport(&self) -> wirebench_protocol::Transport {
        wirebench_protocol::Transport::Udp
    }

    fn stream_count(&self) -> Option<u64> {
        Some(PEER_STREAM_COUNT)
    }

    fn stream_downloads(&self, case: &Case) -> bool {
        case.choice(&APP) == "h3"
    }

    fn peer_model(&self, case: &Case) -> Option<PeerModel> {
        let per_stream = case.workload() == "pingpong" && case.choice(&STREAMS) == "per-message";
        Some(PeerModel {
            // A certificate, two TLS configurations and the server's thread; a real
            // peer's process and our first handshake with it (measured on loopback).
            start_s: match kind_of(case) {
                Kind::Builtin => 0.02,
                Kind::QuicGo | Kind::Ngtcp2 => 0.25,
            },
            start_delays: 0.0,
            // One round trip before the first 1-RTT data (RFC 9001 §4.1).
            setup_bytes: HANDSHAKE_BYTES,
            setup_delays: if case.is_on(&RETRY) { 4.0 } else { 2.0 },
            // A new stream's FIN rides with its data: a byte or two more.
            per_message: PER_MESSAGE + if per_stream { 2.0 } else { 0.0 },
            processing_s: 0.0001,
        })
    }

    fn connect_round_trips(&self, _case: &Case) -> f64 {
        // A connection lasts until its handshake is confirmed (HANDSHAKE_DONE, RFC 9001
        // §4.1.2), two round trips, which is when its echo comes in 1-RTT; the 0-RTT echo
        // comes a round trip earlier but the connection waits for its ticket.
        2.0
    }

    fn stream_window(&self, case: &Case) -> Option<f64> {
        // quinn-proto 0.11's stream receive window unless `quic.window` sets one.
        Some(case.bytes(&WINDOW).map_or(1_250_000.0, |w| w as f64))
    }

    fn connect_cpu_s(&self, case: &Case) -> f64 {
        // Measured in proxy-ttfb's lab on 2 cores, 50 at a time: 5,000 full handshakes
        // (a certificate signed and verified each) took 14 s where the paths alone
        // would take 8; resumed ones (a PSK, no certificate) 9.4 s.
        if case.is_on(&ZERO_RTT) {
            0.0038
        } else {
            0.0056
        }
    }

    fn setup_over(&self, case: &Case, link: &CaseLink) -> Option<f64> {
        let retry = if case.is_on(&RETRY) {
            // Retry costs one round trip more (RFC 9000 §8.1.2).
            (link.up.to_params().delay_ns + link.down.to_params().delay_ns) as f64 / 1e9
        } else {
            0.0
        };
        simulated_setup(case, link).map(|s| s + retry)
    }

    fn check(&self, case: &Case, _at: &Placement) -> Result<(), WorkloadError> {
        let kind = kind_of(case);
        if kind != Kind::Builtin && case.choice(&APP) != "h3" {
            return Err(WorkloadError::Input(format!(
                "quic.server={} speaks HTTP/3 only (ALPN h3), not our echo and sink: add --quic-app h3",
                kind.name()
            )));
        }
        if case.workload() == "connect" && case.payload() == 0 {
            return Err(WorkloadError::Input(
                "the connect workload times the first byte of the echo: give --payload 1 or more"
                    .into(),
            ));
        }
        concurrency_of(case)?;
        rate_of(case)?;
        if case.workload() == "stream"
            && case.choice(&STREAMS) == "per-message"
            && case.choice(&APP) != "h3"
        {
            return Err(WorkloadError::Input(
                "quic.streams=per-message in the stream workload is HTTP/3's multiplexing (requests at once): add --quic-app h3".into(),
            ));
        }
        if case.is_on(&RETRY) && kind == Kind::QuicGo {
            return Err(WorkloadError::Input(
                "quic.retry=on: quic-go's example server has no option to send a Retry; use quic.server=builtin or ngtcp2".into(),
            ));
        }
        transport_of(case).map(|_| ())
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        run_case(env, case, repeat, ctx)
    }
}

fn run_case(env: &Env, case: &Case, repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    Quic.check(case, &Placement::default())?;
    let transport = transport_of(case)?;
    // Datagrams of an earlier case still queued on a slow link would delay this one's
    // handshake.
    if let Some(lab) = env.lab {
        lab.wait_quiet(Duration::from_secs(120), ctx)?;
    }
    let netns = env.lab.map(|l| l.server().name().to_string());
    let ip: IpAddr = match env.lab {
        Some(_) => SERVER_ADDR.into(),
        None => Ipv4Addr::LOCALHOST.into(),
    };
    let identity = Identity::generate(SERVER_NAME)
        .map_err(|e| WorkloadError::Environment(format!("QUIC certificate: {e}")))?;
    let kind = kind_of(case);
    let dir = env.peer_dir(case, repeat);
    let mut peer = Peer::start(
        kind,
        &peers::Setup {
            netns: netns.as_deref(),
            dir: &dir,
            ip,
            identity: &identity,
            transport: &transport,
            qlog: case.is_on(&QLOG),
            retry: case.is_on(&RETRY),
            seed: env.seed,
        },
    )?;
    let qlog = if case.is_on(&QLOG) {
        std::fs::create_dir_all(&dir).map_err(|error| WorkloadError::Io {
            during: "creating the case's peer directory",
            error,
        })?;
        Some(dir.join("client.sqlog"))
    } else {
        None
    };
    let w = case.workload_params();
    let run = QuicRun {
        transport,
        identity,
        server: peer.addr,
        payload: case.payload() as usize,
        count: if w.is_stream() {
            w.messages().max(1)
        } else {
            w.messages()
        },
        think: w.think(),
        stream: w.is_stream(),
        per_message: case.choice(&STREAMS) == "per-message",
        seed: env.seed,
        qlog,
        kind,
        h3: case.choice(&APP) == "h3",
        connects: (case.workload() == "connect").then(|| {
            case.count(&wirebench_connect::params::CONNECTS)
                .unwrap_or(200)
        }),
        concurrency: concurrency_of(case)?,
        rate: rate_of(case)?,
        common_paths: env.lab.is_some_and(|l| l.has_paths()),
    };
    let mut out = Outcome::default();
    out.push(SERVER_START.name, peer.start_time.as_secs_f64(), "s");
    if let Err(e) = workload::run(&run, ctx, &mut out) {
        return Err(peer.with_log(e));
    }
    wirebench_peer::record_usage(&mut out, peer.usage());
    out.notes.push(note(&run, env.lab.is_some()));
    if let Some(s) = peer.finish() {
        out.notes.push(format!(
            "the builtin server saw {} connection(s) ({} with 0-RTT data, {} Retry packet(s) sent), {} stream(s), {} B in and {} B out{}{}",
            s.connections,
            s.zero_rtt,
            s.retries,
            s.streams,
            s.bytes_in,
            s.bytes_out,
            if s.requests + s.bad_requests > 0 {
                format!(
                    ", {} HTTP/3 request(s) answered, {} refused",
                    s.requests, s.bad_requests
                )
            } else {
                String::new()
            },
            if s.failed > 0 {
                format!(", {} connection(s) failed", s.failed)
            } else {
                String::new()
            }
        ));
    }
    Ok(out)
}

/// The connect workload's clients at once (`concurrency`, a thread each): unset, 1 in
/// the closed loop and as many as the schedule may need, up to 200, in the open loop.
fn concurrency_of(case: &Case) -> Result<u64, WorkloadError> {
    let connects = case
        .count(&wirebench_connect::params::CONNECTS)
        .unwrap_or(200);
    let Some(c) = case.count(&wirebench_connect::params::CONCURRENCY) else {
        return Ok(if case.text(&RATE).is_some() {
            connects.min(200)
        } else {
            1
        });
    };
    if !(1..=1000).contains(&c) || c > connects {
        return Err(WorkloadError::Input(format!(
            "concurrency={c}: QUIC's connect runs a client thread per connection at once; use 1 to 1000, at most connects={connects}"
        )));
    }
    Ok(c)
}

/// The open loop's connections per second (`rate`), connect only.
fn rate_of(case: &Case) -> Result<Option<f64>, WorkloadError> {
    let Some(text) = case.text(&RATE) else {
        return Ok(None);
    };
    if case.workload() != "connect" {
        return Err(WorkloadError::Input(format!(
            "rate={text}: QUIC's {} runs a closed loop only; the open loop is the connect workload's (--workload connect --rate {text})",
            case.workload()
        )));
    }
    wirebench_rpc::params::parse_rate(text)
        .ok()
        .filter(|r| *r > 0.0 && r.is_finite())
        .map(Some)
        .ok_or_else(|| {
            WorkloadError::Input(format!(
                "rate={text}: connections per second above 0, e.g. 500/s"
            ))
        })
}

/// The record's note: who was talked to, where, with which settings.
fn note(run: &QuicRun, lab: bool) -> String {
    let t = &run.transport;
    let what = match (run.h3, run.stream) {
        (true, true) => format!(
            "; HTTP/3 GET /{} on one stream, timed to its FIN",
            run.count * run.payload as u64
        ),
        (true, false) => format!("; HTTP/3 GET /{} on a stream per round", run.payload),
        (false, true) => format!(
            "; {} messages of {} B on one stream to the sink, timed to its count",
            run.count, run.payload
        ),
        (false, false) if run.per_message => "; a stream per message".to_string(),
        (false, false) => "; one stream".to_string(),
    };
    format!(
        "QUIC v1 to {} at {} ({}); our client: {}, initial RTT {:?}, {}-byte datagrams, idle timeout {}, stream window {}, ACK threshold {}{}{}",
        run.kind.name(),
        run.server,
        if lab {
            "in the lab's server host, the client across the link"
        } else {
            "loopback"
        },
        t.cc.name(),
        t.initial_rtt,
        t.max_datagram,
        t.idle_timeout
            .map_or_else(|| "none".to_string(), |d| format!("{d:?}")),
        t.window
            .map_or_else(|| "quinn's 1.25 MB".to_string(), |w| format!("{w} B")),
        t.ack_threshold.map_or_else(
            || "not asked (every second packet)".to_string(),
            |n| format!("{n} packets")
        ),
        what,
        match run.kind {
            Kind::Builtin => "",
            Kind::Ngtcp2 =>
                "; gtlsserver given the same controller, initial RTT, datagram size and idle timeout",
            Kind::QuicGo => "; quic-go's server at its own defaults (it takes no transport flags)",
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specs and the enum cannot drift: a choice added to `quic.cc` needs a variant.
    #[test]
    fn every_server_choice_parses() {
        for w in SERVER.choices() {
            assert_eq!(Kind::from_word(w).map(Kind::name), Some(*w));
        }
    }

    #[test]
    fn every_cc_choice_parses() {
        for w in CC.choices() {
            assert_eq!(Cc::from_word(w).map(Cc::name), Some(*w));
        }
    }
}
