//! Parsing one complete level-1 element (RFC 6120 §8 stanza or §4–7 negotiation element)
//! into a flat, read-only view, and escaping for what the client writes (XML 1.0 §2.4).
//!
//! The framer ([`crate::framer`]) hands over the exact bytes of one element; quick-xml
//! checks it for well-formedness (matching end tags, attribute syntax, duplicate
//! attributes, entity references). quick-xml was chosen because it is the most used and
//! maintained Rust XML pull parser, borrows from the input (no copy for names and most
//! text) and does not allocate a tree. What the engine keeps is a [`Stanza`]: the nodes up
//! to [`MAX_DEPTH`] levels below the element in document order, each with its local name,
//! namespace, attributes and direct text. One `Vec` per stanza, no pointer tree: a
//! `<message>` with a `<body>` is two nodes.
//!
//! Namespaces are resolved the simple, sufficient way for XMPP: a default `xmlns` is
//! inherited, `xmlns:p` declarations inside the element are honoured, and the stream
//! header's prefix for `http://etherx.jabber.org/streams` (almost always `stream`) maps
//! to [`NS_STREAM`] (that is how `<stream:features>` and `<stream:error>` are recognised).

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::error::XmppError;

pub const NS_STREAM: &str = "http://etherx.jabber.org/streams";
pub const NS_CLIENT: &str = "jabber:client";

/// Levels recorded below the top element: `<iq><bind><jid>` is depth 2; deeper nodes are
/// checked for well-formedness but not kept.
pub const MAX_DEPTH: u8 = 3;

/// One recorded element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Index of the parent in [`Stanza::nodes`]; `None` for the top element.
    pub parent: Option<usize>,
    pub depth: u8,
    pub name: String,
    pub ns: String,
    pub attrs: Vec<(String, String)>,
    /// Direct character data, entities resolved, CDATA included.
    pub text: String,
}

/// A parsed level-1 element; node 0 is the element itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stanza {
    pub nodes: Vec<Node>,
}

impl Stanza {
    pub fn name(&self) -> &str {
        &self.nodes[0].name
    }
    pub fn ns(&self) -> &str {
        &self.nodes[0].ns
    }
    pub fn is(&self, name: &str, ns: &str) -> bool {
        self.name() == name && self.ns() == ns
    }
    /// An attribute of the top element.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.node_attr(0, key)
    }
    pub fn node_attr(&self, idx: usize, key: &str) -> Option<&str> {
        self.nodes[idx]
            .attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self, idx: usize) -> &str {
        &self.nodes[idx].text
    }
    /// Indices of the direct children of node `idx`.
    pub fn children(&self, idx: usize) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .skip(idx + 1)
            .filter(move |(_, n)| n.parent == Some(idx))
            .map(|(i, _)| i)
    }
    /// The first child of node `idx` with this local name (and namespace, if given).
    pub fn child(&self, idx: usize, name: &str, ns: Option<&str>) -> Option<usize> {
        self.children(idx).find(|&i| {
            let n = &self.nodes[i];
            n.name == name && ns.is_none_or(|ns| n.ns == ns)
        })
    }
}

/// Attributes of the stream header that matter (RFC 6120 §4.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHeader {
    pub id: Option<String>,
    pub from: Option<String>,
    /// The domain a client's stream is for (the server checks it).
    pub to: Option<String>,
    pub version: Option<String>,
    /// The prefix bound to [`NS_STREAM`], used to recognise `<stream:features>` later.
    pub stream_prefix: String,
}

fn malformed(e: impl std::fmt::Display) -> XmppError {
    XmppError::Malformed(e.to_string())
}

/// Parses the `<stream:stream ...>` start tag the framer found.
pub fn parse_header(bytes: &[u8]) -> Result<StreamHeader, XmppError> {
    let mut reader = Reader::from_reader(bytes);
    let start = match reader.read_event().map_err(malformed)? {
        Event::Start(e) => e,
        other => {
            return Err(XmppError::Malformed(format!(
                "expected the stream header start tag, got {other:?}"
            )));
        }
    };
    let mut h = StreamHeader {
        id: None,
        from: None,
        to: None,
        version: None,
        stream_prefix: String::new(),
    };
    let mut default_ns = None;
    for a in start.attributes() {
        let a = a.map_err(malformed)?;
        let v = a.unescape_value().map_err(malformed)?.into_owned();
        match a.key.as_ref() {
            b"id" => h.id = Some(v),
            b"from" => h.from = Some(v),
            b"to" => h.to = Some(v),
            b"version" => h.version = Some(v),
            b"xmlns" => default_ns = Some(v),
            k if k.starts_with(b"xmlns:") && v == NS_STREAM => {
                h.stream_prefix = String::from_utf8_lossy(&k[6..]).into_owned();
            }
            _ => {}
        }
    }
    let qname = start.name();
    let (prefix, local) = split_qname(qname.as_ref());
    let in_stream_ns = match prefix {
        Some(p) => p == h.stream_prefix.as_bytes(),
        None => default_ns.as_deref() == Some(NS_STREAM),
    };
    if local != b"stream" || !in_stream_ns {
        return Err(XmppError::Protocol(format!(
            "the peer's root element is <{}>, not <stream:stream> in namespace {NS_STREAM} \
             (RFC 6120 §4.7)",
            String::from_utf8_lossy(qname.as_ref())
        )));
    }
    if prefix.is_none() {
        // A header without prefix makes NS_STREAM the default; children then need their
        // own prefix. Record an impossible prefix so that nothing else matches.
        h.stream_prefix = "\u{0}".into();
    }
    if default_ns.is_some_and(|ns| ns != NS_CLIENT && ns != NS_STREAM) {
        return Err(XmppError::Protocol(
            "the peer's stream header declares a default namespace other than jabber:client".into(),
        ));
    }
    Ok(h)
}

fn split_qname(q: &[u8]) -> (Option<&[u8]>, &[u8]) {
    match q.iter().position(|&b| b == b':') {
        Some(i) => (Some(&q[..i]), &q[i + 1..]),
        None => (None, q),
    }
}

/// Parses one complete level-1 element. `stream_prefix` comes from the stream header.
pub fn parse(bytes: &[u8], stream_prefix: &str) -> Result<Stanza, XmppError> {
    let mut reader = Reader::from_reader(bytes);
    // Keep all whitespace: message bodies are the peer's text, byte for byte.
    reader.config_mut().trim_text(false);
    let mut nodes: Vec<Node> = Vec::new();
    // Open elements: (index in `nodes` if recorded, default namespace in scope).
    let mut stack: Vec<(Option<usize>, String)> = Vec::new();
    // In-scope prefix declarations: (prefix, ns, depth where declared).
    let mut prefixes: Vec<(String, String, usize)> = Vec::new();
    let mut done = false;
    loop {
        let ev = reader.read_event().map_err(malformed)?;
        if done && !matches!(ev, Event::Eof) {
            return Err(XmppError::Malformed(
                "content after the end of a stanza".into(),
            ));
        }
        match ev {
            Event::Start(e) => {
                open(&e, &mut nodes, &mut stack, &mut prefixes, stream_prefix)?;
            }
            Event::Empty(e) => {
                open(&e, &mut nodes, &mut stack, &mut prefixes, stream_prefix)?;
                close(&mut stack, &mut prefixes, &mut done);
            }
            Event::End(_) => close(&mut stack, &mut prefixes, &mut done),
            Event::Text(t) => {
                let s = t.decode().map_err(malformed)?;
                push_text(&mut nodes, &stack, &s)?;
            }
            Event::CData(t) => {
                let s = t.decode().map_err(malformed)?;
                push_text(&mut nodes, &stack, &s)?;
            }
            Event::GeneralRef(r) => {
                let c = if r.is_char_ref() {
                    r.resolve_char_ref().map_err(malformed)?
                } else {
                    let name: &[u8] = &r;
                    match name {
                        b"lt" => Some('<'),
                        b"gt" => Some('>'),
                        b"amp" => Some('&'),
                        b"apos" => Some('\''),
                        b"quot" => Some('"'),
                        _ => None,
                    }
                };
                let Some(c) = c else {
                    return Err(XmppError::Malformed(format!(
                        "undefined entity reference &{}; (RFC 6120 §11.1 allows only the \
                         five predefined entities and character references)",
                        String::from_utf8_lossy(r.as_ref())
                    )));
                };
                push_text(&mut nodes, &stack, c.encode_utf8(&mut [0; 4]))?;
            }
            Event::Comment(_) | Event::PI(_) | Event::DocType(_) | Event::Decl(_) => {
                return Err(XmppError::Malformed(
                    "comment, processing instruction or DTD inside a stanza \
                     (RFC 6120 §11.1 forbids them)"
                        .into(),
                ));
            }
            Event::Eof => break,
        }
    }
    if !done || nodes.is_empty() {
        return Err(XmppError::Malformed("incomplete stanza".into()));
    }
    Ok(Stanza { nodes })
}

fn open(
    e: &BytesStart<'_>,
    nodes: &mut Vec<Node>,
    stack: &mut Vec<(Option<usize>, String)>,
    prefixes: &mut Vec<(String, String, usize)>,
    stream_prefix: &str,
) -> Result<(), XmppError> {
    let depth = stack.len();
    let mut ns = stack
        .last()
        .map(|(_, ns)| ns.clone())
        .unwrap_or_else(|| NS_CLIENT.to_string());
    let record = depth <= MAX_DEPTH as usize;
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(malformed)?;
        let key = a.key.as_ref();
        if key == b"xmlns" {
            ns = a.unescape_value().map_err(malformed)?.into_owned();
        } else if let Some(p) = key.strip_prefix(b"xmlns:") {
            let v = a.unescape_value().map_err(malformed)?.into_owned();
            prefixes.push((String::from_utf8_lossy(p).into_owned(), v, depth));
        } else if record {
            let v = a.unescape_value().map_err(malformed)?.into_owned();
            attrs.push((String::from_utf8_lossy(key).into_owned(), v));
        } else {
            // Still check the value for bad entity references.
            a.unescape_value().map_err(malformed)?;
        }
    }
    let qname = e.name();
    let (prefix, local) = split_qname(qname.as_ref());
    // The element's own namespace: its prefix's, or the (possibly just declared) default.
    let own_ns = match prefix {
        None => ns.clone(),
        Some(p) => match prefixes.iter().rev().find(|(q, _, _)| q.as_bytes() == p) {
            Some((_, v, _)) => v.clone(),
            None if p == stream_prefix.as_bytes() => NS_STREAM.to_string(),
            None => {
                return Err(XmppError::Malformed(format!(
                    "element <{}> uses an undeclared namespace prefix",
                    String::from_utf8_lossy(qname.as_ref())
                )));
            }
        },
    };
    let idx = if record {
        nodes.push(Node {
            parent: stack.last().and_then(|(i, _)| *i),
            depth: depth as u8,
            name: std::str::from_utf8(local)
                .map_err(|_| malformed("element name is not UTF-8"))?
                .to_string(),
            ns: own_ns,
            attrs,
            text: String::new(),
        });
        Some(nodes.len() - 1)
    } else {
        None
    };
    stack.push((idx, ns));
    Ok(())
}

fn close(
    stack: &mut Vec<(Option<usize>, String)>,
    prefixes: &mut Vec<(String, String, usize)>,
    done: &mut bool,
) {
    stack.pop();
    let depth = stack.len();
    prefixes.retain(|(_, _, d)| *d < depth);
    if stack.is_empty() {
        *done = true;
    }
}

fn push_text(
    nodes: &mut [Node],
    stack: &[(Option<usize>, String)],
    s: &str,
) -> Result<(), XmppError> {
    match stack.last() {
        Some((Some(i), _)) => nodes[*i].text.push_str(s),
        Some((None, _)) => {}
        None if s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')) => {}
        None => return Err(malformed("text outside the stanza element")),
    }
    Ok(())
}

/// Appends `s` escaped for XML text or an attribute value in either quote style.
pub fn escape_into(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'\'' => "&apos;",
            b'"' => "&quot;",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_view_resolves_entities_and_cdata() {
        let s = parse(
            b"<message from='a@b/c' id='m&amp;1' type='chat'><body>1 &lt; 2 &amp;&#x263A;&#65;\
              <![CDATA[<x>]]></body><active xmlns='http://jabber.org/protocol/chatstates'/>\
              </message>",
            "stream",
        )
        .unwrap();
        assert!(s.is("message", NS_CLIENT));
        assert_eq!(s.attr("id"), Some("m&1"));
        let body = s.child(0, "body", Some(NS_CLIENT)).unwrap();
        assert_eq!(s.text(body), "1 < 2 &\u{263A}A<x>");
        let a = s.child(0, "active", None).unwrap();
        assert_eq!(s.nodes[a].ns, "http://jabber.org/protocol/chatstates");
    }

    #[test]
    fn stream_prefix_and_nested_namespaces() {
        let s = parse(
            b"<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>\
              <mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism></mechanisms>\
              <x:y xmlns:x='urn:x'/></stream:features>",
            "stream",
        )
        .unwrap();
        assert!(s.is("features", NS_STREAM));
        let m = s.child(0, "mechanisms", None).unwrap();
        let names: Vec<&str> = s.children(m).map(|i| s.text(i)).collect();
        assert_eq!(names, ["SCRAM-SHA-1", "PLAIN"]);
        assert_eq!(s.nodes[s.child(0, "y", None).unwrap()].ns, "urn:x");
    }

    #[test]
    fn bad_stanzas_are_malformed_not_panics() {
        for bad in [
            &b"<a><b></a>"[..],
            b"<a x='1' x='2'/>",
            b"<a>&nbsp;</a>",
            b"<a x='&foo;'/>",
            b"<p:a/>",
            b"<a>&#0;</a>",
            b"<a",
        ] {
            let e = parse(bad, "stream").unwrap_err();
            assert!(matches!(e, XmppError::Malformed(_)), "{bad:?}: {e}");
        }
    }

    #[test]
    fn header_attributes() {
        let h = parse_header(
            b"<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' \
              id='s1' from='example.com' version='1.0'>",
        )
        .unwrap();
        assert_eq!(h.id.as_deref(), Some("s1"));
        assert_eq!(h.stream_prefix, "stream");
        let e = parse_header(b"<html>").unwrap_err();
        assert!(e.to_string().contains("not <stream:stream>"), "{e}");
    }

    #[test]
    fn escaping() {
        let mut s = String::new();
        escape_into(&mut s, "a<b>&'\"é");
        assert_eq!(s, "a&lt;b&gt;&amp;&apos;&quot;é");
    }
}
