//! The JSON SockJS needs: strings quoted with the spec's escaping, and a small parser for
//! client data (arrays of strings) and close frames (`[code,"reason"]`).
//!
//! Escaping (spec, "JSON Unicode Encoding"): besides `"`, `\` and control characters,
//! the characters browsers or proxies alter or drop in transit go as `\uXXXX`: the spec's
//! `escapable_by_server` set (U+0000-U+001F, U+200C-U+200F, U+2028-U+202F, U+2060-U+206F,
//! U+FFF0-U+FFFF; surrogates cannot occur in a Rust string). One function serves both
//! directions, and for what our client sends it also escapes U+007F-U+009F, U+00AD,
//! U+0600-U+0604, U+070F, U+17B4-U+17B5, U+2000-U+20FF and U+FEFF (invisible or
//! format characters, part of the spec's larger `escapable_by_client` set, which exists
//! for browsers' own quirks): escaping more than needed is still the same JSON string.

/// Whether `c` goes out as `\uXXXX`.
pub(crate) fn escapable(c: char) -> bool {
    matches!(c as u32,
        0x00..=0x1f | 0x7f..=0x9f | 0xad | 0x600..=0x604 | 0x70f | 0x17b4..=0x17b5
        | 0x2000..=0x20ff | 0xfeff | 0xfff0..=0xffff)
}

/// `s` as a JSON string literal, escaped as the spec asks.
pub fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if escapable(c) => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Str(String),
    Num(f64),
    Arr(Vec<Value>),
    /// true, false, null, objects: valid JSON SockJS has no use for.
    Other,
}

/// The messages of client data: a JSON array of strings, or one string.
pub fn decode_messages(b: &[u8]) -> Option<Vec<String>> {
    match parse(b)? {
        Value::Arr(v) => v
            .into_iter()
            .map(|x| match x {
                Value::Str(s) => Some(s),
                _ => None,
            })
            .collect(),
        Value::Str(s) => Some(vec![s]),
        _ => None,
    }
}

/// One JSON value filling `b` (whitespace around it allowed).
pub(crate) fn parse(b: &[u8]) -> Option<Value> {
    let mut p = P { b, i: 0 };
    let v = p.value(0)?;
    p.ws();
    (p.i == b.len()).then_some(v)
}

struct P<'a> {
    b: &'a [u8],
    i: usize,
}

const MAX_DEPTH: usize = 32;

impl P<'_> {
    fn ws(&mut self) {
        while self
            .b
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }

    fn lit(&mut self, w: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Some(())
        } else {
            None
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match *self.b.get(self.i)? {
            b'"' => self.string().map(Value::Str),
            b'[' => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Some(Value::Arr(v));
                }
                loop {
                    v.push(self.value(depth + 1)?);
                    self.ws();
                    match *self.b.get(self.i)? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(Value::Arr(v));
                        }
                        _ => return None,
                    }
                }
            }
            b'{' => {
                self.i += 1;
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Some(Value::Other);
                }
                loop {
                    self.ws();
                    if self.b.get(self.i) != Some(&b'"') {
                        return None;
                    }
                    self.string()?;
                    self.ws();
                    self.lit(b":")?;
                    self.value(depth + 1)?;
                    self.ws();
                    match *self.b.get(self.i)? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(Value::Other);
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.lit(b"true").map(|_| Value::Other),
            b'f' => self.lit(b"false").map(|_| Value::Other),
            b'n' => self.lit(b"null").map(|_| Value::Other),
            b'-' | b'0'..=b'9' => {
                let start = self.i;
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.b[start..self.i]).ok()?;
                t.parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .map(Value::Num)
            }
            _ => None,
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.b.get(self.i..self.i + 4)?;
        let v = u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()?;
        if !h.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        self.i += 4;
        Some(v)
    }

    fn string(&mut self) -> Option<String> {
        self.i += 1; // the opening quote
        let mut o = Vec::new();
        loop {
            let c = *self.b.get(self.i)?;
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(o).ok(),
                b'\\' => {
                    let e = *self.b.get(self.i)?;
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let u = self.hex4()?;
                            if (0xd800..0xdc00).contains(&u)
                                && self.b.get(self.i..self.i + 2) == Some(b"\\u")
                            {
                                let save = self.i;
                                self.i += 2;
                                match self.hex4() {
                                    Some(l) if (0xdc00..0xe000).contains(&l) => char::from_u32(
                                        0x10000 + ((u - 0xd800) << 10) + (l - 0xdc00),
                                    )
                                    .unwrap_or('\u{fffd}'),
                                    _ => {
                                        self.i = save;
                                        '\u{fffd}'
                                    }
                                }
                            } else {
                                // A lone surrogate (JavaScript strings may hold one) has
                                // no UTF-8 form: the replacement character stands in.
                                char::from_u32(u).unwrap_or('\u{fffd}')
                            }
                        }
                        _ => return None,
                    };
                    let mut b = [0u8; 4];
                    o.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                }
                0x00..=0x1f => return None,
                c => o.push(c),
            }
        }
    }
}
