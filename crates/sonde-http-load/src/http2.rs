//! HTTP/2 (`--http2`): over TLS when ALPN agreed on `h2`, or in clear by
//! prior knowledge (h2c, RFC 9113 §3.3). The framing, HPACK and flow
//! control are the `h2` crate's (hyper's own HTTP/2 layer, used without
//! hyper's client pool so that each of sonde's connections is one HTTP/2
//! connection, as h2load's clients are). Each connection carries one
//! stream at a time: `-c` counts both connections and requests in flight.

use super::conn::{Answer, Failure, Wire};
use super::target::{has_length, headers, Target};
use bytes::Bytes;
use h2::client::SendRequest;
use sonde_model::HttpSpec;
use std::time::Instant;

/// Receive windows: a stream's and the connection's. The protocol's
/// 64 KiB default would hold a large answer to one window per round trip.
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// The request every stream sends, its parts checked and built once.
pub struct Template {
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Bytes,
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2), or carries as `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

impl Template {
    /// The request of `spec` toward `target`, or which part HTTP/2 cannot
    /// carry.
    pub fn new(spec: &HttpSpec, target: &Target, body: &[u8]) -> Result<Self, String> {
        let method = http::Method::from_bytes(spec.method.as_bytes())
            .map_err(|_| format!("method '{}' is not an HTTP token", spec.method))?;
        let scheme = if target.tls { "https" } else { "http" };
        let uri: http::Uri = format!("{scheme}://{}{}", target.authority, target.path)
            .parse()
            .map_err(|e| format!("'{}' as an HTTP/2 target: {e}", target.path))?;
        let mut map = http::HeaderMap::new();
        for (name, value) in headers(spec) {
            let lower = name.to_ascii_lowercase();
            if CONNECTION_SPECIFIC.contains(&lower.as_str()) {
                continue;
            }
            let n = http::HeaderName::from_bytes(lower.as_bytes())
                .map_err(|_| format!("header name '{name}' is not an HTTP token"))?;
            let v = http::HeaderValue::from_str(&value)
                .map_err(|_| format!("header '{name}': its value has a forbidden character"))?;
            map.append(n, v);
        }
        if has_length(spec, body) {
            map.insert(
                http::header::CONTENT_LENGTH,
                http::HeaderValue::from(body.len()),
            );
        }
        Ok(Self {
            method,
            uri,
            headers: map,
            body: Bytes::copy_from_slice(body),
        })
    }

    fn request(&self) -> http::Request<()> {
        let mut r = http::Request::new(());
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.headers_mut() = self.headers.clone();
        r
    }
}

/// Starts HTTP/2 on `wire` (the client preface and SETTINGS); the
/// connection's frames are then driven by a task of its own on this
/// thread, which ends when the returned handle is dropped.
pub async fn handshake(wire: Box<dyn Wire>) -> Result<SendRequest<Bytes>, Failure> {
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(wire)
        .await
        .map_err(failure)?;
    tokio::task::spawn_local(async move {
        // Its error reaches the streams, which count it.
        let _ = connection.await;
    });
    Ok(send)
}

/// One request on its own stream and its whole answer. `bytes` counts
/// the answer's body (DATA payload): HPACK leaves no header size to count.
pub async fn exchange(
    send: &mut SendRequest<Bytes>,
    template: &Template,
) -> Result<Answer, Failure> {
    std::future::poll_fn(|cx| send.poll_ready(cx))
        .await
        .map_err(failure)?;
    let end = template.body.is_empty();
    let (response, mut stream) = send
        .send_request(template.request(), end)
        .map_err(failure)?;
    if !end {
        stream
            .send_data(template.body.clone(), true)
            .map_err(failure)?;
    }
    let written = Instant::now();
    let response = response.await.map_err(failure)?;
    let first = Instant::now();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes = 0u64;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(failure)?;
        bytes += chunk.len() as u64;
        // Read: the server may send as much again.
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let done = Instant::now();
    Ok(Answer {
        status,
        bytes,
        waiting: first - written,
        transfer: done - first,
        close: false,
        done,
    })
}

/// The kind an HTTP/2 error counts as.
fn failure(e: h2::Error) -> Failure {
    if e.is_go_away() || e.is_reset() {
        Failure::Closed
    } else if let Some(io) = e.get_io() {
        match io.kind() {
            std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::BrokenPipe => Failure::Closed,
            _ => Failure::Io,
        }
    } else {
        Failure::Protocol
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_drops_connection_headers_and_lowercases_names() {
        let spec = HttpSpec {
            method: "POST".into(),
            headers: vec![
                "X-Test: 1".into(),
                "Connection: close".into(),
                "Host: elsewhere".into(),
            ],
            ..HttpSpec::default()
        };
        let t = Target::parse("https://[::1]:8443/p?q=1").unwrap();
        let tpl = Template::new(&spec, &t, b"abc").unwrap();
        let r = tpl.request();
        assert_eq!(r.method(), http::Method::POST);
        assert_eq!(r.uri().to_string(), "https://[::1]:8443/p?q=1");
        assert_eq!(r.headers()["x-test"], "1");
        assert_eq!(r.headers()["content-length"], "3");
        assert!(r.headers().get("connection").is_none());
        assert!(r.headers().get("host").is_none());
        assert!(r.headers()["user-agent"]
            .to_str()
            .unwrap()
            .starts_with("sonde/"));
    }

    #[test]
    fn a_header_http2_cannot_carry_is_named() {
        let spec = HttpSpec {
            headers: vec!["Bad Name: 1".into()],
            ..HttpSpec::default()
        };
        let t = Target::parse("http://[::1]:80/").unwrap();
        let e = Template::new(&spec, &t, b"").err().unwrap();
        assert!(e.contains("Bad Name"), "{e}");
    }
}
