//! Study S2 against a real server's own endpoints (`xmpp.ping=server` with
//! `xmpp.server=prosody` or `ejabberd`): one Prosody 0.12 (`mod_bosh`, `mod_websocket`) or
//! ejabberd 23.01 (`ejabberd_http` with `mod_bosh` and `ejabberd_http_ws`) started for the
//! case, and client1, native or in headless Chromium, over TCP, WebSocket or BOSH straight
//! to it, with no gateway of ours between. With `xmpp.endpoint=wirebench` the client goes
//! through wirebench's gateway in front of the server's client port instead (the same
//! gateway as in front of the built-in server): WebSocket, BOSH or any SockJS transport. Both servers serve BOSH at `/http-bind` and
//! WebSocket at `/xmpp-websocket`, so clients and pages use the same URLs as against the
//! built-in server's endpoints.
//!
//! Placement is the built-in server's: in the lab's server host when the run has a lab
//! (the link then lies between the client and the server's endpoint), else on loopback
//! with free ports (a fixed port could be held by another server on this machine).

use crate::endpoint;
use crate::params::{Endpoint, Params};
use crate::workload::{Topology, XmppRun};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use wirebench_model::metric::SERVER_CPU;
use wirebench_model::metric::SERVER_RSS;
use wirebench_protocol::Fault;
use wirebench_protocol::hosts::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_protocol::{Case, Ctx, Env, Outcome, WorkloadError};
use wirebench_xmpp_client::transport::Transport;
use wirebench_xmpp_peers::peer::{PeerConfig, Server};

/// The same domain and accounts as the built-in server's, so every row of the study's
/// table logs in as the same user.
const DOMAIN: &str = "wirebench.test";

/// The parameters of a case against `name` (`prosody`, `ejabberd`) that this test can
/// run: refused before its server starts (and before anything it needs is looked for).
pub(crate) fn check_input(p: &Params, name: &str) -> Result<(), WorkloadError> {
    if p.s2s.is_some() {
        return Err(WorkloadError::Input(
            "xmpp.ping=server runs study S2 against one server: s2s does not apply".into(),
        ));
    }
    let transport = &p.transport;
    let gateway = p.endpoint == Endpoint::Wirebench;
    if let (Transport::SockJs { .. }, false) = (transport, gateway) {
        return Err(WorkloadError::Input(format!(
            "xmpp.server={name} has no SockJS endpoint of its own: its transports are tcp, \
             websocket and bosh; xmpp.endpoint=wirebench (--xmpp-endpoint wirebench) puts \
             wirebench's SockJS gateway in front of its client port"
        )));
    }
    if gateway && *transport == Transport::Tcp {
        return Err(WorkloadError::Input(
            "xmpp.endpoint=wirebench needs a web transport (websocket, bosh or SockJS): over \
             tcp the client talks to the server directly"
                .into(),
        ));
    }
    Ok(())
}

/// Runs study S2's test against `server`'s own endpoint for the case's transport.
pub fn run(
    env: &Env,
    case: &Case,
    p: &Params,
    repeat: u32,
    ctx: &Ctx,
    server: Server,
) -> Result<Outcome, WorkloadError> {
    let name = server.name();
    check_input(p, name)?;
    let transport = p.transport.clone();
    let gateway = p.endpoint == Endpoint::Wirebench;
    let in_browser = p.in_browser();
    if in_browser {
        check_browser_case(case, p)?;
    }
    let server_ns = env.lab.map(|l| l.server().name().to_string());
    let addr: IpAddr = match &server_ns {
        Some(_) => SERVER_ADDR.into(),
        None => [127, 0, 0, 1].into(),
    };
    let cfg = server_config(server, addr, server_ns.is_some(), gateway)?;
    let c2s: SocketAddr = (addr, cfg.c2s_port).into();
    let http: SocketAddr = (addr, cfg.http_port.unwrap_or_default()).into();
    let dir = env.peer_dir(case, repeat).join(name);
    let real = server
        .start(cfg, &dir, server_ns.as_deref())
        .map_err(|e| WorkloadError::Environment(e.to_string()))?;
    let max_stanza = case.payload() as usize + 4096;
    let endpoint = if gateway {
        match endpoint::start(&transport, c2s, server_ns.clone(), max_stanza) {
            Ok(e) => e,
            Err(e) => return Err(WorkloadError::Environment(format!("the gateway: {e}"))),
        }
    } else {
        None
    };
    let front = endpoint
        .as_ref()
        .map_or_else(|| front_of(&transport, c2s, http), |e| e.addr);
    let warm = warm_up(&transport, front, server_ns.as_deref()).map_err(|e| {
        WorkloadError::Peer(format!(
            "{name}: the warm-up session over {} failed: {e}\n{}",
            transport.word(),
            real.log_tail()
        ))
    });
    let before = real.usage();
    // The warm-up's sessions and requests are not the case's.
    let warm_counts = endpoint
        .as_ref()
        .map_or((0, 0), |e| endpoint::web_counts(&e.stats));
    let url = endpoint::url(&transport, front);
    let mut out = if let Err(e) = warm {
        Err(e)
    } else if in_browser {
        let progress = match &endpoint {
            // Our gateway counts the page's requests; a server's own endpoint does not,
            // so its CPU time shows the page at work.
            Some(e) => wirebench_xmpp_browser::Progress::Endpoint(e.stats.clone()),
            None => wirebench_xmpp_browser::Progress::ServerCpu(real.pid().unwrap_or_default()),
        };
        let b = browser_run(env, case, p, url.clone(), progress);
        wirebench_xmpp_browser::run(&b, ctx)
    } else {
        let run = XmppRun::from_case(
            case,
            p,
            // Study S2 has client1 alone: client2 is never started.
            Topology::one_server(DOMAIN, front, server_ns, transport.clone()),
            env.seed,
        );
        crate::workload::run(&run, ctx)
    };
    let after = real.usage();
    let died = after.is_none();
    let web = endpoint.map(|e| {
        let st = e.stats.clone();
        e.stop();
        st
    });
    drop(real);
    // The logs stay with the results; the accounts and databases are ours alone.
    for sub in ["data", "spool"] {
        let _ = std::fs::remove_dir_all(dir.join(sub));
    }
    if let Ok(o) = &mut out {
        if let (Some(b), Some(a)) = (before, after) {
            // What the case cost the server, its start-up left out.
            o.put(SERVER_CPU, (a.cpu_s - b.cpu_s).max(0.0));
            o.put(SERVER_RSS, a.rss_bytes as f64);
        }
        wirebench_peer::record_sessions(o, 1);
        wirebench_peer::record_kernel_tcp(o);
        let what = describe(server, web.is_some(), &transport, &url, c2s);
        if let Some(st) = &web {
            endpoint::push_stats(o, st, warm_counts);
        }
        o.notes.push(format!(
            "{what}; its logs are under {}",
            relative(&dir, env.out)
        ));
    }
    if died && out.is_ok() {
        return Err(WorkloadError::Peer(format!(
            "{name} exited during the case (logs under {})",
            dir.display()
        )));
    }
    out
}

/// The server's settings for the case: one account, no server link, its own web
/// endpoints on the usual ports in the lab's server host (moved aside when our `gateway`
/// takes 5280), else on free loopback ports.
fn server_config(
    server: Server,
    addr: IpAddr,
    in_lab: bool,
    gateway: bool,
) -> Result<PeerConfig, WorkloadError> {
    let mut cfg = PeerConfig::new(DOMAIN, addr);
    cfg.s2s = false;
    if in_lab {
        // The lab's server host is ours alone: the usual ports. Our gateway takes 5280
        // when it stands in front (part real-gateway), so the server's own web endpoints,
        // unused then, move aside.
        cfg.http_port = Some(if gateway { 5290 } else { 5280 });
    } else {
        let [c2s, http] = free_ports()?;
        cfg.c2s_port = c2s;
        cfg.http_port = Some(http);
    }
    match server {
        // Written as Prosody's plain-text account files (no process start per user);
        // ejabberd keeps its passwords in plain text too, so both derive SCRAM keys per
        // login alike.
        Server::Prosody => {
            cfg.numbered = Some(wirebench_xmpp::NumberedAccounts {
                user_prefix: "user".into(),
                password_prefix: "pass".into(),
                users: 1,
                contacts: 0,
                domain: DOMAIN.into(),
            });
        }
        Server::Ejabberd => cfg.users.push(("user1".into(), "pass1".into())),
    }
    Ok(cfg)
}

/// The browser's part in a case: client1 in the client host when there is a lab, at
/// `url` over `transport`.
fn browser_run(
    env: &Env,
    case: &Case,
    p: &Params,
    url: String,
    progress: wirebench_xmpp_browser::Progress,
) -> wirebench_xmpp_browser::BrowserRun {
    wirebench_xmpp_browser::BrowserRun {
        url,
        sockjs: sockjs_transport(&p.transport),
        jid: format!("user1@{DOMAIN}"),
        password: "pass1".into(),
        count: case.workload_params().messages(),
        flush: p.flush.word(),
        netns: env.lab.map(|l| l.client().name().to_string()),
        bind: match env.lab {
            Some(_) => (CLIENT_ADDR, 0).into(),
            None => ([127, 0, 0, 1], 0).into(),
        },
        progress,
    }
}

/// What a browser case needs, checked before anything starts: a browser speaks only the
/// web transports, its page runs study S2's test alone, and the page must be servable.
pub(crate) fn check_browser_case(case: &Case, p: &Params) -> Result<(), WorkloadError> {
    check_browser(case, p)?;
    wirebench_xmpp_browser::strophe_bundle()?;
    Ok(())
}

/// A browser case's parameters that a browser can run.
pub(crate) fn check_browser(case: &Case, p: &Params) -> Result<(), WorkloadError> {
    if !p.is_s2() {
        return Err(WorkloadError::Input(
            "xmpp.client=browser runs study S2's test: it needs xmpp.ping=server".into(),
        ));
    }
    if p.transport == Transport::Tcp {
        return Err(WorkloadError::Input(
            "xmpp.client=browser needs xmpp.transport=websocket, bosh or a SockJS transport \
             (a browser cannot open a raw XMPP TCP connection)"
                .into(),
        ));
    }
    if case.workload() != "pingpong" {
        return Err(WorkloadError::Input(
            "xmpp.client=browser needs workload pingpong".into(),
        ));
    }
    Ok(())
}

/// The sockjs-client transport a page asks for (`None`: not SockJS).
pub(crate) fn sockjs_transport(t: &Transport) -> Option<&'static str> {
    match t {
        Transport::SockJs { .. } => Some(match t.word() {
            "sockjs-websocket" => "websocket",
            w => w,
        }),
        _ => None,
    }
}

/// What client1 reached, for the case's notes: our gateway in front of the server's
/// client port, or the server's own endpoint.
fn describe(
    server: Server,
    gateway: bool,
    transport: &Transport,
    url: &str,
    c2s: SocketAddr,
) -> String {
    let who = match server {
        Server::Prosody => "Prosody 0.12",
        Server::Ejabberd => "ejabberd 23.01",
    };
    if gateway {
        format!(
            "wirebench's {} gateway at {url} in front of {who}'s client port {c2s}",
            transport.word()
        )
    } else {
        format!(
            "{who}'s own {} endpoint at {url} (no wirebench gateway between)",
            transport.word()
        )
    }
}

fn front_of(t: &Transport, c2s: SocketAddr, http: SocketAddr) -> SocketAddr {
    match t {
        Transport::Tcp => c2s,
        _ => http,
    }
}

/// One login and a few pings over the case's transport before the timed session, from
/// inside the server's host: a freshly started server loads code on its first sessions
/// (ejabberd's first login took 175-190 ms here, against about 5 ms once warm), which is
/// start-up, not what the study's page met on a running server.
fn warm_up(t: &Transport, addr: SocketAddr, netns: Option<&str>) -> Result<(), String> {
    use std::time::{Duration, Instant};
    use wirebench_xmpp::{ClientConfig, Event, TlsMode};
    let t = t.clone();
    let netns = netns.map(str::to_string);
    std::thread::spawn(move || {
        if let Some(ns) = &netns {
            wirebench_protocol::hosts::enter(ns).map_err(|e| e.to_string())?;
        }
        let timeout = Duration::from_secs(20);
        let mut cfg = ClientConfig::new(&format!("user1@{DOMAIN}"), "pass1");
        cfg.tls = TlsMode::Never;
        let (mut s, _) =
            wirebench_xmpp_client::session::XmppSession::login_via(&t, addr, cfg, None, 7, timeout)
                .map_err(|e| e.to_string())?;
        for i in 0..5 {
            let id = format!("warm-{i}");
            s.client.send_ping(DOMAIN, &id);
            s.flush().map_err(|e| e.to_string())?;
            let deadline = Instant::now() + timeout;
            loop {
                match s.next_event(deadline, "the server's pong") {
                    Ok((_, Event::IqResult { id: got })) if got == id => break,
                    Ok(_) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        s.close();
        Ok(())
    })
    .join()
    .map_err(|_| "the warm-up thread panicked".to_string())?
}

/// Two free ports on 127.0.0.1, both held until both are known so they differ.
fn free_ports() -> Result<[u16; 2], WorkloadError> {
    let bind = || {
        std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| Ok((l.local_addr()?.port(), l)))
            .map_err(|e| WorkloadError::because(Fault::Environment, "no free port on 127.0.0.1", e))
    };
    let (a, _la) = bind()?;
    let (b, _lb) = bind()?;
    Ok([a, b])
}

fn relative(p: &Path, base: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
}
