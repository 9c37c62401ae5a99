//! `shadowsocks` in study S3's connect workload, end to end through the binary: our
//! server and shadowsocks-libev's ss-server, each cipher, every connection accounted for
//! on loopback; over an emulated link, the time to first byte is direct TCP's two round
//! trips, and one with TCP Fast Open (Shadowsocks adds none); our server run alone
//! (`wirebench serve --also shadowsocks=...`) closes garbage, wrong passwords and
//! truncated headers and still serves a real client (libev's ss-tunnel) afterwards.

use crate::common;
use common::{m, namespaces_of, records, wirebench};
use std::io::{BufRead, Read, Write};
use std::time::{Duration, Instant};

fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `wirebench run --protocol shadowsocks ARGS` into a fresh directory: its exit status,
/// records, and whether results.csv was written.
fn run(args: &[&str]) -> (bool, Vec<serde_json::Value>, bool) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let o = wirebench()
        .args(["run", "--quiet", "--no-report", "--out"])
        .arg(&out)
        .args(["--workload", "connect", "--payload", "64"])
        .args(args)
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&o.stderr));
    }
    (
        o.status.success(),
        records(&out),
        out.join("results.csv").is_file(),
    )
}

#[test]
fn ours_and_libev_every_cipher_on_loopback() {
    let servers = if have("ss-server") {
        "ours,libev"
    } else {
        eprintln!(
            "ss-server is missing (scripts/test.sh installs shadowsocks-libev): its cases skipped"
        );
        "ours"
    };
    let (ok, recs, csv) = run(&[
        "--protocol",
        "shadowsocks",
        "--connects",
        "50",
        "--shadowsocks-server",
        servers,
        "--shadowsocks-cipher",
        "chacha20-ietf-poly1305,aes-256-gcm,aes-128-gcm",
    ]);
    assert!(ok, "{recs:?}");
    assert!(csv, "no results.csv");
    let n = servers.split(',').count() * 3;
    assert_eq!(recs.len(), n, "{recs:?}");
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["params"]["protocol"], "shadowsocks", "{r}");
        assert_eq!(m(r, "connects.ok"), 50.0, "{r}");
        let ttfb = m(r, "ttfb.p50");
        assert!(ttfb > 0.0 && ttfb < 0.1, "{r}");
        assert!(m(r, "connect.tcp.p50") > 0.0, "{r}");
        // No handshake of its own: nothing between the TCP connect and the first write.
        assert_eq!(m(r, "connect.proxy.p50"), 0.0, "{r}");
    }
    // Several at once.
    let (ok, recs, _) = run(&[
        "--protocol",
        "shadowsocks",
        "--connects",
        "200",
        "--concurrency",
        "8",
    ]);
    assert!(ok, "{recs:?}");
    assert_eq!(m(&recs[0], "connects.ok"), 200.0);
}

#[test]
fn round_trips_over_a_link() {
    if !is_root() {
        eprintln!("skipped: the lab needs root");
        return;
    }
    let servers = if have("ss-server") {
        "ours,libev"
    } else {
        eprintln!("ss-server is missing: its cases skipped");
        "ours"
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let mut child = wirebench()
        .args(["run", "--quiet", "--no-report", "--out"])
        .arg(&out)
        .args([
            "--workload",
            "connect",
            "--payload",
            "64",
            "--connects",
            "10",
        ])
        .args(["--protocol", "direct,shadowsocks", "--link-delay", "25ms"])
        .args(["--tfo", "off,on", "--shadowsocks-server", servers])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(child.wait().unwrap().success());
    assert!(namespaces_of(pid).is_empty(), "lab namespaces left behind");
    let recs = records(&out);
    assert_eq!(recs.len(), 2 + 2 * servers.split(',').count(), "{recs:?}");
    // The round trip as this run saw it: direct's TCP handshake without Fast Open.
    let rtt = recs
        .iter()
        .find(|r| r["params"]["protocol"] == "direct" && r["params"]["tfo"] == "off")
        .map(|r| m(r, "connect.tcp.p50"))
        .unwrap();
    assert!(
        rtt > 0.049 && rtt < 0.1,
        "round trip {rtt} s on a 50 ms link"
    );
    for r in &recs {
        let p = &r["params"];
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "connects.ok"), 10.0, "{r}");
        // As direct TCP: the request rides with the data, so no round trip of its own.
        let trips = if p["tfo"] == "on" { 1.0 } else { 2.0 };
        let ttfb = m(r, "ttfb.p50");
        assert!(
            ttfb > trips * 0.049 && (ttfb / rtt - trips).abs() < 0.45,
            "{p}: ttfb {ttfb} s, expected {trips} round trips of {rtt} s"
        );
        if p["tfo"] == "on" {
            // The first connection to an address may fetch the cookie; the rest use it.
            assert!(m(r, "connects.tfo") >= 9.0, "{r}");
        }
    }
}

/// Shadowsocks 2022 over the same link: two round trips to the first byte like AEAD,
/// through our server and shadowsocks-rust's ssserver (when built, see
/// scripts/install-shadowsocks-rust.sh), every connection answered.
#[test]
fn shadowsocks_2022_round_trips_over_a_link() {
    if !is_root() {
        eprintln!("skipped: the lab needs root");
        return;
    }
    let servers = match wirebench_plugin_shadowsocks::peers::rust_program("ssserver") {
        Ok(_) => "ours,rust",
        Err(e) => {
            eprintln!("{e}: its cases skipped");
            "ours"
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let mut child = wirebench()
        .args(["run", "--quiet", "--no-report", "--out"])
        .arg(&out)
        .args([
            "--workload",
            "connect",
            "--payload",
            "64",
            "--connects",
            "10",
        ])
        .args(["--protocol", "shadowsocks", "--link-delay", "25ms"])
        .args([
            "--shadowsocks-cipher",
            "2022-blake3-aes-256-gcm,2022-blake3-chacha20-poly1305",
        ])
        .args(["--shadowsocks-server", servers])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(child.wait().unwrap().success());
    assert!(namespaces_of(pid).is_empty(), "lab namespaces left behind");
    let recs = records(&out);
    assert_eq!(recs.len(), 2 * servers.split(',').count(), "{recs:?}");
    for r in &recs {
        let p = &r["params"];
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(m(r, "connects.ok"), 10.0, "{r}");
        let rtt = m(r, "connect.tcp.p50");
        let ttfb = m(r, "ttfb.p50");
        assert!(
            ttfb > 2.0 * 0.049 && (ttfb / rtt - 2.0).abs() < 0.45,
            "{p}: ttfb {ttfb} s, expected 2 round trips of {rtt} s"
        );
    }
}

/// `wirebench serve --also shadowsocks=...`: its address, and what the server logs.
struct Served {
    child: std::process::Child,
    addr: String,
    log: std::sync::mpsc::Receiver<String>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Served {
    let mut child = wirebench()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(["--also", "shadowsocks=127.0.0.1:0"])
        .env("WIREBENCH_SHADOWSOCKS_PASSWORD", "test-password")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let l = lines.next().expect("serve ended early").unwrap();
        if let Some(a) = l.strip_prefix("wirebench serve: shadowsocks on ") {
            break a.to_string();
        }
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in lines.map_while(Result::ok) {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    Served {
        child,
        addr,
        log: rx,
    }
}

/// Writes `req` on a fresh connection and returns what comes back before the close (or
/// `limit` passes), and how long the close took.
fn exchange(addr: &str, req: &[u8], limit: Duration) -> (Vec<u8>, Duration) {
    let t = Instant::now();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(req).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    while let Ok(n) = s.read(&mut chunk) {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    (buf, t.elapsed())
}

/// A local port forwarded by ss-tunnel through `server` to `to`.
struct Tunnel {
    child: std::process::Child,
    port: u16,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn tunnel(server: &str, password: &str, cipher: &str, to: &str) -> Tunnel {
    let (host, port) = server.rsplit_once(':').unwrap();
    let local = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new("ss-tunnel")
        .args(["-s", host, "-p", port, "-b", "127.0.0.1"])
        .args([
            "-l",
            &local.to_string(),
            "-k",
            password,
            "-m",
            cipher,
            "-L",
            to,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", local)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Tunnel { child, port: local }
}

/// An echo server on loopback for the tunnel's far end: one thread per connection.
fn echo() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in l.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut r = s.try_clone().unwrap();
                let mut w = s;
                let _ = std::io::copy(&mut r, &mut w);
            });
        }
    });
    a
}

/// Through the tunnel: `msg` to the echo server and back.
fn through(t: &Tunnel, msg: &[u8]) -> Vec<u8> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", t.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s.write_all(msg).unwrap();
    let mut back = vec![0u8; msg.len()];
    match s.read_exact(&mut back) {
        Ok(()) => back,
        Err(_) => Vec::new(),
    }
}

#[test]
fn our_server_alone_closes_misbehaving_clients() {
    let s = serve();
    let origin = echo();
    let libev = have("ss-tunnel");
    if libev {
        // A real client, every cipher, one password: served.
        for c in ["chacha20-ietf-poly1305", "aes-256-gcm", "aes-128-gcm"] {
            let t = tunnel(&s.addr, "test-password", c, &origin);
            assert_eq!(through(&t, b"hello"), b"hello", "{c}");
        }
        // The wrong password: closed, nothing comes back.
        let t = tunnel(&s.addr, "wrong", "aes-256-gcm", &origin);
        assert!(through(&t, b"hello").is_empty());
        // A destination off this machine (TEST-NET-1): closed without connecting. A
        // thread writes at most a close line a second: a second later, so it has its own.
        std::thread::sleep(Duration::from_millis(1100));
        let t = tunnel(&s.addr, "test-password", "aes-256-gcm", "192.0.2.1:80");
        assert!(through(&t, b"hello").is_empty());
    } else {
        eprintln!("ss-tunnel is missing (shadowsocks-libev): the interoperability half skipped");
    }
    // Garbage longer than a salt and a sealed length: closed at once, no answer.
    let (r, took) = exchange(&s.addr, &[0x42; 200], Duration::from_secs(5));
    assert!(
        r.is_empty() && took < Duration::from_secs(2),
        "{r:?} {took:?}"
    );
    // An HTTP request: the same.
    let (r, _) = exchange(
        &s.addr,
        b"GET / HTTP/1.1\r\nhost: x\r\n\r\n",
        Duration::from_secs(5),
    );
    assert!(r.is_empty());
    // A truncated header (part of a salt) held open: closed after the 10 s limit.
    let (r, took) = exchange(&s.addr, &[1; 20], Duration::from_secs(15));
    assert!(r.is_empty());
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(13),
        "closed after {took:?}"
    );
    // Still serving a good client after all of that.
    if libev {
        let t = tunnel(&s.addr, "test-password", "chacha20-ietf-poly1305", &origin);
        assert_eq!(through(&t, b"again"), b"again");
    }
    // Each refusal is logged with its reason.
    std::thread::sleep(Duration::from_millis(200));
    let log: Vec<String> = s.log.try_iter().collect();
    let has = |what: &str| log.iter().any(|l| l.contains(what));
    assert!(has("no complete header within 10s"), "{log:?}");
    assert!(has("none of the 3 configured cipher(s)"), "{log:?}");
    if libev {
        assert!(has("192.0.2.1:80 is not an allowed destination"), "{log:?}");
    }
}
