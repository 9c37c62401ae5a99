//! CoAP messages (RFC 7252 §3): the 4-byte header, the token, the options in
//! delta/length encoding (§3.1) and the payload after its marker.
//!
//! [`Message::decode`] takes one whole datagram (UDP keeps the boundary, so there is no
//! framing and no "incomplete" state) and refuses everything §3 and §4.1 call a message
//! format error; it allocates at most the datagram's length. Every accepted datagram
//! encodes back to the same bytes: the extended delta and length forms (13 + one byte,
//! 269 + two bytes) can each express only values the shorter forms cannot, so the
//! encoding is unique, and options keep their order.

/// The largest option number: option deltas add up in 16 bits (§3.1, §12.2).
pub const MAX_OPTION_NUMBER: u16 = u16::MAX;
/// The longest option value the length encoding can express (§3.1: 269 + 0xFFFF).
pub const MAX_OPTION_LENGTH: usize = 269 + 0xFFFF;
/// The longest token (§3: TKL 9 to 15 are reserved).
pub const MAX_TOKEN_LENGTH: usize = 8;

/// The message type (§3, §4.2, §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Type {
    /// Confirmable: retransmitted until acknowledged (§4.2).
    Confirmable,
    /// Non-confirmable: sent once (§4.3).
    NonConfirmable,
    /// Acknowledgement of a Confirmable message, empty or carrying a response (§5.2.1).
    Acknowledgement,
    /// Reset: the recipient could not process a message (§4.2, §4.3).
    Reset,
}

impl Type {
    fn from_bits(bits: u8) -> Type {
        match bits & 3 {
            0 => Type::Confirmable,
            1 => Type::NonConfirmable,
            2 => Type::Acknowledgement,
            _ => Type::Reset,
        }
    }

    fn bits(self) -> u8 {
        match self {
            Type::Confirmable => 0,
            Type::NonConfirmable => 1,
            Type::Acknowledgement => 2,
            Type::Reset => 3,
        }
    }
}

/// A message code `c.dd` (§3, §12.1): class in the top 3 bits, detail in the low 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(pub u8);

impl Code {
    /// 0.00: an Empty message (§4.1).
    pub const EMPTY: Code = Code(0x00);
    /// 0.01 GET (§5.8.1).
    pub const GET: Code = Code(0x01);
    /// 0.02 POST (§5.8.2).
    pub const POST: Code = Code(0x02);
    /// 0.03 PUT (§5.8.3).
    pub const PUT: Code = Code(0x03);
    /// 0.04 DELETE (§5.8.4).
    pub const DELETE: Code = Code(0x04);
    /// 2.01 Created (§5.9.1.1).
    pub const CREATED: Code = Code::new(2, 1);
    /// 2.04 Changed (§5.9.1.4).
    pub const CHANGED: Code = Code::new(2, 4);
    /// 2.05 Content (§5.9.1.5).
    pub const CONTENT: Code = Code::new(2, 5);
    /// 2.31 Continue (RFC 7959 §2.9.1): a Block1 block was received, send the next.
    pub const CONTINUE: Code = Code::new(2, 31);
    /// 4.00 Bad Request (§5.9.2.1).
    pub const BAD_REQUEST: Code = Code::new(4, 0);
    /// 4.02 Bad Option (§5.9.2.3): an unrecognized critical option.
    pub const BAD_OPTION: Code = Code::new(4, 2);
    /// 4.04 Not Found (§5.9.2.5).
    pub const NOT_FOUND: Code = Code::new(4, 4);
    /// 4.05 Method Not Allowed (§5.9.2.6).
    pub const METHOD_NOT_ALLOWED: Code = Code::new(4, 5);
    /// 4.08 Request Entity Incomplete (RFC 7959 §2.9.2): a Block1 block out of order.
    pub const REQUEST_ENTITY_INCOMPLETE: Code = Code::new(4, 8);
    /// 4.13 Request Entity Too Large (§5.9.2.9, RFC 7959 §2.9.3).
    pub const REQUEST_ENTITY_TOO_LARGE: Code = Code::new(4, 13);

    /// The code `class.detail`.
    pub const fn new(class: u8, detail: u8) -> Code {
        Code((class << 5) | (detail & 0x1F))
    }

    /// The class: 0 request (or Empty), 2 success, 4 client error, 5 server error.
    pub fn class(self) -> u8 {
        self.0 >> 5
    }

    /// The detail, 0 to 31.
    pub fn detail(self) -> u8 {
        self.0 & 0x1F
    }

    /// A method code, 0.01 to 0.31 (§12.1.1).
    pub fn is_request(self) -> bool {
        self.class() == 0 && self.0 != 0
    }

    /// A response code, classes 2 to 5 (§12.1.2); 1, 6 and 7 are reserved.
    pub fn is_response(self) -> bool {
        (2..=5).contains(&self.class())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:02}", self.class(), self.detail())
    }
}

/// Option numbers this crate reads or writes (§5.10, §12.2; RFC 7959 §2.1, §4).
pub mod option {
    /// Uri-Host (§5.10.1), critical.
    pub const URI_HOST: u16 = 3;
    /// ETag (§5.10.6), elective.
    pub const ETAG: u16 = 4;
    /// Uri-Port (§5.10.1), critical.
    pub const URI_PORT: u16 = 7;
    /// Uri-Path (§5.10.1), critical, repeatable: one path segment each.
    pub const URI_PATH: u16 = 11;
    /// Content-Format (§5.10.3), elective.
    pub const CONTENT_FORMAT: u16 = 12;
    /// Uri-Query (§5.10.1), critical, repeatable.
    pub const URI_QUERY: u16 = 15;
    /// Block2 (RFC 7959 §2.1): the block of a response body.
    pub const BLOCK2: u16 = 23;
    /// Block1 (RFC 7959 §2.1): the block of a request body.
    pub const BLOCK1: u16 = 27;
    /// Size2 (RFC 7959 §4): the size of the whole response body.
    pub const SIZE2: u16 = 28;
    /// Size1 (§5.10.9, RFC 7959 §4): the size of the whole request body.
    pub const SIZE1: u16 = 60;

    /// An option whose number is odd is critical (§5.4.1, §5.4.6): a recipient that does
    /// not understand it must reject the message.
    pub fn is_critical(number: u16) -> bool {
        number & 1 == 1
    }
}

/// Why a datagram is not a CoAP message (§3, §4.1): a message format error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer than the 4 header bytes.
    #[error("{0} bytes: shorter than the 4-byte header (RFC 7252 §3)")]
    TooShort(usize),
    /// A version other than 1; §3 says to ignore such messages silently.
    #[error("version {0}: only version 1 is defined (RFC 7252 §3)")]
    UnknownVersion(u8),
    /// TKL 9 to 15 are reserved.
    #[error("token length {0} is reserved (RFC 7252 §3)")]
    ReservedTokenLength(u8),
    /// The token, an extended delta or length, or an option value runs past the datagram.
    #[error("the message ends inside its {0} (RFC 7252 §3, §3.1)")]
    Truncated(&'static str),
    /// A delta or length nibble of 15 that is not the payload marker 0xFF.
    #[error("option {0} nibble 15 is reserved (RFC 7252 §3.1)")]
    ReservedNibble(&'static str),
    /// The option numbers add up past 65535.
    #[error("option number past 65535 (RFC 7252 §3.1)")]
    OptionNumberOverflow,
    /// A payload marker with no payload after it.
    #[error("payload marker followed by a zero-length payload (RFC 7252 §3)")]
    EmptyPayload,
    /// An Empty message (0.00) with a token, options or payload.
    #[error("an Empty message with bytes after its header (RFC 7252 §4.1)")]
    EmptyNotEmpty,
    /// A Reset with a code other than 0.00, or a Non-confirmable Empty message.
    #[error("a {0:?} message with code {1} (RFC 7252 §4.2, §4.3)")]
    WrongCodeForType(Type, Code),
}

/// Why a [`Message`] cannot be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A token over 8 bytes (§3).
    #[error("a token of {0} bytes: at most 8 (RFC 7252 §3)")]
    TokenTooLong(usize),
    /// An option value over [`MAX_OPTION_LENGTH`] bytes (§3.1).
    #[error("option {number}: a value of {len} bytes is over 65804 (RFC 7252 §3.1)")]
    OptionTooLong { number: u16, len: usize },
    /// A message that [`Message::decode`] would refuse (Empty with content, and so on).
    #[error(transparent)]
    Invalid(DecodeError),
}

/// One CoAP message. Options are kept in order of number, repeated options in the order
/// given (§5.4.5); [`Message::add_option`] keeps that order, and [`Message::encode`] sorts
/// (stably) whatever is put into `options` directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The type (§4.2, §4.3).
    pub kind: Type,
    /// The code: a method, a response code or Empty.
    pub code: Code,
    /// The Message ID: matches an ACK or RST to its message and finds duplicates (§4.4).
    pub message_id: u16,
    /// The token: matches a response to its request (§5.3.1), 0 to 8 bytes.
    pub token: Vec<u8>,
    /// `(number, value)` pairs.
    pub options: Vec<(u16, Vec<u8>)>,
    /// The payload; empty means no payload marker (§3).
    pub payload: Vec<u8>,
}

impl Message {
    /// A message without token, options or payload.
    pub fn new(kind: Type, code: Code, message_id: u16) -> Message {
        Message {
            kind,
            code,
            message_id,
            token: Vec::new(),
            options: Vec::new(),
            payload: Vec::new(),
        }
    }

    /// An Empty ACK (§4.2) or RST (§4.3) for `message_id`.
    pub fn empty(kind: Type, message_id: u16) -> Message {
        Message::new(kind, Code::EMPTY, message_id)
    }

    /// Adds an option after every option of the same or a lower number.
    pub fn add_option(&mut self, number: u16, value: Vec<u8>) {
        let at = self.options.partition_point(|(n, _)| *n <= number);
        self.options.insert(at, (number, value));
    }

    /// Adds an option with a uint value in as few bytes as possible (§3.2).
    pub fn add_uint_option(&mut self, number: u16, value: u32) {
        self.add_option(number, encode_uint(value));
    }

    /// Replaces every option `number` by one with `value`.
    pub fn set_option(&mut self, number: u16, value: Vec<u8>) {
        self.options.retain(|(n, _)| *n != number);
        self.add_option(number, value);
    }

    /// The first value of option `number`.
    pub fn option(&self, number: u16) -> Option<&[u8]> {
        self.options
            .iter()
            .find(|(n, _)| *n == number)
            .map(|(_, v)| v.as_slice())
    }

    /// Every value of option `number`, in order.
    pub fn options_of(&self, number: u16) -> impl Iterator<Item = &[u8]> {
        self.options
            .iter()
            .filter(move |(n, _)| *n == number)
            .map(|(_, v)| v.as_slice())
    }

    /// The Uri-Path segments joined by `/` (§6.5), without a leading slash.
    pub fn path(&self) -> String {
        let segments: Vec<_> = self
            .options_of(option::URI_PATH)
            .map(String::from_utf8_lossy)
            .collect();
        segments.join("/")
    }

    /// Sets the Uri-Path options from `path` split at `/` (empty segments dropped).
    pub fn set_path(&mut self, path: &str) {
        self.options.retain(|(n, _)| *n != option::URI_PATH);
        for segment in path.split('/').filter(|s| !s.is_empty()) {
            self.add_option(option::URI_PATH, segment.as_bytes().to_vec());
        }
    }

    /// Checks the rules that depend on type and code (§4.1, §4.2, §4.3).
    fn check(&self) -> Result<(), DecodeError> {
        if self.code == Code::EMPTY
            && (!self.token.is_empty() || !self.options.is_empty() || !self.payload.is_empty())
        {
            return Err(DecodeError::EmptyNotEmpty);
        }
        let wrong = match self.kind {
            Type::Reset => self.code != Code::EMPTY,
            Type::NonConfirmable => self.code == Code::EMPTY,
            Type::Confirmable | Type::Acknowledgement => false,
        };
        if wrong {
            return Err(DecodeError::WrongCodeForType(self.kind, self.code));
        }
        Ok(())
    }

    /// Decodes one datagram.
    pub fn decode(datagram: &[u8]) -> Result<Message, DecodeError> {
        let header: [u8; 4] = datagram
            .get(..4)
            .and_then(|h| h.try_into().ok())
            .ok_or(DecodeError::TooShort(datagram.len()))?;
        let version = header[0] >> 6;
        if version != 1 {
            return Err(DecodeError::UnknownVersion(version));
        }
        let tkl = header[0] & 0x0F;
        if usize::from(tkl) > MAX_TOKEN_LENGTH {
            return Err(DecodeError::ReservedTokenLength(tkl));
        }
        let mut rest = &datagram[4..];
        let token = take(&mut rest, usize::from(tkl), "token")?.to_vec();
        let mut message = Message {
            kind: Type::from_bits(header[0] >> 4),
            code: Code(header[1]),
            message_id: u16::from_be_bytes([header[2], header[3]]),
            token,
            options: Vec::new(),
            payload: Vec::new(),
        };
        let mut number: u16 = 0;
        while let Some((&first, after)) = rest.split_first() {
            rest = after;
            if first == 0xFF {
                if rest.is_empty() {
                    return Err(DecodeError::EmptyPayload);
                }
                message.payload = rest.to_vec();
                break;
            }
            let delta = extended(&mut rest, first >> 4, "delta")?;
            let len = extended(&mut rest, first & 0x0F, "length")?;
            number = u16::try_from(u32::from(number) + delta)
                .map_err(|_| DecodeError::OptionNumberOverflow)?;
            let value = take(&mut rest, len as usize, "option value")?;
            message.options.push((number, value.to_vec()));
        }
        message.check()?;
        Ok(message)
    }

    /// Encodes the message, appending it to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if self.token.len() > MAX_TOKEN_LENGTH {
            return Err(EncodeError::TokenTooLong(self.token.len()));
        }
        self.check().map_err(EncodeError::Invalid)?;
        let mut options: Vec<&(u16, Vec<u8>)> = self.options.iter().collect();
        options.sort_by_key(|(n, _)| *n);
        if let Some((number, value)) = options.iter().find(|(_, v)| v.len() > MAX_OPTION_LENGTH) {
            return Err(EncodeError::OptionTooLong {
                number: *number,
                len: value.len(),
            });
        }
        let start = out.len();
        out.push((1 << 6) | (self.kind.bits() << 4) | self.token.len() as u8);
        out.push(self.code.0);
        out.extend_from_slice(&self.message_id.to_be_bytes());
        out.extend_from_slice(&self.token);
        let mut previous = 0u16;
        for (number, value) in options {
            let at = out.len();
            out.push(0);
            let delta = nibble(out, u32::from(number - previous));
            let len = nibble(out, value.len() as u32);
            out[at] = (delta << 4) | len;
            out.extend_from_slice(value);
            previous = *number;
        }
        if !self.payload.is_empty() {
            out.push(0xFF);
            out.extend_from_slice(&self.payload);
        }
        debug_assert!(out.len() > start);
        Ok(())
    }

    /// Encodes the message into a new buffer.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        self.encode_into(&mut out)?;
        Ok(out)
    }

    fn encoded_len_hint(&self) -> usize {
        let options: usize = self.options.iter().map(|(_, v)| v.len() + 5).sum();
        4 + self.token.len() + options + 1 + self.payload.len()
    }
}

/// Splits `n` bytes off the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
    if rest.len() < n {
        return Err(DecodeError::Truncated(what));
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

/// A delta or length from its nibble and extended bytes (§3.1).
fn extended(rest: &mut &[u8], nibble: u8, what: &'static str) -> Result<u32, DecodeError> {
    Ok(match nibble {
        0..=12 => u32::from(nibble),
        13 => 13 + u32::from(take(rest, 1, what)?[0]),
        14 => {
            let b = take(rest, 2, what)?;
            269 + u32::from(u16::from_be_bytes([b[0], b[1]]))
        }
        _ => return Err(DecodeError::ReservedNibble(what)),
    })
}

/// Appends the extended bytes of `value` (at most 65804) and returns its nibble (§3.1).
fn nibble(out: &mut Vec<u8>, value: u32) -> u8 {
    match value {
        0..=12 => value as u8,
        13..=268 => {
            out.push((value - 13) as u8);
            13
        }
        _ => {
            out.extend_from_slice(&((value - 269) as u16).to_be_bytes());
            14
        }
    }
}

/// A uint option value in as few bytes as possible: 0 is no bytes (§3.2).
pub fn encode_uint(value: u32) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    bytes[skip..].to_vec()
}

/// A uint option value (§3.2), leading zero bytes allowed; `None` past 4 bytes.
pub fn decode_uint(value: &[u8]) -> Option<u32> {
    if value.len() > 4 {
        return None;
    }
    Some(value.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7252 Appendix A, Figure 16's request: CON GET /temperature, MID 0x7d34, no token.
    #[test]
    fn rfc_example_get_temperature() {
        let mut m = Message::new(Type::Confirmable, Code::GET, 0x7d34);
        m.set_path("temperature");
        let bytes = m.encode().unwrap();
        let mut expected = vec![0x40, 0x01, 0x7d, 0x34, 0xbb];
        expected.extend_from_slice(b"temperature");
        assert_eq!(bytes, expected);
        assert_eq!(Message::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn extended_delta_and_length_forms() {
        let mut m = Message::new(Type::NonConfirmable, Code::POST, 1);
        m.token = vec![1, 2, 3, 4];
        m.add_option(13, vec![7; 13]);
        m.add_option(13 + 269, vec![9; 269]);
        m.payload = b"hello".to_vec();
        let bytes = m.encode().unwrap();
        // Option 13 with 13 bytes: delta 13 (nibble 13, ext 0), length 13 (nibble 13, ext 0).
        assert_eq!(&bytes[8..11], &[0xDD, 0x00, 0x00]);
        // Option 282, delta 269 (nibble 14, ext 0x0000), length 269 (nibble 14, 0x0000).
        assert_eq!(&bytes[24..29], &[0xEE, 0, 0, 0, 0]);
        assert_eq!(Message::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn options_sorted_and_repeated_in_order() {
        let mut m = Message::new(Type::Confirmable, Code::GET, 9);
        m.add_option(option::URI_QUERY, b"b".to_vec());
        m.set_path("a/b/c");
        assert_eq!(m.path(), "a/b/c");
        let back = Message::decode(&m.encode().unwrap()).unwrap();
        assert_eq!(back.path(), "a/b/c");
        assert_eq!(back.options.last().unwrap().0, option::URI_QUERY);
    }

    #[test]
    fn format_errors() {
        use DecodeError::*;
        let cases: &[(&[u8], DecodeError)] = &[
            (&[0x40, 0x01, 0], TooShort(3)),
            (&[0x80, 0x01, 0, 1], UnknownVersion(2)),
            (
                &[0x49, 0x01, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                ReservedTokenLength(9),
            ),
            (&[0x42, 0x01, 0, 1, 7], Truncated("token")),
            (&[0x40, 0x01, 0, 1, 0xff], EmptyPayload),
            (&[0x41, 0x00, 0, 1, 7], EmptyNotEmpty),
            (&[0x60, 0x00, 0, 1, 0xff, 1], EmptyNotEmpty),
            (
                &[0x70, 0x45, 0, 1],
                WrongCodeForType(Type::Reset, Code(0x45)),
            ),
            (
                &[0x50, 0x00, 0, 1],
                WrongCodeForType(Type::NonConfirmable, Code::EMPTY),
            ),
            (&[0x40, 0x01, 0, 1, 0xf0], ReservedNibble("delta")),
            (&[0x40, 0x01, 0, 1, 0x0f], ReservedNibble("length")),
            (&[0x40, 0x01, 0, 1, 0xd0], Truncated("delta")),
            (&[0x40, 0x01, 0, 1, 0x0e, 0], Truncated("length")),
            (&[0x40, 0x01, 0, 1, 0x03, 1, 2], Truncated("option value")),
            (
                &[0x40, 0x01, 0, 1, 0xe0, 0xff, 0xff, 0xe0, 0xff, 0xff],
                OptionNumberOverflow,
            ),
        ];
        for (bytes, err) in cases {
            assert_eq!(Message::decode(bytes), Err(*err), "{bytes:02x?}");
        }
    }

    #[test]
    fn empty_messages_and_ping() {
        for kind in [Type::Confirmable, Type::Acknowledgement, Type::Reset] {
            let m = Message::empty(kind, 0xBEEF);
            let bytes = m.encode().unwrap();
            assert_eq!(bytes.len(), 4);
            assert_eq!(Message::decode(&bytes).unwrap(), m);
        }
        let mut bad = Message::empty(Type::Acknowledgement, 1);
        bad.payload = vec![1];
        assert_eq!(
            bad.encode(),
            Err(EncodeError::Invalid(DecodeError::EmptyNotEmpty))
        );
    }

    #[test]
    fn uint_values() {
        assert_eq!(encode_uint(0), Vec::<u8>::new());
        assert_eq!(encode_uint(0x0102), vec![1, 2]);
        assert_eq!(decode_uint(&[0, 1, 2]), Some(0x0102));
        assert_eq!(decode_uint(&[1, 2, 3, 4, 5]), None);
    }

    #[test]
    fn code_display_and_classes() {
        assert_eq!(Code::CONTENT.to_string(), "2.05");
        assert_eq!(Code::CONTINUE.to_string(), "2.31");
        assert!(Code::GET.is_request() && !Code::EMPTY.is_request());
        assert!(Code::NOT_FOUND.is_response() && !Code(0x20).is_response());
    }
}
