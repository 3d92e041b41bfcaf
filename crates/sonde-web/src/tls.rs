//! The API over TLS (`http.tls_cert`, `http.tls_key`): rustls with the
//! certificate chain and key from PEM files. The connections are served
//! by `serve`, as plain ones are.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io;
use std::path::Path;
use std::sync::Arc;

/// The acceptor for the chain in `cert` and the key in `key`; an error
/// names the file and what is wrong with it.
pub fn acceptor(cert: &Path, key: &Path) -> io::Result<tokio_rustls::TlsAcceptor> {
    let bad = |path: &Path, why: String| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {why}", path.display()),
        )
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(cert, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(bad(cert, "no certificate in it".into()));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(key, e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(cert, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| bad(key, format!("does not go with the certificate: {e}")))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
