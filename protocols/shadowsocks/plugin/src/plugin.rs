//! The client (`Dial`) and the plugin's declaration.

use crate::{CIPHER, Method, SERVER, Secret, peers, server, stream::SsStream};
use std::net::SocketAddr;
use std::sync::Arc;
use wirebench_connect::params::{CONCURRENCY, CONNECTS, TFO};
use wirebench_connect::{ConnectProtocol, Dial, Dialed};
use wirebench_protocol::Fault;
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Case, Ctx, Env, Outcome, WorkloadError};
use wirebench_shadowsocks::v2022::Psk;
use wirebench_shadowsocks::{Key, Target};

const PARAMS: &[ParamSpec] = &[
    SERVER,
    CIPHER,
    TFO,
    CONNECTS,
    CONCURRENCY,
    wirebench_rpc::params::RATE,
    wirebench_connect::proxy::THREADS,
];

/// The client side: TCP (with Fast Open when `tfo`) to the Shadowsocks server, and the
/// stream sealed in place; the salt and the origin's address (for 2022 with the request
/// headers) go with the first message.
pub struct ShadowsocksDial {
    pub server: SocketAddr,
    pub secret: Secret,
    pub tfo: bool,
    /// ss-server or ssserver started for the case, stopped when the dialer is dropped.
    pub _external: Option<peers::External>,
}

impl Dial for ShadowsocksDial {
    async fn dial(&self, origin: SocketAddr) -> Result<Dialed, WorkloadError> {
        let (tcp, tcp_ns) = if self.tfo {
            wirebench_connect::tcp_fast_open(self.server).await?
        } else {
            wirebench_connect::tcp(self.server).await?
        };
        let salt = crate::stream::random_bytes(self.secret.salt_len())
            .map_err(|e| WorkloadError::because(Fault::Environment, "no random salt", e))?;
        let s = SsStream::connect(tcp, &self.secret, &salt, Target::from(origin))
            .map_err(|e| WorkloadError::Input(e.to_string()))?;
        // No handshake: nothing happens between the TCP connect and the first write.
        Ok(Dialed::plain(s, tcp_ns, 0))
    }
}

impl wirebench_connect::Conn for SsStream {
    fn tcp(&self) -> &tokio::net::TcpStream {
        SsStream::tcp(self)
    }
}

/// A password for one case: its server is the case's own, and nobody else learns it.
fn case_password() -> Result<String, WorkloadError> {
    let mut b = [0u8; 12];
    getrandom::fill(&mut b)
        .map_err(|e| WorkloadError::because(Fault::Environment, "no random password", e))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A case's parameters, read once; the drivers take these, never the case's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub server: Server,
    pub method: Method,
    /// TCP Fast Open to the server (`tfo=on`).
    pub tfo: bool,
}

/// `shadowsocks.server`: whose server the case measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Ours,
    /// shadowsocks-libev's ss-server.
    Libev,
    /// shadowsocks-rust's ssserver.
    Rust,
}

impl Server {
    fn from_word(word: &str) -> Option<Server> {
        Some(match word {
            "ours" => Server::Ours,
            "libev" => Server::Libev,
            "rust" => Server::Rust,
            _ => return None,
        })
    }

    fn word(self) -> &'static str {
        match self {
            Server::Ours => "ours",
            Server::Libev => "libev",
            Server::Rust => "rust",
        }
    }

    /// The case's server; [`Params::from_case`] too reads it here, so that hooks that
    /// need only the server do not fail on the cipher.
    fn of(case: &Case) -> Server {
        Server::from_word(case.choice(&SERVER)).unwrap_or(Server::Ours)
    }
}

impl Params {
    /// Refuses a method the server lacks (shadowsocks-libev has no 2022).
    pub fn from_case(case: &Case) -> Result<Params, WorkloadError> {
        let name = case.choice(&CIPHER);
        let method = Method::from_name(name)
            .ok_or_else(|| WorkloadError::Input(format!("{}={name}: unknown", CIPHER.name)))?;
        let server = Server::of(case);
        if server == Server::Libev && method.is_2022() {
            return Err(WorkloadError::Input(format!(
                "{}={name}: shadowsocks-libev has no Shadowsocks 2022; use {}=ours or rust",
                CIPHER.name, SERVER.name
            )));
        }
        Ok(Params {
            server,
            method,
            tfo: case.is_on(&TFO),
        })
    }
}

/// `shadowsocks`, for the runner's registry.
pub static SHADOWSOCKS: ConnectProtocol = ConnectProtocol {
    name: "shadowsocks",
    summary: "connections through a Shadowsocks AEAD or 2022 server (ours, shadowsocks-libev or shadowsocks-rust) to an echo server (workload connect: time to first byte)",
    params: PARAMS,
    metrics: &[],
    commands: &[],
    servers: |case| match Server::of(case) {
        Server::Libev => {
            "shadowsocks-libev's ss-server and an echo server of ours started per case"
        }
        Server::Rust => "shadowsocks-rust's ssserver and an echo server of ours started per case",
        Server::Ours => "a Shadowsocks server and an echo server of ours started per case",
    },
    prerequisites,
    round_trips: wirebench_connect::tcp_round_trips,
    serves: "(every AEAD cipher, password WIREBENCH_SHADOWSOCKS_PASSWORD or the default, to loopback destinations)",
    serve_alone,
    check: |case| Params::from_case(case).map(|_| ()),
    run,
};

fn prerequisites(case: &Case) -> Vec<wirebench_protocol::Prerequisite> {
    let server = Server::of(case);
    let why = format!("{}={}", SERVER.name, server.word());
    match server {
        Server::Libev => vec![crate::peers::LIBEV.because(why)],
        Server::Rust => vec![crate::peers::RUST.because(why)],
        Server::Ours => Vec::new(),
    }
}

fn serve_alone(
    listener: std::net::TcpListener,
    limits: &wirebench_protocol::AloneLimits,
) -> Result<(), String> {
    let password = std::env::var("WIREBENCH_SHADOWSOCKS_PASSWORD")
        .unwrap_or_else(|_| crate::DEFAULT_PASSWORD.into());
    let cfg = Arc::new(server::Config {
        keys: crate::every_cipher(password.as_bytes()),
        psk: None,
        allow: server::Allow::loopback(),
        tfo: true,
        log: limits.log,
        cap: Some(limits.connections.clone()),
    });
    wirebench_rpc::server::serve_alone(listener, "shadowsocks", limits, move |l, c, _| {
        server::serve(l, c, cfg)
    })
}

fn run(env: &Env, case: &Case, repeat: u32, ctx: &Ctx) -> Result<Outcome, WorkloadError> {
    let Params {
        server: which,
        method,
        tfo,
    } = Params::from_case(case)?;
    // The password (AEAD) or the base64 key (2022), as the peers' -k takes it.
    let (secret, password) = match method {
        Method::Aead(c) => {
            let password = case_password()?;
            (
                Secret::Aead(Key::from_password(c, password.as_bytes())),
                password,
            )
        }
        Method::V2022(c) => {
            let key = crate::stream::random_bytes(c.key_len())
                .map_err(|e| WorkloadError::because(Fault::Environment, "no random key", e))?;
            let psk = Psk::from_bytes(c, &key).map_err(|e| WorkloadError::Input(e.to_string()))?;
            let b64 = psk.to_base64();
            (Secret::V2022(psk), b64)
        }
    };
    let lab = env.lab;
    let threads = wirebench_connect::proxy::threads(case);
    let dir = env.peer_dir(case, repeat);
    let mut out = wirebench_connect::run_case(env, case, ctx, |origin| {
        let (addr, placed, external) = match which {
            Server::Libev => {
                let e = peers::start(lab, &dir, origin, method.cipher(), &password, tfo)?;
                (e.addr, Vec::new(), Some(e))
            }
            Server::Rust => {
                let e = peers::start_rust(lab, &dir, origin, method.name(), &password, tfo)?;
                (e.addr, Vec::new(), Some(e))
            }
            Server::Ours => {
                let (keys, psk) = match &secret {
                    Secret::Aead(k) => (vec![k.clone()], None),
                    Secret::V2022(p) => (Vec::new(), Some(p.clone())),
                };
                let cfg = Arc::new(server::Config {
                    keys,
                    psk,
                    allow: server::Allow::Only(vec![origin]),
                    tfo,
                    log: false,
                    cap: None,
                });
                let p = wirebench_connect::place_proxy(lab, "shadowsocks", false, threads, {
                    move |l, c| server::serve(l, c, cfg.clone())
                })?;
                (p.addr, vec![p], None)
            }
        };
        let d = ShadowsocksDial {
            server: addr,
            secret: secret.clone(),
            tfo,
            _external: external,
        };
        Ok((d, placed))
    })?;
    out.notes.push(format!(
        "Shadowsocks {} ({method}): no handshake; the salt, the origin's address and the message share one write (the SYN with tfo=on)",
        if method.is_2022() { "2022" } else { "AEAD" }
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{Method, Server};
    use crate::{CIPHER, SERVER};

    /// The specs and the enums cannot drift: a choice added to a spec needs a variant.
    #[test]
    fn every_choice_parses() {
        for w in SERVER.choices() {
            let s = Server::from_word(w).unwrap_or_else(|| panic!("shadowsocks.server={w}"));
            assert_eq!(s.word(), *w);
        }
        for w in CIPHER.choices() {
            let m = Method::from_name(w).unwrap_or_else(|| panic!("shadowsocks.cipher={w}"));
            assert_eq!(m.name(), *w);
        }
    }
}
