//! Parsing envelopes from quick-xml events.
//!
//! The parser is a recursive descent over a namespace-resolving event stream: no tree is
//! built and nothing is copied except the text of leaf elements (base64 text without its
//! whitespace, then the decoded bytes), so memory stays within about twice the input.
//! Work per event is bounded: nesting by [`MAX_DEPTH`], and name resolution (a scan of
//! the namespace declarations in scope) by [`MAX_NS_DECLS`].

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use quick_xml::NsReader;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::{QName, ResolveResult};

use crate::{
    BENCH_NS, MAX_DEPTH, MAX_INPUT, MAX_NS_DECLS, Request, Response, SOAP_ENV_NS, SOAP12_ENV_NS,
    SoapError,
};

/// Parses a request envelope (`wb:Echo` or `wb:Sink` in a SOAP 1.1 body).
pub fn parse_request(xml: &[u8]) -> Result<Request, SoapError> {
    parse_envelope(xml, request_body)
}

/// Parses a response envelope (`wb:EchoResponse`, `wb:SinkResponse` or `soap:Fault`).
pub fn parse_response(xml: &[u8]) -> Result<Response, SoapError> {
    parse_envelope(xml, response_body)
}

/// The namespace an element name resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ns {
    Soap,
    Soap12,
    Bench,
    /// No namespace (unprefixed, no default namespace in scope).
    None,
    /// Any other, cut short for messages.
    Other(String),
}

/// What the parser sees: elements, their ends, and character data (text, CDATA sections
/// and resolved references, possibly in several pieces).
enum Ev<'i> {
    Start {
        ns: Ns,
        el: BytesStart<'i>,
        empty: bool,
    },
    End,
    Text(Cow<'i, str>),
    Eof,
}

struct Parser<'i> {
    r: NsReader<&'i [u8]>,
    /// Open elements.
    depth: usize,
    /// Namespace declarations made by each open element (index = its depth).
    decls: [usize; MAX_DEPTH + 1],
    /// Their sum.
    in_scope: usize,
}

/// At most this many characters of the input are quoted in an error message.
const QUOTE: usize = 64;

fn cut(s: &str) -> String {
    match s.char_indices().nth(QUOTE) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

fn cut_bytes(b: &[u8]) -> String {
    cut(&String::from_utf8_lossy(&b[..b.len().min(4 * QUOTE)]))
}

fn is_ws(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

fn local<'a>(el: &'a BytesStart<'_>) -> &'a [u8] {
    el.local_name().into_inner()
}

/// The element's name as written, plus its namespace unless it is the expected one for
/// its prefix (`soap:` / `wb:`), e.g. `wb:Foo`, `Echo (no namespace)`,
/// `x:Echo (namespace urn:other)`.
fn describe(el: &BytesStart<'_>, ns: &Ns) -> String {
    let name = cut_bytes(el.name().as_ref());
    match ns {
        Ns::Soap | Ns::Bench => name,
        Ns::Soap12 => format!("{name} (namespace {SOAP12_ENV_NS})"),
        Ns::None => format!("{name} (no namespace)"),
        Ns::Other(uri) => format!("{name} (namespace {uri})"),
    }
}

fn classify(res: ResolveResult<'_>) -> Option<Ns> {
    Some(match res {
        ResolveResult::Bound(ns) => match ns.into_inner() {
            u if u == SOAP_ENV_NS.as_bytes() => Ns::Soap,
            u if u == BENCH_NS.as_bytes() => Ns::Bench,
            u if u == SOAP12_ENV_NS.as_bytes() => Ns::Soap12,
            u => Ns::Other(cut_bytes(u)),
        },
        ResolveResult::Unbound => Ns::None,
        ResolveResult::Unknown(_) => return None,
    })
}

impl<'i> Parser<'i> {
    fn new(xml: &'i [u8]) -> Self {
        // quick-xml's defaults check that end tags match their start tags and that `&`
        // starts a reference; attributes are checked in `open`.
        Self {
            r: NsReader::from_reader(xml),
            depth: 0,
            decls: [0; MAX_DEPTH + 1],
            in_scope: 0,
        }
    }

    fn xml_error(&self, e: impl std::fmt::Display, pos: u64) -> SoapError {
        SoapError::Xml {
            pos,
            msg: e.to_string(),
        }
    }

    fn decode(
        &self,
        text: Result<Cow<'i, str>, quick_xml::encoding::EncodingError>,
    ) -> Result<Ev<'i>, SoapError> {
        text.map(Ev::Text)
            .map_err(|e| self.xml_error(e, self.r.buffer_position()))
    }

    /// The next event that matters; comments, processing instructions and the XML
    /// declaration are skipped.
    fn next(&mut self) -> Result<Ev<'i>, SoapError> {
        loop {
            let (ns, ev) = match self.r.read_resolved_event() {
                Ok((res, ev)) => (classify(res), ev),
                Err(e) => return Err(self.xml_error(e, self.r.error_position())),
            };
            return match ev {
                Event::Start(el) => self.open(ns, el, false),
                Event::Empty(el) => self.open(ns, el, true),
                Event::End(_) => {
                    // quick-xml refuses an end tag without a start tag; never underflow.
                    if let Some(d) = self.decls.get_mut(self.depth) {
                        self.in_scope = self.in_scope.saturating_sub(*d);
                        *d = 0;
                    }
                    self.depth = self.depth.saturating_sub(1);
                    Ok(Ev::End)
                }
                Event::Text(t) => self.decode(t.decode()),
                Event::CData(t) => self.decode(t.decode()),
                Event::GeneralRef(r) => {
                    if r.is_char_ref() {
                        match r.resolve_char_ref() {
                            Ok(Some(c)) => Ok(Ev::Text(Cow::Owned(c.to_string()))),
                            Ok(None) => Err(SoapError::UnknownEntity(cut_bytes(&r))),
                            Err(e) => Err(self.xml_error(e, self.r.buffer_position())),
                        }
                    } else {
                        Ok(Ev::Text(Cow::Borrowed(match &*r {
                            b"lt" => "<",
                            b"gt" => ">",
                            b"amp" => "&",
                            b"apos" => "'",
                            b"quot" => "\"",
                            other => return Err(SoapError::UnknownEntity(cut_bytes(other))),
                        })))
                    }
                }
                Event::DocType(_) => Err(SoapError::DocType),
                Event::Comment(_) | Event::PI(_) | Event::Decl(_) => continue,
                Event::Eof => Ok(Ev::Eof),
            };
        }
    }

    fn open(
        &mut self,
        ns: Option<Ns>,
        el: BytesStart<'i>,
        empty: bool,
    ) -> Result<Ev<'i>, SoapError> {
        let Some(ns) = ns else {
            return Err(SoapError::UnknownPrefix(cut_bytes(el.name().as_ref())));
        };
        if self.depth >= MAX_DEPTH {
            return Err(SoapError::TooDeep);
        }
        // Attributes are checked here, as quick-xml only parses them on demand (without
        // the duplicate check, which is quadratic in their number).
        let mut decls = 0;
        for a in el.attributes().with_checks(false) {
            match a {
                Ok(a) => decls += usize::from(a.key.as_namespace_binding().is_some()),
                Err(e) => {
                    // The tag began this far before the reader's position: `<`, name and
                    // attributes, then `>` or `/>`.
                    let tag = el.len() as u64 + if empty { 3 } else { 2 };
                    let pos = self.r.buffer_position().saturating_sub(tag);
                    return Err(
                        self.xml_error(format!("in <{}>: {e}", cut_bytes(el.name().as_ref())), pos)
                    );
                }
            }
        }
        if self.in_scope + decls > MAX_NS_DECLS {
            return Err(SoapError::TooManyNamespaces);
        }
        if !empty {
            self.depth += 1;
            self.decls[self.depth] = decls;
            self.in_scope += decls;
        }
        Ok(Ev::Start { ns, el, empty })
    }

    /// Skips the content of the element just opened.
    fn skip(&mut self, empty: bool) -> Result<(), SoapError> {
        if empty {
            return Ok(());
        }
        let depth = self.depth;
        loop {
            match self.next()? {
                Ev::End if self.depth < depth => return Ok(()),
                Ev::Eof => return Err(SoapError::Truncated("a skipped element")),
                _ => {}
            }
        }
    }

    /// Reads the content of a leaf element just opened, passing its text to `f` in pieces.
    fn leaf(
        &mut self,
        empty: bool,
        parent: &'static str,
        mut f: impl FnMut(&str) -> Result<(), SoapError>,
    ) -> Result<(), SoapError> {
        if empty {
            return Ok(());
        }
        loop {
            match self.next()? {
                Ev::Text(t) => f(&t)?,
                Ev::Start { ns, el, .. } => {
                    return Err(SoapError::Unexpected {
                        parent,
                        found: describe(&el, &ns),
                    });
                }
                Ev::End => return Ok(()),
                Ev::Eof => return Err(SoapError::Truncated(parent)),
            }
        }
    }

    /// Reads a leaf's text.
    fn string(&mut self, empty: bool, parent: &'static str) -> Result<String, SoapError> {
        let mut s = String::new();
        self.leaf(empty, parent, |t| {
            s.push_str(t);
            Ok(())
        })?;
        Ok(s)
    }

    /// Reads `wb:seq`.
    fn seq(&mut self, empty: bool) -> Result<u64, SoapError> {
        let s = self.string(empty, "wb:seq")?;
        let s = s.trim_matches([' ', '\t', '\r', '\n']);
        s.parse().map_err(|_| SoapError::BadSeq(cut(s)))
    }

    /// Reads `wb:data`: base64 with whitespace anywhere (line-wrapping stacks).
    fn base64(&mut self, empty: bool) -> Result<Bytes, SoapError> {
        let mut b64 = Vec::new();
        self.leaf(empty, "wb:data", |t| {
            b64.reserve(t.len());
            b64.extend(
                t.bytes()
                    .filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n')),
            );
            Ok(())
        })?;
        STANDARD
            .decode(&b64)
            .map(Bytes::from)
            .map_err(|e| SoapError::BadBase64(cut(&e.to_string())))
    }

    /// Skips a `soap:Header`, refusing entries that must be understood.
    fn header(&mut self, empty: bool) -> Result<(), SoapError> {
        if empty {
            return Ok(());
        }
        loop {
            match self.next()? {
                Ev::Text(_) => {}
                Ev::Start { ns, el, empty } => {
                    if self.must_understand(&el) {
                        return Err(SoapError::MustUnderstand(describe(&el, &ns)));
                    }
                    self.skip(empty)?;
                }
                Ev::End => return Ok(()),
                Ev::Eof => return Err(SoapError::Truncated("soap:Header")),
            }
        }
    }

    /// Whether the element just read has `soap:mustUnderstand="1"` (resolved while its
    /// namespace declarations are still in scope).
    fn must_understand(&self, el: &BytesStart<'_>) -> bool {
        el.attributes()
            .with_checks(false)
            .map_while(Result::ok)
            .any(|a| {
                let (res, name) = self.r.resolve_attribute(a.key);
                matches!(res, ResolveResult::Bound(ns) if ns.into_inner() == SOAP_ENV_NS.as_bytes())
                    && name.into_inner() == b"mustUnderstand"
                    && matches!(a.value.trim_ascii(), b"1" | b"true")
            })
    }
}

/// Parses the envelope around a body, which `body` reads from just after `soap:Body`'s
/// start (told whether it is an empty element) up to and including its end.
fn parse_envelope<'i, T>(
    xml: &'i [u8],
    body: impl FnOnce(&mut Parser<'i>, bool) -> Result<T, SoapError>,
) -> Result<T, SoapError> {
    if xml.len() > MAX_INPUT {
        return Err(SoapError::TooLarge(xml.len()));
    }
    let mut p = Parser::new(xml);
    let (ns, el, empty) = loop {
        match p.next()? {
            Ev::Start { ns, el, empty } => break (ns, el, empty),
            Ev::Text(t) => ws(&t, "the prolog")?,
            Ev::End | Ev::Eof => return Err(SoapError::NoEnvelope),
        }
    };
    if local(&el) != b"Envelope" {
        return Err(SoapError::NotEnvelope(describe(&el, &ns)));
    }
    match ns {
        Ns::Soap => {}
        Ns::Soap12 => return Err(SoapError::Soap12),
        Ns::Bench => return Err(SoapError::WrongNamespace(BENCH_NS.to_owned())),
        Ns::None => return Err(SoapError::WrongNamespace("(none)".to_owned())),
        Ns::Other(uri) => return Err(SoapError::WrongNamespace(uri)),
    }
    if empty {
        return Err(SoapError::NoBody);
    }
    let mut body = Some(body);
    let mut result = None;
    let mut seen_header = false;
    loop {
        match p.next()? {
            Ev::Text(t) => ws(&t, "soap:Envelope")?,
            Ev::Start { ns, el, empty } => match (&ns, local(&el)) {
                (Ns::Soap, b"Header") if !seen_header && result.is_none() => {
                    seen_header = true;
                    p.header(empty)?;
                }
                (Ns::Soap, b"Body") => match body.take() {
                    Some(f) => result = Some(f(&mut p, empty)?),
                    None => return Err(SoapError::Duplicate("soap:Body")),
                },
                // SOAP 1.1 section 4.1.1: namespace-qualified elements may follow the body.
                (Ns::Bench | Ns::Other(_) | Ns::Soap12, _) if result.is_some() => {
                    p.skip(empty)?;
                }
                _ => {
                    return Err(SoapError::Unexpected {
                        parent: "soap:Envelope",
                        found: describe(&el, &ns),
                    });
                }
            },
            Ev::End => break,
            Ev::Eof => return Err(SoapError::Truncated("soap:Envelope")),
        }
    }
    let result = result.ok_or(SoapError::NoBody)?;
    loop {
        match p.next()? {
            Ev::Text(t) => ws(&t, "the document after soap:Envelope")?,
            Ev::Start { ns, el, .. } => {
                return Err(SoapError::Unexpected {
                    parent: "the document after soap:Envelope",
                    found: describe(&el, &ns),
                });
            }
            Ev::End | Ev::Eof => return Ok(result),
        }
    }
}

fn request_body(p: &mut Parser<'_>, empty: bool) -> Result<Request, SoapError> {
    let mut req = None;
    if !empty {
        loop {
            match p.next()? {
                Ev::Text(t) => ws(&t, "soap:Body")?,
                Ev::Start { ns, el, empty } => {
                    if req.is_some() {
                        return Err(SoapError::Unexpected {
                            parent: "soap:Body, after the operation",
                            found: describe(&el, &ns),
                        });
                    }
                    let echo = match (&ns, local(&el)) {
                        (Ns::Bench, b"Echo") => true,
                        (Ns::Bench, b"Sink") => false,
                        _ => return Err(SoapError::UnknownOperation(describe(&el, &ns))),
                    };
                    req = Some(operation(p, echo, empty)?);
                }
                Ev::End => break,
                Ev::Eof => return Err(SoapError::Truncated("soap:Body")),
            }
        }
    }
    req.ok_or(SoapError::NoOperation)
}

/// Whether a child of an operation or response element is `wb:NAME` (or `NAME` without a
/// namespace, as RPC-style stacks write parameters).
fn is_param(ns: &Ns, el: &BytesStart<'_>, name: &[u8]) -> bool {
    matches!(ns, Ns::Bench | Ns::None) && local(el) == name
}

fn operation(p: &mut Parser<'_>, echo: bool, empty: bool) -> Result<Request, SoapError> {
    let parent = if echo { "wb:Echo" } else { "wb:Sink" };
    let mut seq = None;
    let mut data = None;
    if !empty {
        loop {
            match p.next()? {
                Ev::Text(t) => ws(&t, parent)?,
                Ev::Start { ns, el, empty } => {
                    if is_param(&ns, &el, b"seq") {
                        if seq.is_some() {
                            return Err(SoapError::Duplicate("wb:seq"));
                        }
                        seq = Some(p.seq(empty)?);
                    } else if is_param(&ns, &el, b"data") {
                        if data.is_some() {
                            return Err(SoapError::Duplicate("wb:data"));
                        }
                        data = Some(p.base64(empty)?);
                    } else {
                        return Err(SoapError::Unexpected {
                            parent,
                            found: describe(&el, &ns),
                        });
                    }
                }
                Ev::End => break,
                Ev::Eof => return Err(SoapError::Truncated(parent)),
            }
        }
    }
    let data = data.ok_or(SoapError::Missing {
        parent,
        child: "wb:data",
    })?;
    Ok(Request { seq, echo, data })
}

const RESPONSES: &str = "wb:EchoResponse, wb:SinkResponse or soap:Fault";

fn response_body(p: &mut Parser<'_>, empty: bool) -> Result<Response, SoapError> {
    let mut resp = None;
    if !empty {
        loop {
            match p.next()? {
                Ev::Text(t) => ws(&t, "soap:Body")?,
                Ev::Start { ns, el, empty } => {
                    if resp.is_some() {
                        return Err(SoapError::Unexpected {
                            parent: "soap:Body, after the response",
                            found: describe(&el, &ns),
                        });
                    }
                    resp = Some(match (&ns, local(&el)) {
                        (Ns::Bench, b"EchoResponse") => echo_response(p, empty)?,
                        (Ns::Bench, b"SinkResponse") => {
                            p.leaf(empty, "wb:SinkResponse", |t| ws(t, "wb:SinkResponse"))?;
                            Response::Sink
                        }
                        (Ns::Soap, b"Fault") => fault(p, empty)?,
                        _ => {
                            return Err(SoapError::Unexpected {
                                parent: "soap:Body",
                                found: describe(&el, &ns),
                            });
                        }
                    });
                }
                Ev::End => break,
                Ev::Eof => return Err(SoapError::Truncated("soap:Body")),
            }
        }
    }
    resp.ok_or(SoapError::Missing {
        parent: "soap:Body",
        child: RESPONSES,
    })
}

/// Accepts whitespace, refuses other text.
fn ws(text: &str, parent: &'static str) -> Result<(), SoapError> {
    if is_ws(text) {
        Ok(())
    } else {
        Err(SoapError::UnexpectedText {
            parent,
            text: cut(text.trim()),
        })
    }
}

fn echo_response(p: &mut Parser<'_>, empty: bool) -> Result<Response, SoapError> {
    const PARENT: &str = "wb:EchoResponse";
    let mut data = None;
    if !empty {
        loop {
            match p.next()? {
                Ev::Text(t) => ws(&t, PARENT)?,
                Ev::Start { ns, el, empty } => {
                    if !is_param(&ns, &el, b"data") {
                        return Err(SoapError::Unexpected {
                            parent: PARENT,
                            found: describe(&el, &ns),
                        });
                    }
                    if data.is_some() {
                        return Err(SoapError::Duplicate("wb:data"));
                    }
                    data = Some(p.base64(empty)?);
                }
                Ev::End => break,
                Ev::Eof => return Err(SoapError::Truncated(PARENT)),
            }
        }
    }
    data.map(Response::Echo).ok_or(SoapError::Missing {
        parent: PARENT,
        child: "wb:data",
    })
}

/// Reads a `soap:Fault`: `faultcode` and `faultstring` required, `faultactor` and
/// `detail` skipped. Its children are unqualified (SOAP 1.1 section 4.4).
fn fault(p: &mut Parser<'_>, empty: bool) -> Result<Response, SoapError> {
    const PARENT: &str = "soap:Fault";
    let mut code = None;
    let mut text = None;
    let mut actor = false;
    let mut detail = false;
    if !empty {
        loop {
            match p.next()? {
                Ev::Text(t) => ws(&t, PARENT)?,
                Ev::Start { ns, el, empty } => match (&ns, local(&el)) {
                    (Ns::None, b"faultcode") if code.is_none() => {
                        let c = p.string(empty, "faultcode")?;
                        code = Some(p.fault_code(&c));
                    }
                    (Ns::None, b"faultstring") if text.is_none() => {
                        text = Some(p.string(empty, "faultstring")?);
                    }
                    (Ns::None, b"faultactor") if !actor => {
                        actor = true;
                        p.leaf(empty, "faultactor", |_| Ok(()))?;
                    }
                    (Ns::None, b"detail") if !detail => {
                        detail = true;
                        p.skip(empty)?;
                    }
                    (Ns::None, b"faultcode" | b"faultstring" | b"faultactor" | b"detail") => {
                        return Err(SoapError::Duplicate(match local(&el) {
                            b"faultcode" => "faultcode",
                            b"faultstring" => "faultstring",
                            b"faultactor" => "faultactor",
                            _ => "detail",
                        }));
                    }
                    _ => {
                        return Err(SoapError::Unexpected {
                            parent: PARENT,
                            found: describe(&el, &ns),
                        });
                    }
                },
                Ev::End => break,
                Ev::Eof => return Err(SoapError::Truncated(PARENT)),
            }
        }
    }
    let code = code.ok_or(SoapError::Missing {
        parent: PARENT,
        child: "faultcode",
    })?;
    let text = text.ok_or(SoapError::Missing {
        parent: PARENT,
        child: "faultstring",
    })?;
    Ok(Response::Fault { code, text })
}

impl Parser<'_> {
    /// A `faultcode` QName with a prefix bound to the SOAP 1.1 namespace written `soap:`.
    /// Called just after `faultcode`'s end, while its declarations are still in scope.
    fn fault_code(&self, code: &str) -> String {
        let code = code.trim_matches([' ', '\t', '\r', '\n']);
        if let Some((_, name)) = code.split_once(':') {
            let (res, _) = self.r.resolve(QName(code.as_bytes()), true);
            if matches!(res, ResolveResult::Bound(ns) if ns.into_inner() == SOAP_ENV_NS.as_bytes())
            {
                return format!("soap:{name}");
            }
        }
        code.to_owned()
    }
}
