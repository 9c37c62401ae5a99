//! The HTML report end to end: a real (loopback) run writes report.html and charts, then
//! headless Chromium opens the page from disk with the network off, and the test fails on
//! console errors, on any request the page makes, or on charts that did not draw. The
//! screenshot is kept at target/tmp/report-screenshot.png for a person to look at.
//! Also: `wirebench report` rebuilds it, `wirebench compare` matches two runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::{run_ok, wirebench};

fn sample_run(dir: &Path) {
    run_ok(&[
        "run",
        "--workload",
        "pingpong",
        "--payload",
        "2,100,1500",
        "--rounds",
        "200",
        "-q",
        "--out",
        dir.to_str().unwrap(),
    ]);
}

fn chromium() -> PathBuf {
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!(
        "chromium is not installed: `bash scripts/test.sh` installs it (apt-get install chromium)"
    );
}

/// Chromium as the machine allows it: no sandbox (root), no GPU, and no background
/// traffic (this machine has no network; those connections would only add noise).
fn headless(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

fn attr(dom: &str, name: &str) -> Option<usize> {
    let at = dom.find(&format!("{name}=\""))? + name.len() + 2;
    dom[at..].split('"').next()?.parse().ok()
}

#[test]
fn report_renders_in_a_real_browser_without_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    sample_run(&dir);
    let html = dir.join("report.html");
    assert!(html.exists(), "run did not write report.html");
    let text = std::fs::read_to_string(&html).unwrap();
    // Self-contained: no fetch of anything outside the file.
    for needle in ["http://", "https://", "src=\"//"] {
        let outside: Vec<&str> = text
            .match_indices(needle)
            .map(|(i, _)| &text[i..(i + 60).min(text.len())])
            .filter(|s| !s.starts_with("http://www.w3.org/"))
            .collect();
        assert!(
            outside.is_empty(),
            "report refers outside itself: {outside:?}"
        );
    }
    let charts: Vec<PathBuf> = std::fs::read_dir(dir.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let svgs = charts
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .count();
    let pngs = charts
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .count();
    assert!(svgs >= 3, "expected charts for 3 payloads, got {svgs}");
    assert_eq!(svgs, pngs, "every chart as SVG and PNG");

    let url = format!("file://{}", html.display());
    let profile = tmp.path().join("profile");
    let out = headless(&profile)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("net::ERR"))
        .collect();
    assert!(console.is_empty(), "browser console: {console:#?}");
    let (n, drawn) = (attr(&dom, "data-charts"), attr(&dom, "data-charts-drawn"));
    assert_eq!(
        n,
        Some(svgs),
        "charts in the page vs files; self-check: {n:?}"
    );
    assert_eq!(
        drawn,
        Some(svgs),
        "charts that drew with a size: {drawn:?} of {svgs}"
    );

    // Cargo's scratch directory for integration tests: inside whatever target directory
    // the build uses (CARGO_TARGET_DIR moves it).
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let out = headless(&profile)
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2600")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot too small"
    );
}

#[test]
fn report_and_compare_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    sample_run(&a);
    sample_run(&b);
    std::fs::remove_file(a.join("report.html")).unwrap();
    let out = run_ok(&["report", a.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("report.html"));
    assert!(a.join("report.html").exists());

    let page = tmp.path().join("cmp.html");
    let out = run_ok(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--all",
        "--threshold",
        "1000%",
        "--html",
        page.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("rtt.p50"), "{text}");
    assert!(text.contains("over 3 matched case(s)"), "{text}");
    // Runs without repeats: the comparison says it cannot judge noise.
    assert!(text.contains("cannot tell noise from change"), "{text}");
    assert!(page.exists());

    // Not a results directory: a clear error, exit code 2.
    let out = wirebench()
        .args(["report", tmp.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no results.jsonl"));
    let out = wirebench()
        .args([
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--threshold",
            "x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threshold"));
}

/// A tmpfs mounted for one test, unmounted however the test ends.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(
            ok,
            "mount tmpfs failed: run the suite as root (bash scripts/test.sh)"
        );
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// Issue #34's fault: the results disk fills during a run. The run stops with one clear
/// line and exit 2, results.jsonl holds only whole records (the cases before the failure),
/// and once the directory is somewhere with room `wirebench report` rebuilds from it.
#[test]
fn a_full_results_disk_stops_the_run_cleanly() {
    // 600 KiB: room for the first case's per-round CSV (about 350 KB) but not the second's.
    let fs = Tmpfs::mount("600k");
    let out_dir = fs.0.path().join("r");
    let out = wirebench()
        .args([
            "run",
            "--workload",
            "pingpong",
            "--rounds",
            "20000",
            "-q",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("No space left on device"))
        .unwrap_or_else(|| panic!("no clear error: {stderr}"));
    assert!(line.contains(out_dir.to_str().unwrap()), "{line}");
    let kept = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    assert!(kept.ends_with('\n'), "a torn last line: {kept}");
    for l in kept.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
    }
    assert!(!kept.is_empty(), "the first case's record was lost");
    let roomy = tempfile::tempdir().unwrap();
    let copy = roomy.path().join("r");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(&out_dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    run_ok(&["report", copy.to_str().unwrap()]);
    assert!(copy.join("report.html").exists());
}
