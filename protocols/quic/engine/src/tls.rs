//! TLS 1.3 for QUIC (RFC 9001) through rustls with the ring provider: a self-signed
//! certificate made per run, which our client trusts alone, and the ALPN of our own
//! services (RFC 9001 §8.1: a QUIC handshake must agree on an application protocol).

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

/// The ALPN of our echo service: every bidirectional stream's bytes come back on it.
pub const ALPN_ECHO: &[u8] = b"wirebench-echo";
/// The ALPN of our sink service: a bidirectional stream is read to its end, then
/// answered with the byte count it carried (8 bytes, big-endian) and finished.
pub const ALPN_SINK: &[u8] = b"wirebench-sink";

/// A TLS failure while building a configuration: ours, never a peer's.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot make a self-signed certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("rustls refused the configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error(
        "the TLS configuration has no TLS 1.3 AES-128-GCM suite, which QUIC's Initial packets need (RFC 9001 §5.2)"
    )]
    NoInitialSuite,
}

/// A server's certificate and key, and the name it is valid for.
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: String,
    pub cert: CertificateDer<'static>,
    key: Vec<u8>,
    /// The certificate and its PKCS #8 key in PEM, for a real peer's files.
    pub cert_pem: String,
    pub key_pem: String,
}

impl Identity {
    /// A fresh self-signed certificate for `name` (an ECDSA P-256 key).
    pub fn generate(name: &str) -> Result<Identity, TlsError> {
        let ck = rcgen::generate_simple_self_signed(vec![name.to_string()])?;
        Ok(Identity {
            name: name.to_string(),
            cert: ck.cert.der().clone(),
            key: ck.signing_key.serialize_der(),
            cert_pem: ck.cert.pem(),
            key_pem: ck.signing_key.serialize_pem(),
        })
    }

    fn key(&self) -> PrivateKeyDer<'static> {
        PrivatePkcs8KeyDer::from(self.key.clone()).into()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client configuration that trusts `cert` alone and offers `alpn`, and with
/// `early_data` sends 0-RTT data on a resumed connection (RFC 9001 §4.6). It keeps the
/// session tickets servers give it (rustls's in-memory store), and a ticket resumes a
/// session (RFC 8446 §2.2) only through the configuration that verified its server: a
/// client reuses one configuration for its connections.
pub fn client(
    cert: &CertificateDer<'static>,
    alpn: &[u8],
    early_data: bool,
) -> Result<QuicClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone())?;
    let mut c = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = vec![alpn.to_vec()];
    c.enable_early_data = early_data;
    QuicClientConfig::try_from(c).map_err(|_| TlsError::NoInitialSuite)
}

/// A server configuration for `identity` that accepts every ALPN of `alpns`, resumes
/// sessions from its tickets, and with `early_data` accepts 0-RTT data on them.
pub fn server(
    identity: &Identity,
    alpns: &[&[u8]],
    early_data: bool,
) -> Result<QuicServerConfig, TlsError> {
    let mut c = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(vec![identity.cert.clone()], identity.key())?;
    c.alpn_protocols = alpns.iter().map(|a| a.to_vec()).collect();
    // QUIC takes no other early data size (RFC 9001 §4.6.1: the limit is the transport's
    // flow control); 0 refuses 0-RTT, so the first flight is the same as without tickets.
    c.max_early_data_size = if early_data { u32::MAX } else { 0 };
    // Resumption is stateful here (rustls keeps what each ticket resumes, and a 0-RTT
    // ticket is used once: RFC 8446 §8.1), and its default 256 entries are too few for
    // concurrent clients: at a thousand connections a second, two tickets each, a client
    // on a slow path comes back after its ticket was evicted and its 0-RTT is refused.
    c.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSIONS);
    QuicServerConfig::try_from(c).map_err(|_| TlsError::NoInitialSuite)
}

/// Sessions a server keeps to resume: tickets of some 30 s of connections at 500 a
/// second, a few MB.
const SESSIONS: usize = 32_768;
