//! Pre-agreed link compression: nothing, or one zlib stream (RFC 1950 around RFC 1951
//! deflate) per TCP connection, optionally primed with the preset dictionary of
//! [`crate::dict`].
//!
//! There is no negotiation (XEP-0361 §4.1: everything a handshake would settle is a
//! priori configuration), so the compressed stream starts at the connection's first byte
//! and both ends must be configured alike. A mismatch is still detected at once rather
//! than producing garbage: a zlib stream where plain XML is expected fails the framer's
//! first byte (`0x78` is not `<`), plain XML where zlib is expected fails the zlib
//! header check, and the dictionary is named by its Adler-32 in the zlib header.
//!
//! Every write batch ends with a partial flush (`Z_PARTIAL_FLUSH`, as OpenSSH's
//! compression does): the receiver can decode all of it without waiting for more data,
//! at the cost of an empty fixed-code block (10 bits) per batch. A sync flush would
//! cost an empty stored block instead (3 bits, padding to a byte, 4 bytes), about 4
//! bytes more per batch; at 2400 bit/s with ~20-byte stanzas that is 0.013 s each way.
//! The bits of the last byte not yet complete stay in the compressor and lead the next
//! batch, so batches are not byte-aligned: a receiver must inflate the stream as one
//! (any zlib inflater does) rather than look for the sync marker `00 00 ff ff`. The
//! per-batch cost is why the engine sends one batch per wake-up rather than one per
//! stanza when several stanzas are waiting.
//!
//! Decompression is bounded: each call produces at most the output the caller asks
//! for, so a small "zlib bomb" cannot inflate into unbounded memory before the framer's
//! stanza size limit has looked at it.

use flate2::{Compress, Decompress, FlushCompress, FlushDecompress, Status};

use crate::dict::{DICT, dict_id};

/// Link compression mode; both gateways of a link must use the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Stanzas as plain UTF-8 XML.
    None,
    /// One zlib stream per connection, partial flush per write batch.
    Zlib,
    /// As [`Compression::Zlib`], with the preset dictionary [`crate::dict::DICT`].
    #[default]
    ZlibDict,
}

impl Compression {
    pub const ALL: [Compression; 3] = [Compression::None, Compression::Zlib, Compression::ZlibDict];

    /// The configuration word: `none`, `zlib` or `zlib-dict`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Zlib => "zlib",
            Compression::ZlibDict => "zlib-dict",
        }
    }

    pub fn from_name(s: &str) -> Option<Compression> {
        Compression::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// Why compressed input could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("corrupt zlib stream from the peer: {0}")]
    Corrupt(String),
    #[error(
        "the peer's zlib stream needs a preset dictionary with Adler-32 {got:08x}, this side's \
         is {want:08x}: both gateways must run the same wirebench-x2x dictionary"
    )]
    DictionaryMismatch { want: u32, got: u32 },
    #[error(
        "the peer's zlib stream uses a preset dictionary but compression here is `zlib`: \
         configure the same compression mode on both gateways"
    )]
    UnexpectedDictionary,
    #[error(
        "the peer's zlib stream has no preset dictionary but compression here is `zlib-dict`: \
         configure the same compression mode on both gateways"
    )]
    MissingDictionary,
    #[error("the peer ended its zlib stream and then sent more bytes")]
    AfterEnd,
    #[error("zlib compressor failed: {0}")]
    Compress(String),
}

/// Level 9: stanzas are small, the CPU is idle and link bytes are what is scarce.
const LEVEL: u32 = 9;

/// The sending half of one connection.
pub struct Deflater {
    z: Option<Compress>,
}

impl std::fmt::Debug for Deflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deflater")
            .field("zlib", &self.z.is_some())
            .finish()
    }
}

impl Deflater {
    pub fn new(mode: Compression) -> Result<Deflater, CodecError> {
        let z = match mode {
            Compression::None => None,
            Compression::Zlib => Some(Compress::new(flate2::Compression::new(LEVEL), true)),
            Compression::ZlibDict => {
                let mut c = Compress::new(flate2::Compression::new(LEVEL), true);
                c.set_dictionary(DICT)
                    .map_err(|e| CodecError::Compress(e.to_string()))?;
                Some(c)
            }
        };
        Ok(Deflater { z })
    }

    /// Appends `plain`, compressed and flushed (decodable on its own), to `out`.
    pub fn compress(&mut self, plain: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        let Some(z) = &mut self.z else {
            out.extend_from_slice(plain);
            return Ok(());
        };
        let mut consumed = 0usize;
        loop {
            // A flush is complete only once deflate returns with output space left.
            out.reserve(plain.len() - consumed + 64);
            let before = z.total_in();
            z.compress_vec(
                plain.get(consumed..).unwrap_or(&[]),
                out,
                FlushCompress::Partial,
            )
            .map_err(|e| CodecError::Compress(e.to_string()))?;
            consumed += usize::try_from(z.total_in() - before).unwrap_or(usize::MAX);
            if consumed >= plain.len() && out.len() < out.capacity() {
                return Ok(());
            }
        }
    }
}

/// The receiving half of one connection.
pub struct Inflater {
    z: Option<Decompress>,
    /// In `zlib-dict` mode, until the header asked for the dictionary.
    dict_pending: bool,
    /// Whether this side may supply the dictionary.
    dict_mode: bool,
    ended: bool,
    tmp: Vec<u8>,
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflater")
            .field("zlib", &self.z.is_some())
            .field("dict_pending", &self.dict_pending)
            .finish()
    }
}

impl Inflater {
    pub fn new(mode: Compression) -> Inflater {
        Inflater {
            z: (mode != Compression::None).then(|| Decompress::new(true)),
            dict_pending: mode == Compression::ZlibDict,
            dict_mode: mode == Compression::ZlibDict,
            ended: false,
            tmp: Vec::new(),
        }
    }

    /// Decodes from `input`, appending at most `max_out` bytes to `out`. Returns how many
    /// input bytes were consumed; (0 consumed, nothing appended) means more input is needed.
    pub fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max_out: usize,
    ) -> Result<usize, CodecError> {
        let Some(z) = &mut self.z else {
            let n = input.len().min(max_out);
            out.extend_from_slice(&input[..n]);
            return Ok(n);
        };
        if self.ended {
            return if input.is_empty() {
                Ok(0)
            } else {
                Err(CodecError::AfterEnd)
            };
        }
        self.tmp.resize(max_out, 0);
        let start_in = z.total_in();
        let start_out = z.total_out();
        loop {
            let done_in = usize::try_from(z.total_in() - start_in).unwrap_or(usize::MAX);
            let done_out = usize::try_from(z.total_out() - start_out).unwrap_or(usize::MAX);
            let rest = input.get(done_in..).unwrap_or(&[]);
            let space = &mut self.tmp[done_out.min(max_out)..];
            match z.decompress(rest, space, FlushDecompress::None) {
                Ok(status) => {
                    let done_in = usize::try_from(z.total_in() - start_in).unwrap_or(usize::MAX);
                    let done_out = usize::try_from(z.total_out() - start_out).unwrap_or(usize::MAX);
                    if done_out > 0 && self.dict_pending {
                        return Err(CodecError::MissingDictionary);
                    }
                    out.extend_from_slice(&self.tmp[..done_out.min(max_out)]);
                    if status == Status::StreamEnd {
                        self.ended = true;
                        if done_in < input.len() {
                            return Err(CodecError::AfterEnd);
                        }
                    }
                    return Ok(done_in);
                }
                Err(e) => match e.needs_dictionary() {
                    Some(got) if self.dict_mode && self.dict_pending => {
                        let want = dict_id();
                        if got != want {
                            return Err(CodecError::DictionaryMismatch { want, got });
                        }
                        z.set_dictionary(DICT)
                            .map_err(|e| CodecError::Corrupt(e.to_string()))?;
                        self.dict_pending = false;
                    }
                    Some(_) => return Err(CodecError::UnexpectedDictionary),
                    None => return Err(CodecError::Corrupt(e.to_string())),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(mode: Compression, batches: &[&[u8]], split: usize) -> Vec<u8> {
        let mut d = Deflater::new(mode).unwrap();
        let mut wire = Vec::new();
        for b in batches {
            d.compress(b, &mut wire).unwrap();
        }
        let mut i = Inflater::new(mode);
        let mut out = Vec::new();
        for chunk in wire.chunks(split.max(1)) {
            let mut pos = 0;
            loop {
                let before = out.len();
                let n = i.decompress(&chunk[pos..], &mut out, 7).unwrap();
                pos += n;
                if n == 0 && out.len() == before {
                    break;
                }
            }
            assert_eq!(pos, chunk.len(), "all input consumed");
        }
        out
    }

    #[test]
    fn rfc1950_every_mode_round_trips_at_any_split() {
        let batches: [&[u8]; 3] = [
            b"<message from='a@a.test' to='b@b.test'><body>hi</body></message>",
            b"<presence/>",
            b"<iq type='get' id='1'><ping xmlns='urn:xmpp:ping'/></iq>",
        ];
        let whole: Vec<u8> = batches.concat();
        for mode in Compression::ALL {
            for split in [1, 2, 3, 5, 64, 10_000] {
                assert_eq!(
                    roundtrip(mode, &batches, split),
                    whole,
                    "{mode:?} split {split}"
                );
            }
        }
    }

    #[test]
    fn partial_flush_makes_each_batch_decodable_alone() {
        for mode in [Compression::Zlib, Compression::ZlibDict] {
            let mut d = Deflater::new(mode).unwrap();
            let mut i = Inflater::new(mode);
            for k in 0..200 {
                let msg = format!("<message id='{k}'><body>x{}</body></message>", k * 7919);
                let mut wire = Vec::new();
                d.compress(msg.as_bytes(), &mut wire).unwrap();
                // Exactly what was sent so far decodes to the whole batch: no byte of
                // the next batch is needed (the receiver would otherwise wait for it).
                let mut out = Vec::new();
                let mut pos = 0;
                loop {
                    let before = out.len();
                    pos += i.decompress(&wire[pos..], &mut out, 4096).unwrap();
                    if out.len() == before && pos == wire.len() {
                        break;
                    }
                }
                assert_eq!(out, msg.as_bytes(), "{mode:?} batch {k}");
            }
        }
    }

    #[test]
    fn partial_flush_costs_less_than_sync_flush() {
        let msgs: Vec<String> = (0..100)
            .map(|k| format!("<message id='p{k}'><body>{:02}</body></message>", k % 97))
            .collect();
        let sync: usize = {
            let mut z = Compress::new(flate2::Compression::new(LEVEL), true);
            z.set_dictionary(DICT).unwrap();
            msgs.iter()
                .map(|m| {
                    let mut w = Vec::with_capacity(m.len() + 64);
                    z.compress_vec(m.as_bytes(), &mut w, FlushCompress::Sync)
                        .unwrap();
                    w.len()
                })
                .sum()
        };
        let mut d = Deflater::new(Compression::ZlibDict).unwrap();
        let partial: usize = msgs
            .iter()
            .map(|m| {
                let mut w = Vec::new();
                d.compress(m.as_bytes(), &mut w).unwrap();
                w.len()
            })
            .sum();
        // 4 bytes of stored block and the padding before it, against 10 bits.
        assert!(
            partial + 3 * msgs.len() <= sync,
            "partial {partial} B, sync {sync} B for {} batches",
            msgs.len()
        );
    }

    #[test]
    fn dictionary_shrinks_the_first_stanza() {
        let msg = b"<message from='alice@a.test/wb' to='bob@b.test/wb' type='chat' id='p1'>\
                    <body>xy</body></message>";
        let size = |mode| {
            let mut w = Vec::new();
            Deflater::new(mode).unwrap().compress(msg, &mut w).unwrap();
            w.len()
        };
        assert!(size(Compression::ZlibDict) + 15 < size(Compression::Zlib));
    }

    #[test]
    fn mismatched_modes_are_named() {
        let msg = b"<presence/>";
        let mut with_dict = Vec::new();
        Deflater::new(Compression::ZlibDict)
            .unwrap()
            .compress(msg, &mut with_dict)
            .unwrap();
        let mut plain_zlib = Vec::new();
        Deflater::new(Compression::Zlib)
            .unwrap()
            .compress(msg, &mut plain_zlib)
            .unwrap();
        let mut out = Vec::new();
        let e = Inflater::new(Compression::Zlib)
            .decompress(&with_dict, &mut out, 100)
            .unwrap_err();
        assert_eq!(e, CodecError::UnexpectedDictionary);
        let e = Inflater::new(Compression::ZlibDict)
            .decompress(&plain_zlib, &mut out, 100)
            .unwrap_err();
        assert_eq!(e, CodecError::MissingDictionary);
        let e = Inflater::new(Compression::Zlib)
            .decompress(b"<presence/>", &mut out, 100)
            .unwrap_err();
        assert!(matches!(e, CodecError::Corrupt(_)), "{e}");
        // A different dictionary (forged DICTID in an otherwise valid header).
        let mut forged = with_dict.clone();
        forged[2..6].copy_from_slice(&0x0102_0304u32.to_be_bytes());
        let e = Inflater::new(Compression::ZlibDict)
            .decompress(&forged, &mut out, 100)
            .unwrap_err();
        assert!(
            matches!(
                e,
                CodecError::DictionaryMismatch {
                    got: 0x0102_0304,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn output_is_bounded_per_call() {
        let big = vec![b'a'; 1 << 20];
        let mut d = Deflater::new(Compression::Zlib).unwrap();
        let mut wire = Vec::new();
        d.compress(&big, &mut wire).unwrap();
        assert!(
            wire.len() < 4096,
            "a megabyte of 'a' compresses to {}",
            wire.len()
        );
        let mut i = Inflater::new(Compression::Zlib);
        let mut out = Vec::new();
        i.decompress(&wire, &mut out, 1000).unwrap();
        assert!(out.len() <= 1000);
    }
}
