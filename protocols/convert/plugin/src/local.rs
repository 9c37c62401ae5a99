//! `wirebench converter-client`: the client side of RFC 8803 for any program, as a local
//! SOCKS5 front (RFC 1928, no authentication, CONNECT to an IPv4 or IPv6 address).
//!
//! A program that can use a SOCKS5 proxy (curl `--socks5`, browsers, proxychains) talks
//! to this front on its own machine; the front turns each CONNECT into one connection to
//! the Transport Converter whose first write is the Convert message (a Connect TLV) and
//! the program's first data, which with TCP Fast Open rides in the SYN. The round trips
//! SOCKS5 costs are paid on the local loopback (microseconds), not on the path to the
//! converter.
//!
//! Why a local proxy and not an `LD_PRELOAD` library (the form of the public RFC 8803
//! client): it works for every program that speaks SOCKS5 whatever its language or libc
//! (a preload library cannot reach statically linked or Go programs, nor ones that call
//! the kernel directly), and it is ordinary safe Rust, with no interposed libc calls to
//! keep correct across versions. The price is a loopback hop, and one difference in
//! behaviour:
//!
//! - the front answers the program's CONNECT at once ("succeeded") so that the program
//!   sends its first data, which must travel in the SYN. A converter's refusal then shows
//!   as a closed connection, not as a SOCKS5 error (it is logged on stderr);
//! - a program that waits for the server to speak first (SMTP, SSH) has no first data:
//!   after `first_data_wait` the front connects without it (one round trip later for the
//!   server's greeting than with data, as without Fast Open).
//!
//! The Connect TLV carries addresses only, so a CONNECT to a name is refused with
//! "address type not supported" (curl: use `--socks5`, which resolves names locally,
//! not `--socks5-hostname`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirebench_convert as cv;
use wirebench_rpc::Counters;
use wirebench_socks5 as s5;

/// A program has this long to finish its SOCKS5 greeting and request.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a program's first data sent with the Convert message: about what one
/// SYN can carry on an Ethernet path (the kernel sends the rest after the handshake).
const FIRST_DATA_MAX: usize = 1400;

#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// The Transport Converter.
    pub via: SocketAddr,
    /// TCP Fast Open to the converter.
    pub tfo: bool,
    /// How long to wait for the program's first data before connecting without it.
    pub first_data_wait: Duration,
    /// Each refused or failed connection on stderr.
    pub log: bool,
    /// At most this many programs' connections at once; `None`: no cap.
    pub cap: Option<Arc<wirebench_net::cap::ConnCap>>,
}

/// Serves the SOCKS5 front on `l` until the runtime stops.
pub async fn serve(l: tokio::net::TcpListener, counters: Arc<Counters>, cfg: Arc<LocalConfig>) {
    let stop = std::future::pending();
    let cap = cfg.cap.clone();
    // One line a second at most for this thread: a flood must not fill the terminal.
    let closes = std::rc::Rc::new(wirebench_net::cap::LogLimit::new());
    wirebench_net::accept::accept_local_capped(&l, stop, Some(true), cap.as_ref(), |s, _| {
        let (c, cfg) = (counters.clone(), cfg.clone());
        let closes = closes.clone();
        async move {
            if let Err(e) = session(s, &cfg).await {
                if cfg.log {
                    closes.eprint(|| format!("wirebench converter-client: {e}"));
                }
                c.reject(e);
            }
        }
    })
    .await
}

async fn session(mut app: TcpStream, cfg: &LocalConfig) -> Result<(), String> {
    let mut buf = Vec::with_capacity(512);
    let target = match tokio::time::timeout(HANDSHAKE_TIMEOUT, socks(&mut app, &mut buf)).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(format!(
                "a program did not finish its SOCKS5 request within {}s",
                HANDSHAKE_TIMEOUT.as_secs()
            ));
        }
    };
    // `buf` holds whatever the program sent after its request; wait briefly for more.
    if buf.is_empty() {
        let mut chunk = vec![0u8; FIRST_DATA_MAX];
        if let Ok(r) = tokio::time::timeout(cfg.first_data_wait, app.read(&mut chunk)).await {
            match r {
                Ok(0) => return Ok(()),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("reading the program's first data: {e}")),
            }
        }
    }
    let mut conv = wirebench_connect::open(cfg.via, cfg.tfo, false)
        .await
        .map_err(|e| format!("connecting to the converter {}: {e}", cfg.via))?
        .0;
    let first = buf.len().min(FIRST_DATA_MAX);
    let mut syn = cv::connect_request(target);
    syn.extend_from_slice(&buf[..first]);
    conv.write_all(&syn)
        .await
        .map_err(|e| format!("sending to the converter {}: {e}", cfg.via))?;
    if first < buf.len() {
        conv.write_all(&buf[first..])
            .await
            .map_err(|e| format!("sending to the converter {}: {e}", cfg.via))?;
    }
    // The converter's answer comes before the server's bytes; only those go to the program.
    let mut answer: Vec<u8> = Vec::with_capacity(64);
    loop {
        match cv::parse(&answer) {
            Ok(Some((tlvs, n))) => {
                if let Some(code) = tlvs.iter().find_map(|t| match t {
                    cv::Tlv::Error { code, .. } => Some(*code),
                    _ => None,
                }) {
                    return Err(format!("the converter refused {target}: {code}"));
                }
                answer.drain(..n);
                break;
            }
            Ok(None) if answer.len() < 2048 => {}
            Ok(None) => return Err("the converter's answer is over 2 KiB".into()),
            Err(e) => {
                return Err(format!(
                    "the converter's answer is not a Convert message: {e}"
                ));
            }
        }
        let mut chunk = [0u8; 1024];
        let n = conv
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the converter's answer: {e}"))?;
        if n == 0 {
            return Err(format!(
                "the converter closed before answering for {target}"
            ));
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    if !answer.is_empty() {
        app.write_all(&answer)
            .await
            .map_err(|e| format!("writing to the program: {e}"))?;
    }
    // Either side closing or failing ends the relay; neither is an error of ours.
    let _ = tokio::io::copy_bidirectional(&mut app, &mut conv).await;
    Ok(())
}

/// Answers the program's greeting and CONNECT; returns the target. Bytes after the
/// request stay in `buf`.
async fn socks(app: &mut TcpStream, buf: &mut Vec<u8>) -> Result<SocketAddr, String> {
    let methods = read_msg(app, buf, "greeting", s5::parse_greeting).await?;
    if !methods.contains(&s5::NO_AUTH) {
        let _ = app.write_all(&s5::method_choice(s5::NO_ACCEPTABLE)).await;
        return Err("a program offered no SOCKS5 method but username/password".into());
    }
    app.write_all(&s5::method_choice(s5::NO_AUTH))
        .await
        .map_err(|e| format!("answering the greeting: {e}"))?;
    let unspecified = s5::Target {
        host: s5::Host::V4(std::net::Ipv4Addr::UNSPECIFIED),
        port: 0,
    };
    let refuse = |code: s5::ReplyCode| s5::reply(code, &unspecified);
    let (cmd, target) = match read_msg(app, buf, "request", s5::parse_request).await {
        Ok(r) => r,
        Err(e) => return Err(e),
    };
    let addr = match (&cmd, &target.host) {
        (s5::Command::Connect, s5::Host::V4(a)) => SocketAddr::new((*a).into(), target.port),
        (s5::Command::Connect, s5::Host::V6(a)) => SocketAddr::new((*a).into(), target.port),
        (s5::Command::Connect, s5::Host::Domain(d)) => {
            let _ = app
                .write_all(&refuse(s5::ReplyCode::AddressTypeNotSupported))
                .await;
            return Err(format!(
                "a CONNECT to the name {d:?}: the converter takes addresses only (curl: --socks5, not --socks5-hostname)"
            ));
        }
        (other, _) => {
            let _ = app
                .write_all(&refuse(s5::ReplyCode::CommandNotSupported))
                .await;
            return Err(format!("a {other:?} request: only CONNECT is supported"));
        }
    };
    // At once, so the program sends the first data that must ride in the SYN (see the
    // module docs).
    app.write_all(&s5::reply(s5::ReplyCode::Succeeded, &unspecified))
        .await
        .map_err(|e| format!("answering the request: {e}"))?;
    Ok(addr)
}

async fn read_msg<T>(
    app: &mut TcpStream,
    buf: &mut Vec<u8>,
    what: &str,
    parse: impl Fn(&[u8]) -> s5::Parsed<T>,
) -> Result<T, String> {
    loop {
        match parse(buf) {
            Ok(Some((v, n))) => {
                buf.drain(..n);
                return Ok(v);
            }
            Ok(None) if buf.len() < 1024 => {}
            Ok(None) => return Err(format!("a SOCKS5 {what} over 1 KiB")),
            Err(e) => {
                let _ = app
                    .write_all(&s5::reply(
                        e.reply_code(),
                        &s5::Target {
                            host: s5::Host::V4(std::net::Ipv4Addr::UNSPECIFIED),
                            port: 0,
                        },
                    ))
                    .await;
                return Err(format!("a bad SOCKS5 {what}: {e}"));
            }
        }
        let mut chunk = [0u8; 512];
        let n = app
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the SOCKS5 {what}: {e}"))?;
        if n == 0 {
            return Err(format!("a program closed during its SOCKS5 {what}"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// `wirebench converter-client`: serves on `listener` until `stop` is set.
pub fn run_standalone(
    listener: std::net::TcpListener,
    cfg: LocalConfig,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Result<(), String> {
    crate::run_standalone(listener, stop, move |l, c| serve(l, c, Arc::new(cfg)))
}
