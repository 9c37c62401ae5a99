//! A pcap capture of what crosses the emulated link, readable by tcpdump, tshark and
//! Wireshark. Classic pcap with nanosecond timestamps (magic `0xa1b23c4d`) and link type
//! 101 (LINKTYPE_RAW: bare IPv4/IPv6 packets, which is what a TUN device carries).
//! The format is 40 lines of headers; hand-writing it keeps the hot path allocation-free.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LINKTYPE_RAW: u32 = 101;
const SNAPLEN: u32 = 65_535;

pub struct PcapWriter {
    out: BufWriter<File>,
}

impl PcapWriter {
    pub fn create(path: &Path) -> io::Result<PcapWriter> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(&MAGIC_NS.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?; // thiszone
        out.write_all(&0u32.to_le_bytes())?; // sigfigs
        out.write_all(&SNAPLEN.to_le_bytes())?;
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(PcapWriter { out })
    }

    /// Appends one packet stamped `unix_ns` (nanoseconds since the Unix epoch).
    pub fn write(&mut self, unix_ns: u64, pkt: &[u8]) -> io::Result<()> {
        let caplen = pkt.len().min(SNAPLEN as usize);
        self.out
            .write_all(&((unix_ns / 1_000_000_000) as u32).to_le_bytes())?;
        self.out
            .write_all(&((unix_ns % 1_000_000_000) as u32).to_le_bytes())?;
        self.out.write_all(&(caplen as u32).to_le_bytes())?;
        self.out.write_all(&(pkt.len() as u32).to_le_bytes())?;
        self.out.write_all(&pkt[..caplen])
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let dir = std::env::temp_dir().join(format!("wb-pcap-test-{}", std::process::id()));
        {
            let mut w = PcapWriter::create(&dir).unwrap();
            w.write(1_500_000_000_123_456_789, &[0x45, 0, 0, 20])
                .unwrap();
            w.flush().unwrap();
        }
        let b = std::fs::read(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(b.len(), 24 + 16 + 4);
        assert_eq!(&b[0..4], &MAGIC_NS.to_le_bytes());
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
}
