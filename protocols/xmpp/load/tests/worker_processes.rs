//! Issue #13's proof of the process layout: the built-in server with two worker
//! *processes* holds 24,000 sessions (more than one process may open here: 20,000 files)
//! and delivers messages between sessions on different workers.
//!
//! Its own `main` (no libtest harness), because the test binary is also every other
//! process it needs: the server's workers (`xmpp-worker --index I`, as the `wirebench`
//! binary would be run) and two client processes of 12,000 sessions each (`--client`).
//! It prints libtest's summary line and answers libtest's `--list`, so cargo-nextest
//! (scripts/test.sh) lists, runs and counts it.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wirebench_xmpp::Mechanism;
use wirebench_xmpp_load::hold::{HoldOpts, hold};
use wirebench_xmpp_server::{XmppServer, XmppServerConfig, procs};

const DOMAIN: &str = "example.com";
const PER_CLIENT: usize = 12_000;
const TEST_NAME: &str = "many_sessions_and_cross_worker_delivery_over_two_worker_processes";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some(procs::WORKER_COMMAND) => {
            let index = args[3].parse().expect("--index I");
            // SIGTERM's default action ends the worker; the test reads the counters
            // before it stops the server.
            let stop = AtomicBool::new(false);
            if let Err(e) = procs::worker_main(index, &stop) {
                eprintln!("worker {index}: {e}");
                std::process::exit(1);
            }
        }
        Some("--client") => client(&args[2], &args[3], &args[4]),
        _ if args.iter().any(|a| a == "--list") => {
            // libtest's listing, as cargo-nextest asks for it: one test, not ignored.
            if !args.iter().any(|a| a == "--ignored") {
                println!("{TEST_NAME}: test");
            }
        }
        _ => {
            let name = TEST_NAME;
            println!("\nrunning 1 test");
            let t = Instant::now();
            let r = std::panic::catch_unwind(test);
            let (verdict, passed, failed) = if r.is_ok() {
                ("ok", 1, 0)
            } else {
                ("FAILED", 0, 1)
            };
            println!("test {name} ... {verdict}");
            println!(
                "\ntest result: {verdict}. {passed} passed; {failed} failed; 0 ignored; 0 \
                 measured; 0 filtered out; finished in {:.2}s\n",
                t.elapsed().as_secs_f64()
            );
            std::process::exit(failed);
        }
    }
}

/// A client process: `--client ADDR FIRST FROM_IP`, `PER_CLIENT` sessions with messages.
fn client(addr: &str, first: &str, from: &str) {
    let o = HoldOpts {
        addrs: vec![addr.parse().unwrap()],
        domain: DOMAIN.into(),
        n: PER_CLIENT,
        first: first.parse().unwrap(),
        hold: 3,
        mechanism: Mechanism::Plain,
        messages: true,
        from: Some(from.parse().unwrap()),
        stop: None,
        pingpong: 0,
    };
    let r = hold(&o, |_| {}).unwrap();
    let (sent, received, wrong, _) = r.messages.unwrap_or_default();
    println!(
        "established {} failed {} sent {sent} received {received} wrong {wrong}",
        r.established, r.failed
    );
    std::process::exit(if r.ok() { 0 } else { 1 });
}

fn test() {
    let mut cfg = XmppServerConfig::new("127.0.0.1:0".parse().unwrap(), DOMAIN, 30_000);
    cfg.sessions = 2 * PER_CLIENT;
    let server = XmppServer::bind(cfg).unwrap();
    let layout = server.layout().clone();
    eprintln!("layout: {layout}");
    assert!(layout.processes, "{layout}");
    assert!(layout.workers >= 2, "{layout}");
    assert!(
        layout.per_process < 2 * PER_CLIENT,
        "the test must need more than one process: {layout}"
    );
    let addr: SocketAddr = server.local_addr().unwrap();
    let stats = server.stats.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = server.spawn(stop.clone()).unwrap();
    // Stops the server on any exit from here, a failed assertion included.
    struct Stop(
        Arc<AtomicBool>,
        Option<std::thread::JoinHandle<std::io::Result<()>>>,
    );
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
            if let Some(t) = self.1.take() {
                let _ = t.join();
            }
        }
    }
    let mut guard = Stop(stop, Some(thread));

    let me = std::env::current_exe().unwrap();
    let mut clients: Vec<_> = [("1", "127.0.1.1"), ("12001", "127.0.1.2")]
        .iter()
        .map(|(first, from)| {
            Command::new(&me)
                .args(["--client", &addr.to_string(), first, from])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut outputs = Vec::new();
    // The most sessions seen open at once (the workers' reports, summed).
    let mut peak = 0;
    for c in &mut clients {
        while c.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            peak = peak.max(stats.snapshot().open);
        }
        if c.try_wait().unwrap().is_none() {
            let _ = c.kill();
        }
    }
    for c in clients {
        let out = c.wait_with_output().unwrap();
        outputs.push((out.status, String::from_utf8_lossy(&out.stdout).to_string()));
    }
    // Workers report their counters twice a second.
    std::thread::sleep(Duration::from_millis(1500));
    let s = stats.snapshot();
    eprintln!("clients: {outputs:?}\nserver: {s:?}, at most {peak} open at once");
    for (status, out) in &outputs {
        assert!(status.success(), "a client failed: {out}");
        assert!(
            out.contains(&format!(
                "established {PER_CLIENT} failed 0 sent {PER_CLIENT} received {PER_CLIENT} wrong 0"
            )),
            "{out}"
        );
    }
    assert!(s.bound >= 2 * PER_CLIENT as u64, "{s:?}");
    assert!(
        peak >= 2 * PER_CLIENT as u64,
        "held {peak} at once, not all"
    );
    assert!(s.routed >= 2 * PER_CLIENT as u64, "{s:?}");
    // Each pair's two sessions land on either worker as the kernel spreads connections:
    // about half the messages cross. A tenth is a bound no fair spread misses.
    assert!(s.routed_across >= 2 * PER_CLIENT as u64 / 10, "{s:?}");
    guard.0.store(true, Ordering::SeqCst);
    guard.1.take().unwrap().join().unwrap().unwrap();
}
