//! One HTTP/1.1 connection of the benchmark, timed phase by phase: the
//! name resolved (DNS), TCP connected, TLS handshaken, then request after
//! request (keep-alive): written, the first byte of the answer (waiting),
//! its last byte (transfer). A hand-written loop over `httparse` rather
//! than hyper's client: it writes the one prebuilt request and reads into
//! one reused buffer, with no task or allocation per request, so the
//! sender stays as cheap as wrk's (bench/http-vs-wrk).

use super::response::ResponseReader;
use super::target::Target;
use sonde_model::IpFamily;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why a request got no answer: the kind counted in `errors_by_kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Dns,
    Connect,
    Tls,
    Timeout,
    /// The server closed the connection before the answer was whole.
    Closed,
    /// The answer was not HTTP.
    Protocol,
    Io,
}

impl Failure {
    pub fn name(self) -> &'static str {
        match self {
            Failure::Dns => "dns",
            Failure::Connect => "connect",
            Failure::Tls => "tls",
            Failure::Timeout => "timeout",
            Failure::Closed => "closed",
            Failure::Protocol => "protocol",
            Failure::Io => "io",
        }
    }
}

/// A byte stream, plain or TLS.
pub trait Wire: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Wire for T {}

/// How long opening a connection took, phase by phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct Opened {
    /// `None` for an address literal: nothing to resolve.
    pub dns: Option<Duration>,
    pub connect: Duration,
    pub tls: Option<Duration>,
    /// TLS's ALPN agreed on HTTP/2 (`h2`).
    pub h2: bool,
}

/// What every connection needs to open: the target, its addresses when
/// the host is a literal, the family asked, and the TLS set-up.
pub struct Dialer {
    pub target: Target,
    pub literal: Option<SocketAddr>,
    pub family: IpFamily,
    pub tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
}

impl Dialer {
    async fn addresses(&self) -> Result<Vec<SocketAddr>, Failure> {
        if let Some(a) = self.literal {
            return Ok(vec![a]);
        }
        let found = tokio::net::lookup_host((self.target.host.as_str(), self.target.port))
            .await
            .map_err(|_| Failure::Dns)?;
        let mut addrs: Vec<SocketAddr> = found
            .filter(|a| match self.family {
                IpFamily::V6 => a.is_ipv6(),
                IpFamily::V4 => a.is_ipv4(),
                IpFamily::Any => true,
            })
            .collect();
        // IPv6 first.
        addrs.sort_by_key(|a| a.is_ipv4());
        if addrs.is_empty() {
            return Err(Failure::Dns);
        }
        Ok(addrs)
    }

    /// Opens a connection, timing each phase.
    pub async fn open(&self) -> Result<(Box<dyn Wire>, Opened), Failure> {
        let t0 = Instant::now();
        let addrs = self.addresses().await?;
        let dns = self.literal.is_none().then(|| t0.elapsed());
        let t1 = Instant::now();
        let mut tcp = None;
        for a in &addrs {
            if let Ok(s) = TcpStream::connect(a).await {
                tcp = Some(s);
                break;
            }
        }
        let tcp = tcp.ok_or(Failure::Connect)?;
        let _ = tcp.set_nodelay(true);
        let connect = t1.elapsed();
        match &self.tls {
            None => Ok((
                Box::new(tcp),
                Opened {
                    dns,
                    connect,
                    tls: None,
                    h2: false,
                },
            )),
            Some((connector, name)) => {
                let t2 = Instant::now();
                let s = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|_| Failure::Tls)?;
                let h2 = s.get_ref().1.alpn_protocol() == Some(&b"h2"[..]);
                Ok((
                    Box::new(s),
                    Opened {
                        dns,
                        connect,
                        tls: Some(t2.elapsed()),
                        h2,
                    },
                ))
            }
        }
    }
}

/// One answer's times and size.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    pub status: u16,
    pub bytes: u64,
    /// Request written → first byte.
    pub waiting: Duration,
    /// First byte → last.
    pub transfer: Duration,
    /// The server closes the connection after it.
    pub close: bool,
    /// When its last byte came.
    pub done: Instant,
}

/// Sends `request` on `wire` and reads its answer into `buf` (reused).
pub async fn exchange(
    wire: &mut Box<dyn Wire>,
    request: &[u8],
    head_request: bool,
    buf: &mut Vec<u8>,
) -> Result<Answer, Failure> {
    wire.write_all(request).await.map_err(|_| Failure::Closed)?;
    let written = Instant::now();
    let mut first = None;
    let mut reader = ResponseReader::new(head_request);
    let mut bytes = 0u64;
    // `buf[..filled]` holds what the reader has not consumed yet.
    let mut filled = 0;
    loop {
        if buf.len() - filled < 16 * 1024 {
            buf.resize(filled + 64 * 1024, 0);
        }
        let n = wire
            .read(&mut buf[filled..])
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::UnexpectedEof => {
                    Failure::Closed
                }
                _ => Failure::Io,
            })?;
        let now = Instant::now();
        if n == 0 {
            if reader.closed() {
                let t = first.unwrap_or(now);
                return Ok(Answer {
                    status: reader.status().unwrap_or(0),
                    bytes,
                    waiting: t - written,
                    transfer: now - t,
                    close: true,
                    done: now,
                });
            }
            return Err(Failure::Closed);
        }
        first.get_or_insert(now);
        filled += n;
        let progress = reader.feed(&buf[..filled]).map_err(|_| Failure::Protocol)?;
        // The answer's bytes only: what follows it is not its.
        bytes += progress.consumed as u64;
        buf.copy_within(progress.consumed..filled, 0);
        filled -= progress.consumed;
        if progress.done {
            let t = first.unwrap_or(now);
            return Ok(Answer {
                status: reader.status().unwrap_or(0),
                bytes,
                waiting: t - written,
                transfer: now - t,
                // Bytes past the answer: a server talking out of turn.
                close: reader.close || filled > 0,
                done: now,
            });
        }
    }
}

/// The TLS client set-up: the system's roots, or none checked
/// (`insecure`); ALPN offers `h2` alone for HTTP/2 (a server that cannot
/// is an error, not a quiet fall back to HTTP/1.1), else `http/1.1`.
pub fn tls_config(insecure: bool, http2: bool) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|_| {
            rustls::ClientConfig::builder_with_provider(provider)
                .with_protocol_versions(rustls::DEFAULT_VERSIONS)
                .expect("rustls' default versions")
        });
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![if http2 {
        b"h2".to_vec()
    } else {
        b"http/1.1".to_vec()
    }];
    Arc::new(config)
}

/// `--insecure`: every certificate accepted, signatures still checked
/// for form by rustls' own algorithms.
#[derive(Debug)]
struct AnyCertificate;

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
