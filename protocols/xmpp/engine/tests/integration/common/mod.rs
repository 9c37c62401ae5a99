//! What several test files share: a self-signed certificate (rcgen) and the rustls server
//! and client configurations that trust it, and an engine's output as a value.
#![allow(dead_code)]

use std::sync::Arc;
use wirebench_engine::Engine;

/// What `e` has queued to send, in a buffer of its own; `None` if nothing.
pub fn transmit(e: &mut impl Engine) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    (e.poll_transmit(0, &mut out) > 0).then_some(out)
}

pub struct Pki {
    pub server: Arc<rustls::ServerConfig>,
    pub client: Arc<rustls::ClientConfig>,
}

pub fn pki(name: &str) -> Pki {
    let ck = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
    let cert = ck.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Pki {
        server: Arc::new(server),
        client: Arc::new(client),
    }
}
