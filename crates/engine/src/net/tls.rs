//! TLS client configuration with rustls and the `ring` provider: system roots plus an optional
//! `--cacert`, a client certificate for mutual TLS (`--cert`/`--key`), ALPN for HTTP/2, and
//! `--insecure`, which accepts any certificate while still checking handshake signatures.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why TLS could not be configured.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read CA certificates from {0}: {1}")]
    CaFile(String, String),
    #[error("cannot read the client certificate from {0}: {1}")]
    CertFile(String, String),
    #[error("cannot read the client key from {0}: {1}")]
    KeyFile(String, String),
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// How a run's connections speak TLS.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// `--insecure`: accept any server certificate.
    pub insecure: bool,
    /// `--cacert`: CA certificates trusted beside the system's.
    pub cacert: Option<PathBuf>,
    /// `--cert` and `--key`: the client's certificate chain and private key (mutual TLS).
    pub client: Option<(PathBuf, PathBuf)>,
    /// The name the server's certificate must hold when it is not the URL's host
    /// (`--authority`).
    pub server_name: Option<String>,
    /// `--0rtt` (HTTP/3): which requests a connection resuming a session sends as early data.
    pub early_data: EarlyData,
}

/// `--0rtt`: which requests an HTTP/3 connection that resumes an earlier session may send
/// before its handshake ends (0-RTT). Early data can be replayed by an attacker on the path,
/// so by default only methods that mean the same when repeated (RFC 9110 §9.2.2) go early;
/// the others wait for the handshake unless `--0rtt=all` asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EarlyData {
    /// No 0-RTT (sessions still resume).
    #[default]
    Off,
    /// GET, HEAD, OPTIONS, TRACE, PUT and DELETE go early.
    Idempotent,
    /// Every request goes early.
    All,
}

impl EarlyData {
    /// Whether a request with `method` may go as early data.
    pub fn allows(self, method: &str) -> bool {
        const IDEMPOTENT: [&str; 6] = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"];
        match self {
            EarlyData::Off => false,
            EarlyData::Idempotent => IDEMPOTENT.contains(&method),
            EarlyData::All => true,
        }
    }
}

/// Builds the client configuration shared by every connection of a run, offering
/// `protocol`'s ALPN names.
pub fn client_config(
    opts: &TlsOptions,
    protocol: model::Protocol,
) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
    } else {
        builder.with_root_certificates(roots(opts.cacert.as_deref())?)
    };
    let mut config = match &opts.client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let (chain, key) = client_identity(cert, key)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsError::Config(format!("client certificate and key: {e}")))?
        }
    };
    config.alpn_protocols = protocol.alpn().iter().map(|p| p.to_vec()).collect();
    config.enable_early_data = opts.early_data != EarlyData::Off;
    Ok(Arc::new(config))
}

fn roots(cacert: Option<&Path>) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    // System roots are best effort: a machine without any still works with --cacert.
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = store.add(cert);
    }
    add_pem(&mut store, cacert)?;
    Ok(store)
}

/// Only the CA certificates in `path` (a server that trusts its clients' CA and nothing else).
pub fn ca_only(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    add_pem(&mut store, Some(path))?;
    Ok(store)
}

fn add_pem(store: &mut RootCertStore, cacert: Option<&Path>) -> Result<(), TlsError> {
    if let Some(path) = cacert {
        let shown = path.display().to_string();
        let pem = model::input::read(path).map_err(|e| TlsError::CaFile(shown.clone(), e))?;
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::CaFile(shown.clone(), e.to_string()))?;
        if certs.is_empty() {
            return Err(TlsError::CaFile(shown, "no PEM certificates found".into()));
        }
        for c in certs {
            store
                .add(c)
                .map_err(|e| TlsError::CaFile(shown.clone(), e.to_string()))?;
        }
    }
    Ok(())
}

/// The certificate chain in `cert` and the private key in `key` (PEM).
/// A certificate chain and its private key, from PEM files.
pub fn client_identity(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let shown = cert.display().to_string();
    let pem = model::input::read(cert).map_err(|e| TlsError::CertFile(shown.clone(), e))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::CertFile(shown.clone(), e.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::CertFile(
            shown,
            "no PEM certificates found".into(),
        ));
    }
    let shown = key.display().to_string();
    let pem = model::input::read(key).map_err(|e| TlsError::KeyFile(shown.clone(), e))?;
    let key =
        PrivateKeyDer::from_pem_slice(&pem).map_err(|e| TlsError::KeyFile(shown, e.to_string()))?;
    Ok((chain, key))
}

/// The server name to verify: an IP address or a DNS name.
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(host.to_string())
        .map_err(|e| TlsError::Config(format!("server name '{host}': {e}")))
}

/// `--insecure`: any certificate is accepted; signatures are still verified.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
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

/// The TLS configuration and server name for `target`, when it is a TLS URL.
pub(crate) fn tls_for(
    target: &model::Target,
    opts: &TlsOptions,
    protocol: model::Protocol,
) -> Result<
    Option<(
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    )>,
    TlsError,
> {
    if !target.tls {
        return Ok(None);
    }
    Ok(Some((
        client_config(opts, protocol)?,
        server_name(opts.server_name.as_deref().unwrap_or(&target.host))?,
    )))
}
