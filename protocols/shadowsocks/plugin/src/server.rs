//! Our Shadowsocks AEAD server (SIP004/SIP007; the codec is `wirebench-shadowsocks`). A
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

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wirebench_rpc::Counters;
use wirebench_shadowsocks::{
    Decryptor, Encryptor, Host, Key, MAX_PAYLOAD, TAG_LEN, Target, parse_address,
};

/// Time a client has from connecting to a complete address header.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time the server gives its own connection to the target.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes read from either side at once: one whole chunk of ciphertext.
const READ: usize = MAX_PAYLOAD + 2 + 2 * TAG_LEN;

/// Which destinations the server connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    /// Exactly these addresses (a case's origin).
    Only(Vec<SocketAddr>),
    /// Any port of these networks (address, prefix length).
    Networks(Vec<(IpAddr, u8)>),
}

impl Allow {
    pub fn admits(&self, a: SocketAddr) -> bool {
        match self {
            Allow::Only(v) => v.contains(&a),
            Allow::Networks(nets) => nets.iter().any(|(n, bits)| within(a.ip(), *n, *bits)),
        }
    }

    /// Loopback only: `wirebench serve --also shadowsocks=ADDR`.
    pub fn loopback() -> Allow {
        Allow::Networks(vec![
            (std::net::Ipv4Addr::LOCALHOST.into(), 8),
            (std::net::Ipv6Addr::LOCALHOST.into(), 128),
        ])
    }
}

fn within(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    /// The keys a client may use (one per cipher of one password, or just one).
    pub keys: Vec<Key>,
    pub allow: Allow,
    /// A TCP Fast Open queue on the listener, so a client's SYN may carry its request.
    pub tfo: bool,
    /// Each closed connection's reason on stderr (a server run alone).
    pub log: bool,
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
    loop {
        let Ok((s, _)) = l.accept().await else {
            // Out of descriptors or a connection reset before accept: wait, go on.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = s.set_nodelay(true);
        let (c, cfg) = (counters.clone(), cfg.clone());
        tokio::task::spawn_local(async move {
            if let Err(e) = session(s, &cfg).await {
                if cfg.log {
                    eprintln!("wirebench shadowsocks server: closed a client: {e}");
                }
                c.reject(format!("Shadowsocks client: {e}"));
            }
        });
    }
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
async fn read_header(s: &mut TcpStream, keys: &[Key]) -> Result<Header, String> {
    let mut dec = Decryptor::any(keys);
    let mut plain = Vec::new();
    let mut buf = vec![0u8; READ];
    loop {
        if let Some((target, n)) =
            parse_address(&plain).map_err(|e| format!("bad target address: {e}"))?
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
            });
        }
        let mut input = &buf[..n];
        // One chunk at a time, so an address found in the first stops the reading there.
        while let Some(p) = dec.next_chunk(&mut input).map_err(|e| e.to_string())? {
            plain.extend_from_slice(p);
        }
    }
}

/// A client's connection: the header under its time limit, then the relay.
async fn session(mut s: TcpStream, cfg: &Config) -> Result<(), String> {
    let h = match tokio::time::timeout(HEADER_TIMEOUT, read_header(&mut s, &cfg.keys)).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(format!(
                "no complete header within {}s",
                HEADER_TIMEOUT.as_secs()
            ));
        }
    };
    let key = h
        .dec
        .cipher()
        .and_then(|c| cfg.keys.iter().find(|k| k.cipher() == c))
        .ok_or("no cipher identified")?
        .clone();
    let addrs = resolve(&h.target).await;
    let allowed: Vec<SocketAddr> = addrs.into_iter().filter(|a| cfg.allow.admits(*a)).collect();
    if allowed.is_empty() {
        return Err(format!("{} is not an allowed destination", h.target));
    }
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
    if !h.rest.is_empty() {
        up.write_all(&h.rest)
            .await
            .map_err(|e| format!("forwarding the first data: {e}"))?;
    }
    let salt = crate::stream::fresh_salt(&key).map_err(|e| e.to_string())?;
    let enc = Encryptor::new(&key, &salt).map_err(|e| e.to_string())?;
    // The relay ends when either side closes or fails; neither is the client's fault,
    // except a chunk that does not open, which is reported.
    relay(s, up, h.dec, enc).await
}

/// Both directions at once: the client's chunks opened towards the target, the target's
/// bytes sealed towards the client. Each side's end is passed on as a FIN.
async fn relay(
    client: TcpStream,
    up: TcpStream,
    mut dec: Decryptor,
    mut enc: Encryptor,
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
                    return dec.finish().map_err(|e| e.to_string());
                }
                Ok(n) => n,
            };
            plain.clear();
            dec.feed(&buf[..n], &mut plain).map_err(|e| e.to_string())?;
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

/// The target's addresses: as given, or all a name resolves to (at most 8).
async fn resolve(t: &Target) -> Vec<SocketAddr> {
    match &t.host {
        Host::V4(a) => vec![SocketAddr::new((*a).into(), t.port)],
        Host::V6(a) => vec![SocketAddr::new((*a).into(), t.port)],
        Host::Domain(d) => tokio::net::lookup_host((d.as_str(), t.port))
            .await
            .map(|it| it.take(8).collect())
            .unwrap_or_default(),
    }
}
