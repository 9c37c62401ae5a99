//! Convert's commands: `wirebench converter`, an RFC 8803 Transport Converter run by hand,
//! and `wirebench converter-client`, the RFC's client side for any program (a local
//! SOCKS5 front, RFC 1928).

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches, Parser};
use wirebench_model::Shutdown;
use wirebench_protocol::PluginCommand;
use wirebench_protocol::surface::stop_flag;

/// The plugin's commands, in the order `wirebench --help` lists them.
pub static COMMANDS: &[PluginCommand] = &[
    PluginCommand {
        command: Converter::command,
        run: converter,
    },
    PluginCommand {
        command: ConverterClient::command,
        run: converter_client,
    },
];

/// Run an RFC 8803 Transport Converter (the 0-RTT TCP Convert Protocol) until Ctrl-C.
///
/// A client's SYN carries (with TCP Fast Open) a Connect TLV naming its server and its
/// first data; the converter connects onwards, answers once the server has accepted,
/// forwards the data and relays both ways. It connects only to the networks --allow
/// names and answers others with the RFC's "Not Authorized" error. RFC 8803 forbids
/// loopback destinations: name them in --allow only to test on one machine. With Fast
/// Open the client's data rides in the converter's SYN to the server too. Clients need
/// net.ipv4.tcp_fastopen with bit 1, this host both bits (3). The client
/// side is in the connect workload (--protocol convert) and, for any program,
/// `wirebench converter-client`; docs/protocols/proxies.md.
#[derive(Parser)]
#[command(
    name = "converter",
    after_help = "Examples:\n  \
        wirebench converter --listen 0.0.0.0:5124 --allow 198.51.100.0/24,2001:db8::/32\n  \
        wirebench converter --listen 127.0.0.1:5124 --allow 127.0.0.1   # a test on this machine"
)]
struct Converter {
    /// Address and port to listen on.
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// Destinations the converter may connect to: addresses and networks, comma-separated.
    #[arg(long, value_name = "NETWORKS")]
    allow: String,
    /// Do not use TCP Fast Open, neither towards clients nor onwards to servers (each
    /// then pays a round trip for its handshake).
    #[arg(long)]
    no_tfo: bool,
    /// Threads, each with its own SO_REUSEPORT listener on the port and its own
    /// runtime, so that the kernel spreads connections over the cores (0: one per core).
    #[arg(long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Clients held open at most, over all threads: over it a new connection is closed as
    /// soon as it is accepted, and a line says so at most once a second.
    #[arg(long, default_value_t = wirebench_net::cap::DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    max_connections: usize,
}

/// Run the client side of RFC 8803 for any program: a local SOCKS5 proxy that sends
/// each connection through a Transport Converter, until Ctrl-C.
///
/// Each CONNECT (to an IPv4 or IPv6 address; the Convert protocol carries no names)
/// becomes one connection to --via whose first write is the Connect TLV and the
/// program's first data, in the SYN with TCP Fast Open (this host needs bit 1 of
/// net.ipv4.tcp_fastopen). The CONNECT is answered at once so that the program sends
/// that data; a converter's refusal then closes the connection and is logged here.
/// docs/protocols/proxies.md.
#[derive(Parser)]
#[command(
    name = "converter-client",
    after_help = "Examples:\n  \
        wirebench converter-client --listen 127.0.0.1:1080 --via 192.0.2.10:5124\n  \
        curl --socks5 127.0.0.1:1080 http://198.51.100.7/   # --socks5 resolves names here"
)]
struct ConverterClient {
    /// Local address for programs' SOCKS5 connections (keep it on loopback: the
    /// front has no authentication).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// The Transport Converter, ADDR:PORT.
    #[arg(long, value_name = "ADDR")]
    via: String,
    /// Do not use TCP Fast Open towards the converter (a round trip more).
    #[arg(long)]
    no_tfo: bool,
    /// How long to wait for a program's first data before connecting without it
    /// (programs whose server speaks first, such as SMTP, wait this long).
    #[arg(long, value_name = "DURATION", default_value = "50ms")]
    first_data_wait: String,
    /// Programs' connections held open at most: over it a new connection is closed as
    /// soon as it is accepted, and a line says so at most once a second.
    #[arg(long, default_value_t = wirebench_net::cap::DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    max_connections: usize,
}

fn converter_client(m: &clap::ArgMatches, shutdown: &Shutdown) -> Result<u8> {
    use crate::local::{self, LocalConfig};
    let args = ConverterClient::from_arg_matches(m)?;
    let (listen, via, tfo, wait) = (&args.listen, &args.via, !args.no_tfo, &args.first_data_wait);
    let via: std::net::SocketAddr = via
        .parse()
        .map_err(|e| anyhow::anyhow!("--via {via:?}: {e} (an ADDR:PORT, e.g. 192.0.2.10:5124)"))?;
    let first_data_wait = wirebench_model::parse_duration(wait)
        .map_err(|e| anyhow::anyhow!("--first-data-wait: {e}"))?;
    if args.max_connections == 0 {
        anyhow::bail!("--max-connections must be at least 1");
    }
    // A 4096-deep accept queue, not std's 128, which a connection flood overflows.
    let l = std::net::ToSocketAddrs::to_socket_addrs(listen.as_str())
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| anyhow::anyhow!("cannot listen on {listen}: not an address"))
        .and_then(|at| {
            wirebench_net::sock::listener(at).with_context(|| format!("cannot listen on {listen}"))
        })?;
    if tfo
        && let Some(p) =
            wirebench_net::sock::tfo_sysctl_problem(wirebench_net::sock::tfo_sysctl(), true, false)
    {
        eprintln!("wirebench converter-client: warning: {p}");
    }
    eprintln!(
        "wirebench converter-client: SOCKS5 on {}, through the converter {via}{} (Ctrl-C to stop)",
        l.local_addr()?,
        if tfo { " with TCP Fast Open" } else { "" }
    );
    let at = l.local_addr()?;
    let cfg = LocalConfig {
        via,
        tfo,
        first_data_wait,
        log: true,
        cap: Some(wirebench_net::cap::ConnCap::new(
            format!("wirebench converter-client {at}"),
            args.max_connections,
            true,
        )),
    };
    wirebench_net::trim::spawn().context("starting the memory trimmer thread")?;
    local::run_standalone(l, cfg, stop_flag(shutdown)).map_err(|e| anyhow::anyhow!(e))?;
    eprintln!("wirebench converter-client: stopped");
    Ok(0)
}

fn converter(m: &clap::ArgMatches, shutdown: &Shutdown) -> Result<u8> {
    use crate::converter::{self, Allow, Config};
    let args = Converter::from_arg_matches(m)?;
    let (listen, allow, tfo) = (&args.listen, &args.allow, !args.no_tfo);
    let allow_list = Allow::parse(allow).map_err(|e| anyhow::anyhow!("--allow: {e}"))?;
    if args.max_connections == 0 {
        anyhow::bail!("--max-connections must be at least 1");
    }
    let at = std::net::ToSocketAddrs::to_socket_addrs(listen.as_str())
        .with_context(|| format!("cannot listen on {listen}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("cannot listen on {listen}: no address"))?;
    let threads = wirebench_net::threads::per_core(args.threads);
    let ls = wirebench_net::threads::reuseport_listeners(at, threads)
        .with_context(|| format!("cannot listen on {listen}"))?;
    if tfo
        && let Some(p) =
            wirebench_net::sock::tfo_sysctl_problem(wirebench_net::sock::tfo_sysctl(), true, true)
    {
        eprintln!("wirebench converter: warning: {p}");
    }
    let at = ls[0].local_addr()?;
    let cfg = Config {
        allow: allow_list,
        tfo,
        log: true,
        legs: None,
        cap: Some(wirebench_net::cap::ConnCap::new(
            format!("wirebench converter {at}"),
            args.max_connections,
            true,
        )),
    };
    let mut threads = converter::start(ls, cfg).map_err(|e| anyhow::anyhow!(e))?;
    wirebench_net::trim::spawn().context("starting the memory trimmer thread")?;
    eprintln!(
        "wirebench converter: listening on {at}, connecting to {allow} only{} (Ctrl-C to stop)",
        if tfo { ", TCP Fast Open offered" } else { "" }
    );
    shutdown.wait();
    // All asked at once, then each waited for (dropped).
    for t in &mut threads {
        t.signal();
    }
    drop(threads);
    eprintln!("wirebench converter: stopped");
    Ok(0)
}
