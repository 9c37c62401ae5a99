//! `http`: HTTP/1.1 keep-alive (RFC 9112) and HTTP/2 with prior knowledge (RFC 9113),
//! the server on hyper, the client on httparse ([`h1`]) and h2, against a server of ours
//! started for each case (in the lab's server host, or on loopback; or `target`). Messages are POST bodies: `/echo?seq=N` returns the body, `/sink?seq=N`
//! an empty 200; the server verifies each body against the case's payload pattern.
//! `docs/protocols/soapstone.md`.
//!
//! The client, server and codecs live in `wirebench_rpc::http`, which `soap` shares.

pub use wirebench_rpc::http::{client, codec, h1, server};

use client::{HttpClient, Version};
use std::sync::Arc;
use wirebench_model::Kind;
use wirebench_protocol::params::{MODE, Mode, NODELAY, ParamSpec};
use wirebench_protocol::{Case, CaseLink, Ctx, Env, Outcome, Protocol, WorkloadError};
use wirebench_rpc::NoStreams;
use wirebench_rpc::params::{CONNECTIONS, RATE, TARGET};

pub const VERSION: ParamSpec = ParamSpec {
    name: "http.version",
    kind: Kind::Choice(&["1.1", "2"]),
    default: "1.1",
    workloads: &["pingpong", "stream"],
    help: "HTTP/1.1 (keep-alive, one request at a time per connection) or 2 (prior knowledge, requests multiplexed)",
    words: "HTTP version",
};

const PARAMS: &[ParamSpec] = &[VERSION, MODE, NODELAY, RATE, CONNECTIONS, TARGET];

/// Bytes an HTTP/1.1 exchange adds to a payload, about (request line and headers, status
/// line and headers): for link budgets only.
const OVERHEAD: u64 = 200;

pub struct Http;

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &Http;

impl Protocol for Http {
    fn name(&self) -> &'static str {
        "http"
    }

    fn summary(&self) -> &'static str {
        "HTTP/1.1 or HTTP/2 POSTs (hyper) against a server of ours started per case; open-loop with --rate"
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        Some(if wirebench_rpc::params::has_target(case) {
            "the HTTP server at --target (started apart)"
        } else {
            "HTTP servers of ours started per case"
        })
    }

    fn stream_echoes(&self, case: &Case) -> bool {
        Mode::of(case).is_echo()
    }

    fn serve_alone_help(&self) -> Option<&'static str> {
        Some("(HTTP/1.1 and h2c: POST /echo, /sink)")
    }

    fn serve_alone_limited(
        &self,
        listener: std::net::TcpListener,
        limits: &wirebench_protocol::AloneLimits,
    ) -> Option<Result<(), String>> {
        Some(wirebench_rpc::server::serve_alone_timed(
            listener,
            "http",
            limits,
            |l, c, b| server::serve(l, c, b, Arc::new(codec::Plain)),
        ))
    }

    fn check(&self, case: &Case, at: &wirebench_protocol::Placement) -> Result<(), WorkloadError> {
        wirebench_rpc::workload::check(case, at)
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        _repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        let version = Version::from_word(case.choice(&VERSION)).unwrap_or(Version::Http1);
        wirebench_rpc::workload::run_case(
            env,
            case,
            ctx,
            "http",
            |l, c, b| server::serve(l, c, b, Arc::new(codec::Plain)),
            |addr, plan| {
                let client = HttpClient {
                    addr,
                    version,
                    codec: Arc::new(codec::Plain),
                    max_payload: plan.payload,
                    nodelay: plan.nodelay,
                };
                (client, None::<NoStreams>)
            },
            OVERHEAD,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{VERSION, Version};

    /// The spec and the enum cannot drift: a choice added to `http.version` needs a variant.
    #[test]
    fn every_choice_parses() {
        for w in VERSION.choices() {
            assert!(Version::from_word(w).is_some(), "http.version={w}");
        }
    }
}
