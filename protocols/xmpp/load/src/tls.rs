//! Client TLS for load sessions (STARTTLS, RFC 6120 §5): trust the certificate of the
//! built-in server started for the case, or, against a server someone else runs
//! (`load.target`), accept whatever certificate it shows, as Tsung does. A load generator
//! measures a server; it does not authenticate it. Handshake signatures are still checked,
//! so the TLS work on both sides is the real one.

use std::sync::Arc;
use wirebench_xmpp::rustls;
use wirebench_xmpp::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use wirebench_xmpp::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use wirebench_xmpp::rustls::{DigitallySignedStruct, SignatureScheme};

/// A client configuration trusting exactly `cert` (DER), or any certificate if `None`.
pub fn client_config(cert: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let cfg = match cert {
        Some(der) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from(der.to_vec()))
                .map_err(|e| format!("the server's certificate: {e}"))?;
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
    };
    Ok(Arc::new(cfg))
}

/// Accepts any certificate; verifies the handshake's signatures with the provider's
/// algorithms.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
