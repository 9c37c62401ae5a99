//! The few XML chores both transports share: reading one start tag, checking that a
//! buffer holds exactly one element, and giving a top-level element the namespace
//! declarations it inherited from the stream it is leaving.

use crate::{WebError, ns};
use quick_xml::Reader;
use quick_xml::events::Event;
use wirebench_xmpp::framer::{Frame, Framer};

/// A start tag: its qualified name, attributes (unescaped) and where it ends.
#[derive(Debug, Clone)]
pub(crate) struct Tag {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    /// `<name .../>`: no content follows.
    pub empty: bool,
}

impl Tag {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The local name (after any prefix).
    pub fn local(&self) -> &str {
        self.name.rsplit(':').next().unwrap_or(&self.name)
    }

    /// The namespace the tag's own name is in, as far as its own attributes say.
    pub fn own_ns(&self) -> Option<&str> {
        match self.name.split_once(':') {
            Some((prefix, _)) => self.attr(&format!("xmlns:{prefix}")),
            None => self.attr("xmlns"),
        }
    }
}

fn malformed(e: impl std::fmt::Display) -> WebError {
    WebError::Malformed(e.to_string())
}

/// Reads the first start tag in `bytes` (after an optional XML declaration and
/// whitespace).
pub(crate) fn start_tag(bytes: &[u8]) -> Result<Tag, WebError> {
    let mut reader = Reader::from_reader(bytes);
    loop {
        let (e, empty) = match reader.read_event().map_err(malformed)? {
            Event::Decl(_) => continue,
            Event::Text(t) if t.iter().all(u8::is_ascii_whitespace) => continue,
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::Eof => return Err(WebError::Malformed("no element".into())),
            other => {
                return Err(WebError::Malformed(format!(
                    "expected a start tag, found {other:?}"
                )));
            }
        };
        let name = String::from_utf8(e.name().as_ref().to_vec()).map_err(malformed)?;
        let mut attrs = Vec::new();
        for a in e.attributes() {
            let a = a.map_err(malformed)?;
            let k = String::from_utf8(a.key.as_ref().to_vec()).map_err(malformed)?;
            let v = a.unescape_value().map_err(malformed)?.into_owned();
            attrs.push((k, v));
        }
        return Ok(Tag { name, attrs, empty });
    }
}

/// Checks that `msg` is exactly one complete element (whitespace around it allowed) with
/// nothing RFC 6120 §11.1 forbids (comments, PIs, DTDs), each element at most
/// `max` bytes, and returns its start tag and its byte range in `msg`.
pub(crate) fn one_element(
    msg: &[u8],
    max: usize,
) -> Result<Option<(Tag, std::ops::Range<usize>)>, WebError> {
    if msg.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    // The framer splits a stream; a made-up root lets it check one element for us.
    const ROOT: &[u8] = b"<r>";
    let mut f = Framer::new(max);
    let mut buf = Vec::with_capacity(ROOT.len() + msg.len());
    buf.extend_from_slice(ROOT);
    buf.extend_from_slice(msg);
    f.push(&buf);
    match f.next_frame()? {
        Some(Frame::Header(_)) => {}
        _ => return Err(WebError::Malformed("cannot frame the message".into())),
    }
    let range = match f.next_frame()? {
        Some(Frame::Element(r)) => r,
        Some(Frame::End) => {
            return Err(WebError::Malformed(
                "the message is an end tag, not an element".into(),
            ));
        }
        _ => {
            return Err(WebError::Malformed(
                "the message does not hold one complete element".into(),
            ));
        }
    };
    let rest = &f.buf()[range.end..];
    if !rest.iter().all(u8::is_ascii_whitespace) {
        return Err(WebError::Malformed(
            "the message holds more than one element (RFC 7395 §3.3.3: one per message)".into(),
        ));
    }
    let start = range.start - ROOT.len();
    let end = range.end - ROOT.len();
    let tag = start_tag(&msg[start..end])?;
    Ok(Some((tag, start..end)))
}

/// Returns `el` (one complete element that was a child of a `jabber:client` stream with
/// the `stream` prefix bound) with the declarations it needs to stand alone: RFC 7395
/// §3.3.3 and XEP-0206 §7 want every top-level element fully qualified.
pub(crate) fn qualify(el: &[u8]) -> Result<Vec<u8>, WebError> {
    let tag = start_tag(el)?;
    let decl = match tag.name.split_once(':') {
        Some(("stream", _)) if tag.attr("xmlns:stream").is_none() => {
            format!(" xmlns:stream='{}'", ns::STREAM)
        }
        None if tag.attr("xmlns").is_none() => format!(" xmlns='{}'", ns::CLIENT),
        _ => return Ok(el.to_vec()),
    };
    // After `<` and the name: the name has no quotes, so this cannot land in a value.
    let at = 1 + tag.name.len();
    let mut out = Vec::with_capacity(el.len() + decl.len());
    out.extend_from_slice(&el[..at]);
    out.extend_from_slice(decl.as_bytes());
    out.extend_from_slice(&el[at..]);
    Ok(out)
}

/// Appends ` key='value'` with the value escaped.
pub(crate) fn push_attr(out: &mut String, key: &str, value: &str) {
    out.push(' ');
    out.push_str(key);
    out.push_str("='");
    wirebench_xmpp::stanza::escape_into(out, value);
    out.push('\'');
}

/// Whether `tag` is SASL's `<success/>`, after which both ends restart their streams
/// (RFC 6120 §6.4.6) and a new XML declaration and header may follow.
pub(crate) fn is_sasl_success(tag: &Tag) -> bool {
    tag.local() == "success" && tag.own_ns() == Some(ns::SASL)
}
