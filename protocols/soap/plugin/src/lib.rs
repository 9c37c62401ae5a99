//! `soap`: SOAP 1.1 (W3C Note 2000-05-08) request/response over HTTP/1.1, the messaging
//! style study S5 found one to two orders of magnitude slower than raw sockets. Each
//! message is an envelope whose `wb:Echo` or `wb:Sink` operation carries the payload as
//! `xsd:base64Binary`, as the Java SOAP stacks of the study serialized `byte[]`; both
//! sides build and parse the XML (`wirebench-soap`, quick-xml). The HTTP client and
//! server are the `http` plugin's, with this envelope as their codec; a refused request
//! gets a SOAP Fault with HTTP status 500 (SOAP 1.1 section 6.2). `docs/protocols/soapstone.md`.

use bytes::Bytes;
use std::sync::Arc;
use wirebench_protocol::Protocol;
use wirebench_protocol::params::{MODE, NODELAY, ParamSpec};
use wirebench_rpc::http::client::{HttpClient, Version};
use wirebench_rpc::http::codec::{Codec, Parsed, Refusal};
use wirebench_rpc::params::{CONNECTIONS, RATE, TARGET};
use wirebench_rpc::{NoStreams, RpcProtocol};
use wirebench_soap::Response;

const PARAMS: &[ParamSpec] = &[MODE, NODELAY, RATE, CONNECTIONS, TARGET];

/// HTTP headers plus the envelope around the data, about; base64 adds a third on top.
const OVERHEAD: u64 = 500;

/// SOAP envelopes as an HTTP codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct Envelope;

impl Codec for Envelope {
    fn name(&self) -> &'static str {
        "SOAP"
    }

    fn request(&self, seq: u64, payload: Bytes, echo: bool) -> (String, &'static str, Bytes) {
        (
            "/soap".into(),
            wirebench_soap::CONTENT_TYPE,
            wirebench_soap::encode_request(Some(seq), echo, &payload),
        )
    }

    fn action(&self, echo: bool) -> Option<&'static str> {
        Some(if echo {
            wirebench_soap::SOAP_ACTION_ECHO
        } else {
            wirebench_soap::SOAP_ACTION_SINK
        })
    }

    fn parse_request(&self, path: &str, body: Bytes) -> Result<Parsed, Refusal> {
        if path.split('?').next() != Some("/soap") {
            return Err(Refusal {
                status: 404,
                why: format!("no SOAP endpoint at {path:?} (POST envelopes to /soap)"),
            });
        }
        let r = wirebench_soap::parse_request(&body).map_err(|e| Refusal {
            status: 500,
            why: e.to_string(),
        })?;
        Ok(Parsed {
            seq: r.seq,
            payload: r.data,
            echo: r.echo,
        })
    }

    fn response(&self, _seq: Option<u64>, echoed: Option<Bytes>) -> (&'static str, Bytes) {
        let r = match echoed {
            Some(b) => Response::Echo(b),
            None => Response::Sink,
        };
        (
            wirebench_soap::CONTENT_TYPE,
            wirebench_soap::encode_response(&r),
        )
    }

    fn refusal(&self, r: &Refusal) -> (&'static str, Bytes) {
        let f = Response::Fault {
            code: "soap:Client".into(),
            text: r.why.clone(),
        };
        (
            wirebench_soap::CONTENT_TYPE,
            wirebench_soap::encode_response(&f),
        )
    }

    fn parse_response(&self, status: u16, body: Bytes) -> Result<Bytes, String> {
        match wirebench_soap::parse_response(&body) {
            Ok(Response::Echo(b)) if status == 200 => Ok(b),
            Ok(Response::Sink) if status == 200 => Ok(Bytes::new()),
            Ok(Response::Fault { code, text }) => Err(format!("SOAP Fault {code}: {text}")),
            Ok(_) => Err(format!("status {status} with a non-fault envelope")),
            Err(e) => Err(format!("status {status}, unreadable envelope: {e}")),
        }
    }

    fn max_body(&self, max_payload: usize) -> usize {
        wirebench_soap::max_envelope(max_payload)
    }
}

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &SOAP;

static SOAP: RpcProtocol<HttpClient<Envelope>, NoStreams> = RpcProtocol {
    name: "soap",
    summary: "SOAP 1.1 envelopes (payload as base64 in XML) over HTTP/1.1 against a server of ours started per case",
    params: PARAMS,
    servers: [
        "the SOAP server at --target (started apart)",
        "SOAP servers of ours started per case",
    ],
    serves: "(POST /soap)",
    overhead: OVERHEAD,
    serve: |l, c, b| {
        Box::pin(wirebench_rpc::http::server::serve(
            l,
            c,
            b,
            Arc::new(Envelope),
        ))
    },
    client: |_, addr, plan| {
        let client = HttpClient {
            addr,
            version: Version::Http1,
            codec: Arc::new(Envelope),
            max_payload: plan.payload,
            nodelay: plan.nodelay,
        };
        (client, None)
    },
};
