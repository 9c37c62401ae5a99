//! `socks5`: the connect workload through a SOCKS5 proxy (RFC 1928 CONNECT; RFC 1929
//! username/password with `socks5.auth=userpass`), study S3's first proxy
//! (docs/protocols/proxies.md). Our proxy ([`server`]) is started per case beside the
//! origin, in the lab's server host, so the link lies between the client and the proxy
//! and each handshake round trip the protocol needs is paid on it:
//!
//! - `socks5.pipeline=off`: greeting, method choice, request, reply: two round trips
//!   before the first byte can be sent (three with username/password);
//! - `socks5.pipeline=on`: greeting and request in one write, as some clients do when
//!   no-auth is the only method they offer: one round trip.
//!
//! The codec is `wirebench-socks5` (protocols/socks5/engine).

pub mod peers;
pub mod server;

use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirebench_connect::params::{CONCURRENCY, CONNECTS};
use wirebench_connect::{ConnectProtocol, Dial, Dialed};
use wirebench_model::Kind;
use wirebench_model::clock::monotonic_ns;
use wirebench_model::metric::connect::CONNECTS_OK;
use wirebench_model::metric::connect::PROXY_CPU_PER_CONNECTION;
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Case, Ctx, Env, Outcome, Protocol, WorkloadError};
use wirebench_socks5 as s5;

pub const AUTH: ParamSpec = ParamSpec {
    name: "socks5.auth",
    kind: Kind::Choice(&["none", "userpass"]),
    default: "none",
    workloads: &["connect"],
    help: "none, or RFC 1929 username/password (one more round trip per connection)",
    words: "SOCKS5 authentication",
};

pub const PIPELINE: ParamSpec = ParamSpec {
    name: "socks5.pipeline",
    kind: Kind::Choice(&["off", "on"]),
    default: "off",
    workloads: &["connect"],
    help: "off: wait for the method choice before the request (RFC 1928's order); on: greeting and request in one write (no-auth only), a round trip less",
    words: "SOCKS5 pipelining",
};

pub const SERVER: ParamSpec = ParamSpec {
    name: "socks5.server",
    kind: Kind::Choice(&["ours", "microsocks", "dante"]),
    default: "ours",
    workloads: &["connect"],
    help: "the proxy: ours (wirebench's, allow-listed to the origin), microsocks or dante (Debian's, started per case the same way; dante without userpass)",
    words: "SOCKS5 proxy",
};

const PARAMS: &[ParamSpec] = &[
    SERVER,
    AUTH,
    PIPELINE,
    CONNECTS,
    CONCURRENCY,
    wirebench_rpc::params::RATE,
    wirebench_connect::proxy::THREADS,
];

/// A case's parameters, read once; the drivers take these, never the case's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub server: Server,
    pub auth: Auth,
    /// `socks5.pipeline=on`: greeting and request in one write.
    pub pipeline: bool,
}

/// `socks5.server`: whose proxy the case measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Ours,
    Microsocks,
    Dante,
}

/// `socks5.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    None,
    /// RFC 1929 username/password.
    UserPass,
}

impl Server {
    fn from_word(word: &str) -> Option<Server> {
        Some(match word {
            "ours" => Server::Ours,
            "microsocks" => Server::Microsocks,
            "dante" => Server::Dante,
            _ => return None,
        })
    }

    fn word(self) -> &'static str {
        match self {
            Server::Ours => "ours",
            Server::Microsocks => "microsocks",
            Server::Dante => "dante",
        }
    }
}

impl Auth {
    fn from_word(word: &str) -> Option<Auth> {
        Some(match word {
            "none" => Auth::None,
            "userpass" => Auth::UserPass,
            _ => return None,
        })
    }
}

impl Params {
    pub fn from_case(case: &Case) -> Params {
        Params {
            server: Server::from_word(case.choice(&SERVER)).unwrap_or(Server::Ours),
            auth: Auth::from_word(case.choice(&AUTH)).unwrap_or(Auth::None),
            pipeline: case.is_on(&PIPELINE),
        }
    }
}

/// The credentials of `socks5.auth=userpass` cases (the proxy is the case's own).
const USER: &[u8] = b"wirebench";
const PASS: &[u8] = b"wirebench";

/// The client side: connects to `proxy` and asks it for the origin.
pub struct Socks5Dial {
    pub proxy: SocketAddr,
    pub userpass: Option<(Vec<u8>, Vec<u8>)>,
    pub pipeline: bool,
    /// A third-party proxy started for the case, stopped when the dialer is dropped.
    pub _external: Option<peers::External>,
    /// Where the third-party proxy's CPU seconds go as it is stopped (utime + stime of its
    /// process, all its threads), for `proxy.cpu_per_connection` beside ours.
    pub external_cpu: Arc<std::sync::Mutex<Option<f64>>>,
}

impl Drop for Socks5Dial {
    fn drop(&mut self) {
        if let Some(u) = self._external.as_ref().and_then(peers::External::usage) {
            *self.external_cpu.lock().unwrap_or_else(|e| e.into_inner()) = Some(u.cpu_s);
        }
    }
}

fn peer(e: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::Peer(format!("the SOCKS5 proxy: {e}"))
}

/// Reads until `parse` accepts the buffer; the message must be all the buffer holds (the
/// proxy has nothing else to say before the client's first data).
async fn read_msg<T>(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    what: &'static str,
    parse: impl Fn(&[u8]) -> s5::Parsed<T>,
) -> Result<T, WorkloadError> {
    loop {
        match parse(buf).map_err(|e| peer(format!("unreadable {what}: {e}")))? {
            Some((v, n)) => {
                buf.drain(..n);
                return Ok(v);
            }
            None if buf.len() > 1024 => return Err(peer(format!("a {what} over 1024 bytes"))),
            None => {}
        }
        let mut chunk = [0u8; 512];
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|error| WorkloadError::Io {
                during: what,
                error,
            })?;
        if n == 0 {
            return Err(WorkloadError::Closed { during: what });
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

impl Dial for Socks5Dial {
    async fn dial(&self, origin: SocketAddr) -> Result<Dialed, WorkloadError> {
        let (mut s, tcp_ns) = wirebench_connect::tcp(self.proxy).await?;
        let t = monotonic_ns();
        let io = |during: &'static str| move |error| WorkloadError::Io { during, error };
        let target = s5::Target::from(origin);
        let mut buf = Vec::with_capacity(64);
        let method = if self.pipeline && self.userpass.is_none() {
            let both =
                s5::pipelined_connect(&target).map_err(|e| WorkloadError::Input(e.to_string()))?;
            s.write_all(&both)
                .await
                .map_err(io("sending the SOCKS5 greeting and request"))?;
            read_msg(
                &mut s,
                &mut buf,
                "SOCKS5 method choice",
                s5::parse_method_choice,
            )
            .await?
        } else {
            let m = if self.userpass.is_some() {
                s5::USER_PASS
            } else {
                s5::NO_AUTH
            };
            s.write_all(&s5::greeting(&[m]))
                .await
                .map_err(io("sending the SOCKS5 greeting"))?;
            let method = read_msg(
                &mut s,
                &mut buf,
                "SOCKS5 method choice",
                s5::parse_method_choice,
            )
            .await?;
            if method == m {
                if let Some((u, p)) = &self.userpass {
                    let req = s5::userpass_request(u, p)
                        .map_err(|e| WorkloadError::Input(e.to_string()))?;
                    s.write_all(&req)
                        .await
                        .map_err(io("sending the SOCKS5 username/password"))?;
                    let ok = read_msg(
                        &mut s,
                        &mut buf,
                        "SOCKS5 username/password reply",
                        s5::parse_userpass_reply,
                    )
                    .await?;
                    if !ok {
                        return Err(peer("refused the username and password"));
                    }
                }
                let req = s5::request(s5::Command::Connect, &target)
                    .map_err(|e| WorkloadError::Input(e.to_string()))?;
                s.write_all(&req)
                    .await
                    .map_err(io("sending the SOCKS5 request"))?;
            }
            method
        };
        let wanted = if self.userpass.is_some() {
            s5::USER_PASS
        } else {
            s5::NO_AUTH
        };
        if method != wanted {
            return Err(peer(format!(
                "chose method {method:#04x}, not the {wanted:#04x} offered"
            )));
        }
        let (code, _bound) = read_msg(&mut s, &mut buf, "SOCKS5 reply", s5::parse_reply).await?;
        if code != s5::ReplyCode::Succeeded {
            return Err(peer(format!("refused to connect to {origin}: {code}")));
        }
        if !buf.is_empty() {
            return Err(peer(format!(
                "sent {} bytes after its reply, before the client's first",
                buf.len()
            )));
        }
        Ok(Dialed::plain(s, tcp_ns, monotonic_ns() - t))
    }
}

/// Round trips the SOCKS5 handshake adds: method choice and request (or both at once
/// when pipelined), plus RFC 1929's exchange.
fn handshake_round_trips(p: Params) -> u32 {
    let userpass = u32::from(p.auth == Auth::UserPass);
    if p.pipeline {
        1 + userpass
    } else {
        2 + userpass
    }
}

/// The parameter combinations no server can run: checked before the run and at the
/// case's start.
fn check_params(p: Params) -> Result<(), WorkloadError> {
    if p.pipeline && p.auth == Auth::UserPass {
        return Err(WorkloadError::Input(format!(
            "{}=on with {}=userpass: a client can only send its request with the greeting when no-auth is the one method it offers",
            PIPELINE.name, AUTH.name
        )));
    }
    if p.server == Server::Dante {
        peers::check(peers::Kind::Dante, p.auth == Auth::UserPass)?;
    }
    Ok(())
}

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn Protocol = &ConnectProtocol {
    name: "socks5",
    summary: "connections through a SOCKS5 proxy of ours (RFC 1928/1929) to an echo server (workload connect: time to first byte)",
    params: PARAMS,
    metrics: &[],
    commands: &[],
    servers: |case| match Params::from_case(case).server {
        Server::Microsocks => "microsocks and an echo server of ours started per case",
        Server::Dante => "Dante and an echo server of ours started per case",
        Server::Ours => "a SOCKS5 proxy and an echo server of ours started per case",
    },
    prerequisites,
    round_trips: |case| 2.0 + f64::from(handshake_round_trips(Params::from_case(case))),
    serves: "(a SOCKS5 proxy to loopback destinations)",
    serve_alone,
    check: |case| check_params(Params::from_case(case)),
    run,
};

fn prerequisites(case: &Case) -> Vec<wirebench_protocol::Prerequisite> {
    let server = Params::from_case(case).server;
    let kind = match server {
        Server::Microsocks => peers::Kind::Microsocks,
        Server::Dante => peers::Kind::Dante,
        Server::Ours => return Vec::new(),
    };
    let why = format!("{}={}", SERVER.name, server.word());
    vec![kind.requirement().because(why)]
}

fn serve_alone(
    listener: std::net::TcpListener,
    limits: &wirebench_protocol::AloneLimits,
) -> Result<(), String> {
    let cfg = Arc::new(server::Config {
        userpass: None,
        allow: server::Allow::loopback(),
        log: limits.log,
        cap: Some(limits.connections.clone()),
    });
    wirebench_rpc::server::serve_alone(listener, "socks5", limits, move |l, c, _| {
        server::serve(l, c, cfg)
    })
}

fn run(env: &Env, case: &Case, repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let params = Params::from_case(case);
    let userpass = (params.auth == Auth::UserPass).then(|| (USER.to_vec(), PASS.to_vec()));
    let pipeline = params.pipeline;
    let lab = env.lab;
    let threads = wirebench_connect::proxy::threads(case);
    let external_cpu = Arc::new(std::sync::Mutex::new(None));
    let dir = env.peer_dir(case, repeat);
    let mut out = wirebench_connect::run_case(env, case, ctx, |origin| {
        let (proxy, placed, external) = match params.server {
            Server::Microsocks | Server::Dante => {
                let kind = if params.server == Server::Dante {
                    peers::Kind::Dante
                } else {
                    peers::Kind::Microsocks
                };
                let up = userpass.as_ref().map(|(u, p)| (u.as_slice(), p.as_slice()));
                let e = peers::start(kind, lab, &dir, origin, up)?;
                (e.addr, Vec::new(), Some(e))
            }
            Server::Ours => {
                let cfg = Arc::new(server::Config {
                    userpass: userpass.clone(),
                    allow: server::Allow::Only(vec![origin]),
                    log: false,
                    cap: None,
                });
                let p = wirebench_connect::place_proxy(lab, "socks5", false, threads, {
                    move |l, c| server::serve(l, c, cfg.clone())
                })?;
                (p.addr, vec![p], None)
            }
        };
        let d = Socks5Dial {
            proxy,
            userpass,
            pipeline,
            _external: external,
            external_cpu: external_cpu.clone(),
        };
        Ok((d, placed))
    })?;
    // A third-party proxy's CPU per connection, as ours is recorded.
    let ok = out.value(CONNECTS_OK).unwrap_or(0.0);
    let cpu = *external_cpu.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cpu) = cpu.filter(|c| *c > 0.0 && ok > 0.0) {
        out.put(PROXY_CPU_PER_CONNECTION, cpu / ok);
    }
    out.notes.push(format!(
        "SOCKS5 handshake: {} round trip(s) before the client's first byte",
        handshake_round_trips(params)
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{AUTH, Auth, SERVER, Server};

    /// The specs and the enums cannot drift: a choice added to a spec needs a variant.
    #[test]
    fn every_choice_parses() {
        for w in SERVER.choices() {
            let s = Server::from_word(w).unwrap_or_else(|| panic!("socks5.server={w}"));
            assert_eq!(s.word(), *w);
        }
        for w in AUTH.choices() {
            assert!(Auth::from_word(w).is_some(), "socks5.auth={w}");
        }
    }
}
