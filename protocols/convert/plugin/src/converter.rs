//! The Transport Converter of RFC 8803: a client's SYN carries (with TCP Fast Open) a
//! Convert message whose Connect TLV names the server, followed by the client's first
//! data; the converter connects onwards, and only once the server has accepted does it
//! answer with its own Convert message, then relay both ways. A refusal is the RFC's
//! Error TLV, after which the converter closes.
//!
//! With Fast Open on, the connection onwards uses it too (the client's data goes to the
//! server in the converter's own SYN, as in RFC 8803's message flows), and the answer
//! goes back once the server's SYN-ACK is in. Without a cookie for the server yet, the
//! kernel sends an ordinary SYN asking for one, and the data follows the handshake.
//!
//! Not an open relay: it connects only to destinations its [`Allow`] admits, and answers
//! any other with "Not Authorized to Connect". A client has [`HANDSHAKE_TIMEOUT`] to
//! send its whole Convert message (at most [`MAX_MESSAGE`] bytes, what the 8-bit length
//! in 32-bit words can say); a connection's failure closes only it. A converter run
//! alone counts each client refused for what it sent (not a Convert message, no Connect
//! TLV, a destination not allowed) against its source ([`wirebench_net::ban`]).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest, ReadBuf};
use tokio::net::TcpStream;
use wirebench_convert as cv;
use wirebench_model::clock::monotonic_ns;
use wirebench_rpc::Counters;
use wirebench_rpc::server::Closed;

/// Time a client has from connecting to its complete Convert message.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time the converter gives its own connection to the server.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest Convert message: 255 32-bit words.
pub const MAX_MESSAGE: usize = 255 * 4;

pub use wirebench_connect::allow::Allow;

#[derive(Debug, Clone)]
pub struct Config {
    pub allow: Allow,
    /// TCP Fast Open both ways: a queue on the listener, so clients' SYNs may carry their
    /// request, and the client's first data in the SYN of the connection onwards.
    pub tfo: bool,
    /// Each refused or failed connection on stderr, and strikes against the sources
    /// refused for what they sent (`wirebench converter`: anyone who can reach it may
    /// misuse it; a case's converter strikes no one, only our client reaches it).
    pub log: bool,
    /// Where to keep each connection's leg to the server ([`Legs`]), when measured.
    pub legs: Option<Arc<Legs>>,
    /// At most this many clients at once, over all the converter's threads; `None`: no
    /// cap (a case's converter).
    pub cap: Option<Arc<wirebench_net::cap::ConnCap>>,
}

/// The converter's own leg of each connection, for the connect workload: from the start
/// of its connection onwards to the server's first byte back (ns). It is what a
/// converter cannot avoid adding to a client's time to first byte; anything beyond it is
/// the converter's overhead or an extra round trip on the client's path.
#[derive(Debug, Default)]
pub struct Legs {
    times: Mutex<Vec<u64>>,
    /// Connections onwards whose SYN carried the client's data and the server took it.
    syn_data: AtomicU64,
}

impl Legs {
    /// The legs measured so far.
    pub fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *self.times.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// How many connections onwards carried the client's data in their SYN, accepted.
    pub fn syn_data(&self) -> u64 {
        self.syn_data.load(Ordering::Relaxed)
    }

    fn push(&self, ns: u64, syn_data: bool) {
        self.times
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(ns);
        self.syn_data
            .fetch_add(u64::from(syn_data), Ordering::Relaxed);
    }
}

/// Serves the Convert Protocol on `l` until the runtime stops.
pub async fn serve(l: tokio::net::TcpListener, counters: Arc<Counters>, cfg: Arc<Config>) {
    if cfg.tfo
        && let Err(e) = wirebench_net::sock::set_listener_fastopen(&l)
    {
        counters.reject(format!("the converter cannot take TCP Fast Open: {e}"));
    }
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
                    closes.eprint(|| format!("wirebench converter: a client: {why}"));
                }
                c.reject(format!("Convert client: {}", e.why));
            }
        }
    })
    .await
}

/// Sends the Error TLV for `code` and returns `why` as the session's error, closing
/// gently so the client reads the Error TLV before any reset.
async fn refuse<T>(s: &mut TcpStream, code: cv::ErrorCode, why: Closed) -> Result<T, Closed> {
    let _ = s.write_all(&cv::error_reply(code)).await;
    wirebench_net::accept::close_gently(s).await;
    Err(why)
}

async fn session(mut s: TcpStream, cfg: &Config) -> Result<(), Closed> {
    let mut buf = Vec::with_capacity(256);
    let opened = tokio::time::timeout(HANDSHAKE_TIMEOUT, open(&mut s, &mut buf, cfg)).await;
    let (up, onward_at) = match opened {
        Ok(r) => r?,
        Err(_) => {
            return Err(format!(
                "no complete Convert message within {}s",
                HANDSHAKE_TIMEOUT.as_secs()
            )
            .into());
        }
    };
    let syn_data = wirebench_net::sock::syn_data_acked(&up);
    let mut up = FirstRead {
        inner: up,
        at: None,
    };
    // The relay ends when either side closes or fails; neither is the client's fault.
    let _ = tokio::io::copy_bidirectional(&mut s, &mut up).await;
    if let (Some(legs), Some(at)) = (&cfg.legs, up.at) {
        legs.push(at.saturating_sub(onward_at), syn_data);
    }
    Ok(())
}

/// A stream that notes when its first byte arrived (for [`Legs`]).
struct FirstRead<S> {
    inner: S,
    at: Option<u64>,
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstRead<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if self.at.is_none() && buf.filled().len() > before {
            self.at = Some(monotonic_ns());
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstRead<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Connects to `dest` and sends it `early` (the client's first data): in the SYN when
/// `tfo` and the kernel holds a cookie for `dest`. Returns once the server has accepted
/// (its SYN-ACK is in) and `early` is sent whole; on a refusal, the connect's error.
pub async fn connect_onward(
    dest: SocketAddr,
    early: &[u8],
    tfo: bool,
) -> std::io::Result<TcpStream> {
    if !tfo || early.is_empty() {
        let mut up = TcpStream::connect(dest).await?;
        let _ = up.set_nodelay(true);
        up.write_all(early).await?;
        return Ok(up);
    }
    let sock = wirebench_net::sock::stream_socket(dest, false)?;
    wirebench_net::sock::set_fastopen_connect(&sock)?;
    sock.set_nonblocking(true)?;
    // With a cookie, connect returns at once and the write below sends the SYN with the
    // data; without one, connect is an ordinary handshake that fetches a cookie.
    let sock = tokio::net::TcpSocket::from_std_stream(std::net::TcpStream::from(sock));
    let mut up = sock.connect(dest).await?;
    let _ = up.set_nodelay(true);
    up.write_all(early).await?;
    // The write returns once the SYN is out; the server's SYN-ACK makes the socket
    // writable (an edge tokio sees), after which the state is ESTABLISHED, or CLOSE with
    // the connect's error on a reset.
    up.async_io(Interest::WRITABLE, || {
        use wirebench_net::sock::{TCP_CLOSE, TCP_SYN_SENT, tcp_state};
        match tcp_state(&up) {
            Some(TCP_SYN_SENT) => Err(std::io::ErrorKind::WouldBlock.into()),
            Some(TCP_CLOSE) | None => Err(up
                .take_error()?
                .unwrap_or_else(|| std::io::ErrorKind::ConnectionRefused.into())),
            Some(_) => Ok(()),
        }
    })
    .await?;
    Ok(up)
}

/// Reads the client's Convert message, connects to its server with the data that came
/// with the message, and answers. Returns the connection onwards and when it was begun.
async fn open(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    cfg: &Config,
) -> Result<(TcpStream, u64), Closed> {
    let tlvs = loop {
        match cv::parse(buf) {
            Ok(Some((tlvs, n))) => {
                buf.drain(..n);
                break tlvs;
            }
            Ok(None) => {}
            Err(e) => {
                let code = e.reply_code();
                let why = Closed::input(format!("bad Convert message: {e}"));
                return refuse(s, code, why).await;
            }
        }
        if buf.len() >= MAX_MESSAGE + 64 * 1024 {
            return Err(Closed::input("a Convert message that never ends"));
        }
        let mut chunk = [0u8; 2048];
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the Convert message: {e}"))?;
        if n == 0 {
            return Err(Closed::from(
                "closed before the Convert message was complete".to_string(),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let Some(dest) = cv::connect_target(&tlvs) else {
        return refuse(
            s,
            cv::ErrorCode::MalformedMessage,
            Closed::input("a Convert message without a Connect TLV"),
        )
        .await;
    };
    if !cfg.allow.admits(dest) {
        return refuse(
            s,
            cv::ErrorCode::NotAuthorized,
            Closed::input(format!("{dest} is not an allowed destination")),
        )
        .await;
    }
    let onward_at = monotonic_ns();
    let connecting = connect_onward(dest, buf, cfg.tfo);
    let up = match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(Ok(up)) => up,
        Ok(Err(e)) => {
            let code = match e.kind() {
                std::io::ErrorKind::ConnectionRefused => cv::ErrorCode::ConnectionReset,
                _ => cv::ErrorCode::DestinationUnreachable,
            };
            return refuse(s, code, format!("connecting to {dest}: {e}").into()).await;
        }
        Err(_) => {
            return refuse(
                s,
                cv::ErrorCode::DestinationUnreachable,
                format!(
                    "connecting to {dest}: no answer within {}s",
                    CONNECT_TIMEOUT.as_secs()
                )
                .into(),
            )
            .await;
        }
    };
    buf.clear();
    // The server has accepted (and has the client's first data): now the answer.
    s.write_all(&cv::success_reply())
        .await
        .map_err(|e| format!("answering the client: {e}"))?;
    Ok((up, onward_at))
}

/// `wirebench converter`: serves on each of `listeners` (sharing one port with
/// `SO_REUSEPORT`), a thread and runtime each, until the threads are stopped.
pub fn start(
    listeners: Vec<std::net::TcpListener>,
    cfg: Config,
) -> Result<Vec<wirebench_net::threads::ServerThread>, String> {
    let cfg = Arc::new(cfg);
    wirebench_net::threads::spawn_each("converter", listeners, move |l| {
        serve(l, Arc::new(Counters::default()), cfg.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways of connecting onwards deliver the client's data, and a refusal comes
    /// back as the connect's error (which `open` turns into the RFC's error TLV). The
    /// path with a cookie, data in the SYN, is covered over the lab by
    /// tests/e2e/proxies.rs (`convert.onward_tfo`).
    #[test]
    fn connecting_onwards_delivers_or_fails_as_the_server_answers() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for tfo in [false, true] {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let at = l.local_addr().unwrap();
                let got = tokio::spawn(async move {
                    let (mut s, _) = l.accept().await.unwrap();
                    let mut b = [0u8; 5];
                    s.read_exact(&mut b).await.unwrap();
                    b
                });
                let up = connect_onward(at, b"hello", tfo).await.unwrap();
                assert_eq!(&got.await.unwrap(), b"hello", "tfo={tfo}");
                drop(up);
                // A port nobody listens on: bind one, note it, close it.
                let closed = std::net::TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap();
                let e = connect_onward(closed, b"hello", tfo).await.unwrap_err();
                assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "tfo={tfo}");
            }
        });
    }
}
