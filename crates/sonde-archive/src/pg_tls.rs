//! PostgreSQL over TLS (rustls, ring): what an archive URL's `sslmode`
//! and `sslrootcert` ask for, and the connection that honours it.
//!
//! The modes are libpq's, with one difference: sonde never accepts a
//! server certificate it has not verified. Its chain is always verified,
//! against the CA file named by `sslrootcert=/path/ca.pem`, or, without
//! one (or with `sslrootcert=system`), against the system's roots.
//!
//! - `disable`: no TLS.
//! - `prefer` (no `sslmode`): TLS if the server offers it; if the server
//!   has no TLS, or the TLS handshake fails (an unverified certificate
//!   included), plain TCP, as libpq does.
//! - `require`, `verify-ca`: TLS or no connection; the chain verified.
//!   The server's name is not checked against a CA file of one's own (a
//!   private CA), but is against the system's roots (any public
//!   certificate would do otherwise; libpq's `sslrootcert=system` checks
//!   it too).
//! - `verify-full`: TLS, the chain and the server's name verified.
//!
//! The `postgres` crate knows only `disable`, `prefer` and `require` and
//! no `sslrootcert`: [`parse`] takes sonde's parameters out of the URL and
//! gives the crate the mode it knows.

use crate::ArchiveError;
use postgres::{Client, NoTls};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, DistinguishedName, RootCertStore,
    SignatureScheme,
};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The URL's `sslmode`, as libpq names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode '{other}' is not one sonde knows: use disable, prefer, require, \
                     verify-ca or verify-full"
                ))
            }
        })
    }

    /// The mode the `postgres` crate is given.
    fn for_crate(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require | Self::VerifyCa | Self::VerifyFull => "require",
        }
    }
}

/// What the server's certificate chain is verified against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Roots {
    /// The system's root CAs (rustls-native-certs).
    System,
    /// The CA certificates of this PEM file (`sslrootcert=PATH`).
    File(PathBuf),
}

/// An archive URL's TLS parameters, and the URL for the `postgres` crate.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TlsParams {
    /// The URL without `sslrootcert`, and with an `sslmode` the crate knows.
    pub url: String,
    pub mode: SslMode,
    pub roots: Roots,
}

impl TlsParams {
    /// Whether the server's name is checked: always against the system's
    /// roots, and with `verify-full`.
    fn checks_name(&self) -> bool {
        self.mode == SslMode::VerifyFull || self.roots == Roots::System
    }
}

/// Takes `sslmode` and `sslrootcert` out of `url` (a `postgres://` URL
/// without sonde's `schema=`). An unknown mode, or an empty or badly
/// escaped value, is an error that names it.
pub(crate) fn parse(url: &str) -> Result<TlsParams, String> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let mut mode = SslMode::Prefer;
    let mut roots = Roots::System;
    let mut rest = Vec::new();
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        match key {
            "sslmode" => mode = SslMode::parse(&decode(key, value)?)?,
            "sslrootcert" => {
                let path = decode(key, value)?;
                roots = match path.as_str() {
                    "" => return Err("sslrootcert is empty: name a CA file (PEM)".to_string()),
                    "system" => Roots::System,
                    _ => Roots::File(PathBuf::from(path)),
                };
            }
            _ => rest.push(kv),
        }
    }
    let sslmode = format!("sslmode={}", mode.for_crate());
    rest.push(&sslmode);
    Ok(TlsParams {
        url: format!("{base}?{}", rest.join("&")),
        mode,
        roots,
    })
}

/// A query value with its `%XX` escapes undone.
fn decode(key: &str, value: &str) -> Result<String, String> {
    let bad = || format!("{key}: '{value}' is not a well-escaped URL value");
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or_else(bad)?;
            let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

/// Opens a client to the PostgreSQL of `url` (sonde's form, without
/// `schema=`), over TLS as its `sslmode` asks. `location` is the URL as
/// messages show it.
pub(crate) fn connect(url: &str, location: &str) -> Result<Client, ArchiveError> {
    let fail = |message: String| ArchiveError::Database {
        location: location.to_string(),
        message,
    };
    let params = parse(url).map_err(&fail)?;
    match params.mode {
        SslMode::Disable => Client::connect(&params.url, NoTls).map_err(|e| fail(message(&e))),
        SslMode::Prefer => {
            let tls = match connector(&params) {
                Ok(tls) => tls,
                // No roots to verify a server with: as if it had no TLS.
                Err(why) if params.roots == Roots::System => {
                    tracing::warn!("archive {location}: {why}; connecting without TLS");
                    return Client::connect(&params.url, NoTls).map_err(|e| fail(message(&e)));
                }
                Err(why) => return Err(fail(why)),
            };
            match Client::connect(&params.url, tls) {
                Ok(client) => Ok(client),
                Err(e) if rustls_error(&e).is_some() => {
                    let tls_failed = explain(&e, &params);
                    tracing::warn!(
                        "archive {location}: {tls_failed}; connecting without TLS (sslmode=prefer)"
                    );
                    // parse() put sslmode last.
                    let plain = match params.url.strip_suffix("sslmode=prefer") {
                        Some(rest) => format!("{rest}sslmode=disable"),
                        None => params.url.clone(),
                    };
                    Client::connect(&plain, NoTls).map_err(|e| {
                        fail(format!(
                            "{tls_failed}; then without TLS (sslmode=prefer): {}",
                            message(&e)
                        ))
                    })
                }
                Err(e) => Err(fail(explain(&e, &params))),
            }
        }
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            let tls = connector(&params).map_err(&fail)?;
            Client::connect(&params.url, tls).map_err(|e| fail(explain(&e, &params)))
        }
    }
}

/// The server's own words for a failure, not only "db error".
pub(crate) fn message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    }
}

/// The rustls error under a failed connection, if TLS is what failed.
fn rustls_error(e: &postgres::Error) -> Option<&rustls::Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        // An io::Error's source() skips the error it wraps: look inside.
        if let Some(r) = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(r);
        }
        cause = c.source();
    }
    None
}

/// A failed connection in words that name what is wrong: for an
/// untrusted certificate, what it was verified against.
fn explain(e: &postgres::Error, params: &TlsParams) -> String {
    let Some(tls) = rustls_error(e) else {
        return message(e);
    };
    let against = match &params.roots {
        Roots::File(path) => format!("the CA in sslrootcert {}", path.display()),
        Roots::System => "any of the system's root CAs (name the server's CA with \
                          sslrootcert=/path/ca.pem)"
            .to_string(),
    };
    match tls {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
        | rustls::Error::InvalidCertificate(CertificateError::BadSignature) => format!(
            "TLS: the server's certificate is not trusted: it is not signed by {against} ({tls})"
        ),
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => format!(
            "TLS: the server's certificate is not for the host this URL names ({tls}); \
             sslmode=verify-full checks the name, as does verifying against the system's roots"
        ),
        rustls::Error::InvalidCertificate(_) => {
            format!(
                "TLS: the server's certificate is not trusted, verified against {against}: {tls}"
            )
        }
        _ => format!("TLS: {tls}"),
    }
}

/// The ring provider: the workspace's one (never the process default,
/// which two providers in one build would leave unset).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The connector for `params`: its roots loaded, its name check set.
fn connector(params: &TlsParams) -> Result<MakeRustlsConnect, String> {
    let roots = match &params.roots {
        Roots::File(path) => Arc::new(roots_of(path)?),
        Roots::System => system_roots()?,
    };
    let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider())
        .build()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let config = if params.checks_name() {
        builder.with_webpki_verifier(webpki)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
    }
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The CA certificates of the PEM file at `path`.
fn roots_of(path: &Path) -> Result<RootCertStore, String> {
    let name = path.display();
    let pem =
        std::fs::read(path).map_err(|e| format!("sslrootcert {name}: cannot read it: {e}"))?;
    let mut roots = RootCertStore::empty();
    for (n, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
        let cert = cert.map_err(|e| format!("sslrootcert {name}: not PEM: {e}"))?;
        roots.add(cert).map_err(|e| {
            format!(
                "sslrootcert {name}: certificate {} is not a CA certificate sonde can use: {e}",
                n + 1
            )
        })?;
    }
    if roots.is_empty() {
        return Err(format!(
            "sslrootcert {name}: no certificate in it (PEM, -----BEGIN CERTIFICATE-----)"
        ));
    }
    Ok(roots)
}

/// The system's root CAs, read once.
fn system_roots() -> Result<Arc<RootCertStore>, String> {
    static ROOTS: OnceLock<Result<Arc<RootCertStore>, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                let why = match found.errors.first() {
                    Some(e) => format!(": {e}"),
                    None => String::new(),
                };
                return Err(format!(
                    "TLS: no system root CAs to verify the server with{why}; name its CA with \
                     sslrootcert=/path/ca.pem"
                ));
            }
            Ok(Arc::new(roots))
        })
        .clone()
}

/// A verifier of the chain alone (`require`, `verify-ca` against a CA
/// file): webpki's, with a certificate for another name accepted. webpki
/// checks the chain before the name, so a name error means a good chain.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.0.root_hint_subjects()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> TlsParams {
        parse(url).unwrap()
    }

    #[test]
    fn every_sslmode_maps_to_one_the_postgres_crate_knows() {
        for (given, mode, for_crate) in [
            ("disable", SslMode::Disable, "disable"),
            ("prefer", SslMode::Prefer, "prefer"),
            ("require", SslMode::Require, "require"),
            ("verify-ca", SslMode::VerifyCa, "require"),
            ("verify-full", SslMode::VerifyFull, "require"),
        ] {
            let p = ok(&format!(
                "postgres://u@h/db?sslmode={given}&connect_timeout=5"
            ));
            assert_eq!(p.mode, mode, "{given}");
            assert_eq!(
                p.url,
                format!("postgres://u@h/db?connect_timeout=5&sslmode={for_crate}"),
                "{given}"
            );
            assert_eq!(p.roots, Roots::System);
        }
    }

    #[test]
    fn no_sslmode_is_prefer_as_in_libpq() {
        let p = ok("postgres://u:pw@h:5432/db");
        assert_eq!(p.mode, SslMode::Prefer);
        assert_eq!(p.url, "postgres://u:pw@h:5432/db?sslmode=prefer");
        assert_eq!(p.roots, Roots::System);
        assert!(p.checks_name());
    }

    #[test]
    fn sslrootcert_is_taken_out_and_unescaped() {
        let p = ok("postgres://u@h/db?sslrootcert=/etc/sonde/my%20ca.pem&sslmode=verify-ca");
        assert_eq!(p.roots, Roots::File(PathBuf::from("/etc/sonde/my ca.pem")));
        assert_eq!(p.mode, SslMode::VerifyCa);
        assert_eq!(p.url, "postgres://u@h/db?sslmode=require");
        assert!(
            !p.checks_name(),
            "verify-ca against a CA file checks the chain only"
        );
        let p = ok("postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem");
        assert!(p.checks_name());
        let p = ok("postgres://u@h/db?sslmode=verify-ca&sslrootcert=system");
        assert_eq!(p.roots, Roots::System);
        assert!(
            p.checks_name(),
            "against the system's roots the name is checked"
        );
    }

    #[test]
    fn the_last_sslmode_given_counts() {
        let p = ok("postgres://u@h/db?sslmode=disable&sslmode=verify-full");
        assert_eq!(p.mode, SslMode::VerifyFull);
        assert_eq!(p.url, "postgres://u@h/db?sslmode=require");
    }

    #[test]
    fn an_unknown_sslmode_is_refused_by_name() {
        for bad in ["verify_full", "allow", "", "REQUIRE"] {
            let e = parse(&format!("postgres://u@h/db?sslmode={bad}")).unwrap_err();
            assert!(e.contains(&format!("sslmode '{bad}'")), "{e}");
            assert!(e.contains("verify-full"), "{e}");
        }
    }

    #[test]
    fn bad_values_of_sslrootcert_are_refused() {
        let e = parse("postgres://u@h/db?sslrootcert=").unwrap_err();
        assert!(e.contains("sslrootcert is empty"), "{e}");
        let e = parse("postgres://u@h/db?sslrootcert=/a%zz.pem").unwrap_err();
        assert!(e.contains("sslrootcert: '/a%zz.pem'"), "{e}");
        let e = parse("postgres://u@h/db?sslrootcert=/a%e9.pem").unwrap_err();
        assert!(e.contains("not a well-escaped"), "{e}");
        let e = parse("postgres://u@h/db?sslrootcert=/a%2").unwrap_err();
        assert!(e.contains("not a well-escaped"), "{e}");
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_named() {
        let e = roots_of(Path::new("/nonexistent/sonde-ca.pem")).unwrap_err();
        assert!(
            e.contains("sslrootcert /nonexistent/sonde-ca.pem: cannot read it"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("sonde-pg-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = roots_of(&empty).unwrap_err();
        assert!(
            e.contains(&format!("sslrootcert {}: no certificate", empty.display())),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
