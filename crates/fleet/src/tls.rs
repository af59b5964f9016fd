//! TLS between a coordinator and its workers, when they talk over networks that are not
//! trusted: the worker presents a certificate (`--tls-cert`/`--tls-key`) and may demand one
//! from coordinators, issued by a CA it names (`--client-ca`: mutual TLS); the coordinator
//! checks the worker's against the CA it names (`--worker-cacert`) and presents its own
//! (`--worker-cert`/`--worker-key`) when asked. Both offer only HTTP/2 over ALPN. The files
//! are read with the engine's TLS loaders, so errors name the file the same way.

use engine::tls::{ca_only, client_config, client_identity};
use rustls::server::WebPkiClientVerifier;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// A worker's TLS: its certificate and key, and the CA its coordinators' certificates must
/// come from (none: any coordinator with the token).
#[derive(Clone, Debug)]
pub struct ServerFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
}

/// The acceptor for a worker's connections.
pub fn acceptor(f: &ServerFiles) -> Result<TlsAcceptor, String> {
    let (chain, key) = client_identity(&f.cert, &f.key).map_err(|e| e.to_string())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &f.client_ca {
        Some(ca) => {
            let roots = ca_only(ca).map_err(|e| e.to_string())?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("--client-ca {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert and --tls-key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The connector a coordinator reaches TLS workers with: `cacert` trusted beside the system's
/// roots, and an identity for workers that demand one.
pub fn connector(
    cacert: PathBuf,
    identity: Option<(PathBuf, PathBuf)>,
) -> Result<TlsConnector, String> {
    let opts = engine::TlsOptions {
        insecure: false,
        cacert: Some(cacert),
        client: identity,
        server_name: None,
        early_data: engine::EarlyData::Off,
    };
    let config = client_config(&opts, model::Protocol::Http2).map_err(|e| e.to_string())?;
    Ok(TlsConnector::from(config))
}
