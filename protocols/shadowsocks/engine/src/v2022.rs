//! Shadowsocks 2022, TCP, sans-IO: SIP022 "AEAD-2022 ciphers"
//! (<https://shadowsocks.org/doc/sip022.html>) as shadowsocks-rust speaks it, methods
//! `2022-blake3-aes-256-gcm`, `2022-blake3-aes-128-gcm` and
//! `2022-blake3-chacha20-poly1305` (no extended identity headers, no UDP).
//!
//! - The pre-shared key is random bytes as long as the AEAD's key, written as base64
//!   ([`Psk`]); there is no password derivation.
//! - Each direction starts with a random salt as long as the key; the session subkey is
//!   BLAKE3's `derive_key` with the context "shadowsocks 2022 session subkey" over
//!   key || salt ([`session_subkey`]). Nonces are 12-byte little-endian counters from 0.
//! - Request (client to server): salt, then the sealed fixed-length header (type 0, u64
//!   big-endian Unix time, u16 big-endian length of the next chunk), then the sealed
//!   variable-length header (the SOCKS5 address, u16 padding length, padding, the first
//!   data), then chunks as in SIP004 but of up to [`MAX_PAYLOAD`] (0xFFFF) bytes.
//! - Response: salt, then the sealed fixed header (type 1, time, the request's salt,
//!   u16 length of the first chunk), then that chunk sealed, then chunks.
//!
//! Nothing here reads a clock or draws random bytes: callers pass the time and salts. A
//! receiver checks the peer's timestamp with [`check_timestamp`]; a server checks the
//! request's salt against a [`SaltPool`], which remembers salts for [`SALT_WINDOW`]
//! seconds within a fixed capacity (full, it refuses rather than forgets, so that a
//! replay cannot get through by flooding). The decoder holds at most one chunk (64 KiB
//! and a tag) and fails for good on the first bad tag, wrong header type, foreign
//! request salt or malformed variable header.

use crate::{Cipher, Error, MAX_ADDRESS, Session, TAG_LEN, Target, encode_address, parse_address};
use base64::Engine as _;
use std::collections::{HashSet, VecDeque};
use std::fmt;

/// The longest payload of one chunk: the whole u16 range (SIP022 lifts SIP004's 0x3FFF).
pub const MAX_PAYLOAD: usize = 0xFFFF;
/// The longest padding a request's variable header may carry (SIP022).
pub const MAX_PADDING: usize = 900;
/// How far a header's timestamp may be from the receiver's clock, seconds.
pub const MAX_TIME_DIFF: u64 = 30;
/// How long a server remembers a request's salt, seconds: twice [`MAX_TIME_DIFF`], so a
/// replay whose timestamp still passes is always caught.
pub const SALT_WINDOW: u64 = 60;
/// BLAKE3's key derivation context for session subkeys.
pub const SUBKEY_CONTEXT: &str = "shadowsocks 2022 session subkey";

const CLIENT_STREAM: u8 = 0;
const SERVER_STREAM: u8 = 1;

/// The method name of `cipher`'s 2022 edition (shadowsocks-rust's `-m`).
pub fn method_name(cipher: Cipher) -> &'static str {
    match cipher {
        Cipher::Aes256Gcm => "2022-blake3-aes-256-gcm",
        Cipher::Aes128Gcm => "2022-blake3-aes-128-gcm",
        Cipher::Chacha20IetfPoly1305 => "2022-blake3-chacha20-poly1305",
    }
}

/// The AEAD of a 2022 method name.
pub fn from_method_name(name: &str) -> Option<Cipher> {
    Cipher::ALL.into_iter().find(|c| method_name(*c) == name)
}

/// A 2022 method's pre-shared key.
#[derive(Clone, PartialEq, Eq)]
pub struct Psk {
    cipher: Cipher,
    key: Vec<u8>,
}

impl fmt::Debug for Psk {
    // Never the key itself: it ends up in logs otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Psk({})", method_name(self.cipher))
    }
}

impl Psk {
    pub fn from_bytes(cipher: Cipher, key: &[u8]) -> Result<Psk, Error> {
        if key.len() != cipher.key_len() {
            return Err(Error::Psk {
                cipher,
                want: cipher.key_len(),
                why: format!("{} bytes given", key.len()),
            });
        }
        Ok(Psk {
            cipher,
            key: key.to_vec(),
        })
    }

    /// The key as written in configurations: standard base64 with padding.
    pub fn from_base64(cipher: Cipher, text: &str) -> Result<Psk, Error> {
        let key = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| Error::Psk {
                cipher,
                want: cipher.key_len(),
                why: e.to_string(),
            })?;
        Psk::from_bytes(cipher, &key)
    }

    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.key)
    }

    pub fn cipher(&self) -> Cipher {
        self.cipher
    }

    pub fn salt_len(&self) -> usize {
        self.cipher.salt_len()
    }
}

/// SIP022's session subkey: BLAKE3 `derive_key(SUBKEY_CONTEXT, key || salt)`, cut to
/// the key's length (BLAKE3's output is extendable, so a 16-byte subkey is a prefix of
/// the 32-byte one, as shadowsocks-rust computes it).
pub fn session_subkey(psk: &Psk, salt: &[u8]) -> Result<Vec<u8>, Error> {
    if salt.len() != psk.salt_len() {
        return Err(Error::Length {
            cipher: psk.cipher,
            what: "salt",
            want: psk.salt_len(),
            got: salt.len(),
        });
    }
    let mut material = Vec::with_capacity(psk.key.len() + salt.len());
    material.extend_from_slice(&psk.key);
    material.extend_from_slice(salt);
    let full = blake3::derive_key(SUBKEY_CONTEXT, &material);
    Ok(full[..psk.cipher.key_len()].to_vec())
}

fn session(psk: &Psk, salt: &[u8]) -> Result<Session, Error> {
    Session::with_subkey(psk.cipher, &session_subkey(psk, salt)?)
}

/// Whether a header's timestamp is within [`MAX_TIME_DIFF`] of `now` (both Unix seconds).
pub fn check_timestamp(got: u64, now: u64) -> Result<(), Error> {
    let off = got.abs_diff(now);
    if off > MAX_TIME_DIFF {
        return Err(Error::Timestamp { got, now, off });
    }
    Ok(())
}

/// What the sender still has to put in front of its first chunk.
enum Pending {
    Request {
        salt: Vec<u8>,
        address: Vec<u8>,
        padding: usize,
    },
    Response {
        salt: Vec<u8>,
        request_salt: Vec<u8>,
    },
    Sent,
}

/// One direction's sender: the salt and header, then chunks.
pub struct Encryptor {
    session: Session,
    pending: Pending,
    scratch: Vec<u8>,
}

impl Encryptor {
    /// A client's stream to `target`, with `padding` bytes of padding in its variable
    /// header (clamped to [`MAX_PADDING`]; SIP022 wants some when the first write has no
    /// data). `salt` must be fresh random bytes as long as the key.
    pub fn client(
        psk: &Psk,
        salt: &[u8],
        target: &Target,
        padding: usize,
    ) -> Result<Encryptor, Error> {
        Ok(Encryptor {
            session: session(psk, salt)?,
            pending: Pending::Request {
                salt: salt.to_vec(),
                address: encode_address(target)?,
                padding: padding.min(MAX_PADDING),
            },
            scratch: Vec::new(),
        })
    }

    /// A server's answer to the request that came under `request_salt`.
    pub fn server(psk: &Psk, salt: &[u8], request_salt: &[u8]) -> Result<Encryptor, Error> {
        if request_salt.len() != psk.salt_len() {
            return Err(Error::Length {
                cipher: psk.cipher,
                what: "request salt",
                want: psk.salt_len(),
                got: request_salt.len(),
            });
        }
        Ok(Encryptor {
            session: session(psk, salt)?,
            pending: Pending::Response {
                salt: salt.to_vec(),
                request_salt: request_salt.to_vec(),
            },
            scratch: Vec::new(),
        })
    }

    fn seal_unit(&mut self, plain: &[u8], out: &mut Vec<u8>) {
        self.scratch.clear();
        self.scratch.extend_from_slice(plain);
        self.session.seal(&mut self.scratch);
        out.extend_from_slice(&self.scratch);
    }

    /// Appends to `out` the salt and header (on the first call, stamped `now`, Unix
    /// seconds; even when `data` is empty) and `data` as chunks of at most
    /// [`MAX_PAYLOAD`] bytes. Later calls with empty `data` add nothing.
    pub fn seal(&mut self, mut data: &[u8], now: u64, out: &mut Vec<u8>) {
        match std::mem::replace(&mut self.pending, Pending::Sent) {
            Pending::Request {
                salt,
                address,
                padding,
            } => {
                // Address, padding and as much data as fits make the first chunk.
                let room = MAX_PAYLOAD - address.len() - 2 - padding;
                let (first, rest) = data.split_at(data.len().min(room));
                let mut var = Vec::with_capacity(address.len() + 2 + padding + first.len());
                var.extend_from_slice(&address);
                // `padding` <= MAX_PADDING, so it fits.
                var.extend_from_slice(&(padding as u16).to_be_bytes());
                var.resize(var.len() + padding, 0);
                var.extend_from_slice(first);
                let mut fixed = [0u8; 11];
                fixed[0] = CLIENT_STREAM;
                fixed[1..9].copy_from_slice(&now.to_be_bytes());
                // `var` is at most MAX_PAYLOAD by the choice of `room`.
                fixed[9..11].copy_from_slice(&(var.len() as u16).to_be_bytes());
                out.extend_from_slice(&salt);
                self.seal_unit(&fixed, out);
                self.seal_unit(&var, out);
                data = rest;
            }
            Pending::Response { salt, request_salt } => {
                let (first, rest) = data.split_at(data.len().min(MAX_PAYLOAD));
                let mut fixed = Vec::with_capacity(1 + 8 + request_salt.len() + 2);
                fixed.push(SERVER_STREAM);
                fixed.extend_from_slice(&now.to_be_bytes());
                fixed.extend_from_slice(&request_salt);
                fixed.extend_from_slice(&(first.len() as u16).to_be_bytes());
                out.extend_from_slice(&salt);
                self.seal_unit(&fixed, out);
                self.seal_unit(first, out);
                data = rest;
            }
            Pending::Sent => {}
        }
        for part in data.chunks(MAX_PAYLOAD) {
            self.seal_unit(&(part.len() as u16).to_be_bytes(), out);
            self.seal_unit(part, out);
        }
    }
}

/// What came before the first data of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub salt: Vec<u8>,
    /// The sender's clock, Unix seconds (check with [`check_timestamp`]).
    pub timestamp: u64,
    /// Requests only: where the client wants to go, and its padding length.
    pub target: Option<Target>,
    pub padding: usize,
}

enum Expect {
    Request,
    Response { request_salt: Vec<u8> },
}

enum Phase {
    /// Salt and sealed fixed header.
    Fixed,
    /// The chunk whose length the fixed header gave (the variable header of a request,
    /// the first data of a response).
    First(usize),
    Length,
    Payload(usize),
    Failed(Error),
}

/// One direction's receiver: fed bytes in any split, it hands out the header (once) and
/// the plaintext of each chunk as soon as the chunk is complete.
pub struct Decryptor {
    psk: Psk,
    expect: Expect,
    session: Option<Session>,
    phase: Phase,
    buf: Vec<u8>,
    head: Option<Head>,
    chunks: u64,
    /// `buf[delivered_from..]` is the plaintext handed out last: dropped on the next call.
    delivered: bool,
    delivered_from: usize,
}

impl Decryptor {
    /// A server's receiver of a client's request stream.
    pub fn request(psk: &Psk) -> Decryptor {
        Decryptor::with(psk, Expect::Request)
    }

    /// A client's receiver of the answer to its request sent under `request_salt`.
    pub fn response(psk: &Psk, request_salt: &[u8]) -> Decryptor {
        Decryptor::with(
            psk,
            Expect::Response {
                request_salt: request_salt.to_vec(),
            },
        )
    }

    fn with(psk: &Psk, expect: Expect) -> Decryptor {
        Decryptor {
            psk: psk.clone(),
            expect,
            session: None,
            phase: Phase::Fixed,
            buf: Vec::with_capacity(128),
            head: None,
            chunks: 0,
            delivered: false,
            delivered_from: 0,
        }
    }

    /// The stream's header, once its first chunk has been opened.
    pub fn head(&self) -> Option<&Head> {
        self.head.as_ref()
    }

    /// Chunks opened so far (the first, after the fixed header, included).
    pub fn chunks(&self) -> u64 {
        self.chunks
    }

    fn fixed_len(&self) -> usize {
        let sl = self.psk.salt_len();
        match self.expect {
            Expect::Request => sl + 1 + 8 + 2 + TAG_LEN,
            Expect::Response { .. } => sl + 1 + 8 + sl + 2 + TAG_LEN,
        }
    }

    /// Bytes still missing from the unit being received (for sizing reads).
    pub fn wants(&self) -> usize {
        let unit = match self.phase {
            Phase::Fixed => self.fixed_len(),
            Phase::First(n) | Phase::Payload(n) => n + TAG_LEN,
            Phase::Length => 2 + TAG_LEN,
            Phase::Failed(_) => return 0,
        };
        unit.saturating_sub(self.buf.len()).max(1)
    }

    /// Takes bytes from the front of `input` until a chunk is complete and returns its
    /// plaintext (valid until the next call), or `None` once `input` is used up. The
    /// first plaintext is a request's first data after its header (possibly empty):
    /// [`head`](Self::head) is set from then on. After an error every call returns it
    /// again ([`Error::Failed`]).
    pub fn next_chunk(&mut self, input: &mut &[u8]) -> Result<Option<&[u8]>, Error> {
        if let Phase::Failed(e) = &self.phase {
            return Err(Error::Failed(Box::new(e.clone())));
        }
        if self.delivered {
            self.buf.clear();
            self.delivered = false;
            self.delivered_from = 0;
        }
        match self.advance(input) {
            Ok(true) => {
                self.delivered = true;
                Ok(Some(&self.buf[self.delivered_from..]))
            }
            Ok(false) => Ok(None),
            Err(e) => {
                self.buf = Vec::new();
                self.phase = Phase::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// Every chunk `input` completes, appended to `out`.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        while let Some(p) = self.next_chunk(&mut input)? {
            out.extend_from_slice(p);
        }
        Ok(())
    }

    /// At the end of the stream: fine between chunks, an error inside one. A stream
    /// that ends before its header is also fine (nothing was sent).
    pub fn finish(&self) -> Result<(), Error> {
        match &self.phase {
            Phase::Failed(e) => Err(Error::Failed(Box::new(e.clone()))),
            // Between units; a length already opened promises a chunk that must follow.
            Phase::Fixed | Phase::Length if self.buf.is_empty() || self.delivered => Ok(()),
            Phase::Fixed => Err(Error::Truncated("the salt and fixed header")),
            Phase::First(_) => Err(Error::Truncated("the first chunk")),
            Phase::Length => Err(Error::Truncated("a chunk's length")),
            Phase::Payload(_) => Err(Error::Truncated("a chunk's payload")),
        }
    }

    fn fill(buf: &mut Vec<u8>, input: &mut &[u8], n: usize) -> bool {
        let take = n.saturating_sub(buf.len()).min(input.len());
        buf.extend_from_slice(&input[..take]);
        *input = &input[take..];
        buf.len() >= n
    }

    fn open(&mut self, part: &'static str) -> Result<(), Error> {
        let chunk = self.chunks;
        let s = self.session.as_mut().ok_or(Error::Truncated("the salt"))?;
        if s.open(&mut self.buf) {
            Ok(())
        } else {
            Err(Error::Tag { chunk, part })
        }
    }

    fn advance(&mut self, input: &mut &[u8]) -> Result<bool, Error> {
        loop {
            match self.phase {
                Phase::Fixed => {
                    let n = self.fixed_len();
                    if !Self::fill(&mut self.buf, input, n) {
                        return Ok(false);
                    }
                    self.open_fixed()?;
                }
                Phase::First(n) => {
                    if !Self::fill(&mut self.buf, input, n + TAG_LEN) {
                        return Ok(false);
                    }
                    self.open("first chunk")?;
                    self.chunks += 1;
                    if let Expect::Request = self.expect {
                        self.delivered_from = self.parse_variable()?;
                    }
                    self.phase = Phase::Length;
                    return Ok(true);
                }
                Phase::Length => {
                    if !Self::fill(&mut self.buf, input, 2 + TAG_LEN) {
                        return Ok(false);
                    }
                    self.open("length")?;
                    let len = u16::from_be_bytes([self.buf[0], self.buf[1]]);
                    self.buf.clear();
                    self.phase = Phase::Payload(len.into());
                }
                Phase::Payload(n) => {
                    if !Self::fill(&mut self.buf, input, n + TAG_LEN) {
                        return Ok(false);
                    }
                    self.open("payload")?;
                    self.chunks += 1;
                    self.phase = Phase::Length;
                    return Ok(true);
                }
                Phase::Failed(ref e) => return Err(e.clone()),
            }
        }
    }

    /// `buf` holds salt and sealed fixed header: opens it, records the head, moves on
    /// to the first chunk.
    fn open_fixed(&mut self) -> Result<(), Error> {
        let sl = self.psk.salt_len();
        let salt = self.buf[..sl].to_vec();
        self.session = Some(session(&self.psk, &salt)?);
        self.buf.drain(..sl);
        self.open("fixed header")?;
        let (want, got) = match self.expect {
            Expect::Request => (CLIENT_STREAM, self.buf[0]),
            Expect::Response { .. } => (SERVER_STREAM, self.buf[0]),
        };
        if got != want {
            return Err(Error::HeaderType { want, got });
        }
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&self.buf[1..9]);
        let mut at = 9;
        if let Expect::Response { request_salt } = &self.expect {
            if self.buf[at..at + sl] != request_salt[..] {
                return Err(Error::RequestSalt);
            }
            at += sl;
        }
        let len = usize::from(u16::from_be_bytes([self.buf[at], self.buf[at + 1]]));
        self.head = Some(Head {
            salt,
            timestamp: u64::from_be_bytes(ts),
            target: None,
            padding: 0,
        });
        self.buf.clear();
        self.phase = Phase::First(len);
        Ok(())
    }

    /// `buf` holds a request's variable header: address, padding length, padding, data.
    /// Returns where the data starts.
    fn parse_variable(&mut self) -> Result<usize, Error> {
        let (target, n) =
            parse_address(&self.buf)?.ok_or(Error::VariableHeader("cut inside the address"))?;
        let p = self
            .buf
            .get(n..n + 2)
            .ok_or(Error::VariableHeader("no padding length"))?;
        let padding = usize::from(u16::from_be_bytes([p[0], p[1]]));
        if padding > MAX_PADDING {
            return Err(Error::VariableHeader("padding over 900 bytes"));
        }
        let start = n + 2 + padding;
        if start > self.buf.len() {
            return Err(Error::VariableHeader("padding longer than the header"));
        }
        if let Some(h) = self.head.as_mut() {
            h.target = Some(target);
            h.padding = padding;
        }
        Ok(start)
    }
}

/// The longest variable header without data: an address and the most padding.
pub const MAX_VARIABLE_HEADER: usize = MAX_ADDRESS + 2 + MAX_PADDING;

/// The request salts a server saw in the last [`SALT_WINDOW`] seconds, at most
/// `capacity` of them.
pub struct SaltPool {
    seen: HashSet<Vec<u8>>,
    order: VecDeque<(u64, Vec<u8>)>,
    capacity: usize,
}

impl SaltPool {
    pub fn new(capacity: usize) -> SaltPool {
        SaltPool {
            seen: HashSet::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Records `salt` seen at `now` (Unix seconds): an error if it was seen within the
    /// window (a replay), or if the pool is full of salts still within it.
    pub fn check_and_insert(&mut self, salt: &[u8], now: u64) -> Result<(), Error> {
        while let Some((t, _)) = self.order.front() {
            if t.saturating_add(SALT_WINDOW) >= now {
                break;
            }
            if let Some((_, s)) = self.order.pop_front() {
                self.seen.remove(&s);
            }
        }
        if self.seen.contains(salt) {
            return Err(Error::Replay);
        }
        if self.seen.len() >= self.capacity {
            return Err(Error::SaltPoolFull(self.seen.len()));
        }
        self.seen.insert(salt.to_vec());
        self.order.push_back((now, salt.to_vec()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Host;
    use std::net::Ipv4Addr;

    fn psk(c: Cipher) -> Psk {
        Psk::from_bytes(c, &vec![0x42; c.key_len()]).unwrap()
    }

    fn target() -> Target {
        Target {
            host: Host::V4(Ipv4Addr::LOCALHOST),
            port: 8080,
        }
    }

    #[test]
    fn psk_is_base64_of_the_key_length() {
        let p = Psk::from_base64(Cipher::Aes128Gcm, "AAECAwQFBgcICQoLDA0ODw==").unwrap();
        assert_eq!(p.to_base64(), "AAECAwQFBgcICQoLDA0ODw==");
        assert!(matches!(
            Psk::from_base64(Cipher::Aes256Gcm, "AAECAwQFBgcICQoLDA0ODw=="),
            Err(Error::Psk { want: 32, .. })
        ));
        assert!(Psk::from_base64(Cipher::Aes128Gcm, "not base64!").is_err());
        for c in Cipher::ALL {
            assert_eq!(from_method_name(method_name(c)), Some(c));
        }
    }

    #[test]
    fn subkey_of_128_is_a_prefix_of_the_blake3_output() {
        let p = psk(Cipher::Aes128Gcm);
        let salt = [7u8; 16];
        let mut m = vec![0x42; 16];
        m.extend_from_slice(&salt);
        let full = blake3::derive_key(SUBKEY_CONTEXT, &m);
        assert_eq!(session_subkey(&p, &salt).unwrap(), full[..16]);
    }

    #[test]
    fn request_and_response_round_trip() {
        for c in Cipher::ALL {
            let p = psk(c);
            let cs = vec![1u8; c.salt_len()];
            let mut e = Encryptor::client(&p, &cs, &target(), 5).unwrap();
            let data: Vec<u8> = (0..150_000u32).map(|i| i as u8).collect();
            let mut wire = Vec::new();
            e.seal(&data, 1_700_000_000, &mut wire);
            let mut d = Decryptor::request(&p);
            let mut out = Vec::new();
            for b in wire.chunks(7) {
                d.feed(b, &mut out).unwrap();
            }
            d.finish().unwrap();
            assert_eq!(out, data);
            let h = d.head().unwrap();
            assert_eq!(h.salt, cs);
            assert_eq!(h.timestamp, 1_700_000_000);
            assert_eq!(h.target, Some(target()));
            assert_eq!(h.padding, 5);

            let ss = vec![2u8; c.salt_len()];
            let mut e = Encryptor::server(&p, &ss, &cs).unwrap();
            let mut wire = Vec::new();
            e.seal(b"", 9, &mut wire);
            e.seal(b"", 9, &mut wire);
            e.seal(b"answer", 9, &mut wire);
            let mut d = Decryptor::response(&p, &cs);
            let mut out = Vec::new();
            d.feed(&wire, &mut out).unwrap();
            assert_eq!(out, b"answer");
            assert_eq!(d.chunks(), 2);
            // Another request's answer is refused.
            let mut d = Decryptor::response(&p, &ss);
            assert_eq!(d.feed(&wire, &mut Vec::new()), Err(Error::RequestSalt));
        }
    }

    #[test]
    fn a_request_is_not_a_response() {
        let p = psk(Cipher::Aes256Gcm);
        let cs = [1u8; 32];
        let mut e = Encryptor::server(&p, &cs, &cs).unwrap();
        let mut wire = Vec::new();
        e.seal(b"x", 0, &mut wire);
        // A response fed to a server: the request's fixed header is shorter, so its tag
        // lands inside the response's header and does not verify.
        let mut d = Decryptor::request(&p);
        assert!(d.feed(&wire, &mut Vec::new()).is_err());
    }

    #[test]
    fn timestamps_and_replays() {
        assert!(check_timestamp(100, 130).is_ok());
        assert!(check_timestamp(131, 100).is_err());
        assert!(matches!(
            check_timestamp(0, 31),
            Err(Error::Timestamp { off: 31, .. })
        ));
        let mut pool = SaltPool::new(2);
        pool.check_and_insert(b"a", 1000).unwrap();
        assert_eq!(pool.check_and_insert(b"a", 1060), Err(Error::Replay));
        pool.check_and_insert(b"b", 1001).unwrap();
        assert_eq!(
            pool.check_and_insert(b"c", 1002),
            Err(Error::SaltPoolFull(2))
        );
        // After the window "a" is forgotten, which makes room.
        pool.check_and_insert(b"c", 1061).unwrap();
        assert_eq!(pool.len(), 2);
        pool.check_and_insert(b"a", 1061).unwrap_err();
    }
}
