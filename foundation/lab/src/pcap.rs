//! A pcap capture of what crosses the emulated link, readable by tcpdump, tshark and
//! Wireshark. Classic pcap with nanosecond timestamps (magic `0xa1b23c4d`) and link type
//! 101 (LINKTYPE_RAW: bare IPv4/IPv6 packets, which is what a TUN device carries).
//! The format is 40 lines of headers; hand-writing it keeps the hot path allocation-free.
//!
//! A capture never grows past its size limit: the packet that would cross it is not
//! written and nothing after it is (a gap-free prefix is easier to read than a capture
//! with holes). A write error (a full disk) stops the capture the same way; neither stops
//! the link, so the measurement goes on and says what happened to its capture.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LINKTYPE_RAW: u32 = 101;
/// The largest IPv4 packet: nothing is cut.
pub const MAX_SNAPLEN: u32 = 65_535;
/// Without `--pcap-limit`, a capture stops at this size.
pub const DEFAULT_LIMIT: u64 = 200 << 20;
/// The file header.
pub const FILE_HEADER: u64 = 24;
/// Each packet's record header.
pub const RECORD_HEADER: u64 = 16;

/// Where and how much to capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapOptions {
    pub path: PathBuf,
    /// Bytes kept of each packet (the pcap header says so; the original length is kept).
    pub snaplen: u32,
    /// The file never grows beyond this many bytes.
    pub limit: u64,
}

impl PcapOptions {
    /// A full capture (every byte of every packet) up to [`DEFAULT_LIMIT`].
    pub fn new(path: impl Into<PathBuf>) -> PcapOptions {
        PcapOptions {
            path: path.into(),
            snaplen: MAX_SNAPLEN,
            limit: DEFAULT_LIMIT,
        }
    }
}

/// What a capture has written so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PcapStats {
    pub packets: u64,
    /// File size, headers included.
    pub bytes: u64,
    /// Why the capture stopped early, if it did.
    pub stopped: Option<String>,
}

pub struct PcapWriter {
    out: BufWriter<File>,
    path: PathBuf,
    snaplen: u32,
    limit: u64,
    stats: PcapStats,
}

impl PcapWriter {
    pub fn create(opts: &PcapOptions) -> io::Result<PcapWriter> {
        let snaplen = opts.snaplen.clamp(1, MAX_SNAPLEN);
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&opts.path)?);
        out.write_all(&MAGIC_NS.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?; // thiszone
        out.write_all(&0u32.to_le_bytes())?; // sigfigs
        out.write_all(&snaplen.to_le_bytes())?;
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(PcapWriter {
            out,
            path: opts.path.clone(),
            snaplen,
            limit: opts.limit,
            stats: PcapStats {
                bytes: FILE_HEADER,
                ..Default::default()
            },
        })
    }

    /// Appends one packet stamped `unix_ns` (nanoseconds since the Unix epoch). Returns
    /// false if the capture has stopped (now or earlier); see [`PcapWriter::stats`].
    pub fn write(&mut self, unix_ns: u64, pkt: &[u8]) -> bool {
        if self.stats.stopped.is_some() {
            return false;
        }
        let caplen = pkt.len().min(self.snaplen as usize);
        let record = RECORD_HEADER + caplen as u64;
        if self.stats.bytes + record > self.limit {
            self.stop(format!(
                "the capture reached its limit of {} bytes (--pcap-limit)",
                self.limit
            ));
            return false;
        }
        let r = (|| {
            self.out
                .write_all(&((unix_ns / 1_000_000_000) as u32).to_le_bytes())?;
            self.out
                .write_all(&((unix_ns % 1_000_000_000) as u32).to_le_bytes())?;
            self.out.write_all(&(caplen as u32).to_le_bytes())?;
            self.out.write_all(&(pkt.len() as u32).to_le_bytes())?;
            self.out.write_all(&pkt[..caplen])
        })();
        match r {
            Ok(()) => {
                self.stats.packets += 1;
                self.stats.bytes += record;
                true
            }
            Err(e) => {
                self.stop(format!("cannot write {}: {e}", self.path.display()));
                false
            }
        }
    }

    fn stop(&mut self, why: String) {
        let _ = self.out.flush();
        self.stats.stopped = Some(why);
    }

    /// Makes what was written durable; a failure stops the capture.
    pub fn flush(&mut self) {
        if self.stats.stopped.is_none() {
            if let Err(e) = self.out.flush() {
                self.stop(format!("cannot write {}: {e}", self.path.display()));
            }
        }
    }

    pub fn stats(&self) -> &PcapStats {
        &self.stats
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Bytes a capture of `packets` of `size` bytes each takes (record headers included,
/// each packet cut to `snaplen`), for estimates.
pub fn capture_bytes(packets: f64, size: u64, snaplen: u32) -> f64 {
    packets * (RECORD_HEADER + size.min(snaplen as u64)) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(dir: &tempfile::TempDir, snaplen: u32, limit: u64) -> PcapOptions {
        PcapOptions {
            path: dir.path().join("x.pcap"),
            snaplen,
            limit,
        }
    }

    #[test]
    fn layout() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(&dir, MAX_SNAPLEN, DEFAULT_LIMIT);
        {
            let mut w = PcapWriter::create(&o).unwrap();
            assert!(w.write(1_500_000_000_123_456_789, &[0x45, 0, 0, 20]));
            w.flush();
            assert_eq!(w.stats().packets, 1);
            assert_eq!(w.stats().bytes, 24 + 16 + 4);
        }
        let b = std::fs::read(&o.path).unwrap();
        assert_eq!(b.len(), 24 + 16 + 4);
        assert_eq!(&b[0..4], &MAGIC_NS.to_le_bytes());
        assert_eq!(&b[16..20], &65_535u32.to_le_bytes());
        assert_eq!(&b[20..24], &101u32.to_le_bytes());
        assert_eq!(
            u32::from_le_bytes(b[24..28].try_into().unwrap()),
            1_500_000_000
        );
        assert_eq!(
            u32::from_le_bytes(b[28..32].try_into().unwrap()),
            123_456_789
        );
        assert_eq!(&b[40..], &[0x45, 0, 0, 20]);
    }

    #[test]
    fn snaplen_cuts_packets_and_keeps_their_length() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(&dir, 8, DEFAULT_LIMIT);
        let pkt: Vec<u8> = (0..100).collect();
        {
            let mut w = PcapWriter::create(&o).unwrap();
            assert!(w.write(0, &pkt));
            assert!(w.write(0, &pkt[..5]));
            w.flush();
        }
        let b = std::fs::read(&o.path).unwrap();
        assert_eq!(&b[16..20], &8u32.to_le_bytes(), "snaplen in the header");
        let caplen = u32::from_le_bytes(b[32..36].try_into().unwrap());
        let origlen = u32::from_le_bytes(b[36..40].try_into().unwrap());
        assert_eq!((caplen, origlen), (8, 100));
        assert_eq!(&b[40..48], &pkt[..8]);
        // The short packet is kept whole.
        assert_eq!(
            u32::from_le_bytes(b[48 + 8..48 + 12].try_into().unwrap()),
            5
        );
        assert_eq!(b.len(), 24 + (16 + 8) + (16 + 5));
        assert_eq!(capture_bytes(2.0, 100, 8), 48.0);
    }

    #[test]
    fn the_limit_is_never_crossed() {
        let dir = tempfile::tempdir().unwrap();
        // Room for the header and three 100-byte packets, not four.
        let o = opts(&dir, MAX_SNAPLEN, 24 + 3 * 116 + 115);
        let pkt = [0u8; 100];
        let mut w = PcapWriter::create(&o).unwrap();
        for _ in 0..3 {
            assert!(w.write(0, &pkt));
        }
        assert!(!w.write(0, &pkt));
        // A smaller packet that would still fit is not written either: no holes.
        assert!(!w.write(0, &[0u8; 4]));
        w.flush();
        let s = w.stats().clone();
        assert_eq!(s.packets, 3);
        assert!(s.stopped.as_deref().unwrap().contains("limit"), "{s:?}");
        drop(w);
        let len = std::fs::metadata(&o.path).unwrap().len();
        assert_eq!(len, 24 + 3 * 116);
        assert!(len <= o.limit);
    }
}
