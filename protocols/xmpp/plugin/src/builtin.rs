//! A case against wirebench's built-in XMPP server (crate `wirebench-xmpp-server`),
//! started for the case, with wirebench's web endpoint in front of it for the web
//! transports, and client1 native or in a browser.

use crate::params::Params;
use crate::workload::{self, Topology, XmppRun};
use crate::{endpoint, s2};
use wirebench_model::metric::SERVER_CPU;
use wirebench_model::metric::SERVER_ROUTED;
use wirebench_protocol::Fault;
use wirebench_protocol::hosts::{CLIENT_ADDR, SERVER_ADDR};
use wirebench_protocol::{Case, Ctx, Env, Outcome, WorkloadError};

/// A case against the built-in server, started for this case: in the lab's server host
/// when the case has a link (client1 then crosses it), else on loopback.
pub(crate) fn run(env: &Env, case: &Case, p: &Params, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    const DOMAIN: &str = "wirebench.test";
    let in_browser = p.in_browser();
    if in_browser {
        // Before the server starts.
        s2::check_browser_case(case, p)?;
    }
    let server_ns = env.lab.map(|l| l.server().name().to_string());
    let listen: std::net::SocketAddr = match server_ns {
        Some(_) => (SERVER_ADDR, 5222).into(),
        None => ([127, 0, 0, 1], 0).into(),
    };
    let mut cfg = wirebench_xmpp_server::XmppServerConfig::new(listen, DOMAIN, 2);
    // Two sessions: one worker, so every case relays the same way (no thread hand-off
    // that depends on where the kernel put each connection).
    cfg.workers = 1;
    // The case's messages must fit: the payload plus the stanza around it (from/to JIDs,
    // id, envelope), with room to spare.
    cfg.max_stanza = cfg.max_stanza.max(case.payload() as usize + 4096);
    // Bound on a thread inside the server host: the listener belongs to its namespace.
    let ns = server_ns.clone();
    let server = std::thread::spawn(move || {
        if let Some(ns) = &ns {
            wirebench_protocol::hosts::enter(ns).map_err(|e| e.to_string())?;
        }
        wirebench_xmpp_server::XmppServer::bind(cfg)
            .map_err(|e| format!("cannot listen on {listen}: {e}"))
    })
    .join()
    .map_err(|_| WorkloadError::Environment("the XMPP server's start-up panicked".into()))?
    .map_err(WorkloadError::Environment)?;
    let addr = server
        .local_addr()
        .map_err(|e| WorkloadError::Environment(e.to_string()))?;
    let stats = server.stats.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = server.spawn(stop.clone()).map_err(|e| {
        WorkloadError::because(Fault::Environment, "cannot start the XMPP server", e)
    })?;
    let transport = p.transport.clone();
    let max_stanza = case.payload() as usize + 4096;
    // The transport's endpoint beside the server, in its namespace.
    let endpoint = match endpoint::start(&transport, addr, server_ns.clone(), max_stanza) {
        Ok(e) => e,
        Err(e) => {
            // The server is already running: stop it before giving up.
            stop.store(true, Ordering::SeqCst);
            let _ = thread.join();
            return Err(WorkloadError::Environment(e));
        }
    };
    let front = endpoint.as_ref().map_or(addr, |e| e.addr);
    let browser_run = in_browser.then(|| wirebench_xmpp_browser::BrowserRun {
        url: endpoint::url(&transport, front),
        sockjs: s2::sockjs_transport(&transport),
        jid: format!("user1@{DOMAIN}"),
        password: "pass1".into(),
        count: case.workload_params().messages(),
        flush: p.flush.word(),
        // The browser in the client host, so the link lies between it and the endpoint.
        netns: env.lab.map(|l| l.client().name().to_string()),
        bind: match env.lab {
            Some(_) => (CLIENT_ADDR, 0).into(),
            None => ([127, 0, 0, 1], 0).into(),
        },
        progress: wirebench_xmpp_browser::Progress::Endpoint(
            endpoint
                .as_ref()
                .map(|e| e.stats.clone())
                .unwrap_or_default(),
        ),
    });
    let run = XmppRun::from_case(
        case,
        p,
        Topology::one_server(DOMAIN, front, server_ns, transport.clone()),
        env.seed,
    );
    let mut out = match &browser_run {
        Some(b) => wirebench_xmpp_browser::run(b, ctx),
        None => workload::run(&run, ctx),
    };
    // Read before the worker threads end with the server.
    let cpu = wirebench_xmpp_server::worker_cpu_seconds();
    if let Some(e) = endpoint {
        if let Ok(o) = &mut out {
            endpoint::push_stats(o, &e.stats, (0, 0));
        }
        e.stop();
    }
    stop.store(true, Ordering::SeqCst);
    let _ = thread.join();
    if let Ok(o) = &mut out {
        o.put(SERVER_ROUTED, stats.routed.load(Ordering::Relaxed) as f64);
        // The server shares this process with the clients: its CPU is its threads', its
        // memory is not separable and is not recorded.
        o.put(SERVER_CPU, cpu);
        wirebench_peer::record_sessions(o, stats.bound.load(Ordering::Relaxed));
        wirebench_peer::record_kernel_tcp(o);
    }
    out
}
