//! `wirebench merge` (issue #18; docs/cluster.md): the results of a sharded run's shards
//! as one run's. Exact where it can be: each load case's interval files are added
//! interval by interval (counters sum, HdrHistograms add without loss), so the merged
//! percentiles, over the case and per interval, are those of all the shards' samples
//! together, and the record's `load.*` and `messages.*` figures are computed from the
//! merged series by the same function as an unsharded case's
//! ([`wirebench_load::Series::figures`]). The shards' other figures merge by rule (sums,
//! weighted means); one without a rule is kept only when every shard has the same value.
//!
//! Refused, with the reason: directories that are not shards' results, shards of different
//! runs (scenario, plan, seed, repeats, shard count, wirebench version), a shard given
//! twice or missing.

use crate::{FILE as SHARD_FILE, ShardError, ShardFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use wirebench_load::Series;
use wirebench_model::metric::CASE_DURATION;
use wirebench_model::metric::SHARDS_CLOCK_ERROR_MAX;
use wirebench_model::metric::SHARDS_CLOCK_OFFSET_MAX;
use wirebench_model::metric::SHARDS_COUNT;
use wirebench_model::metric::SHARDS_START_MARGIN_MIN;
use wirebench_model::{Merge, Metric, Record, Status};
use wirebench_report::{PivotOptions, ResultsDir, RunInfo};

/// What a merge wrote.
pub struct Merged {
    pub shards: u32,
    pub records: Vec<Record>,
    /// The start facts, in words (one line per case).
    pub starts: Vec<String>,
}

fn usage(m: String) -> ShardError {
    ShardError::Usage(m)
}

fn read_shard(dir: &Path) -> Result<(ShardFile, Vec<Record>), ShardError> {
    let path = dir.join(SHARD_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        usage(format!(
            "{}: {e}: not a shard's results (a run with --shard I/N writes it)",
            path.display()
        ))
    })?;
    let file: ShardFile = serde_json::from_str(&text)
        .map_err(|e| usage(format!("{}: not a shard file: {e}", path.display())))?;
    let records = wirebench_report::html::read_records(dir)?;
    Ok((file, records))
}

/// Merges the shards in `dirs` into `out` (a new directory); `rule_of` is how each metric
/// merges (its declaration's `MetricSpec::merge`; the runner knows the declarations).
pub fn merge(
    dirs: &[PathBuf],
    out: &Path,
    rule_of: &dyn Fn(&str) -> Merge,
) -> Result<Merged, ShardError> {
    if dirs.is_empty() {
        return Err(usage("give the shards' results directories".into()));
    }
    let mut shards: Vec<(PathBuf, ShardFile, Vec<Record>)> = Vec::new();
    for d in dirs {
        let (f, r) = read_shard(d)?;
        shards.push((d.clone(), f, r));
    }
    check_same_run(&shards)?;
    shards.sort_by_key(|s| s.1.index);
    let count = shards[0].1.count;

    let info = RunInfo::read(&shards[0].0).map_err(|e| {
        usage(format!(
            "{}: cannot read run.json: {e}",
            shards[0].0.display()
        ))
    })?;
    let pivot = PivotOptions {
        tables: info.tables.clone(),
        metrics: info.columns.clone(),
    };
    let results_err = |error| ShardError::Results {
        path: out.display().to_string(),
        error,
    };
    let mut dir = ResultsDir::create(out, pivot).map_err(results_err)?;
    info.write(out).map_err(results_err)?;

    // Each shard's records by (case, repeat); the run's order is shard 0's.
    let by_key: Vec<BTreeMap<(usize, u32), &Record>> = shards
        .iter()
        .map(|s| s.2.iter().map(|r| ((r.case, r.repeat), r)).collect())
        .collect();
    let mut keys: Vec<(usize, u32)> = Vec::new();
    for m in &by_key {
        for k in m.keys() {
            if !keys.contains(k) {
                keys.push(*k);
            }
        }
    }
    keys.sort();
    let mut starts = Vec::new();
    for key in keys {
        let parts: Vec<Option<&Record>> = by_key.iter().map(|m| m.get(&key).copied()).collect();
        let words = start_words(&shards, key);
        let record = merge_case(&dir, &shards, key, &parts, &words, rule_of)?;
        starts.push(words);
        dir.append(record).map_err(results_err)?;
    }
    dir.finish().map_err(results_err)?;
    // The shards' own files, start facts included, for whoever asks how they started.
    let all: Vec<&ShardFile> = shards.iter().map(|s| &s.1).collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "shards": all,
        "dirs": shards.iter().map(|s| s.0.display().to_string()).collect::<Vec<_>>(),
    }))
    .map_err(|e| results_err(std::io::Error::other(e)))?;
    std::fs::write(out.join("merge.json"), text).map_err(results_err)?;
    Ok(Merged {
        shards: count,
        records: std::mem::take(&mut dir.records),
        starts,
    })
}

/// Every shard of one run, each once.
fn check_same_run(shards: &[(PathBuf, ShardFile, Vec<Record>)]) -> Result<(), ShardError> {
    let (d0, f0, _) = &shards[0];
    for (d, f, _) in &shards[1..] {
        let differ = |what: &str, a: String, b: String| {
            usage(format!(
                "{} and {} are not shards of one run: {what} {a} and {b}",
                d0.display(),
                d.display()
            ))
        };
        if f.wirebench != f0.wirebench {
            return Err(differ(
                "wirebench",
                f0.wirebench.clone(),
                f.wirebench.clone(),
            ));
        }
        if f.count != f0.count {
            return Err(differ(
                "shard counts",
                f0.count.to_string(),
                f.count.to_string(),
            ));
        }
        if f.scenario != f0.scenario {
            return Err(differ("scenarios", f0.scenario.clone(), f.scenario.clone()));
        }
        if (f.seed, f.repeat) != (f0.seed, f0.repeat) {
            return Err(differ(
                "seed/repeat",
                format!("{}/{}", f0.seed, f0.repeat),
                format!("{}/{}", f.seed, f.repeat),
            ));
        }
        if f.plan != f0.plan {
            let case = f
                .plan
                .iter()
                .zip(&f0.plan)
                .position(|(a, b)| a != b)
                .map_or("the number of cases".to_string(), |i| {
                    format!("case {}", i + 1)
                });
            return Err(usage(format!(
                "{} and {} are not shards of one run: {case} has other parameters",
                d0.display(),
                d.display()
            )));
        }
    }
    let count = f0.count;
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for (d, f, _) in shards {
        if let Some(other) = seen.insert(f.index, d) {
            return Err(usage(format!(
                "shard {} is given twice: {} and {}",
                f.index,
                other.display(),
                d.display()
            )));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(usage(format!(
            "shard(s) {} of {count} missing: every shard's results are needed for an exact merge",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// One case's merged record.
fn merge_case(
    dir: &ResultsDir,
    shards: &[(PathBuf, ShardFile, Vec<Record>)],
    (case, repeat): (usize, u32),
    parts: &[Option<&Record>],
    starts_note: &str,
    rule_of: &dyn Fn(&str) -> Merge,
) -> Result<Record, ShardError> {
    let base = parts
        .iter()
        .flatten()
        .next()
        .copied()
        .ok_or_else(|| usage(format!("case {case}: no shard has it")))?;
    let mut rec = base.clone();
    rec.metrics.clear();
    rec.histograms.clear();
    rec.notes = vec![format!(
        "merged from {} shards by `wirebench merge`",
        shards.len()
    )];
    // A case is whole only if every shard has it whole.
    let mut problems = Vec::new();
    for ((_, f, _), p) in shards.iter().zip(parts) {
        match p {
            None => problems.push((Status::Interrupted, format!("shard {}: no record", f.index))),
            Some(r) if r.status != Status::Ok => problems.push((
                r.status,
                format!(
                    "shard {}: {}",
                    f.index,
                    r.error.as_deref().unwrap_or("not ok")
                ),
            )),
            Some(_) => {}
        }
    }
    if !problems.is_empty() {
        rec.status = if problems.iter().any(|p| p.0 == Status::Failed) {
            Status::Failed
        } else {
            Status::Interrupted
        };
        let words: Vec<String> = problems.into_iter().map(|p| p.1).collect();
        rec.error = Some(format!("not merged: {}", words.join("; ")));
        return Ok(rec);
    }
    let stem = format!("case-{case:04}-r{repeat}");
    // The series: every shard's intervals added.
    let mut series = Series::new();
    let mut sessions = 0;
    let mut width = None;
    for (d, f, _) in shards {
        let path = d.join(format!("{stem}.load.intervals.jsonl"));
        let text = std::fs::read_to_string(&path)
            .map_err(|e| usage(format!("shard {}: {}: {e}", f.index, path.display())))?;
        let (header, s) = Series::from_intervals_file(&text)
            .map_err(|e| usage(format!("{}: {e}", path.display())))?;
        if width.is_some_and(|w| w != header.width_ns) {
            return Err(usage(format!(
                "{}: intervals of another width than shard 0's",
                path.display()
            )));
        }
        width = Some(header.width_ns);
        sessions += header.sessions;
        for i in s.intervals() {
            series.add(i);
        }
    }
    let width = Duration::from_nanos(width.unwrap_or(1_000_000_000));
    let figures = series.figures(sessions, width);
    let duration = parts
        .iter()
        .flatten()
        .filter_map(|r| r.get(CASE_DURATION))
        .map(|m| m.value)
        .fold(0.0, f64::max);
    let started = humantime::parse_rfc3339_weak(&base.started).unwrap_or(SystemTime::now());
    let io = |error| ShardError::Results {
        path: dir.path.display().to_string(),
        error,
    };
    for (family, h) in &figures.histograms {
        let file = dir
            .write_histogram(&stem, family, h, started, Duration::from_secs_f64(duration))
            .map_err(io)?;
        rec.histograms.insert(family.clone(), file.into());
    }
    for (name, v, unit) in &figures.metrics {
        rec.set_metric(name, Metric::new(*v, unit));
    }
    rec.set(CASE_DURATION, duration);
    let recs: Vec<&Record> = parts.iter().flatten().copied().collect();
    merge_other(&mut rec, &recs, rule_of);
    // Where the shards stood at the start.
    let mine: Vec<&crate::CaseStart> = shards
        .iter()
        .filter_map(|s| {
            s.1.starts
                .iter()
                .find(|c| (c.case, c.repeat) == (case, repeat))
        })
        .collect();
    if !mine.is_empty() {
        rec.set(SHARDS_COUNT, shards.len() as f64);
        let margin = mine
            .iter()
            .map(|c| c.start.margin_s)
            .fold(f64::MAX, f64::min);
        rec.set(SHARDS_START_MARGIN_MIN, margin);
        let err = mine
            .iter()
            .filter_map(|c| c.start.error_s)
            .fold(0.0, f64::max);
        rec.set(SHARDS_CLOCK_ERROR_MAX, err);
        let off = mine
            .iter()
            .filter_map(|c| c.start.offset_s)
            .fold(0.0, |a: f64, b| a.max(b.abs()));
        rec.set(SHARDS_CLOCK_OFFSET_MAX, off);
        if margin < 0.0 {
            rec.notes.push(format!(
                "a shard was {:.3} s late for the agreed start: its first sessions started late, which their latencies show",
                -margin
            ));
        }
    }
    rec.notes.push(starts_note.to_string());
    std::fs::write(dir.path.join(format!("{stem}.load.csv")), series.csv(width)).map_err(io)?;
    std::fs::write(
        dir.path.join(format!("{stem}.load.intervals.jsonl")),
        series.to_intervals_file(sessions, width),
    )
    .map_err(io)?;
    Ok(rec)
}

/// The shards' figures that are not in the series, each by its declared [`Merge`] rule:
/// summed, weighted by what they are per, or kept when all agree.
fn merge_other(rec: &mut Record, recs: &[&Record], rule_of: &dyn Fn(&str) -> Merge) {
    let value = |r: &Record, n: &str| r.metric(n).map(|m| m.value);
    let unit = |n: &str| {
        recs.iter()
            .find_map(|r| r.metric(n))
            .map_or(String::new(), |m| m.unit)
    };
    let mut names: Vec<&String> = recs.iter().flat_map(|r| r.metrics.keys()).collect();
    names.sort();
    names.dedup();
    let mut dropped = Vec::new();
    for name in names {
        // Each metric merges by the rule its declaration gives (undeclared: the shards
        // must agree).
        let rule = rule_of(name);
        if rec.metrics.contains_key(name.as_str()) || rule == Merge::OneShard {
            continue;
        }
        let vals: Vec<Option<f64>> = recs.iter().map(|r| value(r, name)).collect();
        let all: Option<Vec<f64>> = vals.iter().copied().collect();
        let Some(all) = all else {
            dropped.push(name.clone());
            continue;
        };
        let merged = match rule {
            Merge::Sum => Some(all.iter().sum()),
            // Weighted by each shard's own count of what the figure is per, over the
            // merged count (rebuilt from the series).
            Merge::WeightedBy(per) => {
                let total = rec.metric(per).map_or(0.0, |m| m.value);
                let sum: f64 = recs
                    .iter()
                    .zip(&all)
                    .map(|(r, v)| v * value(r, per).unwrap_or(0.0))
                    .sum();
                (total > 0.0).then(|| sum / total)
            }
            _ if all.iter().all(|v| *v == all[0]) => Some(all[0]),
            _ => None,
        };
        match merged {
            Some(v) => rec.set_metric(name, Metric::new(v, &unit(name))),
            None => dropped.push(name.clone()),
        }
    }
    if !dropped.is_empty() {
        rec.notes.push(format!(
            "not merged (no rule, and the shards differ): {}",
            dropped.join(", ")
        ));
    }
}

/// How the shards started a case, in words.
fn start_words(shards: &[(PathBuf, ShardFile, Vec<Record>)], key: (usize, u32)) -> String {
    let mut parts = Vec::new();
    let mut method = String::new();
    for (_, f, _) in shards {
        if let Some(c) = f.starts.iter().find(|c| (c.case, c.repeat) == key) {
            method = c.start.method.clone();
            let mut w = format!("shard {}: ready {:.3} s ahead", f.index, c.start.margin_s);
            if let Some(o) = c.start.offset_s {
                w.push_str(&format!(
                    ", clock {:+.6} s from shard 0 (±{:.6})",
                    o,
                    c.start.error_s.unwrap_or(0.0)
                ));
            } else if let Some(e) = c.start.error_s {
                w.push_str(&format!(", kernel's clock error estimate {e:.6} s"));
                if c.start.unsynchronised {
                    w.push_str(" (clock NOT synchronised)");
                }
            }
            parts.push(w);
        }
    }
    format!(
        "case {} start ({method}): {}",
        key.0,
        if parts.is_empty() {
            "no start recorded".to_string()
        } else {
            parts.join("; ")
        }
    )
}
