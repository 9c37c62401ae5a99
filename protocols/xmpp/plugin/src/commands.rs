//! XMPP's own `wirebench` subcommands: `wirebench x2x` (the XEP-0361 gateway run by hand)
//! and the hidden entry points of its worker processes (`xmpp-worker` of `serve --xmpp`,
//! `xmpp-load-worker` of a load case: the binary re-run, named here once). `wirebench
//! serve`'s XMPP flags are `wirebench-xmpp-serve`'s.

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches, Parser};
use std::path::PathBuf;
use wirebench_model::Shutdown;
use wirebench_protocol::PluginCommand;
use wirebench_protocol::surface::stop_flag;

/// The plugin's commands, in the order `wirebench --help` lists them.
pub static COMMANDS: &[PluginCommand] = &[
    PluginCommand {
        command: X2x::command,
        run: x2x,
    },
    PluginCommand {
        command: worker_command,
        run: worker,
    },
    PluginCommand {
        command: load_worker_command,
        run: load_worker,
    },
];

/// Run a zero-handshake XMPP server link gateway (XEP-0361) until Ctrl-C.
///
/// The gateway attaches to the local XMPP server as the XEP-0114 component of the
/// remote domain(s) and carries their stanzas to the peer gateway over one TCP
/// connection: no stream negotiation, zlib with a preset dictionary, TCP Fast Open,
/// and nothing lost across link outages (acknowledged, resent in order). The file
/// format, with every key explained: protocols/xmpp/x2x-gateway/example.toml; docs/x2x.md.
#[derive(Parser)]
#[command(name = "x2x")]
struct X2x {
    /// Gateway configuration (TOML).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
}

fn x2x(m: &clap::ArgMatches, shutdown: &Shutdown) -> Result<u8> {
    let args = X2x::from_arg_matches(m)?;
    let cfg = wirebench_x2x_gateway::Config::from_file(&args.config)?;
    let stats = wirebench_x2x_gateway::run(cfg, stop_flag(shutdown))?;
    eprintln!("x2x: stopped; {stats:?}");
    Ok(0)
}

fn worker_command() -> clap::Command {
    clap::Command::new(wirebench_xmpp_server::procs::WORKER_COMMAND)
        .about("One worker process of `serve --xmpp` (started by it, not by hand)")
        .hide(true)
        .arg(
            clap::Arg::new("index")
                .long("index")
                .value_name("INDEX")
                .required(true)
                .value_parser(clap::value_parser!(usize)),
        )
}

fn load_worker_command() -> clap::Command {
    clap::Command::new(crate::load_case::WORKER_COMMAND)
        .about("One generator process of an XMPP load case (started by `run`, not by hand)")
        .hide(true)
}

/// Asks the kernel to send this process SIGTERM when the process that started it ends,
/// however it ends (a second Ctrl-C, SIGKILL): a worker never outlives its wirebench.
fn die_with_parent() {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and changes nothing else.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    // The parent may have gone before the call: then this process is already orphaned.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } == 1 {
        // SAFETY: raising a signal at this process.
        unsafe { libc::raise(libc::SIGTERM) };
    }
}

/// A worker process of `serve --xmpp`: serves until its parent stops it (SIGTERM, or
/// Ctrl-C, which reaches the whole process group).
fn worker(m: &clap::ArgMatches, shutdown: &Shutdown) -> Result<u8> {
    let index = *m.get_one::<usize>("index").context("--index")?;
    die_with_parent();
    wirebench_xmpp_server::procs::worker_main(index, shutdown.flag())
        .with_context(|| format!("XMPP worker {index}"))?;
    Ok(0)
}

/// A generator process of an XMPP load case: runs its part until done or SIGTERM, then
/// closes its sessions and reports what was measured.
fn load_worker(_: &clap::ArgMatches, shutdown: &Shutdown) -> Result<u8> {
    die_with_parent();
    crate::load_case::worker_main(shutdown.flag()).context("XMPP load generator")?;
    Ok(0)
}
