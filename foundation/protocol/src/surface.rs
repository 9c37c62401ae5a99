//! What a protocol adds to the `wirebench` command line beyond its parameters: its own
//! commands (a standalone gateway, a hidden worker entry point) and its endpoints of
//! `wirebench serve`. The binary knows none of them by name: it asks the plan's
//! registry, adds each plugin's commands and serve flags to its definition, and hands
//! the parsed flags back with the process's one [`Shutdown`].

use wirebench_model::Shutdown;

/// A subcommand of `wirebench` that a plugin provides.
pub struct PluginCommand {
    /// The subcommand's definition (name, help, flags); it may be hidden, as a worker
    /// process's entry point is.
    pub command: fn() -> clap::Command,
    /// Runs it until done or until `shutdown` is triggered (Ctrl-C or SIGTERM); the
    /// process's exit code.
    pub run: fn(&clap::ArgMatches, &Shutdown) -> anyhow::Result<u8>,
}

/// Endpoints of `wirebench serve` that a plugin's flags asked for, checked (files read,
/// addresses parsed) but not yet listening.
pub trait ServePlan {
    /// Starts them, after the reference server listens; they run until [`Serving::stop`].
    fn start(self: Box<Self>, shutdown: &Shutdown) -> anyhow::Result<Box<dyn Serving>>;
}

/// A `wirebench serve` endpoint that can be the server under a sharded load
/// (`wirebench k8s --with-server`, a Deployment and a Service beside the shards' Job).
#[derive(Debug, Clone, Copy)]
pub struct LoadServer {
    /// The port's name in the container and the Service (a DNS label).
    pub port_name: &'static str,
    pub port: u16,
    /// `wirebench serve`'s arguments that start it listening on `listen` with accounts
    /// and room for `sizing`.
    pub serve_args: fn(listen: &str, sizing: &LoadSizing) -> Vec<String>,
}

/// How large the server under a sharded load is made (`wirebench k8s --server-users`,
/// `--server-sessions`, `--server-contacts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSizing {
    pub users: u64,
    pub sessions: usize,
    pub contacts: u64,
}

/// `wirebench serve`'s own server, the reference server that `wirebench run --server`
/// measures against: bound and listening, not yet serving. The protocol that owns it
/// provides it ([`crate::Protocol::serve_main`]).
pub trait MainServer {
    fn local_addr(&self) -> std::net::SocketAddr;
    /// Serves until `wait` returns, then stops.
    fn run_until(self: Box<Self>, wait: Box<dyn FnOnce() + '_>) -> anyhow::Result<()>;
}

/// A plugin's running endpoints of `wirebench serve`.
pub trait Serving {
    /// Stops them once the process is asked to stop, saying what they served.
    fn stop(self: Box<Self>) -> anyhow::Result<()>;
}

/// An `Arc<AtomicBool>` that is set once `shutdown` is triggered, for servers and
/// gateways whose loops take one (a thread waits for the request to pass it on).
pub fn stop_flag(shutdown: &Shutdown) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let (s, f) = (shutdown.clone(), flag.clone());
    std::thread::Builder::new()
        .name("wb-stop-flag".into())
        .spawn(move || {
            s.wait();
            f.store(true, Ordering::SeqCst);
        })
        .expect("cannot start a thread");
    flag
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_flag_follows_the_request() {
        let s = wirebench_model::Shutdown::new();
        let f = super::stop_flag(&s);
        assert!(!f.load(std::sync::atomic::Ordering::SeqCst));
        s.trigger();
        let t0 = std::time::Instant::now();
        while !f.load(std::sync::atomic::Ordering::SeqCst) {
            assert!(t0.elapsed().as_secs() < 5, "the flag was never set");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
