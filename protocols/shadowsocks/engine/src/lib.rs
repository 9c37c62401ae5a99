//! Shadowsocks AEAD, sans-IO: the TCP stream format of SIP004 with the key derivation of
//! SIP007 (<https://shadowsocks.org/doc/aead.html>), as shadowsocks-libev 3.x and
//! shadowsocks-rust speak it.
//!
//! - The master key is the password through OpenSSL's `EVP_BytesToKey` with MD5, one
//!   iteration and no salt ([`Key::from_password`]).
//! - Each direction of a connection starts with a random salt as long as the key; the
//!   session subkey is HKDF-SHA1(key, salt, info "ss-subkey") ([`subkey`]).
//! - Then chunks: `[encrypted 2-byte big-endian length][tag][encrypted payload][tag]`,
//!   the length at most [`MAX_PAYLOAD`] (0x3FFF; the two high bits are reserved and must
//!   be zero). The nonce is a 12-byte little-endian counter from zero, incremented after
//!   every seal or open, so a chunk takes two nonces.
//! - The client's first plaintext is the target address in SOCKS5's format (ATYP, address,
//!   port; [`encode_address`], [`parse_address`]), followed directly by its data.
//!
//! Ciphers: `chacha20-ietf-poly1305`, `aes-256-gcm` and `aes-128-gcm`. Shadowsocks 2022
//! (SIP022: BLAKE3 session keys, timestamped headers, replay protection) over the same
//! three AEADs is in [`v2022`].
//!
//! Nothing here does I/O, reads a clock or draws random bytes: the caller supplies each
//! salt. [`Decryptor`] takes bytes in any split and hands out one decrypted chunk at a
//! time; it holds at most one chunk (16 KiB and a tag) and fails for good on the first
//! bad tag, oversized length or malformed header, which is what a server must do to
//! avoid becoming an oracle.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use md5::{Digest, Md5};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
pub use wirebench_socks5::{Host, Target};

pub mod v2022;

/// The longest payload of one chunk (SIP004).
pub const MAX_PAYLOAD: usize = 0x3FFF;
/// Every AEAD here has a 16-byte tag.
pub const TAG_LEN: usize = 16;
/// The HKDF info string of SIP007.
pub const SUBKEY_INFO: &[u8] = b"ss-subkey";
/// The longest address header: ATYP, a length byte, a 255-byte name, the port.
pub const MAX_ADDRESS: usize = 1 + 1 + 255 + 2;

const ATYP_V4: u8 = 1;
const ATYP_DOMAIN: u8 = 3;
const ATYP_V6: u8 = 4;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(
        "bad tag on chunk {chunk}'s {part}: the data was altered or the password or cipher differ"
    )]
    Tag { chunk: u64, part: &'static str },
    #[error(
        "none of the {tried} configured cipher(s) opens the first chunk: wrong password or cipher"
    )]
    NoCipher { tried: usize },
    #[error("chunk {chunk}'s length is {len:#06x}, over the 0x3FFF maximum")]
    Oversize { chunk: u64, len: u16 },
    #[error("the stream ended inside {0}")]
    Truncated(&'static str),
    #[error("{cipher} needs a {want}-byte {what}, got {got}")]
    Length {
        cipher: Cipher,
        what: &'static str,
        want: usize,
        got: usize,
    },
    #[error("address type {0:#04x}: 1 (IPv4), 3 (name) or 4 (IPv6) expected")]
    AddressType(u8),
    #[error("a name of 0 bytes in the address")]
    EmptyDomain,
    #[error("the name in the address is not UTF-8")]
    DomainNotUtf8,
    #[error("a name of {0} bytes: at most 255 fit in the address")]
    DomainTooLong(usize),
    #[error("the decoder already failed: {0}")]
    Failed(Box<Error>),
    #[error("a Shadowsocks 2022 key must be base64 of exactly {want} bytes ({cipher}): {why}")]
    Psk {
        cipher: Cipher,
        want: usize,
        why: String,
    },
    #[error("header type {got}: {want} expected")]
    HeaderType { want: u8, got: u8 },
    #[error("the response answers another request (its request salt is not ours)")]
    RequestSalt,
    #[error(
        "the header's timestamp {got} is {off} s away from now ({now}); at most 30 s are allowed"
    )]
    Timestamp { got: u64, now: u64, off: u64 },
    #[error("the request's salt was seen before: a replay")]
    Replay,
    #[error("{0} salts seen in the last minute: no room to remember another, refused")]
    SaltPoolFull(usize),
    #[error("the variable-length header: {0}")]
    VariableHeader(&'static str),
}

/// An AEAD cipher of SIP004.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cipher {
    Chacha20IetfPoly1305,
    Aes256Gcm,
    Aes128Gcm,
}

impl Cipher {
    pub const ALL: [Cipher; 3] = [
        Cipher::Chacha20IetfPoly1305,
        Cipher::Aes256Gcm,
        Cipher::Aes128Gcm,
    ];

    /// The name shadowsocks-libev and shadowsocks-rust use (`-m`, `"method"`).
    pub fn name(self) -> &'static str {
        match self {
            Cipher::Chacha20IetfPoly1305 => "chacha20-ietf-poly1305",
            Cipher::Aes256Gcm => "aes-256-gcm",
            Cipher::Aes128Gcm => "aes-128-gcm",
        }
    }

    pub fn from_name(name: &str) -> Option<Cipher> {
        Cipher::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Key and salt length, bytes: SIP004 makes the salt as long as the key.
    pub fn key_len(self) -> usize {
        match self {
            Cipher::Aes128Gcm => 16,
            _ => 32,
        }
    }

    pub fn salt_len(self) -> usize {
        self.key_len()
    }
}

impl fmt::Display for Cipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// OpenSSL's `EVP_BytesToKey(md5, salt = none, count = 1)`: MD5 blocks
/// `D_i = MD5(D_{i-1} || password)` concatenated and cut to `len`.
pub fn bytes_to_key(password: &[u8], len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 16);
    let mut prev: Option<[u8; 16]> = None;
    while out.len() < len {
        let mut h = Md5::new();
        if let Some(p) = prev {
            h.update(p);
        }
        h.update(password);
        let d: [u8; 16] = h.finalize().into();
        out.extend_from_slice(&d);
        prev = Some(d);
    }
    out.truncate(len);
    out
}

/// A cipher and its master key.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    cipher: Cipher,
    key: Vec<u8>,
}

impl fmt::Debug for Key {
    // Never the key itself: it ends up in logs otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", self.cipher)
    }
}

impl Key {
    /// The key every Shadowsocks implementation derives from `password`.
    pub fn from_password(cipher: Cipher, password: &[u8]) -> Key {
        Key {
            cipher,
            key: bytes_to_key(password, cipher.key_len()),
        }
    }

    /// A raw key (`key` in shadowsocks-rust's configuration), as long as the cipher's.
    pub fn from_bytes(cipher: Cipher, key: &[u8]) -> Result<Key, Error> {
        if key.len() != cipher.key_len() {
            return Err(Error::Length {
                cipher,
                what: "key",
                want: cipher.key_len(),
                got: key.len(),
            });
        }
        Ok(Key {
            cipher,
            key: key.to_vec(),
        })
    }

    pub fn cipher(&self) -> Cipher {
        self.cipher
    }

    pub fn bytes(&self) -> &[u8] {
        &self.key
    }
}

/// SIP007's session subkey: HKDF-SHA1 with the salt as HKDF's salt and "ss-subkey" as
/// its info, as long as the key.
pub fn subkey(key: &Key, salt: &[u8]) -> Result<Vec<u8>, Error> {
    let cipher = key.cipher;
    if salt.len() != cipher.salt_len() {
        return Err(Error::Length {
            cipher,
            what: "salt",
            want: cipher.salt_len(),
            got: salt.len(),
        });
    }
    let mut out = vec![0u8; cipher.key_len()];
    hkdf::Hkdf::<sha1::Sha1>::new(Some(salt), &key.key)
        .expand(SUBKEY_INFO, &mut out)
        .map_err(|_| Error::Length {
            cipher,
            what: "subkey",
            want: cipher.key_len(),
            got: 0,
        })?;
    Ok(out)
}

/// One direction's AEAD state: the subkey's cipher and the nonce counter.
struct Session {
    aead: Aead,
    nonce: [u8; 12],
}

enum Aead {
    Chacha(Box<ChaCha20Poly1305>),
    Aes256(Box<Aes256Gcm>),
    Aes128(Box<Aes128Gcm>),
}

impl Session {
    fn new(key: &Key, salt: &[u8]) -> Result<Session, Error> {
        let sk = subkey(key, salt)?;
        Session::with_subkey(key.cipher, &sk)
    }

    /// One direction's state from its session subkey, however that was derived (SIP007's
    /// HKDF or SIP022's BLAKE3).
    fn with_subkey(cipher: Cipher, sk: &[u8]) -> Result<Session, Error> {
        let bad = |_| Error::Length {
            cipher,
            what: "subkey",
            want: cipher.key_len(),
            got: sk.len(),
        };
        let aead = match cipher {
            Cipher::Chacha20IetfPoly1305 => {
                Aead::Chacha(Box::new(ChaCha20Poly1305::new_from_slice(sk).map_err(bad)?))
            }
            Cipher::Aes256Gcm => {
                Aead::Aes256(Box::new(Aes256Gcm::new_from_slice(sk).map_err(bad)?))
            }
            Cipher::Aes128Gcm => {
                Aead::Aes128(Box::new(Aes128Gcm::new_from_slice(sk).map_err(bad)?))
            }
        };
        Ok(Session {
            aead,
            nonce: [0; 12],
        })
    }

    /// Little-endian increment with carry, as libsodium's `sodium_increment`.
    fn step(&mut self) {
        for b in &mut self.nonce {
            *b = b.wrapping_add(1);
            if *b != 0 {
                break;
            }
        }
    }

    /// Encrypts `buf[..]` in place and appends the tag.
    fn seal(&mut self, buf: &mut Vec<u8>) {
        let n = aes_gcm::Nonce::from_slice(&self.nonce);
        // Encryption fails only for messages past the ciphers' 2^36-byte limits; a chunk
        // is at most 16 KiB.
        let r = match &self.aead {
            Aead::Chacha(a) => a.encrypt_in_place(n, b"", buf),
            Aead::Aes256(a) => a.encrypt_in_place(n, b"", buf),
            Aead::Aes128(a) => a.encrypt_in_place(n, b"", buf),
        };
        debug_assert!(r.is_ok());
        self.step();
    }

    /// Decrypts `buf` (ciphertext and tag) in place, leaving the plaintext.
    fn open(&mut self, buf: &mut Vec<u8>) -> bool {
        let n = aes_gcm::Nonce::from_slice(&self.nonce);
        let r = match &self.aead {
            Aead::Chacha(a) => a.decrypt_in_place(n, b"", buf),
            Aead::Aes256(a) => a.decrypt_in_place(n, b"", buf),
            Aead::Aes128(a) => a.decrypt_in_place(n, b"", buf),
        };
        self.step();
        r.is_ok()
    }
}

/// One direction's sender: the salt, then chunks.
pub struct Encryptor {
    session: Session,
    salt: Option<Vec<u8>>,
    scratch: Vec<u8>,
}

impl Encryptor {
    /// `salt` must be fresh random bytes, as long as the key: reusing one with the same
    /// key reuses nonces.
    pub fn new(key: &Key, salt: &[u8]) -> Result<Encryptor, Error> {
        Ok(Encryptor {
            session: Session::new(key, salt)?,
            salt: Some(salt.to_vec()),
            scratch: Vec::with_capacity(MAX_PAYLOAD + TAG_LEN),
        })
    }

    /// Appends to `out` the salt (before the first chunk) and `data` as chunks of at most
    /// [`MAX_PAYLOAD`] bytes. Empty `data` adds nothing: the salt waits for the first
    /// chunk, because a stream of the salt alone is one the other end cannot tell from a
    /// truncated one ([`Decryptor::finish`]).
    pub fn seal(&mut self, data: &[u8], out: &mut Vec<u8>) {
        if data.is_empty() {
            return;
        }
        if let Some(salt) = self.salt.take() {
            out.extend_from_slice(&salt);
        }
        for part in data.chunks(MAX_PAYLOAD) {
            self.scratch.clear();
            // `part.len()` <= 0x3FFF, so the high bits are zero as SIP004 requires.
            self.scratch
                .extend_from_slice(&(part.len() as u16).to_be_bytes());
            self.session.seal(&mut self.scratch);
            out.extend_from_slice(&self.scratch);
            self.scratch.clear();
            self.scratch.extend_from_slice(part);
            self.session.seal(&mut self.scratch);
            out.extend_from_slice(&self.scratch);
        }
    }

    /// A client's first write: the salt and one chunk holding the target's address and
    /// `data` (more chunks if they do not fit in one).
    pub fn seal_request(
        &mut self,
        target: &Target,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let mut first = encode_address(target)?;
        first.extend_from_slice(data);
        self.seal(&first, out);
        Ok(())
    }

    /// Bytes [`seal`](Self::seal) adds for `n` bytes of data, salt not included.
    pub fn sealed_len(n: usize) -> usize {
        n + n.div_ceil(MAX_PAYLOAD) * (2 + 2 * TAG_LEN)
    }
}

enum Phase {
    /// Waiting for the salt; several keys are tried on the first length when a server
    /// accepts more than one cipher.
    Salt,
    Length,
    Payload(usize),
    Failed(Error),
}

/// One direction's receiver: fed bytes in any split, it hands out the plaintext of each
/// chunk as soon as the chunk is complete.
pub struct Decryptor {
    keys: Vec<Key>,
    session: Option<Session>,
    cipher: Option<Cipher>,
    phase: Phase,
    /// The part of the current unit (salt, length or payload) received so far; at most
    /// one payload and its tag.
    buf: Vec<u8>,
    chunks: u64,
    /// Keys whose trial on the first length failed: not tried again as bytes arrive.
    rejected: Vec<bool>,
    /// `buf` holds the plaintext handed out last: dropped on the next call.
    delivered: bool,
}

impl Decryptor {
    pub fn new(key: &Key) -> Decryptor {
        Decryptor::any(std::slice::from_ref(key))
    }

    /// A receiver that accepts any of `keys`: the first whose subkey opens the first
    /// length is the session's (at most three trial decryptions of 2 bytes, once per
    /// connection). Shadowsocks has no cipher negotiation; this lets one server take
    /// clients of every cipher with one password.
    pub fn any(keys: &[Key]) -> Decryptor {
        Decryptor {
            keys: keys.to_vec(),
            session: None,
            cipher: None,
            phase: Phase::Salt,
            buf: Vec::with_capacity(64),
            chunks: 0,
            rejected: vec![false; keys.len()],
            delivered: false,
        }
    }

    /// The cipher in use, once the first chunk's length has been opened.
    pub fn cipher(&self) -> Option<Cipher> {
        self.cipher
    }

    /// Chunks opened so far.
    pub fn chunks(&self) -> u64 {
        self.chunks
    }

    /// Bytes still missing from the unit being received, before anything can be
    /// decrypted (for sizing reads).
    pub fn wants(&self) -> usize {
        let unit = match self.phase {
            Phase::Salt => {
                self.keys
                    .iter()
                    .map(|k| k.cipher.salt_len())
                    .min()
                    .unwrap_or(0)
                    + 2
                    + TAG_LEN
            }
            Phase::Length => 2 + TAG_LEN,
            Phase::Payload(n) => n + TAG_LEN,
            Phase::Failed(_) => return 0,
        };
        unit.saturating_sub(self.buf.len()).max(1)
    }

    /// Takes bytes from the front of `input` until a chunk is complete and returns its
    /// plaintext (valid until the next call), or `None` once `input` is used up with no
    /// chunk complete. Call again with the rest of `input` until `None`. After an error
    /// every call returns it again ([`Error::Failed`]).
    pub fn next_chunk(&mut self, input: &mut &[u8]) -> Result<Option<&[u8]>, Error> {
        if let Phase::Failed(e) = &self.phase {
            return Err(Error::Failed(Box::new(e.clone())));
        }
        if self.delivered {
            self.buf.clear();
            self.delivered = false;
        }
        match self.advance(input) {
            Ok(true) => {
                self.delivered = true;
                Ok(Some(&self.buf))
            }
            Ok(false) => Ok(None),
            Err(e) => {
                self.buf = Vec::new();
                self.phase = Phase::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// Decrypts all of `input`, appending the plaintext to `out`.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        while let Some(p) = self.next_chunk(&mut input)? {
            out.extend_from_slice(p);
        }
        Ok(())
    }

    /// At the end of the stream: whether it ended between chunks.
    pub fn finish(&self) -> Result<(), Error> {
        match &self.phase {
            Phase::Failed(e) => Err(Error::Failed(Box::new(e.clone()))),
            Phase::Salt if self.buf.is_empty() => Ok(()),
            Phase::Salt => Err(Error::Truncated("the salt or first length")),
            Phase::Length if self.buf.is_empty() || self.delivered => Ok(()),
            Phase::Length => Err(Error::Truncated("a chunk's length")),
            Phase::Payload(_) => Err(Error::Truncated("a chunk's payload")),
        }
    }

    /// Moves bytes into `buf` until it holds `n`; whether it does.
    fn fill(buf: &mut Vec<u8>, input: &mut &[u8], n: usize) -> bool {
        let take = n.saturating_sub(buf.len()).min(input.len());
        buf.extend_from_slice(&input[..take]);
        *input = &input[take..];
        buf.len() >= n
    }

    /// One step; `Ok(true)` when `buf` holds a chunk's plaintext.
    fn advance(&mut self, input: &mut &[u8]) -> Result<bool, Error> {
        loop {
            match self.phase {
                Phase::Salt => {
                    if !self.identify(input)? {
                        return Ok(false);
                    }
                }
                Phase::Length => {
                    if !Self::fill(&mut self.buf, input, 2 + TAG_LEN) {
                        return Ok(false);
                    }
                    self.open_length()?;
                }
                Phase::Payload(n) => {
                    if !Self::fill(&mut self.buf, input, n + TAG_LEN) {
                        return Ok(false);
                    }
                    let Some(s) = self.session.as_mut() else {
                        return Err(Error::Truncated("the salt"));
                    };
                    if !s.open(&mut self.buf) {
                        return Err(Error::Tag {
                            chunk: self.chunks,
                            part: "payload",
                        });
                    }
                    self.chunks += 1;
                    self.phase = Phase::Length;
                    return Ok(true);
                }
                Phase::Failed(ref e) => return Err(e.clone()),
            }
        }
    }

    /// In `Length` with `buf` holding the sealed length: opens it, moves to `Payload`.
    fn open_length(&mut self) -> Result<(), Error> {
        let Some(s) = self.session.as_mut() else {
            return Err(Error::Truncated("the salt"));
        };
        let mut sealed = std::mem::take(&mut self.buf);
        if !s.open(&mut sealed) {
            return Err(Error::Tag {
                chunk: self.chunks,
                part: "length",
            });
        }
        let len = u16::from_be_bytes([sealed[0], sealed[1]]);
        if usize::from(len) > MAX_PAYLOAD {
            return Err(Error::Oversize {
                chunk: self.chunks,
                len,
            });
        }
        sealed.clear();
        self.buf = sealed;
        self.phase = Phase::Payload(len.into());
        Ok(())
    }

    /// Reads the salt and the first sealed length, and finds the key that opens it;
    /// whether the salt and length are done (then the phase is `Payload`).
    fn identify(&mut self, input: &mut &[u8]) -> Result<bool, Error> {
        let longest = self
            .keys
            .iter()
            .map(|k| k.cipher.salt_len())
            .max()
            .ok_or(Error::NoCipher { tried: 0 })?
            + 2
            + TAG_LEN;
        Self::fill(&mut self.buf, input, longest);
        let mut waiting = false;
        for (i, k) in self.keys.iter().enumerate() {
            if self.rejected[i] {
                continue;
            }
            let sl = k.cipher.salt_len();
            let Some(sealed) = self.buf.get(sl..sl + 2 + TAG_LEN) else {
                waiting = true;
                continue;
            };
            let mut s = Session::new(k, &self.buf[..sl])?;
            let mut len = sealed.to_vec();
            if !s.open(&mut len) {
                self.rejected[i] = true;
                continue;
            }
            // This key: what followed its length in `buf` belongs to the payload.
            let rest = self.buf[sl + 2 + TAG_LEN..].to_vec();
            let len_u16 = u16::from_be_bytes([len[0], len[1]]);
            if usize::from(len_u16) > MAX_PAYLOAD {
                return Err(Error::Oversize {
                    chunk: 0,
                    len: len_u16,
                });
            }
            self.session = Some(s);
            self.cipher = Some(k.cipher);
            self.buf.clear();
            self.buf.extend_from_slice(&rest);
            self.phase = Phase::Payload(len_u16.into());
            return Ok(true);
        }
        if waiting {
            Ok(false)
        } else if self.keys.len() == 1 {
            Err(Error::Tag {
                chunk: 0,
                part: "length",
            })
        } else {
            Err(Error::NoCipher {
                tried: self.keys.len(),
            })
        }
    }
}

/// The target address as the first plaintext of a client's stream: SOCKS5's ATYP,
/// address and port (RFC 1928 section 5).
pub fn encode_address(t: &Target) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(MAX_ADDRESS);
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
            let n = match u8::try_from(d.len()) {
                Ok(0) => return Err(Error::EmptyDomain),
                Ok(n) => n,
                Err(_) => return Err(Error::DomainTooLong(d.len())),
            };
            out.push(ATYP_DOMAIN);
            out.push(n);
            out.extend_from_slice(d.as_bytes());
        }
    }
    out.extend_from_slice(&t.port.to_be_bytes());
    Ok(out)
}

/// Reads the target address off the front of a client's plaintext: `Ok(None)` while it
/// is incomplete, else the target and its length in bytes.
pub fn parse_address(buf: &[u8]) -> Result<Option<(Target, usize)>, Error> {
    let Some(&atyp) = buf.first() else {
        return Ok(None);
    };
    let (host, at) = match atyp {
        ATYP_V4 => {
            let Some(a) = buf.get(1..5) else {
                return Ok(None);
            };
            let a: [u8; 4] = a.try_into().map_err(|_| Error::AddressType(atyp))?;
            (Host::V4(Ipv4Addr::from(a)), 5)
        }
        ATYP_V6 => {
            let Some(a) = buf.get(1..17) else {
                return Ok(None);
            };
            let a: [u8; 16] = a.try_into().map_err(|_| Error::AddressType(atyp))?;
            (Host::V6(Ipv6Addr::from(a)), 17)
        }
        ATYP_DOMAIN => {
            let Some(&n) = buf.get(1) else {
                return Ok(None);
            };
            if n == 0 {
                return Err(Error::EmptyDomain);
            }
            let end = 2 + usize::from(n);
            let Some(name) = buf.get(2..end) else {
                return Ok(None);
            };
            let name = std::str::from_utf8(name).map_err(|_| Error::DomainNotUtf8)?;
            (Host::Domain(name.to_owned()), end)
        }
        other => return Err(Error::AddressType(other)),
    };
    let Some(p) = buf.get(at..at + 2) else {
        return Ok(None);
    };
    let port = u16::from_be_bytes([p[0], p[1]]);
    Ok(Some((Target { host, port }, at + 2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn bytes_to_key_is_openssls() {
        // What `openssl enc -aes-256-cbc -md md5 -nosalt -k foobar -P` prints as key=.
        assert_eq!(
            bytes_to_key(b"foobar", 32),
            hex("3858f62230ac3c915f300c664312c63f568378529614d22ddb49237d2f60bfdf")
        );
        assert_eq!(
            bytes_to_key(b"foobar", 16),
            hex("3858f62230ac3c915f300c664312c63f")
        );
    }

    /// Salt 00 01 02 .., password "wirebench", the address 127.0.0.1:8080 and "hello" in
    /// one chunk: sealed independently with Python's `cryptography` (HKDF-SHA1, AESGCM,
    /// ChaCha20Poly1305), the only input shared with this code being the spec.
    /// Empty writes add nothing, not even the salt, so every stream the encoder makes is
    /// one the decoder calls complete (the shadowsocks fuzz target's first find: a
    /// salt-only stream, which `finish` rightly cannot tell from a truncated one).
    #[test]
    fn empty_writes_send_nothing_until_the_first_chunk() {
        let key = Key::from_password(Cipher::Aes128Gcm, b"wirebench");
        let salt = [7u8; 16];
        let mut e = Encryptor::new(&key, &salt).unwrap();
        let mut wire = Vec::new();
        e.seal(b"", &mut wire);
        assert!(wire.is_empty());
        let d = Decryptor::new(&key);
        d.finish().unwrap();
        e.seal(b"x", &mut wire);
        e.seal(b"", &mut wire);
        assert_eq!(&wire[..16], &salt);
        let mut d = Decryptor::new(&key);
        let mut plain = Vec::new();
        d.feed(&wire, &mut plain).unwrap();
        d.finish().unwrap();
        assert_eq!(plain, b"x");
    }

    #[test]
    fn known_vectors() {
        let vectors = [
            (
                Cipher::Chacha20IetfPoly1305,
                "d1e5ed941409d04b945a2e763a1568f1814229c06648ed690c1b1212c73e0d58",
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20ff20809fcfee4a2e98fff16376d647934eb3b8a5c2bd3799608729504633b8f2d1f869d039a502b45e01f47536",
            ),
            (
                Cipher::Aes256Gcm,
                "d1e5ed941409d04b945a2e763a1568f1814229c06648ed690c1b1212c73e0d58",
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f95b2a09172fd7c0efca5edbac3babe20560c7eaad97c77bc9fee98da5c2ba4f68a521095d31ee35ace28503a2fa4",
            ),
            (
                Cipher::Aes128Gcm,
                "1dc430e40f774cac2c891872a1f5eb4b",
                "000102030405060708090a0b0c0d0e0f2d3a6a079488c8e44df3d897ddf2adaac9475856d533961c572428ddfd8ccf75c04655c649c508e90fa50b5ab931",
            ),
        ];
        let target = Target {
            host: Host::V4(Ipv4Addr::LOCALHOST),
            port: 8080,
        };
        for (c, sk, wire) in vectors {
            let key = Key::from_password(c, b"wirebench");
            let salt: Vec<u8> = (0..c.salt_len() as u8).collect();
            assert_eq!(subkey(&key, &salt).unwrap(), hex(sk), "{c}");
            let mut e = Encryptor::new(&key, &salt).unwrap();
            let mut out = Vec::new();
            e.seal_request(&target, b"hello", &mut out).unwrap();
            assert_eq!(out, hex(wire), "{c}");
            let mut d = Decryptor::new(&key);
            let mut plain = Vec::new();
            d.feed(&out, &mut plain).unwrap();
            assert_eq!(parse_address(&plain).unwrap(), Some((target.clone(), 7)));
            assert_eq!(&plain[7..], b"hello");
        }
    }

    #[test]
    fn address_round_trip() {
        for t in [
            Target {
                host: Host::V4(Ipv4Addr::new(127, 0, 0, 1)),
                port: 7,
            },
            Target {
                host: Host::V6(Ipv6Addr::LOCALHOST),
                port: 65535,
            },
            Target {
                host: Host::Domain("example.org".into()),
                port: 443,
            },
        ] {
            let e = encode_address(&t).unwrap();
            assert_eq!(parse_address(&e).unwrap(), Some((t.clone(), e.len())));
            for i in 0..e.len() {
                assert_eq!(parse_address(&e[..i]).unwrap(), None);
            }
        }
        assert_eq!(
            encode_address(&Target {
                host: Host::V4(Ipv4Addr::new(10, 1, 2, 3)),
                port: 0x1f90
            })
            .unwrap(),
            [1, 10, 1, 2, 3, 0x1f, 0x90]
        );
        assert_eq!(parse_address(&[9]), Err(Error::AddressType(9)));
        assert_eq!(parse_address(&[3, 0]), Err(Error::EmptyDomain));
    }

    #[test]
    fn round_trip_every_cipher() {
        for c in Cipher::ALL {
            let key = Key::from_password(c, b"wirebench");
            let salt = vec![7u8; c.salt_len()];
            let mut e = Encryptor::new(&key, &salt).unwrap();
            let mut wire = Vec::new();
            let data: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
            e.seal(&data, &mut wire);
            assert_eq!(wire.len(), c.salt_len() + Encryptor::sealed_len(data.len()));
            let mut d = Decryptor::new(&key);
            let mut out = Vec::new();
            d.feed(&wire, &mut out).unwrap();
            assert_eq!(out, data);
            assert_eq!(d.chunks(), 3);
            d.finish().unwrap();
        }
    }

    #[test]
    fn nonce_counter_carries() {
        let key = Key::from_password(Cipher::Aes128Gcm, b"x");
        let mut s = Session::new(&key, &[0; 16]).unwrap();
        s.nonce = [0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        s.step();
        assert_eq!(s.nonce, [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn errors_are_clear_and_final() {
        let key = Key::from_password(Cipher::Chacha20IetfPoly1305, b"right");
        let mut e = Encryptor::new(&key, &[1; 32]).unwrap();
        let mut wire = Vec::new();
        e.seal(b"hello", &mut wire);

        let wrong = Key::from_password(Cipher::Chacha20IetfPoly1305, b"wrong");
        let mut d = Decryptor::new(&wrong);
        let r = d.feed(&wire, &mut Vec::new());
        assert_eq!(
            r,
            Err(Error::Tag {
                chunk: 0,
                part: "length"
            })
        );
        assert!(matches!(
            d.feed(b"", &mut Vec::new()),
            Err(Error::Failed(_))
        ));

        let mut altered = wire.clone();
        *altered.last_mut().unwrap() ^= 1;
        let mut d = Decryptor::new(&key);
        assert_eq!(
            d.feed(&altered, &mut Vec::new()),
            Err(Error::Tag {
                chunk: 0,
                part: "payload"
            })
        );

        let mut d = Decryptor::new(&key);
        d.feed(&wire[..wire.len() - 1], &mut Vec::new()).unwrap();
        assert_eq!(d.finish(), Err(Error::Truncated("a chunk's payload")));

        let mut d = Decryptor::any(&[
            Key::from_password(Cipher::Aes128Gcm, b"right"),
            Key::from_password(Cipher::Aes256Gcm, b"right"),
        ]);
        assert_eq!(
            d.feed(&wire, &mut Vec::new()),
            Err(Error::NoCipher { tried: 2 })
        );
    }

    #[test]
    fn oversize_length_is_refused() {
        // A sender that ignores the cap: seal 0x4000 as a length by hand.
        let key = Key::from_password(Cipher::Aes256Gcm, b"p");
        let salt = [3u8; 32];
        let mut s = Session::new(&key, &salt).unwrap();
        let mut len = 0x4000u16.to_be_bytes().to_vec();
        s.seal(&mut len);
        let mut wire = salt.to_vec();
        wire.extend_from_slice(&len);
        let mut d = Decryptor::new(&key);
        assert_eq!(
            d.feed(&wire, &mut Vec::new()),
            Err(Error::Oversize {
                chunk: 0,
                len: 0x4000
            })
        );
    }

    #[test]
    fn any_picks_the_clients_cipher() {
        let keys: Vec<Key> = Cipher::ALL
            .iter()
            .map(|c| Key::from_password(*c, b"pw"))
            .collect();
        for k in &keys {
            let mut e = Encryptor::new(k, &vec![9; k.cipher().salt_len()]).unwrap();
            let mut wire = Vec::new();
            e.seal(b"x", &mut wire);
            let mut d = Decryptor::any(&keys);
            let mut out = Vec::new();
            // Byte by byte: identification must wait for enough of the longest salt.
            for b in &wire {
                d.feed(std::slice::from_ref(b), &mut out).unwrap();
            }
            assert_eq!(out, b"x");
            assert_eq!(d.cipher(), Some(k.cipher()));
        }
    }
}
