//! SOCKS Protocol Version 5 (RFC 1928) and its username/password authentication
//! (RFC 1929), as a sans-IO codec: pure functions from values to bytes and from bytes to
//! values, with no sockets, no runtime and no state. The caller owns the connection and
//! its buffers, so one codec serves a blocking client, an async server, the tests and the
//! fuzzer alike, and every byte on the wire can be looked at in a test.
//!
//! A conversation, client to server on the left, each message with the function that
//! writes it and the one that reads it:
//!
//! ```text
//! greeting             VER=5 NMETHODS METHODS            parse_greeting
//!                      VER=5 METHOD                      method_choice / parse_method_choice
//! if METHOD is USER_PASS (RFC 1929):
//! userpass_request     VER=1 ULEN UNAME PLEN PASSWD      parse_userpass_request
//!                      VER=1 STATUS                      userpass_reply / parse_userpass_reply
//! request              VER=5 CMD RSV ATYP DST.ADDR DST.PORT      parse_request
//!                      VER=5 REP RSV ATYP BND.ADDR BND.PORT      reply / parse_reply
//! ```
//!
//! Every parser returns `Ok(None)` while its input is a strict prefix of a valid message
//! (read more, then call again with the whole buffer), `Ok(Some((value, consumed)))` once a
//! message is complete, and `Err` as soon as one byte shows the input can never become a
//! valid message. Failing at the first wrong byte rather than at the end means a peer
//! speaking SOCKS4, TLS or HTTP is turned away at once instead of after a read timeout.
//! Bytes past `consumed` are not looked at: they belong to what follows (a pipelined
//! request, see [`pipelined_connect`], or the proxied stream itself).
//!
//! Parsing is strict: where the RFCs fix a byte (the versions, the reserved byte) or a
//! range (lengths of 1 to 255), anything else is an error. That keeps the accepted
//! language small enough to fuzz exhaustively, and makes every accepted message exactly
//! the bytes the encoders here would write for the value parsed. No input makes a parser
//! allocate more than one field's 255 bytes, or panic.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

/// The protocol version byte that opens every RFC 1928 message.
pub const VERSION: u8 = 5;
/// The version byte of RFC 1929's sub-negotiation (the version of that sub-protocol, not
/// of SOCKS, hence 1 and not 5).
pub const USERPASS_VERSION: u8 = 1;

/// Method "NO AUTHENTICATION REQUIRED".
pub const NO_AUTH: u8 = 0x00;
/// Method "GSSAPI" (RFC 1961); not implemented here, named so it can be recognised.
pub const GSSAPI: u8 = 0x01;
/// Method "USERNAME/PASSWORD" (RFC 1929).
pub const USER_PASS: u8 = 0x02;
/// The server's answer "NO ACCEPTABLE METHODS"; after it the server closes.
pub const NO_ACCEPTABLE: u8 = 0xFF;

const ATYP_V4: u8 = 0x01;
const ATYP_DOMAIN: u8 = 0x03;
const ATYP_V6: u8 = 0x04;

/// The longest request or reply: 4 header bytes, a domain's length byte and 255 bytes, and
/// the port. Allocating this up front avoids a regrowth for any target.
const MAX_ADDR_MESSAGE: usize = 4 + 1 + 255 + 2;

/// Where to connect (DST.ADDR in a request) or where the server bound (BND.ADDR in a reply).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    V4(Ipv4Addr),
    V6(Ipv6Addr),
    /// A name for the server to resolve: 1 to 255 bytes on the wire. RFC 1928 calls it a
    /// fully-qualified domain name but fixes no syntax, so any UTF-8 is passed through.
    Domain(String),
}

/// A host and a port: DST.ADDR/DST.PORT or BND.ADDR/BND.PORT.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    pub host: Host,
    pub port: u16,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::V4(a) => write!(f, "{a}:{}", self.port),
            // Brackets, as in URLs and SocketAddr, because an IPv6 address has colons too.
            Host::V6(a) => write!(f, "[{a}]:{}", self.port),
            Host::Domain(d) => write!(f, "{d}:{}", self.port),
        }
    }
}

impl From<SocketAddr> for Target {
    /// An IPv6 address's flow info and scope id are dropped: SOCKS has no field for them.
    fn from(a: SocketAddr) -> Self {
        let host = match a {
            SocketAddr::V4(v4) => Host::V4(*v4.ip()),
            SocketAddr::V6(v6) => Host::V6(*v6.ip()),
        };
        Target {
            host,
            port: a.port(),
        }
    }
}

/// The CMD of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    Connect,
    Bind,
    UdpAssociate,
}

impl Command {
    pub fn code(self) -> u8 {
        match self {
            Command::Connect => 0x01,
            Command::Bind => 0x02,
            Command::UdpAssociate => 0x03,
        }
    }

    /// `None` for a byte RFC 1928 assigns no command to.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0x01 => Some(Command::Connect),
            0x02 => Some(Command::Bind),
            0x03 => Some(Command::UdpAssociate),
            _ => None,
        }
    }
}

/// The REP field of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyCode {
    Succeeded,
    GeneralFailure,
    NotAllowed,
    NetworkUnreachable,
    HostUnreachable,
    ConnectionRefused,
    TtlExpired,
    CommandNotSupported,
    AddressTypeNotSupported,
    /// X'09' to X'FF'. Kept rather than refused so a client still learns that (and with
    /// which byte) the server failed. [`ReplyCode::from_code`] never makes one of 0 to 8;
    /// built by hand with such a byte, it is written as that byte and parses back as the
    /// named code.
    Unassigned(u8),
}

impl ReplyCode {
    pub fn code(self) -> u8 {
        match self {
            ReplyCode::Succeeded => 0x00,
            ReplyCode::GeneralFailure => 0x01,
            ReplyCode::NotAllowed => 0x02,
            ReplyCode::NetworkUnreachable => 0x03,
            ReplyCode::HostUnreachable => 0x04,
            ReplyCode::ConnectionRefused => 0x05,
            ReplyCode::TtlExpired => 0x06,
            ReplyCode::CommandNotSupported => 0x07,
            ReplyCode::AddressTypeNotSupported => 0x08,
            ReplyCode::Unassigned(c) => c,
        }
    }

    pub fn from_code(code: u8) -> Self {
        match code {
            0x00 => ReplyCode::Succeeded,
            0x01 => ReplyCode::GeneralFailure,
            0x02 => ReplyCode::NotAllowed,
            0x03 => ReplyCode::NetworkUnreachable,
            0x04 => ReplyCode::HostUnreachable,
            0x05 => ReplyCode::ConnectionRefused,
            0x06 => ReplyCode::TtlExpired,
            0x07 => ReplyCode::CommandNotSupported,
            0x08 => ReplyCode::AddressTypeNotSupported,
            c => ReplyCode::Unassigned(c),
        }
    }
}

impl fmt::Display for ReplyCode {
    /// RFC 1928's own wording (section 6), capitals and all, so a log line can be matched
    /// against the RFC.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyCode::Succeeded => f.write_str("succeeded"),
            ReplyCode::GeneralFailure => f.write_str("general SOCKS server failure"),
            ReplyCode::NotAllowed => f.write_str("connection not allowed by ruleset"),
            ReplyCode::NetworkUnreachable => f.write_str("Network unreachable"),
            ReplyCode::HostUnreachable => f.write_str("Host unreachable"),
            ReplyCode::ConnectionRefused => f.write_str("Connection refused"),
            ReplyCode::TtlExpired => f.write_str("TTL expired"),
            ReplyCode::CommandNotSupported => f.write_str("Command not supported"),
            ReplyCode::AddressTypeNotSupported => f.write_str("Address type not supported"),
            ReplyCode::Unassigned(c) => write!(f, "unassigned reply code {c:#04x}"),
        }
    }
}

/// Which length-prefixed field a [`Error::Length`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Username,
    Password,
    Domain,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Username => "username",
            Field::Password => "password",
            Field::Domain => "domain name",
        })
    }
}

/// Why bytes are not a valid message, or why a value can't be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("SOCKS version {0}, expected 5")]
    Version(u8),
    #[error("no methods offered")]
    NoMethods,
    #[error("username/password sub-negotiation version {0}, expected 1")]
    UserPassVersion(u8),
    /// A field's length outside 1 to 255: on the wire only 0 can occur (its length byte
    /// caps it at 255); encoding also refuses what does not fit that byte.
    #[error("{0} of {1} bytes, expected 1 to 255")]
    Length(Field, usize),
    #[error("domain name is not UTF-8")]
    DomainNotUtf8,
    #[error("reserved byte {0:#04x}, expected 0")]
    Reserved(u8),
    #[error("address type {0:#04x} unknown")]
    AddressType(u8),
    #[error("command {0:#04x} unknown")]
    Command(u8),
}

impl Error {
    /// The reply a server should send when [`parse_request`] fails with this error, before
    /// closing the connection as RFC 1928 requires after any failure reply. Only an
    /// unknown command or address type has its own code; the rest is a malformed request.
    pub fn reply_code(&self) -> ReplyCode {
        match self {
            Error::Command(_) => ReplyCode::CommandNotSupported,
            Error::AddressType(_) => ReplyCode::AddressTypeNotSupported,
            _ => ReplyCode::GeneralFailure,
        }
    }
}

/// A parser's result: `Ok(None)` for "incomplete, read more".
pub type Parsed<T> = Result<Option<(T, usize)>, Error>;

/// Returns `Ok(None)` from the enclosing parser when the input has run out, so each step
/// below reads as one line and no index is ever taken unchecked.
macro_rules! need {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return Ok(None),
        }
    };
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, at: 0 }
    }

    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.buf.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }
}

fn socks_version(b: u8) -> Result<(), Error> {
    if b == VERSION {
        Ok(())
    } else {
        Err(Error::Version(b))
    }
}

fn reserved(b: u8) -> Result<(), Error> {
    if b == 0 {
        Ok(())
    } else {
        Err(Error::Reserved(b))
    }
}

/// The length byte for a field, refusing what RFC 1928/1929 can't carry.
fn field_len(field: Field, bytes: &[u8]) -> Result<u8, Error> {
    match u8::try_from(bytes.len()) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::Length(field, bytes.len())),
    }
}

/// Writes ATYP, the address and the port; on error writes nothing, so a caller can fall
/// back without undoing half a target.
fn put_target(out: &mut Vec<u8>, t: &Target) -> Result<(), Error> {
    match &t.host {
        Host::V4(a) => {
            out.push(ATYP_V4);
            out.extend_from_slice(&a.octets());
        }
        Host::V6(a) => {
            out.push(ATYP_V6);
            out.extend_from_slice(&a.octets());
        }
        Host::Domain(d) => {
            let n = field_len(Field::Domain, d.as_bytes())?;
            out.push(ATYP_DOMAIN);
            out.push(n);
            out.extend_from_slice(d.as_bytes());
        }
    }
    out.extend_from_slice(&t.port.to_be_bytes());
    Ok(())
}

fn read_target(r: &mut Reader<'_>) -> Result<Option<Target>, Error> {
    let host = match need!(r.byte()) {
        ATYP_V4 => Host::V4(Ipv4Addr::from(need!(r.array::<4>()))),
        ATYP_V6 => Host::V6(Ipv6Addr::from(need!(r.array::<16>()))),
        ATYP_DOMAIN => {
            let len = need!(r.byte());
            if len == 0 {
                return Err(Error::Length(Field::Domain, 0));
            }
            let name = need!(r.bytes(len.into()));
            let name = std::str::from_utf8(name).map_err(|_| Error::DomainNotUtf8)?;
            Host::Domain(name.to_owned())
        }
        other => return Err(Error::AddressType(other)),
    };
    let port = u16::from_be_bytes(need!(r.array::<2>()));
    Ok(Some(Target { host, port }))
}

// ---- client side ----

/// The client's first message: the methods it can authenticate with, most preferred
/// first. NMETHODS is one byte, so only the first 255 are sent; a longer list can only
/// repeat itself or hold [`NO_ACCEPTABLE`], which is no method. An empty list is written
/// as given, and servers refuse it ([`Error::NoMethods`]).
pub fn greeting(methods: &[u8]) -> Vec<u8> {
    let methods = methods.get(..255).unwrap_or(methods);
    let mut out = Vec::with_capacity(2 + methods.len());
    out.push(VERSION);
    out.push(methods.len() as u8);
    out.extend_from_slice(methods);
    out
}

/// The server's METHOD. Whether it is one the client offered (or [`NO_ACCEPTABLE`]) is
/// for the caller to check: only it knows what it offered.
pub fn parse_method_choice(buf: &[u8]) -> Parsed<u8> {
    let mut r = Reader::new(buf);
    socks_version(need!(r.byte()))?;
    let method = need!(r.byte());
    Ok(Some((method, r.at)))
}

/// RFC 1929's request, sent after the server chose [`USER_PASS`]. Both fields must be 1 to
/// 255 bytes. The password goes in clear text: RFC 1929 offers no protection, so use it
/// only where the path to the proxy is trusted.
pub fn userpass_request(user: &[u8], pass: &[u8]) -> Result<Vec<u8>, Error> {
    let ulen = field_len(Field::Username, user)?;
    let plen = field_len(Field::Password, pass)?;
    let mut out = Vec::with_capacity(3 + user.len() + pass.len());
    out.push(USERPASS_VERSION);
    out.push(ulen);
    out.extend_from_slice(user);
    out.push(plen);
    out.extend_from_slice(pass);
    Ok(out)
}

/// Whether the server accepted the credentials: `true` for STATUS 0, `false` for any other
/// status (RFC 1929 gives failure no finer meaning, and the server then closes).
pub fn parse_userpass_reply(buf: &[u8]) -> Parsed<bool> {
    let mut r = Reader::new(buf);
    let version = need!(r.byte());
    if version != USERPASS_VERSION {
        return Err(Error::UserPassVersion(version));
    }
    let status = need!(r.byte());
    Ok(Some((status == 0, r.at)))
}

/// A request. A domain must be 1 to 255 bytes.
pub fn request(cmd: Command, t: &Target) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(MAX_ADDR_MESSAGE);
    out.extend_from_slice(&[VERSION, cmd.code(), 0]);
    put_target(&mut out, t)?;
    Ok(out)
}

/// The server's reply: its code and the bound address (for CONNECT, the server's side of
/// its connection to the target; on failure often just 0.0.0.0:0).
pub fn parse_reply(buf: &[u8]) -> Parsed<(ReplyCode, Target)> {
    let mut r = Reader::new(buf);
    socks_version(need!(r.byte()))?;
    let code = ReplyCode::from_code(need!(r.byte()));
    reserved(need!(r.byte()))?;
    let bound = need!(read_target(&mut r)?);
    Ok(Some(((code, bound), r.at)))
}

/// The greeting offering only [`NO_AUTH`] followed at once by a CONNECT request, so the
/// connection is set up in one round trip instead of two. The client then reads the
/// method choice ([`parse_method_choice`]) and the reply ([`parse_reply`]) from the same
/// stream, in that order.
///
/// This is only sound when no-auth is the only method offered: the server can then only
/// answer [`NO_AUTH`], after which the request is exactly what it expects next, or
/// [`NO_ACCEPTABLE`] and close, which discards the request unread. Had it been able to
/// choose [`USER_PASS`], the bytes after the greeting would have to be an RFC 1929
/// request and the client must wait for the choice. RFC 1928 does not forbid sending
/// early; a server built on [`parse_greeting`] copes, since the request stays in its
/// buffer past the consumed count. Servers that read the greeting with one `read` and drop
/// whatever came with it do not, which is why this is a separate, opt-in helper.
pub fn pipelined_connect(t: &Target) -> Result<Vec<u8>, Error> {
    let mut out = greeting(&[NO_AUTH]);
    out.extend_from_slice(&request(Command::Connect, t)?);
    Ok(out)
}

// ---- server side ----

/// The methods the client offers, in its order of preference. At least one is required:
/// with none, no answer but [`NO_ACCEPTABLE`] could follow, so the client is broken.
pub fn parse_greeting(buf: &[u8]) -> Parsed<Vec<u8>> {
    let mut r = Reader::new(buf);
    socks_version(need!(r.byte()))?;
    let n = need!(r.byte());
    if n == 0 {
        return Err(Error::NoMethods);
    }
    let methods = need!(r.bytes(n.into()));
    Ok(Some((methods.to_vec(), r.at)))
}

/// The server's answer to a greeting: the method chosen, or [`NO_ACCEPTABLE`] (after which
/// RFC 1928 has the server close).
pub fn method_choice(method: u8) -> [u8; 2] {
    [VERSION, method]
}

/// RFC 1929's request: `(username, password)`, each 1 to 255 bytes. They are bytes, not
/// strings, because RFC 1929 does not say how they are encoded.
pub fn parse_userpass_request(buf: &[u8]) -> Parsed<(Vec<u8>, Vec<u8>)> {
    let mut r = Reader::new(buf);
    let version = need!(r.byte());
    if version != USERPASS_VERSION {
        return Err(Error::UserPassVersion(version));
    }
    let ulen = need!(r.byte());
    if ulen == 0 {
        return Err(Error::Length(Field::Username, 0));
    }
    let user = need!(r.bytes(ulen.into()));
    let plen = need!(r.byte());
    if plen == 0 {
        return Err(Error::Length(Field::Password, 0));
    }
    let pass = need!(r.bytes(plen.into()));
    Ok(Some(((user.to_vec(), pass.to_vec()), r.at)))
}

/// RFC 1929's answer: STATUS 0 for success, 1 for failure (after which the server must
/// close).
pub fn userpass_reply(ok: bool) -> [u8; 2] {
    [USERPASS_VERSION, if ok { 0x00 } else { 0x01 }]
}

/// A client's request. On [`Error::Command`] and [`Error::AddressType`] the server should
/// still answer, with [`Error::reply_code`]; this fails at the offending byte, without
/// waiting for the rest, because the server closes after that reply anyway.
pub fn parse_request(buf: &[u8]) -> Parsed<(Command, Target)> {
    let mut r = Reader::new(buf);
    socks_version(need!(r.byte()))?;
    let code = need!(r.byte());
    let cmd = Command::from_code(code).ok_or(Error::Command(code))?;
    reserved(need!(r.byte()))?;
    let target = need!(read_target(&mut r)?);
    Ok(Some(((cmd, target), r.at)))
}

/// The server's reply, with the address it bound (for CONNECT, its local end of the
/// connection to the target; on failure 0.0.0.0:0 is customary).
///
/// A domain that does not fit (empty, or over 255 bytes) is written as 0.0.0.0 with the
/// given port: a reply must still go out, and an unspecified address is what clients
/// already see from servers with nothing to report.
pub fn reply(code: ReplyCode, bound: &Target) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAX_ADDR_MESSAGE);
    out.extend_from_slice(&[VERSION, code.code(), 0]);
    if put_target(&mut out, bound).is_err() {
        out.push(ATYP_V4);
        out.extend_from_slice(&Ipv4Addr::UNSPECIFIED.octets());
        out.extend_from_slice(&bound.port.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4], port: u16) -> Target {
        Target {
            host: Host::V4(a.into()),
            port,
        }
    }

    fn domain(d: &str, port: u16) -> Target {
        Target {
            host: Host::Domain(d.into()),
            port,
        }
    }

    /// Every strict prefix is incomplete, the whole is one message, and bytes after it are
    /// left alone.
    fn complete_only_at_end<T: fmt::Debug>(msg: &[u8], parse: impl Fn(&[u8]) -> Parsed<T>) {
        for i in 0..msg.len() {
            assert!(
                matches!(parse(&msg[..i]), Ok(None)),
                "prefix of {i} bytes of {msg:?}"
            );
        }
        let mut more = msg.to_vec();
        more.extend_from_slice(&[5, 1, 0, 1]);
        match parse(&more) {
            Ok(Some((_, n))) => assert_eq!(n, msg.len()),
            other => panic!("{msg:?} + trailing bytes: {other:?}"),
        }
    }

    #[test]
    fn greeting_both_ways() {
        // +----+----------+----------+
        // |VER | NMETHODS | METHODS  |
        let g = greeting(&[NO_AUTH, USER_PASS]);
        assert_eq!(g, [0x05, 0x02, 0x00, 0x02]);
        assert_eq!(parse_greeting(&g), Ok(Some((vec![0x00, 0x02], 4))));
        complete_only_at_end(&g, parse_greeting);

        let all: Vec<u8> = (0..=255).collect();
        let g = greeting(&all);
        assert_eq!(g.len(), 2 + 255);
        assert_eq!(g[1], 255);
        assert_eq!(parse_greeting(&g), Ok(Some(((0..=254).collect(), 257))));
        assert_eq!(greeting(&[]), [0x05, 0x00]);
    }

    #[test]
    fn greeting_errors() {
        assert_eq!(parse_greeting(&[0x04]), Err(Error::Version(4)));
        assert_eq!(parse_greeting(b"GET / HTTP/1.1"), Err(Error::Version(b'G')));
        assert_eq!(parse_greeting(&[0x05, 0x00]), Err(Error::NoMethods));
        assert_eq!(parse_greeting(&[0x05, 0x00, 0x00]), Err(Error::NoMethods));
    }

    #[test]
    fn method_choice_both_ways() {
        // +----+--------+
        // |VER | METHOD |
        assert_eq!(method_choice(USER_PASS), [0x05, 0x02]);
        assert_eq!(method_choice(NO_ACCEPTABLE), [0x05, 0xFF]);
        assert_eq!(parse_method_choice(&[0x05, 0x00]), Ok(Some((NO_AUTH, 2))));
        assert_eq!(
            parse_method_choice(&[0x05, 0xFF, 0x05]),
            Ok(Some((NO_ACCEPTABLE, 2)))
        );
        complete_only_at_end(&method_choice(NO_AUTH), parse_method_choice);
        assert_eq!(parse_method_choice(&[0x04, 0x00]), Err(Error::Version(4)));
        assert_eq!(parse_method_choice(&[0x01]), Err(Error::Version(1)));
    }

    #[test]
    fn userpass_both_ways() {
        // +----+------+----------+------+----------+
        // |VER | ULEN |  UNAME   | PLEN |  PASSWD  |
        let req = userpass_request(b"user", b"pw").unwrap();
        assert_eq!(req, [0x01, 4, b'u', b's', b'e', b'r', 2, b'p', b'w']);
        assert_eq!(
            parse_userpass_request(&req),
            Ok(Some(((b"user".to_vec(), b"pw".to_vec()), 9)))
        );
        complete_only_at_end(&req, parse_userpass_request);
        let long = userpass_request(&[b'u'; 255], &[0xFF; 255]).unwrap();
        assert_eq!(long.len(), 513);
        complete_only_at_end(&long, parse_userpass_request);

        // +----+--------+
        // |VER | STATUS |
        assert_eq!(userpass_reply(true), [0x01, 0x00]);
        assert_eq!(userpass_reply(false), [0x01, 0x01]);
        assert_eq!(parse_userpass_reply(&[0x01, 0x00]), Ok(Some((true, 2))));
        assert_eq!(parse_userpass_reply(&[0x01, 0x01]), Ok(Some((false, 2))));
        assert_eq!(parse_userpass_reply(&[0x01, 0x7F]), Ok(Some((false, 2))));
        complete_only_at_end(&userpass_reply(true), parse_userpass_reply);
    }

    #[test]
    fn userpass_errors() {
        assert_eq!(
            userpass_request(b"", b"pw"),
            Err(Error::Length(Field::Username, 0))
        );
        assert_eq!(
            userpass_request(b"u", b""),
            Err(Error::Length(Field::Password, 0))
        );
        assert_eq!(
            userpass_request(&[b'u'; 256], b"pw"),
            Err(Error::Length(Field::Username, 256))
        );
        assert_eq!(
            userpass_request(b"u", &[b'p'; 300]),
            Err(Error::Length(Field::Password, 300))
        );
        assert_eq!(
            parse_userpass_request(&[0x05, 1, b'u', 1, b'p']),
            Err(Error::UserPassVersion(5))
        );
        assert_eq!(
            parse_userpass_request(&[0x01, 0]),
            Err(Error::Length(Field::Username, 0))
        );
        assert_eq!(
            parse_userpass_request(&[0x01, 1, b'u', 0]),
            Err(Error::Length(Field::Password, 0))
        );
        // Some servers answer with the SOCKS version here; RFC 1929 says 1.
        assert_eq!(
            parse_userpass_reply(&[0x05, 0x00]),
            Err(Error::UserPassVersion(5))
        );
    }

    #[test]
    fn requests_both_ways() {
        // +----+-----+-------+------+----------+----------+
        // |VER | CMD |  RSV  | ATYP | DST.ADDR | DST.PORT |
        let t = v4([127, 0, 0, 1], 80);
        let req = request(Command::Connect, &t).unwrap();
        assert_eq!(req, [0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1, 0x00, 0x50]);
        assert_eq!(parse_request(&req), Ok(Some(((Command::Connect, t), 10))));
        complete_only_at_end(&req, parse_request);

        let t = domain("example.org", 443);
        let req = request(Command::Connect, &t).unwrap();
        let mut want = vec![0x05, 0x01, 0x00, 0x03, 11];
        want.extend_from_slice(b"example.org");
        want.extend_from_slice(&[0x01, 0xBB]);
        assert_eq!(req, want);
        assert_eq!(
            parse_request(&req),
            Ok(Some(((Command::Connect, t), want.len())))
        );
        complete_only_at_end(&req, parse_request);

        let t = Target {
            host: Host::V6(Ipv6Addr::LOCALHOST),
            port: 1080,
        };
        let req = request(Command::Bind, &t).unwrap();
        let mut want = vec![0x05, 0x02, 0x00, 0x04];
        want.extend_from_slice(&[0; 15]);
        want.extend_from_slice(&[1, 0x04, 0x38]);
        assert_eq!(req, want);
        assert_eq!(parse_request(&req), Ok(Some(((Command::Bind, t), 22))));
        complete_only_at_end(&req, parse_request);

        let t = v4([0, 0, 0, 0], 0);
        let req = request(Command::UdpAssociate, &t).unwrap();
        assert_eq!(req[1], 0x03);
        assert_eq!(
            parse_request(&req),
            Ok(Some(((Command::UdpAssociate, t), 10)))
        );

        let long = domain(&"a".repeat(255), 1);
        let req = request(Command::Connect, &long).unwrap();
        assert_eq!(req.len(), MAX_ADDR_MESSAGE);
        complete_only_at_end(&req, parse_request);
    }

    #[test]
    fn request_errors() {
        assert_eq!(parse_request(&[0x04, 0x01]), Err(Error::Version(4)));
        let e = parse_request(&[0x05, 0x04]).unwrap_err();
        assert_eq!(e, Error::Command(4));
        assert_eq!(e.reply_code(), ReplyCode::CommandNotSupported);
        assert_eq!(parse_request(&[0x05, 0x00]), Err(Error::Command(0)));
        let e = parse_request(&[0x05, 0x01, 0x01]).unwrap_err();
        assert_eq!(e, Error::Reserved(1));
        assert_eq!(e.reply_code(), ReplyCode::GeneralFailure);
        for atyp in [0x00, 0x02, 0x05, 0xFF] {
            let e = parse_request(&[0x05, 0x01, 0x00, atyp]).unwrap_err();
            assert_eq!(e, Error::AddressType(atyp));
            assert_eq!(e.reply_code(), ReplyCode::AddressTypeNotSupported);
        }
        assert_eq!(
            parse_request(&[0x05, 0x01, 0x00, 0x03, 0]),
            Err(Error::Length(Field::Domain, 0))
        );
        assert_eq!(
            parse_request(&[0x05, 0x01, 0x00, 0x03, 2, 0xC3, 0x28]),
            Err(Error::DomainNotUtf8)
        );
        assert_eq!(
            request(Command::Connect, &domain("", 80)),
            Err(Error::Length(Field::Domain, 0))
        );
        assert_eq!(
            request(Command::Connect, &domain(&"a".repeat(256), 80)),
            Err(Error::Length(Field::Domain, 256))
        );
        assert_eq!(Error::NoMethods.reply_code(), ReplyCode::GeneralFailure);
    }

    #[test]
    fn replies_both_ways() {
        // +----+-----+-------+------+----------+----------+
        // |VER | REP |  RSV  | ATYP | BND.ADDR | BND.PORT |
        let t = v4([10, 0, 0, 2], 0xC001);
        let rep = reply(ReplyCode::Succeeded, &t);
        assert_eq!(rep, [0x05, 0x00, 0x00, 0x01, 10, 0, 0, 2, 0xC0, 0x01]);
        assert_eq!(
            parse_reply(&rep),
            Ok(Some(((ReplyCode::Succeeded, t.clone()), 10)))
        );
        complete_only_at_end(&rep, parse_reply);
        for code in 0..=255u8 {
            let rc = ReplyCode::from_code(code);
            assert_eq!(rc.code(), code);
            let rep = reply(rc, &t);
            assert_eq!(rep[1], code);
            assert_eq!(parse_reply(&rep), Ok(Some(((rc, t.clone()), 10))));
        }
        let t = domain("proxy.example", 1080);
        let rep = reply(ReplyCode::HostUnreachable, &t);
        assert_eq!(&rep[..5], &[0x05, 0x04, 0x00, 0x03, 13]);
        assert_eq!(
            parse_reply(&rep),
            Ok(Some(((ReplyCode::HostUnreachable, t), rep.len())))
        );
        complete_only_at_end(&rep, parse_reply);
    }

    #[test]
    fn reply_with_unencodable_domain_says_unspecified() {
        let rep = reply(ReplyCode::GeneralFailure, &domain("", 7));
        assert_eq!(rep, [0x05, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 7]);
        let rep = reply(ReplyCode::Succeeded, &domain(&"x".repeat(256), 7));
        assert_eq!(rep, [0x05, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 7]);
    }

    #[test]
    fn reply_errors() {
        assert_eq!(parse_reply(&[0x04, 0x5A]), Err(Error::Version(4)));
        assert_eq!(parse_reply(&[0x05, 0x00, 0x02]), Err(Error::Reserved(2)));
        assert_eq!(
            parse_reply(&[0x05, 0x00, 0x00, 0x07]),
            Err(Error::AddressType(7))
        );
        assert_eq!(
            parse_reply(&[0x05, 0x00, 0x00, 0x03, 0x00]),
            Err(Error::Length(Field::Domain, 0))
        );
        assert_eq!(
            parse_reply(&[0x05, 0x00, 0x00, 0x03, 1, 0x80, 0, 80]),
            Err(Error::DomainNotUtf8)
        );
    }

    #[test]
    fn reply_codes_use_rfc_wording() {
        let words: Vec<String> = (0..=9)
            .map(|c| ReplyCode::from_code(c).to_string())
            .collect();
        assert_eq!(
            words,
            [
                "succeeded",
                "general SOCKS server failure",
                "connection not allowed by ruleset",
                "Network unreachable",
                "Host unreachable",
                "Connection refused",
                "TTL expired",
                "Command not supported",
                "Address type not supported",
                "unassigned reply code 0x09",
            ]
        );
        assert_eq!(ReplyCode::Unassigned(3).code(), 3);
        assert_eq!(ReplyCode::from_code(3), ReplyCode::NetworkUnreachable);
    }

    #[test]
    fn error_messages_name_the_fault() {
        let cases = [
            (Error::Version(4), "SOCKS version 4, expected 5"),
            (Error::NoMethods, "no methods offered"),
            (
                Error::UserPassVersion(2),
                "username/password sub-negotiation version 2, expected 1",
            ),
            (
                Error::Length(Field::Domain, 0),
                "domain name of 0 bytes, expected 1 to 255",
            ),
            (
                Error::Length(Field::Username, 0),
                "username of 0 bytes, expected 1 to 255",
            ),
            (
                Error::Length(Field::Password, 256),
                "password of 256 bytes, expected 1 to 255",
            ),
            (Error::DomainNotUtf8, "domain name is not UTF-8"),
            (Error::Reserved(1), "reserved byte 0x01, expected 0"),
            (Error::AddressType(5), "address type 0x05 unknown"),
            (Error::Command(0x2A), "command 0x2a unknown"),
        ];
        for (e, msg) in cases {
            assert_eq!(e.to_string(), msg);
        }
    }

    #[test]
    fn targets_display_and_convert() {
        assert_eq!(v4([1, 2, 3, 4], 80).to_string(), "1.2.3.4:80");
        let t = Target::from("[::1]:80".parse::<SocketAddr>().unwrap());
        assert_eq!(t.host, Host::V6(Ipv6Addr::LOCALHOST));
        assert_eq!(t.to_string(), "[::1]:80");
        assert_eq!(domain("example.org", 80).to_string(), "example.org:80");
        let t = Target::from("1.2.3.4:80".parse::<SocketAddr>().unwrap());
        assert_eq!(t, v4([1, 2, 3, 4], 80));
        assert_eq!(
            Command::from_code(Command::Bind.code()),
            Some(Command::Bind)
        );
        assert_eq!(Command::from_code(4), None);
    }

    #[test]
    fn pipelined_connect_is_greeting_then_request() {
        let t = v4([192, 0, 2, 1], 443);
        let bytes = pipelined_connect(&t).unwrap();
        assert_eq!(
            bytes,
            [
                0x05, 0x01, 0x00, 0x05, 0x01, 0x00, 0x01, 192, 0, 2, 1, 0x01, 0xBB
            ]
        );
        // What a server built on this crate does with it: the greeting's consumed count
        // leaves the request in the buffer.
        let (methods, n) = parse_greeting(&bytes).unwrap().unwrap();
        assert_eq!((methods, n), (vec![NO_AUTH], 3));
        let rest = bytes.get(n..).unwrap();
        assert_eq!(
            parse_request(rest),
            Ok(Some(((Command::Connect, t), rest.len())))
        );
        assert_eq!(
            pipelined_connect(&domain("", 1)),
            Err(Error::Length(Field::Domain, 0))
        );
    }
}
