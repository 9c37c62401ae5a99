//! Runs one gateway from a TOML file until SIGINT or SIGTERM, then prints its counters:
//! `cargo run -p wirebench-x2x-gateway --release --example gateway -- protocols/xmpp/x2x-gateway/example.toml`.
//! (The `wirebench x2x --config FILE` subcommand is meant to replace this.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: gateway CONFIG.toml");
        std::process::exit(2);
    };
    let config = match wirebench_x2x_gateway::Config::from_file(std::path::Path::new(&path)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let flag = Arc::new(AtomicBool::new(false));
    let f2 = flag.clone();
    std::thread::spawn(move || {
        while !STOP.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        f2.store(true, Ordering::SeqCst);
    });
    match wirebench_x2x_gateway::run(config, flag) {
        Ok(stats) => println!("{stats:#?}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
