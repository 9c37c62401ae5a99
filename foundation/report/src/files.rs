//! The results directory. `results.jsonl` grows by one fsynced line per case, so a crash
//! keeps every finished case (at worst a torn last line, which readers skip); files
//! derived from it (`results.csv`) are written when the directory is closed, at the end
//! of a run, on Ctrl-C or on error, and `wirebench report DIR` rebuilds them after a
//! crash. Every other file is replaced atomically (write to a temporary file, fsync,
//! rename), so it is either the old or the new version, never a torn one.

use crate::csv::{PivotOptions, pivot};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use wirebench_model::Record;

/// Writes `data` to `path` so that readers see either the old or the new file.
pub fn atomic_write(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// An output directory accumulating one record per case.
pub struct ResultsDir {
    pub path: PathBuf,
    pub records: Vec<Record>,
    pub pivot: PivotOptions,
    jsonl: fs::File,
    /// Records not yet in `results.csv`.
    stale: bool,
}

impl ResultsDir {
    /// Creates the directory (and parents). Refuses a directory that already holds
    /// results, so an earlier run is never overwritten by accident.
    pub fn create(path: &Path, pivot: PivotOptions) -> io::Result<ResultsDir> {
        if path.join("results.jsonl").exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} already holds results; choose another --out directory",
                    path.display()
                ),
            ));
        }
        fs::create_dir_all(path)?;
        let jsonl = fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path.join("results.jsonl"))?;
        Ok(ResultsDir {
            path: path.to_path_buf(),
            records: Vec::new(),
            pivot,
            jsonl,
            stale: true,
        })
    }

    /// Appends a record to `results.jsonl` and waits until it is on disk: the cost per
    /// case is one line, however long the run.
    pub fn append(&mut self, record: Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(&record).map_err(io::Error::other)?;
        line.push(b'\n');
        // One write of the whole line: O_APPEND keeps it contiguous. A full disk can
        // take part of it; the file is then cut back, so readers never meet a torn line.
        let before = self.jsonl.metadata()?.len();
        if let Err(e) = self
            .jsonl
            .write_all(&line)
            .and_then(|()| self.jsonl.sync_data())
        {
            let _ = self.jsonl.set_len(before);
            return Err(e);
        }
        self.records.push(record);
        self.stale = true;
        Ok(())
    }

    /// Writes the files derived from the records (`results.csv`). Also done, errors
    /// ignored, when the directory is dropped without it.
    pub fn finish(&mut self) -> io::Result<()> {
        write_csv(&self.path, &self.records, &self.pivot)?;
        self.stale = false;
        Ok(())
    }

    /// Writes an HdrHistogram interval log (V2, deflate) of nanosecond samples, values
    /// shown in milliseconds as HdrHistogram's tools expect. Returns the file name.
    pub fn write_histogram(
        &self,
        stem: &str,
        family: &str,
        h: &Histogram<u64>,
        started: SystemTime,
        duration: Duration,
    ) -> io::Result<String> {
        let name = format!("{stem}.{family}.hlog");
        let mut buf = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        {
            let mut w = IntervalLogWriterBuilder::new()
                .add_comment(&format!(
                    "wirebench {} {family} histogram, values in ns",
                    env!("CARGO_PKG_VERSION")
                ))
                .with_start_time(started)
                .with_base_time(started)
                .with_max_value_divisor(1e6)
                .begin_log_with(&mut buf, &mut serializer)?;
            w.write_histogram(h, Duration::ZERO, duration, None)
                .map_err(|e| io::Error::other(format!("{e:?}")))?;
        }
        atomic_write(&self.path.join(&name), &buf)?;
        Ok(name)
    }

    /// Writes per-round values (nanoseconds) as `round,seconds` CSV. Returns the file name.
    /// A case's time series `name` (CSV text) as `{stem}.{name}.csv`; returns the file name.
    pub fn write_series(&self, stem: &str, name: &str, csv: &str) -> io::Result<String> {
        let file = format!("{stem}.{name}.csv");
        atomic_write(&self.path.join(&file), csv.as_bytes())?;
        Ok(file)
    }

    pub fn write_rounds(&self, stem: &str, family: &str, rounds: &[u64]) -> io::Result<String> {
        let name = format!("{stem}.{family}.rounds.csv");
        let mut s = String::with_capacity(rounds.len() * 16 + 16);
        s.push_str("round,seconds\n");
        for (i, v) in rounds.iter().enumerate() {
            s.push_str(&format!("{},{}\n", i + 1, *v as f64 / 1e9));
        }
        atomic_write(&self.path.join(&name), s.as_bytes())?;
        Ok(name)
    }
}

impl Drop for ResultsDir {
    fn drop(&mut self) {
        if self.stale {
            let _ = self.finish();
        }
    }
}

/// `results.csv` of these records: the pivot tables of [`crate::csv`].
pub fn write_csv(dir: &Path, records: &[Record], options: &PivotOptions) -> io::Result<()> {
    atomic_write(&dir.join("results.csv"), pivot(records, options).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn histogram_log_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let rd = ResultsDir::create(dir.path(), PivotOptions::default()).unwrap();
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in [50_000u64, 51_000, 52_000, 1_000_000] {
            h.record(v).unwrap();
        }
        let name = rd
            .write_histogram(
                "case-0001",
                "rtt",
                &h,
                SystemTime::now(),
                Duration::from_secs(1),
            )
            .unwrap();
        let data = fs::read(dir.path().join(name)).unwrap();
        let intervals: Vec<_> = IntervalLogIterator::new(&data)
            .filter_map(|e| match e {
                Ok(LogEntry::Interval(i)) => Some(i.encoded_histogram().to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(intervals.len(), 1);
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&intervals[0])
            .unwrap();
        let mut d = hdrhistogram::serialization::Deserializer::new();
        let back: Histogram<u64> = d.deserialize(&mut &bytes[..]).unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
    }

    #[test]
    fn records_are_appended_and_derived_files_written_on_close() {
        use crate::csv::tests::rec;
        let dir = tempfile::tempdir().unwrap();
        let mut rd = ResultsDir::create(dir.path(), PivotOptions::default()).unwrap();
        for case in 1..=3 {
            rd.append(rec(
                case,
                1,
                &[("payload", case.into())],
                &[("rtt.p50", 0.1)],
            ))
            .unwrap();
            // Each finished case is on disk as it ends.
            let text = fs::read_to_string(dir.path().join("results.jsonl")).unwrap();
            assert_eq!(text.lines().count(), case);
        }
        assert!(!dir.path().join("results.csv").exists());
        drop(rd);
        let csv = fs::read_to_string(dir.path().join("results.csv")).unwrap();
        assert!(csv.contains("rtt.p50"), "{csv}");
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_other_bad_lines_are_errors() {
        use crate::csv::tests::rec;
        let dir = tempfile::tempdir().unwrap();
        let mut rd = ResultsDir::create(dir.path(), PivotOptions::default()).unwrap();
        rd.append(rec(1, 1, &[], &[("rtt.p50", 0.1)])).unwrap();
        rd.append(rec(2, 1, &[], &[("rtt.p50", 0.2)])).unwrap();
        drop(rd);
        let path = dir.path().join("results.jsonl");
        let whole = fs::read_to_string(&path).unwrap();
        // A crash in the middle of the second line.
        fs::write(&path, &whole[..whole.len() - 20]).unwrap();
        let got = crate::html::read_records(dir.path()).unwrap();
        assert_eq!(got.len(), 1);
        // Garbage in the middle is not a torn line.
        fs::write(&path, format!("{{oops\n{whole}")).unwrap();
        assert!(crate::html::read_records(dir.path()).is_err());
    }

    #[test]
    fn refuses_to_overwrite_results_and_writes_atomically() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("results.jsonl"), "x").unwrap();
        assert!(ResultsDir::create(dir.path(), PivotOptions::default()).is_err());
        let p = dir.path().join("f.txt");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".tmp-")
            })
            .collect();
        assert!(leftovers.is_empty());
    }
}
