//! What a protocol adds to the `wirebench` command line beyond its parameters: its own
//! commands (a standalone gateway, a hidden worker entry point) and its endpoints of
//! `wirebench serve`. The binary knows none of them by name: it asks the runner's
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

/// A plugin's running endpoints of `wirebench serve`.
pub trait Serving {
    /// Stops them once the process is asked to stop, saying what they served.
    fn stop(self: Box<Self>) -> anyhow::Result<()>;
}
