//! Why an envelope was refused.

use crate::{MAX_DEPTH, MAX_INPUT, MAX_NS_DECLS};

/// Why [`parse_request`](crate::parse_request) or [`parse_response`](crate::parse_response)
/// refused an envelope. Each message names what is wrong; element names are shown as the
/// peer wrote them (its prefix), with the namespace added when that is what is wrong.
/// Text quoted from the input is cut to a few dozen characters.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SoapError {
    /// The input is larger than [`MAX_INPUT`].
    #[error("envelope of {0} bytes is larger than the {MAX_INPUT}-byte limit")]
    TooLarge(usize),
    /// Not well-formed XML (or not UTF-8), as reported by quick-xml.
    #[error("XML error at byte {pos}: {msg}")]
    Xml {
        /// Byte offset in the input.
        pos: u64,
        /// quick-xml's description.
        msg: String,
    },
    /// The input ends before the element named here is closed.
    #[error("input ends inside {0}")]
    Truncated(&'static str),
    /// A `<!DOCTYPE ...>`: refused, since a DTD can declare entities that expand
    /// exponentially ("billion laughs"), and SOAP 1.1 forbids it in any case.
    #[error("DOCTYPE declarations are refused (entity-expansion attacks; SOAP forbids them)")]
    DocType,
    /// A reference to an entity other than XML's five predefined ones or a character
    /// reference.
    #[error("unknown entity &{0};")]
    UnknownEntity(String),
    /// Elements nested deeper than [`MAX_DEPTH`].
    #[error("elements nested deeper than {MAX_DEPTH}")]
    TooDeep,
    /// More than [`MAX_NS_DECLS`] namespace declarations in scope at once.
    #[error("more than {MAX_NS_DECLS} namespace declarations in scope")]
    TooManyNamespaces,
    /// An element name with a prefix that no `xmlns:` attribute declares.
    #[error("undeclared namespace prefix in {0}")]
    UnknownPrefix(String),
    /// The document has no root element.
    #[error("no soap:Envelope")]
    NoEnvelope,
    /// The root element is not an `Envelope`.
    #[error("root element is {0}, expected soap:Envelope")]
    NotEnvelope(String),
    /// The root is an `Envelope` in the SOAP 1.2 namespace.
    #[error("SOAP 1.2 envelope; this server speaks SOAP 1.1")]
    Soap12,
    /// The root is an `Envelope` in some other namespace (or none).
    #[error("soap:Envelope in namespace {0}, expected http://schemas.xmlsoap.org/soap/envelope/")]
    WrongNamespace(String),
    /// The envelope has no `Body`.
    #[error("no soap:Body")]
    NoBody,
    /// The request's body holds no operation element.
    #[error("soap:Body holds no operation")]
    NoOperation,
    /// The request's operation is not `wb:Echo` or `wb:Sink`.
    #[error("unknown operation {0}")]
    UnknownOperation(String),
    /// An element that does not belong where it is.
    #[error("unexpected element {found} in {parent}")]
    Unexpected {
        /// Where it was found (canonical name).
        parent: &'static str,
        /// The element, as written.
        found: String,
    },
    /// Character data (other than whitespace) where only elements belong.
    #[error("unexpected text {text:?} in {parent}")]
    UnexpectedText {
        /// Where it was found (canonical name).
        parent: &'static str,
        /// The text, cut short.
        text: String,
    },
    /// A required child element is missing.
    #[error("{parent} has no {child}")]
    Missing {
        /// The element that lacks it (canonical name).
        parent: &'static str,
        /// The missing element (canonical name).
        child: &'static str,
    },
    /// An element that may appear once appears twice.
    #[error("{0} appears more than once")]
    Duplicate(&'static str),
    /// `wb:seq` is not an unsigned 64-bit number.
    #[error("wb:seq is not a number: {0:?}")]
    BadSeq(String),
    /// `wb:data` is not valid base64 (standard alphabet, with padding; whitespace is
    /// allowed and ignored). The offset counts base64 characters, whitespace excluded.
    #[error("wb:data is not base64: {0}")]
    BadBase64(String),
    /// A header entry marked `soap:mustUnderstand="1"`, which this engine does not
    /// understand (SOAP 1.1 section 4.2.3 requires refusing the message).
    #[error("header {0} has soap:mustUnderstand=\"1\" and is not understood")]
    MustUnderstand(String),
}
