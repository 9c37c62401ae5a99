//! The `wirebench` binary end to end on loopback: serve + run, results files, and the
//! bad-input cases a user can hit.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{records, run_ok, wirebench};

/// `wirebench serve` on an ephemeral port; killed on drop.
struct Served {
    child: Child,
    addr: String,
}

impl Served {
    fn start() -> Served {
        let mut child = wirebench()
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let addr = first
            .split_whitespace()
            .find(|w| w.starts_with("127.0.0.1:"))
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .to_string();
        // Keep draining the log so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Served { child, addr }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_and_run_a_grid_end_to_end() {
    let server = Served::start();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = run_ok(&[
        "run",
        "--server",
        &server.addr,
        "--out",
        out.to_str().unwrap(),
        "--workload",
        "pingpong,stream",
        "--mode",
        "oneway,echo",
        "--payload",
        "2,1500",
        "--rounds",
        "20",
        "--count",
        "500",
        "--repeat",
        "2",
        "--json",
    ]);
    // pingpong: 2 payloads; stream: 2 modes x 2 payloads; each twice.
    let recs = records(&out);
    assert_eq!(recs.len(), 12);
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        stdout.lines().count(),
        12,
        "--json prints one record per case run"
    );
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["schema"], 1);
        assert!(r["host"]["cpus"].as_u64().unwrap() >= 1);
        assert!(r["command"].as_array().unwrap().len() > 3);
        let m = &r["metrics"];
        assert_eq!(m["messages.lost"]["value"], 0.0);
        assert_eq!(m["messages.corrupt"]["value"], 0.0);
        assert_eq!(m["messages.received"]["value"], m["messages.sent"]["value"]);
        match r["params"]["workload"].as_str().unwrap() {
            "pingpong" => {
                assert!(
                    r["params"].get("mode").is_none(),
                    "mode does not apply to pingpong"
                );
                assert_eq!(m["rtt.p50"]["unit"], "s");
                for k in [
                    "rtt.first",
                    "rtt.stable",
                    "rtt.p90",
                    "rtt.p99",
                    "rtt.max",
                    "connect.time",
                ] {
                    assert!(m[k]["value"].as_f64().unwrap() > 0.0, "{k} in {r}");
                }
                let hlog = out.join(r["histograms"]["rtt"].as_str().unwrap());
                let text = std::fs::read_to_string(hlog).unwrap();
                assert!(
                    text.contains("#[StartTime:"),
                    "HdrHistogram interval log header"
                );
            }
            _ => {
                assert_eq!(m["throughput.bits_per_s"]["unit"], "bit/s");
                assert!(m["throughput.messages_per_s"]["value"].as_f64().unwrap() > 0.0);
            }
        }
    }
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(
        csv.contains("rtt.p50 [min],s,"),
        "repeats give min/max rows:\n{csv}"
    );
}

#[test]
fn default_run_uses_the_embedded_server() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    // The default scenario with small counts so the test stays quick.
    let o = run_ok(&[
        "run",
        "--rounds",
        "50",
        "--count",
        "200",
        "--out",
        out.to_str().unwrap(),
    ]);
    let table = String::from_utf8(o.stdout).unwrap();
    // Headers may be stacked ("stable" over "RTT") to fit the width.
    assert!(
        table.contains("stable") && table.contains("throughput"),
        "{table}"
    );
    assert_eq!(records(&out).len(), 6);
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(
        csv.contains(
            "table,workload=pingpong\nmetric,unit,payload=64,payload=1500,payload=64KiB\n"
        ),
        "{csv}"
    );
}

#[test]
fn malformed_scenario_names_file_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\n\n[params]\nworkload = \"pingpong\"\npayload = [2, \"10XB\"]\n",
    )
    .unwrap();
    let o = wirebench()
        .args(["run", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains(&format!("{}:5: params.payload:", file.display())),
        "{err}"
    );
    assert!(err.contains("10XB"), "{err}");
}

#[test]
fn unknown_workload_and_protocol_list_the_valid_ones() {
    let o = wirebench()
        .args(["run", "--workload", "flood"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("--workload") && err.contains("pingpong, stream"),
        "{err}"
    );
    let o = wirebench()
        .args(["run", "--protocol", "smtp"])
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("--protocol") && err.contains("raw"), "{err}");
    let o = wirebench()
        .args(["run", "no-such-scenario"])
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("built-in scenarios: default"), "{err}");
}

#[test]
fn unreachable_server_fails_fast_naming_the_address() {
    // A port nobody listens on: refused at once.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let t = Instant::now();
    let o = wirebench()
        .args(["run", "--server", &addr])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(t.elapsed() < Duration::from_secs(6));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains(&addr) && err.contains("cannot reach"), "{err}");

    // Something that accepts but never answers: the hello times out within 5 s.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let t = Instant::now();
    let o = wirebench()
        .args(["run", "--server", &addr])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains(&addr) && err.contains("did not answer"),
        "{err}"
    );
}

#[test]
fn garbage_on_the_control_port_closes_only_that_connection() {
    let server = Served::start();
    let mut bad = TcpStream::connect(&server.addr).unwrap();
    let mut good = TcpStream::connect(&server.addr).unwrap();
    bad.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reply = String::new();
    bad.read_to_string(&mut reply).unwrap(); // returns only once the server closed it
    assert!(
        reply.contains("\"ok\":false") && reply.contains("bad control request"),
        "{reply}"
    );

    // An over-long line without a newline is refused too.
    let mut long = TcpStream::connect(&server.addr).unwrap();
    let _ = long.write_all(&vec![b'x'; 70 * 1024]);
    long.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reply = String::new();
    let _ = long.read_to_string(&mut reply);
    assert!(reply.contains("longer than"), "{reply}");

    // The connection opened before the garbage still works, and so do new runs.
    good.write_all(b"{\"op\":\"hello\",\"version\":1,\"client\":\"test\"}\n")
        .unwrap();
    let mut line = String::new();
    BufReader::new(&good).read_line(&mut line).unwrap();
    assert!(line.contains("\"ok\":true"), "{line}");
    let tmp = tempfile::tempdir().unwrap();
    run_ok(&[
        "run",
        "--server",
        &server.addr,
        "--workload",
        "pingpong",
        "--payload",
        "10",
        "--rounds",
        "10",
        "--out",
        tmp.path().join("o").to_str().unwrap(),
    ]);
}

#[test]
fn serve_stops_cleanly_on_sigterm_and_ctrl_c() {
    let tmp = tempfile::tempdir().unwrap();
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut server = Served::start();
        // A session in its think time must not hold the server up.
        let mut run = wirebench()
            .args([
                "run",
                "--server",
                &server.addr,
                "--think",
                "30s",
                "--rounds",
                "2",
            ])
            .args(["--workload", "pingpong", "--quiet", "--no-report"])
            .current_dir(tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        let t0 = Instant::now();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(server.child.id() as i32, signal) };
        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            if let Some(s) = server.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "serve ignored signal {signal}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "signal {signal}");
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        let _ = run.kill();
        let _ = run.wait();
    }
}

#[test]
fn interrupt_keeps_finished_cases() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    // Three quick cases, then three that take 10 s each: SIGINT lands in the fourth.
    let file = tmp.path().join("slow.toml");
    std::fs::write(&file, "[params]\nworkload = \"pingpong\"\nthink = [\"0\", \"1s\"]\npayload = [1, 2, 3]\nrounds = 10\n").unwrap();
    let mut child = wirebench()
        .args([
            "run",
            file.to_str().unwrap(),
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !out.join("results.jsonl").exists() || records(&out).len() < 3 {
        assert!(Instant::now() < deadline, "first cases never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Into the fourth case (10 s long): a signal between two cases leaves no case in
    // flight to record as interrupted.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let recs = records(&out);
    assert!(recs.len() >= 4, "{recs:?}");
    assert!(recs[..3].iter().all(|r| r["status"] == "ok"));
    assert_eq!(recs.last().unwrap()["status"], "interrupted");
    assert!(
        recs.iter().filter(|r| r["status"] == "ok").count() < 6,
        "the run stopped early"
    );
}

/// The text after `wirebench: error: ` with the test failing unless the exit code is 2.
fn usage_error(args: &[&str]) -> String {
    let o = wirebench().args(args).output().unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(2), "wirebench {args:?}: {err}");
    err
}

#[test]
fn errors_print_their_cause_once() {
    // An I/O cause (connection refused) inside a network error.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let o = wirebench()
        .args(["run", "--server", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.matches("os error").count(), 1, "{err}");

    // A JSON cause inside a report error.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("results.jsonl"), "garbage\n").unwrap();
    let err = usage_error(&["report", tmp.path().to_str().unwrap()]);
    assert!(
        err.contains("line 1: not a wirebench result record"),
        "{err}"
    );
    assert_eq!(err.matches("expected value").count(), 1, "{err}");

    // A unit error inside a link spec error.
    let err = usage_error(&["shell", "--link", "rate=fast", "--", "true"]);
    assert_eq!(err.matches("expected a number").count(), 1, "{err}");
}

#[test]
fn bad_values_are_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let out = out.to_str().unwrap();
    for (args, expected) in [
        (
            &["--rounds", "0"][..],
            "command line: --rounds: \"0\" is not allowed: a ping-pong case needs at least 1 round trip",
        ),
        (
            &["--workload", "stream", "--count", "0"],
            "command line: --count: \"0\" is not allowed: a stream case needs at least 1 message",
        ),
        (
            &["--payload", "2,0"],
            "command line: --payload: \"0\" is not allowed: a message needs at least 1 byte of payload",
        ),
        (
            &["--payload", "1GiB"],
            "--payload 1GiB: above the embedded server's limit of 16MiB",
        ),
        (
            &["--payload", "5GiB"],
            "command line: --payload: \"5GiB\" is not allowed: a raw frame carries at most",
        ),
        (
            &["--link-mtu", "0"],
            "command line: --link-mtu: \"0\" is not allowed: must be from 68 to 65535 bytes",
        ),
        (&["--timeout", "0"], "--timeout 0: must be longer than 0"),
        (&["--repeat", "0"], "--repeat 0: must be at least 1"),
    ] {
        let mut all = vec!["run", "--out", out];
        all.extend_from_slice(args);
        let err = usage_error(&all);
        assert!(
            err.starts_with(&format!("wirebench: error: {expected}")),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "one sentence: {err}");
    }
    assert!(!std::path::Path::new(out).exists(), "nothing ran");

    // The same checks in a scenario file, with its line and key.
    let file = tmp.path().join("zero.toml");
    std::fs::write(
        &file,
        "[params]\nworkload = \"stream\"\n\ncount = [10, 0]\n",
    )
    .unwrap();
    let err = usage_error(&["run", file.to_str().unwrap(), "--out", out]);
    assert!(
        err.contains(&format!(
            "{}:4: params.count: \"0\" is not allowed",
            file.display()
        )),
        "{err}"
    );
    std::fs::write(&file, "[params]\npayload = \"32MiB\"\n").unwrap();
    let err = usage_error(&["run", file.to_str().unwrap(), "--out", out]);
    assert!(
        err.contains("params.payload 32MiB: above the embedded server's limit of 16MiB"),
        "{err}"
    );
    assert!(!std::path::Path::new(out).exists(), "nothing ran");
}

/// What a case would refuse at its start is refused by the plan: `--dry-run` exits 2 as
/// the run does, and neither creates the results directory.
#[test]
fn dry_run_refuses_what_the_run_would() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let out = out.to_str().unwrap();
    let pingpong = ["--workload", "pingpong", "--payload", "64"];
    for (args, expected) in [
        (
            &[
                "--protocol",
                "http",
                "--target",
                "127.0.0.1:9",
                "--link",
                "1Mbit/5ms",
            ][..],
            "case 1: target=127.0.0.1:9 in a run with an emulated link: the link joins the \
             lab's own two hosts and cannot be put in front of a server running outside them; \
             drop the link parameters to measure 127.0.0.1:9 on loopback, or set target=builtin",
        ),
        (
            &[
                "--protocol",
                "http",
                "--connections",
                "20",
                "--rounds",
                "10",
            ],
            "case 1: connections=20 is more than rounds=10",
        ),
        (
            &["--pcap", "x.pcap"],
            "--pcap needs an emulated link (--link ...)",
        ),
    ] {
        for dry in [true, false] {
            let mut all = vec!["run", "--out", out];
            all.extend_from_slice(&pingpong);
            all.extend_from_slice(args);
            all.extend(dry.then_some("--dry-run"));
            let err = usage_error(&all);
            assert!(
                err.starts_with(&format!("wirebench: error: {expected}")),
                "{all:?}: {err}"
            );
        }
    }
    assert!(!std::path::Path::new(out).exists(), "nothing ran");
}

/// An option no protocol of the run reads is refused, not noted and dropped: the run
/// would measure something else than asked.
#[test]
fn an_option_of_other_protocols_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let out = out.to_str().unwrap();
    for (flag, value) in [("--connections", "4"), ("--target", "127.0.0.1:9")] {
        for dry in [true, false] {
            let mut all = vec!["run", "--out", out, "--protocol", "mqtt", flag, value];
            all.extend(dry.then_some("--dry-run"));
            let err = usage_error(&all);
            assert!(
                err.starts_with(&format!(
                    "wirebench: error: {flag} does not apply to mqtt: it applies only to"
                )) && err.contains("cases of http"),
                "{all:?}: {err}"
            );
        }
    }
    assert!(!std::path::Path::new(out).exists(), "nothing ran");
    // At its default it changes nothing: a note, and the run goes on.
    let o = run_ok(&[
        "run",
        "--protocol",
        "mqtt",
        "--connections",
        "1",
        "--dry-run",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("note: --connections is ignored"), "{err}");
}

#[test]
fn a_server_given_with_server_refuses_large_payloads_per_case() {
    // Its limit is only known when it answers: the case fails, saying why.
    let server = Served::start();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = wirebench()
        .args(["run", "--server", &server.addr, "--no-report", "--out"])
        .arg(&out)
        .args([
            "--workload",
            "pingpong",
            "--rounds",
            "1",
            "--payload",
            "32MiB",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let recs = records(&out);
    assert_eq!(recs[0]["status"], "failed");
    let error = recs[0]["error"].as_str().unwrap();
    assert!(
        error.contains("exceeds this server's limit of 16777216 bytes"),
        "{error}"
    );
}

#[test]
fn columns_must_match_a_known_metric() {
    let err = usage_error(&["run", "--columns", "rtt.*,nosuch.*"]);
    assert!(
        err.starts_with("wirebench: error: --columns: \"nosuch.*\" matches no metric; metrics: ")
            && err.contains("rtt.*, throughput.*"),
        "{err}"
    );
    let err = usage_error(&["run", "--columns", "rt.*"]);
    assert!(err.contains("(did you mean `rtt.*`?)"), "{err}");
    let err = usage_error(&["run", "--columns", "rtt.p5"]);
    assert!(err.contains("(did you mean `rtt.p50`?)"), "{err}");
}

#[test]
fn every_metric_a_run_records_is_known_to_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--workload",
        "pingpong,stream",
        "--mode",
        "oneway,echo",
        "--rounds",
        "5",
        "--count",
        "20",
        "--payload",
        "10",
        "--no-report",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    for r in records(&out) {
        for name in r["metrics"].as_object().unwrap().keys() {
            assert!(
                wirebench_runner::metrics::spec(name).is_some(),
                "{name} is declared by nobody (wirebench_model::metric::SHARED or a plugin)"
            );
        }
    }
}

#[test]
fn addresses_are_parsed_with_clear_errors() {
    let err = usage_error(&["serve", "--listen", "127.0.0.1:99999"]);
    assert_eq!(
        err.trim(),
        "wirebench: error: --listen \"127.0.0.1:99999\": port 99999 is out of range (0 to 65535; 0 picks a free port)"
    );
    let err = usage_error(&["run", "--server", "127.0.0.1:99999"]);
    assert!(
        err.contains("--server \"127.0.0.1:99999\": port 99999 is out of range (1 to 65535)"),
        "{err}"
    );
    let err = usage_error(&["run", "--server", "::1:7420:x"]);
    assert!(
        err.contains("port \"x\" is not a number") || err.contains("brackets"),
        "{err}"
    );
    let err = usage_error(&["serve", "--listen", "[::1"]);
    assert!(err.contains("no ] after the IPv6 address"), "{err}");
    let err = usage_error(&["run", "--server", "fe80::1:7420"]);
    // A bare IPv6 address takes the default port, so this is [fe80::1:7420]:7420 and
    // fails to connect; the error must name that address, not a mangled one.
    assert!(err.contains("[fe80::1:7420]:7420"), "{err}");
}

#[test]
fn unknown_commands_get_a_suggestion() {
    for (args, expected) in [
        (
            &["rn"][..],
            "wirebench: unknown command 'rn'; did you mean 'run'?\n",
        ),
        (
            &["srve"],
            "wirebench: unknown command 'srve'; did you mean 'serve'?\n",
        ),
        (
            &["lab", "lsit"],
            "wirebench: unknown command 'lsit'; did you mean 'list'?\n",
        ),
    ] {
        let o = wirebench().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(String::from_utf8(o.stderr).unwrap(), expected);
    }
    let o = wirebench().arg("xyzzy").output().unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.starts_with("wirebench: unknown command 'xyzzy'; commands: run, serve, scenarios"),
        "{err}"
    );
}

#[test]
fn help_shows_defaults_examples_and_root() {
    let help = |args: &[&str]| {
        let o = run_ok(args);
        String::from_utf8(o.stdout).unwrap()
    };
    // Wrapped to the terminal's width: compare with single spaces.
    let run = help(&["run", "--help"])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // Defaults come from the parameter registry.
    for p in wirebench_runner::params::params() {
        if !p.default.is_empty() {
            assert!(
                run.contains(&format!("[default: {}]", p.default)),
                "no default for {}:\n{run}",
                p.name
            );
        }
    }
    assert!(
        run.contains(
            "--rounds <LIST> Ping-pong round trips per case, e.g. 1000 or 10k [default: 1000]"
        ),
        "{run}"
    );
    assert!(
        run.contains("Examples: wirebench run ")
            && run.contains("wirebench run --server 127.0.0.1:7420"),
        "{run}"
    );
    for cmd in ["serve", "shell", "compare", "lab", "report"] {
        let h = help(&[cmd, "--help"]);
        assert!(h.contains("Example"), "{cmd}:\n{h}");
    }
    assert!(help(&["shell", "--help"]).contains("Needs root"));
    let top = help(&["--help"])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        top.contains("crosses an emulated link (needs root)"),
        "{top}"
    );
}

#[test]
fn lab_list_says_when_there_is_nothing() {
    let o = wirebench().args(["lab", "list"]).output().unwrap();
    assert!(o.status.success());
    let (out, err) = (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    );
    // Other runs on this machine may have namespaces; then they are listed instead.
    assert!(
        (out.is_empty() && err == "no lab namespaces\n") || (!out.is_empty() && err.is_empty()),
        "stdout {out:?}, stderr {err:?}"
    );
    // As root, an empty /run/netns of our own makes the empty case certain.
    if unsafe { libc::geteuid() } == 0 && std::path::Path::new("/run/netns").is_dir() {
        let o = std::process::Command::new("unshare")
            .args([
                "--mount",
                "sh",
                "-c",
                "mount -t tmpfs none /run/netns && exec \"$0\" lab list",
            ])
            .arg(env!("CARGO_BIN_EXE_wirebench"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        assert!(o.stdout.is_empty());
        assert_eq!(String::from_utf8(o.stderr).unwrap(), "no lab namespaces\n");
    }
}

#[test]
fn progress_lines_name_every_parameter_that_varies() {
    // The parts, not the grid, make these cases differ.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("parts.toml");
    std::fs::write(
        &file,
        "[params]\nworkload = \"pingpong\"\npayload = 10\nrounds = 3\n\
         [[part]]\nname = \"a\"\nparams = { think = [\"0\", \"10ms\"] }\n\
         [[part]]\nname = \"b\"\nparams = { think = \"20ms\", nodelay = \"off\" }\n",
    )
    .unwrap();
    let o = run_ok(&[
        "run",
        file.to_str().unwrap(),
        "--no-report",
        "--out",
        tmp.path().join("r").to_str().unwrap(),
    ]);
    let err = String::from_utf8(o.stderr).unwrap();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].starts_with("[1/3] workload=pingpong think=0 nodelay=on "),
        "{err}"
    );
    assert!(
        lines[1].starts_with("[2/3] workload=pingpong think=10ms nodelay=on "),
        "{err}"
    );
    assert!(
        lines[2].starts_with("[3/3] workload=pingpong think=20ms nodelay=off "),
        "{err}"
    );
}

#[test]
fn estimates_come_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    // The README's old grid (1000 rounds of up to 64 KiB at 2400 bit/s): refused before
    // any lab is built (so no root needed), naming the flags that shorten it.
    let o = wirebench()
        .args([
            "run",
            "--link-rate",
            "2400bit,19200bit",
            "--link-delay",
            "0,500ms,1s",
        ])
        .args(["--workload", "pingpong", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("wirebench: 18 cases x 1, estimated "),
        "{err}"
    );
    assert!(
        err.contains("warning: case 1 (payload=64 rounds=1000 link.rate=2400bit link.delay=0) is estimated at")
            && err.contains("; use --rounds "),
        "{err}"
    );
    assert!(err.contains("or a smaller --payload"), "{err}");
    assert!(err.contains("pass --yes"), "{err}");
    assert!(
        !out.exists(),
        "nothing may be written before the run starts"
    );
    // --dry-run: the estimate only, exit 0.
    let o = run_ok(&[
        "run",
        "--workload",
        "stream",
        "--duration",
        "3s",
        "--dry-run",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("wirebench: 3 cases x 1, estimated"), "{err}");
    // A flag no planned case reads is dropped, but not silently.
    let o = run_ok(&[
        "run",
        "--mode",
        "echo",
        "--workload",
        "pingpong",
        "--dry-run",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("wirebench: note: --mode is ignored: it applies only to stream cases, and this run's cases are pingpong"),
        "{err}"
    );
    // A case above --max-case-time is named even when the whole run is short enough.
    let o = run_ok(
        &[
            "run",
            "--workload",
            "stream",
            "--payload",
            "64",
            "--duration",
            "3s",
        ]
        .into_iter()
        .chain(["--max-case-time", "2s", "--dry-run"])
        .collect::<Vec<_>>(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("use --duration 1s"), "{err}");
}

#[test]
fn compare_by_a_parameter_pairs_what_differs_only_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    for (name, nodelay) in [("on", "on"), ("off", "off"), ("both", "on,off")] {
        run_ok(&[
            "run",
            "--workload",
            "pingpong",
            "--rounds",
            "5",
            "--payload",
            "10",
            "--nodelay",
            nodelay,
            "--no-report",
            "-q",
            "--out",
            &dir(name),
        ]);
    }
    let stderr = |args: &[&str]| {
        let o = wirebench().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    // Without --by nothing matches; the error names the parameter that differs.
    let err = stderr(&["compare", &dir("on"), &dir("off")]);
    assert!(
        err.contains("the runs differ in nodelay: `--by nodelay`"),
        "{err}"
    );
    let out = run_ok(&[
        "compare",
        &dir("on"),
        &dir("off"),
        "--by",
        "nodelay",
        "--all",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("A: nodelay=on")
            && text.contains("B: nodelay=off")
            && text.contains("rtt.p50"),
        "{text}"
    );
    // One run holding both values.
    let out = run_ok(&["compare", &dir("both"), "--by", "nodelay", "--all"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("A: nodelay=on") && text.contains("over 1 matched case(s)"),
        "{text}"
    );
    let err = stderr(&["compare", &dir("both"), "--by", "nodelya"]);
    assert!(
        err.contains("--by nodelya: no case has this parameter (did you mean `nodelay`?)"),
        "{err}"
    );
    let err = stderr(&["compare", &dir("on")]);
    assert!(err.contains("or --by PARAM"), "{err}");
}

#[test]
fn scenarios_lists_case_counts_and_times() {
    let o = run_ok(&["scenarios"]);
    let text = String::from_utf8_lossy(&o.stdout);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_string()
    };
    let d = line("default ");
    assert!(
        d.contains(" 6 ") && d.contains('~') && d.contains("s "),
        "{d}"
    );
    let x = line("satcom-xmpp");
    assert!(x.contains(" 60 ") && x.contains('m'), "{x}");
    assert!(line("payload-sweep").contains("10 x 3"), "{text}");
}

#[test]
fn a_count_on_the_command_line_replaces_the_scenarios_duration() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_ok(&[
        "run",
        "--workload",
        "stream",
        "--payload",
        "100",
        "--count",
        "300",
        "--out",
        out.to_str().unwrap(),
        "--no-report",
    ]);
    let recs = records(&out);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["params"]["count"], 300);
    assert!(recs[0]["params"].get("duration").is_none(), "{}", recs[0]);
    assert_eq!(recs[0]["metrics"]["messages.received"]["value"], 300.0);
}

/// The local addresses of the TCP sockets process `pid` listens on (its descriptors'
/// socket inodes matched against the kernel's tables).
fn listening_addrs(pid: u32) -> Vec<std::net::SocketAddr> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address, state 0A (LISTEN), inode
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                let (ip, port) = f[1].split_once(':').unwrap();
                let port = u16::from_str_radix(port, 16).unwrap();
                let ip: std::net::IpAddr = if ip.len() == 8 {
                    std::net::Ipv4Addr::from(u32::from_str_radix(ip, 16).unwrap().swap_bytes())
                        .into()
                } else {
                    let mut b = [0u8; 16];
                    for (k, w) in b.chunks_mut(4).enumerate() {
                        let v = u32::from_str_radix(&ip[k * 8..k * 8 + 8], 16).unwrap();
                        w.copy_from_slice(&v.to_le_bytes());
                    }
                    std::net::Ipv6Addr::from(b).into()
                };
                out.push(std::net::SocketAddr::new(ip, port));
            }
        }
    }
    out
}

/// Issue #34: nothing listens to the network unless the user says so. Every address a
/// command listens on either has no default (the user names it) or defaults to loopback,
/// and `wirebench serve` with its defaults listens on loopback only.
#[test]
fn every_listener_defaults_to_loopback() {
    for cmd in [
        "serve",
        "converter",
        "converter-client",
        "x2x",
        "run",
        "shell",
    ] {
        let help = String::from_utf8(run_ok(&[cmd, "--help"]).stdout).unwrap();
        for d in help.split("[default: ").skip(1) {
            let v = d.split(']').next().unwrap();
            let ip = v
                .parse::<std::net::SocketAddr>()
                .map(|a| a.ip())
                .or_else(|_| v.parse::<std::net::IpAddr>());
            if let Ok(ip) = ip {
                assert!(ip.is_loopback(), "`wirebench {cmd}` defaults to {v}");
            }
        }
    }
    // The default control port, when this machine has it free (a user's own server
    // may hold it; then the help check above is what this test can say).
    if TcpListener::bind("127.0.0.1:7420").is_err() {
        eprintln!("127.0.0.1:7420 is taken: serve's defaults not started");
        return;
    }
    let server = common::Serve::start(Vec::<String>::new(), "listening on");
    let addrs = listening_addrs(server.pid());
    drop(server);
    assert!(!addrs.is_empty(), "serve listens on nothing it could find");
    for a in &addrs {
        assert!(
            a.ip().is_loopback(),
            "serve with its defaults listens on {a}"
        );
    }
}
