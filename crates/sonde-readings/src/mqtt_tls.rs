//! The MQTT subscriber's login and TLS (docs/readings.md): a password
//! that never shows, the rustls client configuration (ring; the CA file
//! or the system's roots), and what a refused connection says. rumqttc's
//! TLS is built on the workspace's rustls 0.23 (it re-exports it), the
//! one named here.

use rumqttc::{ConnectReturnCode, ConnectionError};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// A password: never shown by `Debug`, nor logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    pub fn new(password: impl Into<String>) -> Self {
        Self(password.into())
    }

    /// The password itself, for the broker's CONNECT only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

/// The user name (and password) the subscriber logs in to the broker
/// with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: Option<Password>,
}

/// TLS to the broker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// A PEM file of the CA certificate(s) the broker's certificate must
    /// chain to; `None`: the system's roots.
    pub ca: Option<PathBuf>,
}

/// The rustls client configuration for `tls`: ring, TLS 1.2 and 1.3, the
/// broker's certificate checked against `tls.ca` or the system's roots.
/// The error says what is wrong with the CA file.
pub fn tls_client_config(tls: &TlsOptions) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    match &tls.ca {
        Some(path) => {
            let pem = std::fs::read(path)
                .map_err(|e| format!("CA file {}: cannot read it: {e}", path.display()))?;
            for (i, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
                let cert = cert.map_err(|e| {
                    format!("CA file {}: certificate {}: {e}", path.display(), i + 1)
                })?;
                roots.add(cert).map_err(|e| {
                    format!(
                        "CA file {}: certificate {} refused: {e}",
                        path.display(),
                        i + 1
                    )
                })?;
            }
            if roots.is_empty() {
                return Err(format!(
                    "CA file {}: no PEM certificate in it",
                    path.display()
                ));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                return Err(format!("no CA certificate among the system's roots{why}"));
            }
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS versions: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

/// What a failed connection says, for a person.
pub(crate) fn describe(e: &ConnectionError) -> String {
    match e {
        ConnectionError::ConnectionRefused(code) => {
            let why = match code {
                ConnectReturnCode::NotAuthorized => {
                    "not authorized (a wrong user name or password, or none given)"
                }
                ConnectReturnCode::BadUserNamePassword => "bad user name or password",
                ConnectReturnCode::BadClientId => "client id refused",
                ConnectReturnCode::RefusedProtocolVersion => "MQTT 3.1.1 refused",
                ConnectReturnCode::ServiceUnavailable => "service unavailable",
                ConnectReturnCode::Success => "success (?)",
            };
            format!("the broker refused the connection: {why}")
        }
        ConnectionError::Tls(rumqttc::TlsError::Io(io)) => format!("TLS: {io}"),
        other => other.to_string(),
    }
}
