//! STARTTLS (RFC 6120 §5) against a real Prosody: the engine's rustls path, the server's
//! certificate checked against a root the test made, and the refusals a user must see
//! when TLS is required but cannot be had. One server in its own lab host on 127.0.0.1.
//! Needs root and Prosody (`bash scripts/test.sh` installs it).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wirebench_lab::netns::Netns;
use wirebench_xmpp::rustls;
use wirebench_xmpp::{ClientConfig, Event, TlsMode, XmppError};
use wirebench_xmpp_client::session::{XmppDriveError, XmppSession};
use wirebench_xmpp_peers::prosody::{Prosody, ProsodyConfig, TlsFiles};

const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A self-signed certificate for `domain`, written as PEM files, and a client config that
/// trusts exactly that certificate.
fn pki(dir: &std::path::Path, domain: &str) -> (TlsFiles, Arc<rustls::ClientConfig>) {
    let ck = rcgen::generate_simple_self_signed(vec![domain.to_string()]).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let files = TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::write(&files.cert, ck.cert.pem()).unwrap();
    std::fs::write(&files.key, ck.signing_key.serialize_pem()).unwrap();
    (files, client_trusting(ck.cert.der().clone()))
}

fn client_trusting(cert: rustls::pki_types::CertificateDer<'static>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

fn login(
    ns: &str,
    jid: &str,
    mode: TlsMode,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<(XmppSession, Vec<Event>), XmppDriveError> {
    let ns = ns.to_string();
    let jid = jid.to_string();
    std::thread::spawn(move || {
        wirebench_lab::netns::enter(&ns).unwrap();
        let mut cfg = ClientConfig::new(&jid, "secret");
        cfg.tls = mode;
        XmppSession::login_tls(
            SocketAddr::new(LOCAL, 5222),
            cfg,
            tls,
            1,
            Duration::from_secs(20),
        )
        .map(|(s, seen)| (s, seen.into_iter().map(|(_, e)| e).collect()))
    })
    .join()
    .unwrap()
}

fn start(ns: &Netns, dir: &std::path::Path, require: bool) -> (Prosody, Arc<rustls::ClientConfig>) {
    let (files, client) = pki(&dir.join("pki"), "a.test");
    let mut cfg = ProsodyConfig::new("a.test", LOCAL);
    cfg.users.push(("alice".into(), "secret".into()));
    cfg.users.push(("bob".into(), "secret".into()));
    cfg.tls = Some(files);
    cfg.c2s_require_encryption = require;
    let p = Prosody::start(cfg, &dir.join("prosody"), Some(ns.name())).unwrap();
    (p, client)
}

/// Root-needing tests fail, never pass silently, without it (CI runs as root).
fn need_root() {
    wirebench_lab::netns::check_privileges().expect(
        "this test builds network namespaces: run the suite as root (bash scripts/test.sh)",
    );
}

#[test]
fn starttls_login_and_messages_inside_tls() {
    need_root();
    let ns = Netns::create("tls").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (mut server, client) = start(&ns, tmp.path(), true);

    let (mut alice, seen) = login(
        ns.name(),
        "alice@a.test",
        TlsMode::Required,
        Some(client.clone()),
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", server.log_tail()));
    let tls_at = seen.iter().position(|e| *e == Event::TlsEstablished);
    let auth_at = seen
        .iter()
        .position(|e| matches!(e, Event::Authenticated { .. }));
    assert!(
        matches!((tls_at, auth_at), (Some(t), Some(a)) if t < a),
        "TLS must come before SASL: {seen:?}"
    );
    let (mut bob, _) = login(ns.name(), "bob@a.test", TlsMode::IfOffered, Some(client)).unwrap();

    alice
        .send_message("bob@a.test", "over <tls> & back", "t1")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        if let (_, Event::Message { body, .. }) = bob.next_event(deadline, "a message").unwrap() {
            break body;
        }
    };
    assert_eq!(body, "over <tls> & back");
    alice.close();
    bob.close();
    server.stop();
}

#[test]
fn tls_required_but_unusable_fails_with_a_clear_error() {
    need_root();
    let ns = Netns::create("tlsbad").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (mut server, _) = start(&ns, tmp.path(), true);

    // The server requires TLS and the client refuses it: no login.
    let err = login(ns.name(), "alice@a.test", TlsMode::Never, None)
        .err()
        .expect("login without TLS must fail");
    let text = err.to_string();
    eprintln!("refusal seen by the user: {text}");
    assert!(text.to_lowercase().contains("tls"), "{text}");

    // A certificate the client does not trust: the handshake fails, the error says so.
    let other = rcgen::generate_simple_self_signed(vec!["a.test".to_string()]).unwrap();
    let untrusting = client_trusting(other.cert.der().clone());
    let err = login(
        ns.name(),
        "alice@a.test",
        TlsMode::Required,
        Some(untrusting),
    )
    .err()
    .expect("login with an untrusted certificate must fail");
    eprintln!("refusal seen by the user: {err}");
    match &err {
        XmppDriveError::Protocol { error, .. } => {
            assert!(matches!(error, XmppError::Tls(_)), "{error:?}")
        }
        other => panic!("expected a TLS protocol error, got {other}"),
    }
    server.stop();
}
