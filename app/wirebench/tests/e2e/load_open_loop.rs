//! Coordinated omission (issue #14): `wirebench serve --xmpp` as its own process is
//! stopped (SIGSTOP) for 1.5 s in the middle of an open-loop load. Sessions and messages
//! meant to start during the pause wait for it, and since every latency counts from the
//! intended time, the pause must show in the percentiles: a closed-loop tool, which times
//! from when it actually sends, would report a few milliseconds.

use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use wirebench_load::{Arrivals, Dist, Interval, Phase, Schedule, Series};
use wirebench_xmpp_load::open_loop::{Part, Script, monotonic_ns, run_worker};

#[test]
fn a_server_pause_shows_in_the_open_loop_percentiles() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let mut server = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["serve", "--quiet", "--listen", "127.0.0.1:0", "--xmpp"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--xmpp-users", "1000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = server.id() as i32;
    let end = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("XMPP layout")
    {
        assert!(Instant::now() < end, "server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }

    // 200 sessions/s for 3 s, each staying 4 s, a message every 100 ms from 0.2 s on.
    let phases = [Phase {
        duration: Duration::from_secs(3),
        rate: 200.0,
        max_users: None,
    }];
    let schedule = Schedule::new(&phases, Arrivals::Uniform, 0).unwrap();
    let script = Script {
        addrs: vec![([127, 0, 0, 1], port).into()],
        domain: "wirebench.test".into(),
        first_user: 1,
        user_stride: 1,
        mechanism: "PLAIN".into(),
        roster: false,
        presence: false,
        stay: Dist::Fixed(Duration::from_secs(4)),
        message_every: Some(Dist::Fixed(Duration::from_millis(100))),
        first_message: Dist::Fixed(Duration::from_millis(200)),
        seed: 0,
        tls: false,
        tls_cert: None,
        login_timeout: Duration::from_secs(10),
        payload: 32,
        from: vec![],
        samples: None,
    };
    let t0 = monotonic_ns() + 100_000_000;
    // Pause the server from 1.0 s to 2.5 s into the run.
    let pauser = std::thread::spawn(move || {
        let at = |ns: u64| {
            let now = monotonic_ns();
            std::thread::sleep(Duration::from_nanos(ns.saturating_sub(now)));
        };
        at(t0 + 1_000_000_000);
        // SAFETY: signals the server this test started, by its PID.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        at(t0 + 2_500_000_000);
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGCONT) };
    });
    let part = Part {
        worker: 0,
        workers: 1,
        t0,
        width: Duration::from_millis(500),
    };
    let mut series = Series::new();
    let stop = AtomicBool::new(false);
    let summary = run_worker(&schedule, part, &script, &stop, |i: Interval| {
        series.add(&i)
    })
    .unwrap();
    pauser.join().unwrap();
    // SAFETY: as above; SIGCONT first in case the pauser failed half-way.
    unsafe {
        libc::kill(pid, libc::SIGCONT);
        libc::kill(pid, libc::SIGTERM);
    }
    let _ = server.wait();
    assert!(summary.first_error.is_none(), "{:?}", summary.first_error);
    let t = series.totals();
    assert_eq!(t.counts.logged_in, schedule.len() as u64);
    // Sessions meant to log in during the pause all log in at its end, some a moment
    // before their partner, whose first messages (already due) then find nobody: a few
    // are lost by design, not by the server.
    assert!(
        t.counts.received + t.counts.sent / 100 >= t.counts.sent,
        "sent {} received {}",
        t.counts.sent,
        t.counts.received
    );
    let ms = |h: &hdrhistogram::Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e6;
    let (login, message) = (&t.latency[1], &t.latency[2]);
    eprintln!(
        "login p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; message p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(login, 0.5),
        ms(login, 0.99),
        login.max() as f64 / 1e6,
        ms(message, 0.5),
        ms(message, 0.99),
        message.max() as f64 / 1e6
    );
    // Sessions meant to start in the pause waited up to 1.5 s, messages meant in it too:
    // a quarter of either, so their p99 is well above 1 s and their max about 1.5 s.
    assert!(ms(login, 0.99) >= 1000.0, "login p99 {}", ms(login, 0.99));
    assert!(
        ms(message, 0.99) >= 1000.0,
        "message p99 {}",
        ms(message, 0.99)
    );
    assert!(login.max() as f64 / 1e6 >= 1400.0);
    // And outside the pause, latencies are small: the median is not the pause.
    assert!(ms(login, 0.5) < 500.0, "login p50 {}", ms(login, 0.5));
}
