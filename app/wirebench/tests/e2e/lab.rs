//! The emulated-link lab end to end: real kernel TCP between two network namespaces
//! through the emulator. Needs root (CI runs as root; these tests are not skipped).

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{m, namespaces_of, records, wirebench};

/// One `wirebench shell` of these tests at a time: they run in parallel, and most expect
/// the first shell's addresses (198.18.0.x); a shell beside another gets the next /24.
static SHELL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_shell() -> std::sync::MutexGuard<'static, ()> {
    SHELL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn rtt_at_2400_bits_follows_the_link_law() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let mut child = wirebench()
        .args([
            "run",
            "--workload",
            "pingpong",
            "--payload",
            "2",
            "--rounds",
            "5",
        ])
        .args([
            "--link-rate",
            "2400bit",
            "--link-delay",
            "0,500ms",
            "--quiet",
        ])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{err}");
    assert!(
        namespaces_of(pid).is_empty(),
        "namespaces left behind: {:?}",
        namespaces_of(pid)
    );

    let recs = records(&out);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        assert_eq!(r["status"], "ok");
        // 2-byte payload: 23-byte frame + 52 bytes of TCP/IP = 75 B = 250 ms per way.
        let (stable, model) = (m(r, "rtt.stable"), m(r, "rtt.model"));
        assert!(
            (stable - model).abs() < 0.02,
            "stable {stable} vs model {model}"
        );
        assert!(m(r, "wire.up.packets") >= 5.0);
        assert_eq!(m(r, "link.dropped.queue") + m(r, "link.dropped.loss"), 0.0);
        // The first round includes nothing extra on raw TCP, but is never faster.
        assert!(m(r, "rtt.first") >= model - 0.001);
    }
    // The stable RTT grows by twice the one-way delay.
    let growth = m(&recs[1], "rtt.stable") - m(&recs[0], "rtt.stable");
    assert!((growth - 1.0).abs() < 0.02, "growth {growth}");
    assert!((m(&recs[0], "rtt.model") - 0.5).abs() < 1e-9);
}

#[test]
fn killed_run_leaves_namespaces_that_lab_clean_removes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = wirebench()
        .args([
            "run",
            "--workload",
            "pingpong",
            "--rounds",
            "1000",
            "--link",
            "2400bit/1s",
            "--quiet",
            // Days of rounds, to be killed: past the estimate's confirmation.
            "--yes",
        ])
        .args(["--out", tmp.path().join("r").to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    while namespaces_of(pid).len() < 2 {
        assert!(Instant::now() < deadline, "lab never came up");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert_eq!(namespaces_of(pid).len(), 2, "a killed run cannot clean up");
    let out = wirebench().args(["lab", "clean"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("wb-{pid}-a")));
    assert!(namespaces_of(pid).is_empty());
}

#[test]
fn ctrl_c_tears_the_lab_down_and_keeps_results() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let child = wirebench()
        .args([
            "run",
            "--workload",
            "pingpong",
            "--rounds",
            "3,1000",
            "--link",
            "10Mbit/100ms",
            "--quiet",
        ])
        .args(["--out", out.to_str().unwrap()])
        // Its own process group, signalled as a whole, as a terminal's Ctrl-C is.
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    while records(&out).is_empty() {
        assert!(Instant::now() < deadline, "first case never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The second case (1000 rounds of 200 ms) is a few rounds in.
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child's process group.
    unsafe { libc::kill(-(pid as i32), libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    assert!(
        namespaces_of(pid).is_empty(),
        "left: {:?}",
        namespaces_of(pid)
    );
    let recs = records(&out);
    assert_eq!(recs[0]["status"], "ok");
    // The case in flight keeps the rounds it finished.
    let last = recs.last().unwrap();
    assert_eq!(last["status"], "interrupted", "{last}");
    let done = m(last, "messages.received");
    assert!((3.0..1000.0).contains(&done), "{last}");
    assert!(m(last, "rtt.stable") >= 0.2, "{last}");
    let rounds = std::fs::read_to_string(out.join("case-0002-r1.rtt.rounds.csv")).unwrap();
    // A header line, then one line per finished round.
    assert_eq!(rounds.lines().count() as f64, done + 1.0, "{rounds}");
    // The summary and the report, as after a finished run.
    assert!(stdout.contains("interrupted"), "{stdout}");
    assert!(stderr.contains("results: "), "{stderr}");
    assert!(out.join("report.html").exists(), "{stderr}");
}

#[test]
fn shell_puts_a_command_behind_the_link() {
    use std::io::{BufRead, BufReader, Write};
    let _one = one_shell();
    // A listener in the root namespace; the shell's host reaches it as 198.18.0.1.
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (s, peer) = listener.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).unwrap();
        (&s).write_all(b"pong\n").unwrap();
        (line, peer)
    });
    let t = Instant::now();
    // The command waits for the answer: when it exits, its host and whatever is still
    // in flight on the link are gone.
    let script = format!(
        "exec 3<>/dev/tcp/198.18.0.1/{port}; echo ping >&3; read -r reply <&3; echo \"$reply\""
    );
    let out = wirebench()
        .args([
            "shell",
            "--link",
            "1Mbit/200ms",
            "--",
            "bash",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (line, peer) = server.join().unwrap();
    assert_eq!(line, "ping\n");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pong\n");
    assert_eq!(peer.ip().to_string(), "198.18.0.2");
    // Handshake and one exchange: at least two round trips of 400 ms.
    assert!(
        t.elapsed() >= Duration::from_millis(800),
        "{:?}",
        t.elapsed()
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("uplink") && err.contains("packets"), "{err}");
}

#[test]
fn link_and_server_flags_conflict_clearly() {
    let out = wirebench()
        .args(["run", "--link", "1Mbit", "--server", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--server cannot be combined"));
    let out = wirebench()
        .args(["run", "--link", "2400bit/fast"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--link"), "{err}");
}

#[test]
fn without_root_a_link_run_says_what_is_needed() {
    // Run as `nobody` (setpriv is part of util-linux, present on Debian), from a copy
    // of the binary that nobody may execute wherever the checkout lives.
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("wirebench");
    std::fs::copy(env!("CARGO_BIN_EXE_wirebench"), &bin).unwrap();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            bin.to_str().unwrap(),
        ])
        .args([
            "run",
            "--link",
            "1Mbit",
            "--workload",
            "pingpong",
            "--rounds",
            "1",
        ])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("need root"), "{err}");
}

#[test]
fn xmpp_ping_pong_between_two_prosody_servers() {
    // As a user runs it: from some working directory, with the default (relative)
    // results directory. Prosody resolves relative paths against its own directory, so
    // this is the case that once failed.
    let tmp = tempfile::tempdir().unwrap();
    let o = wirebench()
        .current_dir(tmp.path())
        .args([
            "run",
            "--protocol",
            "xmpp",
            "--xmpp-server",
            "prosody",
            "--workload",
            "pingpong,stream",
            "--payload",
            "100",
        ])
        .args([
            "--rounds",
            "4",
            "--count",
            "50",
            "--link",
            "10Mbit/20ms",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: Vec<_> = std::fs::read_dir(tmp.path().join("wirebench-runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let out = &runs[0];
    let recs = records(out);
    assert_eq!(recs.len(), 2);
    let ping = &recs[0];
    assert_eq!(ping["params"]["protocol"], "xmpp");
    // Fresh servers: the first round sets up the server-to-server link (dialback).
    assert!(m(ping, "rtt.first") > m(ping, "rtt.stable"), "{ping}");
    // Every round crosses the 20 ms link twice.
    assert!(m(ping, "rtt.stable") >= 0.040, "{ping}");
    assert_eq!(m(ping, "messages.received"), 4.0);
    assert!(m(ping, "wire.bytes") > 0.0);
    // Steady-state bytes per message: the 100-byte body plus XML and TCP/IP overhead,
    // and far less than the whole case's average, which includes s2s set-up.
    let stable = m(ping, "wire.stable.bytes_per_message");
    assert!(
        stable > 100.0 && stable < m(ping, "wire.bytes_per_message"),
        "{ping}"
    );
    let stream = &recs[1];
    assert_eq!(m(stream, "messages.received"), 50.0);
    assert!(
        m(stream, "link.utilization") > 0.0 && m(stream, "link.utilization") <= 1.0,
        "{stream}"
    );
    // The servers' logs are kept with the results.
    assert!(out.join("peers/case-0001-r1/a/prosody.cfg.lua").exists());
}

/// Processes whose command line mentions `needle` (to find servers a run started).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

/// Starts a long XMPP run and waits until both of its Prosody servers are up. Returns
/// the child and the text that identifies its servers' command lines.
fn start_xmpp_run(out: &Path) -> (std::process::Child, String) {
    let child = wirebench()
        .args([
            "run",
            "--protocol",
            "xmpp",
            "--xmpp-server",
            "prosody",
            "--workload",
            "pingpong",
            "--rounds",
            "1000",
        ])
        .args([
            "--link",
            "1Mbit/200ms",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let needle = out.to_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_mentioning(&needle).len() < 2 {
        assert!(Instant::now() < deadline, "servers never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, needle)
}

#[test]
fn sigterm_stops_gracefully_and_sigkill_leaves_no_servers() {
    // SIGTERM: like Ctrl-C, the run stops, keeps its results and removes its lab.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("term");
    let (mut child, needle) = start_xmpp_run(&out);
    let pid = child.id();
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(namespaces_of(pid).is_empty());
    assert!(
        processes_mentioning(&needle).is_empty(),
        "servers left running"
    );
    assert_eq!(records(&out).last().unwrap()["status"], "interrupted");

    // SIGKILL: the servers get SIGTERM from the kernel (parent-death signal).
    let (mut child, needle) = start_xmpp_run(&tmp.path().join("kill"));
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_mentioning(&needle).is_empty() {
        assert!(Instant::now() < deadline, "servers outlived a killed run");
        std::thread::sleep(Duration::from_millis(100));
    }
    let clean = wirebench().args(["lab", "clean"]).output().unwrap();
    assert!(clean.status.success());
    assert!(namespaces_of(pid).is_empty());
}

#[test]
fn pcap_estimate_refuses_big_captures_and_relative_paths_land_in_the_current_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // 2 s of a saturated 1 Gbit/s link: ~250 MB, above the 200 MiB default.
    let o = wirebench()
        .current_dir(tmp.path())
        .args([
            "run",
            "--link",
            "rate=1Gbit,delay=10ms",
            "--workload",
            "stream",
        ])
        .args([
            "--payload",
            "128KiB",
            "--duration",
            "2s",
            "--pcap",
            "big.pcap",
        ])
        .args(["--out", "r0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is estimated at")
            && err.contains("--pcap-limit")
            && err.contains("--pcap-snaplen 128"),
        "{err}"
    );
    assert!(!tmp.path().join("big.pcap").exists());
    assert!(!tmp.path().join("r0").exists());

    // Headers only: a tenth of the size, accepted; the file lands in the directory the
    // command was typed in, with the snap length in its header and the records' notes.
    let o = wirebench()
        .current_dir(tmp.path())
        .args([
            "run",
            "--link",
            "rate=100Mbit,delay=1ms",
            "--workload",
            "stream",
        ])
        .args([
            "--payload",
            "1400",
            "--duration",
            "300ms",
            "--pcap",
            "cap.pcap",
        ])
        .args([
            "--pcap-snaplen",
            "96",
            "--out",
            "r1",
            "--no-report",
            "--quiet",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let path = tmp.path().join("cap.pcap");
    assert!(
        err.contains(&format!("capture {}", path.display())),
        "{err}"
    );
    let file = std::fs::read(&path).unwrap();
    assert_eq!(u32::from_le_bytes(file[16..20].try_into().unwrap()), 96);
    let caplen = u32::from_le_bytes(file[32..36].try_into().unwrap());
    assert!(caplen <= 96);
    let recs = records(&tmp.path().join("r1"));
    let notes = recs[0]["notes"].to_string();
    assert!(
        notes.contains("snaplen 96") && notes.contains(&path.display().to_string()),
        "{notes}"
    );
}

#[test]
fn shell_capture_stops_at_its_limit_and_says_so() {
    let _one = one_shell();
    use std::io::{Read, Write};
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut got = vec![0u8; 300_000];
        s.read_exact(&mut got).unwrap();
        s.write_all(b"ok\n").unwrap();
    });
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.pcap");
    // The command waits for the answer: when it exits, its host is gone.
    let script = format!(
        "exec 3<>/dev/tcp/198.18.0.1/{port}; head -c 300000 /dev/zero >&3; read -r reply <&3; echo \"$reply\""
    );
    let o = wirebench()
        .args([
            "shell",
            "--link",
            "100Mbit/1ms",
            "--pcap",
            path.to_str().unwrap(),
        ])
        .args(["--pcap-limit", "20KiB", "--", "bash", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // The link carried everything; the capture stopped at its limit.
    server.join().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n");
    assert!(
        err.contains("stopped early") && err.contains("limit"),
        "{err}"
    );
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len <= 20 * 1024 && len > 10_000, "{len}");
}

/// Shells run side by side, each on a /24 of its own: the first on 198.18.0.0/24, the
/// next on 198.18.16.0/24; each command reaches this machine across its own link only
/// and finds its addresses in its environment.
#[test]
fn two_shells_run_side_by_side_on_their_own_addresses() {
    use std::io::{BufRead, BufReader, Write};
    let _one = one_shell();
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Answers each connection with the address it came from.
    let server = std::thread::spawn(move || {
        let mut peers = Vec::new();
        for _ in 0..2 {
            let (s, peer) = listener.accept().unwrap();
            let mut line = String::new();
            BufReader::new(&s).read_line(&mut line).unwrap();
            (&s).write_all(format!("{}\n", peer.ip()).as_bytes())
                .unwrap();
            peers.push((line.trim().to_string(), peer.ip().to_string()));
        }
        peers
    });
    // The first holds its link for a while; the second starts while it runs.
    let script = format!(
        "sleep 1; exec 3<>/dev/tcp/$WIREBENCH_ROOT_ADDR/{port}; echo \"$WIREBENCH_HOST_ADDR\" >&3; read -r r <&3; echo \"$WIREBENCH_HOST_ADDR $r\"; sleep 2"
    );
    let first = wirebench()
        .args(["shell", "--link", "1Mbit/20ms", "--", "bash", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let dev = format!("/sys/class/net/wb{}", first.id());
    let end = Instant::now() + Duration::from_secs(20);
    while !Path::new(&dev).exists() {
        assert!(Instant::now() < end, "the first shell did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = wirebench()
        .args(["shell", "--link", "2Mbit/50ms", "--", "bash", "-c", &script])
        .output()
        .unwrap();
    let first = first.wait_with_output().unwrap();
    for o in [&first, &second] {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let line = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).trim().to_string();
    // Each saw its own address come back: its packets crossed its own link.
    assert_eq!(line(&first), "198.18.0.2 198.18.0.2");
    assert_eq!(line(&second), "198.18.16.2 198.18.16.2");
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("this machine is 198.18.16.1"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let mut peers = server.join().unwrap();
    peers.sort();
    assert_eq!(
        peers,
        vec![
            ("198.18.0.2".to_string(), "198.18.0.2".to_string()),
            ("198.18.16.2".to_string(), "198.18.16.2".to_string())
        ]
    );
    // And once both have gone, the next shell is back on the first addresses.
    let third = wirebench()
        .args([
            "shell",
            "--link",
            "1Mbit/10ms",
            "--",
            "printenv",
            "WIREBENCH_HOST_ADDR",
        ])
        .output()
        .unwrap();
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&third.stdout).trim(), "198.18.0.2");
}

#[test]
fn a_shell_leaves_no_root_socket_talking_to_its_host() {
    use std::io::Write;
    let _one = one_shell();
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The server side sends far more than a 2400 bit/s link carries in the command's
    // lifetime, so its socket still holds data in flight when the host goes away.
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let _ = s.write_all(&[0u8; 64 * 1024]);
        s
    });
    let script = format!("exec 3<>/dev/tcp/198.18.0.1/{port}; sleep 1");
    let out = wirebench()
        .args([
            "shell",
            "--link",
            "2400bit/100ms",
            "--",
            "bash",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut s = server.join().unwrap();
    let left = Command::new("ss")
        .args(["-H", "-t", "-n", "dst", "198.18.0.2"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "");
    // Aborted by the kernel, not left retransmitting into the next shell's link.
    assert!(s.write_all(b"more").is_err());
}

/// Issue #34's fault: a lab host's link device is removed under a running case. The case
/// fails (exit 1, fault `link`) saying the link emulator stopped and why, and the lab is
/// torn down all the same: no namespace of the run is left.
#[test]
fn a_link_removed_under_a_case_fails_it_and_the_lab_is_torn_down() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let child = wirebench()
        .args(["run", "--workload", "pingpong", "--payload", "64"])
        .args([
            "--rounds",
            "1000",
            "--link",
            "10ms",
            "--timeout",
            "3s",
            "--quiet",
        ])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let client = format!("wb-{pid}-a");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !namespaces_of(pid).contains(&client) {
        assert!(Instant::now() < deadline, "no lab host {client}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A few rounds in, the client host loses its link device.
    std::thread::sleep(Duration::from_secs(2));
    let ok = Command::new("ip")
        .args(["netns", "exec", &client, "ip", "link", "del", "wbtun0"])
        .status()
        .unwrap()
        .success();
    assert!(ok, "could not remove wbtun0 in {client}");
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let r = &records(&out)[0];
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["fault"], "link", "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("link emulator stopped"),
        "{r}"
    );
    assert!(
        namespaces_of(pid).is_empty(),
        "left: {:?}",
        namespaces_of(pid)
    );
}
