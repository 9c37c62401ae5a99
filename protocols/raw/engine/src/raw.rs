//! The `raw` protocol: TCP carrying length-prefixed frames.
//!
//! ```text
//! offset  size  field
//! 0       4     length   u32 big-endian: bytes after this field (17 + payload length)
//! 4       1     kind     1 = HELLO (server greeting), 2 = DATA
//! 5       8     seq      u64 big-endian sequence number, 0-based per connection
//! 13      8     sent_ns  u64 big-endian sender's CLOCK_MONOTONIC when the frame was sent
//! 21      N     payload  N bytes of the session's pattern for this seq (see [`Pattern`])
//! ```
//!
//! The payload is not arbitrary: it is a window of a pseudo-random pattern that both ends
//! derive from the session seed, chosen by the frame's sequence number, so the receiver
//! verifies every byte without the sender having to send a checksum and without copying.
//! The decoder is streaming: it verifies payload bytes as they arrive, never needs a whole
//! frame in memory, and separates *incomplete* input (wait) from *invalid* input (error).

pub use wirebench_payload::Pattern;

/// Bytes of header before the payload.
pub const HEADER_LEN: usize = 21;
/// Bytes of header counted by the length field (everything after the length itself).
const LEN_COVERED: u32 = (HEADER_LEN - 4) as u32;

/// Frame kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Sent by the server as soon as it accepts a data connection: the client's "first
    /// byte", which times connection set-up.
    Hello = 1,
    Data = 2,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Hello),
            2 => Some(Kind::Data),
            _ => None,
        }
    }
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub seq: u64,
    pub sent_ns: u64,
    pub payload_len: u32,
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&(self.payload_len + LEN_COVERED).to_be_bytes());
        b[4] = self.kind as u8;
        b[5..13].copy_from_slice(&self.seq.to_be_bytes());
        b[13..21].copy_from_slice(&self.sent_ns.to_be_bytes());
        b
    }

    /// Total bytes of the frame on the stream.
    pub fn frame_len(&self) -> u64 {
        HEADER_LEN as u64 + self.payload_len as u64
    }
}

/// Input that can never become a valid frame: the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame length field {0} is shorter than the 17-byte header it must cover")]
    Short(u32),
    #[error("frame payload of {len} bytes exceeds this session's limit of {max} bytes")]
    TooLarge { len: u32, max: u32 },
    #[error("unknown frame kind {0} (expected 1 = HELLO or 2 = DATA)")]
    UnknownKind(u8),
    #[error("data connection ended in the middle of a frame")]
    Torn,
}

/// A complete frame as reported by the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub header: Header,
    /// The payload differed from the pattern (only when the decoder verifies).
    pub corrupt: bool,
}

/// Streaming decoder: feed it whatever a read returned.
#[derive(Debug)]
pub struct Decoder<'p> {
    max_payload: u32,
    pattern: Option<&'p Pattern>,
    hdr: [u8; HEADER_LEN],
    hdr_len: usize,
    /// Set while inside a payload.
    current: Option<Header>,
    done: u32,
    corrupt: bool,
    /// After an error the stream is unusable; further input is refused.
    failed: Option<FrameError>,
}

impl<'p> Decoder<'p> {
    /// `pattern`: verify payloads against it (its `max_payload` then bounds frames too).
    pub fn new(max_payload: u32, pattern: Option<&'p Pattern>) -> Decoder<'p> {
        let max_payload = match pattern {
            Some(p) => max_payload.min(p.max_payload().min(u32::MAX as usize) as u32),
            None => max_payload,
        };
        Decoder {
            max_payload,
            pattern,
            hdr: [0; HEADER_LEN],
            hdr_len: 0,
            current: None,
            done: 0,
            corrupt: false,
            failed: None,
        }
    }

    /// True when no partial frame is buffered (a clean place for the stream to end).
    pub fn at_boundary(&self) -> bool {
        self.hdr_len == 0 && self.current.is_none()
    }

    /// Consumes all of `input`, calling `on_frame` for each frame completed by it.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        mut on_frame: impl FnMut(Frame),
    ) -> Result<(), FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        while !input.is_empty() {
            match self.current {
                None => {
                    let take = (HEADER_LEN - self.hdr_len).min(input.len());
                    self.hdr[self.hdr_len..self.hdr_len + take].copy_from_slice(&input[..take]);
                    self.hdr_len += take;
                    input = &input[take..];
                    if self.hdr_len < HEADER_LEN {
                        break;
                    }
                    self.hdr_len = 0;
                    let h = match self.parse_header() {
                        Ok(h) => h,
                        Err(e) => {
                            self.failed = Some(e.clone());
                            return Err(e);
                        }
                    };
                    if h.payload_len == 0 {
                        on_frame(Frame {
                            header: h,
                            corrupt: false,
                        });
                    } else {
                        self.current = Some(h);
                        self.done = 0;
                        self.corrupt = false;
                    }
                }
                Some(h) => {
                    let take = ((h.payload_len - self.done) as usize).min(input.len());
                    if let Some(p) = self.pattern {
                        if !self.corrupt {
                            self.corrupt =
                                p.part(h.seq, self.done as usize, take) != &input[..take];
                        }
                    }
                    self.done += take as u32;
                    input = &input[take..];
                    if self.done == h.payload_len {
                        self.current = None;
                        on_frame(Frame {
                            header: h,
                            corrupt: self.corrupt,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn parse_header(&self) -> Result<Header, FrameError> {
        let b = &self.hdr;
        let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if len < LEN_COVERED {
            return Err(FrameError::Short(len));
        }
        let payload_len = len - LEN_COVERED;
        if payload_len > self.max_payload {
            return Err(FrameError::TooLarge {
                len: payload_len,
                max: self.max_payload,
            });
        }
        let kind = Kind::from_u8(b[4]).ok_or(FrameError::UnknownKind(b[4]))?;
        let seq = u64::from_be_bytes(b[5..13].try_into().unwrap_or_default());
        let sent_ns = u64::from_be_bytes(b[13..21].try_into().unwrap_or_default());
        Ok(Header {
            kind,
            seq,
            sent_ns,
            payload_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(p: &Pattern, seq: u64, len: usize) -> Vec<u8> {
        let h = Header {
            kind: Kind::Data,
            seq,
            sent_ns: 1000 + seq,
            payload_len: len as u32,
        };
        let mut v = h.encode().to_vec();
        v.extend_from_slice(p.payload(seq, len));
        v
    }

    #[test]
    fn header_round_trip_and_layout() {
        let h = Header {
            kind: Kind::Hello,
            seq: 7,
            sent_ns: 0x0102030405060708,
            payload_len: 3,
        };
        let b = h.encode();
        assert_eq!(&b[0..4], &20u32.to_be_bytes());
        assert_eq!(b[4], 1);
        assert_eq!(&b[13..21], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(h.frame_len(), 24);
    }

    #[test]
    fn decodes_frames_split_anywhere_and_detects_corruption() {
        let p = Pattern::new(42, 1000);
        let mut stream = Vec::new();
        for seq in 0..5 {
            stream.extend(frame(&p, seq, 100 * seq as usize));
        }
        // Flip one payload byte of frame 3 (header 21 bytes; frames 0..2 are 0,100,200 + headers).
        let off3 = 3 * HEADER_LEN + 300 + HEADER_LEN + 50;
        stream[off3] ^= 0x40;
        for split in [1usize, 2, 7, 21, 22, 64, 4096] {
            let mut d = Decoder::new(1000, Some(&p));
            let mut got = Vec::new();
            for chunk in stream.chunks(split) {
                d.feed(chunk, |f| got.push(f)).unwrap();
            }
            assert!(d.at_boundary());
            let seqs: Vec<u64> = got.iter().map(|f| f.header.seq).collect();
            assert_eq!(seqs, [0, 1, 2, 3, 4], "split {split}");
            let corrupt: Vec<bool> = got.iter().map(|f| f.corrupt).collect();
            assert_eq!(corrupt, [false, false, false, true, false], "split {split}");
        }
    }

    #[test]
    fn payload_under_wrong_seq_is_corrupt() {
        let p = Pattern::new(1, 64);
        let mut f = frame(&p, 5, 64);
        f[5..13].copy_from_slice(&6u64.to_be_bytes());
        let mut d = Decoder::new(64, Some(&p));
        let mut got = None;
        d.feed(&f, |fr| got = Some(fr)).unwrap();
        assert!(got.unwrap().corrupt);
    }

    #[test]
    fn invalid_headers_are_errors_not_waits() {
        let mut d = Decoder::new(10, None);
        let h = Header {
            kind: Kind::Data,
            seq: 0,
            sent_ns: 0,
            payload_len: 11,
        }
        .encode();
        assert_eq!(
            d.feed(&h, |_| {}),
            Err(FrameError::TooLarge { len: 11, max: 10 })
        );
        // The decoder stays failed.
        assert!(d.feed(&[0], |_| {}).is_err());

        let mut d = Decoder::new(10, None);
        let mut h = Header {
            kind: Kind::Data,
            seq: 0,
            sent_ns: 0,
            payload_len: 1,
        }
        .encode();
        h[4] = 9;
        assert_eq!(d.feed(&h, |_| {}), Err(FrameError::UnknownKind(9)));

        let mut d = Decoder::new(10, None);
        let mut h = [0u8; HEADER_LEN];
        h[3] = 3;
        assert_eq!(d.feed(&h, |_| {}), Err(FrameError::Short(3)));
    }

    #[test]
    fn garbage_text_is_refused_quickly() {
        let mut d = Decoder::new(1 << 20, None);
        let r = d.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", |_| {});
        assert!(r.is_err());
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_input(data in proptest::collection::vec(any::<u8>(), 0..512), split in 1usize..64) {
            let p = Pattern::new(3, 256);
            let mut d = Decoder::new(256, Some(&p));
            for c in data.chunks(split) {
                if d.feed(c, |_| {}).is_err() { break; }
            }
        }

        #[test]
        fn round_trips_any_sizes(lens in proptest::collection::vec(0usize..300, 1..20), split in 1usize..100) {
            let p = Pattern::new(9, 300);
            let stream: Vec<u8> = lens.iter().enumerate().flat_map(|(i, l)| frame(&p, i as u64, *l)).collect();
            let mut d = Decoder::new(300, Some(&p));
            let mut got = Vec::new();
            for c in stream.chunks(split) { d.feed(c, |f| got.push(f)).unwrap(); }
            prop_assert_eq!(got.len(), lens.len());
            for (i, f) in got.iter().enumerate() {
                prop_assert_eq!(f.header.seq, i as u64);
                prop_assert_eq!(f.header.payload_len as usize, lens[i]);
                prop_assert!(!f.corrupt);
            }
        }
    }
}
