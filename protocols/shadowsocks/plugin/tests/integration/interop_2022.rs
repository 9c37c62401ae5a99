//! Shadowsocks 2022 (SIP022): our client and server against each other and against
//! shadowsocks-rust 1.25.0 (`ssserver`, and `sslocal` as a SOCKS5 front to our server),
//! every 2022 method, on loopback: every echo through each pairing comes back as sent.
//! Then what our server refuses: a replayed first flight and a stale or future
//! timestamp never reach the origin, get no answer, and are read to their end before
//! the close. The shadowsocks-rust tests fail with the install command when it is
//! missing (scripts/install-shadowsocks-rust.sh), unless WIREBENCH_SKIP_SHADOWSOCKS_RUST
//! is set.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wirebench_plugin_shadowsocks::{peers, server, stream, unix_now};
use wirebench_rpc::Counters;
use wirebench_shadowsocks::v2022::{self, Psk};
use wirebench_shadowsocks::{Cipher, Target};

fn local<F: std::future::Future<Output = ()>>(f: F) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f);
}

/// An echo origin that counts the connections it accepted.
async fn origin() -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    let n = Arc::new(AtomicU64::new(0));
    let count = n.clone();
    tokio::task::spawn_local(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                continue;
            };
            count.fetch_add(1, Ordering::SeqCst);
            tokio::task::spawn_local(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    (a, n)
}

async fn ours(psk: &Psk, o: SocketAddr) -> (SocketAddr, Arc<Counters>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    let c = Arc::new(Counters::default());
    let cfg = Arc::new(server::Config {
        keys: Vec::new(),
        psk: Some(psk.clone()),
        allow: server::Allow::Only(vec![o]),
        tfo: false,
        log: false,
        cap: None,
    });
    tokio::task::spawn_local(server::serve(l, c.clone(), cfg));
    (a, c)
}

fn psk(c: Cipher) -> Psk {
    Psk::from_bytes(c, &stream::random_bytes(c.key_len()).unwrap()).unwrap()
}

fn message(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

/// Our client: `msg` to `target` through the server at `ss`, and the echo back.
async fn through(
    ss: SocketAddr,
    psk: &Psk,
    target: SocketAddr,
    msg: &[u8],
) -> std::io::Result<Vec<u8>> {
    let tcp = TcpStream::connect(ss).await?;
    let salt = stream::random_bytes(psk.salt_len())?;
    let mut s = stream::SsStream::new_2022(tcp, psk, &salt, Target::from(target), 0)?;
    s.write_all(msg).await?;
    s.flush().await?;
    let mut back = vec![0u8; msg.len()];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut back))
        .await
        .map_err(|_| std::io::Error::other("no echo within 5 s"))??;
    Ok(back)
}

/// shadowsocks-rust's `name`, or `None` (skip) when WIREBENCH_SKIP_SHADOWSOCKS_RUST is
/// set and it is missing.
fn rust_program(name: &str) -> Option<std::path::PathBuf> {
    match peers::rust_program(name) {
        Ok(p) => Some(p),
        Err(e) if std::env::var_os("WIREBENCH_SKIP_SHADOWSOCKS_RUST").is_some() => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        wirebench_peer::stop_child(&mut self.0, Duration::from_secs(2));
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_port(port: u16) {
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on {port}");
}

const SIZES: [usize; 5] = [1, 64, 16_384, 65_535, 200_000];

#[test]
fn our_client_and_server_every_method() {
    local(async {
        let (o, accepted) = origin().await;
        for c in Cipher::ALL {
            let k = psk(c);
            let (ss, counters) = ours(&k, o).await;
            for n in SIZES {
                let m = message(n);
                assert_eq!(through(ss, &k, o, &m).await.unwrap(), m, "{c} {n}");
            }
            assert_eq!(counters.rejected.load(Ordering::Relaxed), 0);
            // Another key is refused, drained, and never reaches the origin.
            let (_, wire) = first_flight(&psk(c), o, unix_now());
            assert!(refused(ss, &wire).await.is_empty());
            assert_eq!(counters.rejected.load(Ordering::Relaxed), 1);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3 * SIZES.len() as u64);
    });
}

#[test]
fn our_client_through_ssserver() {
    let Some(_) = rust_program("ssserver") else {
        return;
    };
    local(async {
        let (o, accepted) = origin().await;
        let dir = tempfile::tempdir().unwrap();
        for c in Cipher::ALL {
            let k = psk(c);
            let e = peers::start_rust(
                None,
                dir.path(),
                o,
                v2022::method_name(c),
                &k.to_base64(),
                false,
            )
            .unwrap();
            for n in SIZES {
                let m = message(n);
                assert_eq!(through(e.addr, &k, o, &m).await.unwrap(), m, "{c} {n}");
            }
            // Its ACL lets it reach the origin's address only.
            let other = std::net::SocketAddr::from(([127, 0, 0, 2], o.port()));
            assert!(through(e.addr, &k, other, b"x").await.is_err(), "{c}");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3 * SIZES.len() as u64);
    });
}

/// A SOCKS5 CONNECT (no authentication) to `target` through the proxy on `port`.
async fn socks5(port: u16, target: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    let mut r = [0u8; 2];
    s.read_exact(&mut r).await.unwrap();
    assert_eq!(r, [5, 0]);
    let SocketAddr::V4(t) = target else {
        panic!("IPv4 origin expected")
    };
    let mut req = vec![5, 1, 0, 1];
    req.extend_from_slice(&t.ip().octets());
    req.extend_from_slice(&t.port().to_be_bytes());
    s.write_all(&req).await.unwrap();
    let mut r = [0u8; 10];
    s.read_exact(&mut r).await.unwrap();
    assert_eq!(r[1], 0, "SOCKS5 reply {r:?}");
    s
}

#[test]
fn sslocal_through_our_server() {
    let Some(sslocal) = rust_program("sslocal") else {
        return;
    };
    local(async {
        let (o, accepted) = origin().await;
        for c in Cipher::ALL {
            let k = psk(c);
            let (ss, counters) = ours(&k, o).await;
            let port = free_port();
            let _p = Proc(
                Command::new(&sslocal)
                    .args([
                        "-b",
                        &format!("127.0.0.1:{port}"),
                        "-s",
                        &ss.to_string(),
                        "-m",
                        v2022::method_name(c),
                        "-k",
                        &k.to_base64(),
                    ])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            wait_port(port).await;
            for n in SIZES {
                let m = message(n);
                let mut s = socks5(port, o).await;
                s.write_all(&m).await.unwrap();
                let mut back = vec![0u8; n];
                tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut back))
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(back, m, "{c} {n}");
            }
            assert_eq!(counters.rejected.load(Ordering::Relaxed), 0, "{c}");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3 * SIZES.len() as u64);
    });
}

/// A client's first flight, sealed by hand: salt, headers and "hello".
fn first_flight(k: &Psk, target: SocketAddr, timestamp: u64) -> (Vec<u8>, Vec<u8>) {
    let salt = stream::random_bytes(k.salt_len()).unwrap();
    let mut e = v2022::Encryptor::client(k, &salt, &Target::from(target), 0).unwrap();
    let mut wire = Vec::new();
    e.seal(b"hello", timestamp, &mut wire);
    (salt, wire)
}

/// Sends `wire` on a new connection to `ss` and returns what came back once we closed
/// our side, after checking the server held the connection open meanwhile.
async fn refused(ss: SocketAddr, wire: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(ss).await.unwrap();
    s.write_all(wire).await.unwrap();
    let mut buf = vec![0u8; 1024];
    // Drained, not closed: nothing comes, and the connection stays open.
    let r = tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf)).await;
    assert!(r.is_err(), "the server answered or closed at once: {r:?}");
    s.shutdown().await.unwrap();
    let mut back = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut back))
        .await
        .expect("closed once we closed")
        .ok();
    back
}

#[test]
fn our_server_refuses_a_replay() {
    local(async {
        let (o, accepted) = origin().await;
        let k = psk(Cipher::Aes256Gcm);
        let (ss, counters) = ours(&k, o).await;
        let (salt, wire) = first_flight(&k, o, unix_now());
        // The original is served.
        let mut s = TcpStream::connect(ss).await.unwrap();
        s.write_all(&wire).await.unwrap();
        let mut d = v2022::Decryptor::response(&k, &salt);
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        while got.len() < 5 {
            let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "closed before the echo");
            d.feed(&buf[..n], &mut got).unwrap();
        }
        assert_eq!(got, b"hello");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // The same bytes again: no answer, no second connection to the origin.
        assert!(refused(ss, &wire).await.is_empty());
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        let first = counters.first_error.lock().unwrap().clone().unwrap();
        assert!(first.contains("replay"), "{first}");
    });
}

#[test]
fn our_server_refuses_stale_and_future_timestamps() {
    local(async {
        let (o, accepted) = origin().await;
        let k = psk(Cipher::Aes128Gcm);
        let (ss, counters) = ours(&k, o).await;
        for ts in [unix_now() - 120, unix_now() + 120] {
            let (_, wire) = first_flight(&k, o, ts);
            assert!(refused(ss, &wire).await.is_empty());
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
        assert_eq!(counters.rejected.load(Ordering::Relaxed), 2);
        let first = counters.first_error.lock().unwrap().clone().unwrap();
        assert!(first.contains("timestamp"), "{first}");
        // Within 30 s either way is fine.
        let (salt, wire) = first_flight(&k, o, unix_now() - 20);
        let mut s = TcpStream::connect(ss).await.unwrap();
        s.write_all(&wire).await.unwrap();
        let mut d = v2022::Decryptor::response(&k, &salt);
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        while got.len() < 5 {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0);
            d.feed(&buf[..n], &mut got).unwrap();
        }
        assert_eq!(got, b"hello");
    });
}

/// ssserver refuses our replay too: the same check on both sides of the interop.
#[test]
fn ssserver_refuses_our_replay() {
    let Some(_) = rust_program("ssserver") else {
        return;
    };
    local(async {
        let (o, accepted) = origin().await;
        let dir = tempfile::tempdir().unwrap();
        let k = psk(Cipher::Aes256Gcm);
        let e = peers::start_rust(
            None,
            dir.path(),
            o,
            v2022::method_name(k.cipher()),
            &k.to_base64(),
            false,
        )
        .unwrap();
        let (_, wire) = first_flight(&k, o, unix_now());
        for _ in 0..2 {
            let mut s = TcpStream::connect(e.addr).await.unwrap();
            s.write_all(&wire).await.unwrap();
            let mut buf = [0u8; 256];
            let _ = tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await;
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    });
}
