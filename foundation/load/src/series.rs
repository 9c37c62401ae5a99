//! Per-interval time series of a session load: counters and HdrHistograms (connect,
//! login, message round trip; nanoseconds, 3 significant digits) for each interval of the
//! run, recorded by every generator worker and merged exactly by adding them.
//!
//! A worker keeps one [`Interval`] open (events are counted in the interval they complete
//! in) and hands each closed one over as a [`Wire`] record (histograms V2-deflate
//! serialized, base64), one JSON line; the parent adds the workers' records of an
//! interval into one ([`Series`]), so the merged histogram of an interval is exactly the
//! sum of the workers' (HdrHistogram addition loses nothing at equal precision).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use std::collections::BTreeMap;
use std::time::Duration;
use wirebench_model::metric::{
    LOAD_CONNECT, LOAD_FAILED, LOAD_FAILED_BY_CAUSE, LOAD_LOGGED_IN, LOAD_LOGIN,
    LOAD_LOGINS_PER_S_MAX, LOAD_MESSAGE, LOAD_PEAK_ACTIVE, LOAD_SESSIONS, MESSAGES_LOST,
    MESSAGES_RECEIVED, MESSAGES_SENT,
};
use wirebench_model::{Key, MetricSpec};

/// Why a session failed, as a user asks about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The connection was refused (nothing listening, or the backlog overflowed).
    Refused,
    /// A step did not complete in time (connect, login, a message's answer).
    Timeout,
    /// The server refused the credentials.
    Auth,
    /// The server sent a stream error (or the client found the stream malformed).
    StreamError,
    /// The connection was reset or closed by the server mid-session.
    Reset,
    /// Anything else (local resource limits, I/O errors).
    Other,
}

impl Cause {
    pub const ALL: [Cause; 6] = [
        Cause::Refused,
        Cause::Timeout,
        Cause::Auth,
        Cause::StreamError,
        Cause::Reset,
        Cause::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Cause::Refused => "refused",
            Cause::Timeout => "timeout",
            Cause::Auth => "auth",
            Cause::StreamError => "stream_error",
            Cause::Reset => "reset",
            Cause::Other => "other",
        }
    }

    fn index(self) -> usize {
        Cause::ALL.iter().position(|c| *c == self).unwrap_or(5)
    }
}

/// The counters of one interval (or of a whole run, summed).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Sessions started (at or after their intended start).
    pub arrivals: u64,
    /// TCP connections established.
    pub connected: u64,
    /// Sessions that completed their login (bound, with presence sent if scripted).
    pub logged_in: u64,
    /// Messages sent and received by the sessions.
    pub sent: u64,
    pub received: u64,
    /// Sessions that left as their script said.
    pub left: u64,
    /// Failed sessions, by [`Cause`] (in [`Cause::ALL`]'s order).
    pub failed: [u64; 6],
    /// Change in sessions logged in and not yet gone during the interval.
    pub active_delta: i64,
}

impl Counts {
    pub fn failures(&self) -> u64 {
        self.failed.iter().sum()
    }

    /// Failures of one cause.
    pub fn failures_of(&self, cause: Cause) -> u64 {
        self.failed[cause.index()]
    }

    fn add(&mut self, o: &Counts) {
        self.arrivals += o.arrivals;
        self.connected += o.connected;
        self.logged_in += o.logged_in;
        self.sent += o.sent;
        self.received += o.received;
        self.left += o.left;
        for (a, b) in self.failed.iter_mut().zip(o.failed) {
            *a += b;
        }
        self.active_delta += o.active_delta;
    }
}

/// Which latency a sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// From the session's intended start to its TCP connection.
    Connect = 0,
    /// From the intended start to the end of its login.
    Login = 1,
    /// From a message's intended send time to its answer (open-loop).
    Message = 2,
}

pub const LATENCY_NAMES: [&str; 3] = ["connect", "login", "message"];
/// The distributions each of [`LATENCY_NAMES`] is recorded as (`load.login.p99`...).
const LATENCY_METRICS: [MetricSpec; 3] = [LOAD_CONNECT, LOAD_LOGIN, LOAD_MESSAGE];

fn new_histogram() -> Histogram<u64> {
    Histogram::<u64>::new(3).unwrap_or_else(|_| unreachable!("3 digits is valid"))
}

/// One interval's counters and histograms.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Interval number from the run's start (0: the first `width`).
    pub index: u64,
    pub counts: Counts,
    pub latency: [Histogram<u64>; 3],
}

impl Interval {
    pub fn new(index: u64) -> Interval {
        Interval {
            index,
            counts: Counts::default(),
            latency: [new_histogram(), new_histogram(), new_histogram()],
        }
    }

    pub fn record(&mut self, which: Latency, d: Duration) {
        // `record` resizes the histogram; 1 ns floor (0 is outside its range).
        let _ = self.latency[which as usize].record((d.as_nanos() as u64).max(1));
    }

    pub fn fail(&mut self, cause: Cause) {
        self.counts.failed[cause.index()] += 1;
    }

    /// Adds another worker's record of the same interval (or any interval, for totals).
    pub fn add(&mut self, o: &Interval) {
        self.counts.add(&o.counts);
        for (a, b) in self.latency.iter_mut().zip(&o.latency) {
            // Both auto-resize, so addition cannot overflow the range.
            let _ = a.add(b);
        }
    }

    pub fn to_wire(&self) -> Wire {
        let mut ser = V2DeflateSerializer::new();
        let hist = self.latency.each_ref().map(|h| {
            let mut buf = Vec::new();
            let _ = ser.serialize(h, &mut buf);
            B64.encode(&buf)
        });
        Wire {
            index: self.index,
            counts: self.counts.clone(),
            hist,
        }
    }

    pub fn from_wire(w: &Wire) -> Result<Interval, String> {
        let mut de = Deserializer::new();
        let mut latency = [new_histogram(), new_histogram(), new_histogram()];
        for (h, text) in latency.iter_mut().zip(&w.hist) {
            let bytes = B64
                .decode(text)
                .map_err(|e| format!("interval {}: histogram is not base64: {e}", w.index))?;
            *h = de
                .deserialize(&mut &bytes[..])
                .map_err(|e| format!("interval {}: bad histogram: {e:?}", w.index))?;
        }
        Ok(Interval {
            index: w.index,
            counts: w.counts.clone(),
            latency,
        })
    }
}

/// An interval as a worker reports it: one JSON line.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Wire {
    pub index: u64,
    pub counts: Counts,
    /// connect, login, message: V2-deflate HdrHistograms in base64.
    pub hist: [String; 3],
}

/// A worker's recorder: the open interval, closed ones handed out as time passes.
#[derive(Debug)]
pub struct Recorder {
    width: Duration,
    current: Interval,
}

impl Recorder {
    pub fn new(width: Duration) -> Recorder {
        Recorder {
            width: width.max(Duration::from_millis(1)),
            current: Interval::new(0),
        }
    }

    /// The interval open at `since_start`, after closing any that ended before it
    /// (`closed` gets each, empty ones included, so a quiet second shows as zero).
    pub fn at(&mut self, since_start: Duration, mut closed: impl FnMut(Interval)) -> &mut Interval {
        let index = (since_start.as_nanos() / self.width.as_nanos()) as u64;
        while self.current.index < index {
            let next = Interval::new(self.current.index + 1);
            closed(std::mem::replace(&mut self.current, next));
        }
        &mut self.current
    }

    /// Closes the open interval (at the end of the run).
    pub fn finish(self) -> Interval {
        self.current
    }
}

/// The merged series: every worker's intervals added up.
#[derive(Debug, Default)]
pub struct Series {
    intervals: BTreeMap<u64, Interval>,
    /// Every interval's counts summed, kept as intervals arrive: progress reads it for
    /// every report, and summing the intervals each time grows with the run (a million
    /// sessions, 67 generators reporting every second: the merging process fell minutes
    /// behind and the generators blocked writing to it).
    counts: Counts,
}

impl Series {
    pub fn new() -> Series {
        Series::default()
    }

    pub fn add(&mut self, i: &Interval) {
        self.counts.add(&i.counts);
        self.intervals
            .entry(i.index)
            .or_insert_with(|| Interval::new(i.index))
            .add(i);
    }

    pub fn intervals(&self) -> impl Iterator<Item = &Interval> {
        self.intervals.values()
    }

    /// Every interval's counts summed (cheap: kept as intervals arrive).
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Every interval summed.
    pub fn totals(&self) -> Interval {
        let mut t = Interval::new(0);
        for i in self.intervals.values() {
            t.add(i);
        }
        t
    }

    /// Sessions active at the end of each interval, and the most at any interval's end.
    pub fn active(&self) -> Vec<(u64, i64)> {
        let mut now = 0i64;
        self.intervals
            .values()
            .map(|i| {
                now += i.counts.active_delta;
                (i.index, now)
            })
            .collect()
    }

    /// The CSV time series: one row per interval, counters and latency percentiles (ms).
    pub fn csv(&self, width: Duration) -> String {
        let mut s = String::from("seconds,active,arrivals,connected,logins,sent,received,left");
        for c in Cause::ALL {
            s.push_str(&format!(",failed_{}", c.name()));
        }
        for n in LATENCY_NAMES {
            s.push_str(&format!(",{n}_p50_ms,{n}_p99_ms,{n}_max_ms"));
        }
        s.push('\n');
        let active = self.active();
        for (i, (_, act)) in self.intervals.values().zip(active) {
            let c = &i.counts;
            let end = (i.index + 1) as f64 * width.as_secs_f64();
            s.push_str(&format!(
                "{end},{act},{},{},{},{},{},{}",
                c.arrivals, c.connected, c.logged_in, c.sent, c.received, c.left
            ));
            for f in c.failed {
                s.push_str(&format!(",{f}"));
            }
            for h in &i.latency {
                if h.is_empty() {
                    s.push_str(",,,");
                } else {
                    let ms = |v: u64| v as f64 / 1e6;
                    s.push_str(&format!(
                        ",{},{},{}",
                        ms(h.value_at_quantile(0.5)),
                        ms(h.value_at_quantile(0.99)),
                        ms(h.max())
                    ));
                }
            }
            s.push('\n');
        }
        s
    }
}

/// The figures of a whole load (or of a merge of shards' loads), from its series: what a
/// case's record holds under `load.*` and `messages.*`, and its histograms. One function
/// for both, so a merged record is computed exactly as an unsharded one.
pub struct Figures {
    /// (name, value, unit), in the record's order.
    pub metrics: Vec<(String, f64, &'static str)>,
    /// (family, histogram of the whole load): `load.connect`, `load.login`, `load.message`.
    pub histograms: Vec<(String, Histogram<u64>)>,
    /// The most sessions active at any interval's end.
    pub peak_active: i64,
}

impl Series {
    /// `sessions`: the sessions scheduled; `width`: the intervals' width.
    pub fn figures(&self, sessions: u64, width: Duration) -> Figures {
        let mut m: Vec<(String, f64, &'static str)> = Vec::new();
        let mut push = |k: Key, v: f64| m.push((k.name().into_owned(), v, k.unit()));
        let t = self.totals();
        let c = &t.counts;
        push(LOAD_SESSIONS.key(), sessions as f64);
        push(LOAD_LOGGED_IN.key(), c.logged_in as f64);
        push(LOAD_FAILED.key(), c.failures() as f64);
        for cause in Cause::ALL {
            push(
                LOAD_FAILED_BY_CAUSE.at(cause.name()),
                c.failures_of(cause) as f64,
            );
        }
        let peak_active = self.active().iter().map(|a| a.1).max().unwrap_or(0);
        push(LOAD_PEAK_ACTIVE.key(), peak_active as f64);
        let best = self
            .intervals()
            .map(|i| i.counts.logged_in)
            .max()
            .unwrap_or(0);
        push(
            LOAD_LOGINS_PER_S_MAX.key(),
            best as f64 / width.as_secs_f64(),
        );
        push(MESSAGES_SENT.key(), c.sent as f64);
        push(MESSAGES_RECEIVED.key(), c.received as f64);
        push(
            MESSAGES_LOST.key(),
            c.sent.saturating_sub(c.received) as f64,
        );
        let mut histograms = Vec::new();
        for (k, name) in LATENCY_NAMES.iter().enumerate() {
            let h = &t.latency[k];
            if h.is_empty() {
                continue;
            }
            let s = |v: u64| v as f64 / 1e9;
            let dist = LATENCY_METRICS[k];
            debug_assert!(dist.name.ends_with(name));
            push(dist.at("p50"), s(h.value_at_quantile(0.5)));
            push(dist.at("p99"), s(h.value_at_quantile(0.99)));
            push(dist.at("max"), s(h.max()));
            // Tsung reports means only: this one is for comparing with it.
            push(dist.at("mean"), h.mean() / 1e9);
            histograms.push((dist.name.to_string(), h.clone()));
        }
        Figures {
            metrics: m,
            histograms,
            peak_active,
        }
    }
}

/// The file a load case writes beside its record, `case-NNNN-rK.load.intervals.jsonl`:
/// a header line, then every interval of the merged series as a [`Wire`] record, one JSON
/// line each. `wirebench merge` adds shards' files interval by interval, so the merged
/// percentiles, over the whole run and per interval, are exact.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct IntervalsHeader {
    /// Format version of this file.
    pub wirebench_load_intervals: u32,
    /// Interval width, ns.
    pub width_ns: u64,
    /// Sessions this run scheduled (its shard's slice when sharded).
    pub sessions: u64,
}

pub const INTERVALS_FORMAT: u32 = 1;

impl Series {
    /// The intervals file's text (see [`IntervalsHeader`]).
    pub fn to_intervals_file(&self, sessions: u64, width: Duration) -> String {
        let header = IntervalsHeader {
            wirebench_load_intervals: INTERVALS_FORMAT,
            width_ns: width.as_nanos() as u64,
            sessions,
        };
        let mut s = serde_json::to_string(&header).unwrap_or_default();
        s.push('\n');
        for i in self.intervals() {
            s.push_str(&serde_json::to_string(&i.to_wire()).unwrap_or_default());
            s.push('\n');
        }
        s
    }

    /// Reads an intervals file: the header and the series. Errors name the line.
    pub fn from_intervals_file(text: &str) -> Result<(IntervalsHeader, Series), String> {
        let mut lines = text.lines().enumerate();
        let header: IntervalsHeader = lines
            .next()
            .ok_or("empty file (no header line)")
            .and_then(|(_, l)| serde_json::from_str(l).map_err(|_| "line 1: not a header"))
            .map_err(str::to_string)?;
        if header.wirebench_load_intervals != INTERVALS_FORMAT {
            return Err(format!(
                "format {} (this wirebench reads format {INTERVALS_FORMAT})",
                header.wirebench_load_intervals
            ));
        }
        let mut series = Series::new();
        for (n, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let w: Wire = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            let i = Interval::from_wire(&w).map_err(|e| format!("line {}: {e}", n + 1))?;
            series.add(&i);
        }
        Ok((header, series))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn recorder_closes_every_interval_up_to_now() {
        let mut r = Recorder::new(Duration::from_secs(1));
        let mut closed = Vec::new();
        r.at(Duration::from_millis(100), |i| closed.push(i))
            .counts
            .arrivals += 1;
        r.at(Duration::from_millis(3500), |i| closed.push(i))
            .counts
            .arrivals += 2;
        assert_eq!(
            closed.iter().map(|i| i.index).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(closed[0].counts.arrivals, 1);
        assert_eq!(closed[1].counts.arrivals, 0);
        let last = r.finish();
        assert_eq!((last.index, last.counts.arrivals), (3, 2));
    }

    #[test]
    fn csv_has_a_row_per_interval_and_running_active() {
        let mut s = Series::new();
        for k in 0..3 {
            let mut i = Interval::new(k);
            i.counts.active_delta = 10;
            i.counts.logged_in = 10;
            i.record(Latency::Login, Duration::from_millis(2));
            s.add(&i);
        }
        let csv = s.csv(Duration::from_secs(1));
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 4);
        assert!(rows[3].starts_with("3,30,0,0,10,"), "{}", rows[3]);
        // p50 of one 2 ms sample, within HdrHistogram's 3 digits.
        assert!(rows[1].contains(",2.00"), "{}", rows[1]);
    }

    proptest! {
        /// An intervals file reads back as the series it was written from.
        #[test]
        fn intervals_files_read_back_exactly(
            samples in proptest::collection::vec((0u64..6, 1u64..10_000_000_000, 0usize..3), 0..200),
            sessions in 0u64..1_000_000,
        ) {
            let mut s = Series::new();
            for (index, ns, kind) in &samples {
                let mut i = Interval::new(*index);
                i.record([Latency::Connect, Latency::Login, Latency::Message][*kind], Duration::from_nanos(*ns));
                i.counts.logged_in += 1;
                s.add(&i);
            }
            let text = s.to_intervals_file(sessions, Duration::from_secs(1));
            let (h, back) = Series::from_intervals_file(&text).unwrap();
            prop_assert_eq!(h.sessions, sessions);
            prop_assert_eq!(h.width_ns, 1_000_000_000);
            prop_assert_eq!(back.intervals().count(), s.intervals().count());
            for (a, b) in s.intervals().zip(back.intervals()) {
                prop_assert_eq!(&a.counts, &b.counts);
                for k in 0..3 {
                    prop_assert_eq!(&a.latency[k], &b.latency[k]);
                }
            }
        }

        /// Whatever a file holds, reading it gives a series or an error, never a panic.
        #[test]
        fn any_text_is_read_or_refused(text in ".{0,400}", lines in proptest::collection::vec(".{0,120}", 0..5)) {
            let mut t = String::from("{\"wirebench_load_intervals\":1,\"width_ns\":1000,\"sessions\":3}\n");
            for l in &lines {
                t.push_str(l);
                t.push('\n');
            }
            let _ = Series::from_intervals_file(&t);
            let _ = Series::from_intervals_file(&text);
        }

        /// Splitting samples over workers and merging their wire records gives exactly the
        /// histogram and counts of recording them all in one place.
        #[test]
        fn merged_workers_equal_one_recorder(
            samples in proptest::collection::vec((0u64..5, 1u64..10_000_000_000, 0usize..3), 0..400),
            workers in 1usize..5,
        ) {
            let mut one = Series::new();
            let mut merged = Series::new();
            let mut per: Vec<BTreeMap<u64, Interval>> = vec![BTreeMap::new(); workers];
            for (n, (index, ns, kind)) in samples.iter().enumerate() {
                let which = [Latency::Connect, Latency::Login, Latency::Message][*kind];
                let mut single = Interval::new(*index);
                single.record(which, Duration::from_nanos(*ns));
                single.counts.sent += 1;
                one.add(&single);
                per[n % workers].entry(*index).or_insert_with(|| Interval::new(*index)).add(&single);
            }
            for w in &per {
                for i in w.values() {
                    let back = Interval::from_wire(&serde_json::from_str(&serde_json::to_string(&i.to_wire()).unwrap()).unwrap()).unwrap();
                    merged.add(&back);
                }
            }
            for (a, b) in one.intervals().zip(merged.intervals()) {
                prop_assert_eq!(a.index, b.index);
                prop_assert_eq!(&a.counts, &b.counts);
                for k in 0..3 {
                    prop_assert_eq!(&a.latency[k], &b.latency[k]);
                }
            }
            prop_assert_eq!(one.totals().latency[1].len(), merged.totals().latency[1].len());
        }
    }
}
