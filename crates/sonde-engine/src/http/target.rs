//! Where an HTTP benchmark goes, from its URL: scheme, host, port, the
//! request target, and the one request every connection sends, built
//! once.

use sonde_model::HttpSpec;

/// The parsed URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub tls: bool,
    /// The host as the URL has it (no brackets): resolved, and the TLS
    /// server name.
    pub host: String,
    pub port: u16,
    /// `Host:` header value (`[::1]:8080`).
    pub authority: String,
    /// Path and query (`/x?y`), `/` when empty.
    pub path: String,
}

impl Target {
    /// `url`'s parts, or why it cannot be used.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("'{url}': give http:// or https://"));
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("'{url}': an IPv6 address needs its ']'"))?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(format!("'{url}' has no host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("'{url}': port '{p}' is not 1 to 65535"))?,
            None if tls => 443,
            None => 80,
        };
        let tail = tail.split('#').next().unwrap_or("");
        let path = if tail.starts_with('?') {
            format!("/{tail}")
        } else if tail.is_empty() {
            "/".to_string()
        } else {
            tail.to_string()
        };
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "'{url}': spaces and control characters must be %-encoded"
            ));
        }
        Ok(Self {
            tls,
            host: host.to_string(),
            port,
            authority: authority.to_string(),
            path,
        })
    }
}

/// The request's headers beyond Host and framing, in order: the spec's
/// (`Name: value`), after sonde's `User-Agent` and `Accept: */*` where the
/// spec gives none. HTTP/1.1 writes them as they are; HTTP/2 lowercases
/// the names.
pub fn headers(spec: &HttpSpec) -> Vec<(String, String)> {
    let given: Vec<(String, String)> = spec
        .headers
        .iter()
        .filter_map(|h| h.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let has = |name: &str| given.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut out = Vec::with_capacity(given.len() + 2);
    if !has("user-agent") {
        out.push((
            "User-Agent".to_string(),
            format!("sonde/{}", sonde_model::SONDE_VERSION),
        ));
    }
    if !has("accept") {
        out.push(("Accept".to_string(), "*/*".to_string()));
    }
    out.extend(given);
    out
}

/// Whether the request carries a `Content-Length` (a body, or a method
/// that expects one).
pub fn has_length(spec: &HttpSpec, body: &[u8]) -> bool {
    !body.is_empty() || spec.method == "POST" || spec.method == "PUT"
}

/// The bytes of the request every connection sends: request line, Host,
/// the spec's headers, Content-Length and the body.
pub fn request_bytes(spec: &HttpSpec, target: &Target, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\n",
        spec.method, target.path, target.authority
    );
    for (name, value) in headers(spec) {
        out += &format!("{name}: {value}\r\n");
    }
    if has_length(spec, body) {
        out += &format!("Content-Length: {}\r\n", body.len());
    }
    if !spec.keep_alive {
        out += "Connection: close\r\n";
    }
    out += "\r\n";
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_their_parts() {
        let t = Target::parse("http://[::1]:8080/a/b?c=d#frag").unwrap();
        assert_eq!(
            (
                t.tls,
                t.host.as_str(),
                t.port,
                t.authority.as_str(),
                t.path.as_str()
            ),
            (false, "::1", 8080, "[::1]:8080", "/a/b?c=d")
        );
        let t = Target::parse("https://example.org").unwrap();
        assert_eq!((t.tls, t.port, t.path.as_str()), (true, 443, "/"));
        let t = Target::parse("http://h?q=1").unwrap();
        assert_eq!(t.path, "/?q=1");
        assert!(Target::parse("http://h:0/").is_err());
        assert!(Target::parse("http://h:99999/").is_err());
        assert!(Target::parse("http://h/a b").is_err());
        assert!(Target::parse("gopher://h/").is_err());
    }

    #[test]
    fn the_request_carries_host_headers_and_body() {
        let spec = HttpSpec {
            method: "POST".into(),
            headers: vec!["X-Test: 1".into(), "accept: text/plain".into()],
            keep_alive: false,
            ..HttpSpec::default()
        };
        let t = Target::parse("http://[::1]:81/p").unwrap();
        let r = String::from_utf8(request_bytes(&spec, &t, b"abc")).unwrap();
        assert!(
            r.starts_with("POST /p HTTP/1.1\r\nHost: [::1]:81\r\n"),
            "{r}"
        );
        assert!(r.contains("X-Test: 1\r\n") && r.contains("accept: text/plain\r\n"));
        assert!(!r.contains("Accept: */*"));
        assert!(
            r.contains("Content-Length: 3\r\nConnection: close\r\n\r\nabc"),
            "{r}"
        );
    }
}
