//! Helpers shared by the binary's end-to-end tests (each test file uses some of them).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

pub fn wirebench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wirebench"))
}

/// Runs the binary and fails the test, with its output, unless it exits 0.
pub fn run_ok(args: &[&str]) -> Output {
    let out = wirebench().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "wirebench {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// The records of a results directory (none if it has no results.jsonl yet).
pub fn records(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .map(|t| {
            t.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// A metric's value; the test fails naming it if the record lacks it.
pub fn m(r: &serde_json::Value, name: &str) -> f64 {
    r["metrics"][name]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {name} in {r}"))
}

/// Lab namespaces created by process `pid`.
pub fn namespaces_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("wb-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}
