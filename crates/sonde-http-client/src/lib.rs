//! A blocking JSON POST (or GET) over HTTP/1.1 with or without TLS
//! (rustls), with a bearer token if one is given: a mesh agent's
//! requests to its central agent, and alert webhooks. Built on hyper's
//! client connection and a small runtime of its own: its callers are
//! plain threads, and one request at a time is all they need.

use bytes::Bytes;
use http::{header, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Longest a request may take, connection and answer included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Why a request did not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("bad URL {url}: {why}")]
    Url { url: String, why: String },
    #[error("cannot read the certificate authorities in {path}: {why}")]
    Ca { path: String, why: String },
    #[error("{0}")]
    Io(String),
    #[error("no answer within {}s", REQUEST_TIMEOUT.as_secs())]
    Timeout,
}

/// Where requests go: a base URL (`https://central:8443`) and how to
/// reach it.
pub struct ApiClient {
    base: Uri,
    host: String,
    port: u16,
    token: String,
    tls: Option<tokio_rustls::TlsConnector>,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiClient({})", self.base)
    }
}

/// The client's trust: the CA certificates in `ca_file`, else the
/// system's.
fn tls_config(ca_file: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, ClientError> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let bad = |why: String| ClientError::Ca {
                path: path.display().to_string(),
                why,
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| bad(e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad("no certificate in it".into()));
            }
            for c in certs {
                roots.add(c).map_err(|e| bad(e.to_string()))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Io(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

impl ApiClient {
    /// A client of the API at `url` (`http://` or `https://`, host and
    /// optional port), presenting `token` (none if empty).
    pub fn new(url: &str, token: String, ca_file: Option<&Path>) -> Result<Self, ClientError> {
        let bad = |why: &str| ClientError::Url {
            url: url.to_string(),
            why: why.to_string(),
        };
        let base: Uri = url.parse().map_err(|_| bad("not a URL"))?;
        let secure = match base.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(bad("must start with http:// or https://")),
        };
        let host = base
            .host()
            .ok_or_else(|| bad("no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = base.port_u16().unwrap_or(if secure { 443 } else { 80 });
        let tls = if secure {
            Some(tokio_rustls::TlsConnector::from(tls_config(ca_file)?))
        } else {
            None
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Io(e.to_string()))?;
        Ok(Self {
            base,
            host,
            port,
            token,
            tls,
            runtime,
        })
    }

    /// POSTs `body` (JSON) to `path`; the status and the answer's body.
    pub fn post_json(&self, path: &str, body: Vec<u8>) -> Result<(StatusCode, Bytes), ClientError> {
        self.request(Method::POST, path, body)
    }

    /// GETs `path`; the status and the answer's body.
    pub fn get(&self, path: &str) -> Result<(StatusCode, Bytes), ClientError> {
        self.request(Method::GET, path, Vec::new())
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        self.runtime.block_on(async {
            match tokio::time::timeout(REQUEST_TIMEOUT, self.exchange(method, path, body)).await {
                Ok(r) => r,
                Err(_) => Err(ClientError::Timeout),
            }
        })
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let io = |e: &dyn std::fmt::Display| ClientError::Io(format!("{}: {e}", self.base));
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| io(&e))?;
        let authority = self
            .base
            .authority()
            .map_or_else(|| self.host.clone(), ToString::to_string);
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, authority);
        if !self.token.is_empty() {
            request = request.header(header::AUTHORIZATION, format!("Bearer {}", self.token));
        }
        let request = request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| io(&e))?;
        match &self.tls {
            Some(tls) => {
                let name = ServerName::try_from(self.host.clone()).map_err(|e| io(&e))?;
                let stream = tls.connect(name, tcp).await.map_err(|e| io(&e))?;
                send(TokioIo::new(stream), request)
                    .await
                    .map_err(|e| io(&e))
            }
            None => send(TokioIo::new(tcp), request).await.map_err(|e| io(&e)),
        }
    }
}

/// One request on a new connection `io`.
async fn send<T>(
    io: T,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, Bytes), Box<dyn std::error::Error + Send + Sync>>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await?;
    let driver = tokio::spawn(conn);
    let answer = sender.send_request(request).await?;
    let status = answer.status();
    let body = Limited::new(answer.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await?
        .to_bytes();
    driver.abort();
    Ok((status, body))
}
