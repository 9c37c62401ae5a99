//! The XML the gateway looks at and writes: stanza normalisation between the component
//! stream and the link, JID domains, stanza errors, and the link's control elements.
//!
//! A stanza is forwarded as bytes, not re-serialised from a tree: only its top start tag
//! is rewritten, for two reasons.
//!
//! - Namespaces. On a component stream (XEP-0114) the default namespace is
//!   `jabber:component:accept`; on the link it is `jabber:server` (the implied XEP-0361
//!   header). A stanza that names one of the three stanza namespaces on its top element is
//!   rewritten without it, so that it inherits whichever default the next stream has,
//!   exactly what a server does between c2s and s2s (RFC 6120 §4.8.3). Prosody itself
//!   writes component stanzas without `xmlns`.
//! - Compression. Prosody writes attributes in hash-table order, so two messages from the
//!   same user can differ in attribute order and match less of each other in deflate's
//!   window. The top element's attributes are written as `from`, `to`, `type`, `id`, then
//!   the others in their original order, always single-quoted.
//!
//! After the rewrite the whole element is checked for well-formedness with the stanza
//! parser of `wirebench-xmpp`, because Prosody closes a component stream on the first
//! malformed byte (`not-well-formed`): garbage from the peer must stop here.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use wirebench_xmpp::stanza::{NS_STREAM, escape_into};

pub const NS_CLIENT: &str = "jabber:client";
pub const NS_SERVER: &str = "jabber:server";
pub const NS_COMPONENT: &str = "jabber:component:accept";
/// XEP-0198 stream management, whose `<a/>` and `<r/>` the link reuses.
pub const NS_SM: &str = "urn:xmpp:sm:3";
/// RFC 6120 §8.3.3 stanza error conditions.
pub const NS_STANZAS: &str = "urn:ietf:params:xml:ns:xmpp-stanzas";
/// This crate's own link elements (the resend marker).
pub const NS_X2X: &str = "urn:wirebench:x2x:0";

/// The stream header both ends of a link assume without sending it (XEP-0361 §4.1).
pub const IMPLIED_HEADER: &[u8] =
    b"<stream:stream xmlns='jabber:server' xmlns:stream='http://etherx.jabber.org/streams'>";

/// `</stream:stream>`: the stream close XEP-0361 §4.1 says SHOULD be exchanged.
pub const STREAM_CLOSE: &[u8] = b"</stream:stream>";

/// The three stanza kinds (RFC 6120 §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Message,
    Presence,
    Iq,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Message => "message",
            Kind::Presence => "presence",
            Kind::Iq => "iq",
        }
    }
    fn from_name(n: &[u8]) -> Option<Kind> {
        match n {
            b"message" => Some(Kind::Message),
            b"presence" => Some(Kind::Presence),
            b"iq" => Some(Kind::Iq),
            _ => None,
        }
    }
}

/// The routing attributes of a stanza's top element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StanzaInfo {
    pub kind: Kind,
    pub from: Option<String>,
    pub to: Option<String>,
    pub stype: Option<String>,
    pub id: Option<String>,
}

impl StanzaInfo {
    /// RFC 6120 §8.3.1: never answer an error with an error; an iq result needs no answer.
    pub fn may_get_error_reply(&self) -> bool {
        let t = self.stype.as_deref();
        t != Some("error") && !(self.kind == Kind::Iq && t == Some("result"))
    }
}

/// A stanza in link form: bytes with the top element rewritten (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalised {
    pub bytes: Vec<u8>,
    pub info: StanzaInfo,
}

/// One level-1 element, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Element {
    Stanza(Normalised),
    /// Anything else: its local name, resolved namespace and top-level attributes.
    Other {
        name: String,
        ns: String,
        attrs: Vec<(String, String)>,
    },
}

impl Element {
    pub fn attr(&self, key: &str) -> Option<&str> {
        match self {
            Element::Other { attrs, .. } => attrs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str()),
            Element::Stanza(_) => None,
        }
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Classifies and, for stanzas, rewrites one complete level-1 element. `default_ns` is
/// the stream's default namespace. Errors describe why the bytes are not acceptable XML.
pub fn normalise(raw: &[u8], default_ns: &str) -> Result<Element, String> {
    let mut reader = Reader::from_reader(raw);
    let (start, empty) = match reader.read_event().map_err(err)? {
        Event::Start(e) => (e, false),
        Event::Empty(e) => (e, true),
        other => return Err(format!("expected an element, got {other:?}")),
    };
    let end = usize::try_from(reader.buffer_position()).map_err(err)?;
    let (attrs, own_ns, prefixed) = top_attributes(&start, default_ns)?;
    let qname = start.name();
    let local = qname.local_name();
    let kind = Kind::from_name(local.as_ref());
    let is_stanza_ns = matches!(own_ns.as_str(), NS_CLIENT | NS_SERVER | NS_COMPONENT);
    let Some(kind) = kind.filter(|_| is_stanza_ns && !prefixed) else {
        // Control elements are checked whole as well: they are small.
        wirebench_xmpp::stanza::parse(raw, "stream").map_err(err)?;
        return Ok(Element::Other {
            name: String::from_utf8_lossy(local.as_ref()).into_owned(),
            ns: own_ns,
            attrs: attrs
                .into_iter()
                .filter(|(k, _)| k != "xmlns" && !k.starts_with("xmlns:"))
                .collect(),
        });
    };
    let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone());
    let info = StanzaInfo {
        kind,
        from: get("from"),
        to: get("to"),
        stype: get("type"),
        id: get("id"),
    };
    let mut top = String::with_capacity(end + 8);
    top.push('<');
    top.push_str(kind.name());
    const FIRST: [&str; 4] = ["from", "to", "type", "id"];
    for key in FIRST {
        if let Some(v) = get(key) {
            push_attr(&mut top, key, &v);
        }
    }
    for (k, v) in &attrs {
        let stanza_xmlns =
            k == "xmlns" && matches!(v.as_str(), NS_CLIENT | NS_SERVER | NS_COMPONENT);
        if !FIRST.contains(&k.as_str()) && !stanza_xmlns {
            push_attr(&mut top, k, v);
        }
    }
    top.push_str(if empty { "/>" } else { ">" });
    let mut bytes = top.into_bytes();
    bytes.extend_from_slice(raw.get(end..).unwrap_or(&[]));
    // Checks the whole element (end tags, entities, prefixes, attribute syntax) as it
    // will be forwarded.
    wirebench_xmpp::stanza::parse(&bytes, "stream").map_err(err)?;
    Ok(Element::Stanza(Normalised { bytes, info }))
}

type TopAttrs = (Vec<(String, String)>, String, bool);

/// The top element's attributes (unescaped), its namespace, and whether it has a prefix.
fn top_attributes(start: &BytesStart<'_>, default_ns: &str) -> Result<TopAttrs, String> {
    let mut attrs = Vec::new();
    let mut ns = default_ns.to_string();
    for a in start.attributes() {
        let a = a.map_err(err)?;
        let k = std::str::from_utf8(a.key.as_ref())
            .map_err(|_| "attribute name is not UTF-8".to_string())?
            .to_string();
        let v = a.unescape_value().map_err(err)?.into_owned();
        if k == "xmlns" {
            ns.clone_from(&v);
        }
        attrs.push((k, v));
    }
    let qname = start.name();
    let prefix = qname.prefix();
    if let Some(p) = prefix {
        let p = String::from_utf8_lossy(p.as_ref()).into_owned();
        let decl = format!("xmlns:{p}");
        ns = match attrs.iter().find(|(k, _)| *k == decl) {
            Some((_, v)) => v.clone(),
            None if p == "stream" => NS_STREAM.to_string(),
            None => return Err(format!("element prefix `{p}` is not declared")),
        };
    }
    Ok((attrs, ns, prefix.is_some()))
}

fn push_attr(out: &mut String, k: &str, v: &str) {
    out.push(' ');
    out.push_str(k);
    out.push_str("='");
    escape_into(out, v);
    out.push('\'');
}

/// The domainpart of a JID (RFC 7622 §3.2): after the first `@` of the part before the
/// first `/`. Lowercased, without a trailing dot, for comparison with configuration.
pub fn domain_of(jid: &str) -> String {
    let bare = jid.split('/').next().unwrap_or("");
    let domain = bare.split_once('@').map_or(bare, |(_, d)| d);
    domain.trim_end_matches('.').to_ascii_lowercase()
}

/// A stanza error reply (RFC 6120 §8.3): `from` and `to` swapped (with `from` chosen by
/// the caller), same kind and id, `type='error'`, the condition and a human-readable text.
/// The original payload is not echoed: §8.3.1 allows that, and link bytes are scarce.
pub fn error_reply(
    info: &StanzaInfo,
    from: &str,
    condition: &str,
    error_type: &str,
    text: &str,
) -> Vec<u8> {
    let mut s = String::with_capacity(200);
    s.push('<');
    s.push_str(info.kind.name());
    push_attr(&mut s, "from", from);
    if let Some(to) = &info.from {
        push_attr(&mut s, "to", to);
    }
    push_attr(&mut s, "type", "error");
    if let Some(id) = &info.id {
        push_attr(&mut s, "id", id);
    }
    s.push_str("><error type='");
    s.push_str(error_type);
    s.push_str("'><");
    s.push_str(condition);
    s.push_str(" xmlns='");
    s.push_str(NS_STANZAS);
    s.push_str("'/><text xmlns='");
    s.push_str(NS_STANZAS);
    s.push_str("'>");
    escape_into(&mut s, text);
    s.push_str("</text></error></");
    s.push_str(info.kind.name());
    s.push('>');
    s.into_bytes()
}

/// XEP-0198 §4 answer: `h` stanzas of this direction handled so far.
pub fn ack(h: u64) -> String {
    format!("<a xmlns='{NS_SM}' h='{h}'/>")
}

/// XEP-0198 §4 request for an answer.
pub fn request() -> String {
    format!("<r xmlns='{NS_SM}'/>")
}

/// The resend marker: the next stanza on this connection has sequence number `n`, and
/// the sender is the gateway process `instance`.
pub fn marker(n: u64, instance: u64) -> String {
    format!("<s xmlns='{NS_X2X}' n='{n}' i='{instance:x}'/>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stanza(raw: &str, ns: &str) -> Normalised {
        match normalise(raw.as_bytes(), ns).unwrap() {
            Element::Stanza(n) => n,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn component_namespace_is_dropped_and_attributes_reordered() {
        let n = stanza(
            "<message id='m&amp;1' type=\"chat\" xmlns='jabber:component:accept' \
             to='bob@b.test/r' from='alice@a.test/wb' xml:lang='en'><body>it's</body></message>",
            NS_COMPONENT,
        );
        assert_eq!(
            String::from_utf8(n.bytes).unwrap(),
            "<message from='alice@a.test/wb' to='bob@b.test/r' type='chat' id='m&amp;1' \
             xml:lang='en'><body>it's</body></message>"
        );
        assert_eq!(n.info.id.as_deref(), Some("m&1"));
        assert_eq!(n.info.kind, Kind::Message);
    }

    #[test]
    fn client_namespace_is_dropped_other_namespaces_kept() {
        let n = stanza(
            "<presence xmlns='jabber:client' from='a@a.test'/>",
            NS_SERVER,
        );
        assert_eq!(n.bytes, b"<presence from='a@a.test'/>");
        let e = normalise(b"<message xmlns='urn:x' from='a@b'/>", NS_SERVER).unwrap();
        assert!(
            matches!(e, Element::Other { ref ns, .. } if ns == "urn:x"),
            "{e:?}"
        );
    }

    #[test]
    fn control_elements_are_classified() {
        let e = normalise(ack(42).as_bytes(), NS_SERVER).unwrap();
        assert!(matches!(&e, Element::Other { name, ns, .. } if name == "a" && ns == NS_SM));
        assert_eq!(e.attr("h"), Some("42"));
        let e = normalise(marker(7, 0xabc).as_bytes(), NS_SERVER).unwrap();
        assert_eq!(e.attr("i"), Some("abc"));
        let e = normalise(b"<stream:error><x/></stream:error>", NS_SERVER).unwrap();
        assert!(matches!(&e, Element::Other { ns, .. } if ns == NS_STREAM));
    }

    #[test]
    fn malformed_elements_are_errors_not_panics() {
        for bad in [
            &b"<message><body></message>"[..],
            b"<message a='1' a='2'/>",
            b"<message>&nbsp;</message>",
            b"<p:message/>",
            b"</message>",
            b"text",
            b"",
            b"<message from='\xff'/>",
        ] {
            assert!(normalise(bad, NS_SERVER).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rfc7622_domainpart() {
        assert_eq!(domain_of("alice@A.Test/res@x/y"), "a.test");
        assert_eq!(domain_of("b.test."), "b.test");
        assert_eq!(domain_of("b.test/r@s"), "b.test");
        assert_eq!(domain_of(""), "");
    }

    #[test]
    fn error_reply_swaps_addresses() {
        let n = stanza(
            "<iq type='get' id='q1' from='a@a.test/r' to='b.test'><ping xmlns='urn:xmpp:ping'/></iq>",
            NS_COMPONENT,
        );
        let e = error_reply(
            &n.info,
            "b.test",
            "resource-constraint",
            "wait",
            "queue <full>",
        );
        let s = String::from_utf8(e.clone()).unwrap();
        assert_eq!(
            s,
            "<iq from='b.test' to='a@a.test/r' type='error' id='q1'><error type='wait'>\
             <resource-constraint xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>\
             <text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>queue &lt;full&gt;</text>\
             </error></iq>"
        );
        assert!(matches!(
            normalise(&e, NS_SERVER).unwrap(),
            Element::Stanza(_)
        ));
    }
}
