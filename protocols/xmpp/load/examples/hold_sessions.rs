//! Opens many XMPP client sessions against a server, logs them in, optionally has every
//! pair exchange a message, holds them, and reports ([`wirebench_xmpp_load::hold`]).
//!
//! ```text
//! cargo run --release -p wirebench-plugin-xmpp --example hold_sessions -- \
//!     ADDR[,ADDR...] DOMAIN SESSIONS [--first N] [--hold SECS] [--mech MECH]
//!     [--messages] [--pingpong ROUNDS] [--from IP]
//! ```
//!
//! Ctrl-C or SIGTERM ends the hold early; the sessions are closed properly either way.
//!
//! Users are `user<FIRST>..user<FIRST+SESSIONS-1>` (FIRST defaults to 1) with passwords
//! `pass<N>`; session k connects to the k-th address round-robin, from source address IP
//! if given. Prints `established N in S s = R logins/s (F failed)`; with `--messages`,
//! each user 2k-1 sends one message to user 2k, which answers (FIRST odd, SESSIONS even),
//! and it prints `messages: sent N, received M in S s`; with `--pingpong ROUNDS` and two
//! sessions, user FIRST sends user FIRST+1 a message ROUNDS times, each after the echo of
//! the last, and it prints the round trips' p50/p90/p99; then it holds the sessions
//! HOLD_SECS seconds (default 10), closes them and exits, with status 1 if any login or
//! message failed. Loopback or lab addresses only.

use std::net::{IpAddr, SocketAddr};
use wirebench_xmpp::Mechanism;
use wirebench_xmpp_load::hold::{HoldOpts, hold, lab_address};

fn usage(why: &str) -> ! {
    eprintln!(
        "hold_sessions: {why}\nusage: hold_sessions ADDR[,ADDR...] DOMAIN SESSIONS [--first N] \
         [--hold SECS] [--mech PLAIN|SCRAM-SHA-1|SCRAM-SHA-256] [--messages] [--pingpong ROUNDS] [--from IP]"
    );
    std::process::exit(2);
}

fn parse() -> HoldOpts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        usage("ADDR, DOMAIN and SESSIONS are needed");
    }
    let addrs: Vec<SocketAddr> = args[0]
        .split(',')
        .map(|a| a.parse().unwrap_or_else(|_| usage("ADDR is IP:PORT")))
        .collect();
    let lab = lab_address;
    if !addrs.iter().all(|a| lab(a.ip())) {
        usage("only loopback or lab (198.18.x.x) addresses");
    }
    let mut o = HoldOpts {
        addrs,
        domain: args[1].clone(),
        n: args[2]
            .parse()
            .unwrap_or_else(|_| usage("SESSIONS is a number")),
        first: 1,
        hold: 10,
        mechanism: Mechanism::Plain,
        messages: false,
        from: None,
        stop: None,
        pingpong: 0,
    };
    let mut rest = args[3..].iter();
    while let Some(a) = rest.next() {
        let mut value = || {
            rest.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--first" => o.first = value().parse().unwrap_or_else(|_| usage("--first N")),
            "--hold" => o.hold = value().parse().unwrap_or_else(|_| usage("--hold SECS")),
            "--mech" => {
                o.mechanism = Mechanism::from_name(value()).unwrap_or_else(|| usage("--mech"))
            }
            "--messages" => o.messages = true,
            "--pingpong" => {
                o.pingpong = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--pingpong ROUNDS"))
            }
            "--from" => {
                let ip: IpAddr = value().parse().unwrap_or_else(|_| usage("--from IP"));
                if !lab(ip) {
                    usage("--from: only loopback or lab addresses");
                }
                o.from = Some(ip);
            }
            // An old positional HOLD_SECS and MECHANISM still work.
            h if o.hold == 10 && h.parse::<u64>().is_ok() => o.hold = h.parse().unwrap_or(10),
            m if Mechanism::from_name(m).is_some() => {
                o.mechanism = Mechanism::from_name(m).unwrap_or(Mechanism::Plain)
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if o.messages && (o.first % 2 == 0 || o.n % 2 == 1) {
        usage("--messages pairs user 2k-1 with 2k: FIRST must be odd and SESSIONS even");
    }
    o
}

fn main() {
    let mut o = parse();
    // Ctrl-C or SIGTERM ends the hold: the sessions still close properly (a killed
    // client would leave its source ports in TIME_WAIT for the next run).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let presses = std::sync::atomic::AtomicUsize::new(0);
    let _ = ctrlc::set_handler(move || {
        if presses.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            std::process::exit(130);
        }
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    o.stop = Some(stop);
    let print = |r: &wirebench_xmpp_load::hold::HoldReport| {
        println!(
            "established {} in {:.3} s = {:.0} logins/s ({} failed)",
            r.established,
            r.login_secs,
            r.established as f64 / r.login_secs,
            r.failed
        );
        if let Some(e) = &r.first_error {
            println!("first failure: {e}");
        }
        if !r.rtt_ns.is_empty() {
            let mut v = r.rtt_ns.clone();
            v.sort_unstable();
            let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0;
            println!(
                "pingpong: {} round trips, p50 {:.1} us, p90 {:.1} us, p99 {:.1} us",
                v.len(),
                q(0.5),
                q(0.9),
                q(0.99)
            );
        }
        if let Some((sent, received, wrong, secs)) = r.messages {
            println!(
                "messages: sent {sent}, received {received} in {secs:.3} s ({wrong} from the wrong sender)"
            );
        }
        // Read by scripts while the sessions are held.
        let _ = std::io::Write::flush(&mut std::io::stdout());
    };
    match hold(&o, print) {
        Ok(r) => std::process::exit(if r.ok() { 0 } else { 1 }),
        Err(e) => {
            eprintln!("hold_sessions: {e}");
            std::process::exit(2);
        }
    }
}
