//! The SOCKS5 proxy (RFC 1928 CONNECT, no authentication or RFC 1929
//! username/password). Not an open relay: it connects only to the destinations its
//! [`Allow`] names, and answers any other with the protocol's own "connection not allowed
//! by ruleset". A client has [`HANDSHAKE_TIMEOUT`] to finish its handshake, and at most
//! [`MAX_HANDSHAKE`] bytes of it are held; a connection's failure closes only it. A proxy
//! run alone counts each client refused for what it sent (not SOCKS5, a method or
//! command it does not serve, wrong credentials, a destination not allowed) against its
//! source ([`wirebench_net::ban`]).
//!
//! A client may pipeline: the greeting, the request and even its first data in one
//! write. Whatever follows a message in the buffer is kept for the next step and, after
//! the reply, forwarded to the destination first.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirebench_net::accept::close_gently;
use wirebench_net::cap::ConnCap;
use wirebench_rpc::Counters;
use wirebench_rpc::server::Closed;
use wirebench_socks5 as s5;

/// Time a client has from connecting to its complete request.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time the proxy gives its own connection to the destination.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshake bytes held at most: a greeting (257), a username/password (513) and a
/// request (262) fit with room to spare.
pub const MAX_HANDSHAKE: usize = 2048;

pub use wirebench_connect::allow::Allow;

#[derive(Debug, Clone)]
pub struct Config {
    /// RFC 1929 credentials the client must give; `None`: no authentication.
    pub userpass: Option<(Vec<u8>, Vec<u8>)>,
    pub allow: Allow,
    /// Log each client it closes on stderr (`serve --also socks5`: what an operator sees
    /// of a hostile client), and strike the sources refused for what they sent: anyone
    /// who can reach a proxy run alone may misuse it. A case counts its closes instead,
    /// and strikes no one: only our client reaches it.
    pub log: bool,
    /// At most this many clients at once (`serve --also socks5`); `None`: no cap.
    pub cap: Option<Arc<ConnCap>>,
}

/// Serves SOCKS5 on `l` until the runtime stops.
pub async fn serve(l: tokio::net::TcpListener, counters: Arc<Counters>, cfg: Arc<Config>) {
    let stop = std::future::pending();
    let cap = cfg.cap.clone();
    // One line a second at most for this thread: a flood must not fill the terminal.
    let closes = std::rc::Rc::new(wirebench_net::cap::LogLimit::new());
    wirebench_net::accept::accept_local_capped(&l, stop, Some(true), cap.as_ref(), |s, peer| {
        let (c, cfg) = (counters.clone(), cfg.clone());
        let closes = closes.clone();
        async move {
            if let Err(e) = session(s, &cfg).await {
                if cfg.log {
                    if e.for_input {
                        wirebench_net::ban::strike(peer.ip());
                    }
                    let why = &e.why;
                    closes.eprint(|| format!("wirebench socks5 server: closed a client: {why}"));
                }
                c.reject(format!("SOCKS5 client: {}", e.why));
            }
        }
    })
    .await
}

/// A client's connection: the handshake under its time limit, then the relay.
async fn session(mut s: TcpStream, cfg: &Config) -> Result<(), Closed> {
    let mut buf = Vec::with_capacity(512);
    let up = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(&mut s, &mut buf, cfg)).await {
        Ok(Ok(up)) => up,
        Ok(Err(e)) => {
            close_gently(&mut s).await;
            return Err(e);
        }
        Err(_) => {
            return Err(format!(
                "no complete handshake within {}s",
                HANDSHAKE_TIMEOUT.as_secs()
            )
            .into());
        }
    };
    let mut up = up;
    if !buf.is_empty() {
        up.write_all(&buf)
            .await
            .map_err(|e| format!("forwarding pipelined data: {e}"))?;
    }
    // The relay ends when either side closes or fails; neither is the client's fault.
    let _ = tokio::io::copy_bidirectional(&mut s, &mut up).await;
    Ok(())
}

/// Reads until `parse` accepts what `buf` holds, consuming the message from `buf`.
async fn read_msg<T>(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    what: &str,
    parse: impl Fn(&[u8]) -> s5::Parsed<T>,
) -> Result<Result<T, s5::Error>, Closed> {
    loop {
        match parse(buf) {
            Ok(Some((v, n))) => {
                buf.drain(..n);
                return Ok(Ok(v));
            }
            Ok(None) => {}
            Err(e) => return Ok(Err(e)),
        }
        if buf.len() >= MAX_HANDSHAKE {
            return Err(Closed::input(format!(
                "{what} longer than {MAX_HANDSHAKE} bytes"
            )));
        }
        let mut chunk = [0u8; 512];
        let want = chunk.len().min(MAX_HANDSHAKE - buf.len());
        let n = s
            .read(&mut chunk[..want])
            .await
            .map_err(|e| format!("reading the {what}: {e}"))?;
        if n == 0 {
            return Err(format!("closed during the {what}").into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The handshake, and the connection to the destination; a refusal is sent to the
/// client before the error that explains it is returned.
async fn handshake(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    cfg: &Config,
) -> Result<TcpStream, Closed> {
    let w = |e: std::io::Error| Closed::from(format!("writing to the client: {e}"));
    let methods = match read_msg(s, buf, "greeting", s5::parse_greeting).await? {
        Ok(m) => m,
        Err(e) => return Err(Closed::input(format!("bad greeting: {e}"))),
    };
    let want = if cfg.userpass.is_some() {
        s5::USER_PASS
    } else {
        s5::NO_AUTH
    };
    if !methods.contains(&want) {
        s.write_all(&s5::method_choice(s5::NO_ACCEPTABLE))
            .await
            .map_err(w)?;
        return Err(Closed::input(format!(
            "offered methods {methods:?}, none of them {want:#04x}, which this proxy requires"
        )));
    }
    s.write_all(&s5::method_choice(want)).await.map_err(w)?;
    if let Some((user, pass)) = &cfg.userpass {
        let (u, p) = match read_msg(s, buf, "username/password", s5::parse_userpass_request).await?
        {
            Ok(up) => up,
            Err(e) => {
                return Err(Closed::input(format!("bad username/password request: {e}")));
            }
        };
        let ok = &u == user && &p == pass;
        s.write_all(&s5::userpass_reply(ok)).await.map_err(w)?;
        if !ok {
            return Err(Closed::input("wrong username or password"));
        }
    }
    let unbound = s5::Target::from(SocketAddr::new(IpAddr::from([0, 0, 0, 0]), 0));
    let refuse = |code: s5::ReplyCode| s5::reply(code, &unbound);
    let (cmd, target) = match read_msg(s, buf, "request", s5::parse_request).await? {
        Ok(r) => r,
        Err(e) => {
            let _ = s.write_all(&refuse(e.reply_code())).await;
            return Err(Closed::input(format!("bad request: {e}")));
        }
    };
    if cmd != s5::Command::Connect {
        s.write_all(&refuse(s5::ReplyCode::CommandNotSupported))
            .await
            .map_err(w)?;
        return Err(Closed::input(format!(
            "{cmd:?} requested: only CONNECT is served"
        )));
    }
    // A name is checked before it is looked up: resolving it could send a DNS query
    // off the machine for a destination the list refuses anyway.
    let allowed = match destinations(&target, &cfg.allow) {
        Ok(a) => a,
        Err(why) => {
            s.write_all(&refuse(s5::ReplyCode::NotAllowed))
                .await
                .map_err(w)?;
            return Err(Closed::input(why));
        }
    };
    let mut last = None;
    let mut up = None;
    for dest in &allowed {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(dest)).await {
            Ok(Ok(u)) => {
                up = Some(u);
                break;
            }
            Ok(Err(e)) => {
                let code = match e.kind() {
                    std::io::ErrorKind::ConnectionRefused => s5::ReplyCode::ConnectionRefused,
                    std::io::ErrorKind::HostUnreachable => s5::ReplyCode::HostUnreachable,
                    std::io::ErrorKind::NetworkUnreachable => s5::ReplyCode::NetworkUnreachable,
                    _ => s5::ReplyCode::GeneralFailure,
                };
                last = Some((code, format!("connecting to {dest}: {e}")));
            }
            Err(_) => {
                last = Some((
                    s5::ReplyCode::TtlExpired,
                    format!(
                        "connecting to {dest}: no answer within {}s",
                        CONNECT_TIMEOUT.as_secs()
                    ),
                ));
            }
        }
    }
    let Some(up) = up else {
        let (code, why) = last.unwrap_or((s5::ReplyCode::GeneralFailure, "no address".into()));
        s.write_all(&refuse(code)).await.map_err(w)?;
        return Err(why.into());
    };
    let _ = up.set_nodelay(true);
    let bound = up.local_addr().map_err(|e| Closed::from(e.to_string()))?;
    s.write_all(&s5::reply(s5::ReplyCode::Succeeded, &bound.into()))
        .await
        .map_err(w)?;
    Ok(up)
}

/// The addresses the allow list admits for the destination: as given, or for a name
/// those [`Allow::name`] gives (every address a name leads to is tried in turn, as a
/// client connecting by name would: ::1 and 127.0.0.1 for localhost).
fn destinations(t: &s5::Target, allow: &Allow) -> Result<Vec<SocketAddr>, String> {
    let addrs = match &t.host {
        s5::Host::V4(a) => vec![SocketAddr::new((*a).into(), t.port)],
        s5::Host::V6(a) => vec![SocketAddr::new((*a).into(), t.port)],
        s5::Host::Domain(d) => return allow.name(d, t.port),
    };
    if !allow.admits(addrs[0]) {
        return Err(format!("{t} is not an allowed destination"));
    }
    Ok(addrs)
}
