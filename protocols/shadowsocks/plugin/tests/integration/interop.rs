//! Our client and server against each other and against shadowsocks-libev (Debian's
//! ss-server and ss-tunnel), every cipher, on loopback: a message through each pairing
//! comes back as sent. Skipped with a note when shadowsocks-libev is not installed.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wirebench_plugin_shadowsocks::{peers, server, stream};
use wirebench_rpc::Counters;
use wirebench_shadowsocks::{Cipher, Key, Target};

fn have(program: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("skipped: {program} is not installed (apt-get install shadowsocks-libev)");
    }
    ok
}

/// Runs `f` on a current-thread runtime inside a LocalSet (the servers spawn locally).
fn local<F: std::future::Future<Output = ()>>(f: F) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f);
}

async fn origin() -> SocketAddr {
    origin_on("127.0.0.1").await
}

async fn origin_on(ip: &str) -> SocketAddr {
    let l = TcpListener::bind((ip, 0)).await.unwrap();
    let a = l.local_addr().unwrap();
    tokio::task::spawn_local(wirebench_connect::serve_echo(
        l,
        Arc::new(Counters::default()),
    ));
    a
}

async fn ours(keys: Vec<Key>, allow: server::Allow) -> (SocketAddr, Arc<Counters>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    let c = Arc::new(Counters::default());
    let cfg = Arc::new(server::Config {
        keys,
        psk: None,
        allow,
        tfo: false,
        log: false,
        cap: None,
    });
    tokio::task::spawn_local(server::serve(l, c.clone(), cfg));
    (a, c)
}

/// Our client: `msg` to `target` through the server at `ss`, and the echo back.
async fn through(
    ss: SocketAddr,
    key: &Key,
    target: SocketAddr,
    msg: &[u8],
) -> std::io::Result<Vec<u8>> {
    let tcp = TcpStream::connect(ss).await?;
    let salt = stream::fresh_salt(key)?;
    let mut s = stream::SsStream::new(tcp, key, &salt, Target::from(target))?;
    s.write_all(msg).await?;
    s.flush().await?;
    let mut back = vec![0u8; msg.len()];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut back))
        .await
        .map_err(|_| std::io::Error::other("no echo within 5 s"))??;
    Ok(back)
}

fn message(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn our_client_and_server_every_cipher() {
    local(async {
        let o = origin().await;
        for c in Cipher::ALL {
            // The server takes any cipher of the password; the client uses one.
            let (ss, counters) = ours(
                wirebench_plugin_shadowsocks::every_cipher(b"pw"),
                server::Allow::Only(vec![o]),
            )
            .await;
            let key = Key::from_password(c, b"pw");
            for n in [1, 64, 16383, 16384, 100_000] {
                let m = message(n);
                assert_eq!(through(ss, &key, o, &m).await.unwrap(), m, "{c} {n}");
            }
            assert_eq!(
                counters.rejected.load(std::sync::atomic::Ordering::Relaxed),
                0
            );
        }
    });
}

#[test]
fn our_server_closes_on_refusals() {
    local(async {
        let o = origin().await;
        let other = origin().await;
        let key = Key::from_password(Cipher::Aes256Gcm, b"pw");
        let (ss, counters) = ours(vec![key.clone()], server::Allow::Only(vec![o])).await;
        // Not the allowed origin: closed, nothing comes back.
        let e = through(ss, &key, other, b"hi").await;
        assert!(e.is_err(), "{e:?}");
        // Wrong password.
        let wrong = Key::from_password(Cipher::Aes256Gcm, b"nope");
        assert!(through(ss, &wrong, o, b"hi").await.is_err());
        // The right one is still served.
        assert_eq!(through(ss, &key, o, b"hi").await.unwrap(), b"hi");
        let first = counters.first_error.lock().unwrap().clone().unwrap();
        assert!(first.contains("not an allowed destination"), "{first}");
        assert_eq!(
            counters.rejected.load(std::sync::atomic::Ordering::Relaxed),
            2
        );
    });
}

/// A process of ours, ended by its PID.
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
    for _ in 0..100 {
        if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on {port}");
}

#[test]
fn our_client_through_ss_server() {
    if !have(peers::PROGRAM) {
        return;
    }
    local(async {
        let o = origin().await;
        // An echo server on another loopback address, which a connection may reach.
        let other = origin_on("127.0.0.2").await;
        let dir = tempfile::tempdir().unwrap();
        for c in Cipher::ALL {
            let e = peers::start(None, dir.path(), o, c, "libev-pw", false).unwrap();
            let key = Key::from_password(c, b"libev-pw");
            for n in [1, 64, 20_000] {
                let m = message(n);
                assert_eq!(through(e.addr, &key, o, &m).await.unwrap(), m, "{c} {n}");
            }
            // Its ACL blocks any other address (ports it cannot name: another port of
            // the origin's address stays reachable).
            assert!(through(e.addr, &key, other, b"x").await.is_err(), "{c}");
        }
    });
}

#[test]
fn ss_tunnel_through_our_server() {
    if !have("ss-tunnel") {
        return;
    }
    local(async {
        let o = origin().await;
        for c in Cipher::ALL {
            let (ss, counters) = ours(
                wirebench_plugin_shadowsocks::every_cipher(b"tunnel-pw"),
                server::Allow::Only(vec![o]),
            )
            .await;
            let port = free_port();
            let _t = Proc(
                Command::new("ss-tunnel")
                    .args([
                        "-s",
                        "127.0.0.1",
                        "-p",
                        &ss.port().to_string(),
                        "-b",
                        "127.0.0.1",
                        "-l",
                        &port.to_string(),
                        "-k",
                        "tunnel-pw",
                        "-m",
                        c.name(),
                        "-L",
                        &o.to_string(),
                    ])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            wait_port(port).await;
            for n in [1, 64, 40_000] {
                let m = message(n);
                let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                s.write_all(&m).await.unwrap();
                let mut back = vec![0u8; n];
                tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut back))
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(back, m, "{c} {n}");
            }
            // wait_port's probe connections closed before a header: those are the only
            // refusals.
            let first = counters.first_error.lock().unwrap().clone();
            if let Some(f) = first {
                assert!(f.contains("closed"), "{f}");
            }
        }
    });
}
