//! `wirebench serve`'s XMPP flags, its one job: the built-in server (RFC 6120/6121,
//! `wirebench-xmpp-server`) and its WebSocket (RFC 7395), BOSH (XEP-0124/0206) and SockJS
//! 0.3.3 gateways (`wirebench-xmpp-gateway`) started from the command line for
//! third-party clients, with their progress line; and the same server as the one under
//! a sharded load ([`LOAD_SERVER`], `wirebench k8s --with-server`).
//!
//! Concurrency: none of its own beyond what it starts, each in its own model: the
//! server's mio event loops (worker threads or processes), one single-threaded tokio
//! runtime thread per gateway, and one blocking thread printing the progress line.

use anyhow::{Context, Result, bail};
use clap::{Args, FromArgMatches};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use wirebench_model::{Bytes, Shutdown};
use wirebench_protocol::{ServePlan, Serving};

/// The built-in server as the server under a sharded load (`wirebench k8s
/// --with-server`): `wirebench serve --xmpp` on the client port (RFC 6120 §14.7).
pub const LOAD_SERVER: wirebench_protocol::LoadServer = wirebench_protocol::LoadServer {
    port_name: "xmpp",
    port: 5222,
    serve_args: load_serve_args,
};

fn load_serve_args(listen: &str, sizing: &wirebench_protocol::LoadSizing) -> Vec<String> {
    vec![
        "--xmpp".into(),
        listen.into(),
        "--xmpp-users".into(),
        sizing.users.to_string(),
        "--xmpp-sessions".into(),
        sizing.sessions.to_string(),
        "--xmpp-contacts".into(),
        sizing.contacts.to_string(),
    ]
}

// `wirebench serve`'s XMPP flags (a plain comment: a doc comment would become serve's
// own description).
#[derive(Args)]
pub struct ServeFlags {
    /// Also serve XMPP client-to-server on this address, e.g. 127.0.0.1:5222 (the built-in
    /// server: SCRAM or PLAIN, STARTTLS with --xmpp-tls). Users user1..userN, passwords
    /// pass1..passN.
    #[arg(long, value_name = "ADDR")]
    pub xmpp: Option<String>,
    /// The XMPP domain served (clients log in as user1@DOMAIN).
    #[arg(long, default_value = "wirebench.test", value_name = "DOMAIN")]
    pub xmpp_domain: String,
    /// XMPP accounts: user1..userN, passwords pass1..passN (Tsung's convention).
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub xmpp_users: u64,
    /// Roster size of each numbered XMPP user: the N/2 users before and after it.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub xmpp_contacts: u64,
    /// XMPP accounts from a file instead: one `NAME PASSWORD` per line (# comments).
    #[arg(long, value_name = "FILE")]
    pub xmpp_users_file: Option<PathBuf>,
    /// XMPP rosters from a file: one `NAME: CONTACT CONTACT ...` per line, a contact
    /// being a user name or a bare JID.
    #[arg(long, value_name = "FILE")]
    pub xmpp_roster_file: Option<PathBuf>,
    /// XMPP sessions to be able to hold at once. Above what one process may open (its
    /// open-file limit, 20,000 here), the XMPP workers are processes.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub xmpp_sessions: usize,
    /// XMPP workers (event loops) sharing the port through SO_REUSEPORT; default: one per
    /// core, or more when --xmpp-sessions needs more processes.
    #[arg(long, value_name = "N")]
    pub xmpp_workers: Option<usize>,
    /// Run the XMPP workers as processes even when one process would hold the sessions.
    #[arg(long)]
    pub xmpp_processes: bool,
    /// Give each XMPP worker its own port (PORT, PORT+1, ...; with port 0, any free port
    /// each) instead of one shared port, so a client chooses its worker.
    #[arg(long)]
    pub xmpp_port_per_worker: bool,
    /// Offer STARTTLS on the XMPP port, with a self-signed certificate for the domain
    /// made at start (clients must trust it or skip verification).
    #[arg(long)]
    pub xmpp_tls: bool,
    /// Close an XMPP connection that has not bound a resource this long after connecting
    /// (a client that connects and stalls holds a socket until then).
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub xmpp_handshake_timeout: String,
    /// Largest XMPP stanza a client may send; a larger one gets a policy-violation stream
    /// error and the connection is closed.
    #[arg(long, default_value = "64KiB", value_name = "SIZE")]
    pub xmpp_max_stanza: String,
    /// Unsent bytes an XMPP session may queue (a client that stops reading) before it is
    /// closed.
    #[arg(long, default_value = "4MiB", value_name = "SIZE")]
    pub xmpp_max_queued: String,
    /// Also serve XMPP over WebSocket (RFC 7395, subprotocol xmpp, any path, e.g.
    /// ws://127.0.0.1:5280/xmpp-websocket) on this address, in front of --xmpp (or
    /// --xmpp-upstream).
    #[arg(long, value_name = "ADDR")]
    pub xmpp_websocket: Option<String>,
    /// Also serve XMPP over BOSH (XEP-0124/0206, POST to any path, e.g.
    /// http://127.0.0.1:5281/http-bind) on this address, in front of --xmpp (or
    /// --xmpp-upstream).
    #[arg(long, value_name = "ADDR")]
    pub xmpp_bosh: Option<String>,
    /// Also serve XMPP over SockJS 0.3.3 (every transport: websocket, xhr-streaming,
    /// xhr-polling, jsonp-polling, eventsource, htmlfile; any prefix, e.g.
    /// http://127.0.0.1:5282/xmpp) on this address, in front of --xmpp (or --xmpp-upstream).
    #[arg(long, value_name = "ADDR")]
    pub xmpp_sockjs: Option<String>,
    /// SockJS's JSESSIONID option: /info says cookie_needed and session requests set the
    /// JSESSIONID cookie (for load balancers with sticky sessions).
    #[arg(long)]
    pub xmpp_sockjs_cookie: bool,
    /// Also offer, on the --xmpp-sockjs endpoint and its session engine, the services
    /// the SockJS 0.3.3 test suite expects: /echo, /close, /cookie_needed_echo,
    /// /disabled_websocket_echo (for scripts/conformance/sockjs.sh; every other prefix
    /// stays XMPP). Streaming responses then end after 4 KiB, as the suite's test
    /// server's do.
    #[arg(long, requires = "xmpp_sockjs")]
    pub xmpp_sockjs_test_services: bool,
    /// The XMPP server the WebSocket and BOSH endpoints open their sessions' TCP
    /// connections to, if not the built-in one of --xmpp (e.g. Prosody's port 5222).
    #[arg(long, value_name = "ADDR")]
    pub xmpp_upstream: Option<String>,
    /// A BOSH session with no request held for this long ends (XEP-0124 inactivity).
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub xmpp_bosh_inactivity: String,
    /// Longest BOSH `wait` granted: an idle held request is answered empty after it.
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub xmpp_bosh_wait: String,
    /// Largest BOSH request body; a larger one ends its session with policy-violation.
    #[arg(long, default_value = "128KiB", value_name = "SIZE")]
    pub xmpp_bosh_max_body: String,
    /// BOSH sessions held at most (each holds a connection to the XMPP server until it
    /// ends or --xmpp-bosh-inactivity passes): one more is refused with a terminate
    /// body, condition undefined-condition, and a line at most once a second.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub xmpp_bosh_max_sessions: usize,
    /// SockJS sessions held at most (each holds a connection to the XMPP server until it
    /// is closed and --xmpp-sockjs-disconnect-delay passes): one more is answered with
    /// the close frame c[1013,"Too many sessions, try again later"], and a line at most
    /// once a second.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub xmpp_sockjs_max_sessions: usize,
    /// A SockJS session with no receiving request for this long is closed and forgotten
    /// (SockJS's disconnect delay).
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub xmpp_sockjs_disconnect_delay: String,
    /// Close a WebSocket, BOSH or SockJS connection that has not sent its opening this
    /// long after connecting: the WebSocket upgrade; for BOSH and SockJS each HTTP
    /// request head, and the wait for the next one on a kept-alive connection (a client
    /// that stalls or sends its opening a byte a second holds a socket until then). A
    /// WebSocket client has as long again after its upgrade for its first message (the
    /// gateway connects to the XMPP server only then). Request heads are capped at 16 KiB
    /// (WebSocket upgrade) and 64 KiB (BOSH, SockJS): over it, 431 and the connection
    /// closed; a BOSH body announced over --xmpp-bosh-max-body is refused on its start tag.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    pub xmpp_web_opening_timeout: String,
    /// Bytes a second one WebSocket client's messages may bring, one second's worth
    /// banked for bursts (0: no limit). Over it the gateway reads that client's messages
    /// no faster, as ejabberd's c2s shaper (1,000 B/s by default) and Prosody's
    /// mod_limits do: one session flooding at full speed would otherwise take the CPU
    /// the XMPP server behind needs for everyone else. A chat client stays far below it;
    /// give 0 to measure one session's top speed through the gateway.
    #[arg(long, default_value = "64KiB", value_name = "SIZE")]
    pub xmpp_websocket_max_rate: String,
}

/// Adds the XMPP flags to `wirebench serve`, under their own heading.
pub fn serve_flags(serve: clap::Command) -> clap::Command {
    ServeFlags::augment_args(
        serve.next_help_heading("XMPP (the built-in server and its web gateways)"),
    )
}

/// What the XMPP flags asked for, checked; `None` when none was given.
pub fn serve_plan(m: &clap::ArgMatches, quiet: bool) -> Result<Option<Box<dyn ServePlan>>> {
    let flags = ServeFlags::from_arg_matches(m)?;
    // Every argument is checked before anything listens.
    let server = flags.xmpp_config()?;
    let web = flags.web_endpoints()?;
    let upstream = match &flags.xmpp_upstream {
        Some(a) => Some(
            a.parse::<std::net::SocketAddr>()
                .map_err(|_| anyhow::anyhow!("--xmpp-upstream {a}: expected IP:PORT"))?,
        ),
        None => None,
    };
    let opening = wirebench_model::parse_duration(&flags.xmpp_web_opening_timeout)
        .context("--xmpp-web-opening-timeout")?;
    if opening.is_zero() {
        bail!("--xmpp-web-opening-timeout must be more than 0 (every request needs time)");
    }
    if server.is_none() && web.is_empty() {
        return Ok(None);
    }
    Ok(Some(Box::new(Plan {
        flags,
        server,
        web,
        upstream,
        opening,
        quiet,
    })))
}

struct Plan {
    flags: ServeFlags,
    server: Option<wirebench_xmpp_server::XmppServerConfig>,
    web: Vec<(wirebench_xmpp_gateway::Kind, String)>,
    upstream: Option<std::net::SocketAddr>,
    /// --xmpp-web-opening-timeout.
    opening: std::time::Duration,
    quiet: bool,
}

type ServerThread = std::thread::JoinHandle<std::io::Result<()>>;

struct Running {
    stop: Arc<AtomicBool>,
    server: Option<(ServerThread, Arc<wirebench_xmpp_server::ServerStats>)>,
    endpoints: Vec<(&'static str, wirebench_xmpp_gateway::Endpoint)>,
}

impl ServePlan for Plan {
    fn start(self: Box<Self>, _shutdown: &Shutdown) -> Result<Box<dyn Serving>> {
        use wirebench_xmpp_server::XmppServer;
        let Plan {
            flags,
            server,
            web,
            upstream,
            opening,
            quiet,
        } = *self;
        let stop = Arc::new(AtomicBool::new(false));
        let xmpp = match server {
            Some(cfg) => {
                let at = cfg.listen;
                let cfg_accounts = cfg.accounts.count();
                let xs = XmppServer::bind(cfg).with_context(|| format!("XMPP server on {at}"))?;
                let users = match &flags.xmpp_users_file {
                    Some(f) => format!("{} accounts from {}", cfg_accounts, f.display()),
                    None => format!(
                        "users user1..user{n}, passwords pass1..pass{n}",
                        n = flags.xmpp_users
                    ),
                };
                eprintln!(
                    "wirebench serve: XMPP for {} ({users}{})\n\
                     wirebench serve: XMPP layout: {}",
                    flags.xmpp_domain,
                    if flags.xmpp_tls {
                        ", STARTTLS with a self-signed certificate"
                    } else {
                        ""
                    },
                    xs.layout(),
                );
                if !quiet {
                    progress(xs.stats.clone(), stop.clone());
                }
                let stats = xs.stats.clone();
                let mut bound = xs.local_addr()?;
                if bound.ip().is_unspecified() {
                    bound.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
                }
                Some((xs.spawn(stop.clone())?, stats, bound))
            }
            None => None,
        };
        let mut endpoints = Vec::new();
        if let Some(upstream) = upstream.or(xmpp.as_ref().map(|x| x.2)) {
            for (kind, addr) in web {
                endpoints.push(start_endpoint(kind, &addr, upstream, opening, quiet)?);
            }
        }
        Ok(Box::new(Running {
            stop,
            server: xmpp.map(|(t, stats, _)| (t, stats)),
            endpoints,
        }))
    }
}

/// Starts one web gateway in front of `upstream` and says where it is.
fn start_endpoint(
    kind: wirebench_xmpp_gateway::Kind,
    addr: &str,
    upstream: std::net::SocketAddr,
    opening: std::time::Duration,
    quiet: bool,
) -> Result<(&'static str, wirebench_xmpp_gateway::Endpoint)> {
    let at: std::net::SocketAddr = addr
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("{addr}: expected IP:PORT, e.g. 127.0.0.1:5280"))?;
    let l =
        wirebench_net::sock::listener(at).with_context(|| format!("cannot listen on {addr}"))?;
    let (what, path, any) = match kind {
        wirebench_xmpp_gateway::Kind::WebSocket { .. } => (
            "XMPP over WebSocket (RFC 7395)",
            "ws://{}/xmpp-websocket",
            "any path",
        ),
        wirebench_xmpp_gateway::Kind::Bosh(_) => (
            "XMPP over BOSH (XEP-0124/0206)",
            "http://{}/http-bind",
            "any path",
        ),
        wirebench_xmpp_gateway::Kind::SockJs(_) => {
            ("XMPP over SockJS 0.3.3", "http://{}/xmpp", "any prefix")
        }
    };
    let e = wirebench_xmpp_gateway::spawn_timed(l, upstream, kind, opening, !quiet)?;
    let url = path.replace("{}", &e.addr.to_string());
    eprintln!("wirebench serve: {what} on {url} ({any}), in front of {upstream}");
    Ok((what, e))
}

impl Serving for Running {
    fn stop(self: Box<Self>) -> Result<()> {
        for (what, e) in self.endpoints {
            eprintln!("wirebench serve: {what} totals: {}", e.stats.line());
            e.stop();
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some((t, stats)) = self.server {
            let r = t.join();
            eprintln!(
                "wirebench serve: XMPP totals: {}",
                totals(&stats.snapshot())
            );
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => bail!("the XMPP server failed: {e}"),
                Err(_) => bail!("the XMPP server panicked"),
            }
        }
        Ok(())
    }
}

/// The counters a user of `serve --xmpp` watches, in one line.
fn totals(s: &wirebench_xmpp_server::StatsSnapshot) -> String {
    format!(
        "{} open, {} logged in, {} stanzas routed ({} to another worker), {} unroutable; \
         closed: {} on handshake timeout, {} slow readers, {} on stream errors, {} over \
         the session cap",
        s.open,
        s.bound,
        s.routed,
        s.routed_across,
        s.unroutable,
        s.closed_timeout,
        s.closed_slow,
        s.closed_error,
        s.refused_full
    )
}

/// Prints the XMPP counters every 5 s while they change, until `stop`.
fn progress(stats: Arc<wirebench_xmpp_server::ServerStats>, stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut last = stats.snapshot();
        let mut waited = 0;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            waited += 1;
            if waited < 50 {
                continue;
            }
            waited = 0;
            let now = stats.snapshot();
            if now != last {
                eprintln!("wirebench serve: XMPP: {}", totals(&now));
                last = now;
            }
        }
    });
}

impl ServeFlags {
    /// The WebSocket and BOSH endpoints asked for: (kind, listen address), checked
    /// before anything listens. The upstream is resolved by the caller.
    fn web_endpoints(&self) -> Result<Vec<(wirebench_xmpp_gateway::Kind, String)>> {
        let mut v = Vec::new();
        if self.xmpp_websocket.is_none() && self.xmpp_bosh.is_none() && self.xmpp_sockjs.is_none() {
            return Ok(v);
        }
        if self.xmpp.is_none() && self.xmpp_upstream.is_none() {
            bail!(
                "--xmpp-websocket, --xmpp-bosh and --xmpp-sockjs front an XMPP server: give --xmpp ADDR (the \
                 built-in one) or --xmpp-upstream ADDR (another)"
            );
        }
        let size = |flag: &str, v: &str| -> Result<usize> {
            Ok(Bytes::parse(v).with_context(|| flag.to_string())?.0 as usize)
        };
        let secs = |flag: &str, v: &str| -> Result<u64> {
            let d = wirebench_model::parse_duration(v).with_context(|| flag.to_string())?;
            if d.as_secs() == 0 {
                bail!("{flag} must be at least 1s (BOSH counts whole seconds)");
            }
            Ok(d.as_secs())
        };
        let max_stanza = size("--xmpp-max-stanza", &self.xmpp_max_stanza)?;
        if let Some(a) = &self.xmpp_websocket {
            let rate = size("--xmpp-websocket-max-rate", &self.xmpp_websocket_max_rate)?;
            let kind = wirebench_xmpp_gateway::Kind::WebSocket {
                max_stanza,
                max_rate: (rate > 0).then_some(rate as u64),
            };
            v.push((kind, a.clone()));
        }
        if let Some(a) = &self.xmpp_bosh {
            let cfg = wirebench_xmpp_gateway::BoshConfig {
                max_wait: secs("--xmpp-bosh-wait", &self.xmpp_bosh_wait)?,
                inactivity: secs("--xmpp-bosh-inactivity", &self.xmpp_bosh_inactivity)?,
                max_body: size("--xmpp-bosh-max-body", &self.xmpp_bosh_max_body)?,
                max_sessions: self.xmpp_bosh_max_sessions,
                max_stanza,
                ..Default::default()
            };
            v.push((wirebench_xmpp_gateway::Kind::Bosh(cfg), a.clone()));
        }
        if let Some(a) = &self.xmpp_sockjs {
            let mut o = wirebench_xmpp_gateway::sockjs::SockJsOptions {
                max_stanza,
                jsessionid: self.xmpp_sockjs_cookie,
                test_services: self.xmpp_sockjs_test_services,
                ..Default::default()
            };
            o.cfg.max_sessions = self.xmpp_sockjs_max_sessions;
            let delay = wirebench_model::parse_duration(&self.xmpp_sockjs_disconnect_delay)
                .context("--xmpp-sockjs-disconnect-delay")?;
            if delay.is_zero() {
                bail!("--xmpp-sockjs-disconnect-delay must be more than 0");
            }
            o.cfg.disconnect_delay_ns = delay.as_nanos() as u64;
            if o.test_services {
                // The suite's test server ends streaming responses after 4 KiB (the
                // spec's default is 128 KiB), so its response-limit tests end quickly.
                o.cfg.response_limit = 4096;
            }
            v.push((wirebench_xmpp_gateway::Kind::SockJs(o), a.clone()));
        }
        Ok(v)
    }

    /// The built-in XMPP server's configuration, if `--xmpp` was given: its address,
    /// accounts (files read and checked here) and layout wishes.
    fn xmpp_config(&self) -> Result<Option<wirebench_xmpp_server::XmppServerConfig>> {
        let Some(addr) = &self.xmpp else {
            return Ok(None);
        };
        let at: std::net::SocketAddr = addr
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("--xmpp {addr}: expected IP:PORT, e.g. 127.0.0.1:5222"))?;
        let mut cfg =
            wirebench_xmpp_server::XmppServerConfig::new(at, &self.xmpp_domain, self.xmpp_users);
        cfg.workers = self.xmpp_workers.unwrap_or(0);
        cfg.sessions = self.xmpp_sessions;
        cfg.processes = self.xmpp_processes;
        cfg.port_per_worker = self.xmpp_port_per_worker;
        cfg.accounts.numbered.contacts = self.xmpp_contacts;
        cfg.handshake_timeout = wirebench_model::parse_duration(&self.xmpp_handshake_timeout)
            .context("--xmpp-handshake-timeout")?;
        if cfg.handshake_timeout.is_zero() {
            bail!("--xmpp-handshake-timeout must be more than 0 (every login needs time)");
        }
        let size = |flag: &str, text: &str| -> Result<usize> {
            let b = Bytes::parse(text).with_context(|| flag.to_string())?;
            match usize::try_from(b.0) {
                Ok(n) if n >= 1024 => Ok(n),
                _ => bail!("{flag} {text}: give at least 1KiB"),
            }
        };
        cfg.max_stanza = size("--xmpp-max-stanza", &self.xmpp_max_stanza)?;
        cfg.max_queued = size("--xmpp-max-queued", &self.xmpp_max_queued)?;
        if let Some(f) = &self.xmpp_users_file {
            cfg.accounts
                .load_users(f)
                .map_err(|e| anyhow::anyhow!("--xmpp-users-file {e}"))?;
        }
        if let Some(f) = &self.xmpp_roster_file {
            cfg.accounts
                .load_rosters(f)
                .map_err(|e| anyhow::anyhow!("--xmpp-roster-file {e}"))?;
        }
        if self.xmpp_tls {
            cfg.tls = Some(
                wirebench_xmpp_server::self_signed(&self.xmpp_domain)
                    .map_err(|e| anyhow::anyhow!("--xmpp-tls: {e}"))?,
            );
        }
        Ok(Some(cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `wirebench serve`'s XMPP flags parsed from `args`, as serve parses them.
    fn flags(args: &[&str]) -> ServeFlags {
        let cmd = serve_flags(clap::Command::new("serve"));
        let m = cmd
            .try_get_matches_from(std::iter::once("serve").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        ServeFlags::from_arg_matches(&m).unwrap()
    }

    fn plan_error(args: &[&str]) -> String {
        let cmd = serve_flags(clap::Command::new("serve"));
        let m = cmd
            .try_get_matches_from(std::iter::once("serve").chain(args.iter().copied()))
            .unwrap();
        match serve_plan(&m, true) {
            Ok(p) => panic!("{args:?} was accepted (plan: {})", p.is_some()),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn no_xmpp_flag_plans_nothing() {
        let m = serve_flags(clap::Command::new("serve")).get_matches_from(["serve"]);
        assert!(serve_plan(&m, true).unwrap().is_none());
    }

    #[test]
    fn the_server_takes_the_flags_as_given() {
        let f = flags(&[
            "--xmpp",
            " 127.0.0.1:5222",
            "--xmpp-users",
            "7",
            "--xmpp-workers",
            "3",
            "--xmpp-max-stanza",
            "2KiB",
        ]);
        let cfg = f.xmpp_config().unwrap().expect("--xmpp plans a server");
        assert_eq!(cfg.listen, "127.0.0.1:5222".parse().unwrap());
        assert_eq!((cfg.workers, cfg.max_stanza), (3, 2048));
        assert_eq!(cfg.accounts.count(), 7);
    }

    #[test]
    fn every_bad_flag_is_refused_by_name_before_anything_listens() {
        for (args, says) in [
            (
                &["--xmpp", "localhost"][..],
                "--xmpp localhost: expected IP:PORT",
            ),
            (
                &["--xmpp", "127.0.0.1:0", "--xmpp-max-stanza", "512"],
                "--xmpp-max-stanza 512: give at least 1KiB",
            ),
            (
                &["--xmpp", "127.0.0.1:0", "--xmpp-handshake-timeout", "0s"],
                "--xmpp-handshake-timeout must be more than 0",
            ),
            (
                &["--xmpp-websocket", "127.0.0.1:0"],
                "give --xmpp ADDR (the built-in one) or --xmpp-upstream ADDR",
            ),
            (
                &[
                    "--xmpp-bosh",
                    "127.0.0.1:0",
                    "--xmpp-upstream",
                    "127.0.0.1:5222",
                    "--xmpp-bosh-wait",
                    "500ms",
                ],
                "--xmpp-bosh-wait must be at least 1s",
            ),
            (
                &[
                    "--xmpp-websocket",
                    "127.0.0.1:0",
                    "--xmpp-upstream",
                    "prosody",
                ],
                "--xmpp-upstream prosody: expected IP:PORT",
            ),
            (
                &["--xmpp", "127.0.0.1:0", "--xmpp-web-opening-timeout", "0s"],
                "--xmpp-web-opening-timeout must be more than 0",
            ),
            (
                &[
                    "--xmpp",
                    "127.0.0.1:0",
                    "--xmpp-users-file",
                    "/nonexistent/users",
                ],
                "--xmpp-users-file",
            ),
        ] {
            let e = plan_error(args);
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }

    #[test]
    fn the_gateways_front_the_upstream_with_the_shared_stanza_limit() {
        let f = flags(&[
            "--xmpp-upstream",
            "127.0.0.1:5222",
            "--xmpp-websocket",
            "127.0.0.1:5280",
            "--xmpp-bosh",
            "127.0.0.1:5281",
            "--xmpp-websocket-max-rate",
            "0",
            "--xmpp-max-stanza",
            "4KiB",
        ]);
        let web = f.web_endpoints().unwrap();
        assert_eq!(web.len(), 2);
        match &web[0] {
            (
                wirebench_xmpp_gateway::Kind::WebSocket {
                    max_stanza,
                    max_rate,
                },
                a,
            ) => {
                assert_eq!(
                    (*max_stanza, *max_rate, a.as_str()),
                    (4096, None, "127.0.0.1:5280")
                );
            }
            (_, a) => panic!("the first endpoint, on {a}, is not the WebSocket one"),
        }
        assert!(
            matches!(&web[1].0, wirebench_xmpp_gateway::Kind::Bosh(c) if c.max_stanza == 4096 && c.max_wait == 60)
        );
    }

    #[test]
    fn the_load_server_is_sized_by_the_case() {
        let sizing = wirebench_protocol::LoadSizing {
            users: 300,
            sessions: 200,
            contacts: 4,
        };
        let args = (LOAD_SERVER.serve_args)("0.0.0.0:5222", &sizing);
        assert_eq!(
            args,
            [
                "--xmpp",
                "0.0.0.0:5222",
                "--xmpp-users",
                "300",
                "--xmpp-sessions",
                "200",
                "--xmpp-contacts",
                "4"
            ]
        );
        // What serve is given, serve takes.
        let f = flags(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(
            (f.xmpp_users, f.xmpp_sessions, f.xmpp_contacts),
            (300, 200, 4)
        );
    }
}
