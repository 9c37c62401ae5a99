//! The open-loop load driver against the built-in server on loopback: two generator
//! workers (threads here) share one schedule; every session logs in, messages cross
//! between the workers' sessions, counts add up, and the merged series equals the sum of
//! what each worker recorded.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wirebench_load::{Arrivals, Dist, Interval, Phase, Schedule, Series};
use wirebench_xmpp_load::open_loop::{Part, Script, monotonic_ns, run_worker};
use wirebench_xmpp_server::{XmppServer, XmppServerConfig};

#[test]
fn two_workers_share_a_schedule_and_their_series_merge_exactly() {
    const SESSIONS: u64 = 2000;
    let mut cfg = XmppServerConfig::new("127.0.0.1:0".parse().unwrap(), "wirebench.test", SESSIONS);
    cfg.workers = 2;
    let server = XmppServer::bind(cfg).unwrap();
    let addr = server.local_addr().unwrap();
    let stats = server.stats.clone();
    let stop_server = Arc::new(AtomicBool::new(false));
    let thread = server.spawn(stop_server.clone()).unwrap();

    let phases = [Phase {
        duration: Duration::from_secs(2),
        rate: SESSIONS as f64 / 2.0,
        max_users: None,
    }];
    let schedule = Arc::new(Schedule::new(&phases, Arrivals::Poisson, 1).unwrap());
    let n = schedule.len() as u64;
    let script = Script {
        addrs: vec![addr],
        domain: "wirebench.test".into(),
        first_user: 1,
        user_stride: 1,
        mechanism: "PLAIN".into(),
        roster: true,
        presence: true,
        // Everyone is online from ~2 s to 5 s: messages at 3 and 4 s find their partner.
        stay: Dist::Fixed(Duration::from_secs(5)),
        message_every: Some(Dist::Fixed(Duration::from_secs(1))),
        first_message: Dist::Fixed(Duration::from_secs(3)),
        seed: 0,
        tls: false,
        tls_cert: None,
        login_timeout: Duration::from_secs(10),
        payload: 32,
        from: Vec::new(),
        samples: None,
    };
    let t0 = monotonic_ns() + 100_000_000;
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let (schedule, mut script, stop) = (schedule.clone(), script.clone(), stop.clone());
            // Each generator its own source address, as the load case gives them: the
            // source ports are chosen per generator.
            script.from = vec![format!("127.0.2.{}", w + 1).parse().unwrap()];
            std::thread::spawn(move || {
                let mut mine: Vec<Interval> = Vec::new();
                let part = Part {
                    worker: w,
                    workers: 2,
                    t0,
                    width: Duration::from_secs(1),
                };
                let summary =
                    run_worker(&schedule, part, &script, &stop, |i| mine.push(i)).unwrap();
                (summary, mine)
            })
        })
        .collect();
    let mut merged = Series::new();
    let mut separately = Vec::new();
    for w in workers {
        let (summary, intervals) = w.join().unwrap();
        assert!(summary.first_error.is_none(), "{:?}", summary.first_error);
        for i in &intervals {
            merged.add(&Interval::from_wire(&i.to_wire()).unwrap());
        }
        separately.push(intervals);
    }
    let t = merged.totals();
    assert_eq!(t.counts.arrivals, n);
    assert_eq!(t.counts.connected, n);
    assert_eq!(t.counts.logged_in, n);
    assert_eq!(t.counts.left, n);
    assert_eq!(t.counts.failures(), 0, "{:?}", t.counts);
    // Two messages per session (at 3 s and 4 s) if it has a partner.
    let with_partner = n - n % 2;
    assert_eq!(t.counts.sent, 2 * with_partner);
    assert_eq!(t.counts.received, t.counts.sent);
    assert_eq!(t.latency[2].len(), t.counts.received);
    // Partners 2k and 2k+1 sit in different workers: every message crossed between them.
    assert!(stats.routed.load(Ordering::Relaxed) >= t.counts.sent);
    // The merged histogram is the sum of the workers'.
    let mut sum = wirebench_load::Interval::new(0);
    for w in &separately {
        for i in w {
            sum.add(i);
        }
    }
    for k in 0..3 {
        assert_eq!(sum.latency[k], t.latency[k]);
    }
    assert_eq!(merged.active().last().map(|a| a.1), Some(0));
    stop_server.store(true, Ordering::SeqCst);
    thread.join().unwrap().unwrap();
}
