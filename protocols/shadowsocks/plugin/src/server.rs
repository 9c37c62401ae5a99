//! Our Shadowsocks AEAD server (SIP004/SIP007), or Shadowsocks 2022 (SIP022) when
//! configured with a pre-shared key (the codec is `wirebench-shadowsocks`). A
//! client's stream opens with its salt and chunks whose first plaintext is the target
//! address; the server connects there, forwards what followed the address, and relays
//! both ways, sealing the answer under a salt of its own.
//!
//! Not an open relay: it connects only to destinations its [`Allow`] admits and closes
//! the connection on any other. It takes any of the configured keys (one password, every
//! cipher: the first chunk's length opens under exactly one). Whatever the client does
//! wrong (a bad tag, an oversized length, a malformed address, no complete header within
//! [`HEADER_TIMEOUT`]) closes the connection without an answer, as Shadowsocks servers
//! do: there is no refusal message in the protocol. Memory per connection is bounded by
//! one chunk in each direction.
//!
//! With 2022 the server also refuses a header whose timestamp is more than 30 s from its
//! clock and a request salt it saw in the last 60 s (a replay; the salts are kept in a
//! pool of at most [`SALT_POOL`] per listener, which refuses new clients when full
//! rather than forget). As SIP022 recommends, a client refused during its header is
//! not closed at once but read to its end (or [`DRAIN_TIMEOUT`]), so the moment of the
//! close tells a prober nothing about which byte was wrong.
//!
//! A server run alone counts each client refused during its header (a tag that does not
//! open, a malformed address, a stale time or a replayed salt) against its source
//! ([`wirebench_net::ban`]), as fail2ban does with failed logins.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirebench_rpc::Counters;
use wirebench_rpc::server::Closed;
use wirebench_shadowsocks::v2022::{self, Psk, SaltPool};
use wirebench_shadowsocks::{
    Decryptor, Encryptor, Host, Key, MAX_PAYLOAD, TAG_LEN, Target, parse_address,
};

/// Time a client has from connecting to a complete address header.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time the server gives its own connection to the target.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes read from either side at once: one whole chunk of ciphertext.
const READ: usize = MAX_PAYLOAD + 2 + 2 * TAG_LEN;
/// How long a 2022 client refused during its header is read before it is closed.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Request salts one listener remembers (a minute's worth at over 4,000 new
/// connections a second; about 100 bytes each).
pub const SALT_POOL: usize = 1 << 18;

pub use wirebench_connect::allow::Allow;

#[derive(Debug, Clone)]
pub struct Config {
    /// The keys a client may use (one per cipher of one password, or just one).
    pub keys: Vec<Key>,
    /// A Shadowsocks 2022 key: then the server speaks only 2022, and `keys` is unused.
    pub psk: Option<Psk>,
    pub allow: Allow,
    /// A TCP Fast Open queue on the listener, so a client's SYN may carry its request.
    pub tfo: bool,
    /// Each closed connection's reason on stderr, and strikes against the sources
    /// refused during their header (a server run alone, which anyone may reach; a case's
    /// own strikes no one: only our client reaches it).
    pub log: bool,
    /// At most this many clients at once (`serve --also shadowsocks`); `None`: no cap.
    pub cap: Option<Arc<wirebench_net::cap::ConnCap>>,
}

/// Serves Shadowsocks on `l` until the runtime stops.
pub async fn serve(l: tokio::net::TcpListener, counters: Arc<Counters>, cfg: Arc<Config>) {
    if cfg.tfo
        && let Err(e) = wirebench_net::sock::set_listener_fastopen(&l)
    {
        counters.reject(format!(
            "the Shadowsocks server cannot take TCP Fast Open: {e}"
        ));
    }
    let salts = Rc::new(RefCell::new(SaltPool::new(SALT_POOL)));
    let stop = std::future::pending();
    let cap = cfg.cap.clone();
    // One line a second at most for this thread: a flood must not fill the terminal.
    let closes = std::rc::Rc::new(wirebench_net::cap::LogLimit::new());
    wirebench_net::accept::accept_local_capped(&l, stop, Some(true), cap.as_ref(), |s, peer| {
        let (c, cfg, salts) = (counters.clone(), cfg.clone(), salts.clone());
        let closes = closes.clone();
        async move {
            let r = match &cfg.psk {
                Some(psk) => session_2022(s, &cfg, psk, &salts).await,
                None => session(s, &cfg).await,
            };
            if let Err(e) = r {
                if cfg.log {
                    if e.for_input {
                        wirebench_net::ban::strike(peer.ip());
                    }
                    let why = &e.why;
                    closes
                        .eprint(|| format!("wirebench shadowsocks server: closed a client: {why}"));
                }
                c.reject(format!("Shadowsocks client: {}", e.why));
            }
        }
    })
    .await
}

/// The client's header, up to and including the target address.
struct Header {
    dec: Decryptor,
    target: Target,
    /// Plaintext that followed the address (the client's first data).
    rest: Vec<u8>,
}

/// Reads until the first plaintext holds a whole address. The plaintext held is at most
/// one chunk plus a partial address (259 bytes).
async fn read_header(s: &mut TcpStream, keys: &[Key]) -> Result<Header, Closed> {
    let mut dec = Decryptor::any(keys);
    let mut plain = Vec::new();
    let mut buf = vec![0u8; READ];
    loop {
        if let Some((target, n)) =
            parse_address(&plain).map_err(|e| Closed::input(format!("bad target address: {e}")))?
        {
            plain.drain(..n);
            return Ok(Header {
                dec,
                target,
                rest: plain,
            });
        }
        let want = dec.wants().min(buf.len());
        let n = s
            .read(&mut buf[..want])
            .await
            .map_err(|e| format!("reading the header: {e}"))?;
        if n == 0 {
            return Err(match dec.finish() {
                Err(e) => format!("closed inside the header: {e}"),
                Ok(()) => "closed before a complete target address".into(),
            }
            .into());
        }
        let mut input = &buf[..n];
        // One chunk at a time, so an address found in the first stops the reading there.
        while let Some(p) = dec
            .next_chunk(&mut input)
            .map_err(|e| Closed::input(e.to_string()))?
        {
            plain.extend_from_slice(p);
        }
    }
}

/// A client's connection: the header under its time limit, then the relay.
async fn session(mut s: TcpStream, cfg: &Config) -> Result<(), Closed> {
    let h = match tokio::time::timeout(HEADER_TIMEOUT, read_header(&mut s, &cfg.keys)).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(format!("no complete header within {}s", HEADER_TIMEOUT.as_secs()).into());
        }
    };
    let key = h
        .dec
        .cipher()
        .and_then(|c| cfg.keys.iter().find(|k| k.cipher() == c))
        .ok_or_else(|| Closed::from("no cipher identified".to_string()))?
        .clone();
    let up = connect_onwards(&h.target, cfg, &h.rest).await?;
    let salt = crate::stream::fresh_salt(&key).map_err(|e| e.to_string())?;
    let enc = Encryptor::new(&key, &salt).map_err(|e| e.to_string())?;
    // The relay ends when either side closes or fails; neither is the client's fault,
    // except a chunk that does not open, which is reported.
    Ok(relay(s, up, Opener::Aead(h.dec), Sealer::Aead(enc)).await?)
}

/// Connects to `target` if allowed and forwards the client's first data there.
async fn connect_onwards(target: &Target, cfg: &Config, first: &[u8]) -> Result<TcpStream, String> {
    // A name is checked before it is looked up: resolving it could send a DNS query
    // off the machine for a destination the list refuses anyway.
    let allowed = destinations(target, &cfg.allow)?;
    let mut last = String::new();
    let mut up = None;
    for dest in &allowed {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(dest)).await {
            Ok(Ok(u)) => {
                up = Some(u);
                break;
            }
            Ok(Err(e)) => last = format!("connecting to {dest}: {e}"),
            Err(_) => {
                last = format!(
                    "connecting to {dest}: no answer within {}s",
                    CONNECT_TIMEOUT.as_secs()
                )
            }
        }
    }
    let Some(mut up) = up else {
        return Err(last);
    };
    let _ = up.set_nodelay(true);
    if !first.is_empty() {
        up.write_all(first)
            .await
            .map_err(|e| format!("forwarding the first data: {e}"))?;
    }
    Ok(up)
}

/// A 2022 client's request header: the decoder (its head holds salt, time and target)
/// and the data that came with the header.
async fn read_head_2022(
    s: &mut TcpStream,
    psk: &Psk,
) -> Result<(v2022::Decryptor, Vec<u8>), Closed> {
    let mut dec = v2022::Decryptor::request(psk);
    let mut buf = vec![0u8; READ];
    let mut first = Vec::new();
    loop {
        // Never more than the unit in progress: nothing past the variable header is read
        // before the header has been checked.
        let want = dec.wants().min(buf.len());
        let n = s
            .read(&mut buf[..want])
            .await
            .map_err(|e| format!("reading the header: {e}"))?;
        if n == 0 {
            return Err(match dec.finish() {
                Err(e) => format!("closed inside the header: {e}"),
                Ok(()) => "closed before a complete header".into(),
            }
            .into());
        }
        let mut input = &buf[..n];
        while let Some(p) = dec
            .next_chunk(&mut input)
            .map_err(|e| Closed::input(e.to_string()))?
        {
            first.extend_from_slice(p);
        }
        if dec.head().is_some_and(|h| h.target.is_some()) {
            return Ok((dec, first));
        }
    }
}

/// Reads and drops what a refused client sends until it closes or [`DRAIN_TIMEOUT`].
async fn drain(s: &mut TcpStream) {
    let mut buf = vec![0u8; 4096];
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while let Ok(n) = s.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

/// A Shadowsocks 2022 client's connection: its header under the time limit, checked for
/// freshness and replay, then the relay.
async fn session_2022(
    mut s: TcpStream,
    cfg: &Config,
    psk: &Psk,
    salts: &RefCell<SaltPool>,
) -> Result<(), Closed> {
    let (dec, first) = match tokio::time::timeout(HEADER_TIMEOUT, read_head_2022(&mut s, psk)).await
    {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => {
            drain(&mut s).await;
            return Err(e);
        }
        Err(_) => {
            return Err(format!("no complete header within {}s", HEADER_TIMEOUT.as_secs()).into());
        }
    };
    let Some(head) = dec.head().cloned() else {
        return Err("no header".to_string().into());
    };
    // The header's tag held, so its salt and time are the client's (or a replay's).
    let now = crate::unix_now();
    let checked = v2022::check_timestamp(head.timestamp, now)
        .and_then(|()| salts.borrow_mut().check_and_insert(&head.salt, now));
    if let Err(e) = checked {
        drain(&mut s).await;
        return Err(Closed::input(e.to_string()));
    }
    let Some(target) = head.target else {
        return Err("no target".to_string().into());
    };
    let up = connect_onwards(&target, cfg, &first).await?;
    let salt = crate::stream::random_bytes(psk.salt_len()).map_err(|e| e.to_string())?;
    let enc = v2022::Encryptor::server(psk, &salt, &head.salt).map_err(|e| e.to_string())?;
    Ok(relay(s, up, Opener::V2022(dec), Sealer::V2022(enc)).await?)
}

/// The client's direction, opened.
enum Opener {
    Aead(Decryptor),
    V2022(v2022::Decryptor),
}

impl Opener {
    fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Opener::Aead(d) => d.feed(input, out),
            Opener::V2022(d) => d.feed(input, out),
        }
        .map_err(|e| e.to_string())
    }

    fn finish(&self) -> Result<(), String> {
        match self {
            Opener::Aead(d) => d.finish(),
            Opener::V2022(d) => d.finish(),
        }
        .map_err(|e| e.to_string())
    }
}

/// The answer's direction, sealed.
enum Sealer {
    Aead(Encryptor),
    V2022(v2022::Encryptor),
}

impl Sealer {
    fn seal(&mut self, data: &[u8], out: &mut Vec<u8>) {
        match self {
            Sealer::Aead(e) => e.seal(data, out),
            Sealer::V2022(e) => e.seal(data, crate::unix_now(), out),
        }
    }
}

/// Both directions at once: the client's chunks opened towards the target, the target's
/// bytes sealed towards the client. Each side's end is passed on as a FIN.
async fn relay(
    client: TcpStream,
    up: TcpStream,
    mut dec: Opener,
    mut enc: Sealer,
) -> Result<(), String> {
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = up.into_split();
    let inbound = async {
        let mut buf = vec![0u8; READ];
        let mut plain = Vec::with_capacity(READ);
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    let _ = uw.shutdown().await;
                    return dec.finish();
                }
                Ok(n) => n,
            };
            plain.clear();
            dec.feed(&buf[..n], &mut plain)?;
            if uw.write_all(&plain).await.is_err() {
                return Ok(());
            }
        }
    };
    let outbound = async {
        let mut buf = vec![0u8; MAX_PAYLOAD];
        let mut sealed = Vec::with_capacity(READ);
        loop {
            let n = match ur.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    let _ = cw.shutdown().await;
                    return;
                }
                Ok(n) => n,
            };
            sealed.clear();
            enc.seal(&buf[..n], &mut sealed);
            if cw.write_all(&sealed).await.is_err() {
                return;
            }
        }
    };
    // A client chunk that does not open ends both directions at once; otherwise each
    // runs until its own end.
    tokio::pin!(inbound, outbound);
    let (mut inbound_done, mut outbound_done) = (false, false);
    while !(inbound_done && outbound_done) {
        tokio::select! {
            r = &mut inbound, if !inbound_done => {
                r?;
                inbound_done = true;
            }
            () = &mut outbound, if !outbound_done => outbound_done = true,
        }
    }
    Ok(())
}

/// The addresses the allow list admits for the target: as given, or for a name those
/// [`Allow::name`] gives, each tried in turn.
fn destinations(t: &Target, allow: &Allow) -> Result<Vec<SocketAddr>, String> {
    let addrs = match &t.host {
        Host::V4(a) => vec![SocketAddr::new((*a).into(), t.port)],
        Host::V6(a) => vec![SocketAddr::new((*a).into(), t.port)],
        Host::Domain(d) => return allow.name(d, t.port),
    };
    if !allow.admits(addrs[0]) {
        return Err(format!("{t} is not an allowed destination"));
    }
    Ok(addrs)
}
