//! SOAP 1.1 envelopes carrying a benchmark payload, built and parsed without I/O.
//!
//! The protocol is SOAP 1.1 (W3C Note 2000-05-08, "Simple Object Access Protocol (SOAP)
//! 1.1", <https://www.w3.org/TR/2000/NOTE-SOAP-20000508/>) over HTTP POST with
//! [`CONTENT_TYPE`] and a `SOAPAction` header ([`SOAP_ACTION_ECHO`],
//! [`SOAP_ACTION_SINK`]). The payload travels as `xsd:base64Binary` text, the way the
//! Apache SOAP and Axis stacks measured in study S5 (Soap-Stone) serialized a Java
//! `byte[]`, so the cost of the encoding (4/3 growth, base64 and XML work on both sides) is
//! part of what is measured.
//!
//! A request (namespaces fixed; prefixes are free when parsing, and whitespace between
//! elements is allowed):
//!
//! ```xml
//! <?xml version="1.0" encoding="utf-8"?>
//! <soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:wb="urn:wirebench:bench"><soap:Body><wb:Echo><wb:seq>7</wb:seq><wb:data>BASE64</wb:data></wb:Echo></soap:Body></soap:Envelope>
//! ```
//!
//! The operation is `wb:Echo` (the response carries the data back) or `wb:Sink` (the
//! response is empty); `wb:seq` is optional (absent = the response is not checked against
//! a sequence number). The responses' bodies are
//! `<wb:EchoResponse><wb:data>BASE64</wb:data></wb:EchoResponse>`, `<wb:SinkResponse/>`,
//! or a fault (sent with HTTP status 500, SOAP 1.1 section 6.2):
//! `<soap:Fault><faultcode>soap:Client</faultcode><faultstring>TEXT</faultstring></soap:Fault>`.
//!
//! Parsing ([`parse_request`], [`parse_response`]) reads quick-xml events through a
//! namespace-resolving reader, so elements are matched by namespace URI and local name.
//! It also accepts what other SOAP 1.1 stacks send: any prefixes (or default namespaces),
//! a `soap:Header` (skipped, unless an entry is marked `soap:mustUnderstand="1"`),
//! unqualified operation parameters (`<seq>`, `<data>`, the SOAP 1.1 section 7.1 RPC
//! convention), attributes such as `xsi:type`, comments, CDATA sections, character
//! references, and base64 text wrapped in lines. It refuses DOCTYPE declarations,
//! nesting deeper than [`MAX_DEPTH`], more than [`MAX_NS_DECLS`] namespace declarations in
//! scope, and inputs larger than [`MAX_INPUT`]; it never panics, its work is linear in the
//! input, and it allocates at most about twice the input's size.
//!
//! Not covered: SOAP 1.2, attachments (SwA/MTOM), `href`/multi-reference encoding, and
//! documents in encodings other than UTF-8.

mod encode;
mod error;
mod parse;

pub use encode::{encode_request, encode_response, max_envelope};
pub use error::SoapError;
pub use parse::{parse_request, parse_response};

/// The HTTP `Content-Type` of SOAP 1.1 messages (section 6.1.1).
pub const CONTENT_TYPE: &str = "text/xml; charset=utf-8";
/// The `SOAPAction` HTTP header value of an echo request (quotes included, section 6.1.1).
pub const SOAP_ACTION_ECHO: &str = "\"urn:wirebench:bench#Echo\"";
/// The `SOAPAction` HTTP header value of a sink request (quotes included, section 6.1.1).
pub const SOAP_ACTION_SINK: &str = "\"urn:wirebench:bench#Sink\"";

/// The SOAP 1.1 envelope namespace.
pub const SOAP_ENV_NS: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// The SOAP 1.2 envelope namespace, recognized only to refuse it clearly.
pub const SOAP12_ENV_NS: &str = "http://www.w3.org/2003/05/soap-envelope";
/// The namespace of the benchmark's operations (`wb:`).
pub const BENCH_NS: &str = "urn:wirebench:bench";

/// The largest input the parsers accept, in bytes (64 MiB).
pub const MAX_INPUT: usize = 64 << 20;
/// The deepest element nesting the parsers accept (the envelope is depth 1).
pub const MAX_DEPTH: usize = 32;
/// The most namespace declarations the parsers accept in scope at once (bounds the work of
/// resolving each name).
pub const MAX_NS_DECLS: usize = 64;

/// A benchmark request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The sequence number, if the client wants it checked.
    pub seq: Option<u64>,
    /// `wb:Echo` (true: the response carries `data` back) or `wb:Sink` (false).
    pub echo: bool,
    /// The payload.
    pub data: bytes::Bytes,
}

/// A benchmark response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// `wb:EchoResponse` with the data echoed.
    Echo(bytes::Bytes),
    /// `wb:SinkResponse`.
    Sink,
    /// A `soap:Fault`.
    Fault {
        /// The `faultcode` QName, e.g. `soap:Client` or `soap:Server`. When parsing, a
        /// prefix bound to the SOAP 1.1 envelope namespace is rewritten as `soap:`.
        code: String,
        /// The `faultstring`, a human-readable explanation.
        text: String,
    },
}
