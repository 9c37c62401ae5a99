//! The client (`Dial`) and `impl Protocol`.

use crate::{CIPHER, SERVER, peers, server, stream::SsStream};
use std::net::SocketAddr;
use std::sync::Arc;
use wirebench_connect::params::{CONCURRENCY, CONNECTS, TFO};
use wirebench_connect::{Dial, Dialed};
use wirebench_protocol::params::ParamSpec;
use wirebench_protocol::{Case, CaseLink, Ctx, Env, Outcome, Protocol, WorkloadError};
use wirebench_shadowsocks::{Cipher, Key, Target};

const PARAMS: &[ParamSpec] = &[
    SERVER,
    CIPHER,
    TFO,
    CONNECTS,
    CONCURRENCY,
    wirebench_rpc::params::RATE,
];

/// The client side: TCP (with Fast Open when `tfo`) to the Shadowsocks server, and the
/// stream sealed in place; the salt and the origin's address go with the first message.
pub struct ShadowsocksDial {
    pub server: SocketAddr,
    pub key: Key,
    pub tfo: bool,
    /// ss-server started for the case, stopped when the dialer is dropped.
    pub _external: Option<peers::External>,
}

impl Dial for ShadowsocksDial {
    async fn dial(&self, origin: SocketAddr) -> Result<Dialed, WorkloadError> {
        let (tcp, tcp_ns) = if self.tfo {
            wirebench_connect::tcp_fast_open(self.server).await?
        } else {
            wirebench_connect::tcp(self.server).await?
        };
        let salt = crate::stream::fresh_salt(&self.key)
            .map_err(|e| WorkloadError::Environment(format!("no random salt: {e}")))?;
        let s = SsStream::new(tcp, &self.key, &salt, Target::from(origin))
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
        .map_err(|e| WorkloadError::Environment(format!("no random password: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

pub struct Shadowsocks;

impl Protocol for Shadowsocks {
    fn name(&self) -> &'static str {
        "shadowsocks"
    }

    fn summary(&self) -> &'static str {
        "connections through a Shadowsocks AEAD server (ours or shadowsocks-libev) to an echo server (workload connect: time to first byte)"
    }

    fn workloads(&self) -> &'static [&'static str] {
        &["connect"]
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn servers(&self, case: &Case) -> Option<&'static str> {
        Some(match case.word("shadowsocks.server") {
            Some("libev") => {
                "shadowsocks-libev's ss-server and an echo server of ours started per case"
            }
            _ => "a Shadowsocks server and an echo server of ours started per case",
        })
    }

    fn uses_reference_server(&self) -> bool {
        false
    }

    fn connect_round_trips(&self, case: &Case) -> f64 {
        if case.word("tfo") == Some("on") {
            1.0
        } else {
            2.0
        }
    }

    fn serve_alone(
        &self,
        listener: std::net::TcpListener,
        max_payload: usize,
    ) -> Option<Result<(), String>> {
        let password = std::env::var("WIREBENCH_SHADOWSOCKS_PASSWORD")
            .unwrap_or_else(|_| crate::DEFAULT_PASSWORD.into());
        let cfg = Arc::new(server::Config {
            keys: crate::every_cipher(password.as_bytes()),
            allow: server::Allow::loopback(),
            tfo: true,
            log: true,
        });
        Some(wirebench_rpc::server::serve_alone(
            listener,
            "shadowsocks",
            max_payload,
            move |l, c, _| server::serve(l, c, cfg),
        ))
    }

    fn run(
        &self,
        env: &Env,
        case: &Case,
        repeat: u32,
        _link: Option<&CaseLink>,
        ctx: &Ctx,
    ) -> Result<Outcome, WorkloadError> {
        let tfo = case.word("tfo") == Some("on");
        let name = case
            .word("shadowsocks.cipher")
            .unwrap_or("chacha20-ietf-poly1305");
        let cipher = Cipher::from_name(name)
            .ok_or_else(|| WorkloadError::Input(format!("shadowsocks.cipher={name}: unknown")))?;
        let which = case.word("shadowsocks.server").unwrap_or("ours");
        let password = case_password()?;
        let key = Key::from_password(cipher, password.as_bytes());
        let lab = env.lab;
        let dir = env.peer_dir(case, repeat);
        let mut out = wirebench_connect::run_case(env, case, ctx, |origin| {
            let (addr, placed, external) = if which == "libev" {
                let e = peers::start(lab, &dir, origin, cipher, &password, tfo)?;
                (e.addr, Vec::new(), Some(e))
            } else {
                let cfg = Arc::new(server::Config {
                    keys: vec![key.clone()],
                    allow: server::Allow::Only(vec![origin]),
                    tfo,
                    log: false,
                });
                let p =
                    wirebench_rpc::place(lab, "shadowsocks", move |l, c| server::serve(l, c, cfg))?;
                (p.addr, vec![p], None)
            };
            let d = ShadowsocksDial {
                server: addr,
                key,
                tfo,
                _external: external,
            };
            Ok((d, placed))
        })?;
        out.notes.push(format!(
            "Shadowsocks AEAD ({cipher}): no handshake; the salt, the origin's address and the message share one write (the SYN with tfo=on)"
        ));
        Ok(out)
    }
}
