//! Building envelopes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;

use crate::Response;

const HEAD: &str = concat!(
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n",
    "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"",
    " xmlns:wb=\"urn:wirebench:bench\"><soap:Body>"
);
const TAIL: &str = "</soap:Body></soap:Envelope>";

/// Fixed bytes around the base64 text in the largest request: head, tail,
/// `<wb:Echo><wb:seq>` + 20 digits + `</wb:seq><wb:data></wb:data></wb:Echo>`.
const FIXED_REQUEST: usize = HEAD.len() + TAIL.len() + 128;

fn base64_len(n: usize) -> usize {
    n.div_ceil(3).saturating_mul(4)
}

/// Builds a request envelope: `wb:Echo` if `echo`, else `wb:Sink`, with `wb:seq` if `seq`
/// is given, and `data` as base64.
pub fn encode_request(seq: Option<u64>, echo: bool, data: &[u8]) -> Bytes {
    let op = if echo { "Echo" } else { "Sink" };
    let mut s = String::with_capacity(FIXED_REQUEST + base64_len(data.len()));
    s.push_str(HEAD);
    s.push_str("<wb:");
    s.push_str(op);
    s.push('>');
    if let Some(seq) = seq {
        s.push_str("<wb:seq>");
        s.push_str(&seq.to_string());
        s.push_str("</wb:seq>");
    }
    s.push_str("<wb:data>");
    STANDARD.encode_string(data, &mut s);
    s.push_str("</wb:data></wb:");
    s.push_str(op);
    s.push('>');
    s.push_str(TAIL);
    Bytes::from(s.into_bytes())
}

/// Builds a response envelope. A fault's code and text are XML-escaped; characters that
/// XML 1.0 cannot carry at all (NUL and the other C0 controls except tab, LF and CR, and
/// U+FFFE/U+FFFF) are replaced with U+FFFD.
pub fn encode_response(r: &Response) -> Bytes {
    let mut s = match r {
        Response::Echo(data) => {
            let mut s = String::with_capacity(FIXED_REQUEST + base64_len(data.len()));
            s.push_str(HEAD);
            s.push_str("<wb:EchoResponse><wb:data>");
            STANDARD.encode_string(data, &mut s);
            s.push_str("</wb:data></wb:EchoResponse>");
            s
        }
        Response::Sink => {
            let mut s = String::with_capacity(FIXED_REQUEST);
            s.push_str(HEAD);
            s.push_str("<wb:SinkResponse/>");
            s
        }
        Response::Fault { code, text } => {
            let mut s = String::with_capacity(FIXED_REQUEST + code.len() + text.len() + 16);
            s.push_str(HEAD);
            s.push_str("<soap:Fault><faultcode>");
            escape_into(&mut s, code);
            s.push_str("</faultcode><faultstring>");
            escape_into(&mut s, text);
            s.push_str("</faultstring></soap:Fault>");
            s
        }
    };
    s.push_str(TAIL);
    Bytes::from(s.into_bytes())
}

/// Appends `text` as XML character data. CR is written as a character reference so that
/// a conforming XML parser's line-end normalization does not turn it into LF.
fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
}

/// The largest envelope produced for a payload of `max_payload` bytes (base64 growth plus
/// the fixed envelope, with margin), used as the body limit. The margin also covers other
/// stacks' line-wrapped base64 (a CR LF every 64 characters or more) and a few hundred
/// bytes of extra namespace declarations, headers and `xsi:type` attributes. Saturates
/// instead of overflowing; note that the parsers refuse anything above
/// [`MAX_INPUT`](crate::MAX_INPUT) whatever this returns.
pub fn max_envelope(max_payload: usize) -> usize {
    let b64 = base64_len(max_payload);
    b64.saturating_add(b64 / 32)
        .saturating_add(FIXED_REQUEST)
        .saturating_add(4096)
}
