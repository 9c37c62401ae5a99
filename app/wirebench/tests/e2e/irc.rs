//! `--protocol irc` end to end through the binary: two linked ngircd servers in the lab's
//! hosts, a ping-pong and a stream across the emulated link, then nothing left behind.
//! Needs root and ngircd (`scripts/test.sh` installs it), like the XMPP tests in lab.rs.

use std::process::{Command, Stdio};

use crate::common;
use common::{m, namespaces_of, records};

/// Processes whose command line mentions `needle`.
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

#[test]
fn irc_ping_pong_and_stream_between_two_linked_ngircd() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    // 600 bytes do not fit one IRC line: every message is split in two and reassembled.
    let child = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["run", "--protocol", "irc", "--workload", "pingpong,stream"])
        .args(["--payload", "100,600", "--rounds", "5", "--count", "20"])
        .args(["--link", "1Mbit/10ms", "--quiet"])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Nothing left: namespaces, servers (their directories carry our PID), directories.
    assert!(
        namespaces_of(pid).is_empty(),
        "namespaces left: {:?}",
        namespaces_of(pid)
    );
    let tag = format!("wb-ngircd-{pid}-");
    assert!(
        processes_mentioning(&tag).is_empty(),
        "ngircd left running: {:?}",
        processes_mentioning(&tag)
    );
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&tag))
        .collect();
    assert!(left.is_empty(), "server directories left: {left:?}");

    let recs = records(&out);
    assert_eq!(recs.len(), 4);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["params"]["protocol"], "irc");
        // The servers linked across the link before the clients registered.
        assert!(m(r, "irc.link_setup") > 0.0, "{r}");
        assert!(m(r, "wire.bytes") > 0.0, "{r}");
        let notes = r["notes"].to_string();
        assert!(
            notes.contains("zlib") && notes.contains("TCP_NODELAY"),
            "{notes}"
        );
    }
    let (small, split) = (&recs[0], &recs[1]);
    for ping in [small, split] {
        assert_eq!(ping["params"]["workload"], "pingpong");
        assert_eq!(m(ping, "messages.received"), 5.0);
        assert_eq!(m(ping, "messages.corrupt"), 0.0);
        // Every round crosses the 10 ms link twice.
        assert!(m(ping, "rtt.stable") >= 0.020, "{ping}");
        assert!(m(ping, "rtt.first") >= 0.020, "{ping}");
        assert!(m(ping, "wire.stable.bytes_per_message") > 0.0, "{ping}");
    }
    assert_eq!(m(small, "irc.lines_per_message"), 1.0);
    assert_eq!(m(split, "irc.lines_per_message"), 2.0);
    assert!(
        split["notes"].to_string().contains("split into 2 lines"),
        "{split}"
    );
    for stream in &recs[2..] {
        assert_eq!(stream["params"]["workload"], "stream");
        assert_eq!(m(stream, "messages.received"), 20.0);
        assert_eq!(m(stream, "messages.corrupt"), 0.0);
        assert!(m(stream, "link.utilization") > 0.0, "{stream}");
    }
    // The servers' configuration and logs are kept with the results.
    let a = out.join("peers/case-0001-r1/a");
    assert!(a.join("ngircd.conf").exists());
    let log = std::fs::read_to_string(a.join("ngircd.log")).unwrap();
    assert!(log.contains("Enabled link compression (zlib)"), "{log}");
}
