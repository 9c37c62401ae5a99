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
use wirebench_protocol::Protocol;
use wirebench_protocol::params::{MODE, NODELAY, ParamSpec};
use wirebench_rpc::params::{CONNECTIONS, RATE, TARGET};
use wirebench_rpc::{NoStreams, RpcProtocol};

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

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &HTTP;

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
            assert!(Version::from_word(w).is_some(), "http.version={w}");
        }
    }
}
