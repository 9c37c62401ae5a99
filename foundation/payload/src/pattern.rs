//! The reference payload both ends of a session derive from its seed, so a receiver checks
//! every byte without a checksum and a sender sends slices of it without copying.

use std::fmt;

/// Period of the offsets at which payload windows start in the pattern.
const WINDOW: usize = 4093;

/// The reference payload bytes of a session: `max_payload + WINDOW` pseudo-random bytes
/// from the seed. The payload of frame `seq` with length `n` is `bytes[off..off + n]` with
/// `off = seq mod 4093`, so a frame delivered under another sequence number, a shifted
/// stream or a flipped byte all show as corrupt.
#[derive(Clone)]
pub struct Pattern {
    bytes: Vec<u8>,
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({} bytes)", self.bytes.len())
    }
}

impl Pattern {
    pub fn new(seed: u64, max_payload: usize) -> Pattern {
        // xorshift64*: fast, and good enough that payloads do not compress.
        let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
        if x == 0 {
            x = 1;
        }
        let len = max_payload + WINDOW;
        let mut bytes = Vec::with_capacity(len + 8);
        while bytes.len() < len {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            bytes.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        bytes.truncate(len);
        Pattern { bytes }
    }

    #[inline]
    pub fn max_payload(&self) -> usize {
        self.bytes.len() - WINDOW
    }

    /// The payload of frame `seq`; `len` must not exceed [`Pattern::max_payload`].
    #[inline]
    pub fn payload(&self, seq: u64, len: usize) -> &[u8] {
        self.part(seq, 0, len)
    }

    /// Bytes `from..from + len` of frame `seq`'s payload, for a decoder that checks a
    /// payload as it arrives in pieces; `from + len` must not exceed the maximum.
    #[inline]
    pub fn part(&self, seq: u64, from: usize, len: usize) -> &[u8] {
        let off = (seq % WINDOW as u64) as usize + from;
        &self.bytes[off..off + len]
    }
}
