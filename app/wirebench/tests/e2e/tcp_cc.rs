//! `tcp.cc`, `tcp.initcwnd` and `tcp.rmem` end to end: the congestion control asked for
//! is the one each record says the data connection used, in a lab, the initial window the
//! one its first TCP_INFO sample shows, and a small receive buffer bounds the stream's
//! throughput; values that cannot be had are refused before anything starts. Needs root
//! (the lab).

use crate::common;
use common::{lab_run_ok, m, records, wirebench};

fn machine_default() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .unwrap()
        .trim()
        .to_string()
}

/// Raw reads its own socket back; HTTP's client socket is hyper's, so its records say
/// what the client host's routes give. The machine's default is left as it was.
#[test]
fn each_record_reports_the_congestion_control_asked_for() {
    let before = machine_default();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let err = lab_run_ok(&[
        "run",
        "--protocol",
        "raw,http",
        "--link",
        "10Mbit/5ms",
        "--tcp-cc",
        "cubic,reno",
        "--workload",
        "stream",
        "--payload",
        "1KiB",
        "--duration",
        "0.3s",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(machine_default(), before, "the machine's default changed");
    // The report draws the raw cases' windows and round trips over time.
    let charts: Vec<String> = std::fs::read_dir(out.join("charts"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for stem in ["tcp-cwnd", "tcp-srtt"] {
        assert!(
            charts.iter().any(|c| c.contains(stem)),
            "{stem}: {charts:?}"
        );
    }

    let recs = records(&out);
    assert_eq!(recs.len(), 4, "{err}");
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        let asked = &r["params"]["tcp.cc"];
        assert_eq!(&r["transport"]["tcp.cc"], asked, "{r}");
        let from = match r["params"]["protocol"].as_str() {
            Some("raw") => "socket",
            _ => "client host route",
        };
        assert_eq!(r["transport"]["tcp.cc.from"], from, "{r}");
        if from == "socket" {
            tcp_info_series_shows_the_link(&out, r);
        } else {
            // No socket of ours to read TCP_INFO from (HTTP's is the library's)...
            assert!(r["series"].get("tcp_info").is_none(), "{r}");
        }
        // ... but the link's own series and one-way delays, whatever the protocol.
        assert!(r["series"]["link"].is_string(), "{r}");
        assert!(
            m(r, "link.one_way.p50") >= 0.005,
            "at least the 5 ms delay: {r}"
        );
    }
}

/// The raw stream's TCP_INFO series (`tcp.info`, 10 ms by default): a row per sample
/// over the 0.3 s stream, whose smoothed round trip is the link's 10 ms at least.
fn tcp_info_series_shows_the_link(out: &std::path::Path, r: &serde_json::Value) {
    let file = r["series"]["tcp_info"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    let text = std::fs::read_to_string(out.join(file)).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..3], ["seconds", "cwnd", "ssthresh"], "{text}");
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() >= 10, "{} samples in 0.3 s: {text}", rows.len());
    let srtt: f64 = rows.last().unwrap()[col("srtt_s")].parse().unwrap();
    assert!(
        (0.009..0.5).contains(&srtt),
        "srtt {srtt} s over a 10 ms round trip"
    );
    let cwnd_max = r["metrics"]["tcp.cwnd_max"]["value"].as_f64().unwrap();
    let cwnd: Vec<f64> = rows
        .iter()
        .map(|x| x[col("cwnd")].parse().unwrap())
        .collect();
    assert_eq!(cwnd.iter().copied().fold(0.0, f64::max), cwnd_max, "{r}");
    assert!(r["metrics"]["tcp.retransmits"]["value"].is_number(), "{r}");
}

/// A name the kernel has no algorithm or module for is refused at planning, naming the
/// ones it has; so is `tcp.cc` without a link, where only the machine's default exists.
#[test]
fn what_cannot_be_had_is_refused_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let run = |extra: &[&str]| {
        let o = wirebench()
            .args(["run", "--workload", "stream", "--payload", "1KiB"])
            .args(["--duration", "0.3s", "--out", out.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--link", "10Mbit/5ms", "--tcp-cc", "nosuch"]);
    assert_eq!(code, Some(2), "{err}");
    let available =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    assert!(
        err.contains("nosuch") && err.contains(available.trim()),
        "{err}"
    );
    let (code, err) = run(&["--tcp-cc", "cubic"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("needs an emulated link"), "{err}");
    let (code, err) = run(&["--tcp-initcwnd", "4"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--tcp-initcwnd 4 needs an emulated link"),
        "{err}"
    );
    let (code, err) = run(&["--link", "10Mbit/5ms", "--tcp-initrwnd", "0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("give 1 to 1000 segments"), "{err}");
    let (code, err) = run(&["--tcp-rmem", "64KiB"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("needs an emulated link"), "{err}");
    let (code, err) = run(&["--link", "10Mbit/5ms", "--tcp-wmem", "1KiB"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("at least 4096 bytes"), "{err}");
    assert!(!out.exists(), "a refused run wrote {}", out.display());
}

/// The initial window both lab hosts' routes carry is the data connection's: over a
/// 100 ms one-way link no ACK can come back before the first samples, so the first one
/// shows the window the route gave the new connection.
#[test]
fn the_initial_window_asked_for_is_the_connections_first() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let err = lab_run_ok(&[
        "run",
        "--link",
        "10Mbit/100ms",
        "--tcp-initcwnd",
        "4,40",
        "--tcp-initrwnd",
        "20",
        "--workload",
        "stream",
        "--payload",
        "16KiB",
        "--duration",
        "0.3s",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 2, "{err}");
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        let asked = r["params"]["tcp.initcwnd"].as_f64().unwrap();
        assert_eq!(r["transport"]["tcp.initcwnd"].as_f64(), Some(asked), "{r}");
        assert_eq!(r["transport"]["tcp.initrwnd"].as_f64(), Some(20.0), "{r}");
        let first = r["metrics"]["tcp.cwnd_first"]["value"].as_f64();
        assert_eq!(first, Some(asked), "{r}");
    }
}

/// A 64 KiB receive buffer caps the window, so over a 300 ms round trip the stream moves
/// at most 64 KiB a round trip (1.75 Mbit/s), where 4 MiB lets it past; the lab hosts'
/// sysctls are read back into the record, and the machine's own stay as they were.
#[test]
fn a_small_receive_buffer_bounds_the_window() {
    let machine = || std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").unwrap();
    let before = machine();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let err = lab_run_ok(&[
        "run",
        "--link",
        "20Mbit/150ms",
        "--tcp-rmem",
        "64KiB,4MiB",
        "--workload",
        "stream",
        "--payload",
        "64KiB",
        "--duration",
        "2s",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(machine(), before, "the machine's tcp_rmem changed");
    let recs = records(&out);
    assert_eq!(recs.len(), 2, "{err}");
    let rate = |r: &serde_json::Value| r["metrics"]["throughput.bits_per_s"]["value"].as_f64();
    let mut by_buffer = std::collections::BTreeMap::new();
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        let asked = r["params"]["tcp.rmem"].as_u64().unwrap();
        assert_eq!(r["transport"]["tcp.rmem"].as_u64(), Some(asked), "{r}");
        by_buffer.insert(asked, rate(r).unwrap());
    }
    let (small, large) = (by_buffer[&65536], by_buffer[&4194304]);
    assert!(small < 64.0 * 1024.0 * 8.0 / 0.3, "64 KiB: {small} bit/s");
    assert!(
        large > 3.0 * small,
        "4 MiB {large} bit/s against 64 KiB {small}"
    );
}
