//! How to run the built-in server ([`XmppServerConfig`]) and the certificate it offers
//! for STARTTLS (RFC 6120 §5, [`TlsIdentity`]).

use crate::accounts::Accounts;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use wirebench_xmpp::{NumberedAccounts, ServerConfig};

/// How to run the built-in server.
#[derive(Debug, Clone)]
pub struct XmppServerConfig {
    pub listen: SocketAddr,
    pub domain: String,
    pub accounts: Accounts,
    /// Sessions the server should be able to hold at once; sizes the layout ([`plan`](crate::plan)).
    /// 0: as many as one process holds.
    pub sessions: usize,
    /// A session must have bound a resource this long after connecting.
    pub handshake_timeout: Duration,
    /// Unwritten bytes a session may queue before it is closed as a slow reader.
    pub max_queued: usize,
    pub max_stanza: usize,
    /// Event loops; 0: chosen by [`plan`](crate::plan) (one per core, more if the target needs them).
    pub workers: usize,
    /// Run the workers as processes even when one process would hold the target.
    pub processes: bool,
    /// Worker `i` listens on port `listen.port() + i` instead of all sharing one port;
    /// lets a client pick its worker (the cross-worker bench does).
    pub port_per_worker: bool,
    /// Offer STARTTLS with this certificate ([`self_signed`] makes one).
    pub tls: Option<TlsIdentity>,
}

impl XmppServerConfig {
    /// Users `user1..user<users>` with passwords `pass<N>`, two contacts each.
    pub fn new(listen: SocketAddr, domain: &str, users: u64) -> XmppServerConfig {
        XmppServerConfig {
            listen,
            domain: domain.to_string(),
            accounts: Accounts::numbered(NumberedAccounts {
                user_prefix: "user".into(),
                password_prefix: "pass".into(),
                users,
                contacts: 2,
                domain: domain.to_string(),
            }),
            sessions: 0,
            handshake_timeout: Duration::from_secs(30),
            max_queued: 4 << 20,
            max_stanza: 64 * 1024,
            workers: 0,
            processes: false,
            port_per_worker: false,
            tls: None,
        }
    }

    /// The engine's configuration for this server's sessions.
    pub(crate) fn session_config(&self) -> Result<Arc<ServerConfig>, String> {
        let tls = match &self.tls {
            Some(id) => Some(id.server_config()?),
            None => None,
        };
        Ok(Arc::new(ServerConfig {
            max_stanza: self.max_stanza,
            tls,
            ..ServerConfig::new(&self.domain)
        }))
    }
}

/// A certificate and its key (DER), which every worker (thread or process) turns into
/// the same rustls configuration.
#[derive(Clone)]
pub struct TlsIdentity {
    pub(crate) cert_der: Vec<u8>,
    pub(crate) key_der: Vec<u8>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsIdentity({} byte certificate)", self.cert_der.len())
    }
}

impl TlsIdentity {
    /// The certificate, DER: what a client of ours trusts.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    pub fn server_config(&self) -> Result<Arc<wirebench_xmpp::rustls::ServerConfig>, String> {
        use wirebench_xmpp::rustls;
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.key_der.clone().into());
        let cert = rustls::pki_types::CertificateDer::from(self.cert_der.clone());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(cfg))
    }
}

/// A certificate for `domain` made on the spot (self-signed, rcgen): enough for STARTTLS
/// in a lab, where clients are told to trust it or not to verify. Not for anything
/// facing real users.
pub fn self_signed(domain: &str) -> Result<TlsIdentity, String> {
    let ck = rcgen::generate_simple_self_signed(vec![domain.to_string()])
        .map_err(|e| format!("cannot make a certificate for {domain}: {e}"))?;
    Ok(TlsIdentity {
        cert_der: ck.cert.der().to_vec(),
        key_der: ck.signing_key.serialize_der(),
    })
}
