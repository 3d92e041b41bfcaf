//! The API over TLS (`http.tls_cert`, `http.tls_key`): rustls with the
//! certificate chain and key from PEM files, HTTP/1.1 on each accepted
//! connection. A handshake that fails or stalls ends only its own
//! connection.

use axum::Router;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::future::Future;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Longest a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// Serves `app` over TLS on `listener` until `stop` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    app: Router,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!("https: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        // The client's address, as axum's connect info gives it on plain HTTP.
        let app = app
            .clone()
            .layer(axum::Extension(axum::extract::ConnectInfo(peer)));
        tokio::spawn(async move {
            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, "https: handshake: {e}");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "https: handshake timed out");
                    return;
                }
            };
            let service = hyper_util::service::TowerToHyperService::new(app);
            let served =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .http1_only()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            if let Err(e) = served {
                tracing::debug!(%peer, "https: {e}");
            }
        });
    }
}
