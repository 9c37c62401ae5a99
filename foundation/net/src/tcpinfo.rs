//! A connection's inside over time: the kernel's `TCP_INFO` (`struct tcp_info` of
//! linux/tcp.h) sampled every few milliseconds on a thread of its own, for a per-case CSV.
//! The congestion window and slow-start threshold are RFC 5681's (in segments), the
//! smoothed RTT and its variation RFC 6298's estimator, the delivery rate the one BBR
//! paces by (draft-cheng-iccrg-delivery-rate-estimation), all as the kernel reports them.

use crate::sock::tcp_info;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The kernel's "no threshold yet" (`TCP_INFINITE_SSTHRESH`): written as an empty cell.
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Samples one sampler keeps at most (an hour at 10 ms, about 40 MB): a longer case's
/// series stops there, and says so.
pub const MAX_SAMPLES: usize = 360_000;

/// One reading of a connection's `TCP_INFO`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Since the sampler started.
    pub at: Duration,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments; `None` before the first loss.
    pub ssthresh: Option<u32>,
    pub srtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    pub delivery_rate_bps: u64,
    pub pacing_rate_bps: u64,
    /// Segments sent and not yet acknowledged (in flight, lost ones included).
    pub unacked: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    pub bytes_acked: u64,
    pub bytes_retrans: u64,
    /// Bytes the application wrote that TCP has not sent yet.
    pub notsent_bytes: u32,
}

impl Sample {
    /// The connection's `TCP_INFO` now, `at` after the sampler's start.
    pub fn read(s: &TcpStream, at: Duration) -> Option<Sample> {
        let i = tcp_info(s)?;
        // The kernel reports rates in bytes per second (u64::MAX: unlimited pacing).
        let bits = |r: u64| r.saturating_mul(8);
        Some(Sample {
            at,
            cwnd: i.tcpi_snd_cwnd,
            ssthresh: (i.tcpi_snd_ssthresh < INFINITE_SSTHRESH).then_some(i.tcpi_snd_ssthresh),
            srtt_us: i.tcpi_rtt,
            rttvar_us: i.tcpi_rttvar,
            min_rtt_us: i.tcpi_min_rtt,
            delivery_rate_bps: bits(i.tcpi_delivery_rate),
            pacing_rate_bps: bits(i.tcpi_pacing_rate),
            unacked: i.tcpi_unacked,
            total_retrans: i.tcpi_total_retrans,
            bytes_acked: i.tcpi_bytes_acked,
            bytes_retrans: i.tcpi_bytes_retrans,
            notsent_bytes: i.tcpi_notsent_bytes,
        })
    }
}

/// The CSV header of [`csv`]: times in seconds, rates in bit/s.
pub const CSV_HEADER: &str = "seconds,cwnd,ssthresh,srtt_s,rttvar_s,min_rtt_s,delivery_rate_bps,pacing_rate_bps,unacked,total_retrans,bytes_acked,bytes_retrans,notsent_bytes";

/// The samples as CSV, [`CSV_HEADER`] first.
pub fn csv(samples: &[Sample]) -> String {
    let mut out = String::with_capacity(samples.len() * 96 + CSV_HEADER.len() + 1);
    out.push_str(CSV_HEADER);
    out.push('\n');
    let s = |us: u32| us as f64 / 1e6;
    for x in samples {
        let ssthresh = x.ssthresh.map(|v| v.to_string()).unwrap_or_default();
        // An unlimited pacing rate reads u64::MAX: left empty rather than 1.5e20.
        let pacing = match x.pacing_rate_bps {
            u64::MAX => String::new(),
            r => r.to_string(),
        };
        out.push_str(&format!(
            "{},{},{ssthresh},{},{},{},{},{pacing},{},{},{},{},{}\n",
            x.at.as_secs_f64(),
            x.cwnd,
            s(x.srtt_us),
            s(x.rttvar_us),
            s(x.min_rtt_us),
            x.delivery_rate_bps,
            x.unacked,
            x.total_retrans,
            x.bytes_acked,
            x.bytes_retrans,
            x.notsent_bytes,
        ));
    }
    out
}

/// What a sampler read: its samples, and whether it stopped at [`MAX_SAMPLES`].
#[derive(Debug, Default)]
pub struct Series {
    pub samples: Vec<Sample>,
    pub truncated: bool,
}

/// Samples a connection's `TCP_INFO` every `every` until [`Sampler::finish`] (or drop).
/// It holds a duplicate of the socket's descriptor, so it never reads a descriptor number
/// the process has reused; finish it before the connection is closed, since the
/// duplicate keeps the socket open until the sampler ends.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Series>>,
}

impl Sampler {
    pub fn start(stream: &TcpStream, every: Duration) -> std::io::Result<Sampler> {
        let s = stream.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let every = every.max(Duration::from_millis(1));
        let thread = std::thread::Builder::new()
            .name("tcp-info".into())
            .spawn(move || {
                let t0 = Instant::now();
                let mut out = Series::default();
                while !flag.load(Ordering::Relaxed) {
                    if out.samples.len() >= MAX_SAMPLES {
                        out.truncated = true;
                        break;
                    }
                    if let Some(x) = Sample::read(&s, t0.elapsed()) {
                        out.samples.push(x);
                    }
                    std::thread::park_timeout(every);
                }
                // One last reading: the connection's state when the case ended.
                if let Some(x) = Sample::read(&s, t0.elapsed()) {
                    out.samples.push(x);
                }
                out
            })?;
        Ok(Sampler {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops sampling and returns what was read.
    pub fn finish(mut self) -> Series {
        self.end()
    }

    fn end(&mut self) -> Series {
        self.stop.store(true, Ordering::Relaxed);
        let Some(t) = self.thread.take() else {
            return Series::default();
        };
        t.thread().unpark();
        t.join().unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    #[test]
    fn a_loopback_transfer_is_sampled_with_its_window_and_round_trip() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 1 << 16];
            let mut n = 0;
            while let Ok(k) = c.read(&mut buf) {
                if k == 0 {
                    break;
                }
                n += k;
            }
            n
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let sampler = Sampler::start(&c, Duration::from_millis(2)).unwrap();
        let chunk = vec![7u8; 1 << 16];
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(60) {
            c.write_all(&chunk).unwrap();
        }
        let series = sampler.finish();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let sent = reader.join().unwrap() as u64;
        let s = &series.samples;
        assert!(s.len() >= 5, "{} samples in 60 ms at 2 ms", s.len());
        assert!(!series.truncated);
        assert!(s.windows(2).all(|w| w[0].at <= w[1].at));
        let last = s.last().unwrap();
        assert!(last.cwnd >= 10, "cwnd {}", last.cwnd);
        assert!(last.srtt_us > 0);
        // What the kernel counts as acknowledged is what the reader got, at most.
        assert!(
            last.bytes_acked > 0 && last.bytes_acked <= sent + 1,
            "{last:?} {sent}"
        );
        let text = csv(s);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_HEADER));
        let cols = CSV_HEADER.split(',').count();
        assert!(lines.all(|l| l.split(',').count() == cols));
    }

    #[test]
    fn a_dropped_sampler_ends_its_thread() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let t0 = Instant::now();
        drop(Sampler::start(&c, Duration::from_secs(60)).unwrap());
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
