//! What `wirebench merge` reads from a shard's directory, on arbitrary bytes: a load
//! case's intervals file (JSON lines with base64 HdrHistograms) and `shard.json`; and the
//! `--shard I/N` parser.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = wirebench_load::Series::from_intervals_file(&text);
    let _ = serde_json::from_str::<wirebench_runner::shard::ShardFile>(&text);
    let _ = wirebench_runner::shard::parse_shard(&text);
});
