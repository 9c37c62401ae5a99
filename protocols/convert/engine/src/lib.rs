//! The 0-RTT TCP Convert Protocol ("Convert", RFC 8803) as a sans-IO codec: pure
//! functions from values to bytes and from bytes to values, with no sockets, no runtime
//! and no state. The caller owns the connection and its buffers, so one codec serves a
//! client, a Transport Converter, the tests and the fuzzer alike.
//!
//! Convert lets a client reach a server through a proxy, the Transport Converter, without
//! paying a round trip for it:
//!
//! ```text
//! client                          converter                          server
//! SYN + TFO data:
//!   [header, Connect TLV(addr)]
//!   application data       --->
//!                                 SYN to addr, carrying the
//!                                 application data            --->
//!                                                             <---  SYN+ACK
//!                          <---   SYN+ACK, then at the start of its bytestream
//!                                 [header] (+ Extended TCP Header TLV)
//!   ... both bytestreams are relayed unchanged from here on ...
//! ```
//!
//! The client's first bytes are a Convert message (a fixed header and TLVs, see [`parse`])
//! and everything after it is application data, which the converter forwards in its own
//! SYN (RFC 7413 TCP Fast Open on both legs is what makes this 0-RTT). The converter
//! answers only once the server has: success is a Convert message with no Error TLV (a
//! bare header, [`success_reply`], optionally with an Extended TCP Header TLV carrying
//! the options of the server's SYN+ACK); failure is an Error TLV ([`error_reply`],
//! [`ErrorCode`]) after which the converter closes. A client may instead send an Info TLV
//! to learn what the converter supports; the answer is a Supported TCP Extensions TLV
//! (and possibly a Cookie TLV). A converter that wants proof of the client's address
//! answers a SYN without a Cookie TLV with "Missing Cookie" plus a Cookie TLV to retry
//! with.
//!
//! [`parse`] returns `Ok(None)` while its input is a strict prefix of a valid message
//! (read more, then call again with the whole buffer), `Ok(Some((tlvs, consumed)))` once
//! the message is complete, and `Err` once the bytes can never become one. Bytes past
//! `consumed` are not looked at: they are the application's data.
//!
//! Parsing is strict where RFC 8803 fixes something (the version, the magic number,
//! lengths, fields named "Zero", the layout of TCP options and of the padding), so the
//! accepted language is small enough to fuzz and every accepted message is what
//! [`encode`] writes for the value parsed, but for the "Unassigned" fields, which the RFC
//! says a receiver MUST ignore. A message is at most 1020 bytes (its length is an 8-bit
//! count of 32-bit words), which bounds what any input can make the parser allocate.

use std::fmt;
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// The protocol version in the fixed header; RFC 8803 defines 1 and reserves 0.
pub const VERSION: u8 = 1;

/// The fixed header's last 16 bits. RFC 8803 fixes them to 0x2263, 8803 in decimal: the
/// drafts left them "Unassigned", and the RFC turned them into a check that the bytes at
/// the start of a connection really are Convert.
pub const MAGIC: u16 = 0x2263;

/// The longest Convert message: Total Length is an 8-bit count of 32-bit words.
pub const MAX_MESSAGE: usize = 255 * 4;

/// Bytes in the fixed header: Version, Total Length, Magic Number.
pub const HEADER_LEN: usize = 4;

/// TLV type of the Info TLV: a client asking what the converter supports.
pub const INFO: u8 = 1;
/// TLV type of the Connect TLV: where the converter should connect.
pub const CONNECT: u8 = 10;
/// TLV type of the Extended TCP Header TLV: the options of the server's SYN+ACK.
pub const EXTENDED_TCP_HEADER: u8 = 20;
/// TLV type of the Supported TCP Extensions TLV: the converter's answer to Info.
pub const SUPPORTED_TCP_EXTENSIONS: u8 = 21;
/// TLV type of the Cookie TLV.
pub const COOKIE: u8 = 22;
/// TLV type of the Error TLV.
pub const ERROR: u8 = 30;

/// A Connect TLV without TCP options: type, length, port, then a 128-bit address.
const CONNECT_BASE: usize = 20;

/// RFC 8803's name for a TLV type, for messages; `"unknown"` for the rest.
fn tlv_name(kind: u8) -> &'static str {
    match kind {
        INFO => "Info",
        CONNECT => "Connect",
        EXTENDED_TCP_HEADER => "Extended TCP Header",
        SUPPORTED_TCP_EXTENSIONS => "Supported TCP Extensions",
        COOKIE => "Cookie",
        ERROR => "Error",
        _ => "unknown",
    }
}

/// One TLV of a Convert message.
///
/// Byte strings that RFC 8803 treats as opaque (a cookie, a TCP header, an error's value,
/// an unknown TLV's value) are given and returned exactly as on the wire, so they must
/// fill whole 32-bit words with the TLV's own header: [`encode`] refuses to guess a
/// padding that [`parse`] could not tell from the data. Lists whose padding the RFC
/// defines (TCP options, option kinds) are written unpadded here and padded on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tlv {
    /// A client asking for the converter's capabilities (type 1, one word, no value).
    Info,
    /// Where to connect (type 10): for a connection from the client, the server's address
    /// and port. On the wire the address is always 128 bits, an IPv4 address as its
    /// IPv4-mapped IPv6 form (`::ffff:a.b.c.d`); parsing turns that form back into
    /// `SocketAddr::V4`, and an IPv6 address's flow info and scope id are not carried.
    ///
    /// `options` are TCP options the client asks the converter to put in its SYN to the
    /// server, each as kind, length (2 or more, counting kind and length) and value, with
    /// no EOL (0) or NOP (1) since those have no length byte; the zero padding to a word
    /// boundary is not part of it. RFC 8803 also forbids multicast, broadcast and loopback
    /// addresses here, which is the converter's to enforce: a codec can't know its policy.
    Connect { addr: SocketAddr, options: Vec<u8> },
    /// The extended TCP header (the options) of the server's SYN+ACK, returned by the
    /// converter to the client (type 20). TCP options fill whole words, so this must be a
    /// multiple of 4 bytes.
    ExtendedTcpHeader(Vec<u8>),
    /// The TCP option kinds the converter offers conversion for, its answer to Info
    /// (type 21). Kinds 0, 1 and 2 (EOL, NOP, MSS) are supported by every TCP and RFC 8803
    /// forbids listing them, which also keeps the zero padding unambiguous.
    SupportedTcpExtensions(Vec<u8>),
    /// Opaque data, akin to a TCP Fast Open cookie, by which a converter checks that the
    /// client can receive at its address (type 22). A multiple of 4 bytes.
    Cookie(Vec<u8>),
    /// Why the converter refused or lost the connection (type 30). `value` is everything
    /// after the code to the end of the TLV, padding included, so 1, 5, 9, ... bytes; its
    /// meaning depends on the code (see [`ErrorCode`]).
    Error { code: ErrorCode, value: Vec<u8> },
    /// A TLV of a type RFC 8803 does not define; `value` is everything after the type and
    /// length bytes, so 2, 6, 10, ... bytes. Kept so a converter can answer "Unsupported
    /// Message" naming the type, and a client can skip it.
    Unknown { kind: u8, value: Vec<u8> },
}

impl Tlv {
    /// The TLV's type byte.
    pub fn kind(&self) -> u8 {
        match self {
            Tlv::Info => INFO,
            Tlv::Connect { .. } => CONNECT,
            Tlv::ExtendedTcpHeader(_) => EXTENDED_TCP_HEADER,
            Tlv::SupportedTcpExtensions(_) => SUPPORTED_TCP_EXTENSIONS,
            Tlv::Cookie(_) => COOKIE,
            Tlv::Error { .. } => ERROR,
            Tlv::Unknown { kind, .. } => *kind,
        }
    }
}

/// Which side RFC 8803 blames for an [`ErrorCode`]: the registry splits the codes into
/// ranges by cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// 0 to 31: the message itself could not be validated or processed.
    MessageValidation,
    /// 32 to 63: the client asked for something the converter will not do.
    ClientSide,
    /// 64 to 95: trouble on the converter (resources, network).
    ConverterSide,
    /// 96 to 127: the destination server could not be reached or reset.
    ServerSide,
    /// 128 to 255: outside the four classes (128 to 191 by specification, 192 to 255 for
    /// private use).
    Other,
}

/// The Error Code of an Error TLV: every code RFC 8803 defines, with the value the RFC
/// asks the converter to put after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 0: the client's version is not supported. Value: the versions the converter
    /// supports, one byte each, zero-padded. A converter can only say so if it could read
    /// the header, hence [`Error::reply_code`].
    UnsupportedVersion,
    /// 1: the message could not be parsed or validated (a bad Connect TLV, typically).
    MalformedMessage,
    /// 2: the message uses a TLV the converter does not support. Value: that TLV's type.
    UnsupportedMessage,
    /// 3: the converter requires a Cookie TLV and there was none; its reply also carries a
    /// Cookie TLV for the client to retry with.
    MissingCookie,
    /// 32: the converter refuses this client (policy, failed authorization, bad cookie).
    /// Value: zero.
    NotAuthorized,
    /// 33: a TCP option the client asked for in its Connect TLV cannot be safely used.
    /// Value: the kinds of the refused options, zero-padded.
    UnsupportedTcpOption,
    /// 64: the converter lacks the resources for a new connection. Value: the seconds
    /// the client should wait before trying again, 0 meaning at least 30.
    ResourceExceeded,
    /// 65: the converter cannot relay because of a network failure. Value: as for
    /// `ResourceExceeded`, a delay in seconds.
    NetworkFailure,
    /// 96: the server answered the converter's SYN with a RST. Value: zero.
    ConnectionReset,
    /// 97: an ICMP destination, network or port unreachable came back for the server.
    /// Value: the code of that ICMP message.
    DestinationUnreachable,
    /// Any other code: unassigned, or for private use (192 to 255). Kept rather than
    /// refused so a client still learns that, and with which code, the converter failed.
    /// [`ErrorCode::from_code`] never makes one holding a named code; built by hand with
    /// such a byte, it is written as that byte and parses back as the named code.
    Unassigned(u8),
}

impl ErrorCode {
    pub fn code(self) -> u8 {
        match self {
            ErrorCode::UnsupportedVersion => 0,
            ErrorCode::MalformedMessage => 1,
            ErrorCode::UnsupportedMessage => 2,
            ErrorCode::MissingCookie => 3,
            ErrorCode::NotAuthorized => 32,
            ErrorCode::UnsupportedTcpOption => 33,
            ErrorCode::ResourceExceeded => 64,
            ErrorCode::NetworkFailure => 65,
            ErrorCode::ConnectionReset => 96,
            ErrorCode::DestinationUnreachable => 97,
            ErrorCode::Unassigned(c) => c,
        }
    }

    pub fn from_code(code: u8) -> Self {
        match code {
            0 => ErrorCode::UnsupportedVersion,
            1 => ErrorCode::MalformedMessage,
            2 => ErrorCode::UnsupportedMessage,
            3 => ErrorCode::MissingCookie,
            32 => ErrorCode::NotAuthorized,
            33 => ErrorCode::UnsupportedTcpOption,
            64 => ErrorCode::ResourceExceeded,
            65 => ErrorCode::NetworkFailure,
            96 => ErrorCode::ConnectionReset,
            97 => ErrorCode::DestinationUnreachable,
            c => ErrorCode::Unassigned(c),
        }
    }

    /// The class the code's range puts it in.
    pub fn class(self) -> ErrorClass {
        match self.code() {
            0..=31 => ErrorClass::MessageValidation,
            32..=63 => ErrorClass::ClientSide,
            64..=95 => ErrorClass::ConverterSide,
            96..=127 => ErrorClass::ServerSide,
            _ => ErrorClass::Other,
        }
    }
}

impl fmt::Display for ErrorCode {
    /// RFC 8803's names (and IANA's registry's), so a log line can be matched against them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorCode::UnsupportedVersion => f.write_str("Unsupported Version"),
            ErrorCode::MalformedMessage => f.write_str("Malformed Message"),
            ErrorCode::UnsupportedMessage => f.write_str("Unsupported Message"),
            ErrorCode::MissingCookie => f.write_str("Missing Cookie"),
            ErrorCode::NotAuthorized => f.write_str("Not Authorized"),
            ErrorCode::UnsupportedTcpOption => f.write_str("Unsupported TCP Option"),
            ErrorCode::ResourceExceeded => f.write_str("Resource Exceeded"),
            ErrorCode::NetworkFailure => f.write_str("Network Failure"),
            ErrorCode::ConnectionReset => f.write_str("Connection Reset"),
            ErrorCode::DestinationUnreachable => f.write_str("Destination Unreachable"),
            ErrorCode::Unassigned(c @ 192..) => write!(f, "private-use error code {c}"),
            ErrorCode::Unassigned(c) => write!(f, "unassigned error code {c}"),
        }
    }
}

/// Why bytes are not a valid Convert message, or why TLVs can't be encoded as one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("Convert version {0}, expected 1")]
    Version(u8),
    #[error("magic number {0:#06x}, expected 0x2263")]
    Magic(u16),
    #[error("Total Length of 0 words, but the header alone is 1")]
    ZeroTotalLength,
    /// A TLV's Length (in 32-bit words) that can't hold the fields of its type: 0 for any
    /// type, under 5 for Connect, anything but 1 for Info.
    #[error("{} TLV (type {kind}) of {words} words, a length its fields don't allow", tlv_name(*.kind))]
    TlvLength { kind: u8, words: u8 },
    #[error("{} TLV (type {kind}) at byte {at} runs past the message's {total} bytes", tlv_name(*.kind))]
    TlvOverrun { kind: u8, at: usize, total: usize },
    /// A field of a TLV that breaks a rule of RFC 8803; `reason` says which.
    #[error("{} TLV (type {kind}): {reason}", tlv_name(*.kind))]
    Malformed { kind: u8, reason: &'static str },
    /// Encoding only: an opaque field that would not end on a 32-bit boundary.
    #[error("{} TLV (type {kind}) of {len} bytes, not a whole number of 32-bit words", tlv_name(*.kind))]
    Unaligned { kind: u8, len: usize },
    /// Encoding only: a TLV longer than its 8-bit Length of words can say.
    #[error("{} TLV (type {kind}) of {len} bytes, its Length can express at most 1020", tlv_name(*.kind))]
    TlvTooLong { kind: u8, len: usize },
    /// Encoding only: a message longer than Total Length can say.
    #[error("Convert message of {0} bytes, Total Length can express at most 1020")]
    TooLong(usize),
    /// Encoding only: [`Tlv::Unknown`] given a type RFC 8803 defines, which would parse
    /// back as that type's own variant (or not at all).
    #[error("TLV type {0} is the {name} TLV; use its own variant", name = tlv_name(*.0))]
    KnownKind(u8),
}

impl Error {
    /// The error code a converter should answer a client with when [`parse`] fails on the
    /// client's message. Only a wrong version has its own code; the rest is malformed.
    pub fn reply_code(&self) -> ErrorCode {
        match self {
            Error::Version(_) => ErrorCode::UnsupportedVersion,
            _ => ErrorCode::MalformedMessage,
        }
    }
}

/// A parser's result: `Ok(None)` for "incomplete, read more".
pub type Parsed<T> = Result<Option<(T, usize)>, Error>;

/// Zero bytes to reach the next 32-bit boundary after `len` bytes.
fn pad_len(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// How many bytes of `opts` are TCP options as the Connect TLV carries them (kind,
/// length, value; no EOL or NOP); what follows must be fewer than 4 zero bytes of
/// padding.
fn tcp_options_len(opts: &[u8]) -> Result<usize, &'static str> {
    let mut at = 0;
    while let Some(&kind) = opts.get(at) {
        match kind {
            // Padding: EOL can't be an option here, so the first zero ends the list.
            0 => break,
            1 => return Err("NOP in TCP options, which allow only options with a length"),
            _ => {}
        }
        let Some(&len) = opts.get(at + 1) else {
            return Err("TCP option without its length byte");
        };
        if len < 2 {
            return Err("TCP option length under 2");
        }
        at += usize::from(len);
        if at > opts.len() {
            return Err("TCP option runs past the TLV");
        }
    }
    let padding = &opts[at..];
    if padding.iter().any(|&b| b != 0) {
        return Err("TCP options padding is not zeros");
    }
    if padding.len() >= 4 {
        return Err("TCP options padded past a 32-bit boundary");
    }
    Ok(at)
}

/// How many bytes of `kinds` are option kinds of a Supported TCP Extensions TLV; what
/// follows must be fewer than 4 zero bytes of padding.
fn supported_kinds_len(kinds: &[u8]) -> Result<usize, &'static str> {
    let n = kinds.iter().position(|&k| k == 0).unwrap_or(kinds.len());
    if kinds[..n].iter().any(|&k| k == 1 || k == 2) {
        return Err("lists kind 1 or 2, which every TCP supports and RFC 8803 forbids");
    }
    let padding = &kinds[n..];
    if padding.iter().any(|&b| b != 0) {
        return Err("kind 0 (EOL) listed, or padding that is not zeros");
    }
    if padding.len() >= 4 {
        return Err("kinds padded past a 32-bit boundary");
    }
    Ok(n)
}

fn socket_addr(ip: [u8; 16], port: u16) -> SocketAddr {
    let ip = Ipv6Addr::from(ip);
    // Mapped back to V4 because that is what the client meant: RFC 8803 has no other
    // way to carry an IPv4 address.
    match ip.to_ipv4_mapped() {
        Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, port)),
        None => SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0)),
    }
}

/// Appends one TLV: type, length in words, then `body` (which includes any 16-bit field
/// after the length), zero-padded to a word boundary.
fn put_tlv(out: &mut Vec<u8>, kind: u8, body: &[&[u8]]) -> Result<(), Error> {
    let len = 2 + body.iter().map(|b| b.len()).sum::<usize>();
    let padded = len + pad_len(len);
    let words = u8::try_from(padded / 4).map_err(|_| Error::TlvTooLong { kind, len: padded })?;
    out.push(kind);
    out.push(words);
    for b in body {
        out.extend_from_slice(b);
    }
    out.resize(out.len() + pad_len(len), 0);
    Ok(())
}

/// Refuses an opaque field that, with the `head` bytes before it in its TLV, would not
/// fill whole words.
fn aligned(kind: u8, head: usize, field: &[u8]) -> Result<(), Error> {
    let len = head + field.len();
    if len % 4 == 0 {
        Ok(())
    } else {
        Err(Error::Unaligned { kind, len })
    }
}

fn put(out: &mut Vec<u8>, tlv: &Tlv) -> Result<(), Error> {
    let kind = tlv.kind();
    match tlv {
        Tlv::Info => put_tlv(out, kind, &[&[0, 0]]),
        Tlv::Connect { addr, options } => {
            let n = tcp_options_len(options).map_err(|reason| Error::Malformed { kind, reason })?;
            if n != options.len() {
                // Trailing zeros would be read back as padding, not as these options.
                return Err(Error::Malformed {
                    kind,
                    reason: "TCP options end in zero bytes, which read back as padding",
                });
            }
            let ip = match addr {
                SocketAddr::V4(a) => a.ip().to_ipv6_mapped(),
                SocketAddr::V6(a) => *a.ip(),
            };
            put_tlv(
                out,
                kind,
                &[&addr.port().to_be_bytes(), &ip.octets(), options],
            )
        }
        Tlv::ExtendedTcpHeader(h) => {
            aligned(kind, 4, h)?;
            put_tlv(out, kind, &[&[0, 0], h])
        }
        Tlv::SupportedTcpExtensions(kinds) => {
            if kinds.iter().any(|&k| k <= 2) {
                return Err(Error::Malformed {
                    kind,
                    reason: "lists kind 0, 1 or 2, which RFC 8803 forbids",
                });
            }
            put_tlv(out, kind, &[&[0, 0], kinds])
        }
        Tlv::Cookie(c) => {
            aligned(kind, 4, c)?;
            put_tlv(out, kind, &[&[0, 0], c])
        }
        Tlv::Error { code, value } => {
            // An empty value would need padding that reads back as a 1-byte value.
            if value.is_empty() {
                return Err(Error::Unaligned { kind, len: 3 });
            }
            aligned(kind, 3, value)?;
            put_tlv(out, kind, &[&[code.code()], value])
        }
        Tlv::Unknown { kind, value } => {
            if tlv_name(*kind) != "unknown" {
                return Err(Error::KnownKind(*kind));
            }
            aligned(*kind, 2, value)?;
            put_tlv(out, *kind, &[value])
        }
    }
}

/// A whole Convert message: the fixed header, then `tlvs` in order. Fails when a TLV
/// breaks a rule of RFC 8803 (see [`Tlv`]) or does not fit its own length field, or the
/// message is over [`MAX_MESSAGE`] bytes.
pub fn encode(tlvs: &[Tlv]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(MAX_MESSAGE);
    out.extend_from_slice(&[VERSION, 0]);
    out.extend_from_slice(&MAGIC.to_be_bytes());
    for tlv in tlvs {
        put(&mut out, tlv)?;
        if out.len() > MAX_MESSAGE {
            return Err(Error::TooLong(out.len()));
        }
    }
    // Every TLV is whole words and the total is at most 255 of them.
    out[1] = (out.len() / 4) as u8;
    Ok(out)
}

/// What a client puts at the start of its SYN's data: a header and a Connect TLV for
/// `addr`, without TCP options. The application's first bytes follow it.
pub fn connect_request(addr: SocketAddr) -> Vec<u8> {
    encode(&[Tlv::Connect {
        addr,
        options: Vec::new(),
    }])
    .expect("a Connect TLV without options is 24 bytes")
}

/// What a converter sends when it refuses or loses the connection, before closing: a
/// header and an Error TLV with a one-byte zero value, which is what RFC 8803 asks for
/// where a code carries nothing (and "no delay suggested" for the two that carry one).
pub fn error_reply(code: ErrorCode) -> Vec<u8> {
    encode(&[Tlv::Error {
        code,
        value: vec![0],
    }])
    .expect("an Error TLV with a 1-byte value is 4 bytes")
}

/// What a converter sends at the start of its bytestream once the server has accepted the
/// connection: a Convert message without an Error TLV. This is the bare header; to pass
/// the server's SYN+ACK options on, [`encode`] a [`Tlv::ExtendedTcpHeader`] instead.
///
/// Not to be confused with the answer to an Info TLV, which is a Supported TCP Extensions
/// TLV.
#[doc(alias = "info_reply")]
pub fn success_reply() -> Vec<u8> {
    encode(&[]).expect("a bare header is 4 bytes")
}

/// The address of the first Connect TLV, if any: where the converter should connect.
pub fn connect_target(tlvs: &[Tlv]) -> Option<SocketAddr> {
    tlvs.iter().find_map(|t| match t {
        Tlv::Connect { addr, .. } => Some(*addr),
        _ => None,
    })
}

/// One TLV from `tlv`, which is exactly the TLV's bytes (type and length included).
fn parse_tlv(tlv: &[u8]) -> Result<Tlv, Error> {
    let kind = tlv[0];
    let words = tlv[1];
    let malformed = |reason| Error::Malformed { kind, reason };
    let bad_length = Error::TlvLength { kind, words };
    Ok(match kind {
        INFO => {
            if words != 1 {
                return Err(bad_length);
            }
            if tlv[2..4] != [0, 0] {
                return Err(malformed("the field after the length is not zero"));
            }
            Tlv::Info
        }
        CONNECT => {
            if tlv.len() < CONNECT_BASE {
                return Err(bad_length);
            }
            let port = u16::from_be_bytes([tlv[2], tlv[3]]);
            let mut ip = [0; 16];
            ip.copy_from_slice(&tlv[4..CONNECT_BASE]);
            let opts = &tlv[CONNECT_BASE..];
            let n = tcp_options_len(opts).map_err(malformed)?;
            Tlv::Connect {
                addr: socket_addr(ip, port),
                options: opts[..n].to_vec(),
            }
        }
        // The 16 bits after the length are "Unassigned", which a receiver MUST ignore.
        EXTENDED_TCP_HEADER => Tlv::ExtendedTcpHeader(tlv[4..].to_vec()),
        SUPPORTED_TCP_EXTENSIONS => {
            let kinds = &tlv[4..];
            let n = supported_kinds_len(kinds).map_err(malformed)?;
            Tlv::SupportedTcpExtensions(kinds[..n].to_vec())
        }
        COOKIE => {
            if tlv[2..4] != [0, 0] {
                return Err(malformed("the field after the length is not zero"));
            }
            Tlv::Cookie(tlv[4..].to_vec())
        }
        ERROR => Tlv::Error {
            code: ErrorCode::from_code(tlv[2]),
            value: tlv[3..].to_vec(),
        },
        _ => Tlv::Unknown {
            kind,
            value: tlv[2..].to_vec(),
        },
    })
}

/// One whole Convert message from the start of `buf`: the fixed header and every TLV it
/// covers, in order (none is valid: that is a converter's success reply). The count is
/// the message's length, Total Length × 4; the bytes after it are the application's.
///
/// The header is checked as soon as its bytes are there, so a peer that does not speak
/// Convert is turned away at once; the TLVs once all Total Length words have arrived.
pub fn parse(buf: &[u8]) -> Parsed<Vec<Tlv>> {
    let Some(&version) = buf.first() else {
        return Ok(None);
    };
    if version != VERSION {
        return Err(Error::Version(version));
    }
    let Some(&words) = buf.get(1) else {
        return Ok(None);
    };
    if words == 0 {
        return Err(Error::ZeroTotalLength);
    }
    let Some(magic) = buf.get(2..HEADER_LEN) else {
        return Ok(None);
    };
    let magic = u16::from_be_bytes([magic[0], magic[1]]);
    if magic != MAGIC {
        return Err(Error::Magic(magic));
    }
    let total = usize::from(words) * 4;
    let Some(msg) = buf.get(..total) else {
        return Ok(None);
    };
    let mut tlvs = Vec::new();
    let mut at = HEADER_LEN;
    // `at` and `total` are multiples of 4, so each TLV has at least its type and length.
    while at < total {
        let kind = msg[at];
        let words = msg[at + 1];
        if words == 0 {
            return Err(Error::TlvLength { kind, words });
        }
        let end = at + usize::from(words) * 4;
        if end > total {
            return Err(Error::TlvOverrun { kind, at, total });
        }
        tlvs.push(parse_tlv(&msg[at..end])?);
        at = end;
    }
    Ok(Some((tlvs, total)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// The fixed header for a message of `words` 32-bit words.
    fn header(words: u8) -> Vec<u8> {
        vec![0x01, words, 0x22, 0x63]
    }

    fn msg(words: u8, tlvs: &[&[u8]]) -> Vec<u8> {
        let mut m = header(words);
        for t in tlvs {
            m.extend_from_slice(t);
        }
        assert_eq!(m.len(), usize::from(words) * 4, "test vector's own length");
        m
    }

    /// Every strict prefix is incomplete, the whole is one message, and bytes after it
    /// (the application's data) are left alone.
    fn complete_only_at_end(m: &[u8]) -> Vec<Tlv> {
        for i in 0..m.len() {
            assert_eq!(parse(&m[..i]), Ok(None), "prefix of {i} bytes of {m:?}");
        }
        let mut more = m.to_vec();
        more.extend_from_slice(b"GET / HTTP/1.1\r\n");
        match parse(&more) {
            Ok(Some((tlvs, n))) => {
                assert_eq!(n, m.len());
                tlvs
            }
            other => panic!("{m:?} + trailing bytes: {other:?}"),
        }
    }

    /// `tlvs` encode to exactly `m`, and `m` parses back to `tlvs`.
    fn both_ways(tlvs: &[Tlv], m: &[u8]) {
        assert_eq!(encode(tlvs).as_deref(), Ok(m));
        assert_eq!(complete_only_at_end(m), tlvs);
    }

    #[test]
    fn bare_header_is_the_success_reply() {
        // |    Version    | Total Length  |         Magic Number          |
        let m = header(1);
        assert_eq!(success_reply(), m);
        both_ways(&[], &m);
    }

    #[test]
    fn info_tlv() {
        // |  Type=0x1     |     Length    |              Zero             |
        both_ways(&[Tlv::Info], &msg(2, &[&[0x01, 0x01, 0x00, 0x00]]));
    }

    #[test]
    fn connect_tlv_ipv4() {
        // |  Type=0xA     |     Length    |        Remote Peer Port       |
        // |           Remote Peer IP Address (128 bits)                   |
        let addr: SocketAddr = "192.0.2.1:443".parse().unwrap();
        let tlv = [
            0x0A, 0x05, 0x01, 0xBB, // type, length, port
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 192, 0, 2, 1, // ::ffff:192.0.2.1
        ];
        let m = msg(6, &[&tlv]);
        assert_eq!(connect_request(addr), m);
        let tlvs = complete_only_at_end(&m);
        assert_eq!(
            tlvs,
            [Tlv::Connect {
                addr,
                options: vec![]
            }]
        );
        assert!(matches!(connect_target(&tlvs), Some(SocketAddr::V4(_))));
    }

    #[test]
    fn connect_tlv_ipv6() {
        let addr: SocketAddr = "[2001:db8::1]:8080".parse().unwrap();
        let mut tlv = vec![0x0A, 0x05, 0x1F, 0x90];
        tlv.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        let m = msg(6, &[&tlv]);
        assert_eq!(connect_request(addr), m);
        assert_eq!(connect_target(&complete_only_at_end(&m)), Some(addr));
        // A V6 socket address loses flow info and scope id, and an IPv4-mapped V6 one
        // comes back as V4: the wire has no room for the difference.
        let scoped = SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 1, 7, 9));
        let (tlvs, _) = parse(&connect_request(scoped)).unwrap().unwrap();
        assert_eq!(connect_target(&tlvs), Some("[::1]:1".parse().unwrap()));
        let mapped = SocketAddr::new(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped().into(), 2);
        let (tlvs, _) = parse(&connect_request(mapped)).unwrap().unwrap();
        assert_eq!(connect_target(&tlvs), Some("10.0.0.1:2".parse().unwrap()));
    }

    #[test]
    fn connect_tlv_with_tcp_options() {
        // /                  TCP Options (Variable)                       /
        // MSS 1460 (kind 2, length 4) and SACK permitted (kind 4, length 2): 6 bytes,
        // then two bytes of zero padding.
        let addr: SocketAddr = "198.51.100.7:80".parse().unwrap();
        let options = vec![0x02, 0x04, 0x05, 0xB4, 0x04, 0x02];
        let mut tlv = vec![0x0A, 0x07, 0x00, 0x50];
        tlv.extend_from_slice(&Ipv4Addr::new(198, 51, 100, 7).to_ipv6_mapped().octets());
        tlv.extend_from_slice(&options);
        tlv.extend_from_slice(&[0, 0]);
        both_ways(&[Tlv::Connect { addr, options }], &msg(8, &[&tlv]));
    }

    #[test]
    fn extended_tcp_header_tlv() {
        // |  Type=0x14    |     Length    |           Unassigned          |
        // /                  Returned Extended TCP header                 /
        let opts = vec![0x02, 0x04, 0x05, 0xB4, 0x01, 0x03, 0x03, 0x07];
        let mut tlv = vec![0x14, 0x03, 0x00, 0x00];
        tlv.extend_from_slice(&opts);
        let m = msg(4, &[&tlv]);
        both_ways(&[Tlv::ExtendedTcpHeader(opts.clone())], &m);
        // Unassigned bits are ignored on receipt, as RFC 8803 requires.
        let mut odd = m.clone();
        odd[6] = 0xAB;
        assert_eq!(
            parse(&odd),
            Ok(Some((vec![Tlv::ExtendedTcpHeader(opts)], 16)))
        );
    }

    #[test]
    fn supported_tcp_extensions_tlv() {
        // |  Type=0x15    |     Length    |           Unassigned          |
        // |     Kind #1   |     Kind #2   |           ...                 |
        // MPTCP (30), TCP Fast Open (34), SACK permitted (4), zero-padded.
        let tlv = [0x15, 0x02, 0x00, 0x00, 30, 34, 4, 0];
        both_ways(
            &[Tlv::SupportedTcpExtensions(vec![30, 34, 4])],
            &msg(3, &[&tlv]),
        );
        let tlv = [0x15, 0x01, 0x00, 0x00];
        both_ways(&[Tlv::SupportedTcpExtensions(vec![])], &msg(2, &[&tlv]));
    }

    #[test]
    fn cookie_tlv() {
        // |  Type=0x16    |     Length    |             Zero              |
        // /                     Opaque Validation Data                    /
        let tlv = [0x16, 0x03, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8];
        both_ways(
            &[Tlv::Cookie(vec![1, 2, 3, 4, 5, 6, 7, 8])],
            &msg(4, &[&tlv]),
        );
    }

    #[test]
    fn error_tlv_every_code() {
        // |  Type=0x1E    |     Length    |  Error Code   |  Value        |
        let all = [
            (0, ErrorCode::UnsupportedVersion, "Unsupported Version"),
            (1, ErrorCode::MalformedMessage, "Malformed Message"),
            (2, ErrorCode::UnsupportedMessage, "Unsupported Message"),
            (3, ErrorCode::MissingCookie, "Missing Cookie"),
            (32, ErrorCode::NotAuthorized, "Not Authorized"),
            (
                33,
                ErrorCode::UnsupportedTcpOption,
                "Unsupported TCP Option",
            ),
            (64, ErrorCode::ResourceExceeded, "Resource Exceeded"),
            (65, ErrorCode::NetworkFailure, "Network Failure"),
            (96, ErrorCode::ConnectionReset, "Connection Reset"),
            (
                97,
                ErrorCode::DestinationUnreachable,
                "Destination Unreachable",
            ),
        ];
        for (byte, code, name) in all {
            assert_eq!(code.code(), byte);
            assert_eq!(ErrorCode::from_code(byte), code);
            assert_eq!(code.to_string(), name);
            let m = msg(2, &[&[0x1E, 0x01, byte, 0x00]]);
            assert_eq!(error_reply(code), m);
            both_ways(
                &[Tlv::Error {
                    code,
                    value: vec![0],
                }],
                &m,
            );
        }
        for byte in 0..=255u8 {
            let code = ErrorCode::from_code(byte);
            assert_eq!(code.code(), byte);
            let named = all.iter().any(|&(b, _, _)| b == byte);
            assert_eq!(!named, matches!(code, ErrorCode::Unassigned(_)), "{byte}");
        }
        assert_eq!(
            ErrorCode::Unassigned(4).to_string(),
            "unassigned error code 4"
        );
        assert_eq!(
            ErrorCode::Unassigned(200).to_string(),
            "private-use error code 200"
        );
        // By hand, a named code in Unassigned is written as its byte and read as its name.
        let (tlvs, _) = parse(&error_reply(ErrorCode::Unassigned(96)))
            .unwrap()
            .unwrap();
        assert_eq!(
            tlvs,
            [Tlv::Error {
                code: ErrorCode::ConnectionReset,
                value: vec![0]
            }]
        );
    }

    #[test]
    fn error_classes() {
        use ErrorClass::*;
        let want = [
            (ErrorCode::UnsupportedVersion, MessageValidation),
            (ErrorCode::MalformedMessage, MessageValidation),
            (ErrorCode::UnsupportedMessage, MessageValidation),
            (ErrorCode::MissingCookie, MessageValidation),
            (ErrorCode::NotAuthorized, ClientSide),
            (ErrorCode::UnsupportedTcpOption, ClientSide),
            (ErrorCode::ResourceExceeded, ConverterSide),
            (ErrorCode::NetworkFailure, ConverterSide),
            (ErrorCode::ConnectionReset, ServerSide),
            (ErrorCode::DestinationUnreachable, ServerSide),
            (ErrorCode::Unassigned(31), MessageValidation),
            (ErrorCode::Unassigned(127), ServerSide),
            (ErrorCode::Unassigned(128), Other),
            (ErrorCode::Unassigned(255), Other),
        ];
        for (code, class) in want {
            assert_eq!(code.class(), class, "{code}");
        }
    }

    #[test]
    fn error_values_per_code() {
        // Unsupported Version listing versions 1 and 2, zero-padded: 5 value bytes.
        let tlv = [0x1E, 0x02, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00];
        both_ways(
            &[Tlv::Error {
                code: ErrorCode::UnsupportedVersion,
                value: vec![1, 2, 0, 0, 0],
            }],
            &msg(3, &[&tlv]),
        );
        // Resource Exceeded, retry in 60 seconds.
        let tlv = [0x1E, 0x01, 0x40, 60];
        both_ways(
            &[Tlv::Error {
                code: ErrorCode::ResourceExceeded,
                value: vec![60],
            }],
            &msg(2, &[&tlv]),
        );
        // Missing Cookie comes with the cookie to retry with.
        let m = msg(
            4,
            &[
                &[0x1E, 0x01, 0x03, 0x00],
                &[0x16, 0x02, 0x00, 0x00, 0xDE, 0xAD, 0xBE, 0xEF],
            ],
        );
        both_ways(
            &[
                Tlv::Error {
                    code: ErrorCode::MissingCookie,
                    value: vec![0],
                },
                Tlv::Cookie(vec![0xDE, 0xAD, 0xBE, 0xEF]),
            ],
            &m,
        );
    }

    #[test]
    fn unknown_tlvs_are_kept() {
        let tlv = [0xC0, 0x02, 0xAA, 0xBB, 1, 2, 3, 4];
        both_ways(
            &[Tlv::Unknown {
                kind: 0xC0,
                value: vec![0xAA, 0xBB, 1, 2, 3, 4],
            }],
            &msg(3, &[&tlv]),
        );
    }

    #[test]
    fn several_tlvs_in_order() {
        let addr: SocketAddr = "203.0.113.9:25".parse().unwrap();
        let tlvs = [
            Tlv::Connect {
                addr,
                options: vec![],
            },
            Tlv::Cookie(vec![9, 9, 9, 9]),
            Tlv::Info,
        ];
        let m = encode(&tlvs).unwrap();
        assert_eq!(m.len(), 4 + 20 + 8 + 4);
        assert_eq!(m[1], 9);
        assert_eq!(complete_only_at_end(&m), tlvs);
        assert_eq!(connect_target(&tlvs), Some(addr));
        assert_eq!(connect_target(&[Tlv::Info]), None);
    }

    #[test]
    fn header_errors() {
        assert_eq!(parse(&[0x00]), Err(Error::Version(0)));
        assert_eq!(parse(&[0x02, 1, 0x22, 0x63]), Err(Error::Version(2)));
        assert_eq!(parse(b"GET / HTTP/1.1"), Err(Error::Version(b'G')));
        assert_eq!(parse(&[0x01, 0x00]), Err(Error::ZeroTotalLength));
        // The drafts' zero "Unassigned" bits are not the RFC's magic number.
        assert_eq!(parse(&[0x01, 0x01, 0x00, 0x00]), Err(Error::Magic(0)));
        assert_eq!(parse(&[0x01, 0x02, 0x22, 0x64]), Err(Error::Magic(0x2264)));
        assert_eq!(parse(&[0x01, 0x02, 0x22]), Ok(None));
        assert_eq!(parse(&[0x01, 0x02, 0x22, 0x63, 0x01]), Ok(None));
    }

    #[test]
    fn tlv_errors() {
        let kind = CONNECT;
        // (TLV bytes, Total Length of the message they are zero-filled into, error)
        let cases: &[(&[u8], u8, Error)] = &[
            (&[0x01, 0x00], 2, Error::TlvLength { kind: 1, words: 0 }),
            (&[0x01, 0x02], 3, Error::TlvLength { kind: 1, words: 2 }),
            (&[0x0A, 0x04], 5, Error::TlvLength { kind, words: 4 }),
            (
                &[0x1E, 0x02],
                2,
                Error::TlvOverrun {
                    kind: ERROR,
                    at: 4,
                    total: 8,
                },
            ),
            (
                &[0x0A, 0x05],
                5,
                Error::TlvOverrun {
                    kind,
                    at: 4,
                    total: 20,
                },
            ),
            (
                &[0x01, 0x01, 0x00, 0x01],
                2,
                Error::Malformed {
                    kind: INFO,
                    reason: "the field after the length is not zero",
                },
            ),
            (
                &[0x16, 0x01, 0x80, 0x00],
                2,
                Error::Malformed {
                    kind: COOKIE,
                    reason: "the field after the length is not zero",
                },
            ),
        ];
        for (tlv, words, want) in cases {
            let mut m = header(*words);
            m.extend_from_slice(tlv);
            m.resize(usize::from(*words) * 4, 0);
            assert_eq!(parse(&m).as_ref(), Err(want), "{tlv:?}");
        }
        // A Connect TLV whose options are not options, or whose padding is not padding.
        let bad_options: &[&[u8]] = &[
            &[0x01, 0x01, 0x01, 0x01],       // NOPs
            &[0x02, 0x01, 0x00, 0x00],       // length under 2
            &[0x02, 0x08, 0x05, 0xB4],       // runs past the TLV
            &[0x00, 0x00, 0x00, 0x00],       // a whole word of padding
            &[0x04, 0x02, 0x00, 0x01],       // padding that is not zeros
            &[0x02, 0x04, 0x05, 0xB4, 0x03], // kind without length (made aligned below)
        ];
        for opts in bad_options {
            let mut tlv = vec![0x0A, 0, 0x00, 0x50];
            tlv.extend_from_slice(&[0; 16]);
            tlv.extend_from_slice(opts);
            tlv.resize(tlv.len() + pad_len(tlv.len()), 0);
            tlv[1] = (tlv.len() / 4) as u8;
            let mut m = header(1 + tlv[1]);
            m.extend_from_slice(&tlv);
            assert!(
                matches!(parse(&m), Err(Error::Malformed { kind: CONNECT, .. })),
                "{opts:?}: {:?}",
                parse(&m)
            );
        }
        let bad_kinds: &[&[u8]] = &[
            &[30, 2, 0, 0],  // MSS listed
            &[1, 0, 0, 0],   // NOP listed
            &[30, 0, 34, 0], // a zero before a kind
            &[0, 0, 0, 0],   // a whole word of padding
        ];
        for kinds in bad_kinds {
            let m = msg(3, &[&[0x15, 0x02, 0x00, 0x00], kinds]);
            assert!(
                matches!(
                    parse(&m),
                    Err(Error::Malformed {
                        kind: SUPPORTED_TCP_EXTENSIONS,
                        ..
                    })
                ),
                "{kinds:?}: {:?}",
                parse(&m)
            );
        }
    }

    #[test]
    fn encode_errors() {
        let addr: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let connect = |options: &[u8]| {
            encode(&[Tlv::Connect {
                addr,
                options: options.to_vec(),
            }])
        };
        assert!(matches!(connect(&[1]), Err(Error::Malformed { .. })));
        assert!(matches!(connect(&[2, 4, 5]), Err(Error::Malformed { .. })));
        assert!(matches!(connect(&[4, 2, 0]), Err(Error::Malformed { .. })));
        assert_eq!(
            encode(&[Tlv::SupportedTcpExtensions(vec![30, 2])]).map_err(|e| e.kind()),
            Err(Some(SUPPORTED_TCP_EXTENSIONS))
        );
        assert_eq!(
            encode(&[Tlv::Cookie(vec![1, 2, 3])]),
            Err(Error::Unaligned {
                kind: COOKIE,
                len: 7
            })
        );
        assert_eq!(
            encode(&[Tlv::ExtendedTcpHeader(vec![1])]),
            Err(Error::Unaligned {
                kind: EXTENDED_TCP_HEADER,
                len: 5
            })
        );
        for value in [vec![], vec![0, 0]] {
            assert!(matches!(
                encode(&[Tlv::Error {
                    code: ErrorCode::NotAuthorized,
                    value
                }]),
                Err(Error::Unaligned { kind: ERROR, .. })
            ));
        }
        assert_eq!(
            encode(&[Tlv::Unknown {
                kind: 200,
                value: vec![]
            }]),
            Err(Error::Unaligned { kind: 200, len: 2 })
        );
        assert_eq!(
            encode(&[Tlv::Unknown {
                kind: CONNECT,
                value: vec![0, 0]
            }]),
            Err(Error::KnownKind(CONNECT))
        );
        // The largest TLV is 255 words, the largest message 255 words with its header.
        assert_eq!(
            encode(&[Tlv::Cookie(vec![0; 1020])]),
            Err(Error::TlvTooLong {
                kind: COOKIE,
                len: 1024
            })
        );
        assert_eq!(
            encode(&[Tlv::Cookie(vec![0; 1016])]),
            Err(Error::TooLong(1024))
        );
        let biggest = encode(&[Tlv::Cookie(vec![0; 1012])]).unwrap();
        assert_eq!(biggest.len(), MAX_MESSAGE);
        assert_eq!(biggest[1], 255);
        assert_eq!(complete_only_at_end(&biggest).len(), 1);
    }

    impl Error {
        /// The TLV type an error is about, to match on in tests.
        fn kind(&self) -> Option<u8> {
            match self {
                Error::TlvLength { kind, .. }
                | Error::TlvOverrun { kind, .. }
                | Error::Malformed { kind, .. }
                | Error::Unaligned { kind, .. }
                | Error::TlvTooLong { kind, .. } => Some(*kind),
                _ => None,
            }
        }
    }

    #[test]
    fn error_messages_name_the_fault() {
        assert_eq!(
            Error::Version(0).to_string(),
            "Convert version 0, expected 1"
        );
        assert_eq!(
            Error::Magic(0).to_string(),
            "magic number 0x0000, expected 0x2263"
        );
        assert_eq!(
            Error::TlvLength {
                kind: CONNECT,
                words: 4
            }
            .to_string(),
            "Connect TLV (type 10) of 4 words, a length its fields don't allow"
        );
        assert_eq!(
            Error::TlvOverrun {
                kind: 99,
                at: 4,
                total: 8
            }
            .to_string(),
            "unknown TLV (type 99) at byte 4 runs past the message's 8 bytes"
        );
        assert_eq!(
            Error::Unaligned {
                kind: COOKIE,
                len: 7
            }
            .to_string(),
            "Cookie TLV (type 22) of 7 bytes, not a whole number of 32-bit words"
        );
        assert_eq!(
            Error::KnownKind(ERROR).to_string(),
            "TLV type 30 is the Error TLV; use its own variant"
        );
        assert_eq!(
            Error::Version(2).reply_code(),
            ErrorCode::UnsupportedVersion
        );
        assert_eq!(Error::Magic(0).reply_code(), ErrorCode::MalformedMessage);
    }
}
