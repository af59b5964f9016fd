//! A fresh self-signed certificate (rcgen) for 127.0.0.1 and localhost, and a TLS acceptor
//! that offers HTTP/2 (when the server speaks it) and HTTP/1.1 over ALPN. For mutual TLS the
//! acceptor also demands a client certificate issued by a fresh CA, and hands the test one.

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// A client identity for mutual TLS, in PEM.
#[derive(Clone, Debug)]
pub struct ClientIdentity {
    pub cert_pem: String,
    pub key_pem: String,
}

/// An acceptor, the certificate's PEM (for clients that verify it) and, with `mtls`, the
/// client identity the acceptor requires. ALPN offers `h2` only when the server can speak it.
pub fn acceptor(
    h2: bool,
    mtls: bool,
) -> Result<(TlsAcceptor, String, Option<ClientIdentity>), String> {
    let (config, pem, identity) = server_config(h2, mtls)?;
    Ok((TlsAcceptor::from(Arc::new(config)), pem, identity))
}

/// The server side of [`acceptor`]: a rustls configuration with a fresh certificate.
pub fn server_config(
    h2: bool,
    mtls: bool,
) -> Result<(rustls::ServerConfig, String, Option<ClientIdentity>), String> {
    let err = |e: rcgen::Error| e.to_string();
    let cert =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .map_err(err)?;
    let pem = cert.cert.pem();
    let chain = vec![CertificateDer::from(cert.cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let (builder, identity) = if mtls {
        // A CA of the test's own, and one client certificate it issued.
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().map_err(err)?;
        let ca = ca_params.self_signed(&ca_key).map_err(err)?;
        let client_key = KeyPair::generate().map_err(err)?;
        let client = CertificateParams::new(vec!["brink-test-client".to_string()])
            .map_err(err)?
            .signed_by(&client_key, &ca, &ca_key)
            .map_err(err)?;
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from(ca.der().to_vec()))
            .map_err(|e| e.to_string())?;
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| e.to_string())?;
        let identity = ClientIdentity {
            cert_pem: client.pem(),
            key_pem: client_key.serialize_pem(),
        };
        (builder.with_client_cert_verifier(verifier), Some(identity))
    } else {
        (builder.with_no_client_auth(), None)
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = if h2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok((config, pem, identity))
}

/// PEM files for a TLS service and its clients, written into a directory: a CA, a server
/// certificate it issued for 127.0.0.1 and localhost with its key, a client certificate it
/// issued with its key, and a second CA that issued nothing (a wrong one to trust).
pub struct Files {
    pub ca: std::path::PathBuf,
    pub other_ca: std::path::PathBuf,
    pub server_cert: std::path::PathBuf,
    pub server_key: std::path::PathBuf,
    pub client_cert: std::path::PathBuf,
    pub client_key: std::path::PathBuf,
}

/// Writes [`Files`] into `dir`.
pub fn files(dir: &std::path::Path) -> Result<Files, String> {
    let err = |e: rcgen::Error| e.to_string();
    let ca = |name: &str| -> Result<(rcgen::Certificate, KeyPair), String> {
        let mut p = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(rcgen::DnType::CommonName, name);
        let key = KeyPair::generate().map_err(err)?;
        Ok((p.self_signed(&key).map_err(err)?, key))
    };
    let (root, root_key) = ca("brink test CA")?;
    let (other, _) = ca("another CA")?;
    let issue = |names: Vec<String>| -> Result<(String, String), String> {
        let key = KeyPair::generate().map_err(err)?;
        let cert = CertificateParams::new(names)
            .map_err(err)?
            .signed_by(&key, &root, &root_key)
            .map_err(err)?;
        Ok((cert.pem(), key.serialize_pem()))
    };
    let (server, server_key) = issue(vec!["127.0.0.1".into(), "localhost".into()])?;
    let (client, client_key) = issue(vec!["brink-coordinator".into()])?;
    let f = Files {
        ca: dir.join("ca.pem"),
        other_ca: dir.join("other-ca.pem"),
        server_cert: dir.join("server.pem"),
        server_key: dir.join("server.key"),
        client_cert: dir.join("client.pem"),
        client_key: dir.join("client.key"),
    };
    for (path, text) in [
        (&f.ca, root.pem()),
        (&f.other_ca, other.pem()),
        (&f.server_cert, server),
        (&f.server_key, server_key),
        (&f.client_cert, client),
        (&f.client_key, client_key),
    ] {
        std::fs::write(path, text).map_err(|e| e.to_string())?;
    }
    Ok(f)
}
