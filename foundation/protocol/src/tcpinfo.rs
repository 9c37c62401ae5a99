//! The `tcp.info` series for workloads that hold their data connection's socket: its
//! TCP_INFO sampled while the case runs ([`wirebench_net::tcpinfo`]), written beside the
//! record as `<case>.tcp_info.csv`, with the first and the largest congestion window and
//! the retransmissions as metrics.

use crate::params::TCP_INFO;
use crate::{Case, Outcome};
use std::net::TcpStream;
use std::time::Duration;
use wirebench_model::metric::{TCP_CWND_FIRST, TCP_CWND_MAX, TCP_RETRANSMITS};
use wirebench_net::tcpinfo::{MAX_SAMPLES, Sampler, csv};

/// The series' name in the record (`series.tcp_info`).
pub const SERIES: &str = "tcp_info";

/// The case's `tcp.info` interval; `None`: off.
pub fn interval(case: &Case) -> Option<Duration> {
    case.duration(&TCP_INFO).filter(|d| !d.is_zero())
}

/// Sampling every `every` ([`interval`]); `Err` with the reason when it was asked and
/// cannot start, `Ok(None)` when it is off.
pub fn start(every: Option<Duration>, stream: &TcpStream) -> Result<Option<Sampler>, String> {
    match every {
        Some(every) => Sampler::start(stream, every)
            .map(Some)
            .map_err(|e| format!("tcp.info: the TCP_INFO sampler did not start: {e}")),
        _ => Ok(None),
    }
}

/// Ends the sampling and records what it read in `out`; a sampler that did not start
/// leaves its reason as a note.
pub fn record(out: &mut Outcome, sampler: Result<Option<Sampler>, String>) {
    let series = match sampler {
        Ok(Some(s)) => s.finish(),
        Ok(None) => return,
        Err(why) => {
            out.notes.push(why);
            return;
        }
    };
    let samples = &series.samples;
    if let Some(first) = samples.first() {
        // The initial window only while nothing was acknowledged: on a fast path the
        // first ACK may come before the first sample.
        if first.bytes_acked <= 1 {
            out.put(TCP_CWND_FIRST, first.cwnd as f64);
        }
    }
    if let Some(max) = samples.iter().map(|s| s.cwnd).max() {
        out.put(TCP_CWND_MAX, max as f64);
    }
    if let Some(last) = samples.last() {
        out.put(TCP_RETRANSMITS, last.total_retrans as f64);
    }
    if series.truncated {
        out.notes.push(format!(
            "tcp.info: the series stops after {MAX_SAMPLES} samples; a longer interval samples the whole case"
        ));
    }
    out.series.push((SERIES.into(), csv(samples)));
}
