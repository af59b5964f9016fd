//! A fresh self-signed certificate (rcgen) for 127.0.0.1 and localhost, and a TLS acceptor
//! that offers HTTP/2 (when the server speaks it) and HTTP/1.1 over ALPN.

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// An acceptor and the certificate's PEM (for clients that verify it). ALPN offers `h2` only
/// when the server can speak it.
pub fn acceptor(h2: bool) -> Result<(TlsAcceptor, String), String> {
    let cert =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .map_err(|e| e.to_string())?;
    let pem = cert.cert.pem();
    let chain = vec![CertificateDer::from(cert.cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = if h2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok((TlsAcceptor::from(Arc::new(config)), pem))
}
