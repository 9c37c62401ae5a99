//! The results directory. Every file is replaced atomically (write to a temporary file,
//! fsync, rename), so a crash or Ctrl-C leaves the previous complete version, never a
//! torn one; and both tables are rewritten after each case, so finished cases survive.

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
        Ok(ResultsDir {
            path: path.to_path_buf(),
            records: Vec::new(),
            pivot,
        })
    }

    /// Adds a record and rewrites `results.jsonl` and `results.csv`.
    pub fn append(&mut self, record: Record) -> io::Result<()> {
        self.records.push(record);
        let mut jsonl = Vec::new();
        for r in &self.records {
            serde_json::to_writer(&mut jsonl, r).map_err(io::Error::other)?;
            jsonl.push(b'\n');
        }
        atomic_write(&self.path.join("results.jsonl"), &jsonl)?;
        atomic_write(
            &self.path.join("results.csv"),
            pivot(&self.records, &self.pivot).as_bytes(),
        )
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
