//! `http`: HTTP/1.1 keep-alive (RFC 9112) and HTTP/2 with prior knowledge (RFC 9113),
//! the server on hyper, the client on httparse ([`h1`]) and h2, against a server of ours
//! started for each case (in the lab's server host, or on loopback; or `target`). Messages are POST bodies: `/echo?seq=N` returns the body, `/sink?seq=N`
//! an empty 200; the server verifies each body against the case's payload pattern.
//! `docs/protocols/soapstone.md`.
//!
//! The client, server and codecs live in `wirebench_rpc::http`, which `soap` shares.
//! `http.version=3` is HTTP/3 (RFC 9114) over our QUIC engine ([`h3`], [`h3_server`]):
//! the same POSTs and workloads over one UDP flow.

pub use wirebench_rpc::http::{client, codec, h1, server};

pub mod h3;
pub mod h3_server;

use client::{HttpClient, Version};
use std::sync::Arc;
use wirebench_model::Kind;
use wirebench_protocol::params::{MODE, NODELAY, ParamSpec};
use wirebench_protocol::{
    AloneLimits, Case, CaseLink, Ctx, Env, Outcome, Placement, Protocol, WorkloadError,
};
use wirebench_rpc::params::{CONNECTIONS, RATE, TARGET};
use wirebench_rpc::{NoStreams, RpcProtocol};

pub const VERSION: ParamSpec = ParamSpec {
    name: "http.version",
    kind: Kind::Choice(&["1.1", "2", "3"]),
    default: "1.1",
    workloads: &["pingpong", "stream"],
    help: "1.1: HTTP/1.1 over TCP (keep-alive, one request at a time per connection, RFC 9112); 2: HTTP/2 over TCP with prior knowledge (requests multiplexed as streams, RFC 9113); 3: HTTP/3 over QUIC over UDP (RFC 9114 on RFC 9000: a TLS 1.3 handshake of one round trip, each request on its own QUIC stream, multiplexed; no think time or --target)",
    words: "HTTP version",
};

const PARAMS: &[ParamSpec] = &[VERSION, MODE, NODELAY, RATE, CONNECTIONS, TARGET];

/// Bytes an HTTP/1.1 exchange adds to a payload, about (request line and headers, status
/// line and headers): for link budgets only.
const OVERHEAD: u64 = 200;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Http;

/// The http protocol: [`HTTP`] (1.1 and 2, the request/response family's plugin),
/// with its cases of `http.version=3` run over QUIC instead ([`run_h3`]).
struct Http;

fn is_h3(case: &Case) -> bool {
    case.choice(&VERSION) == "3"
}

impl Protocol for Http {
    fn name(&self) -> &'static str {
        HTTP.name()
    }
    fn summary(&self) -> &'static str {
        "HTTP/1.1 or HTTP/2 POSTs (hyper) or HTTP/3 (our QUIC engine) against a server of ours started per case; open-loop with --rate"
    }
    fn params(&self) -> &'static [ParamSpec] {
        HTTP.params()
    }
    fn servers(&self, case: &Case) -> Option<&'static str> {
        if is_h3(case) {
            return Some("HTTP/3 servers of ours started per case (QUIC over UDP)");
        }
        HTTP.servers(case)
    }
    fn stream_echoes(&self, case: &Case) -> bool {
        HTTP.stream_echoes(case)
    }
    fn serve_alone_help(&self) -> Option<&'static str> {
        HTTP.serve_alone_help()
    }
    fn serve_alone_limited(
        &self,
        listener: std::net::TcpListener,
        limits: &AloneLimits,
    ) -> Option<Result<(), String>> {
        HTTP.serve_alone_limited(listener, limits)
    }
    fn check(&self, case: &Case, at: &Placement) -> Result<(), WorkloadError> {
        if is_h3(case) {
            check_h3(case)?;
        }
        HTTP.check(case, at)
    }
    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        if is_h3(case) {
            return run_h3(env, case, ctx);
        }
        HTTP.run(env, case, repeat, link, ctx)
    }
}

/// What HTTP/3 cases cannot do yet, refused before anything starts.
fn check_h3(case: &Case) -> Result<(), WorkloadError> {
    if wirebench_rpc::params::has_target(case) {
        return Err(WorkloadError::Input(
            "http.version=3 with target=IP:PORT: `wirebench serve --also http=` serves HTTP/1.1 \
             and h2c over TCP only; set target=builtin (the case's own HTTP/3 server)"
                .into(),
        ));
    }
    if !case.workload_params().think().is_zero() {
        return Err(WorkloadError::Input(
            "http.version=3 with think time: our HTTP/3 server answers at once (it has no \
             think timer yet); set think=0 or http.version=1.1/2"
                .into(),
        ));
    }
    Ok(())
}

/// An HTTP/3 case: our server for the case (a certificate made for it), our client on
/// the case's runtime, the shared workload, what the server saw.
fn run_h3(env: &Env, case: &Case, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    check_h3(case)?;
    let plan = wirebench_rpc::Plan::from_case(case, env.seed)?;
    let identity = wirebench_quic_engine::Identity::generate(h3::SERVER_NAME)
        .map_err(|e| WorkloadError::Environment(format!("QUIC certificate: {e}")))?;
    let transport = wirebench_quic_engine::Transport::default();
    let counters = Arc::new(wirebench_rpc::Counters::default());
    let server = h3_server::start(
        env.lab,
        &identity,
        &transport,
        env.seed,
        plan.behaviour(),
        counters.clone(),
    )?;
    let client = h3::H3Client {
        addr: server.addr,
        identity: Arc::new(identity),
        transport,
        seed: env.seed ^ 0x5eed,
        max_payload: plan.payload,
        next: std::sync::atomic::AtomicU64::new(0),
    };
    let r = wirebench_rpc::run::<_, NoStreams>(&plan, &client, None, H3_OVERHEAD, ctx);
    let stats = server.finish().unwrap_or_default();
    let mut out = r?;
    out.transport = wirebench_protocol::Transport::Udp;
    let seen = counters.snapshot();
    if let wirebench_rpc::What::Stream { echo: false, .. } = plan.what
        && seen.corrupt > 0
    {
        out.put(
            wirebench_model::metric::MESSAGES_CORRUPT,
            seen.corrupt as f64,
        );
    }
    out.notes.push(format!(
        "HTTP/3 over QUIC (our engine, quinn-proto), server {}: {} connection(s), {} request(s) answered, {} refused",
        if env.lab.is_some() { "in the lab's server host" } else { "on loopback" },
        stats.connections,
        stats.requests,
        stats.bad_requests
    ));
    Ok(out)
}

/// Bytes an HTTP/3 exchange adds to a payload, about (QUIC short headers and AEAD tags,
/// STREAM frames, HEADERS and DATA frames both ways): for link budgets only.
const H3_OVERHEAD: u64 = 150;

static HTTP: RpcProtocol<HttpClient<codec::Plain>, NoStreams> = RpcProtocol {
    name: "http",
    summary: "HTTP/1.1 or HTTP/2 POSTs (hyper) against a server of ours started per case; open-loop with --rate",
    params: PARAMS,
    servers: [
        "the HTTP server at --target (started apart)",
        "HTTP servers of ours started per case",
    ],
    serves: "(HTTP/1.1 and h2c: POST /echo, /sink)",
    overhead: OVERHEAD,
    serve: |l, c, b| Box::pin(server::serve(l, c, b, Arc::new(codec::Plain))),
    client: |case, addr, plan| {
        let client = HttpClient {
            addr,
            version: Version::from_word(case.choice(&VERSION)).unwrap_or(Version::Http1),
            codec: Arc::new(codec::Plain),
            max_payload: plan.payload,
            nodelay: plan.nodelay,
        };
        (client, None)
    },
};

#[cfg(test)]
mod tests {
    use super::{VERSION, Version};

    /// The spec and the enum cannot drift: a choice added to `http.version` needs a variant.
    #[test]
    fn every_choice_parses() {
        for w in VERSION.choices() {
            // 3 is not hyper's: its cases run over QUIC (`run_h3`).
            assert!(
                Version::from_word(w).is_some() || *w == "3",
                "http.version={w}"
            );
        }
    }
}
