//! Incremental framing of an XMPP stream into its header and level-1 elements (RFC 6120 §4).
//!
//! An XMPP stream is one XML document that never ends while the session lives: the
//! `<stream:stream>` start tag opens the root (level 0 here called "the stream"), every
//! stanza or negotiation element is a child of it ("level 1"), and `</stream:stream>`
//! ends the session. A DOM or pull parser over the whole stream would either never finish
//! or keep state for the session's lifetime, so this module does the least that splits
//! the stream: a byte-level lexer that knows quotes, tags, CDATA and nesting depth, and
//! hands out each complete level-1 element as one byte range. Only that range is then
//! parsed properly ([`crate::stanza`]).
//!
//! The lexer is resumable: it keeps its position and state between [`Framer::push`]
//! calls, so a stanza arriving one byte at a time costs O(n) in total, not O(n²). The
//! buffer holds at most the element being received (bounded by `max_stanza`) plus what the
//! transport handed over in one call; everything before the current element is dropped.
//!
//! What RFC 6120 §11.1 forbids is refused here, where it is cheapest to see: comments,
//! processing instructions (other than the XML declaration before the stream header) and
//! DTDs (`<!DOCTYPE`, `<!ENTITY`). Non-whitespace text between stanzas is refused too
//! (the stream element has element-only content). Entity references are checked later by
//! the stanza parser, which knows the five predefined ones and character references.
//!
//! Inside a stanza every end tag must name the element it closes (XML 1.0 §3, "element
//! type match"): checked as the end tag arrives, not when the stanza completes, because
//! `<message><body>x</message>` never completes and would otherwise sit in the buffer
//! until a timeout instead of earning its `not-well-formed` at once.

use crate::error::XmppError;

/// One thing the framer found in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// The stream header: the bytes of the `<stream:stream ...>` start tag.
    Header(std::ops::Range<usize>),
    /// A complete level-1 element (stanza or negotiation element): its byte range in
    /// [`Framer::buf`], valid until the next call to [`Framer::next_frame`] or
    /// [`Framer::push`].
    Element(std::ops::Range<usize>),
    /// `</stream:stream>`: the peer closed its stream.
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    /// Character data (or whitespace between stanzas).
    Text,
    /// Just read `<`.
    Lt,
    /// Inside a start tag; `quote` is the open attribute quote, `slash` whether the last
    /// significant byte was `/` (an empty-element tag when `>` follows).
    StartTag { quote: Option<u8>, slash: bool },
    /// Inside an end tag (`</name`); no quotes can occur there.
    EndTag,
    /// After `<!`: matched `n` bytes of `[CDATA[`.
    Bang(u8),
    /// Inside a CDATA section; `brackets` counts the trailing `]` seen (up to 2).
    CData { brackets: u8 },
    /// Inside `<?...`; only the XML declaration before the header is allowed.
    Pi { quote: Option<u8>, question: bool },
}

/// Resumable splitter of an XMPP byte stream into header, level-1 elements and end.
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    /// Next byte to lex.
    pos: usize,
    /// Bytes before this were handed out and can be dropped.
    consumed: usize,
    /// Start of the tag or element being lexed (for ranges and size limits).
    mark: usize,
    lex: Lex,
    /// Element depth: 0 = outside the stream, 1 = inside the stream between stanzas.
    depth: usize,
    /// Where the tag being lexed starts (its `<`), as an offset from `mark`.
    tag: u32,
    /// The open elements of the stanza in progress, outermost first: offsets of their
    /// start tags from `mark` (offsets survive [`Framer::push`] compacting the buffer).
    open: Vec<u32>,
    header_seen: bool,
    /// The stream header's element name (`stream:stream`, or another prefix), to refuse
    /// it as a level-1 element.
    root: Vec<u8>,
    ended: bool,
    max_stanza: usize,
    /// [`Framer::skip_plain`] on (off only in the test that checks it changes nothing).
    skip: bool,
}

const CDATA_OPEN: &[u8] = b"[CDATA[";

impl Framer {
    pub fn new(max_stanza: usize) -> Framer {
        Framer {
            buf: Vec::new(),
            pos: 0,
            consumed: 0,
            mark: 0,
            lex: Lex::Text,
            depth: 0,
            tag: 0,
            open: Vec::new(),
            header_seen: false,
            root: Vec::new(),
            ended: false,
            max_stanza,
            skip: true,
        }
    }

    /// The buffer the ranges of [`Frame`] point into.
    pub fn buf(&self) -> &[u8] {
        &self.buf
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.compact();
        self.buf.extend_from_slice(bytes);
    }

    /// Forgets the stream (after STARTTLS or SASL success, RFC 6120 §5.4.3.3, §6.4.6) but
    /// keeps bytes not lexed yet: they belong to the new stream.
    pub fn restart(&mut self) {
        self.compact();
        self.buf.drain(..self.pos);
        self.pos = 0;
        self.consumed = 0;
        self.mark = 0;
        self.lex = Lex::Text;
        self.depth = 0;
        self.open.clear();
        self.header_seen = false;
        self.ended = false;
    }

    /// Removes and returns the bytes not lexed yet (TLS records after `<proceed/>`).
    pub fn take_unlexed(&mut self) -> Vec<u8> {
        let rest = self.buf.split_off(self.pos);
        self.restart();
        rest
    }

    /// Gives back the buffer's spare capacity (an idle server session holds none).
    pub fn shrink(&mut self) {
        self.compact();
        self.buf.shrink_to_fit();
        if self.open.is_empty() {
            self.open.shrink_to_fit();
        }
    }

    /// Bytes held: the element in progress plus unlexed input.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.consumed
    }

    fn compact(&mut self) {
        if self.consumed > 0 {
            self.buf.drain(..self.consumed);
            self.pos -= self.consumed;
            self.mark -= self.consumed.min(self.mark);
            self.consumed = 0;
        }
    }

    /// Lexes until the next frame. `Ok(None)` means more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, XmppError> {
        if self.ended {
            return Ok(None);
        }
        while self.pos < self.buf.len() {
            if self.skip {
                self.skip_plain();
                if self.pos == self.buf.len() {
                    break;
                }
            }
            let b = self.buf[self.pos];
            let at = self.pos;
            self.pos += 1;
            let frame = match self.lex {
                Lex::Text => self.lex_text(b, at).map(|()| None)?,
                Lex::Lt => self.lex_lt(b).map(|()| None)?,
                Lex::StartTag { quote, slash } => self.lex_start_tag(quote, slash, b)?,
                Lex::EndTag => self.lex_end_tag(b)?,
                Lex::Bang(n) => self.lex_bang(n, b).map(|()| None)?,
                Lex::CData { brackets } => {
                    self.lex_cdata(brackets, b);
                    None
                }
                Lex::Pi { quote, question } => self.lex_pi(quote, question, b).map(|()| None)?,
            };
            if frame.is_some() {
                return Ok(frame);
            }
            self.check_size()?;
        }
        self.check_size()?;
        Ok(None)
    }

    /// Passes over, in one step, the bytes that cannot change the lexer's state: a
    /// stanza's text up to its next `<`, an attribute value up to its quote (or a `<`,
    /// an error), a tag's name and attribute names up to a quote, `/`, `>` or `<`. They
    /// are most of a stanza, and the per-byte dispatch of [`Framer::next_frame`] was the
    /// gateways' largest cost of their own (docs/performance.md). Each state's per-byte
    /// function does nothing for them, so what is passed over is what it would have seen.
    #[inline]
    fn skip_plain(&mut self) {
        let rest = &self.buf[self.pos..];
        let n = match self.lex {
            Lex::Text if self.depth >= 2 => memchr::memchr(b'<', rest),
            Lex::StartTag { quote: Some(q), .. } => memchr::memchr2(q, b'<', rest),
            Lex::StartTag { quote: None, .. } => {
                let n = rest
                    .iter()
                    .position(|&b| matches!(b, b'\'' | b'"' | b'>' | b'/' | b'<'));
                if n != Some(0) && !rest.is_empty() {
                    // A plain byte after a `/` means the tag was not empty after all.
                    self.lex = Lex::StartTag {
                        quote: None,
                        slash: false,
                    };
                }
                n
            }
            _ => return,
        };
        self.pos += n.unwrap_or(rest.len());
    }

    /// Character data: a `<` starts a tag; only whitespace may stand between stanzas.
    #[inline]
    fn lex_text(&mut self, b: u8, at: usize) -> Result<(), XmppError> {
        if b == b'<' {
            if self.depth <= 1 {
                // Start of a level-1 element (or the header / end tag): all
                // before it is whitespace already checked, drop it.
                self.mark = at;
                self.consumed = at;
            }
            // Stanzas are at most max_stanza bytes: the offset fits.
            self.tag = (at - self.mark) as u32;
            self.lex = Lex::Lt;
        } else if self.depth <= 1 && !is_xml_space(b) {
            return Err(malformed_text(self.depth, b));
        } else if self.depth <= 1 {
            self.consumed = self.pos;
            self.mark = self.pos;
        }
        Ok(())
    }

    /// After `<`: what kind of tag this is.
    #[inline]
    fn lex_lt(&mut self, b: u8) -> Result<(), XmppError> {
        self.lex = match b {
            b'/' => Lex::EndTag,
            b'!' => Lex::Bang(0),
            b'?' => Lex::Pi {
                quote: None,
                question: false,
            },
            _ if is_name_start(b) => Lex::StartTag {
                quote: None,
                slash: false,
            },
            _ => {
                return Err(XmppError::Malformed(format!(
                    "server sent '<' followed by byte 0x{b:02x}, which starts no tag"
                )));
            }
        };
        if matches!(self.lex, Lex::Bang(_)) && self.depth <= 1 {
            return Err(XmppError::Malformed(
                "server sent a comment, DTD or CDATA outside any stanza \
                     (RFC 6120 §11.1 forbids them there)"
                    .into(),
            ));
        }
        if matches!(self.lex, Lex::EndTag) && self.depth == 0 {
            return Err(XmppError::Malformed(
                "server sent an end tag before the stream header".into(),
            ));
        }
        Ok(())
    }

    /// Inside a start tag: quotes, and the `>` that closes it (a frame if it closes the
    /// header or an empty level-1 element).
    #[inline]
    fn lex_start_tag(
        &mut self,
        quote: Option<u8>,
        slash: bool,
        b: u8,
    ) -> Result<Option<Frame>, XmppError> {
        match (quote, b) {
            (Some(q), _) if b == q => {
                self.lex = Lex::StartTag {
                    quote: None,
                    slash: false,
                }
            }
            (Some(_), b'<') => {
                return Err(XmppError::Malformed(
                    "server sent '<' inside an attribute value".into(),
                ));
            }
            (Some(_), _) => {}
            (None, b'\'' | b'"') => {
                self.lex = Lex::StartTag {
                    quote: Some(b),
                    slash: false,
                }
            }
            (None, b'>') => {
                self.lex = Lex::Text;
                if let Some(f) = self.close_start_tag(slash)? {
                    return Ok(Some(f));
                }
            }
            (None, b'/') => {
                self.lex = Lex::StartTag {
                    quote: None,
                    slash: true,
                }
            }
            (None, b'<') => {
                return Err(XmppError::Malformed("server sent '<' inside a tag".into()));
            }
            (None, _) => {
                self.lex = Lex::StartTag {
                    quote: None,
                    slash: false,
                }
            }
        }
        Ok(None)
    }

    /// Inside an end tag: its `>` may complete a stanza or end the stream.
    #[inline]
    fn lex_end_tag(&mut self, b: u8) -> Result<Option<Frame>, XmppError> {
        match b {
            b'>' => {
                self.lex = Lex::Text;
                if self.depth >= 2 {
                    self.match_end_tag()?;
                }
                // An end tag before any stream or element opened (peer data, so an
                // error, not an underflow: found by the xmpp_websocket fuzz target).
                self.depth = self.depth.checked_sub(1).ok_or_else(|| {
                    XmppError::Malformed("server sent an end tag with nothing open".into())
                })?;
                if self.depth == 1 {
                    let range = self.mark_range();
                    self.consumed = self.pos;
                    return Ok(Some(Frame::Element(range)));
                }
                if self.depth == 0 {
                    self.consumed = self.pos;
                    self.ended = true;
                    return Ok(Some(Frame::End));
                }
            }
            b'<' | b'"' | b'\'' => {
                return Err(XmppError::Malformed(format!(
                    "server sent '{}' inside an end tag",
                    b as char
                )));
            }
            _ => {}
        }
        Ok(None)
    }

    /// After `<!`: only a CDATA section, and only inside a stanza.
    #[inline]
    fn lex_bang(&mut self, n: u8, b: u8) -> Result<(), XmppError> {
        if b != CDATA_OPEN[n as usize] {
            return Err(XmppError::Malformed(
                "server sent a comment or DTD declaration inside a stanza \
                     (RFC 6120 §11.1 forbids them)"
                    .into(),
            ));
        }
        self.lex = if n as usize + 1 == CDATA_OPEN.len() {
            Lex::CData { brackets: 0 }
        } else {
            Lex::Bang(n + 1)
        };
        Ok(())
    }

    /// Inside a CDATA section: waits for `]]>`.
    #[inline]
    fn lex_cdata(&mut self, brackets: u8, b: u8) {
        self.lex = match b {
            b']' => Lex::CData {
                brackets: (brackets + 1).min(2),
            },
            b'>' if brackets == 2 => Lex::Text,
            _ => Lex::CData { brackets: 0 },
        };
    }

    /// Inside `<?...?>`: only the XML declaration before the header is allowed.
    #[inline]
    fn lex_pi(&mut self, quote: Option<u8>, question: bool, b: u8) -> Result<(), XmppError> {
        match (quote, b) {
            (Some(q), _) if q == b => {
                self.lex = Lex::Pi {
                    quote: None,
                    question: false,
                }
            }
            (Some(_), _) => {}
            (None, b'\'' | b'"') => {
                self.lex = Lex::Pi {
                    quote: Some(b),
                    question: false,
                }
            }
            (None, b'>') if question => {
                self.lex = Lex::Text;
                let pi = &self.buf[self.mark..self.pos];
                let is_decl = pi.len() > 6
                    && pi.starts_with(b"<?xml")
                    && is_xml_space(pi[5])
                    && self.depth == 0
                    && !self.header_seen;
                if !is_decl {
                    return Err(XmppError::Malformed(
                        "server sent a processing instruction (RFC 6120 §11.1 \
                         allows only the XML declaration before the stream header)"
                            .into(),
                    ));
                }
                self.consumed = self.pos;
            }
            (None, _) => {
                self.lex = Lex::Pi {
                    quote: None,
                    question: b == b'?',
                }
            }
        }
        Ok(())
    }

    fn mark_range(&self) -> std::ops::Range<usize> {
        self.mark..self.pos
    }

    /// The name of the start tag whose `>` was just lexed.
    fn tag_being_closed(&self) -> &[u8] {
        tag_name(&self.buf[self.mark + self.tag as usize + 1..self.pos])
    }

    fn close_start_tag(&mut self, empty: bool) -> Result<Option<Frame>, XmppError> {
        if self.depth == 0 {
            if self.header_seen {
                return Err(XmppError::Malformed(
                    "server sent a second root element after its stream ended".into(),
                ));
            }
            if empty {
                return Err(XmppError::Malformed(
                    "server sent an empty stream header (<stream:stream/>), which closes \
                     the stream at once"
                        .into(),
                ));
            }
            self.header_seen = true;
            self.root = self.tag_being_closed().to_vec();
            self.depth = 1;
            let range = self.mark_range();
            self.consumed = self.pos;
            return Ok(Some(Frame::Header(range)));
        }
        if self.depth == 1 && self.tag_being_closed() == self.root {
            // Not a stanza that never ends (it would sit in the buffer up to the stanza
            // limit, as a WebSocket client sending <open/> after <open/> did): a stream
            // restarts only after STARTTLS or SASL success, which call `restart` first.
            return Err(XmppError::Protocol(
                "server sent a second stream header inside its stream (a stream restarts \
                 only after STARTTLS or SASL success, RFC 6120 §4.3.3)"
                    .into(),
            ));
        }
        if empty {
            if self.depth == 1 {
                let range = self.mark_range();
                self.consumed = self.pos;
                return Ok(Some(Frame::Element(range)));
            }
        } else {
            if self.depth == 1 {
                self.open.clear();
            }
            self.open.push(self.tag);
            self.depth += 1;
        }
        Ok(None)
    }

    /// The end tag just lexed (`</name>`, ending at `pos`) must close the innermost open
    /// element of the stanza.
    fn match_end_tag(&mut self) -> Result<(), XmppError> {
        let end = &self.buf[self.mark + self.tag as usize + 2..self.pos - 1];
        let end = tag_name(end);
        let start = self.open.pop().map(|o| {
            let at = self.mark + o as usize + 1;
            tag_name(&self.buf[at..self.pos])
        });
        match start {
            Some(start) if start == end => Ok(()),
            start => Err(XmppError::Malformed(format!(
                "server sent end tag </{}> where </{}> was due",
                String::from_utf8_lossy(&end[..end.len().min(64)]),
                String::from_utf8_lossy(start.map_or(&b""[..], |s| &s[..s.len().min(64)]))
            ))),
        }
    }

    fn check_size(&self) -> Result<(), XmppError> {
        // Between stanzas `mark` follows `pos`, so this measures the element (or header)
        // in progress only.
        let held = self.pos - self.mark.min(self.pos);
        if held > self.max_stanza {
            return Err(XmppError::StanzaTooLarge {
                limit: self.max_stanza,
            });
        }
        Ok(())
    }
}

fn malformed_text(depth: usize, b: u8) -> XmppError {
    let place = if depth == 0 {
        "before the stream header"
    } else {
        "between stanzas (only whitespace keepalives are allowed there)"
    };
    XmppError::Malformed(format!("server sent text byte 0x{b:02x} {place}"))
}

/// A tag's name: its bytes up to whitespace, `/` or `>`.
fn tag_name(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .position(|&b| is_xml_space(b) || b == b'/' || b == b'>')
        .unwrap_or(bytes.len());
    &bytes[..end]
}

fn is_xml_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':' || b >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' \
        xmlns:stream='http://etherx.jabber.org/streams' id='abc' from='example.com' version='1.0'>";

    /// Frames as strings, collecting until input runs out or an error.
    fn frames(chunks: &[&[u8]]) -> Result<Vec<String>, XmppError> {
        let mut f = Framer::new(1024);
        let mut out = Vec::new();
        for c in chunks {
            f.push(c);
            while let Some(fr) = f.next_frame()? {
                out.push(match fr {
                    Frame::Header(r) => {
                        format!("H:{}", String::from_utf8_lossy(&f.buf()[r]))
                    }
                    Frame::Element(r) => String::from_utf8_lossy(&f.buf()[r]).into_owned(),
                    Frame::End => "END".into(),
                });
            }
        }
        Ok(out)
    }

    fn doc() -> String {
        format!(
            "{HEADER}\n <stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>\
             <mechanism>PLAIN</mechanism></mechanisms></stream:features> \
             <message to='a@b' x='1>2' y=\"'/>\"><body>a &lt; b &amp; c &#x263A; &gt; d</body>\
             <x><![CDATA[ <not/> a tag ]]]></x></message>\t\r\n<presence/>\
             <iq type='get' id='p'><ping xmlns='urn:xmpp:ping'/></iq></stream:stream>"
        )
    }

    // RFC 6120 §4.2: a stream is split at every byte boundary without changing its frames.
    #[test]
    fn rfc6120_4_every_split_point_gives_the_same_frames() {
        let d = doc();
        let whole = frames(&[d.as_bytes()]).unwrap();
        assert_eq!(whole.len(), 6, "{whole:?}");
        assert!(whole[0].starts_with("H:<stream:stream"));
        assert!(whole[2].starts_with("<message") && whole[2].ends_with("</message>"));
        assert_eq!(whole[3], "<presence/>");
        assert_eq!(whole[5], "END");
        for i in 0..=d.len() {
            let (a, b) = d.as_bytes().split_at(i);
            assert_eq!(frames(&[a, b]).unwrap(), whole, "split at {i}");
        }
        let bytes: Vec<&[u8]> = d.as_bytes().chunks(1).collect();
        assert_eq!(frames(&bytes).unwrap(), whole);
    }

    #[test]
    fn rfc6120_11_1_comments_pis_and_dtds_are_refused() {
        for bad in [
            "<!-- hi --><message/>",
            "<message><!-- hi --></message>",
            "<?php x ?>",
            "<message><?x y?></message>",
            "<!DOCTYPE x>",
            "<message><!ENTITY x 'y'></message>",
        ] {
            let d = format!("{HEADER}{bad}");
            let e = frames(&[d.as_bytes()]).unwrap_err();
            assert!(matches!(e, XmppError::Malformed(_)), "{bad}: {e}");
            assert!(e.to_string().contains("RFC 6120 §11.1"), "{bad}: {e}");
        }
    }

    #[test]
    fn text_between_stanzas_is_refused_but_whitespace_is_a_keepalive() {
        let d = format!("{HEADER} \n\t <presence/>  ");
        assert_eq!(frames(&[d.as_bytes()]).unwrap().len(), 2);
        let d = format!("{HEADER} x<presence/>");
        let e = frames(&[d.as_bytes()]).unwrap_err();
        assert!(e.to_string().contains("between stanzas"), "{e}");
        let e = frames(&[b"hello"]).unwrap_err();
        assert!(e.to_string().contains("before the stream header"), "{e}");
    }

    #[test]
    fn a_mismatched_end_tag_is_refused_when_it_arrives() {
        // Never completes at depth 1, so only the name check can catch it.
        let d = format!("{HEADER}<message><body>x</message>");
        let e = frames(&[d.as_bytes()]).unwrap_err();
        assert!(e.to_string().contains("</message> where </body>"), "{e}");
        // Prefixes, whitespace before '>', empty elements and nesting all match; split
        // anywhere, the same.
        let ok = format!(
            "{HEADER}<iq type='get'><q:query xmlns:q='x'><item a='1'/><x >y</x ></q:query ></iq>"
        );
        for cut in 0..ok.len() {
            let (a, b) = ok.as_bytes().split_at(cut);
            assert_eq!(frames(&[a, b]).unwrap().len(), 2, "cut at {cut}");
        }
        let e = frames(&[format!("{HEADER}<a><b></bb></a>").as_bytes()]).unwrap_err();
        assert!(e.to_string().contains("</bb> where </b>"), "{e}");
    }

    #[test]
    fn oversize_stanza_names_the_limit() {
        let d = format!(
            "{HEADER}<message><body>{}</body></message>",
            "a".repeat(2000)
        );
        let e = frames(&[d.as_bytes()]).unwrap_err();
        assert_eq!(e, XmppError::StanzaTooLarge { limit: 1024 });
        assert!(e.to_string().contains("1024"));
        // Many small stanzas in sequence do not add up.
        let many = format!("{HEADER}{}", "<presence/>".repeat(500));
        assert_eq!(frames(&[many.as_bytes()]).unwrap().len(), 501);
    }

    #[test]
    fn buffer_drops_handed_out_stanzas() {
        let mut f = Framer::new(1024);
        f.push(HEADER.as_bytes());
        while f.next_frame().unwrap().is_some() {}
        for _ in 0..1000 {
            f.push(b"<presence/> ");
            while f.next_frame().unwrap().is_some() {}
        }
        assert!(f.buffered() <= 12, "{}", f.buffered());
        f.push(b"<message><bo");
        assert_eq!(f.next_frame().unwrap(), None);
        assert_eq!(f.buffered(), 12);
    }

    #[test]
    fn a_second_stream_header_inside_the_stream_is_refused_at_its_end() {
        let header = HEADER.trim_start_matches("<?xml version='1.0'?>");
        let mut f = Framer::new(1024);
        f.push(format!("{HEADER}<presence/>{header}").as_bytes());
        assert!(matches!(f.next_frame().unwrap(), Some(Frame::Header(_))));
        assert!(matches!(f.next_frame().unwrap(), Some(Frame::Element(_))));
        let e = f.next_frame().unwrap_err();
        assert!(matches!(e, XmppError::Protocol(_)), "{e}");
        // Inside a stanza it is an element like any other, and after a restart a header.
        let doc = format!("{HEADER}<iq><stream:stream/></iq>");
        assert_eq!(frames(&[doc.as_bytes()]).unwrap().len(), 2);
        let mut f = Framer::new(1024);
        f.push(format!("{HEADER}<success/>{header}").as_bytes());
        f.next_frame().unwrap();
        f.next_frame().unwrap();
        f.restart();
        assert!(matches!(f.next_frame().unwrap(), Some(Frame::Header(_))));
    }

    #[test]
    fn restart_keeps_unlexed_bytes() {
        let mut f = Framer::new(1024);
        f.push(format!("{HEADER}<success/>{HEADER}<stream:features/>").as_bytes());
        assert!(matches!(f.next_frame().unwrap(), Some(Frame::Header(_))));
        assert!(matches!(f.next_frame().unwrap(), Some(Frame::Element(_))));
        f.restart();
        assert!(matches!(f.next_frame().unwrap(), Some(Frame::Header(_))));
        assert!(matches!(f.next_frame().unwrap(), Some(Frame::Element(_))));
        f.push(b"\x16\x03\x01");
        assert!(f.next_frame().is_err(), "TLS bytes are not XML");
        let mut f = Framer::new(1024);
        f.push(format!("{HEADER}<proceed/>\x16\x03\x01").as_bytes());
        f.next_frame().unwrap();
        f.next_frame().unwrap();
        assert_eq!(f.take_unlexed(), b"\x16\x03\x01");
    }

    /// Everything a framer reports for `input` pushed in chunks of `chunk` bytes: each
    /// frame, then how it stopped (an error's text, or waiting for more).
    fn outcome(input: &[u8], chunk: usize, skip: bool) -> Vec<String> {
        let mut f = Framer::new(256);
        f.skip = skip;
        let mut out = Vec::new();
        for c in input.chunks(chunk.max(1)) {
            f.push(c);
            loop {
                match f.next_frame() {
                    Ok(Some(Frame::Header(r))) => out.push(format!("H:{:?}", &f.buf()[r])),
                    Ok(Some(Frame::Element(r))) => out.push(format!("E:{:?}", &f.buf()[r])),
                    Ok(Some(Frame::End)) => out.push("end".into()),
                    Ok(None) => break,
                    Err(e) => {
                        out.push(format!("error: {e}"));
                        return out;
                    }
                }
            }
        }
        out.push(format!("waiting, {} held", f.buffered()));
        out
    }

    proptest::proptest! {
        /// Passing over plain bytes in one step changes nothing the framer reports, however
        /// the bytes are cut: streams built from XML's own pieces (so that most get deep
        /// into stanzas) and stray bytes.
        #[test]
        fn skipping_plain_bytes_changes_nothing(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "<message to='a@b' type=\"chat\">", "<body>", "hi there &amp; more", "</body>",
                "</message>", "<presence/>", "<iq id='1'><query xmlns='q'/></iq>", " ", "\n",
                "<x a='<'>", "<a / >", "<b/ c>", "</wrong>", "<![CDATA[ ]] ]]>", "'", "\"", "/",
                ">", "<", "<!-- c -->", "<?pi?>", "x", "</stream:stream>",
            ]), 0..40),
            stray in proptest::collection::vec(proptest::num::u8::ANY, 0..8),
            chunk in 1usize..64,
        ) {
            let mut input = HEADER.as_bytes().to_vec();
            for p in &pieces {
                input.extend_from_slice(p.as_bytes());
            }
            input.extend_from_slice(&stray);
            proptest::prop_assert_eq!(outcome(&input, chunk, true), outcome(&input, chunk, false));
            proptest::prop_assert_eq!(outcome(&input, 1, true), outcome(&input, input.len(), true));
        }
    }
}
